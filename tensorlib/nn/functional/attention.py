"""Attention's pieces: the causal mask, the causally masked softmax, split and merged heads,
``attend`` and the fused attention core from Q/K/V, each fused op with its reference twin."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from tensorlib.engine import autocast, ops, validation
from tensorlib.engine.dtypes import is_low_precision
from tensorlib.engine.ops.softmax import causal_forbidden
from tensorlib.engine.tensor import Tensor
from tensorlib.engine.validation import is_floating
from tensorlib.nn.functional.arguments import _check_floating, _check_one_dtype, _check_tensor
from tensorlib.nn.functional.dropout import dropout
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


def _attention_scale(scale: Any, width: int, what: str) -> float:
    """``scale`` checked as a finite number, or 1/sqrt(width) when it is None."""
    return 1.0 / math.sqrt(width) if scale is None else validation.real(scale, f"{what} scale")


def causal_attention(qkv: Tensor, heads: int, scale: float | None = None) -> Tensor:
    """Causal multi-head self-attention core: ``qkv (B, T, 3C)`` → ``(B, T, C)``.

    ``qkv[..., :C]``, ``[..., C:2C]`` and ``[..., 2C:]`` are the query, key and value
    projections; each is split into ``heads`` heads of width D = C / heads. Position t
    attends to positions 0..t; scores are scaled by ``scale`` (default 1/sqrt(D)). One
    fused node; ``causal_attention_reference`` is its primitive twin.
    """
    _check_attention(qkv, heads)
    scale = _attention_scale(scale, qkv.shape[-1] // 3 // heads, "causal_attention")
    return ops.CausalAttention.apply(qkv, heads=int(heads), scale=scale)


def causal_attention_reference(qkv: Tensor, heads: int, scale: float | None = None) -> Tensor:
    """The primitive chain: split heads, ``attend`` with causal_softmax_reference, merge
    heads."""
    _check_attention(qkv, heads)
    scale = _attention_scale(scale, qkv.shape[-1] // 3 // heads, "causal_attention")
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


# ------------------------------------------------------------------ PyTorch's attention call
def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor,
                                 attn_mask: Tensor | None = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    """PyTorch's ``F.scaled_dot_product_attention``: ``softmax(q kᵀ · scale + mask) v``.

    ``query (..., L, E)``, ``key (..., S, E)``, ``value (..., S, Ev)`` → ``(..., L, Ev)``;
    ``scale`` defaults to 1/sqrt(E). ``attn_mask`` broadcasts to ``(..., L, S)``: boolean,
    True where a query may attend, or float, added to the scores. ``is_causal`` lets query i
    attend to keys 0..i (PyTorch's top-left alignment when L != S) and excludes
    ``attn_mask``. ``dropout_p`` drops attention weights, drawn from tensorlib's generator,
    whatever the module's mode (pass 0.0 in eval, as PyTorch programs do). With
    ``enable_gqa`` the key and value may have fewer heads (axis -3) than the query, a
    divisor of its count: each key/value head serves that many query heads in turn.

    float16 and bfloat16 inputs (an ``autocast`` block casts float32 ones to its dtype, as
    PyTorch's lists it) are attended in float32 and the output rounded once, as PyTorch's
    fused CPU kernel does.
    """
    if autocast.active():  # PyTorch's lower-precision list names this function
        query, key, value, attn_mask = autocast.cast_inputs(
            "lower", (query, key, value, attn_mask))
    _check_sdpa(query, key, value, attn_mask, is_causal, enable_gqa)
    if is_low_precision(query.dtype):
        low = query.dtype
        mask = attn_mask if attn_mask is None or not is_floating(attn_mask.dtype) \
            else attn_mask.float()
        with autocast.suspended():
            output = scaled_dot_product_attention(query.float(), key.float(), value.float(),
                                                  mask, dropout_p, is_causal, scale,
                                                  enable_gqa)
        return output.to(low)
    dropout_p = validation.real(dropout_p, "scaled_dot_product_attention dropout_p",
                                low=0.0, high=1.0)
    scale = _attention_scale(scale, query.shape[-1], "scaled_dot_product_attention")
    if enable_gqa and key.shape[-3] != query.shape[-3]:
        key, value = (repeat_heads(t, query.shape[-3] // t.shape[-3]) for t in (key, value))
    length, keys = query.shape[-2], key.shape[-2]
    scores = query @ key.transpose(-2, -1)  # (..., L, S)
    if is_causal and length == keys:
        weights = causal_softmax(scores, scale)  # one fused node
    else:
        scores = scores * scale
        if is_causal:  # top-left: query i sees keys 0..i
            attn_mask = Tensor(~causal_forbidden(np, length, keys))
        if attn_mask is not None and attn_mask.dtype == np.bool_:
            scores = scores.masked_fill(~attn_mask, -math.inf)
        elif attn_mask is not None:
            scores = scores + attn_mask
        weights = scores.softmax(-1)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p)
    return weights @ value


def _check_sdpa(query: Any, key: Any, value: Any, attn_mask: Any, is_causal: Any,
                enable_gqa: Any) -> None:
    what = "scaled_dot_product_attention"
    for name, tensor in (("query", query), ("key", key), ("value", value)):
        _check_floating(tensor, f"{what} {name}")
        if tensor.ndim < 2:
            raise ValueError(f"{what} {name} must have at least 2 axes (..., length, width), "
                             f"got shape {tensor.shape}")
    _check_one_dtype(what, query, key, value)
    for name, flag in (("is_causal", is_causal), ("enable_gqa", enable_gqa)):
        if not isinstance(flag, (bool, np.bool_)):
            raise TypeError(f"{what} {name} must be a bool, got {flag!r}")
    if key.shape[-1] != query.shape[-1]:
        raise ValueError(f"{what}: the key's width {key.shape[-1]} differs from the query's "
                         f"{query.shape[-1]} (query {query.shape}, key {key.shape})")
    if value.shape[-2] != key.shape[-2]:
        raise ValueError(f"{what}: the value has {value.shape[-2]} positions, the key "
                         f"{key.shape[-2]} (key {key.shape}, value {value.shape})")
    if enable_gqa:
        heads = [t.shape[-3] if t.ndim >= 3 else 0 for t in (query, key, value)]
        if 0 in heads or heads[1] != heads[2] or heads[0] % heads[1]:
            raise ValueError(f"{what} with enable_gqa needs heads on axis -3, the key's and "
                             f"value's dividing the query's (query {query.shape}, key "
                             f"{key.shape}, value {value.shape})")
    if attn_mask is None:
        return
    if is_causal:
        raise ValueError(f"{what}: give attn_mask or is_causal=True, not both")
    _check_tensor(attn_mask, f"{what} attn_mask")
    if attn_mask.dtype != np.bool_ and attn_mask.dtype != query.dtype:
        raise TypeError(f"{what} attn_mask must be bool or the query's dtype {query.dtype}, "
                        f"got {attn_mask.dtype}")
    scores_shape = (*query.shape[:-1], key.shape[-2])
    try:
        np.broadcast_shapes(attn_mask.shape, scores_shape)
    except ValueError:
        raise ValueError(f"{what} attn_mask of shape {attn_mask.shape} does not broadcast "
                         f"to the scores' shape {scores_shape}") from None


def repeat_heads(tensor: Tensor, times: int) -> Tensor:
    """``(..., H, S, D)`` → ``(..., H·times, S, D)``, each head repeated ``times`` times in
    a row (PyTorch's ``repeat_interleave`` on axis -3, Hugging Face's ``repeat_kv``): how
    grouped-query attention gives each query head its key/value head. Gradients add up over
    the copies."""
    *leading, heads, length, width = tensor.shape
    wide = tensor.unsqueeze(-3).expand(*leading, heads, times, length, width)
    return wide.reshape(*leading, heads * times, length, width)
