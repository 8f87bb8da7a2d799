"""Gradient clipping, as PyTorch's ``torch.nn.utils.clip_grad_norm_`` and
``clip_grad_value_``; and the core that ``tensorlib.optim.clip`` (``clip_grad_norm``,
``global_gradient_norm``) and AdamW's ``max_grad_norm`` are made of: the norm of many
gradient arrays taken together, and their scaling in place.

The core works on arrays and ``Tensor``s only, so it lives here, below ``optim``, which
imports it. PyTorch's functions take a Tensor or an iterable (a generator too) of Tensors
and skip those whose ``.grad`` is None; a tensor given twice counts once.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from tensorlib.engine import validation
from tensorlib.engine.backend import array_module
from tensorlib.engine.tensor import Tensor
from tensorlib.nn.module import Module

__all__ = ["CLIP_EPSILON", "clip_grad_norm_", "clip_grad_value_", "gradient_norm_of_arrays",
           "scale_gradients"]

CLIP_EPSILON = 1e-6  # the coefficient is max_norm / (norm + CLIP_EPSILON), as in PyTorch

TensorOrTensors = Tensor | Iterable[Tensor]


# ------------------------------------------------------------------------------- the core
def gradient_norm_of_arrays(grads: Sequence[Any], norm_type: float = 2.0) -> float:
    """The ``norm_type``-norm of all of ``grads`` taken together as one vector, in float64:
    ``sqrt(sum of every element squared)`` for 2 (the default), the largest ``|g|`` for
    ``inf``, ``(sum |g|^p)^(1/p)`` for another ``p > 0``. 0.0 when there is no element; inf
    or nan when a gradient is not finite. The sums of squares are einsum's, not BLAS's
    ``dot``: OpenBLAS splits a long dot product between its threads, and its rounding
    would then depend on the thread count."""
    with np.errstate(over="ignore", invalid="ignore"):
        if norm_type == 2.0:
            total = 0.0
            for grad in grads:
                xp = array_module(grad)
                flat = grad.reshape(-1).astype(xp.float64)
                total += float(xp.einsum("i,i->", flat, flat))
            return math.sqrt(total)
        largest = max((float(array_module(grad).abs(grad).max()) for grad in grads
                       if grad.size), default=0.0)
        if norm_type == math.inf or not 0.0 < largest < math.inf:
            return largest  # also 0, inf or nan for every p
        total = 0.0  # (sum (|g| / largest)^p)^(1/p) * largest: no overflow for a large p
        for grad in grads:
            xp = array_module(grad)
            total += float(((xp.abs(grad).astype(xp.float64) / largest) ** norm_type).sum())
        return largest * total ** (1.0 / norm_type)


def scale_gradients(gradients: Sequence[tuple[Tensor, Any]], coefficient: float) -> None:
    """Multiply each ``(tensor, grad array)``'s gradient by ``coefficient`` (in the
    gradient's dtype), in place; a read-only gradient array is replaced by a scaled copy."""
    with np.errstate(invalid="ignore", over="ignore"):  # inf * 0 is nan, as in PyTorch
        for tensor, grad in gradients:
            factor = grad.dtype.type(coefficient)
            flags = getattr(grad, "flags", None)  # older CuPy flags have no "writeable"
            if flags is not None and getattr(flags, "writeable", True):
                grad *= factor
            else:  # a read-only array: replace it by a scaled copy
                tensor.grad = grad * factor


# ------------------------------------------------------------------------------- PyTorch's
def clip_grad_norm_(parameters: TensorOrTensors, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """Scale the gradients of ``parameters`` in place so that their total norm (of order
    ``norm_type``, all gradients taken together as one vector) is at most ``max_norm``, and
    return the total norm before clipping as a 0-d Tensor in the gradients' dtype.

    As PyTorch: every gradient is multiplied by ``max_norm / (total_norm + 1e-6)`` clamped
    to at most 1.0 (so gradients whose norm is within 1e-6 of ``max_norm`` shrink a little
    too). A non-finite total norm raises ``RuntimeError`` with ``error_if_nonfinite=True``;
    otherwise the gradients are scaled by the nan or 0 coefficient it gives, and the norm is
    returned. ``norm_type`` is a number ``> 0`` or ``inf``; ``max_norm`` a number ``>= 0``
    (``inf`` only measures). ``foreach`` is accepted and changes nothing (one numpy loop).
    With no gradient, the norm is 0.
    """
    gradients = _gradients(parameters, "clip_grad_norm_")
    max_norm = _non_negative(max_norm, "clip_grad_norm_ max_norm")
    norm_type = _norm_type(norm_type)
    error_if_nonfinite = validation.boolean(error_if_nonfinite,
                                            "clip_grad_norm_ error_if_nonfinite")
    _foreach(foreach, "clip_grad_norm_")
    if not gradients:
        return Tensor(np.array(0.0, dtype=np.float32))
    total = gradient_norm_of_arrays([grad for _, grad in gradients], norm_type)
    if error_if_nonfinite and not math.isfinite(total):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from "
                           "`parameters` is non-finite, so it cannot be clipped. To disable "
                           "this error and scale the gradients by the non-finite norm "
                           "anyway, set `error_if_nonfinite=False`")
    coefficient = max_norm / (total + CLIP_EPSILON)  # nan for a nan norm (or inf / inf)
    if not coefficient >= 1.0:  # clamped to 1.0, where multiplying changes nothing
        scale_gradients(gradients, coefficient)
    dtype = np.result_type(*(grad.dtype for _, grad in gradients))
    return Tensor(np.array(total, dtype=dtype))


def clip_grad_value_(parameters: TensorOrTensors, clip_value: float,
                     foreach: bool | None = None) -> None:
    """Clamp every gradient of ``parameters`` to ``[-clip_value, clip_value]``, in place
    (a read-only gradient array is replaced by a clamped copy). ``clip_value >= 0``."""
    gradients = _gradients(parameters, "clip_grad_value_")
    clip_value = validation.real(clip_value, "clip_grad_value_ clip_value", low=0.0)
    _foreach(foreach, "clip_grad_value_")
    for tensor, grad in gradients:
        xp = array_module(grad)
        if getattr(getattr(grad, "flags", None), "writeable", True):
            xp.clip(grad, -clip_value, clip_value, out=grad)
        else:
            tensor.grad = xp.clip(grad, -clip_value, clip_value)


# ------------------------------------------------------------------------------- checks
def tensors_of(parameters: Any, function: str) -> list[Tensor]:
    """``parameters`` (a Tensor, or an iterable of them, a generator too) as a list, each
    tensor once."""
    if isinstance(parameters, Tensor):
        return [parameters]
    if isinstance(parameters, Module):
        raise TypeError(f"{function} takes tensors, not a {type(parameters).__name__}: pass "
                        "model.parameters()")
    if isinstance(parameters, (str, bytes, np.ndarray)) or not isinstance(parameters, Iterable):
        raise TypeError(f"{function} parameters must be a Tensor or an iterable of Tensors, "
                        f"got {type(parameters).__name__}")
    tensors, seen = [], set()
    for index, tensor in enumerate(parameters):
        if not isinstance(tensor, Tensor):
            raise TypeError(f"{function}: item {index} of parameters is a "
                            f"{type(tensor).__name__}, not a Tensor")
        if id(tensor) not in seen:
            seen.add(id(tensor))
            tensors.append(tensor)
    return tensors


def _gradients(parameters: Any, function: str) -> list[tuple[Tensor, Any]]:
    """``(tensor, grad array)`` for each tensor of ``parameters`` whose ``.grad`` is set, its
    shape checked against the tensor's."""
    gradients = []
    for index, tensor in enumerate(tensors_of(parameters, function)):
        if tensor.grad is None:
            continue
        grad = tensor.grad.numpy()
        if tuple(grad.shape) != tensor.shape:
            raise ValueError(f"{function}: the gradient of tensor {index} has shape "
                             f"{tuple(grad.shape)}, but the tensor has shape {tensor.shape}")
        gradients.append((tensor, grad))
    return gradients


def _non_negative(value: Any, what: str) -> float:
    """A number ``>= 0``; ``inf`` allowed (a ``max_norm`` that only measures)."""
    if isinstance(value, Tensor) and value.numel() == 1:
        value = value.item()
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        raise TypeError(f"{what} must be a number >= 0, got {type(value).__name__}")
    value = float(value)
    if math.isnan(value) or value < 0:
        raise ValueError(f"{what} must be a number >= 0, got {value}")
    return value


def _norm_type(value: Any) -> float:
    """A norm order: a number ``> 0`` or ``inf`` (also given as the string ``"inf"``)."""
    if isinstance(value, str) and value.strip().lower() == "inf":
        return math.inf
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        raise TypeError(f"clip_grad_norm_ norm_type must be a number > 0 or inf, got "
                        f"{type(value).__name__}")
    value = float(value)
    if math.isnan(value) or value <= 0:
        raise ValueError(f"clip_grad_norm_ norm_type must be a number > 0 or inf, got {value}")
    return value


def _foreach(foreach: Any, function: str) -> None:
    if foreach is not None and not isinstance(foreach, (bool, np.bool_)):
        raise TypeError(f"{function} foreach must be None, True or False, got "
                        f"{type(foreach).__name__}")
