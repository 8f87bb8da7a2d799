"""Attention's causal softmax, without the shift by the row maximum where none is needed, and
its backward in place over row blocks."""

from __future__ import annotations

import functools
import math
from types import ModuleType

import numpy as np

from tensorlib.engine.backend import array_module
from tensorlib.engine.kernels.reductions import row_sums
from tensorlib.engine.kernels.threads import cpu_elements, for_row_blocks
from tensorlib.engine.typing import Array

__all__ = ["causal_softmax_", "softmax_backward_"]


def causal_softmax_(scores: Array, offset: int = 0) -> Array:
    """Softmax over the last axis of a fresh ``(..., T, offset + T)`` score array in which
    query ``i`` may see keys ``0 .. offset + i`` (the rest get probability 0); overwrites
    ``scores`` and returns it.

    Stands in for: ``tensorlib.engine.ops.softmax.softmax(scores, causal=True, offset=offset)``,
    the textbook form: masked scores set to -inf, each row shifted by its maximum,
    p = exp(s - max) / Σ exp(s - max).
    How: softmax does not change when a row is shifted by a constant; the shift only guards
    exp against overflow and a whole row against underflow. A row whose scores are at most
    L and whose diagonal (its last visible key) is at least -L, with
    L = (ln(largest float) - ln T) / 2, is safe unshifted (see ``_unshifted_range``). Two
    reductions over a block of rows (its largest score, its smallest diagonal entry) show
    when no row of the block needs a shift; otherwise the rows that need one are shifted by their
    maximum. The decision looks at each row alone, so a row's probabilities never depend on
    other rows, nor on masked, future positions. The mask is added as a cached (T, T) array
    of 0 and -inf (faster than a masked assignment), and the row sums are
    ``tensorlib.engine.kernels.reductions.row_sums`` (einsum). The (T, offset + T) matrices are
    shared out between the kernels' threads in contiguous blocks (``for_row_blocks``),
    each block deciding for itself whether a row needs a shift: a row's probabilities are
    the same in any block, so the same for any thread count.
    Accuracy: the same probabilities to a few ulps (exp(s)/Σ exp(s) instead of
    exp(s - m)/Σ exp(s - m)); exact causality kept (tests/contracts/test_numerics.py, at ±1e4
    and with nan). A score of +inf above the diagonal becomes nan (inf - inf); scores that
    overflow the dtype make their row nan anyway.
    Measured: docs/performance.md, "Fused attention core" and
    "Two threads for the elementwise kernels".
    """
    xp = array_module(scores)
    if scores.size == 0:
        return scores
    queries, keys = scores.shape[-2:]
    limit = _unshifted_range(scores.dtype, keys)
    mask = _additive_causal_mask(xp, queries, keys, offset, scores.dtype) if queries > 1 \
        else None  # one query (the newest position) sees every key: nothing to mask
    matrices = scores.reshape(-1, queries, keys)  # a view when scores is contiguous

    def rows(start: int, stop: int) -> None:  # matrices start .. stop - 1, in place
        block = matrices[start:stop]
        diagonal = xp.diagonal(block, offset=offset, axis1=-2, axis2=-1)[..., None]
        unshifted = float(block.max()) <= limit and float(diagonal.min()) >= -limit
        if mask is not None:
            block += mask
        if not unshifted:  # rare: shift the rows that need it by their maximum
            row_max = block.max(axis=-1, keepdims=True)  # the diagonal is never masked
            in_range = (row_max <= limit) & (diagonal >= -limit)  # False for nan
            block -= xp.where(in_range, scores.dtype.type(0), row_max)
        probabilities = xp.exp(block, out=block)
        sums = row_sums(probabilities.reshape(-1, keys))
        probabilities /= sums.reshape(*block.shape[:-1], 1)

    for_row_blocks(rows, matrices.shape[0], cpu_elements(scores))
    if not xp.may_share_memory(matrices, scores):  # scores was not contiguous
        scores[...] = matrices.reshape(scores.shape)
    return scores


def softmax_backward_(grad_probabilities: Array, probabilities: Array, scale: float) -> Array:
    """The gradient of the scaled scores, ``scale · P ⊙ (dP - Σ_j dP ⊙ P)``, from a fresh
    ``grad_probabilities`` dP and the ``probabilities`` P of the same shape ``(..., T, S)``;
    overwrites ``grad_probabilities`` and returns it.

    Stands in for: the middle line of ``tensorlib.engine.ops.attention.CausalAttention.backward``.
    How: each row's Σ_j dP ⊙ P is an einsum dot product (no product array is formed), then
    three passes in place; the rows are shared out between the kernels' threads in
    contiguous blocks (``for_row_blocks``), each row computed by itself, so the thread count
    changes no bit.
    Accuracy: the same gradient to a few ulps (einsum's running sums instead of numpy's
    pairwise ones).
    Measured: docs/performance.md, "Two threads: what the GIL leaves".
    """
    xp = array_module(grad_probabilities)
    keys = grad_probabilities.shape[-1]
    grads = grad_probabilities.reshape(-1, keys)  # a view when dP is contiguous
    rows_of_p = probabilities.reshape(-1, keys)
    scale_ = grad_probabilities.dtype.type(scale)

    def rows(start: int, stop: int) -> None:  # rows start .. stop - 1, in place
        block, p = grads[start:stop], rows_of_p[start:stop]
        block -= xp.einsum("ij,ij->i", block, p)[:, None]
        block *= p
        block *= scale_

    for_row_blocks(rows, grads.shape[0], cpu_elements(grad_probabilities))
    if not xp.may_share_memory(grads, grad_probabilities):  # dP was not contiguous
        grad_probabilities[...] = grads.reshape(grad_probabilities.shape)
    return grad_probabilities


@functools.lru_cache(maxsize=32)
def _additive_causal_mask(xp: ModuleType, queries: int, keys: int, offset: int,
                          dtype: np.dtype) -> Array:
    """(T, offset + T): 0 where query i may see key j (j <= offset + i), -inf elsewhere; made
    once per shape (read-only)."""
    mask = xp.triu(xp.full((queries, keys), -xp.inf, dtype=dtype), k=offset + 1)
    if xp is np:
        mask.flags.writeable = False
    return mask


@functools.lru_cache(maxsize=64)
def _unshifted_range(dtype: np.dtype, length: int) -> float:
    """How far from 0 a row's scores may lie for its softmax to need no shift: within ±L,
    L = (ln(largest float) - ln T) / 2, no exp overflows, a row's sum stays below the
    largest float, and a row whose diagonal is at least -L sums to a normal number."""
    return (math.log(float(np.finfo(dtype).max)) - math.log(length)) / 2
