"""PyTorch's function spellings of the Tensor methods: ``tensorlib.exp(x)`` is ``x.exp()``.

Each function takes the tensor first and passes every other argument on, so it accepts
exactly what the method accepts (``tensorlib.sum(x, dim=1, keepdim=True)``). The factories
and the functions of several tensors are written out: ``zeros``, ``cat``, ``stack``,
``allclose`` ... in :mod:`tensorlib.engine.factories`, ``where``, ``maximum``, ``split`` in
:mod:`tensorlib.engine.tensor` (the methods call them), ``randn`` ... in
:mod:`tensorlib.engine.random`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tensorlib.engine.tensor import Tensor


def _method_as_function(name: str) -> Callable[..., Any]:
    def function(input: Tensor, *args: Any, **kwargs: Any) -> Any:
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}() takes a Tensor first, got {type(input).__name__}")
        return getattr(input, name)(*args, **kwargs)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"``{name}(x, ...)`` is ``x.{name}(...)``: see :meth:`Tensor.{name}`."
    return function


# elementwise
abs = _method_as_function("abs")
exp = _method_as_function("exp")
log = _method_as_function("log")
log10 = _method_as_function("log10")
sqrt = _method_as_function("sqrt")
tanh = _method_as_function("tanh")
sigmoid = _method_as_function("sigmoid")
relu = _method_as_function("relu")
sign = _method_as_function("sign")
# reductions
sum = _method_as_function("sum")
mean = _method_as_function("mean")
var = _method_as_function("var")
std = _method_as_function("std")
max = _method_as_function("max")
min = _method_as_function("min")
amax = _method_as_function("amax")
amin = _method_as_function("amin")
argmax = _method_as_function("argmax")
argmin = _method_as_function("argmin")
logsumexp = _method_as_function("logsumexp")
all = _method_as_function("all")
any = _method_as_function("any")
softmax = _method_as_function("softmax")
log_softmax = _method_as_function("log_softmax")
# shape
reshape = _method_as_function("reshape")
flatten = _method_as_function("flatten")
squeeze = _method_as_function("squeeze")
unsqueeze = _method_as_function("unsqueeze")
transpose = _method_as_function("transpose")
permute = _method_as_function("permute")
unbind = _method_as_function("unbind")
gather = _method_as_function("gather")
clone = _method_as_function("clone")
numel = _method_as_function("numel")
pow = _method_as_function("pow")
histogram = _method_as_function("histogram")


def matmul(input: Tensor, other: Tensor) -> Tensor:
    """``input @ other``."""
    return input @ other

__all__ = [
    "abs", "all", "amax", "amin", "any", "argmax", "argmin", "clone", "exp", "flatten",
    "gather", "histogram", "log", "log10", "log_softmax", "logsumexp", "matmul", "max", "mean",
    "min",
    "numel", "permute", "pow", "relu", "reshape", "sigmoid", "sign", "softmax", "sqrt", "squeeze",
    "std", "sum", "tanh", "transpose", "unbind", "unsqueeze", "var",
]
