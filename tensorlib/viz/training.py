"""Watching a network while it trains: per-layer statistics every few steps, and their plots.

:func:`watch_training` holds a :func:`~tensorlib.nn.capture_activations` over the training
run (forward hooks on the layers to watch, keeping only the latest training pass), and its
:class:`TrainingWatch` is the ``callback`` of :func:`tensorlib.train.train`. At step 1 and
every ``every`` steps it keeps, for each watched layer, a host copy of its output and of the
gradient of the loss with respect to that output, and for each weight (every trainable
parameter with two or more axes) two ratios:

- ``gradient ratio``: std(grad) / std(weight), before the update;
- ``update ratio``: std(weight after − weight before) / std(weight before), what the step
  did to it (lr · grad for plain SGD). Its log10 near -3 is the usual healthy pace.

The kept arrays feed :func:`~tensorlib.viz.plot_activation_histograms`,
:func:`~tensorlib.viz.plot_gradient_histograms` and :func:`dead_unit_fraction`;
:func:`plot_update_ratios` draws the update ratios over the steps, and
:func:`plot_learning_rate_range_test` the losses of
:func:`tensorlib.train.learning_rate_range_test`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from tensorlib import validation
from tensorlib.backend import to_numpy
from tensorlib.nn.capture import capture_activations
from tensorlib.nn.layers import Tanh
from tensorlib.nn.module import Module
from tensorlib.train import RangeTest
from tensorlib.viz.figures import figure_and_axes, finish_axes

__all__ = ["TrainingWatch", "WatchRecord", "dead_unit_fraction",
           "plot_learning_rate_range_test", "plot_update_ratios", "watch_training"]


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
        self._before = ({name: to_numpy(p._data).copy() for name, p in self._weights}
                        if self._watched(step) else None)

    def step_done(self, record: Any) -> None:
        """The ``train`` callback: keep the statistics of ``record.step`` when it is watched
        (step 1 and every ``every``-th), after the optimizer's update."""
        step = record.step
        if self._watched(step) and self._before is not None and self._capture.passes:
            kept = WatchRecord(step)
            for name, tensor in self._capture.passes[-1].items():
                kept.activations[name] = to_numpy(tensor._data).copy()
                if tensor.grad is not None:
                    kept.gradients[name] = to_numpy(tensor.grad._data)
            for name, parameter in self._weights:
                before = self._before[name]
                if parameter.grad is not None:
                    kept.gradient_ratios[name] = _std_ratio(to_numpy(parameter.grad._data), before)
                kept.update_ratios[name] = _std_ratio(to_numpy(parameter._data) - before, before)
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


def plot_update_ratios(watch: TrainingWatch, guide: float = -3.0, ax: Axes | None = None,
                       title: str | None = "update / weight, per step") -> Figure:
    """log10 of each weight's update ratio over the watched steps, with a dashed guide line
    at ``guide`` (updates about a thousandth of the weights' spread)."""
    if not isinstance(watch, TrainingWatch):
        raise TypeError(f"expected a TrainingWatch, got {type(watch).__name__}")
    if not watch.records:
        raise ValueError("nothing watched yet: pass watch.step_done to train() as its callback")
    figure, axes = figure_and_axes(ax, (7.0, 3.5))
    for name, history in watch.update_ratio_history().items():
        axes.plot(watch.steps, history, linewidth=1.2, label=name)
    axes.axhline(validation.real(guide, "guide"), color="black", linestyle="--", linewidth=1.0)
    finish_axes(axes, "step", "log10(std(update) / std(weight))", title, fontsize=8)
    return figure


def plot_learning_rate_range_test(result: Any, ax: Axes | None = None,
                                  title: str | None = "learning-rate range test") -> Figure:
    """Each step's loss (faint) and the smoothed loss against log10 of the learning rate, with
    a dashed line at the suggestion, for a :class:`tensorlib.train.RangeTest`. The loss axis
    stops at 1.5 times the first smoothed loss, so that the blow-up does not flatten the rest."""
    if not isinstance(result, RangeTest):
        raise TypeError(f"expected a RangeTest, got {type(result).__name__}")
    if len(result.losses) == 0:
        raise ValueError("the range test recorded no loss")
    figure, axes = figure_and_axes(ax, (7.0, 3.5))
    exponents = np.log10(result.learning_rates)
    smoothed = result.smoothed_losses()
    axes.plot(exponents, result.losses, linewidth=0.8, alpha=0.4, label="loss at each step")
    axes.plot(exponents, smoothed, linewidth=1.5, label="smoothed")
    suggestion = result.suggestion()
    axes.axvline(math.log10(suggestion), color="black", linestyle="--", linewidth=1.0,
                 label=f"suggestion {suggestion:.3g}")
    axes.set_ylim(0.95 * float(np.min(result.losses)), 1.5 * float(smoothed[0]))  # the blow-up
    finish_axes(axes, "log10(learning rate)", "training loss", title, fontsize=8)  # off the top
    return figure
