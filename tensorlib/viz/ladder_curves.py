"""The capstone ladder's pictures: every rung's validation loss over the steps, and the loss
by position in the name. Both read the record of :func:`tensorlib.training.ladder.run_ladder` (or
its ``ladder.json`` read back), so a shipped file draws without training anything."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from tensorlib.viz.figures import figure_and_axes, finish_axes

__all__ = ["plot_design_curves", "plot_ladder_curves", "plot_loss_by_position"]

LOSS_LABEL = "validation loss (nats per character)"


def _rungs(record: Any) -> dict[str, dict[str, Any]]:
    if not isinstance(record, dict) or not isinstance(record.get("rungs"), list):
        raise TypeError("expected a ladder record (run_ladder's result or its ladder.json "
                        "read back), a dict with a 'rungs' list")
    return {rung["rung"]: rung for rung in record["rungs"]}


def plot_ladder_curves(record: dict[str, Any], ax: Axes | None = None,
                       title: str | None = "the ladder: validation loss") -> Figure:
    """Each trained rung's validation loss (nats per character) against the step, one line
    per rung in the record's order; a rung without steps (the bigram) is a dashed line."""
    figure, axes = figure_and_axes(ax, (7.0, 4.0))
    for index, rung in enumerate(_rungs(record).values()):
        label = f"{rung['description']} ({rung['validation_loss']:.3f})"
        if rung["validation_curve"]:
            steps, losses = np.asarray(rung["validation_curve"], dtype=np.float64).T
            axes.plot(steps, losses, color=f"C{index}", linewidth=1.5, label=label)
        else:
            axes.axhline(rung["validation_loss"], color=f"C{index}", linestyle="--",
                         linewidth=1.2, label=label)
    finish_axes(axes, "step", LOSS_LABEL, title, loc="upper right", fontsize="small")
    return figure


def plot_loss_by_position(record: dict[str, Any],
                          rungs: Sequence[str] = ("bigram", "mlp3", "wavenet", "decoder"),
                          ax: Axes | None = None,
                          title: str | None = "where in the name context pays") -> Figure:
    """The validation loss of ``rungs`` at each position of the name: position 0 predicts
    the first letter from ``.`` alone, position t the letter (or the closing ``.``) after t
    letters. Positions with no target are left out; the bars underneath count the targets."""
    by_name = _rungs(record)
    missing = [name for name in rungs if name not in by_name]
    if missing:
        raise ValueError(f"the record has no rung(s) {', '.join(map(repr, missing))}; it has "
                         f"{', '.join(by_name)}")
    figure, axes = figure_and_axes(ax, (7.0, 4.0))
    order = list(by_name)
    for name in rungs:
        rung = by_name[name]
        counts = np.asarray(rung["position_count"])
        positions = np.flatnonzero(counts)
        losses = np.asarray(rung["position_loss"], dtype=np.float64)[positions]
        axes.plot(positions, losses, marker="o", markersize=3.5, linewidth=1.5,
                  color=f"C{order.index(name)}", label=rung["description"])
    counts = np.asarray(by_name[rungs[0]]["position_count"], dtype=np.float64)
    share = axes.twinx()
    shares = counts / counts.sum()
    share.bar(np.arange(len(counts)), shares, color="gray", alpha=0.15, width=0.8)
    share.set_ylabel("share of the targets (bars)", color="gray")
    share.set_ylim(0, 4 * shares.max())  # the bars fill the lowest quarter
    axes.set_zorder(share.get_zorder() + 1)
    axes.patch.set_visible(False)
    finish_axes(axes, "position in the name (letters already seen)", LOSS_LABEL, title,
                 loc="upper right", fontsize="small")
    return figure


def plot_design_curves(record: dict[str, Any], from_step: int = 1000, ax: Axes | None = None,
                       title: str | None = "decoder designs: validation loss") -> Figure:
    """Each design's validation loss against the step in a record of
    :func:`tensorlib.training.decoder_designs.run_designs`: the mean over its seeds as a
    line, the lowest and highest seed as a band around it, from ``from_step`` on (the first
    steps' losses, far above, would flatten the rest)."""
    if not isinstance(record, dict) or not isinstance(record.get("designs"), dict):
        raise TypeError("expected a record of run_designs (or its JSON read back), a dict "
                        "with a 'designs' mapping")
    figure, axes = figure_and_axes(ax, (7.0, 4.0))
    for index, (name, runs) in enumerate(record["designs"].items()):
        curves = np.array([np.asarray(run["validation_curve"], dtype=np.float64)
                           for run in runs.values()])  # (seeds, evaluations, 2)
        steps, losses = curves[0, :, 0], curves[:, :, 1]
        shown = steps >= from_step
        final = losses[:, -1]
        label = f"{name} ({final.mean():.3f}, {len(final)} seeds)"
        axes.plot(steps[shown], losses[:, shown].mean(axis=0), color=f"C{index}",
                  linewidth=1.5, label=label)
        axes.fill_between(steps[shown], losses[:, shown].min(axis=0),
                          losses[:, shown].max(axis=0), color=f"C{index}", alpha=0.15,
                          linewidth=0)
    finish_axes(axes, "step", LOSS_LABEL, title, loc="upper right", fontsize="small")
    return figure
