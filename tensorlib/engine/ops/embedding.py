"""Embedding lookup: rows of a table gathered by integer ids, one node."""

from __future__ import annotations

from tensorlib.engine.autograd import Context
from tensorlib.engine.backend import array_module
from tensorlib.engine.ops.function import Function
from tensorlib.engine.typing import Array


class Embedding(Function):
    """``weight[ids]``: rows of ``weight (V, C)`` picked by integer ``ids (...)`` (checked by
    ``tensorlib.nn.functional``). Backward: dW[v] = Σ dy[n] over the positions n whose id is
    v (repeated ids accumulate): the step ``rows_summed_by_id``, called through
    ``ctx.function`` (this op, or the kernel registered in its place)."""

    @staticmethod
    def forward(ctx: Context, weight: Array, ids: Array) -> Array:
        ids = array_module(weight).asarray(ids)
        ctx.ids, ctx.weight_shape = ids, weight.shape
        return weight[ids]  # (*ids.shape, C)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        vocabulary, width = ctx.weight_shape
        ids = ctx.ids.reshape(-1)  # (N,)
        rows = grad.reshape(-1, width)  # (N, C)
        return ctx.function.rows_summed_by_id(ids, rows, vocabulary)

    @staticmethod
    def rows_summed_by_id(ids: Array, rows: Array, count: int) -> Array:
        """``(count, C)``: row v is the sum of the ``rows (N, C)`` whose id is v."""
        xp = array_module(rows)
        full = xp.zeros((count, rows.shape[1]), dtype=rows.dtype)  # (V, C)
        xp.add.at(full, ids, rows)
        return full
