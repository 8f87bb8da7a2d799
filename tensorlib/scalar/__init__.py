"""Scalar autograd: :class:`Value` and the small neural networks built from it."""

from tensorlib.scalar.engine import Value
from tensorlib.scalar.nn import MLP, Layer, Module, Neuron

__all__ = ["Value", "Module", "Neuron", "Layer", "MLP"]
