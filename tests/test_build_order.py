"""Build before use: no notebook uses a piece of the package before the notebook that builds it.

Each core piece is written by the learner in one notebook (see ``tests/test_exercises.py``)
and is the package's from then on. A notebook that imported it earlier would hand the
learner a piece they have not met. ``BUILT_IN`` names, for every such piece, the notebook
that builds it; the test reads every import from ``tensorlib`` (and every ``tl.nn.X``,
``tensorlib.data.X``, ... attribute) in the teacher's copies, which hold all the code.
"""

import ast
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = sorted((ROOT / "notebooks" / "solutions").glob("[0-9][0-9]_*.ipynb"))

BUILT_IN = {
    "Value": 1,
    "Neuron": 2, "Layer": 2,
    "Module": 6, "Parameter": 6, "ModuleList": 6, "HookPoint": 6, "StateDictError": 6,
    "init": 7,
    "Linear": 8, "Embedding": 8, "LayerNorm": 8, "Dropout": 8, "PositionalEmbedding": 8,
    "SGD": 10, "AdamW": 10,
    "train": 11,
    "CharTokenizer": 12, "context_target_pairs": 12, "BigramModel": 12,
    "MultiheadAttention": 13,
    "DecoderBlock": 14, "Decoder": 14, "DecoderConfig": 14,
}
# `MLP` is two pieces: the scalar one (02) and the tensor one of tensorlib.nn (11).
BUILT_IN_BY_MODULE = {("tensorlib.scalar", "MLP"): 2, ("tensorlib.nn", "MLP"): 11}
ALIASES = {"tl": "tensorlib"}


def number(path: Path) -> int:
    return int(path.name[:2])


def code_of(path: Path) -> str:
    notebook = nbformat.read(path, as_version=4)
    cells = ["".join(cell.source) for cell in notebook.cells if cell.cell_type == "code"]
    # IPython's magics and shell escapes are not Python; blank them out.
    return "\n".join(re.sub(r"^\s*[%!].*$", "", cell, flags=re.MULTILINE) for cell in cells)


def dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return ALIASES.get(node.id, node.id)
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def package_names_used(source: str) -> list[tuple[str, str]]:
    """(module, name) for each name taken from the tensorlib package, by import or attribute."""
    used = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tensorlib"):
            used += [(node.module, alias.name) for alias in node.names]
        elif isinstance(node, ast.Attribute):
            path = dotted(node)
            if path and path.startswith("tensorlib."):
                module, _, name = path.rpartition(".")
                used.append((module, name))
    return used


def built_in(module: str, name: str) -> int | None:
    return BUILT_IN_BY_MODULE.get((module, name), BUILT_IN.get(name))


def test_the_table_names_pieces_the_package_has():
    import tensorlib.baselines
    import tensorlib.data
    import tensorlib.nn
    import tensorlib.optim
    import tensorlib.scalar
    import tensorlib.train

    where = [tensorlib.scalar, tensorlib.nn, tensorlib.optim, tensorlib.data, tensorlib.train,
             tensorlib.baselines]
    for name in BUILT_IN:
        assert any(hasattr(module, name) for module in where), name


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda path: path.stem)
def test_no_piece_is_used_before_the_notebook_that_builds_it(path):
    early = sorted({f"{module}.{name} (built in {built_in(module, name):02d})"
                    for module, name in package_names_used(code_of(path))
                    if (built_in(module, name) or 0) > number(path)})
    assert not early, f"{path.name} uses, before they are built: {', '.join(early)}"


def test_the_check_sees_an_early_use():
    source = "from tensorlib.nn import Linear, Module\nimport tensorlib as tl\nx = tl.nn.Decoder"
    used = set(package_names_used(source))
    assert {("tensorlib.nn", "Decoder"), ("tensorlib.nn", "Linear"),
            ("tensorlib.nn", "Module")} <= used
    assert sorted(name for module, name in used if (built_in(module, name) or 0) > 7) == [
        "Decoder", "Linear"]
