"""nbgrader itself takes the teacher's copies: the release it makes is the learner's workbook,
and its autograder gives the teacher's copy full marks and the learner's copy none.

``scripts/exercises.py`` writes ``notebooks/NN_topic.ipynb`` as nbgrader's student version of
``notebooks/solutions/NN_topic.ipynb``; here nbgrader checks that claim. In a course directory
under pytest's temporary folder, ``source/workbook/`` holds every teacher's copy beside a copy
of ``notebooks/data/`` (the layout of ``notebooks/``, so that a notebook that reads
``data/surnames`` finds it), and

* ``nbgrader generate_assignment workbook`` must release, for every notebook, the cells (type
  and source, in order) of the learner's notebook in ``notebooks/``;
* ``nbgrader autograde workbook`` runs a few quick notebooks submitted twice: by the student
  "teacher" (the teacher's copies, which must score every graded cell's points) and by the
  student "learner" (the learner's notebooks as ``notebooks/`` ships them, which must score 0).
  Scores are read from nbgrader's gradebook.

nbgrader is an optional extra (``pip install -e ".[nbgrader]"``); without it this file skips.
"""

import difflib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

pytest.importorskip(
    "nbgrader",
    reason="nbgrader is not installed (it is the optional extra: pip install -e '.[nbgrader]'), "
           "so the teacher's copies are not run through nbgrader")
from nbgrader.api import Gradebook  # noqa: E402  (after the skip above)

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
SOLUTIONS = sorted((NOTEBOOKS / "solutions").glob("[0-9][0-9]*_*.ipynb"))
ASSIGNMENT = "workbook"
COURSE_ID = "tensorlib"
# Autograded: quick notebooks (a few seconds each) that between them have core pieces and
# exercises, each check cell worth its points.
AUTOGRADED = ["01_scalar_autograd", "03_tensors_and_strides", "05_matmul_softmax_cross_entropy"]

NBGRADER_CONFIG = f"""\
c = get_config()
c.CourseDirectory.course_id = {COURSE_ID!r}
c.Execute.timeout = 600  # seconds a cell may take (nbgrader's default, 30, is tight on slow CI)
"""


def nbgrader(course: Path, *args: str) -> str:
    """Run ``nbgrader ARGS`` in the course directory with this interpreter; its output."""
    bin_dir = str(Path(sys.executable).parent)  # nbgrader calls `alembic`, installed beside it
    home = course / ".jupyter"
    env = {**os.environ,
           "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
           # Only this course's settings and kernel: not the user's nbgrader config or kernels.
           "JUPYTER_CONFIG_DIR": str(home / "config"),
           "JUPYTER_DATA_DIR": str(home / "data"),
           "JUPYTER_PATH": str(home / "path")}
    done = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course, env=env,
                          capture_output=True, text=True, timeout=600)
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{output[-5000:]}"
    return output


def write_kernel(course: Path) -> None:
    """The kernel nbgrader runs the notebooks in ("python3", their kernelspec): this
    interpreter, whatever other "python3" kernel the machine has."""
    kernel = course / ".jupyter" / "path" / "kernels" / "python3"
    kernel.mkdir(parents=True)
    (kernel / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (tensorlib)", "language": "python"}))


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    """A course directory whose assignment holds every teacher's copy, released by nbgrader."""
    course = tmp_path_factory.mktemp("course")
    (course / "nbgrader_config.py").write_text(NBGRADER_CONFIG)
    write_kernel(course)
    source = course / "source" / ASSIGNMENT
    source.mkdir(parents=True)
    for path in SOLUTIONS:
        shutil.copy(path, source / path.name)
    shutil.copytree(NOTEBOOKS / "data", source / "data")
    nbgrader(course, "generate_assignment", ASSIGNMENT, "--create")
    return course


def cells(path: Path) -> list[tuple[str, str]]:
    return [(cell.cell_type, cell.source) for cell in nbformat.read(path, as_version=4).cells]


def graded_points(path: Path) -> dict[str, float]:
    """Each graded cell's grade id and points, from a teacher's copy."""
    graded = {}
    for cell in nbformat.read(path, as_version=4).cells:
        grading = cell.metadata.get("nbgrader", {})
        if grading.get("grade"):
            graded[grading["grade_id"]] = float(grading["points"])
    return graded


def errors(path: Path) -> list[tuple[str | None, str]]:
    """The errors an autograded notebook's cells raised: (grade id or None, exception name)."""
    return [(cell.metadata.get("nbgrader", {}).get("grade_id"), output.ename)
            for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "code"
            for output in cell.get("outputs", []) if output.output_type == "error"]


def test_there_are_teachers_copies_to_release():
    assert len(SOLUTIONS) >= 2, "no notebooks/solutions/NN_*.ipynb"
    assert all((NOTEBOOKS / f"{name}.ipynb").exists() for name in AUTOGRADED)


@pytest.mark.parametrize("solutions", SOLUTIONS, ids=lambda path: path.stem)
def test_generate_assignment_releases_the_learners_notebook(course, solutions):
    released = cells(course / "release" / ASSIGNMENT / solutions.name)
    learner = cells(NOTEBOOKS / solutions.name)
    assert len(released) == len(learner), \
        (f"nbgrader releases {len(released)} cells, notebooks/{solutions.name} has "
         f"{len(learner)}")
    differing = [index for index, (made, shipped) in enumerate(zip(released, learner, strict=True))
                 if made != shipped]
    if differing:
        index = differing[0]
        (made_type, made), (shipped_type, shipped) = released[index], learner[index]
        diff = "\n".join(difflib.unified_diff(
            made.splitlines(), shipped.splitlines(), f"nbgrader's release ({made_type})",
            f"notebooks/{solutions.name} ({shipped_type})", lineterm="", n=1))
        pytest.fail(f"{len(differing)} cells of notebooks/{solutions.name} differ from "
                    f"nbgrader's release of the teacher's copy, the first is cell {index}:\n"
                    + "\n".join(diff.splitlines()[:40]))


def test_autograde_gives_the_teacher_full_marks_and_the_learner_none(course):
    submissions = {"teacher": NOTEBOOKS / "solutions", "learner": NOTEBOOKS}
    for student, folder in submissions.items():
        submitted = course / "submitted" / student / ASSIGNMENT
        submitted.mkdir(parents=True)
        for name in AUTOGRADED:
            shutil.copy(folder / f"{name}.ipynb", submitted / f"{name}.ipynb")
    nbgrader(course, "autograde", ASSIGNMENT)  # every student's submission

    scores = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", COURSE_ID) as gradebook:
        for student in submissions:
            for name in AUTOGRADED:
                notebook = gradebook.find_submission_notebook(name, ASSIGNMENT, student)
                scores[student, name] = {
                    grade.name: (grade.score, grade.max_score, grade.needs_manual_grade)
                    for grade in notebook.grades}
    for name in AUTOGRADED:
        points = graded_points(NOTEBOOKS / "solutions" / f"{name}.ipynb")
        assert points and all(value > 0 for value in points.values()), name
        assert scores["teacher", name] == {
            grade_id: (value, value, False) for grade_id, value in points.items()}, \
            f"{name}: the teacher's copy does not get every graded cell's points"
        assert scores["learner", name] == {
            grade_id: (0.0, value, False) for grade_id, value in points.items()}, \
            f"{name}: the learner's notebook scores points before any exercise is done"
        # ... and for the right reason: the notebooks ran through, and only the hidden
        # `assert passed` of each check cell failed, where the learner's stubs stand.
        autograded = course / "autograded"
        assert errors(autograded / "teacher" / ASSIGNMENT / f"{name}.ipynb") == [], name
        assert errors(autograded / "learner" / ASSIGNMENT / f"{name}.ipynb") == [
            (grade_id, "AssertionError") for grade_id in points], name
