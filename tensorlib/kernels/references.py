"""Whether an array is referred to by its caller alone (CPython reference counts)."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from tensorlib.ops.function import kernels_on

__all__ = ["sole_reference"]


def _reference_count(array: Any) -> int:
    return sys.getrefcount(array)


def sole_reference(array: Any) -> bool:
    """True when ``array`` owns its memory and only the caller's one local name refers to
    it, so that nothing else can see it change (always False outside CPython, and in
    reference mode). The backward engine asks it before keeping a gradient as ``.grad``
    (installed by ``tensorlib.kernels``).

    Stands in for: ``False``, that is, the backward engine's plain rule that a leaf's
    ``.grad`` is a copy of any gradient the engine did not sum itself.
    How: ``sys.getrefcount`` against the count of an array held by one local name, measured
    once at import through the same call chain. A fresh gradient from a backward (for
    example a weight's dW = dyᵀ x) then becomes ``.grad`` without a copy: one pass over
    every parameter's gradient saved per step.
    Accuracy: exact; a reference the count does not see cannot exist in CPython, and any
    extra one makes the answer False (a copy, never a shared array).
    Measured: docs/performance.md, "The engine" (benchmarks/run.py cases (a)-(c)).
    """
    return (kernels_on() and _SOLE_COUNT is not None and isinstance(array, np.ndarray)
            and array.base is None and _reference_count(array) <= _SOLE_COUNT)


def _calibrate_sole_count() -> int | None:
    """The count ``_reference_count`` reports for an array held by one local name only."""
    if sys.implementation.name != "cpython":
        return None
    probe = np.empty(1)
    return _reference_count(probe) + 1  # + 1: sole_reference's own parameter


_SOLE_COUNT = _calibrate_sole_count()
