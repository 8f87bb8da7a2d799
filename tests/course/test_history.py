"""tensorlib.course.checks.history: a check knows what the learner's cells last ran, in IPython's
own shell (this process's), as a notebook kernel runs cells."""

import contextlib
import io

import numpy as np
import pytest

from tensorlib.course import exercises
from tensorlib.course.checks import history
from tensorlib.course.checks.registry import CHECKS, HandOn, exercise_check, piece_check
from tensorlib.course.exercises import Checker

from check_runs import shell as fresh_shell


@pytest.fixture
def shell(monkeypatch, tmp_path):
    """IPython's shell, emptied and watched, recording progress to a file of the test's."""
    monkeypatch.setattr(exercises, "_recording", {"file": tmp_path / "run.json"})
    return fresh_shell()


def run(shell, source):
    """Run a cell as a learner does; what it printed."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(io.StringIO()):
        shell.run_cell(source, store_history=True)
    return printed.getvalue()


@pytest.fixture
def doubles_check():
    """A piece's check in the package: ``double(x)`` must be ``2 * x``."""
    @piece_check("double", yours="double", package_name="the check's own")
    def check_double(checker, double):
        with checker.case("2 * [1, 2, 3]", hint="multiply by 2"):
            checker.close(double(np.array([1.0, 2.0, 3.0])), np.array([2.0, 4.0, 6.0]),
                          "double(x)")
        return HandOn(double, lambda x: 2 * x)

    yield check_double
    del CHECKS["check_double"]


DOUBLE = "def double(x):\n    return 2 * x\n"


def test_defined_names_reads_a_cells_top_level_and_a_cell_that_does_not_parse():
    assert history.defined_names("import numpy as np\nfrom a import b as c\nx, (y, z) = 1, (2, 3)\n"
                                 "def f():\n    inner = 1\nclass C:\n    attribute = 2\n"
                                 "n: int = 3\nm += 1\nobject.attribute = 4\n") == \
        {"np", "c", "x", "y", "z", "f", "C", "n", "m"}
    assert history.defined_names("def conv(x:\n    return x\nclass Box:\n  pass\nsize = 3\n"
                                 "    indented = 1\nsize == 3\n") == {"conv", "Box", "size"}


def test_a_cell_run_is_noted_with_what_it_defined_and_where_it_stopped(shell):
    run(shell, DOUBLE)
    first = history.last_run("double")
    assert first.compiled and first.error is None and first.rebound == {"double"}
    assert first.bound["double"] is shell.user_ns["double"]
    assert history.stale_lines([shell.user_ns["double"]]) == []

    run(shell, "def double(x:\n    return 2 * x\n")  # an edit that does not compile
    lines = history.stale_lines([shell.user_ns["double"]])
    number = history.last_run("double").number
    assert lines == [f"Your last edit of the cell that defines double (In [{number}]) did not "
                     "run (SyntaxError, line 1):\n    fix it and run that cell; the verdict "
                     "below is about the version that last ran."]

    run(shell, "1 / 0\n" + DOUBLE)  # stops before the definition
    assert "stopped before defining it (ZeroDivisionError, line 1)" in \
        history.stale_lines([shell.user_ns["double"]])[0]

    run(shell, DOUBLE + "1 / 0\n")  # defines it, then fails: the new version is what runs
    assert history.stale_lines([shell.user_ns["double"]]) == []
    assert history.last_run("double").error == "ZeroDivisionError, line 3"

    run(shell, DOUBLE)
    earlier = shell.user_ns["double"]
    run(shell, DOUBLE)
    assert "is not the one the cell that defines double" in history.stale_lines([earlier])[0]
    assert history.stale_lines([3]) == [] and history.last_run("never") is None


def test_a_check_after_an_edit_that_did_not_run_says_so_and_records_no_progress(
        shell, doubles_check, tmp_path):
    run(shell, "from tensorlib.course.exercises import read_progress\n")
    shell.user_ns["check_double"] = doubles_check
    run(shell, DOUBLE)
    assert run(shell, "in_use = check_double(double)") == (
        "double: all 1 case right.\nFrom here on the notebook uses your double.\n")
    assert doubles_check.passed and shell.user_ns["in_use"] is shell.user_ns["double"]
    assert exercises.read_progress(tmp_path / "run.json") == {
        "double": {"kind": "piece", "status": "done"}}

    run(shell, "def double(x):\n    return 2 * x)\n")
    report = run(shell, "in_use = check_double(double)").splitlines()
    assert report[0].startswith("Your last edit of the cell that defines double (In [")
    assert report[-2:] == ["double: all 1 case right.", "Your double: your last edit did not "
                           "run, so from here on the notebook uses the check's own."]
    assert not doubles_check.passed and shell.user_ns["in_use"] is not shell.user_ns["double"]
    assert exercises.read_progress(tmp_path / "run.json")["double"]["status"] == "edit not run"

    run(shell, "def double(x):\n    return 3 * x\n")  # a wrong answer that runs: checked
    report = run(shell, "in_use = check_double(double)")
    assert report.startswith("double: 0 of 1 case right.\n  likely mistake: every entry is 1.5 "
                             "times the expected one")
    assert exercises.read_progress(tmp_path / "run.json")["double"]["status"] == "started"
    assert "hint:" not in report  # a detector named the slip: no general hint


def test_a_check_cell_run_before_its_pieces_cell_says_which_cell_to_run(shell, doubles_check):
    shell.user_ns["check_double"] = doubles_check
    assert run(shell, "in_use = check_double(double)") == (
        "double is not defined yet: run the cell where you write it (above), then this one.\n")
    assert run(shell, "in_use = check_double(double, scale)") .startswith("double is not")
    run(shell, DOUBLE)
    assert run(shell, "check_double(double, factor=scale)") == (
        "scale is not defined yet: run the cells above this one first (Run > Run All Above "
        "Selected Cell), then this one.\n")
    assert run(shell, "in_use = check_triple(double)") == (
        "check_triple is not defined yet: run the notebook's first cell (it imports the "
        "checks), then this one.\n")
    lesson = run(shell, "print(undefined_in_a_lesson_cell)")  # not a check: IPython's traceback
    assert "NameError" in lesson and "Traceback" in lesson


def test_an_exercise_check_returns_nothing_and_keeps_its_verdict(shell):
    @exercise_check("Exercise 1 (halve)", yours=("halve",))
    def check_halve(checker, halve):
        with checker.case("halve(4)"):
            checker.equal(halve(4), 2)

    try:
        shell.user_ns["check_halve"] = check_halve
        run(shell, "def halve(x):\n    return x // 2\n")
        assert run(shell, "check_halve(halve)") == "Exercise 1 (halve): all 1 case right.\n"
        assert check_halve.passed and check_halve.kind == "exercise"
        with pytest.raises(TypeError, match="yours names"):
            exercise_check("x", yours=("absent",))(lambda checker, present: None)
    finally:
        del CHECKS["check_halve"]


def test_a_checker_outside_ipython_says_nothing_of_history():
    history.forget()
    checker = Checker("a piece", piece=True, yours=lambda x: x)
    assert checker.stale == []
