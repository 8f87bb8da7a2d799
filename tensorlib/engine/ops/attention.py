"""The core of causal self-attention, from fused Q/K/V projections to merged heads: one node."""

from __future__ import annotations

from typing import Any

from tensorlib.engine.autograd import Context
from tensorlib.engine.backend import array_module
from tensorlib.engine.ops.function import Function
from tensorlib.engine.ops.softmax import Softmax
from tensorlib.engine.typing import Array


def _heads(qkv: Array, heads: int) -> tuple[Array, Array, Array]:
    """The query, key and value views ``(B, H, T, D)`` of ``qkv (B, T, 3C)``."""
    batch, length, triple = qkv.shape
    split = qkv.reshape(batch, length, 3, heads, triple // 3 // heads)  # (B, T, 3, H, D)
    query, key, value = (split[:, :, i].transpose(0, 2, 1, 3) for i in range(3))
    return query, key, value


def attend(steps: Any, query: Array, key: Array, value: Array, scale: float,
           offset: int = 0) -> tuple[Array, Array]:
    """Attention within each head, on arrays: ``(O, P)`` with P = causal softmax of
    scale · q kᵀ and O = P v, from ``query (B, H, T, D)``, ``key`` and ``value (B, H, S, D)``;
    query i sits at position ``offset + i`` and sees keys ``0 .. offset + i``.

    ``steps`` supplies ``scaled_scores`` and ``causal_softmax``: ``CausalAttention`` or the
    kernel registered in its place. ``tensorlib.nn.functional.attend`` is the same on tensors.
    """
    scores = steps.scaled_scores(query, key, scale)  # (B, H, T, S)
    probabilities = steps.causal_softmax(scores, offset)  # may overwrite scores
    return probabilities @ value, probabilities  # (B, H, T, D), (B, H, T, S)


class CausalAttention(Function):
    """O = P V with P = softmax(scale · q kᵀ), causally masked, heads merged into (B, T, C).

    ``qkv (B, T, 3C)`` holds the query, key and value projections side by side, each split
    into ``heads`` blocks of width D = C / heads. Backward, with dO split into heads the
    same way::

        dv = Pᵀ dO,   dP = dO vᵀ,   dS = scale · P ⊙ (dP - Σ_j dP ⊙ P),
        dq = dS k,    dk = dSᵀ q

    stacked into the gradient of ``qkv`` in its (B, T, 3C) layout. The steps
    ``scaled_scores``, ``causal_softmax`` and ``row_sum`` are called through ``ctx.function``
    (this op, or the kernel registered in its place).
    """

    autocast = "lower"

    op_name = "causal_attention"

    @staticmethod
    def forward(ctx: Context, qkv: Array, heads: int, scale: float) -> Array:
        batch, length, triple = qkv.shape
        query, key, value = _heads(qkv, heads)
        context, probabilities = attend(ctx.function, query, key, value, scale)  # (B, H, T, ·)
        ctx.save_for_backward(qkv, probabilities)
        ctx.heads, ctx.scale = heads, scale
        return context.transpose(0, 2, 1, 3).reshape(batch, length, triple // 3)  # (B, T, C)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        qkv, probabilities = ctx.saved_tensors
        xp = array_module(qkv)
        batch, length, triple = qkv.shape
        heads, width = ctx.heads, triple // 3 // ctx.heads
        query, key, value = _heads(qkv, heads)
        grad_out = grad.reshape(batch, length, heads, width).transpose(0, 2, 1, 3)  # dO
        grad_value = probabilities.transpose(0, 1, 3, 2) @ grad_out  # dv (B, H, T, D)
        grad_probabilities = grad_out @ value.transpose(0, 1, 3, 2)  # dP (B, H, T, T)
        grad_scores = ((grad_probabilities
                        - ctx.function.row_sum(grad_probabilities * probabilities))
                       * probabilities) * qkv.dtype.type(ctx.scale)  # dS
        grad_query = grad_scores @ key  # dq
        grad_key = grad_scores.transpose(0, 1, 3, 2) @ query  # dk
        grad_qkv = xp.stack([grad_query, grad_key, grad_value], axis=2)  # (B, H, 3, T, D)
        return grad_qkv.transpose(0, 3, 2, 1, 4).reshape(batch, length, triple)

    @staticmethod
    def scaled_scores(query: Array, key: Array, scale: float) -> Array:
        """S = scale · q kᵀ, ``(B, H, T, T)``."""
        return (query @ key.transpose(0, 1, 3, 2)) * query.dtype.type(scale)

    causal_softmax = staticmethod(Softmax.causal_softmax)

    @staticmethod
    def row_sum(a: Array) -> Array:
        """Σ over the last axis, kept as an axis of size 1."""
        return a.sum(axis=-1, keepdims=True)
