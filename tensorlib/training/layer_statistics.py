"""What flows through a network, recorded and summarised: activations and their gradients.

:func:`record_activations` runs layers one after another and keeps each output (with its
gradient, after a backward pass); :func:`activation_statistics` and
:func:`gradient_statistics` summarise them per layer (mean, std, the saturated fraction), the
diagnostics for vanishing, exploding and saturating signals; :func:`format_statistics` prints
them.

:func:`watch_training` does the same over a training run. It holds a
:func:`~tensorlib.nn.capture_activations` (forward hooks on the layers to watch, keeping only
the latest training pass), and its :class:`TrainingWatch` is the ``callback`` of
:func:`tensorlib.training.loop.train`. At step 1 and every ``every`` steps it keeps, for each
watched layer, a host copy of its output and of the gradient of the loss with respect to that
output, and for each weight (every trainable parameter with two or more axes) two ratios:

- ``gradient ratio``: std(grad) / std(weight), before the update;
- ``update ratio``: std(weight after − weight before) / std(weight before), what the step
  did to it (lr · grad for plain SGD). Its log10 near -3 is the usual healthy pace.

:func:`dead_unit_fraction` reads the kept outputs. Nothing here draws: :mod:`tensorlib.viz`
plots these numbers (histograms, update ratios), and needs matplotlib, which this module
does not.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tensorlib.engine import validation
from tensorlib.engine.backend import to_numpy
from tensorlib.engine.tensor import Tensor
from tensorlib.nn.capture import capture_activations
from tensorlib.nn.container import ModuleList
from tensorlib.nn.layers import MLP, HookPoint, Tanh
from tensorlib.nn.module import Module

__all__ = ["ActivationTrace", "SignalStatistics", "TrainingWatch", "WatchRecord",
           "activation_statistics", "as_array", "dead_unit_fraction", "format_statistics",
           "gradient_statistics", "named_signals", "record_activations", "watch_training"]


def as_array(value: Any, what: str) -> np.ndarray:
    """The array of a Tensor, or ``value`` as a numpy array; TypeError naming ``what`` for
    anything that is neither."""
    if isinstance(value, Tensor):
        return value.numpy()
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
        return [(name, tensor.numpy()) for name, tensor in zip(self.names, self.tensors,
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


# ------------------------------------------------------------------------ watching a run
@dataclass
class WatchRecord:
    """What one watched step kept: layer name → output values and d loss / d output (host
    copies), parameter name → gradient ratio and update ratio (see the module docstring)."""

    step: int
    activations: dict[str, np.ndarray] = field(default_factory=dict)
    gradients: dict[str, np.ndarray] = field(default_factory=dict)
    gradient_ratios: dict[str, float] = field(default_factory=dict)
    update_ratios: dict[str, float] = field(default_factory=dict)


def _std_ratio(numerator: np.ndarray, denominator: np.ndarray) -> float:
    spread = float(np.std(denominator))
    return float(np.std(numerator)) / spread if spread > 0 else math.inf


class TrainingWatch:
    """The statistics :func:`watch_training` keeps; pass :meth:`step_done` to ``train`` as
    its ``callback``. ``records`` holds one :class:`WatchRecord` per watched step."""

    def __init__(self, model: Module, capture: Any, every: int) -> None:
        self.model = model
        self.every = every
        self.records: list[WatchRecord] = []
        self._capture = capture
        self._weights = [(name, p) for name, p in model.named_parameters()
                         if p.trainable and p.ndim >= 2]
        self._before: dict[str, np.ndarray] | None = None
        self._snapshot_if_watched(1)

    def _watched(self, step: int) -> bool:
        return step == 1 or step % self.every == 0

    def _snapshot_if_watched(self, step: int) -> None:
        """Copy the weights before the update of ``step``, when that step is watched."""
        self._before = ({name: to_numpy(p.numpy()).copy() for name, p in self._weights}
                        if self._watched(step) else None)

    def step_done(self, record: Any) -> None:
        """The ``train`` callback: keep the statistics of ``record.step`` when it is watched
        (step 1 and every ``every``-th), after the optimizer's update."""
        step = record.step
        if self._watched(step) and self._before is not None and self._capture.passes:
            kept = WatchRecord(step)
            for name, tensor in self._capture.passes[-1].items():
                kept.activations[name] = to_numpy(tensor.numpy()).copy()
                if tensor.grad is not None:
                    kept.gradients[name] = to_numpy(tensor.grad.numpy())
            for name, parameter in self._weights:
                before = self._before[name]
                if parameter.grad is not None:
                    kept.gradient_ratios[name] = _std_ratio(to_numpy(parameter.grad.numpy()),
                                                            before)
                kept.update_ratios[name] = _std_ratio(to_numpy(parameter.numpy()) - before, before)
            self.records.append(kept)
        self._snapshot_if_watched(step + 1)

    @property
    def steps(self) -> list[int]:
        return [record.step for record in self.records]

    def at(self, step: int) -> WatchRecord:
        """The record of ``step`` (KeyError listing the watched steps if it was not one)."""
        for record in self.records:
            if record.step == step:
                return record
        raise KeyError(f"step {step} was not watched; watched steps: {self.steps}")

    def update_ratio_history(self) -> dict[str, list[float]]:
        """Parameter name → log10 of its update ratio at each watched step."""
        return {name: [math.log10(record.update_ratios[name]) if record.update_ratios[name] > 0
                       else -math.inf for record in self.records]
                for name, _ in self._weights}

    def __repr__(self) -> str:
        return (f"TrainingWatch({len(self.records)} steps watched, every {self.every}, "
                f"{len(self._weights)} weights)")


@contextmanager
def watch_training(model: Module, modules: type[Module] | tuple[type[Module], ...] = Tanh,
                   every: int = 100) -> Iterator[TrainingWatch]:
    """Watch ``model``'s layers of the class(es) ``modules`` and its weights while it trains
    inside the ``with`` block; give ``watch.step_done`` to ``train`` as its ``callback``."""
    every = validation.positive_integer(every, "every")
    with capture_activations(model, keep_graph=True, modules=modules, training_only=True,
                             latest_only=True) as capture:
        yield TrainingWatch(model, capture, every)


def dead_unit_fraction(values: Any, activation: str = "tanh", saturation: float = 0.99) -> float:
    """The fraction of units (the last axis) that pass no gradient for any example of the
    batch: ``|value| > saturation`` for every example after tanh, ``value <= 0`` after relu."""
    array = np.asarray(values, dtype=np.float64)
    if array.ndim < 2 or array.shape[-1] == 0:
        raise ValueError(f"expected (examples, ..., units) values, got shape {array.shape}")
    rows = array.reshape(-1, array.shape[-1])
    if activation == "tanh":
        dead = np.all(np.abs(rows) > validation.non_negative(saturation, "saturation"), axis=0)
    elif activation == "relu":
        dead = np.all(rows <= 0.0, axis=0)
    else:
        raise ValueError(f"activation must be 'tanh' or 'relu', got {activation!r}")
    return float(dead.mean())
