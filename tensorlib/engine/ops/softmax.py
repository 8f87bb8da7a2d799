"""Softmax (plain, scaled or causally masked) and log-softmax: one node each, with
hand-derived backward.

Both subtract the row maximum first, so logits of ±1e4 neither overflow nor lose the answer.
"""

from __future__ import annotations

from types import ModuleType

from tensorlib.engine.autograd import Context
from tensorlib.engine.backend import array_module
from tensorlib.engine.ops.function import Function
from tensorlib.engine.typing import Array


def causal_forbidden(xp: ModuleType, queries: int, keys: int, offset: int = 0) -> Array:
    """The ``(T, offset + T)`` boolean mask of causal attention: True where key ``j`` lies
    after query ``i``'s position ``offset + i``, so the query may not see it."""
    return xp.triu(xp.ones((queries, keys), dtype=bool), k=offset + 1)


def softmax(scores: Array, axis: int = -1, causal: bool = False, offset: int = 0) -> Array:
    """p = exp(s - max) / Σ exp(s - max) along ``axis``.

    With ``causal`` (``axis`` then is the last one) the scores of the last two axes,
    ``(..., T, offset + T)``, are masked first: query ``i`` sits at position ``offset + i``
    and sees keys ``0 .. offset + i``; the other keys get probability exactly 0.
    """
    xp = array_module(scores)
    if scores.size == 0:
        return xp.zeros_like(scores)  # nothing to normalize
    if causal:
        queries, keys = scores.shape[-2:]
        forbidden = causal_forbidden(xp, queries, keys, offset)
        scores = xp.where(forbidden, scores.dtype.type(-xp.inf), scores)
    shifted = scores - scores.max(axis=axis, keepdims=True)
    exps = xp.exp(shifted)
    return exps / exps.sum(axis=axis, keepdims=True)


def log_softmax(a: Array, axis: int = -1) -> Array:
    """log p = (a - max) - log Σ exp(a - max) along ``axis``."""
    xp = array_module(a)
    if a.size == 0:
        return xp.zeros_like(a)  # nothing to normalize
    shifted = a - a.max(axis=axis, keepdims=True)
    return shifted - xp.log(xp.exp(shifted).sum(axis=axis, keepdims=True))


def softmax_vjp(probabilities: Array, grad: Array, axis: int) -> Array:
    """The vector-Jacobian product of softmax along ``axis``: p ⊙ (g - Σ g ⊙ p)."""
    weighted = grad * probabilities
    return weighted - probabilities * weighted.sum(axis=axis, keepdims=True)


class Softmax(Function):
    """p = softmax(scale · x) along ``axis``; with ``causal=True`` causally masked (see
    ``softmax``). Backward: scale · p ⊙ (g - Σ g ⊙ p); masked entries get no gradient since
    p = 0 there. The causal forward is the step ``causal_softmax``, called through
    ``ctx.function`` (this op, or the kernel registered in its place)."""

    @staticmethod
    def forward(ctx: Context, a: Array, axis: int = -1, causal: bool = False, offset: int = 0,
                scale: float = 1.0) -> Array:
        if causal:
            ctx.name = "causal_softmax"
        scaled = a * a.dtype.type(scale) if causal or scale != 1.0 else a  # causal: fresh
        probabilities = ctx.function.causal_softmax(scaled, offset) if causal \
            else softmax(scaled, axis)
        ctx.save_for_backward(probabilities)
        ctx.axis, ctx.scale = axis, scale
        return probabilities

    @staticmethod
    def causal_softmax(scores: Array, offset: int) -> Array:
        """The causal softmax of fresh ``scores (..., T, offset + T)``, which it may
        overwrite."""
        return softmax(scores, causal=True, offset=offset)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        (probabilities,) = ctx.saved_tensors
        result = softmax_vjp(probabilities, grad, ctx.axis)
        return result if ctx.scale == 1.0 else result * result.dtype.type(ctx.scale)


class LogSoftmax(Function):
    """y = x - max - log Σ exp(x - max); backward: g - softmax(x) Σ g."""

    op_name = "log_softmax"

    @staticmethod
    def forward(ctx: Context, a: Array, axis: int = -1) -> Array:
        out = log_softmax(a, axis)
        ctx.save_for_backward(out)
        ctx.axis = axis
        return out

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        (out,) = ctx.saved_tensors
        xp = array_module(out)
        return grad - xp.exp(out) * grad.sum(axis=ctx.axis, keepdims=True)
