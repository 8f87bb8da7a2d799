"""The figures every plot of :mod:`tensorlib.viz` is drawn on: made without ``pyplot``, sized
to fit a notebook's output area, shown by IPython as PNGs.

Every plotting function builds a ``matplotlib.figure.Figure`` with :func:`new_figure` (or
draws into the caller's axes, :func:`figure_and_axes`) and labels its axes with
:func:`finish_axes`; no figure is wider than :data:`NOTEBOOK_FIGURE_WIDTH` inches.
"""

from __future__ import annotations

import functools
import sys
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure

__all__ = ["NOTEBOOK_FIGURE_WIDTH", "figure_and_axes", "finish_axes", "ipython_shell", "new_figure"]


def ipython_shell() -> Any:
    """The running IPython shell, or None (IPython is never imported here)."""
    ipython = sys.modules.get("IPython")
    return ipython.get_ipython() if ipython is not None else None


def _enable_notebook_display() -> None:
    """Let IPython show a bare ``Figure`` as a PNG.

    matplotlib's inline backend registers this formatter only once ``pyplot`` has made a
    figure; figures built without pyplot would otherwise show as ``<Figure ...>`` text.
    An existing registration (yours, or the inline backend's) is left alone.
    """
    shell = ipython_shell()
    formatters = getattr(getattr(shell, "display_formatter", None), "formatters", None)
    if not formatters or "image/png" not in formatters:
        return
    png = formatters["image/png"]
    try:
        png.lookup_by_type(Figure)
    except KeyError:
        from IPython.core.pylabtools import print_figure

        png.for_type(Figure, functools.partial(print_figure, fmt="png", base64=True,
                                               bbox_inches="tight"))


# Inches a figure may be wide to fit a JupyterLab output area (960 px) at matplotlib's 100 dpi.
NOTEBOOK_FIGURE_WIDTH = 9.4


def new_figure(figsize: tuple[float, float]) -> Figure:
    """A new figure of ``figsize`` inches, laid out to fit, that a notebook shows as a PNG."""
    _enable_notebook_display()
    return Figure(figsize=figsize, layout="constrained")


def figure_and_axes(ax: Axes | None, figsize: tuple[float, float]) -> tuple[Figure, Axes]:
    """``ax`` and the figure that holds it, or a new figure of ``figsize`` and its axes."""
    _enable_notebook_display()  # also for figures the caller made and passes axes of
    if ax is None:
        figure = new_figure(figsize)
        return figure, figure.add_subplot()
    if not isinstance(ax, Axes):
        raise TypeError(f"ax must be a matplotlib Axes or None, got {type(ax).__name__}")
    holder = ax.figure
    while not isinstance(holder, Figure):  # a SubFigure: climb to the figure that holds it
        holder = holder.figure
    return holder, ax


def finish_axes(axes: Axes, xlabel: str, ylabel: str, title: str | None,
                 **legend: Any) -> None:
    """The labels, a light grid, the legend (``legend`` passed on) and the title, if any."""
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.grid(True, alpha=0.3)
    axes.legend(**legend)
    if title:
        axes.set_title(title)
