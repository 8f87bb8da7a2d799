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

A report is read at a glance (at most :data:`REPORT_LINES` lines for any wrong answer): the
likely mistake and the hint of the first wrong case come first, then that case in full, its
arrays summarised (where they first differ, a few entries, the largest difference, and a
plain relation when one holds: the opposite sign, a constant factor, a transpose, a nan), then
every other case in one line. ``equal`` and ``close`` take ``mistakes=``, what the classic
mistakes give (``{"the scores are not divided by sqrt(D)": value}``): the report names the
one the learner's result matches.

The core pieces a notebook has the learner write (``Value``, the training loop, attention...)
are checked the same way, with ``Checker(name, piece=True)``; :meth:`Checker.use` then hands
the cells below the learner's piece when its check passed and the package's otherwise, so a
notebook runs top to bottom whatever is done. What it hands out under the learner's name is
remembered: a check whose ``yours`` is the package's piece (the check run again, or after a
fix whose cell failed) says "not done yet" and records nothing, so no verdict on the
package's code is taken for the learner's. After :func:`record_progress`, every report is
also written to ``.progress/<notebook>.json`` beside the notebook, and
``python -m tensorlib progress`` lists every check of the workbook, notebook by notebook in
the order of their cells (:func:`checks_in`), with what each last reported and the total.
"""

from __future__ import annotations

import ast
import builtins
import dis
import json
import os
import textwrap
import traceback
import types
import warnings
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import numpy as np

from tensorlib.files import write_text_atomic
from tensorlib.nn.module import Module
from tensorlib.tensor import Tensor
from tensorlib.validation import is_floating

__all__ = ["Checker", "NotebookProgress", "record_progress", "read_progress", "checks_in",
           "done_counts", "workbook_progress", "PROGRESS_FOLDER"]

PROGRESS_FOLDER = ".progress"  # beside the notebooks; hidden in JupyterLab's file browser
Piece = TypeVar("Piece")


REPORT_LINES = 25  # the most lines a report of one wrong answer prints
_PACKAGE_FOLDER = os.path.dirname(os.path.abspath(__file__))
# What Checker.use handed out in place of a learner's piece: (object, the learner's name for
# it, whose it is). A check whose ``yours`` is one of them checks nothing of the learner's.
_HANDED_OUT: list[tuple[Any, str, str]] = []


def _array(value: Any) -> np.ndarray:
    """A Tensor's array, or ``value`` as an array (an ndarray's ``.data`` is its raw buffer)."""
    return np.asarray(value._data if isinstance(value, Tensor) else value)


class _Mismatch(Exception):
    """A checked value differs from the expected one (stops the case); ``likely`` names the
    mistake that gives what was received, when it is known."""

    def __init__(self, message: str, likely: str | None = None) -> None:
        super().__init__(message)
        self.likely = likely


def _clipped(text: str, width: int = 160) -> str:
    """``text`` on one line, cut to ``width`` characters."""
    text = " ".join(text.split())
    return text if len(text) <= width else text[:width - 3] + "..."


def _shown(value: Any) -> str:
    """A short, deterministic rendering of a value for a report."""
    if isinstance(value, (np.ndarray, Tensor)):
        array = _array(value)
        with np.printoptions(precision=4, suppress=True, threshold=12, edgeitems=2):
            text = np.array2string(array, separator=", ")
        return f"array of shape {array.shape}: {_clipped(text, 100)}"
    return _clipped(repr(value), 120)


def _number(value: Any) -> str:
    return f"{value:.6g}" if isinstance(value, (float, np.floating)) else str(value)


def _difference(what: str, received: Any, expected: Any, rtol: float, atol: float) -> str:
    """What differs between two arrays, in at most four lines: the shapes when they differ;
    else how many entries differ and the first, a few entries there, the largest difference
    (or where a nan came), and a plain relation between the two (a sign, a factor, a
    transpose)."""
    received, expected = _array(received), _array(expected)
    if received.shape != expected.shape:
        line = f"{what}: expected shape {expected.shape}, received shape {received.shape}"
        if received.ndim >= 2 and received.shape == expected.shape[:-2] + expected.shape[:-3:-1]:
            line += " (the last two axes swapped)"
        return line
    originals = expected, received
    if received.dtype.kind not in "biuf" or expected.dtype.kind not in "biuf":
        wrong = received != expected
    else:
        received, expected = received.astype(np.float64), expected.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            wrong = ~np.isclose(received, expected, rtol=rtol, atol=atol)
    if received.ndim == 0:
        return f"{what}: expected {_number(expected[()])}, received {_number(received[()])}"
    first = tuple(int(i) for i in np.argwhere(wrong)[0])
    lines = [f"{what} (shape {expected.shape}): {int(wrong.sum())} of {wrong.size} entries "
             f"differ; the first at {list(first)}: expected {_number(expected[first])}, "
             f"received {_number(received[first])}"]
    if expected.size > 1:  # a few entries along the last axis, where the first difference is
        row, start = first[:-1], max(0, min(first[-1] - 2, expected.shape[-1] - 6))
        with np.printoptions(precision=4, suppress=True):
            shown = [np.array2string(array[row][start:start + 6], separator=", ")
                     for array in originals]
        lines.append(f"entries {_entries(row, start, expected.shape[-1])}: expected "
                     f"{shown[0]}, received {shown[1]}")
    if is_floating(received.dtype):
        gap = np.where(wrong, np.abs(received - expected), 0.0)
        nans = np.isnan(received) & ~np.isnan(expected)
        if nans.any():
            where = tuple(int(i) for i in np.argwhere(nans)[0])
            count = int(nans.sum())
            lines.append(f"nan received at {list(where)} ({count} "
                         f"{'entry' if count == 1 else 'entries'}): a row of -inf before a "
                         "softmax, or 0/0?")
        elif np.isfinite(gap).all():
            largest = tuple(int(i) for i in np.unravel_index(np.argmax(gap), gap.shape))
            lines.append(f"largest difference {gap[largest]:.3g} at {list(largest)}")
        relation = _relation(received, expected, rtol, atol)
        if relation:
            lines.append(relation)
    return "\n".join(lines)


def _entries(row: tuple[int, ...], start: int, length: int) -> str:
    """"[2, 0:6]": the index of a run of at most six entries along the last axis."""
    return "[" + ", ".join([*map(str, row), f"{start}:{min(start + 6, length)}"]) + "]"


def _relation(received: np.ndarray, expected: np.ndarray, rtol: float, atol: float) -> str:
    """A plain relation that holds between two float arrays of one shape, or ""."""
    def near(a: np.ndarray, b: np.ndarray) -> bool:
        return a.shape == b.shape and bool(np.allclose(a, b, rtol=max(rtol, 1e-6), atol=atol))

    if not np.isfinite(received).all():
        return ""
    if near(received, -expected):
        return "every entry has the opposite sign: a sign (or a subtraction) the wrong way?"
    if received.ndim >= 2 and near(received, np.swapaxes(expected, -1, -2)):
        return "it is the expected result with its last two axes swapped: a transpose?"
    nonzero = np.abs(expected) > 1e-12
    if nonzero.any() and not (np.abs(received[~nonzero]) > 1e-12).any():
        ratios = received[nonzero] / expected[nonzero]
        if np.ptp(ratios) <= 1e-6 * max(1.0, abs(ratios[0])) and abs(ratios[0] - 1) > 1e-6:
            return f"every entry is {ratios[0]:.6g} times the expected one: a factor missing?"
    return ""


def _named_mistake(received: Any, mistakes: Mapping[str, Any] | None, rtol: float,
                   atol: float) -> str | None:
    """The first of ``mistakes`` (what the learner did -> the value it gives, or a function
    computing it) whose value ``received`` is, or None."""
    for description, value in (mistakes or {}).items():
        value = value() if callable(value) else value
        try:
            got, wrong = _array(received), _array(value)
            if got.shape == wrong.shape and (
                    bool(np.array_equal(got, wrong)) if got.dtype.kind not in "fc"
                    else bool(np.allclose(got, wrong, rtol=max(rtol, 1e-6), atol=atol,
                                          equal_nan=True))):
                return description
        except (TypeError, ValueError):
            continue
    return None


def _where(error: BaseException) -> str:
    """" (in f, line 4)": where in the learner's code an exception was raised: the last
    frame outside tensorlib and the libraries, and not a check's own ``_helper`` (a cell's
    line numbers count from its first line); "" when it was raised elsewhere."""
    frame = None
    for candidate, line in traceback.walk_tb(error.__traceback__):
        filename, function = candidate.f_code.co_filename, candidate.f_code.co_name
        helper = function.startswith("_") and not function.endswith("__")
        if not (filename.startswith(_PACKAGE_FOLDER) or "site-packages" in filename
                or filename.startswith("<frozen") or helper):
            frame = (function, line)
    if frame is None or frame[0] == "<module>":
        return ""
    return f" (in {frame[0]}, line {frame[1]})"


def _package_name(piece: Any) -> tuple[str, str] | None:
    """(the learner's name, whose it is) when ``piece`` is not the learner's: handed out by
    :meth:`Checker.use`, or tensorlib's own; else None."""
    for handed, name, whose in _HANDED_OUT:
        if piece is handed:
            return name, whose
    module = getattr(piece, "__module__", None)
    if isinstance(module, str) and (module == "tensorlib" or module.startswith("tensorlib.")):
        return getattr(piece, "__name__", "it"), "tensorlib's"
    return None


def _cases(count: int) -> str:
    """"1 case", "4 cases": a count of cases as English says it."""
    return f"{count} case" if count == 1 else f"{count} cases"


def _functions_of(piece: Any) -> Iterator[tuple[str, types.FunctionType]]:
    """(qualified name, function) for a function or a method, or for each function a class
    defines itself (methods, static and class methods, properties); inherited ones are not the
    learner's."""
    if isinstance(piece, types.MethodType):
        piece = piece.__func__
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


class _Result(NamedTuple):
    """One case's outcome: "right", "wrong" or "not done"; for a wrong case, what differed
    (``detail``, its first line a summary), the check's hint and the likely mistake."""
    description: str
    outcome: str
    detail: str | None = None
    hint: str | None = None
    likely: str | None = None


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
        self.results: list[_Result] = []
        pieces = yours if isinstance(yours, (tuple, list)) else (yours,)
        # A name that holds the package's piece (handed out by use() after a failed check, or
        # imported) is not the learner's work: the report says so, whatever the cases find.
        self.holds_package = next((_package_name(piece) for piece in pieces
                                   if _package_name(piece)), None)
        if self.holds_package:
            return
        borrowed = _borrowed_names(pieces, (reads,) if isinstance(reads, str) else reads)
        if borrowed:
            names = " and ".join(getattr(piece, "__name__", "?") for piece in pieces)
            self.results.append(_Result(f"the names {names} reads", "wrong",
                                        "\n".join(borrowed)))

    @contextmanager
    def case(self, description: str, hint: str | None = None) -> Iterator[None]:
        """Run one case; whatever stops the block early is recorded, never raised. numpy's
        warnings inside the block are kept for the report of a wrong case."""
        with warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always")
            try:
                yield
            except NotImplementedError:
                self.results.append(_Result(description, "not done"))
                return
            except _Mismatch as mismatch:
                detail, likely = str(mismatch), mismatch.likely
            except UnboundLocalError as error:
                detail = (f"your code reads a name before it sets it ({error})"
                          f"{_where(error)}")
                likely = None
            except NameError as error:
                detail = (f"your code reads `{error.name}`, which it never defines"
                          if error.name else f"your code raised NameError: {error}")
                detail, likely = detail + _where(error), None
            except Exception as error:  # the learner's code failed: say how, and go on
                detail = f"your code raised {type(error).__name__}: {_clipped(str(error))}"
                detail, likely = detail + _where(error), None
            else:
                self.results.append(_Result(description, "right"))
                return
        if warned:
            first = warned[0]
            more = f" (and {len(warned) - 1} more warnings)" if len(warned) > 1 else ""
            detail += f"\nwarned: {first.category.__name__}: {_clipped(str(first.message))}{more}"
        self.results.append(_Result(description, "wrong", detail, hint, likely))

    def equal(self, received: Any, expected: Any, what: str = "the result",
              mistakes: Mapping[str, Any] | None = None) -> None:
        """Stop the case unless ``received == expected`` (arrays: same shape and values).
        ``mistakes``: what a classic mistake gives, ``{"what the learner did": value}``
        (a value or a function that computes it); the report names the one received."""
        if isinstance(expected, (np.ndarray, Tensor)) or isinstance(received, (np.ndarray, Tensor)):
            received, expected = _array(received), _array(expected)
            same = np.shape(received) == np.shape(expected) and \
                bool(np.array_equal(np.asarray(received), np.asarray(expected)))
            if not same:
                raise _Mismatch(_difference(what, received, expected, 0.0, 0.0),
                                _named_mistake(received, mistakes, 0.0, 0.0))
        elif not received == expected:
            raise _Mismatch(f"{what}: expected {_shown(expected)}, received {_shown(received)}",
                            _named_mistake(received, mistakes, 0.0, 0.0))

    def close(self, received: Any, expected: Any, what: str = "the result",
              rtol: float = 1e-6, atol: float = 1e-8,
              mistakes: Mapping[str, Any] | None = None) -> None:
        """Stop the case unless ``received`` has ``expected``'s shape and is within tolerance.
        ``mistakes`` as for :meth:`equal`."""
        received_array = _array(received).astype(np.float64)
        expected_array = _array(expected).astype(np.float64)
        if received_array.shape == expected_array.shape and np.allclose(
                received_array, expected_array, rtol=rtol, atol=atol):
            return
        raise _Mismatch(_difference(what, received_array, expected_array, rtol, atol),
                        _named_mistake(received_array, mistakes, rtol, atol))

    def true(self, condition: Any, message: str) -> None:
        """Stop the case, saying ``message``, unless ``condition`` holds."""
        if not condition:
            raise _Mismatch(message)

    @property
    def passed(self) -> bool:
        """True when the learner's own code was checked, there is at least one case, and
        every case is right."""
        return (not self.holds_package and bool(self.results)
                and all(result.outcome == "right" for result in self.results))

    @property
    def status(self) -> str:
        """"done" (every case right), "not started" (every case hit a stub, or the name holds
        the package's piece) or "started"."""
        if self.passed:
            return "done"
        if self.holds_package or all(result.outcome == "not done" for result in self.results):
            return "not started"
        return "started"

    def report(self) -> bool:
        """Print what is right and what is not, at a glance: the likely mistake and the hint
        of the first wrong case, that case in full, every other one a line (at most
        :data:`REPORT_LINES` lines). Record it (see :func:`record_progress`) and return
        :attr:`passed`."""
        print("\n".join(self.report_lines()))
        _record(self)
        return self.passed

    def report_lines(self) -> list[str]:
        """The lines :meth:`report` prints."""
        results = self.results
        if self.holds_package:
            name, whose = self.holds_package
            return [f"{self.exercise}: not done yet.",
                    f"    {name} is not yours: it holds {whose}, which the safety net handed "
                    "out when this check last ran.",
                    f"    Run the cell where you write {name} (it must run without an error), "
                    "then this one."]
        right = sum(result.outcome == "right" for result in results)
        if self.status == "done":
            return [f"{self.exercise}: all {_cases(right)} right."]
        if self.status == "not started":
            return [f"{self.exercise}: not done yet.",
                    "    Write your code in place of `raise NotImplementedError()`, run that "
                    "cell, then this one."]
        lines = [f"{self.exercise}: {right} of {_cases(len(results))} right."]
        wrong = [result for result in results if result.outcome == "wrong"]
        first = wrong[0] if wrong else None
        if first is not None:
            if first.likely:
                lines.append(f"  likely mistake: {first.likely}")
            if first.hint:
                lines.append(f"  hint: {first.hint}")
            lines.append(f"  WRONG: {first.description}")
            lines += ["    " + line for line in first.detail.splitlines()]  # type: ignore[union-attr]
        others: list[tuple[str, list[str]]] = []  # (what is said, the cases it is said of)
        for result in results:
            if result.outcome == "right" or result is first:
                continue
            said = ("not done yet" if result.outcome == "not done" else
                    "WRONG: " + _clipped(result.detail.splitlines()[0]  # type: ignore[union-attr]
                                       .split("; ")[0], 120))
            if others and others[-1][0] == said:  # the same again: one line for the run
                others[-1][1].append(result.description)
            else:
                others.append((said, [result.description]))
        said_lines = []
        for said, cases in others:
            verdict, _, detail = said.partition(": ")
            named = cases[0] if len(cases) == 1 else _clipped(
                f"{len(cases)} cases ({', '.join(cases)})", 70)
            said_lines.append(f"  {verdict}: {named}" + (f": {detail}" if detail else ""))
        if len(lines) + len(said_lines) > REPORT_LINES - 4:  # too many to say: name them
            names = [case for _, cases in others for case in cases]
            said_lines = textwrap.wrap(
                f"also not right ({len(names)} cases, fix the first above, then run this "
                f"again): {', '.join(names)}", 96, initial_indent="  ",
                subsequent_indent="    ", max_lines=4, placeholder=" ...")
        return lines + said_lines

    def use(self, yours: Piece, package: Piece, name: str, given: bool = True,
            package_name: str = "tensorlib's") -> Piece:
        """``yours`` if this check passed (and ``given``: the checks of the pieces it is built
        on passed too), else ``package``, saying which in one line: the safety net that lets
        the cells below run whatever is done. ``package_name`` says whose ``package`` is.
        What it hands out in place of yours is remembered, so that a check run again on it
        reports "not done yet" rather than checking the package's code."""
        if self.passed and given:
            print(f"From here on the notebook uses your {name}.")
            return yours
        if self.passed:
            print(f"Your {name} passed its check, but a piece it is built on did not, so from "
                  f"here on the notebook uses {package_name}.")
        else:
            state = "not done yet" if self.status == "not started" else "not right yet"
            print(f"Your {name}: {state}, so from here on the notebook uses {package_name}.")
        for handed in package if isinstance(package, tuple) else (package,):
            if not any(handed is earlier for earlier, _, _ in _HANDED_OUT):
                _HANDED_OUT.append((handed, name, package_name))
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


def checks_in(notebook: str | os.PathLike[str]) -> list[tuple[str, str]]:
    """The checks of a workbook notebook, in the order of its cells: (name, "piece" or
    "exercise") for each ``Checker("name", ...)`` of a graded cell (nbgrader's ``grade``), read
    from the cell's code without running it."""
    with open(notebook, encoding="utf-8") as handle:
        cells = json.load(handle).get("cells", [])
    found = []
    for cell in cells:
        if cell.get("cell_type") != "code" or \
                not cell.get("metadata", {}).get("nbgrader", {}).get("grade"):
            continue
        source = cell.get("source", "")
        try:
            tree = ast.parse("".join(source) if isinstance(source, list) else source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Checker"
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


def _record(checker: Checker) -> None:
    path = _recording.get("file")
    if path is None:
        return
    try:
        checks = read_progress(path) if path.exists() else {}
    except (OSError, ValueError):  # a damaged file is started afresh
        checks = {}
    if checker.holds_package and checker.exercise in checks:
        return  # a check of the package's piece says nothing of the learner's last verdict
    checks[checker.exercise] = {"kind": "piece" if checker.piece else "exercise",
                                "status": checker.status}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, json.dumps({"notebook": path.stem, "checks": checks}, indent=1))
    except OSError as error:  # a read-only folder must not fail the check
        print(f"(progress not recorded: {error})")
