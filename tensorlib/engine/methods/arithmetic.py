"""The operators (``+ - * / ** @``, unary ``- + ~``), the comparisons, ``maximum``,
``minimum`` and ``where``: Tensor's dunders are these functions."""

from __future__ import annotations

import numbers
from typing import TYPE_CHECKING, Any

import numpy as np

from tensorlib.engine import ops
from tensorlib.engine import tensor as tensor_module  # the class these serve, being defined
from tensorlib.engine.backend import is_backend_array
from tensorlib.engine.dtypes import bool_, int64
from tensorlib.engine.methods.operands import (
    as_operand,
    bool_mask,
    floating,
    pair,
    wrap,
)
from tensorlib.engine.methods.spellings import declare

if TYPE_CHECKING:
    from tensorlib.engine.tensor import Tensor


def add(self: Tensor, other: Any) -> Tensor:
    return ops.Add.apply(*pair(self, other))


def radd(self: Tensor, other: Any) -> Tensor:
    return ops.Add.apply(*pair(as_operand(other, like=self), self))


def sub(self: Tensor, other: Any) -> Tensor:
    return ops.Sub.apply(*pair(self, other))


def rsub(self: Tensor, other: Any) -> Tensor:
    return ops.Sub.apply(*pair(as_operand(other, like=self), self))


def mul(self: Tensor, other: Any) -> Tensor:
    return ops.Mul.apply(*pair(self, other))


def rmul(self: Tensor, other: Any) -> Tensor:
    return ops.Mul.apply(*pair(as_operand(other, like=self), self))


def truediv(self: Tensor, other: Any) -> Tensor:
    return ops.Div.apply(*map(floating, pair(self, other)))


def rtruediv(self: Tensor, other: Any) -> Tensor:
    return ops.Div.apply(*map(floating, pair(as_operand(other, like=self), self)))


def pow(self: Tensor, exponent: Any) -> Tensor:
    """``self ** exponent``. An integer tensor to a Python int power stays integer (int64
    for bool), and refuses a negative power; to a float power it computes in float32."""
    if isinstance(exponent, numbers.Integral) and not isinstance(exponent, bool) \
            and self.dtype.kind in "biu":
        if exponent < 0:
            raise ValueError(f"an integer tensor to the negative power {exponent}: "
                             "convert it with .float() first")
        base = self._data.astype(int64) if self.dtype == bool_ else self._data
        return wrap(base ** int(exponent))
    if isinstance(exponent, numbers.Real) and not isinstance(exponent, bool):
        return ops.PowScalar.apply(floating(self), exponent=float(exponent))
    return ops.Pow.apply(*pair(self, exponent))


def rpow(self: Tensor, base: Any) -> Tensor:
    return ops.Pow.apply(*pair(as_operand(base, like=self), self))


def matmul(self: Tensor, other: Any) -> Tensor:
    """The matrix product ``self @ other``, batched over leading dims as numpy's."""
    return ops.MatMul.apply(*pair(self, other))


def rmatmul(self: Tensor, other: Any) -> Tensor:
    return ops.MatMul.apply(*pair(as_operand(other, like=self), self))


def neg(self: Tensor) -> Tensor:
    return ops.Neg.apply(self)


def pos(self: Tensor) -> Tensor:
    return self


def invert(self: Tensor) -> Tensor:
    """Logical not of a bool tensor, bitwise not of an integer one (not differentiable)."""
    if self.dtype.kind not in "biu":
        raise TypeError(f"~ needs a bool or integer tensor, got dtype {self.dtype}")
    return wrap(~self._data)


# comparisons: non-differentiable boolean tensors
def _compare(self: Tensor, other: Any, ufunc: np.ufunc) -> Tensor:
    if not isinstance(other, (tensor_module.Tensor, numbers.Number, np.ndarray, np.generic,
                              list, tuple)) and not is_backend_array(other):
        return NotImplemented  # Python then asks ``other`` (pytest.approx, say)
    a, b = pair(self, other)
    return wrap(ufunc(a._data, b._data))


def lt(self: Tensor, other: Any) -> Tensor:
    return _compare(self, other, np.less)


def le(self: Tensor, other: Any) -> Tensor:
    return _compare(self, other, np.less_equal)


def gt(self: Tensor, other: Any) -> Tensor:
    return _compare(self, other, np.greater)


def ge(self: Tensor, other: Any) -> Tensor:
    return _compare(self, other, np.greater_equal)


def eq(self: Tensor, other: Any) -> Tensor:
    return _compare(self, other, np.equal)


def ne(self: Tensor, other: Any) -> Tensor:
    return _compare(self, other, np.not_equal)


def maximum(input: Any, other: Any) -> Tensor:
    """The larger of two tensors (or numbers) elementwise; a tie shares the gradient."""
    return ops.Maximum.apply(*pair(input, other))


def minimum(input: Any, other: Any) -> Tensor:
    """The smaller of two tensors (or numbers) elementwise, as :func:`maximum`."""
    a, b = pair(input, other)
    return -ops.Maximum.apply(-a, -b)


def where(condition: Any, input: Any, other: Any) -> Tensor:
    """Elementwise ``condition ? input : other`` with broadcasting; differentiable in input
    and other (``x.where(condition, y)`` is ``where(condition, x, y)``)."""
    Tensor = tensor_module.Tensor
    if isinstance(input, Tensor) or not isinstance(other, Tensor):
        first = input if isinstance(input, Tensor) else Tensor(input)
        first, second = pair(first, other)
    else:
        first, second = pair(input, other)
    try:
        shape = np.broadcast_shapes(first.shape, second.shape)
    except ValueError:
        raise ValueError(f"where: shapes {first.shape} and {second.shape} cannot be "
                         "broadcast together") from None
    mask = bool_mask(condition, shape, "where")
    return ops.Where.apply(first, second, condition=mask)


def where_method(self: Tensor, condition: Any, other: Any) -> Tensor:
    """``x.where(condition, y)``: ``condition ? x : y``, as :func:`where`."""
    return where(condition, self, other)


# Where each function above is spelled (tensorlib.engine.methods.spellings)
declare(pow, matmul, maximum, minimum)
declare(where, method=False)
