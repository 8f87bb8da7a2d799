"""GELU and erf for float32, from fitted polynomials instead of scipy's erf.

``gelu_float32`` stands in for the exact GELU of ``tensorlib.engine.ops.elementwise.Gelu``;
``erf_float32``, erf in the tanh form, is there for notebook 20's comparison with scipy's
erf (no op uses it).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from tensorlib.engine.backend import array_module
from tensorlib.engine.kernels.threads import cpu_elements, for_cache_blocks
from tensorlib.engine.typing import Array

__all__ = ["GELU32_P", "GELU32_R", "erf_float32", "gelu_float32", "polynomial"]

_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)

# erf(x) ≈ tanh(x · S(x²)) with S(t) = Σ c_k t^k fitted on [0, 3.9] (benchmarks/fit_erf.py).
_ERF32_COEFFICIENTS = (
    1.1283792741e+00, 1.0276905672e-01, -1.9183090310e-04, -6.1978644946e-04,
    8.7638795925e-05, -5.6688675294e-06, 1.4188526480e-07,
)
_ERF32_CLAMP = 3.9  # erf(3.9) = 1 - 3.5e-8 is 1 in float32


def erf_float32(x: Array) -> Array:
    """erf of a float32 array (or 0-d array) as tanh(x · S(x²)), S a fitted degree-6
    polynomial; returns a new float32 array of x's shape.

    Stands in for: ``scipy.special.erf(x)``, which works element by element in double
    precision. How: numpy's vectorized tanh and six multiply-adds.
    Accuracy: within 1.7e-7 of the exact erf, at most 4 float32 ulps
    (``benchmarks/fit_erf.py`` reproduces the fit; tests/engine/test_kernels.py checks it).
    Measured: notebook 20, against scipy's erf.
    """
    xp = array_module(x)
    t = xp.empty_like(x)  # explicit outputs keep a 0-d input an array throughout
    with np.errstate(over="ignore"):  # |x| > 1e19 squares to inf, then the clamp
        xp.multiply(x, x, out=t)
    xp.minimum(t, xp.float32(_ERF32_CLAMP**2), out=t)  # beyond the clamp tanh(...) is ±1
    s = polynomial(t, _ERF32_COEFFICIENTS, out=xp.empty_like(t))  # S(x²)
    s *= x
    return xp.tanh(s, out=s)


def polynomial(t: Array, coefficients: tuple[float, ...], out: Array | None = None) -> Array:
    """Σ c_k t^k by Horner's rule, in place in ``out`` (a new array of t's dtype if None)."""
    xp = array_module(t)
    dtype = t.dtype.type
    s = xp.multiply(t, dtype(coefficients[-1]), out=out)
    s += dtype(coefficients[-2])
    for coefficient in coefficients[-3::-1]:
        s *= t
        s += dtype(coefficient)
    return s


# For a = |x| the lower tail is Φ(-a) = φ(a)·M(a), φ the normal density and M Mills' ratio,
# which in t = 1/(1 + p·a) is close to the degree-5 polynomial R(t) with these coefficients
# (benchmarks/fit_gelu.py fits p and R).
GELU32_P = 0.31396
GELU32_R = (1.9274531039e-02, 1.4408036893e-01, 9.3193923759e-01, -8.8829521358e-01,
            1.3895361678e+00, -3.4322097874e-01)
_INV_SQRT_2PI_32 = np.float32(_INV_SQRT_2PI)
_SIGN_BIT = np.uint32(0x80000000)
# Elements per block: 64K float32 (256 KB) stay in the CPU's cache across the ~25 passes.
_GELU32_BLOCK = 1 << 16


def gelu_float32(x: Array, with_slope: bool) -> tuple[Array, Array | None]:
    """GELU of a float32 array and, if ``with_slope``, its derivative (else None).

    Stands in for: GELU(x) = x·Φ(x), Φ(x) = (1 + erf(x/√2))/2, and its slope
    Φ(x) + x·φ(x), φ(x) = exp(-x²/2)/√(2π) (``tensorlib.engine.ops.elementwise.exact_gelu``).
    How: Φ(-|x|) = φ(x)·R(1/(1 + p|x|)), so one exp gives value and slope (about 25 array
    passes in all, where scipy's erf works element by element in double precision); Φ(x) is
    0.5 + sign(x)·(0.5 - Φ(-|x|)), with x's sign bit put on by an integer and/xor on the
    float's bits (cheaper than numpy's ``copysign`` or ``where``); done 64K elements at a
    time so that the passes after the first find their block in the CPU's cache (on a GPU,
    one block), and those blocks shared out between the kernels' threads
    (``tensorlib.engine.kernels.threads``; each element is computed alone, so the thread count
    changes no bit).
    Accuracy: Φ within 1.1e-8 before float32 rounding, GELU within 4 ulps of |x|, the slope
    within 2.3e-7; far from 0, φ underflows to exactly 0, so GELU is exactly 0 or x and the
    slope 0 or 1 (inf and nan as PyTorch gives).
    Measured: docs/performance.md, "Where (a) stands, phase by phase" and
    "Two threads for the elementwise kernels".
    """
    xp = array_module(x)
    flat = x.reshape(-1)
    out = xp.empty_like(flat)
    slope = xp.empty_like(flat) if with_slope else None
    k, coefficients = _gelu32_coefficients(GELU32_P, GELU32_R)
    block = _GELU32_BLOCK if xp is np else max(flat.size, 1)

    def part(piece: slice) -> None:
        _gelu_float32_block(flat[piece], out[piece], None if slope is None else slope[piece],
                            k, coefficients)

    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        for_cache_blocks(part, flat.size, block, cpu_elements(flat))
    out = out.reshape(x.shape)
    return out, (None if slope is None else slope.reshape(x.shape))


@functools.lru_cache(maxsize=4)
def _gelu32_coefficients(p: float, r: tuple[float, ...]) -> tuple[float, tuple[float, ...]]:
    """k = 1/p and R's coefficients for u = 1/(k + a), times 1/√(2π): with
    1/(1 + p·a) = k/(k + a), the powers of k and φ's constant fold into the coefficients."""
    k = 1.0 / p
    return k, tuple(r_j * k**j * _INV_SQRT_2PI for j, r_j in enumerate(r))


def _gelu_float32_block(x: Array, out: Array, slope: Array | None, k: float,
                        coefficients: tuple[float, ...]) -> None:
    """Write GELU(x) into ``out`` and, unless ``slope`` is None, its derivative into it.
    (Huge |x| square to inf and φ underflows to 0: the caller silences those warnings.)"""
    xp = array_module(x)
    f32 = xp.float32
    magnitude = xp.abs(x)  # a = |x|
    u = xp.add(magnitude, f32(k))
    xp.divide(f32(1.0), u, out=u)  # 1/(k + a)
    tail = polynomial(u, coefficients)  # R(t)/√(2π)
    density = xp.square(x, out=u)
    density *= f32(-0.5)
    xp.exp(density, out=density)  # √(2π)·φ(x), exactly 0 for |x| > 14
    tail *= density  # Φ(-a)
    # Φ(x) = 0.5 + sign(x)·(0.5 - Φ(-a)): x's sign bit put on 0.5 - Φ(-a), which is not
    # negative
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
