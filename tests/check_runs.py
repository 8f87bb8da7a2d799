"""One check cell of the workbook run as a learner runs it, in an IPython shell.

:class:`CheckRun` takes a check cell of a notebook and the few cells it needs, and runs them
in IPython's own shell (in this process), so that what a learner's kernel does happens here
too: every cell run is noted by ``tensorlib.course.checks.history`` (a check knows whether the
learner's last edit ran), a check cell run before its piece's cell gets the one-line message,
and magics work. ``tests/course/test_exercises.py`` (``make test-checks``) and
``scripts/slip_table.py`` use it.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import io
import json
import re
import signal
from pathlib import Path

import nbformat
from IPython.core.inputtransformer2 import TransformerManager
from IPython.core.interactiveshell import InteractiveShell

import tensorlib.course
from tensorlib.course import exercises
from tensorlib.course.checks import history

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
SOLUTIONS = NOTEBOOKS / "solutions"
SLIPS = Path(__file__).resolve().parent / "course" / "slips"

_python = TransformerManager()  # a notebook cell's source as plain Python (magics and all)
_SOLUTION = re.compile(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", re.S)
_HIDDEN = re.compile(r"^[ \t]*### BEGIN HIDDEN TESTS\n.*?^[ \t]*### END HIDDEN TESTS[ \t]*\n?",
                     re.M | re.S)


def _top_level_names(tree):
    """The names a cell's top level sets (not those inside its functions, classes, lambdas
    and comprehensions)."""
    names, pending = set(), list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        if not isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
                                 ast.GeneratorExp)):
            pending.extend(ast.iter_child_nodes(node))
    return names


def _changed_names(tree):
    """The names whose objects a cell's top level (and its with, for and if blocks) may
    change in place: ``name.attribute = ...``, ``name[...] = ...``, and ``name.method(...)``
    or ``function(name, ...)`` as a statement or the value of an assignment."""
    names, pending = set(), list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.With, ast.For, ast.If)):
            pending.extend(node.body + getattr(node, "orelse", []))
            continue
        if isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(target.value.id for target in targets
                         if isinstance(target, (ast.Attribute, ast.Subscript))
                         and isinstance(target.value, ast.Name))
        if isinstance(node, (ast.Expr, ast.Assign)) and isinstance(node.value, ast.Call):
            call = node.value
            if isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name):
                names.add(call.func.value.id)
            names.update(argument.id for argument in call.args if isinstance(argument, ast.Name))
    return names


def _free_names(tree):
    """The names a cell reads before its top level sets them, leaving out builtins and the
    names its functions, lambdas and comprehensions set themselves."""
    scopes = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp,
              ast.SetComp, ast.DictComp, ast.GeneratorExp)
    free, already_set = set(), set(dir(builtins))
    for statement in tree.body:
        own = {node.arg if isinstance(node, ast.arg) else node.id
               for scope in ast.walk(statement) if isinstance(scope, scopes)
               for node in ast.walk(scope) if isinstance(node, ast.arg)
               or isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load)}
        read = {node.id for node in ast.walk(statement)
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}
        free |= read - own - already_set
        already_set |= _top_level_names(ast.Module(body=[statement], type_ignores=[]))
    return free


def check_function_name(source: str) -> str | None:
    """The check function a one-line check cell calls (``check_conv1d_loops``), or None for
    a cell that builds its own ``Checker``."""
    for node in ast.walk(ast.parse(_python.transform_cell(source))):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "").startswith("check_"):
            return node.func.id
    return None


class TimeLimit(BaseException):
    """Raised by :func:`time_limit` (a BaseException, so that a check's case does not take it
    for the learner's code failing)."""


@contextlib.contextmanager
def time_limit(seconds):
    """Raise TimeLimit in the block after ``seconds`` of wall time (Unix, main thread)."""
    def stop(signum, frame):
        raise TimeLimit()

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def shell():
    """IPython's shell of this process, emptied (a fresh kernel), its cell runs watched."""
    instance = InteractiveShell.instance(colors="nocolor")
    instance.reset(new_session=False)
    history.forget()
    history.watch(instance)
    return instance


class CheckRun:
    """One check cell of a notebook and the few cells it needs, run as the notebook runs
    them, in IPython's shell: its answer cells (since the graded cell before it, each
    ``(old, new)`` of ``replace`` swapped in: a wrong answer), and every earlier cell that sets
    a name these read, with the cells after it that change that name's object by the name
    (``model.eval()``, ``train(model, ...)``, ``model.weight = ...``; ``follow_changes=False``
    leaves those out, where the check does not need them), and in turn the cells those need,
    found by reading their code. ``learner=True`` runs the learner's copy, with its stubs,
    else the teacher's. ``run_answers=False`` leaves the answer cells unrun (a learner who
    skipped them). :meth:`check` runs the check cell (again) and returns (passed, its
    report); :meth:`run_cell` runs any other source as a learner's cell."""

    def __init__(self, notebook, grade_id, monkeypatch, replace=(), learner=False,
                 follow_changes=True, run_answers=True):
        path = (NOTEBOOKS if learner else SOLUTIONS) / f"{notebook}.ipynb"
        cells = [cell for cell in nbformat.read(path, as_version=4).cells
                 if cell.cell_type == "code"]
        check = next(index for index, cell in enumerate(cells)
                     if cell.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
        answers = []  # the answer cells since the graded cell before, or else before that
        for index in range(check - 1, -1, -1):
            grading = cells[index].metadata.get("nbgrader", {})
            if grading.get("grade") and answers:
                break
            if grading.get("solution"):
                answers.append(index)
        sources = {index: cells[index].source for index in range(check)}
        sources[check] = _HIDDEN.sub("", cells[check].source).rstrip("\n")
        for old, new in replace:
            found = [index for index in answers if old in sources[index]]
            assert len(found) == 1 and sources[found[0]].count(old) == 1, (grade_id, old)
            sources[found[0]] = sources[found[0]].replace(old, new)
        trees = {index: ast.parse(_python.transform_cell(source))
                 for index, source in sources.items()}
        chosen = {check, *answers}
        wanted = [(name, reader) for reader in chosen for name in _free_names(trees[reader])]
        while wanted:  # (a name, the cell that reads it): the last cell before it that sets
            name, reader = wanted.pop()  # it, and the cells between that change its object
            setter = next((index for index in range(reader - 1, -1, -1)
                           if name in _top_level_names(trees[index])), None)
            if setter is None:
                continue
            changers = [index for index in range(setter + 1, reader) if follow_changes
                        and name in _changed_names(trees[index])]
            for index in [setter, *changers]:
                if index not in chosen:
                    chosen.add(index)
                    wanted += [(name, index) for name in _free_names(trees[index])]
        # no progress file, and the notebook's own folder as the working one, as Jupyter runs it
        # (the notebooks import it from the folder's namespace, tensorlib.course)
        monkeypatch.setattr(exercises, "record_progress", lambda *args, **kwargs: None)
        monkeypatch.setattr(tensorlib.course, "record_progress", lambda *args, **kwargs: None)
        monkeypatch.chdir(path.parent)
        self.notebook, self.answers = notebook, [sources[index] for index in sorted(answers)]
        self.check_source = sources[check]
        self.check_function = check_function_name(self.check_source)
        self.shell = shell()
        for index in sorted(chosen - {check}):
            if run_answers or index not in answers:
                self.run_cell(sources[index])
        self.first = self.check()

    def run_cell(self, source):
        """Run ``source`` as a learner's cell; its output is dropped, the exception it raised
        (or a SyntaxError) returned."""
        with contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(io.StringIO()):  # progress bars, tracebacks
            result = self.shell.run_cell(source, store_history=True)
        error = result.error_before_exec or result.error_in_exec
        if isinstance(error, TimeLimit):
            raise error
        return error

    def check(self):
        """Run the check cell; (passed, what it printed)."""
        report = io.StringIO()
        with contextlib.redirect_stdout(report), contextlib.redirect_stderr(io.StringIO()):
            result = self.shell.run_cell(self.check_source, store_history=True)
        if isinstance(result.error_in_exec, TimeLimit):
            raise result.error_in_exec
        namespace = self.shell.user_ns
        if self.check_function:
            function = namespace.get(self.check_function)
            passed = bool(getattr(function, "passed", False)) and result.success
        else:
            passed = bool(namespace.get("passed")) and result.success
        return passed, report.getvalue()


def run_check(notebook, grade_id, monkeypatch, replace=()):
    """The teacher's check cell ``grade_id`` run once (see :class:`CheckRun`), without the
    cells that only change an object: (passed, its report)."""
    return CheckRun(notebook, grade_id, monkeypatch, replace, follow_changes=False).first


def slips_of(notebook):
    """The slips written for a notebook's checks (``tests/course/slips/<notebook>.py``):
    grade id -> [(what the learner did, old text, new text, a word the report must say)]."""
    path = SLIPS / f"{notebook}.py"
    if not path.exists():
        return {}
    namespace: dict = {}
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), namespace)
    return namespace["SLIPS"]


def first_line(report):
    """The first line a learner reads under a report's header: the likely mistake, or the
    hint, or the first wrong case (what the slip table shows)."""
    lines = [line for line in report.splitlines() if line.strip()]
    header = next((index for index, line in enumerate(lines)
                   if re.match(r"^[^ ].*: (\d+ of \d+ cases? right|all \d+ cases? right|not done"
                               r" yet)\.$", line)), None)
    if header is None:
        return lines[0] if lines else ""
    return lines[header + 1].strip() if header + 1 < len(lines) else lines[header]


def slip_rows(notebook, monkeypatch, only=None):
    """For each slip of the notebook (of its check ``only``, when given): a dict with the
    check, the slip, whether the check passed and the first line of its report."""
    rows = []
    for grade_id, slips in slips_of(notebook).items():
        if only is not None and grade_id != only:
            continue
        run = CheckRun(notebook, grade_id, monkeypatch)
        for description, old, new, word in slips:
            found = [index for index, source in enumerate(run.answers)
                     if old in _solutions(source)]
            assert len(found) == 1 and run.answers[found[0]].count(old) == 1, \
                (grade_id, description, old)
            sources = list(run.answers)
            sources[found[0]] = sources[found[0]].replace(old, new)
            with time_limit(60):
                errors = [run.run_cell(source) for source in sources]
                passed, report = run.check()
            rows.append({"check": grade_id, "slip": description, "passed": passed,
                         "cell failed": any(errors), "first line": first_line(report),
                         "word": word, "lines": len(report.splitlines())})
            for source in run.answers:  # the right answer back, for the next slip
                run.run_cell(source)
    return rows


def _solutions(source):
    return "\n".join(_SOLUTION.findall(source))


def dump(rows):
    return "\n".join(json.dumps(row) for row in rows)
