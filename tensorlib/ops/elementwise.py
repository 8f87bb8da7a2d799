"""Unary elementwise functions: forward and backward side by side."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import special

from tensorlib.autograd import Context, Function
from tensorlib.backend import array_module, constant_vector


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

# erf(x) ≈ tanh(x · S(x²)) for float32, with S(t) = Σ c_k t^k fitted on [0, 3.9] (see
# benchmarks/fit_erf.py). tanh already saturates like erf; S bends it into shape. Largest
# error against the exact erf: 1.7e-7 (under 4 float32 ulps), at a fraction of the cost.
_ERF32_COEFFICIENTS = (
    1.1283792741e+00, 1.0276905672e-01, -1.9183090310e-04, -6.1978644946e-04,
    8.7638795925e-05, -5.6688675294e-06, 1.4188526480e-07,
)
_ERF32_CLAMP = 3.9  # erf(3.9) = 1 - 3.5e-8 is 1 in float32


def erf_float32(x: Any) -> Any:
    """erf of a float32 array from numpy's vectorized tanh and a degree-6 polynomial
    (several times faster than scipy's erf, within 4 ulps). Returns a new float32 array."""
    xp = array_module(x)
    with np.errstate(over="ignore"):  # |x| > 1e19 squares to inf, then the clamp
        t = x * x
    xp.minimum(t, xp.float32(_ERF32_CLAMP**2), out=t)  # beyond the clamp tanh(...) is ±1
    s = _polynomial(t, _ERF32_COEFFICIENTS)  # S(x²)
    s *= x
    return xp.tanh(s, out=s)


def _polynomial(t: Any, coefficients: tuple[float, ...], out: Any = None) -> Any:
    """Σ c_k t^k by Horner's rule, in place in ``out`` (a new array of t's dtype if None)."""
    xp = array_module(t)
    dtype = t.dtype.type
    s = xp.multiply(t, dtype(coefficients[-1]), out=out)
    s += dtype(coefficients[-2])
    for coefficient in coefficients[-3::-1]:
        s *= t
        s += dtype(coefficient)
    return s


# GELU's Φ(x) = (1 + erf(x/√2)) / 2 ≈ (1 + tanh(z)) / 2 with z = x·G(x²), G(t) = S(t/2)/√2.
# The same value is the logistic σ(2z) = 1 / (1 + exp(-2z)), and numpy's float32 exp is
# about twice as fast as its tanh; ``-2z`` comes straight from the polynomial -2·G. The
# slope: dΦ/dx = σ(2z)·(1 - σ(2z))·2z' with z' = G'(x²) = Σ (2k+1) g_k t^k, the derivative
# of x·G(x²); _GELU32_SLOPE holds the coefficients of 2z'.
_GELU32_COEFFICIENTS = tuple(c / (math.sqrt(2.0) * 2.0**k)
                             for k, c in enumerate(_ERF32_COEFFICIENTS))
_GELU32_MINUS_2G = tuple(-2.0 * g for g in _GELU32_COEFFICIENTS)
_GELU32_SLOPE = tuple(2.0 * (2 * k + 1) * g for k, g in enumerate(_GELU32_COEFFICIENTS))
_GELU32_CLAMP = _ERF32_CLAMP * math.sqrt(2.0)
# The float32 GELU makes about 36 passes over its data. Done a block of 64K elements
# (256 KB) at a time, every pass after the first finds the block in the CPU's cache
# instead of main memory: about twice as fast on large activations. (Cache blocking,
# as BLAS does: each block is still one vectorized array operation.)
_GELU32_BLOCK = 1 << 16


def _gelu_float32(x: Any, with_slope: bool) -> tuple[Any, Any]:
    """GELU of a float32 array and, if asked, its derivative (else None)."""
    xp = array_module(x)
    flat = x.reshape(-1)
    out = xp.empty_like(flat)
    slope = xp.empty_like(flat) if with_slope else None
    block = _GELU32_BLOCK if xp is np else max(flat.size, 1)  # one block on a GPU
    for start in range(0, flat.size, block):
        part = slice(start, start + block)
        _gelu_float32_block(flat[part], out[part], None if slope is None else slope[part])
    out = out.reshape(x.shape)
    return out, (None if slope is None else slope.reshape(x.shape))


def _gelu_float32_block(x: Any, out: Any, slope: Any) -> None:
    """Write GELU(x) into ``out`` and, unless ``slope`` is None, its derivative into it."""
    xp = array_module(x)
    f32 = xp.float32
    with np.errstate(over="ignore"):  # |x| > 1e19 squares to inf, then the clamp
        t = x * x
    # The clamp as an array: numpy's minimum against a scalar misses its SIMD loop and runs
    # several times slower.
    clamp = constant_vector(xp, t.size, _GELU32_CLAMP**2, xp.float32)
    xp.minimum(t, clamp, out=t)  # beyond the clamp Φ is 0 or 1
    cdf = _polynomial(t, _GELU32_MINUS_2G, out=out)
    cdf *= x  # -2z
    with np.errstate(over="ignore"):  # far left of 0: exp(-2z) = inf, so Φ = 0 exactly
        xp.exp(cdf, out=cdf)
    cdf += f32(1.0)
    xp.divide(f32(1.0), cdf, out=cdf)  # Φ(x) = 1 / (1 + exp(-2z))
    if slope is not None:
        # dGELU/dx = Φ + x·dΦ/dx = Φ + x·Φ(1 - Φ)·2z'
        _polynomial(t, _GELU32_SLOPE, out=slope)
        slope *= x
        xp.multiply(cdf, cdf, out=t)
        xp.subtract(cdf, t, out=t)  # Φ(1 - Φ)
        slope *= t
        slope += cdf
    cdf *= x  # GELU = x·Φ(x), in ``out``


def _erf(a: Any) -> Any:
    """erf: the fast approximation for float32, the exact special function otherwise
    (float64 stays exact, so gradient checks are unaffected)."""
    xp = array_module(a)
    if a.dtype == xp.float32:
        return erf_float32(a)
    if xp.__name__ == "numpy":
        return special.erf(a)
    import cupyx.scipy.special as cupy_special  # type: ignore[import-not-found]

    return cupy_special.erf(a)


class Gelu(Function):
    """GELU: x·Φ(x) exactly (erf), or the tanh approximation with ``approximate="tanh"``.

    Exact form: Φ(x) = (1 + erf(x/√2)) / 2 and dGELU/dx = Φ(x) + x·φ(x), with
    φ(x) = exp(-x²/2)/√(2π). For float32 the forward computes the slope along with the
    value (cheaply, from the same tanh) and saves only the slope; other dtypes save the
    input and use the exact erf.
    """

    op_name = "gelu"

    @staticmethod
    def forward(ctx: Context, a: Any, approximate: str = "none") -> Any:
        xp = array_module(a)
        if approximate not in ("none", "tanh"):
            raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
        ctx.approximate = approximate
        if approximate == "none" and a.dtype == xp.float32:
            out, slope = _gelu_float32(a, with_slope=ctx.needs_input_grad[0])
            ctx.save_for_backward(slope)
            return out
        if a.dtype.kind != "f":
            a = a.astype(xp.float64)  # integer input: a float64 result, as numpy would give
        ctx.save_for_backward(a)
        if approximate == "none":
            return 0.5 * a * (1.0 + _erf(a * _INV_SQRT_2))
        inner = _SQRT_2_OVER_PI * (a + _TANH_CUBIC * a * a * a)
        return 0.5 * a * (1.0 + xp.tanh(inner))

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        (saved,) = ctx.saved_tensors
        xp = array_module(saved)
        if ctx.approximate == "none" and saved.dtype == xp.float32:
            return grad * saved  # the slope, computed by the forward
        a = saved
        if ctx.approximate == "none":
            cdf = 0.5 * (1.0 + _erf(a * _INV_SQRT_2))
            pdf = _INV_SQRT_2PI * xp.exp(-0.5 * a * a)
            return grad * (cdf + a * pdf)
        inner = _SQRT_2_OVER_PI * (a + _TANH_CUBIC * a * a * a)
        t = xp.tanh(inner)
        d_inner = _SQRT_2_OVER_PI * (1.0 + 3.0 * _TANH_CUBIC * a * a)
        return grad * (0.5 * (1.0 + t) + 0.5 * a * (1.0 - t * t) * d_inner)
