"""How a check says what differs between what the learner's code gave and what was expected,
and which usual slip would give it.

:func:`difference` summarises two arrays in a few lines (where they first differ, a few
entries there, the largest difference, where a nan came). :func:`likely_mistake` runs the
detectors of the usual slips on the same two values and names the first that fires:

- a sign (every entry the opposite), a constant factor, a transpose (the last two axes
  swapped, or any other order of the axes);
- a constant offset (a bias or a constant term missing or added twice), or an offset that
  depends on one axis only (a bias per channel or per feature);
- a length off by one (one axis one entry short or long), the right numbers in another shape;
- a result reversed along an axis (a flipped filter, a loop run backwards), shifted by one
  position along an axis (an index off by one), or all zeros (nothing added).

:func:`likely_error` does the same for an exception the learner's code raised (an index past
the end, shapes that do not broadcast, None where an array was expected). A check names the
classic mistakes of one piece itself (``mistakes=``); these detectors are the ones that hold
for any piece.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

import numpy as np

from tensorlib.engine.tensor import Tensor
from tensorlib.engine.validation import is_floating

__all__ = ["as_array", "grad_array", "shown", "difference", "likely_mistake", "likely_error",
           "named_mistake",
           "clipped"]


def as_array(value: Any) -> np.ndarray:
    """A Tensor's array, or ``value`` as an array (an ndarray's ``.data`` is its raw buffer)."""
    return np.asarray(value.numpy() if isinstance(value, Tensor) else value)


def grad_array(leaf: Tensor) -> np.ndarray:
    """The gradient a backward left on ``leaf``, as an array (a check's own backward through
    tensorlib, so it is there)."""
    assert leaf.grad is not None, "tensorlib's backward left no gradient"
    return leaf.grad.numpy()


def clipped(text: str, width: int = 160) -> str:
    """``text`` on one line, cut to ``width`` characters."""
    text = " ".join(text.split())
    return text if len(text) <= width else text[:width - 3] + "..."


def shown(value: Any) -> str:
    """A short, deterministic rendering of a value for a report."""
    if isinstance(value, (np.ndarray, Tensor)):
        array = as_array(value)
        with np.printoptions(precision=4, suppress=True, threshold=12, edgeitems=2):
            text = np.array2string(array, separator=", ")
        return f"array of shape {array.shape}: {clipped(text, 100)}"
    return clipped(repr(value), 120)


def _number(value: Any) -> str:
    return f"{value:.6g}" if isinstance(value, (float, np.floating)) else str(value)


def difference(what: str, received: Any, expected: Any, rtol: float, atol: float) -> str:
    """What differs between two arrays, in at most three lines: the shapes when they differ;
    else how many entries differ and the first, a few entries there, and the largest
    difference (or where a nan came)."""
    received, expected = as_array(received), as_array(expected)
    if received.shape != expected.shape:
        return f"{what}: expected shape {expected.shape}, received shape {received.shape}"
    originals = expected, received
    if received.dtype.kind not in "biuf" or expected.dtype.kind not in "biuf":
        wrong = received != expected
    else:
        received, expected = received.astype(np.float64), expected.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            wrong = ~np.isclose(received, expected, rtol=rtol, atol=atol)
    if received.ndim == 0:
        return f"{what}: expected {_number(expected[()])}, received {_number(received[()])}"
    first = tuple(int(i) for i in np.argwhere(wrong)[0])
    lines = [f"{what} (shape {expected.shape}): {int(wrong.sum())} of {wrong.size} entries "
             f"differ; the first at {list(first)}: expected {_number(expected[first])}, "
             f"received {_number(received[first])}"]
    if expected.size > 1:  # a few entries along the last axis, where the first difference is
        row, start = first[:-1], max(0, min(first[-1] - 2, expected.shape[-1] - 6))
        with np.printoptions(precision=4, suppress=True):
            entries = [np.array2string(array[row][start:start + 6], separator=", ")
                       for array in originals]
        lines.append(f"entries {_entries(row, start, expected.shape[-1])}: expected "
                     f"{entries[0]}, received {entries[1]}")
    if is_floating(received.dtype):
        gap = np.where(wrong, np.abs(received - expected), 0.0)
        nans = np.isnan(received) & ~np.isnan(expected)
        if nans.any():
            where = tuple(int(i) for i in np.argwhere(nans)[0])
            count = int(nans.sum())
            lines.append(f"nan received at {list(where)} ({count} "
                         f"{'entry' if count == 1 else 'entries'}): a row of -inf before a "
                         "softmax, or 0/0?")
        elif np.isfinite(gap).all():
            largest = tuple(int(i) for i in np.unravel_index(np.argmax(gap), gap.shape))
            lines.append(f"largest difference {gap[largest]:.3g} at {list(largest)}")
    return "\n".join(lines)


def _entries(row: tuple[int, ...], start: int, length: int) -> str:
    """"[2, 0:6]": the index of a run of at most six entries along the last axis."""
    return "[" + ", ".join([*map(str, row), f"{start}:{min(start + 6, length)}"]) + "]"


def named_mistake(received: Any, mistakes: Mapping[str, Any] | None, rtol: float,
                  atol: float, expected: Any = None) -> str | None:
    """The first of ``mistakes`` (what the learner did -> the value it gives, or a function
    computing it) whose value ``received`` is, or None. With ``expected``, a float result is
    that value only when it lies far closer to it (within a thousandth of the distance) than
    the value lies to ``expected``: a slip that moves the last digits is not taken for another
    that moves them too. A shape (a tuple) is a mistake for :meth:`Checker.shape` only."""
    want = None
    if expected is not None:
        try:
            want = as_array(expected).astype(np.float64)
        except (TypeError, ValueError):
            want = None
    for description, value in (mistakes or {}).items():
        if isinstance(value, tuple):
            continue
        try:
            value = value() if callable(value) else value
            got, wrong = as_array(received), as_array(value)
            if got.shape != wrong.shape:
                continue
            if got.dtype.kind not in "fc" or wrong.dtype.kind not in "fc":
                if bool(np.array_equal(got, wrong)):
                    return description
                continue
            if not np.allclose(got, wrong, rtol=max(rtol, 1e-6), atol=atol, equal_nan=True):
                continue
            if want is None or want.shape != got.shape:
                return description
            with np.errstate(invalid="ignore"):
                off = np.nan_to_num(np.abs(got - wrong), nan=0.0)
                gap = np.nan_to_num(np.abs(wrong - want), nan=np.inf)
            if gap.max() > 0 and off.max() <= 1e-3 * gap.max():
                return description
        except Exception:  # a mistake that cannot be computed for this case is not this one
            continue
    return None


# ----------------------------------------------------------------------------- detectors
def likely_mistake(received: Any, expected: Any, rtol: float = 1e-6,
                   atol: float = 1e-8) -> str | None:
    """The usual slip that turns ``expected`` into ``received`` (see the module docstring),
    or None when no detector fires."""
    try:
        got, want = as_array(received), as_array(expected)
    except Exception:
        return None
    if got.dtype.kind not in "biuf" or want.dtype.kind not in "biuf":
        return None
    got, want = got.astype(np.float64), want.astype(np.float64)
    if got.shape != want.shape:
        return _shape_slip(got, want, rtol, atol)
    if not np.isfinite(got).all() or not np.isfinite(want).all() or want.size == 0:
        return None
    near_rtol, near_atol = max(rtol, 1e-6), max(atol, 1e-12)

    def near(a: np.ndarray, b: np.ndarray) -> bool:
        return a.shape == b.shape and bool(np.allclose(a, b, rtol=near_rtol, atol=near_atol))

    if not np.any(got) and np.any(want):
        return "every entry is 0: nothing was added or written (a sum or an assignment missing?)"
    if near(got, -want):
        return "every entry has the opposite sign: a sign (or a subtraction) the wrong way round?"
    if got.ndim >= 2 and near(got, np.swapaxes(want, -1, -2)):
        return "it is the expected result with its last two axes swapped: a transpose?"
    nonzero = np.abs(want) > 1e-12
    if nonzero.any() and not (np.abs(got[~nonzero]) > 1e-12).any():
        ratios = got[nonzero] / want[nonzero]
        if np.ptp(ratios) <= 1e-6 * max(1.0, abs(ratios[0])) and abs(ratios[0] - 1) > 1e-6:
            return (f"every entry is {ratios[0]:.6g} times the expected one: a factor missing "
                    "or one too many (a mean for a sum, a 1/N, a 2)?")
    gap = got - want
    scale = max(1.0, float(np.abs(want).max()))
    if want.size > 1 and np.ptp(gap) <= 1e-6 * scale and abs(gap.flat[0]) > 1e-6 * scale:
        return (f"every entry is off by the same amount ({gap.flat[0]:.4g}): a bias or a "
                "constant term missing, or added twice?")
    for axis in range(got.ndim):  # an offset that depends on one axis only: a bias per unit
        if got.shape[axis] == want.size or got.shape[axis] == 1:
            continue
        varying = np.ptp(gap, axis=tuple(a for a in range(got.ndim) if a != axis))
        if np.all(varying <= 1e-6 * scale) and np.ptp(gap) > 1e-6 * scale:
            return (f"the difference depends only on axis {axis}: a bias per entry of that "
                    "axis missing, or added twice?")
    for axis in range(got.ndim):
        if got.shape[axis] > 1 and near(got, np.flip(want, axis)):
            return (f"it is the expected result reversed along axis {axis}: a flipped filter "
                    "or a loop run backwards?")
    for axis in range(got.ndim):
        if got.shape[axis] <= 2:
            continue
        for step, said in ((1, "one position later"), (-1, "one position earlier")):
            inside = [slice(None)] * got.ndim
            inside[axis] = slice(1, -1)
            if near(got[tuple(inside)], np.roll(want, step, axis)[tuple(inside)]):
                return (f"every entry sits {said} along axis {axis} than expected: an index "
                        "off by one?")
    return None


def _shape_slip(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> str | None:
    """A slip that changes the shape: a length off by one, the axes in another order, the
    right numbers in another shape, an axis of size 1 kept or lost."""
    if got.ndim == want.ndim:
        off = [axis for axis in range(got.ndim) if got.shape[axis] != want.shape[axis]]
        if len(off) == 1 and abs(got.shape[off[0]] - want.shape[off[0]]) == 1:
            axis = off[0]
            more = "one entry too many" if got.shape[axis] > want.shape[axis] else \
                "one entry short"
            return (f"axis {axis} has {got.shape[axis]} entries where {want.shape[axis]} are "
                    f"expected, {more}: an off-by-one in a length (a + 1 or - 1)?")
    if got.size != want.size or got.size <= 1:
        for longer, shorter, said in ((got, want, "an extra axis of size 1: keepdims=True, or "
                                       "a squeeze missing?"),
                                      (want, got, "an axis of size 1 missing: keepdims=True "
                                       "forgotten?")):
            if longer.ndim == shorter.ndim + 1 and 1 in longer.shape and tuple(
                    size for axis, size in enumerate(longer.shape)
                    if axis != longer.shape.index(1)) == shorter.shape:
                return said
        return None

    def near(a: np.ndarray) -> bool:
        return bool(np.allclose(a, want, rtol=max(rtol, 1e-6), atol=atol))

    if got.ndim == want.ndim and got.ndim <= 4:
        for order in itertools.permutations(range(got.ndim)):
            if got.shape == tuple(want.shape[axis] for axis in order) and \
                    near(np.transpose(got, np.argsort(order))):
                return (f"the expected result with its axes in the order {order}: a transpose "
                        "missing, or one too many?")
    if near(got.reshape(want.shape)):
        return (f"the right numbers in the shape {got.shape} instead of {want.shape}: a "
                "reshape, or keepdims, missing?")
    return (f"as many entries as expected, but in the shape {got.shape} instead of "
            f"{want.shape}: the axes mixed up?")


def likely_error(error: BaseException) -> str | None:
    """The usual slip behind an exception the learner's code raised, or None."""
    text = str(error)
    if isinstance(error, IndexError):
        return "an index past the end of an axis: a loop bound or a length off by one?"
    if isinstance(error, ValueError) and ("broadcast" in text or "matmul" in text
                                          or "aligned" in text):
        return ("shapes that do not fit together: an axis missing, one too many, or in the "
                "wrong order (print the shapes)?")
    if isinstance(error, TypeError) and "NoneType" in text:
        return ("None where a value was expected: a missing return, or an optional argument "
                "(a bias of None) not handled?")
    if isinstance(error, ZeroDivisionError):
        return "a division by zero: a length or a count that is 0?"
    if isinstance(error, RecursionError):
        return "a function that calls itself without end: a walk without a `seen` set?"
    return None
