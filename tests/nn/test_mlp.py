"""Tests for tensorlib.nn.MLP and the activation modules."""

import numpy as np
import pytest
from scipy import special

import tensorlib as tl
from tensorlib import Rng
from tensorlib.engine.gradcheck import gradcheck_module
from tensorlib.nn import GELU, MLP, Identity, Linear, ReLU, Sigmoid, Tanh


def test_layer_count_children_and_names():
    mlp = MLP(3, [5, 4], 2, ["relu", "tanh", None], rng=Rng(0))
    assert len(mlp.layers) == 3 and all(isinstance(m, Linear) for m in mlp.layers)
    assert [(n, p.shape) for n, p in mlp.named_parameters()] == [
        ("layers.0.weight", (5, 3)), ("layers.0.bias", (5,)),
        ("layers.1.weight", (4, 5)), ("layers.1.bias", (4,)),
        ("layers.2.weight", (2, 4)), ("layers.2.bias", (2,))]
    assert MLP(3, [], 2, [None], rng=Rng(0)).num_parameters() == 8


def test_forward_with_relu_then_identity_by_hand():
    mlp = MLP(2, [2], 1, ["relu", None], rng=Rng(0))
    with tl.no_grad():
        mlp.layers[0].weight.copy_(np.array([[1.0, -1.0], [2.0, 1.0]]))
        mlp.layers[0].bias.copy_(np.array([0.0, -1.0]))
        mlp.layers[1].weight.copy_(np.array([[3.0, -2.0]]))
        mlp.layers[1].bias.copy_(np.array([0.5]))
    x = tl.tensor([[1.0, 2.0], [3.0, 1.0]])
    # hidden: [relu(1-2), relu(2+2-1)] = [0, 3] and [relu(2), relu(6)] = [2, 6]
    np.testing.assert_allclose(mlp(x).data, [[0 - 6 + 0.5], [6 - 12 + 0.5]])


@pytest.mark.parametrize("name, reference", [
    ("relu", lambda z: np.maximum(z, 0)),
    ("gelu", lambda z: z * 0.5 * (1 + special.erf(z / np.sqrt(2)))),
    ("sigmoid", special.expit),
    ("tanh", np.tanh),
    ("identity", lambda z: z),
    (None, lambda z: z),
])
def test_each_named_activation(name, reference):
    mlp = MLP(3, [4], 2, [name, name], rng=Rng(1), dtype=np.float64)
    x = np.random.default_rng(0).normal(size=(5, 3))
    first, second = mlp.layers
    hidden = reference(x @ first.weight.data.T + first.bias.data)
    expected = reference(hidden @ second.weight.data.T + second.bias.data)
    np.testing.assert_allclose(mlp(tl.Tensor(x)).data, expected, rtol=1e-12, atol=1e-12)


def test_custom_callable_activations():
    calls = []

    def doubled(t):
        calls.append(t.shape)
        return t * 2.0

    mlp = MLP(2, [3], 2, [doubled, Tanh()], rng=Rng(2), dtype=np.float64)
    x = tl.Tensor(np.ones((4, 2)))
    first, second = mlp.layers
    hidden = 2 * (x.data @ first.weight.data.T + first.bias.data)
    np.testing.assert_allclose(mlp(x).data, np.tanh(hidden @ second.weight.data.T),
                               rtol=1e-12)
    assert calls == [(4, 3)]


def test_backward_through_every_layer():
    mlp = MLP(3, [4, 3], 2, ["gelu", "sigmoid", "tanh"], rng=Rng(3), dtype=np.float64)
    with tl.no_grad():
        for layer in mlp.layers:
            layer.bias.copy_(np.linspace(-0.5, 0.5, layer.out_features))
    x = tl.Tensor(np.random.default_rng(1).normal(size=(4, 3)), requires_grad=True)
    assert gradcheck_module(mlp, lambda: mlp(x), atol=1e-7, rtol=1e-5) == 6
    assert tl.gradcheck(lambda t: mlp(t), x)


def test_reproducible_from_the_seed_and_init_policies_apply():
    a = MLP(4, [8], 3, ["relu", None], rng=Rng(9))
    b = MLP(4, [8], 3, ["relu", None], rng=Rng(9))
    for (name, p), q in zip(a.named_parameters(), b.parameters(), strict=True):
        np.testing.assert_array_equal(p.data, q.data, err_msg=name)
    biasless = MLP(4, [8], 3, ["relu", None], bias=False, weight_init="zero", rng=Rng(0))
    assert [n for n, _ in biasless.named_parameters()] == ["layers.0.weight", "layers.1.weight"]
    assert all(np.all(p.data == 0) for p in biasless.parameters())
    one_bias = MLP(4, [8], 3, ["relu", None], bias_init="one", rng=Rng(0))
    np.testing.assert_array_equal(one_bias.layers[1].bias.data, 1.0)


@pytest.mark.parametrize("kwargs, error, message", [
    ({"activations": ["relu"]}, ValueError, "2 entries, got 1"),
    ({"activations": ["relu", None, None]}, ValueError, "2 entries, got 3"),
    ({"activations": ["relu", "swish"]}, ValueError, "unknown activation 'swish'"),
    ({"activations": ["relu", 3]}, TypeError, "callable"),
    ({"activations": "relu"}, TypeError, "sequence"),
    ({"hidden_sizes": [0]}, ValueError, "hidden_sizes"),
    ({"hidden_sizes": [2.5]}, TypeError, "hidden_sizes"),
    ({"hidden_sizes": 4}, TypeError, "hidden_sizes"),
    ({"input_features": 0}, ValueError, "input_features"),
    ({"output_features": -1}, ValueError, "output_features"),
    ({"weight_init": "bad"}, ValueError, "weight_init"),
])
def test_config_validation(kwargs, error, message):
    arguments = {"input_features": 3, "hidden_sizes": [4], "output_features": 2,
                 "activations": ["relu", None], "rng": Rng(0)} | kwargs
    with pytest.raises(error, match=message):
        MLP(**arguments)
    assert arguments["rng"].state == 0


def test_forward_rejects_wrong_width():
    mlp = MLP(3, [4], 2, ["relu", None], rng=Rng(0))
    with pytest.raises(ValueError, match=r"shape \(2, 5\) does not end in the weight's 3 input"):
        mlp(tl.zeros(2, 5))


def test_activation_modules():
    x = tl.tensor([-1.0, 0.0, 2.0])
    np.testing.assert_allclose(ReLU()(x).data, [0, 0, 2])
    np.testing.assert_allclose(Sigmoid()(x).data, special.expit(x.data), rtol=1e-6)
    np.testing.assert_allclose(Tanh()(x).data, np.tanh(x.data), rtol=1e-6)
    np.testing.assert_allclose(GELU()(x).data, x.data * 0.5 * (1 + special.erf(x.data / 2**0.5)),
                               rtol=1e-6, atol=1e-7)
    assert GELU("tanh")(x).shape == (3,)
    assert Identity()(x) is x
    with pytest.raises(ValueError, match="approximate"):
        GELU("fast")
