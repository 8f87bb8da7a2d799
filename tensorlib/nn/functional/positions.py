"""Rotary position embedding (RoPE; Su et al., 2021), as Llama applies it to queries and keys.

A head's ``D`` features are ``D/2`` pairs, and the pair ``i`` of the vector at position ``p``
is turned by the angle ``p · theta^(-2i/D)``: the score ``q · k`` of a query at ``m`` and a
key at ``n`` then depends on the positions only through ``m - n``. Llama's layout pairs
feature ``i`` with feature ``i + D/2`` (the two halves), and so do these functions:

    out = x · cos + rotate_half(x) · sin,   rotate_half([x₁, x₂]) = [-x₂, x₁]

with ``cos`` and ``sin`` holding each pair's angle twice, once per half. Built from the
engine's ops (slices, a concatenation, products), so the gradient comes with them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorlib.engine import validation
from tensorlib.engine.factories import cat
from tensorlib.engine.tensor import Tensor
from tensorlib.nn.functional.arguments import _check_floating, _check_one_dtype

__all__ = ["apply_rotary", "rotary_tables", "rotate_half"]


def rotary_tables(length: int, head_dim: int, theta: float = 10000.0, offset: int = 0,
                  dtype: Any = np.float32) -> tuple[Tensor, Tensor]:
    """``(cos, sin)``, each ``(length, head_dim)``: for the positions ``offset`` to
    ``offset + length - 1``, the angle of pair ``i`` is ``position · theta^(-2i/head_dim)``,
    written at features ``i`` and ``i + head_dim/2``. Computed in float64, then cast."""
    length = validation.dimension(length, "rotary length")
    head_dim = validation.dimension(head_dim, "rotary head_dim")
    if head_dim % 2:
        raise ValueError(f"rotary embedding needs an even head_dim (pairs of features), "
                         f"got {head_dim}")
    theta = validation.positive(theta, "rotary theta")
    offset = validation.integer(offset, "rotary offset", minimum=0)
    dtype = validation.float_dtype(dtype)
    frequencies = theta ** (-np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)  # (D/2,)
    positions = np.arange(offset, offset + length, dtype=np.float64)                 # (T,)
    angles = np.outer(positions, frequencies)                                        # (T, D/2)
    angles = np.concatenate([angles, angles], axis=-1)                               # (T, D)
    return Tensor(np.cos(angles).astype(dtype)), Tensor(np.sin(angles).astype(dtype))


def rotate_half(x: Tensor) -> Tensor:
    """``[-x₂, x₁]`` for ``x = [x₁, x₂]`` split in two halves along the last axis."""
    half = x.shape[-1] // 2
    return cat([-x[..., half:], x[..., :half]], dim=-1)


def apply_rotary(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """``x (..., T, D)`` with each position's feature pairs turned by the angles in ``cos``
    and ``sin`` (each ``(T, D)``, from :func:`rotary_tables`, or broadcastable to ``x``)."""
    _check_floating(x, "apply_rotary input")
    _check_floating(cos, "apply_rotary cos")
    _check_floating(sin, "apply_rotary sin")
    _check_one_dtype("apply_rotary", x, cos, sin)
    if x.ndim < 2 or x.shape[-1] % 2:
        raise ValueError(f"apply_rotary expects (..., T, D) with an even D, got shape {x.shape}")
    if cos.shape != sin.shape or cos.shape[-2:] != x.shape[-2:]:
        raise ValueError(f"apply_rotary cos {cos.shape} and sin {sin.shape} must both end in "
                         f"the input's (T, D) = {x.shape[-2:]}")
    return x * cos + rotate_half(x) * sin
