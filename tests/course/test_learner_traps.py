"""The learner's traps, in a live Jupyter kernel (nbclient), on notebooks 04 and 12c.

A learner runs a check before the cell where they write the piece, runs the check twice on
the stub, writes a typical slip, breaks the cell with an edit that does not compile, fixes
it, and breaks it again. Each step here is a cell run in a real kernel (the project's, as
JupyterLab starts it), so what a learner's kernel does is what is tested: IPython's cell
runs noted by ``tensorlib.course.checks.history``, the NameError handler, the progress file. Marked
rerun (``make test-checks``): about a minute.
"""

import json

import nbformat
import pytest
from nbclient import NotebookClient

from check_runs import NOTEBOOKS, SOLUTIONS, slips_of

pytestmark = pytest.mark.rerun

TRAPS = [("04_tensor_autograd", "pc04-unbroadcast-check"),
         ("12c_convolutions", "pc12c-loops-check")]


def _cells(notebook, grade_id):
    """The learner's cells before the check's answer cell, the stub's cell, the teacher's
    answer cell and the check cell."""
    learner = nbformat.read(NOTEBOOKS / f"{notebook}.ipynb", as_version=4).cells
    teacher = nbformat.read(SOLUTIONS / f"{notebook}.ipynb", as_version=4).cells
    check = next(index for index, cell in enumerate(learner)
                 if cell.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
    answer = max(index for index in range(check)
                 if learner[index].metadata.get("nbgrader", {}).get("solution"))
    before = [cell.source for cell in learner[:answer] if cell.cell_type == "code"]
    return before, learner[answer].source, teacher[answer].source, learner[check].source


def _run(sources, folder):
    """Run the sources as cells of one notebook in a live kernel; each cell's printed text
    (stdout, stderr and error names)."""
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)
                                               for source in sources])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                       "language": "python"}
    client = NotebookClient(notebook, timeout=300, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(folder)}})
    client.execute()
    texts = []
    for cell in notebook.cells:
        parts = []
        for output in cell.outputs:
            if output.output_type == "stream":
                parts.append(output.text)
            elif output.output_type == "error":
                parts.append(f"{output.ename}: {output.evalue}\n")
        texts.append("".join(parts))
    return texts


@pytest.mark.parametrize("notebook, grade_id", TRAPS, ids=[notebook for notebook, _ in TRAPS])
def test_a_learners_traps_in_a_live_kernel(notebook, grade_id, tmp_path):
    before, stub, answer, check = _cells(notebook, grade_id)
    description, old, new, word = slips_of(notebook)[grade_id][0]
    wrong = answer.replace(old, new)
    lines = answer.splitlines()
    first = next(index for index, line in enumerate(lines) if "BEGIN SOLUTION" in line) + 1
    code, comment = (lines[first].split("  #", 1) + [""])[:2]
    lines[first] = f"{code} (  #{comment}"  # a parenthesis left open: it does not compile
    broken = "\n".join(lines)
    steps = [("check before the stub's cell", check), ("stub", stub),
             ("check on the stub", check), ("check again", check),
             (f"wrong answer: {description}", wrong), ("check the wrong answer", check),
             ("broken edit", broken), ("check after the broken edit", check),
             ("right answer", answer), ("check the right answer", check),
             ("check again", check), ("broken edit", broken),
             ("check after the broken edit", check),
             ("progress", "import sys\n!{sys.executable} -m tensorlib progress .")]
    for source in before:  # the notebook records its progress in the folder it runs in
        assert "record_progress(" not in source or f'record_progress("{notebook}")' in source
    (tmp_path / f"{notebook}.ipynb").write_text(
        (NOTEBOOKS / f"{notebook}.ipynb").read_text(encoding="utf-8"), encoding="utf-8")
    texts = _run(before + [source for _, source in steps], tmp_path)[len(before):]
    said = dict(zip(range(len(steps)), texts, strict=True))
    for index, (step, _) in enumerate(steps):
        print(f"--- {step}\n{said[index]}")  # shown when the test fails
    assert said[0].endswith("is not defined yet: run the cell where you write it (above), "
                            "then this one.\n") and said[0].count("\n") == 1
    assert "not done yet." in said[2] and said[2] == said[3]
    assert "likely mistake: " in said[5] and word.lower() in said[5].lower()
    assert "did not run (SyntaxError" in said[7] and "From here on the notebook uses your" \
        not in said[7]
    assert "all " in said[9] and "From here on the notebook uses your" in said[9]
    assert said[10] == said[9]  # a check run again checks the learner's code again
    assert said[12].startswith("Your last edit of the cell that defines ") and \
        "your last edit did not run, so from here on the notebook uses" in said[12]
    recorded = json.loads((tmp_path / ".progress" / f"{notebook}.json").read_text())
    assert list(recorded["checks"].values())[0]["status"] == "edit not run"
    assert "edit not run" in said[13]
