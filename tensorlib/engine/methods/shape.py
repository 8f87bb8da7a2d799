"""Shape and indexing: reshape and its views, permutations, ``expand``, ``squeeze``,
``x[index]`` (a view, shared with the tensor it reads, where numpy's would be), ``gather`` and
``split``."""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from tensorlib.engine import ops, validation
from tensorlib.engine import tensor as tensor_module  # the class these serve, being defined
from tensorlib.engine.methods.spellings import declare
from tensorlib.engine.tensor_arguments import (
    _axes,
    _axis,
    _dim_or_axis,
    _resolve_shape,
    _shape_arg,
)

if TYPE_CHECKING:
    from tensorlib.engine.tensor import Tensor


def reshape(self: Tensor, *shape: Any) -> Tensor:
    resolved = _resolve_shape(_shape_arg(shape), self.shape)
    return ops.Reshape.apply(self, shape=resolved)


def view(self: Tensor, *shape: Any) -> Tensor:
    """PyTorch's ``view``: the same memory read in ``shape`` (one -1 is inferred).

    As strict as PyTorch's: where no strides can read this tensor's memory in the new shape
    (a transpose flattened, say), ValueError with PyTorch's advice, ``.reshape(...)`` or
    ``.contiguous().view(...)``, which copy. ``reshape`` takes a view when one exists and
    copies otherwise."""
    resolved = _resolve_shape(_shape_arg(shape), self.shape)
    data = self.numpy()
    strides = tuple(stride // data.itemsize for stride in data.strides)
    if view_strides(self.shape, strides, resolved) is None:
        raise ValueError(
            f"view size {resolved} is not compatible with input tensor's size and stride "
            f"(shape {self.shape}, strides {strides}: at least one dimension spans across "
            "two contiguous subspaces). Use .reshape(...) instead, or .contiguous().view(...)")
    return ops.Reshape.apply(self, shape=resolved)


def view_strides(shape: tuple[int, ...], strides: tuple[int, ...],
                 new_shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """The strides (in elements) that read memory laid out as ``shape`` with ``strides`` in
    ``new_shape``, or None when none can: PyTorch's rule for ``view``.

    Walking from the last axis, the old axes fall into chunks that are contiguous among
    themselves (each axis's stride is the next one's extent); the new shape must split into
    runs of axes that cover exactly one chunk each, and those take the chunk's strides."""
    if 0 in shape:
        return _row_major(new_shape)
    new_strides = [0] * len(new_shape)
    view_axis = len(new_shape) - 1
    chunk_stride = strides[-1] if strides else 1
    chunk_size = view_size = 1
    for axis in range(len(shape) - 1, -1, -1):
        chunk_size *= shape[axis]
        chunk_ends = axis == 0 or (shape[axis - 1] != 1
                                   and strides[axis - 1] != chunk_size * chunk_stride)
        if not chunk_ends:
            continue
        while view_axis >= 0 and (view_size < chunk_size or new_shape[view_axis] == 1):
            new_strides[view_axis] = view_size * chunk_stride
            view_size *= new_shape[view_axis]
            view_axis -= 1
        if view_size != chunk_size:
            return None
        if axis > 0:
            chunk_stride, chunk_size, view_size = strides[axis - 1], 1, 1
    while view_axis >= 0 and new_shape[view_axis] == 1:  # leading new axes of size 1
        new_strides[view_axis] = view_size * chunk_stride
        view_axis -= 1
    return tuple(new_strides) if view_axis == -1 else None


def _row_major(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def flatten(self: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """The dims from ``start_dim`` to ``end_dim`` (both included) merged into one."""
    if self.ndim == 0:
        return self.reshape(1)
    start, end = _axis(start_dim, self.ndim), _axis(end_dim, self.ndim)
    if start > end:
        raise ValueError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
    return self.reshape(*self.shape[:start], -1, *self.shape[end + 1:])


def permute(self: Tensor, *axes: Any) -> Tensor:
    order = tuple(_shape_arg(axes))
    if sorted(_axis(a, self.ndim) for a in order) != list(range(self.ndim)):
        raise ValueError(f"permute({order}) is not a permutation of the {self.ndim} axes "
                         f"of a tensor of shape {self.shape}")
    return ops.Permute.apply(self, axes=tuple(_axis(a, self.ndim) for a in order))


def t(self: Tensor) -> Tensor:
    """PyTorch's ``t()``: a 2-D tensor transposed; a 0-D or 1-D tensor as it is."""
    if self.ndim > 2:
        raise ValueError(f"t() expects a tensor with at most 2 dims, got shape {self.shape}; "
                         "use transpose(dim0, dim1) or permute")
    return self if self.ndim < 2 else transpose(self, 0, 1)


def transpose(self: Tensor, dim0: int = -2, dim1: int = -1) -> Tensor:
    """Swap two dims (the last two by default, as for ``k.transpose()`` in attention)."""
    if self.ndim < 2:
        raise ValueError(f"transpose needs at least 2 dims, got shape {self.shape}")
    order = list(range(self.ndim))
    a, b = _axis(dim0, self.ndim), _axis(dim1, self.ndim)
    order[a], order[b] = order[b], order[a]
    return ops.Permute.apply(self, axes=tuple(order))


def T(self: Tensor) -> Tensor:  # noqa: N802 - numpy's name
    """All axes reversed, as numpy's ``.T``."""
    return ops.Permute.apply(self, axes=tuple(reversed(range(self.ndim))))


def expand(self: Tensor, *shape: Any) -> Tensor:
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


def squeeze(self: Tensor, dim: int | tuple[int, ...] | None = None, *,
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


def unsqueeze(self: Tensor, dim: int | None = None, *, axis: int | None = None) -> Tensor:
    dim = _dim_or_axis(dim, axis, "unsqueeze")
    if dim is None:
        raise TypeError("unsqueeze() needs the dim where the new size-1 dim goes")
    position = _axis(dim, self.ndim + 1)
    new_shape = self.shape[:position] + (1,) + self.shape[position:]
    return ops.Reshape.apply(self, shape=new_shape)


def unbind(self: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    """The slices along ``dim``, that dim removed: ``x.unbind(1)[j]`` is ``x[:, j]``."""
    dim = _axis(dim, self.ndim)
    return tuple(self[(slice(None),) * dim + (i,)] for i in range(self.shape[dim]))


def gather(self: Tensor, dim: int, index: Any) -> Tensor:
    """``out[i][j] = self[index[i][j]][j]`` for ``dim=0`` (and so on along each dim):
    the entries ``index`` picks along ``dim``. ``index`` is an integer tensor with as
    many dims as ``self``; the gradient adds up where an entry is picked twice."""
    dim = _axis(dim, self.ndim)
    picks = index._data if isinstance(index, tensor_module.Tensor) else np.asarray(index)
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


def clone(self: Tensor) -> Tensor:
    """A copy with memory of its own; gradients flow back through it."""
    return ops.Clone.apply(self)


def repeat(self: Tensor, *sizes: Any) -> Tensor:
    """The tensor tiled ``sizes[d]`` times along each dim d, as PyTorch's ``x.repeat`` (numpy's
    ``tile``); more sizes than dims add leading dims. The copies' gradients add up."""
    counts = [validation.integer(size, "repeat size", minimum=0) for size in _shape_arg(sizes)]
    if len(counts) < self.ndim:
        raise ValueError(f"repeat needs at least one size per dim ({self.ndim}), got "
                         f"{len(counts)}")
    shape = (1,) * (len(counts) - self.ndim) + self.shape            # the sizes' dims
    spread = tuple(d for size in shape for d in (1, size))           # (1, n0, 1, n1, ...)
    tiled = tuple(d for count, size in zip(counts, shape, strict=True) for d in (count, size))
    return self.reshape(*spread).expand(*tiled).reshape(
        *(count * size for count, size in zip(counts, shape, strict=True)))


def contiguous(self: Tensor) -> Tensor:
    """The tensor itself when its array is laid out row by row in memory (C order), else a
    copy that is, as PyTorch's ``x.contiguous()``; gradients flow through the copy."""
    return self if self._data.flags.c_contiguous else ops.Clone.apply(self)


def tril(self: Tensor, diagonal: int = 0) -> Tensor:
    """The lower triangle of the last two dims: the entries (i, j) with j - i <= ``diagonal``
    kept, the others 0; the gradient is kept where the value is."""
    return _triangle(self, validation.integer(diagonal, "tril diagonal"), lower=True)


def triu(self: Tensor, diagonal: int = 0) -> Tensor:
    """The upper triangle of the last two dims: the entries (i, j) with j - i >= ``diagonal``
    kept, the others 0, as :func:`tril`."""
    return _triangle(self, validation.integer(diagonal, "triu diagonal"), lower=False)


def _triangle(self: Tensor, diagonal: int, lower: bool) -> Tensor:
    if self.ndim < 2:
        raise ValueError(f"{'tril' if lower else 'triu'} needs at least 2 dims, got shape "
                         f"{self.shape}")
    rows, columns = self.shape[-2:]
    offset = np.arange(columns)[None, :] - np.arange(rows)[:, None]   # j - i, (rows, columns)
    dropped = offset > diagonal if lower else offset < diagonal
    return ops.MaskedFill.apply(self, mask=dropped, value=0)


def getitem(self: Tensor, index: Any) -> Tensor:
    index = ops.normalize_index(index, self.shape)
    out = ops.GetItem.apply(self, index=index)
    if out._version is self._version:  # a view: an in-place change of it changes self
        out._view_of = (weakref.ref(self), index)
    return out


def split(self: Tensor, split_size_or_sections: int | Sequence[int], dim: int = 0, *,
          axis: int | None = None) -> tuple[Tensor, ...]:
    """Cut a tensor along ``dim`` into chunks of ``split_size_or_sections`` (an int: equal
    chunks, the last one shorter if need be; a list: those lengths)."""
    dim = _axis(dim if axis is None else axis, self.ndim)
    length, sizes = self.shape[dim], split_size_or_sections
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
        pieces.append(self[index])
        start += size
    return tuple(pieces)


# Where each function above is spelled (tensorlib.engine.methods.spellings)
declare(reshape, flatten, permute, t, transpose, squeeze, unsqueeze, unbind, gather, clone,
        split, tril, triu)
declare(view, expand, contiguous, repeat, function=False)
