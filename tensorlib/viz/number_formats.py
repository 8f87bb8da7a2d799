"""Pictures of number formats (notebook 19a): the bits of one number in several formats
(:func:`plot_float_bits`), the gap between neighbouring representable numbers as a function
of their size (:func:`plot_number_spacing`), and where the magnitudes of a tensor's entries
lie against a format's limits (:func:`plot_magnitude_histograms`).

Each takes what the caller computed (bit strings, numpy arrays) and only draws it, so a
notebook builds the numbers by hand, checks them against the package, and then draws them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

from tensorlib.viz.figures import NOTEBOOK_FIGURE_WIDTH, figure_and_axes, finish_axes, new_figure

__all__ = ["plot_float_bits", "plot_magnitude_histograms", "plot_number_spacing"]

FIELD_COLOURS = {"sign": "#d62728", "exponent": "#1f77b4", "fraction": "#2ca02c"}


def _bit_rows(formats: Any) -> dict[str, tuple[str, int]]:
    """``formats`` checked: label -> (a string of 0s and 1s, the exponent's width)."""
    if not isinstance(formats, Mapping) or not formats:
        raise TypeError("formats must be a non-empty mapping of labels to (bits, exponent "
                        f"width), got {type(formats).__name__}")
    rows = {}
    for label, entry in formats.items():
        if not isinstance(entry, (tuple, list)) or len(entry) != 2:
            raise TypeError(f"formats[{label!r}] must be (bits, exponent width), got {entry!r}")
        bits, exponent = entry
        if not isinstance(bits, str) or not bits or set(bits) - {"0", "1"}:
            raise ValueError(f"formats[{label!r}]: bits must be a string of 0s and 1s, got "
                             f"{bits!r}")
        if not isinstance(exponent, (int, np.integer)) or not 1 <= exponent <= len(bits) - 2:
            raise ValueError(f"formats[{label!r}]: the exponent width must be an int from 1 "
                             f"to {len(bits) - 2} (a sign bit and a fraction bit remain), got "
                             f"{exponent!r}")
        rows[str(label)] = (bits, int(exponent))
    return rows


def plot_float_bits(formats: Mapping[str, tuple[str, int]],
                    title: str | None = None) -> Figure:
    """One row of boxes per format, one box per bit, most significant first: the sign bit,
    then ``exponent`` bits, then the fraction, each field in its own colour, each bit's value
    written in its box. ``formats`` maps a label to ``(bits, exponent width)``, such as
    ``{"float16": ("0010111001100110", 5)}``. Rows are aligned on their first bit, so
    formats of different widths line up by sign and exponent."""
    rows = _bit_rows(formats)
    longest = max(len(bits) for bits, _ in rows.values())
    width = min(NOTEBOOK_FIGURE_WIDTH, 1.6 + 0.24 * longest)
    figure = new_figure((width, 0.45 + 0.42 * len(rows)))
    axes = figure.add_subplot()
    for row, (label, (bits, exponent)) in enumerate(rows.items()):
        y = len(rows) - 1 - row
        for index, bit in enumerate(bits):
            field = "sign" if index == 0 else "exponent" if index <= exponent else "fraction"
            axes.add_patch(Rectangle((index, y + 0.1), 0.92, 0.8, facecolor=FIELD_COLOURS[field],
                                     alpha=0.25, edgecolor=FIELD_COLOURS[field], linewidth=0.8))
            axes.text(index + 0.46, y + 0.5, bit, ha="center", va="center", fontsize=8,
                      family="monospace")
        axes.text(-0.4, y + 0.5, label, ha="right", va="center", fontsize=9)
    axes.set_xlim(-0.2, longest + 0.1)
    axes.set_ylim(0, len(rows))
    axes.set_axis_off()
    axes.legend(handles=[Patch(facecolor=colour, alpha=0.35, edgecolor=colour, label=field)
                         for field, colour in FIELD_COLOURS.items()],
                loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=3, fontsize="small",
                frameon=False)
    if title:
        axes.set_title(title, fontsize=10)
    return figure


def _pairs(curves: Any, what: str) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``curves`` checked: label -> (x, y), 1-D arrays of one length, finite and positive."""
    if not isinstance(curves, Mapping) or not curves:
        raise TypeError(f"{what} must be a non-empty mapping of labels to (x, y) pairs of "
                        f"arrays, got {type(curves).__name__}")
    checked = {}
    for label, pair in curves.items():
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise TypeError(f"{what}[{label!r}] must be an (x, y) pair of arrays")
        x, y = (np.asarray(values, dtype=np.float64) for values in pair)
        if x.ndim != 1 or x.shape != y.shape or x.size == 0:
            raise ValueError(f"{what}[{label!r}]: x and y must be 1-D arrays of one length, "
                             f"got shapes {x.shape} and {y.shape}")
        if not (np.all(np.isfinite(x) & (x > 0)) and np.all(np.isfinite(y) & (y > 0))):
            raise ValueError(f"{what}[{label!r}] must hold finite positive numbers (log "
                             "scales show them)")
        checked[str(label)] = (x, y)
    return checked


def plot_number_spacing(gaps: Mapping[str, tuple[Sequence[float], Sequence[float]]],
                        points: Mapping[str, tuple[Sequence[float], Sequence[float]]]
                        | None = None,
                        title: str | None = "the gap between neighbouring numbers",
                        xlabel: str = "magnitude |x|") -> Figure:
    """The spacing of representable numbers, in two panels on log-log axes: on the left the
    gap itself, on the right the gap relative to the number (gap / x). One stepped line per
    label of ``gaps``, ``(x, gap)`` with ``gap[i]`` the distance from ``x[i]`` to the next
    representable number (constant up to the next x), and one set of markers per label of
    ``points`` (a format with few values, such as NF4's levels times a block's scale), each
    label in one colour in both panels, the legend on the left. A format of constant
    relative precision is a staircase along a diagonal on the left and a flat band on the
    right; its subnormals, of constant absolute gap, are flat on the left and rise on the
    right."""
    lines = _pairs(gaps, "gaps")
    markers = _pairs(points, "points") if points is not None else {}
    figure = new_figure((9.0, 3.9))
    absolute, relative = figure.subplots(1, 2)
    for axes, divided in ((absolute, False), (relative, True)):
        for index, (label, (x, y)) in enumerate(lines.items()):
            axes.plot(x, y / x if divided else y, color=f"C{index}", linewidth=1.5,
                      drawstyle="steps-post", label=label)
        for index, (label, (x, y)) in enumerate(markers.items(), start=len(lines)):
            axes.plot(x, y / x if divided else y, color=f"C{index}", linestyle="none",
                      marker="o", markersize=4, label=label)
        axes.set_xscale("log")
        axes.set_yscale("log")
        finish_axes(axes, xlabel, "gap / |x|" if divided else "gap to the next number",
                    "relative to the number" if divided else "the gap", loc="upper left",
                    fontsize="small")
    relative.get_legend().remove()  # the same colours as on the left
    if title:
        figure.suptitle(title)
    return figure


def plot_magnitude_histograms(values: Mapping[str, Any],
                              marks: Mapping[str, float] | None = None, bins: int = 60,
                              ax: Axes | None = None,
                              title: str | None = "where the magnitudes lie",
                              xlabel: str = "magnitude |x|",
                              ylabel: str = "entries") -> Figure:
    """A histogram of the non-zero magnitudes of each label's array on a log scale (the
    same bins for all, spaced evenly in log |x|, drawn as outlines), and a dashed vertical
    line at each of ``marks`` (label -> a positive number: a format's smallest subnormal,
    its smallest normal, its largest number). Zeros have no place on a log scale: count
    them apart."""
    arrays = {}
    if not isinstance(values, Mapping) or not values:
        raise TypeError("values must be a non-empty mapping of labels to arrays, got "
                        f"{type(values).__name__}")
    for label, array in values.items():
        magnitudes = np.abs(np.asarray(array, dtype=np.float64)).ravel()
        if not np.all(np.isfinite(magnitudes)):
            raise ValueError(f"values[{label!r}] holds an inf or a nan")
        arrays[str(label)] = magnitudes[magnitudes > 0]
    if not any(array.size for array in arrays.values()):
        raise ValueError("values hold no non-zero entry to show")
    if not isinstance(bins, (int, np.integer)) or bins < 1:
        raise ValueError(f"bins must be a positive int, got {bins!r}")
    lines = dict(marks or {})
    for label, mark in lines.items():
        if not (isinstance(mark, (int, float, np.floating)) and np.isfinite(mark) and mark > 0):
            raise ValueError(f"marks[{label!r}] must be a finite positive number, got {mark!r}")
    every = np.concatenate([array for array in arrays.values() if array.size])
    low, high = np.log10(every.min()), np.log10(every.max())
    if lines:
        low = min(low, np.log10(min(lines.values())))
        high = max(high, np.log10(max(lines.values())))
    edges = np.logspace(low - 0.1, high + 0.1, int(bins) + 1)
    figure, axes = figure_and_axes(ax, (7.0, 3.8))
    for index, (label, array) in enumerate(arrays.items()):
        axes.hist(array, bins=edges.tolist(), histtype="step", linewidth=1.5, color=f"C{index}",
                  label=label)
    for index, (label, mark) in enumerate(lines.items()):
        axes.axvline(mark, color="0.35", linestyle=("--", ":", "-.")[index % 3],
                     linewidth=1.0, label=label)
    axes.set_xscale("log")
    finish_axes(axes, xlabel, ylabel, title, loc="upper left", fontsize="small")
    return figure
