"""Build before use: no notebook uses a piece of the package before the notebook that builds it.

Each core piece is written by the learner in one notebook (see ``tests/course/test_exercises.py``)
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

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = sorted((ROOT / "notebooks" / "solutions").glob("[0-9][0-9]*_*.ipynb"))

BUILT_IN = {
    "Value": "01",
    "Neuron": "02", "Layer": "02",
    "Module": "06", "Parameter": "06", "ModuleList": "06", "HookPoint": "06",
    "StateDictError": "06",
    "init": "07",
    "Linear": "08", "Embedding": "08", "LayerNorm": "08", "Dropout": "08",
    "PositionalEmbedding": "08",
    "SGD": "10", "AdamW": "10",
    "train": "11",
    "CharTokenizer": "12", "context_target_pairs": "12", "BigramModel": "12",
    "Sequential": "12a", "Flatten": "12a", "BatchNorm1d": "12a",
    "learning_rate_range_test": "12a",
    "FlattenConsecutive": "12b", "WaveNet": "12b", "WaveNetLevel": "12b",
    "Conv1d": "12c", "Conv2d": "12c", "MaxPool1d": "12c", "MaxPool2d": "12c",
    "AvgPool1d": "12c", "AvgPool2d": "12c", "conv1d": "12c", "conv2d": "12c",
    "max_pool1d": "12c", "max_pool2d": "12c", "avg_pool1d": "12c", "avg_pool2d": "12c",
    "unfold": "12c", "fold": "12c", "pad": "12c",
    "RNN": "12d", "GRU": "12d", "LSTM": "12d", "RNNCell": "12d", "GRUCell": "12d",
    "LSTMCell": "12d", "rnn_layer": "12d", "gru_layer": "12d", "lstm_layer": "12d",
    "RecurrentNameModel": "12d",
    "MultiheadAttention": "13",
    "DecoderBlock": "14", "Decoder": "14", "DecoderConfig": "14",
    "BPETokenizer": "15a",
    "RMSNorm": "15b", "RotaryEmbedding": "15b", "SwiGLU": "15b", "GroupedQueryAttention": "15b",
    "GradScaler": "19a", "autocast": "19a",
}
# `MLP` is two pieces: the scalar one (02) and the tensor one of tensorlib.nn (11).
BUILT_IN_BY_MODULE = {("tensorlib.scalar", "MLP"): "02", ("tensorlib.nn", "MLP"): "11"}
ALIASES = {"tl": "tensorlib", "F": "tensorlib.nn.functional"}  # as every notebook imports them


def order(number: str) -> tuple[int, str]:
    """A notebook's place: "12" < "12a" < "12b" < "12c" < "12d" < "13", "19" < "19a" < "20"."""
    return int(number[:2]), number[2:]


def number(path: Path) -> str:
    return path.name.split("_", 1)[0]


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


def built_in(module: str, name: str) -> str | None:
    return BUILT_IN_BY_MODULE.get((module, name), BUILT_IN.get(name))


def too_early(module: str, name: str, notebook: str) -> bool:
    built = built_in(module, name)
    return built is not None and order(built) > order(notebook)


def test_the_table_names_pieces_the_package_has():
    import tensorlib.amp
    import tensorlib.data
    import tensorlib.models
    import tensorlib.models.bigram_counts
    import tensorlib.nn
    import tensorlib.nn.functional
    import tensorlib.optim
    import tensorlib.scalar
    import tensorlib.training.loop

    where = [tensorlib.scalar, tensorlib.nn, tensorlib.nn.functional, tensorlib.optim,
             tensorlib.data, tensorlib.training.loop, tensorlib.models.bigram_counts,
             tensorlib.models, tensorlib.amp]
    for name in BUILT_IN:
        assert any(hasattr(module, name) for module in where), name


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda path: path.stem)
def test_no_piece_is_used_before_the_notebook_that_builds_it(path):
    early = sorted({f"{module}.{name} (built in {built_in(module, name)})"
                    for module, name in package_names_used(code_of(path))
                    if too_early(module, name, number(path))})
    assert not early, f"{path.name} uses, before they are built: {', '.join(early)}"


def test_the_check_sees_an_early_use():
    source = "from tensorlib.nn import Linear, Module\nimport tensorlib as tl\nx = tl.nn.Decoder"
    used = set(package_names_used(source))
    assert {("tensorlib.nn", "Decoder"), ("tensorlib.nn", "Linear"),
            ("tensorlib.nn", "Module")} <= used
    assert sorted(name for module, name in used if too_early(module, name, "07")) == [
        "Decoder", "Linear"]
    assert too_early("tensorlib.nn", "BatchNorm1d", "12") and \
        not too_early("tensorlib.nn", "BatchNorm1d", "12a")
    functional = set(package_names_used("import tensorlib.nn.functional as F\ny = F.conv2d(x, w)"))
    assert ("tensorlib.nn.functional", "conv2d") in functional
    assert too_early("tensorlib.nn.functional", "conv2d", "12b") and \
        not too_early("tensorlib.nn.functional", "conv2d", "12c")
