"""Cross-entropy of logits against integer targets: one node, with hand-derived backward."""

from __future__ import annotations

from tensorlib.engine.autograd import Context
from tensorlib.engine.backend import array_module
from tensorlib.engine.ops.function import Function
from tensorlib.engine.ops.softmax import log_softmax
from tensorlib.engine.typing import Array

REDUCTIONS = ("mean", "sum", "none")


class CrossEntropy(Function):
    """Negative log-likelihood of ``targets`` under softmax(``logits``), one node.

    Per position n with target y (V classes, smoothing ε):

        loss_n = (1 - ε)·(-log p_n[y]) + ε·mean_c(-log p_n[c])

    and 0 where ``kept`` is False (the target was ``ignore_index``). ``reduction`` "none"
    returns the losses in the targets' shape, "sum" their sum, "mean" their sum over the
    number of kept positions (nan, with a zero gradient, when none is kept, as in PyTorch).

    Backward, per kept row: (softmax(logits) - ((1 - ε)·onehot(y) + ε/V)) · w, where w is
    the incoming gradient of that row's loss (divided by the kept count for "mean").
    ``targets`` are checked ids of shape ``logits.shape[:-1]`` with the ignored positions
    holding any valid class (``tensorlib.nn.functional`` checks and prepares them). The
    per-row steps, ``row_losses`` and ``row_gradients``, are called through ``ctx.function``
    (this op, or the kernel registered in its place).
    """

    autocast = "float32"

    op_name = "cross_entropy"

    @staticmethod
    def forward(ctx: Context, logits: Array, targets: Array, kept: Array | None = None,
                reduction: str = "mean", label_smoothing: float = 0.0) -> Array:
        xp = array_module(logits)
        classes = logits.shape[-1]
        targets = xp.asarray(targets).reshape(-1)  # (N,)
        flat = logits.reshape(-1, classes)  # (N, V)
        log_probs, losses = ctx.function.row_losses(flat, targets, label_smoothing)
        count = flat.shape[0]
        if kept is not None:
            kept = xp.asarray(kept).reshape(-1)
            losses = xp.where(kept, losses, 0.0)
            count = int(kept.sum())
        ctx.save_for_backward(log_probs)
        ctx.targets, ctx.kept, ctx.count = targets, kept, count
        ctx.reduction, ctx.smoothing, ctx.input_shape = reduction, label_smoothing, logits.shape
        if reduction == "none":
            return losses.reshape(logits.shape[:-1]).astype(logits.dtype, copy=False)
        total = losses.sum()
        if reduction == "mean":
            total = total / count if count else xp.nan
        return xp.asarray(total, dtype=logits.dtype)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        (log_probs,) = ctx.saved_tensors
        rows = log_probs.shape[0]
        if ctx.reduction == "none":
            weight = grad.reshape(rows, 1)  # each row's incoming gradient
        elif ctx.reduction == "sum":
            weight = grad
        else:
            weight = grad / max(ctx.count, 1)
        probs = ctx.function.row_gradients(log_probs, ctx.targets, ctx.smoothing, weight,
                                           ctx.kept)
        return probs.reshape(ctx.input_shape)

    @staticmethod
    def row_losses(logits: Array, targets: Array, label_smoothing: float) -> tuple[Array, Array]:
        """``(log_probs (N, V), losses (N,))`` of logit rows ``(N, V)`` and targets ``(N,)``."""
        xp = array_module(logits)
        log_probs = log_softmax(logits, axis=-1)  # (N, V)
        losses = -log_probs[xp.arange(logits.shape[0]), targets]  # (N,)
        if label_smoothing:
            losses = (1.0 - label_smoothing) * losses - label_smoothing * log_probs.mean(-1)
        return log_probs, losses

    @staticmethod
    def row_gradients(log_probs: Array, targets: Array, label_smoothing: float,
                      weight: Array | float, kept: Array | None) -> Array:
        """The logits' gradient ``(N, V)``: (softmax - target distribution) · weight, zero
        in the rows ``kept`` marks False."""
        xp = array_module(log_probs)
        rows, classes = log_probs.shape
        probs = xp.exp(log_probs)  # a fresh array: safe to change in place
        if label_smoothing:
            probs -= label_smoothing / classes
        probs[xp.arange(rows), targets] -= 1.0 - label_smoothing
        probs *= weight
        if kept is not None:
            probs[~kept] = 0.0  # exactly 0, even for a nan weight
        return probs
