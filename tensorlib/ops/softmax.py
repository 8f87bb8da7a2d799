"""Fused softmax and log-softmax: one node each, with hand-derived backward.

Both subtract the row maximum first, so logits of ±1e4 neither overflow nor lose the answer.
"""

from __future__ import annotations

from typing import Any

from tensorlib.autograd import Context, Function
from tensorlib.backend import array_module


def softmax_vjp(probabilities: Any, grad: Any, axis: int) -> Any:
    """The vector-Jacobian product of softmax along ``axis``: p ⊙ (g - Σ g ⊙ p).

    Shared by every op whose output is a softmax (plain, causal-masked attention)."""
    weighted = grad * probabilities
    return weighted - probabilities * weighted.sum(axis=axis, keepdims=True)


class Softmax(Function):
    """p = exp(x - max) / Σ exp(x - max); backward: p ⊙ (g - Σ g⊙p)."""

    op_name = "softmax"

    @staticmethod
    def forward(ctx: Context, a: Any, axis: int = -1) -> Any:
        xp = array_module(a)
        shifted = a - a.max(axis=axis, keepdims=True)
        exps = xp.exp(shifted, out=shifted)
        probabilities = exps / exps.sum(axis=axis, keepdims=True)
        ctx.save_for_backward(probabilities)
        ctx.axis = axis
        return probabilities

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        (probabilities,) = ctx.saved_tensors
        return softmax_vjp(probabilities, grad, ctx.axis)


class LogSoftmax(Function):
    """y = x - max - log Σ exp(x - max); backward: g - softmax(x) Σ g."""

    op_name = "log_softmax"

    @staticmethod
    def forward(ctx: Context, a: Any, axis: int = -1) -> Any:
        xp = array_module(a)
        shifted = a - a.max(axis=axis, keepdims=True)
        log_total = xp.log(xp.exp(shifted).sum(axis=axis, keepdims=True))
        out = shifted - log_total
        ctx.save_for_backward(out)
        ctx.axis = axis
        return out

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        (out,) = ctx.saved_tensors
        xp = array_module(out)
        return grad - xp.exp(out) * grad.sum(axis=ctx.axis, keepdims=True)
