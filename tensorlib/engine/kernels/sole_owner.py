"""Whether an array is held by its caller alone (CPython reference counts)."""

from __future__ import annotations

import numpy as np

from tensorlib.engine.kernel_table import kernels_on
from tensorlib.engine.reference_counts import other_holders
from tensorlib.engine.typing import Array

__all__ = ["sole_owner"]


def sole_owner(array: Array) -> bool:
    """True when ``array`` owns its memory and only the caller's one local name refers to
    it, so that nothing else can see it change (always False outside CPython, and in
    reference mode). The backward engine asks it before keeping a gradient as ``.grad``
    (installed by ``tensorlib.engine.kernels``).

    Stands in for: ``False``, that is, the backward engine's plain rule that a leaf's
    ``.grad`` is a copy of any gradient the engine did not sum itself.
    How: ``tensorlib.engine.reference_counts.other_holders``, the package's reference count, with
    the caller's name as the one known reference besides this function's parameter. A
    fresh gradient from a backward (for example a weight's dW = dyᵀ x) then becomes
    ``.grad`` without a copy: one pass over every parameter's gradient saved per step.
    Accuracy: exact; a reference the count does not see cannot exist in CPython, and any
    extra one makes the answer False (a copy, never a shared array).
    Measured: docs/performance.md, "The engine" (benchmarks/run.py cases (a)-(c)).
    """
    if not (kernels_on() and isinstance(array, np.ndarray) and array.base is None):
        return False
    others = other_holders(array, known=1)  # known: the caller's local name
    return others is not None and others <= 0
