"""Drawings of computation graphs and module trees: the DOT source, determinism, rendering."""

import re
import shutil

import numpy as np
import pytest

from tensorlib import Tensor
from tensorlib.nn import MLP, Linear, Rng
from tensorlib.scalar.engine import Value
from tensorlib.viz import (
    INSTALL_HINT,
    Drawing,
    GraphvizNotInstalledError,
    draw_graph,
    draw_module,
)

NODE = re.compile(r"^\t(\w+) \[label=", re.MULTILINE)
EDGE = re.compile(r"^\t(\w+) -> (\w+)", re.MULTILINE)


def nodes(source: str) -> list[str]:
    return NODE.findall(source)


def edges(source: str) -> set[tuple[str, str]]:
    return set(EDGE.findall(source))


def label_of(source: str, node: str) -> str:
    match = re.search(rf"^\t{node} \[label=(\"(?:[^\"\\]|\\.)*\"|\S+)", source, re.MULTILINE)
    assert match, f"no node {node} in\n{source}"
    return match.group(1).strip('"')


def value_expression() -> Value:
    a = Value(2.0, label="a")
    b = Value(-3.0, label="b")
    c = a * b
    c.label = "c"
    d = c + 1.0
    d.label = "d"
    d.backward()
    return d


def linear_expression() -> tuple[Tensor, Linear]:
    model = Linear(3, 2, rng=Rng(0))
    x = Tensor(np.arange(12, dtype=np.float32).reshape(4, 3) / 10)
    out = (x @ model.weight.transpose() + model.bias).tanh().sum()
    out.backward()
    return out, model


# ------------------------------------------------------------------------------ Value graphs
def test_value_graph_nodes_edges_and_labels():
    source = draw_graph(value_expression()).source
    # Four values (a, b, the constant 1.0, c, d: five) and two op nodes.
    value_nodes = [n for n in nodes(source) if n.startswith("v") and not n.endswith("_op")]
    op_nodes = [n for n in nodes(source) if n.endswith("_op")]
    assert len(value_nodes) == 5
    assert sorted(label_of(source, n) for n in op_nodes) == ["*", "+"]
    # The output is v0 (ids follow the walk from the output) and carries data and grad.
    assert label_of(source, "v0") == "{ d | data -5.0000 | grad 1.0000 }"
    labels = {label_of(source, n) for n in value_nodes}
    assert "{ a | data 2.0000 | grad -3.0000 }" in labels
    assert "{ b | data -3.0000 | grad 2.0000 }" in labels
    # d's op takes c and the constant; c's op takes a and b.
    by_label = {label_of(source, n).split(" |")[0].strip("{ "): n for n in value_nodes}
    assert (by_label["c"], "v0_op") in edges(source)
    assert (by_label["a"], f"{by_label['c']}_op") in edges(source)
    assert (by_label["b"], f"{by_label['c']}_op") in edges(source)
    assert ("v0_op", "v0") in edges(source)
    assert len(edges(source)) == 6


def test_value_graph_source_is_identical_across_runs():
    assert draw_graph(value_expression()).source == draw_graph(value_expression()).source


# ------------------------------------------------------------------------------ Tensor graphs
def test_tensor_graph_ops_leaves_and_parameter_names():
    out, model = linear_expression()
    source = draw_graph(out, module=model).source
    op_labels = [label_of(source, n) for n in nodes(source) if re.fullmatch(r"op\d+", n)]
    assert op_labels[0] == "sum"  # the output's op comes first
    assert {"sum", "tanh", "add", "matmul"} <= set(op_labels)
    leaf_labels = sorted(label_of(source, n) for n in nodes(source) if n.startswith("leaf"))
    assert any(label.startswith("{ weight | (2, 3) float32") for label in leaf_labels)
    assert any(label.startswith("{ bias | (2,) float32") for label in leaf_labels)
    # Parameters are green; the output record is bold and shows its scalar value.
    assert source.count('fillcolor="#d5e8d4"') == 2
    assert re.search(r"op0_out \[label=\"\{ output \| \(\) float32 \| data -?\d\.\d{4} \}\" "
                     r"penwidth=2", source)
    # Every op feeds its output record, and the bias feeds the add.
    for op in (n for n in nodes(source) if re.fullmatch(r"op\d+", n)):
        assert (op, f"{op}_out") in edges(source)
    bias_leaf = next(n for n in nodes(source)
                     if n.startswith("leaf") and "bias" in label_of(source, n))
    add_op = next(n for n in nodes(source) if label_of(source, n) == "add")
    assert (bias_leaf, add_op) in edges(source)


def test_tensor_graph_without_module_has_no_parameter_names():
    out, _ = linear_expression()
    source = draw_graph(out).source
    assert "weight" not in source and "bias" not in source
    assert "(2, 3) float32" in source


def test_tensor_graph_source_is_identical_across_runs():
    out_a, model_a = linear_expression()
    out_b, model_b = linear_expression()
    assert draw_graph(out_a, module=model_a).source == draw_graph(out_b, module=model_b).source
    assert draw_graph(out_a).source == draw_graph(out_b).source


def test_max_nodes_caps_a_long_graph_with_a_note():
    x = Tensor(np.ones(3, dtype=np.float32), requires_grad=True)
    y = x
    for _ in range(30):
        y = y * 1.5
    source = draw_graph(y.sum(), max_nodes=5).source
    op_nodes = [n for n in nodes(source) if re.fullmatch(r"op\d+", n)]
    assert len(op_nodes) == 5
    note = label_of(source, "hidden")
    assert "more operations not drawn" in note and "max_nodes=5" in note
    uncapped = draw_graph(y.sum(), max_nodes=None).source
    assert len([n for n in nodes(uncapped) if re.fullmatch(r"op\d+", n)]) == 31
    assert "hidden" not in uncapped


def test_draw_graph_rejects_bad_arguments():
    with pytest.raises(TypeError, match="Value or a Tensor"):
        draw_graph(3.0)
    with pytest.raises(ValueError, match="max_nodes"):
        draw_graph(value_expression(), max_nodes=0)


# ------------------------------------------------------------------------------ module trees
def test_module_tree_names_shapes_and_counts():
    model = MLP(2, [4], 1, ["tanh", "identity"], rng=Rng(0))
    source = draw_module(model).source
    assert nodes(source) == ["m0", "m1", "m2", "m3"]
    assert label_of(source, "m0") == "{ model: MLP | params 0 (subtree 17) }"
    assert label_of(source, "m1") == "{ layers: ModuleList | params 0 (subtree 17) }"
    assert label_of(source, "m2") == "{ 0: Linear | weight 4×2 | bias 4 | params 12 }"
    assert label_of(source, "m3") == "{ 1: Linear | weight 1×4 | bias 1 | params 5 }"
    assert edges(source) == {("m0", "m1"), ("m1", "m2"), ("m1", "m3")}
    again = draw_module(MLP(2, [4], 1, ["tanh", "identity"], rng=Rng(0))).source
    assert again == source


# ------------------------------------------------------------------------------ rendering
@pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz's dot is not installed")
def test_rendering_to_svg_where_dot_is_installed(tmp_path):
    out, model = linear_expression()
    drawing = draw_graph(out, module=model)
    svg = drawing.pipe(format="svg", encoding="utf-8")
    assert "<svg" in svg and "weight" in svg and "matmul" in svg
    bundle = draw_module(model)._repr_mimebundle_()
    assert "<svg" in bundle["image/svg+xml"]
    path = drawing.render(tmp_path / "graph", format="svg")
    assert (tmp_path / "graph.svg").read_text().count("<svg") == 1
    assert str(path).endswith("graph.svg")


def test_missing_dot_raises_one_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no dot to be found
    drawing = draw_graph(value_expression())
    assert isinstance(drawing, Drawing)
    assert "digraph" in drawing.source  # building never needs dot
    with pytest.raises(GraphvizNotInstalledError) as error:
        drawing.pipe(format="svg")
    assert str(error.value) == INSTALL_HINT
    assert "apt-get install graphviz" in str(error.value)
    assert "brew install graphviz" in str(error.value)
    with pytest.raises(GraphvizNotInstalledError):
        drawing.render(tmp_path / "graph", format="png")
    with pytest.raises(GraphvizNotInstalledError):
        draw_module(Linear(2, 2, rng=Rng(0)))._repr_mimebundle_()
