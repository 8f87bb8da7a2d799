"""The kernels that run in place of ops: one subclass per op, registered in the op table.

Each class below is a subclass of an op of ``tensorlib.ops`` that replaces one or more of
the op's steps (``LayerNorm.normalize``, ``CrossEntropy.row_losses``, ...) with a kernel of
this package computing the same thing; ``register_kernel`` puts it in the table that
``Function.apply`` reads, and reference mode switches the whole table off. The op's own
forward and backward, the formulas, stay the code that runs around the steps.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorlib import autograd, ops
from tensorlib.autograd import Context
from tensorlib.kernels.gelu import gelu_float32
from tensorlib.kernels.loss import cross_entropy_backward, cross_entropy_rows
from tensorlib.kernels.matmul import shared_matmul, shared_matmul_backward
from tensorlib.kernels.normalization import layer_norm, layer_norm_backward
from tensorlib.kernels.reductions import column_sum, row_sum
from tensorlib.kernels.references import sole_reference
from tensorlib.kernels.scatter import rows_summed_by_id
from tensorlib.kernels.softmax import causal_softmax_
from tensorlib.ops.function import register_kernel

__all__: list[str] = []


class LayerNormKernel(ops.LayerNorm):
    normalize = staticmethod(layer_norm)
    gradients = staticmethod(layer_norm_backward)


class CrossEntropyKernel(ops.CrossEntropy):
    row_losses = staticmethod(cross_entropy_rows)
    row_gradients = staticmethod(cross_entropy_backward)


class LinearKernel(ops.Linear):
    column_sum = staticmethod(column_sum)


class EmbeddingKernel(ops.Embedding):
    rows_summed_by_id = staticmethod(rows_summed_by_id)


class SoftmaxKernel(ops.Softmax):
    causal_softmax = staticmethod(causal_softmax_)


class CausalAttentionKernel(ops.CausalAttention):
    causal_softmax = staticmethod(causal_softmax_)
    row_sum = staticmethod(row_sum)


class SharedMatMulKernel(ops.MatMul):
    """A batch of rows times one matrix (``a (..., K) @ b (K, N)``) as one GEMM."""

    @staticmethod
    def applies(a: Any, b: Any) -> bool:
        return a.ndim > 2 and b.ndim == 2

    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> Any:
        ops.matmul._check_matmul_shapes(a, b)
        ctx.save_for_backward(a, b)
        return shared_matmul(a, b)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        a, b = ctx.saved_tensors
        return shared_matmul_backward(a, b, grad, ctx.needs_input_grad)


class GeluFloat32Kernel(ops.Gelu):
    """The exact GELU of float32 input: value and slope from one exp."""

    @staticmethod
    def applies(a: Any, approximate: str = "none") -> bool:
        return approximate == "none" and a.dtype == np.float32

    @staticmethod
    def forward(ctx: Context, a: Any, approximate: str = "none") -> Any:
        out, slope = gelu_float32(a, ctx.needs_input_grad[0])
        ctx.save_for_backward(slope)
        return out


for _kernel in (LayerNormKernel, CrossEntropyKernel, LinearKernel, EmbeddingKernel,
                SoftmaxKernel, CausalAttentionKernel, SharedMatMulKernel, GeluFloat32Kernel):
    register_kernel(_kernel.__mro__[1], _kernel)
autograd.set_unshared_check(sole_reference)
