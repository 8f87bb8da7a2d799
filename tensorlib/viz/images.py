"""Pictures of images and of what a convolutional network does with them (matplotlib).

As in :mod:`tensorlib.viz.plots`, every function builds a ``matplotlib.figure.Figure``
directly (never through ``pyplot``) and returns it; in Jupyter a returned figure displays as a
PNG. Every figure is at most :data:`~tensorlib.viz.figures.NOTEBOOK_FIGURE_WIDTH` inches wide,
so it fits a notebook's output area; panels shrink to fit.

* :func:`plot_images`: a grid of small images (digits), each with its label, and the
  prediction where it differs.
* :func:`plot_filters`: a convolution's weight ``(O, C, kH, kW)``, one panel per filter and
  input channel, on one colour scale centred on 0.
* :func:`plot_feature_maps`: the channels of a few layers' outputs for one image, a row per
  layer.
* :func:`plot_confusion_matrix`: how often each true class was predicted as each class (the
  counts of :func:`tensorlib.training.metrics.confusion_matrix`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from tensorlib.engine import validation
from tensorlib.training.layer_statistics import as_array
from tensorlib.training.metrics import class_names, confusion_matrix
from tensorlib.viz.figures import NOTEBOOK_FIGURE_WIDTH, figure_and_axes, new_figure

__all__ = ["plot_confusion_matrix", "plot_feature_maps", "plot_filters",
           "plot_images"]

WRONG_COLOUR = "#c0392b"  # a prediction that differs from the label


def _grid(count: int, columns: int, panel_size: float, extra_height: float
          ) -> tuple[Figure, np.ndarray, int]:
    """A figure of ``count`` square panels, ``columns`` per row at most, each ``panel_size``
    inches or less so that the figure fits the output area; (figure, the used axes, columns).
    The panels have no ticks."""
    columns = min(count, columns)
    rows = math.ceil(count / columns)
    size = min(panel_size, NOTEBOOK_FIGURE_WIDTH / columns)
    figure = new_figure((size * columns, size * rows + extra_height))
    grid = figure.subplots(rows, columns, squeeze=False)
    panels = grid.ravel()
    for axes in panels[count:]:
        axes.remove()
    for axes in panels[:count]:
        axes.set_xticks([])
        axes.set_yticks([])
    return figure, panels[:count], columns


def _images(images: Any, what: str) -> np.ndarray:
    """``(N, H, W)`` float64 from ``(N, H, W)`` or ``(N, 1, H, W)`` (an array or a Tensor)."""
    array = np.asarray(as_array(images, what), dtype=np.float64)
    if array.ndim == 4 and array.shape[1] == 1:
        array = array[:, 0]
    if array.ndim != 3 or 0 in array.shape:
        raise ValueError(f"{what} must be (N, H, W) or (N, 1, H, W) with N, H, W > 0, got "
                         f"shape {np.shape(as_array(images, what))}")
    return array


def _per_image(values: Any, count: int, what: str) -> list[Any]:
    if isinstance(values, (str, bytes)):
        raise TypeError(f"{what} must be a sequence with one entry per image, got a string")
    listed = list(np.asarray(values).tolist() if isinstance(values, np.ndarray) else values)
    if len(listed) != count:
        raise ValueError(f"{what} has {len(listed)} entries for {count} images")
    return listed


def plot_images(images: Any, labels: Sequence[Any] | None = None,
                predictions: Sequence[Any] | None = None, columns: int = 10,
                title: str | None = None, cmap: str = "gray_r", panel_size: float = 0.9,
                value_range: tuple[float, float] | None = None) -> Figure:
    """A grid of small images, ``columns`` per row, on one grey scale (dark is high).

    ``images``: ``(N, H, W)`` or ``(N, 1, H, W)``. ``labels`` (one per image, any values)
    title the panels; with ``predictions`` too, a panel whose prediction differs from its
    label is titled "label→prediction" in red. ``value_range`` fixes the grey scale (default:
    the smallest and largest pixel of all the images).
    """
    array = _images(images, "images")
    count = len(array)
    names = None if labels is None else _per_image(labels, count, "labels")
    guesses = None if predictions is None else _per_image(predictions, count, "predictions")
    if guesses is not None and names is None:
        raise ValueError("predictions need labels to be compared with")
    columns = validation.positive_integer(columns, "columns")
    low, high = (float(array.min()), float(array.max())) if value_range is None \
        else (float(value_range[0]), float(value_range[1]))
    if not low < high:
        low, high = low - 0.5, high + 0.5  # a blank image: any scale shows it
    figure, panels, _ = _grid(count, columns, panel_size, 0.35 if title else 0.0)
    for index, axes in enumerate(panels):
        axes.imshow(array[index], cmap=cmap, vmin=low, vmax=high, interpolation="nearest")
        if names is None:
            continue
        if guesses is not None and guesses[index] != names[index]:
            axes.set_title(f"{names[index]}→{guesses[index]}", fontsize=8, color=WRONG_COLOUR)
        else:
            axes.set_title(str(names[index]), fontsize=8)
    if title:
        figure.suptitle(title)
    return figure


def plot_filters(weight: Any, columns: int = 8, title: str | None = None,
                 cmap: str = "RdBu_r", panel_size: float = 0.8) -> Figure:
    """The filters of a convolution, ``weight (O, C, kH, kW)`` (or ``(O, kH, kW)``, one
    input channel), on one colour scale symmetric about 0, with a colour bar.

    With one input channel the O filters fill a grid ``columns`` wide, titled by their
    index; with C > 1 each filter is a row and each input channel a column, the rows named
    "filter o" and the columns "in c".
    """
    array = np.asarray(as_array(weight, "weight"), dtype=np.float64)
    if array.ndim == 3:
        array = array[:, None]
    if array.ndim != 4 or 0 in array.shape:
        raise ValueError(f"weight must be (out_channels, in_channels, kH, kW) or "
                         f"(out_channels, kH, kW), got shape "
                         f"{np.shape(as_array(weight, 'weight'))}")
    outputs, inputs = array.shape[:2]
    columns = validation.positive_integer(columns, "columns")
    if inputs > 1 and inputs > columns:
        raise ValueError(f"{inputs} input channels do not fit {columns} columns; pass "
                         f"columns={inputs} or draw weight[:, :{columns}]")
    scale = float(np.abs(array).max()) or 1.0
    count = outputs * inputs
    figure, panels, _ = _grid(count, columns if inputs == 1 else inputs, panel_size,
                              0.35 if title else 0.0)
    image = None
    for index, axes in enumerate(panels):
        out, channel = divmod(index, inputs)
        image = axes.imshow(array[out, channel], cmap=cmap, vmin=-scale, vmax=scale,
                            interpolation="nearest")
        if inputs == 1:
            axes.set_title(str(out), fontsize=8)
        else:
            if channel == 0:
                axes.set_ylabel(f"filter {out}", fontsize=8)
            if out == 0:
                axes.set_title(f"in {channel}", fontsize=8)
    assert image is not None  # there is at least one panel
    figure.colorbar(image, ax=list(panels), shrink=0.8, label="weight")
    if title:
        figure.suptitle(title)
    return figure


def plot_feature_maps(maps: Mapping[str, Any], max_channels: int = 8, title: str | None = None,
                      cmap: str = "viridis", panel_size: float = 0.9,
                      channel_names: Mapping[str, Sequence[str]] | None = None,
                      numbered: bool = False, colorbar: bool = False) -> Figure:
    """One image's feature maps, a row per layer: ``maps`` names each layer's output for
    that image, ``(C, H, W)`` (or ``(1, C, H, W)``, or ``(H, W)`` for one channel), in the
    order given. Each row (a subfigure, ``figure.subfigs[i]``) shows the first
    ``max_channels`` channels on the row's own colour scale, under its key (and how many
    channels it shows of how many, when not all).

    ``channel_names`` titles the panels of the rows it names (``{"edges": ["vertical",
    "horizontal"]}``, one name per channel shown); with ``numbered``, the panels of every
    other row of several channels are titled by their channel's index, as
    :func:`plot_filters` numbers the filters that made them. ``colorbar`` puts each row's
    colour scale beside it."""
    if not isinstance(maps, Mapping) or not maps:
        raise ValueError("maps must be a non-empty dict: layer name -> (C, H, W) array")
    rows = []
    for name, value in maps.items():
        array = np.asarray(as_array(value, f"maps[{name!r}]"), dtype=np.float64)
        if array.ndim == 4 and array.shape[0] == 1:
            array = array[0]
        if array.ndim == 2:
            array = array[None]
        if array.ndim != 3 or 0 in array.shape:
            raise ValueError(f"maps[{name!r}] must be (C, H, W), (1, C, H, W) or (H, W), got "
                             f"shape {np.shape(as_array(value, f'maps[{name!r}]'))}")
        rows.append((str(name), array))
    max_channels = validation.positive_integer(max_channels, "max_channels")
    names = _channel_names(channel_names or {}, rows, max_channels, numbered)
    columns = min(max_channels, max(len(array) for _, array in rows))
    size = min(panel_size, NOTEBOOK_FIGURE_WIDTH / columns)
    titled = 0.18 if names else 0.0  # room for the panels' titles
    height = (size + 0.2 + titled) * len(rows) + (0.35 if title else 0.0)  # rows, their names
    figure = new_figure((size * columns, height))
    for (name, array), part in zip(rows, figure.subfigures(len(rows), 1, squeeze=False)[:, 0],
                                   strict=True):
        shown = array[:max_channels]
        low, high = float(shown.min()), float(shown.max())
        if not low < high:
            low, high = low - 0.5, high + 0.5
        used, image = [], None
        for channel, axes in enumerate(part.subplots(1, columns, squeeze=False)[0]):
            if channel >= len(shown):
                axes.remove()
                continue
            image = axes.imshow(shown[channel], cmap=cmap, vmin=low, vmax=high,
                                interpolation="nearest")
            axes.set_xticks([])
            axes.set_yticks([])
            if name in names:
                axes.set_title(names[name][channel], fontsize=7, pad=2)
            used.append(axes)
        if colorbar and image is not None:
            part.colorbar(image, ax=used, shrink=0.9, aspect=10, pad=0.01)
        label = name if len(shown) == len(array) else \
            f"{name} (the first {len(shown)} of {len(array)} channels)"
        part.suptitle(label, x=0.0, ha="left", fontsize=8)  # the row's name, over its start
    if title:
        figure.suptitle(title)
    return figure


def _channel_names(given: Mapping[str, Sequence[str]], rows: list[tuple[str, np.ndarray]],
                   max_channels: int, numbered: bool) -> dict[str, list[str]]:
    """The title of each shown channel, by row: ``given``'s names, else (with ``numbered``)
    the channel's index for a row of several channels; rows without titles are left out."""
    known = {name for name, _ in rows}
    unknown = [name for name in given if name not in known]
    if unknown:
        raise ValueError(f"channel_names names rows that maps lacks: {unknown}")
    names: dict[str, list[str]] = {}
    for name, array in rows:
        count = min(len(array), max_channels)
        if name in given:
            if isinstance(given[name], (str, bytes)) or len(given[name]) != count:
                raise ValueError(f"channel_names[{name!r}] must name the {count} channels "
                                 f"shown, got {given[name]!r}")
            names[name] = [str(label) for label in given[name]]
        elif numbered and len(array) > 1:
            names[name] = [str(channel) for channel in range(count)]
    return names


def plot_confusion_matrix(labels: Any, predictions: Any,
                          classes: int | Sequence[Any] | None = None, ax: Axes | None = None,
                          title: str | None = None, cmap: str = "Blues",
                          vmax: int | None = None) -> Figure:
    """The :func:`confusion_matrix` as a heatmap: rows the true class, columns the predicted
    one, each cell's count written in it (0 left blank), the diagonal (right answers) and the
    rest on one colour scale, from 0 to ``vmax`` (default: the largest count; give two
    matrices drawn side by side the same ``vmax``, so that one colour is one count in both).
    The title, unless given, counts the right answers."""
    counts = confusion_matrix(labels, predictions, classes)
    names = class_names(classes, len(counts) - 1)
    top = max(int(counts.max()), 1) if vmax is None else validation.positive_integer(vmax,
                                                                                      "vmax")
    figure, axes = figure_and_axes(ax, (4.6, 4.0))
    image = axes.imshow(counts, cmap=cmap, vmin=0, vmax=top, interpolation="nearest")
    threshold = counts.max() / 2 if vmax is None else top / 2
    for (true, guess), count in np.ndenumerate(counts):
        if count:
            axes.text(guess, true, str(count), ha="center", va="center", fontsize=7,
                      color="white" if count > threshold else "black")
    axes.set_xticks(range(len(names)), names, fontsize=8)
    axes.set_yticks(range(len(names)), names, fontsize=8)
    axes.set_xlabel("predicted")
    axes.set_ylabel("true")
    right, total = int(np.trace(counts)), int(counts.sum())
    axes.set_title(title if title is not None else f"{right} of {total} right", fontsize=10)
    figure.colorbar(image, ax=axes, shrink=0.8, label="examples")
    return figure
