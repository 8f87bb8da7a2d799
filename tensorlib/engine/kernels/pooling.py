"""2×2 max pooling in two halves: pairs, then rows.

``max_pool_2x2`` and ``max_pool_2x2_backward`` stand in for the forward and backward of
``tensorlib.engine.ops.convolution.MaxPool`` with a 2×2 window, stride 2 and no padding (the
pooling of nearly every small CNN).
"""

from __future__ import annotations

import numpy as np

from tensorlib.engine.typing import Array

__all__ = ["max_pool_2x2", "max_pool_2x2_backward"]


def max_pool_2x2(x: Array) -> tuple[Array, Array]:
    """2×2 max pooling with stride 2 of ``x (N, C, H, W)`` with no padding, and which entry
    of each window gave its maximum (0 to 3, row-major), as ``MaxPool`` records it.

    Stands in for: ``MaxPool.forward``'s walk over the 4 kernel offsets, each a comparison,
    a maximum and a masked write over strided slices.
    How: the maximum of each horizontal pair first (a later entry wins only when strictly
    greater), then of the two rows' results; the chosen entry is 2·row + column, the column
    taken from the winning row. That is the first maximum in row-major order, as the op
    and PyTorch choose. A window holding NaN is left to the op's walk (the caller checks).
    Accuracy: exact (a maximum rounds nothing): the same outputs and choices as the op.
    Measured: docs/performance.md, "Convolutions: cases (g) and (h)".
    """
    rows, cols = x.shape[2] // 2 * 2, x.shape[3] // 2 * 2
    pairs = x[:, :, :rows, :cols].reshape(x.shape[:2] + (rows // 2, 2, cols // 2, 2))
    left, right = pairs[..., 0], pairs[..., 1]                      # (N, C, H/2, 2, W/2)
    column = right > left                                           # the right one wins
    best_in_row = np.maximum(left, right)
    top, bottom = best_in_row[:, :, :, 0], best_in_row[:, :, :, 1]  # (N, C, H/2, W/2)
    lower = bottom > top
    best = np.maximum(top, bottom)
    column_of = column.view(np.int8)                                # 0 or 1 per row
    top_column, bottom_column = column_of[:, :, :, 0], column_of[:, :, :, 1]
    lower_row = lower.view(np.int8)
    # the winning row's column, top's or bottom's, by bits: top ^ ((top ^ bottom) & lower)
    picked = np.bitwise_xor(top_column, bottom_column)
    picked &= lower_row
    picked ^= top_column
    picked += lower_row * np.int8(2)                                # + 2·row
    return best, picked


def max_pool_2x2_backward(grad: Array, chosen: Array, x_shape: tuple[int, ...]) -> Array:
    """The gradient of ``max_pool_2x2`` for ``x_shape``: each output's gradient written at the
    entry its window chose, and 0 elsewhere, whatever the upstream gradient holds there
    (NaN or infinity too, as the op's ``gated``)."""
    rows, cols = x_shape[2] // 2 * 2, x_shape[3] // 2 * 2
    exact = rows == x_shape[2] and cols == x_shape[3]
    dx = (np.empty if exact else np.zeros)(x_shape, dtype=grad.dtype)
    pairs = dx[:, :, :rows, :cols].reshape(x_shape[:2] + (rows // 2, 2, cols // 2, 2))
    finite = bool(np.isfinite(grad).all())
    for index in range(4):
        target = pairs[:, :, :, index // 2, :, index % 2]                # (N, C, H/2, W/2)
        if finite:
            np.multiply(grad, chosen == index, out=target)
        else:
            target[...] = np.where(chosen == index, grad, 0)
    return dx
