"""The one place that knows which array library an array belongs to.

Every op asks ``array_module(array)`` for ``np``-like functions instead of importing numpy
directly, so a second backend (CuPy on a GPU) needs no rewrite of the ops.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

try:  # CuPy is optional: only present on machines with a CUDA GPU.
    import cupy as _cupy  # type: ignore[import-not-found]
except Exception:  # pragma: no cover - depends on the machine
    _cupy = None


def array_module(array: Any) -> ModuleType:
    """Return the array module (numpy or cupy) that owns ``array``."""
    if _cupy is not None and isinstance(array, _cupy.ndarray):
        return _cupy
    return np


def cupy_available() -> bool:
    """True when CuPy imported and can see a GPU."""
    if _cupy is None:
        return False
    try:
        return _cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # pragma: no cover - depends on the machine
        return False


def device_of(array: Any) -> str:
    """``"cuda"`` for CuPy arrays, ``"cpu"`` for everything else."""
    return "cuda" if array_module(array) is not np else "cpu"
