"""Every link in a notebook's markdown to a file of the project leads to a file that exists."""

import re
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
PATHS = sorted(NOTEBOOKS.glob("*.ipynb")) + sorted((NOTEBOOKS / "solutions").glob("*.ipynb"))
LINK = re.compile(r"\]\(([^)\s]+)\)")


@pytest.mark.parametrize("path", PATHS, ids=lambda path: str(path.relative_to(NOTEBOOKS)))
def test_local_links_lead_to_files_that_exist(path):
    notebook = nbformat.read(path, as_version=4)
    broken = []
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "markdown":
            continue
        for target in LINK.findall(cell.source):
            if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                continue  # a web address or a place in this notebook
            if not (path.parent / target.split("#", 1)[0]).exists():
                broken.append(f"cell {index}: {target}")
    assert not broken, f"{path.name}: links to files that do not exist: {broken}"
