"""Neurons, layers and multilayer perceptrons built from scalar :class:`Value` objects.

Weights are drawn from ``rng.uniform(-1.0, 1.0)`` in a fixed order (neuron by neuron, input by
input) and biases start at 0.0, so the same seed always gives the same network. ``rng`` is any
object with a ``uniform(low, high)`` method returning a float (``random.Random`` works); when
it is None, ``tensorlib.engine.splitmix64.Rng(0)`` is used.
"""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Real
from typing import Any, Protocol

from tensorlib.engine import validation
from tensorlib.scalar.engine import Value

NONLINEARITIES = ("tanh", "relu", None)


class UniformSource(Protocol):
    """Anything that draws a float uniformly from [low, high)."""

    def uniform(self, low: float, high: float) -> float: ...


def _default_rng() -> UniformSource:
    """A fresh ``tensorlib.engine.splitmix64.Rng(0)``, imported only when needed."""
    from tensorlib.engine.splitmix64 import Rng

    return Rng(0)


def _check_count(name: str, count: object) -> int:
    return validation.positive_integer(count, name)


def _as_inputs(inputs: Value | float | Sequence[Value | float], expected: int) -> list[Value]:
    """Inputs as a list of Values of the expected length (a lone scalar counts as one)."""
    if isinstance(inputs, (Value, float, Real)):
        inputs = [inputs]
    values = [x if isinstance(x, Value) else Value(x) for x in inputs]
    if len(values) != expected:
        raise ValueError(f"expected {expected} inputs, got {len(values)}")
    return values


class Module:
    """Base class: a callable that owns a list of trainable Values."""

    def parameters(self) -> list[Value]:
        """Every trainable Value, in a fixed order."""
        return []

    def zero_grad(self) -> None:
        """Set the grad of every parameter to 0.0 (gradients accumulate until this is called)."""
        for parameter in self.parameters():
            parameter.grad = 0.0


class Neuron(Module):
    """``nonlinearity(sum_i weights[i] * inputs[i] + bias)``; nonlinearity None is linear."""

    def __init__(
        self,
        number_of_inputs: int,
        nonlinearity: str | None = "tanh",
        rng: UniformSource | None = None,
    ) -> None:
        self.number_of_inputs = _check_count("number_of_inputs", number_of_inputs)
        if nonlinearity not in NONLINEARITIES:
            raise ValueError(f"nonlinearity must be one of {NONLINEARITIES}, got {nonlinearity!r}")
        self.nonlinearity = nonlinearity
        rng = _default_rng() if rng is None else rng
        self.weights = [
            Value(float(rng.uniform(-1.0, 1.0)), label=f"w{i}") for i in range(number_of_inputs)
        ]
        self.bias = Value(0.0, label="b")

    def __call__(self, inputs: Value | float | Sequence[Value | float]) -> Value:
        """One output Value for ``number_of_inputs`` inputs (Values or numbers)."""
        activation = self.bias
        for weight, x in zip(self.weights, _as_inputs(inputs, self.number_of_inputs), strict=True):
            activation = activation + weight * x
        if self.nonlinearity == "tanh":
            return activation.tanh()
        if self.nonlinearity == "relu":
            return activation.relu()
        return activation

    def parameters(self) -> list[Value]:
        """The weights, then the bias."""
        return [*self.weights, self.bias]

    def __repr__(self) -> str:
        return f"Neuron({self.number_of_inputs}, nonlinearity={self.nonlinearity!r})"


class Layer(Module):
    """``number_of_outputs`` independent neurons that all read the same inputs."""

    def __init__(self, number_of_inputs: int, number_of_outputs: int, **neuron_kwargs: Any) -> None:
        self.number_of_inputs = _check_count("number_of_inputs", number_of_inputs)
        self.number_of_outputs = _check_count("number_of_outputs", number_of_outputs)
        # One generator shared by all neurons, so they do not all draw the same weights.
        if neuron_kwargs.get("rng") is None:
            neuron_kwargs["rng"] = _default_rng()
        self.neurons = [Neuron(number_of_inputs, **neuron_kwargs) for _ in range(number_of_outputs)]

    def __call__(self, inputs: Value | float | Sequence[Value | float]) -> list[Value]:
        """A list of ``number_of_outputs`` Values (always a list, even of length one)."""
        values = _as_inputs(inputs, self.number_of_inputs)
        return [neuron(values) for neuron in self.neurons]

    def parameters(self) -> list[Value]:
        """Each neuron's parameters, neuron by neuron."""
        return [p for neuron in self.neurons for p in neuron.parameters()]

    def __repr__(self) -> str:
        nonlinearity = self.neurons[0].nonlinearity
        return (
            f"Layer({self.number_of_inputs} -> {self.number_of_outputs}, "
            f"nonlinearity={nonlinearity!r})"
        )


class MLP(Module):
    """Layers in sequence: hidden layers use ``nonlinearity`` (tanh), the last is linear."""

    def __init__(
        self,
        number_of_inputs: int,
        layer_sizes: Sequence[int],
        rng: UniformSource | None = None,
        nonlinearity: str | None = "tanh",
    ) -> None:
        self.number_of_inputs = _check_count("number_of_inputs", number_of_inputs)
        layer_sizes = list(layer_sizes)
        if not layer_sizes:
            raise ValueError("layer_sizes must name at least one layer")
        for size in layer_sizes:
            _check_count("each of layer_sizes", size)
        self.layer_sizes = layer_sizes
        rng = _default_rng() if rng is None else rng
        sizes = [number_of_inputs, *layer_sizes]
        last = len(layer_sizes) - 1
        self.layers = [
            Layer(
                sizes[i],
                sizes[i + 1],
                nonlinearity=None if i == last else nonlinearity,
                rng=rng,
            )
            for i in range(len(layer_sizes))
        ]

    def __call__(self, inputs: Value | float | Sequence[Value | float]) -> Value | list[Value]:
        """The last layer's outputs: a single Value when it has one output, else a list."""
        values: list[Value] = _as_inputs(inputs, self.number_of_inputs)
        for layer in self.layers:
            values = layer(values)
        return values[0] if len(values) == 1 else values

    def parameters(self) -> list[Value]:
        """Each layer's parameters, first layer first."""
        return [p for layer in self.layers for p in layer.parameters()]

    def __repr__(self) -> str:
        lines = "".join(f"  {layer!r},\n" for layer in self.layers)
        return f"MLP(\n{lines})"
