"""Tests for tensorlib.nn.capture_activations (attention probabilities and residual stream)."""

import numpy as np
import pytest

import tensorlib as tl
from tensorlib import Rng
from tensorlib.nn import (
    ActivationCapture,
    Decoder,
    DecoderConfig,
    HookPoint,
    Linear,
    Module,
    capture_activations,
)

from helpers import perturb_constants

CONFIG = DecoderConfig(vocabulary_size=9, context_length=6, channels=8, heads=2, layers=2)
NAMES = ["embedding",
         "blocks.0.attention.probabilities", "blocks.0.residual_attention", "blocks.0.residual_mlp",
         "blocks.1.attention.probabilities", "blocks.1.residual_attention", "blocks.1.residual_mlp"]


def make_decoder(seed=0, dtype=np.float64):
    return perturb_constants(Decoder(CONFIG, rng=Rng(seed), dtype=dtype), seed)


def recorders(model):
    """Whether each HookPoint of ``model`` has a hook on it now, or None where none has."""
    return [True if point.observed else None for point in model.modules()
            if isinstance(point, HookPoint)]


IDS = np.array([[1, 2, 3, 4, 5], [8, 7, 6, 5, 4]])


def test_names_and_shapes():
    model = make_decoder()
    with capture_activations(model) as capture:
        logits = model(IDS)
    assert isinstance(capture, ActivationCapture) and len(capture) == 1
    assert capture.names == NAMES and list(capture.passes[0]) == NAMES
    for name in NAMES:
        expected = (2, 2, 5, 5) if name.endswith(".probabilities") else (2, 5, 8)
        assert capture[name].shape == expected, name
        assert type(capture[name]) is np.ndarray and capture[name].dtype == np.float64
    # the last residual is what the head reads
    head = model.language_model_head(model.final_norm(tl.Tensor(capture["blocks.1.residual_mlp"])))
    np.testing.assert_allclose(head.data, logits.data, rtol=1e-13, atol=1e-13)


def test_attention_rows_are_causal_distributions():
    model = make_decoder(1)
    with capture_activations(model) as capture:
        model(IDS)
    for block in (0, 1):
        p = capture[f"blocks.{block}.attention.probabilities"]  # (B, H, T, T)
        np.testing.assert_allclose(p.sum(-1), 1.0, rtol=1e-12)
        assert np.all(p[..., np.triu_indices(5, 1)[0], np.triu_indices(5, 1)[1]] == 0.0)
        assert np.all(p[..., np.tril_indices(5)[0], np.tril_indices(5)[1]] > 0.0)


def test_captured_values_equal_a_manual_recomputation():
    model = make_decoder(2)
    with capture_activations(model) as capture:
        model(IDS)
    x = model.positional_embedding(model.token_embedding(IDS))
    np.testing.assert_array_equal(capture["embedding"], x.data)
    for index, block in enumerate(model.blocks):
        attended, probabilities = block.attention(block.attention_norm(x), return_attention=True)
        np.testing.assert_allclose(capture[f"blocks.{index}.attention.probabilities"],
                                   probabilities.data, rtol=1e-13, atol=1e-15)
        middle = x + attended
        np.testing.assert_allclose(capture[f"blocks.{index}.residual_attention"], middle.data,
                                   rtol=1e-13, atol=1e-13)
        x = middle + block.mlp_output(block.mlp_input(block.mlp_norm(middle)).gelu())
        np.testing.assert_allclose(capture[f"blocks.{index}.residual_mlp"], x.data, rtol=1e-13,
                                   atol=1e-13)


def test_nothing_is_recorded_outside_the_context():
    model = make_decoder(3)
    assert all(r is None for r in recorders(model))
    with capture_activations(model) as capture:
        assert all(r is not None for r in recorders(model))
        model(IDS)
        model(IDS[:, :3])  # a second pass
    assert len(capture) == 2 and capture["embedding"].shape == (2, 3, 8)
    assert [a.shape[1] for a in capture.arrays("embedding")] == [5, 3]
    assert all(r is None for r in recorders(model))
    model(IDS)
    assert len(capture) == 2
    with pytest.raises(KeyError, match="nothing recorded under 'blocks.7.attention'"):
        capture["blocks.7.attention"]


def test_an_exception_inside_the_context_still_detaches():
    model = make_decoder(4)
    with pytest.raises(IndexError), capture_activations(model) as capture:
        model(IDS)
        model([[99]])
    assert all(r is None for r in recorders(model))
    assert len(capture) == 1
    with capture_activations(model) as again:  # can be captured again
        model(IDS)
    assert len(again) == 1


def test_nested_capture_of_the_same_model_is_rejected():
    model = make_decoder(5)
    with capture_activations(model) as capture:
        with pytest.raises(RuntimeError, match="already being captured"):
            with capture_activations(model.blocks[1]):
                pass
        model(IDS)  # the first capture is intact
    assert capture.names == NAMES


def test_capture_with_gradients_and_in_a_wrapper_module():
    class Wrapper(Module):
        def __init__(self):
            super().__init__()
            self.decoder = make_decoder(6)
            self.extra = Linear(2, 2, rng=Rng(0))

    wrapper = Wrapper()
    with capture_activations(wrapper) as capture:
        loss = wrapper.decoder.loss(IDS, np.roll(IDS, 1, axis=1))
        loss.backward()
    assert capture.names == ["decoder." + name for name in NAMES]
    assert all(p.grad is not None for p in wrapper.decoder.parameters())
    with pytest.raises(TypeError, match="found no HookPoint in this Linear"):
        with capture_activations(Linear(2, 2, rng=Rng(0))):
            pass
    with pytest.raises(TypeError, match="model must be a Module"):
        with capture_activations("model"):
            pass


def test_capture_during_cached_generation_records_each_step():
    model = make_decoder(7, np.float32)
    prompt = np.array([[1, 2], [3, 4]])
    with capture_activations(model) as capture:
        ids = model.generate(prompt, 4, rng=Rng(0))  # prefill (2 positions), then 3 steps
    assert len(capture) == 4
    assert [a.shape for a in capture.arrays("blocks.1.attention.probabilities")] == [
        (2, 2, 2, 2), (2, 2, 1, 3), (2, 2, 1, 4), (2, 2, 1, 5)]
    assert capture.arrays("blocks.0.residual_mlp")[-1].shape == (2, 1, 8)
    # joining the steps' rows gives the full forward pass's attention over the sequence
    with capture_activations(model) as full:
        with tl.no_grad():
            model(ids[:, :-1])
    for block in ("blocks.0.attention.probabilities", "blocks.1.attention.probabilities"):
        joined = capture.attention_map(block)
        assert joined.shape == (2, 2, 5, 5)
        np.testing.assert_allclose(joined, full[block], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(capture.arrays("blocks.1.residual_mlp")[-1][:, 0],
                               full["blocks.1.residual_mlp"][:, -1], rtol=1e-5, atol=1e-5)


def test_capture_after_the_window_slides_records_whole_windows():
    model = make_decoder(8, np.float32)
    with capture_activations(model) as capture:
        model.generate(np.array([[1]]), 8, rng=Rng(1))  # context 6: steps 7 and 8 recompute
    shapes = [a.shape for a in capture.arrays("blocks.0.attention.probabilities")]
    assert shapes == [(1, 2, 1, 1)] + [(1, 2, 1, n) for n in range(2, 7)] + [(1, 2, 6, 6)] * 2
    with pytest.raises(ValueError, match="does not continue the 6 positions"):
        capture.attention_map()
    with pytest.raises(ValueError, match="not attention"):
        capture.attention_map("embedding")


def test_hook_points_are_plain_forward_hooks():
    model = make_decoder(6)
    point = model.blocks[0].attention.probabilities
    assert isinstance(point, HookPoint) and not point.observed
    plain = model(IDS).data
    seen = []
    with point.register_forward_hook(lambda module, inputs, out: seen.append(out.shape)):
        assert point.observed
        np.testing.assert_allclose(model(IDS).data, plain, rtol=1e-12)  # the explicit path
    assert seen == [(2, 2, 5, 5)] and not point.observed
    # A hook that returns a value replaces it: uniform attention over the visible positions.
    uniform = np.tril(np.ones((5, 5))) / np.arange(1, 6)[:, None]
    with point.register_forward_hook(lambda m, i, out: tl.Tensor(np.broadcast_to(
            uniform, out.shape).copy())):
        changed = model(IDS).data
    assert np.abs(changed - plain).max() > 1e-3
    assert all(not p.observed for p in model.modules() if isinstance(p, HookPoint))


def test_keep_graph_keeps_the_tensors_and_their_gradients():
    model = make_decoder(2)
    with capture_activations(model, keep_graph=True) as capture:
        logits = model(IDS)
    residual = capture["blocks.1.residual_mlp"]
    assert isinstance(residual, tl.Tensor) and residual.requires_grad
    np.testing.assert_array_equal(capture.arrays("embedding")[0], capture["embedding"].data)
    # d sum(logits) / d residual by hand: through the final norm and the head
    leaf = tl.Tensor(residual.numpy().copy(), requires_grad=True)
    model.language_model_head(model.final_norm(leaf)).sum().backward()
    logits.sum().backward()
    np.testing.assert_allclose(residual.grad, leaf.grad, rtol=1e-12, atol=1e-12)
    with pytest.raises(TypeError, match="keep_graph must be True or False"):
        with capture_activations(model, keep_graph=1):
            pass


def test_capture_modules_of_a_class_only_in_training_and_only_the_latest_pass():
    from tensorlib.nn import Sequential, Tanh

    model = Sequential(Linear(3, 4, rng=Rng(0)), Tanh(), Linear(4, 4, rng=Rng(1)), Tanh())
    x = tl.tensor(Rng(2).normal(size=(5, 3)))
    with capture_activations(model, keep_graph=True, modules=Tanh, training_only=True,
                             latest_only=True) as capture:
        first = model(x)
        model.eval()
        model(x * 3.0)                          # an evaluation pass: not recorded
        model.train()
        second = model(x * 2.0)
        second.sum().backward()
    assert capture.names == ["1", "3"] and len(capture) == 1   # the latest training pass
    assert capture["3"] is second and first is not second
    np.testing.assert_array_equal(capture["3"].grad, np.ones((5, 4)))
    assert capture["1"].grad.shape == (5, 4)
    assert not model[1]._forward_hooks                      # removed on leaving the block
    with capture_activations(model, modules=(Tanh, Linear)) as capture:
        model(x)
    assert capture.names == ["0", "1", "2", "3"]
    with pytest.raises(TypeError, match="modules must be a Module class"):
        with capture_activations(model, modules="Tanh"):
            pass
    with pytest.raises(TypeError, match="found no HookPoint in this Sequential"):
        with capture_activations(model):
            pass
