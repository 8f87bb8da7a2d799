"""Drawings of computation graphs and module trees: the DOT source, determinism, rendering."""

import base64
import json
import re
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

from tensorlib import Rng, Tensor
from tensorlib.nn import MLP, Linear
from tensorlib.scalar.engine import Value
from tensorlib.viz import (
    INSTALL_HINT,
    OUTPUT_AREA_WIDTH,
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
    source = draw_graph(value_expression(), rankdir="TB").source
    # Four values (a, b, the constant 1.0, c, d: five) and two op nodes.
    value_nodes = [n for n in nodes(source) if n.startswith("v") and not n.endswith("_op")]
    op_nodes = [n for n in nodes(source) if n.endswith("_op")]
    assert len(value_nodes) == 5
    assert sorted(label_of(source, n) for n in op_nodes) == ["*", "+"]
    # The output is v0 (ids follow the walk from the output) and carries data and grad.
    assert label_of(source, "v0") == "{ d | data -5 | grad 1 }"
    labels = {label_of(source, n) for n in value_nodes}
    assert "{ a | data 2 | grad -3 }" in labels
    assert "{ b | data -3 | grad 2 }" in labels
    # d's op takes c and the constant; c's op takes a and b.
    by_label = {label_of(source, n).split(" |")[0].strip("{ "): n for n in value_nodes}
    assert (by_label["c"], "v0_op") in edges(source)
    assert (by_label["a"], f"{by_label['c']}_op") in edges(source)
    assert (by_label["b"], f"{by_label['c']}_op") in edges(source)
    assert ("v0_op", "v0") in edges(source)
    assert len(edges(source)) == 6


class HandMadeValue:
    """The shape of a scalar node a learner writes (notebook 01): no tensorlib class."""

    def __init__(self, data, children=(), op="", label=""):
        self.data, self.children, self.op, self.label, self.grad = data, children, op, label, 0.0


def test_any_value_shaped_object_is_drawn_like_a_value():
    a, b = HandMadeValue(2.0, label="a"), HandMadeValue(-3.0, label="b")
    c = HandMadeValue(-6.0, (a, b), "*", "c")
    one = HandMadeValue(1.0)
    d = HandMadeValue(-5.0, (c, one), "+", "d")
    a.grad, b.grad, c.grad, one.grad, d.grad = -3.0, 2.0, 1.0, 1.0, 1.0
    assert draw_graph(d).source == draw_graph(value_expression()).source


def test_value_graph_source_is_identical_across_runs():
    assert draw_graph(value_expression()).source == draw_graph(value_expression()).source


# ------------------------------------------------------------------------------ Tensor graphs
def test_tensor_graph_ops_leaves_and_parameter_names():
    out, model = linear_expression()
    source = draw_graph(out, module=model, rankdir="TB").source
    op_labels = [label_of(source, n) for n in nodes(source) if re.fullmatch(r"op\d+", n)]
    assert op_labels[0] == "sum"  # the output's op comes first
    assert {"sum", "tanh", "add", "matmul"} <= set(op_labels)
    leaf_labels = sorted(label_of(source, n) for n in nodes(source) if n.startswith("leaf"))
    assert any(label.startswith("{ weight | (2, 3) float32") for label in leaf_labels)
    assert any(label.startswith("{ bias | (2,) float32") for label in leaf_labels)
    # Parameters are green; the output record is bold and shows its scalar value.
    assert source.count('fillcolor="#d5e8d4"') == 2
    assert re.search(r"op0_out \[label=\"\{ output \| \(\) float32 \| data -?\d\.\d{3,4} \}\" "
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
    assert "rankdir=TB" in source  # a small tree fits the page top-down
    assert nodes(source) == ["m0", "m1", "m2", "m3"]
    assert label_of(source, "m0") == "{ model\\nMLP | params 0 (subtree 17) }"
    assert label_of(source, "m1") == "{ layers\\nModuleList | params 0 (subtree 17) }"
    assert label_of(source, "m2") == "{ 0\\nLinear | weight 4×2 | bias 4 | params 12 }"
    assert label_of(source, "m3") == "{ 1\\nLinear | weight 1×4 | bias 1 | params 5 }"
    assert edges(source) == {("m0", "m1"), ("m1", "m2"), ("m1", "m3")}
    again = draw_module(MLP(2, [4], 1, ["tanh", "identity"], rng=Rng(0))).source
    assert again == source


# ------------------------------------------------------------------------------ layout
def long_chain(length: int = 30) -> Tensor:
    x = Tensor(np.ones(3, dtype=np.float32), requires_grad=True)
    y = x
    for _ in range(length):
        y = y * 1.5
    return y.sum()


def deep_mlp(layers: int = 12) -> MLP:
    return MLP(2, [3] * (layers - 1), 1, ["tanh"] * (layers - 1) + ["identity"], rng=Rng(0))


def test_record_fields_stack_vertically_in_either_direction():
    # Left to right, a record's top-level fields stack; top to bottom, braces make them.
    assert label_of(draw_graph(value_expression(), rankdir="LR").source, "v0") == \
        "d | data -5 | grad 1"
    assert label_of(draw_graph(value_expression(), rankdir="TB").source, "v0") == \
        "{ d | data -5 | grad 1 }"


def test_record_text_is_escaped():
    a = Value(1.0, label="{x|y} <z>")
    source = draw_graph(a * 2.0, rankdir="TB").source
    assert r"\{x\|y\} \<z\>" in source


def test_auto_layout_turns_a_long_chain_top_to_bottom_and_keeps_a_short_one_sideways():
    assert "rankdir=TB" in draw_graph(long_chain(6), max_nodes=None).source
    assert "rankdir=LR" in draw_graph(value_expression()).source
    assert "rankdir=LR" in draw_graph(long_chain(12), rankdir="LR", max_nodes=None).source


def test_auto_layout_turns_a_wide_tree_sideways():
    assert "rankdir=TB" in draw_module(MLP(2, [4], 1, ["tanh", "identity"],
                                           rng=Rng(0))).source
    assert "rankdir=LR" in draw_module(deep_mlp(12)).source  # twelve layers side by side


def test_auto_layout_is_estimated_without_dot(monkeypatch, tmp_path):
    with_dot = draw_graph(long_chain(12), max_nodes=None).source
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no dot to be found
    without_dot = draw_graph(long_chain(12), max_nodes=None).source
    assert without_dot == draw_graph(long_chain(12), max_nodes=None).source
    assert "rankdir=TB" in without_dot and without_dot == with_dot
    assert "rankdir=LR" in draw_module(deep_mlp(12)).source


def test_hidden_operations_are_counted_by_op_and_attached_where_they_feed_in():
    x = Tensor(np.ones(3, dtype=np.float32), requires_grad=True)
    y = x
    for _ in range(10):
        y = (y * 1.5).tanh()
    source = draw_graph(y.sum(), max_nodes=3).source
    note = label_of(source, "hidden")
    assert note.startswith("… 18 more operations not drawn")  # of 10 mul, 10 tanh and sum
    assert "(9 mul, 9 tanh)" in note and "max_nodes=3" in note
    # The note points, dashed, at the one drawn op whose input it stands for.
    assert re.findall(r"^\thidden -> (\w+) \[style=dashed\]", source, re.MULTILINE) == ["op2"]


def test_hidden_values_of_a_scalar_graph_are_counted_by_op():
    source = draw_graph(value_expression(), max_nodes=2).source
    note = label_of(source, "hidden")
    assert note.startswith("… 3 more values not drawn")  # a, b and the constant 1.0
    assert "(3 leaves)" in note
    deeper = label_of(draw_graph(value_expression() * 2.0, max_nodes=2).source, "hidden")
    assert "(4 leaves, 1 *)" in deeper  # and the constant 2.0


def test_layout_arguments_are_checked():
    with pytest.raises(ValueError, match="rankdir must be one of auto, LR, TB, RL, BT"):
        draw_graph(value_expression(), rankdir="sideways")
    with pytest.raises(ValueError, match="max_width"):
        draw_graph(value_expression(), max_width=50)
    with pytest.raises(TypeError, match="max_width"):
        draw_module(deep_mlp(2), max_width=True)
    with pytest.raises(TypeError, match="max_nodes"):
        draw_graph(value_expression(), max_nodes=2.5)


# ------------------------------------------------------------------------------ rendering
needs_dot = pytest.mark.skipif(shutil.which("dot") is None,
                               reason="graphviz's dot is not installed")


def svg_size_px(svg: str) -> tuple[float, float]:
    """The size a browser shows an SVG from dot at (its pt are 1/72 in, a px 1/96 in)."""
    match = re.search(r'<svg width="([\d.]+)pt" height="([\d.]+)pt"', svg)
    assert match, svg[:300]
    return float(match.group(1)) * 96 / 72, float(match.group(2)) * 96 / 72


@needs_dot
def test_rendering_to_svg_where_dot_is_installed(tmp_path):
    out, model = linear_expression()
    drawing = draw_graph(out, module=model)
    svg = drawing.pipe(format="svg", encoding="utf-8")
    assert "<svg" in svg and "weight" in svg and "matmul" in svg
    path = drawing.render(tmp_path / "graph", format="svg")
    assert (tmp_path / "graph.svg").read_text().count("<svg") == 1
    assert str(path).endswith("graph.svg")


@needs_dot
def test_notebook_display_carries_a_png_shown_at_the_svgs_size():
    data, metadata = draw_module(deep_mlp(3))._repr_mimebundle_()
    assert data["text/plain"].startswith("<Drawing 'module_tree'")
    png = base64.b64decode(data["image/png"])
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pixels_wide, pixels_high = struct.unpack(">II", png[16:24])
    shown = metadata["image/png"]
    assert abs(pixels_wide - 2 * shown["width"]) <= 1
    assert abs(pixels_high - 2 * shown["height"]) <= 1
    svg_width, svg_height = svg_size_px(data["image/svg+xml"])
    assert abs(svg_width - shown["width"]) <= 2 and abs(svg_height - shown["height"]) <= 2


@needs_dot
def test_display_is_scaled_into_the_output_area_and_full_size_is_not():
    drawing = draw_graph(long_chain(30), rankdir="LR", max_nodes=None)
    natural_width, _ = svg_size_px(drawing.pipe(format="svg", encoding="utf-8"))
    assert natural_width > 3 * OUTPUT_AREA_WIDTH
    data, metadata = drawing._repr_mimebundle_()
    fitted_width, fitted_height = svg_size_px(data["image/svg+xml"])
    assert fitted_width <= OUTPUT_AREA_WIDTH and metadata["image/png"]["width"] <= 960
    assert "scale(" in data["image/svg+xml"]  # scaled as a whole, nothing cropped
    assert fitted_height > 0
    full_data, full_metadata = drawing.full_size()._repr_mimebundle_()
    assert svg_size_px(full_data["image/svg+xml"])[0] == pytest.approx(natural_width)
    assert full_metadata["image/png"]["width"] > 3 * OUTPUT_AREA_WIDTH
    narrow, _ = draw_graph(long_chain(30), rankdir="LR", max_nodes=None,
                           max_width=400)._repr_mimebundle_()
    assert svg_size_px(narrow["image/svg+xml"])[0] <= 400
    assert drawing.source == drawing.full_size().source  # the source stays full size


@needs_dot
def test_auto_layout_keeps_a_long_chain_legible_within_the_page():
    data, _ = draw_graph(long_chain(6), max_nodes=None)._repr_mimebundle_()
    width, _ = svg_size_px(data["image/svg+xml"])
    assert width <= OUTPUT_AREA_WIDTH
    assert "scale(1 1)" in data["image/svg+xml"]  # top to bottom it needs no shrinking


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


# ------------------------------------------------------------------------------ the workbook
def committed_drawings():
    """(notebook, cell index, output) for every graphviz drawing committed in the workbook."""
    for path in sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb")):
        for index, cell in enumerate(json.loads(path.read_text())["cells"]):
            for output in cell.get("outputs", []):
                if "image/svg+xml" in output.get("data", {}):
                    yield path.stem, index, output


def test_every_committed_drawing_has_a_png_fits_the_page_and_stays_legible():
    drawings = list(committed_drawings())
    assert len(drawings) >= 16
    for notebook, index, output in drawings:
        where = f"{notebook} cell {index}"
        svg = "".join(output["data"]["image/svg+xml"])
        width, _ = svg_size_px(svg)
        assert width <= OUTPUT_AREA_WIDTH, f"{where} is {width:.0f} px wide"
        scale = float(re.search(r'transform="scale\(([\d.]+)', svg).group(1))
        assert scale >= 0.75, f"{where} is shrunk to {scale:.2f}: text under 11 px"
        assert "image/png" in output["data"], f"{where} has no PNG for an untrusted notebook"
        assert output["metadata"]["image/png"]["width"] <= OUTPUT_AREA_WIDTH, where
