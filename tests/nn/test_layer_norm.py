"""Tests for tensorlib.nn.LayerNorm."""

import math

import numpy as np
import pytest

import tensorlib as tl
from tensorlib import gradcheck
from tensorlib.nn import LayerNorm
from tensorlib.nn import functional as F


def test_parameters_start_at_one_and_zero():
    layer = LayerNorm(4)
    assert [(n, p.shape) for n, p in layer.named_parameters()] == [
        ("weight", (4,)), ("bias", (4,))]
    np.testing.assert_array_equal(layer.weight.data, 1.0)
    np.testing.assert_array_equal(layer.bias.data, 0.0)
    assert layer.eps == 1e-5


def test_forward_by_hand():
    layer = LayerNorm(4, eps=1e-5)
    with tl.no_grad():
        layer.weight.copy_(np.array([1.0, 2.0, 1.0, -1.0]))
        layer.bias.copy_(np.array([0.0, 0.5, 0.0, 1.0]))
    x = tl.tensor([[1.0, 2.0, 3.0, 4.0], [2.0, 2.0, 2.0, 2.0]])
    # row 0: mean 2.5, biased variance 1.25; row 1: constant, so all zeros before the affine
    inv = 1 / math.sqrt(1.25 + 1e-5)
    expected = [[-1.5 * inv, -0.5 * inv * 2 + 0.5, 0.5 * inv, -1.5 * inv + 1.0],
                [0.0, 0.5, 0.0, 1.0]]
    np.testing.assert_allclose(layer(x).data, expected, rtol=1e-6, atol=1e-7)


def test_output_has_zero_mean_and_unit_biased_variance():
    x = tl.Tensor(np.random.default_rng(0).normal(3.0, 5.0, size=(3, 2, 64)))
    y = LayerNorm(64, dtype=np.float64)(x).numpy()
    np.testing.assert_allclose(y.mean(-1), 0.0, atol=1e-12)
    np.testing.assert_allclose(y.var(-1), 1.0, rtol=1e-5)  # numpy's var is biased


def test_backward_through_input_weight_and_bias_gradcheck():
    layer = LayerNorm(5, dtype=np.float64)
    data = np.random.default_rng(1)
    with tl.no_grad():
        layer.weight.copy_(data.normal(size=5))
        layer.bias.copy_(data.normal(size=5))
    x = tl.Tensor(data.normal(size=(2, 3, 5)), requires_grad=True)
    assert gradcheck(lambda t, w, b: F.layer_norm(t, (5,), w, b, layer.eps),
                     x, layer.weight, layer.bias)
    upstream = data.normal(size=(2, 3, 5))
    layer(x).backward(upstream)
    normalized = (x.numpy() - x.numpy().mean(-1, keepdims=True)) / np.sqrt(
        x.numpy().var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(layer.weight.grad, (upstream * normalized).sum((0, 1)),
                               rtol=1e-10)
    np.testing.assert_allclose(layer.bias.grad, upstream.sum((0, 1)), rtol=1e-10)


def test_non_affine_mode_has_no_parameters():
    layer = LayerNorm(3, affine=False, dtype=np.float64)
    assert layer.parameters() == [] and layer.weight is None and layer.bias is None
    x = tl.Tensor(np.array([[1.0, 2.0, 6.0]]), requires_grad=True)
    y = layer(x)
    centered = x.data - 3.0
    np.testing.assert_allclose(y.data, centered / np.sqrt((centered**2).mean() + 1e-5))
    assert gradcheck(lambda t: layer(t), x)


@pytest.mark.parametrize(("eps", "error"), [(0.0, ValueError), (-1e-5, ValueError),
                                            (float("nan"), ValueError), (float("inf"), ValueError),
                                            ("1e-5", TypeError), (True, TypeError)])
def test_epsilon_must_be_positive(eps, error):
    with pytest.raises(error, match="LayerNorm eps must be a finite number > 0"):
        LayerNorm(4, eps=eps)


def test_dimension_mismatch_and_bad_inputs_raise():
    layer = LayerNorm(4)
    with pytest.raises(ValueError, match=r"4 features, got shape \(2, 3\)"):
        layer(tl.zeros(2, 3))
    with pytest.raises(TypeError, match="Tensor"):
        layer(np.zeros((2, 4)))
    with pytest.raises(ValueError):
        LayerNorm(0)


def test_matches_torch_layer_norm():
    torch = pytest.importorskip("torch")
    data = np.random.default_rng(2)
    x_np, w_np, b_np = data.normal(size=(3, 4, 8)), data.normal(size=8), data.normal(size=8)
    layer = LayerNorm(8, eps=1e-5, dtype=np.float64)
    with tl.no_grad():
        layer.weight.copy_(w_np)
        layer.bias.copy_(b_np)
    x = tl.Tensor(x_np, requires_grad=True)
    upstream = data.normal(size=(3, 4, 8))
    out = layer(x)
    out.backward(upstream)
    reference = torch.nn.LayerNorm(8, eps=1e-5, dtype=torch.float64)
    with torch.no_grad():
        reference.weight.copy_(torch.tensor(w_np))
        reference.bias.copy_(torch.tensor(b_np))
    tx = torch.tensor(x_np, requires_grad=True)
    t_out = reference(tx)
    t_out.backward(torch.tensor(upstream))
    np.testing.assert_allclose(out.data, t_out.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(x.grad, tx.grad.numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(layer.weight.grad, reference.weight.grad.numpy(), rtol=1e-9)
    np.testing.assert_allclose(layer.bias.grad, reference.bias.grad.numpy(), rtol=1e-9)
