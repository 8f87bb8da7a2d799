"""Cross-entropy of logits against integer targets: one node, with hand-derived backward."""

from __future__ import annotations

from typing import Any

from tensorlib.autograd import Context
from tensorlib.backend import array_module
from tensorlib.ops.function import Function


class CrossEntropy(Function):
    """Mean negative log-likelihood of ``targets`` under softmax(``logits``), one node.

    Forward: log-softmax with the max subtracted, pick each target's log-probability, mean.
    Backward: (softmax(logits) - onehot(targets)) / N, times the incoming scalar gradient.
    ``targets`` are checked ids of shape ``logits.shape[:-1]`` (``tensorlib.nn.functional``
    checks them).
    """

    op_name = "cross_entropy"

    @staticmethod
    def forward(ctx: Context, logits: Any, targets: Any) -> Any:
        xp = array_module(logits)
        classes = logits.shape[-1]
        targets = xp.asarray(targets)
        flat = logits.reshape(-1, classes)  # (N, V)
        rows = xp.arange(flat.shape[0])
        shifted = flat - flat.max(axis=-1, keepdims=True)
        log_probs = shifted - xp.log(xp.exp(shifted).sum(axis=-1, keepdims=True))  # (N, V)
        loss = -log_probs[rows, targets.reshape(-1)].mean()
        ctx.save_for_backward(log_probs)
        ctx.targets, ctx.input_shape = targets.reshape(-1), logits.shape
        return xp.asarray(loss, dtype=logits.dtype)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        (log_probs,) = ctx.saved_tensors
        xp = array_module(log_probs)
        count = log_probs.shape[0]
        probs = xp.exp(log_probs)  # a fresh array: safe to change in place
        probs[xp.arange(count), ctx.targets] -= 1.0
        probs *= grad / count
        return probs.reshape(ctx.input_shape)
