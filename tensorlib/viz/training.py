"""Plots of a training run (matplotlib).

:func:`plot_update_ratios` draws the update ratios that a
:class:`~tensorlib.training.layer_statistics.TrainingWatch` kept over the steps (the watch, and
:func:`~tensorlib.training.layer_statistics.watch_training`, are in
:mod:`tensorlib.training.layer_statistics`, without matplotlib);
:func:`plot_learning_rate_range_test` draws the losses of
:func:`tensorlib.training.loop.learning_rate_range_test`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from tensorlib.engine import validation
from tensorlib.training.layer_statistics import TrainingWatch
from tensorlib.training.loop import RangeTest
from tensorlib.viz.figures import figure_and_axes, finish_axes

__all__ = ["plot_learning_rate_range_test", "plot_update_ratios"]


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
    a dashed line at the suggestion, for a :class:`tensorlib.training.loop.RangeTest`. The loss axis
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
