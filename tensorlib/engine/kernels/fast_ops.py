"""The kernels that run in place of ops: one subclass per op, registered in the op table.

Each class below is a subclass of an op of ``tensorlib.engine.ops`` that replaces one or more of
the op's steps (``LayerNorm.normalize``, ``CrossEntropy.row_losses``, ...) with a kernel of
this package computing the same thing; ``register_kernel`` puts it in the table that
``Function.apply`` reads, and reference mode switches the whole table off. The op's own
forward and backward, the formulas, stay the code that runs around the steps.
"""

from __future__ import annotations

import numpy as np

from tensorlib.engine import autograd, ops
from tensorlib.engine.autograd import Context
from tensorlib.engine.backend import array_module
from tensorlib.engine.kernels.convolution import image_gradient_batch_last
from tensorlib.engine.kernels.gelu import gelu_float32
from tensorlib.engine.kernels.loss import cross_entropy_backward, cross_entropy_rows
from tensorlib.engine.kernels.matmul import shared_matmul, shared_matmul_backward
from tensorlib.engine.kernels.normalization import layer_norm, layer_norm_backward
from tensorlib.engine.kernels.pooling import max_pool_2x2, max_pool_2x2_backward
from tensorlib.engine.kernels.recurrent import sigmoid_into
from tensorlib.engine.kernels.reductions import column_sums
from tensorlib.engine.kernels.scatter import rows_summed_by_id
from tensorlib.engine.kernels.softmax import causal_softmax_, softmax_backward_
from tensorlib.engine.kernels.sole_owner import sole_owner
from tensorlib.engine.ops.function import register_kernel
from tensorlib.engine.typing import Array

__all__ = ["KERNELS", "register"]


class LayerNormKernel(ops.LayerNorm):
    normalize = staticmethod(layer_norm)
    gradients = staticmethod(layer_norm_backward)


class CrossEntropyKernel(ops.CrossEntropy):
    row_losses = staticmethod(cross_entropy_rows)
    row_gradients = staticmethod(cross_entropy_backward)


class LinearKernel(ops.Linear):
    column_sum = staticmethod(column_sums)

    @staticmethod
    def add_bias(out: Array, bias: Array) -> Array:
        """In place: ``out`` is the fresh product (no second (N, out) array)."""
        out += bias
        return out


class EmbeddingKernel(ops.Embedding):
    rows_summed_by_id = staticmethod(rows_summed_by_id)


class SoftmaxKernel(ops.Softmax):
    causal_softmax = staticmethod(causal_softmax_)


class CausalAttentionKernel(ops.CausalAttention):
    """The op's formulas with fewer arrays: the scores scaled in place, and the three
    gradients written straight into one (B, T, 3, H, D) buffer through views (``out=``),
    so that the gradient of ``qkv`` needs no stacking copy."""

    causal_softmax = staticmethod(causal_softmax_)

    @staticmethod
    def scaled_scores(query: Array, key: Array, scale: float) -> Array:
        scores = query @ key.transpose(0, 1, 3, 2)  # (B, H, T, T), a fresh array
        scores *= scores.dtype.type(scale)
        return scores

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        qkv, probabilities = ctx.saved_tensors
        batch, length, triple = qkv.shape
        heads, width = ctx.heads, triple // 3 // ctx.heads
        query, key, value = ops.attention._heads(qkv, heads)
        grad_out = grad.reshape(batch, length, heads, width).transpose(0, 2, 1, 3)  # dO
        xp = array_module(qkv)
        grad_qkv = xp.empty((batch, length, 3, heads, width), dtype=qkv.dtype)
        grad_query, grad_key, grad_value = (grad_qkv[:, :, i].transpose(0, 2, 1, 3)
                                            for i in range(3))
        xp.matmul(probabilities.transpose(0, 1, 3, 2), grad_out, out=grad_value)  # dv
        grad_scores = grad_out @ value.transpose(0, 1, 3, 2)  # dP (B, H, T, T), fresh
        softmax_backward_(grad_scores, probabilities, ctx.scale)  # dS
        xp.matmul(grad_scores, key, out=grad_query)  # dq
        xp.matmul(grad_scores.transpose(0, 1, 3, 2), query, out=grad_key)  # dk
        return grad_qkv.reshape(batch, length, triple)


class SharedMatMulKernel(ops.MatMul):
    """A batch of rows times one matrix (``a (..., K) @ b (K, N)``) as one GEMM."""

    @staticmethod
    def applies(a: Array, b: Array) -> bool:
        return a.ndim > 2 and b.ndim == 2

    @staticmethod
    def forward(ctx: Context, a: Array, b: Array) -> Array:
        ops.matmul._check_matmul_shapes(a, b)
        wants_a, wants_b = ctx.needs_input_grad
        ctx.save_for_backward(a if wants_b else None, b if wants_a else None)
        with ops.matmul.quiet_products(array_module(a)):
            return shared_matmul(a, b)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> tuple[Array | None, ...]:
        a, b = ctx.saved_tensors
        with ops.matmul.quiet_products(array_module(grad)):
            return shared_matmul_backward(a, b, grad, ctx.needs_input_grad)


class GeluFloat32Kernel(ops.Gelu):
    """The exact GELU of float32 input: value and slope from one exp."""

    @staticmethod
    def applies(a: Array, approximate: str = "none") -> bool:
        return approximate == "none" and a.dtype == np.float32

    @staticmethod
    def forward(ctx: Context, a: Array, approximate: str = "none") -> Array:
        out, slope = gelu_float32(a, ctx.needs_input_grad[0])
        ctx.save_for_backward(slope)
        return out


def _float32_numpy(x: Array, *arrays: object, **params: object) -> bool:
    return x.dtype == np.float32 and isinstance(x, np.ndarray)


class GRULayerKernel(ops.GRULayer):
    """The GRU's gates with the float32 sigmoid from one exp."""

    applies = staticmethod(_float32_numpy)
    sigmoid = staticmethod(sigmoid_into)


class LSTMLayerKernel(ops.LSTMLayer):
    """The LSTM's gates with the float32 sigmoid from one exp."""

    applies = staticmethod(_float32_numpy)
    sigmoid = staticmethod(sigmoid_into)


class Convolution2dKernel(ops.Convolution):
    """A 2-D convolution at stride 1: its input gradient summed with the batch as the
    innermost axis (``image_gradient_batch_last``)."""

    @staticmethod
    def applies(x: Array, weight: Array, bias: Array | None = None,
                stride: tuple[int, ...] = (1, 1), padding: tuple[int, ...] = (0, 0),
                dilation: tuple[int, ...] = (1, 1), groups: int = 1) -> bool:
        return (isinstance(x, np.ndarray) and x.ndim == 4 and tuple(stride) == (1, 1)
                and tuple(dilation) == (1, 1))

    image_gradient = staticmethod(image_gradient_batch_last)


class MaxPool2x2Kernel(ops.MaxPool):
    """2×2 windows at stride 2, unpadded: the maximum of pairs, then of rows
    (``max_pool_2x2``); a window holding NaN is left to the op's walk."""

    @staticmethod
    def applies(x: Array, kernel: tuple[int, ...], stride: tuple[int, ...],
                padding: tuple[int, ...], dilation: tuple[int, ...]) -> bool:
        return (isinstance(x, np.ndarray) and x.ndim == 4 and tuple(kernel) == (2, 2)
                and tuple(stride) == (2, 2) and not any(padding)
                and tuple(dilation) == (1, 1))

    @staticmethod
    def forward(ctx: Context, x: Array, kernel: tuple[int, ...], stride: tuple[int, ...],
                padding: tuple[int, ...], dilation: tuple[int, ...]) -> Array:
        best, chosen = max_pool_2x2(x)
        if np.isnan(best).any():
            ctx.walked = True
            return ops.MaxPool.forward(ctx, x, kernel, stride, padding, dilation)
        ctx.walked, ctx.chosen, ctx.x_shape = False, chosen, x.shape
        return best

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        if ctx.walked:
            return ops.MaxPool.backward(ctx, grad)
        return max_pool_2x2_backward(grad, ctx.chosen, ctx.x_shape)


KERNELS = (LayerNormKernel, CrossEntropyKernel, LinearKernel, EmbeddingKernel, SoftmaxKernel,
           CausalAttentionKernel, SharedMatMulKernel, GeluFloat32Kernel, GRULayerKernel,
           LSTMLayerKernel, Convolution2dKernel, MaxPool2x2Kernel)


def register() -> None:
    """Put each kernel above in the op table in place of the op it subclasses, and install
    the engine's check that an array has no other owner (``sole_owner``)."""
    for kernel in KERNELS:
        register_kernel(kernel.__mro__[1], kernel)
    autograd.set_unshared_check(sole_owner)
