"""Binary arithmetic with broadcasting: forward and backward side by side.

Each backward first computes the gradient at the broadcast (output) shape, then
``unbroadcast`` sums it back to the input's shape.
"""

from __future__ import annotations

import numpy as np

from tensorlib.engine.autograd import Context, unbroadcast
from tensorlib.engine.backend import array_module
from tensorlib.engine.dtypes import float32, is_low_precision, to_float32
from tensorlib.engine.ops.function import Function
from tensorlib.engine.typing import Array


def _check_broadcast(name: str, a: Array, b: Array) -> None:
    try:
        array_module(a).broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise ValueError(f"{name}: shapes {a.shape} and {b.shape} cannot be broadcast "
                         "together") from None


class Add(Function):
    @staticmethod
    def forward(ctx: Context, a: Array, b: Array) -> Array:
        _check_broadcast("add", a, b)
        ctx.shapes = (a.shape, b.shape)
        return a + b

    @staticmethod
    def backward(ctx: Context, grad: Array) -> tuple[Array | None, ...]:
        shape_a, shape_b = ctx.shapes
        return unbroadcast(grad, shape_a), unbroadcast(grad, shape_b)


class Sub(Function):
    @staticmethod
    def forward(ctx: Context, a: Array, b: Array) -> Array:
        _check_broadcast("sub", a, b)
        ctx.shapes = (a.shape, b.shape)
        return a - b

    @staticmethod
    def backward(ctx: Context, grad: Array) -> tuple[Array | None, ...]:
        shape_a, shape_b = ctx.shapes
        grad_b = unbroadcast(-grad, shape_b) if ctx.needs_input_grad[1] else None
        return unbroadcast(grad, shape_a), grad_b


class Mul(Function):
    """a · b. Each operand is saved only when the other's gradient needs it, so a constant
    factor may change in place after the forward."""

    @staticmethod
    def forward(ctx: Context, a: Array, b: Array) -> Array:
        _check_broadcast("mul", a, b)
        wants_a, wants_b = ctx.needs_input_grad
        ctx.save_for_backward(a if wants_b else None, b if wants_a else None)
        ctx.shapes = (a.shape, b.shape)
        return a * b

    @staticmethod
    def backward(ctx: Context, grad: Array) -> tuple[Array | None, ...]:
        a, b = ctx.saved_tensors
        shape_a, shape_b = ctx.shapes
        grad_a = unbroadcast(grad * b, shape_a) if ctx.needs_input_grad[0] else None
        grad_b = unbroadcast(grad * a, shape_b) if ctx.needs_input_grad[1] else None
        return grad_a, grad_b


class Div(Function):
    """a / b; the numerator is saved only when the divisor's gradient needs it."""

    @staticmethod
    def forward(ctx: Context, a: Array, b: Array) -> Array:
        _check_broadcast("div", a, b)
        ctx.save_for_backward(a if ctx.needs_input_grad[1] else None, b)
        ctx.shapes = (a.shape, b.shape)
        return a / b

    @staticmethod
    def backward(ctx: Context, grad: Array) -> tuple[Array | None, ...]:
        a, b = ctx.saved_tensors
        shape_a, shape_b = ctx.shapes
        grad_a = unbroadcast(grad / b, shape_a) if ctx.needs_input_grad[0] else None
        grad_b = unbroadcast(-grad * a / (b * b), shape_b) if ctx.needs_input_grad[1] else None
        return grad_a, grad_b


class Pow(Function):
    """``a ** b`` with both operands tensors. d/da = b·a^(b-1), 0 where b = 0; d/db =
    a^b·log(a), 0 where a = 0 and b >= 0 (nan for a < 0, as in PyTorch)."""

    @staticmethod
    def forward(ctx: Context, a: Array, b: Array) -> Array:
        _check_broadcast("pow", a, b)
        out = a ** b
        ctx.save_for_backward(a, b, out)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Array) -> tuple[Array | None, ...]:
        a, b, out = ctx.saved_tensors
        xp = array_module(a)
        grad_a = grad_b = None
        with xp.errstate(divide="ignore", invalid="ignore"):
            if ctx.needs_input_grad[0]:
                grad_a = unbroadcast(xp.where(b == 0, 0, grad * b * a ** (b - 1))
                                     .astype(a.dtype), a.shape)
            if ctx.needs_input_grad[1]:
                grad_b = unbroadcast(xp.where((a == 0) & (b >= 0), 0, grad * out * xp.log(a))
                                     .astype(b.dtype), b.shape)
        return grad_a, grad_b


class PowScalar(Function):
    """``a ** p`` for a Python number ``p``; d/da = p·a^(p-1), and 0 for p = 0."""

    op_name = "pow"

    @staticmethod
    def forward(ctx: Context, a: Array, exponent: float) -> Array:
        ctx.save_for_backward(a)
        ctx.exponent = exponent
        if exponent == 2.0:
            return a * a
        return a ** exponent

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        (a,) = ctx.saved_tensors
        p = ctx.exponent
        if p == 2.0:
            return grad * (2.0 * a)
        if p == 0.0:
            return array_module(grad).zeros_like(grad)
        return grad * (p * a ** (p - 1.0))


class Neg(Function):
    @staticmethod
    def forward(ctx: Context, a: Array) -> Array:
        return -a

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        return -grad


class Maximum(Function):
    """Elementwise maximum; at ties the gradient is split evenly between the two inputs.
    Where one is nan (no order), each gets the whole gradient, as in PyTorch."""

    @staticmethod
    def forward(ctx: Context, a: Array, b: Array) -> Array:
        _check_broadcast("maximum", a, b)
        ctx.save_for_backward(a, b)
        return array_module(a).maximum(a, b)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> tuple[Array | None, ...]:
        a, b = ctx.saved_tensors
        xp = array_module(a)
        tie = a == b
        grad_a = grad_b = None
        if ctx.needs_input_grad[0]:
            share_a = xp.where(tie, 0.5, xp.where(a < b, 0.0, 1.0)).astype(grad.dtype)
            grad_a = unbroadcast(grad * share_a, a.shape)
        if ctx.needs_input_grad[1]:
            share_b = xp.where(tie, 0.5, xp.where(a > b, 0.0, 1.0)).astype(grad.dtype)
            grad_b = unbroadcast(grad * share_b, b.shape)
        return grad_a, grad_b


class Cast(Function):
    """Change dtype; the gradient is cast back to the input's dtype."""

    low_precision = "any"

    @staticmethod
    def forward(ctx: Context, a: Array, dtype: np.dtype) -> Array:
        ctx.input_dtype = a.dtype
        return _cast(a, dtype)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        return _cast(grad, ctx.input_dtype)


def _cast(array: Array, dtype: np.dtype) -> Array:
    if dtype == float32 and is_low_precision(array.dtype):
        return to_float32(array)
    with np.errstate(over="ignore"):  # beyond float16's range: inf, as in PyTorch
        return array.astype(dtype)
