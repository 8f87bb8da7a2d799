"""nbval settings for the workbook.

Graphviz drawings are SVG whose coordinates vary with the installed graphviz version, so
their ``image/svg+xml`` output is not compared; the DOT source behind every drawing is tested
exactly (and for determinism) in ``tests/test_viz_graph.py``. Every other output is compared
strictly.
"""

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        notebook = item.parent
        skip = getattr(notebook, "skip_compare", None)
        if skip is not None and "image/svg+xml" not in skip:
            notebook.skip_compare = (*skip, "image/svg+xml")
