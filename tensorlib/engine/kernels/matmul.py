"""A batch of rows times one shared matrix, as a single GEMM."""

from __future__ import annotations

import math

from tensorlib.engine.typing import Array

__all__ = ["shared_matmul", "shared_matmul_backward"]


def shared_matmul(a: Array, b: Array) -> Array:
    """``a (..., K) @ b (K, N)`` with the batch axes of ``a`` folded into rows.

    Stands in for: ``numpy.matmul(a, b)``, which multiplies one (T, K) matrix per batch
    entry. How: ``a`` reshaped to (M, K), one (M, K) @ (K, N) product, reshaped back.
    Accuracy: the same dot products, blocked differently by BLAS (a few ulps).
    Measured: docs/performance.md, "A batch of rows times one shared matrix".
    """
    rows = a.reshape(math.prod(a.shape[:-1]), a.shape[-1])  # (M, K); M or K may be 0
    return (rows @ b).reshape(*a.shape[:-1], b.shape[-1])


def shared_matmul_backward(a: Array, b: Array, grad: Array,
                           needs: tuple[bool, ...]) -> tuple[Array | None, Array | None]:
    """The gradients of ``shared_matmul``: dA = dC Bᵀ and dB = Σ_batch Aᵀ dC, each one GEMM
    over the folded rows (None where ``needs`` says a gradient is not wanted).

    Stands in for: the batched products followed by a sum over the batch axes
    (``tensorlib.engine.ops.matmul.MatMul.backward``'s general case). Accuracy: a few ulps.
    Measured: docs/performance.md, "A batch of rows times one shared matrix".
    """
    rows_grad = grad.reshape(math.prod(grad.shape[:-1]), grad.shape[-1])  # (M, N)
    grad_a = (rows_grad @ b.T).reshape(*grad.shape[:-1], b.shape[0]) if needs[0] else None
    grad_b = a.reshape(len(rows_grad), a.shape[-1]).T @ rows_grad if needs[1] else None
    return grad_a, grad_b
