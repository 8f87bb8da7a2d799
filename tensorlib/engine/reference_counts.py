"""Who else holds an object: the one reference-count rule of the package (CPython).

``other_holders(obj, known)`` is how many references to ``obj`` exist besides the
caller's own name for it and ``known`` others the caller can account for. Two places ask:
the backward engine, whether a fresh gradient array can become ``.grad`` without a copy
(``tensorlib.engine.kernels.sole_owner.sole_owner``), and NF4 conversion, whether anything
outside the layer still holds the dense weight it would release
(``tensorlib.adapters.nf4``).
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["other_holders"]


def _count(obj: Any) -> int:
    return sys.getrefcount(obj)


def other_holders(obj: Any, known: int = 0) -> int | None:
    """The references to ``obj`` beyond the caller's one name for it (a local variable or
    parameter) and ``known`` more; None outside CPython, where there are no counts.

    Exact in CPython: the count is calibrated once, at import, on an object held by one
    name through this same call, so no reference is missed and none is counted twice.
    """
    if _ONE_NAME is None:
        return None
    return _count(obj) - _ONE_NAME - known


def _calibrate() -> int | None:
    """What ``_count`` reports, called from ``other_holders``, for an object that only
    one local name holds."""
    if sys.implementation.name != "cpython":
        return None
    global _ONE_NAME
    _ONE_NAME = 0
    probe = object()
    return other_holders(probe)


_ONE_NAME: int | None = None
_ONE_NAME = _calibrate()
