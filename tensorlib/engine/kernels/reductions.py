"""The kernels' sums along rows and columns, and their BLAS products.

``row_sums`` and ``column_sums`` (einsum) add each row, or each column, in an order that
depends neither on the rows around it nor on any thread count: einsum runs on the calling
thread. OpenBLAS's matrix-vector product against a vector of ones, which these kernels used
before, is as fast, but rounds a sum differently depending on how many rows it is given and
on how many threads it splits the work between (float32 (4096, 128) at 3 threads against 1,
for one: docs/performance.md, "Two threads: what the GIL leaves").

Each computes what the numpy expression in its docstring computes, up to the order of the
additions: within a few ulps of the exact sum for the row lengths of these kernels.
Measured: docs/performance.md, "Layer norm, and sums as BLAS products" and "Two threads for
the elementwise kernels".
"""

from __future__ import annotations

import numpy as np

from tensorlib.engine.backend import array_module
from tensorlib.engine.typing import Array

__all__ = ["blas_product", "column_sums", "row_sums"]


def blas_product(a: Array, b: Array) -> Array:
    """``a @ b``, without numpy's "invalid value" warning. OpenBLAS kernels can leave the
    CPU's invalid-operation flag set on finite data (numpy issue 24067, OpenBLAS issue
    1924), which numpy reports as a RuntimeWarning, now and then. A nan or inf that is
    really in ``a`` or ``b`` still reaches the result, so only the false alarm is lost."""
    with np.errstate(invalid="ignore"):
        return a @ b


def row_sums(a: Array) -> Array:
    """The sum of each row of a 2-D float array, as a new 1-D array.

    Plain formula: ``a.sum(axis=1)``. How: ``einsum("ij->i", a)``, each row in a few
    running partial sums (not numpy's pairwise order), in the same order whatever the rows
    around it.
    """
    return array_module(a).einsum("ij->i", a)


def column_sums(rows: Array) -> Array:
    """The sum of the rows of a 2-D float array (over its first axis), as a new 1-D array.

    Plain formula: ``rows.sum(axis=0)``. How: ``einsum("ij->j", rows)``, the rows added
    one after another into the running sums, on the calling thread.
    """
    return array_module(rows).einsum("ij->j", rows)
