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
the order of their cells (:mod:`tensorlib.course.checks.progress`), with what each last reported
and the total.
"""

from __future__ import annotations

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
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import numpy as np

from tensorlib.course.checks import history
from tensorlib.course.checks.differences import (
    as_array,
    clipped,
    difference,
    likely_error,
    likely_mistake,
    named_mistake,
    shown,
)
from tensorlib.engine.files import write_text_atomic
from tensorlib.engine.tensor import Tensor
from tensorlib.nn.module import Module

__all__ = ["Checker", "record_progress", "read_progress", "PROGRESS_FOLDER"]

PROGRESS_FOLDER = ".progress"  # beside the notebooks; hidden in JupyterLab's file browser
Piece = TypeVar("Piece")


REPORT_LINES = 25  # the most lines a report of one wrong answer prints
# tensorlib/ itself (this file is in tensorlib/course/): every frame in it is the package's
_PACKAGE_FOLDER = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# What Checker.use handed out in place of a learner's piece: (object, the learner's name for
# it, whose it is). A check whose ``yours`` is one of them checks nothing of the learner's.
_HANDED_OUT: list[tuple[Any, str, str]] = []


class _Mismatch(Exception):
    """A checked value differs from the expected one (stops the case); ``likely`` names the
    mistake that gives what was received, when it is known."""

    def __init__(self, message: str, likely: str | None = None) -> None:
        super().__init__(message)
        self.likely = likely


def _where(error: BaseException) -> str:
    """" (in f, line 4)": where in the learner's code an exception was raised: the last
    frame outside tensorlib (its checks included) and the libraries (a cell's line numbers
    count from its first line); "" when it was raised elsewhere."""
    frame = None
    for candidate, line in traceback.walk_tb(error.__traceback__):
        filename, function = candidate.f_code.co_filename, candidate.f_code.co_name
        if not (filename.startswith(_PACKAGE_FOLDER) or "site-packages" in filename
                or filename.startswith("<frozen")):
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
                     f"so it gets what a cell above left under that name: {shown(value)}")
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
        self.stale: list[str] = []  # what history says when the last edit is not what runs
        pieces = yours if isinstance(yours, (tuple, list)) else (yours,)
        # A name that holds the package's piece (handed out by use() after a failed check, or
        # imported) is not the learner's work: the report says so, whatever the cases find.
        self.holds_package = next((_package_name(piece) for piece in pieces
                                   if _package_name(piece)), None)
        if self.holds_package:
            return
        self.stale = history.stale_lines(pieces)
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
                likely = "a variable used before the line that sets it runs"
            except NameError as error:
                detail = (f"your code reads `{error.name}`, which it never defines"
                          if error.name else f"your code raised NameError: {error}")
                detail = detail + _where(error)
                likely = f"`{error.name}` is never set: a typo, or a name from another cell?" \
                    if error.name else None
            except Exception as error:  # the learner's code failed: say how, and go on
                where = _where(error)
                if where:
                    detail = f"your code raised {type(error).__name__}: {clipped(str(error))}"
                else:  # raised by the check's next step on what the learner's code gave
                    detail = (f"what your code returned made the check's next step fail: "
                              f"{type(error).__name__}: {clipped(str(error))}")
                detail, likely = detail + where, likely_error(error)
            else:
                self.results.append(_Result(description, "right"))
                return
        if warned:
            first = warned[0]
            more = f" (and {len(warned) - 1} more warnings)" if len(warned) > 1 else ""
            detail += f"\nwarned: {first.category.__name__}: {clipped(str(first.message))}{more}"
        self.results.append(_Result(description, "wrong", detail, hint, likely))

    @contextmanager
    def named_errors(self, slips: Mapping[str, str],
                     kinds: tuple[type[BaseException], ...] = (Exception,)) -> Iterator[None]:
        """Inside a case: an exception of ``kinds`` that the learner's code raises, whose
        message holds a key of ``slips``, stops the case with that slip as the likely mistake
        (``{"broadcast": "keepdims=True missing: ..."}``); any other goes on to the case."""
        try:
            yield
        except kinds as error:
            if isinstance(error, NotImplementedError):
                raise
            slip = next((slip for text, slip in slips.items() if text in str(error)), None)
            if slip is None:
                raise
            raise _Mismatch(f"your code raised {type(error).__name__}: {clipped(str(error))}"
                            f"{_where(error)}", slip) from error

    def backward_of(self, y: Any, upstream: Any, count: int) -> tuple[Any, ...]:
        """What the learner's ``Function.backward`` returns for ``upstream`` (in y's dtype) on
        the node their forward made for the Tensor ``y``, called as the engine calls it but
        before the engine's own checks, so that a check tests the forward's output first and
        then what backward returns: a tuple of ``count`` gradients. Stops the case when y has
        no node, or backward returns another number of gradients."""
        node = y.grad_fn
        self.true(node is not None, "y is not part of a graph: forward must return a numpy "
                  "array computed from its array arguments")
        grads = node.function.backward(node, np.asarray(upstream, dtype=y.dtype))
        if count == 1:
            return (grads,)
        listed = isinstance(grads, (tuple, list))
        self.true(listed and len(grads) == count,
                  f"backward must return {count} gradients, it returned "
                  + (f"{len(grads)}" if listed else f"a {type(grads).__name__}"),
                  f"return one gradient per array input of forward ({count}), None where none "
                  "is wanted")
        return tuple(grads)

    def equal(self, received: Any, expected: Any, what: str = "the result",
              mistakes: Mapping[str, Any] | None = None) -> None:
        """Stop the case unless ``received == expected`` (arrays: same shape and values).
        ``mistakes``: what a classic mistake gives, ``{"what the learner did": value}``
        (a value or a function that computes it); the report names the one received, or
        else the usual slip a detector finds (:func:`likely_mistake`)."""
        if isinstance(expected, (np.ndarray, Tensor)) or isinstance(received, (np.ndarray, Tensor)):
            received, expected = as_array(received), as_array(expected)
            same = np.shape(received) == np.shape(expected) and \
                bool(np.array_equal(np.asarray(received), np.asarray(expected)))
            if not same:
                raise _Mismatch(difference(what, received, expected, 0.0, 0.0),
                                named_mistake(received, mistakes, 0.0, 0.0, expected)
                                or likely_mistake(received, expected, 0.0, 0.0))
        elif not received == expected:
            raise _Mismatch(f"{what}: expected {shown(expected)}, received {shown(received)}",
                            named_mistake(received, mistakes, 0.0, 0.0))

    def close(self, received: Any, expected: Any, what: str = "the result",
              rtol: float = 1e-6, atol: float = 1e-8,
              mistakes: Mapping[str, Any] | None = None) -> None:
        """Stop the case unless ``received`` has ``expected``'s shape and is within tolerance.
        ``mistakes`` as for :meth:`equal`."""
        try:
            received_array = as_array(received).astype(np.float64)
        except (TypeError, ValueError) as error:
            raise _Mismatch(f"{what}: expected an array of shape {np.shape(as_array(expected))}, "
                            f"received {shown(received)}",
                            "None where an array was expected: a missing return?"
                            if received is None else None) from error
        expected_array = as_array(expected).astype(np.float64)
        if received_array.shape == expected_array.shape and np.allclose(
                received_array, expected_array, rtol=rtol, atol=atol):
            return
        raise _Mismatch(difference(what, received_array, expected_array, rtol, atol),
                        named_mistake(received_array, mistakes, rtol, atol, expected_array)
                        or likely_mistake(received_array, expected_array, rtol, atol))

    def shape(self, received: Any, expected: tuple[int, ...], what: str = "the result",
              mistakes: Mapping[str, Any] | None = None) -> None:
        """Stop the case unless ``received`` (an array or a Tensor) has the shape ``expected``:
        a check tests a result's shape before its values, and a forward before a backward.
        ``mistakes``: what the classic mistakes give (a shape, or an array or a function
        giving one); the report names the first whose shape was received."""
        got = tuple(np.shape(as_array(received)))
        if got == tuple(expected):
            return
        named = None
        for description, value in (mistakes or {}).items():
            try:
                value = value() if callable(value) else value
                shape = tuple(value) if isinstance(value, tuple) else np.shape(as_array(value))
            except Exception:  # a mistake that cannot be computed for this case
                continue
            if tuple(shape) == got:
                named = description
                break
        raise _Mismatch(f"{what}: expected shape {tuple(expected)}, received shape {got}",
                        named or likely_mistake(np.zeros(got), np.zeros(tuple(expected))))

    def true(self, condition: Any, message: str, likely: str | None = None) -> None:
        """Stop the case, saying ``message`` (and ``likely``, the mistake it points to),
        unless ``condition`` holds."""
        if not condition:
            raise _Mismatch(message, likely)

    @property
    def passed(self) -> bool:
        """True when the learner's own code, as their cells last wrote it, was checked, there
        is at least one case, and every case is right."""
        return (not self.holds_package and not self.stale and bool(self.results)
                and all(result.outcome == "right" for result in self.results))

    @property
    def status(self) -> str:
        """"done" (every case right), "edit not run" (the learner's last edit of a piece's
        cell did not run), "not started" (every case hit a stub, or the name holds the
        package's piece) or "started"."""
        if self.passed:
            return "done"
        if self.stale:
            return "edit not run"
        if self.holds_package or all(result.outcome == "not done" for result in self.results):
            return "not started"
        return "started"

    def report(self) -> bool:
        """Print what is right and what is not, at a glance: what ran when it is not the
        learner's last edit, the likely mistake (or else the hint) of the first wrong case,
        that case in full, every other one a line (at most :data:`REPORT_LINES` lines).
        Record it (see :func:`record_progress`) and return :attr:`passed`."""
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
        stale = [line for message in self.stale for line in message.split("\n")]
        right = sum(result.outcome == "right" for result in results)
        if results and right == len(results):
            return stale + [f"{self.exercise}: all {_cases(right)} right."]
        if all(result.outcome == "not done" for result in results):
            return stale + [f"{self.exercise}: not done yet.",
                            "    Write your code in place of `raise NotImplementedError()`, "
                            "run that cell, then this one."]
        lines = stale + [f"{self.exercise}: {right} of {_cases(len(results))} right."]
        wrong = [result for result in results if result.outcome == "wrong"]
        first = wrong[0] if wrong else None
        if first is not None:
            if first.likely:  # a detector named the slip: the case's general hint would not
                lines.append(f"  likely mistake: {first.likely}")
            elif first.hint:
                lines.append(f"  hint: {first.hint}")
            lines.append(f"  WRONG: {first.description}")
            lines += ["    " + line for line in first.detail.splitlines()]  # type: ignore[union-attr]
        others: list[tuple[str, list[str]]] = []  # (what is said, the cases it is said of)
        for result in results:
            if result.outcome == "right" or result is first:
                continue
            said = ("not done yet" if result.outcome == "not done" else
                    "WRONG: " + clipped(result.detail.splitlines()[0]  # type: ignore[union-attr]
                                        .split("; ")[0], 120))
            if others and others[-1][0] == said:  # the same again: one line for the run
                others[-1][1].append(result.description)
            else:
                others.append((said, [result.description]))
        said_lines = []
        for said, cases in others:
            verdict, _, detail = said.partition(": ")
            named = cases[0] if len(cases) == 1 else clipped(
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
        elif self.stale:
            print(f"Your {name}: your last edit did not run, so from here on the notebook uses "
                  f"{package_name}.")
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
    history.watch()  # in Jupyter: each check knows what the learner's cells last ran


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
    if checker.holds_package and checker.exercise in checks:
        return  # a check of the package's piece says nothing of the learner's last verdict
    checks[checker.exercise] = {"kind": "piece" if checker.piece else "exercise",
                                "status": checker.status}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, json.dumps({"notebook": path.stem, "checks": checks}, indent=1))
    except OSError as error:  # a read-only folder must not fail the check
        print(f"(progress not recorded: {error})")
