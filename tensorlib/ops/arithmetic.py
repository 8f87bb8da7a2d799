"""Binary arithmetic with broadcasting: forward and backward side by side.

Each backward first computes the gradient at the broadcast (output) shape, then
``unbroadcast`` sums it back to the input's shape.
"""

from __future__ import annotations

from typing import Any

from tensorlib.autograd import Context, unbroadcast
from tensorlib.backend import array_module
from tensorlib.ops.function import Function


def _check_broadcast(name: str, a: Any, b: Any) -> None:
    try:
        array_module(a).broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise ValueError(f"{name}: shapes {a.shape} and {b.shape} cannot be broadcast "
                         "together") from None


class Add(Function):
    op_name = "add"

    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> Any:
        _check_broadcast("add", a, b)
        ctx.shapes = (a.shape, b.shape)
        return a + b

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        shape_a, shape_b = ctx.shapes
        return unbroadcast(grad, shape_a), unbroadcast(grad, shape_b)


class Sub(Function):
    op_name = "sub"

    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> Any:
        _check_broadcast("sub", a, b)
        ctx.shapes = (a.shape, b.shape)
        return a - b

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        shape_a, shape_b = ctx.shapes
        grad_b = unbroadcast(-grad, shape_b) if ctx.needs_input_grad[1] else None
        return unbroadcast(grad, shape_a), grad_b


class Mul(Function):
    op_name = "mul"

    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> Any:
        _check_broadcast("mul", a, b)
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        a, b = ctx.saved_tensors
        grad_a = unbroadcast(grad * b, a.shape) if ctx.needs_input_grad[0] else None
        grad_b = unbroadcast(grad * a, b.shape) if ctx.needs_input_grad[1] else None
        return grad_a, grad_b


class Div(Function):
    op_name = "div"

    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> Any:
        _check_broadcast("div", a, b)
        ctx.save_for_backward(a, b)
        return a / b

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        a, b = ctx.saved_tensors
        grad_a = unbroadcast(grad / b, a.shape) if ctx.needs_input_grad[0] else None
        grad_b = unbroadcast(-grad * a / (b * b), b.shape) if ctx.needs_input_grad[1] else None
        return grad_a, grad_b


class Pow(Function):
    """``a ** b`` with both operands tensors; d/db uses log(a), defined for a > 0."""

    op_name = "pow"

    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> Any:
        _check_broadcast("pow", a, b)
        out = a ** b
        ctx.save_for_backward(a, b, out)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        a, b, out = ctx.saved_tensors
        xp = array_module(a)
        grad_a = grad_b = None
        if ctx.needs_input_grad[0]:
            grad_a = unbroadcast(grad * b * a ** (b - 1), a.shape)
        if ctx.needs_input_grad[1]:
            positive = a > 0
            log_a = xp.log(xp.where(positive, a, 1))
            grad_b = unbroadcast(xp.where(positive, grad * out * log_a, 0).astype(b.dtype),
                                 b.shape)
        return grad_a, grad_b


class PowScalar(Function):
    """``a ** p`` for a Python number ``p``."""

    op_name = "pow"

    @staticmethod
    def forward(ctx: Context, a: Any, exponent: float) -> Any:
        ctx.save_for_backward(a)
        ctx.exponent = exponent
        if exponent == 2.0:
            return a * a
        return a ** exponent

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        (a,) = ctx.saved_tensors
        p = ctx.exponent
        if p == 2.0:
            return grad * (2.0 * a)
        return grad * (p * a ** (p - 1.0))


class Neg(Function):
    op_name = "neg"

    @staticmethod
    def forward(ctx: Context, a: Any) -> Any:
        return -a

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        return -grad


class Maximum(Function):
    """Elementwise maximum; at ties the gradient is split evenly between the two inputs."""

    op_name = "maximum"

    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> Any:
        _check_broadcast("maximum", a, b)
        ctx.save_for_backward(a, b)
        return array_module(a).maximum(a, b)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        a, b = ctx.saved_tensors
        xp = array_module(a)
        share_a = xp.where(a > b, 1.0, xp.where(a == b, 0.5, 0.0)).astype(grad.dtype)
        grad_a = unbroadcast(grad * share_a, a.shape) if ctx.needs_input_grad[0] else None
        grad_b = unbroadcast(grad * (1 - share_a), b.shape) if ctx.needs_input_grad[1] else None
        return grad_a, grad_b


class Cast(Function):
    """Change dtype; the gradient is cast back to the input's dtype."""

    op_name = "cast"

    @staticmethod
    def forward(ctx: Context, a: Any, dtype: Any) -> Any:
        ctx.input_dtype = a.dtype
        return a.astype(dtype)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        return grad.astype(ctx.input_dtype)
