"""Convolution and pooling layers: Conv1d, Conv2d, MaxPool1d, MaxPool2d, AvgPool1d, AvgPool2d.

As PyTorch's: the same arguments, parameter names and shapes (``weight (out_channels,
in_channels/groups, *kernel_size)``, ``bias (out_channels,)``), so a ``state_dict`` moves
between the two. The computing is in :mod:`tensorlib.nn.functional` (``conv2d``,
``max_pool2d``, ...), each one op of :mod:`tensorlib.engine.ops.convolution`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tensorlib.engine import validation
from tensorlib.engine.splitmix64 import Rng, resolve_rng
from tensorlib.engine.tensor import Tensor
from tensorlib.nn import functional as F
from tensorlib.nn.functional.convolution import per_axis, pool_sizes
from tensorlib.nn.init import fan_in_uniform
from tensorlib.nn.module import Module
from tensorlib.nn.parameter import Parameter

__all__ = ["AvgPool1d", "AvgPool2d", "Conv1d", "Conv2d", "MaxPool1d", "MaxPool2d"]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _Convolution(Module):
    """What Conv1d and Conv2d share; ``dims`` is the number of spatial axes."""

    dims = 0

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", rng: Rng | None = None,
                 dtype: Any = np.float32):
        super().__init__()
        name, dims = type(self).__name__, self.dims
        self.in_channels = validation.dimension(in_channels, "in_channels")
        self.out_channels = validation.dimension(out_channels, "out_channels")
        self.groups = validation.positive_integer(groups, "groups")
        if self.in_channels % self.groups or self.out_channels % self.groups:
            raise ValueError(f"{name}: groups={self.groups} must divide in_channels="
                             f"{self.in_channels} and out_channels={self.out_channels}")
        self.kernel_size = per_axis(kernel_size, dims, "kernel_size", 1)
        self.stride = per_axis(stride, dims, "stride", 1)
        self.dilation = per_axis(dilation, dims, "dilation", 1)
        if isinstance(padding, str):
            if padding not in ("valid", "same"):
                raise ValueError(f"{name} padding must be an integer, a tuple, 'valid' or "
                                 f"'same', got {padding!r}")
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError(f"{name}: padding='same' needs stride 1, got {self.stride}")
            self.padding: Any = padding
        else:
            self.padding = per_axis(padding, dims, "padding", 0)
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"{name} padding_mode must be one of {', '.join(_PADDING_MODES)}, "
                             f"got {padding_mode!r}")
        self.padding_mode = padding_mode
        dtype = validation.float_dtype(dtype)
        generator = resolve_rng(rng)
        shape = (self.out_channels, self.in_channels // self.groups) + self.kernel_size
        fan_in = shape[1] * math.prod(self.kernel_size)
        self.weight = Parameter(fan_in_uniform(shape, generator, dtype=dtype))
        self.bias = Parameter(fan_in_uniform((self.out_channels,), generator, fan_in, dtype)) \
            if validation.boolean(bias, "bias") else None

    def forward(self, x: Tensor) -> Tensor:
        """``x (N, C_in, *S)`` → ``(N, C_out, *S_out)``; see ``F.conv1d``/``F.conv2d``."""
        convolve = F.conv1d if self.dims == 1 else F.conv2d
        if self.padding_mode == "zeros":
            return convolve(x, self.weight, self.bias, self.stride, self.padding, self.dilation,
                            self.groups)
        # another padding: pad first (last axis first, as F.pad reads it), then no padding
        widths: list[int] = []
        for before, after in reversed(self._padding_pairs()):
            widths += [before, after]
        padded = F.pad(x, tuple(widths), mode=self.padding_mode)
        return convolve(padded, self.weight, self.bias, self.stride, 0, self.dilation,
                        self.groups)

    def _padding_pairs(self) -> list[tuple[int, int]]:
        """(before, after) per spatial axis, for a padding mode other than zeros."""
        if self.padding == "valid":
            return [(0, 0)] * self.dims
        if self.padding == "same":
            totals = [d * (k - 1) for k, d in zip(self.kernel_size, self.dilation, strict=True)]
            return [(total // 2, total - total // 2) for total in totals]
        return [(p, p) for p in self.padding]

    def extra_repr(self) -> str:
        text = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}")
        if self.padding != (0,) * self.dims:
            text += f", padding={self.padding!r}"
        if self.dilation != (1,) * self.dims:
            text += f", dilation={self.dilation}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        if self.padding_mode != "zeros":
            text += f", padding_mode={self.padding_mode}"
        return text


class Conv1d(_Convolution):
    """1-D convolution, as ``torch.nn.Conv1d``: ``(N, in_channels, L)`` →
    ``(N, out_channels, L_out)``. ``weight (out_channels, in_channels/groups, kernel_size)``
    and ``bias`` start uniform in ±1/√fan_in (fan_in = in_channels/groups · kernel_size),
    PyTorch's default. ``padding_mode``: "zeros", "reflect", "replicate" or "circular"."""

    dims = 1


class Conv2d(_Convolution):
    """2-D convolution, as ``torch.nn.Conv2d``: ``(N, in_channels, H, W)`` →
    ``(N, out_channels, H_out, W_out)``; ``weight (out_channels, in_channels/groups, kH,
    kW)``. Sizes, initialisation and padding modes as ``Conv1d``."""

    dims = 2


class _Pool(Module):
    dims = 0

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0):
        super().__init__()
        self.kernel_size = per_axis(kernel_size, self.dims, "kernel_size", 1)
        self.stride = self.kernel_size if stride is None else \
            per_axis(stride, self.dims, "stride", 1)
        self.padding = per_axis(padding, self.dims, "padding", 0)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}")


class _MaxPool(_Pool):
    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 dilation: Any = 1, return_indices: bool = False, ceil_mode: bool = False):
        super().__init__(kernel_size, stride, padding)
        self.dilation = per_axis(dilation, self.dims, "dilation", 1)
        self.return_indices, self.ceil_mode = return_indices, ceil_mode
        pool_sizes(type(self).__name__, self.dims, self.kernel_size, self.stride,
                     self.padding, self.dilation, ceil_mode)
        if validation.boolean(return_indices, "return_indices"):
            raise ValueError(f"{type(self).__name__}: return_indices=True is not supported; "
                             "the gradient already goes to each window's maximum")

    def forward(self, x: Tensor) -> Tensor:
        pool = F.max_pool1d if self.dims == 1 else F.max_pool2d
        return pool(x, self.kernel_size, self.stride, self.padding, self.dilation)


class MaxPool1d(_MaxPool):
    """The maximum of each window along ``(N, C, L)``, as ``torch.nn.MaxPool1d``."""

    dims = 1


class MaxPool2d(_MaxPool):
    """The maximum of each window of ``(N, C, H, W)``, as ``torch.nn.MaxPool2d``."""

    dims = 2


class _AvgPool(_Pool):
    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True):
        super().__init__(kernel_size, stride, padding)
        self.count_include_pad = validation.boolean(count_include_pad, "count_include_pad")
        pool_sizes(type(self).__name__, self.dims, self.kernel_size, self.stride,
                     self.padding, 1, ceil_mode)

    def forward(self, x: Tensor) -> Tensor:
        pool = F.avg_pool1d if self.dims == 1 else F.avg_pool2d
        return pool(x, self.kernel_size, self.stride, self.padding,
                    count_include_pad=self.count_include_pad)


class AvgPool1d(_AvgPool):
    """The mean of each window along ``(N, C, L)``, as ``torch.nn.AvgPool1d``."""

    dims = 1


class AvgPool2d(_AvgPool):
    """The mean of each window of ``(N, C, H, W)``, as ``torch.nn.AvgPool2d``."""

    dims = 2
