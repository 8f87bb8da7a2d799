"""Attention's pieces: the causal mask, the causally masked softmax, split and merged heads,
``attend`` and the fused attention core from Q/K/V, each fused op with its reference twin."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from tensorlib.engine import ops, validation
from tensorlib.engine.ops.softmax import causal_forbidden
from tensorlib.engine.tensor import Tensor
from tensorlib.nn.functional.arguments import _check_floating
from tensorlib.nn.functional.softmax import softmax_reference


def causal_mask(length: int, additive: bool = False, dtype: Any = np.float32) -> Tensor:
    """The (T, T) causal mask: position t may attend to positions 0..t only.

    By default a boolean tensor, True where attention is forbidden (column > row). With
    ``additive=True`` a float tensor of ``dtype``: 0 on and below the diagonal, -inf above.
    """
    length = validation.positive_integer(length, "causal_mask length")
    forbidden = causal_forbidden(np, length, length)
    if not additive:
        return Tensor(forbidden)
    return Tensor(np.where(forbidden, -np.inf, 0.0).astype(dtype))


def _check_scores(scores: Any, what: str) -> None:
    _check_floating(scores, what)
    if scores.ndim < 2 or scores.shape[-1] != scores.shape[-2]:
        raise ValueError(f"{what} must end in a square (T, T) pair of axes, got shape "
                         f"{scores.shape}")
    if scores.shape[-1] == 0:
        raise ValueError(f"{what} of shape {scores.shape} has no positions")


def apply_causal_mask(scores: Tensor) -> Tensor:
    """``scores + M`` with M the additive causal mask of the last two axes (0 on and below
    the diagonal, -inf above): the future becomes -inf, and the gradient passes to
    ``scores`` unchanged, as through any addition."""
    _check_scores(scores, "apply_causal_mask scores")
    return scores + causal_mask(scores.shape[-1], additive=True, dtype=scores.dtype)


def _check_causal_scores(scores: Any, offset: int, what: str) -> int:
    offset = validation.integer(offset, f"{what} offset", minimum=0)
    if offset == 0:
        _check_scores(scores, what)
        return 0
    _check_floating(scores, what)
    if scores.ndim < 2 or scores.shape[-1] != scores.shape[-2] + offset:
        raise ValueError(f"{what} with offset {offset} must end in a (T, {offset} + T) pair "
                         f"of axes, got shape {scores.shape}")
    return int(offset)


def causal_softmax(scores: Tensor, scale: float = 1.0, offset: int = 0) -> Tensor:
    """Attention probabilities: softmax over the last axis of ``scale * scores`` with the
    future masked out. ``scores (..., T, offset + T)``: query ``i`` sits at position
    ``offset + i`` (``offset`` keys are already cached) and sees keys ``0 .. offset + i``.
    One fused node."""
    offset = _check_causal_scores(scores, offset, "causal_softmax scores")
    scale = validation.real(scale, "causal_softmax scale")
    return ops.Softmax.apply(scores, axis=-1, causal=True, offset=offset, scale=scale)


def causal_softmax_reference(scores: Tensor, scale: float = 1.0, offset: int = 0) -> Tensor:
    """The primitive chain: (scores · scale + additive mask), then softmax_reference."""
    offset = _check_causal_scores(scores, offset, "causal_softmax scores")
    queries, keys = scores.shape[-2:]
    forbidden = causal_forbidden(np, queries, keys, offset)
    mask = Tensor(np.where(forbidden, -np.inf, 0.0).astype(scores.dtype))  # 0 or -inf
    return softmax_reference(scores * float(scale) + mask)


def _check_attention(qkv: Any, heads: int) -> None:
    _check_floating(qkv, "causal_attention qkv")
    validation.positive_integer(heads, "causal_attention heads")
    if qkv.ndim != 3 or qkv.shape[-1] % (3 * heads) or qkv.shape[1] == 0:
        raise ValueError(f"causal_attention expects qkv of shape (B, T, 3C) with T >= 1 and C "
                         f"divisible by heads={heads}, got shape {qkv.shape}")


def causal_attention(qkv: Tensor, heads: int, scale: float | None = None) -> Tensor:
    """Causal multi-head self-attention core: ``qkv (B, T, 3C)`` → ``(B, T, C)``.

    ``qkv[..., :C]``, ``[..., C:2C]`` and ``[..., 2C:]`` are the query, key and value
    projections; each is split into ``heads`` heads of width D = C / heads. Position t
    attends to positions 0..t; scores are scaled by ``scale`` (default 1/sqrt(D)). One
    fused node; ``causal_attention_reference`` is its primitive twin.
    """
    _check_attention(qkv, heads)
    width = qkv.shape[-1] // 3 // heads
    scale = 1.0 / math.sqrt(width) if scale is None else float(scale)
    return ops.CausalAttention.apply(qkv, heads=int(heads), scale=scale)


def causal_attention_reference(qkv: Tensor, heads: int, scale: float | None = None) -> Tensor:
    """The primitive chain: split heads, ``attend`` with causal_softmax_reference, merge
    heads."""
    _check_attention(qkv, heads)
    width = qkv.shape[-1] // 3 // heads
    scale = 1.0 / math.sqrt(width) if scale is None else float(scale)
    query, key, value = split_heads(qkv, heads)
    context, _ = attend(query, key, value, scale, softmax=causal_softmax_reference)
    return merge_heads(context)


def split_heads(qkv: Tensor, heads: int) -> tuple[Tensor, Tensor, Tensor]:
    """The query, key and value ``(B, H, T, D)`` of fused projections ``qkv (B, T, 3C)``."""
    batch, length, triple = qkv.shape
    split = qkv.reshape(batch, length, 3, heads, triple // 3 // heads)  # (B, T, 3, H, D)
    split = split.permute(2, 0, 3, 1, 4)  # (3, B, H, T, D)
    return split[0], split[1], split[2]


def merge_heads(context: Tensor) -> Tensor:
    """``(B, H, T, D)`` → ``(B, T, H·D)``: the heads side by side on the channel axis."""
    batch, heads, length, width = context.shape
    return context.permute(0, 2, 1, 3).reshape(batch, length, heads * width)


def attend(query: Tensor, key: Tensor, value: Tensor, scale: float, offset: int = 0,
           observe: Callable[[Tensor], Tensor] | None = None,
           softmax: Callable[..., Tensor] = causal_softmax) -> tuple[Tensor, Tensor]:
    """Attention within each head: ``(O, P)`` with P = causal softmax of scale · q kᵀ and
    O = P v, from ``query (B, H, T, D)``, ``key`` and ``value (B, H, S, D)``.

    Query i sits at position ``offset + i`` and sees keys ``0 .. offset + i`` (S = offset +
    T when ``offset`` keys are cached). ``observe`` (a HookPoint) is applied to P before it
    mixes the values; ``softmax`` is ``causal_softmax`` or its reference twin. The fused op
    ``causal_attention`` computes the same O in one node, with no P to observe.
    """
    probabilities = softmax(query @ key.transpose(), scale, offset)  # (B, H, T, S)
    if observe is not None:
        probabilities = observe(probabilities)
    return probabilities @ value, probabilities  # (B, H, T, D), (B, H, T, S)
