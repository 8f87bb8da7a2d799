"""Tensor: an n-dimensional array that remembers how it was made.

A ``Tensor`` wraps a numpy array (``.data``) and, when it takes part in a differentiable
computation, the graph node that produced it (``.grad_fn``). Arithmetic dunders call the
``Function`` subclasses in :mod:`tensorlib.ops`; gradients land in ``.grad`` after
``backward()``.
"""

from __future__ import annotations

import math
import numbers
import weakref
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from tensorlib import validation
from tensorlib.autograd import is_grad_enabled, run_backward
from tensorlib.backend import device_of, is_backend_array, to_device

DTypeLike = Any
ShapeLike = int | Sequence[int]

float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)
int64 = np.dtype(np.int64)
int32 = np.dtype(np.int32)
bool_ = np.dtype(np.bool_)

DEFAULT_FLOAT = float32


def _is_floating(dtype: np.dtype) -> bool:
    return dtype.kind == "f"  # float16/32/64 (np.issubdtype is slow on a hot path)


def _to_array(data: Any, dtype: DTypeLike | None) -> np.ndarray:
    """Convert ``data`` to an ndarray: Python floats become float32, ints int64."""
    if isinstance(data, Tensor):
        data = data.data
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


class Tensor:
    """An array with an optional gradient and the graph node that produced it.

    ``data`` is the numpy array, ``grad`` an array of the same shape and dtype (or None),
    ``requires_grad`` marks tensors whose gradient is wanted, and ``grad_fn`` is the node that
    made a non-leaf tensor. Only floating-point tensors can require gradients.
    """

    __slots__ = ("_data", "grad", "_requires_grad", "grad_fn", "_version", "name",
                 "__weakref__")
    __array_priority__ = 1000  # numpy defers ``ndarray <op> Tensor`` to the Tensor
    __array_ufunc__ = None

    def __init__(self, data: Any, dtype: DTypeLike | None = None, requires_grad: bool = False):
        self._data = _to_array(data, dtype)
        self.grad: np.ndarray | None = None
        self.grad_fn = None
        self._version = [0]  # a shared box, so a detached view sees the same counter
        self.name: str | None = None
        self._requires_grad = False
        self.requires_grad = requires_grad

    @classmethod
    def _from_array(cls, array: np.ndarray) -> Tensor:
        """Wrap an array produced by an op (no checks). A numpy scalar, which numpy returns
        for a reduction to one number or a ufunc of 0-d arrays, becomes a 0-d array, so the
        tensor's values can be changed in place like any other's."""
        tensor = cls.__new__(cls)
        tensor._data = np.asarray(array) if isinstance(array, np.generic) else array
        tensor.grad = None
        tensor.grad_fn = None
        tensor._version = [0]
        tensor.name = None
        tensor._requires_grad = False
        return tensor

    # ----------------------------------------------------------------------------- basics
    @property
    def data(self) -> np.ndarray:
        """The underlying array. Assigning a new array counts as an in-place change."""
        return self._data

    @data.setter
    def data(self, value: Any) -> None:
        self._data = _to_array(value, None)
        self._bump_version()

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        if flag and not _is_floating(self._data.dtype):
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
    def size(self) -> int:
        return self._data.size

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

    def to(self, device: str) -> Tensor:
        """This tensor's values on ``device`` ("cpu", "cuda" or a registered backend).

        Returns ``self`` when it already lives there. Otherwise returns a new leaf tensor
        holding a copy on ``device`` that is *not* connected to the graph (it does not
        require grad; gradients do not flow back through a device move). Move a model's
        parameters with ``Module.to``. ValueError for an unknown device, RuntimeError for
        one that is not available here.
        """
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
        if self.size != 1:
            raise ValueError(f"the truth value of a tensor of shape {self.shape} is ambiguous")
        return bool(self._data)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
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

    def numpy(self) -> np.ndarray:
        """The data as a numpy array (shared memory, no copy)."""
        return self._data

    def item(self) -> float | int | bool:
        """The single value of a one-element tensor as a Python number."""
        if self.size != 1:
            raise ValueError(f"item() needs a tensor with one element, got shape {self.shape}")
        return self._data.reshape(()).item()

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
        run_backward(self, grad.data if isinstance(grad, Tensor) else grad, retain_graph)

    # ----------------------------------------------------------------------------- in place
    def _bump_version(self) -> None:
        self._version[0] += 1

    def _check_in_place(self, what: str) -> None:
        if self.grad_fn is not None:
            raise RuntimeError(f"{what}: in-place change of a non-leaf tensor is not supported")
        if self.requires_grad and is_grad_enabled():
            raise RuntimeError(f"{what}: a leaf tensor that requires grad cannot be changed in "
                               "place while gradients are recorded; "
                               "use `with tensorlib.no_grad():`")

    def _in_place_operand(self, other: Any, what: str) -> np.ndarray:
        value = other.data if isinstance(other, Tensor) \
            else other if is_backend_array(other) else validation.numeric_array(other, what)
        if value.shape == self.shape or value.shape == ():
            return value
        try:
            fits = np.broadcast_shapes(value.shape, self.shape) == self.shape
        except ValueError:
            fits = False
        if not fits:
            raise ValueError(f"{what}: shape {value.shape} cannot be broadcast to the tensor's "
                             f"shape {self.shape}")
        return value

    def copy_(self, source: Any) -> Tensor:
        """Overwrite the values in place (broadcasting ``source``); bumps the version."""
        self._check_in_place("copy_")
        self._data[...] = self._in_place_operand(source, "copy_")
        self._bump_version()
        return self

    def add_(self, other: Any, alpha: float = 1.0) -> Tensor:
        """``self += alpha * other`` in place; bumps the version."""
        self._check_in_place("add_")
        value = self._in_place_operand(other, "add_")
        _number(alpha, "add_ alpha")
        self._data += value if alpha == 1.0 else alpha * value
        self._bump_version()
        return self

    def mul_(self, other: Any) -> Tensor:
        """``self *= other`` in place; bumps the version."""
        self._check_in_place("mul_")
        self._data *= self._in_place_operand(other, "mul_")
        self._bump_version()
        return self

    def fill_(self, value: float) -> Tensor:
        """Set every entry to ``value`` (a number, or a one-element tensor); bumps the
        version."""
        value = _number(value, "fill_ value")
        self._check_in_place("fill_")
        self._data[...] = value
        self._bump_version()
        return self

    def zero_(self) -> Tensor:
        return self.fill_(0)

    # ----------------------------------------------------------------------------- dtype
    def astype(self, dtype: DTypeLike) -> Tensor:
        """A copy in another dtype; differentiable between floating dtypes."""
        return ops.Cast.apply(self, dtype=validation.tensor_dtype(dtype, "astype dtype"))

    def float(self) -> Tensor:
        return self.astype(float32)

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

    # comparisons: non-differentiable boolean tensors
    def _compare(self, other: Any, ufunc: np.ufunc) -> Tensor:
        a, b = _pair(self, other)
        return Tensor._from_array(ufunc(a.data, b.data))

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
    def sum(self, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Tensor:
        """The sum over ``axis`` (None: every axis); integer and boolean tensors sum to int64."""
        values = self if self.dtype.kind not in "biu" or self.dtype == int64 \
            else Tensor._from_array(self._data.astype(int64))
        return ops.Sum.apply(values, axis=_axes(axis, self.ndim), keepdims=_keepdims(keepdims))

    def mean(self, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Tensor:
        """The mean over ``axis`` (None: every axis); nan over no elements."""
        return ops.Mean.apply(_floating(self), axis=_axes(axis, self.ndim),
                              keepdims=_keepdims(keepdims))

    def max(self, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Tensor:
        return ops.Max.apply(self, axis=_axes(axis, self.ndim), keepdims=_keepdims(keepdims))

    def min(self, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Tensor:
        return -ops.Max.apply(-self, axis=_axes(axis, self.ndim), keepdims=_keepdims(keepdims))

    def var(self, axis: int | tuple[int, ...] | None = None, keepdims: bool = False,
            ddof: int = 0) -> Tensor:
        """Variance: the sum of squared deviations divided by n - ``ddof`` (``ddof=0``, the
        biased estimate, numpy's default, unless asked otherwise); nan or inf where that is
        0 or less, as in PyTorch."""
        ddof = validation.integer(ddof, "var ddof", minimum=0)
        return ops.Var.apply(_floating(self), axis=_axes(axis, self.ndim),
                             keepdims=_keepdims(keepdims), ddof=ddof)

    def logsumexp(self, axis: int | tuple[int, ...] | None = None,
                  keepdims: bool = False) -> Tensor:
        """log Σ exp(x) over ``axis``; -inf over no elements."""
        return ops.LogSumExp.apply(_floating(self), axis=_axes(axis, self.ndim),
                                   keepdims=_keepdims(keepdims))

    def softmax(self, axis: int = -1) -> Tensor:
        return ops.Softmax.apply(_floating(self), axis=_axis(axis, self.ndim))

    def log_softmax(self, axis: int = -1) -> Tensor:
        return ops.LogSoftmax.apply(_floating(self), axis=_axis(axis, self.ndim))

    # ----------------------------------------------------------------------------- shape
    def reshape(self, *shape: Any) -> Tensor:
        resolved = _resolve_shape(_shape_arg(shape), self.shape)
        return ops.Reshape.apply(self, shape=resolved)

    def view(self, *shape: Any) -> Tensor:
        return self.reshape(*shape)

    def flatten(self) -> Tensor:
        return self.reshape(-1)

    def permute(self, *axes: Any) -> Tensor:
        order = tuple(_shape_arg(axes))
        if sorted(_axis(a, self.ndim) for a in order) != list(range(self.ndim)):
            raise ValueError(f"permute({order}) is not a permutation of the {self.ndim} axes "
                             f"of a tensor of shape {self.shape}")
        return ops.Permute.apply(self, axes=tuple(_axis(a, self.ndim) for a in order))

    def transpose(self, axis0: int = -2, axis1: int = -1) -> Tensor:
        """Swap two axes (the last two by default, as for ``k.transpose()`` in attention)."""
        if self.ndim < 2:
            raise ValueError(f"transpose needs at least 2 axes, got shape {self.shape}")
        order = list(range(self.ndim))
        a, b = _axis(axis0, self.ndim), _axis(axis1, self.ndim)
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

    def squeeze(self, axis: int | tuple[int, ...] | None = None) -> Tensor:
        if axis is None:
            new_shape = tuple(d for d in self.shape if d != 1)
        else:
            axes = _axes(axis, self.ndim)
            for a in axes:
                if self.shape[a] != 1:
                    raise ValueError(f"cannot squeeze axis {a} of size {self.shape[a]} "
                                     f"(shape {self.shape})")
            new_shape = tuple(d for i, d in enumerate(self.shape) if i not in axes)
        return ops.Reshape.apply(self, shape=new_shape)

    def unsqueeze(self, axis: int) -> Tensor:
        position = _axis(axis, self.ndim + 1)
        new_shape = self.shape[:position] + (1,) + self.shape[position:]
        return ops.Reshape.apply(self, shape=new_shape)

    def split(self, sizes: int | Sequence[int], axis: int = 0) -> tuple[Tensor, ...]:
        return split(self, sizes, axis)

    def __getitem__(self, index: Any) -> Tensor:
        return ops.GetItem.apply(self, index=ops.normalize_index(index, self.shape))


# --------------------------------------------------------------------------------- helpers
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
        raise ValueError("axis=() is refused: numpy reduces over no axis, PyTorch over every "
                         "axis; pass axis=None to reduce over every axis")
    normalized = tuple(sorted(_axis(a, ndim) for a in items))
    if len(set(normalized)) != len(normalized):
        raise ValueError(f"repeated axis in {axis!r}")
    return normalized


def _number(value: Any, what: str) -> Any:
    """One number to write into a tensor: a Python or numpy number, or a one-element
    tensor or array (``validation.fill_value``)."""
    return validation.fill_value(value.data if isinstance(value, Tensor) else value, what)


def _keepdims(keepdims: Any) -> bool:
    return validation.boolean(keepdims, "keepdims")


def _floating(t: Tensor) -> Tensor:
    """``t`` itself when it holds floats; otherwise its values in float32, the default
    float dtype: what a floating op (exp, division, mean...) computes on integer or boolean
    input, as in PyTorch."""
    if _is_floating(t._data.dtype):
        return t
    return Tensor._from_array(t._data.astype(DEFAULT_FLOAT))


def as_operand(value: Any, like: Tensor) -> Tensor:
    """Turn a Python number or array into a constant tensor for an op with ``like``.

    Python scalars take ``like``'s floating dtype, so they never upcast float32.
    """
    if isinstance(value, Tensor):
        return value
    if isinstance(value, numbers.Number) and not isinstance(value, np.generic):
        dtype = like.dtype if _is_floating(like.dtype) or isinstance(value, numbers.Integral) \
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
    a_float, b_float = _is_floating(a.dtype), _is_floating(b.dtype)
    if a_float and b_float:
        raise TypeError(f"mixed floating dtypes {a.dtype} and {b.dtype}; convert one with "
                        ".float() or .double() first")
    if a_float:
        return a, Tensor._from_array(b.data.astype(a.dtype))
    if b_float:
        return Tensor._from_array(a.data.astype(b.dtype)), b
    common = np.result_type(a.dtype, b.dtype)
    return Tensor._from_array(a.data.astype(common)), Tensor._from_array(b.data.astype(common))


def _bool_mask(mask: Any, shape: tuple[int, ...], what: str) -> np.ndarray:
    array = mask.data if isinstance(mask, Tensor) else np.asarray(mask)
    if array.dtype != np.bool_:
        raise TypeError(f"{what}: the mask must be boolean, got dtype {array.dtype}")
    try:
        np.broadcast_shapes(array.shape, shape)
    except ValueError:
        raise ValueError(f"{what}: mask of shape {array.shape} does not broadcast with the "
                         f"tensor's shape {shape}") from None
    return array


# --------------------------------------------------------------------------------- factories
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
    value = _number(value, "full value")
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


def zeros_like(other: Tensor, requires_grad: bool = False) -> Tensor:
    return Tensor(np.zeros_like(other.data), requires_grad=requires_grad)


def ones_like(other: Tensor, requires_grad: bool = False) -> Tensor:
    return Tensor(np.ones_like(other.data), requires_grad=requires_grad)


# --------------------------------------------------------------------------------- n-ary ops
def concat(tensors: Sequence[Tensor], axis: int = 0) -> Tensor:
    """Join tensors along an existing axis."""
    tensors = _same_dtype(tensors, "concat")
    first = tensors[0]
    axis = _axis(axis, first.ndim)
    for t in tensors[1:]:
        if t.ndim != first.ndim or any(
            t.shape[i] != first.shape[i] for i in range(first.ndim) if i != axis
        ):
            raise ValueError(f"concat along axis {axis}: shapes "
                             f"{[tuple(x.shape) for x in tensors]} differ off that axis")
    return ops.Concat.apply(*tensors, axis=axis)


def stack(tensors: Sequence[Tensor], axis: int = 0) -> Tensor:
    """Join same-shaped tensors along a new axis."""
    tensors = _same_dtype(tensors, "stack")
    shapes = {t.shape for t in tensors}
    if len(shapes) != 1:
        raise ValueError(f"stack needs tensors of one shape, got {[t.shape for t in tensors]}")
    axis = _axis(axis, tensors[0].ndim + 1)
    return concat([t.unsqueeze(axis) for t in tensors], axis=axis)


def split(tensor: Tensor, sizes: int | Sequence[int], axis: int = 0) -> tuple[Tensor, ...]:
    """Cut a tensor along ``axis`` into chunks of ``sizes`` (an int: equal chunks)."""
    axis = _axis(axis, tensor.ndim)
    length = tensor.shape[axis]
    if isinstance(sizes, (int, np.integer)) and not isinstance(sizes, bool):
        if sizes <= 0:
            raise ValueError(f"split size must be positive, got {sizes}")
        sizes = [min(sizes, length - start) for start in range(0, length, int(sizes))] or [0]
    if not isinstance(sizes, (tuple, list)):
        raise TypeError(f"split sizes must be an integer or a sequence of integers, got "
                        f"{sizes!r}")
    sizes = [validation.integer(size, "each split size") for size in sizes]
    if sum(sizes) != length or any(s < 0 for s in sizes):
        raise ValueError(f"split sizes {sizes} do not add up to axis {axis}'s length {length}")
    pieces, start = [], 0
    for size in sizes:
        index = (slice(None),) * axis + (slice(start, start + size),)
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


from tensorlib import ops  # noqa: E402  (ops need Tensor; Tensor's methods need ops)
