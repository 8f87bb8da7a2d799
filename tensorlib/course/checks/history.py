"""What the learner last ran: for each name a notebook cell defines, that cell's last run.

A check tests the function or class the learner's name holds now. That is the version the
learner last wrote only when the cell that defines it last ran to the definition: after an
edit that does not compile (a SyntaxError), or a run that stopped at an error before the
``def``, the name still holds the version before. :func:`watch` registers two IPython event
callbacks that note, for every cell run, the names its text defines (``def``, ``class``,
assignment and import at its top level), whether it compiled, where it stopped, and whether
each name was set again. A check asks :func:`stale_lines` about the names it checks and
prints what it answers before its verdict.

:func:`watch` also installs the one-line report of a check cell run before the cell that
defines what it checks ("conv1d_loops is not defined yet: run the cell where you write it
(above), then this one."), in place of a ``NameError`` traceback. Any other ``NameError`` is
shown as IPython shows it.

Outside IPython (a script, a unit test calling a check) nothing is watched and nothing is
said. This module imports nothing of tensorlib.
"""

from __future__ import annotations

import ast
import re
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CellRun", "watch", "last_run", "stale_lines", "forget", "defined_names",
           "register_learner_names"]

_MISSING = object()  # what a name held before a cell run that first set it


@dataclass
class CellRun:
    """One run of a cell: its number (IPython's ``In [n]``), its text, the names the text
    defines, the error that stopped it (``"SyntaxError, line 7"``) or None, and the names the
    run set again (a function or class object of its own)."""

    number: int | None
    source: str
    defines: frozenset[str]
    error: str | None = None
    compiled: bool = True
    rebound: frozenset[str] = frozenset()
    bound: dict[str, Any] = field(default_factory=dict)


# name -> the last run of a cell whose text defines that name (this kernel's, since watch())
_last_runs: dict[str, CellRun] = {}
# the run in progress: (its text, what each name it defines held before it, its number)
_running: dict[str, Any] = {}
# the names a check cell's check reads as the learner's (registered by the checks)
_learner_names: dict[str, tuple[str, ...]] = {}


_DEFINITION = re.compile(r"^(?:async\s+def|def|class)\s+([A-Za-z_]\w*)|^([A-Za-z_]\w*)\s*"
                         r"(?::[^=\n]*)?=(?!=)", re.MULTILINE)


def defined_names(source: str) -> frozenset[str]:
    """The names a cell's text sets at its top level: functions, classes, assignments and
    imports. A text that does not parse is read line by line (``def f``, ``class C``,
    ``x = ...`` at the start of a line)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return frozenset(match.group(1) or match.group(2)
                         for match in _DEFINITION.finditer(source))
    names: set[str] = set()
    for statement in tree.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(statement.name)
        elif isinstance(statement, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in statement.names)
        elif isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = (statement.targets if isinstance(statement, ast.Assign)
                       else [statement.target])
            for target in targets:
                names.update(node.id for node in ast.walk(target)
                             if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store))
    return frozenset(names)


def _where_it_stopped(error: BaseException) -> str:
    """"SyntaxError, line 7" or "NameError, line 3": the error and its line in the cell."""
    if isinstance(error, SyntaxError):
        return f"{type(error).__name__}, line {error.lineno}"
    frames = [frame for frame in traceback.extract_tb(error.__traceback__)
              if "IPython" not in frame.filename.replace("\\", "/").split("/")]
    line = f", line {frames[0].lineno}" if frames and frames[0].name == "<module>" else ""
    return f"{type(error).__name__}{line}"


def _transformed(shell: Any, raw: str) -> str:
    """The cell's text as Python (IPython's magics and ``!`` lines turned into calls)."""
    try:
        return shell.transform_cell(raw)
    except Exception:  # a text IPython cannot transform is read as it is
        return raw


def _before_run(shell: Any) -> Callable[[Any], None]:
    def before(info: Any) -> None:
        source = info.raw_cell or ""
        names = defined_names(_transformed(shell, source))
        _running.clear()
        _running.update(source=source, names=names,
                        before={name: shell.user_ns.get(name, _MISSING) for name in names})
    return before


def _after_run(shell: Any) -> Callable[[Any], None]:
    def after(result: Any) -> None:
        if not _running or _running.get("source") != (result.info.raw_cell or ""):
            return
        names, before = _running["names"], _running["before"]
        _running.clear()
        error = result.error_before_exec or result.error_in_exec
        namespace = shell.user_ns
        rebound = frozenset(name for name in names
                            if namespace.get(name, _MISSING) is not before[name])
        run = CellRun(number=result.execution_count, source=result.info.raw_cell, defines=names,
                      error=None if error is None else _where_it_stopped(error),
                      compiled=result.error_before_exec is None, rebound=rebound,
                      bound={name: namespace[name] for name in rebound})
        for name in names:
            _last_runs[name] = run
    return after


def _missing_name_report(shell: Any, error_type: type, error: BaseException, tb: Any,
                         tb_offset: int | None = None) -> None:
    """IPython's handler of a NameError: one line when a check cell ran before the cell
    that defines what it checks, else IPython's own traceback."""
    frames = traceback.extract_tb(tb)
    source = _running.get("source", "")  # the check cell: it is still running
    calls = re.findall(r"\b(check_\w+)\s*\(", source) + \
        (["Checker"] if re.search(r"\bChecker\s*\(", source) else [])
    name = getattr(error, "name", None)
    if not (calls and name and frames and frames[-1].name == "<module>"):
        shell.showtraceback((error_type, error, tb), tb_offset=tb_offset)
        return
    if name in calls:
        print(f"{name} is not defined yet: run the notebook's first cell (it imports the "
              "checks), then this one.")
    elif any(name in _learner_names.get(call, ()) for call in calls) or \
            re.search(rf"\byours\s*=\s*\(?[^)\n]*\b{re.escape(name)}\b", source):
        print(f"{name} is not defined yet: run the cell where you write it (above), then "
              "this one.")
    else:
        print(f"{name} is not defined yet: run the cells above this one first (Run > Run "
              "All Above Selected Cell), then this one.")


def watch(shell: Any = None) -> bool:
    """Start noting every cell run of ``shell`` (the running IPython, by default); True when
    watching, False outside IPython. Calling it again changes nothing."""
    if shell is None:
        try:
            from IPython import get_ipython  # noqa: PLC0415 (only where IPython runs)
        except ImportError:
            return False
        shell = get_ipython()
        if shell is None:
            return False
    if getattr(shell, "_tensorlib_watched", False):
        return True
    shell.events.register("pre_run_cell", _before_run(shell))
    shell.events.register("post_run_cell", _after_run(shell))
    shell.set_custom_exc((NameError,), _missing_name_report)
    shell._tensorlib_watched = True
    return True


def forget() -> None:
    """Drop every run noted so far (a fresh start, as after a kernel restart)."""
    _last_runs.clear()
    _running.clear()


def register_learner_names(check: str, names: Iterable[str]) -> None:
    """The names of the learner's pieces that ``check`` (a check function's name) reads."""
    _learner_names[check] = tuple(names)


def last_run(name: str) -> CellRun | None:
    """The last run of a cell whose text defines ``name``, or None (not watched, or no such
    cell ran since)."""
    return _last_runs.get(name)


def stale_lines(pieces: Iterable[Any]) -> list[str]:
    """What a check says before its verdict when the learner's last edit of a piece's cell did
    not make the piece the check receives: one message per such cell (its second line
    indented); [] when every piece is the one its cell's last run made (or nothing is
    watched)."""
    lines: list[str] = []
    said: list[CellRun] = []
    for piece in pieces:
        name = getattr(piece, "__name__", None)
        run = last_run(name) if isinstance(name, str) else None
        if run is None or any(run is earlier for earlier in said):
            continue
        cell = f"the cell that defines {name}" + (f" (In [{run.number}])" if run.number else "")
        if not run.compiled:
            said.append(run)
            lines.append(f"Your last edit of {cell} did not run ({run.error}):\n    fix it and "
                         "run that cell; the verdict below is about the version that last ran.")
        elif name not in run.rebound:
            said.append(run)
            why = f"stopped before defining it ({run.error})" if run.error else \
                "did not define it"
            lines.append(f"The last run of {cell} {why}:\n    fix it and run that cell; the "
                         "verdict below is about the version that ran before.")
        elif run.bound.get(name) is not piece and not _same_function(run.bound.get(name), piece):
            said.append(run)
            lines.append(f"The {name} checked here is not the one {cell} last made: run that "
                         "cell, then this one.")
    return lines


def _same_function(bound: Any, piece: Any) -> bool:
    """A bound method of the object the cell made counts as that object's (``obj.encode``)."""
    return getattr(piece, "__func__", _MISSING) is bound or \
        getattr(piece, "__self__", _MISSING) is bound
