"""Convolution, pooling, padding, unfold and fold: sliding windows as a strided view.

Every op here reads its input through one view, ``sliding_windows``: for an input
``x (N, C, *S)`` it is ``(N, C, *P, *K)`` with

    windows[n, c, p, k] = x[n, c, p·stride + k·dilation]        (p, k: tuples of spatial indices)

no copy. A convolution is then one matrix product of the windows with the weight; a pooling
is a reduction over the kernel axes. The backward of "read the windows" is "add each window's
gradient back where it was read": ``windows_summed``, a scatter-add, one strided slice-add
per kernel offset (K of them, not one per output position). Padding is zeros (convolution,
average pooling) or -inf (max pooling) around the spatial axes.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

from tensorlib.autograd import Context
from tensorlib.backend import array_module
from tensorlib.ops.function import Function

__all__ = ["AvgPool", "Convolution", "Fold", "MaxPool", "Pad", "Unfold",
           "sliding_windows", "window_count", "windows_summed"]


# ------------------------------------------------------------------------- the windows view
def window_count(size: int, kernel: int, stride: int, padding: int, dilation: int) -> int:
    """How many windows fit along one axis: ⌊(size + 2·padding - dilation·(kernel-1) - 1)
    / stride⌋ + 1."""
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def sliding_windows(x: Any, kernel: tuple[int, ...], stride: tuple[int, ...],
                    dilation: tuple[int, ...]) -> Any:
    """The read-only view ``(N, C, *P, *K)`` of ``x (N, C, *S)``: windows[n, c, p, k] =
    x[n, c, p·stride + k·dilation], with P the number of windows along each spatial axis."""
    xp = array_module(x)
    spatial = x.shape[2:]
    positions = tuple(window_count(size, k, s, 0, d)
                      for size, k, s, d in zip(spatial, kernel, stride, dilation, strict=True))
    steps = x.strides[2:]
    shape = x.shape[:2] + positions + tuple(kernel)
    strides = (x.strides[:2] + tuple(step * s for step, s in zip(steps, stride, strict=True))
               + tuple(step * d for step, d in zip(steps, dilation, strict=True)))
    return xp.lib.stride_tricks.as_strided(x, shape=shape, strides=strides, writeable=False)


def windows_summed(windows: Any, spatial: tuple[int, ...], stride: tuple[int, ...],
                   dilation: tuple[int, ...]) -> Any:
    """The adjoint of ``sliding_windows``: a new ``(N, C, *spatial)`` array where each entry
    of ``windows (N, C, *P, *K)`` is added at the place it was read from. Entries read by
    several windows (overlapping windows) sum; entries no window read stay 0."""
    xp = array_module(windows)
    dims = len(spatial)
    positions, kernel = windows.shape[2:2 + dims], windows.shape[2 + dims:]
    out = xp.zeros(windows.shape[:2] + tuple(spatial), dtype=windows.dtype)
    for offset in itertools.product(*(range(k) for k in kernel)):  # K offsets, e.g. 9 for 3×3
        # every window's entry at this kernel offset, (N, C, *P), lands on a strided slice
        target = tuple(slice(k * d, k * d + s * (p - 1) + 1, s)
                       for k, d, s, p in zip(offset, dilation, stride, positions, strict=True))
        out[(Ellipsis, *target)] += windows[(Ellipsis, *offset)]
    return out


def _copied(view: Any, shape: tuple[int, ...]) -> Any:
    """A new array of ``shape`` holding the entries of ``view`` in row-major order: always a
    copy (a reshape alone may return a view of the input, read-only and sharing its memory,
    for a 1×1 kernel or an expanded input)."""
    out = array_module(view).empty(view.shape, dtype=view.dtype)
    out[...] = view
    return out.reshape(shape)


def _padded(x: Any, padding: tuple[int, ...], value: float) -> Any:
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

    As matrices, per group: the windows copied once into columns ``(N·P, C/G·K)`` (im2col),
    y = columns · Wᵀ. Backward: dW = dyᵀ · columns, d(columns) = dy · W, dx = the windows'
    scatter-add of d(columns) (col2im), db = Σ dy over batch and positions.
    """

    op_name = "conv"

    @staticmethod
    def forward(ctx: Context, x: Any, weight: Any, bias: Any, stride: tuple[int, ...],
                padding: tuple[int, ...], dilation: tuple[int, ...], groups: int) -> Any:
        batch, channels = x.shape[:2]
        out_channels, kernel = weight.shape[0], weight.shape[2:]
        padded = _padded(x, padding, 0.0)
        windows = sliding_windows(padded, kernel, stride, dilation)     # (N, C, *P, *K)
        positions = windows.shape[2:2 + len(kernel)]
        columns = _columns(windows, groups)                            # (G, N·P, C/G·K)
        filters = weight.reshape(groups, out_channels // groups, -1)   # (G, O/G, C/G·K)
        out = columns @ filters.transpose(0, 2, 1)                     # (G, N·P, O/G)
        out = _channels_first(out, batch, positions)                   # (N, O, *P)
        if bias is not None:
            out += bias.reshape((-1,) + (1,) * len(kernel))
        wants_x, wants_weight = ctx.needs_input_grad[:2]
        ctx.save_for_backward(columns if wants_weight else None, weight if wants_x else None)
        ctx.kernel = kernel
        ctx.geometry = (x.shape, padded.shape[2:], positions, stride, padding, dilation, groups)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        columns, weight = ctx.saved_tensors
        x_shape, padded_spatial, positions, stride, padding, dilation, groups = ctx.geometry
        wants_x, wants_weight, wants_bias = ctx.needs_input_grad
        batch, out_channels = grad.shape[:2]
        # dy as rows of positions, per group: (G, N·P, O/G)
        rows = grad.reshape(batch, groups, out_channels // groups, -1).transpose(1, 0, 3, 2)
        rows = rows.reshape(groups, -1, out_channels // groups)
        dweight = dx = dbias = None
        kernel = ctx.kernel
        if wants_weight:  # (G, O/G, C/G·K) -> (O, C/G, *K)
            dweight = (rows.transpose(0, 2, 1) @ columns).reshape((out_channels, -1) + kernel)
        if wants_x:
            filters = weight.reshape(groups, out_channels // groups, -1)   # (G, O/G, C/G·K)
            dcolumns = rows @ filters                                      # (G, N·P, C/G·K)
            dwindows = _windows_of(dcolumns, batch, x_shape[1], positions, kernel)
            dpadded = windows_summed(dwindows, padded_spatial, stride, dilation)
            dx = dpadded[_interior(x_shape[2:], padding)]
        if wants_bias:
            dbias = grad.sum(axis=(0, *range(2, grad.ndim)))
        return dx, dweight, dbias


def _columns(windows: Any, groups: int) -> Any:
    """Windows ``(N, C, *P, *K)`` copied into the columns ``(G, N·P, C/G·K)``: one row per
    (image, position), the window's values of one group's channels along it (im2col)."""
    batch, channels = windows.shape[:2]
    dims = (windows.ndim - 2) // 2
    split = windows.reshape((batch, groups, channels // groups) + windows.shape[2:])
    # (N, G, C/G, *P, *K) -> (G, N, *P, C/G, *K)
    order = (1, 0, *range(3, 3 + dims), 2, *range(3 + dims, 3 + 2 * dims))
    return _copied(split.transpose(order),
                   (groups, batch * math.prod(windows.shape[2:2 + dims]), -1))


def _windows_of(columns: Any, batch: int, channels: int, positions: tuple[int, ...],
                kernel: tuple[int, ...]) -> Any:
    """The inverse arrangement of ``_columns``: ``(G, N·P, C/G·K)`` back to ``(N, C, *P, *K)``."""
    groups, dims = columns.shape[0], len(kernel)
    split = columns.reshape((groups, batch) + tuple(positions) + (channels // groups,)
                            + tuple(kernel))
    # (G, N, *P, C/G, *K) -> (N, G, C/G, *P, *K)
    order = (1, 0, 2 + dims, *range(2, 2 + dims), *range(3 + dims, 3 + 2 * dims))
    return split.transpose(order).reshape((batch, channels) + tuple(positions) + tuple(kernel))


def _channels_first(out: Any, batch: int, positions: tuple[int, ...]) -> Any:
    """The product ``(G, N·P, O/G)`` as the output ``(N, O, *P)`` (a new array)."""
    groups, _, per_group = out.shape
    split = out.reshape((groups, batch) + tuple(positions) + (per_group,))
    dims = len(positions)
    order = (1, 0, 2 + dims, *range(2, 2 + dims))  # (N, G, O/G, *P)
    return split.transpose(order).reshape((batch, groups * per_group) + tuple(positions))


# ---------------------------------------------------------------------------------- pooling
class MaxPool(Function):
    """y[n, c, p] = max_k x̃[n, c, p·stride + k·dilation], x̃ padded with -inf; 1-D and 2-D.

    Backward: each output's gradient goes to the input it took its value from (the first
    maximum of its window, in the window's row-major order, as PyTorch picks), summed where
    overlapping windows took the same input.
    """

    op_name = "max_pool"

    @staticmethod
    def forward(ctx: Context, x: Any, kernel: tuple[int, ...], stride: tuple[int, ...],
                padding: tuple[int, ...], dilation: tuple[int, ...]) -> Any:
        xp = array_module(x)
        padded = _padded(x, padding, -math.inf)
        windows = sliding_windows(padded, kernel, stride, dilation)    # (N, C, *P, *K)
        flat = windows.reshape(windows.shape[:-len(kernel)] + (-1,))    # (N, C, *P, K)
        chosen = flat.argmax(axis=-1)[..., None]                        # (N, C, *P, 1)
        ctx.chosen = chosen
        ctx.geometry = (x.shape, padded.shape[2:], kernel, stride, padding, dilation)
        return xp.take_along_axis(flat, chosen, axis=-1)[..., 0]

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        xp = array_module(grad)
        x_shape, padded_spatial, kernel, stride, padding, dilation = ctx.geometry
        routed = xp.zeros(grad.shape + (math.prod(kernel),), dtype=grad.dtype)  # (N, C, *P, K)
        xp.put_along_axis(routed, ctx.chosen, grad[..., None], axis=-1)
        dwindows = routed.reshape(grad.shape + tuple(kernel))
        return windows_summed(dwindows, padded_spatial, stride, dilation)[
            _interior(x_shape[2:], padding)]


class AvgPool(Function):
    """y[n, c, p] = Σ_k x̃[n, c, p·stride + k] / count[p], x̃ zero-padded; count is the
    kernel's size (``count_include_pad``) or the number of unpadded entries in the window.

    Backward: each output's gradient / count, spread over its window (summed where windows
    overlap).
    """

    op_name = "avg_pool"

    @staticmethod
    def forward(ctx: Context, x: Any, kernel: tuple[int, ...], stride: tuple[int, ...],
                padding: tuple[int, ...], count_include_pad: bool) -> Any:
        xp = array_module(x)
        dilation = (1,) * len(kernel)
        padded = _padded(x, padding, 0.0)
        windows = sliding_windows(padded, kernel, stride, dilation)    # (N, C, *P, *K)
        kernel_axes = tuple(range(-len(kernel), 0))
        if count_include_pad or not any(padding):
            count = xp.asarray(math.prod(kernel), dtype=x.dtype)
        else:  # how many real entries each window holds: the same windows over a mask
            inside = _padded(xp.ones((1, 1) + x.shape[2:], dtype=x.dtype), padding, 0.0)
            count = sliding_windows(inside, kernel, stride, dilation).sum(axis=kernel_axes)
        ctx.count = count
        ctx.geometry = (x.shape, padded.shape[2:], kernel, stride, padding, dilation)
        return windows.sum(axis=kernel_axes) / count

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        xp = array_module(grad)
        x_shape, padded_spatial, kernel, stride, padding, dilation = ctx.geometry
        share = grad / ctx.count                                              # (N, C, *P)
        dwindows = xp.broadcast_to(share[(Ellipsis,) + (None,) * len(kernel)],
                                   share.shape + tuple(kernel))              # (N, C, *P, *K)
        return windows_summed(dwindows, padded_spatial, stride, dilation)[
            _interior(x_shape[2:], padding)]


# ------------------------------------------------------------------------------ unfold, fold
class Unfold(Function):
    """im2col: ``x (N, C, *S)`` → ``(N, C·K, L)``, column l holding the window at position
    l (row-major over the P positions, L = ΠP), channel by channel, each channel's kernel
    entries row-major: out[n, c·K + k, l] = x̃[n, c, p(l)·stride + k·dilation], x̃
    zero-padded. Backward: the windows' scatter-add (``Fold``'s forward)."""

    op_name = "unfold"

    @staticmethod
    def forward(ctx: Context, x: Any, kernel: tuple[int, ...], stride: tuple[int, ...],
                padding: tuple[int, ...], dilation: tuple[int, ...]) -> Any:
        padded = _padded(x, padding, 0.0)
        windows = sliding_windows(padded, kernel, stride, dilation)    # (N, C, *P, *K)
        positions = windows.shape[2:2 + len(kernel)]
        ctx.geometry = (x.shape, padded.shape[2:], positions, kernel, stride, padding, dilation)
        return _window_columns(windows, len(kernel))

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        x_shape, padded_spatial, positions, kernel, stride, padding, dilation = ctx.geometry
        dwindows = _windows_of_columns(grad, positions, kernel)
        return windows_summed(dwindows, padded_spatial, stride, dilation)[
            _interior(x_shape[2:], padding)]


class Fold(Function):
    """col2im, the adjoint of ``Unfold``: ``columns (N, C·K, L)`` → ``(N, C, *output_size)``,
    each column's entries added at the places ``Unfold`` reads them from (overlaps sum,
    padding dropped). Backward: ``Unfold``'s forward of the gradient."""

    op_name = "fold"

    @staticmethod
    def forward(ctx: Context, columns: Any, output_size: tuple[int, ...],
                kernel: tuple[int, ...], stride: tuple[int, ...], padding: tuple[int, ...],
                dilation: tuple[int, ...]) -> Any:
        padded_spatial = tuple(s + 2 * p for s, p in zip(output_size, padding, strict=True))
        positions = tuple(window_count(s, k, st, 0, d) for s, k, st, d
                          in zip(padded_spatial, kernel, stride, dilation, strict=True))
        ctx.geometry = (kernel, stride, padding, dilation)
        windows = _windows_of_columns(columns, positions, kernel)      # (N, C, *P, *K)
        return windows_summed(windows, padded_spatial, stride, dilation)[
            _interior(tuple(output_size), padding)]

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        kernel, stride, padding, dilation = ctx.geometry
        windows = sliding_windows(_padded(grad, padding, 0.0), kernel, stride, dilation)
        return _window_columns(windows, len(kernel))


def _window_columns(windows: Any, dims: int) -> Any:
    """Windows ``(N, C, *P, *K)`` copied into ``(N, C·K, L)``."""
    batch, channels = windows.shape[:2]
    order = (0, 1, *range(2 + dims, 2 + 2 * dims), *range(2, 2 + dims))  # (N, C, *K, *P)
    return _copied(windows.transpose(order),
                   (batch, -1, math.prod(windows.shape[2:2 + dims])))


def _windows_of_columns(columns: Any, positions: tuple[int, ...],
                        kernel: tuple[int, ...]) -> Any:
    """``(N, C·K, L)`` viewed as windows ``(N, C, *P, *K)``."""
    dims = len(kernel)
    batch = columns.shape[0]
    split = columns.reshape((batch, -1) + tuple(kernel) + tuple(positions))  # (N, C, *K, *P)
    return split.transpose((0, 1, *range(2 + dims, 2 + 2 * dims), *range(2, 2 + dims)))


# ---------------------------------------------------------------------------------- padding
class Pad(Function):
    """``x`` with ``widths[i] = (before, after)`` entries added on axis i: the constant
    ``value`` (mode "constant"), the mirror image without the edge ("reflect"), copies of the
    edge ("replicate") or the other end ("circular"). Every non-constant entry is a copy of
    x at a source index along each axis; backward: each entry's gradient added to its source
    (the constant ones get none)."""

    op_name = "pad"

    @staticmethod
    def forward(ctx: Context, x: Any, widths: tuple[tuple[int, int], ...], mode: str,
                value: float) -> Any:
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
        return out

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
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


def _source_indices(xp: Any, size: int, before: int, after: int, mode: str) -> Any:
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
