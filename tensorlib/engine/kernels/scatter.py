"""Embedding's backward: rows summed by id with a sort and one ``reduceat``."""

from __future__ import annotations

import numpy as np

from tensorlib.engine.backend import array_module
from tensorlib.engine.kernels.threads import for_row_blocks
from tensorlib.engine.typing import Array

__all__ = ["rows_summed_by_id"]


def rows_summed_by_id(ids: Array, rows: Array, count: int) -> Array:
    """A new ``(count, C)`` array whose row ``v`` is the sum of the ``rows (N, C)`` whose
    ``ids (N,)`` equal ``v`` (zero for ids that do not occur).

    Stands in for: ``full = zeros((count, C)); numpy.add.at(full, ids, rows)``.
    How: where ``add.at`` scatters element by element, a stable sort makes equal ids
    neighbours and ``numpy.add.reduceat`` sums each run of rows (on a GPU, and for no ids,
    ``add.at`` itself). The runs, that is the output rows, are shared out in contiguous
    blocks between the kernels' threads (``tensorlib.engine.kernels.threads``): each output row is
    summed whole, in input order, by one thread, so the sums are the same for any thread
    count.
    Accuracy: the same sums, added in another order by ``reduceat``: a few ulps.
    Measured: docs/performance.md, "The engine" and "Two threads for the elementwise
    kernels".
    """
    xp = array_module(rows)
    full = xp.zeros((count, rows.shape[-1]), dtype=rows.dtype)
    if xp is not np or ids.size == 0:
        xp.add.at(full, ids, rows)
        return full
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    starts = np.flatnonzero(np.concatenate(([True], sorted_ids[1:] != sorted_ids[:-1])))
    ends = np.append(starts[1:], ids.size)

    def block(first: int, last: int) -> None:  # the runs (distinct ids) first .. last - 1
        begin, end = starts[first], ends[last - 1]
        full[sorted_ids[starts[first:last]]] = np.add.reduceat(
            rows[order[begin:end]], starts[first:last] - begin, axis=0)

    for_row_blocks(block, starts.size, rows.size)
    return full
