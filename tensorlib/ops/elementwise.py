"""Unary elementwise functions: forward and backward side by side."""

from __future__ import annotations

import math
from typing import Any

from scipy import special

from tensorlib.autograd import Context, Function
from tensorlib.backend import array_module


class Exp(Function):
    op_name = "exp"

    @staticmethod
    def forward(ctx: Context, a: Any) -> Any:
        out = array_module(a).exp(a)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        (out,) = ctx.saved_tensors
        return grad * out


class Log(Function):
    op_name = "log"

    @staticmethod
    def forward(ctx: Context, a: Any) -> Any:
        ctx.save_for_backward(a)
        return array_module(a).log(a)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        (a,) = ctx.saved_tensors
        return grad / a


class Sqrt(Function):
    op_name = "sqrt"

    @staticmethod
    def forward(ctx: Context, a: Any) -> Any:
        out = array_module(a).sqrt(a)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        (out,) = ctx.saved_tensors
        return grad / (2.0 * out)


class Abs(Function):
    """|x|; the gradient at exactly 0 is 0 (the subgradient PyTorch picks)."""

    op_name = "abs"

    @staticmethod
    def forward(ctx: Context, a: Any) -> Any:
        ctx.save_for_backward(a)
        return array_module(a).abs(a)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        (a,) = ctx.saved_tensors
        return grad * array_module(a).sign(a)


class Tanh(Function):
    op_name = "tanh"

    @staticmethod
    def forward(ctx: Context, a: Any) -> Any:
        out = array_module(a).tanh(a)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        (out,) = ctx.saved_tensors
        return grad * (1.0 - out * out)


class Sigmoid(Function):
    """1 / (1 + e^-x), computed without overflow for large |x|."""

    op_name = "sigmoid"

    @staticmethod
    def forward(ctx: Context, a: Any) -> Any:
        xp = array_module(a)
        # scipy's expit is overflow-safe; elsewhere the tanh identity is too.
        out = special.expit(a) if xp.__name__ == "numpy" else 0.5 * (1.0 + xp.tanh(0.5 * a))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        (out,) = ctx.saved_tensors
        return grad * out * (1.0 - out)


class Relu(Function):
    op_name = "relu"

    @staticmethod
    def forward(ctx: Context, a: Any) -> Any:
        out = array_module(a).maximum(a, 0)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        (out,) = ctx.saved_tensors
        return grad * (out > 0)


_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_TANH_CUBIC = 0.044715


def _erf(a: Any) -> Any:
    xp = array_module(a)
    if xp.__name__ == "numpy":
        return special.erf(a)
    import cupyx.scipy.special as cupy_special  # type: ignore[import-not-found]

    return cupy_special.erf(a)


class Gelu(Function):
    """GELU: x·Φ(x) exactly (erf), or the tanh approximation with ``approximate="tanh"``."""

    op_name = "gelu"

    @staticmethod
    def forward(ctx: Context, a: Any, approximate: str = "none") -> Any:
        xp = array_module(a)
        if approximate not in ("none", "tanh"):
            raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
        ctx.save_for_backward(a)
        ctx.approximate = approximate
        if approximate == "none":
            return 0.5 * a * (1.0 + _erf(a * _INV_SQRT_2))
        inner = _SQRT_2_OVER_PI * (a + _TANH_CUBIC * a * a * a)
        return 0.5 * a * (1.0 + xp.tanh(inner))

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        (a,) = ctx.saved_tensors
        xp = array_module(a)
        if ctx.approximate == "none":
            cdf = 0.5 * (1.0 + _erf(a * _INV_SQRT_2))
            pdf = _INV_SQRT_2PI * xp.exp(-0.5 * a * a)
            return grad * (cdf + a * pdf)
        inner = _SQRT_2_OVER_PI * (a + _TANH_CUBIC * a * a * a)
        t = xp.tanh(inner)
        d_inner = _SQRT_2_OVER_PI * (1.0 + 3.0 * _TANH_CUBIC * a * a)
        return grad * (0.5 * (1.0 + t) + 0.5 * a * (1.0 - t * t) * d_inner)
