"""Softmax and log-softmax over an axis, fused (the function forms of ``x.softmax(dim)``),
with their reference twins built from primitive ops."""

from __future__ import annotations

from tensorlib.engine.function_forms import log_softmax, softmax
from tensorlib.engine.tensor import Tensor
from tensorlib.nn.functional.arguments import _check_floating

# softmax and log_softmax are written once, in tensorlib.engine.methods.reductions
__all__ = ["log_softmax", "log_softmax_reference", "softmax", "softmax_reference"]


def log_softmax_reference(x: Tensor, dim: int = -1) -> Tensor:
    """log-softmax as a chain of primitives: x - max - log Σ exp(x - max)."""
    shifted = _check_floating(x, "log_softmax input") - x.amax(dim, keepdim=True)
    return shifted - shifted.exp().sum(dim, keepdim=True).log()


def softmax_reference(x: Tensor, dim: int = -1) -> Tensor:
    """softmax as a chain of primitives: exp(x - max) / Σ exp(x - max)."""
    exps = (_check_floating(x, "softmax input") - x.amax(dim, keepdim=True)).exp()
    return exps / exps.sum(dim, keepdim=True)
