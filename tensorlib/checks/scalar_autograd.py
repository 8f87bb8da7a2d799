"""The graphs of notebook 01's checks: one step of ``+`` and ``*`` on the learner's ``Value``
and on ``tensorlib.scalar.Value`` side by side, and small graphs built from recipes, with
every op's local derivative given, to check a topological order and ``backward`` alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["same_step", "graph", "WORKED", "REUSED", "DIAMOND", "CHAIN"]

# (name, data for a leaf or the op, the names of its inputs): the worked example of the text,
# a node used twice twice, x on three paths, and a chain deeper than a recursion could go.
Recipe = Sequence[tuple[str, Any, tuple[str, ...]]]
WORKED: Recipe = [("a", -4.0, ()), ("b", 2.0, ()), ("c", "+", ("a", "b")),
                  ("a*b", "*", ("a", "b")), ("b**3", "**3", ("b",)),
                  ("d", "+", ("a*b", "b**3")), ("e", "-", ("c", "d")), ("f", "**2", ("e",))]
REUSED: Recipe = [("a", 3.0, ()), ("b", "+", ("a", "a")), ("c", "+", ("b", "b"))]
DIAMOND: Recipe = [("x", 0.5, ()), ("u", "*", ("x", "x")), ("v", "**3", ("x",)),
                   ("w", "*", ("u", "v")), ("y", "+", ("w", "x"))]
CHAIN: Recipe = [("x0", 1.001, ())] + [(f"x{i}", "*", (f"x{i - 1}", "x0"))
                                       for i in range(1, 150)]

_DATA: dict[str, Callable[..., float]] = {
    "+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y,
    "**2": lambda x: x * x, "**3": lambda x: x**3}
_LOCAL: dict[str, Callable[..., tuple[float, ...]]] = {  # d out / d each input
    "+": lambda x, y: (1.0, 1.0), "-": lambda x, y: (1.0, -1.0), "*": lambda x, y: (y, x),
    "**2": lambda x: (2 * x,), "**3": lambda x: (3 * x * x,)}


def same_step(classes: Sequence[type], build: Callable[..., Any], inputs: Sequence[float],
              incoming: float, before: Sequence[float]) -> list[tuple[tuple, list[float]]]:
    """For each class (the learner's Value, tensorlib's): ``build`` run on fresh leaves whose
    grads start at ``before``; the output's (data, its children as indices of the leaves or
    "new", op), then the leaves' grads after one call of its ``_backward(incoming)``."""
    results = []
    for make in classes:
        leaves = [make(x) for x in inputs]
        for leaf, grad in zip(leaves, before, strict=True):
            leaf.grad = grad
        out = build(*leaves)
        shape = (out.data, [leaves.index(c) if c in leaves else "new" for c in out.children],
                 out.op)
        out._backward(incoming)
        results.append((shape, [leaf.grad for leaf in leaves]))
    return results


def graph(make: type, recipe: Recipe) -> dict[str, Any]:
    """The nodes of ``recipe`` as objects of class ``make`` (``make(data, children, op,
    label=...)``), built without ``+`` or ``*``: each op node's ``_backward`` adds its local
    derivative times ``grad`` to its inputs' grads."""
    nodes: dict[str, Any] = {}
    for name, what, inputs in recipe:
        if not inputs:
            nodes[name] = make(what, label=name)
            continue
        children = [nodes[i] for i in inputs]
        out = make(_DATA[what](*[c.data for c in children]), children, what, label=name)

        def _backward(grad: float, children: list = children, what: str = what) -> None:
            slopes = _LOCAL[what](*[c.data for c in children])
            for child, slope in zip(children, slopes, strict=True):
                child.grad += slope * grad

        out._backward = _backward
        nodes[name] = out
    return nodes
