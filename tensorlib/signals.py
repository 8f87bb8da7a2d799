"""What flows through a network, recorded and summarised: activations and their gradients.

:func:`record_activations` runs layers one after another and keeps each output (with its
gradient, after a backward pass); :func:`activation_statistics` and
:func:`gradient_statistics` summarise them per layer (mean, std, the saturated fraction), the
diagnostics for vanishing, exploding and saturating signals; :func:`format_statistics` prints
them. Nothing here draws: :mod:`tensorlib.viz` plots these numbers (its histograms), and
needs matplotlib, which this module does not.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tensorlib import validation
from tensorlib.nn.capture import capture_activations
from tensorlib.nn.container import ModuleList
from tensorlib.nn.layers import MLP, HookPoint
from tensorlib.nn.module import Module
from tensorlib.tensor import Tensor

__all__ = ["ActivationTrace", "SignalStatistics", "activation_statistics", "as_array",
           "format_statistics", "gradient_statistics", "named_signals", "record_activations"]


def as_array(value: Any, what: str) -> np.ndarray:
    """The array of a Tensor, or ``value`` as a numpy array; TypeError naming ``what`` for
    anything that is neither."""
    if isinstance(value, Tensor):
        return value._data
    try:
        return np.asarray(value)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{what} must be an array or a Tensor, got {type(value).__name__}") \
            from error


def _step_name(index: int, step: Any) -> str:
    if isinstance(step, Module):
        return f"{index}: {type(step).__name__}"
    return f"{index}: {getattr(step, '__name__', type(step).__name__)}"


def _named_steps(layers: Any) -> list[tuple[str, Callable[[Tensor], Tensor]]]:
    if isinstance(layers, MLP):
        steps: list[tuple[str, Callable[[Tensor], Tensor]]] = []
        pairs = zip(layers.layers, layers.activation_functions, strict=True)
        for index, (linear, activation) in enumerate(pairs):
            steps.append((f"layers.{index}: Linear", linear))
            kind = getattr(activation, "__name__", "activation").lstrip("_")
            steps.append((f"layers.{index}: {kind}", activation))
        return steps
    if isinstance(layers, ModuleList):
        layers = list(layers)
    if isinstance(layers, Mapping):
        layers = list(layers.items())
    if isinstance(layers, (str, bytes)) or not isinstance(layers, Iterable):
        raise TypeError("layers must be an MLP, a ModuleList or a sequence of callables or "
                        f"(name, callable) pairs, got {type(layers).__name__}")
    steps = []
    for index, step in enumerate(layers):
        if isinstance(step, tuple) and len(step) == 2 and isinstance(step[0], str):
            name, function = step
        else:
            name, function = _step_name(index, step), step
        if not callable(function):
            raise TypeError(f"layer {index} ({name}) is not callable: {function!r}")
        steps.append((name, function))
    if not steps:
        raise ValueError("layers is empty")
    return steps


class ActivationTrace:
    """The outputs of layers applied one after another, kept for inspection.

    ``names[i]`` and ``tensors[i]`` are a recorded layer's name and output (with
    ``retain_grad()``, so after a backward pass through ``output`` their ``.grad`` holds
    d loss / d output). ``output`` is the last layer's output.
    """

    def __init__(self, names: list[str], tensors: list[Tensor], output: Tensor) -> None:
        self.names = names
        self.tensors = tensors
        self.output = output

    def activations(self) -> list[tuple[str, np.ndarray]]:
        """``(name, values)`` for every recorded layer."""
        return [(name, tensor._data) for name, tensor in zip(self.names, self.tensors,
                                                              strict=True)]

    def gradients(self) -> list[tuple[str, np.ndarray]]:
        """``(name, d loss / d output)`` for every recorded layer; RuntimeError naming the
        first layer without a gradient when no backward pass has reached it."""
        result = []
        for name, tensor in zip(self.names, self.tensors, strict=True):
            if tensor.grad is None:
                raise RuntimeError(f"layer {name!r} has no gradient: call backward() on a loss "
                                   "computed from trace.output first")
            result.append((name, np.asarray(tensor.grad)))
        return result

    def __len__(self) -> int:
        return len(self.names)

    def __repr__(self) -> str:
        return f"ActivationTrace({len(self)} layers: {', '.join(self.names)})"


def record_activations(layers: Any, inputs: Any, only: str | None = None) -> ActivationTrace:
    """Apply ``layers`` in order to ``inputs`` and record each layer's output.

    ``layers`` is an ``MLP`` (each Linear and each activation is a step, named like
    ``"layers.0: Linear"`` and ``"layers.0: tanh"``), a ``ModuleList``, or a sequence whose
    items are callables (named ``"0: Linear"``, ``"1: tanh"``, ...) or ``(name, callable)``
    pairs. ``only`` keeps the steps whose name contains that text (``only="tanh"``). The
    graph is recorded as usual, so ``trace.output`` can feed a loss and ``backward()``.

    The recording is :func:`~tensorlib.nn.capture_activations` with ``keep_graph=True``: a
    :class:`~tensorlib.nn.HookPoint` after each kept step, its forward hook keeping the output.
    """
    steps = _named_steps(layers)
    kept = [name for name, _ in steps if only is None or only in name]
    if not kept:
        raise ValueError(f"no layer name contains {only!r}; names are "
                         f"{[name for name, _ in steps]}")
    points = ModuleList(HookPoint() for _ in kept)  # recorded under "0", "1", ...
    x = inputs if isinstance(inputs, Tensor) else Tensor(np.asarray(inputs, dtype=np.float32))
    with capture_activations(points, keep_graph=True) as capture:
        point = iter(points)
        for name, function in steps:
            x = function(x)
            if not isinstance(x, Tensor):
                raise TypeError(f"layer {name!r} returned {type(x).__name__}, not a Tensor")
            if only is None or only in name:
                x = next(point)(x)
    return ActivationTrace(kept, [capture[str(index)] for index in range(len(kept))], x)


@dataclass(frozen=True)
class SignalStatistics:
    """Summary of one layer's values: ``mean``, ``std`` (population) and, for activations,
    ``saturated``, the fraction with ``|value| > saturation`` (None for gradients)."""

    name: str
    shape: tuple[int, ...]
    mean: float
    std: float
    saturated: float | None


def named_signals(source: Any, gradients: bool) -> list[tuple[str, np.ndarray]]:
    if isinstance(source, ActivationTrace):
        return source.gradients() if gradients else source.activations()
    if isinstance(source, Module):
        if not gradients:
            raise TypeError("a Module has no recorded activations; use record_activations")
        pairs = [(name, np.asarray(p.grad)) for name, p in source.named_parameters()
                 if p.grad is not None]
        if not pairs:
            raise RuntimeError(f"no parameter of this {type(source).__name__} has a gradient; "
                               "run backward() first")
        return pairs
    if isinstance(source, Mapping):
        source = list(source.items())
    if isinstance(source, (str, bytes)) or not isinstance(source, Iterable):
        raise TypeError("expected an ActivationTrace, a Module (gradients), a dict or a list "
                        f"of (name, array) pairs, got {type(source).__name__}")
    pairs = []
    for index, item in enumerate(source):
        if not (isinstance(item, tuple) and len(item) == 2):
            raise TypeError(f"item {index} is not a (name, array) pair: {item!r}")
        pairs.append((str(item[0]), np.asarray(as_array(item[1], f"item {index}"))))
    if not pairs:
        raise ValueError("nothing to summarise: no (name, array) pairs")
    return pairs


def _statistics(pairs: list[tuple[str, np.ndarray]],
                saturation: float | None) -> list[SignalStatistics]:
    result = []
    for name, values in pairs:
        flat = np.asarray(values, dtype=np.float64).ravel()
        if flat.size == 0:
            raise ValueError(f"layer {name!r} has no values")
        saturated = None if saturation is None else float(np.mean(np.abs(flat) > saturation))
        result.append(SignalStatistics(name, tuple(np.shape(values)), float(flat.mean()),
                                       float(flat.std()), saturated))
    return result


def activation_statistics(source: Any, saturation: float = 0.97) -> list[SignalStatistics]:
    """Mean, std and saturated fraction (``|value| > saturation``) of each layer's output.

    ``source`` is an :class:`ActivationTrace` or ``(name, array)`` pairs (or a dict).
    """
    saturation = validation.non_negative(saturation, "saturation")
    return _statistics(named_signals(source, gradients=False), saturation)


def gradient_statistics(source: Any) -> list[SignalStatistics]:
    """Mean and std of each layer's gradient.

    ``source`` is an :class:`ActivationTrace` after ``backward()`` (gradients of the
    recorded outputs), a Module (every parameter whose ``.grad`` is set) or ``(name,
    array)`` pairs.
    """
    return _statistics(named_signals(source, gradients=True), None)


def format_statistics(statistics: Sequence[SignalStatistics], number_format: str = ".4f") -> str:
    """A text table of :class:`SignalStatistics`, numbers in ``number_format`` (use
    ``".3e"`` for small gradients)."""
    rows = [("layer", "shape", "mean", "std", "saturated")]
    for item in statistics:
        rows.append((item.name, "x".join(str(d) for d in item.shape),
                     format(item.mean, number_format), format(item.std, number_format),
                     "-" if item.saturated is None else f"{item.saturated:.2%}"))
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = []
    for row in rows:
        cells = [row[0].ljust(widths[0])] + [cell.rjust(width)
                                             for cell, width in zip(row[1:], widths[1:],
                                                                    strict=True)]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)
