"""Normalization, one node each with a hand-derived backward: layer norm and RMS norm over the
last axis, batch norm over the batch."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from tensorlib.engine.autograd import Context
from tensorlib.engine.backend import array_module
from tensorlib.engine.ops.function import Function
from tensorlib.engine.typing import Array


def _quiet(xp: ModuleType) -> Any:
    return xp.errstate(invalid="ignore", over="ignore")


class LayerNorm(Function):
    """y = x̂ · weight + bias with x̂ = (x - mean) / sqrt(var + eps) over the last axis.

    With r = 1/sqrt(var + eps) and g = dy ⊙ weight (dy without a weight), the backward is
    dx = r · (g - mean(g) - x̂ · mean(g ⊙ x̂)), dweight = Σ_rows dy ⊙ x̂, dbias = Σ_rows dy.
    ``weight`` and ``bias`` may each be None. The two steps, ``normalize`` and ``gradients``,
    are called through ``ctx.function`` (this op, or the kernel registered in its place).
    """

    low_precision = "first"  # a 16-bit input with float32 weights: the input's dtype

    op_name = "layer_norm"

    @staticmethod
    def forward(ctx: Context, x: Array, weight: Array | None, bias: Array | None,
                eps: float) -> Array:
        with _quiet(array_module(x)):  # a row with an infinity: nan, as in PyTorch
            out, normalized, inverse_std = ctx.function.normalize(x, weight, bias, eps)
        if weight is None and bias is None:  # out is x̂: a copy, so that changing the
            out = out.copy()                 # output in place leaves the saved x̂ as it was
        ctx.save_for_backward(normalized, inverse_std, weight)
        return out

    @staticmethod
    def normalize(x: Array, weight: Array | None, bias: Array | None,
                  eps: float) -> tuple[Array, Array, Array]:
        """``(out, x̂, r)``; ``weight`` and ``bias`` may be None."""
        xp = array_module(x)
        # Each row is first shifted by its first entry, which changes neither its deviations
        # nor its variance: a constant row then becomes exactly 0 at any magnitude.
        shifted = x - x[..., :1]
        centred = shifted - shifted.mean(axis=-1, keepdims=True)  # x - mean
        variance = xp.square(centred).mean(axis=-1, keepdims=True)  # biased, as PyTorch
        inverse_std = 1.0 / xp.sqrt(variance + x.dtype.type(eps))  # r (..., 1)
        normalized = centred * inverse_std  # x̂
        out = normalized if weight is None else normalized * weight
        if bias is not None:
            out = out + bias
        return out, normalized, inverse_std

    @staticmethod
    def backward(ctx: Context, grad: Array) -> tuple[Array | None, ...]:
        normalized, inverse_std, weight = ctx.saved_tensors
        with _quiet(array_module(grad)):
            return ctx.function.gradients(grad, normalized, inverse_std, weight,
                                          ctx.needs_input_grad)

    @staticmethod
    def gradients(grad: Array, normalized: Array, inverse_std: Array, weight: Array | None,
                  wanted: tuple[bool, bool, bool]
                  ) -> tuple[Array | None, Array | None, Array | None]:
        """``(dx, dweight, dbias)``, each None unless ``wanted``."""
        width = normalized.shape[-1]
        dx = None
        projected = grad * normalized  # dy ⊙ x̂
        dweight = projected.reshape(-1, width).sum(axis=0) if wanted[1] else None
        dbias = grad.reshape(-1, width).sum(axis=0) if wanted[2] else None
        if wanted[0]:
            g = grad if weight is None else grad * weight
            mean_g = g.mean(axis=-1, keepdims=True)
            mean_g_normalized = (projected if weight is None else projected * weight).mean(
                axis=-1, keepdims=True)  # mean(dy ⊙ x̂ ⊙ w) = mean(g ⊙ x̂)
            dx = (g - (normalized * mean_g_normalized + mean_g)) * inverse_std
        return dx, dweight, dbias


class RMSNorm(Function):
    """y = x̂ · weight with x̂ = x / sqrt(mean(x²) + eps) over the last axis: layer norm
    without the centring and the bias (Zhang and Sennrich, 2019; Llama's norm).

    With r = 1/sqrt(mean(x²) + eps) and g = dy ⊙ weight (dy without a weight), the backward
    is dx = r · (g - x̂ · mean(g ⊙ x̂)), dweight = Σ_rows dy ⊙ x̂. ``weight`` may be None.
    """

    low_precision = "first"  # a 16-bit input with float32 weights: the input's dtype

    op_name = "rms_norm"

    @staticmethod
    def forward(ctx: Context, x: Array, weight: Array | None, eps: float) -> Array:
        xp = array_module(x)
        with _quiet(xp):  # a row with an infinity: nan, as in PyTorch
            mean_square = xp.square(x).mean(axis=-1, keepdims=True)         # (..., 1)
            inverse_rms = 1.0 / xp.sqrt(mean_square + x.dtype.type(eps))   # r
            normalized = x * inverse_rms                                     # x̂
        out = normalized if weight is None else normalized * weight
        if weight is None:  # out is x̂: a copy, so that changing the output in place
            out = out.copy()  # leaves the saved x̂ as it was
        ctx.save_for_backward(normalized, inverse_rms, weight)
        return out

    @staticmethod
    def backward(ctx: Context, grad: Array) -> tuple[Array | None, ...]:
        normalized, inverse_rms, weight = ctx.saved_tensors
        width = normalized.shape[-1]
        projected = grad * normalized                                        # dy ⊙ x̂
        wanted = ctx.needs_input_grad
        dweight = projected.reshape(-1, width).sum(axis=0) if wanted[1] else None
        dx = None
        if wanted[0]:
            with _quiet(array_module(grad)):
                g = grad if weight is None else grad * weight
                mean_g_normalized = (projected if weight is None else projected * weight).mean(
                    axis=-1, keepdims=True)                                  # mean(g ⊙ x̂)
                dx = (g - normalized * mean_g_normalized) * inverse_rms
        return dx, dweight


class BatchNorm(Function):
    """y = x̂ · weight + bias with x̂ = (x - mean) / sqrt(var + eps), the mean and the biased
    variance taken per channel over every axis but the channels': x (N, C) over axis 0,
    x (N, C, L) over 0 and 2, x (N, C, H, W) over 0, 2 and 3 (M = N, N·L or N·H·W values
    per channel). ``weight`` and ``bias`` are (C,).

    With r = 1/sqrt(var + eps) and g = dy ⊙ weight, means over the same axes, the backward is
    dx = r · (g - mean(g) - x̂ · mean(g ⊙ x̂)), dweight = Σ dy ⊙ x̂, dbias = Σ dy. ``weight``
    and ``bias`` may each be None.
    """

    op_name = "batch_norm"

    @staticmethod
    def forward(ctx: Context, x: Array, weight: Array | None, bias: Array | None,
                eps: float) -> Array:
        xp = array_module(x)
        axes = (0, *range(2, x.ndim))                     # every axis but the channels'
        channel_shape = (1, -1) + (1,) * (x.ndim - 2)     # (C,) broadcast along them
        weight = None if weight is None else weight.reshape(channel_shape)
        bias = None if bias is None else bias.reshape(channel_shape)
        centred = x - x.mean(axis=axes, keepdims=True)
        variance = xp.square(centred).mean(axis=axes, keepdims=True)   # biased (1, C[, 1])
        inverse_std = 1.0 / xp.sqrt(variance + x.dtype.type(eps))       # r
        normalized = centred * inverse_std                               # x̂
        out = normalized if weight is None else normalized * weight
        if bias is not None:
            out = out + bias
        if weight is None and bias is None:  # out is x̂: a copy, so that changing the
            out = out.copy()                 # output in place leaves the saved x̂ as it was
        ctx.save_for_backward(normalized, inverse_std, weight)
        ctx.axes = axes
        return out

    @staticmethod
    def backward(ctx: Context, grad: Array) -> tuple[Array | None, ...]:
        normalized, inverse_std, weight = ctx.saved_tensors
        axes = ctx.axes
        g = grad if weight is None else grad * weight
        dx = inverse_std * (g - g.mean(axis=axes, keepdims=True)
                            - normalized * (g * normalized).mean(axis=axes, keepdims=True))
        wanted = ctx.needs_input_grad
        dweight = (grad * normalized).sum(axis=axes) if wanted[1] else None
        dbias = grad.sum(axis=axes) if wanted[2] else None
        return dx, dweight, dbias
