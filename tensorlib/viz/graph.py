"""Draw computation graphs and module trees with graphviz.

Node ids are assigned by a deterministic walk from the output (never ``id()``), so the DOT
source of a drawing is identical across runs and machines. Drawing never needs the ``dot``
program; rendering does, and without it raises one clear error.

A drawing is made to be read in a notebook's output area (960 px wide):

* the layout follows the graph's shape: left to right when that fits, top to bottom for long
  chains, whichever needs less shrinking otherwise (``rankdir="auto"``);
* records stack their fields vertically, so a node is as wide as its longest line;
* big graphs keep the ``max_nodes`` operations nearest the output and replace the rest with
  one note that counts what it stands for, by operation;
* the notebook display is scaled down (never cropped) to ``max_width`` pixels, and carries a
  PNG beside the SVG, which JupyterLab shows in a notebook that is not trusted yet (a fresh
  clone). ``drawing.full_size()`` displays the same drawing unscaled.
"""

from __future__ import annotations

import base64
import io
import struct
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import graphviz
import numpy as np
from PIL import Image  # pillow comes with matplotlib

from tensorlib.engine import validation
from tensorlib.engine.autograd import Context
from tensorlib.engine.tensor import Tensor
from tensorlib.scalar.engine import Value

INSTALL_HINT = ("graphviz's 'dot' program is not installed, so the drawing cannot be rendered; "
                "install it with `sudo apt-get install graphviz` (Debian/Ubuntu), "
                "`brew install graphviz` (macOS) or `conda install -c conda-forge graphviz`")

OUTPUT_AREA_WIDTH = 960    # px: a JupyterLab output area at default zoom in a 1400 px window
MAX_HEIGHT = 2400          # px: taller drawings are scaled down as well (about two screens)
CSS_PIXELS_PER_INCH = 96   # a browser draws an SVG's 72 pt, and a PNG's 96 px, as one inch
PNG_PIXEL_RATIO = 2        # the PNG has twice the pixels it is shown with (sharp on HiDPI)
GRAPH_PAD = 4 / 72         # inches graphviz adds on every side (its default ``pad``)

RANKDIRS = ("auto", "LR", "TB", "RL", "BT")


class GraphvizNotInstalledError(RuntimeError):
    """Rendering needs graphviz's ``dot`` program, which is missing."""


class Drawing(graphviz.Digraph):
    """A ``graphviz.Digraph`` that fits a notebook's output area when displayed.

    ``max_width`` (pixels, or None for no limit) caps the displayed width; the drawing is
    scaled down as a whole to fit it and ``MAX_HEIGHT``. ``source`` is the drawing at full size;
    ``pipe`` and ``render`` render exactly it and fail with one clear message when ``dot`` is
    missing (building and reading ``source`` always work).
    """

    def __init__(self, *args: Any, max_width: int | None = OUTPUT_AREA_WIDTH,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _check_max_width(max_width)
        self.max_width = max_width

    def _copy_kwargs(self, **kwargs: Any) -> dict[str, Any]:
        return super()._copy_kwargs(max_width=self.max_width, **kwargs)

    def pipe(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().pipe(*args, **kwargs)
        except graphviz.ExecutableNotFound:
            raise GraphvizNotInstalledError(INSTALL_HINT) from None

    def render(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().render(*args, **kwargs)
        except graphviz.ExecutableNotFound:
            raise GraphvizNotInstalledError(INSTALL_HINT) from None

    def full_size(self) -> Drawing:
        """This drawing, displayed at its natural size (wider than the page if it is)."""
        copy = self.copy()
        copy.max_width = None
        return copy

    def fitted(self) -> Drawing:
        """A copy whose ``size`` attribute makes graphviz scale it into ``max_width`` by
        ``MAX_HEIGHT`` pixels (only ever down); without ``max_width``, an unchanged copy."""
        copy = self.copy()
        if self.max_width is not None:
            width = (self.max_width - 1) / CSS_PIXELS_PER_INCH - 2 * GRAPH_PAD
            height = (MAX_HEIGHT - 1) / CSS_PIXELS_PER_INCH - 2 * GRAPH_PAD
            copy.attr(size=f"{width:.3f},{height:.3f}")
        return copy

    def __repr__(self) -> str:
        edges = sum(" -> " in line for line in self.body)
        nodes = sum("[label=" in line and " -> " not in line for line in self.body)
        return f"<Drawing '{self.name}': {nodes} nodes, {edges} edges>"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None,
                          **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """SVG for a trusted notebook, PNG (shown at the SVG's size) for an untrusted one."""
        fitted = self.fitted()
        svg = fitted.pipe(format="svg", encoding="utf-8")
        fitted.attr(dpi=str(CSS_PIXELS_PER_INCH * PNG_PIXEL_RATIO))
        png = _palette_png(fitted.pipe(format="png"))
        width, height = _png_size(png)
        data = {"image/svg+xml": svg, "image/png": base64.b64encode(png).decode("ascii"),
                "text/plain": repr(self)}
        metadata = {"image/png": {"width": round(width / PNG_PIXEL_RATIO),
                                  "height": round(height / PNG_PIXEL_RATIO)}}
        return data, metadata


def _check_max_width(max_width: Any) -> None:
    if max_width is not None:
        validation.integer(max_width, "max_width (pixels)", minimum=100)


def _palette_png(png: bytes) -> bytes:
    """The same picture with a 256-colour palette (a drawing's few fills, black text and their
    anti-aliased edges): about a third of graphviz's 32-bit PNG in a notebook file."""
    image = Image.open(io.BytesIO(png)).convert("RGB")  # graphviz paints an opaque white page
    palette = image.quantize(colors=256, method=Image.Quantize.MEDIANCUT,
                             dither=Image.Dither.NONE)
    buffer = io.BytesIO()
    palette.save(buffer, format="PNG", optimize=True)
    return buffer.getvalue()


def _png_size(png: bytes) -> tuple[int, int]:
    """Width and height in pixels, read from a PNG's header chunk."""
    if png[:8] != b"\x89PNG\r\n\x1a\n" or png[12:16] != b"IHDR":
        raise ValueError("graphviz did not return a PNG")
    width, height = struct.unpack(">II", png[16:24])
    return width, height


# ------------------------------------------------------------------------------ graph model
@dataclass
class _Node:
    """One node before it becomes DOT: a record (``fields``) or an ellipse (``text``)."""

    node_id: str
    fields: list[str] = field(default_factory=list)
    text: str = ""
    attrs: dict[str, str] = field(default_factory=dict)

    def lines(self) -> list[str]:
        return [line for text in (self.fields or [self.text]) for line in text.split("\n")]


@dataclass
class _Graph:
    name: str
    nodes: list[_Node] = field(default_factory=list)
    edges: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)

    def node(self, node_id: str, **kwargs: Any) -> None:
        self.nodes.append(_Node(node_id, **kwargs))

    def edge(self, tail: str, head: str, **attrs: str) -> None:
        self.edges.append((tail, head, attrs))


def _escape_record(text: str) -> str:
    """A record field's text with graphviz's special characters escaped; a newline in it
    becomes a line break within the field."""
    for special in "\\{}|<>":
        text = text.replace(special, "\\" + special)
    return text.replace("\n", "\\n")


def _record_label(fields: list[str], rankdir: str) -> str:
    """A record label whose fields stack vertically: in a left-to-right layout a record's
    top-level fields already stack, in a top-to-bottom one braces make them stack."""
    joined = " | ".join(_escape_record(f) for f in fields)
    return "{ " + joined + " }" if rankdir in ("TB", "BT") else joined


# Sizes graphviz gives a node with 11 pt Helvetica, in inches: about 0.075 in per character
# on average, 0.25 in per line, and its minimum node size and spacing.
_CHAR_WIDTH, _LINE_HEIGHT, _NODE_PADDING = 0.075, 0.25, 0.3
_MIN_WIDTH, _MIN_HEIGHT, _NODE_SEP, _RANK_SEP = 0.75, 0.5, 0.25, 0.5


def _node_size(node: _Node) -> tuple[float, float]:
    lines = node.lines()
    width = max(_MIN_WIDTH, _NODE_PADDING + _CHAR_WIDTH * max(len(line) for line in lines))
    height = max(_MIN_HEIGHT, 0.1 + _LINE_HEIGHT * len(lines))
    return width, height


def _layer_sizes(graph: _Graph) -> list[list[tuple[float, float]]]:
    """Node sizes grouped by layer, a layer being the longest path from a source (the rank
    graphviz's ``dot`` gives most nodes)."""
    layer = {node.node_id: 0 for node in graph.nodes}
    incoming: dict[str, list[str]] = {node.node_id: [] for node in graph.nodes}
    for tail, head, _ in graph.edges:
        incoming[head].append(tail)
    for _ in range(len(graph.nodes)):  # relax until stable (graphs here are acyclic)
        changed = False
        for head, tails in incoming.items():
            deepest = max((layer[t] + 1 for t in tails), default=0)
            if deepest > layer[head]:
                layer[head], changed = deepest, True
        if not changed:
            break
    layers: list[list[tuple[float, float]]] = [[] for _ in range(max(layer.values()) + 1)]
    for node in graph.nodes:
        layers[layer[node.node_id]].append(_node_size(node))
    return layers


def _estimated_extent(graph: _Graph, rankdir: str) -> tuple[float, float]:
    """Estimated (width, height) in inches of the drawing laid out in ``rankdir``."""
    along, across = [], []  # extent of each layer along the flow and across it
    for sizes in _layer_sizes(graph):
        if rankdir in ("LR", "RL"):
            along.append(max(w for w, _ in sizes))
            across.append(sum(h for _, h in sizes) + _NODE_SEP * (len(sizes) - 1))
        else:
            along.append(max(h for _, h in sizes))
            across.append(sum(w for w, _ in sizes) + _NODE_SEP * (len(sizes) - 1))
    flow = sum(along) + _RANK_SEP * (len(along) - 1)
    return (flow, max(across)) if rankdir in ("LR", "RL") else (max(across), flow)


def _measured_extent(drawing: Drawing) -> tuple[float, float] | None:
    """(width, height) in inches of the drawing as ``dot`` lays it out; None without dot."""
    try:
        plain = drawing.pipe(format="plain", encoding="utf-8")
    except GraphvizNotInstalledError:
        return None
    _, _, width, height = plain.split("\n", 1)[0].split()  # "graph <scale> <width> <height>"
    return float(width) + 2 * GRAPH_PAD, float(height) + 2 * GRAPH_PAD


def _fit_scale(extent: tuple[float, float], max_width: int | None) -> float:
    """How much a drawing of this extent (inches) is shrunk to fit the page."""
    width, height = extent
    limits = [MAX_HEIGHT / CSS_PIXELS_PER_INCH / height]
    if max_width is not None:
        limits.append(max_width / CSS_PIXELS_PER_INCH / width)
    return min(1.0, *limits)


def _to_drawing(graph: _Graph, rankdir: str, max_width: int | None,
                preferred: str = "LR") -> Drawing:
    """The DOT drawing of ``graph``. With ``rankdir="auto"``, ``preferred`` when it fits
    the page unshrunk or shrinks less than the other direction, else the other: a long
    chain goes top to bottom, a wide graph left to right. Each direction is measured with
    ``dot`` where it is installed, else estimated from the labels."""
    if rankdir != "auto":
        return _emit(graph, rankdir, max_width)
    other = "TB" if preferred == "LR" else "LR"
    drawings = {direction: _emit(graph, direction, max_width) for direction in (preferred,
                                                                                other)}
    scales = {}
    for direction, drawing in drawings.items():
        extent = _measured_extent(drawing) or _estimated_extent(graph, direction)
        scales[direction] = _fit_scale(extent, max_width)
    if scales[preferred] >= 1.0 or scales[preferred] >= scales[other]:
        return drawings[preferred]
    return drawings[other]


def _emit(graph: _Graph, rankdir: str, max_width: int | None) -> Drawing:
    drawing = Drawing(name=graph.name, max_width=max_width)
    drawing.attr(rankdir=rankdir, fontname="Helvetica")
    drawing.attr("node", fontname="Helvetica", fontsize="11")
    drawing.attr("edge", color="#555555")
    for node in graph.nodes:
        if node.fields:
            drawing.node(node.node_id, _record_label(node.fields, rankdir), shape="record",
                         **node.attrs)
        else:
            drawing.node(node.node_id, node.text.replace("\n", "\\n"), **node.attrs)
    for tail, head, attrs in graph.edges:
        drawing.edge(tail, head, **attrs)
    return drawing


def _grad_array(tensor: Tensor | None) -> Any:
    """The array of ``tensor.grad`` (None without a tensor or a gradient)."""
    return None if tensor is None or tensor.grad is None else tensor.grad.numpy()


def _format_number(value: float, precision: int) -> str:
    return f"{value:.{precision}g}"


def _format_array(array: np.ndarray, precision: int) -> str:
    flat = np.asarray(array, dtype=np.float64).ravel()
    if flat.size == 1:
        return _format_number(flat[0], precision)
    return "[" + ", ".join(_format_number(v, precision) for v in flat) + "]"


def _hidden_note(counts: Counter[str], what: str, max_nodes: int | None) -> str:
    """What a note for the undrawn part of a graph says: how many, of which ops, and how to
    draw them all."""
    total = sum(counts.values())
    kinds = ", ".join(f"{count} {'leaves' if name == 'leaf' and count > 1 else name}"
                      for name, count in
                      sorted(counts.items(), key=lambda item: (-item[1], item[0])))
    return (f"… {total} more {what} not drawn\n({kinds})\n"
            f"max_nodes={max_nodes}; max_nodes=None draws all")


_OP_STYLE = {"shape": "ellipse", "style": "filled", "fillcolor": "#e8f4fd"}
_LEAF_STYLE = {"style": "filled", "fillcolor": "#fff2cc"}
_PARAMETER_STYLE = {"style": "filled", "fillcolor": "#d5e8d4"}
_NOTE_STYLE = {"shape": "note", "style": "filled", "fillcolor": "#f2f2f2"}
_HIDDEN_EDGE = {"style": "dashed"}


# ------------------------------------------------------------------------------ scalar graphs
def _is_scalar_node(root: Any) -> bool:
    """A tensorlib ``Value``, or any object shaped like one (``data``, ``grad``, ``children``,
    ``op``, and optionally ``label``), such as the Value a learner writes in notebook 01."""
    if isinstance(root, Value):
        return True
    return not isinstance(root, Tensor) and all(
        hasattr(root, name) for name in ("data", "grad", "children", "op"))


def _value_graph(root: Any, precision: int, max_nodes: int | None) -> _Graph:
    graph = _Graph("value_graph")
    # Breadth-first from the output: ids follow distance from the output, then input order.
    order, seen = [root], {root}
    for node in order:  # the list grows as the walk goes
        for child in node.children:
            if child not in seen:
                seen.add(child)
                order.append(child)
    hidden = order[max_nodes:] if max_nodes is not None else []
    order = order[:len(order) - len(hidden)]
    ids = {node: f"v{i}" for i, node in enumerate(order)}
    hidden_inputs: set[str] = set()
    for node in order:
        node_id = ids[node]
        attrs: dict[str, str] = {}
        if not node.children:
            attrs.update(_LEAF_STYLE)
        if node is root:
            attrs["penwidth"] = "2"
        label = getattr(node, "label", "")
        fields = ([label] if label else []) + [
            f"data {_format_number(node.data, precision)}",
            f"grad {_format_number(node.grad, precision)}"]
        graph.node(node_id, fields=fields, attrs=attrs)
        if node.op:
            graph.node(node_id + "_op", text=node.op, attrs=dict(_OP_STYLE))
            graph.edge(node_id + "_op", node_id)
            for child in node.children:
                if child in ids:
                    graph.edge(ids[child], node_id + "_op")
                else:
                    hidden_inputs.add(node_id + "_op")
    if hidden:
        counts = Counter(node.op or "leaf" for node in hidden)
        graph.node("hidden", text=_hidden_note(counts, "values", max_nodes),
                   attrs=dict(_NOTE_STYLE))
        for op_id in sorted(hidden_inputs, key=lambda name: int(name[1:-3])):
            graph.edge("hidden", op_id, **_HIDDEN_EDGE)
    return graph


# ------------------------------------------------------------------------------ tensor graphs
def _tensor_fields(title: str, shape: tuple[int, ...], dtype: Any, data: Any, grad: Any,
                   precision: int, small: int) -> list[str]:
    fields = [title] if title else []
    fields.append(f"{tuple(shape)} {np.dtype(dtype).name}")
    if data is not None and np.size(data) <= small:
        fields.append("data " + _format_array(data, precision))
    if grad is not None and np.size(grad) <= small:
        fields.append("grad " + _format_array(grad, precision))
    return fields


def _tensor_graph(root: Tensor, module: Any, precision: int, max_nodes: int | None,
                  small: int) -> _Graph:
    graph = _Graph("tensor_graph")
    names: dict[int, str] = {}
    parameter_ids: set[int] = set()
    if module is not None:
        for name, parameter in module.named_parameters():
            names[id(parameter)] = name
            parameter_ids.add(id(parameter))

    def leaf_title(tensor: Tensor) -> str:
        return names.get(id(tensor)) or tensor.name or ""

    if root.grad_fn is None:
        fields = _tensor_fields(leaf_title(root) or "output", root.shape, root.dtype,
                                root.numpy(), _grad_array(root), precision, small)
        graph.node("t0", fields=fields, attrs={**_LEAF_STYLE, "penwidth": "2"})
        return graph

    # Breadth-first from the output: ids follow distance from the output, then input order.
    # Every op is visited (to count what is hidden); the first max_nodes get drawn.
    op_ids: dict[int, str] = {id(root.grad_fn): "op0"}
    # each op's output shape and dtype, as the op that consumes it recorded its input's
    outputs: dict[int, tuple[Any, Any]] = {id(root.grad_fn): (root.shape, root.dtype)}
    drawn_ops = 1
    hidden_ops: Counter[str] = Counter()
    leaf_ids: dict[int, str] = {}
    leaves: dict[int, Tensor] = {}
    order: list[Context] = []
    frontier: list[Context] = [root.grad_fn]
    while frontier:
        next_frontier: list[Context] = []
        for node in frontier:
            drawn = bool(op_ids[id(node)])
            if drawn:
                order.append(node)
            else:
                hidden_ops[node.name] += 1
            for position, parent in enumerate(node.next):
                if isinstance(parent, Context) and id(parent) not in outputs:
                    outputs[id(parent)] = (node.input_shapes[position],
                                           node.input_dtypes[position])
                if isinstance(parent, Context) and id(parent) not in op_ids:
                    over_budget = not drawn or (max_nodes is not None
                                                and drawn_ops >= max_nodes)
                    op_ids[id(parent)] = "" if over_budget else f"op{drawn_ops}"
                    drawn_ops += not over_budget
                    next_frontier.append(parent)
                elif drawn and isinstance(parent, Tensor) and id(parent) not in leaf_ids:
                    leaf_ids[id(parent)] = f"leaf{len(leaf_ids)}"
                    leaves[id(parent)] = parent
        frontier = next_frontier

    hidden_inputs: list[str] = []
    for node in order:
        node_id = op_ids[id(node)]
        graph.node(node_id, text=node.name, attrs=dict(_OP_STYLE))
        is_root = node is root.grad_fn
        retained = node.retained_output() if node.retained_output is not None else None
        grad = _grad_array(root) if is_root else _grad_array(retained)
        shape, dtype = outputs[id(node)]
        fields = _tensor_fields("output" if is_root else "", shape, dtype,
                                root.numpy() if is_root else None, grad, precision, small)
        graph.node(node_id + "_out", fields=fields, attrs={"penwidth": "2"} if is_root else {})
        graph.edge(node_id, node_id + "_out")
        for parent in node.next:
            if isinstance(parent, Context):
                if op_ids[id(parent)]:
                    graph.edge(op_ids[id(parent)] + "_out", node_id)
                elif node_id not in hidden_inputs:
                    hidden_inputs.append(node_id)
            elif isinstance(parent, Tensor):
                graph.edge(leaf_ids[id(parent)], node_id)
    for parent_id, leaf_id in leaf_ids.items():
        tensor = leaves[parent_id]
        is_parameter = parent_id in parameter_ids or type(tensor).__name__ == "Parameter"
        fields = _tensor_fields(leaf_title(tensor), tensor.shape, tensor.dtype, tensor.numpy(),
                                _grad_array(tensor), precision, small)
        graph.node(leaf_id, fields=fields,
                   attrs=dict(_PARAMETER_STYLE if is_parameter else _LEAF_STYLE))
    if hidden_ops:
        graph.node("hidden", text=_hidden_note(hidden_ops, "operations", max_nodes),
                   attrs=dict(_NOTE_STYLE))
        for node_id in hidden_inputs:
            graph.edge("hidden", node_id, **_HIDDEN_EDGE)
    return graph


def _check_layout_arguments(rankdir: str, max_width: int | None) -> None:
    if rankdir not in RANKDIRS:
        raise ValueError(f"rankdir must be one of {', '.join(RANKDIRS)}, got {rankdir!r}")
    _check_max_width(max_width)


def draw_graph(root: Value | Tensor, module: Any = None, rankdir: str = "auto",
               precision: int = 4, max_nodes: int | None = 40, small: int = 4,
               max_width: int | None = OUTPUT_AREA_WIDTH) -> Drawing:
    """Draw the computation graph that produced ``root`` (a scalar ``Value`` or a ``Tensor``).

    Value nodes are records (name, shape and dtype; data and grad when at most ``small``
    elements, to ``precision`` significant digits), op nodes ellipses. Leaves are yellow,
    parameters green (labelled with their dotted names when ``module`` is given),
    intermediates white, the output bold. At most ``max_nodes`` nodes nearest the output are
    drawn (op nodes of a tensor graph, values of a scalar one); one note counts the rest by
    op. ``rankdir`` is ``"auto"`` (chosen by the graph's shape) or a graphviz direction;
    the notebook display fits ``max_width`` pixels (None: natural size).
    """
    _check_layout_arguments(rankdir, max_width)
    if max_nodes is not None:
        validation.positive_integer(max_nodes, "max_nodes")
    if _is_scalar_node(root):
        return _to_drawing(_value_graph(root, precision, max_nodes), rankdir, max_width)
    if isinstance(root, Tensor):
        graph = _tensor_graph(root, module, precision, max_nodes, small)
        return _to_drawing(graph, rankdir, max_width)
    raise TypeError(f"draw_graph draws a Value or a Tensor, got {type(root).__name__}")


# ------------------------------------------------------------------------------ module trees
def _shape_text(shape: Iterable[int]) -> str:
    return "×".join(str(d) for d in shape) or "scalar"


def draw_module(module: Any, name: str = "model", rankdir: str = "auto",
                show_parameters: bool = True,
                max_width: int | None = OUTPUT_AREA_WIDTH) -> Drawing:
    """Draw a module tree: each module's name and type, its own parameters' shapes, and its
    own and total (subtree) parameter counts. ``rankdir`` and ``max_width`` as in
    :func:`draw_graph`."""
    _check_layout_arguments(rankdir, max_width)
    graph = _Graph("module_tree")
    entries = list(module.named_modules())
    ids = {id(m): f"m{i}" for i, (_, m) in enumerate(entries)}
    for dotted, sub in entries:
        own = list(sub.named_parameters(recurse=False))
        own_count = sum(p.numel() for _, p in own)
        total = sub.num_parameters()
        title = dotted.rsplit(".", 1)[-1] if dotted else name
        rows = [f"{title}\n{type(sub).__name__}"]
        if show_parameters:
            rows += [f"{pname} {_shape_text(p.shape)}" + ("" if p.trainable else " (frozen)")
                     for pname, p in own]
        rows.append(f"params {own_count:,}" + (f" (subtree {total:,})" if total != own_count
                                                 else ""))
        graph.node(ids[id(sub)], fields=rows, attrs={
            "style": "filled", "fillcolor": "#e8f4fd" if sub._modules else "#d5e8d4"})
        for _, child in sub.named_children():
            graph.edge(ids[id(sub)], ids[id(child)])
    return _to_drawing(graph, rankdir, max_width, preferred="TB")  # a tree reads top-down
