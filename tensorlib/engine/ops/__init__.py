"""Every differentiable op, one ``Function`` each, grouped by kind (fused ones included).

Each is written as its formula, forward and backward side by side. Where a faster way to
compute the same thing exists, a subclass of the op registered with ``register_kernel``
(``tensorlib.engine.ops.function``) runs in its place, unless reference mode is on.
"""

from tensorlib.engine.ops.arithmetic import Add, Cast, Div, Maximum, Mul, Neg, Pow, PowScalar, Sub
from tensorlib.engine.ops.attention import CausalAttention
from tensorlib.engine.ops.convolution import AvgPool, Convolution, Fold, MaxPool, Pad, Unfold
from tensorlib.engine.ops.elementwise import (
    Abs,
    Dropout,
    Exp,
    Gelu,
    Hardswish,
    LeakyRelu,
    Log,
    Mish,
    Relu,
    Relu6,
    Sigmoid,
    Sign,
    Silu,
    Softplus,
    Sqrt,
    Tanh,
)
from tensorlib.engine.ops.embedding import Embedding
from tensorlib.engine.ops.function import views_of
from tensorlib.engine.ops.loss import CrossEntropy
from tensorlib.engine.ops.matmul import Linear, MatMul
from tensorlib.engine.ops.normalization import BatchNorm, LayerNorm, RMSNorm
from tensorlib.engine.ops.recurrent import GRULayer, LSTMLayer, RNNLayer
from tensorlib.engine.ops.reduction import LogSumExp, Max, Mean, Std, Sum, Var
from tensorlib.engine.ops.shape import (
    Clone,
    Concat,
    Expand,
    Gather,
    GetItem,
    IndexPut,
    MaskedFill,
    Permute,
    Reshape,
    Where,
    is_advanced_index,
    normalize_index,
)
from tensorlib.engine.ops.softmax import LogSoftmax, Softmax

__all__ = [
    "Abs", "Add", "AvgPool", "BatchNorm", "Cast", "CausalAttention", "Clone", "Concat",
    "Convolution", "CrossEntropy", "Div", "Dropout", "Embedding", "Exp", "Expand", "Fold",
    "GRULayer", "Gather", "Gelu", "GetItem", "Hardswish", "IndexPut", "LSTMLayer", "LayerNorm",
    "LeakyRelu", "Linear", "Log", "LogSoftmax", "LogSumExp", "MaskedFill", "MatMul", "Max",
    "MaxPool", "Maximum", "Mean", "Mish", "Mul", "Neg", "Pad", "Permute", "Pow", "PowScalar",
    "RMSNorm", "RNNLayer", "Relu", "Relu6", "Reshape", "Sigmoid", "Sign", "Silu", "Softmax",
    "Softplus", "Sqrt", "Std", "Sub", "Sum", "Tanh", "Unfold", "Var", "Where", "is_advanced_index",
    "normalize_index", "views_of",
]
