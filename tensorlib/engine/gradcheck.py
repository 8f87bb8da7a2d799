"""Check analytic gradients against central differences in float64."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from tensorlib.engine.autograd import no_grad
from tensorlib.engine.tensor import Tensor


class GradcheckError(AssertionError):
    """Raised when an analytic gradient disagrees with the numerical one."""


def _projection_weights(shape: tuple[int, ...]) -> np.ndarray:
    """Fixed, distinct, non-symmetric weights: the vector of the vector-Jacobian product."""
    count = int(np.prod(shape))
    return (np.cos(np.arange(count) * 1.618 + 0.3) + 1.5).reshape(shape)


def _backward_with_projection(output: Any) -> np.ndarray:
    """Run ``output.backward(w)`` with the fixed weights ``w``; return ``w``."""
    if not isinstance(output, Tensor):
        raise TypeError(f"gradcheck: the function must return a Tensor, got "
                        f"{type(output).__name__}")
    weights = _projection_weights(output.shape).astype(output.dtype)
    output.backward(weights)
    return weights


def _compare(what: str, array: np.ndarray, analytic: np.ndarray,
             projected: Callable[[], float], indices: Iterable[tuple[int, ...]],
             eps: float, atol: float, rtol: float) -> None:
    """Central differences of ``projected`` at ``indices`` of ``array`` against ``analytic``.

    Each element is nudged in place by ±eps and restored exactly. Raises ``GradcheckError``
    naming the worst element.
    """
    worst: tuple[float, tuple[int, ...], float, float] | None = None
    for index in indices:
        original = array[index]
        array[index] = original + eps
        upper = projected()
        array[index] = original - eps
        lower = projected()
        array[index] = original
        numeric = (upper - lower) / (2 * eps)
        error = abs(float(analytic[index]) - numeric)
        excess = error - (atol + rtol * abs(numeric))
        if not excess <= 0 and (worst is None or not excess <= worst[0]):
            worst = (excess if excess == excess else np.inf, index, float(analytic[index]),
                     numeric)
    if worst is not None:
        _, index, analytic_value, numeric = worst
        raise GradcheckError(
            f"gradcheck failed for {what} (shape {array.shape}) at index "
            f"{tuple(int(i) for i in index)}: analytic {analytic_value:.6g}, numeric {numeric:.6g} "
            f"(abs error {abs(analytic_value - numeric):.3g} > atol {atol} + rtol {rtol} * "
            "|numeric|)")


def gradcheck(fn: Callable[..., Tensor], *inputs: Tensor, eps: float = 1e-6,
              atol: float = 1e-5, rtol: float = 1e-3) -> bool:
    """Compare ``fn``'s backward with central differences, in float64.

    Every floating input that requires grad is checked. ``fn`` may return a tensor of any
    shape; it is contracted with fixed weights ``w`` so one backward gives ``wᵀJ`` for every
    input, and each input element's entry is compared with
    ``(s(x + eps) - s(x - eps)) / (2 eps)`` where ``s = Σ w ⊙ fn(x)``. Returns True, or raises
    ``GradcheckError`` naming the worst element.
    """
    prepared: list[Tensor] = []
    for position, value in enumerate(inputs):
        if not isinstance(value, Tensor):
            raise TypeError(f"gradcheck: input {position} is a {type(value).__name__}, "
                            "expected a Tensor")
        if value.requires_grad and value.dtype != np.float64:
            raise TypeError(f"gradcheck: input {position} has dtype {value.dtype}; gradients "
                            "are checked in float64 (use .double())")
        # A fresh leaf sharing the caller's array, so non-contiguous inputs stay so.
        leaf = Tensor._from_array(value._data)
        leaf.requires_grad = value.requires_grad
        prepared.append(leaf)
    checked = [i for i, t in enumerate(prepared) if t.requires_grad]
    if not checked:
        raise ValueError("gradcheck: no input requires grad")

    weights = _backward_with_projection(fn(*prepared))

    def projected() -> float:
        with no_grad():
            return float(np.sum(fn(*prepared)._data.astype(np.float64) * weights))

    for position in checked:
        leaf = prepared[position]
        analytic = leaf.grad._data if leaf.grad is not None else np.zeros_like(leaf._data)
        _compare(f"input {position}", leaf._data, analytic, projected, np.ndindex(leaf.shape),
                 eps, atol, rtol)
    return True


def gradcheck_module(module: Any, run: Callable[[], Tensor], eps: float = 1e-6,
                     atol: float = 1e-5, rtol: float = 1e-3, entries: int | None = None) -> int:
    """Check the gradient of every trainable float64 parameter of ``module``.

    ``run()`` computes an output from the module (e.g. ``lambda: layer(x)``). One backward
    gives every parameter's analytic gradient; each is compared with central differences at
    all elements, or at ``entries`` evenly spread elements of each parameter for big models.
    Returns the number of parameters checked; raises ``GradcheckError`` naming the parameter
    and element on a mismatch.
    """
    named = [(name, p) for name, p in module.named_parameters() if p.trainable]
    for name, parameter in named:
        if parameter.dtype != np.float64:
            raise TypeError(f"gradcheck_module: parameter '{name}' has dtype "
                            f"{parameter.dtype}; build the module with dtype=float64")
    module.zero_grad()
    weights = _backward_with_projection(run())

    def projected() -> float:
        with no_grad():
            return float(np.sum(run()._data * weights))

    for name, parameter in named:
        analytic = parameter.grad._data if parameter.grad is not None \
            else np.zeros(parameter.shape)
        count = parameter.numel() if entries is None else min(entries, parameter.numel())
        flat = np.unique(np.linspace(0, parameter.numel() - 1, count).astype(int))
        indices = zip(*np.unravel_index(flat, parameter.shape), strict=True)
        _compare(f"parameter '{name}'", parameter._data, analytic, projected, indices,
                 eps, atol, rtol)
    return len(named)
