"""Convolution, pooling, padding, unfold and fold, over 1-D and 2-D inputs, as PyTorch's."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

from tensorlib.engine import ops, validation
from tensorlib.engine.tensor import Tensor
from tensorlib.nn.functional.arguments import _check_floating, _check_one_dtype, _check_tensor

# A size, stride, padding or dilation: one int for every spatial axis, or one per axis
PerAxis = int | Sequence[int]


def per_axis(value: Any, dims: int, what: str, minimum: int) -> tuple[int, ...]:
    """An int, or a sequence of ``dims`` ints, as a ``dims``-tuple of ints >= ``minimum``."""
    values = (value,) * dims if isinstance(value, numbers.Integral) else value
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__") \
            or len(values) != dims:
        raise TypeError(f"{what} must be an integer or a sequence of {dims} integers, "
                        f"got {value!r}")
    return tuple(validation.integer(v, what, minimum=minimum) for v in values)


def _check_spatial_input(x: Any, dims: int, what: str) -> tuple[Tensor, bool]:
    """``x (N, C, *S)``, or an unbatched ``(C, *S)`` as a batch of one (True when it was)."""
    _check_floating(x, f"{what} input")
    if x.ndim == dims + 1:
        return x.unsqueeze(0), True
    if x.ndim != dims + 2:
        layout = ("(N, C, L)", "(C, L)") if dims == 1 else ("(N, C, H, W)", "(C, H, W)")
        raise ValueError(f"{what} expects input {layout[0]} or {layout[1]}, got shape {x.shape}")
    return x, False


def _check_windows_fit(what: str, shape: tuple[int, ...], kernel: tuple[int, ...],
                       padding: tuple[int, ...], dilation: tuple[int, ...]) -> None:
    """ValueError unless each dilated kernel fits in its padded spatial axis."""
    spatial = shape[2:]
    for size, k, p, d in zip(spatial, kernel, padding, dilation, strict=True):
        if d * (k - 1) + 1 > size + 2 * p:
            raise ValueError(f"{what}: the kernel {kernel} (dilation {dilation}) is larger than "
                             f"the input {spatial} padded by {padding} (input shape {shape})")


def _convolution(x: Any, weight: Any, bias: Any, stride: Any, padding: Any, dilation: Any,
                 groups: int, dims: int) -> Tensor:
    what = f"conv{dims}d"
    x, unbatched = _check_spatial_input(x, dims, what)
    _check_floating(weight, f"{what} weight")
    if weight.ndim != dims + 2:
        layout = "(out_channels, in_channels/groups, " + ("L)" if dims == 1 else "kH, kW)")
        raise ValueError(f"{what} weight must be {layout}, got shape {weight.shape}")
    groups = validation.positive_integer(groups, f"{what} groups")
    out_channels, channels = weight.shape[0], x.shape[1]
    if channels % groups or out_channels % groups:
        raise ValueError(f"{what}: groups={groups} must divide the input's {channels} channels "
                         f"and the weight's {out_channels} filters")
    if weight.shape[1] * groups != channels:
        raise ValueError(f"{what}: the input has {channels} channels, the weight "
                         f"{tuple(weight.shape)} expects {weight.shape[1] * groups} "
                         f"(in_channels/groups = {weight.shape[1]}, groups = {groups})")
    if bias is not None:
        _check_floating(bias, f"{what} bias")
        if bias.shape != (out_channels,):
            raise ValueError(f"{what} bias must be ({out_channels},), got shape {bias.shape}")
    x, weight, bias = ops.Convolution.autocast_inputs(x, weight, bias)
    _check_one_dtype(what, x, weight, bias)
    stride = per_axis(stride, dims, f"{what} stride", 1)
    dilation = per_axis(dilation, dims, f"{what} dilation", 1)
    kernel = tuple(weight.shape[2:])
    if isinstance(padding, str):
        x, padding = _string_padding(x, padding, kernel, stride, dilation, what)
    else:
        padding = per_axis(padding, dims, f"{what} padding", 0)
    _check_windows_fit(what, x.shape, kernel, padding, dilation)
    out = ops.Convolution.apply(x, weight, bias, stride=stride, padding=padding,
                                dilation=dilation, groups=groups)
    return out.squeeze(0) if unbatched else out


def _string_padding(x: Tensor, padding: str, kernel: tuple[int, ...], stride: tuple[int, ...],
                    dilation: tuple[int, ...], what: str) -> tuple[Tensor, tuple[int, ...]]:
    """``"valid"``: no padding. ``"same"`` (stride 1): d·(k-1) zeros per axis, half before;
    an odd total puts the extra one after, padded by ``pad`` before the convolution."""
    if padding == "valid":
        return x, (0,) * len(kernel)
    if padding != "same":
        raise ValueError(f"{what} padding must be an integer, a tuple, 'valid' or 'same', "
                         f"got {padding!r}")
    if any(s != 1 for s in stride):
        raise ValueError(f"{what}: padding='same' needs stride 1, got stride {stride}")
    totals = [d * (k - 1) for k, d in zip(kernel, dilation, strict=True)]
    if all(total % 2 == 0 for total in totals):
        return x, tuple(total // 2 for total in totals)
    widths: list[int] = []
    for total in reversed(totals):  # pad's order: the last axis first
        widths += [total // 2, total - total // 2]
    return pad(x, tuple(widths)), (0,) * len(kernel)


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: PerAxis = 1,
           padding: PerAxis | str = 0, dilation: PerAxis = 1, groups: int = 1) -> Tensor:
    """1-D convolution (cross-correlation, as PyTorch's): ``input (N, C, L)`` or ``(C, L)``,
    ``weight (O, C/groups, K)``, ``bias (O,)`` → ``(N, O, L_out)``, with
    L_out = ⌊(L + 2·padding - dilation·(K-1) - 1) / stride⌋ + 1.
    ``padding`` is an int, ``"valid"`` (0) or ``"same"`` (output as long as the input)."""
    return _convolution(input, weight, bias, stride, padding, dilation, groups, dims=1)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: PerAxis = 1,
           padding: PerAxis | str = 0, dilation: PerAxis = 1, groups: int = 1) -> Tensor:
    """2-D convolution (cross-correlation, as PyTorch's): ``input (N, C, H, W)`` or
    ``(C, H, W)``, ``weight (O, C/groups, kH, kW)``, ``bias (O,)`` → ``(N, O, H_out, W_out)``;
    each size as in ``conv1d``. ``stride``, ``padding`` and ``dilation`` are an int or a
    pair; ``padding`` may also be ``"valid"`` or ``"same"``."""
    return _convolution(input, weight, bias, stride, padding, dilation, groups, dims=2)


def pool_sizes(what: str, dims: int, kernel_size: Any, stride: Any, padding: Any,
               dilation: Any, ceil_mode: bool) -> tuple[tuple[int, ...], ...]:
    """A pooling's ``(kernel, stride, padding, dilation)``, each a ``dims``-tuple; stride
    None (or ``()``) is the kernel's size. Padding may be at most half the kernel."""
    kernel = per_axis(kernel_size, dims, f"{what} kernel_size", 1)
    stride = kernel if stride is None or stride == () else \
        per_axis(stride, dims, f"{what} stride", 1)
    padding = per_axis(padding, dims, f"{what} padding", 0)
    dilation = per_axis(dilation, dims, f"{what} dilation", 1)
    if any(2 * p > k for p, k in zip(padding, kernel, strict=True)):
        raise ValueError(f"{what}: padding {padding} must be at most half the kernel {kernel}")
    if validation.boolean(ceil_mode, f"{what} ceil_mode"):
        raise ValueError(f"{what}: ceil_mode=True is not supported; windows that overhang the "
                         "input are dropped (ceil_mode=False): pad the input instead")
    return kernel, stride, padding, dilation


def _pool_arguments(what: str, x: Any, dims: int, kernel_size: Any, stride: Any, padding: Any,
                    dilation: Any, ceil_mode: bool) -> tuple[Any, ...]:
    x, unbatched = _check_spatial_input(x, dims, what)
    kernel, stride, padding, dilation = pool_sizes(what, dims, kernel_size, stride, padding,
                                                   dilation, ceil_mode)
    _check_windows_fit(what, x.shape, kernel, padding, dilation)
    return x, unbatched, kernel, stride, padding, dilation


def _max_pool(x: Any, kernel_size: Any, stride: Any, padding: Any, dilation: Any,
              ceil_mode: bool, return_indices: bool, dims: int) -> Tensor:
    what = f"max_pool{dims}d"
    if validation.boolean(return_indices, f"{what} return_indices"):
        raise ValueError(f"{what}: return_indices=True is not supported; the gradient already "
                         "goes to each window's maximum")
    x, unbatched, kernel, stride, padding, dilation = _pool_arguments(
        what, x, dims, kernel_size, stride, padding, dilation, ceil_mode)
    out = ops.MaxPool.apply(x, kernel=kernel, stride=stride, padding=padding, dilation=dilation)
    return out.squeeze(0) if unbatched else out


def max_pool1d(input: Tensor, kernel_size: PerAxis, stride: PerAxis | None = None,
               padding: PerAxis = 0, dilation: PerAxis = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Tensor:
    """The maximum of each window of ``kernel_size`` along ``input (N, C, L)``, the windows
    ``stride`` apart (default: ``kernel_size``, windows side by side), the input padded with
    -inf. The gradient goes to each window's first maximum."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 1)


def max_pool2d(input: Tensor, kernel_size: PerAxis, stride: PerAxis | None = None,
               padding: PerAxis = 0, dilation: PerAxis = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Tensor:
    """``max_pool1d`` over the two spatial axes of ``input (N, C, H, W)``; each size an int
    or a pair."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 2)


def _avg_pool(x: Any, kernel_size: Any, stride: Any, padding: Any, ceil_mode: bool,
              count_include_pad: bool, divisor_override: Any, dims: int) -> Tensor:
    what = f"avg_pool{dims}d"
    if divisor_override is not None:
        raise ValueError(f"{what}: divisor_override is not supported; divide the output "
                         "instead")
    x, unbatched, kernel, stride, padding, _ = _pool_arguments(
        what, x, dims, kernel_size, stride, padding, 1, ceil_mode)
    out = ops.AvgPool.apply(x, kernel=kernel, stride=stride, padding=padding,
                            count_include_pad=validation.boolean(
                                count_include_pad, f"{what} count_include_pad"))
    return out.squeeze(0) if unbatched else out


def avg_pool1d(input: Tensor, kernel_size: PerAxis, stride: PerAxis | None = None,
               padding: PerAxis = 0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """The mean of each window of ``kernel_size`` along ``input (N, C, L)``, windows
    ``stride`` apart (default ``kernel_size``), zero-padded; with
    ``count_include_pad=False`` the padding is left out of each mean."""
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, None, 1)


def avg_pool2d(input: Tensor, kernel_size: PerAxis, stride: PerAxis | None = None,
               padding: PerAxis = 0, ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    """``avg_pool1d`` over the two spatial axes of ``input (N, C, H, W)``."""
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override, 2)


_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant",
        value: float | None = None) -> Tensor:
    """``input`` padded: ``pad = (left, right)`` for the last axis, ``(left, right, top,
    bottom)`` for the last two, and so on, each >= 0. ``mode``: "constant" (``value``,
    default 0), "reflect" (mirrored without the edge, each width < the axis' size),
    "replicate" (the edge repeated) or "circular" (wrapped around, each width <= the size)."""
    _check_tensor(input, "pad input")
    if mode not in _PAD_MODES:
        raise ValueError(f"pad mode must be one of {', '.join(_PAD_MODES)}, got {mode!r}")
    if isinstance(pad, (str, bytes)) or not hasattr(pad, "__len__") or len(pad) % 2 \
            or not 0 < len(pad) <= 2 * input.ndim:
        raise ValueError(f"pad must be a sequence of (before, after) pairs, last axis first, "
                         f"at most {input.ndim} pairs for a {input.ndim}-D input, got {pad!r}")
    sizes = [validation.integer(p, "pad width", minimum=0) for p in pad]
    widths = [(0, 0)] * input.ndim
    for pair in range(len(sizes) // 2):
        widths[input.ndim - 1 - pair] = (sizes[2 * pair], sizes[2 * pair + 1])
    if mode == "constant":
        fill = 0.0 if value is None else validation.real(value, "pad value")
        return ops.Pad.apply(input, widths=tuple(widths), mode=mode, value=fill)
    if value is not None:
        raise ValueError(f"pad: value is only for mode 'constant', not {mode!r}")
    for axis, (before, after) in enumerate(widths):
        size, limit = input.shape[axis], max(before, after)
        if limit and (size == 0 or (mode == "reflect" and limit >= size)
                      or (mode == "circular" and limit > size)):
            rule = "smaller than" if mode == "reflect" else "at most"
            raise ValueError(f"pad: {mode} padding of ({before}, {after}) on axis {axis} must "
                             f"be {rule} the axis' size {size} (input shape {input.shape})")
    return ops.Pad.apply(input, widths=tuple(widths), mode=mode, value=0.0)


def unfold(input: Tensor, kernel_size: PerAxis, dilation: PerAxis = 1, padding: PerAxis = 0,
           stride: PerAxis = 1) -> Tensor:
    """im2col: ``input (N, C, H, W)`` → ``(N, C·kH·kW, L)``, column l the window at position
    l (row-major), each channel's kH·kW values in a row; L = H_out·W_out as for ``conv2d``.
    ``conv2d(x, w)`` is ``w.reshape(O, -1) @ unfold(x, k)`` reshaped to ``(N, O, H_out,
    W_out)``."""
    x, unbatched = _check_spatial_input(input, 2, "unfold")
    kernel = per_axis(kernel_size, 2, "unfold kernel_size", 1)
    dilation = per_axis(dilation, 2, "unfold dilation", 1)
    padding = per_axis(padding, 2, "unfold padding", 0)
    stride = per_axis(stride, 2, "unfold stride", 1)
    _check_windows_fit("unfold", x.shape, kernel, padding, dilation)
    out = ops.Unfold.apply(x, kernel=kernel, stride=stride, padding=padding, dilation=dilation)
    return out.squeeze(0) if unbatched else out


def fold(input: Tensor, output_size: PerAxis, kernel_size: PerAxis, dilation: PerAxis = 1,
         padding: PerAxis = 0, stride: PerAxis = 1) -> Tensor:
    """col2im, the adjoint of ``unfold``: ``input (N, C·kH·kW, L)`` → ``(N, C, *output_size)``,
    each column's values added back where ``unfold`` reads them (overlaps sum)."""
    _check_floating(input, "fold input")
    unbatched = input.ndim == 2
    x = input.unsqueeze(0) if unbatched else input
    if x.ndim != 3:
        raise ValueError(f"fold expects input (N, C·kH·kW, L) or (C·kH·kW, L), got shape "
                         f"{input.shape}")
    size = per_axis(output_size, 2, "fold output_size", 1)
    kernel = per_axis(kernel_size, 2, "fold kernel_size", 1)
    dilation = per_axis(dilation, 2, "fold dilation", 1)
    padding = per_axis(padding, 2, "fold padding", 0)
    stride = per_axis(stride, 2, "fold stride", 1)
    _check_windows_fit("fold", (1, 1) + size, kernel, padding, dilation)
    positions = math.prod(ops.convolution.window_count(s, k, st, p, d) for s, k, st, p, d
                          in zip(size, kernel, stride, padding, dilation, strict=True))
    per_channel = math.prod(kernel)
    if x.shape[1] % per_channel or x.shape[2] != positions:
        raise ValueError(f"fold: input {tuple(input.shape)} must be (N, C·{per_channel}, "
                         f"{positions}) for kernel {kernel} and output_size {size}")
    out = ops.Fold.apply(x, output_size=size, kernel=kernel, stride=stride, padding=padding,
                         dilation=dilation)
    return out.squeeze(0) if unbatched else out
