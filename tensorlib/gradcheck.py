"""Check analytic gradients against central differences in float64."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tensorlib.tensor import Tensor


class GradcheckError(AssertionError):
    """Raised when an analytic gradient disagrees with the numerical one."""


def _projection_weights(shape: tuple[int, ...]) -> np.ndarray:
    """Fixed, distinct, non-symmetric weights: the vector of the vector-Jacobian product."""
    count = int(np.prod(shape))
    return (np.cos(np.arange(count) * 1.618 + 0.3) + 1.5).reshape(shape)


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
        leaf = Tensor._from_array(value.data)
        leaf.requires_grad = value.requires_grad
        prepared.append(leaf)
    checked = [i for i, t in enumerate(prepared) if t.requires_grad]
    if not checked:
        raise ValueError("gradcheck: no input requires grad")

    output = fn(*prepared)
    if not isinstance(output, Tensor):
        raise TypeError(f"gradcheck: fn must return a Tensor, got {type(output).__name__}")
    weights = _projection_weights(output.shape).astype(output.dtype)
    output.backward(weights)

    def projected() -> float:
        from tensorlib.autograd import no_grad

        with no_grad():
            return float(np.sum(fn(*prepared).data.astype(np.float64) * weights))

    for position in checked:
        leaf = prepared[position]
        analytic = leaf.grad if leaf.grad is not None else np.zeros_like(leaf.data)
        numeric = np.zeros(leaf.shape, dtype=np.float64)
        array = leaf.data
        for index in np.ndindex(leaf.shape):
            original = array[index]
            array[index] = original + eps
            upper = projected()
            array[index] = original - eps
            lower = projected()
            array[index] = original
            numeric[index] = (upper - lower) / (2 * eps)
        error = np.abs(analytic - numeric)
        allowed = atol + rtol * np.abs(numeric)
        if np.any(~(error <= allowed)):
            worst = np.unravel_index(np.nanargmax(np.where(np.isnan(error), np.inf,
                                                           error - allowed)), leaf.shape)
            raise GradcheckError(
                f"gradcheck failed for input {position} (shape {leaf.shape}) at index "
                f"{tuple(int(i) for i in worst)}: analytic {analytic[worst]!r}, numeric "
                f"{numeric[worst]!r} (abs error {error[worst]:.3g} > "
                f"atol {atol} + rtol {rtol} * |numeric|)")
    return True


