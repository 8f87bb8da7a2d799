"""The checks of notebook 03 (tensors and strides): the views ``transpose``, ``slice_`` and
``broadcast_to`` of the notebook's ``StridedArray``, and the exercises.

A view is checked against numpy's view of the same buffer and against tensorlib's (the
``StridedArray`` handed to numpy's own constructor, ``np.ndarray(shape, dtype, buffer, offset,
strides)``, wrapped in a Tensor without a copy, viewed by tensorlib and read back): first that
it is a ``StridedArray`` over the same buffer, then its shape, its strides, its offset, and
only then every element it reads. The usual slips of each piece (the strides not permuted
with the shape, a length counted with ``//``, an offset that does not move, a size-1 axis
that keeps its stride...) are computed as the layouts they give, so that a report names the
one the learner's view has.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

import tensorlib as tl
from tensorlib.course.checks.registry import HandOn, exercise_check, piece_check
from tensorlib.course.exercises import Checker

__all__ = ["check_strided_transpose", "check_strided_slice", "check_strided_broadcast_to",
           "check_diagonal", "check_split_axis", "check_sliding_windows",
           "check_version_predictions"]

Layout = tuple[tuple[int, ...], tuple[int, ...], int]  # shape, strides, offset (in elements)
_FIELDS = ("shape", "strides (in elements)", "offset (in elements)")


# ------------------------------------------------------------------------------- the views
def _row_major(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major strides of ``shape``, in elements."""
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return tuple(reversed(strides))


def _numpy_layout(view: np.ndarray, base: np.ndarray) -> Layout:
    """(shape, strides, offset) of the numpy view ``view`` of the 1-D array ``base``."""
    itemsize = view.itemsize
    offset = (view.__array_interface__["data"][0]
              - base.__array_interface__["data"][0]) // itemsize
    return (tuple(view.shape), tuple(s // itemsize for s in view.strides), int(offset))


def _strided_view(StridedArray: type, view: np.ndarray, base: np.ndarray) -> Any:  # noqa: N803
    """The numpy view ``view`` of ``base`` as a ``StridedArray`` over ``base``."""
    shape, strides, offset = _numpy_layout(view, base)
    return StridedArray(base, shape, strides, offset)


def _as_numpy(view: Any) -> np.ndarray:
    """A ``StridedArray`` as a numpy array over the same buffer (no copy): numpy's own
    constructor takes exactly its four things, and refuses one that reads past the buffer."""
    itemsize = view.buffer.itemsize
    return np.ndarray(view.shape, view.buffer.dtype, buffer=view.buffer,
                      offset=view.offset * itemsize, strides=[s * itemsize for s in view.strides])


def _tensorlib_view(StridedArray: type, view: Any,  # noqa: N803
                    make: Callable[[tl.Tensor], tl.Tensor]) -> Any:
    """``make`` (a tensorlib view op) applied to ``view`` wrapped in a Tensor without a copy,
    read back as a ``StridedArray`` over the same buffer."""
    return _strided_view(StridedArray, make(tl.Tensor(_as_numpy(view))).numpy(), view.buffer)


def _layout(view: Any) -> Layout:
    return tuple(view.shape), tuple(view.strides), view.offset


def _whole(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _as_values(mistakes: Mapping[str, Any]) -> dict[str, Any]:
    """``mistakes`` for ``checker.equal`` of a shape or strides, each tuple as a list: a tuple
    in ``mistakes=`` is taken for a shape, which only ``checker.shape`` compares."""
    return {said: list(value) if isinstance(value, tuple) else value
            for said, value in mistakes.items()}


def _is_view(checker: Checker, received: Any, StridedArray: type) -> None:  # noqa: N803
    checker.true(isinstance(received, StridedArray),
                 f"expected a StridedArray, received {type(received).__name__}",
                 "nothing returned: end with `return StridedArray(...)`" if received is None
                 else "not a StridedArray: return StridedArray(buffer, shape, strides, offset)")


def _check_view(checker: Checker, StridedArray: type, received: Any,  # noqa: N803
                theirs: np.ndarray, package: Any, slips: dict[str, Layout]) -> None:
    """In a case: ``received`` must be a ``StridedArray`` over ``package``'s buffer with the
    layout of the numpy view ``theirs`` (shape, then strides, then offset; ``slips``: what
    the usual slips give, the ones whose whole layout ``received`` has named first), equal
    to ``package`` (tensorlib's), and read every element ``theirs`` holds."""
    _is_view(checker, received, StridedArray)
    checker.true(received.buffer is package.buffer,
                 "the view must share the buffer (self.buffer), not copy it",
                 "a new buffer: a view keeps self.buffer and changes only the bookkeeping")
    expected = _numpy_layout(theirs, package.buffer)
    got = _layout(received)
    ordered = sorted(slips.items(), key=lambda item: item[1] != got)  # the whole match first
    for index, what in enumerate(_FIELDS):
        if index == 1:  # the shape is right: the steps must be whole numbers of elements
            checker.true(all(map(_whole, (*got[1], got[2]))),
                         f"strides {got[1]} and offset {got[2]}: not all whole numbers",
                         "a stride or the offset is a float: `/` divides into floats (multiply, "
                         "or use //)")
        checker.equal(got[index], expected[index], what,
                      _as_values({said: layout[index] for said, layout in ordered}))
    checker.equal(got, _layout(package), "(shape, strides, offset) as tensorlib makes it")
    checker.equal(received.tolist_flat(), theirs.ravel().tolist(), "every element read")


def _without_right(slips: dict[str, Layout | None], right: Layout) -> dict[str, Layout]:
    """The slips that give a layout other than the right one (for this case)."""
    return {said: layout for said, layout in slips.items()
            if layout is not None and layout != right}


def _sources() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The buffer of 24 float32 numbers the views are made of, its first 12 as the (3, 4)
    matrix a, all 24 as the (2, 3, 4) array x."""
    buffer = np.arange(24, dtype=np.float32)
    return buffer, buffer[:12].reshape(3, 4), buffer.reshape(2, 3, 4)


# ----------------------------------------------------------------------------- transpose
def _transpose_slips(layout: Layout, order: tuple[int, ...]) -> dict[str, Layout | None]:
    shape, strides, offset = layout
    axes = order or tuple(reversed(range(len(shape))))
    inverse = tuple(int(a) for a in np.argsort(axes))
    new_shape = tuple(shape[a] for a in axes)
    new_strides = tuple(strides[a] for a in axes)
    swapped = (*range(len(shape) - 2), len(shape) - 1, len(shape) - 2)
    return {
        "fresh row-major strides for the new shape: a transpose keeps each axis's own "
        "stride, permuted with it": (new_shape, _row_major(new_shape), offset),
        "the strides not permuted: only the shape follows `axes` (permute both by the same "
        "axes)": (new_shape, strides, offset),
        "the shape not permuted: only the strides follow `axes`": (shape, new_strides, offset),
        "the inverse permutation: new axis k must be old axis axes[k] (self.shape[axes[k]]), "
        "not the other way round": (tuple(shape[a] for a in inverse),
                                    tuple(strides[a] for a in inverse), offset),
        "`axes` ignored: every axis reversed whatever it says": (
            shape[::-1], strides[::-1], offset) if order else None,
        "no axes given and nothing reversed: without `axes`, every axis is reversed": (
            shape, strides, offset) if not order else None,
        "no axes given and none taken: without `axes`, every axis is reversed (axes = axes "
        "or ...)": ((), (), offset) if not order else None,
        "only the last two axes swapped: without `axes`, every axis is reversed": (
            tuple(shape[a] for a in swapped), tuple(strides[a] for a in swapped), offset)
        if not order and len(shape) > 2 else None,
        "the offset set to 0: a view keeps self.offset": (new_shape, new_strides, 0),
    }


def _package_transpose(StridedArray: type) -> Callable[..., Any]:  # noqa: N803
    def transpose(self: Any, *axes: int) -> Any:
        return _tensorlib_view(StridedArray, self,
                               lambda t: t.permute(*axes) if axes else t.T)
    return transpose


_TRANSPOSES = [  # what, "a" (the (3, 4) matrix) or "x" (the (2, 3, 4) array), a view, axes
    ("the (3, 4) matrix a, no axes given: both reversed", "a", lambda v: v, ()),
    ("the (3, 4) matrix a, axes (1, 0)", "a", lambda v: v, (1, 0)),
    ("the (2, 3, 4) array x, no axes given: all three reversed", "x", lambda v: v, ()),
    ("x, axes (1, 2, 0)", "x", lambda v: v, (1, 2, 0)),
    ("x, axes (0, 2, 1): the first axis stays", "x", lambda v: v, (0, 2, 1)),
    ("x[:, 1:, ::-1] (offset 7, a negative stride), axes (2, 0, 1)", "x",
     lambda v: v[:, 1:, ::-1], (2, 0, 1)),
]


@piece_check("transpose", yours="transpose",
             package_name="tensorlib's permute, read back as a StridedArray")
def check_strided_transpose(checker: Checker, transpose: Any,
                            StridedArray: type) -> HandOn:  # noqa: N803
    """``transpose(view, *axes)`` against ``np.transpose`` and tensorlib's ``permute`` (or
    ``.T``) of six views, among them one with an offset and a negative stride."""
    package = _package_transpose(StridedArray)
    buffer, matrix, cube = _sources()
    for what, source, make, order in _TRANSPOSES:
        numpy_view = make(matrix if source == "a" else cube)
        with checker.case(what, hint="new axis k is old axis axes[k]: self.shape[axes[k]] and "
                          "self.strides[axes[k]]; keep self.buffer and self.offset"):
            view = _strided_view(StridedArray, numpy_view, buffer)
            theirs = np.transpose(numpy_view, order or None)
            slips = _transpose_slips(_layout(view), order)
            received = transpose(view, *order)
            _check_view(checker, StridedArray, received, theirs, package(view, *order),
                        _without_right(slips, _numpy_layout(theirs, buffer)))
    return HandOn(transpose, package)


# --------------------------------------------------------------------------------- slice_
def _slice_slips(layout: Layout, axis: int, start: int | None, stop: int | None,
                 step: int) -> dict[str, Layout | None]:
    shape, strides, offset = layout
    first, last, stride_step = slice(start, stop, step).indices(shape[axis])
    size, old = len(range(first, last, stride_step)), strides[axis]

    def made(length: int, stride: int, moved: int, guarded: bool = True) -> Layout:
        """The layout with that length, stride and offset; an empty one (``guarded``: the
        slip is elsewhere) keeps the stride and the offset."""
        if length == 0 and guarded:
            stride, moved = old, offset
        new_shape, new_strides = list(shape), list(strides)
        new_shape[axis], new_strides[axis] = length, stride
        return tuple(new_shape), tuple(new_strides), moved

    given_start = 0 if start is None else start
    given_stop = shape[axis] if stop is None else stop
    given = len(range(given_start, given_stop, step))
    floored = max(0, (last - first) // stride_step)
    return {
        "the length counted as (stop - start) // step: count it with "
        "len(range(start, stop, step))": made(floored, old * stride_step, offset + first * old),
        "start and stop used as given: slice(start, stop, step).indices(size) makes None, a "
        "negative index and a stop past the end plain indices": made(
            max(0, given), old * step, offset + given_start * old) if given else None,
        "the stride not multiplied by step": made(size, old, offset + first * old),
        "the offset not moved: it moves by start times the axis's stride": made(
            size, old * stride_step, offset),
        "the offset moved by start elements: it moves by start times the axis's stride":
            made(size, old * stride_step, offset + first),
        "the offset moved by start times the new stride (stride * step): use the axis's old "
        "stride": made(size, old * stride_step, offset + first * old * stride_step),
        "an empty slice moved the offset or scaled the stride: numpy keeps both as they were":
            made(0, old * stride_step, offset + first * old, guarded=False) if size == 0
            else None,
    }


def _package_slice(StridedArray: type) -> Callable[..., Any]:  # noqa: N803
    def slice_(self: Any, axis: int, start: int | None, stop: int | None,
               step: int = 1) -> Any:
        index = (slice(None),) * axis + (slice(start, stop, step),)
        return _tensorlib_view(StridedArray, self, lambda t: t[index])
    return slice_


_SLICES: list[tuple[str, str, Callable[[np.ndarray], np.ndarray], int,
                    tuple[int | None, int | None, int]]] = [
    ("a[:, 1:] on the (3, 4) matrix a: a later start along axis 1", "a", lambda v: v, 1,
     (1, None, 1)),
    ("a[1:3]: a later start along axis 0 skips whole rows", "a", lambda v: v, 0, (1, 3, 1)),
    ("a[2:3]: one row, at a later start", "a", lambda v: v, 0, (2, 3, 1)),
    ("a[:, 1:2:2]: one column, at a later start and with a step", "a", lambda v: v, 1,
     (1, 2, 2)),
    ("a[:, -1:]: one column, counted from the end", "a", lambda v: v, 1, (-1, None, 1)),
    ("a[:, 0:4:3]: a step that does not divide the length", "a", lambda v: v, 1, (0, 4, 3)),
    ("a[:, 1:10:2]: a stop past the end is clipped", "a", lambda v: v, 1, (1, 10, 2)),
    ("a[:, -3:-1]: a negative start and stop count from the end", "a", lambda v: v, 1,
     (-3, -1, 1)),
    ("a[::-1]: a negative step starts at the end", "a", lambda v: v, 0, (None, None, -1)),
    ("a[::-2]: a step of -2", "a", lambda v: v, 0, (None, None, -2)),
    ("a[:, 3:1]: an empty slice", "a", lambda v: v, 1, (3, 1, 1)),
    ("a[1:, ::-1][:, 1:3:-1]: an empty slice with a negative step, of a view with an "
     "offset", "a", lambda v: v[1:, ::-1], 1, (1, 3, -1)),
    ("x[..., 1::2] on the (2, 3, 4) array x: the last axis", "x", lambda v: v, 2,
     (1, None, 2)),
    ("x[:, ::-1][:, 1:]: a view with an offset and a negative stride", "x",
     lambda v: v[:, ::-1], 1, (1, None, 1)),
    ("x[:, ::-1][:, ::-1]: reversed twice", "x", lambda v: v[:, ::-1], 1, (None, None, -1)),
]


@piece_check("slice_", yours="slice_",
             package_name="tensorlib's indexing, read back as a StridedArray")
def check_strided_slice(checker: Checker, slice_: Any, StridedArray: type) -> HandOn:  # noqa: N803
    """``slice_(view, axis, start, stop, step)`` against numpy's and tensorlib's indexing of
    15 views: later starts, steps that do not divide, negative and clipped bounds, negative
    steps, empty slices, views with an offset and a negative stride."""
    package = _package_slice(StridedArray)
    buffer, matrix, cube = _sources()
    for what, source, make, axis, (start, stop, step) in _SLICES:
        numpy_view = make(matrix if source == "a" else cube)
        with checker.case(what, hint="start, stop, step = slice(start, stop, step).indices("
                          "size); size len(range(start, stop, step)); stride times step; "
                          "offset plus start times the old stride; an empty slice keeps "
                          "offset and stride"):
            view = _strided_view(StridedArray, numpy_view, buffer)
            theirs = numpy_view[(slice(None),) * axis + (slice(start, stop, step),)]
            slips = _slice_slips(_layout(view), axis, start, stop, step)
            received = slice_(view, axis, start, stop, step)
            _check_view(checker, StridedArray, received, theirs,
                        package(view, axis, start, stop, step),
                        _without_right(slips, _numpy_layout(theirs, buffer)))
    return HandOn(slice_, package)


# --------------------------------------------------------------------------- broadcast_to
def _broadcast_strides(shape: tuple[int, ...], strides: tuple[int, ...],
                       new: tuple[int, ...], keep: Callable[[int, int], bool],
                       in_front: bool = True) -> tuple[int, ...]:
    """The strides of ``shape`` broadcast to ``new``: a size-1 or new axis gets 0 unless
    ``keep(old size, new size)``; ``in_front=False`` lines the shapes up from the left."""
    extra = len(new) - len(shape)
    if extra < 0:
        raise ValueError("fewer axes")
    olds = (1,) * extra + shape if in_front else shape + (1,) * extra
    steps = (0,) * extra + strides if in_front else strides + (0,) * extra
    result = []
    for old, size, stride in zip(olds, new, steps, strict=True):
        if old == 1:
            result.append(stride if keep(old, size) else 0)
        elif old == size:
            result.append(stride)
        else:
            raise ValueError("does not broadcast")
    return tuple(result)


def _broadcast_slips(layout: Layout, new: tuple[int, ...]) -> dict[str, Layout | None]:
    shape, strides, offset = layout

    def made(keep: Callable[[int, int], bool], in_front: bool = True) -> Layout | None:
        try:
            return new, _broadcast_strides(shape, strides, new, keep, in_front), offset
        except ValueError:
            return None

    right = made(lambda old, size: False)
    return {
        "the size-1 axis that stays size 1 kept its stride: numpy gives every size-1 axis "
        "stride 0": made(lambda old, size: size == 1),
        "a size-1 axis kept its stride: a stretched axis gets stride 0, so that every index "
        "reads the same element": made(lambda old, size: True),
        "the shapes lined up from the left: they line up from the right, so new axes go in "
        "front": made(lambda old, size: False, in_front=False),
        "fresh row-major strides for the new shape (a copy's): a broadcast repeats with "
        "stride 0": (new, _row_major(new), offset),
        "the offset set to 0: a view keeps self.offset": (new, right[1], 0) if right else None,
    }


def _package_broadcast_to(StridedArray: type) -> Callable[..., Any]:  # noqa: N803
    def broadcast_to(self: Any, shape: tuple[int, ...]) -> Any:
        return _tensorlib_view(StridedArray, self, lambda t: t.expand(*shape))
    return broadcast_to


_BROADCASTS: list[tuple[str, Callable[[np.ndarray], np.ndarray], tuple[int, ...]]] = [
    ("a (3, 1) column to (3, 4)", lambda b: b[:3].reshape(3, 1), (3, 4)),
    ("a (4,) row to (2, 3, 4): two new axes in front", lambda b: b[:4], (2, 3, 4)),
    ("a (3,) row to (3, 3): the new axis goes in front", lambda b: b[:3], (3, 3)),
    ("a[1:2, 1:], a (1, 3) row at offset 5, to (5, 3)",
     lambda b: b[:12].reshape(3, 4)[1:2, 1:], (5, 3)),
    ("x[:, 1:2, ::-1], (2, 1, 4) at offset 7 with a negative stride, to (5, 2, 3, 4)",
     lambda b: b.reshape(2, 3, 4)[:, 1:2, ::-1], (5, 2, 3, 4)),
    ("a[:, ::-1] to its own shape (3, 4): nothing changes",
     lambda b: b[:12].reshape(3, 4)[:, ::-1], (3, 4)),
    ("a (3, 1) column to (2, 3, 1): the size-1 axis that stays size 1 gets stride 0 too",
     lambda b: b[:3].reshape(3, 1), (2, 3, 1)),
]
_REFUSED_WRONGLY = ("a shape that broadcasts refused: line the shapes up from the right (new "
                    "axes in front); a size-1 axis may become any size")
_REFUSED: list[tuple[str, Callable[[np.ndarray], np.ndarray], tuple[int, ...], str]] = [
    ("a[:2], (2, 4), to (5, 4)", lambda b: b[:12].reshape(3, 4)[:2], (5, 4),
     "a size that is neither 1 nor the new size (2 against 5) not refused: raise ValueError"),
    ("a (4,) row to (4, 3), as shapes line up from the right", lambda b: b[:4], (4, 3),
     "the shapes lined up from the left: from the right, 4 meets 3, which must raise "
     "ValueError"),
    ("a[:1], (1, 4), to (4,), which has fewer axes", lambda b: b[:12].reshape(3, 4)[:1], (4,),
     "a new shape with fewer axes than the view not refused: raise ValueError"),
]


@piece_check("broadcast_to", yours="broadcast_to",
             package_name="tensorlib's expand, read back as a StridedArray")
def check_strided_broadcast_to(checker: Checker, broadcast_to: Any,
                               StridedArray: type) -> HandOn:  # noqa: N803
    """``broadcast_to(view, shape)`` against ``np.broadcast_to`` and tensorlib's ``expand`` of
    seven views (new axes in front, size-1 axes, an offset, a negative stride), then the three
    kinds of shape it must refuse with ValueError."""
    package = _package_broadcast_to(StridedArray)
    buffer = np.arange(24, dtype=np.float32)
    for what, make, shape in _BROADCASTS:
        with checker.case(what, hint="line the shapes up from the right; new and size-1 axes "
                          "get stride 0, equal sizes keep their stride; keep self.buffer and "
                          "the offset"):
            numpy_view = make(buffer)
            view = _strided_view(StridedArray, numpy_view, buffer)
            theirs = np.broadcast_to(numpy_view, shape)
            slips = _broadcast_slips(_layout(view), shape)
            with checker.named_errors({"": _REFUSED_WRONGLY}, (ValueError,)):  # any ValueError
                received = broadcast_to(view, shape)
            _check_view(checker, StridedArray, received, theirs, package(view, shape),
                        _without_right(slips, _numpy_layout(theirs, buffer)))
    for what, make, shape, slip in _REFUSED:
        with checker.case(f"refused: {what}", hint="raise ValueError when a size is neither 1 "
                          "nor the new size, and when the new shape has fewer axes"):
            view = _strided_view(StridedArray, make(buffer), buffer)
            try:
                received = broadcast_to(view, shape)
            except ValueError:
                continue
            checker.true(False, f"broadcast_to(view of shape {view.shape}, {shape}) returned "
                         f"{received!r}, where np.broadcast_to raises ValueError", slip)
    return HandOn(broadcast_to, package)


# ----------------------------------------------------------------------------- exercises
def _merged(slips: dict[str, Any], why: str) -> dict[str, Any]:
    """``slips`` (a few words -> what that slip gives) as ``mistakes=`` (see
    :func:`_as_values`): the slips that give the same value in this case are named together,
    and each name ends with ``why``."""
    groups: dict[Any, list[str]] = {}
    for said, value in slips.items():
        groups.setdefault(value, []).append(said)
    return _as_values({f"{', or '.join(names)}: {why}": value
                       for value, names in groups.items()})


_DIAGONALS = [("a[:, :3]", lambda a: a[:, :3]), ("a[:, 1:].T", lambda a: a[:, 1:].T),
              ("a[:, ::-1][:, 1:]", lambda a: a[:, ::-1][:, 1:])]


@exercise_check("Exercise 1 (diagonal)", yours="diagonal")
def check_diagonal(checker: Checker, diagonal: Any, StridedArray: type) -> None:  # noqa: N803
    """``diagonal(view)`` against numpy's ``np.diagonal`` (a view too) of three square views:
    a slice, a transpose and a reversed slice."""
    storage = np.arange(12, dtype=np.float32)
    for what, make in _DIAGONALS:
        with checker.case(f"the diagonal of {what}", hint="one step down and one step right: "
                          "the two strides add up"):
            square = make(storage.reshape(3, 4))
            view = _strided_view(StridedArray, square, storage)
            theirs = np.diagonal(square)
            shape, strides, offset = _numpy_layout(theirs, storage)
            down, right = view.strides
            got = diagonal(view)
            _is_view(checker, got, StridedArray)
            checker.equal(tuple(got.shape), shape, "shape", _as_values({
                "the whole matrix's shape: a diagonal has one axis of n elements":
                    tuple(view.shape)}))
            checker.equal(tuple(got.strides), strides, "strides (in elements)", _merged({
                "one row down only": (down,), "one column right only": (right,),
                "the two strides multiplied": (down * right,)},
                "the diagonal steps one row down and one column right, so the two strides "
                "add up"))
            checker.equal(got.offset, offset, "offset",
                          {"the offset set to 0: a view keeps self.offset": 0})
            checker.equal(got.tolist_flat(), theirs.tolist(), "elements")


_SPLITS = [("a.T, axis 0 into (2, 2)", lambda a: a.T, 0, (2, 2)),
           ("a[:, ::-1], axis 1 into (2, 2)", lambda a: a[:, ::-1], 1, (2, 2)),
           ("a[1:], axis 1 into (4, 1)", lambda a: a[1:], 1, (4, 1))]


@exercise_check("Exercise 2 (split_axis)", yours="split_axis")
def check_split_axis(checker: Checker, split_axis: Any, StridedArray: type) -> None:  # noqa: N803
    """``split_axis(view, axis, sizes)`` against numpy's reshape of three views it makes
    without a copy, then a split it must refuse with ValueError."""
    storage = np.arange(12, dtype=np.float32)
    for what, make, axis, sizes in _SPLITS:
        with checker.case(what, hint="the new inner axis keeps the old stride; the outer one "
                          "steps over n of them"):
            source = make(storage.reshape(3, 4))
            view = _strided_view(StridedArray, source, storage)
            theirs = source.reshape(source.shape[:axis] + sizes + source.shape[axis + 1:])
            assert np.shares_memory(theirs, storage)  # numpy made a view, not a copy
            shape, strides, offset = _numpy_layout(theirs, storage)
            (m, n), stride = sizes, view.strides[axis]

            def split(outer: int, inner: int, axis: int = axis,
                      old: tuple[int, ...] = tuple(view.strides)) -> tuple[int, ...]:
                return old[:axis] + (outer, inner) + old[axis + 1:]

            got = split_axis(view, axis, sizes)
            _is_view(checker, got, StridedArray)
            checker.equal(tuple(got.shape), shape, "shape")
            checker.equal(tuple(got.strides), strides, "strides (in elements)", _as_values({
                "the two strides swapped: the inner axis keeps the old stride s, the outer "
                "steps over n of them (n * s)": split(stride, n * stride),
                "the outer stride m * s: it steps over the n elements of the inner axis, "
                "n * s": split(m * stride, stride),
                "fresh row-major strides: splitting a view keeps the axis's own stride s":
                    split(n, 1)}))
            checker.equal(got.offset, offset, "offset",
                          {"the offset set to 0: a view keeps self.offset": 0})
            checker.equal(got.tolist_flat(), theirs.ravel().tolist(), "elements")
    with checker.case("splitting an axis of size 4 into (3, 2) is refused"):
        matrix = _strided_view(StridedArray, storage.reshape(3, 4), storage)
        try:
            split_axis(matrix, 1, (3, 2))
        except ValueError:
            return
        checker.true(False, "split_axis(1, (3, 2)) on shape (3, 4) should raise ValueError",
                     "sizes whose product is not the axis's size not refused: raise "
                     "ValueError when m * n != self.shape[axis]")


@exercise_check("Exercise 3 (sliding_windows)", yours="sliding_windows")
def check_sliding_windows(checker: Checker, sliding_windows: Any) -> None:
    """``sliding_windows(buffer, length)`` against numpy's ``as_strided`` windows of 10
    float32 numbers, for windows of 3, 1 and 10 (one window)."""
    signal = np.arange(10, dtype=np.float32)
    for length in (3, 1, 10):
        with checker.case(f"windows of length {length} over 10 elements",
                          hint="window i starts at element i; inside a window the next "
                               "element is the next one in the buffer"):
            count = len(signal) - length + 1
            theirs = np.lib.stride_tricks.as_strided(signal, shape=(count, length),
                                                     strides=(4, 4))
            windows = sliding_windows(signal, length)
            checker.equal(tuple(windows.shape), theirs.shape, "shape", _as_values({
                "one window short: there are len(buffer) - length + 1 windows":
                    (count - 1, length),
                "one window too many: there are len(buffer) - length + 1 windows":
                    (count + 1, length),
                "the axes the other way round: (windows, length)": (length, count),
                "len(buffer) // length windows, side by side: windows overlap, one starts "
                "at each element": (len(signal) // length, length)}))
            checker.equal(tuple(windows.strides), (1, 1), "strides (in elements)", _as_values({
                "windows side by side (stride length): the next window starts one element "
                "later, stride 1": (length, 1),
                "strides in bytes: ours count elements": (4, 4)}))
            checker.equal(windows.tolist_flat(), theirs.ravel().tolist(), "elements")


def _backward_succeeds(build: Callable[[tl.Tensor], tl.Tensor]) -> bool:
    """Whether ``build(x).backward()`` runs after x changed in place (under no_grad)."""
    x = tl.tensor([0.5, -1.0], requires_grad=True)
    z = build(x)
    with tl.no_grad():
        x.add_(1.0)
    try:
        z.backward()
    except RuntimeError:
        return False
    return True


_EXPERIMENTS: dict[str, tuple[Callable[[tl.Tensor], tl.Tensor], str]] = {
    "a": (lambda x: x.tanh().sum(), "tanh saves its output, not x: a change of x after "
          "the forward does not reach what its backward reads"),
    "b": (lambda x: (x.sigmoid() * x).sum(), "`*` saves both of its inputs, and one of "
          "them is x itself: its version changed, so the backward refuses"),
}


@exercise_check("Exercise 4 (predictions)", yours="predictions")
def check_version_predictions(checker: Checker, predictions: Any) -> None:
    """``predictions()`` against what the backward does in cases (a) and (b), run here."""
    for case, (build, why) in _EXPERIMENTS.items():
        with checker.case(f"case ({case})", hint="which arrays did the ops save, and was one "
                          "of them the tensor that changed?"):
            truth = _backward_succeeds(build)
            checker.equal(predictions()[case], truth, "backward succeeds", {why: not truth})
