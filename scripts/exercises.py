"""The workbook's exercises: solutions kept apart, learner versions made from them.

``notebooks/solutions/NN_topic.ipynb`` is notebook NN as a teacher has it: the whole lesson,
and at its end the exercises with their solutions, in nbgrader's markup (so nbgrader can take
it as the source of an assignment):

* a solution cell (``nbgrader.solution``) marks the answer with ``### BEGIN SOLUTION`` and
  ``### END SOLUTION``;
* a check cell (``nbgrader.grade``, one point) is one call of a check function of the
  package (``tensorlib.course.checks.<topic>``, see ``tensorlib.course.checks.registry``): a core
  piece's ``loops_in_use = check_conv1d_loops(conv1d_loops)``, an exercise's
  ``check_diagonal_stride(diagonal_stride)``; its grading line, ``assert
  check_conv1d_loops.passed``, sits between ``### BEGIN HIDDEN TESTS`` and
  ``### END HIDDEN TESTS``.

``notebooks/NN_topic.ipynb``, the learner's notebook, is the student version nbgrader would
make of it: every solution replaced by ``# YOUR CODE HERE`` and ``raise NotImplementedError()``,
hidden tests removed, everything else the same. So a notebook with exercises is edited in
``notebooks/solutions/`` and then

    python scripts/exercises.py release notebooks/solutions/03_tensors_and_strides.ipynb
    scripts/execute_notebooks.sh notebooks/solutions/03_*.ipynb notebooks/03_*.ipynb

``python scripts/exercises.py check`` says whether every learner notebook is the student
version of its solutions; ``tests/course/test_exercises.py`` runs that check and reads the executed
outputs: every check prints "all ... cases right" in the solutions and "not done yet" in the
learner's notebook (nbval proves that both outputs are what the notebooks produce).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
SOLUTIONS = NOTEBOOKS / "solutions"

SOLUTION_REGION = re.compile(r"^([ \t]*)### BEGIN SOLUTION\n.*?^[ \t]*### END SOLUTION[ \t]*$",
                             re.MULTILINE | re.DOTALL)
HIDDEN_TESTS = re.compile(r"^[ \t]*### BEGIN HIDDEN TESTS\n.*?^[ \t]*### END HIDDEN TESTS[ \t]*\n?",
                          re.MULTILINE | re.DOTALL)


# ------------------------------------------------------------------------------- authoring
def _nbgrader(grade_id: str, *, solution: bool = False, grade: bool = False,
              locked: bool = True) -> dict:
    metadata = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3,
                "solution": solution, "task": False}
    if grade:
        metadata["points"] = 1
    return {"nbgrader": metadata}


def task_cell(grade_id: str, markdown: str) -> nbformat.NotebookNode:
    """A read-only markdown cell: the exercise's statement."""
    return nbformat.v4.new_markdown_cell(markdown.strip("\n"), metadata=_nbgrader(grade_id))


def setup_cell(grade_id: str, source: str) -> nbformat.NotebookNode:
    """A read-only code cell the exercises need (imports, data)."""
    return nbformat.v4.new_code_cell(source.strip("\n"), metadata=_nbgrader(grade_id))


def solution_cell(grade_id: str, source: str) -> nbformat.NotebookNode:
    """The learner's cell; the answer between ``### BEGIN SOLUTION`` / ``### END SOLUTION``."""
    if not SOLUTION_REGION.search(source):
        raise ValueError(f"solution cell {grade_id} has no ### BEGIN/END SOLUTION region")
    return nbformat.v4.new_code_cell(source.strip("\n"),
                                     metadata=_nbgrader(grade_id, solution=True, locked=False))


CHECK_CALL = re.compile(r"^(?:(\w+) = )?(check_\w+)\(.*\)$", re.DOTALL)


def check_cell(grade_id: str, source: str) -> nbformat.NotebookNode:
    """A graded, read-only check cell: one call of a check function (its result bound to a
    name for a core piece), and the hidden ``assert check_<name>.passed``."""
    call = CHECK_CALL.match(source.strip())
    if call is None or "\n" in source.strip():
        raise ValueError(f"check cell {grade_id} must be one line calling a check function: "
                         "`check_name(piece)` or `in_use = check_name(piece)`")
    source = (source.strip("\n") + f"\n### BEGIN HIDDEN TESTS\nassert {call.group(2)}.passed\n"
              "### END HIDDEN TESTS")
    return nbformat.v4.new_code_cell(source, metadata=_nbgrader(grade_id, grade=True))


# ------------------------------------------------------------------------- student version
def student_source(cell: nbformat.NotebookNode) -> str:
    """The cell's source as nbgrader's student version has it."""
    source = cell.source
    grading = cell.get("metadata", {}).get("nbgrader", {})
    if cell.cell_type == "code" and grading.get("solution"):
        source = SOLUTION_REGION.sub(
            lambda match: f"{match.group(1)}# YOUR CODE HERE\n{match.group(1)}"
                          "raise NotImplementedError()", source)
    if cell.cell_type == "code" and grading.get("grade"):
        source = HIDDEN_TESTS.sub("", source).rstrip("\n")
    return source


def student_notebook(solutions: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The learner's version of a solutions notebook (outputs empty)."""
    cells = []
    for cell in solutions.cells:
        if cell.cell_type == "code":
            student = nbformat.v4.new_code_cell(student_source(cell), metadata=dict(cell.metadata))
        else:
            student = nbformat.v4.new_markdown_cell(cell.source, metadata=dict(cell.metadata))
        if "id" in cell:  # the same cell ids as the teacher's copy, so a release diffs cleanly
            student.id = cell.id
        cells.append(student)
    return nbformat.v4.new_notebook(cells=cells, metadata=solutions.metadata)


def learner_notebook(solutions_path: Path) -> Path:
    return NOTEBOOKS / solutions_path.name


def release(solutions_path: Path) -> Path:
    """Write the learner's version of ``solutions_path`` (execute it afterwards)."""
    solutions = nbformat.read(solutions_path, as_version=4)
    target = learner_notebook(solutions_path)
    nbformat.write(student_notebook(solutions), target)
    return target


def mismatches() -> list[str]:
    """Every way a learner notebook differs from the student version of its solutions
    (empty when all match)."""
    problems = []
    for solutions_path in sorted(SOLUTIONS.glob("[0-9][0-9]*_*.ipynb")):
        target = learner_notebook(solutions_path)
        if not target.exists():
            problems.append(f"{solutions_path.name}: no learner notebook {target.name}")
            continue
        expected = student_notebook(nbformat.read(solutions_path, as_version=4)).cells
        found = nbformat.read(target, as_version=4).cells
        if len(found) != len(expected):
            problems.append(f"{target.name}: {len(found)} cells, the student version of "
                            f"the solutions has {len(expected)}")
            continue
        for index, (have, want) in enumerate(zip(found, expected, strict=True)):
            if (have.cell_type, have.source) != (want.cell_type, want.source):
                problems.append(f"{target.name}: cell {index} differs from the student "
                                f"version of solutions/{solutions_path.name}")
            elif have.get("id") != want.get("id"):  # nbgrader and the progress file match by id
                problems.append(f"{target.name}: cell {index} has id {have.get('id')!r}, its "
                                f"teacher's cell {want.get('id')!r}")
    return problems


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "release":
        for name in argv[1:]:
            print("wrote", release(Path(name).resolve()).relative_to(ROOT), "(execute it next)")
        return 0
    if argv == ["check"]:
        problems = mismatches()
        print("\n".join(problems) if problems else "every exercise block matches its solutions")
        return 1 if problems else 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
