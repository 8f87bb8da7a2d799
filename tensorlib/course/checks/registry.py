"""A check is a function of the package that a notebook calls in one line.

A notebook's check cell is one call, so that the verdict is the first thing under it::

    loops_in_use = check_conv1d_loops(conv1d_loops)      # a core piece: the safety net's choice
    check_diagonal_stride(diagonal_stride)                 # an exercise

The cases, the detectors of the usual slips and the hints live in the function, in
``tensorlib/course/checks/<topic>.py``, where anyone curious reads them. A check function is written
as its cases, with :func:`piece_check` or :func:`exercise_check` around it::

    @piece_check("conv1d_loops", yours=("conv1d_loops",), package_name="F.conv1d")
    def check_conv1d_loops(checker, conv1d_loops):
        with checker.case(...):
            ...
        return HandOn(conv1d_loops, package_conv1d)

The decorator makes the function a :class:`Check`. Called, it builds the
:class:`~tensorlib.course.exercises.Checker` from the learner's pieces (the arguments named in
``yours``; the others are the notebook's data they read), runs the cases, prints the report,
and keeps the verdict in its ``passed`` (nbgrader's hidden test is ``assert
check_conv1d_loops.passed``). A piece's check returns what the cells
below use: the learner's piece when it passed, the package's otherwise
(:meth:`~tensorlib.course.exercises.Checker.use`). The call's result is bound to a name of its own,
never to the learner's name, so that a check run again checks the learner's code again.

:data:`CHECKS` maps each check function's name to the function, so that the progress command
reads a check cell's name and kind without running it.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import pkgutil
from collections.abc import Callable
from typing import Any, NamedTuple

from tensorlib.course.checks import history
from tensorlib.course.exercises import Checker

__all__ = ["Check", "HandOn", "piece_check", "exercise_check", "CHECKS", "check_named"]

CHECKS: dict[str, Check] = {}  # a check function's name -> the check


class HandOn(NamedTuple):
    """What a piece's check hands to the cells below: ``yours`` if the check passed (and
    ``given``: the pieces it is built on passed too), else ``package``."""

    yours: Any
    package: Any
    given: bool = True


class Check:
    """A check of the workbook: call it with the learner's pieces (and the notebook's data its
    cases need); it runs the cases, prints the report and keeps the verdict in
    :attr:`passed`. A piece's check returns what the cells below use."""

    def __init__(self, cases: Callable[..., Any], name: str, piece: bool,
                 yours: tuple[str, ...], reads: tuple[str, ...], label: str | None,
                 package_name: str) -> None:
        parameters = list(inspect.signature(cases).parameters)[1:]  # after the checker
        unknown = [argument for argument in yours if argument not in parameters]
        if unknown:
            raise TypeError(f"{cases.__name__}: yours names {unknown}, which it does not take")
        functools.update_wrapper(self, cases)
        self.cases, self.parameters = cases, parameters
        self.check_name, self.kind = name, "piece" if piece else "exercise"
        self.learner_names, self.reads = yours, reads
        self.label, self.package_name = label or name, package_name
        self.passed = False  # the verdict of the last run: nbgrader's `assert check.passed`

    def __call__(self, *arguments: Any, **keywords: Any) -> Any:
        given = dict(zip(self.parameters, arguments, strict=False))
        given.update(keywords)
        pieces = tuple(given[argument] for argument in self.learner_names if argument in given)
        checker = Checker(self.check_name, piece=self.kind == "piece", yours=pieces,
                          reads=self.reads)
        handed = self.cases(checker, *arguments, **keywords)
        self.passed = checker.report()
        if self.kind == "exercise":
            return None
        if not isinstance(handed, HandOn):
            raise TypeError(f"{self.cases.__name__} must return a HandOn for a core piece")
        return checker.use(handed.yours, handed.package, self.label, given=handed.given,
                           package_name=self.package_name)


def _check(name: str, piece: bool, yours: tuple[str, ...] | str, reads: tuple[str, ...],
           label: str | None, package_name: str) -> Callable[[Callable[..., Any]], Check]:
    names = (yours,) if isinstance(yours, str) else tuple(yours)

    def decorate(cases: Callable[..., Any]) -> Check:
        check = Check(cases, name, piece, names, tuple(reads), label, package_name)
        earlier = CHECKS.get(cases.__name__)
        if earlier is not None and earlier.__module__ != cases.__module__:
            raise ValueError(f"two checks named {cases.__name__}: in {earlier.__module__} and "
                             f"{cases.__module__}")
        CHECKS[cases.__name__] = check
        history.register_learner_names(cases.__name__, names)
        return check
    return decorate


def piece_check(name: str, *, yours: tuple[str, ...] | str, reads: tuple[str, ...] = (),
                label: str | None = None,
                package_name: str = "tensorlib's") -> Callable[[Callable[..., Any]], Check]:
    """The check of a core piece: ``name`` is what progress lists, ``yours`` the parameters
    that take the learner's pieces, ``reads`` the notebook's data they may read, ``label``
    the piece's name in the safety net's line (``name`` by default), ``package_name`` whose
    piece stands in."""
    return _check(name, True, yours, reads, label, package_name)


def exercise_check(name: str, *, yours: tuple[str, ...] | str,
                   reads: tuple[str, ...] = ()) -> Callable[[Callable[..., Any]], Check]:
    """The check of an exercise (see :func:`piece_check`); it returns None."""
    return _check(name, False, yours, reads, None, "")


def check_named(function_name: str) -> Check | None:
    """The check function of that name from any ``tensorlib.course.checks`` module, or None."""
    if function_name not in CHECKS:
        import tensorlib.course.checks as package  # noqa: PLC0415 (every topic module, on demand)
        for module in pkgutil.iter_modules(package.__path__):
            importlib.import_module(f"tensorlib.course.checks.{module.name}")
    return CHECKS.get(function_name)
