"""Draw computation graphs and module trees with graphviz.

Node ids are assigned by a deterministic walk from the output (never ``id()``), so the DOT
source of a drawing is identical across runs and machines. Drawing never needs the ``dot``
program; rendering does, and without it raises one clear error.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import graphviz
import numpy as np

from tensorlib.autograd import Context
from tensorlib.scalar.engine import Value
from tensorlib.tensor import Tensor

INSTALL_HINT = ("graphviz's 'dot' program is not installed, so the drawing cannot be rendered; "
                "install it with `sudo apt-get install graphviz` (Debian/Ubuntu), "
                "`brew install graphviz` (macOS) or `conda install -c conda-forge graphviz`")


class GraphvizNotInstalledError(RuntimeError):
    """Rendering needs graphviz's ``dot`` program, which is missing."""


class Drawing(graphviz.Digraph):
    """A ``graphviz.Digraph`` whose rendering fails with one clear message when ``dot`` is
    missing (building and reading ``.source`` always work)."""

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

    def __repr__(self) -> str:
        edges = sum(" -> " in line for line in self.body)
        nodes = sum("[label=" in line and " -> " not in line for line in self.body)
        return f"<Drawing '{self.name}': {nodes} nodes, {edges} edges>"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None,
                          **kwargs: Any) -> dict[str, Any]:
        return {"image/svg+xml": self.pipe(format="svg", encoding="utf-8")}


def _new_drawing(name: str, rankdir: str) -> Drawing:
    drawing = Drawing(name=name)
    drawing.attr(rankdir=rankdir, fontname="Helvetica")
    drawing.attr("node", fontname="Helvetica", fontsize="11")
    drawing.attr("edge", color="#555555")
    return drawing


def _format_array(array: np.ndarray, precision: int) -> str:
    flat = np.asarray(array, dtype=np.float64).ravel()
    if flat.size == 1:
        return f"{flat[0]:.{precision}f}"
    return "[" + ", ".join(f"{v:.{precision}f}" for v in flat) + "]"


# ------------------------------------------------------------------------------ scalar graphs
def _draw_value_graph(root: Value, rankdir: str, precision: int,
                      max_nodes: int | None) -> Drawing:
    drawing = _new_drawing("value_graph", rankdir)
    order = list(reversed(root.topological_order()))  # output first: nearest nodes kept
    hidden = 0
    if max_nodes is not None and len(order) > max_nodes:
        hidden = len(order) - max_nodes
        order = order[:max_nodes]
    ids = {id(node): f"v{i}" for i, node in enumerate(order)}
    for node in order:
        node_id = ids[id(node)]
        name = f"{node.label} | " if node.label else ""
        style = {"shape": "record"}
        if not node.children:
            style.update(style="filled", fillcolor="#fff2cc")
        if node is root:
            style.update(penwidth="2")
        drawing.node(node_id, f"{{ {name}data {node.data:.{precision}f} | "
                              f"grad {node.grad:.{precision}f} }}", **style)
        if node.op:
            drawing.node(node_id + "_op", node.op, shape="ellipse", style="filled",
                         fillcolor="#e8f4fd")
            drawing.edge(node_id + "_op", node_id)
            for child in node.children:
                if id(child) in ids:
                    drawing.edge(ids[id(child)], node_id + "_op")
    if hidden:
        drawing.node("hidden", f"… {hidden} earlier nodes not drawn", shape="note")
    return drawing


# ------------------------------------------------------------------------------ tensor graphs
def _tensor_label(title: str, shape: tuple[int, ...], dtype: Any, data: Any, grad: Any,
                  precision: int, small: int) -> str:
    parts = [title, f"{tuple(shape)} {np.dtype(dtype).name}"] if title else \
        [f"{tuple(shape)} {np.dtype(dtype).name}"]
    if data is not None and np.size(data) <= small:
        parts.append("data " + _format_array(data, precision))
    if grad is not None and np.size(grad) <= small:
        parts.append("grad " + _format_array(grad, precision))
    return "{ " + " | ".join(p.replace("{", "\\{").replace("}", "\\}") for p in parts) + " }"


def _draw_tensor_graph(root: Tensor, module: Any, rankdir: str, precision: int,
                       max_nodes: int | None, small: int) -> Drawing:
    drawing = _new_drawing("tensor_graph", rankdir)
    names: dict[int, str] = {}
    parameter_ids: set[int] = set()
    if module is not None:
        for name, parameter in module.named_parameters():
            names[id(parameter)] = name
            parameter_ids.add(id(parameter))

    def leaf_title(tensor: Tensor) -> str:
        return names.get(id(tensor)) or tensor.name or ""

    if root.grad_fn is None:
        drawing.node("t0", _tensor_label(leaf_title(root) or "output", root.shape, root.dtype,
                                         root.data, root.grad, precision, small),
                     shape="record", style="filled", fillcolor="#fff2cc", penwidth="2")
        return drawing

    # Breadth-first from the output: ids follow distance from the output, then input order.
    op_ids: dict[int, str] = {}
    leaf_ids: dict[int, str] = {}
    leaves: dict[int, Tensor] = {}
    order: list[Context] = []
    frontier: list[Context] = [root.grad_fn]
    op_ids[id(root.grad_fn)] = "op0"
    hidden = 0
    while frontier:
        next_frontier: list[Context] = []
        for node in frontier:
            order.append(node)
            for parent in node.next:
                if isinstance(parent, Context) and id(parent) not in op_ids:
                    if max_nodes is not None and len(op_ids) >= max_nodes:
                        hidden += 1
                        op_ids[id(parent)] = ""  # seen but not drawn
                        continue
                    op_ids[id(parent)] = f"op{len(op_ids)}"
                    next_frontier.append(parent)
                elif isinstance(parent, Tensor) and id(parent) not in leaf_ids:
                    leaf_ids[id(parent)] = f"leaf{len(leaf_ids)}"
                    leaves[id(parent)] = parent
        frontier = next_frontier

    for node in order:
        node_id = op_ids[id(node)]
        drawing.node(node_id, node.name, shape="ellipse", style="filled", fillcolor="#e8f4fd")
        is_root = node is root.grad_fn
        retained = node.retained_output() if node.retained_output is not None else None
        grad = root.grad if is_root else (retained.grad if retained is not None else None)
        title = "output" if is_root else ""
        drawing.node(node_id + "_out",
                     _tensor_label(title, node.output_shape, node.output_dtype,
                                   root.data if is_root else None, grad, precision, small),
                     shape="record", **({"penwidth": "2"} if is_root else {}))
        drawing.edge(node_id, node_id + "_out")
        for parent in node.next:
            if isinstance(parent, Context):
                if op_ids.get(id(parent)):
                    drawing.edge(op_ids[id(parent)] + "_out", node_id)
            elif isinstance(parent, Tensor):
                leaf_id = leaf_ids[id(parent)]
                drawing.edge(leaf_id, node_id)
    for parent_id, leaf_id in leaf_ids.items():
        tensor = leaves[parent_id]
        is_parameter = parent_id in parameter_ids or type(tensor).__name__ == "Parameter"
        drawing.node(leaf_id, _tensor_label(leaf_title(tensor), tensor.shape, tensor.dtype,
                                            tensor.data, tensor.grad, precision, small),
                     shape="record", style="filled",
                     fillcolor="#d5e8d4" if is_parameter else "#fff2cc")
    if hidden:
        drawing.node("hidden", f"… {hidden} more operations not drawn (max_nodes={max_nodes})",
                     shape="note")
    return drawing


def draw_graph(root: Value | Tensor, module: Any = None, rankdir: str = "LR",
               precision: int = 4, max_nodes: int | None = 200, small: int = 4) -> Drawing:
    """Draw the computation graph that produced ``root`` (a scalar ``Value`` or a ``Tensor``).

    Value nodes are records (name, shape and dtype; data and grad when at most ``small``
    elements), op nodes ellipses. Leaves are yellow, parameters green (labelled with their
    dotted names when ``module`` is given), intermediates white, the output bold. At most
    ``max_nodes`` op nodes nearest the output are drawn; the rest are counted in a note.
    """
    if rankdir not in ("LR", "TB", "RL", "BT"):
        raise ValueError(f"rankdir must be one of LR, TB, RL, BT, got {rankdir!r}")
    if max_nodes is not None and max_nodes < 1:
        raise ValueError(f"max_nodes must be positive or None, got {max_nodes}")
    if isinstance(root, Value):
        return _draw_value_graph(root, rankdir, precision, max_nodes)
    if isinstance(root, Tensor):
        return _draw_tensor_graph(root, module, rankdir, precision, max_nodes, small)
    raise TypeError(f"draw_graph draws a Value or a Tensor, got {type(root).__name__}")


# ------------------------------------------------------------------------------ module trees
def _shape_text(shape: Iterable[int]) -> str:
    return "×".join(str(d) for d in shape) or "scalar"


def draw_module(module: Any, name: str = "model", rankdir: str = "TB",
                show_parameters: bool = True) -> Drawing:
    """Draw a module tree: each module's name and type, its own parameters' shapes, and its
    own and total (subtree) parameter counts."""
    drawing = _new_drawing("module_tree", rankdir)
    entries = list(module.named_modules())
    ids = {id(m): f"m{i}" for i, (_, m) in enumerate(entries)}
    for dotted, sub in entries:
        own = list(sub._own_parameters())
        own_count = sum(p.size for _, p in own)
        total = sub.num_parameters()
        title = dotted.rsplit(".", 1)[-1] if dotted else name
        rows = [f"{title}: {type(sub).__name__}"]
        if show_parameters:
            rows += [f"{pname} {_shape_text(p.shape)}" + ("" if p.trainable else " (frozen)")
                     for pname, p in own]
        rows.append(f"params {own_count:,}" + (f" (subtree {total:,})" if total != own_count
                                                 else ""))
        label = "{ " + " | ".join(r.replace("{", "\\{").replace("}", "\\}") for r in rows) + " }"
        drawing.node(ids[id(sub)], label, shape="record", style="filled",
                     fillcolor="#e8f4fd" if sub._modules else "#d5e8d4")
        for _, child in sub.named_children():
            drawing.edge(ids[id(sub)], ids[id(child)])
    return drawing
