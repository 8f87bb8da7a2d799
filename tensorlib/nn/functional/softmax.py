"""Softmax and log-softmax over an axis, fused, with their reference twins built from
primitive ops."""

from __future__ import annotations

from tensorlib.engine.tensor import Tensor
from tensorlib.nn.functional.arguments import _check_floating


def softmax(x: Tensor, dim: int = -1, *, axis: int | None = None) -> Tensor:
    """Numerically stable softmax along ``dim`` (one fused node)."""
    return _check_floating(x, "softmax input").softmax(dim, axis=axis)


def log_softmax(x: Tensor, dim: int = -1, *, axis: int | None = None) -> Tensor:
    """Numerically stable log-softmax along ``dim`` (one fused node)."""
    return _check_floating(x, "log_softmax input").log_softmax(dim, axis=axis)


def log_softmax_reference(x: Tensor, dim: int = -1) -> Tensor:
    """log-softmax as a chain of primitives: x - max - log Σ exp(x - max)."""
    shifted = _check_floating(x, "log_softmax input") - x.amax(dim, keepdim=True)
    return shifted - shifted.exp().sum(dim, keepdim=True).log()


def softmax_reference(x: Tensor, dim: int = -1) -> Tensor:
    """softmax as a chain of primitives: exp(x - max) / Σ exp(x - max)."""
    exps = (_check_floating(x, "softmax input") - x.amax(dim, keepdim=True)).exp()
    return exps / exps.sum(dim, keepdim=True)
