"""Convolution, pooling, unfold, fold and padding: sliding windows, read as strided views.

A window of ``x (N, C, *S)`` at output position p (a tuple, one index per spatial axis) holds

    x[n, c, p·stride + k·dilation]          for each kernel offset k (a tuple too)

For one kernel offset k, those entries over every position p are one strided slice of x
(``window_slice``). The ops read windows two ways:

- all at once, as the view ``sliding_windows(x)`` of shape ``(N, C, *K, *P)``, no copy: a
  convolution copies it once into columns (im2col) and multiplies them with the weight, one
  matrix product;
- one kernel offset at a time: a pooling compares or adds the K slices (a loop over the K
  offsets, 4 for a 2×2 window, never over positions), and the backward of reading windows,
  ``windows_summed``, adds each offset's gradient back onto its slice (a scatter-add, col2im).

Padding is zeros (convolution, average pooling, unfold) or -inf (max pooling) around the
spatial axes.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from types import ModuleType
from typing import Any

from tensorlib.engine.autograd import Context
from tensorlib.engine.backend import array_module
from tensorlib.engine.ops.elementwise import gated
from tensorlib.engine.ops.function import Function
from tensorlib.engine.ops.matmul import quiet_products
from tensorlib.engine.typing import Array

__all__ = ["AvgPool", "Convolution", "Fold", "MaxPool", "Pad", "Unfold",
           "sliding_windows", "window_count", "window_slice", "windows_summed"]


# ----------------------------------------------------------------------------- the windows
def window_count(size: int, kernel: int, stride: int, padding: int, dilation: int) -> int:
    """How many windows fit along one axis: ⌊(size + 2·padding - dilation·(kernel-1) - 1)
    / stride⌋ + 1."""
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def _offsets(kernel: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
    """Every kernel offset k, row-major: (0, 0), (0, 1), ... for a 2-D kernel."""
    return itertools.product(*(range(k) for k in kernel))


def window_slice(offset: tuple[int, ...], positions: tuple[int, ...], stride: tuple[int, ...],
                 dilation: tuple[int, ...]) -> tuple[Any, ...]:
    """The index of x[..., p·stride + offset·dilation] over all positions p: one strided
    slice per spatial axis, giving ``(N, C, *P)``."""
    return (Ellipsis, *(slice(k * d, k * d + s * (p - 1) + 1, s)
                        for k, p, s, d in zip(offset, positions, stride, dilation, strict=True)))


def sliding_windows(x: Array, kernel: tuple[int, ...], stride: tuple[int, ...],
                    dilation: tuple[int, ...]) -> Array:
    """The read-only view ``(N, C, *K, *P)`` of ``x (N, C, *S)``: windows[n, c, k, p] =
    x[n, c, p·stride + k·dilation], with P the number of windows along each spatial axis."""
    xp = array_module(x)
    positions = tuple(window_count(size, k, s, 0, d) for size, k, s, d
                      in zip(x.shape[2:], kernel, stride, dilation, strict=True))
    steps = x.strides[2:]
    strides = (x.strides[:2] + tuple(step * d for step, d in zip(steps, dilation, strict=True))
               + tuple(step * s for step, s in zip(steps, stride, strict=True)))
    return xp.lib.stride_tricks.as_strided(x, shape=x.shape[:2] + tuple(kernel) + positions,
                                           strides=strides, writeable=False)


def windows_summed(windows: Array, spatial: tuple[int, ...], stride: tuple[int, ...],
                   dilation: tuple[int, ...]) -> Array:
    """The adjoint of ``sliding_windows``: a new ``(N, C, *spatial)`` array where each entry
    of ``windows (N, C, *K, *P)`` is added at the place it was read from. Entries read by
    several windows (overlapping windows) sum; entries no window read stay 0."""
    xp = array_module(windows)
    dims = len(spatial)
    kernel, positions = windows.shape[2:2 + dims], windows.shape[2 + dims:]
    out = xp.zeros(windows.shape[:2] + tuple(spatial), dtype=windows.dtype)
    for offset in _offsets(kernel):  # K offsets, e.g. 9 for 3×3: each (N, C, *P) onto a slice
        window: tuple[Any, ...] = (Ellipsis, *offset, *[slice(None)] * dims)
        out[window_slice(offset, positions, stride, dilation)] += windows[window]
    return out


def _copied(view: Array, shape: tuple[int, ...]) -> Array:
    """A new array of ``shape`` holding the entries of ``view`` in row-major order: always a
    copy (a reshape alone may return a view of the input, read-only and sharing its memory,
    for a 1×1 kernel or an expanded input)."""
    out = array_module(view).empty(view.shape, dtype=view.dtype)
    out[...] = view
    return out.reshape(shape)


def _padded(x: Array, padding: tuple[int, ...], value: float) -> Array:
    """``x (N, C, *S)`` with ``padding[i]`` entries of ``value`` on both sides of spatial
    axis i (``x`` itself when there is none)."""
    if not any(padding):
        return x
    xp = array_module(x)
    out = xp.full(x.shape[:2] + tuple(s + 2 * p for s, p in zip(x.shape[2:], padding,
                                                                   strict=True)),
                  value, dtype=x.dtype)
    out[_interior(x.shape[2:], padding)] = x
    return out


def _interior(spatial: tuple[int, ...], padding: tuple[int, ...]) -> tuple[Any, ...]:
    """The index of the unpadded part of a padded ``(N, C, *spatial+2·padding)`` array."""
    return (Ellipsis, *(slice(p, p + s) for s, p in zip(spatial, padding, strict=True)))


# ------------------------------------------------------------------------------ convolution
class Convolution(Function):
    """y[n, o, p] = Σ_c Σ_k w[o, c, k] · x̃[n, g·C/G + c, p·stride + k·dilation] + b[o]:
    ``x (N, C, *S)`` zero-padded by ``padding`` (x̃), ``weight (O, C/G, *K)``, ``bias (O,)``
    or None, output ``(N, O, *P)``; ``groups`` G splits the channels into G independent
    convolutions (output channel o belongs to group g = o // (O/G)). 1-D and 2-D alike.

    As matrices, per image and group: the windows copied once into columns ``(C/G·K, P)``
    (im2col), y = W · columns with W ``(O/G, C/G·K)``. Backward: dW = Σ_n dy · columnsᵀ,
    d(columns) = Wᵀ · dy, dx = the windows' scatter-add of d(columns) (col2im), db = Σ dy
    over images and positions.
    """

    autocast = "lower"

    op_name = "conv"

    @staticmethod
    def forward(ctx: Context, x: Array, weight: Array, bias: Array | None, stride: tuple[int, ...],
                padding: tuple[int, ...], dilation: tuple[int, ...], groups: int) -> Array:
        batch = x.shape[0]
        out_channels, kernel = weight.shape[0], tuple(weight.shape[2:])
        padded = _padded(x, padding, 0.0)
        windows = sliding_windows(padded, kernel, stride, dilation)    # (N, C, *K, *P)
        positions = windows.shape[2 + len(kernel):]
        columns = _copied(windows, (batch, groups, -1, math.prod(positions)))  # (N, G, C/G·K, P)
        filters = weight.reshape(groups, out_channels // groups, -1)   # (G, O/G, C/G·K)
        with quiet_products(array_module(x)):
            out = (filters @ columns).reshape((batch, out_channels) + positions)  # (N, O, *P)
        if bias is not None:
            out += bias.reshape((-1,) + (1,) * len(kernel))
        wants_x, wants_weight = ctx.needs_input_grad[:2]
        ctx.save_for_backward(columns if wants_weight else None, weight if wants_x else None)
        ctx.geometry = (x.shape, padded.shape[2:], kernel, positions, stride, padding,
                        dilation, groups)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Array) -> tuple[Array | None, ...]:
        columns, weight = ctx.saved_tensors
        kernel, groups = ctx.geometry[2], ctx.geometry[-1]
        wants_x, wants_weight, wants_bias = ctx.needs_input_grad
        batch, out_channels = grad.shape[:2]
        rows = grad.reshape(batch, groups, out_channels // groups, -1)  # (N, G, O/G, P)
        dweight = dx = dbias = None
        if wants_weight:  # Σ over images of (G, O/G, P) · (G, P, C/G·K), as (O, C/G, *K)
            with quiet_products(array_module(grad)):
                dweight = (rows @ columns.swapaxes(-1, -2)).sum(axis=0).reshape(
                    (out_channels, -1) + kernel)
        if wants_x:
            filters = weight.reshape(groups, out_channels // groups, -1)   # (G, O/G, C/G·K)
            dx = ctx.function.image_gradient(filters, rows, ctx.geometry)
        if wants_bias:
            dbias = grad.sum(axis=(0, *range(2, grad.ndim)))
        return dx, dweight, dbias

    @staticmethod
    def image_gradient(filters: Array, rows: Array, geometry: tuple[Any, ...]) -> Array:
        """dx, ``(N, C, *S)``, from ``filters (G, O/G, C/G·K)`` and dy as ``rows (N, G, O/G,
        P)``: the columns' gradient Wᵀ · dy, each entry added back onto the place of the
        (padded) input its column entry was read from (col2im), the padding dropped."""
        x_shape, padded_spatial, kernel, positions, stride, padding, dilation, _ = geometry
        with quiet_products(array_module(rows)):
            dcolumns = filters.swapaxes(-1, -2) @ rows                 # (N, G, C/G·K, P)
        dwindows = dcolumns.reshape(x_shape[:2] + kernel + positions)  # (N, C, *K, *P)
        return windows_summed(dwindows, padded_spatial, stride, dilation)[
            _interior(x_shape[2:], padding)]


# ---------------------------------------------------------------------------------- pooling
class MaxPool(Function):
    """y[n, c, p] = max_k x̃[n, c, p·stride + k·dilation], x̃ padded with -inf; 1-D and 2-D.

    The forward walks the K kernel offsets, keeping each window's running maximum and which
    offset gave it: a later entry wins only when strictly greater, so a tie goes to the first
    maximum in the window's row-major order, and a window holding NaN gives NaN, its last
    NaN taking the gradient, as in PyTorch. Backward: each output's gradient goes to that
    entry, summed where overlapping windows chose the same one.
    """

    op_name = "max_pool"

    @staticmethod
    def forward(ctx: Context, x: Array, kernel: tuple[int, ...], stride: tuple[int, ...],
                padding: tuple[int, ...], dilation: tuple[int, ...]) -> Array:
        xp = array_module(x)
        padded = _padded(x, padding, -math.inf)
        positions = tuple(window_count(size, k, s, 0, d) for size, k, s, d
                          in zip(padded.shape[2:], kernel, stride, dilation, strict=True))
        slices = [window_slice(offset, positions, stride, dilation)
                  for offset in _offsets(kernel)]                 # one per kernel offset
        best = padded[slices[0]].copy()                                  # (N, C, *P)
        chosen = xp.zeros(best.shape, dtype=xp.int8 if len(slices) < 128 else xp.int32)
        better = xp.empty(best.shape, dtype=bool)
        for index, where in enumerate(slices[1:], start=1):
            entries = padded[where]
            xp.greater(entries, best, out=better)
            xp.maximum(best, entries, out=best)           # a NaN entry makes the maximum NaN
            xp.putmask(chosen, better, index)
        if xp.isnan(best).any():  # a NaN's gradient goes to the last NaN of its window, as
            for index, where in enumerate(slices):          # in PyTorch
                xp.putmask(chosen, xp.isnan(padded[where]), index)
        ctx.chosen = chosen
        ctx.geometry = (x.shape, padded.shape[2:], kernel, positions, stride, padding, dilation)
        return best

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        xp = array_module(grad)
        x_shape, padded_spatial, kernel, positions, stride, padding, dilation = ctx.geometry
        dpadded = xp.zeros(x_shape[:2] + padded_spatial, dtype=grad.dtype)
        overlapping = any(s < d * (k - 1) + 1 for k, s, d in zip(kernel, stride, dilation,
                                                                  strict=True))
        for index, offset in enumerate(_offsets(kernel)):
            target = dpadded[window_slice(offset, positions, stride, dilation)]  # (N, C, *P)
            chosen = gated(grad, ctx.chosen == index)  # 0 where not chosen, even from a NaN
            if overlapping:  # an entry may be the maximum of several windows: add
                target += chosen
            else:            # each entry is in one window at most: write
                target[...] = chosen
        return dpadded[_interior(x_shape[2:], padding)]


class AvgPool(Function):
    """y[n, c, p] = Σ_k x̃[n, c, p·stride + k] / count[p], x̃ zero-padded; count is the
    kernel's size (``count_include_pad``) or the number of unpadded entries in the window.

    Backward: each output's gradient / count, added to every entry of its window.
    """

    op_name = "avg_pool"

    @staticmethod
    def forward(ctx: Context, x: Array, kernel: tuple[int, ...], stride: tuple[int, ...],
                padding: tuple[int, ...], count_include_pad: bool) -> Array:
        xp = array_module(x)
        dilation = (1,) * len(kernel)
        padded = _padded(x, padding, 0.0)
        positions = tuple(window_count(size, k, s, 0, 1) for size, k, s
                          in zip(padded.shape[2:], kernel, stride, strict=True))
        total = xp.zeros(x.shape[:2] + positions, dtype=x.dtype)
        for offset in _offsets(kernel):
            total += padded[window_slice(offset, positions, stride, dilation)]
        if count_include_pad or not any(padding):
            count = xp.asarray(math.prod(kernel), dtype=x.dtype)
        else:  # how many real entries each window holds: the same windows over a mask
            inside = _padded(xp.ones((1, 1) + x.shape[2:], dtype=x.dtype), padding, 0.0)
            count = sliding_windows(inside, kernel, stride, dilation).sum(
                axis=tuple(range(2, 2 + len(kernel))))
        ctx.count = count
        ctx.geometry = (x.shape, padded.shape[2:], kernel, positions, stride, padding)
        return total / count

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        xp = array_module(grad)
        x_shape, padded_spatial, kernel, positions, stride, padding = ctx.geometry
        share = grad / ctx.count                                              # (N, C, *P)
        dpadded = xp.zeros(x_shape[:2] + padded_spatial, dtype=grad.dtype)
        for offset in _offsets(kernel):
            dpadded[window_slice(offset, positions, stride, (1,) * len(kernel))] += share
        return dpadded[_interior(x_shape[2:], padding)]


# ------------------------------------------------------------------------------ unfold, fold
class Unfold(Function):
    """im2col: ``x (N, C, *S)`` → ``(N, C·K, L)``, column l holding the window at position
    l (row-major over the P positions, L = ΠP), channel by channel, each channel's kernel
    entries row-major: out[n, c·K + k, l] = x̃[n, c, p(l)·stride + k·dilation], x̃
    zero-padded. Backward: the windows' scatter-add (``Fold``'s forward)."""

    @staticmethod
    def forward(ctx: Context, x: Array, kernel: tuple[int, ...], stride: tuple[int, ...],
                padding: tuple[int, ...], dilation: tuple[int, ...]) -> Array:
        padded = _padded(x, padding, 0.0)
        windows = sliding_windows(padded, kernel, stride, dilation)    # (N, C, *K, *P)
        positions = windows.shape[2 + len(kernel):]
        ctx.geometry = (x.shape, padded.shape[2:], positions, kernel, stride, padding, dilation)
        return _copied(windows, (x.shape[0], -1, math.prod(positions)))

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        x_shape, padded_spatial, positions, kernel, stride, padding, dilation = ctx.geometry
        dwindows = grad.reshape(x_shape[:2] + tuple(kernel) + tuple(positions))
        return windows_summed(dwindows, padded_spatial, stride, dilation)[
            _interior(x_shape[2:], padding)]


class Fold(Function):
    """col2im, the adjoint of ``Unfold``: ``columns (N, C·K, L)`` → ``(N, C, *output_size)``,
    each column's entries added at the places ``Unfold`` reads them from (overlaps sum,
    padding dropped). Backward: ``Unfold``'s forward of the gradient."""

    @staticmethod
    def forward(ctx: Context, columns: Array, output_size: tuple[int, ...],
                kernel: tuple[int, ...], stride: tuple[int, ...], padding: tuple[int, ...],
                dilation: tuple[int, ...]) -> Array:
        padded_spatial = tuple(s + 2 * p for s, p in zip(output_size, padding, strict=True))
        positions = tuple(window_count(s, k, st, 0, d) for s, k, st, d
                          in zip(padded_spatial, kernel, stride, dilation, strict=True))
        ctx.geometry = (kernel, stride, padding, dilation)
        windows = columns.reshape((columns.shape[0], -1) + tuple(kernel) + positions)
        return windows_summed(windows, padded_spatial, stride, dilation)[
            _interior(tuple(output_size), padding)]

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        kernel, stride, padding, dilation = ctx.geometry
        windows = sliding_windows(_padded(grad, padding, 0.0), kernel, stride, dilation)
        return _copied(windows, (grad.shape[0], -1, math.prod(windows.shape[2 + len(kernel):])))


# ---------------------------------------------------------------------------------- padding
class Pad(Function):
    """``x`` with ``widths[i] = (before, after)`` entries added on axis i: the constant
    ``value`` (mode "constant"), the mirror image without the edge ("reflect"), copies of the
    edge ("replicate") or the other end ("circular"). Every non-constant entry is a copy of
    x at a source index along each axis; backward: each entry's gradient added to its source
    (the constant ones get none)."""

    low_precision = "any"

    @staticmethod
    def forward(ctx: Context, x: Array, widths: tuple[tuple[int, int], ...], mode: str,
                value: float) -> Array:
        xp = array_module(x)
        ctx.widths, ctx.mode = widths, mode
        if mode == "constant":
            return xp.pad(x, widths, mode="constant", constant_values=value)
        ctx.sources = {}
        out = x
        for axis, (before, after) in enumerate(widths):
            if before or after:
                source = _source_indices(xp, x.shape[axis], before, after, mode)
                ctx.sources[axis] = source
                out = xp.take(out, source, axis=axis)
        return x.copy() if out is x else out  # nothing to add: still a new array, as torch

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        xp = array_module(grad)
        if ctx.mode == "constant":
            return grad[tuple(slice(before, grad.shape[axis] - after)
                              for axis, (before, after) in enumerate(ctx.widths))]
        for axis in sorted(ctx.sources, reverse=True):
            source = ctx.sources[axis]
            size = grad.shape[axis] - sum(ctx.widths[axis])
            summed = xp.zeros(grad.shape[:axis] + (size,) + grad.shape[axis + 1:],
                              dtype=grad.dtype)
            xp.add.at(summed, (slice(None),) * axis + (source,), grad)
            grad = summed
        return grad


def _source_indices(xp: ModuleType, size: int, before: int, after: int, mode: str) -> Array:
    """For each position -before .. size+after-1 of a padded axis, the index of x it copies."""
    position = xp.arange(-before, size + after)
    if mode == "replicate":
        return xp.clip(position, 0, size - 1)
    if mode == "circular":
        return position % size
    # reflect: mirror at 0 and at size-1, without repeating the edge
    period = 2 * (size - 1)
    folded = xp.abs(position) % period if period else xp.zeros_like(position)
    return xp.where(folded > size - 1, period - folded, folded)
