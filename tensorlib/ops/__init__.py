"""Every differentiable primitive, one ``Function`` each, grouped by kind."""

from tensorlib.ops.arithmetic import Add, Cast, Div, Maximum, Mul, Neg, Pow, PowScalar, Sub
from tensorlib.ops.elementwise import Abs, Exp, Gelu, Log, Relu, Sigmoid, Sqrt, Tanh
from tensorlib.ops.matmul import MatMul
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
    "Abs", "Add", "Cast", "Concat", "Div", "Exp", "Expand", "Gelu", "GetItem", "Log",
    "LogSoftmax", "LogSumExp", "MaskedFill", "MatMul", "Max", "Maximum", "Mean", "Mul", "Neg",
    "Permute", "Pow", "PowScalar", "Relu", "Reshape", "Sigmoid", "Softmax", "Sqrt", "Sub", "Sum",
    "Tanh", "Var", "Where", "normalize_index",
]
