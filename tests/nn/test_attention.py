"""Tests for tensorlib.nn.MultiheadAttention (causal self-attention, fused QKV)."""

import math

import numpy as np
import pytest

import tensorlib as tl
from tensorlib import Rng
from tensorlib.engine.gradcheck import gradcheck_module
from tensorlib.nn import Dropout, Linear, MultiheadAttention


def numpy_attention(x, qkv_weight, qkv_bias, output_weight, output_bias, heads):
    """A plain-numpy re-derivation, with explicit loops over batch, heads and positions."""
    batch, length, channels = x.shape
    width = channels // heads
    q, k, v = (x @ qkv_weight[i] + qkv_bias[i] for i in range(3))  # (B, T, C) each
    merged = np.zeros_like(x)
    for b in range(batch):
        for h in range(heads):
            cols = slice(h * width, (h + 1) * width)
            for t in range(length):
                scores = np.array([q[b, t, cols] @ k[b, s, cols] for s in range(t + 1)])
                scores /= math.sqrt(width)
                probs = np.exp(scores - scores.max())
                probs /= probs.sum()
                merged[b, t, cols] = probs @ v[b, : t + 1, cols]
    return merged @ output_weight.T + output_bias


def make_attention(channels=4, heads=2, seed=0):
    layer = MultiheadAttention(channels, heads, rng=Rng(seed), dtype=np.float64)
    data = np.random.default_rng(seed)
    with tl.no_grad():
        layer.qkv_bias.copy_(data.normal(scale=0.3, size=(3, channels)))
        layer.output.bias.copy_(data.normal(scale=0.3, size=channels))
    return layer


def arrays_of(layer):
    return (layer.qkv_weight.data, layer.qkv_bias.data, layer.output.weight.data,
            layer.output.bias.data)


def test_names_shapes_and_init():
    layer = MultiheadAttention(8, 2, rng=Rng(0))
    assert [(n, p.shape) for n, p in layer.named_parameters()] == [
        ("qkv_weight", (3, 8, 8)), ("qkv_bias", (3, 8)),
        ("output.weight", (8, 8)), ("output.bias", (8,))]
    assert [n for n, _ in layer.named_children()] == ["output", "output_dropout",
                                                      "probabilities"]
    assert isinstance(layer.output, Linear) and isinstance(layer.output_dropout, Dropout)
    bound = math.sqrt(3 / 8)
    assert np.all(np.abs(layer.qkv_weight.data) <= bound)
    assert np.abs(layer.qkv_weight.data).max() > 0.9 * bound
    np.testing.assert_array_equal(layer.qkv_bias.data, 0.0)
    # the QKV weight is the first draw: U(-bound, bound) from the seed
    expected = Rng(0).uniform(-bound, bound, size=(3, 8, 8))
    np.testing.assert_array_equal(layer.qkv_weight.data, expected)
    assert layer.head_width == 4


def test_identity_projections_single_head_by_hand():
    layer = MultiheadAttention(3, 1, rng=Rng(0), dtype=np.float64)
    with tl.no_grad():
        layer.qkv_weight.copy_(np.stack([np.eye(3)] * 3))
        layer.output.weight.copy_(np.eye(3))
    x = np.array([[[1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [1.0, 1.0, 1.0]]])
    out = layer(tl.Tensor(x)).data
    # position 0 sees only itself; position 1 weighs x0, x1 by softmax([0, 4]/sqrt 3); ...
    expected = np.zeros_like(x)
    for t in range(3):
        scores = x[0, : t + 1] @ x[0, t] / math.sqrt(3)
        weights = np.exp(scores) / np.exp(scores).sum()
        expected[0, t] = weights @ x[0, : t + 1]
    np.testing.assert_allclose(out, expected, rtol=1e-12)
    np.testing.assert_allclose(out[0, 0], x[0, 0])


@pytest.mark.parametrize("channels, heads", [(4, 1), (4, 2), (6, 3), (8, 8)])
def test_multi_head_matches_numpy_rederivation(channels, heads):
    layer = make_attention(channels, heads, seed=channels + heads)
    x = np.random.default_rng(5).normal(size=(2, 5, channels))
    out = layer(tl.Tensor(x)).data
    np.testing.assert_allclose(out, numpy_attention(x, *arrays_of(layer), heads),
                               rtol=1e-10, atol=1e-12)


def test_query_key_value_use_the_weight_without_transpose():
    # keys all zero: every visible position gets the same weight, so the output at t is the
    # mean of the values x[0..t] @ W_v; a transposed W_v would give a different answer
    layer = MultiheadAttention(2, 1, rng=Rng(0), dtype=np.float64)
    w_value = np.array([[1.0, 2.0], [0.0, 1.0]])
    with tl.no_grad():
        layer.qkv_weight.copy_(np.stack([np.eye(2), np.zeros((2, 2)), w_value]))
        layer.output.weight.copy_(np.eye(2))
    x = np.array([[[1.0, 0.0], [0.0, 3.0], [2.0, 1.0]]])
    out = layer(tl.Tensor(x)).data
    values = x[0] @ w_value
    expected = np.cumsum(values, axis=0) / np.arange(1, 4)[:, None]
    np.testing.assert_allclose(out[0], expected, rtol=1e-12)


def test_causal_masking_future_tokens_do_not_change_the_past():
    layer = make_attention(4, 2, seed=3)
    data = np.random.default_rng(8)
    x = data.normal(size=(2, 6, 4))
    changed = x.copy()
    changed[:, 4:] = data.normal(size=(2, 2, 4)) * 10
    before, after = layer(tl.Tensor(x)).data, layer(tl.Tensor(changed)).data
    np.testing.assert_array_equal(before[:, :4], after[:, :4])
    assert not np.allclose(before[:, 4:], after[:, 4:])


def test_attention_probabilities_are_causal_rows_summing_to_one():
    layer = make_attention(4, 2)
    _, probs = layer(tl.Tensor(np.random.default_rng(1).normal(size=(3, 5, 4))),
                     return_attention=True)
    assert probs.shape == (3, 2, 5, 5)
    np.testing.assert_array_equal(np.triu(probs.data, k=1), 0.0)
    np.testing.assert_allclose(probs.data.sum(-1), 1.0)


def test_backward_through_every_parameter_and_the_input():
    layer = make_attention(4, 2, seed=9)
    x = tl.Tensor(np.random.default_rng(2).normal(size=(2, 3, 4)), requires_grad=True)
    assert gradcheck_module(layer, lambda: layer(x), atol=1e-7, rtol=1e-5) == 4
    assert tl.gradcheck(lambda t: layer(t), x)


def test_output_dropout_only_in_training():
    layer = MultiheadAttention(4, 2, dropout=0.5, rng=Rng(1))
    x = tl.Tensor(np.random.default_rng(0).normal(size=(1, 4, 4)).astype(np.float32))
    layer.eval()
    clean = layer(x).numpy()
    np.testing.assert_array_equal(layer(x).data, clean)
    layer.train()
    noisy = layer(x).numpy()
    zeroed = noisy == 0
    assert zeroed.any()
    np.testing.assert_allclose(noisy[~zeroed], clean[~zeroed] * 2, rtol=1e-5)


def test_constructor_validation():
    with pytest.raises(ValueError, match=r"channels \(6\) must be divisible by heads \(4\)"):
        MultiheadAttention(6, 4)
    with pytest.raises(ValueError):
        MultiheadAttention(0, 1)
    with pytest.raises(TypeError):
        MultiheadAttention(4, 2.0)
    rng = Rng(3)
    with pytest.raises(ValueError, match=r"\[0, 1\)"):
        MultiheadAttention(4, 2, dropout=1.0, rng=rng)
    assert rng.state == 3  # rejected before any weight was drawn


def test_forward_rejects_bad_inputs():
    layer = MultiheadAttention(4, 2, rng=Rng(0))
    with pytest.raises(ValueError, match=r"4 features, got shape \(2, 3, 5\)"):
        layer(tl.zeros(2, 3, 5))
    with pytest.raises(ValueError, match=r"3-D input, got shape \(3, 4\)"):
        layer(tl.zeros(3, 4))
    with pytest.raises(TypeError, match="Tensor"):
        layer(np.zeros((1, 2, 4)))


def test_matches_torch_forward_and_backward():
    torch = pytest.importorskip("torch")
    layer = make_attention(8, 2, seed=4)
    data = np.random.default_rng(6)
    x_np, upstream = data.normal(size=(2, 5, 8)), data.normal(size=(2, 5, 8))
    x = tl.Tensor(x_np, requires_grad=True)
    layer(x).backward(upstream)

    tensors = {n: torch.tensor(p.numpy(), requires_grad=True) for n, p in layer.named_parameters()}
    tx = torch.tensor(x_np, requires_grad=True)
    q, k, v = (tx @ tensors["qkv_weight"][i] + tensors["qkv_bias"][i] for i in range(3))
    q, k, v = (t.reshape(2, 5, 2, 4).transpose(1, 2) for t in (q, k, v))  # (B, H, T, D)
    context = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    merged = context.transpose(1, 2).reshape(2, 5, 8)
    t_out = torch.nn.functional.linear(merged, tensors["output.weight"], tensors["output.bias"])
    t_out.backward(torch.tensor(upstream))

    np.testing.assert_allclose(layer(tl.Tensor(x_np)).data, t_out.detach().numpy(),
                               rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(x.grad, tx.grad.numpy(), rtol=1e-9, atol=1e-12)
    for name, parameter in layer.named_parameters():
        np.testing.assert_allclose(parameter.grad, tensors[name].grad.numpy(), rtol=1e-9,
                                   atol=1e-12, err_msg=name)
