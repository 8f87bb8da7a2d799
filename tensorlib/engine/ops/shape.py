"""Shape and indexing ops: views forward, the inverse rearrangement backward."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from tensorlib.engine import tensor as tensor_module  # ops make Tensors: the one seam
from tensorlib.engine.autograd import Context, unbroadcast
from tensorlib.engine.backend import array_module
from tensorlib.engine.ops.function import Function
from tensorlib.engine.typing import Array

if TYPE_CHECKING:
    pass


class Reshape(Function):
    low_precision = "any"  # moves or picks values: any dtype, views kept

    @staticmethod
    def forward(ctx: Context, a: Array, shape: tuple[int, ...]) -> Array:
        ctx.input_shape = a.shape
        return a.reshape(shape)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        return grad.reshape(ctx.input_shape)


class Permute(Function):
    low_precision = "any"  # moves or picks values: any dtype, views kept

    @staticmethod
    def forward(ctx: Context, a: Array, axes: tuple[int, ...]) -> Array:
        ctx.axes = axes
        return a.transpose(axes)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        return grad.transpose(tuple(np.argsort(ctx.axes)))


class Expand(Function):
    low_precision = "any"  # moves or picks values: any dtype, views kept

    @staticmethod
    def forward(ctx: Context, a: Array, shape: tuple[int, ...]) -> Array:
        ctx.input_shape = a.shape
        return array_module(a).broadcast_to(a, shape)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        return unbroadcast(grad, ctx.input_shape)


def normalize_index(index: Any, shape: tuple[int, ...]) -> Any:
    """Turn Tensors and lists inside an index into arrays, so numpy sees a plain index."""
    def convert(item: Any) -> Any:
        if isinstance(item, tensor_module.Tensor):
            item = item._data
        if isinstance(item, list):
            item = np.asarray(item)
        if hasattr(item, "dtype") and hasattr(item, "ndim") and item.ndim >= 0 \
                and not isinstance(item, np.generic):
            if item.dtype.kind not in "iub":
                raise IndexError(f"index arrays must be integer or boolean, got dtype {item.dtype}")
            if item.ndim == 0 and item.dtype.kind in "iu":
                return int(item)  # one integer picks as a Python int does: a view, as in PyTorch
        return item

    if isinstance(index, tuple):
        return tuple(convert(item) for item in index)
    return convert(index)


def is_advanced_index(index: Any) -> bool:
    items = index if isinstance(index, tuple) else (index,)
    return any(hasattr(item, "ndim") and not isinstance(item, np.generic) for item in items)


class GetItem(Function):
    """``a[index]``: basic or advanced indexing. The backward scatters the gradient back,
    adding (not overwriting) where an advanced index repeats an element."""

    low_precision = "any"  # moves or picks values: any dtype, views kept

    @staticmethod
    def forward(ctx: Context, a: Array, index: Any) -> Array:
        advanced = is_advanced_index(index)
        try:
            out = a[index]
            if not advanced and isinstance(out, np.generic):  # one element: a 0-d view
                out = a[(*index, Ellipsis) if isinstance(index, tuple) else (index, Ellipsis)]
        except IndexError as error:
            raise IndexError(f"index {index!r} is invalid for a tensor of shape {a.shape}: "
                             f"{error}") from None
        ctx.input_shape, ctx.index, ctx.advanced = a.shape, index, advanced
        return out

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        xp = array_module(grad)
        full = xp.zeros(ctx.input_shape, dtype=grad.dtype)
        if ctx.advanced:
            xp.add.at(full, ctx.index, grad)
        else:
            full[ctx.index] = grad
        return full


class Concat(Function):
    low_precision = "any"  # moves or picks values: any dtype, views kept

    @staticmethod
    def forward(ctx: Context, *arrays: Array, axis: int = 0) -> Array:
        ctx.axis = axis
        ctx.sizes = [a.shape[axis] for a in arrays]
        return array_module(arrays[0]).concatenate(arrays, axis=axis)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> tuple[Array | None, ...]:
        pieces, start = [], 0
        for size in ctx.sizes:
            index = (slice(None),) * ctx.axis + (slice(start, start + size),)
            pieces.append(grad[index])
            start += size
        return tuple(pieces)


class Where(Function):
    """``condition ? a : b``; each branch gets the gradient where it was chosen."""

    low_precision = "any"  # moves or picks values: any dtype, views kept

    @staticmethod
    def forward(ctx: Context, a: Array, b: Array, condition: Array) -> Array:
        ctx.condition = condition
        ctx.shapes = (a.shape, b.shape)
        return array_module(a).where(condition, a, b)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> tuple[Array | None, ...]:
        xp = array_module(grad)
        shape_a, shape_b = ctx.shapes
        grad_a = grad_b = None
        if ctx.needs_input_grad[0]:
            grad_a = unbroadcast(xp.where(ctx.condition, grad, 0), shape_a)
        if ctx.needs_input_grad[1]:
            grad_b = unbroadcast(xp.where(ctx.condition, 0, grad), shape_b)
        return grad_a, grad_b


class MaskedFill(Function):
    """Entries where ``mask`` is True become ``value``; they pass no gradient back."""

    low_precision = "any"  # moves or picks values: any dtype, views kept

    op_name = "masked_fill"

    @staticmethod
    def forward(ctx: Context, a: Array, mask: Array, value: float) -> Array:
        xp = array_module(a)
        if xp.broadcast_shapes(mask.shape, a.shape) != a.shape:
            raise ValueError(f"masked_fill: mask of shape {mask.shape} would enlarge the "
                             f"tensor of shape {a.shape}")
        ctx.mask = mask
        return xp.where(mask, xp.asarray(value, dtype=a.dtype), a)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        return array_module(grad).where(ctx.mask, 0, grad)


class IndexPut(Function):
    """``a`` with ``a[index] = value`` (``value`` broadcast to the indexed entries): what
    ``x[index] = value`` computes. The overwritten entries pass no gradient to ``a``;
    ``value`` gets the gradient of every entry it was written to (summed over broadcasting,
    and over each repeat of a repeated advanced index, as in PyTorch)."""

    low_precision = "any"  # moves or picks values: any dtype, views kept

    op_name = "index_put"

    @staticmethod
    def forward(ctx: Context, a: Array, value: Array, index: Any) -> Array:
        out = a.copy()
        try:
            out[index] = value
        except IndexError as error:
            raise IndexError(f"index {index!r} is invalid for a tensor of shape {a.shape}: "
                             f"{error}") from None
        except ValueError:
            raise ValueError(f"cannot assign a value of shape {value.shape} to the entries "
                             f"{index!r} of a tensor of shape {a.shape} (shape "
                             f"{out[index].shape})") from None
        ctx.index, ctx.value_shape = index, value.shape
        return out

    @staticmethod
    def backward(ctx: Context, grad: Array) -> tuple[Array | None, ...]:
        grad_a = grad_value = None
        if ctx.needs_input_grad[0]:
            grad_a = grad.copy()
            grad_a[ctx.index] = 0
        if ctx.needs_input_grad[1]:
            grad_value = _unbroadcast_to(grad[ctx.index], ctx.value_shape)
        return grad_a, grad_value


def _unbroadcast_to(grad: Array, shape: tuple[int, ...]) -> Array:
    """``unbroadcast``, also where the value had more leading size-1 dims than the entries it
    was written to (``x[0] = v`` with ``v`` of shape (1, 3) into a row of 3)."""
    extra = len(shape) - grad.ndim
    if extra > 0:
        return unbroadcast(grad.reshape((1,) * extra + grad.shape), shape)
    return unbroadcast(grad, shape)


class Gather(Function):
    """``out[i][j] = a[index[i][j]][j]`` along ``dim`` (numpy's ``take_along_axis``); the
    backward adds each entry's gradient to the entry it was picked from."""

    low_precision = "any"  # moves or picks values: any dtype, views kept

    @staticmethod
    def forward(ctx: Context, a: Array, dim: int, index: Any) -> Array:
        xp = array_module(a)
        # index may be smaller than a off dim: gather from the matching corner of a
        corner = tuple(slice(0, n) if d != dim else slice(None) for d, n in
                       enumerate(index.shape))
        ctx.input_shape, ctx.dim, ctx.index, ctx.corner = a.shape, dim, index, corner
        return xp.take_along_axis(a[corner], index, axis=dim)

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        xp = array_module(grad)
        full = xp.zeros(ctx.input_shape, dtype=grad.dtype)
        grid = list(xp.indices(ctx.index.shape, sparse=True))
        grid[ctx.dim] = ctx.index
        xp.add.at(full, tuple(grid), grad)
        return full


class Clone(Function):
    """A copy in memory of its own; the gradient passes through unchanged."""

    low_precision = "any"  # moves or picks values: any dtype, views kept

    @staticmethod
    def forward(ctx: Context, a: Array) -> Array:
        return a.copy()

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array:
        return grad
