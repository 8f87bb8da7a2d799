"""In-place changes and their bookkeeping: ``+=``, ``x[index] = v``, ``copy_``, ``add_``,
``mul_``, ``fill_``, ``zero_``, ``requires_grad_``.

An in-place change writes into the tensor's own memory, so its views see the new values, and
bumps the version it shares with them: a graph node that saved the old values then refuses
backward. When the change is recorded (grad mode on, and the tensor or the value written into
it requires grad), the tensor is rebased: its new grad_fn is the change's node, whose input is
a copy of the old value, carrying the old grad_fn.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

import numpy as np

from tensorlib.engine import ops, validation
from tensorlib.engine import tensor as tensor_module  # the class these serve, being defined
from tensorlib.engine.autograd import is_grad_enabled, no_grad
from tensorlib.engine.backend import is_backend_array
from tensorlib.engine.methods.operands import as_operand, in_place_operand, number, wrap

if TYPE_CHECKING:
    from tensorlib.engine.tensor import Tensor


# An in-place change writes into the tensor's own memory, so its views see the new values,
# and bumps the version it shares with them: a graph node that saved the old values then
# refuses backward. When the change is recorded (grad mode on, and the tensor or the value
# written into it requires grad), the tensor is rebased: its new grad_fn is the change's
# node, whose input is a copy of the old value, carrying the old grad_fn.
def iadd(self: Tensor, other: Any) -> Tensor:
    return _in_place(self, lambda old: old + other, other, "+=")


def isub(self: Tensor, other: Any) -> Tensor:
    return _in_place(self, lambda old: old - other, other, "-=")


def imul(self: Tensor, other: Any) -> Tensor:
    return _in_place(self, lambda old: old * other, other, "*=")


def itruediv(self: Tensor, other: Any) -> Tensor:
    return _in_place(self, lambda old: old / other, other, "/=")


def setitem(self: Tensor, index: Any, value: Any) -> None:
    """``x[index] = value``: numpy's indexing, ``value`` (a number, array or tensor)
    broadcast to the entries and cast to this tensor's dtype."""
    _set(self, ops.normalize_index(index, self.shape), value, "item assignment")


def copy_(self: Tensor, source: Any) -> Tensor:
    """Overwrite every value with ``source`` (broadcast, cast to this dtype)."""
    if hasattr(source, "shape") and source.shape != self.shape:
        _check_broadcast_to_self(self, source.shape, "copy_")
    _set(self, Ellipsis, source, "copy_")
    return self


def add_(self: Tensor, other: Any, alpha: float = 1.0) -> Tensor:
    """``self += alpha * other``, in place."""
    alpha = number(alpha, "add_ alpha")
    other = in_place_operand(other, "add_")
    return _in_place(self, lambda old: old + (other if alpha == 1 else alpha * other),
                          other, "add_")


def mul_(self: Tensor, other: Any) -> Tensor:
    """``self *= other``, in place."""
    other = in_place_operand(other, "mul_")
    return _in_place(self, lambda old: old * other, other, "mul_")


def fill_(self: Tensor, value: float) -> Tensor:
    """Set every entry to ``value`` (a number, or a one-element tensor)."""
    _set(self, Ellipsis, number(value, "fill_ value"), "fill_")
    return self


def zero_(self: Tensor) -> Tensor:
    return self.fill_(0)


def requires_grad_(self: Tensor, requires_grad: bool = True) -> Tensor:
    """Set ``requires_grad`` in place and return the tensor."""
    self.requires_grad = requires_grad
    return self


def _records(self: Tensor, value: Any) -> bool:
    """Whether an in-place change by ``value`` is recorded in the graph."""
    return is_grad_enabled() and (
        self._requires_grad or (isinstance(value, tensor_module.Tensor) and value._requires_grad))


def _in_place(self: Tensor, compute: Any, operand: Any, what: str) -> Tensor:
    """Make ``compute(old value)``, an out-of-place op, this tensor's new value."""
    if not _records(self, operand):
        with no_grad():
            result = compute(self)
        _check_result(self, result, what)
        _write(self, result, what)
        return self
    return _rebase(self, compute, what)


def _set(self: Tensor, index: Any, value: Any, what: str, exclude: Tensor | None = None) -> None:
    view_of = getattr(value, "_view_of", None)
    if view_of is not None and view_of[0]() is self and not ops.is_advanced_index(index) \
            and view_of[1] == index:
        return  # `x[i] += v`: the change went through the view x[i] into x already
    if not _records(self, value):
        source = value._data if isinstance(value, tensor_module.Tensor) else \
            value if is_backend_array(value) else validation.numeric_array(value, what)
        try:
            self._data[index] = source  # numpy casts to this dtype, as PyTorch does
        except IndexError as error:
            raise IndexError(f"{what}: index {index!r} is invalid for a tensor of shape "
                             f"{self.shape}: {error}") from None
        except ValueError as error:
            raise ValueError(f"{what}: {error}") from None
        self._bump_version()
        return
    value = as_operand(value, like=self)
    if value.dtype != self.dtype:
        value = value.astype(self.dtype)
    _rebase(self, lambda old: ops.IndexPut.apply(old, value, index=index), what, exclude)


def _rebase(self: Tensor, compute: Any, what: str, exclude: Tensor | None = None) -> Tensor:
    """A recorded in-place change (see the comment above)."""
    if self.grad_fn is None and self._requires_grad:
        raise RuntimeError(f"{what}: a leaf tensor that requires grad cannot be changed in "
                           "place while gradients are recorded; "
                           "use `with tensorlib.no_grad():`")
    view_of = self._view_of
    base = view_of[0]() if view_of is not None else None
    if view_of is not None and base is not None:
        # x[i] changed: change x, of which this is again the view x[i]
        new_value = compute(_old_value(self))
        _check_result(self, new_value, what)
        _set(base, view_of[1], new_value, what, exclude=self)
        self.grad_fn = base[view_of[1]].grad_fn
        self._requires_grad = True
        return self
    views = [view for view in ops.views_of(self) if view is not exclude]
    if any(view is self for view in views):
        raise RuntimeError(f"{what}: a recorded in-place change of this view (made by "
                           "reshape, transpose, expand or squeeze) is not supported: the "
                           "tensor it views would not see it in the graph; clone() it "
                           "first")
    if any(view.grad_fn is not None for view in views):
        raise RuntimeError(f"{what}: this tensor has views recorded in the graph (x[...], "
                           "reshape, transpose...) whose gradients would be wrong after "
                           "an in-place change; change it before taking views, or "
                           "clone() it")
    result = compute(_old_value(self))
    _check_result(self, result, what)
    _write(self, result, what)
    old_node = self.grad_fn
    self.grad_fn, self._requires_grad = result.grad_fn, True
    if old_node is not None and old_node.retained_output is not None \
            and old_node.retained_output() is self:
        old_node.retained_output, self.grad_fn.retained_output = None, weakref.ref(self)
    return self


def _old_value(self: Tensor) -> Tensor:
    """A copy of this tensor's values that carries its current place in the graph."""
    old = wrap(self._data.copy())
    old.grad_fn, old._requires_grad = self.grad_fn, self._requires_grad
    return old


def _check_result(self: Tensor, result: Tensor, what: str) -> None:
    """An in-place change's result must fit this tensor's shape and dtype."""
    if result.shape != self.shape:
        raise ValueError(f"{what}: the result has shape {result.shape}, not the tensor's "
                         f"shape {self.shape} (an in-place change cannot grow a tensor)")
    if result.dtype != self.dtype and not np.can_cast(result.dtype, self.dtype,
                                                      casting="same_kind"):
        raise TypeError(f"{what}: the result's dtype {result.dtype} cannot be written "
                        f"into a tensor of dtype {self.dtype}")


def _write(self: Tensor, result: Tensor, what: str) -> None:
    """Write an in-place change's result into this tensor's memory."""
    try:
        self._data[...] = result._data
    except ValueError:
        raise RuntimeError(f"{what}: this tensor's memory is read-only (an expand() "
                           "view shares one value among entries); clone() it "
                           "first") from None
    self._bump_version()


def _check_broadcast_to_self(self: Tensor, shape: tuple[int, ...], what: str) -> None:
    try:
        fits = np.broadcast_shapes(shape, self.shape) == self.shape
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"{what}: shape {shape} cannot be broadcast to the tensor's "
                         f"shape {self.shape}")
