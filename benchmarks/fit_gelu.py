"""Fit the polynomial of tensorlib's float32 GELU: Φ(-a) ≈ φ(a) · R(t), t = 1/(1 + p·a).

For a = |x| ≥ 0 the lower tail Φ(-a) equals φ(a) · M(a), where φ is the normal density and
M is Mills' ratio, a smooth function that falls from √(π/2) at 0 towards 1/a. In the variable
t = 1/(1 + p·a), which maps [0, ∞) onto (0, 1], M is close to a low polynomial, so
R(t) = Σ r_k t^k, k = 0..5, needs no exp of its own: the one exp, φ(a), serves both Φ and
GELU's slope Φ + x·φ. The fit minimizes the largest absolute error of Φ (residuals weighted
by φ, Lawson's reweighting towards the minimax fit) and picks p by a bounded search.

    python benchmarks/fit_gelu.py       # prints p, the coefficients and the float32 error
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, special

DEGREE = 5
A = np.linspace(0.0, 14.0, 200_001)  # beyond 14, φ is below float32's smallest number
DENSITY = np.exp(-A * A / 2) / math.sqrt(2 * math.pi)
MILLS = math.sqrt(math.pi / 2) * special.erfcx(A / math.sqrt(2))


def fit(p: float, iterations: int = 60) -> tuple[np.ndarray, float]:
    """Coefficients r_0..r_DEGREE for this p, and the largest absolute error of Φ."""
    t = 1.0 / (1.0 + p * A)
    design = np.stack([t**k for k in range(DEGREE + 1)], axis=1)
    weights = np.ones_like(A)
    for _ in range(iterations):
        scale = np.sqrt(weights) * DENSITY
        coefficients, *_ = np.linalg.lstsq(design * scale[:, None], MILLS * scale, rcond=None)
        error = np.abs(design @ coefficients - MILLS) * DENSITY
        weights *= error + 1e-300
        weights /= weights.sum()
    return coefficients, float(error.max())


def float32_error(p: float, coefficients: np.ndarray) -> tuple[float, float]:
    """Largest absolute error of GELU and of its slope, evaluated in float32 by tensorlib."""
    import tensorlib as tl
    from tensorlib.engine.kernels import gelu

    saved = gelu.GELU32_P, gelu.GELU32_R
    gelu.GELU32_P, gelu.GELU32_R = p, tuple(coefficients)
    try:
        x = tl.Tensor(np.linspace(-10.0, 10.0, 2_000_001).astype(np.float32),
                      requires_grad=True)
        y = x.gelu()
        y.backward(np.ones(x.shape, dtype=np.float32))
    finally:
        gelu.GELU32_P, gelu.GELU32_R = saved
    exact_x = x.numpy().astype(np.float64)
    cdf = special.ndtr(exact_x)
    slope = cdf + exact_x * np.exp(-exact_x * exact_x / 2) / math.sqrt(2 * math.pi)
    return (float(np.abs(y.numpy() - exact_x * cdf).max()),
            float(np.abs(x.grad.numpy() - slope).max()))


if __name__ == "__main__":
    search = optimize.minimize_scalar(lambda p: fit(p, 30)[1], bounds=(0.1, 1.0),
                                      method="bounded", options={"xatol": 1e-5})
    p = round(float(search.x), 5)
    found, worst = fit(p, 200)
    print(f"p = {p}")
    print("coefficients:", ", ".join(f"{value:.10e}" for value in found))
    print(f"largest absolute error of Φ (float64 evaluation): {worst:.2e}")
    value_error, slope_error = float32_error(p, found)
    print(f"float32 GELU on [-10, 10]: value within {value_error:.2e}, "
          f"slope within {slope_error:.2e}")
