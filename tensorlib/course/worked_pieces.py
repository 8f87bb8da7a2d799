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
import regex

from tensorlib.data.bpe import merge_pair

__all__ = ["naive_bpe_train", "pair_counts", "scalar_gradient_step", "tiny_apply",
           "tiny_backward"]


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


# ------------------------------------------------------------------ notebook 15a: naive BPE
def pair_counts(ids: list[int], counts: dict[tuple[int, int], int] | None = None
                ) -> dict[tuple[int, int], int]:
    """Notebook 15a's ``get_stats``: how often each adjacent pair of ``ids`` occurs, added
    into ``counts`` when it is given (and returned)."""
    counts = {} if counts is None else counts
    for pair in zip(ids, ids[1:], strict=False):
        counts[pair] = counts.get(pair, 0) + 1
    return counts


def naive_bpe_train(text: str, vocab_size: int, pattern: str | None
                    ) -> tuple[dict[tuple[int, int], int], dict[int, bytes]]:
    """Notebook 15a's naive ``train``: ``text`` pre-split by the regex ``pattern`` (None: one
    chunk), each chunk's UTF-8 bytes as ids 0-255; then, for each new id from 256 up to
    ``vocab_size``, count every adjacent pair of every chunk, merge the most frequent (ties
    to the greatest pair of byte strings) everywhere, repeat; stop early when no pair is
    left. Returns ``merges`` ({(id, id): new id}, in the order learned) and ``vocab``
    ({id: bytes})."""
    chunks = regex.findall(pattern, text) if pattern is not None else [text]
    words = [list(chunk.encode("utf-8")) for chunk in chunks]
    vocab = {i: bytes([i]) for i in range(256)}
    merges: dict[tuple[int, int], int] = {}
    for new_id in range(256, vocab_size):
        counts: dict[tuple[int, int], int] = {}
        for ids in words:
            pair_counts(ids, counts)
        if not counts:
            break
        pair = max(counts, key=lambda p: (counts[p], vocab[p[0]], vocab[p[1]]))
        words = [merge_pair(ids, pair, new_id) for ids in words]
        merges[pair] = new_id
        vocab[new_id] = vocab[pair[0]] + vocab[pair[1]]
    return merges, vocab
