"""Global L2 gradient norm and clipping by it, over an optimizer's parameters (a Module,
a mapping of names to Parameters, or an iterable of Parameters).

The norm and the scaling are :mod:`tensorlib.nn.utils.clip_grad`'s, the core that PyTorch's
``tensorlib.nn.utils.clip_grad_norm_`` is made of too; what is the optimizer's own here is
how the parameters are collected and checked, and that a non-finite norm is refused."""

from __future__ import annotations

import math
from typing import Any

from tensorlib.engine import validation
from tensorlib.nn.parameter import Parameter
from tensorlib.nn.utils.clip_grad import CLIP_EPSILON, gradient_norm_of_arrays, scale_gradients
from tensorlib.optim.optimizer import (
    ParamsOrModule,
    collect_parameters,
    gradient_array,
)

__all__ = ["CLIP_EPSILON", "clip_grad_norm", "global_gradient_norm", "gradient_norm_of_arrays"]


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
        scale_gradients(present, max_norm / (norm + CLIP_EPSILON))
    return norm
