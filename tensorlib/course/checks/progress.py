"""A learner's progress through the workbook: which checks each notebook has, and what each
last reported.

Every check's report is written to ``.progress/<notebook>.json`` beside the notebook (see
:func:`tensorlib.course.exercises.record_progress`). :func:`checks_in` reads a notebook's check
cells without running them, :func:`workbook_progress` puts the two together for every
notebook of a folder, and ``python -m tensorlib progress`` prints it.
"""

from __future__ import annotations

import ast
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tensorlib.course.checks.registry import check_named
from tensorlib.course.exercises import PROGRESS_FOLDER, read_progress

__all__ = ["checks_in", "checks_in_cell", "NotebookProgress", "workbook_progress", "done_counts"]


def checks_in(notebook: str | os.PathLike[str]) -> list[tuple[str, str]]:
    """The checks of a workbook notebook, in the order of its cells: (name, "piece" or
    "exercise") for each graded cell (nbgrader's ``grade``), read from the cell's code
    without running it (:func:`checks_in_cell`)."""
    with open(notebook, encoding="utf-8") as handle:
        cells = json.load(handle).get("cells", [])
    found = []
    for cell in cells:
        if cell.get("cell_type") != "code" or \
                not cell.get("metadata", {}).get("nbgrader", {}).get("grade"):
            continue
        source = cell.get("source", "")
        found += checks_in_cell("".join(source) if isinstance(source, list) else source)
    return found


def checks_in_cell(source: str) -> list[tuple[str, str]]:
    """(name, "piece" or "exercise") of each check a cell's code runs: the check function it
    calls (``check_conv1d_loops(...)``), or the ``Checker("name", ...)`` it builds; [] for a
    cell that does not parse."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found = []
    for node in ast.walk(tree):
        check = isinstance(node, ast.Call) and check_named(getattr(node.func, "id", ""))
        if check:
            found.append((check.check_name, check.kind))
        elif (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Checker"
              and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)):
            piece = any(keyword.arg == "piece" and isinstance(keyword.value, ast.Constant)
                        and keyword.value.value is True for keyword in node.keywords)
            found.append((node.args[0].value, "piece" if piece else "exercise"))
    return found


@dataclass(frozen=True)
class NotebookProgress:
    """One workbook notebook's checks in the order of its cells, each ``(name, kind,
    status)`` with the status its check cell last recorded ("not run yet" where none did).
    ``readable`` is False when the notebook's progress file could not be read; every check
    then counts as not run yet."""

    notebook: str
    checks: list[tuple[str, str, str]]
    readable: bool = True


def workbook_progress(folder: str | os.PathLike[str]) -> list[NotebookProgress]:
    """The progress of every workbook notebook (``NN_topic.ipynb``) in ``folder`` that has
    checks, in the order of the notebooks' names, as ``folder/.progress/`` records it.
    ValueError when ``folder`` holds no workbook notebook."""
    folder = Path(folder)
    notebooks = sorted(path.stem for path in folder.glob("[0-9][0-9]*_*.ipynb"))
    if not notebooks:
        raise ValueError(f"{folder} holds no workbook notebooks (NN_topic.ipynb)")
    progress = []
    for notebook in notebooks:
        try:
            expected = checks_in(folder / f"{notebook}.ipynb")
        except (OSError, ValueError):
            expected = []
        if not expected:
            continue  # a notebook without checks
        path = folder / PROGRESS_FOLDER / f"{notebook}.json"
        readable = True
        try:
            recorded = read_progress(path) if path.exists() else {}
            statuses = {name: entry["status"] for name, entry in recorded.items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            readable, statuses = False, {}
        checks = [(name, kind, statuses.get(name, "not run yet")) for name, kind in expected]
        progress.append(NotebookProgress(notebook, checks, readable))
    return progress


def done_counts(checks: Iterable[tuple[str, str, str]]) -> dict[str, tuple[int, int]]:
    """For ``(name, kind, status)`` checks: each kind ("piece", "exercise") -> (checks done,
    checks)."""
    checks = list(checks)
    return {kind: (sum(status == "done" for _, k, status in checks if k == kind),
                   sum(k == kind for _, k, _ in checks)) for kind in ("piece", "exercise")}
