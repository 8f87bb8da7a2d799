"""Fit the coefficients of tensorlib's float32 erf: erf(x) ≈ tanh(x · S(x²)) on [0, 3.9].

tanh already has erf's shape (odd, saturating at ±1), so only a gentle correction is
left for the even polynomial S: u(x) = atanh(erf(x)) / x. Near saturation an error in u
is damped by tanh' = 1 - y², so the fit weights residuals by (1 - y²) / y and minimizes
the largest relative error of y with Lawson's reweighting (weights grow where the error
is largest, which drives least squares towards the minimax fit).

    python benchmarks/fit_erf.py        # prints the coefficients and the float32 error
"""

from __future__ import annotations

import numpy as np
from scipy import special

CLAMP = 3.9  # erf(3.9) = 1 - 3.5e-8 rounds to 1 in float32


def fit(degree: int = 6, iterations: int = 100) -> np.ndarray:
    """Coefficients c_0..c_degree of S(t) = Σ c_k t^k (float64)."""
    x = np.concatenate([np.linspace(0.0, CLAMP, 40001)[1:], np.geomspace(1e-6, 0.05, 200)])
    x.sort()
    y = special.erf(x)
    u = np.arctanh(y)
    design = np.stack([x * (x * x) ** k for k in range(degree + 1)], axis=1)
    sensitivity = (1.0 - y * y) / y  # relative change of y per unit change of u
    weights = np.ones_like(x)
    for _ in range(iterations):
        scale = np.sqrt(weights) * sensitivity
        coefficients, *_ = np.linalg.lstsq(design * scale[:, None], u * scale, rcond=None)
        error = np.abs(np.tanh(design @ coefficients) - y) / y
        weights *= error
        weights /= weights.sum()
    return coefficients


def float32_error(coefficients: np.ndarray) -> tuple[float, float]:
    """Largest absolute error and largest error in float32 ulps of the float32 evaluation."""
    x = np.linspace(-6.0, 6.0, 2_000_001).astype(np.float32)
    exact = special.erf(x.astype(np.float64))
    clamped = np.clip(x, np.float32(-CLAMP), np.float32(CLAMP))
    t = clamped * clamped
    c = coefficients.astype(np.float32)
    s = t * c[-1] + c[-2]
    for value in c[-3::-1]:
        s = s * t + value
    approx = np.tanh(s * clamped)
    error = np.abs(approx - exact)
    ulp = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    return float(error.max()), float((error / np.maximum(ulp, 1e-45)).max())


if __name__ == "__main__":
    found = fit()
    print("coefficients:", ", ".join(f"{value:.10e}" for value in found))
    worst, ulps = float32_error(found)
    print(f"float32 evaluation: largest absolute error {worst:.2e} ({ulps:.1f} ulp)")
