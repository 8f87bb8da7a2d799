"""Layer normalization's forward and backward over row blocks, on the kernels' threads."""

from __future__ import annotations

from tensorlib.engine.backend import array_module
from tensorlib.engine.kernels.reductions import column_sums, row_sums
from tensorlib.engine.kernels.threads import cpu_elements, for_row_blocks
from tensorlib.engine.typing import Array

__all__ = ["layer_norm", "layer_norm_backward"]


def layer_norm(x: Array, weight: Array | None, bias: Array | None,
               eps: float) -> tuple[Array, Array, Array]:
    """Layer normalization of ``x`` over its last axis: ``(out, normalized, inverse_std)``,
    with ``normalized`` x̂ and ``inverse_std`` r = 1/sqrt(var + eps) of shape (..., 1), the
    two arrays the backward needs; ``weight`` and ``bias`` may each be None.

    Stands in for: ``tensorlib.engine.ops.normalization.LayerNorm.forward``'s plain code: each row
    centred on its first entry, then on its mean, x̂ = (x - mean)·r with the biased
    variance, out = x̂ ⊙ weight + bias.
    How: the same passes (numpy runs each on one core), over contiguous blocks of rows
    shared out between the kernels' threads (``tensorlib.engine.kernels.threads.for_row_blocks``);
    a row's mean and variance are einsum row sums (``row_sums``, and ``einsum("ij,ij->i")``
    for the sum of squares, which forms no squared array), each row by itself, so the
    thread count changes no bit.
    Accuracy: the plain form's mean and variance to a few ulps (einsum's running partial
    sums instead of numpy's pairwise ones; tests/engine/test_kernels.py).
    Measured: docs/performance.md, "Two threads for the elementwise kernels".
    """
    xp = array_module(x)
    width = x.shape[-1]
    rows = x.reshape(-1, width)
    dtype = x.dtype.type
    scale, epsilon = dtype(1.0 / width), dtype(eps)
    normalized = xp.empty(rows.shape, dtype=x.dtype)
    inverse_std = xp.empty((rows.shape[0], 1), dtype=x.dtype)
    out = normalized if weight is None and bias is None else xp.empty_like(normalized)

    def block(start: int, stop: int) -> None:
        source, centred = rows[start:stop], normalized[start:stop]
        xp.subtract(source, source[:, :1], out=centred)  # a constant row becomes exactly 0
        mean = row_sums(centred)
        mean *= scale
        centred -= mean[:, None]
        variance = xp.einsum("ij,ij->i", centred, centred)
        variance *= scale  # biased, as PyTorch
        r = inverse_std[start:stop]
        xp.add(variance[:, None], epsilon, out=r)
        xp.sqrt(r, out=r)
        xp.divide(dtype(1.0), r, out=r)
        centred *= r  # x̂
        if weight is not None:
            xp.multiply(centred, weight, out=out[start:stop])
            if bias is not None:
                out[start:stop] += bias
        elif bias is not None:
            xp.add(centred, bias, out=out[start:stop])

    for_row_blocks(block, rows.shape[0], cpu_elements(rows))
    return (out.reshape(x.shape), normalized.reshape(x.shape),
            inverse_std.reshape(*x.shape[:-1], 1))


def layer_norm_backward(grad: Array, normalized: Array, inverse_std: Array, weight: Array | None,
                        wanted: tuple[bool, bool, bool]
                        ) -> tuple[Array | None, Array | None, Array | None]:
    """The gradients ``(dx, dweight, dbias)`` of ``layer_norm`` (None where ``wanted``, in
    that order, says a gradient is not needed); ``weight`` None when there is none.

    Stands in for: ``LayerNorm.backward``'s plain code, dx = r·(g - mean(g) - x̂·mean(g ⊙ x̂))
    with g = dy ⊙ weight, dweight = Σ_rows dy ⊙ x̂, dbias = Σ_rows dy.
    How: dy ⊙ x̂ and dx over blocks of rows on the kernels' threads, the two row means per
    row as einsum dot products with the weight (no g formed for them); the two sums over
    rows (dweight, dbias) afterwards on the calling thread, over the whole array
    (``tensorlib.engine.kernels.reductions.column_sums``), so they add in the same order
    whatever the thread count.
    Accuracy: a few ulps from the plain form (other orders of addition;
    tests/engine/test_kernels.py).
    Measured: docs/performance.md, "Two threads for the elementwise kernels".
    """
    xp = array_module(grad)
    width = grad.shape[-1]
    rows = grad.reshape(-1, width)
    flat_normalized = normalized.reshape(-1, width)
    flat_inverse = inverse_std.reshape(-1, 1)
    want_dx, want_weight, want_bias = wanted
    scale = grad.dtype.type(1.0 / width)
    projected = xp.empty_like(rows) if want_dx or want_weight else None
    dx = xp.empty_like(rows) if want_dx else None

    def block(start: int, stop: int) -> None:
        g, x_hat = rows[start:stop], flat_normalized[start:stop]
        assert projected is not None  # blocks run only when it was made
        p = projected[start:stop]
        xp.multiply(g, x_hat, out=p)  # dy ⊙ x̂
        if dx is None:
            return
        if weight is None:
            mean_g, mean_g_normalized = row_sums(g), row_sums(p)
        else:
            mean_g = xp.einsum("ij,j->i", g, weight)  # Σ dy ⊙ w
            mean_g_normalized = xp.einsum("ij,j->i", p, weight)  # Σ dy ⊙ x̂ ⊙ w
        mean_g *= scale
        mean_g_normalized *= scale
        correction = xp.multiply(x_hat, mean_g_normalized[:, None])
        correction += mean_g[:, None]  # x̂ · mean(g ⊙ x̂) + mean(g)
        d = dx[start:stop]
        if weight is None:
            xp.subtract(g, correction, out=d)
        else:
            xp.multiply(g, weight, out=d)  # g
            d -= correction
        d *= flat_inverse[start:stop]  # r · (g - mean(g) - x̂ · mean(g ⊙ x̂))

    if projected is not None:
        for_row_blocks(block, rows.shape[0], cpu_elements(rows))
    grad_weight = column_sums(projected) if want_weight and projected is not None else None
    grad_bias = column_sums(rows) if want_bias else None
    return (None if dx is None else dx.reshape(grad.shape)), grad_weight, grad_bias
