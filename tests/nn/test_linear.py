"""Tests for tensorlib.nn.Linear."""

import math

import numpy as np
import pytest

import tensorlib as tl
from tensorlib import Rng, gradcheck, manual_seed
from tensorlib.engine.gradcheck import gradcheck_module
from tensorlib.engine.splitmix64 import default_rng
from tensorlib.nn import Linear


def test_names_shapes_and_default_init():
    layer = Linear(4, 3, rng=Rng(0))
    assert [(n, p.shape) for n, p in layer.named_parameters()] == [
        ("weight", (3, 4)), ("bias", (3,))]
    assert layer.weight.dtype == np.float32
    bound = math.sqrt(6 / (4 + 3))  # Xavier uniform
    assert np.all(np.abs(layer.weight.data) <= bound) and np.ptp(layer.weight.data) > bound / 2
    np.testing.assert_array_equal(layer.bias.data, 0.0)


def test_known_weights_forward_by_hand():
    layer = Linear(3, 2, rng=Rng(0))
    with tl.no_grad():
        layer.weight.copy_(np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 0.0]]))
        layer.bias.copy_(np.array([0.5, -2.0]))
    y = layer(tl.tensor([[1.0, 1.0, 1.0], [2.0, 0.0, -1.0]]))
    # row 0: [1+2+3+0.5, -1+0.5+0-2]; row 1: [2+0-3+0.5, -2+0+0-2]
    np.testing.assert_allclose(y.data, [[6.5, -2.5], [-0.5, -4.0]])


def test_biasless_layer_has_only_a_weight():
    layer = Linear(2, 2, bias=False, rng=Rng(0))
    assert layer.bias is None
    assert [n for n, _ in layer.named_parameters()] == ["weight"]
    x = tl.tensor([[1.0, -1.0]])
    np.testing.assert_allclose(layer(x).data, x.data @ layer.weight.data.T, rtol=1e-6)


def test_leading_axes_are_kept():
    layer = Linear(3, 5, rng=Rng(1))
    x = tl.Tensor(np.random.default_rng(0).normal(size=(2, 4, 3)).astype(np.float32))
    y = layer(x)
    assert y.shape == (2, 4, 5)
    expected = x.data @ layer.weight.data.T + layer.bias.data
    np.testing.assert_allclose(y.data, expected, rtol=1e-5, atol=1e-6)
    assert layer(tl.ones(3)).shape == (5,)


def test_backward_through_input_weight_and_bias():
    layer = Linear(3, 2, bias_init="zero", rng=Rng(2), dtype=np.float64)
    with tl.no_grad():
        layer.bias.copy_(np.array([0.3, -0.2]))
    x = tl.Tensor(np.random.default_rng(1).normal(size=(2, 4, 3)), requires_grad=True)
    assert gradcheck_module(layer, lambda: layer(x), atol=1e-7, rtol=1e-5) == 2
    assert gradcheck(lambda t: layer(t), x)


def test_gradients_by_hand():
    layer = Linear(2, 1, rng=Rng(0))
    with tl.no_grad():
        layer.weight.copy_(np.array([[2.0, -1.0]]))
    x = tl.tensor([[1.0, 3.0], [4.0, 5.0]], requires_grad=True)
    layer(x).sum().backward()
    np.testing.assert_allclose(layer.weight.grad, [[5.0, 8.0]])
    np.testing.assert_allclose(layer.bias.grad, [2.0])
    np.testing.assert_allclose(x.grad, [[2.0, -1.0], [2.0, -1.0]])


def test_same_seed_same_weights_different_seed_different_weights():
    a, b, c = Linear(4, 4, rng=Rng(7)), Linear(4, 4, rng=Rng(7)), Linear(4, 4, rng=Rng(8))
    np.testing.assert_array_equal(a.weight.data, b.weight.data)
    assert not np.array_equal(a.weight.data, c.weight.data)


def test_default_rng_is_used_and_reseedable():
    manual_seed(123)
    first = Linear(3, 3).weight.numpy().copy()
    manual_seed(123)
    np.testing.assert_array_equal(Linear(3, 3).weight.data, first)
    np.testing.assert_array_equal(Linear(3, 3, rng=Rng(123)).weight.data, first)
    assert default_rng().state != 123  # construction drew from it


@pytest.mark.parametrize("policy", ["zero", "one", "xavier_normal", "he_uniform", "he_normal"])
def test_init_policies_by_name(policy):
    layer = Linear(5, 4, weight_init=policy, bias_init="one", rng=Rng(3))
    np.testing.assert_array_equal(layer.bias.data, 1.0)
    if policy == "zero":
        np.testing.assert_array_equal(layer.weight.data, 0.0)
    elif policy == "one":
        np.testing.assert_array_equal(layer.weight.data, 1.0)
    else:
        assert np.unique(layer.weight.data).size == 20


@pytest.mark.parametrize("kwargs, error", [
    ({"in_features": 0}, ValueError),
    ({"out_features": -2}, ValueError),
    ({"in_features": 2.0}, TypeError),
    ({"out_features": True}, TypeError),
    ({"weight_init": "kaiming"}, ValueError),
    ({"bias_init": None}, ValueError),
    ({"dtype": np.int64}, TypeError),
    ({"rng": 5}, TypeError),
])
def test_constructor_rejects_bad_arguments(kwargs, error):
    arguments = {"in_features": 2, "out_features": 3, "rng": Rng(0)} | kwargs
    rng = arguments["rng"]
    with pytest.raises(error):
        Linear(**arguments)
    if isinstance(rng, Rng):
        assert rng.state == 0  # nothing drawn before the rejection


def test_forward_rejects_mismatched_inputs():
    layer = Linear(3, 2, rng=Rng(0))
    with pytest.raises(ValueError, match=r"shape \(2, 4\) does not end in the weight's 3 input"):
        layer(tl.zeros(2, 4))
    with pytest.raises(TypeError, match="Tensor"):
        layer(np.zeros((2, 3)))
    with pytest.raises(TypeError, match="floating"):
        layer(tl.tensor([[1, 2, 3]]))
    with pytest.raises(ValueError):
        layer(tl.tensor(1.0))
