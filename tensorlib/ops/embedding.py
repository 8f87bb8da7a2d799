"""Embedding lookup: rows of a table gathered by integer ids, one node."""

from __future__ import annotations

from typing import Any

from tensorlib import kernels
from tensorlib.autograd import Context
from tensorlib.backend import array_module
from tensorlib.ops.function import Function


class Embedding(Function):
    """``weight[ids]``: rows of ``weight (V, C)`` picked by integer ``ids (...)`` (checked by
    ``tensorlib.nn.functional``). Backward: dW[v] = Σ dy[n] over the positions n whose id is
    v (repeated ids accumulate)."""

    op_name = "embedding"

    @staticmethod
    def forward(ctx: Context, weight: Any, ids: Any) -> Any:
        ids = array_module(weight).asarray(ids)
        ctx.ids, ctx.weight_shape = ids, weight.shape
        return weight[ids]  # (*ids.shape, C)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        xp = array_module(grad)
        vocabulary, width = ctx.weight_shape
        ids = ctx.ids.reshape(-1)  # (N,)
        rows = grad.reshape(-1, width)  # (N, C)
        if kernels.enabled():
            return kernels.rows_summed_by_id(ids, rows, vocabulary)
        full = xp.zeros(ctx.weight_shape, dtype=grad.dtype)  # (V, C)
        xp.add.at(full, ids, rows)
        return full
