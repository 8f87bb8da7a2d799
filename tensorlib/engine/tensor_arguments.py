"""How a Tensor method reads its arguments: shapes given as ``(2, 3)`` or ``2, 3``, dims (one,
several, negative, or numpy's ``axis=``), ``keepdim`` and numpy's ``keepdims``, ``var``'s
correction; each checked, with errors that name the method."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from tensorlib.engine import validation

if TYPE_CHECKING:
    from tensorlib.engine.tensor import Tensor

# numpy's keepdims= when not given (None is a value a caller can wrongly pass)
_NOT_GIVEN: Any = type("NotGiven", (), {"__repr__": lambda self: "<not given>"})()


def _one_shape(shape: tuple[Any, ...]) -> tuple[Any, ...]:
    """Accept ``reshape(2, 3)`` and ``reshape((2, 3))`` alike."""
    return tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) \
        else shape


def _shape_arg(shape: tuple[Any, ...]) -> tuple[int, ...]:
    """The integers of a shape given as ``reshape(2, 3)`` or ``reshape((2, 3))``."""
    shape = _one_shape(shape)
    if all(type(dim) is int for dim in shape):
        return shape  # the common case, checked cheaply
    for dim in shape:
        if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
            raise TypeError(f"shape entries must be integers, got {shape!r}")
    return tuple(int(d) for d in shape)


def _resolve_shape(new_shape: tuple[int, ...], old_shape: tuple[int, ...]) -> tuple[int, ...]:
    """Fill in a single ``-1`` and check that the element count is unchanged."""
    size = math.prod(old_shape)
    unknown = [i for i, d in enumerate(new_shape) if d == -1]
    known = math.prod([d for d in new_shape if d != -1])
    bad = len(unknown) > 1 or any(d < -1 for d in new_shape)
    if not bad and unknown:
        bad = known == 0 or size % known != 0
        if not bad:
            new_shape = tuple(size // known if d == -1 else d for d in new_shape)
    if bad or math.prod(new_shape) != size:
        raise ValueError(f"cannot reshape a tensor of shape {old_shape} ({size} elements) "
                         f"into shape {new_shape}")
    return new_shape


def _axis(axis: int, ndim: int) -> int:
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise TypeError(f"axis must be an integer, got {axis!r}")
    if not -ndim <= axis < ndim:
        raise IndexError(f"axis {axis} is out of range for a tensor with {ndim} axes")
    return int(axis) % ndim


def _axes(axis: int | tuple[int, ...] | list[int] | None, ndim: int) -> tuple[int, ...] | None:
    """Normalize an ``axis`` argument to a sorted tuple of non-negative axes (or None)."""
    if axis is None:
        return None
    items = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    if not items:
        raise ValueError("dim=() is refused: numpy reduces over no axis, PyTorch over every "
                         "dim; pass dim=None to reduce over every dim")
    normalized = tuple(sorted(_axis(a, ndim) for a in items))
    if len(set(normalized)) != len(normalized):
        raise ValueError(f"repeated axis in {axis!r}")
    return normalized


def _keepdims(keepdims: Any) -> bool:
    return validation.boolean(keepdims, "keepdim")


def _dim_or_axis(dim: Any, axis: Any, what: str) -> Any:
    """PyTorch's ``dim``, or numpy's ``axis`` in its place (PyTorch accepts both)."""
    if axis is None:
        return dim
    if dim is not None:
        raise TypeError(f"{what}: pass dim or axis, not both")
    return axis


def _reduction_args(t: Tensor, dim: Any, axis: Any, keepdim: Any,
                    keepdims: Any) -> tuple[tuple[int, ...] | None, bool]:
    """A reduction's dims, normalized (None: every dim), and whether to keep them."""
    dims = _axes(_dim_or_axis(dim, axis, "reduction"), t.ndim)
    return dims, _keepdims(keepdim if keepdims is _NOT_GIVEN else keepdims)


def _one_dim(t: Tensor, dim: int, axis: int | None, what: str) -> int:
    """The one dim an op works along, from ``dim`` or ``axis`` (numpy's name, which replaces
    ``dim`` and its default when given)."""
    return _axis(dim if axis is None else axis, t.ndim)


def _correction(unbiased: Any, correction: Any, what: str) -> float:
    """The divisor's correction n - c for var and std: PyTorch's ``correction`` (default 1)
    or its older ``unbiased`` flag (True: 1, False: 0)."""
    if unbiased is not None and correction is not None:
        raise TypeError(f"{what}: pass unbiased or correction, not both")
    if unbiased is not None:
        return 1.0 if validation.boolean(unbiased, f"{what} unbiased") else 0.0
    if correction is None:
        return 1.0
    if isinstance(correction, (int, np.integer)) and not isinstance(correction, bool) \
            and abs(int(correction)) >= 2**63:
        raise ValueError(f"{what} correction {correction} does not fit in a 64-bit integer "
                         "(PyTorch refuses it too)")
    return validation.real(correction, f"{what} correction")
