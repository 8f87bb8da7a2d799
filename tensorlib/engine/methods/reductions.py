"""The reductions: sums, means, extremes and their indices, variances, ``logsumexp``,
``all``/``any``, ``histogram``, and ``softmax``/``log_softmax`` along one dim.

PyTorch's spellings are the parameters (dim, keepdim); numpy's (axis=, keepdims=) are
accepted as keywords, as PyTorch accepts them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from tensorlib.engine import ops, validation
from tensorlib.engine import tensor as tensor_module  # the class these serve, being defined
from tensorlib.engine.dtypes import int64
from tensorlib.engine.methods import arithmetic
from tensorlib.engine.methods.operands import Histogram, MaxMin, TopK, floating, wrap
from tensorlib.engine.methods.spellings import declare
from tensorlib.engine.tensor_arguments import (
    _NOT_GIVEN,
    _axis,
    _correction,
    _dim_or_axis,
    _keepdims,
    _one_dim,
    _reduction_args,
)
from tensorlib.engine.validation import is_floating

if TYPE_CHECKING:
    from tensorlib.engine.tensor import Tensor


def sum(self: Tensor, dim: int | tuple[int, ...] | None = None, keepdim: bool = False, *,
        axis: Any = None, keepdims: Any = _NOT_GIVEN) -> Tensor:
    """The sum over ``dim`` (None: every dim); integer and boolean tensors sum to int64."""
    dims, keep = _reduction_args(self, dim, axis, keepdim, keepdims)
    values = self if self.dtype.kind not in "biu" or self.dtype == int64 \
        else wrap(self._data.astype(int64))
    return ops.Sum.apply(values, axis=dims, keepdims=keep)


def mean(self: Tensor, dim: int | tuple[int, ...] | None = None, keepdim: bool = False, *,
         axis: Any = None, keepdims: Any = _NOT_GIVEN) -> Tensor:
    """The mean over ``dim`` (None: every dim); nan over no elements."""
    dims, keep = _reduction_args(self, dim, axis, keepdim, keepdims)
    return ops.Mean.apply(floating(self), axis=dims, keepdims=keep)


def amax(self: Tensor, dim: int | tuple[int, ...] | None = None, keepdim: bool = False, *,
         axis: Any = None, keepdims: Any = _NOT_GIVEN) -> Tensor:
    """The maximum over ``dim`` (an int, a tuple or None: every dim); tied maxima share
    the gradient equally."""
    dims, keep = _reduction_args(self, dim, axis, keepdim, keepdims)
    return ops.Max.apply(self, axis=dims, keepdims=keep)


def amin(self: Tensor, dim: int | tuple[int, ...] | None = None, keepdim: bool = False, *,
         axis: Any = None, keepdims: Any = _NOT_GIVEN) -> Tensor:
    """The minimum over ``dim``, as :meth:`amax`."""
    dims, keep = _reduction_args(self, dim, axis, keepdim, keepdims)
    return -ops.Max.apply(-self, axis=dims, keepdims=keep)


def max(self: Tensor, dim: Any = None, keepdim: bool = False, *, axis: Any = None,
        keepdims: Any = _NOT_GIVEN) -> Tensor | MaxMin:
    """As PyTorch: ``x.max()`` is the largest entry (tied maxima share the gradient);
    ``x.max(dim)`` is the pair ``(values, indices)`` along ``dim``, whose values take
    their gradient at ``indices`` (the first maximum); ``x.max(other)`` is
    :func:`maximum`."""
    if isinstance(dim, tensor_module.Tensor):
        return arithmetic.maximum(self, dim)
    return _extreme(self, "max", dim, keepdim, axis, keepdims)


def min(self: Tensor, dim: Any = None, keepdim: bool = False, *, axis: Any = None,
        keepdims: Any = _NOT_GIVEN) -> Tensor | MaxMin:
    """As :meth:`max`, for the smallest entry."""
    if isinstance(dim, tensor_module.Tensor):
        return arithmetic.minimum(self, dim)
    return _extreme(self, "min", dim, keepdim, axis, keepdims)


def _extreme(self: Tensor, which: str, dim: Any, keepdim: Any, axis: Any,
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


def argmax(self: Tensor, dim: int | None = None, keepdim: bool = False, *, axis: Any = None,
           keepdims: Any = _NOT_GIVEN) -> Tensor:
    """The index (int64) of the first maximum along ``dim`` (None: in the flattened
    tensor); a nan counts as the maximum, as in PyTorch."""
    return _arg_extreme(self, np.argmax, dim, keepdim, axis, keepdims)


def argmin(self: Tensor, dim: int | None = None, keepdim: bool = False, *, axis: Any = None,
           keepdims: Any = _NOT_GIVEN) -> Tensor:
    """The index (int64) of the first minimum along ``dim``, as :meth:`argmax`."""
    return _arg_extreme(self, np.argmin, dim, keepdim, axis, keepdims)


def _arg_extreme(self: Tensor, find: Any, dim: Any, keepdim: Any, axis: Any,
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
        return wrap(found.reshape((1,) * self.ndim) if keep else found)
    return wrap(find(data, axis=dim, keepdims=keep).astype(int64))


def topk(self: Tensor, k: int, dim: int = -1, largest: bool = True,
         sorted: bool = True) -> TopK:
    """The ``k`` largest entries along ``dim`` (``largest=False``: the smallest), as
    PyTorch's named pair ``(values, indices)``; the values take their gradient at the
    indices. Ordered from the largest down (the smallest up), a nan counting as larger than
    any number, as in PyTorch; among equal values the lower index comes first, a rule
    (PyTorch's order among ties is whatever its selection algorithm leaves, and
    ``sorted=False`` gives this same order)."""
    if self.ndim == 0:
        raise ValueError("topk needs a tensor with at least one dim, got a 0-d tensor")
    dim = _axis(dim, self.ndim)
    k = validation.integer(k, "topk k", minimum=0)
    validation.boolean(largest, "topk largest")
    validation.boolean(sorted, "topk sorted")
    if k > self.shape[dim]:
        raise ValueError(f"topk k={k} is more than the {self.shape[dim]} entries along dim "
                         f"{dim} (shape {self.shape})")
    along = np.moveaxis(np.asarray(self._data), dim, -1)  # (..., n)
    nan = np.isnan(along) if is_floating(self.dtype) else np.zeros(along.shape, bool)
    if is_floating(self.dtype):
        order = -along if largest else along
    else:  # ~x is -x - 1 for integers, with no overflow at the smallest one
        order = ~along.astype(np.int64 if along.dtype == np.bool_ else along.dtype) \
            if largest else along
    first_nan = ~nan if largest else nan
    ranked = np.lexsort((order, first_nan), axis=-1)[..., :k]  # stable: ties by index
    indices = wrap(np.ascontiguousarray(np.moveaxis(ranked, -1, dim)).astype(int64))
    return TopK(self.gather(dim, indices), indices)


def var(self: Tensor, dim: int | tuple[int, ...] | None = None, unbiased: bool | None = None,
        keepdim: bool = False, *, correction: float | None = None, axis: Any = None,
        keepdims: Any = _NOT_GIVEN) -> Tensor:
    """Variance: Σ (x - mean)² / (n - ``correction``), with PyTorch's default
    ``correction=1`` (the unbiased estimate; ``unbiased=False`` or ``correction=0`` for
    the biased one); nan or inf where n - correction is 0 or less, as in PyTorch."""
    _check_floating_spread(self, "var")
    dims, keep = _reduction_args(self, dim, axis, keepdim, keepdims)
    return ops.Var.apply(self, axis=dims, keepdims=keep,
                         correction=_correction(unbiased, correction, "var"))


def std(self: Tensor, dim: int | tuple[int, ...] | None = None, unbiased: bool | None = None,
        keepdim: bool = False, *, correction: float | None = None, axis: Any = None,
        keepdims: Any = _NOT_GIVEN) -> Tensor:
    """Standard deviation, the square root of :meth:`var` (same arguments); where it is
    0 its gradient is 0, as in PyTorch."""
    _check_floating_spread(self, "std")
    dims, keep = _reduction_args(self, dim, axis, keepdim, keepdims)
    return ops.Std.apply(self, axis=dims, keepdims=keep,
                         correction=_correction(unbiased, correction, "std"))


def _check_floating_spread(t: Tensor, what: str) -> None:
    """var and std take floats only, as in PyTorch (integers have no mean to spread about)."""
    if not is_floating(t.dtype):
        raise TypeError(f"{what} takes a floating-point tensor, got dtype {t.dtype}; convert "
                        "with .float() first")


def logsumexp(self: Tensor, dim: int | tuple[int, ...] | None = None, keepdim: bool = False, *,
              axis: Any = None, keepdims: Any = _NOT_GIVEN) -> Tensor:
    """log Σ exp(x) over ``dim``; -inf over no elements."""
    dims, keep = _reduction_args(self, dim, axis, keepdim, keepdims)
    return ops.LogSumExp.apply(floating(self), axis=dims, keepdims=keep)


def all(self: Tensor, dim: int | tuple[int, ...] | None = None, keepdim: bool = False, *,
        axis: Any = None, keepdims: Any = _NOT_GIVEN) -> Tensor:
    """True (a bool tensor) where every entry over ``dim`` is non-zero."""
    dims, keep = _reduction_args(self, dim, axis, keepdim, keepdims)
    return wrap(np.asarray(self._data).all(axis=dims, keepdims=keep))


def any(self: Tensor, dim: int | tuple[int, ...] | None = None, keepdim: bool = False, *,
        axis: Any = None, keepdims: Any = _NOT_GIVEN) -> Tensor:
    """True (a bool tensor) where some entry over ``dim`` is non-zero."""
    dims, keep = _reduction_args(self, dim, axis, keepdim, keepdims)
    return wrap(np.asarray(self._data).any(axis=dims, keepdims=keep))


def histogram(self: Tensor, bins: int | Tensor = 100, *, range: tuple[float, float] | None = None,
              weight: Tensor | None = None, density: bool = False) -> Histogram:
    """The named pair ``(hist, bin_edges)`` of ``numpy.histogram``, as float tensors of
    this tensor's dtype: ``bins`` equal bins over ``range`` (default: the smallest to the
    largest value), or the edges given as a 1-D tensor; each bin holds its left edge,
    the last its right edge too. ``weight`` (this tensor's shape) counts each value as
    its weight; ``density`` divides by the total and the bin widths. Not
    differentiable."""
    if not is_floating(self.dtype):
        raise TypeError(f"histogram takes a floating-point tensor, got dtype {self.dtype}")
    edges = bins._data if isinstance(bins, tensor_module.Tensor) else \
        validation.positive_integer(bins, "histogram bins")
    if weight is not None and (not isinstance(weight, tensor_module.Tensor)
                               or weight.shape != self.shape):
        raise ValueError(f"histogram weight must be a Tensor of shape {self.shape}, got "
                         f"{getattr(weight, 'shape', type(weight).__name__)}")
    counts, bin_edges = np.histogram(np.asarray(self._data), bins=edges, range=range,
                                     density=density, weights=None if weight is None
                                     else np.asarray(weight._data))
    return Histogram(wrap(counts.astype(self.dtype)),
                     wrap(bin_edges.astype(self.dtype)))


def softmax(self: Tensor, dim: int = -1, *, axis: int | None = None) -> Tensor:
    return ops.Softmax.apply(floating(self), axis=_one_dim(self, dim, axis, "softmax"))


def log_softmax(self: Tensor, dim: int = -1, *, axis: int | None = None) -> Tensor:
    return ops.LogSoftmax.apply(floating(self),
                                axis=_one_dim(self, dim, axis, "log_softmax"))


# Where each function above is spelled (tensorlib.engine.methods.spellings)
declare(sum, mean, amax, amin, max, min, argmax, argmin, topk, var, std, logsumexp, all, any,
        histogram)
declare(softmax, functional=True, module="Softmax")
declare(log_softmax, functional=True, module="LogSoftmax")
