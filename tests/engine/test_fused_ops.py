"""The fused fast paths added for speed: each agrees with its primitive twin or exact form."""

import math
import warnings

import numpy as np
import pytest
from scipy import special

import tensorlib as tl
from tensorlib import Rng, gradcheck
from tensorlib.engine.kernels import erf_float32
from tensorlib.engine.ops.function import Function
from tensorlib.nn import Linear
from tensorlib.nn import functional as F
from tensorlib.optim import AdamW

from helpers import assert_same_adamw_run, count_nodes


def random(*shape, seed=0, dtype=np.float64, requires_grad=True):
    values = np.random.default_rng(seed).normal(size=shape).astype(dtype)
    return tl.Tensor(values, requires_grad=requires_grad)


# --------------------------------------------------------------------------------- erf / gelu
def test_float32_erf_is_within_four_ulps_of_the_exact_erf():
    x = np.linspace(-6.0, 6.0, 400_001).astype(np.float32)
    exact = special.erf(x.astype(np.float64))
    approx = erf_float32(x)
    assert approx.dtype == np.float32
    error = np.abs(approx - exact)
    ulp = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    assert error.max() < 2e-7
    assert (error / np.maximum(ulp, 1e-45)).max() <= 4.0
    np.testing.assert_array_equal(erf_float32(-x), -approx)  # odd


def test_float32_erf_special_values():
    x = np.array([0.0, np.inf, -np.inf, np.nan, 1e30, -1e30, 1e-30], dtype=np.float32)
    out = erf_float32(x)
    np.testing.assert_array_equal(out[:3], [0.0, 1.0, -1.0])
    assert np.isnan(out[3])
    np.testing.assert_array_equal(out[4:6], [1.0, -1.0])
    assert out[6] == pytest.approx(2 / math.sqrt(math.pi) * 1e-30, rel=1e-6)
    zero_d = erf_float32(np.array(np.float32(0.5)))  # a 0-d array stays one
    assert zero_d.shape == () and zero_d == pytest.approx(0.5204998778, rel=1e-6)


def test_float32_gelu_value_and_slope_match_the_exact_ones():
    x64 = np.linspace(-8.0, 8.0, 100_001)
    x = tl.Tensor(x64.astype(np.float32), requires_grad=True)
    y = x.gelu()
    y.backward(np.ones(x.shape, dtype=np.float32))
    xx = x.numpy().astype(np.float64)
    cdf = 0.5 * (1 + special.erf(xx / math.sqrt(2)))
    np.testing.assert_allclose(y.data, xx * cdf, rtol=0, atol=8e-7)
    slope = cdf + xx * np.exp(-xx * xx / 2) / math.sqrt(2 * math.pi)
    np.testing.assert_allclose(x.grad, slope, rtol=0, atol=5e-7)
    # within a few float32 ulps of the value (or of x near 0, where GELU ≈ x/2)
    error = np.abs(y.numpy() - xx * cdf)
    ulp = np.spacing(np.abs(x.data)).astype(np.float64)
    assert (error / ulp).max() <= 4.0
    assert y.dtype == np.float32 and x.grad.dtype == np.float32


def test_float32_gelu_is_exact_far_from_zero_without_warnings():
    # Far from 0 the density φ underflows to exactly 0 (silently, and x² may overflow), so Φ
    # is exactly 0 or 1, GELU is 0 or x and the slope 0 or 1, as PyTorch gives.
    values = np.array([-3e38, -1e30, -1e4, -30.0, 30.0, 1e4, 1e30, 3e38], dtype=np.float32)
    x = tl.Tensor(values, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = x.gelu()
        y.backward(np.ones(x.shape, dtype=np.float32))
    np.testing.assert_array_equal(y.data, np.where(values > 0, values, 0.0))
    np.testing.assert_array_equal(x.grad, [0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0])


def test_float32_gelu_of_inf_and_nan_matches_pytorch():
    # GELU(inf) = inf, GELU(-inf) = -inf·0 = nan and nan stays nan; the slope of all three
    # is nan (inf·0), as PyTorch gives.
    x = tl.Tensor(np.array([np.inf, -np.inf, np.nan], dtype=np.float32), requires_grad=True)
    y = x.gelu()
    y.backward(np.ones(3, dtype=np.float32))
    assert y.data[0] == np.inf and np.isnan(y.data[1:]).all()
    assert np.isnan(x.grad).all()


def test_float32_gelu_gives_the_same_values_with_and_without_a_graph():
    x = random(4, 33, dtype=np.float32)
    with tl.no_grad():
        plain = x.gelu()
    assert plain.grad_fn is None
    np.testing.assert_array_equal(plain.data, x.gelu().data)


def test_float64_gelu_stays_exact():
    x = random(3, 5)
    exact = x.data * 0.5 * (1 + special.erf(x.data / math.sqrt(2)))
    np.testing.assert_allclose(x.gelu().data, exact, rtol=1e-15, atol=1e-16)
    assert gradcheck(lambda t: t.gelu(), x)


def test_gelu_of_integers_is_float32():
    out = tl.tensor([1, 2]).gelu()
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.data, [0.8413447460685429, 1.9544997361036416], rtol=1e-6)


# --------------------------------------------------------------------------------- linear
@pytest.mark.parametrize("shape", [(5,), (4, 5), (2, 3, 5)])
@pytest.mark.parametrize("with_bias", [True, False])
def test_linear_agrees_with_its_primitive_twin(shape, with_bias):
    x, weight = random(*shape, seed=1), random(3, 5, seed=2)
    bias = random(3, seed=3) if with_bias else None
    fused, chained = F.linear(x, weight, bias), F.linear_reference(x, weight, bias)
    np.testing.assert_allclose(fused.data, chained.data, rtol=1e-12)
    upstream = np.random.default_rng(4).normal(size=fused.shape)
    fused.backward(upstream)
    fused_grads = [t.grad for t in (x, weight, bias) if t is not None]
    for t in (x, weight, bias):
        if t is not None:
            t.grad = None
    chained.backward(upstream)
    for mine, theirs in zip(fused_grads, [t.grad for t in (x, weight, bias) if t is not None],
                            strict=True):
        np.testing.assert_allclose(mine, theirs, rtol=1e-12, atol=1e-14)
    assert count_nodes(fused) == 1
    inputs = [t for t in (x, weight, bias) if t is not None]
    assert gradcheck(lambda *ts: F.linear(*ts), *inputs)


def test_linear_skips_unwanted_gradients_and_keeps_float32():
    x = random(6, 4, dtype=np.float32, requires_grad=False)
    weight = random(2, 4, dtype=np.float32)
    out = F.linear(x, weight)
    out.sum().backward()
    assert x.grad is None and weight.grad.dtype == np.float32
    np.testing.assert_allclose(weight.grad, np.ones((6, 2), np.float32).T @ x.data, rtol=1e-6)


def test_linear_rejects_bad_shapes_and_dtypes():
    weight = random(3, 5)
    with pytest.raises(ValueError, match=r"\(2, 4\).*5 input features"):
        F.linear(random(2, 4), weight)
    with pytest.raises(ValueError, match="bias of shape"):
        F.linear(random(2, 5), weight, random(4))
    with pytest.raises(ValueError, match="2-D"):
        F.linear(random(2, 5), random(5))
    with pytest.raises(TypeError, match="mixed dtypes"):
        F.linear(random(2, 5, dtype=np.float32), weight)
    with pytest.raises(TypeError, match="floating"):
        F.linear(tl.tensor([[1, 2, 3, 4, 5]]), weight)


def test_linear_layer_values_match_the_functional_form():
    layer = Linear(5, 3, rng=Rng(0))
    x = random(2, 4, 5, dtype=np.float32)
    np.testing.assert_allclose(layer(x).data, F.linear(x, layer.weight, layer.bias).data,
                               rtol=1e-6)


# --------------------------------------------------------------------------------- attention
@pytest.mark.parametrize("batch, length, heads, width", [(2, 5, 2, 3), (1, 1, 1, 4),
                                                         (3, 7, 4, 2)])
def test_causal_attention_agrees_with_its_primitive_twin(batch, length, heads, width):
    qkv = random(batch, length, 3 * heads * width, seed=length)
    fused = F.causal_attention(qkv, heads)
    chained = F.causal_attention_reference(qkv, heads)
    assert fused.shape == (batch, length, heads * width)
    np.testing.assert_allclose(fused.data, chained.data, rtol=1e-12, atol=1e-14)
    upstream = np.random.default_rng(1).normal(size=fused.shape)
    fused.backward(upstream)
    mine, qkv.grad = qkv.grad, None
    chained.backward(upstream)
    np.testing.assert_allclose(mine, qkv.grad, rtol=1e-10, atol=1e-12)
    assert count_nodes(fused) == 1


def test_attend_between_split_and_merged_heads_is_the_fused_core():
    qkv = random(2, 5, 12, seed=3)
    query, key, value = F.split_heads(qkv, 2)  # (2, 2, 5, 2) each
    assert query.shape == key.shape == value.shape == (2, 2, 5, 2)
    context, probabilities = F.attend(query, key, value, 1 / math.sqrt(2))
    assert probabilities.shape == (2, 2, 5, 5)
    np.testing.assert_array_equal(np.triu(probabilities.data, 1), 0.0)  # no look ahead
    merged = F.merge_heads(context)
    np.testing.assert_allclose(merged.data, F.causal_attention(qkv, 2).data, rtol=1e-12)
    assert gradcheck(lambda t: F.merge_heads(F.attend(*F.split_heads(t, 2), 0.7)[0]), qkv)


def test_attend_after_cached_keys_gives_the_rows_of_the_whole_sequence():
    qkv = random(1, 6, 6, seed=4, requires_grad=False)
    query, key, value = F.split_heads(qkv, 1)
    whole, _ = F.attend(query, key, value, 0.5)
    offset = 4  # the last two queries, the first four keys already cached
    late, late_probabilities = F.attend(query[:, :, offset:], key, value, 0.5, offset=offset)
    np.testing.assert_allclose(late.data, whole.data[:, :, offset:], rtol=1e-12)
    assert late_probabilities.shape == (1, 1, 2, 6)
    assert late_probabilities.data[0, 0, 0, 5] == 0.0  # query 4 does not see key 5


def test_attend_hands_the_probabilities_to_observe_before_mixing():
    qkv = random(1, 3, 3, seed=6, requires_grad=False)
    uniform = tl.Tensor(np.tril(np.ones((1, 1, 3, 3))) / np.arange(1, 4)[:, None])
    context, seen = F.attend(*F.split_heads(qkv, 1), 1.0, observe=lambda p: uniform)
    assert seen is uniform
    value = qkv.data[0, :, 2:]  # (T, D)
    np.testing.assert_allclose(context.data[0, 0], np.cumsum(value, 0) / np.arange(1, 4)[:, None])


def test_causal_attention_passes_gradcheck_with_a_custom_scale():
    qkv = random(2, 4, 12, seed=5)
    assert gradcheck(lambda t: F.causal_attention(t, 2, scale=0.7), qkv)


def test_causal_attention_does_not_look_ahead():
    qkv = random(1, 6, 12, seed=2, requires_grad=False)
    changed = qkv.numpy().copy()
    changed[:, 4:] += 10.0  # later positions change
    before = F.causal_attention(qkv, 2).data
    after = F.causal_attention(tl.Tensor(changed), 2).data
    np.testing.assert_array_equal(before[:, :4], after[:, :4])
    assert not np.allclose(before[:, 4:], after[:, 4:])


def test_causal_attention_float32_matches_float64():
    qkv = random(2, 16, 24, seed=3)
    single = F.causal_attention(tl.Tensor(qkv.data.astype(np.float32)), 4)
    assert single.dtype == np.float32
    np.testing.assert_allclose(single.data, F.causal_attention(qkv, 4).data, atol=1e-5)


def test_causal_attention_rejects_bad_input():
    with pytest.raises(ValueError, match=r"\(B, T, 3C\).*heads=2.*\(2, 3, 9\)"):
        F.causal_attention(random(2, 3, 9), 2)
    with pytest.raises(ValueError, match="positive integer"):
        F.causal_attention(random(2, 3, 12), 0)
    with pytest.raises(ValueError, match="shape"):
        F.causal_attention(random(3, 12), 2)


# --------------------------------------------------------------------------------- engine
def test_forward_sees_which_gradients_are_wanted():
    seen = []

    class Probe(Function):
        @staticmethod
        def forward(ctx, a, b):
            seen.append(ctx.needs_input_grad)
            return a + b

        @staticmethod
        def backward(ctx, grad):
            return grad, grad

    a, b = random(2), random(2, requires_grad=False)
    Probe.apply(a, b)
    with tl.no_grad():
        Probe.apply(a, b)
    assert seen == [(True, False), (False, False)]


def test_leaf_gradients_never_share_memory():
    a, b = random(3), random(3)
    (a + b).sum().backward()  # add's backward hands the same array to both leaves
    assert a.grad is not b.grad and not np.shares_memory(a.grad, b.grad)
    a.grad += 1.0
    np.testing.assert_array_equal(b.grad, np.ones(3))


def test_a_fresh_leaf_gradient_is_kept_without_a_copy_and_is_writeable():
    weight = random(3, 4)
    out = F.linear(random(5, 4, requires_grad=False), weight)
    out.backward(np.ones(out.shape))
    assert weight.grad.numpy().flags.writeable and weight.grad.numpy().base is None
    weight.grad *= 2.0  # must not disturb anything else
    assert weight.grad.shape == (3, 4)


# --------------------------------------------------------------------------------- AdamW
def _two_layer_model(seed=0):
    return [Linear(4, 6, rng=Rng(seed)), Linear(6, 2, rng=Rng(seed + 1))]


def _train(optimizer_of, layers, steps=3, clip=0.0):
    parameters = [p for layer in layers for p in layer.parameters()]
    optimizer = optimizer_of(parameters, clip)
    data = np.random.default_rng(7).normal(size=(steps, 5, 4)).astype(np.float32)
    for batch in data:
        optimizer.zero_grad()
        out = layers[1](layers[0](tl.Tensor(batch)).tanh())
        (out * out).mean().backward()
        optimizer.step()
    return optimizer, parameters


@pytest.mark.parametrize("clip", [0.0, 0.05])
def test_flat_adamw_is_bit_identical_to_the_per_parameter_loop(clip):
    def fast(parameters, clip):
        return AdamW(parameters, lr=0.05, max_grad_norm=clip)

    def loop(parameters, clip):
        optimizer = AdamW(parameters, lr=0.05, max_grad_norm=clip)
        kernel_step = optimizer.step

        def plain_step():
            with tl.reference_mode():  # the per-parameter loop, not the flat kernel
                kernel_step()

        optimizer.step = plain_step
        return optimizer

    opt_a, params_a = _train(fast, _two_layer_model())
    opt_b, params_b = _train(loop, _two_layer_model())
    assert_same_adamw_run(params_a, opt_a, params_b, opt_b, steps=3)


def test_flat_adamw_updates_moments_in_place_and_survives_state_loading():
    layers = _two_layer_model()
    optimizer, parameters = _train(lambda p, c: AdamW(p, lr=0.05), layers, steps=2)
    held = optimizer.state[0]["first_moment"]
    state = optimizer.state_dict()
    twin_layers = _two_layer_model()
    twin_parameters = [p for layer in twin_layers for p in layer.parameters()]
    with tl.no_grad():
        for p, q in zip(twin_parameters, parameters, strict=True):
            p.copy_(q.data)
    twin = AdamW(twin_parameters, lr=0.05)
    twin.load_state_dict(state)
    for opt, model in ((optimizer, layers),
                       (twin, twin_layers)):
        opt.zero_grad()
        out = model[1](model[0](tl.ones(2, 4)).tanh())
        out.sum().backward()
        opt.step()
    assert optimizer.state[0]["first_moment"] is held  # the same view, updated in place
    for p, q in zip(parameters, twin_parameters, strict=True):
        np.testing.assert_array_equal(p.data, q.data)


def test_flat_adamw_falls_back_when_a_parameter_is_frozen():
    layers = _two_layer_model()
    layers[0].bias.trainable = False
    optimizer, _ = _train(lambda p, c: AdamW(p, lr=0.05), layers, steps=2)
    steps = [entry["step"] for entry in optimizer.state]
    assert steps == [2, 0, 2, 2]
    assert not optimizer.state[1]["first_moment"].any()
