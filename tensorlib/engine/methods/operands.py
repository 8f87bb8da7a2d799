"""What Tensor's methods take and give back: operands made tensors of one dtype, masks,
numbers to write, and the named pairs some methods return.

PyTorch's promotion rules, in short: a Python number never upcasts a float32 tensor; two
floating tensors meet in the wider dtype (float32 for float16 with bfloat16), unless one is
0-d; an integer tensor meets a float one as that float.
"""

from __future__ import annotations

import functools
import numbers
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from tensorlib.engine import tensor as tensor_module  # the class these serve, being defined
from tensorlib.engine import validation
from tensorlib.engine.backend import is_backend_array
from tensorlib.engine.dtypes import DEFAULT_FLOAT, bool_, promote_types
from tensorlib.engine.typing import Array
from tensorlib.engine.validation import is_floating

if TYPE_CHECKING:
    from tensorlib.engine.tensor import Tensor



def wrap(array: Array | np.generic) -> Tensor:
    """An op's array as a new Tensor (no checks): ``Tensor._from_array``."""
    return tensor_module.Tensor._from_array(array)


class MaxMin(NamedTuple):
    """What ``x.max(dim)`` and ``x.min(dim)`` return, as PyTorch's named pair:
    ``values, indices = x.max(1)`` or ``x.max(1).values``."""

    values: Tensor
    indices: Tensor


class TopK(NamedTuple):
    """What ``x.topk(k)`` returns, as PyTorch's named pair: ``values, indices``."""

    values: Tensor
    indices: Tensor


class Histogram(NamedTuple):
    """What ``x.histogram(bins)`` returns, as PyTorch's named pair: the counts per bin and
    the bins' edges (one more than the counts)."""

    hist: Tensor
    bin_edges: Tensor


def floating(t: Tensor) -> Tensor:
    """``t`` itself when it holds floats; otherwise its values in float32, the default
    float dtype: what a floating op (exp, division, mean...) computes on integer or boolean
    input, as in PyTorch."""
    if is_floating(t._data.dtype):
        return t
    return wrap(t._data.astype(DEFAULT_FLOAT))


def as_operand(value: Any, like: Tensor) -> Tensor:
    """Turn a Python number or array into a constant tensor for an op with ``like``.

    Python scalars take ``like``'s floating dtype, so they never upcast float32.
    """
    if isinstance(value, tensor_module.Tensor):
        return value
    if isinstance(value, (tuple, list)) and any(isinstance(v, tensor_module.Tensor) for v in value):
        hint = " (x.max(dim) and x.min(dim) give (values, indices): use .values)" \
            if isinstance(value, MaxMin) else ""
        raise TypeError(f"an operand is a {type(value).__name__} of tensors{hint}")
    if isinstance(value, numbers.Number) and not isinstance(value, np.generic):
        dtype = like.dtype if is_floating(like.dtype) or isinstance(value, numbers.Integral) \
            else DEFAULT_FLOAT
        if isinstance(value, bool) or (like.dtype == bool_ and isinstance(value, numbers.Integral)):
            dtype = like.dtype if like.dtype != bool_ else np.dtype(np.int64)
        try:
            return wrap(np.asarray(value, dtype=dtype))
        except OverflowError:
            raise ValueError(f"{value} does not fit in the {dtype} of the tensor it is "
                             "combined with") from None
    return wrap(tensor_module._to_array(value, None))


def pair(a: Any, b: Any) -> tuple[Tensor, Tensor]:
    """Coerce two operands to tensors of one dtype, without silent float upcasts."""
    if not isinstance(a, tensor_module.Tensor):
        a = as_operand(a, like=b)
    if not isinstance(b, tensor_module.Tensor):
        b = as_operand(b, like=a)
    if a.dtype == b.dtype:
        return a, b
    a_float, b_float = is_floating(a.dtype), is_floating(b.dtype)
    if a_float and b_float:
        common = common_float(a, b)
        return (a if a.dtype == common else a.to(common)), (b if b.dtype == common else
                                                             b.to(common))
    if a_float:
        return a, wrap(b._data.astype(a.dtype))
    if b_float:
        return wrap(a._data.astype(b.dtype)), b
    common = np.result_type(a.dtype, b.dtype)
    return wrap(a._data.astype(common)), wrap(b._data.astype(common))


def common_float(*tensors: Tensor) -> np.dtype:
    """The dtype floating tensors of different dtypes meet in, as PyTorch promotes: the wider
    float, float32 for float16 with bfloat16; a 0-d tensor (a number held as a tensor) yields
    to the dtype of those with axes."""
    with_axes = [t.dtype for t in tensors if t.ndim > 0]
    return functools.reduce(promote_types, with_axes or [t.dtype for t in tensors])


def bool_mask(mask: Any, shape: tuple[int, ...], what: str) -> np.ndarray:
    array = mask._data if isinstance(mask, tensor_module.Tensor) else np.asarray(mask)
    if array.dtype != np.bool_:
        raise TypeError(f"{what}: the mask must be boolean, got dtype {array.dtype}")
    try:
        np.broadcast_shapes(array.shape, shape)
    except ValueError:
        raise ValueError(f"{what}: mask of shape {array.shape} does not broadcast with the "
                         f"tensor's shape {shape}") from None
    return array


def number(value: Any, what: str) -> Any:
    """One number to write into a tensor: a Python or numpy number, or a one-element
    tensor or array (``validation.fill_value``)."""
    array = value._data if isinstance(value, tensor_module.Tensor) else value
    return validation.fill_value(array, what)


def in_place_operand(value: Any, what: str) -> Any:
    """A tensor, backend array or number as given; anything else checked to be numbers."""
    if isinstance(value, (tensor_module.Tensor, numbers.Number)) or is_backend_array(value):
        return value
    return validation.numeric_array(value, what)


def same_dtype(tensors: Sequence[Tensor], what: str) -> list[Tensor]:
    """The tensors in one dtype, promoted as PyTorch's ``cat`` does (``promote_types``)."""
    tensors = list(tensors)
    if not tensors:
        raise ValueError(f"{what} needs at least one tensor")
    for t in tensors:
        if not isinstance(t, tensor_module.Tensor):
            raise TypeError(f"{what} takes tensors, got {type(t).__name__}")
    dtypes = {t.dtype for t in tensors}
    if len(dtypes) == 1:
        return tensors
    common = functools.reduce(promote_types, (t.dtype for t in tensors))  # as PyTorch's cat
    return [t if t.dtype == common else t.to(common) for t in tensors]
