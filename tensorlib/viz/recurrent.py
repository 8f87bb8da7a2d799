"""Pictures of what flows back through a recurrent network (notebook 12d): how large the
gradient of one loss is at each earlier step (:func:`plot_gradient_through_time`), and how
much a recurrent model's last output depends on each input of a sequence, before and after
training (:func:`plot_memory`). Both take the norms already computed (numpy), one curve per
label, and draw them on a log scale, where a gradient that shrinks or grows by the same
factor at every step is a straight line."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from tensorlib.viz.figures import figure_and_axes, finish_axes, new_figure

__all__ = ["plot_gradient_through_time", "plot_memory"]


def _curves(curves: Any, what: str) -> dict[str, np.ndarray]:
    """``curves`` checked: a mapping of labels to 1-D sequences of positive numbers."""
    if not isinstance(curves, Mapping) or not curves:
        raise TypeError(f"{what} must be a non-empty mapping of labels to sequences of "
                        f"numbers, got {type(curves).__name__}")
    checked = {}
    for label, values in curves.items():
        array = np.asarray(values, dtype=np.float64)
        if array.ndim != 1 or array.size == 0:
            raise ValueError(f"{what}[{label!r}] must be a 1-D sequence of numbers, got shape "
                             f"{array.shape}")
        if not np.all(np.isfinite(array) & (array > 0)):
            raise ValueError(f"{what}[{label!r}] must hold finite positive numbers (a log "
                             "scale shows them)")
        checked[str(label)] = array
    return checked


def plot_gradient_through_time(norms: Mapping[str, Sequence[float]],
                               reference: Mapping[str, Sequence[float]] | None = None,
                               ax: Axes | None = None,
                               title: str | None = "the gradient, step by step back",
                               xlabel: str = "steps back from the loss",
                               ylabel: str = "gradient norm") -> Figure:
    """One line per label of ``norms``: entry k is the gradient's norm k steps back from the
    loss (k = 0 where it starts), on a log scale. ``reference`` (the same labels, or some of
    them) adds a dashed line in the same colour for each: what the gradient would be without
    the nonlinearity, say."""
    lines = _curves(norms, "norms")
    dashed = _curves(reference, "reference") if reference is not None else {}
    unknown = [label for label in dashed if label not in lines]
    if unknown:
        raise ValueError(f"reference has label(s) {', '.join(map(repr, unknown))} that norms "
                         f"lacks; norms has {', '.join(map(repr, lines))}")
    figure, axes = figure_and_axes(ax, (7.0, 4.0))
    for index, (label, values) in enumerate(lines.items()):
        axes.plot(np.arange(len(values)), values, color=f"C{index}", linewidth=1.6,
                  marker="o", markersize=2.5, label=label)
        if label in dashed:
            axes.plot(np.arange(len(dashed[label])), dashed[label], color=f"C{index}",
                      linestyle="--", linewidth=1.0, alpha=0.7)
    axes.set_yscale("log")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    finish_axes(axes, xlabel, ylabel, title, loc="best", fontsize="small")
    return figure


def plot_memory(at_start: Mapping[str, Sequence[float]],
                trained: Mapping[str, Sequence[float]],
                title: str | None = "how much the last output depends on each input",
                xlabel: str = "position in the sequence") -> Figure:
    """Two panels side by side, one line per label in each: entry t is how much a model's
    last output (its loss) depends on the input at position t (the norm of the gradient
    there), ``at_start`` for the models as initialised and ``trained`` after training, on
    log scales. A label in both panels has the same colour in both."""
    before, after = _curves(at_start, "at_start"), _curves(trained, "trained")
    labels = list(before) + [label for label in after if label not in before]
    figure = new_figure((9.0, 3.8))
    left, right = figure.subplots(1, 2, sharey=True)
    for axes, curves, name in ((left, before, "at the start of training"),
                               (right, after, "after training")):
        for label, values in curves.items():
            axes.plot(np.arange(len(values)), values, color=f"C{labels.index(label)}",
                      linewidth=1.6, marker="o", markersize=2.5, label=label)
        axes.set_yscale("log")
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))
        finish_axes(axes, xlabel, "gradient norm" if axes is left else "", name,
                    loc="best", fontsize="small")
    if title:
        figure.suptitle(title)
    return figure
