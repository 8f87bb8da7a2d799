"""Tensor: an n-dimensional array that remembers how it was made.

A ``Tensor`` wraps a numpy array (``.data``) and, when it takes part in a differentiable
computation, the graph node that produced it (``.grad_fn``). Arithmetic dunders call the
``Function`` subclasses in :mod:`tensorlib.engine.ops`; gradients land in ``.grad`` after
``backward()``.
"""

from __future__ import annotations

import math
import numbers
import weakref
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np

from tensorlib.engine import validation
from tensorlib.engine.autograd import Context, is_grad_enabled, no_grad, run_backward
from tensorlib.engine.backend import device_of, is_backend_array, to_device
from tensorlib.engine.tensor_arguments import (
    _NOT_GIVEN,
    _axes,
    _axis,
    _correction,
    _dim_or_axis,
    _keepdims,
    _one_dim,
    _reduction_args,
    _resolve_shape,
    _shape_arg,
)
from tensorlib.engine.typing import Array
from tensorlib.engine.validation import is_floating

DTypeLike = Any
ShapeLike = int | Sequence[int]

float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)
int64 = np.dtype(np.int64)
int32 = np.dtype(np.int32)
bool_ = np.dtype(np.bool_)

DEFAULT_FLOAT = float32



def _to_array(data: Any, dtype: DTypeLike | None) -> Array:
    """Convert ``data`` to an ndarray: Python floats become float32, ints int64."""
    if isinstance(data, Tensor):
        data = data._data
    if dtype is not None:
        dtype = validation.tensor_dtype(dtype)
        if isinstance(data, np.ndarray) or is_backend_array(data):
            return data.astype(dtype, copy=False)
        return _as_array(data, dtype)
    if isinstance(data, np.ndarray) or is_backend_array(data) or (
        hasattr(data, "__array_namespace__") and hasattr(data, "dtype")
    ):
        return data  # keep the caller's dtype (and backend)
    array = _as_array(data, None)
    if array.dtype == np.float64 and not isinstance(data, np.generic):
        array = array.astype(DEFAULT_FLOAT)  # Python floats: float32 by default
    elif array.dtype.kind in "iu" and array.dtype != np.int64 and not isinstance(data, np.generic):
        array = array.astype(np.int64)
    elif array.dtype.kind not in "biuf":
        raise TypeError(f"cannot make a tensor from data of dtype {array.dtype}")
    return array


def _as_array(data: Any, dtype: np.dtype | None) -> np.ndarray:
    """``np.asarray`` of nested lists or numbers, with tensorlib's own errors."""
    try:
        return np.asarray(data, dtype=dtype)
    except ValueError as error:  # ragged lists, or text where numbers belong
        if "inhomogeneous" in str(error) or "sequence" in str(error):
            raise ValueError("cannot make a tensor from nested lists of different lengths "
                             f"(every row must have as many entries): {data!r}") from None
        raise TypeError(f"cannot make a tensor from {data!r}: its values are not all "
                        "numbers") from None
    except TypeError:
        raise TypeError(f"cannot make a tensor from {data!r} of type "
                        f"{type(data).__name__}") from None


class _SizeMethod:
    """What ``x.size`` is: called, the shape (``x.size()``) or one dim's length
    (``x.size(1)``), as PyTorch's method; used as a number, as numpy's ``.size`` is, a
    TypeError naming ``numel()``, so numpy habits fail loudly instead of comparing a method
    with a number."""

    __slots__ = ("_shape",)
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, shape: tuple[int, ...]):
        self._shape = shape

    def __call__(self, dim: int | None = None) -> Any:
        if dim is None:
            return self._shape
        return self._shape[_axis(dim, len(self._shape))]

    def _refuse(self, *other: Any) -> Any:
        raise TypeError("size is a method, as in PyTorch: x.size() is the shape, x.size(d) "
                        "one dim's length and x.numel() the number of elements")

    __bool__ = __int__ = __index__ = __float__ = _refuse
    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = _refuse
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _refuse
    __truediv__ = __floordiv__ = __mod__ = _refuse

    def __repr__(self) -> str:
        return f"<method size of a tensor of shape {self._shape}>"


class Tensor:
    """An array with an optional gradient and the graph node that produced it.

    ``data`` is the numpy array, ``grad`` an array of the same shape and dtype (or None),
    ``requires_grad`` marks tensors whose gradient is wanted, and ``grad_fn`` is the node that
    made a non-leaf tensor. Only floating-point tensors can require gradients.
    """

    __slots__ = ("_data", "_grad", "_requires_grad", "grad_fn", "_version", "_view_of", "name",
                 "__weakref__")
    __array_priority__ = 1000  # numpy asks the Tensor first: see __array_ufunc__

    def __init__(self, data: Any, dtype: DTypeLike | None = None, requires_grad: bool = False):
        self._data: Array = _to_array(data, dtype)
        self._grad: Tensor | None = None
        self.grad_fn: Context | None = None
        self._version: list[Any] = [0]  # a shared box, so a detached view sees the same counter
        self._view_of: tuple[weakref.ref, Any] | None = None  # x[i]: (x, i), see __getitem__
        self.name: str | None = None
        self._requires_grad = False
        self.requires_grad = requires_grad

    @classmethod
    def _from_array(cls, array: Array | np.generic) -> Tensor:
        """Wrap an array produced by an op (no checks). A numpy scalar, which numpy returns
        for a reduction to one number or a ufunc of 0-d arrays, becomes a 0-d array, so the
        tensor's values can be changed in place like any other's."""
        tensor = cls.__new__(cls)
        tensor._data = np.asarray(array) if isinstance(array, np.generic) else array
        tensor._grad = None
        tensor.grad_fn = None
        tensor._version = [0]
        tensor._view_of = None
        tensor.name = None
        tensor._requires_grad = False
        return tensor

    # ----------------------------------------------------------------------------- basics
    @property
    def data(self) -> Tensor:
        """The values without the graph: a tensor sharing this one's memory (and version), as
        PyTorch's ``.data``. ``p.data -= lr * p.grad`` changes ``p`` in place; assigning
        ``p.data = values`` replaces its values (an in-place change, counted as one). The
        array itself is :meth:`numpy`."""
        return self.detach()

    @data.setter
    def data(self, value: Any) -> None:
        self._data = _to_array(value._data if isinstance(value, Tensor) else value, None)
        self._bump_version()

    @property
    def grad(self) -> Tensor | None:
        """The gradient backward accumulated here, a tensor of this tensor's shape and dtype
        (None before any backward, or after ``zero_grad``)."""
        return self._grad

    @grad.setter
    def grad(self, value: Tensor | Array | np.generic | None) -> None:
        if value is None:
            self._grad = None
            return
        if isinstance(value, np.generic):  # numpy's answer for a reduction to one number
            value = np.asarray(value)
        if not isinstance(value, Tensor):
            if not (isinstance(value, np.ndarray) or is_backend_array(value)):
                raise TypeError(f"grad must be a Tensor or None, got {type(value).__name__}")
            value = Tensor._from_array(value)
        if value.shape != self.shape or value.dtype != self.dtype:
            raise ValueError(f"the gradient of a tensor of shape {self.shape} and dtype "
                             f"{self.dtype} cannot be {value.dtype} of shape {value.shape}")
        self._grad = value

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        if flag and not is_floating(self._data.dtype):
            raise TypeError(
                f"only floating-point tensors can require gradients, got dtype {self._data.dtype}"
            )
        if not flag and self.grad_fn is not None:
            raise RuntimeError("requires_grad can only be switched off on leaf tensors; "
                               "use .detach() for a non-leaf tensor")
        self._requires_grad = bool(flag)

    @property
    def shape(self) -> tuple[int, ...]:
        return self._data.shape

    @property
    def ndim(self) -> int:
        return self._data.ndim

    @property
    def dtype(self) -> np.dtype:
        return self._data.dtype

    @property
    def size(self) -> _SizeMethod:
        """``x.size()`` is the shape and ``x.size(d)`` one dim's length, as in PyTorch (the
        element count is ``x.numel()``). Used as numpy's ``.size`` number, it raises."""
        return _SizeMethod(self._data.shape)

    def numel(self) -> int:
        """The number of elements."""
        return self._data.size

    def nelement(self) -> int:
        """The number of elements (PyTorch's other name for :meth:`numel`)."""
        return self._data.size

    def dim(self) -> int:
        """The number of dims (``x.ndim``)."""
        return self._data.ndim

    @property
    def version(self) -> int:
        """How many in-place changes this tensor's data has seen."""
        return self._version[0]

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def device(self) -> str:
        return device_of(self._data)

    def to(self, device: Any) -> Tensor:
        """This tensor's values on ``device`` ("cpu", "cuda" or a registered backend); given a
        dtype instead (``x.to(tensorlib.float64)``), :meth:`astype`.

        Returns ``self`` when it already lives there. Otherwise returns a new leaf tensor
        holding a copy on ``device`` that is *not* connected to the graph (it does not
        require grad; gradients do not flow back through a device move). Move a model's
        parameters with ``Module.to``. ValueError for an unknown device, RuntimeError for
        one that is not available here.
        """
        if not isinstance(device, str):
            return self if device == self.dtype else self.astype(device)
        moved = to_device(self._data, device)  # validates the device name first
        if device_of(self._data) == device:
            return self
        out = Tensor._from_array(moved)
        out.name = self.name
        return out

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        for index in range(len(self)):
            yield self[index]

    def __hash__(self) -> int:  # identity, as for any Python object (== is elementwise)
        return object.__hash__(self)

    def __bool__(self) -> bool:
        if self._data.size != 1:
            raise ValueError(f"the truth value of a tensor of shape {self.shape} is ambiguous")
        return bool(self._one_value("bool()"))

    def __float__(self) -> float:
        return float(self._one_value("float()"))

    def __int__(self) -> int:
        return int(self._one_value("int()"))

    def __index__(self) -> int:
        """An integer tensor of one element used where Python wants an index (``range(t)``,
        ``list[t]``)."""
        if self.dtype.kind not in "iu":
            raise TypeError(f"only integer tensors of one element can be used as an index, "
                            f"got dtype {self.dtype}")
        return int(self._one_value("an index"))

    def __format__(self, spec: str) -> str:
        """A 0-d tensor formats as its number (``f"{loss:.4f}"``), as in PyTorch; others as
        their repr."""
        if self.ndim == 0:
            return format(self.item(), spec)
        return format(repr(self), spec)

    def _one_value(self, what: str) -> Any:
        if self._data.size != 1:
            raise ValueError(f"{what} needs a tensor with one element, got shape {self.shape}")
        return self._data.reshape(()).item()

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """numpy's ufuncs given a tensor. An operator with an array on its left
        (``array * tensor``) is the tensor's reflected operator, so it gives a tensor, as
        if the array were one; any other ufunc (``np.exp(t)``, ``np.abs(t)``, ``array +=
        t``) computes on the arrays and returns an array, outside the graph."""
        operators = _UFUNC_OPERATORS.get(ufunc)
        if method == "__call__" and operators and len(inputs) == 2 and not kwargs:
            left, right = inputs
            if isinstance(left, Tensor):
                return getattr(left, operators[0])(right)
            return getattr(right, operators[1])(left)
        inputs = tuple(x._data if isinstance(x, Tensor) else x for x in inputs)
        if "out" in kwargs:
            kwargs["out"] = tuple(x._data if isinstance(x, Tensor) else x for x in kwargs["out"])
        return getattr(ufunc, method)(*inputs, **kwargs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        """numpy's functions given tensors (``np.sum(t)``, ``np.allclose(t, u)``) run on the
        tensors' arrays and return what numpy returns."""
        return func(*_arrays_in(args), **_arrays_in(kwargs))

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """The array (``np.asarray(t)``), or a copy of it (``np.array(t)``)."""
        if copy:
            return np.array(self._data, dtype=dtype, copy=True)
        return np.asarray(self._data, dtype=dtype)

    def __repr__(self) -> str:
        body = np.array2string(np.asarray(self._data), precision=4, separator=", ",
                               prefix="tensor(")
        extras = [f"dtype={self.dtype}"]
        if self.grad_fn is not None:
            extras.append(f"grad_fn=<{self.grad_fn.name}>")
        elif self.requires_grad:
            extras.append("requires_grad=True")
        return f"tensor({body}, {', '.join(extras)})"

    def numpy(self) -> Array:
        """The data as a numpy array (shared memory, no copy); on a GPU, the CuPy array."""
        return self._data

    def item(self) -> float | int | bool:
        """The single value of a one-element tensor as a Python number."""
        return self._one_value("item()")

    def tolist(self) -> Any:
        return self._data.tolist()

    def detach(self) -> Tensor:
        """A new leaf tensor that shares data (and version counter) but has no graph."""
        out = Tensor._from_array(self._data)
        out._version = self._version
        return out

    def retain_grad(self) -> None:
        """Keep ``.grad`` on this non-leaf tensor after backward (for inspection and drawing)."""
        if self.grad_fn is None:
            return
        self.grad_fn.retained_output = weakref.ref(self)

    def backward(self, grad: Any = None, retain_graph: bool = False) -> None:
        """Accumulate d(self)/d(leaf) into every leaf's ``.grad``.

        ``grad`` is required for non-scalar tensors (the vector of a vector-Jacobian product).
        Without ``retain_graph`` the saved arrays are freed and a second backward raises.
        """
        run_backward(self, grad._data if isinstance(grad, Tensor) else grad, retain_graph)

    # ----------------------------------------------------------------------------- in place
    # An in-place change writes into the tensor's own memory, so its views see the new values,
    # and bumps the version it shares with them: a graph node that saved the old values then
    # refuses backward. When the change is recorded (grad mode on, and the tensor or the value
    # written into it requires grad), the tensor is rebased: its new grad_fn is the change's
    # node, whose input is a copy of the old value, carrying the old grad_fn.
    def _bump_version(self) -> None:
        self._version[0] += 1

    def __iadd__(self, other: Any) -> Tensor:
        return self._in_place(lambda old: old + other, other, "+=")

    def __isub__(self, other: Any) -> Tensor:
        return self._in_place(lambda old: old - other, other, "-=")

    def __imul__(self, other: Any) -> Tensor:
        return self._in_place(lambda old: old * other, other, "*=")

    def __itruediv__(self, other: Any) -> Tensor:
        return self._in_place(lambda old: old / other, other, "/=")

    def __setitem__(self, index: Any, value: Any) -> None:
        """``x[index] = value``: numpy's indexing, ``value`` (a number, array or tensor)
        broadcast to the entries and cast to this tensor's dtype."""
        self._set(ops.normalize_index(index, self.shape), value, "item assignment")

    def copy_(self, source: Any) -> Tensor:
        """Overwrite every value with ``source`` (broadcast, cast to this dtype)."""
        if hasattr(source, "shape") and source.shape != self.shape:
            self._check_broadcast_to_self(source.shape, "copy_")
        self._set(Ellipsis, source, "copy_")
        return self

    def add_(self, other: Any, alpha: float = 1.0) -> Tensor:
        """``self += alpha * other``, in place."""
        alpha = _number(alpha, "add_ alpha")
        other = _in_place_operand(other, "add_")
        return self._in_place(lambda old: old + (other if alpha == 1 else alpha * other),
                              other, "add_")

    def mul_(self, other: Any) -> Tensor:
        """``self *= other``, in place."""
        other = _in_place_operand(other, "mul_")
        return self._in_place(lambda old: old * other, other, "mul_")

    def fill_(self, value: float) -> Tensor:
        """Set every entry to ``value`` (a number, or a one-element tensor)."""
        self._set(Ellipsis, _number(value, "fill_ value"), "fill_")
        return self

    def zero_(self) -> Tensor:
        return self.fill_(0)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set ``requires_grad`` in place and return the tensor."""
        self.requires_grad = requires_grad
        return self

    def _records(self, value: Any) -> bool:
        """Whether an in-place change by ``value`` is recorded in the graph."""
        return is_grad_enabled() and (
            self._requires_grad or (isinstance(value, Tensor) and value._requires_grad))

    def _in_place(self, compute: Any, operand: Any, what: str) -> Tensor:
        """Make ``compute(old value)``, an out-of-place op, this tensor's new value."""
        if not self._records(operand):
            with no_grad():
                result = compute(self)
            self._check_result(result, what)
            self._write(result, what)
            return self
        return self._rebase(compute, what)

    def _set(self, index: Any, value: Any, what: str, exclude: Tensor | None = None) -> None:
        view_of = getattr(value, "_view_of", None)
        if view_of is not None and view_of[0]() is self and not ops.is_advanced_index(index) \
                and view_of[1] == index:
            return  # `x[i] += v`: the change went through the view x[i] into x already
        if not self._records(value):
            source = value._data if isinstance(value, Tensor) else \
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
        self._rebase(lambda old: ops.IndexPut.apply(old, value, index=index), what, exclude)

    def _rebase(self, compute: Any, what: str, exclude: Tensor | None = None) -> Tensor:
        """A recorded in-place change (see the comment above)."""
        if self.grad_fn is None and self._requires_grad:
            raise RuntimeError(f"{what}: a leaf tensor that requires grad cannot be changed in "
                               "place while gradients are recorded; "
                               "use `with tensorlib.no_grad():`")
        view_of = self._view_of
        base = view_of[0]() if view_of is not None else None
        if view_of is not None and base is not None:
            # x[i] changed: change x, of which this is again the view x[i]
            new_value = compute(self._old_value())
            self._check_result(new_value, what)
            base._set(view_of[1], new_value, what, exclude=self)
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
        result = compute(self._old_value())
        self._check_result(result, what)
        self._write(result, what)
        old_node = self.grad_fn
        self.grad_fn, self._requires_grad = result.grad_fn, True
        if old_node is not None and old_node.retained_output is not None \
                and old_node.retained_output() is self:
            old_node.retained_output, self.grad_fn.retained_output = None, weakref.ref(self)
        return self

    def _old_value(self) -> Tensor:
        """A copy of this tensor's values that carries its current place in the graph."""
        old = Tensor._from_array(self._data.copy())
        old.grad_fn, old._requires_grad = self.grad_fn, self._requires_grad
        return old

    def _check_result(self, result: Tensor, what: str) -> None:
        """An in-place change's result must fit this tensor's shape and dtype."""
        if result.shape != self.shape:
            raise ValueError(f"{what}: the result has shape {result.shape}, not the tensor's "
                             f"shape {self.shape} (an in-place change cannot grow a tensor)")
        if result.dtype != self.dtype and not np.can_cast(result.dtype, self.dtype,
                                                          casting="same_kind"):
            raise TypeError(f"{what}: the result's dtype {result.dtype} cannot be written "
                            f"into a tensor of dtype {self.dtype}")

    def _write(self, result: Tensor, what: str) -> None:
        """Write an in-place change's result into this tensor's memory."""
        try:
            self._data[...] = result._data
        except ValueError:
            raise RuntimeError(f"{what}: this tensor's memory is read-only (an expand() "
                               "view shares one value among entries); clone() it "
                               "first") from None
        self._bump_version()

    def _check_broadcast_to_self(self, shape: tuple[int, ...], what: str) -> None:
        try:
            fits = np.broadcast_shapes(shape, self.shape) == self.shape
        except ValueError:
            fits = False
        if not fits:
            raise ValueError(f"{what}: shape {shape} cannot be broadcast to the tensor's "
                             f"shape {self.shape}")

    # ----------------------------------------------------------------------------- dtype
    def astype(self, dtype: DTypeLike) -> Tensor:
        """A copy in another dtype; differentiable between floating dtypes."""
        return ops.Cast.apply(self, dtype=validation.tensor_dtype(dtype, "astype dtype"))

    def double(self) -> Tensor:
        return self.astype(float64)

    def long(self) -> Tensor:
        return self.astype(int64)

    # ----------------------------------------------------------------------------- arithmetic
    def _operand(self, other: Any) -> Tensor:
        return as_operand(other, like=self)

    def __add__(self, other: Any) -> Tensor:
        return ops.Add.apply(*_pair(self, other))

    def __radd__(self, other: Any) -> Tensor:
        return ops.Add.apply(*_pair(self._operand(other), self))

    def __sub__(self, other: Any) -> Tensor:
        return ops.Sub.apply(*_pair(self, other))

    def __rsub__(self, other: Any) -> Tensor:
        return ops.Sub.apply(*_pair(self._operand(other), self))

    def __mul__(self, other: Any) -> Tensor:
        return ops.Mul.apply(*_pair(self, other))

    def __rmul__(self, other: Any) -> Tensor:
        return ops.Mul.apply(*_pair(self._operand(other), self))

    def __truediv__(self, other: Any) -> Tensor:
        return ops.Div.apply(*map(_floating, _pair(self, other)))

    def __rtruediv__(self, other: Any) -> Tensor:
        return ops.Div.apply(*map(_floating, _pair(self._operand(other), self)))

    def __pow__(self, exponent: Any) -> Tensor:
        """``self ** exponent``. An integer tensor to a Python int power stays integer (int64
        for bool), and refuses a negative power; to a float power it computes in float32."""
        if isinstance(exponent, numbers.Integral) and not isinstance(exponent, bool) \
                and self.dtype.kind in "biu":
            if exponent < 0:
                raise ValueError(f"an integer tensor to the negative power {exponent}: "
                                 "convert it with .float() first")
            base = self._data.astype(int64) if self.dtype == bool_ else self._data
            return Tensor._from_array(base ** int(exponent))
        if isinstance(exponent, numbers.Real) and not isinstance(exponent, bool):
            return ops.PowScalar.apply(_floating(self), exponent=float(exponent))
        return ops.Pow.apply(*_pair(self, exponent))

    def __rpow__(self, base: Any) -> Tensor:
        return ops.Pow.apply(*_pair(self._operand(base), self))

    def __matmul__(self, other: Any) -> Tensor:
        return ops.MatMul.apply(*_pair(self, other))

    def __rmatmul__(self, other: Any) -> Tensor:
        return ops.MatMul.apply(*_pair(self._operand(other), self))

    def __neg__(self) -> Tensor:
        return ops.Neg.apply(self)

    def __pos__(self) -> Tensor:
        return self

    def __abs__(self) -> Tensor:
        return self.abs()

    def __invert__(self) -> Tensor:
        """Logical not of a bool tensor, bitwise not of an integer one (not differentiable)."""
        if self.dtype.kind not in "biu":
            raise TypeError(f"~ needs a bool or integer tensor, got dtype {self.dtype}")
        return Tensor._from_array(~self._data)

    # comparisons: non-differentiable boolean tensors
    def _compare(self, other: Any, ufunc: np.ufunc) -> Tensor:
        if not isinstance(other, (Tensor, numbers.Number, np.ndarray, np.generic, list, tuple)) \
                and not is_backend_array(other):
            return NotImplemented  # Python then asks ``other`` (pytest.approx, say)
        a, b = _pair(self, other)
        return Tensor._from_array(ufunc(a._data, b._data))

    def __lt__(self, other: Any) -> Tensor:
        return self._compare(other, np.less)

    def __le__(self, other: Any) -> Tensor:
        return self._compare(other, np.less_equal)

    def __gt__(self, other: Any) -> Tensor:
        return self._compare(other, np.greater)

    def __ge__(self, other: Any) -> Tensor:
        return self._compare(other, np.greater_equal)

    def __eq__(self, other: Any) -> Tensor:  # type: ignore[override]
        return self._compare(other, np.equal)

    def __ne__(self, other: Any) -> Tensor:  # type: ignore[override]
        return self._compare(other, np.not_equal)

    # ----------------------------------------------------------------------------- elementwise
    def exp(self) -> Tensor:
        return ops.Exp.apply(_floating(self))

    def log(self) -> Tensor:
        return ops.Log.apply(_floating(self))

    def log10(self) -> Tensor:
        """The base-10 logarithm, log(x) / log(10)."""
        return self.log() * (1 / math.log(10))

    def pow(self, exponent: Any) -> Tensor:
        return self ** exponent

    def sqrt(self) -> Tensor:
        return ops.Sqrt.apply(_floating(self))

    def abs(self) -> Tensor:
        return ops.Abs.apply(self)

    def tanh(self) -> Tensor:
        return ops.Tanh.apply(_floating(self))

    def sigmoid(self) -> Tensor:
        return ops.Sigmoid.apply(_floating(self))

    def relu(self) -> Tensor:
        return ops.Relu.apply(self)

    def leaky_relu(self, negative_slope: float = 0.01) -> Tensor:
        """x where x > 0, ``negative_slope``·x elsewhere."""
        slope = validation.real(negative_slope, "leaky_relu negative_slope")
        return ops.LeakyRelu.apply(_floating(self), negative_slope=slope)

    def softplus(self, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
        """log(1 + exp(β·x)) / β; x itself where β·x > ``threshold``."""
        beta = validation.positive(beta, "softplus beta")
        threshold = validation.real(threshold, "softplus threshold")
        return ops.Softplus.apply(_floating(self), beta=beta, threshold=threshold)

    def silu(self) -> Tensor:
        return ops.Silu.apply(_floating(self))

    def sign(self) -> Tensor:
        return ops.Sign.apply(self)

    def gelu(self, approximate: str = "none") -> Tensor:
        """GELU, exact (erf) by default; ``approximate="tanh"`` for the tanh form."""
        return ops.Gelu.apply(_floating(self), approximate=approximate)

    def maximum(self, other: Any) -> Tensor:
        return ops.Maximum.apply(*_pair(self, other))

    def where(self, condition: Any, other: Any) -> Tensor:
        """``condition ? self : other`` (PyTorch's ``x.where(cond, y)``)."""
        return where(condition, self, other)

    def masked_fill(self, mask: Any, value: float) -> Tensor:
        """Replace the entries where ``mask`` is True with ``value`` (a number, or a
        one-element tensor)."""
        value = _number(value, "masked_fill value")
        return ops.MaskedFill.apply(self, mask=_bool_mask(mask, self.shape, "masked_fill"),
                                    value=value)

    # ----------------------------------------------------------------------------- reductions
    # PyTorch's spellings are the parameters (dim, keepdim); numpy's (axis=, keepdims=) are
    # accepted as keywords, as PyTorch accepts them.
    def sum(self, dim: int | tuple[int, ...] | None = None, keepdim: bool = False, *,
            axis: Any = None, keepdims: Any = _NOT_GIVEN) -> Tensor:
        """The sum over ``dim`` (None: every dim); integer and boolean tensors sum to int64."""
        dims, keep = _reduction_args(self, dim, axis, keepdim, keepdims)
        values = self if self.dtype.kind not in "biu" or self.dtype == int64 \
            else Tensor._from_array(self._data.astype(int64))
        return ops.Sum.apply(values, axis=dims, keepdims=keep)

    def mean(self, dim: int | tuple[int, ...] | None = None, keepdim: bool = False, *,
             axis: Any = None, keepdims: Any = _NOT_GIVEN) -> Tensor:
        """The mean over ``dim`` (None: every dim); nan over no elements."""
        dims, keep = _reduction_args(self, dim, axis, keepdim, keepdims)
        return ops.Mean.apply(_floating(self), axis=dims, keepdims=keep)

    def amax(self, dim: int | tuple[int, ...] | None = None, keepdim: bool = False, *,
             axis: Any = None, keepdims: Any = _NOT_GIVEN) -> Tensor:
        """The maximum over ``dim`` (an int, a tuple or None: every dim); tied maxima share
        the gradient equally."""
        dims, keep = _reduction_args(self, dim, axis, keepdim, keepdims)
        return ops.Max.apply(self, axis=dims, keepdims=keep)

    def amin(self, dim: int | tuple[int, ...] | None = None, keepdim: bool = False, *,
             axis: Any = None, keepdims: Any = _NOT_GIVEN) -> Tensor:
        """The minimum over ``dim``, as :meth:`amax`."""
        dims, keep = _reduction_args(self, dim, axis, keepdim, keepdims)
        return -ops.Max.apply(-self, axis=dims, keepdims=keep)

    def max(self, dim: Any = None, keepdim: bool = False, *, axis: Any = None,
            keepdims: Any = _NOT_GIVEN) -> Tensor | MaxMin:
        """As PyTorch: ``x.max()`` is the largest entry (tied maxima share the gradient);
        ``x.max(dim)`` is the pair ``(values, indices)`` along ``dim``, whose values take
        their gradient at ``indices`` (the first maximum); ``x.max(other)`` is
        :func:`maximum`."""
        if isinstance(dim, Tensor):
            return maximum(self, dim)
        return self._extreme("max", dim, keepdim, axis, keepdims)

    def min(self, dim: Any = None, keepdim: bool = False, *, axis: Any = None,
            keepdims: Any = _NOT_GIVEN) -> Tensor | MaxMin:
        """As :meth:`max`, for the smallest entry."""
        if isinstance(dim, Tensor):
            return -maximum(-self, -dim)
        return self._extreme("min", dim, keepdim, axis, keepdims)

    def _extreme(self, which: str, dim: Any, keepdim: Any, axis: Any,
                 keepdims: Any) -> Tensor | MaxMin:
        dim = _dim_or_axis(dim, axis, which)
        if dim is None:
            if keepdim or keepdims is not _NOT_GIVEN:
                raise TypeError(f"{which}() over every dim takes no keepdim, as in PyTorch; "
                                f"use a{which}(keepdim=True)")
            return self.amax() if which == "max" else self.amin()
        if isinstance(dim, (tuple, list)):
            raise TypeError(f"{which}(dim) takes one dim, got {dim!r}; a{which}(dim) reduces "
                            "over several")
        dim = _axis(dim, self.ndim)
        keep = _keepdims(keepdim if keepdims is _NOT_GIVEN else keepdims)
        if self.shape[dim] == 0:
            raise ValueError(f"{which} over no elements (shape {self.shape}, dim {dim})")
        indices = self.argmax(dim, keepdim=True) if which == "max" \
            else self.argmin(dim, keepdim=True)
        values = self.gather(dim, indices)
        if not keep:
            values, indices = values.squeeze(dim), indices.squeeze(dim)
        return MaxMin(values, indices)

    def argmax(self, dim: int | None = None, keepdim: bool = False, *, axis: Any = None,
               keepdims: Any = _NOT_GIVEN) -> Tensor:
        """The index (int64) of the first maximum along ``dim`` (None: in the flattened
        tensor); a nan counts as the maximum, as in PyTorch."""
        return self._arg_extreme(np.argmax, dim, keepdim, axis, keepdims)

    def argmin(self, dim: int | None = None, keepdim: bool = False, *, axis: Any = None,
               keepdims: Any = _NOT_GIVEN) -> Tensor:
        """The index (int64) of the first minimum along ``dim``, as :meth:`argmax`."""
        return self._arg_extreme(np.argmin, dim, keepdim, axis, keepdims)

    def _arg_extreme(self, find: Any, dim: Any, keepdim: Any, axis: Any,
                     keepdims: Any) -> Tensor:
        dim = _dim_or_axis(dim, axis, find.__name__)
        keep = _keepdims(keepdim if keepdims is _NOT_GIVEN else keepdims)
        if dim is not None:
            dim = _axis(dim, self.ndim)
        if (self._data.size if dim is None else self.shape[dim]) == 0:
            raise ValueError(f"{find.__name__} over no elements (shape {self.shape})")
        data = np.asarray(self._data)
        if dim is None:
            found = np.asarray(find(data))
            return Tensor._from_array(found.reshape((1,) * self.ndim) if keep else found)
        return Tensor._from_array(find(data, axis=dim, keepdims=keep).astype(int64))

    def var(self, dim: int | tuple[int, ...] | None = None, unbiased: bool | None = None,
            keepdim: bool = False, *, correction: float | None = None, axis: Any = None,
            keepdims: Any = _NOT_GIVEN) -> Tensor:
        """Variance: Σ (x - mean)² / (n - ``correction``), with PyTorch's default
        ``correction=1`` (the unbiased estimate; ``unbiased=False`` or ``correction=0`` for
        the biased one); nan or inf where n - correction is 0 or less, as in PyTorch."""
        dims, keep = _reduction_args(self, dim, axis, keepdim, keepdims)
        return ops.Var.apply(_floating(self), axis=dims, keepdims=keep,
                             correction=_correction(unbiased, correction, "var"))

    def std(self, dim: int | tuple[int, ...] | None = None, unbiased: bool | None = None,
            keepdim: bool = False, *, correction: float | None = None, axis: Any = None,
            keepdims: Any = _NOT_GIVEN) -> Tensor:
        """Standard deviation, the square root of :meth:`var` (same arguments); where it is
        0 its gradient is 0, as in PyTorch."""
        dims, keep = _reduction_args(self, dim, axis, keepdim, keepdims)
        return ops.Std.apply(_floating(self), axis=dims, keepdims=keep,
                             correction=_correction(unbiased, correction, "std"))

    def logsumexp(self, dim: int | tuple[int, ...] | None = None, keepdim: bool = False, *,
                  axis: Any = None, keepdims: Any = _NOT_GIVEN) -> Tensor:
        """log Σ exp(x) over ``dim``; -inf over no elements."""
        dims, keep = _reduction_args(self, dim, axis, keepdim, keepdims)
        return ops.LogSumExp.apply(_floating(self), axis=dims, keepdims=keep)

    def all(self, dim: int | tuple[int, ...] | None = None, keepdim: bool = False, *,
            axis: Any = None, keepdims: Any = _NOT_GIVEN) -> Tensor:
        """True (a bool tensor) where every entry over ``dim`` is non-zero."""
        dims, keep = _reduction_args(self, dim, axis, keepdim, keepdims)
        return Tensor._from_array(np.asarray(self._data).all(axis=dims, keepdims=keep))

    def any(self, dim: int | tuple[int, ...] | None = None, keepdim: bool = False, *,
            axis: Any = None, keepdims: Any = _NOT_GIVEN) -> Tensor:
        """True (a bool tensor) where some entry over ``dim`` is non-zero."""
        dims, keep = _reduction_args(self, dim, axis, keepdim, keepdims)
        return Tensor._from_array(np.asarray(self._data).any(axis=dims, keepdims=keep))

    def histogram(self, bins: int | Tensor = 100, *, range: tuple[float, float] | None = None,
                  weight: Tensor | None = None, density: bool = False) -> Histogram:
        """The named pair ``(hist, bin_edges)`` of ``numpy.histogram``, as float tensors of
        this tensor's dtype: ``bins`` equal bins over ``range`` (default: the smallest to the
        largest value), or the edges given as a 1-D tensor; each bin holds its left edge,
        the last its right edge too. ``weight`` (this tensor's shape) counts each value as
        its weight; ``density`` divides by the total and the bin widths. Not
        differentiable."""
        if not is_floating(self.dtype):
            raise TypeError(f"histogram takes a floating-point tensor, got dtype {self.dtype}")
        edges = bins._data if isinstance(bins, Tensor) else validation.positive_integer(
            bins, "histogram bins")
        if weight is not None and (not isinstance(weight, Tensor) or weight.shape != self.shape):
            raise ValueError(f"histogram weight must be a Tensor of shape {self.shape}, got "
                             f"{getattr(weight, 'shape', type(weight).__name__)}")
        counts, bin_edges = np.histogram(np.asarray(self._data), bins=edges, range=range,
                                         density=density, weights=None if weight is None
                                         else np.asarray(weight._data))
        return Histogram(Tensor._from_array(counts.astype(self.dtype)),
                         Tensor._from_array(bin_edges.astype(self.dtype)))

    def softmax(self, dim: int = -1, *, axis: int | None = None) -> Tensor:
        return ops.Softmax.apply(_floating(self), axis=_one_dim(self, dim, axis, "softmax"))

    def log_softmax(self, dim: int = -1, *, axis: int | None = None) -> Tensor:
        return ops.LogSoftmax.apply(_floating(self),
                                    axis=_one_dim(self, dim, axis, "log_softmax"))

    # ----------------------------------------------------------------------------- shape
    def reshape(self, *shape: Any) -> Tensor:
        resolved = _resolve_shape(_shape_arg(shape), self.shape)
        return ops.Reshape.apply(self, shape=resolved)

    def view(self, *shape: Any) -> Tensor:
        return self.reshape(*shape)

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        """The dims from ``start_dim`` to ``end_dim`` (both included) merged into one."""
        if self.ndim == 0:
            return self.reshape(1)
        start, end = _axis(start_dim, self.ndim), _axis(end_dim, self.ndim)
        if start > end:
            raise ValueError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
        return self.reshape(*self.shape[:start], -1, *self.shape[end + 1:])

    def permute(self, *axes: Any) -> Tensor:
        order = tuple(_shape_arg(axes))
        if sorted(_axis(a, self.ndim) for a in order) != list(range(self.ndim)):
            raise ValueError(f"permute({order}) is not a permutation of the {self.ndim} axes "
                             f"of a tensor of shape {self.shape}")
        return ops.Permute.apply(self, axes=tuple(_axis(a, self.ndim) for a in order))

    def transpose(self, dim0: int = -2, dim1: int = -1) -> Tensor:
        """Swap two dims (the last two by default, as for ``k.transpose()`` in attention)."""
        if self.ndim < 2:
            raise ValueError(f"transpose needs at least 2 dims, got shape {self.shape}")
        order = list(range(self.ndim))
        a, b = _axis(dim0, self.ndim), _axis(dim1, self.ndim)
        order[a], order[b] = order[b], order[a]
        return ops.Permute.apply(self, axes=tuple(order))

    @property
    def T(self) -> Tensor:  # noqa: N802 - numpy's name
        """All axes reversed, as numpy's ``.T``."""
        return ops.Permute.apply(self, axes=tuple(reversed(range(self.ndim))))

    def expand(self, *shape: Any) -> Tensor:
        """Broadcast to ``shape`` without copying; ``-1`` keeps a dimension."""
        target = list(_shape_arg(shape))
        offset = len(target) - self.ndim
        if offset < 0:
            raise ValueError(f"cannot expand shape {self.shape} to fewer axes {tuple(target)}")
        for i in range(self.ndim):
            if target[offset + i] == -1:
                target[offset + i] = self.shape[i]
        try:
            np.broadcast_shapes(self.shape, tuple(target))
            if np.broadcast_shapes(self.shape, tuple(target)) != tuple(target):
                raise ValueError
        except ValueError:
            raise ValueError(f"cannot expand shape {self.shape} to {tuple(target)}") from None
        return ops.Expand.apply(self, shape=tuple(target))

    def squeeze(self, dim: int | tuple[int, ...] | None = None, *,
                axis: Any = None) -> Tensor:
        """Drop the given dims of size 1 (None: every dim of size 1). A named dim whose size
        is not 1 is a ValueError (PyTorch leaves it silently)."""
        dim = _dim_or_axis(dim, axis, "squeeze")
        if dim is None:
            new_shape = tuple(d for d in self.shape if d != 1)
        else:
            dims = _axes(dim, self.ndim)
            assert dims is not None  # dim is not None
            for a in dims:
                if self.shape[a] != 1:
                    raise ValueError(f"cannot squeeze dim {a} of size {self.shape[a]} "
                                     f"(shape {self.shape})")
            new_shape = tuple(d for i, d in enumerate(self.shape) if i not in dims)
        return ops.Reshape.apply(self, shape=new_shape)

    def unsqueeze(self, dim: int | None = None, *, axis: int | None = None) -> Tensor:
        dim = _dim_or_axis(dim, axis, "unsqueeze")
        if dim is None:
            raise TypeError("unsqueeze() needs the dim where the new size-1 dim goes")
        position = _axis(dim, self.ndim + 1)
        new_shape = self.shape[:position] + (1,) + self.shape[position:]
        return ops.Reshape.apply(self, shape=new_shape)

    def split(self, split_size_or_sections: int | Sequence[int], dim: int = 0, *,
              axis: int | None = None) -> tuple[Tensor, ...]:
        return split(self, split_size_or_sections, dim, axis=axis)

    def unbind(self, dim: int = 0) -> tuple[Tensor, ...]:
        """The slices along ``dim``, that dim removed: ``x.unbind(1)[j]`` is ``x[:, j]``."""
        dim = _axis(dim, self.ndim)
        return tuple(self[(slice(None),) * dim + (i,)] for i in range(self.shape[dim]))

    def gather(self, dim: int, index: Any) -> Tensor:
        """``out[i][j] = self[index[i][j]][j]`` for ``dim=0`` (and so on along each dim):
        the entries ``index`` picks along ``dim``. ``index`` is an integer tensor with as
        many dims as ``self``; the gradient adds up where an entry is picked twice."""
        dim = _axis(dim, self.ndim)
        picks = index._data if isinstance(index, Tensor) else np.asarray(index)
        if picks.dtype.kind not in "iu" or picks.ndim != self.ndim:
            raise TypeError(f"gather: index must be an integer tensor with {self.ndim} dims, "
                            f"got dtype {picks.dtype} with {picks.ndim}")
        for d in range(self.ndim):
            if d != dim and picks.shape[d] > self.shape[d]:
                raise ValueError(f"gather: index shape {picks.shape} is larger than the "
                                 f"input's {self.shape} in dim {d}")
        if picks.size and (picks.min() < 0 or picks.max() >= self.shape[dim]):
            raise IndexError(f"gather: index out of range for dim {dim} of size "
                             f"{self.shape[dim]}")
        return ops.Gather.apply(self, dim=dim, index=picks)

    def clone(self) -> Tensor:
        """A copy with memory of its own; gradients flow back through it."""
        return ops.Clone.apply(self)

    def __getitem__(self, index: Any) -> Tensor:
        index = ops.normalize_index(index, self.shape)
        out = ops.GetItem.apply(self, index=index)
        if out._version is self._version:  # a view: an in-place change of it changes self
            out._view_of = (weakref.ref(self), index)
        return out

    # dtype casts named as builtins: last in the class, since below them a type checker
    # reads ``float``, ``int`` and ``bool`` in annotations as these methods
    def float(self) -> Tensor:
        return self.astype(float32)

    def int(self) -> Tensor:
        return self.astype(int32)

    def bool(self) -> Tensor:
        return self.astype(bool_)


# --------------------------------------------------------------------------------- helpers
# numpy's ufuncs that are Python operators: (the method, its reflected twin)
_UFUNC_OPERATORS = {
    np.add: ("__add__", "__radd__"), np.subtract: ("__sub__", "__rsub__"),
    np.multiply: ("__mul__", "__rmul__"), np.true_divide: ("__truediv__", "__rtruediv__"),
    np.power: ("__pow__", "__rpow__"), np.matmul: ("__matmul__", "__rmatmul__"),
    np.less: ("__lt__", "__gt__"), np.less_equal: ("__le__", "__ge__"),
    np.greater: ("__gt__", "__lt__"), np.greater_equal: ("__ge__", "__le__"),
    np.equal: ("__eq__", "__eq__"), np.not_equal: ("__ne__", "__ne__"),
}


def _arrays_in(value: Any) -> Any:
    """``value`` with every Tensor in it (in lists, tuples and dicts too) replaced by its
    array."""
    if isinstance(value, Tensor):
        return value._data
    if isinstance(value, (list, tuple)):
        return type(value)(_arrays_in(item) for item in value)
    if isinstance(value, dict):
        return {key: _arrays_in(item) for key, item in value.items()}
    return value


def _number(value: Any, what: str) -> Any:
    """One number to write into a tensor: a Python or numpy number, or a one-element
    tensor or array (``validation.fill_value``)."""
    return validation.fill_value(value._data if isinstance(value, Tensor) else value, what)


def _in_place_operand(value: Any, what: str) -> Any:
    """A tensor, backend array or number as given; anything else checked to be numbers."""
    if isinstance(value, Tensor) or is_backend_array(value) or isinstance(value, numbers.Number):
        return value
    return validation.numeric_array(value, what)


class MaxMin(NamedTuple):
    """What ``x.max(dim)`` and ``x.min(dim)`` return, as PyTorch's named pair:
    ``values, indices = x.max(1)`` or ``x.max(1).values``."""

    values: Tensor
    indices: Tensor


class Histogram(NamedTuple):
    """What ``x.histogram(bins)`` returns, as PyTorch's named pair: the counts per bin and
    the bins' edges (one more than the counts)."""

    hist: Tensor
    bin_edges: Tensor


def _floating(t: Tensor) -> Tensor:
    """``t`` itself when it holds floats; otherwise its values in float32, the default
    float dtype: what a floating op (exp, division, mean...) computes on integer or boolean
    input, as in PyTorch."""
    if is_floating(t._data.dtype):
        return t
    return Tensor._from_array(t._data.astype(DEFAULT_FLOAT))


def as_operand(value: Any, like: Tensor) -> Tensor:
    """Turn a Python number or array into a constant tensor for an op with ``like``.

    Python scalars take ``like``'s floating dtype, so they never upcast float32.
    """
    if isinstance(value, Tensor):
        return value
    if isinstance(value, (tuple, list)) and any(isinstance(v, Tensor) for v in value):
        hint = " (x.max(dim) and x.min(dim) give (values, indices): use .values)" \
            if isinstance(value, MaxMin) else ""
        raise TypeError(f"an operand is a {type(value).__name__} of tensors{hint}")
    if isinstance(value, numbers.Number) and not isinstance(value, np.generic):
        dtype = like.dtype if is_floating(like.dtype) or isinstance(value, numbers.Integral) \
            else DEFAULT_FLOAT
        if isinstance(value, bool) or (like.dtype == bool_ and isinstance(value, numbers.Integral)):
            dtype = like.dtype if like.dtype != bool_ else np.dtype(np.int64)
        try:
            return Tensor._from_array(np.asarray(value, dtype=dtype))
        except OverflowError:
            raise ValueError(f"{value} does not fit in the {dtype} of the tensor it is "
                             "combined with") from None
    return Tensor._from_array(_to_array(value, None))


def _pair(a: Any, b: Any) -> tuple[Tensor, Tensor]:
    """Coerce two operands to tensors of one dtype, without silent float upcasts."""
    if not isinstance(a, Tensor):
        a = as_operand(a, like=b)
    if not isinstance(b, Tensor):
        b = as_operand(b, like=a)
    if a.dtype == b.dtype:
        return a, b
    a_float, b_float = is_floating(a.dtype), is_floating(b.dtype)
    if a_float and b_float:
        raise TypeError(f"mixed floating dtypes {a.dtype} and {b.dtype}; convert one with "
                        ".float() or .double() first")
    if a_float:
        return a, Tensor._from_array(b._data.astype(a.dtype))
    if b_float:
        return Tensor._from_array(a._data.astype(b.dtype)), b
    common = np.result_type(a.dtype, b.dtype)
    return Tensor._from_array(a._data.astype(common)), Tensor._from_array(b._data.astype(common))


def _bool_mask(mask: Any, shape: tuple[int, ...], what: str) -> np.ndarray:
    array = mask._data if isinstance(mask, Tensor) else np.asarray(mask)
    if array.dtype != np.bool_:
        raise TypeError(f"{what}: the mask must be boolean, got dtype {array.dtype}")
    try:
        np.broadcast_shapes(array.shape, shape)
    except ValueError:
        raise ValueError(f"{what}: mask of shape {array.shape} does not broadcast with the "
                         f"tensor's shape {shape}") from None
    return array


# --------------------------------------------------------------------------------- n-ary ops


def split(tensor: Tensor, split_size_or_sections: int | Sequence[int], dim: int = 0, *,
          axis: int | None = None) -> tuple[Tensor, ...]:
    """Cut a tensor along ``dim`` into chunks of ``split_size_or_sections`` (an int: equal
    chunks, the last one shorter if need be; a list: those lengths)."""
    dim = _axis(dim if axis is None else axis, tensor.ndim)
    length, sizes = tensor.shape[dim], split_size_or_sections
    if isinstance(sizes, (int, np.integer)) and not isinstance(sizes, bool):
        if sizes <= 0:
            raise ValueError(f"split size must be positive, got {sizes}")
        sizes = [min(sizes, length - start) for start in range(0, length, int(sizes))] or [0]
    if not isinstance(sizes, (tuple, list)):
        raise TypeError(f"split sizes must be an integer or a sequence of integers, got "
                        f"{sizes!r}")
    sizes = [validation.integer(size, "each split size") for size in sizes]
    if sum(sizes) != length or any(s < 0 for s in sizes):
        raise ValueError(f"split sizes {sizes} do not add up to dim {dim}'s length {length}")
    pieces, start = [], 0
    for size in sizes:
        index = (slice(None),) * dim + (slice(start, start + size),)
        pieces.append(tensor[index])
        start += size
    return tuple(pieces)


def where(condition: Any, a: Any, b: Any) -> Tensor:
    """Elementwise ``condition ? a : b`` with broadcasting; differentiable in a and b."""
    if isinstance(a, Tensor) or not isinstance(b, Tensor):
        a_tensor = a if isinstance(a, Tensor) else Tensor(a)
        a_tensor, b_tensor = _pair(a_tensor, b)
    else:
        a_tensor, b_tensor = _pair(a, b)
    try:
        shape = np.broadcast_shapes(a_tensor.shape, b_tensor.shape)
    except ValueError:
        raise ValueError(f"where: shapes {a_tensor.shape} and {b_tensor.shape} cannot be "
                         "broadcast together") from None
    mask = _bool_mask(condition, shape, "where")
    return ops.Where.apply(a_tensor, b_tensor, condition=mask)


def maximum(a: Any, b: Any) -> Tensor:
    return ops.Maximum.apply(*_pair(a, b))


def minimum(a: Any, b: Any) -> Tensor:
    a, b = _pair(a, b)
    return -ops.Maximum.apply(-a, -b)


def _same_dtype(tensors: Sequence[Tensor], what: str) -> list[Tensor]:
    tensors = list(tensors)
    if not tensors:
        raise ValueError(f"{what} needs at least one tensor")
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"{what} takes tensors, got {type(t).__name__}")
    dtypes = {t.dtype for t in tensors}
    if len(dtypes) != 1:
        raise TypeError(f"{what}: tensors have different dtypes {sorted(map(str, dtypes))}")
    return tensors


from tensorlib.engine import ops  # noqa: E402  (ops need Tensor; Tensor's methods need ops)
