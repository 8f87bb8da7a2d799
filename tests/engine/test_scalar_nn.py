"""Tests for the scalar neural networks ``tensorlib.scalar.nn``."""

from __future__ import annotations

import math
import random

import pytest

from tensorlib.scalar import MLP, Layer, Module, Neuron, Value


def weights_of(module: Module) -> list[float]:
    return [p.data for p in module.parameters()]


# ----------------------------------------------------------------------- parameter counts


def test_parameter_counts():
    assert len(Neuron(3, rng=random.Random(0)).parameters()) == 4
    assert len(Layer(3, 5, rng=random.Random(0)).parameters()) == 5 * 4
    # (3*4 + 4) + (4*4 + 4) + (4*1 + 1) = 16 + 20 + 5
    assert len(MLP(3, [4, 4, 1], rng=random.Random(0)).parameters()) == 41


def test_parameters_are_distinct_leaf_values():
    mlp = MLP(2, [3, 1], rng=random.Random(0))
    parameters = mlp.parameters()
    assert all(isinstance(p, Value) and p.children == () for p in parameters)
    assert len({id(p) for p in parameters}) == len(parameters)


def test_init_weights_uniform_and_bias_zero():
    neuron = Neuron(50, rng=random.Random(1))
    assert all(-1.0 <= w.data <= 1.0 for w in neuron.weights)
    assert len({w.data for w in neuron.weights}) == 50
    assert neuron.bias.data == 0.0


# ---------------------------------------------------------------------------- determinism


def test_same_seed_same_weights():
    first = MLP(3, [4, 1], rng=random.Random(7))
    second = MLP(3, [4, 1], rng=random.Random(7))
    other = MLP(3, [4, 1], rng=random.Random(8))
    assert weights_of(first) == weights_of(second)
    assert weights_of(first) != weights_of(other)


def test_default_rng_is_deterministic_and_differs_between_neurons():
    first = MLP(3, [4, 1])
    second = MLP(3, [4, 1])
    assert weights_of(first) == weights_of(second)
    layer = Layer(2, 2)
    assert [w.data for w in layer.neurons[0].weights] != [w.data for w in layer.neurons[1].weights]


def test_default_rng_is_tensorlib_rng_zero():
    from tensorlib.engine.splitmix64 import Rng

    rng = Rng(0)
    expected = [float(rng.uniform(-1.0, 1.0)) for _ in range(3)]
    assert [w.data for w in Neuron(3).weights] == expected


# ------------------------------------------------------------------------------ forward


def test_neuron_forward_matches_hand_computation():
    neuron = Neuron(2, rng=random.Random(0))
    neuron.weights[0].data, neuron.weights[1].data, neuron.bias.data = 0.5, -2.0, 0.25
    out = neuron([1.0, 0.5])
    assert out.data == pytest.approx(math.tanh(0.5 - 1.0 + 0.25))
    linear = Neuron(2, nonlinearity=None, rng=random.Random(0))
    linear.weights[0].data, linear.weights[1].data = 1.0, 2.0
    assert linear([3.0, 4.0]).data == 11.0
    relu = Neuron(1, nonlinearity="relu", rng=random.Random(0))
    relu.weights[0].data = 1.0
    assert relu([-3.0]).data == 0.0
    assert relu(2.0).data == 2.0


def test_layer_and_mlp_output_shapes():
    layer = Layer(3, 2, rng=random.Random(0))
    outputs = layer([1.0, 2.0, 3.0])
    assert isinstance(outputs, list) and len(outputs) == 2
    assert len(Layer(3, 1, rng=random.Random(0))([1.0, 2.0, 3.0])) == 1
    assert isinstance(MLP(3, [4, 1], rng=random.Random(0))([1.0, 2.0, 3.0]), Value)
    many = MLP(3, [4, 2], rng=random.Random(0))([1.0, 2.0, 3.0])
    assert isinstance(many, list) and len(many) == 2


def test_mlp_hidden_layers_tanh_last_linear():
    mlp = MLP(2, [3, 3, 1], rng=random.Random(0))
    assert [layer.neurons[0].nonlinearity for layer in mlp.layers] == ["tanh", "tanh", None]
    relu = MLP(2, [3, 1], rng=random.Random(0), nonlinearity="relu")
    assert [layer.neurons[0].nonlinearity for layer in relu.layers] == ["relu", None]


def test_wrong_input_count_raises():
    with pytest.raises(ValueError, match="expected 3 inputs, got 2"):
        Neuron(3, rng=random.Random(0))([1.0, 2.0])
    with pytest.raises(ValueError, match="expected 2 inputs"):
        MLP(2, [1], rng=random.Random(0))([1.0, 2.0, 3.0])


def test_bad_constructor_arguments_raise():
    with pytest.raises(ValueError, match="nonlinearity"):
        Neuron(2, nonlinearity="gelu", rng=random.Random(0))
    with pytest.raises(ValueError):
        Neuron(0, rng=random.Random(0))
    with pytest.raises(TypeError):
        Layer(2.0, 3, rng=random.Random(0))  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        MLP(2, [], rng=random.Random(0))


def test_reprs_are_readable():
    assert repr(Neuron(3, rng=random.Random(0))) == "Neuron(3, nonlinearity='tanh')"
    assert repr(Layer(3, 2, nonlinearity=None, rng=random.Random(0))) == (
        "Layer(3 -> 2, nonlinearity=None)"
    )
    assert repr(MLP(2, [4, 1], rng=random.Random(0))) == (
        "MLP(\n  Layer(2 -> 4, nonlinearity='tanh'),\n  Layer(4 -> 1, nonlinearity=None),\n)"
    )


# ----------------------------------------------------------------------------- gradients


def test_zero_grad_resets_every_parameter():
    mlp = MLP(2, [3, 1], rng=random.Random(0))
    out = mlp([0.5, -1.0])
    out.backward()
    assert any(p.grad != 0.0 for p in mlp.parameters())
    mlp.zero_grad()
    assert all(p.grad == 0.0 for p in mlp.parameters())


def test_gradients_accumulate_without_zero_grad():
    mlp = MLP(2, [3, 1], rng=random.Random(0))
    mlp([0.5, -1.0]).backward()
    once = [p.grad for p in mlp.parameters()]
    mlp([0.5, -1.0]).backward()
    twice = [p.grad for p in mlp.parameters()]
    assert twice == pytest.approx([2 * g for g in once])


def test_tiny_training_run_reduces_loss():
    inputs = [[2.0, 3.0, -1.0], [3.0, -1.0, 0.5], [0.5, 1.0, 1.0], [1.0, 1.0, -1.0]]
    targets = [1.0, -1.0, -1.0, 1.0]
    mlp = MLP(3, [4, 4, 1], rng=random.Random(0))

    def loss_value() -> Value:
        predictions = [mlp(x) for x in inputs]
        return sum(((p - y) ** 2 for p, y in zip(predictions, targets, strict=True)), Value(0.0))

    initial = loss_value().data
    for _ in range(50):
        loss = loss_value()
        mlp.zero_grad()
        loss.backward()
        for p in mlp.parameters():
            p.data -= 0.05 * p.grad
    final = loss_value().data
    assert initial > 1.0  # observed: about 3.55 at the start, 5e-5 after 50 steps
    assert final < 0.01
