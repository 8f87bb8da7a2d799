"""PyTorch's function spellings of the ops: ``tensorlib.exp(x)`` runs the very function that
``x.exp()`` runs, written once in :mod:`tensorlib.engine.methods` with the spellings it has.

A function whose first parameter is the tensor (``self``) is given here with one more check,
that it receives a Tensor first, so ``tensorlib.exp([1.0])`` says so where it was called;
``where``, ``maximum`` and ``minimum`` take numbers too and are the functions themselves. The
factories and the functions of several tensors (``zeros``, ``cat``, ``stack``, ``allclose``...)
are in :mod:`tensorlib.engine.factories`, the random ones in :mod:`tensorlib.engine.random`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Concatenate, ParamSpec, TypeVar

from tensorlib.engine.methods import arithmetic, elementwise, reductions, shape
from tensorlib.engine.tensor import Tensor

Arguments = ParamSpec("Arguments")
Result = TypeVar("Result")


def function_form(method: Callable[Concatenate[Tensor, Arguments], Result]
                  ) -> Callable[Concatenate[Tensor, Arguments], Result]:
    """``method`` as a function that checks it gets a Tensor first."""
    name = method.__name__

    @functools.wraps(method)
    def function(input: Tensor, /, *args: Arguments.args,
                 **kwargs: Arguments.kwargs) -> Result:
        if not isinstance(input, Tensor):
            raise TypeError(f"{name} input must be a Tensor, got {type(input).__name__}")
        return method(input, *args, **kwargs)

    return function


# operators and the functions of two tensors
pow = function_form(arithmetic.pow)
matmul = function_form(arithmetic.matmul)
maximum = arithmetic.maximum
minimum = arithmetic.minimum
where = arithmetic.where
# elementwise
abs = function_form(elementwise.abs)
exp = function_form(elementwise.exp)
log = function_form(elementwise.log)
log10 = function_form(elementwise.log10)
sqrt = function_form(elementwise.sqrt)
tanh = function_form(elementwise.tanh)
sigmoid = function_form(elementwise.sigmoid)
relu = function_form(elementwise.relu)
sign = function_form(elementwise.sign)
# reductions
sum = function_form(reductions.sum)
mean = function_form(reductions.mean)
var = function_form(reductions.var)
std = function_form(reductions.std)
max = function_form(reductions.max)
topk = function_form(reductions.topk)
min = function_form(reductions.min)
amax = function_form(reductions.amax)
amin = function_form(reductions.amin)
argmax = function_form(reductions.argmax)
argmin = function_form(reductions.argmin)
logsumexp = function_form(reductions.logsumexp)
all = function_form(reductions.all)
any = function_form(reductions.any)
histogram = function_form(reductions.histogram)
softmax = function_form(reductions.softmax)
log_softmax = function_form(reductions.log_softmax)
# shape
reshape = function_form(shape.reshape)
flatten = function_form(shape.flatten)
squeeze = function_form(shape.squeeze)
unsqueeze = function_form(shape.unsqueeze)
t = function_form(shape.t)
transpose = function_form(shape.transpose)
permute = function_form(shape.permute)
unbind = function_form(shape.unbind)
gather = function_form(shape.gather)
clone = function_form(shape.clone)
split = function_form(shape.split)
numel = function_form(Tensor.numel)
tril = function_form(shape.tril)
triu = function_form(shape.triu)
# the spellings tensorlib.nn.functional has and tensorlib does not
leaky_relu = function_form(elementwise.leaky_relu)
softplus = function_form(elementwise.softplus)
silu = function_form(elementwise.silu)
gelu = function_form(elementwise.gelu)
relu6 = function_form(elementwise.relu6)
hardswish = function_form(elementwise.hardswish)
mish = function_form(elementwise.mish)


__all__ = [
    "abs", "all", "amax", "amin", "any", "argmax", "argmin", "clone", "exp", "flatten",
    "function_form", "gather", "gelu", "hardswish", "histogram", "leaky_relu", "log", "log10",
    "log_softmax", "logsumexp", "matmul", "max", "maximum", "mean", "min", "minimum", "mish",
    "numel", "permute", "pow", "relu", "relu6", "reshape", "sigmoid", "sign", "silu",
    "softmax", "softplus", "split", "sqrt", "squeeze", "std", "sum", "tanh", "transpose", "tril",
    "triu",
    "unbind", "unsqueeze", "var", "where",
]
