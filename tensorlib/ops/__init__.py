"""Every differentiable op, one ``Function`` each, grouped by kind (fused ones included).

Each is written as its formula, forward and backward side by side. Where a faster way to
compute the same thing exists, a subclass of the op registered with ``register_kernel``
(``tensorlib.ops.function``) runs in its place, unless reference mode is on.
"""

from tensorlib.ops.arithmetic import Add, Cast, Div, Maximum, Mul, Neg, Pow, PowScalar, Sub
from tensorlib.ops.attention import CausalAttention
from tensorlib.ops.elementwise import (
    Abs,
    Dropout,
    Exp,
    Gelu,
    LeakyRelu,
    Log,
    Relu,
    Sigmoid,
    Sign,
    Silu,
    Softplus,
    Sqrt,
    Tanh,
)
from tensorlib.ops.embedding import Embedding
from tensorlib.ops.loss import CrossEntropy
from tensorlib.ops.matmul import Linear, MatMul
from tensorlib.ops.normalization import BatchNorm, LayerNorm
from tensorlib.ops.reduction import LogSumExp, Max, Mean, Sum, Var
from tensorlib.ops.shape import (
    Concat,
    Expand,
    GetItem,
    MaskedFill,
    Permute,
    Reshape,
    Where,
    normalize_index,
)
from tensorlib.ops.softmax import LogSoftmax, Softmax

__all__ = [
    "Abs", "Add", "BatchNorm", "Cast", "CausalAttention", "Concat", "CrossEntropy", "Div",
    "Dropout", "Embedding", "Exp", "Expand", "Gelu", "GetItem", "LayerNorm", "LeakyRelu",
    "Linear", "Log", "LogSoftmax", "LogSumExp", "MaskedFill", "MatMul", "Max", "Maximum", "Mean",
    "Mul", "Neg", "Permute", "Pow", "PowScalar", "Relu", "Reshape", "Sigmoid", "Sign", "Silu",
    "Softmax", "Softplus", "Sqrt", "Sub", "Sum", "Tanh", "Var", "Where", "normalize_index",
]
