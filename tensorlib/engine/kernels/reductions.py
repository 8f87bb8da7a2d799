"""The kernels' sums along rows and columns, in the two ways they add.

- ``row_sums`` (einsum) adds each row by itself, in an order that does not depend on the
  rows around it: what the kernels that share rows out between threads use, so that a
  row's sum is the same in any block (``tensorlib.engine.kernels.threads``).
- ``blas_row_sum`` and ``blas_column_sum`` are matrix-vector products against a vector of
  ones: one BLAS call where numpy would reduce many short rows one at a time. BLAS rounds a
  row differently depending on how many rows it is given and how it splits them, so these
  are for the kernels that run on one thread.

Each computes what the numpy expression in its docstring computes, up to the order of the
additions: within a few ulps of the exact sum for the row lengths of these kernels.
Measured: docs/performance.md, "Layer norm, and sums as BLAS products" and "Two threads for
the elementwise kernels".
"""

from __future__ import annotations

import math
from types import ModuleType

import numpy as np

from tensorlib.engine.backend import array_module
from tensorlib.engine.typing import Array

__all__ = ["blas_column_sum", "blas_product", "blas_row_sum", "constant_vector", "row_sums"]

_CONSTANT_VECTORS: dict[tuple[ModuleType, float, np.dtype], Array] = {}


def constant_vector(xp: ModuleType, size: int, value: float, dtype: np.dtype) -> Array:
    """A read-only vector of ``size`` copies of ``value`` in array module ``xp``: a view of
    one cached array per (module, value, dtype), made longer when a longer one is asked
    for. The constant operand of the BLAS sums below."""
    key = (xp, float(value), np.dtype(dtype))
    full = _CONSTANT_VECTORS.get(key)
    if full is None or full.shape[0] < size:
        full = xp.full(size, value, dtype=dtype)
        if xp is np:
            full.flags.writeable = False
        _CONSTANT_VECTORS[key] = full
    return full[:size]


def blas_product(a: Array, b: Array) -> Array:
    """``a @ b``, without numpy's "invalid value" warning. OpenBLAS kernels can leave the
    CPU's invalid-operation flag set on finite data (numpy issue 24067, OpenBLAS issue
    1924), which numpy reports as a RuntimeWarning, now and then. A nan or inf that is
    really in ``a`` or ``b`` still reaches the result, so only the false alarm is lost."""
    with np.errstate(invalid="ignore"):
        return a @ b


def _row_dot(a: Array, vector: Array) -> Array:
    """Each row of ``a`` (its last axis) dotted with ``vector``, kept as an axis of size 1."""
    products = blas_product(a.reshape(math.prod(a.shape[:-1]), a.shape[-1]), vector)  # (N,)
    return products.reshape(*a.shape[:-1], 1)


def row_sums(a: Array) -> Array:
    """The sum of each row of a 2-D float array, as a new 1-D array.

    Plain formula: ``a.sum(axis=1)``. How: ``einsum("ij->i", a)``, each row in a few
    running partial sums (not numpy's pairwise order), in the same order whatever the rows
    around it.
    """
    return array_module(a).einsum("ij->i", a)


def blas_row_sum(a: Array) -> Array:
    """The sum over the last axis, kept as an axis of size 1.

    Plain formula: ``a.sum(axis=-1, keepdims=True)``.
    """
    return _row_dot(a, constant_vector(array_module(a), a.shape[-1], 1.0, a.dtype))


def blas_column_sum(rows: Array) -> Array:
    """The sum of the rows of a 2-D array (over its first axis).

    Plain formula: ``rows.sum(axis=0)``.
    """
    return blas_product(constant_vector(array_module(rows), rows.shape[0], 1.0, rows.dtype), rows)
