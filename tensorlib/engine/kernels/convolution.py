"""The input gradient of a 2-D convolution at stride 1, with the batch as the innermost axis."""

from __future__ import annotations

from typing import Any

from tensorlib.engine.backend import array_module
from tensorlib.engine.kernels.reductions import blas_product
from tensorlib.engine.typing import Array

__all__ = ["image_gradient_batch_last"]


def image_gradient_batch_last(filters: Array, rows: Array, geometry: tuple[Any, ...]) -> Array:
    """dx of a 2-D convolution at stride 1 and dilation 1, from ``filters (G, O/G, C/G·K)``
    and dy as ``rows (N, G, O/G, P)``; ``geometry`` is the op's (``Convolution.forward``).

    Stands in for: ``tensorlib.engine.ops.convolution.Convolution.image_gradient``: Wᵀ · dy
    as columns, one product per image, then each kernel offset's (N, C, H_out, W_out) slice
    added onto the padded image (col2im), in runs only W_out entries long.
    How: the same sums with the batch as the innermost axis. dy is copied to
    (G, O/G, H_out, W_out, N), the columns' gradient is one product per group,
    (C/G·K, O/G) · (O/G, H_out·W_out·N), and offset (i, j) is added onto the padded
    (C, H, W, N) image as runs of W_out·N entries, offsets in the op's order; the image is
    copied back to (N, C, H, W) at the end.
    Accuracy: the same sums in the same order; the product may round its last bit
    differently, as BLAS does for another shape (tests/engine/test_kernels.py).
    Measured: docs/performance.md, "The input gradient with the batch innermost".
    """
    x_shape, (height, width), (kernel_h, kernel_w), (out_h, out_w), _, padding, _, _ = geometry
    xp = array_module(rows)
    batch, channels = x_shape[:2]
    groups, per_group = rows.shape[1:3]
    grads = rows.reshape(batch, groups, per_group, out_h, out_w)
    grads = xp.ascontiguousarray(grads.transpose(1, 2, 3, 4, 0))  # (G, O/G, H_out, W_out, N)
    dcolumns = blas_product(filters.swapaxes(-1, -2),
                            grads.reshape(groups, per_group, -1))  # (G, C/G·K, H_out·W_out·N)
    dcolumns = dcolumns.reshape(channels, kernel_h, kernel_w, out_h, out_w, batch)
    image = xp.zeros((channels, height, width, batch), dtype=rows.dtype)  # padded, batch last
    for i in range(kernel_h):
        for j in range(kernel_w):
            image[:, i:i + out_h, j:j + out_w] += dcolumns[:, i, j]
    top, left = padding
    interior = image[:, top:top + x_shape[2], left:left + x_shape[3]]  # (C, H_in, W_in, N)
    return xp.ascontiguousarray(interior.transpose(3, 0, 1, 2))
