"""Reductions over ``axis`` (None, an int or a tuple; already normalized by Tensor)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from tensorlib.engine.autograd import Context
from tensorlib.engine.backend import array_module
from tensorlib.engine.ops.function import Function
from tensorlib.engine.typing import Array


def _reduced_axes_back(grad: Array, axis: tuple[int, ...] | None, keepdims: bool) -> Array:
    """A reduction's output gradient with the reduced axes back, of size 1 (a view)."""
    if keepdims or axis is None:
        return grad
    return array_module(grad).expand_dims(grad, axis)


def _expand_back(grad: Array, shape: tuple[int, ...], axis: tuple[int, ...] | None,
                 keepdims: bool) -> Array:
    """Broadcast a reduced gradient back over the reduced axes (a read-only view)."""
    return array_module(grad).broadcast_to(_reduced_axes_back(grad, axis, keepdims), shape)


def _without_reduced_axes(kept: Array, shape: tuple[int, ...], axis: tuple[int, ...] | None,
                          keepdims: bool) -> Array:
    """A reduction computed with its axes kept (size 1), as the caller asked: kept, or
    dropped (a view)."""
    return kept if keepdims else kept.reshape(_reduced_shape(shape, axis))


def _reduced_shape(shape: tuple[int, ...], axis: tuple[int, ...] | None,
                   keepdims: bool = False) -> tuple[int, ...]:
    """The shape of a reduction over ``axis`` (None: every axis): the reduced axes dropped,
    or kept with size 1."""
    if keepdims:
        return tuple(1 if axis is None or i in axis else d for i, d in enumerate(shape))
    return () if axis is None else tuple(d for i, d in enumerate(shape) if i not in axis)


def _count(shape: tuple[int, ...], axis: tuple[int, ...] | None) -> int:
    axes = range(len(shape)) if axis is None else axis
    count = 1
    for a in axes:
        count *= shape[a]
    return count


class Sum(Function):
    @staticmethod
    def forward(ctx: Context, a: Array, axis: tuple[int, ...] | None = None,
                keepdims: bool = False) -> Array:
        ctx.shape, ctx.axis, ctx.keepdims = a.shape, axis, keepdims
        return a.sum(axis=axis, keepdims=keepdims)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        return _expand_back(grad, ctx.shape, ctx.axis, ctx.keepdims)


class Mean(Function):
    """Σ x / n over ``axis``; nan over no elements (0 / 0, as in PyTorch)."""

    @staticmethod
    def forward(ctx: Context, a: Array, axis: tuple[int, ...] | None = None,
                keepdims: bool = False) -> Array:
        count = _count(a.shape, axis)
        ctx.shape, ctx.axis, ctx.keepdims, ctx.count = a.shape, axis, keepdims, count
        if count == 0:
            xp = array_module(a)
            return xp.full(_reduced_shape(a.shape, axis, keepdims), xp.nan, dtype=a.dtype)
        return a.mean(axis=axis, keepdims=keepdims)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        if ctx.count == 0:  # no elements: an empty gradient
            return array_module(grad).zeros(ctx.shape, dtype=grad.dtype)
        return _expand_back(grad / ctx.count, ctx.shape, ctx.axis, ctx.keepdims)


class Max(Function):
    """Maximum; tied maxima share the gradient equally. Over an axis of length 0 there is
    no maximum (ValueError); an empty tensor reduced over other axes gives an empty one."""

    @staticmethod
    def forward(ctx: Context, a: Array, axis: tuple[int, ...] | None = None,
                keepdims: bool = False) -> Array:
        if _count(a.shape, axis) == 0:
            raise ValueError(f"max over no elements (shape {a.shape}, axis {axis})")
        out = a.max(axis=axis, keepdims=True) if a.size else \
            array_module(a).zeros(_reduced_shape(a.shape, axis, True), dtype=a.dtype)
        ctx.save_for_backward(a, out)
        ctx.axis, ctx.keepdims = axis, keepdims
        return _without_reduced_axes(out, a.shape, axis, keepdims)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        a, out = ctx.saved_tensors
        xp = array_module(a)
        is_max = a == out
        ties = is_max.sum(axis=ctx.axis, keepdims=True)  # 0 where the maximum is nan
        grad = _reduced_axes_back(grad, ctx.axis, ctx.keepdims)
        with _quiet(xp):  # a nan maximum: nan gradients over its slice, as PyTorch's amax
            return (is_max * (grad / ties)).astype(a.dtype)


def _deviations(a: Array, axis: tuple[int, ...] | None,
                correction: float) -> tuple[Array, Array, Array]:
    """x - mean over ``axis``, the variance (keeping the reduced axes) and its divisor
    n - ``correction`` (0 where that is 0 or less, so the variance is nan or inf)."""
    xp = array_module(a)
    count = _count(a.shape, axis)
    with _quiet(xp):  # no elements: a nan mean
        centered = a - (a.mean(axis=axis, keepdims=True) if count else xp.nan)
        divisor = a.dtype.type(max(count - correction, 0))
        return centered, (centered * centered).sum(axis=axis, keepdims=True) / divisor, divisor


class Var(Function):
    """Σ (x - mean)² / (n - ``correction``) over ``axis`` (``correction=1``: the unbiased
    estimate, 0: the biased one). Where n - correction <= 0 the divisor is 0, so the result
    is nan or inf, as in PyTorch."""

    @staticmethod
    def forward(ctx: Context, a: Array, axis: tuple[int, ...] | None = None, keepdims: bool = False,
                correction: float = 1.0) -> Array:
        centered, variance, ctx.divisor = _deviations(a, axis, correction)
        ctx.save_for_backward(centered)
        ctx.axis, ctx.keepdims = axis, keepdims
        return _without_reduced_axes(variance, a.shape, axis, keepdims)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        (centered,) = ctx.saved_tensors
        xp = array_module(grad)
        grad = _reduced_axes_back(grad, ctx.axis, ctx.keepdims)
        with _quiet(xp):
            return grad * centered * (2 / ctx.divisor)


class Std(Function):
    """√var over ``axis`` (as :class:`Var`, with ``correction``). Where it is 0 (every value
    equal) its gradient is 0, as in PyTorch: the slope of √ there is infinite, and every
    deviation it would multiply is 0."""

    @staticmethod
    def forward(ctx: Context, a: Array, axis: tuple[int, ...] | None = None, keepdims: bool = False,
                correction: float = 1.0) -> Array:
        centered, variance, ctx.divisor = _deviations(a, axis, correction)
        std = array_module(a).sqrt(variance)
        ctx.save_for_backward(centered, std)
        ctx.axis, ctx.keepdims = axis, keepdims
        return _without_reduced_axes(std, a.shape, axis, keepdims)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        centered, std = ctx.saved_tensors
        xp = array_module(grad)
        grad = _reduced_axes_back(grad, ctx.axis, ctx.keepdims)
        with _quiet(xp):
            grad_variance = xp.where(std == 0, 0, grad / (2 * std)).astype(std.dtype)
            return grad_variance * centered * (2 / ctx.divisor)


class LogSumExp(Function):
    """log Σ exp(x), shifted by the maximum so that large inputs do not overflow; -inf over
    no elements (the log of an empty sum, as in PyTorch)."""

    @staticmethod
    def forward(ctx: Context, a: Array, axis: tuple[int, ...] | None = None,
                keepdims: bool = False) -> Array:
        xp = array_module(a)
        ctx.axis, ctx.keepdims = axis, keepdims
        if a.size == 0:
            out = xp.full(_reduced_shape(a.shape, axis, True), -xp.inf, dtype=a.dtype)
            ctx.save_for_backward(a, out)
            return _without_reduced_axes(out, a.shape, axis, keepdims)
        shift = a.max(axis=axis, keepdims=True)
        shift = xp.where(xp.isfinite(shift), shift, 0)
        total = xp.exp(a - shift).sum(axis=axis, keepdims=True)
        with _quiet(xp):
            out = shift + xp.log(total)
        ctx.save_for_backward(a, out)
        return _without_reduced_axes(out, a.shape, axis, keepdims)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        a, out = ctx.saved_tensors
        xp = array_module(a)
        grad = _reduced_axes_back(grad, ctx.axis, ctx.keepdims)
        with _quiet(xp):
            weights = xp.where(xp.isfinite(out), xp.exp(a - out), 0)
        return (grad * weights).astype(a.dtype)


def _quiet(xp: ModuleType) -> Any:
    return xp.errstate(divide="ignore", invalid="ignore")
