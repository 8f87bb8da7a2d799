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

A check that a wrong answer cannot pass starts from code that cannot borrow the check's answer.
A learner's function that reads a name it never sets (``rank`` where it should compute
``A.shape[0]``) still runs when a notebook global of that name exists, and passes by accident
when that global holds the right value: the check's own loop variable, or a lesson cell's. So
a check names the learner's functions and classes, ``Checker(name, yours=(fn, Class))``, and
before any case the checker reads their code (it does not run it): every global name a
function (or a method, an inner function, a comprehension) reads must be a module, a class or
a function of the notebook, or a builtin. A name that holds data (a number, an array, a
model...) or that is defined nowhere fails a first case, "the names <fn> reads", which says
which name and where its value comes from; ``reads=("stoi",)`` names the notebook's data a
piece is meant to read. When the code runs, a ``NameError`` is reported as the name the code
never defines, and an ``UnboundLocalError`` as a name read before it is set. The check's own
variables are best kept from the notebook's globals too (inside a function, or ``_``-prefixed),
so that such a name fails with ``NameError`` in every case rather than passing.

The core pieces a notebook has the learner write (``Value``, the training loop, attention...)
are checked the same way, with ``Checker(name, piece=True)``; :meth:`Checker.use` then hands
the cells below the learner's piece when its check passed and the package's otherwise, so a
notebook runs top to bottom whatever is done. After :func:`record_progress`, every report is
also written to ``.progress/<notebook>.json`` beside the notebook, and
``python -m tensorlib progress`` prints what is done, notebook by notebook.
"""

from __future__ import annotations

import builtins
import dis
import json
import os
import types
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from tensorlib.nn.module import Module
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


def _cases(count: int) -> str:
    """"1 case", "4 cases": a count of cases as English says it."""
    return f"{count} case" if count == 1 else f"{count} cases"


def _functions_of(piece: Any) -> Iterator[tuple[str, types.FunctionType]]:
    """(qualified name, function) for a function, or for each function a class defines itself
    (methods, static and class methods, properties); inherited ones are not the learner's."""
    if isinstance(piece, types.FunctionType):
        yield piece.__qualname__, piece
        return
    if not isinstance(piece, type):
        raise TypeError(f"yours= takes functions and classes, got {type(piece).__name__}")
    for member in vars(piece).values():
        if isinstance(member, (staticmethod, classmethod)):
            member = member.__func__
        parts = ([member.fget, member.fset, member.fdel] if isinstance(member, property)
                 else [member])
        for function in parts:
            if isinstance(function, types.FunctionType):
                yield function.__qualname__, function


def _global_reads(code: types.CodeType) -> list[str]:
    """The global names ``code`` reads, its inner functions and comprehensions included, in
    order of first reading."""
    names: list[str] = []
    for instruction in dis.get_instructions(code):
        if instruction.opname == "LOAD_GLOBAL" and instruction.argval not in names:
            names.append(instruction.argval)
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            names += [name for name in _global_reads(constant) if name not in names]
    return names


def _is_code(value: Any) -> bool:
    """A module, a class or a function: what a piece may read from the notebook. A layer or a
    model (a tensorlib Module) can be called but is data, as a Tensor is."""
    return isinstance(value, (types.ModuleType, type)) or (
        callable(value) and not isinstance(value, (Module, Tensor)))


def _borrowed_names(pieces: Iterable[Any], reads: Iterable[str]) -> list[str]:
    """One line per global name that a piece's code reads and that is neither code, a builtin
    nor in ``reads``: the name, and what the notebook holds under it (or that nothing does).
    The functions a piece calls that were written in its cell (its helpers: a notebook gives
    each cell a file name of its own) are read the same way."""
    allowed, lines = set(reads), []
    functions = [function for piece in pieces for function in _functions_of(piece)]
    read = {id(function) for _, function in functions}
    while functions:
        qualified_name, function = functions.pop(0)
        namespace = function.__globals__
        for name in _global_reads(function.__code__):
            value = namespace.get(name)
            if name in allowed or (name not in namespace and hasattr(builtins, name)):
                continue
            if (isinstance(value, types.FunctionType) and id(value) not in read
                    and value.__code__.co_filename == function.__code__.co_filename):
                read.add(id(value))  # a helper written in the same cell: the learner's too
                functions.append((value.__qualname__, value))
            if name in namespace and _is_code(value):
                continue
            found = ("and no cell sets it either (a NameError when it runs)"
                     if name not in namespace else
                     f"so it gets what a cell above left under that name: {_shown(value)}")
            lines.append(f"{qualified_name} reads `{name}` without setting it, {found}; "
                         "compute it from the arguments")
    return lines


class Checker:
    """Collects the cases of one exercise, or of one core piece (``piece=True``), and reports
    them (see the module docstring)."""

    def __init__(self, exercise: str, piece: bool = False, yours: Any = (),
                 reads: Iterable[str] = ()) -> None:
        """``yours``: the learner's function or class, or a tuple of them, whose code is read
        for names it borrows from the notebook (see the module docstring); ``reads``: the
        notebook's data they are meant to read."""
        if not isinstance(exercise, str) or not exercise.strip():
            raise ValueError(f"a check needs a name, got {exercise!r}")
        self.exercise = exercise
        self.piece = bool(piece)
        self.results: list[tuple[str, str, str | None]] = []  # (case, outcome, detail)
        pieces = yours if isinstance(yours, (tuple, list)) else (yours,)
        borrowed = _borrowed_names(pieces, (reads,) if isinstance(reads, str) else reads)
        if borrowed:
            names = " and ".join(getattr(piece, "__name__", "?") for piece in pieces)
            self.results.append((f"the names {names} reads", "wrong", "\n    ".join(borrowed)))

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
        except UnboundLocalError as error:
            detail = f"your code reads a name before it sets it ({error})"
            self.results.append((description, "wrong", detail + (f"\n    hint: {hint}"
                                                                   if hint else "")))
        except NameError as error:
            detail = (f"your code reads `{error.name}`, which it never defines" if error.name
                      else f"your code raised NameError: {error}")
            self.results.append((description, "wrong", detail + (f"\n    hint: {hint}"
                                                                   if hint else "")))
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
            print(f"{self.exercise}: all {_cases(right)} right.")
        elif self.status == "not started":
            print(f"{self.exercise}: not done yet.\n    Write your code in place of "
                  "`raise NotImplementedError()`, run that cell, then this one.")
        else:
            print(f"{self.exercise}: {right} of {_cases(len(self.results))} right.")
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
