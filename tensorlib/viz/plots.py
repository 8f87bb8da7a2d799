"""Plots for training runs and for what happens inside a network (matplotlib).

Every function builds a ``matplotlib.figure.Figure`` directly (never through ``pyplot``),
draws with the object-oriented API and returns the figure; nothing is shown implicitly and
no backend is chosen here. In Jupyter a returned figure displays as a PNG; save one with
``figure.savefig(path)``. Functions that take ``ax`` draw into that Axes instead and return
its figure.

* :func:`plot_loss_curves` and :class:`LiveLossPlot`: train and validation loss.
* :func:`plot_attention`: attention probabilities as one heatmap per head.
* :func:`plot_decision_boundary`: the regions a 2-D classifier assigns to each class.
* :func:`plot_activation_histograms`, :func:`plot_gradient_histograms`: per-layer signals
  and their statistics (computed in :mod:`tensorlib.training.layer_statistics`), the diagnostics for
  vanishing, exploding and saturating signals.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from tensorlib.engine import validation
from tensorlib.engine.tensor import Tensor
from tensorlib.nn.modes import evaluation_mode
from tensorlib.nn.module import Module
from tensorlib.training.layer_statistics import (
    activation_statistics,
    as_array,
    gradient_statistics,
    named_signals,
)
from tensorlib.training.loop import exponential_moving_average
from tensorlib.viz import figures
from tensorlib.viz.figures import NOTEBOOK_FIGURE_WIDTH, figure_and_axes, new_figure

__all__ = [
    "LiveLossPlot",
    "exponential_moving_average",
    "plot_activation_histograms",
    "plot_attention",
    "plot_decision_boundary",
    "plot_gradient_histograms",
    "plot_loss_curves",
]


# =============================================================================== loss curves


def _loss_columns(history_or_dict: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(steps, train losses, evaluation steps, validation losses) from a History or a dict."""
    if callable(getattr(history_or_dict, "as_dict", None)):
        data = history_or_dict.as_dict()
    elif isinstance(history_or_dict, Mapping):
        data = history_or_dict
    else:
        raise TypeError("expected a training History or a dict of lists with 'train_loss' "
                        f"(and optionally 'step', 'validation_loss'), got "
                        f"{type(history_or_dict).__name__}")
    if "train_loss" not in data:
        raise KeyError(f"no 'train_loss' in the loss data (keys: {sorted(data)})")
    train = np.asarray(data["train_loss"], dtype=np.float64)
    if train.ndim != 1:
        raise ValueError(f"train_loss must be a 1-D list, got shape {train.shape}")
    steps = np.asarray(data.get("step", np.arange(1, len(train) + 1)), dtype=np.float64)
    if steps.shape != train.shape:
        raise ValueError(f"'step' has {steps.size} entries but 'train_loss' has {train.size}")
    validation = data.get("validation_loss")
    if validation is None:
        return steps, train, np.zeros(0), np.zeros(0)
    validation = list(validation)
    if len(validation) != len(train):
        raise ValueError(f"'validation_loss' has {len(validation)} entries but 'train_loss' "
                         f"has {len(train)} (use None where there was no evaluation)")
    present = np.array([v is not None and not (isinstance(v, float) and math.isnan(v))
                        for v in validation], dtype=bool)
    values = np.array([float(v) for v, keep in zip(validation, present, strict=True) if keep],
                      dtype=np.float64)
    return steps, train, steps[present], values


def plot_loss_curves(history_or_dict: Any, smoothing: float = 0.0, log_scale: bool = False,
                     ax: Axes | None = None, title: str | None = "loss", label: str = "train",
                     color: str = "C0", ylabel: str = "loss") -> Figure:
    """Train loss (a line) and validation loss (a line with markers at evaluation steps).

    ``history_or_dict`` is a :class:`tensorlib.training.loop.History` or a dict of equal-length
    lists with ``"train_loss"`` and optionally ``"step"`` (default 1, 2, ...) and
    ``"validation_loss"`` (None where not evaluated). With ``smoothing`` in (0, 1) the raw
    train loss is drawn faintly and its :func:`exponential_moving_average` on top.
    ``log_scale`` puts the loss axis on a log scale (losses must then be positive).

    Lines, in order: ``label`` (or "<label> (raw)" and "<label> (smoothed)"), then
    "validation" when there is any. ``label``, ``color`` and ``ylabel`` let several runs
    share one axes.
    """
    steps, train, eval_steps, validation = _loss_columns(history_or_dict)
    if log_scale and (np.any(train <= 0) or np.any(validation <= 0)):
        raise ValueError("log_scale needs positive losses; the data has values <= 0")
    figure, axes = figure_and_axes(ax, (6.0, 3.5))
    if smoothing:
        smoothed = exponential_moving_average(train, smoothing)
        axes.plot(steps, train, color=color, alpha=0.3, linewidth=1.0, label=f"{label} (raw)")
        axes.plot(steps, smoothed, color=color, linewidth=1.5,
                  label=f"{label} (smoothed {smoothing:g})")
    else:
        axes.plot(steps, train, color=color, linewidth=1.2, label=label)
    if validation.size:
        axes.plot(eval_steps, validation, color="C1", marker="o", markersize=3.5,
                  linewidth=1.5, label="validation")
    if log_scale:
        axes.set_yscale("log")
    axes.set_xlabel("step")
    axes.set_ylabel(ylabel)
    if title:
        axes.set_title(title)
    axes.grid(True, alpha=0.3)
    if train.size or validation.size:
        axes.legend(loc="upper right")
    return figure


def plot_functions(x: Any, curves: dict[str, Any], title: str | None = None,
                   xlabel: str = "x", ylabel: str | None = None,
                   ax: Axes | None = None) -> Figure:
    """One line per entry of ``curves`` (label -> values at ``x``), e.g. activation
    functions or their derivatives on a grid. Every curve must have ``x``'s length."""
    grid = as_array(x, "x").ravel()
    if not curves:
        raise ValueError("plot_functions needs at least one curve")
    lines = {}
    for label, values in curves.items():
        array = as_array(values, f"curve {label!r}").ravel()
        if array.shape != grid.shape:
            raise ValueError(f"curve {label!r} has {array.size} values for {grid.size} x values")
        lines[label] = array
    figure, axes = figure_and_axes(ax, (5.0, 3.5))
    for label, array in lines.items():
        axes.plot(grid, array, linewidth=1.5, label=label)
    axes.axhline(0.0, color="#999999", linewidth=0.8)
    axes.set_xlabel(xlabel)
    if ylabel:
        axes.set_ylabel(ylabel)
    if title:
        axes.set_title(title)
    axes.grid(True, alpha=0.3)
    axes.legend(loc="best")
    return figure


def plot_trajectories(function: Callable[[np.ndarray, np.ndarray], np.ndarray],
                      trajectories: dict[str, Any], xlim: tuple[float, float],
                      ylim: tuple[float, float], levels: int | Sequence[float] | np.ndarray = 20,
                      log_levels: bool = True, resolution: int = 200,
                      title: str | None = None, ax: Axes | None = None) -> Figure:
    """Optimizer paths over the contours of a 2-D function.

    ``function(X, Y)`` evaluates the objective on meshgrid arrays; each trajectory is a
    sequence of (x, y) points, drawn as a line with markers from its start (a circle) to its
    end (a cross). With ``log_levels`` the contour levels are spaced geometrically, which
    shows both the floor of a valley and its steep walls.
    """
    if resolution < 2:
        raise ValueError(f"resolution must be at least 2, got {resolution}")
    paths = {}
    for label, points in trajectories.items():
        array = as_array(points, f"trajectory {label!r}")
        if array.ndim != 2 or array.shape[1] != 2 or len(array) == 0:
            raise ValueError(f"trajectory {label!r} must be a non-empty (steps, 2) array of "
                             f"points, got shape {array.shape}")
        paths[label] = array
    grid_x, grid_y = np.meshgrid(np.linspace(*xlim, resolution), np.linspace(*ylim, resolution))
    surface = np.asarray(function(grid_x, grid_y), dtype=np.float64)
    if surface.shape != grid_x.shape:
        raise ValueError(f"function(X, Y) returned shape {surface.shape}, expected {grid_x.shape}")
    if log_levels and isinstance(levels, int):
        positive = surface[surface > 0]
        if positive.size == 0:
            raise ValueError("log_levels needs a function with positive values on the grid")
        levels = np.geomspace(positive.min(), surface.max(), levels)
    figure, axes = figure_and_axes(ax, (6.0, 4.5))
    axes.contour(grid_x, grid_y, surface, levels=levels, cmap="Greys", linewidths=0.8)
    for index, (label, array) in enumerate(paths.items()):
        color = f"C{index}"
        axes.plot(array[:, 0], array[:, 1], color=color, marker=".", markersize=3,
                  linewidth=1.2, label=label)
        axes.plot(*array[0], color=color, marker="o", markersize=6)
        axes.plot(*array[-1], color=color, marker="x", markersize=8)
    axes.set_xlim(*xlim)
    axes.set_ylim(*ylim)
    axes.set_xlabel("x")
    axes.set_ylabel("y")
    if title:
        axes.set_title(title)
    if paths:
        axes.legend(loc="upper right")
    return figure


class LiveLossPlot:
    """A loss plot that redraws itself while a notebook training loop runs.

    Call ``update(step, train_loss, validation_loss=None)`` once per step; every ``every``
    updates (and whenever a validation loss arrives) the curves are redrawn and, inside
    IPython, the cell output is replaced with the new figure (``clear_output(wait=True)``
    then ``display``). Outside IPython nothing is displayed; ``figure`` always holds the
    current plot. ``close()`` draws the final state once more and ends the plot.
    With ``tensorlib.training.loop.train``, pass ``callback=plot.update_from_record``.
    """

    def __init__(self, smoothing: float = 0.0, log_scale: bool = False, every: int = 10,
                 figsize: tuple[float, float] = (6.0, 3.5), title: str | None = "loss") -> None:
        exponential_moving_average([], smoothing)  # validates smoothing
        validation.positive_integer(every, "every")
        self.smoothing = float(smoothing)
        self.log_scale = bool(log_scale)
        self.every = int(every)
        self.title = title
        self.figure = new_figure(figsize)
        self.axes = self.figure.add_subplot()
        self.steps: list[int] = []
        self.train_losses: list[float] = []
        self.validation_losses: list[float | None] = []
        self.closed = False

    def as_dict(self) -> dict[str, list[Any]]:
        """The data so far, in the form :func:`plot_loss_curves` accepts."""
        return {"step": list(self.steps), "train_loss": list(self.train_losses),
                "validation_loss": list(self.validation_losses)}

    def update(self, step: int, train_loss: float, validation_loss: float | None = None) -> None:
        """Record one step; redraw every ``every`` updates or when ``validation_loss`` is set."""
        if self.closed:
            raise RuntimeError("this LiveLossPlot is closed; make a new one")
        self.steps.append(int(step))
        self.train_losses.append(float(train_loss))
        self.validation_losses.append(None if validation_loss is None
                                      else float(validation_loss))
        if len(self.steps) % self.every == 0 or validation_loss is not None:
            self.redraw()

    def update_from_record(self, record: Any) -> None:
        """:meth:`update` from a training ``StepRecord`` (a ``train(callback=...)``)."""
        self.update(record.step, record.train_loss, record.validation_loss)

    def redraw(self) -> None:
        """Draw the curves again and, inside IPython, replace the displayed figure."""
        self.axes.clear()
        if self.steps:
            plot_loss_curves(self.as_dict(), self.smoothing, self.log_scale, ax=self.axes,
                             title=self.title)
        if figures.ipython_shell() is not None:
            from IPython.display import clear_output, display

            clear_output(wait=True)
            display(self.figure)

    def close(self) -> None:
        """Draw the final state once more; later updates raise RuntimeError."""
        if not self.closed:
            self.redraw()
            self.closed = True


# =============================================================================== attention
MASKED_COLOUR = "#c8c8c8"  # neutral grey, outside viridis and the other perceptual colour maps


def _attention_mask(mask: Any, array: np.ndarray) -> np.ndarray:
    """The ``(H, T_query, T_key)`` boolean mask (True = masked) ``plot_attention`` draws.

    ``mask`` is "auto" (the causal cells, when every one of them is exactly 0 in every head),
    "causal", None (nothing masked) or a boolean array of shape (T_query, T_key), (H,
    T_query, T_key) or (1, H, T_query, T_key), True where attention is forbidden (the
    convention of ``F.causal_mask``). A masked cell must hold probability 0.
    """
    from tensorlib.engine.ops.softmax import causal_forbidden

    heads, queries, keys = array.shape
    if mask is None:
        return np.zeros(array.shape, dtype=bool)
    if isinstance(mask, str):
        if mask not in ("auto", "causal"):
            raise ValueError(f"mask must be 'auto', 'causal', None or a boolean array, got "
                             f"{mask!r}")
        if keys < queries:  # no causal reading: the queries are the last T_query positions
            if mask == "auto":
                return np.zeros(array.shape, dtype=bool)
            raise ValueError(f"mask='causal' needs at least as many keys as queries, got a "
                             f"{queries} x {keys} attention map")
        # query i sits at position keys - queries + i and sees the keys up to there
        causal = np.broadcast_to(causal_forbidden(np, queries, keys, keys - queries),
                                 array.shape)
        if mask == "auto":
            looks_causal = causal.any() and not array[causal].any()
            return causal if looks_causal else np.zeros(array.shape, dtype=bool)
        chosen = causal
    else:
        given = as_array(mask, "mask")
        if given.dtype != np.bool_:
            raise TypeError(f"mask must be a boolean array (True where attention is "
                            f"forbidden), got dtype {given.dtype}")
        if given.ndim == 4 and given.shape[0] == 1:
            given = given[0]
        if given.shape not in ((queries, keys), (heads, queries, keys)):
            raise ValueError(f"mask of shape {given.shape} does not fit {heads} heads of "
                             f"{queries} x {keys} attention maps; expected ({queries}, {keys}) "
                             f"or ({heads}, {queries}, {keys})")
        chosen = np.broadcast_to(given, array.shape)
    hidden = chosen & (array != 0)
    if hidden.any():
        head, query, key = (int(i) for i in np.argwhere(hidden)[0])
        raise ValueError(f"the mask hides nonzero probability: head {head}, query {query}, "
                         f"key {key} holds {array[head, query, key]:.3g}; masked cells are "
                         f"the ones attention may not look at, so they must be 0")
    return chosen


def plot_attention(probabilities: Any, tokens: Sequence[str] | None = None,
                   heads: Iterable[int] | None = None, title: str | None = None,
                   cmap: str = "viridis", columns: int = 4, panel_size: float = 2.6,
                   mask: Any = "auto") -> Figure:
    """One heatmap per head of attention probabilities: rows are queries, columns keys.

    ``probabilities`` is ``(T, T)``, ``(H, T, T)`` or ``(1, H, T, T)`` (an array or a
    Tensor); a map may have fewer queries than keys, ``(H, T_query, T_key)``, the queries then
    being the last ``T_query`` positions (as with a KV cache). ``tokens`` label both axes:
    T of them, or T_key for such a map (the rows get the last T_query). ``heads`` picks which
    heads to draw (default all), laid out ``columns`` per row, each panel ``panel_size``
    inches or less so the figure fits a notebook's output area. Colours span 0..1, with one
    colour bar.

    Masked cells, the positions a query is forbidden to look at, are drawn in grey, apart
    from allowed positions that merely got almost no attention (dark), and a legend says so.
    ``mask`` decides which they are: "auto" (default) masks the causal cells (keys after the
    query) when every one of them is exactly 0 in every head, as a causal softmax leaves
    them; "causal" masks them always; None masks nothing; a boolean array ``(T_query,
    T_key)`` or ``(H, T_query, T_key)``, True where forbidden (as ``F.causal_mask``), masks
    exactly those. Masked cells holding nonzero probability raise ValueError.
    """
    array = np.asarray(as_array(probabilities, "probabilities"), dtype=np.float64)
    if array.ndim == 4 and array.shape[0] == 1:
        array = array[0]
    if array.ndim == 2:
        array = array[None]
    if array.ndim != 3:
        raise ValueError(f"probabilities must be (T, T), (H, T, T) or (1, H, T, T), got shape "
                         f"{np.shape(as_array(probabilities, 'probabilities'))}")
    head_count, queries, keys = array.shape
    key_labels = query_labels = None
    if tokens is not None:
        tokens = [str(t) for t in tokens]
        if len(tokens) != keys or queries > keys:
            raise ValueError(f"{len(tokens)} tokens do not label a {queries} x {keys} "
                             f"attention map")
        key_labels, query_labels = tokens, tokens[keys - queries:]
    chosen = list(range(head_count)) if heads is None else [int(h) for h in heads]
    if not chosen:
        raise ValueError("heads is empty: nothing to draw")
    for head in chosen:
        if not 0 <= head < head_count:
            raise IndexError(f"head {head} is out of range for {head_count} heads")
    masked = _attention_mask(mask, array)  # (H, T_query, T_key), True = forbidden
    from matplotlib import colormaps

    colours = (colormaps[cmap] if isinstance(cmap, str) else cmap).with_extremes(
        bad=MASKED_COLOUR)
    columns = validation.positive_integer(columns, "columns")
    ncols = min(len(chosen), int(columns))
    nrows = math.ceil(len(chosen) / ncols)
    panel_size = min(panel_size, (NOTEBOOK_FIGURE_WIDTH - 0.8) / ncols)  # fit the page
    any_masked = bool(masked[chosen].any())
    height = panel_size * nrows + (0.4 if title else 0) + (0.3 if any_masked else 0)
    figure = new_figure((panel_size * ncols + 0.8, height))
    grid = figure.subplots(nrows, ncols, squeeze=False)
    image = None
    used = []
    for index, axes in enumerate(grid.ravel()):
        if index >= len(chosen):
            axes.remove()
            continue
        used.append(axes)
        head = chosen[index]
        image = axes.imshow(np.ma.masked_array(array[head], mask=masked[head]), vmin=0.0,
                            vmax=1.0, cmap=colours, aspect="equal", interpolation="nearest")
        axes.set_title(f"head {head}", fontsize=10)
        if tokens is not None:
            axes.set_xticks(range(keys), key_labels, rotation=90, fontsize=8)
            axes.set_yticks(range(queries), query_labels, fontsize=8)
        if index % ncols == 0:
            axes.set_ylabel("query")
        if index >= len(chosen) - ncols:
            axes.set_xlabel("key")
    assert image is not None  # chosen is not empty
    figure.colorbar(image, ax=used, shrink=0.8, label="probability")
    if any_masked:
        from matplotlib.patches import Patch

        figure.legend(handles=[Patch(facecolor=MASKED_COLOUR, edgecolor="0.5",
                                     label="grey: masked (forbidden, so exactly 0)")],
                      loc="outside lower center", fontsize=8, frameon=False)
    if title:
        figure.suptitle(title)
    return figure


# =============================================================================== classifiers
def _predict_scores(model_fn: Any, inputs: np.ndarray, as_tensor: bool) -> np.ndarray:
    """Scores of ``model_fn`` on float32 ``inputs (N, 2)``, without recording a graph; a
    Module runs in eval mode (its modules' modes are restored)."""
    with evaluation_mode(model_fn):
        result = model_fn(Tensor(inputs) if as_tensor else inputs)
    return np.asarray(as_array(result, "the model's output"), dtype=np.float64)


def _classes_from_scores(scores: np.ndarray, count: int, threshold: float) -> np.ndarray:
    if scores.ndim == 2 and scores.shape[1] == 1:
        scores = scores[:, 0]
    if scores.shape == (count,):
        return (scores > threshold).astype(np.int64)
    if scores.ndim == 2 and scores.shape[0] == count and scores.shape[1] >= 2:
        return scores.argmax(axis=1)
    raise ValueError(f"the model returned shape {scores.shape} for {count} points; expected "
                     f"({count},), ({count}, 1) or ({count}, K) class scores")


def plot_decision_boundary(model_fn: Any, points: Any, labels: Any, resolution: int = 200,
                           ax: Axes | None = None, padding: float = 0.5,
                           threshold: float = 0.0, as_tensor: bool | None = None,
                           cmap: str = "coolwarm") -> Figure:
    """Colour the plane by the class ``model_fn`` predicts, with the labelled points on top.

    ``model_fn`` maps float32 points ``(N, 2)`` to class scores ``(N, K)`` (the class is the
    argmax) or to one score per point ``(N,)`` / ``(N, 1)`` (class 1 where the score exceeds
    ``threshold``). It may return a Tensor or an array. A tensorlib Module gets a Tensor and
    runs in eval mode; any other callable gets a numpy array (``as_tensor`` overrides this).
    Scores are computed under ``no_grad`` on a ``resolution x resolution`` grid covering the
    points plus ``padding``. The title gives the accuracy on ``points``.
    """
    if not callable(model_fn):
        raise TypeError(f"model_fn must be callable, got {type(model_fn).__name__}")
    xy = np.asarray(as_array(points, "points"), dtype=np.float32)
    if xy.ndim != 2 or xy.shape[1] != 2 or xy.shape[0] == 0:
        raise ValueError(f"points must have shape (N, 2) with N > 0, got {xy.shape}")
    classes = np.asarray(as_array(labels, "labels"))
    if classes.shape != (xy.shape[0],) or classes.dtype.kind not in "iub":
        raise ValueError(f"labels must be {xy.shape[0]} integers, got shape {classes.shape} "
                         f"and dtype {classes.dtype}")
    resolution = validation.integer(resolution, "resolution", minimum=2)
    use_tensor = isinstance(model_fn, Module) if as_tensor is None else bool(as_tensor)
    low, high = xy.min(axis=0) - padding, xy.max(axis=0) + padding  # (2,), (2,)
    xs = np.linspace(low[0], high[0], resolution)
    ys = np.linspace(low[1], high[1], resolution)
    grid_x, grid_y = np.meshgrid(xs, ys)  # (R, R) each
    grid = np.stack([grid_x.ravel(), grid_y.ravel()], axis=1).astype(np.float32)  # (R*R, 2)
    predicted_grid = _classes_from_scores(_predict_scores(model_fn, grid, use_tensor),
                                          len(grid), threshold)
    predicted = _classes_from_scores(_predict_scores(model_fn, xy, use_tensor), len(xy),
                                     threshold)
    accuracy = float(np.mean(predicted == classes.astype(np.int64)))
    class_count = int(max(classes.max(), predicted_grid.max())) + 1
    figure, axes = figure_and_axes(ax, (4.5, 4.0))
    axes.contourf(grid_x, grid_y, predicted_grid.reshape(resolution, resolution),
                  levels=np.arange(class_count + 1) - 0.5, cmap=cmap, alpha=0.35)
    axes.scatter(xy[:, 0], xy[:, 1], c=classes, cmap=cmap, vmin=0,
                 vmax=max(class_count - 1, 1), s=18, edgecolors="black", linewidths=0.4)
    axes.set_xlim(low[0], high[0])
    axes.set_ylim(low[1], high[1])
    axes.set_title(f"decision boundary (accuracy {accuracy:.1%})")
    return figure


# =============================================================================== diagnostics
def _histograms_figure(pairs: list[tuple[str, np.ndarray]], labels: list[str], bins: int,
                       value_range: tuple[float, float] | None, ax: Axes | None,
                       xlabel: str, title: str | None) -> Figure:
    """One density line per ``(name, values)`` pair, each with its legend ``label``, over
    ``value_range`` (default: all the values') in ``bins`` bins; the x axis is ``xlabel``."""
    validation.positive_integer(bins, "bins")
    if value_range is None:
        low = min(float(np.min(values)) for _, values in pairs)
        high = max(float(np.max(values)) for _, values in pairs)
        if not (math.isfinite(low) and math.isfinite(high)):
            raise ValueError("the values contain NaN or infinity; cannot draw histograms")
        if low == high:
            low, high = low - 0.5, high + 0.5
        value_range = (low, high)
    figure, axes = figure_and_axes(ax, (7.0, 3.5))
    for (_, values), label in zip(pairs, labels, strict=True):
        counts, edges = np.histogram(np.asarray(values, dtype=np.float64).ravel(), bins=bins,
                                     range=value_range, density=True)
        axes.plot(0.5 * (edges[:-1] + edges[1:]), counts, linewidth=1.2, label=label)
    axes.set_ylabel("density")
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize=8)
    axes.set_xlabel(xlabel)
    if title:
        axes.set_title(title)
    return figure


def plot_activation_histograms(source: Any, bins: int = 60, saturation: float = 0.97,
                               value_range: tuple[float, float] | None = None,
                               ax: Axes | None = None,
                               title: str | None = "activation distribution") -> Figure:
    """One histogram line per layer of its output values; each legend entry gives the
    layer's mean, std and saturated fraction (see :func:`activation_statistics`)."""
    statistics = activation_statistics(source, saturation)
    pairs = named_signals(source, gradients=False)
    labels = [f"{s.name}: mean {s.mean:+.2f}, std {s.std:.2f}, saturated {s.saturated:.1%}"
              for s in statistics]
    return _histograms_figure(pairs, labels, bins, value_range, ax, "activation value", title)


def plot_gradient_histograms(source: Any, bins: int = 60,
                             value_range: tuple[float, float] | None = None,
                             ax: Axes | None = None,
                             title: str | None = "gradient distribution") -> Figure:
    """One histogram line per layer of its gradient values; each legend entry gives the
    layer's mean and std (see :func:`gradient_statistics`)."""
    statistics = gradient_statistics(source)
    pairs = named_signals(source, gradients=True)
    labels = [f"{s.name}: mean {s.mean:+.2e}, std {s.std:.2e}" for s in statistics]
    return _histograms_figure(pairs, labels, bins, value_range, ax, "gradient value", title)
