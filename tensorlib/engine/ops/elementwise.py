"""Unary elementwise functions, and dropout's fixed mask: forward and backward side by side."""

from __future__ import annotations

import math

from tensorlib.engine.autograd import Context
from tensorlib.engine.backend import array_module
from tensorlib.engine.ops.function import Function
from tensorlib.engine.typing import Array
from tensorlib.engine.validation import is_floating


class Exp(Function):
    @staticmethod
    def forward(ctx: Context, a: Array) -> Array:
        out = array_module(a).exp(a)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        (out,) = ctx.saved_tensors
        return grad * out


class Log(Function):
    @staticmethod
    def forward(ctx: Context, a: Array) -> Array:
        ctx.save_for_backward(a)
        return array_module(a).log(a)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        (a,) = ctx.saved_tensors
        return grad / a


class Sqrt(Function):
    """√x; its slope 1 / (2√x) is inf at 0 (nan after a zero gradient), as in PyTorch,
    without numpy's warnings."""

    @staticmethod
    def forward(ctx: Context, a: Array) -> Array:
        out = array_module(a).sqrt(a)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        (out,) = ctx.saved_tensors
        with array_module(grad).errstate(divide="ignore", invalid="ignore"):
            return grad / (2.0 * out)


class Abs(Function):
    """|x|; the gradient at exactly 0 is 0 (the subgradient PyTorch picks)."""

    @staticmethod
    def forward(ctx: Context, a: Array) -> Array:
        ctx.save_for_backward(a)
        return array_module(a).abs(a)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        (a,) = ctx.saved_tensors
        return grad * array_module(a).sign(a)


def _floating(a: Array) -> Array:
    """Integer or boolean input as float64 (numpy's result type for these functions)."""
    return a if is_floating(a.dtype) else a.astype(array_module(a).float64)


def _sigmoid(a: Array) -> Array:
    """1 / (1 + e^-a) without overflow: scipy's expit, or the tanh identity on a GPU."""
    xp = array_module(a)
    if xp.__name__ == "numpy":
        from scipy import special  # on first use: importing it is half of tensorlib's import

        return special.expit(a)
    return 0.5 * (1.0 + xp.tanh(0.5 * a))


class Tanh(Function):
    @staticmethod
    def forward(ctx: Context, a: Array) -> Array:
        out = array_module(a).tanh(a)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        (out,) = ctx.saved_tensors
        return grad * (1.0 - out * out)


class Sigmoid(Function):
    """1 / (1 + e^-x), computed without overflow for large |x|."""

    @staticmethod
    def forward(ctx: Context, a: Array) -> Array:
        out = _sigmoid(a)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        (out,) = ctx.saved_tensors
        return grad * out * (1.0 - out)


def gated(grad: Array, passes: Array) -> Array:
    """``grad`` where ``passes`` is True and 0 where it is False, whatever ``grad`` holds
    there (a NaN or an infinity too: PyTorch's backward of relu, hardtanh and max pooling
    selects, it does not multiply by a slope of 0). Computed as ``grad · passes`` when every
    gradient is finite, the common case and the fast one; as a selection otherwise."""
    xp = array_module(grad)
    if xp.isfinite(grad).all():
        return grad * passes
    return xp.where(passes, grad, 0)


class Relu(Function):
    """max(x, 0); its gradient is 0 where the output is <= 0, whatever arrives there (a NaN
    or infinite upstream gradient included), and passes where it is positive or NaN, as
    PyTorch's threshold_backward."""

    @staticmethod
    def forward(ctx: Context, a: Array) -> Array:
        out = array_module(a).maximum(a, 0)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        (out,) = ctx.saved_tensors
        return gated(grad, ~(out <= 0))


class LeakyRelu(Function):
    """x where x > 0, ``negative_slope``·x elsewhere; the slope at exactly 0 is
    ``negative_slope`` (as in PyTorch)."""

    op_name = "leaky_relu"

    @staticmethod
    def forward(ctx: Context, a: Array, negative_slope: float = 0.01) -> Array:
        xp = array_module(a)
        a = _floating(a)
        positive = a > 0
        ctx.slope = xp.where(positive, 1.0, negative_slope).astype(a.dtype)
        return a * ctx.slope

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        return grad * ctx.slope


class Softplus(Function):
    """log(1 + exp(β·x)) / β, and x itself where β·x > ``threshold`` (PyTorch's rule: there
    the two agree to float precision). The slope is sigmoid(β·x), 1 above the threshold."""

    @staticmethod
    def forward(ctx: Context, a: Array, beta: float = 1.0, threshold: float = 20.0) -> Array:
        xp = array_module(a)
        a = _floating(a)
        scaled = beta * a
        linear = scaled > threshold
        # log(1 + e^z) = max(z, 0) + log(1 + e^-|z|): no overflow for large z
        smooth = (xp.maximum(scaled, 0) + xp.log1p(xp.exp(-xp.abs(scaled)))) / beta
        ctx.save_for_backward(scaled, linear)
        return xp.where(linear, a, smooth).astype(a.dtype, copy=False)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        scaled, linear = ctx.saved_tensors
        xp = array_module(scaled)
        return grad * xp.where(linear, 1.0, _sigmoid(scaled)).astype(scaled.dtype, copy=False)


class Silu(Function):
    """SiLU (swish) x·sigmoid(x); slope s + x·s·(1 - s) with s = sigmoid(x)."""

    @staticmethod
    def forward(ctx: Context, a: Array) -> Array:
        a = _floating(a)
        s = _sigmoid(a)
        ctx.save_for_backward(a, s)
        with array_module(a).errstate(invalid="ignore"):  # -inf · 0: nan, as in PyTorch
            return a * s

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        a, s = ctx.saved_tensors
        with array_module(a).errstate(invalid="ignore"):
            return grad * (s * (1.0 + a * (1.0 - s)))


class Relu6(Function):
    """min(max(x, 0), 6); slope 0 where x <= 0 or x >= 6 (at the joints too), 1 elsewhere,
    NaN included, as PyTorch's hardtanh; where it is 0 the gradient is 0, whatever arrives
    (a NaN upstream gradient included)."""

    @staticmethod
    def forward(ctx: Context, a: Array) -> Array:
        ctx.save_for_backward(a)
        return array_module(a).clip(a, 0, 6)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        (a,) = ctx.saved_tensors
        return gated(grad, ~((a <= 0) | (a >= 6)))


class Hardswish(Function):
    """x · relu6(x + 3) / 6: 0 below -3, x above 3, x(x + 3)/6 between. Slope: 0 up to -3,
    x/3 + 1/2 strictly between -3 and 3, 1 from 3 on (PyTorch's values at the two joints);
    where it is 0 the gradient is 0, whatever arrives (a NaN upstream gradient included)."""

    @staticmethod
    def forward(ctx: Context, a: Array) -> Array:
        ctx.save_for_backward(a)
        return a * array_module(a).clip(a + 3, 0, 6) / 6

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        (a,) = ctx.saved_tensors
        xp = array_module(a)
        slope = xp.where(a < 3, a / 3 + 0.5, 1).astype(a.dtype)
        return gated(grad, ~(a <= -3)) * slope


class Mish(Function):
    """x · tanh(softplus(x)), softplus(x) = log(1 + eˣ); with t = tanh(softplus(x)) the slope
    is t + x · sigmoid(x) · (1 - t²)."""

    @staticmethod
    def forward(ctx: Context, a: Array) -> Array:
        xp = array_module(a)
        with xp.errstate(invalid="ignore"):  # NaN in, NaN out, as in PyTorch
            t = xp.tanh(xp.logaddexp(0, a))  # logaddexp(0, x) = log(1 + eˣ) without overflow
        ctx.save_for_backward(a, t)
        return a * t

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        a, t = ctx.saved_tensors
        return grad * (t + a * _sigmoid(a) * (1 - t * t))


class Sign(Function):
    """-1, 0 or +1 elementwise. Piecewise constant: its gradient is 0 everywhere (PyTorch's
    choice at the jumps too), so nothing upstream of a sign learns through it."""

    @staticmethod
    def forward(ctx: Context, a: Array) -> Array:
        return array_module(a).sign(a)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        return array_module(grad).zeros_like(grad)


_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_TANH_CUBIC = 0.044715


def _erf(a: Array) -> Array:
    """The exact erf: scipy's, or CuPy's on a GPU."""
    xp = array_module(a)
    if xp.__name__ == "numpy":
        from scipy import special  # on first use, as in _sigmoid

        return special.erf(a)
    import cupyx.scipy.special as cupy_special  # type: ignore[import-not-found]

    return cupy_special.erf(a)


def exact_gelu(a: Array, with_slope: bool) -> tuple[Array, Array | None]:
    """GELU(x) = x·Φ(x) with Φ(x) = (1 + erf(x/√2)) / 2, and, if ``with_slope``, its
    derivative Φ(x) + x·φ(x) with φ(x) = exp(-x²/2) / √(2π) (else None)."""
    xp = array_module(a)
    erf = _erf(a * _INV_SQRT_2)
    value = 0.5 * a * (1.0 + erf)
    if not with_slope:
        return value, None
    cdf = 0.5 * (1.0 + erf)
    pdf = _INV_SQRT_2PI * xp.exp(-0.5 * a * a)
    return value, cdf + a * pdf


def tanh_gelu(a: Array, with_slope: bool) -> tuple[Array, Array | None]:
    """The tanh approximation 0.5·x·(1 + tanh u), u = √(2/π)·(x + 0.044715·x³), and, if
    ``with_slope``, its derivative 0.5·(1 + tanh u) + 0.5·x·(1 - tanh² u)·du/dx."""
    xp = array_module(a)
    t = xp.tanh(_SQRT_2_OVER_PI * (a + _TANH_CUBIC * a * a * a))
    value = 0.5 * a * (1.0 + t)
    if not with_slope:
        return value, None
    d_inner = _SQRT_2_OVER_PI * (1.0 + 3.0 * _TANH_CUBIC * a * a)
    return value, 0.5 * (1.0 + t) + 0.5 * a * (1.0 - t * t) * d_inner


class Gelu(Function):
    """GELU: x·Φ(x) exactly (erf), or the tanh approximation with ``approximate="tanh"``.

    The forward computes the slope dGELU/dx along with the value (when a gradient is
    wanted) and saves only the slope; the backward is grad · slope. Integer input computes
    in float32, the default float dtype.
    """

    @staticmethod
    def forward(ctx: Context, a: Array, approximate: str = "none") -> Array:
        xp = array_module(a)
        if approximate not in ("none", "tanh"):
            raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
        if not is_floating(a.dtype):
            a = a.astype(xp.float32)
        wanted = ctx.needs_input_grad[0]
        with xp.errstate(invalid="ignore", over="ignore"):  # ±inf: nan or inf, as in PyTorch
            out, slope = tanh_gelu(a, wanted) if approximate == "tanh" else exact_gelu(a, wanted)
        ctx.save_for_backward(slope)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        (slope,) = ctx.saved_tensors
        return grad * slope


class Dropout(Function):
    """y = x ⊙ m for a fixed ``multiplier`` m (0 where dropped, 1/(1-p) where kept);
    backward: grad ⊙ m."""

    @staticmethod
    def forward(ctx: Context, x: Array, multiplier: Array) -> Array:
        ctx.multiplier = multiplier
        return x * multiplier

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        return grad * ctx.multiplier
