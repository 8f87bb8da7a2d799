"""Generation's fast path: ``tensorlib.engine.kernels.decoder_step`` runs the cached forwards of
``Decoder.generate`` on a plain Decoder under ``no_grad`` on raw arrays, chosen by
``generate`` from the table of cached-step kernels (``register_cached_step``), where
``tensorlib.models.decoder_step`` registers ``prepare_decoder_step``. It must give the module
path's logits bit for bit and so the same tokens, be taken only where nothing could tell the
difference (no hook, no LoRA/NF4 layer, kernels on, no gradient wanted), and record no
graph. ``Decoder.forward`` itself always runs its modules."""

import numpy as np
import pytest

import tensorlib as tl
from tensorlib import Rng
from tensorlib.engine import kernel_table
from tensorlib.engine.autograd import Context
from tensorlib.engine.ops.function import Function
from tensorlib.models import decoder_step as generation
from tensorlib.nn import (
    Decoder,
    DecoderConfig,
    attach_lora,
    capture_activations,
    quantize_model,
)

from helpers import perturb_constants

CONFIG = DecoderConfig(vocabulary_size=11, context_length=8, channels=16, heads=4, layers=2)


def make_decoder(seed=0, dtype=np.float32, config=CONFIG):
    return perturb_constants(Decoder(config, rng=Rng(seed), dtype=dtype), seed)


@pytest.fixture
def steps(monkeypatch):
    """Counts the calls of the fast path's kernel (``steps.calls``)."""
    class Counter:
        calls = 0

    original = generation.decoder_step

    def counting(*args, **kwargs):
        Counter.calls += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(generation, "decoder_step", counting)
    return Counter


def module_path(monkeypatch):
    """From here on the kernel declines every model: generate runs the modules."""
    monkeypatch.setattr(generation, "decoder_arrays", lambda model: None)


def cached_logits(model, ids, pieces):
    """The logits of cached forwards through the modules (``Decoder.forward``)."""
    with tl.no_grad():
        caches = model.new_cache()
        return [model(ids[:, lo:hi], caches).data for lo, hi in pieces]


def kernel_logits(model, ids, pieces):
    """The logits of the same cached forwards as the kernel's step (as generate runs it)."""
    with tl.no_grad():
        caches = model.new_cache()
        step = generation.prepare_decoder_step(model, caches)
        assert step is not None
        return [step(ids[:, lo:hi]) for lo, hi in pieces]


# --------------------------------------------------------------------------------- values
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cached_logits_equal_the_module_paths_bit_for_bit(dtype, steps, monkeypatch):
    model = make_decoder(3, dtype)
    ids = Rng(4).integers(0, 11, (3, 8))
    pieces = ((0, 3), (3, 4), (4, 6), (6, 7), (7, 8))  # a prefill, steps of 1 and 2
    fast = kernel_logits(model, ids, pieces)
    assert steps.calls == len(pieces)
    with tl.reference_mode():  # the plain ops: to float rounding only
        reference = cached_logits(model, ids, pieces)
    slow = cached_logits(model, ids, pieces)
    assert steps.calls == len(pieces)  # Decoder.forward runs its modules
    tolerance = 1e-12 if dtype == np.float64 else 2e-5
    for a, b, c in zip(fast, slow, reference, strict=True):
        assert a.dtype == dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)
        np.testing.assert_allclose(a, c, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("seed, temperature, top_k, prompt_length, batch, new, dtype", [
    (0, 1.0, None, 1, 1, 7, np.float32),  # up to the context length, exactly
    (1, 0.5, None, 3, 2, 14, np.float32),  # past it: the window slides
    (2, 1.5, 3, 2, 3, 10, np.float32),
    (3, 1.0, 1, 5, 1, 6, np.float32),  # greedy
    (4, 2.0, 5, 8, 2, 4, np.float32),  # a full prompt: every step recomputes the window
    (5, 0.8, None, 11, 1, 3, np.float32),  # a prompt longer than the context
    (6, 1.0, None, 1, 4, 12, np.float64),
    (7, 0.7, 4, 4, 2, 9, np.float64),
])
def test_generate_gives_the_same_tokens_on_every_path(seed, temperature, top_k,
                                                      prompt_length, batch, new, dtype,
                                                      steps, monkeypatch):
    model = make_decoder(10 + seed, dtype)
    prompt = Rng(20 + seed).integers(0, 11, (batch, prompt_length))
    kwargs = {"temperature": temperature, "top_k": top_k}
    fast = model.generate(prompt, new, rng=Rng(seed), **kwargs)
    cached_steps = max(0, min(new, CONFIG.context_length - prompt_length + 1))
    assert steps.calls == cached_steps  # the prefill and each step until the window slides
    with tl.reference_mode():
        reference = model.generate(prompt, new, rng=Rng(seed), **kwargs)
    uncached = model.generate(prompt, new, rng=Rng(seed), use_cache=False, **kwargs)
    module_path(monkeypatch)
    slow = model.generate(prompt, new, rng=Rng(seed), **kwargs)
    assert steps.calls == cached_steps
    assert fast.shape == (batch, prompt_length + new) and fast.dtype == np.int64
    for other in (slow, reference, uncached):
        np.testing.assert_array_equal(fast, other)


def test_the_kv_cache_is_written_in_place(steps):
    model = make_decoder(1)
    with tl.no_grad():
        caches = model.new_cache()
        step = generation.prepare_decoder_step(model, caches)
        step(np.array([[1, 2, 3]]))
        storage = [(c.keys, c.values) for c in caches]
        step(np.array([[4]]))
    assert steps.calls == 2
    assert all(c.length == 4 for c in caches)
    assert all(c.keys is k and c.values is v for c, (k, v) in zip(caches, storage, strict=True))
    assert caches[0].keys.shape == (1, 4, CONFIG.context_length, 4)


def test_the_fused_qkv_weight_is_made_once_per_generate_call(steps, monkeypatch):
    model = make_decoder(2)
    attention = model.blocks[0].attention
    with tl.no_grad():
        fused = generation.decoder_arrays(model).blocks[0].qkv_weight
    np.testing.assert_array_equal(
        fused, attention.qkv_weight.numpy().transpose(0, 2, 1).reshape(48, 16))
    assert fused.flags["C_CONTIGUOUS"]
    made = []
    original = generation._fused_qkv

    def counting(attention):
        made.append(attention)
        return original(attention)

    monkeypatch.setattr(generation, "_fused_qkv", counting)
    model.generate(np.array([[1, 2, 3]]), 6, rng=Rng(1))  # a prefill and five steps
    assert steps.calls == 6
    assert made == [block.attention for block in model.blocks]  # once per block


def test_a_weight_changed_between_generate_calls_is_seen_by_the_next_call(steps,
                                                                         monkeypatch):
    prompt = np.array([[1, 2, 3], [4, 5, 6]])

    def run():
        model = make_decoder(5)
        first = model.generate(prompt, 4, rng=Rng(0))
        with tl.no_grad():
            model.blocks[1].attention.qkv_weight.add_(0.25)  # in place: the fused copy is stale
            model.blocks[0].mlp_input.weight.data = model.blocks[0].mlp_input.weight.data * 2
        return first, model.generate(prompt, 4, rng=Rng(0))

    fast = run()
    assert steps.calls == 8
    module_path(monkeypatch)
    slow = run()
    assert steps.calls == 8
    for a, b in zip(fast, slow, strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(fast[0], fast[1])  # the change shows in the tokens


def test_generate_checks_the_model_once_and_forward_runs_the_modules(steps, monkeypatch):
    model = make_decoder(3)
    checks = []
    original = generation.decoder_arrays

    def counting(model):
        checks.append(type(model).__name__)
        return original(model)

    monkeypatch.setattr(generation, "decoder_arrays", counting)
    model.generate(np.array([[1, 2, 3]]), 9, rng=Rng(1))  # a prefill and five steps
    assert checks == ["Decoder"] and steps.calls == 6
    with tl.no_grad():
        caches = model.new_cache()
        for position in range(3):
            model(np.array([[position]]), caches)
    assert checks == ["Decoder"] and steps.calls == 6  # no kernel inside Decoder.forward


def test_the_table_of_cached_step_kernels(steps, monkeypatch):
    assert kernel_table.kernel_for(Decoder) is generation.prepare_decoder_step
    monkeypatch.setattr(kernel_table, "_TABLE", dict(kernel_table._TABLE))

    class Quieter(Decoder):
        pass

    quieter = perturb_constants(Quieter(CONFIG, rng=Rng(8)), 8)
    prompt = np.array([[3, 1]])
    expected = make_decoder(8).generate(prompt, 4, rng=Rng(2))
    assert steps.calls == 4
    asked = []

    def prepare(model, caches):  # a kernel for the subclass, which declines
        asked.append((model, len(caches), [c.length for c in caches]))
        return None

    generation.register_cached_step(Quieter, prepare)
    np.testing.assert_array_equal(quieter.generate(prompt, 4, rng=Rng(2)), expected)
    assert asked == [(quieter, 2, [0, 0])] and steps.calls == 4  # asked once, the modules ran
    generation.register_cached_step(Quieter, generation.prepare_decoder_step)
    np.testing.assert_array_equal(quieter.generate(prompt, 4, rng=Rng(2)), expected)
    assert steps.calls == 4  # the Decoder's kernel takes exactly a Decoder, no subclass
    with pytest.raises(TypeError, match="subclass of Module"):
        generation.register_cached_step(object, prepare)
    with pytest.raises(TypeError, match="callable"):
        generation.register_cached_step(Decoder, None)


# --------------------------------------------------------------------------------- when not
def test_capture_and_hooks_force_the_module_path(steps):
    model = make_decoder(7)
    prompt = np.array([[1, 2], [3, 4]])
    plain = model.generate(prompt, 4, rng=Rng(0))
    assert steps.calls == 4
    with capture_activations(model) as capture:
        captured = model.generate(prompt, 4, rng=Rng(0))
    assert steps.calls == 4  # not taken while the capture is on
    np.testing.assert_array_equal(captured, plain)
    assert len(capture) == 4  # the prefill and three steps, every HookPoint in each
    assert all(len(record) == 1 + 3 * CONFIG.layers for record in capture.passes)
    seen = []
    handle = model.blocks[1].mlp_input.register_forward_hook(
        lambda module, inputs, output: seen.append(output.shape))
    with handle:
        np.testing.assert_array_equal(model.generate(prompt, 4, rng=Rng(0)), plain)
    assert steps.calls == 4
    assert seen == [(2, 2, 64), (2, 1, 64), (2, 1, 64), (2, 1, 64)]
    np.testing.assert_array_equal(model.generate(prompt, 4, rng=Rng(0)), plain)
    assert steps.calls == 8  # the hook is gone: the fast path again


def test_a_replaced_forward_or_a_subclass_forces_the_module_path(steps):
    model = make_decoder(8)
    prompt = np.array([[3, 1]])
    layer = model.blocks[0].mlp_output
    layer.forward = lambda x: type(layer).forward(layer, x) * 0.0  # the MLP branch is off
    zeroed = model.generate(prompt, 3, rng=Rng(2))
    assert steps.calls == 0
    del layer.forward

    class Louder(Decoder):
        pass

    louder = perturb_constants(Louder(CONFIG, rng=Rng(8)), 8)
    np.testing.assert_array_equal(louder.generate(prompt, 3, rng=Rng(2)),
                                  model.generate(prompt, 3, rng=Rng(2)))
    assert steps.calls == 3  # the plain Decoder's three; none for the subclass
    assert zeroed.shape == (1, 5)
    halved = []
    with pytest.MonkeyPatch.context() as patch:  # a forward replaced on the class
        plain_forward = tl.nn.Linear.forward
        patch.setattr(tl.nn.Linear, "forward",
                      lambda self, x: halved.append(1) or plain_forward(self, x) * 0.5)
        model.generate(prompt, 3, rng=Rng(2))
    assert steps.calls == 3 and len(halved) == 3 * (1 + 2 * 3)  # the modules, every Linear


def test_lora_and_nf4_models_fall_back_to_the_modules(steps, monkeypatch):
    prompt = np.array([[1, 2, 3]])
    results = {}
    for kind in ("lora", "nf4"):
        model = make_decoder(9)
        if kind == "lora":
            attach_lora(model, "blocks.*.mlp_input", rank=2, alpha=4.0, rng=Rng(1))
        else:
            quantize_model(model, "blocks.*.mlp_output", block_size=16)
        results[kind] = model.generate(prompt, 5, rng=Rng(3))
        assert steps.calls == 0
        with tl.reference_mode():
            np.testing.assert_array_equal(model.generate(prompt, 5, rng=Rng(3)), results[kind])


def test_training_mode_dropout_reference_mode_and_other_dtypes_fall_back(steps):
    dropping = make_decoder(4, config=DecoderConfig(11, 8, 16, 4, 2, dropout=0.3))
    assert generation.decoder_arrays(dropping) is None  # a gradient could be wanted
    with tl.no_grad():
        assert generation.decoder_arrays(dropping) is None  # training mode: the dropouts draw
        dropping.eval()
        assert generation.decoder_arrays(dropping) is not None
        with tl.reference_mode():
            assert generation.decoder_arrays(dropping) is None
        half = Decoder(CONFIG, rng=Rng(1), dtype=np.float16)  # float32/64 only
        assert generation.decoder_arrays(half) is None
    prompt = np.array([[1, 2]])
    dropping.train()
    tokens = dropping.generate(prompt, 3, rng=Rng(0))  # generate runs in eval mode
    assert steps.calls == 3 and dropping.training
    with tl.reference_mode():
        np.testing.assert_array_equal(dropping.generate(prompt, 3, rng=Rng(0)), tokens)
    assert steps.calls == 3


@pytest.mark.parametrize("design", [
    {"mlp": "gelu_tanh", "head_bias": False, "tie_embeddings": True},  # GPT-2's own shape
    {"bias": False, "head_bias": False},  # nanoGPT's bias=False
    {"mlp": "gelu_tanh", "tie_embeddings": True, "attention_dropout": 0.2},
])
def test_gpt2_shapes_take_the_fast_path_with_the_modules_logits(design, steps, monkeypatch):
    model = make_decoder(6, config=DecoderConfig(11, 8, 16, 4, 2, **design))
    if design.get("attention_dropout"):
        with tl.no_grad():
            assert generation.decoder_arrays(model) is None  # training: it would drop
        model.eval()
    ids = Rng(7).integers(0, 11, (2, 8))
    pieces = ((0, 3), (3, 4), (4, 8))
    for a, b in zip(kernel_logits(model, ids, pieces), cached_logits(model, ids, pieces),
                    strict=True):
        np.testing.assert_array_equal(a, b)
    prompt = Rng(8).integers(0, 11, (2, 2))
    fast = model.generate(prompt, 5, rng=Rng(9))
    assert steps.calls == len(pieces) + 5
    module_path(monkeypatch)
    np.testing.assert_array_equal(model.generate(prompt, 5, rng=Rng(9)), fast)


@pytest.mark.parametrize("design", [{"norm": "rms"}, {"positions": "rotary"}, {"mlp": "swiglu"},
                                    {"kv_heads": 2}])
def test_todays_pieces_run_through_the_modules(design, steps):
    model = make_decoder(10, config=DecoderConfig(11, 8, 16, 4, 2, **design))
    with tl.no_grad():
        assert generation.decoder_arrays(model) is None
    prompt = Rng(11).integers(0, 11, (2, 2))
    tokens = model.generate(prompt, 5, rng=Rng(12))
    assert steps.calls == 0
    np.testing.assert_array_equal(model.generate(prompt, 5, rng=Rng(12), use_cache=False),
                                  tokens)


def test_a_rotary_child_given_to_a_gpt2_shaped_attention_forces_the_module_path(steps):
    model = make_decoder(13)
    model.blocks[1].attention = tl.nn.MultiheadAttention(  # surgery, not a config
        16, 4, rng=Rng(16), rotary=tl.nn.RotaryEmbedding(4, 8))
    with tl.no_grad():
        assert generation.decoder_arrays(model) is None
    prompt = Rng(14).integers(0, 11, (2, 2))
    tokens = model.generate(prompt, 5, rng=Rng(15))
    assert steps.calls == 0
    np.testing.assert_array_equal(model.generate(prompt, 5, rng=Rng(15), use_cache=False),
                                  tokens)


# --------------------------------------------------------------------------------- refusals
def test_bad_input_is_refused_as_before_and_leaves_the_caches_alone(steps):
    model = make_decoder(5)
    caches = model.new_cache()
    with tl.no_grad():
        model(np.array([[1, 2, 3]]), caches)
        with pytest.raises(IndexError, match="token id 11"):
            model([[11]], caches)
        with pytest.raises(ValueError, match="holds 1 sequences, got token ids for 2"):
            model(np.array([[1], [2]]), caches)
        with pytest.raises(ValueError, match=r"3 cached \+ 6 new positions exceed"):
            model(np.ones((1, 6), dtype=np.int64), caches)
        with pytest.raises(TypeError, match="2 KVCaches"):
            model(np.array([[1]]), caches[:1])
        with pytest.raises(TypeError, match="integer dtype"):
            model(np.array([[1.0]]), caches)
    with pytest.raises(RuntimeError, match="no_grad"):  # a gradient could be wanted
        model(np.array([[4]]), caches)
    assert [c.length for c in caches] == [3, 3] and steps.calls == 0  # forward: modules
    rng = Rng(3)
    for kwargs, message in (({"temperature": 0.0}, "temperature"), ({"top_k": 12}, "top_k"),
                            ({"max_new_tokens": -1}, "max_new_tokens")):
        with pytest.raises((TypeError, ValueError), match=message):
            model.generate(np.array([[1]]), **({"max_new_tokens": 2} | kwargs), rng=rng)
    assert rng.state == 3 and steps.calls == 0


# --------------------------------------------------------------------------------- no graph
@pytest.fixture
def contexts(monkeypatch):
    """Counts the graph nodes (``Context`` objects) made (``contexts.made``)."""
    class Counter:
        made = 0

    original = Context.__init__

    def counting(self, *args, **kwargs):
        Counter.made += 1
        original(self, *args, **kwargs)

    monkeypatch.setattr(Context, "__init__", counting)
    return Counter


def test_generation_makes_no_graph_node(contexts, steps, monkeypatch):
    model = make_decoder(6)
    prompt = np.array([[1, 2, 3]])
    model.generate(prompt, 9, rng=Rng(1))  # cached steps, then the window slides
    assert steps.calls == 6 and contexts.made == 0
    module_path(monkeypatch)
    model.generate(prompt, 9, rng=Rng(1))  # every op through Function.apply
    assert contexts.made == 0
    assert all(p.grad is None for p in model.parameters())


def test_ops_under_no_grad_save_nothing_and_record_nothing(contexts):
    saved = []

    class Probe(Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            saved.append(getattr(ctx, "saved", None))
            ctx.note = "ops may keep notes on ctx"
            return a * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    x = tl.Tensor(np.ones(3, np.float32), requires_grad=True)
    with tl.no_grad():
        y = Probe.apply(x)
    constant = Probe.apply(tl.Tensor(np.ones(3, np.float32)))  # grad on, nothing wants it
    assert y.grad_fn is None and not y.requires_grad
    assert constant.grad_fn is None and not constant.requires_grad
    assert contexts.made == 0 and saved == [None, None]
    z = Probe.apply(x)  # a gradient is wanted: one node, with its saved array
    assert contexts.made == 1 and isinstance(z.grad_fn, Context) and saved[-1][0] is x.numpy()
    z.backward(np.ones(3, np.float32))
    np.testing.assert_array_equal(x.grad, np.full(3, 2.0, np.float32))
