"""The workbook's exercises: every check fails on its stub and passes on its solution.

The learner's notebooks are the student versions of ``notebooks/solutions/`` (see
``scripts/exercises.py``). nbval re-executes the learner's notebooks in the test command (and
both sets in ``make test-portable``) and proves that their committed outputs are what they
produce; this file proves that the teacher's lesson cells store the same outputs, and that
the outputs say what they must: each check cell reports "all ... cases right" in the
solutions and not in the learner's notebook, where the stubs stand. It also proves that
every function and class the learner writes is read by a check (``Checker(yours=...)``), and
runs checks against wrong answers that once passed them (:func:`run_check` runs one check
cell with the few cells it needs).
"""

import ast
import importlib.util
import inspect
import json
import os
import re
import textwrap
from pathlib import Path

import nbformat
import pytest

from tensorlib.course import exercises
from tensorlib.course.checks import history, progress
from tensorlib.course.checks.registry import check_named
from tensorlib.course.exercises import Checker

from check_runs import SLIPS as SLIPS_FOLDER
from check_runs import CheckRun, TimeLimit, run_check, slip_rows, slips_of, time_limit
from helpers import sanitize

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("workbook_exercises",
                                              ROOT / "scripts" / "exercises.py")
workbook = importlib.util.module_from_spec(spec)
spec.loader.exec_module(workbook)

SOLUTIONS = sorted(workbook.SOLUTIONS.glob("[0-9][0-9]*_*.ipynb"))
NOTEBOOKS = workbook.NOTEBOOKS
# "all 1 case right", "all 4 cases right", "all 12 cases right" (never "all 1 cases")
ALL_RIGHT = re.compile(r"^[^\n]+: all (1 case|\d*[02-9] cases|\d+1 cases) right\.$", re.MULTILINE)
NOT_DONE = re.compile(r"^[^\n]+: not done yet\.\n    Write your code in place of ", re.MULTILINE)


def check_cells(notebook):
    """The graded cells: the core pieces' checks (grade ids pcNN-...) and the exercises'
    (exNN-...), in order."""
    return [cell for cell in notebook.cells
            if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade")]


def is_exercise(cell):
    return cell.metadata["nbgrader"]["grade_id"].startswith("ex")


def printed(cell):
    return "".join(output.get("text", "") for output in cell.get("outputs", []))


def test_there_are_solutions_and_every_learner_notebook_is_their_student_version():
    assert SOLUTIONS, "no notebooks/solutions/NN_*.ipynb"
    assert workbook.mismatches() == []


def test_every_learner_notebook_has_a_teachers_copy_with_exercises():
    learner = sorted(path.name for path in workbook.NOTEBOOKS.glob("[0-9][0-9]*_*.ipynb"))
    assert learner and learner == [path.name for path in SOLUTIONS], \
        "each notebooks/NN_*.ipynb needs notebooks/solutions/NN_*.ipynb (and nothing else there)"


# Lesson cells whose output shows the learner's own piece (the stub's fallback in the learner's
# copy, the answer in the teacher's), so the two copies differ there by design.
SHOWS_THE_LEARNERS_PIECE = {("14_transformer_block_by_hand", 'draw_module(block, name="block")'),
                            ("04_tensor_autograd", "if unbroadcast_in_use is unbroadcast_by_hand:"),
                            ("04_tensor_autograd", "if waiting:"),
                            ("12c_convolutions", "if loops_in_use is conv1d_loops:                 "
                                                 "    # your loops passed their check: time them")}


def compared_text(cell):
    """What nbval compares of a cell's outputs (text, after the project's sanitize rules)."""
    parts = []
    for output in cell.get("outputs", []):
        if "text" in output:
            parts.append(output["text"])
        elif output.get("output_type") == "error":
            parts.append(f"{output['ename']}: {output['evalue']}")
        else:
            parts.append(output.get("data", {}).get("text/plain", ""))
    return sanitize("".join(parts))


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda path: path.stem)
def test_the_teachers_copy_shows_the_learners_lesson_outputs(path):
    """make test runs the learner's copies under nbval, and make test-portable both: the
    teacher's copy runs the same lessons with the answers in, so every lesson cell (not an
    answer, not a check, not marked NBVAL_IGNORE_OUTPUT) stores what the learner's stores."""
    solutions = nbformat.read(path, as_version=4)
    learner = nbformat.read(workbook.learner_notebook(path), as_version=4)
    pairs = [(ours, theirs) for ours, theirs in zip(learner.cells, solutions.cells, strict=True)
             if ours.cell_type == "code" and not theirs.metadata.get("nbgrader", {}).get("grade")
             and not theirs.metadata.get("nbgrader", {}).get("solution")
             and "NBVAL_IGNORE_OUTPUT" not in ours.source]
    assert pairs
    for ours, theirs in pairs:
        assert ours.source == theirs.source
        if any((path.stem, line) in SHOWS_THE_LEARNERS_PIECE for line in ours.source.splitlines()):
            continue
        assert compared_text(ours) == compared_text(theirs), (path.stem, ours.source[:80])


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda path: path.stem)
def test_each_check_passes_on_the_solution_and_fails_on_the_stub(path):
    solutions = nbformat.read(path, as_version=4)
    learner = nbformat.read(workbook.learner_notebook(path), as_version=4)
    solved, stubbed = check_cells(solutions), check_cells(learner)
    exercises = [cell for cell in solved if is_exercise(cell)]
    assert 2 <= len(exercises) <= 4, f"{path.name}: {len(exercises)} exercises, not 2-4"
    assert all(cell.metadata["nbgrader"]["grade_id"].startswith(("ex", "pc")) for cell in solved)
    assert len(stubbed) == len(solved)
    solution_cells = [cell for cell in solutions.cells
                      if cell.metadata.get("nbgrader", {}).get("solution")]
    assert len(solution_cells) >= len(exercises)  # one cell may hold two pieces
    for cell in solution_cells:
        assert "### BEGIN SOLUTION" in cell.source
    for solved_cell, stubbed_cell in zip(solved, stubbed, strict=True):
        grade_id = solved_cell.metadata["nbgrader"]["grade_id"]
        assert ALL_RIGHT.search(printed(solved_cell)), (grade_id, printed(solved_cell))
        grading = re.search(r"^assert (check_\w+)\.passed$", solved_cell.source, re.M)
        assert grading, grade_id  # the grading line, hidden from learners
        assert "assert " not in stubbed_cell.source
        assert workbook.check_cell(grade_id, stubbed_cell.source).source == solved_cell.source
        learner_says = printed(stubbed_cell)
        assert NOT_DONE.match(learner_says) and not ALL_RIGHT.search(learner_says), \
            (grade_id, learner_says)
        if not is_exercise(solved_cell):  # a core piece: the safety net's line follows
            assert "From here on the notebook uses your" in printed(solved_cell), grade_id
            assert "not done yet, so from here on the notebook uses " in learner_says, grade_id
        assert not stubbed_cell.get("outputs") or all(
            output.get("output_type") != "error" for output in stubbed_cell.outputs)


def test_grade_ids_are_unique_across_the_workbook():
    ids = [cell.metadata["nbgrader"]["grade_id"] for path in SOLUTIONS
           for cell in nbformat.read(path, as_version=4).cells if "nbgrader" in cell.metadata]
    assert len(ids) == len(set(ids))


def test_the_student_version_replaces_solutions_and_drops_hidden_tests():
    solution = workbook.solution_cell("t-1", "def f(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n"
                                             "    ### END SOLUTION\n")
    assert workbook.student_source(solution) == ("def f(x):\n    # YOUR CODE HERE\n"
                                                 "    raise NotImplementedError()")
    check = workbook.check_cell("t-2", "loops_in_use = check_loops(loops)")
    assert "### BEGIN HIDDEN TESTS\nassert check_loops.passed\n### END HIDDEN TESTS" in \
        check.source
    assert workbook.student_source(check) == "loops_in_use = check_loops(loops)"
    with pytest.raises(ValueError, match="no ### BEGIN/END SOLUTION region"):
        workbook.solution_cell("t-3", "x = 1")
    for not_one_call in ("print(1)", "check_loops(loops)\nprint(1)"):
        with pytest.raises(ValueError, match="one line calling a check function"):
            workbook.check_cell("t-4", not_one_call)


# ------------------------------------------------------------------------------ the checker
def test_a_checker_reports_right_wrong_raised_and_not_done(capsys):
    checker = Checker("Exercise 9 (demo)")
    with checker.case("one plus one"):
        checker.equal(1 + 1, 2)
    with checker.case("a wrong sum", hint="add, do not multiply"):
        checker.equal(2 * 3, 5, "the sum")
    with checker.case("code that fails"):
        [][1]
    with checker.case("an unsolved stub"):
        raise NotImplementedError()
    assert not checker.report() and not checker.passed
    report = capsys.readouterr().out
    lines = report.splitlines()
    assert lines[:4] + lines[5:] == [
        "Exercise 9 (demo): 1 of 4 cases right.",
        "  hint: add, do not multiply",  # the first wrong case's hint, then that case in full
        "  WRONG: a wrong sum",
        "    the sum: expected 5, received 6",
        "  not done yet: an unsolved stub"]
    assert lines[4].startswith("  WRONG: code that fails: your code raised IndexError: list "
                               "index out of range (in test_a_checker_reports_right_wrong")


def test_a_checker_says_all_right_or_not_done_in_one_line(capsys):
    import numpy as np

    done = Checker("Exercise 1")
    with done.case("close arrays"):
        done.close(np.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-9]))
    assert done.report() and done.passed
    stub = Checker("Exercise 2")
    with stub.case("anything"):
        raise NotImplementedError()
    assert not stub.report()
    assert not Checker("Exercise 3").passed  # no case at all is not a pass
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Exercise 1: all 1 case right."
    assert lines[1].startswith("Exercise 2: not done yet.")
    one_wrong = Checker("Exercise 5")
    with one_wrong.case("one"):
        one_wrong.equal(1, 2)
    one_wrong.report()
    assert capsys.readouterr().out.startswith("Exercise 5: 0 of 1 case right.\n")
    assert ALL_RIGHT.fullmatch("Exercise 6: all 21 cases right.")
    assert not ALL_RIGHT.search("Exercise 6: all 1 cases right.")
    wrong = Checker("Exercise 4")
    with wrong.case("shapes"):
        wrong.close(np.zeros(2), np.zeros(3), "the output")
    with wrong.case("values"):
        wrong.close(np.ones(2), np.zeros(2), "the output")
    wrong.report()
    report = capsys.readouterr().out
    assert "    the output: expected shape (3,), received shape (2,)\n" in report
    assert "  WRONG: values: the output (shape (2,)): 2 of 2 entries differ\n" in report


def notebook_namespace(*cells):
    """A namespace in which each source runs as a notebook cell does: in order, in one
    namespace, each compiled under a file name of its own."""
    namespace = {"__name__": "__main__"}
    for index, source in enumerate(cells):
        exec(compile(textwrap.dedent(source), f"<cell {index}>", "exec"), namespace)
    return namespace


def borrowed(checker):
    """The detail of the checker's first result when it is the names case, else None."""
    first = checker.results[0] if checker.results else exercises._Result("", "")
    return first.detail if first.description.startswith("the names ") and \
        first.outcome == "wrong" else None


def test_yours_fails_a_function_that_reads_data_it_never_sets(capsys):
    cells = notebook_namespace("""
        import numpy as np
        from tensorlib.nn import Linear
        rank, stoi, model = 3, {"a": 1}, Linear(2, 2)
        """, """
        def lora(x, A):
            return x * rank / len(A) + np.sum(A)       # rank: the notebook's, not A.shape[0]

        def smoothed(logits, epsilon):
            return logits - q                          # q: set nowhere

        def encode(text):
            return [stoi[ch] for ch in text]           # stoi: meant to be read (reads=)

        def predict(x):
            return model(x)                            # a model is data, callable or not

        def fine(x, A):
            rows = A.shape[0]
            return [np.tanh(v) * rows for v in sorted(x)] + [Linear, helper_elsewhere]
        """)
    cells.update(notebook_namespace("def helper_elsewhere():\n    return rank\n"))
    lora = Checker("lora", yours=cells["lora"])
    assert "lora reads `rank` without setting it, so it gets what a cell above left under " \
           "that name: 3; compute it from the arguments" in borrowed(lora)
    assert "smoothed reads `q` without setting it, and no cell sets it either" in \
        borrowed(Checker("s", yours=cells["smoothed"]))
    assert "encode reads `stoi`" in borrowed(Checker("e", yours=cells["encode"]))
    assert Checker("e", yours=cells["encode"], reads=("stoi",)).results == []
    assert "predict reads `model`" in borrowed(Checker("p", yours=cells["predict"]))
    # modules, classes, functions (one of another cell is not read) and builtins are code
    assert Checker("f", yours=(cells["fine"],)).results == []
    lora.report()
    report = capsys.readouterr().out
    assert report.startswith("lora: 0 of 1 case right.\n  WRONG: the names lora reads\n")
    with pytest.raises(TypeError, match="functions and classes"):
        Checker("x", yours=3)


def test_yours_reads_methods_inner_functions_and_helpers_of_the_same_cell():
    cells = notebook_namespace("""
        c, scale, shape = 2.0, 0.5, (3,)
        """, """
        class SmoothClamp:
            @staticmethod
            def backward(ctx, grad):
                return grad * c                        # c: the check's loop variable

            @property
            def size(self):
                return shape

            def forward(self, x):
                def inner(v):
                    return v * scale
                return [inner(v) for v in x]

        def uses_helper(x):
            return helper(x)

        def helper(x):
            return x + c

        def stub(x):
            # YOUR CODE HERE
            raise NotImplementedError()
        """)
    detail = borrowed(Checker("clamp", yours=cells["SmoothClamp"]))
    for line in ("SmoothClamp.backward reads `c`", "SmoothClamp.size reads `shape`",
                 "SmoothClamp.forward reads `scale`"):
        assert line in detail
    assert "helper reads `c`" in borrowed(Checker("h", yours=cells["uses_helper"]))
    stub = Checker("stub", yours=cells["stub"])
    with stub.case("anything"):
        cells["stub"](1)
    assert stub.status == "not started"


def test_a_name_the_code_never_defines_is_reported_as_such(capsys):
    cells = notebook_namespace("""
        def lora(A):
            return A * rank

        def smoothed(p):
            if p > 0:
                q = p
            return p - q
        """)
    checker = Checker("Exercise 2 (lora_linear)")
    with checker.case("rank from A", hint="rank is A.shape[0]"):
        cells["lora"](2)
    with checker.case("a q read before it is set"):
        cells["smoothed"](-1)
    checker.report()
    report = capsys.readouterr().out
    assert ("  likely mistake: `rank` is never set: a typo, or a name from another cell?\n"
            "  WRONG: rank from A\n    your code reads `rank`, which it never defines (in lora, "
            "line 3)\n") in report
    assert "hint: rank is A.shape[0]" not in report  # a detector fired: no general hint
    assert "your code reads a name before it sets it (cannot access local variable 'q'" in report


# --------------------------------------------------------------- safety net and progress
def test_use_hands_on_the_learners_piece_only_when_its_check_passed(capsys):
    class Package:
        pass

    right = Checker("Value: + and *", piece=True)
    with right.case("2 + 3"):
        right.equal(2 + 3, 5)
    assert right.use("mine", Package, "Value") == "mine"
    assert right.use("mine", Package, "Value", given=False) is Package  # an earlier piece
    stub = Checker("Value: backward", piece=True)
    with stub.case("the worked example"):
        raise NotImplementedError()
    wrong = Checker("Value: tanh", piece=True)
    with wrong.case("tanh(0)"):
        wrong.equal(1.0, 0.0)
    assert stub.use("mine", Package, "backward") is Package
    assert wrong.use("mine", Package, "tanh") is Package
    assert Checker("nothing checked").use("mine", Package, "x") is Package
    assert stub.use("mine", "reference", "step", package_name="the check's own") == "reference"
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "From here on the notebook uses your Value."
    assert lines[1] == ("Your Value passed its check, but a piece it is built on did not, so "
                        "from here on the notebook uses tensorlib's.")
    assert lines[2] == ("Your backward: not done yet, so from here on the notebook uses "
                        "tensorlib's.")
    assert lines[3] == ("Your tanh: not right yet, so from here on the notebook uses "
                        "tensorlib's.")
    assert lines[-1] == ("Your step: not done yet, so from here on the notebook uses the "
                         "check's own.")
    with pytest.raises(ValueError, match="needs a name"):
        Checker("  ")


def test_a_check_of_what_the_safety_net_handed_out_is_not_done(tmp_path, monkeypatch,
                                                               capsys):
    """After a failed check, use() hands the package's piece out under the learner's name:
    checking that name again says "not done yet" and keeps the recorded verdict."""
    import numpy as np

    from tensorlib.course import exercises

    monkeypatch.setattr(exercises, "_HANDED_OUT", [])
    monkeypatch.setattr(exercises, "_recording", {})
    exercises.record_progress("04_tensor_autograd", tmp_path)
    cells = notebook_namespace("""
        def unbroadcast_by_hand(grad, shape):
            return grad                                  # wrong: never sums
        """)
    reference = lambda grad, shape: grad.sum(axis=0)  # noqa: E731 (a check cell's fallback)
    for _ in range(3):  # the learner's wrong piece, then the check run twice more
        checker = Checker("unbroadcast", piece=True, yours=cells["unbroadcast_by_hand"])
        with checker.case("(2, 3) to (3,)"):
            checker.close(cells["unbroadcast_by_hand"](np.ones((2, 3)), (3,)), np.full(3, 2.0))
        assert not checker.report()
        cells["unbroadcast_by_hand"] = checker.use(cells["unbroadcast_by_hand"], reference,
                                                   "unbroadcast_by_hand")
    out = capsys.readouterr().out
    assert out.count("unbroadcast: not done yet.\n    unbroadcast_by_hand is not yours: it "
                     "holds tensorlib's, which the safety net handed out when this check last "
                     "ran.\n") == 2
    assert "all 1 case right" not in out and "uses your" not in out
    assert exercises.read_progress(tmp_path / ".progress" / "04_tensor_autograd.json") == {
        "unbroadcast": {"kind": "piece", "status": "started"}}  # the verdict on the learner's
    from tensorlib.nn import Linear
    imported = Checker("Linear", piece=True, yours=Linear)  # the package's own, imported
    assert imported.holds_package == ("Linear", "tensorlib's") and imported.status == \
        "not started"
    vocabulary = type("Vocabulary", (), {"encode": lambda self, text: list(text)})()
    assert Checker("encode", yours=vocabulary.encode).results == []  # a method is code too


def test_a_report_names_the_likely_mistake_and_summarises_arrays(capsys):
    import numpy as np

    expected = np.arange(1.0, 21.0).reshape(4, 5)
    checker = Checker("a factor")
    with checker.case("scores", hint="divide by sqrt(D)"):
        checker.close(expected * 2, expected, "the scores",
                      mistakes={"the scores are not divided by sqrt(D)": lambda: expected * 2})
    checker.report()
    assert capsys.readouterr().out.splitlines() == [
        "a factor: 0 of 1 case right.",
        "  likely mistake: the scores are not divided by sqrt(D)",  # named: no general hint
        "  WRONG: scores",
        "    the scores (shape (4, 5)): 20 of 20 entries differ; the first at [0, 0]: expected "
        "1, received 2",
        "    entries [0, 0:5]: expected [1., 2., 3., 4., 5.], received [ 2.,  4.,  6.,  8., 10.]",
        "    largest difference 20 at [3, 4]"]
    checker = Checker("a factor, not named by the check")
    with checker.case("scores", hint="divide by sqrt(D)"):
        checker.close(expected * 2, expected, "the scores")
    assert checker.report_lines()[1] == ("  likely mistake: every entry is 2 times the expected "
                                         "one: a factor missing or one too many (a mean for a "
                                         "sum, a 1/N, a 2)?")
    capsys.readouterr()
    for received, says in [(-expected, "every entry has the opposite sign"),
                           (expected.reshape(5, 4), "the right numbers in the shape (5, 4) "
                                                   "instead of (4, 5): a reshape")]:
        checker = Checker("relation")
        with checker.case("x"):
            checker.close(received, expected, "the output")
        checker.report()
        assert says in capsys.readouterr().out
    square = expected[:, :4]
    checker = Checker("relation")
    with checker.case("x"):
        checker.close(square.T, square, "the output")
    with checker.case("a nan", hint="no 0/0"):
        checker.close(np.log(np.array([-1.0, 1.0])), np.zeros(2), "the log")
    checker.report()
    out = capsys.readouterr().out
    assert "it is the expected result with its last two axes swapped: a transpose?" in out
    assert "  WRONG: a nan: the log (shape (2,)): 1 of 2 entries differ\n" in out
    checker.results.reverse()  # the nan case first: in full, with numpy's warning
    assert ("nan received at [0] (1 entry): a row of -inf before a softmax, or 0/0?\n"
            "    warned: RuntimeWarning: invalid value encountered in log\n  WRONG: x: ") in \
        "\n".join(checker.report_lines())


def test_a_report_of_many_wrong_cases_stays_within_its_line_budget():
    import numpy as np

    from tensorlib.course.exercises import REPORT_LINES

    checker = Checker("many")
    for index in range(40):  # two kinds of wrong case, taking turns
        shape = (6, 7, 8) if index % 2 else (3,)
        with checker.case(f"case {index}", hint=f"hint {index}"):
            checker.close(np.full(shape, 0.5), np.ones(shape) + np.arange(shape[-1]),
                          "the output")
    lines = checker.report_lines()
    assert len(lines) <= REPORT_LINES and lines[-1].endswith(" ...")  # names, wrapped, cut
    assert lines[-4].startswith("  also not right (39 cases, fix the first above, then run "
                                "this again): case 1, case 2, case 3")
    assert lines[1] == "  hint: hint 0" and all(len(line) < 200 for line in lines)
    same = Checker("the same mistake in every case")
    for index in range(24):
        with same.case(f"d_{index}"):
            raise ValueError("operands could not be broadcast together")
    lines = same.report_lines()  # the same line for 23 cases: said once
    assert len(lines) == 5 and lines[0] == "the same mistake in every case: 0 of 24 cases right."
    assert lines[1].startswith("  likely mistake: shapes that do not fit together")
    assert lines[2] == "  WRONG: d_0"
    lines = lines[1:]
    assert lines[2].startswith("    your code raised ValueError: operands could not be "
                               "broadcast together (in test_a_report_of_many")
    assert lines[3].startswith("  WRONG: 23 cases (d_1, d_2, d_3, d_4, d_5, d_6, d_7, d_8, d_9, "
                               "d_10, d_11, ...: your code raised ValueError: operands")


def test_reports_are_recorded_per_notebook_beside_it(tmp_path, monkeypatch, capsys):
    from tensorlib.course import exercises

    monkeypatch.setattr(exercises, "_recording", {})
    unrecorded = Checker("Exercise 0")
    with unrecorded.case("x"):
        pass
    unrecorded.report()
    assert not (tmp_path / ".progress").exists()  # nothing before record_progress

    assert exercises.record_progress("01_scalar_autograd", tmp_path) is None
    path = tmp_path / ".progress" / "01_scalar_autograd.json"
    piece = Checker("Value: + and *", piece=True)
    with piece.case("x"):
        raise NotImplementedError()
    piece.report()
    exercise = Checker("Exercise 1 (cosine)")
    with exercise.case("x"):
        exercise.equal(1, 2)
    exercise.report()
    assert exercises.read_progress(path) == {
        "Value: + and *": {"kind": "piece", "status": "not started"},
        "Exercise 1 (cosine)": {"kind": "exercise", "status": "started"}}
    with piece.case("y"):  # run again, now with a right case too: still not done
        pass
    piece.report()
    piece.results = [exercises._Result("x", "right")]
    piece.report()
    assert list(exercises.read_progress(path).items())[0] == (
        "Value: + and *", {"kind": "piece", "status": "done"})
    assert not list((tmp_path / ".progress").glob("*.tmp"))
    with pytest.raises(ValueError, match="without folders"):
        exercises.record_progress("../elsewhere")


def _notebook_with_checks(path, *checks):
    """A notebook file whose graded cells build ``Checker(name, piece=...)`` for each
    (name, piece) of ``checks``, in order."""
    notebook = nbformat.v4.new_notebook()
    for name, piece in checks:
        cell = nbformat.v4.new_code_cell(f"checker = Checker({name!r}, piece={piece})\n"
                                         "passed = checker.report()")
        cell.metadata["nbgrader"] = {"grade": True, "grade_id": f"id-{len(notebook.cells)}"}
        notebook.cells.append(cell)
    nbformat.write(notebook, path)


def test_the_progress_command_lists_every_check_in_notebook_order_with_a_total(tmp_path,
                                                                               capsys):
    from tensorlib.command_line.main import main
    from tensorlib.course import exercises

    _notebook_with_checks(tmp_path / "01_scalar_autograd.ipynb", ("Value: + and *", True),
                          ("Exercise 1 (cosine)", False), ("Value: backward", True))
    _notebook_with_checks(tmp_path / "02_scalar_mlp.ipynb", ("Neuron", True))
    _notebook_with_checks(tmp_path / "03_tensors_and_strides.ipynb", ("transpose", True),
                          ("Exercise 1 (diagonal)", False))
    _notebook_with_checks(tmp_path / "03a_no_checks.ipynb")
    assert progress.checks_in(tmp_path / "01_scalar_autograd.ipynb") == [
        ("Value: + and *", "piece"), ("Exercise 1 (cosine)", "exercise"),
        ("Value: backward", "piece")]
    exercises.record_progress("01_scalar_autograd", tmp_path)
    todo = Checker("Exercise 1 (cosine)")  # reported first, listed where its cell is
    with todo.case("x"):
        raise NotImplementedError()
    todo.report()
    done = Checker("Value: + and *", piece=True)
    with done.case("x"):
        pass
    done.report()
    (tmp_path / ".progress" / "02_scalar_mlp.json").write_text("not json")
    capsys.readouterr()
    assert main(["progress", str(tmp_path)]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == [
        "01_scalar_autograd: core pieces 1 of 2 done, exercises 0 of 1 done",
        "    done          piece     Value: + and *",
        "    not started   exercise  Exercise 1 (cosine)",
        "    not run yet   piece     Value: backward",
        "02_scalar_mlp: its progress file is unreadable (run its check cells again)",
        "02_scalar_mlp: core pieces 0 of 1 done",
        "    not run yet   piece     Neuron",
        "03_tensors_and_strides: core pieces 0 of 1 done, exercises 0 of 1 done",
        "    not run yet   piece     transpose",
        "    not run yet   exercise  Exercise 1 (diagonal)",
        "the workbook: core pieces 1 of 4 done, exercises 0 of 2 done"]
    assert main(["progress", str(tmp_path / "absent")]) == 2


def test_a_check_cell_that_calls_a_check_function_is_read_by_its_name(tmp_path):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [workbook.check_cell("pc-1", "loops = check_conv1d_loops(conv1d_loops)")]
    nbformat.write(notebook, tmp_path / "12c_convolutions.ipynb")
    assert progress.checks_in(tmp_path / "12c_convolutions.ipynb") == [("conv1d_loops",
                                                                         "piece")]


def test_workbook_progress_reads_each_notebooks_checks_and_statuses(tmp_path):
    _notebook_with_checks(tmp_path / "01_first.ipynb", ("A", True), ("B", False))
    _notebook_with_checks(tmp_path / "02_second.ipynb", ("C", True))
    _notebook_with_checks(tmp_path / "02a_no_checks.ipynb")
    (tmp_path / "notes.ipynb").write_text("not a workbook notebook")
    (tmp_path / ".progress").mkdir()
    (tmp_path / ".progress" / "01_first.json").write_text(json.dumps(
        {"checks": {"B": {"kind": "exercise", "status": "done"}}}))
    (tmp_path / ".progress" / "02_second.json").write_text('{"checks": [1]}')
    assert progress.workbook_progress(tmp_path) == [
        progress.NotebookProgress("01_first", [("A", "piece", "not run yet"),
                                                ("B", "exercise", "done")]),
        progress.NotebookProgress("02_second", [("C", "piece", "not run yet")],
                                   readable=False)]
    with pytest.raises(ValueError, match="holds no workbook notebooks"):
        progress.workbook_progress(tmp_path / ".progress")


def test_done_counts_count_each_kind():
    checks = [("A", "piece", "done"), ("B", "piece", "failed"), ("C", "exercise", "done")]
    assert progress.done_counts(checks) == {"piece": (1, 2), "exercise": (1, 1)}
    assert progress.done_counts([]) == {"piece": (0, 0), "exercise": (0, 0)}


def test_every_notebook_with_checks_records_its_progress():
    for path in SOLUTIONS:
        sources = [cell.source for cell in nbformat.read(path, as_version=4).cells
                   if cell.cell_type == "code"]
        assert f'record_progress("{path.stem}")' in "\n".join(sources), path.stem
    checks = []
    for path in sorted(NOTEBOOKS.glob("[0-9][0-9]*_*.ipynb")):
        names = progress.checks_in(path)
        assert len(set(names)) == len(names), path.stem  # a notebook's progress is by name
        checks += names
    pieces = [name for name, kind in checks if kind == "piece"]
    assert len(pieces) == 48 and len(checks) - len(pieces) == 97


# ------------------------------------------------------------ checks against wrong answers
def _solved_names(source):
    """The functions and classes a solution cell defines that hold a solution region."""
    tree = ast.parse(source)
    return [node.name for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.ClassDef))
            and "### BEGIN SOLUTION" in ast.get_source_segment(source, node)]


def _yours_names(source):
    """The names a check cell hands to its check as the learner's pieces: the arguments of a
    check function's call whose parameters its ``yours`` names, or a ``Checker``'s
    ``yours=``."""
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        check = check_named(getattr(node.func, "id", ""))
        if check is not None:
            parameters = list(inspect.signature(check.__wrapped__).parameters)[1:]
            given = dict(zip(parameters, node.args, strict=False))
            given.update({keyword.arg: keyword.value for keyword in node.keywords})
            return [argument.id for name, argument in given.items()
                    if name in check.learner_names and isinstance(argument, ast.Name)]
        if getattr(node.func, "id", None) == "Checker":
            yours = [keyword.value for keyword in node.keywords if keyword.arg == "yours"]
            return [name.id for value in yours for name in ast.walk(value)
                    if isinstance(name, ast.Name)]
    return []


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda path: path.stem)
def test_every_function_and_class_the_learner_writes_is_read_by_a_check(path):
    """Each def or class holding a solution region is in the ``yours=`` of a check after it,
    so its code is read for names it would borrow from the notebook."""
    solved, read = [], []
    for cell in nbformat.read(path, as_version=4).cells:
        grading = cell.metadata.get("nbgrader", {})
        if grading.get("solution"):
            solved += _solved_names(cell.source)
        if grading.get("grade"):
            names = _yours_names(cell.source)
            assert names and set(names) <= set(solved), (grading["grade_id"], names, solved)
            read += names
    assert solved and sorted(set(read)) == sorted(set(solved))


# The wrong answers that passed the checks before issue 30, each a change to the solution:
# a check's own names (N, V, q, rank) visible to the learner's function, zero biases, small
# logits, fresh gradients.
WRONG_ANSWERS = {
    "05 label smoothing without N, V = logits.shape": (
        "05_matmul_softmax_cross_entropy", "ex05-3-check", [("    N, V = logits.shape\n", "")]),
    "05 label smoothing without its target q": (
        "05_matmul_softmax_cross_entropy", "ex05-3-check",
        [("    q = (1 - epsilon) * np.eye(V)[targets] + epsilon / V\n", "")]),
    "17 lora_linear without rank = A.shape[0]": (
        "17_lora", "ex17-2-check", [("    rank = A.shape[0]\n", "")]),
    "17 lora_linear with - bias": (
        "17_lora", "ex17-2-check",
        [("weight.transpose() + bias +", "weight.transpose() - bias +")]),
    "17 lora_linear without the bias": (
        "17_lora", "ex17-2-check", [("weight.transpose() + bias +", "weight.transpose() +")]),
    "19 sample_next with exp(z + z.max())": (
        "19_generation_and_kv_cache", "ex19-1-check",
        [("np.exp(z - z.max(", "np.exp(z + z.max(")]),
    "20 accumulate without optimizer.zero_grad()": (
        "20_performance", "ex20-3-check", [("    optimizer.zero_grad()\n", "")]),
}


@pytest.mark.filterwarnings("ignore:overflow encountered in exp:RuntimeWarning")  # exp(z + max)
@pytest.mark.parametrize("wrong", WRONG_ANSWERS, ids=lambda wrong: wrong)
def test_a_wrong_answer_fails_the_check_that_its_solution_passes(wrong, monkeypatch):
    notebook, grade_id, change = WRONG_ANSWERS[wrong]
    passed, report = run_check(notebook, grade_id, monkeypatch)
    assert passed and ALL_RIGHT.search(report), report
    passed, report = run_check(notebook, grade_id, monkeypatch, change)
    assert not passed and "WRONG: " in report and not ALL_RIGHT.search(report), report


# ------------------------------------------------------------- verdicts in any order of runs
def _grade_ids(kind):
    """(notebook, grade id) of every check cell of the workbook: its core pieces' ("pc") or
    its exercises' ("ex")."""
    return [(path.stem, cell.metadata["nbgrader"]["grade_id"]) for path in SOLUTIONS
            for cell in check_cells(nbformat.read(path, as_version=4))
            if cell.metadata["nbgrader"]["grade_id"].startswith(kind)]


CHECKS = _grade_ids("pc") + _grade_ids("ex")
STALE = ("did not run (SyntaxError", "stopped before defining it (RuntimeError")


def no_success(report):
    """Nothing in the report says the learner's code, as they last wrote it, is done: no
    "all right" but under a line saying the last edit did not run, and no safety net taking
    the learner's piece."""
    said_stale = any(words in " ".join(report.split()) for words in STALE)
    return (said_stale or not ALL_RIGHT.search(report)) and \
        "From here on the notebook uses your" not in report


def broken(source):
    """A learner's edit of an answer cell (or of its stub) that does not compile: a
    parenthesis left open at the end of its first line of the answer."""
    lines = source.splitlines()
    first = next(index for index, line in enumerate(lines)
                 if "BEGIN SOLUTION" in line or "YOUR CODE HERE" in line) + 1
    first = next(index for index in range(first, len(lines))
                 if lines[index].strip() and not lines[index].lstrip().startswith("#"))
    code, comment = (lines[first].split("  #", 1) + [None])[:2]
    lines[first] = code + " (" + ("" if comment is None else f"  #{comment}")
    return "\n".join(lines)


def defines_a_checked_piece(run, source):
    """Whether the cell ``source`` defines a name the check cell hands to its check."""
    return bool(history.defined_names(source) & set(_yours_names(run.check_source)))


SLIP_SECONDS = 25  # a wrong answer's cell and check; the slowest right one takes under 10 s here


# One-line changes to an answer, as a learner's slips are: an operator, a comparison, a
# transpose dropped, a constant or a truth value off.
SLIPS = [(" + ", " - "), (" - ", " + "), (" * ", " / "), (" / ", " * "), (" < ", " <= "),
         (" <= ", " < "), (" > ", " >= "), (" >= ", " > "), (".T", ""), ("True", "False"),
         ("False", "True"), ("-1", "-2"), ("(1, ", "(2, "), ("axis=0", "axis=1"),
         ("axis=-1", "axis=0"), ("[0]", "[1]"), ("0.0", "1.0"), ("+=", "="),
         (" not in ", " in "), ("reversed(", "list("), ("optimizer.zero_grad()", "pass"),
         ("schedule.step()", "pass"), ("self.final_norm(x)", "x")]


def wrong_answers(answers, most=8):
    """Up to ``most`` wrong answers made from the answer cells' solution regions: (the line,
    the line with one slip), each line changed once, in order."""
    found = []
    for source in answers:
        for region in re.findall(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", source, re.S):
            for line in region.splitlines():
                if line.lstrip().startswith("#") or source.count(line) != 1:
                    continue
                code, comment = (line.split("  #", 1) + [None])[:2]
                for old, new in SLIPS:
                    if old in code:  # the code, not its comment
                        slipped = code.replace(old, new, 1)
                        found.append((line, slipped if comment is None
                                      else f"{slipped}  #{comment}"))
                        break
    step = max(1, len(found) // most)
    return found[::step][:most]


class Recorded:
    """What the progress file of a check run says of its check (recording to a file of the
    test's own)."""

    def __init__(self, tmp_path, monkeypatch):
        self.path = tmp_path / ".progress" / "run.json"
        monkeypatch.setattr(exercises, "_recording", {"file": self.path})

    def status(self, run):
        """The status recorded for the check of ``run``, or None."""
        if not self.path.exists():
            return None
        name = progress.checks_in_cell(run.check_source)[0][0]
        return exercises.read_progress(self.path).get(name, {}).get("status")


@pytest.mark.rerun
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("notebook, grade_id", CHECKS, ids=[grade for _, grade in CHECKS])
def test_a_check_tells_the_truth_in_any_order_and_briefly(notebook, grade_id, monkeypatch,
                                                          tmp_path):
    """As a learner runs the cells, in IPython's shell, a check says what ran and records
    nothing false:

    - its piece's cell never run: one line naming the cell to run, nothing recorded;
    - on the learner's stub: "not done", and again on a second run, after an edit of the
      stub's cell that does not compile (saying the edit did not run), and after the stub's
      cell runs again;
    - the teacher's answer passes, twice, and is recorded "done"; then an edit of an answer
      cell that does not compile, and one that stops at an error before its definitions: the
      report says so before its verdict, the check does not pass and records "edit not run";
      the answer again passes;
    - a wrong answer, then an edit of it that does not compile: the same;
    - each wrong answer of :func:`wrong_answers`, run as a learner runs it, fails with a report
      of at most REPORT_LINES lines (and the safety net's line); the longest, and the wrong
      answers the check did not catch (a slip can leave an answer right: those are read by a
      person, not failed here), are added as a JSON line to the file named by
      $TENSORLIB_REPORT_TABLE, when it is set."""
    recorded = Recorded(tmp_path, monkeypatch)
    run = CheckRun(notebook, grade_id, monkeypatch, learner=True, run_answers=False)
    passed, report = run.first
    assert not passed and re.fullmatch(r"\w+ is not defined yet: run the (cell where you write "
                                       r"it \(above\)|cells above this one first .*), then this "
                                       r"one\.\n", report), report
    assert recorded.status(run) is None
    for source in run.answers:
        run.run_cell(source)
    stale = False  # whether the last edit of the stub's cell did not run
    for edit in (None, None, "broken", None, "stub"):  # None: the check run again
        if edit == "broken":
            assert [run.run_cell(broken(source)) for source in run.answers][0] is not None
            stale = any(defines_a_checked_piece(run, source) for source in run.answers)
        elif edit == "stub":
            for source in run.answers:
                run.run_cell(source)
            stale = False
        passed, report = run.check()
        assert not passed and no_success(report) and "not done yet" in report, (edit, report)
        assert (STALE[0] in " ".join(report.split())) == stale, (edit, report)
        assert recorded.status(run) == ("edit not run" if stale else "not started"), report

    run = CheckRun(notebook, grade_id, monkeypatch)
    for passed, report in (run.first, run.check()):
        assert passed and ALL_RIGHT.search(report) and not no_success(report), report
        assert recorded.status(run) == "done"
    answers = run.answers
    wrong = wrong_answers(answers)
    written = slips_of(notebook).get(grade_id, [])  # a slip a learner makes, that ends
    for edit, words in (("broken", STALE[0]), ("raise", STALE[1]), ("wrong", STALE[0])):
        if edit == "wrong":
            if not written:
                continue
            _, old, new, _ = written[0]
            with time_limit(SLIP_SECONDS):
                for source in answers:
                    run.run_cell(source.replace(old, new))
                passed, report = run.check()
            assert not passed, report
        for source in answers:
            run.run_cell(broken(source) if edit != "raise"
                         else "raise RuntimeError('a typo')\n" + source)
        passed, report = run.check()
        assert not passed and no_success(report), (edit, report)
        if any(defines_a_checked_piece(run, source) for source in answers):
            flowing = " ".join(report.split())  # the stale line is wrapped
            assert words in flowing and "the verdict below is about the version" in flowing, \
                (edit, report)
            assert recorded.status(run) == "edit not run", (edit, report)
        else:
            assert recorded.status(run) != "done", (edit, report)
        for source in answers:  # the right answer back
            run.run_cell(source)
    passed, report = run.check()
    assert passed and ALL_RIGHT.search(report), report

    longest, caught, passed_anyway, endless = 0, 0, [], []
    for line, slip in wrong:
        sources = [source.replace(line, slip) for source in answers]
        try:
            with time_limit(SLIP_SECONDS):
                if any([run.run_cell(source) for source in sources]):
                    continue  # the wrong answer's cell fails: the check says so
                passed, report = run.check()
        except TimeLimit:  # the slip made a loop endless: a check cannot help with that
            endless.append(slip.strip())
            for source in answers:
                run.run_cell(source)
            continue
        lines = [text for text in report.splitlines()
                 if not text.startswith(("From here on", "Your "))]
        assert len(lines) <= exercises.REPORT_LINES, report
        if passed:
            passed_anyway.append(slip.strip())
        else:
            caught += 1
            longest = max(longest, len(lines))
        for source in answers:  # the right answer back, for the next slip
            run.run_cell(source)
    table = os.environ.get("TENSORLIB_REPORT_TABLE")  # a file to add this check's row to
    if table:
        with open(table, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"check": grade_id, "longest": longest, "caught": caught,
                                     "passed anyway": passed_anyway, "endless": endless})
                         + "\n")


SLIPPED = [(notebook, grade_id) for notebook in sorted(path.stem for path in SLIPS_FOLDER.glob(
    "*.py")) for grade_id in slips_of(notebook)]


@pytest.mark.rerun
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("notebook, grade_id", SLIPPED, ids=[grade for _, grade in SLIPPED])
def test_the_first_line_of_a_report_names_the_slip(notebook, grade_id, monkeypatch):
    """Every slip written for a check (tests/course/slips/) fails it, and the first line
    under the report's header names it: the likely mistake, not a general hint."""
    rows = slip_rows(notebook, monkeypatch, only=grade_id)
    assert rows
    for row in rows:
        assert not row["passed"], row
        assert row["first line"].startswith("likely mistake: ") and \
            row["word"].lower() in row["first line"].lower(), row
        assert row["lines"] <= exercises.REPORT_LINES + 1, row


def test_every_core_piece_has_its_slips_written():
    """At least three slips for every core piece and one for every exercise."""
    for notebook, grade_id in CHECKS:
        count = len(slips_of(notebook).get(grade_id, []))
        assert count >= (3 if grade_id.startswith("pc") else 1), (grade_id, count)


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda path: path.stem)
def test_every_key_and_attribute_an_answer_sets_is_named_before_the_learner_writes_it(path):
    """A check reads what the answer returns and sets: each dict key written in an answer
    (``{"h": ...}``) and each attribute it sets (``self.layers = ...``) is named in the
    learner's copy before the end of the stub's cell (the task, the stub's docstring, or a
    cell above), never only in the check, which holds the answers."""
    learner = nbformat.read(workbook.learner_notebook(path), as_version=4)
    seen = []
    for ours, theirs in zip(learner.cells, nbformat.read(path, as_version=4).cells,
                            strict=True):
        seen.append(ours.source)
        if not theirs.metadata.get("nbgrader", {}).get("solution"):
            continue
        stated = "\n".join(seen)
        for region in re.findall(r"### BEGIN SOLUTION(.*?)### END SOLUTION", theirs.source,
                                 re.S):
            for key in re.findall(r"""["']([^"'\n]+)["']\s*:""", region):
                assert any(f"{quote}{key}{quote}" in stated for quote in "\"'`"), \
                    (theirs.metadata["nbgrader"]["grade_id"], key)
            for attribute in re.findall(r"self\.(\w+)\s*=[^=]", region):
                assert f"`{attribute}`" in stated or f"self.{attribute}" in stated, \
                    (theirs.metadata["nbgrader"]["grade_id"], attribute)
