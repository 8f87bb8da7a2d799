"""Row and column sums as BLAS matrix-vector products.

These are drop-ins: each computes exactly what the numpy expression in its docstring
computes (up to the order of the additions), and in reference mode it evaluates that
expression instead.

How: numpy reduces along many short rows one row at a time, while a matrix-vector product
against a vector of ones is one BLAS call.
Accuracy: BLAS adds each row in its own order (blocked, with several partial sums), numpy
pairwise; both are within a few ulps of the exact sum for rows of the length used here.
Measured: docs/performance.md, "Layer norm, and sums as BLAS products".
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

from tensorlib.backend import array_module
from tensorlib.kernels.mode import enabled

__all__ = ["blas_product", "column_sum", "constant_vector", "row_mean", "row_sum"]

_CONSTANT_VECTORS: dict[tuple[Any, float, Any], Any] = {}


def constant_vector(xp: ModuleType, size: int, value: float, dtype: Any) -> Any:
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


def blas_product(a: Any, b: Any) -> Any:
    """``a @ b``, without numpy's "invalid value" warning. OpenBLAS kernels can leave the
    CPU's invalid-operation flag set on finite data (numpy issue 24067, OpenBLAS issue
    1924), which numpy reports as a RuntimeWarning, now and then. A nan or inf that is
    really in ``a`` or ``b`` still reaches the result, so only the false alarm is lost."""
    with np.errstate(invalid="ignore"):
        return a @ b


def _row_dot(a: Any, vector: Any) -> Any:
    """Each row of ``a`` (its last axis) dotted with ``vector``, kept as an axis of size 1."""
    products = blas_product(a.reshape(-1, a.shape[-1]), vector)  # (N,)
    return products.reshape(*a.shape[:-1], 1)


def row_sum(a: Any) -> Any:
    """The sum over the last axis, kept as an axis of size 1.

    Plain formula: ``a.sum(axis=-1, keepdims=True)``.
    """
    if not enabled():
        return a.sum(axis=-1, keepdims=True)
    return _row_dot(a, constant_vector(array_module(a), a.shape[-1], 1.0, a.dtype))


def row_mean(a: Any, weight: Any = None) -> Any:
    """The mean over the last axis of ``a ⊙ weight`` (of ``a`` when ``weight`` is None),
    kept as an axis of size 1, without forming ``a ⊙ weight``.

    Plain formula: ``(a * weight).mean(axis=-1, keepdims=True)``.
    """
    width = a.shape[-1]
    if not enabled():
        return (a if weight is None else a * weight).mean(axis=-1, keepdims=True)
    if weight is None:
        return _row_dot(a, constant_vector(array_module(a), width, 1.0 / width, a.dtype))
    return _row_dot(a, weight / a.dtype.type(width))


def column_sum(rows: Any) -> Any:
    """The sum of the rows of a 2-D array (over its first axis).

    Plain formula: ``rows.sum(axis=0)``.
    """
    if not enabled():
        return rows.sum(axis=0)
    return blas_product(constant_vector(array_module(rows), rows.shape[0], 1.0, rows.dtype), rows)
