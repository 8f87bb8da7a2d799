"""Unary elementwise functions: forward and backward side by side."""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
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

# erf(x) ≈ tanh(x · S(x²)) for float32, with S(t) = Σ c_k t^k fitted on [0, 3.9] (see
# benchmarks/fit_erf.py). tanh already saturates like erf; S bends it into shape. Largest
# error against the exact erf: 1.7e-7 (under 4 float32 ulps), at a fraction of the cost.
# tensorlib's first fast GELU went through it; the GELU below no longer needs an erf, and
# erf_float32 stays for notebook 16's comparison with scipy's erf.
_ERF32_COEFFICIENTS = (
    1.1283792741e+00, 1.0276905672e-01, -1.9183090310e-04, -6.1978644946e-04,
    8.7638795925e-05, -5.6688675294e-06, 1.4188526480e-07,
)
_ERF32_CLAMP = 3.9  # erf(3.9) = 1 - 3.5e-8 is 1 in float32


def erf_float32(x: Any) -> Any:
    """erf of a float32 array (or scalar) from numpy's vectorized tanh and a degree-6
    polynomial: several times faster than scipy's erf, within 4 ulps. Returns a new float32
    array of x's shape."""
    xp = array_module(x)
    t = xp.empty_like(x)  # explicit outputs keep a 0-d input an array throughout
    with np.errstate(over="ignore"):  # |x| > 1e19 squares to inf, then the clamp
        xp.multiply(x, x, out=t)
    xp.minimum(t, xp.float32(_ERF32_CLAMP**2), out=t)  # beyond the clamp tanh(...) is ±1
    s = _polynomial(t, _ERF32_COEFFICIENTS, out=xp.empty_like(t))  # S(x²)
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


# GELU's Φ for float32, without an erf: for a = |x|, the lower tail is Φ(-a) = φ(a)·M(a),
# with φ the normal density and M Mills' ratio, which in t = 1/(1 + p·a) is close to a
# degree-5 polynomial R(t) (benchmarks/fit_gelu.py: Φ within 1.1e-8 before float32
# rounding). Then Φ(x) is Φ(-a) for x < 0 and 1 - Φ(-a) for x ≥ 0, and the one exp, φ,
# also gives the slope dGELU/dx = Φ(x) + x·φ(x). With 1/(1 + p·a) = k/(k + a), k = 1/p,
# the powers of k are folded into the coefficients, and so is φ's constant 1/√(2π) (exp
# gives √(2π)·φ).
_GELU32_P = 0.31396
_GELU32_R = (1.9274531039e-02, 1.4408036893e-01, 9.3193923759e-01, -8.8829521358e-01,
             1.3895361678e+00, -3.4322097874e-01)
_INV_SQRT_2PI_32 = np.float32(_INV_SQRT_2PI)
_SIGN_BIT = np.uint32(0x80000000)
# The float32 GELU makes about 25 passes over its data. Done a block of 64K elements
# (256 KB) at a time, every pass after the first finds the block in the CPU's cache
# instead of main memory: about twice as fast on large activations. (Cache blocking,
# as BLAS does: each block is still one vectorized array operation.)
_GELU32_BLOCK = 1 << 16


@functools.lru_cache(maxsize=4)
def _gelu32_coefficients(p: float, r: tuple[float, ...]) -> tuple[float, tuple[float, ...]]:
    """k = 1/p and R's coefficients for u = 1/(k + a), times 1/√(2π)."""
    k = 1.0 / p
    return k, tuple(r_j * k**j * _INV_SQRT_2PI for j, r_j in enumerate(r))


def _gelu_float32(x: Any, with_slope: bool) -> tuple[Any, Any]:
    """GELU of a float32 array and, if asked, its derivative (else None)."""
    xp = array_module(x)
    flat = x.reshape(-1)
    out = xp.empty_like(flat)
    slope = xp.empty_like(flat) if with_slope else None
    k, coefficients = _gelu32_coefficients(_GELU32_P, _GELU32_R)
    block = _GELU32_BLOCK if xp is np else max(flat.size, 1)  # one block on a GPU
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        for start in range(0, flat.size, block):
            part = slice(start, start + block)
            _gelu_float32_block(flat[part], out[part], None if slope is None else slope[part],
                                k, coefficients)
    out = out.reshape(x.shape)
    return out, (None if slope is None else slope.reshape(x.shape))


def _gelu_float32_block(x: Any, out: Any, slope: Any, k: float,
                        coefficients: tuple[float, ...]) -> None:
    """Write GELU(x) into ``out`` and, unless ``slope`` is None, its derivative into it.
    (Huge |x| square to inf and φ underflows to 0: the caller silences those warnings.)"""
    xp = array_module(x)
    f32 = xp.float32
    magnitude = xp.abs(x)  # a = |x|
    u = xp.add(magnitude, f32(k))
    xp.divide(f32(1.0), u, out=u)  # 1/(k + a)
    tail = _polynomial(u, coefficients)  # R(t)/√(2π)
    density = xp.square(x, out=u)
    density *= f32(-0.5)
    xp.exp(density, out=density)  # √(2π)·φ(x), exactly 0 for |x| > 14
    tail *= density  # Φ(-a)
    # Φ(x) = 0.5 + sign(x)·(0.5 - Φ(-a)): x's sign bit put on 0.5 - Φ(-a),
    # which is not negative
    cdf = xp.subtract(f32(0.5), tail, out=tail)
    sign = xp.bitwise_and(x.view(xp.uint32), _SIGN_BIT, out=magnitude.view(xp.uint32))
    xp.bitwise_xor(cdf.view(xp.uint32), sign, out=cdf.view(xp.uint32))
    cdf += f32(0.5)
    xp.multiply(x, cdf, out=out)  # GELU = x·Φ(x)
    if slope is None:
        return
    xp.multiply(x, density, out=slope)
    slope *= _INV_SQRT_2PI_32
    slope += cdf  # dGELU/dx = Φ(x) + x·φ(x)


def _erf(a: Any) -> Any:
    """The exact erf (scipy's, or CuPy's on a GPU), for every dtype but float32, whose GELU
    has a path of its own: float64 stays exact, so gradient checks are unaffected."""
    xp = array_module(a)
    if xp.__name__ == "numpy":
        return special.erf(a)
    import cupyx.scipy.special as cupy_special  # type: ignore[import-not-found]

    return cupy_special.erf(a)


class Gelu(Function):
    """GELU: x·Φ(x) exactly (erf), or the tanh approximation with ``approximate="tanh"``.

    Exact form: Φ(x) = (1 + erf(x/√2)) / 2 and dGELU/dx = Φ(x) + x·φ(x), with
    φ(x) = exp(-x²/2)/√(2π). For float32 the forward computes the slope along with the
    value (cheaply, from the same exp: see _gelu_float32_block) and saves only the slope;
    other dtypes save the input and use the exact erf.
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
