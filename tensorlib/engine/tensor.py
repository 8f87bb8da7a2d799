"""Tensor: an n-dimensional array that remembers how it was made.

A ``Tensor`` wraps a numpy array (``.data``) and, when it takes part in a differentiable
computation, the graph node that produced it (``.grad_fn``). Arithmetic dunders call the
``Function`` subclasses in :mod:`tensorlib.engine.ops`; gradients land in ``.grad`` after
``backward()``.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from tensorlib.engine import validation
from tensorlib.engine.autograd import Context, run_backward
from tensorlib.engine.backend import copy_to_backend, device_of, is_backend_array
from tensorlib.engine.devices import Device, backend_for, device_of_array, to_arguments
from tensorlib.engine.dtypes import (
    DEFAULT_FLOAT,
    bfloat16,
    bool_,
    float16,
    float32,
    float64,
    int32,
    int64,
    to_float32,
)
from tensorlib.engine.methods import arithmetic, elementwise, in_place, reductions
from tensorlib.engine.methods import shape as shape_methods  # `shape` is a property below
from tensorlib.engine.tensor_arguments import _axis
from tensorlib.engine.typing import Array
from tensorlib.engine.validation import is_floating

DTypeLike = Any
ShapeLike = int | Sequence[int]





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
    elif not validation.is_numeric(array.dtype):
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

    def element_size(self) -> int:
        """Bytes per element: 4 for float32, 2 for float16 and bfloat16."""
        return self._data.dtype.itemsize

    def is_floating_point(self) -> bool:
        """Whether the dtype is a float: float16, bfloat16, float32 or float64."""
        return is_floating(self._data.dtype)

    @property
    def version(self) -> int:
        """How many in-place changes this tensor's data has seen."""
        return self._version[0]

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def device(self) -> Device:
        """The :class:`~tensorlib.engine.devices.device` the data lives on
        (``device(type='cpu')``, or ``cuda:0`` for CuPy); it also equals its name as a
        string (``x.device == 'cpu'``), which PyTorch's does not."""
        return device_of_array(self._data)

    @property
    def is_cuda(self) -> bool:
        """True when the data lives on the GPU (a CuPy array)."""
        return device_of(self._data) == "cuda"

    def to(self, *args: Any, **kwargs: Any) -> Tensor:
        """PyTorch's ``to``: ``to(device)``, ``to(dtype)``, ``to(device, dtype)``,
        ``to(other)`` (its device and dtype), and by name ``to(device=None, dtype=None,
        non_blocking=False, copy=False)``; a device is a string ("cpu", "cuda:0", a
        registered backend) or a ``tensorlib.device``.

        Returns ``self`` when nothing changes (unless ``copy=True``: then a copy that carries
        the gradient, :meth:`clone`). A dtype change is :meth:`astype`, differentiable
        between floating dtypes. A device move returns a new leaf tensor holding a copy on
        that device which is *not* connected to the graph (it does not require grad;
        gradients do not flow back through a move, where PyTorch's do): move a model's
        parameters with ``Module.to``. ``non_blocking`` is accepted and changes nothing.
        ValueError for an unknown device, RuntimeError for one that is not available here.
        """
        target, dtype, _, copy = to_arguments(args, kwargs, Tensor, "Tensor.to")
        out = self
        if target is not None:
            backend = backend_for(target)  # checked before any copy
            if device_of(self._data) != backend.name:
                out = Tensor._from_array(copy_to_backend(backend, self._data))
                out.name = self.name
        if dtype is not None and dtype != out.dtype:
            out = out.astype(dtype)
        return self.clone() if copy and out is self else out

    def cpu(self) -> Tensor:
        """``to('cpu')``: this tensor itself when it is on the CPU."""
        return self.to("cpu")

    def cuda(self, device: Any = None, non_blocking: bool = False) -> Tensor:
        """``to('cuda')`` (or ``to(device)``; an int ``i`` is ``'cuda:i'``): RuntimeError
        saying why when no GPU is available here."""
        if device is None:
            device = "cuda"
        elif isinstance(device, (int, np.integer)) and not isinstance(device, bool):
            device = f"cuda:{device}"
        return self.to(device, non_blocking=non_blocking)

    def pin_memory(self) -> Tensor:
        """This tensor itself: numpy memory has no pinned kind, and a copy to a GPU needs
        none, so ``x.pin_memory().to(device, non_blocking=True)`` runs as written. (PyTorch
        returns a copy in page-locked memory, and raises on a machine without a GPU.)
        RuntimeError for a tensor on a GPU, as in PyTorch: only host memory is pinned."""
        if device_of(self._data) != "cpu":
            raise RuntimeError(f"cannot pin a tensor on '{self.device}': only tensors on the "
                               f"CPU can be pinned")
        return self

    def is_pinned(self) -> bool:
        """False: tensorlib never pins memory (see :meth:`pin_memory`)."""
        return False

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
        values = np.asarray(self._data)
        if values.dtype == bfloat16:  # numpy formats its own floats only; float32 holds each
            values = to_float32(values)
        body = np.array2string(values, precision=4, separator=", ", prefix="tensor(")
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

    def _bump_version(self) -> None:
        """Count an in-place change of this tensor's memory (shared with its views)."""
        self._version[0] += 1

    # ----------------------------------------------------------------------------- the ops
    # Each method below is a function of tensorlib.engine.methods, written there once, with
    # the spellings it has beside (tensorlib.exp is the same function as x.exp).
    # in place (methods/in_place.py)
    __iadd__ = in_place.iadd
    __isub__ = in_place.isub
    __imul__ = in_place.imul
    __itruediv__ = in_place.itruediv
    __setitem__ = in_place.setitem
    copy_ = in_place.copy_
    add_ = in_place.add_
    mul_ = in_place.mul_
    fill_ = in_place.fill_
    zero_ = in_place.zero_
    requires_grad_ = in_place.requires_grad_
    # operators and comparisons (methods/arithmetic.py)
    __add__ = arithmetic.add
    __radd__ = arithmetic.radd
    __sub__ = arithmetic.sub
    __rsub__ = arithmetic.rsub
    __mul__ = arithmetic.mul
    __rmul__ = arithmetic.rmul
    __truediv__ = arithmetic.truediv
    __rtruediv__ = arithmetic.rtruediv
    __pow__ = pow = arithmetic.pow
    __rpow__ = arithmetic.rpow
    __matmul__ = matmul = arithmetic.matmul
    __rmatmul__ = arithmetic.rmatmul
    __neg__ = arithmetic.neg
    __pos__ = arithmetic.pos
    __invert__ = arithmetic.invert
    __lt__ = arithmetic.lt
    __le__ = arithmetic.le
    __gt__ = arithmetic.gt
    __ge__ = arithmetic.ge
    __eq__ = arithmetic.eq  # type: ignore[assignment]
    __ne__ = arithmetic.ne  # type: ignore[assignment]
    maximum = arithmetic.maximum
    minimum = arithmetic.minimum
    where = arithmetic.where_method
    # elementwise (methods/elementwise.py)
    astype = elementwise.astype
    exp = elementwise.exp
    log = elementwise.log
    log10 = elementwise.log10
    sqrt = elementwise.sqrt
    __abs__ = abs = elementwise.abs
    tanh = elementwise.tanh
    sigmoid = elementwise.sigmoid
    relu = elementwise.relu
    leaky_relu = elementwise.leaky_relu
    softplus = elementwise.softplus
    silu = elementwise.silu
    sign = elementwise.sign
    gelu = elementwise.gelu
    masked_fill = elementwise.masked_fill
    # reductions (methods/reductions.py)
    sum = reductions.sum
    mean = reductions.mean
    amax = reductions.amax
    amin = reductions.amin
    max = reductions.max
    min = reductions.min
    argmax = reductions.argmax
    argmin = reductions.argmin
    topk = reductions.topk
    var = reductions.var
    std = reductions.std
    logsumexp = reductions.logsumexp
    all = reductions.all
    any = reductions.any
    histogram = reductions.histogram
    softmax = reductions.softmax
    log_softmax = reductions.log_softmax
    # shape and indexing (methods/shape.py)
    __getitem__ = shape_methods.getitem
    reshape = shape_methods.reshape
    view = shape_methods.view
    flatten = shape_methods.flatten
    permute = shape_methods.permute
    t = shape_methods.t
    transpose = shape_methods.transpose
    T = property(shape_methods.T)
    expand = shape_methods.expand
    squeeze = shape_methods.squeeze
    unsqueeze = shape_methods.unsqueeze
    split = shape_methods.split
    unbind = shape_methods.unbind
    gather = shape_methods.gather
    clone = shape_methods.clone
    contiguous = shape_methods.contiguous
    repeat = shape_methods.repeat
    tril = shape_methods.tril
    triu = shape_methods.triu

    # ----------------------------------------------------------------------------- dtype
    def double(self) -> Tensor:
        return self.astype(float64)

    def half(self) -> Tensor:
        return self.astype(float16)

    def bfloat16(self) -> Tensor:
        return self.astype(bfloat16)

    def long(self) -> Tensor:
        return self.astype(int64)

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


