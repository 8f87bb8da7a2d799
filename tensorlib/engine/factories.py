"""PyTorch's factories (``tensor``, ``zeros``, ``ones``, ``empty``, ``full``, ``arange``,
``linspace``, ``zeros_like``, ``ones_like``, ``empty_like``, ``full_like``) and its functions
that join or compare whole tensors (``cat``, ``stack``, ``isclose``, ``allclose``, ``equal``).

Every factory takes ``device=`` by name, as PyTorch's: None (the CPU; a ``*_like`` factory's
default is its tensor's device), a string (``'cpu'``, ``'cuda:0'``) or a ``tensorlib.device``.
The values are made on the host and copied there; the device is checked first
(:func:`tensorlib.engine.devices.backend_for`: ValueError for an unknown one, RuntimeError for
one not available here).
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from tensorlib.engine import ops, validation
from tensorlib.engine.backend import Backend, copy_to_backend, device_of
from tensorlib.engine.devices import backend_for
from tensorlib.engine.methods.operands import number, same_dtype
from tensorlib.engine.tensor import DTypeLike, ShapeLike, Tensor, _to_array, float32, int64
from tensorlib.engine.tensor_arguments import _NOT_GIVEN, _axis, _one_shape
from tensorlib.engine.typing import Array


def _placed(array: Array, backend: Backend | None, requires_grad: bool) -> Tensor:
    """A tensor of ``array`` copied onto ``backend`` (left where it is for None)."""
    if backend is not None and device_of(array) != backend.name:
        array = copy_to_backend(backend, array)
    return Tensor(array, requires_grad=requires_grad)


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor that shares ``array``'s memory, as ``torch.from_numpy``: a change of one is a
    change of the other, and the dtype is the array's (float64 stays float64)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy takes a numpy array, got {type(array).__name__}")
    validation.tensor_dtype(array.dtype, "from_numpy array's dtype")
    return Tensor._from_array(array)


def tensor(data: Any, dtype: DTypeLike | None = None, requires_grad: bool = False, *,
           device: Any = None) -> Tensor:
    """Make a tensor from a number, nested list or array (Python floats become float32), on
    ``device`` (None: where ``data`` is, the CPU for lists and numpy arrays).

    The data is copied, as ``torch.tensor`` does.
    """
    backend = None if device is None else backend_for(device)
    array = _to_array(data, dtype)
    copied = np.array(array, copy=True) if device_of(array) == "cpu" else array.copy()
    return _placed(copied, backend, requires_grad)


def _new_shape(shape: tuple[Any, ...], what: str) -> tuple[int, ...]:
    """A factory's shape, given as ``zeros(2, 3)`` or ``zeros((2, 3))``, checked."""
    return validation.shape(_one_shape(shape), f"{what} shape")


def _dtype(dtype: DTypeLike | None, default: np.dtype = float32) -> np.dtype:
    return default if dtype is None else validation.tensor_dtype(dtype)


def zeros(*shape: Any, dtype: DTypeLike | None = None, device: Any = None,
          requires_grad: bool = False) -> Tensor:
    """A tensor of zeros, ``zeros(2, 3)`` or ``zeros((2, 3))`` (float32 unless ``dtype``)."""
    shape, dtype, backend = _new_shape(shape, "zeros"), _dtype(dtype), backend_for(device)
    return _placed(np.zeros(shape, dtype=dtype), backend, requires_grad)


def ones(*shape: Any, dtype: DTypeLike | None = None, device: Any = None,
         requires_grad: bool = False) -> Tensor:
    """A tensor of ones, ``ones(2, 3)`` or ``ones((2, 3))`` (float32 unless ``dtype``)."""
    shape, dtype, backend = _new_shape(shape, "ones"), _dtype(dtype), backend_for(device)
    return _placed(np.ones(shape, dtype=dtype), backend, requires_grad)


def empty(*shape: Any, dtype: DTypeLike | None = None, device: Any = None,
          requires_grad: bool = False) -> Tensor:
    """A tensor to be written over, ``empty(2, 3)`` or ``empty((2, 3))``: its values are
    zeros here (PyTorch's are whatever the memory held), so a program that reads them before
    writing is at least the same on every run."""
    shape, dtype, backend = _new_shape(shape, "empty"), _dtype(dtype), backend_for(device)
    return _placed(np.zeros(shape, dtype=dtype), backend, requires_grad)


def full(shape: ShapeLike, value: float, dtype: DTypeLike | None = None,
         requires_grad: bool = False, *, device: Any = None) -> Tensor:
    """A tensor of ``shape`` with every entry ``value`` (a number), float32 unless
    ``dtype``."""
    value = number(value, "full value")
    shape, dtype = validation.shape(shape, "full shape"), _dtype(dtype)
    return _placed(np.full(shape, value, dtype=dtype), backend_for(device), requires_grad)


def arange(start: float, stop: float | None = None, step: float = 1,
           dtype: DTypeLike | None = None, requires_grad: bool = False, *,
           device: Any = None) -> Tensor:
    """Evenly spaced values; int64 for integer arguments, float32 otherwise."""
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ValueError("arange step must not be zero")
    if dtype is None:
        integral = all(isinstance(v, numbers.Integral) for v in (start, stop, step))
        dtype = int64 if integral else float32
    backend = backend_for(device)
    return _placed(np.arange(start, stop, step, dtype=dtype), backend, requires_grad)


def linspace(start: float, end: float, steps: int, *, dtype: DTypeLike | None = None,
             device: Any = None, requires_grad: bool = False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end``, both included (float32 by
    default; computed in float64 and rounded once)."""
    start = validation.real(start, "linspace start")
    end = validation.real(end, "linspace end")
    steps = validation.integer(steps, "linspace steps", minimum=0)
    dtype, backend = _dtype(dtype), backend_for(device)
    return _placed(np.linspace(start, end, steps).astype(dtype), backend, requires_grad)


def _like(other: Any, dtype: DTypeLike | None, device: Any,
          what: str) -> tuple[tuple[int, ...], np.dtype, Backend]:
    """A ``*_like`` factory's shape, dtype and device: ``other``'s unless given."""
    if not isinstance(other, Tensor):
        raise TypeError(f"{what} needs a Tensor, got {type(other).__name__}")
    return (other.shape, _dtype(dtype, other.dtype),
            backend_for(other.device if device is None else device))


def zeros_like(other: Tensor, *, dtype: DTypeLike | None = None, device: Any = None,
               requires_grad: bool = False) -> Tensor:
    """Zeros of ``other``'s shape, in its dtype and on its device unless given."""
    shape, dtype, backend = _like(other, dtype, device, "zeros_like")
    return _placed(np.zeros(shape, dtype=dtype), backend, requires_grad)


def ones_like(other: Tensor, *, dtype: DTypeLike | None = None, device: Any = None,
              requires_grad: bool = False) -> Tensor:
    """Ones of ``other``'s shape, in its dtype and on its device unless given."""
    shape, dtype, backend = _like(other, dtype, device, "ones_like")
    return _placed(np.ones(shape, dtype=dtype), backend, requires_grad)


def empty_like(other: Tensor, *, dtype: DTypeLike | None = None, device: Any = None,
               requires_grad: bool = False) -> Tensor:
    """:func:`empty` of ``other``'s shape (zeros here), in its dtype and on its device
    unless given."""
    shape, dtype, backend = _like(other, dtype, device, "empty_like")
    return _placed(np.zeros(shape, dtype=dtype), backend, requires_grad)


def full_like(other: Tensor, fill_value: float, *, dtype: DTypeLike | None = None,
              device: Any = None, requires_grad: bool = False) -> Tensor:
    """``fill_value`` everywhere in ``other``'s shape, in its dtype and on its device unless
    given."""
    value = number(fill_value, "full_like fill_value")
    shape, dtype, backend = _like(other, dtype, device, "full_like")
    return _placed(np.full(shape, value, dtype=dtype), backend, requires_grad)


def cat(tensors: Sequence[Tensor], dim: int = 0, *, axis: Any = _NOT_GIVEN) -> Tensor:
    """Join tensors along an existing dim (``concat`` is the same function); numpy's
    ``axis`` may name it instead."""
    tensors = same_dtype(tensors, "cat")
    first = tensors[0]
    dim = _axis(dim if axis is _NOT_GIVEN else axis, first.ndim)
    for t in tensors[1:]:
        if t.ndim != first.ndim or any(
            t.shape[i] != first.shape[i] for i in range(first.ndim) if i != dim
        ):
            raise ValueError(f"cat along dim {dim}: shapes "
                             f"{[tuple(x.shape) for x in tensors]} differ off that dim")
    return ops.Concat.apply(*tensors, axis=dim)


concat = cat


def stack(tensors: Sequence[Tensor], dim: int = 0, *, axis: Any = _NOT_GIVEN) -> Tensor:
    """Join same-shaped tensors along a new dim (numpy's ``axis`` may name it instead)."""
    tensors = same_dtype(tensors, "stack")
    shapes = {t.shape for t in tensors}
    if len(shapes) != 1:
        raise ValueError(f"stack needs tensors of one shape, got {[t.shape for t in tensors]}")
    dim = _axis(dim if axis is _NOT_GIVEN else axis, tensors[0].ndim + 1)
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
