"""Matrix products: ``matmul`` with numpy's rules (batched, broadcasting batch axes, 1-D
operands) and the fused ``linear`` layer, x Wᵀ + b."""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any

from tensorlib.engine.autograd import Context, unbroadcast
from tensorlib.engine.backend import array_module
from tensorlib.engine.ops.function import Function
from tensorlib.engine.typing import Array


def _check_matmul_shapes(a: Array, b: Array) -> None:
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(f"matmul needs at least 1-D operands, got shapes {a.shape} and {b.shape}")
    inner_a = a.shape[-1]
    inner_b = b.shape[0] if b.ndim == 1 else b.shape[-2]
    if inner_a != inner_b:
        raise ValueError(f"matmul: shapes {a.shape} and {b.shape} are not aligned "
                         f"({inner_a} != {inner_b})")
    try:
        array_module(a).broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        raise ValueError(f"matmul: batch axes of {a.shape} and {b.shape} cannot be "
                         "broadcast together") from None


def quiet_products(xp: ModuleType) -> Any:
    """A context in which matrix products give NaN for inf · 0 and inf on overflow quietly,
    as PyTorch's do (numpy's would warn)."""
    return xp.errstate(invalid="ignore", over="ignore")


class MatMul(Function):
    """C = A @ B. With 1-D operands promoted to matrices, dA = dC @ Bᵀ and dB = Aᵀ @ dC,
    each summed over the batch axes that were broadcast. Each operand is saved only when
    the other's gradient needs it."""

    autocast = "lower"

    @staticmethod
    def forward(ctx: Context, a: Array, b: Array) -> Array:
        _check_matmul_shapes(a, b)
        wants_a, wants_b = ctx.needs_input_grad
        ctx.save_for_backward(a if wants_b else None, b if wants_a else None)
        ctx.shapes = (a.shape, b.shape)
        xp = array_module(a)
        with quiet_products(xp):
            return xp.matmul(a, b)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> tuple[Array | None, ...]:
        a, b = ctx.saved_tensors
        shape_a, shape_b = ctx.shapes
        xp = array_module(grad)
        if len(shape_b) == 1:  # first, so that vec @ vec's 0-d grad becomes (1,) then (1, 1)
            grad = xp.expand_dims(grad, -1)
        if len(shape_a) == 1:
            grad = xp.expand_dims(grad, -2)
        grad_a = grad_b = None
        with quiet_products(xp):
            if ctx.needs_input_grad[0]:
                b2 = b[:, None] if b.ndim == 1 else b  # (K, 1) for a vector on the right
                matrix_shape = (1, *shape_a) if len(shape_a) == 1 else shape_a  # (1, K)
                grad_a = unbroadcast(xp.matmul(grad, xp.swapaxes(b2, -1, -2)), matrix_shape)
                grad_a = grad_a.reshape(shape_a)
            if ctx.needs_input_grad[1]:
                a2 = a[None, :] if a.ndim == 1 else a  # (1, K) for a vector on the left
                matrix_shape = (*shape_b, 1) if len(shape_b) == 1 else shape_b
                grad_b = unbroadcast(xp.matmul(xp.swapaxes(a2, -1, -2), grad), matrix_shape)
                grad_b = grad_b.reshape(shape_b)
        return grad_a, grad_b


class Linear(Function):
    """y = x Wᵀ + b over the last axis of ``x (..., in)``, one node.

    The leading axes are folded into rows, so forward and each gradient are one matrix
    product: with dy as rows (N, out), dx = dy W, dW = dyᵀ x, db = Σ_rows dy. The steps
    ``add_bias`` and ``column_sum`` are called through ``ctx.function`` (this op, or the
    kernel registered in its place).
    """

    autocast = "lower"

    @staticmethod
    def forward(ctx: Context, x: Array, weight: Array, bias: Array | None) -> Array:
        rows = x.reshape(math.prod(x.shape[:-1]), x.shape[-1])  # (N, in); N, in may be 0
        with quiet_products(array_module(x)):
            out = rows @ weight.T  # (N, out)
        if bias is not None:
            out = ctx.function.add_bias(out, bias)
        # x is saved only for the weight's gradient; the weight always, so that a graph
        # recorded before Module.to moved it refuses backward (the move bumps its version)
        ctx.save_for_backward(x if ctx.needs_input_grad[1] else None, weight)
        ctx.input_shape = x.shape
        return out.reshape(*x.shape[:-1], weight.shape[0])

    @staticmethod
    def backward(ctx: Context, grad: Array) -> tuple[Array | None, ...]:
        x, weight = ctx.saved_tensors
        rows_grad = grad.reshape(math.prod(grad.shape[:-1]), grad.shape[-1])  # (N, out)
        wanted = ctx.needs_input_grad
        with quiet_products(array_module(grad)):
            grad_x = (rows_grad @ weight).reshape(ctx.input_shape) if wanted[0] else None
            grad_weight = rows_grad.T @ x.reshape(len(rows_grad), x.shape[-1]) if wanted[1] \
                else None
        grad_bias = ctx.function.column_sum(rows_grad) if wanted[2] else None
        return grad_x, grad_weight, grad_bias

    @staticmethod
    def add_bias(out: Array, bias: Array) -> Array:
        """``out + bias``, the bias added to every row."""
        return out + bias

    @staticmethod
    def column_sum(rows: Array) -> Array:
        """Σ over the rows of a 2-D array."""
        return rows.sum(axis=0)
