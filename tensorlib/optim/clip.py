"""Global L2 gradient norm and clipping by it (``torch.nn.utils.clip_grad_norm_``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from tensorlib.engine import validation
from tensorlib.engine.backend import array_module
from tensorlib.nn.parameter import Parameter
from tensorlib.optim.optimizer import (
    ParamsOrModule,
    collect_parameters,
    gradient_array,
)

CLIP_EPSILON = 1e-6  # the coefficient is max_norm / (norm + CLIP_EPSILON), as in PyTorch


def gradient_norm_of_arrays(grads: Sequence[Any]) -> float:
    """``sqrt(sum of every element squared)`` over ``grads``, accumulated in float64."""
    total = 0.0
    for grad in grads:
        xp = array_module(grad)
        flat = grad.reshape(-1).astype(xp.float64)
        total += float(xp.dot(flat, flat))
    return math.sqrt(total)


def _present_gradients(params_or_module: ParamsOrModule) -> list[tuple[Parameter, Any]]:
    """``(parameter, grad array)`` for each parameter whose ``.grad`` is set; shapes checked."""
    parameters, names = collect_parameters(params_or_module)
    present = []
    for parameter, name in zip(parameters, names, strict=True):
        if parameter.grad is not None:
            present.append((parameter, gradient_array(parameter, f"'{name}'")))
    return present


def global_gradient_norm(params_or_module: ParamsOrModule) -> float:
    """The L2 norm of all present gradients taken together (float64); 0.0 when none are set.

    May be inf or nan when a gradient is not finite.
    """
    return gradient_norm_of_arrays([grad for _, grad in _present_gradients(params_or_module)])


def clip_grad_norm(params_or_module: ParamsOrModule, max_norm: float) -> float:
    """Scale all gradients in place so their global L2 norm is at most ``max_norm``.

    Returns the norm before clipping. When it exceeds ``max_norm`` every present gradient is
    multiplied by ``max_norm / (norm + 1e-6)`` (in the gradient's dtype). A non-finite norm
    raises ValueError and leaves the gradients unchanged.
    """
    max_norm = validation.real(max_norm, "max_norm", low=0.0, low_open=True)
    present = _present_gradients(params_or_module)
    norm = gradient_norm_of_arrays([grad for _, grad in present])
    if not math.isfinite(norm):
        raise ValueError(f"the global gradient norm is {norm}; gradients were not clipped")
    if norm > max_norm:
        coefficient = max_norm / (norm + CLIP_EPSILON)
        for parameter, grad in present:
            factor = grad.dtype.type(coefficient)
            flags = getattr(grad, "flags", None)  # older CuPy flags have no "writeable"
            if flags is not None and getattr(flags, "writeable", True):
                grad *= factor
            else:  # a read-only array: replace it by a scaled copy
                parameter.grad = grad * factor
    return norm
