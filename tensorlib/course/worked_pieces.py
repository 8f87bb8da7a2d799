"""Worked versions of the workbook's pieces that have no twin elsewhere in tensorlib.

A notebook has the learner write its core pieces, and while a piece's check has not passed,
the cells below it use tensorlib's instead (``Checker.use``). Most pieces have a twin in the
package (``tensorlib.scalar.Value``, ``tensorlib.unbroadcast``, ``F.layer_norm``...). The few
that exist only in a notebook (a training step on the notebook's own loss, the tiny tensor
engine of notebook 04) are here, so that the check cells can fall back on them without
printing the answer right under the learner's stub. Each is the formula of the notebook's
text and nothing more.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["scalar_gradient_step", "tiny_apply", "tiny_backward"]


def scalar_gradient_step(model: Any, learning_rate: float,
                         loss_and_accuracy: Callable[[Any], tuple[Any, float]]
                         ) -> tuple[float, float]:
    """One full-batch gradient-descent step of a ``tensorlib.scalar`` model (notebook 02):
    loss and accuracy, gradients reset, backward, ``p.data -= learning_rate * p.grad``.
    Returns the loss before the update, as a float, and the accuracy."""
    loss, accuracy = loss_and_accuracy(model)
    for parameter in model.parameters():
        parameter.grad = 0.0
    loss.backward()
    for parameter in model.parameters():
        parameter.data -= learning_rate * parameter.grad
    return loss.data, accuracy


def tiny_apply(op: Any, inputs: tuple[Any, ...], tensor_class: type, node_class: type) -> Any:
    """Notebook 04's ``apply``: ``op.forward`` on the inputs' arrays with a fresh context; the
    result records ``node_class(op, ctx, inputs)`` when any input requires grad."""
    ctx = types.SimpleNamespace()
    out = op.forward(ctx, *(t.data for t in inputs))
    if any(t.requires_grad for t in inputs):
        return tensor_class(out, True, node_class(op, ctx, inputs))
    return tensor_class(out)


def tiny_backward(root: Any) -> None:
    """Notebook 04's ``backward``: fill ``.grad`` of every leaf that requires grad and that
    ``root`` depends on, by a reverse topological walk from ``root`` (its gradient: ones);
    leaves add to what they hold, intermediate tensors sum what they receive."""
    order: list[Any] = []
    seen: set[int] = set()
    stack = [(root, False)]
    while stack:  # depth first, without recursion: a tensor after the tensors it came from
        tensor, inputs_placed = stack.pop()
        if tensor.node is None:
            continue
        if inputs_placed:
            order.append(tensor)
        elif id(tensor) not in seen:
            seen.add(id(tensor))
            stack.append((tensor, True))
            stack.extend((parent, False) for parent in reversed(tensor.node.inputs))
    pending = {id(root): np.ones_like(root.data)}
    for tensor in reversed(order):
        grads = tensor.node.op.backward(tensor.node.ctx, pending.pop(id(tensor)))
        for parent, grad in zip(tensor.node.inputs, grads, strict=True):
            if not parent.requires_grad:
                continue
            if parent.node is None:
                parent.grad = grad if parent.grad is None else parent.grad + grad
            else:
                pending[id(parent)] = pending.get(id(parent), 0.0) + grad
