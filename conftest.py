"""pytest settings for the whole project: the unit tests in ``tests/`` and nbval's runs of the
workbook, so that ``pytest --nbval notebooks/`` (or one notebook) checks what ``make test``
checks.

nbval compares every output of every notebook strictly, with two project settings:

- What truly varies from run to run (step timings, progress-bar rates) is rewritten by the
  regular expressions in ``tests/nbval_sanitize.cfg`` before comparing. They apply unless
  ``--nbval-sanitize-with`` names another file.
- Graphviz drawings are SVG whose coordinates vary with the installed graphviz version, so
  their ``image/svg+xml`` output is not compared; the DOT source behind every drawing is
  tested exactly (and for determinism) in ``tests/viz/test_viz_graph.py``.

The cells of a notebook that imports PyTorch carry the ``torch`` marker, so that
``pytest --nbval -m torch notebooks`` runs just those notebooks (``make test-torch``).

With pytest-xdist (``make test`` runs ``-n auto --dist loadfile``), each notebook's cells stay
on one worker, in order, in one kernel, and the long units of work are handed out first.
"""

from pathlib import Path

import pytest

SANITIZE_FILE = Path(__file__).resolve().parent / "tests" / "nbval_sanitize.cfg"


def pytest_configure(config: pytest.Config) -> None:
    option = config.option
    if getattr(option, "nbval_sanitize_with", "absent") is None:
        option.nbval_sanitize_with = str(SANITIZE_FILE)


def is_notebook_cell(item: pytest.Item) -> bool:
    return item.path.suffix == ".ipynb"


def imports_torch(notebook: pytest.Collector) -> bool:
    """Whether a code cell of the notebook imports PyTorch (its cells then show PyTorch's
    own results where it is installed, and say they skip where it is not)."""
    cells = getattr(notebook, "nb", {"cells": []})["cells"]
    return any(cell["cell_type"] == "code" and "import torch" in cell["source"]
               for cell in cells)


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    torch_notebooks: dict[pytest.Collector, bool] = {}  # each notebook read once
    for item in items:
        if not is_notebook_cell(item):
            continue
        notebook = item.parent
        if notebook not in torch_notebooks:
            torch_notebooks[notebook] = imports_torch(notebook)
            skip = getattr(notebook, "skip_compare", None)
            if skip is not None and "image/svg+xml" not in skip:
                notebook.skip_compare = (*skip, "image/svg+xml")
        # Every cell, so that `-m torch` runs such a notebook whole, top to bottom.
        if torch_notebooks[notebook]:
            item.add_marker(pytest.mark.torch)
    # The longest units of work first, so that the short ones fill the workers at the end: the
    # tests marked slow (the browser test's JupyterLab session), then the notebooks, the
    # longest of them first, then the other test files (a stable sort: otherwise in order).
    items.sort(key=lambda item: (0, 0) if item.get_closest_marker("slow") else
               (1, -notebook_seconds(item.path)) if is_notebook_cell(item) else (2, 0))


# Seconds one copy of a notebook takes under nbval, measured on the 2-core machine of the README
# with one BLAS thread; the notebooks not named take under 8 s. Only the order depends on them.
NOTEBOOK_SECONDS = {"15": 14, "12a": 16, "12b": 12, "12": 12, "02": 10}


def notebook_seconds(path: Path) -> float:
    return NOTEBOOK_SECONDS.get(path.name.split("_", 1)[0], 0)
