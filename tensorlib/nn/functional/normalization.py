"""Layer norm and RMS norm over the trailing axes and batch norm over the batch (and
positions), fused, each with its reference twin."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from tensorlib.engine import ops, validation
from tensorlib.engine.autograd import no_grad
from tensorlib.engine.backend import array_module
from tensorlib.engine.dtypes import finfo, float32, is_low_precision
from tensorlib.engine.tensor import Tensor
from tensorlib.engine.validation import is_floating
from tensorlib.nn.functional.arguments import _check_floating, _check_one_dtype


def _check_norm(what: str, input: Any, normalized_shape: Any, weight: Any, bias: Any,
                eps: float) -> tuple[int, ...]:
    """The checked ``normalized_shape`` of ``what`` (``"layer_norm"``, ``"rms_norm"``) as a
    tuple: the trailing axes of ``input`` that are normalized, which ``weight`` and ``bias``
    (when given) have as their shape."""
    _check_floating(input, f"{what} input")
    if isinstance(normalized_shape, (int, np.integer)) and not isinstance(normalized_shape, bool):
        normalized_shape = (normalized_shape,)
    if not isinstance(normalized_shape, (tuple, list)) or not normalized_shape or not all(
            isinstance(n, (int, np.integer)) and not isinstance(n, bool)
            for n in normalized_shape):
        raise TypeError(f"{what} normalized_shape must be an int or a non-empty sequence "
                        f"of ints (the trailing axes to normalize), got {normalized_shape!r}")
    shape = tuple(int(n) for n in normalized_shape)
    if input.shape[input.ndim - len(shape):] != shape or len(shape) > input.ndim:
        raise ValueError(f"{what} normalized_shape {list(shape)} does not match the last "
                         f"axes of the input (input shape {input.shape})")
    if 0 in shape:
        raise ValueError(f"{what} needs non-empty normalized axes, got {list(shape)}")
    validation.positive(eps, f"{what} eps")
    for name, value in (("weight", weight), ("bias", bias)):
        if value is None:
            continue
        _check_floating(value, f"{what} {name}")
        if value.shape != shape:
            raise ValueError(f"{what} {name} of shape {value.shape} does not match "
                             f"normalized_shape {list(shape)}")
    if is_low_precision(input.dtype):  # float32 weights allowed, as PyTorch's kernels do
        for name, value in (("weight", weight), ("bias", bias)):
            if value is not None and value.dtype not in (input.dtype, float32):
                raise TypeError(f"{what}: a {input.dtype} input takes {input.dtype} or "
                                f"float32 {name}, got {value.dtype}")
    else:
        _check_one_dtype(what, input, weight, bias)
    return shape


def layer_norm(input: Tensor, normalized_shape: int | Sequence[int],
               weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """PyTorch's ``F.layer_norm``: normalize the trailing axes ``normalized_shape`` of
    ``input`` to zero mean and unit (biased) variance, then scale and shift by ``weight`` and
    ``bias`` (each of shape ``normalized_shape``, or None). One fused node over the flattened
    trailing axes."""
    shape = _check_norm("layer_norm", input, normalized_shape, weight, bias, eps)
    if len(shape) == 1:
        return ops.LayerNorm.apply(input, weight, bias, eps=float(eps))
    width = math.prod(shape)  # several trailing axes: normalize them as one
    flat = ops.LayerNorm.apply(input.reshape(*input.shape[:-len(shape)], width),
                               None if weight is None else weight.reshape(width),
                               None if bias is None else bias.reshape(width), eps=float(eps))
    return flat.reshape(input.shape)


def layer_norm_reference(input: Tensor, normalized_shape: int | Sequence[int],
                         weight: Tensor | None = None, bias: Tensor | None = None,
                         eps: float = 1e-5) -> Tensor:
    """The primitive chain: mean, sub, mul, mean, add eps, sqrt, div, mul weight, add bias."""
    shape = _check_norm("layer_norm", input, normalized_shape, weight, bias, eps)
    axes = tuple(range(-len(shape), 0))
    centered = input - input.mean(axes, keepdims=True)
    variance = (centered * centered).mean(axes, keepdims=True)
    out = centered / (variance + float(eps)).sqrt()
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


def _rms_eps(input: Any, eps: float | None) -> float:
    """``eps``, or PyTorch's default when None: the machine epsilon of the input's dtype."""
    if eps is None and isinstance(input, Tensor) and is_floating(input.dtype):
        return float(finfo(input.dtype).eps)
    return eps  # type: ignore[return-value]  # checked by _check_norm


def rms_norm(input: Tensor, normalized_shape: int | Sequence[int], weight: Tensor | None = None,
             eps: float | None = None) -> Tensor:
    """PyTorch's ``F.rms_norm``: divide the trailing axes ``normalized_shape`` of ``input`` by
    their root mean square, sqrt(mean(x²) + eps), then scale by ``weight`` (of shape
    ``normalized_shape``, or None). ``eps`` None is the machine epsilon of the input's dtype,
    as in PyTorch. One fused node over the flattened trailing axes."""
    eps = _rms_eps(input, eps)
    shape = _check_norm("rms_norm", input, normalized_shape, weight, None, eps)
    if len(shape) == 1:
        return ops.RMSNorm.apply(input, weight, eps=float(eps))
    width = math.prod(shape)  # several trailing axes: normalize them as one
    flat = ops.RMSNorm.apply(input.reshape(*input.shape[:-len(shape)], width),
                             None if weight is None else weight.reshape(width), eps=float(eps))
    return flat.reshape(input.shape)


def rms_norm_reference(input: Tensor, normalized_shape: int | Sequence[int],
                       weight: Tensor | None = None, eps: float | None = None) -> Tensor:
    """The primitive chain: square, mean, add eps, sqrt, div, mul weight."""
    eps = _rms_eps(input, eps)
    shape = _check_norm("rms_norm", input, normalized_shape, weight, None, eps)
    axes = tuple(range(-len(shape), 0))
    out = input / ((input * input).mean(axes, keepdims=True) + float(eps)).sqrt()
    return out if weight is None else out * weight


def _check_batch_norm(x: Any, running_mean: Any, running_var: Any, weight: Any, bias: Any,
                      training: bool, momentum: float, eps: float) -> None:
    _check_floating(x, "batch_norm input")
    if x.ndim < 2:
        raise ValueError(f"batch_norm expects (N, C, ...) input, got shape {x.shape}")
    channels = x.shape[1]
    if training and x.numel() == channels:  # one value per channel
        raise ValueError(f"batch_norm in training needs more than 1 value per channel (a batch "
                         f"variance), got input shape {x.shape}")
    validation.positive(eps, "batch_norm eps")
    validation.real(momentum, "batch_norm momentum", low=0.0, high=1.0, high_open=False)
    if not training and (running_mean is None or running_var is None):
        raise ValueError("batch_norm in evaluation needs running_mean and running_var")
    for name, value in (("running_mean", running_mean), ("running_var", running_var),
                        ("weight", weight), ("bias", bias)):
        if value is None:
            continue
        _check_floating(value, f"batch_norm {name}")
        if value.shape != (channels,):
            raise ValueError(f"batch_norm {name} of shape {value.shape} does not match the "
                             f"input's {channels} channels (input shape {x.shape})")
        if name.startswith("running") and value.requires_grad:
            raise ValueError(f"batch_norm {name} must not require grad (it is a buffer)")
    _check_one_dtype("batch_norm", x, weight, bias)


def _channel_axes(x: Tensor) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The axes statistics are taken over, and the shape a (C,) vector broadcasts as."""
    return (0, *range(2, x.ndim)), (1, -1) + (1,) * (x.ndim - 2)


def batch_norm(x: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None,
               training: bool = False, momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalize each channel of ``x (N, C, ...)`` (``(N, C)``, ``(N, C, L)``, ``(N, C, H,
    W)``), then scale and shift by ``weight`` and ``bias`` (each (C,) or None), as
    ``torch.nn.functional.batch_norm``.

    Training: the batch's mean and biased variance normalize (one fused node), and the
    running statistics, where given, move in place towards the batch's:
    ``running = (1 - momentum) · running + momentum · batch``, with the unbiased variance
    (M/(M-1) times the biased one, M values per channel). Evaluation: the running
    statistics normalize, and nothing changes. An empty batch has no statistics: it passes
    through (``x · weight + bias``, empty) and changes nothing.
    """
    _check_batch_norm(x, running_mean, running_var, weight, bias, training, momentum, eps)
    axes, channel_shape = _channel_axes(x)
    if x.numel() == 0:
        out = x if weight is None else x * weight.reshape(channel_shape)
        return out if bias is None else out + bias.reshape(channel_shape)
    if not training:
        assert running_mean is not None and running_var is not None  # checked above
        xp = array_module(x.numpy())
        mean = running_mean.numpy().astype(x.dtype, copy=False).reshape(channel_shape)
        variance = running_var.numpy().astype(x.dtype, copy=False).reshape(channel_shape)
        out = (x - Tensor(mean)) * Tensor(1.0 / xp.sqrt(variance + x.dtype.type(eps)))
        if weight is not None:
            out = out * weight.reshape(channel_shape)
        return out if bias is None else out + bias.reshape(channel_shape)
    if running_mean is not None or running_var is not None:
        values_per_channel = x.numel() // x.shape[1]
        batch_mean = x.numpy().mean(axis=axes)
        batch_var = x.numpy().var(axis=axes) * (values_per_channel / (values_per_channel - 1))
        with no_grad():
            for running, batch in ((running_mean, batch_mean), (running_var, batch_var)):
                if running is not None:
                    running.mul_(1.0 - momentum).add_(batch.astype(running.dtype), alpha=momentum)
    return ops.BatchNorm.apply(x, weight, bias, eps=float(eps))


def batch_norm_reference(x: Tensor, weight: Tensor | None = None, bias: Tensor | None = None,
                         eps: float = 1e-5) -> Tensor:
    """The primitive chain of training-mode ``batch_norm`` (batch statistics, no running
    ones): mean, sub, mul, mean, add eps, sqrt, div, mul weight, add bias."""
    _check_batch_norm(x, None, None, weight, bias, True, 0.1, eps)
    axes, channel_shape = _channel_axes(x)
    centered = x - x.mean(axes, keepdims=True)
    variance = (centered * centered).mean(axes, keepdims=True)
    out = centered / (variance + float(eps)).sqrt()
    if weight is not None:
        out = out * weight.reshape(channel_shape)
    if bias is not None:
        out = out + bias.reshape(channel_shape)
    return out
