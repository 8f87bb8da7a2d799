"""PyTorch's factories (``tensor``, ``zeros``, ``ones``, ``full``, ``arange``, ``linspace``,
``zeros_like``, ``ones_like``) and its functions that join or compare whole tensors (``cat``,
``stack``, ``isclose``, ``allclose``, ``equal``)."""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from tensorlib.engine import ops, validation
from tensorlib.engine.methods.operands import number, same_dtype
from tensorlib.engine.tensor import DTypeLike, ShapeLike, Tensor, _to_array, float32, int64
from tensorlib.engine.tensor_arguments import _axis, _one_shape


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor that shares ``array``'s memory, as ``torch.from_numpy``: a change of one is a
    change of the other, and the dtype is the array's (float64 stays float64)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy takes a numpy array, got {type(array).__name__}")
    validation.tensor_dtype(array.dtype, "from_numpy array's dtype")
    return Tensor._from_array(array)


def tensor(data: Any, dtype: DTypeLike | None = None, requires_grad: bool = False) -> Tensor:
    """Make a tensor from a number, nested list or array (Python floats become float32).

    The data is copied, as ``torch.tensor`` does.
    """
    array = _to_array(data, dtype)
    return Tensor(np.array(array, copy=True), requires_grad=requires_grad)


def _new_shape(shape: tuple[Any, ...], what: str) -> tuple[int, ...]:
    """A factory's shape, given as ``zeros(2, 3)`` or ``zeros((2, 3))``, checked."""
    return validation.shape(_one_shape(shape), f"{what} shape")


def zeros(*shape: Any, dtype: DTypeLike = float32, requires_grad: bool = False) -> Tensor:
    return Tensor(np.zeros(_new_shape(shape, "zeros"), dtype=validation.tensor_dtype(dtype)),
                  requires_grad=requires_grad)


def ones(*shape: Any, dtype: DTypeLike = float32, requires_grad: bool = False) -> Tensor:
    return Tensor(np.ones(_new_shape(shape, "ones"), dtype=validation.tensor_dtype(dtype)),
                  requires_grad=requires_grad)


def full(shape: ShapeLike, value: float, dtype: DTypeLike = float32,
         requires_grad: bool = False) -> Tensor:
    """A tensor of ``shape`` with every entry ``value`` (a number)."""
    value = number(value, "full value")
    return Tensor(np.full(validation.shape(shape, "full shape"), value,
                          dtype=validation.tensor_dtype(dtype)), requires_grad=requires_grad)


def arange(start: float, stop: float | None = None, step: float = 1,
           dtype: DTypeLike | None = None, requires_grad: bool = False) -> Tensor:
    """Evenly spaced values; int64 for integer arguments, float32 otherwise."""
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ValueError("arange step must not be zero")
    if dtype is None:
        integral = all(isinstance(v, numbers.Integral) for v in (start, stop, step))
        dtype = int64 if integral else float32
    return Tensor(np.arange(start, stop, step, dtype=dtype), requires_grad=requires_grad)


def linspace(start: float, end: float, steps: int, *, dtype: DTypeLike | None = None,
             requires_grad: bool = False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end``, both included (float32 by
    default; computed in float64 and rounded once)."""
    start = validation.real(start, "linspace start")
    end = validation.real(end, "linspace end")
    steps = validation.integer(steps, "linspace steps", minimum=0)
    dtype = float32 if dtype is None else validation.tensor_dtype(dtype)
    return Tensor(np.linspace(start, end, steps).astype(dtype), requires_grad=requires_grad)


def zeros_like(other: Tensor, *, dtype: DTypeLike | None = None,
               requires_grad: bool = False) -> Tensor:
    return Tensor(np.zeros(other.shape, dtype=other.dtype if dtype is None
                           else validation.tensor_dtype(dtype)), requires_grad=requires_grad)


def ones_like(other: Tensor, *, dtype: DTypeLike | None = None,
              requires_grad: bool = False) -> Tensor:
    return Tensor(np.ones(other.shape, dtype=other.dtype if dtype is None
                          else validation.tensor_dtype(dtype)), requires_grad=requires_grad)


def cat(tensors: Sequence[Tensor], dim: int = 0, *, axis: int | None = None) -> Tensor:
    """Join tensors along an existing dim (``concat`` is the same function)."""
    tensors = same_dtype(tensors, "cat")
    first = tensors[0]
    dim = _axis(dim if axis is None else axis, first.ndim)
    for t in tensors[1:]:
        if t.ndim != first.ndim or any(
            t.shape[i] != first.shape[i] for i in range(first.ndim) if i != dim
        ):
            raise ValueError(f"cat along dim {dim}: shapes "
                             f"{[tuple(x.shape) for x in tensors]} differ off that dim")
    return ops.Concat.apply(*tensors, axis=dim)


concat = cat


def stack(tensors: Sequence[Tensor], dim: int = 0, *, axis: int | None = None) -> Tensor:
    """Join same-shaped tensors along a new dim."""
    tensors = same_dtype(tensors, "stack")
    shapes = {t.shape for t in tensors}
    if len(shapes) != 1:
        raise ValueError(f"stack needs tensors of one shape, got {[t.shape for t in tensors]}")
    dim = _axis(dim if axis is None else axis, tensors[0].ndim + 1)
    return cat([t.unsqueeze(dim) for t in tensors], dim=dim)


def isclose(input: Any, other: Any, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: bool = False) -> Tensor:
    """Where ``|input - other| <= atol + rtol * |other|`` (a bool tensor), as PyTorch."""
    a, b = (np.asarray(x._data if isinstance(x, Tensor) else x) for x in (input, other))
    return Tensor._from_array(np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


def allclose(input: Any, other: Any, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> bool:
    """True when every entry is :func:`isclose` (a Python bool)."""
    return bool(isclose(input, other, rtol, atol, equal_nan)._data.all())


def equal(input: Tensor, other: Tensor) -> bool:
    """True when both have one shape and equal values (a Python bool)."""
    return input.shape == other.shape and bool(np.array_equal(input._data, other._data))
