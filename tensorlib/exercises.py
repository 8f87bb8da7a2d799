"""Checks for the workbook's exercises: each says, in plain words, what is right and what is not.

An exercise's check cell builds a :class:`Checker`, runs the learner's code in one
``with checker.case(...)`` block per case, and ends with ``checker.report()``::

    checker = Checker("Exercise 1: the diagonal's stride")
    with checker.case("a 3 x 3 float32 matrix", hint="one step down and one step right"):
        checker.equal(diagonal_stride(3, 4), 16, "stride in bytes")
    passed = checker.report()

A case passes when its block runs to the end. ``equal``, ``close`` and ``true`` stop the
block with the expected and the received value; an exception raised by the learner's code
stops it too, and ``NotImplementedError`` (what an unsolved stub raises) is reported as
"not done yet" rather than as an error. Nothing is raised out of a case, so an unsolved
notebook runs to the end and shows what is left to do; the grading version of a check cell
adds ``assert passed`` (inside nbgrader's hidden-test markers).

The core pieces a notebook has the learner write (``Value``, the training loop, attention...)
are checked the same way, with ``Checker(name, piece=True)``; :meth:`Checker.use` then hands
the cells below the learner's piece when its check passed and the package's otherwise, so a
notebook runs top to bottom whatever is done. After :func:`record_progress`, every report is
also written to ``.progress/<notebook>.json`` beside the notebook, and
``python -m tensorlib progress`` prints what is done, notebook by notebook.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from tensorlib.tensor import Tensor

__all__ = ["Checker", "record_progress", "read_progress", "PROGRESS_FOLDER"]

PROGRESS_FOLDER = ".progress"  # beside the notebooks; hidden in JupyterLab's file browser
Piece = TypeVar("Piece")


def _array(value: Any) -> np.ndarray:
    """A Tensor's array, or ``value`` as an array (an ndarray's ``.data`` is its raw buffer)."""
    return np.asarray(value.data if isinstance(value, Tensor) else value)


class _Mismatch(Exception):
    """A checked value differs from the expected one (stops the case)."""


def _shown(value: Any) -> str:
    """A short, deterministic rendering of a value for a report."""
    if isinstance(value, (np.ndarray, Tensor)):
        array = _array(value)
        with np.printoptions(precision=4, suppress=True, threshold=12, edgeitems=2):
            return f"array of shape {array.shape}: {np.array2string(array, separator=', ')}"
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


class Checker:
    """Collects the cases of one exercise, or of one core piece (``piece=True``), and reports
    them (see the module docstring)."""

    def __init__(self, exercise: str, piece: bool = False) -> None:
        if not isinstance(exercise, str) or not exercise.strip():
            raise ValueError(f"a check needs a name, got {exercise!r}")
        self.exercise = exercise
        self.piece = bool(piece)
        self.results: list[tuple[str, str, str | None]] = []  # (case, outcome, detail)

    @contextmanager
    def case(self, description: str, hint: str | None = None) -> Iterator[None]:
        """Run one case; whatever stops the block early is recorded, never raised."""
        try:
            yield
        except NotImplementedError:
            self.results.append((description, "not done", None))
        except _Mismatch as mismatch:
            detail = str(mismatch) + (f"\n    hint: {hint}" if hint else "")
            self.results.append((description, "wrong", detail))
        except Exception as error:  # the learner's code failed: say how, and go on
            detail = f"your code raised {type(error).__name__}: {error}"
            self.results.append((description, "wrong", detail + (f"\n    hint: {hint}"
                                                                   if hint else "")))
        else:
            self.results.append((description, "right", None))

    def equal(self, received: Any, expected: Any, what: str = "the result") -> None:
        """Stop the case unless ``received == expected`` (arrays: same shape and values)."""
        if isinstance(expected, np.ndarray) or isinstance(received, np.ndarray):
            same = np.shape(received) == np.shape(expected) and \
                bool(np.array_equal(np.asarray(received), np.asarray(expected)))
        else:
            same = received == expected
        if not same:
            raise _Mismatch(f"{what}: expected {_shown(expected)}, received {_shown(received)}")

    def close(self, received: Any, expected: Any, what: str = "the result",
              rtol: float = 1e-6, atol: float = 1e-8) -> None:
        """Stop the case unless ``received`` has ``expected``'s shape and is within tolerance."""
        received_array = _array(received).astype(np.float64)
        expected_array = _array(expected).astype(np.float64)
        if received_array.shape != expected_array.shape:
            raise _Mismatch(f"{what}: expected shape {expected_array.shape}, received shape "
                            f"{received_array.shape}")
        if not np.allclose(received_array, expected_array, rtol=rtol, atol=atol):
            worst = float(np.max(np.abs(received_array - expected_array)))
            raise _Mismatch(f"{what}: expected {_shown(expected_array)}, received "
                            f"{_shown(received_array)} (largest difference {worst:.3g})")

    def true(self, condition: Any, message: str) -> None:
        """Stop the case, saying ``message``, unless ``condition`` holds."""
        if not condition:
            raise _Mismatch(message)

    @property
    def passed(self) -> bool:
        """True when there is at least one case and every case is right."""
        return bool(self.results) and all(outcome == "right" for _, outcome, _ in self.results)

    @property
    def status(self) -> str:
        """"done" (every case right), "not started" (every case hit a stub) or "started"."""
        if self.passed:
            return "done"
        if all(outcome == "not done" for _, outcome, _ in self.results):
            return "not started"
        return "started"

    def report(self) -> bool:
        """Print what is right and what is not, record it (see :func:`record_progress`), and
        return :attr:`passed`."""
        right = sum(outcome == "right" for _, outcome, _ in self.results)
        if self.status == "done":
            print(f"{self.exercise}: all {right} cases right." if right > 1
                  else f"{self.exercise}: its one case is right.")
        elif self.status == "not started":
            print(f"{self.exercise}: not done yet.\n    Write your code in place of "
                  "`raise NotImplementedError()`, run that cell, then this one.")
        else:
            print(f"{self.exercise}: {right} of {len(self.results)} cases right.")
            for description, outcome, detail in self.results:
                mark = {"right": "right", "wrong": "WRONG", "not done": "not done yet"}[outcome]
                print(f"  {mark}: {description}" + (f"\n    {detail}" if detail else ""))
        _record(self)
        return self.passed

    def use(self, yours: Piece, package: Piece, name: str, given: bool = True,
            package_name: str = "tensorlib's") -> Piece:
        """``yours`` if this check passed (and ``given``: the checks of the pieces it is built
        on passed too), else ``package``, saying which in one line: the safety net that lets
        the cells below run whatever is done. ``package_name`` says whose ``package`` is."""
        if self.passed and given:
            print(f"From here on the notebook uses your {name}.")
            return yours
        if self.passed:
            print(f"Your {name} passed its check, but a piece it is built on did not, so from "
                  f"here on the notebook uses {package_name}.")
        else:
            state = "not done yet" if self.status == "not started" else "not right yet"
            print(f"Your {name}: {state}, so from here on the notebook uses {package_name}.")
        return package


# ---------------------------------------------------------------------------------- progress
_recording: dict[str, Path] = {}  # "file": where this kernel's checks are recorded


def record_progress(notebook: str, folder: str | os.PathLike[str] = ".") -> None:
    """Record every check reported from now on in ``folder/.progress/<notebook>.json`` (a
    notebook's first cell calls it with its own name; the folder is the notebook's). Returns
    None, so that a notebook cell ending with it shows nothing."""
    if not isinstance(notebook, str) or not notebook or any(c in notebook for c in "/\\"):
        raise ValueError(f"notebook must be a file name without folders, got {notebook!r}")
    _recording["file"] = Path(folder) / PROGRESS_FOLDER / f"{notebook}.json"


def read_progress(path: str | os.PathLike[str]) -> dict[str, dict[str, str]]:
    """A progress file's checks, in the order first reported: name -> {"kind", "status"}."""
    with open(path, encoding="utf-8") as handle:
        checks = json.load(handle).get("checks", {})
    if not isinstance(checks, dict):
        raise ValueError(f"{path}: 'checks' is not an object")
    return checks


def _record(checker: Checker) -> None:
    path = _recording.get("file")
    if path is None:
        return
    try:
        checks = read_progress(path) if path.exists() else {}
    except (OSError, ValueError):  # a damaged file is started afresh
        checks = {}
    checks[checker.exercise] = {"kind": "piece" if checker.piece else "exercise",
                                "status": checker.status}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(path.name + ".tmp")
        temporary.write_text(json.dumps({"notebook": path.stem, "checks": checks}, indent=1),
                             encoding="utf-8")
        os.replace(temporary, path)
    except OSError as error:  # a read-only folder must not fail the check
        print(f"(progress not recorded: {error})")
