"""Checks of hyperparameters and sizes, written once and used at every boundary.

Each function returns the value in its plain Python (or numpy) form, or raises naming
``what`` and the value: TypeError for the wrong kind of thing (a bool is not a number
here, though Python says it is), ValueError for the right kind out of range.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np


def integer(value: Any, what: str, minimum: int | None = None) -> int:
    """``value`` as an int: an integer (not a bool), at least ``minimum`` when given."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        kind = "an integer" if minimum is None else f"an integer >= {minimum}"
        raise TypeError(f"{what} must be {kind}, got {value!r} of type {type(value).__name__}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{what} must be an integer >= {minimum}, got {value}")
    return int(value)


def positive_integer(value: Any, what: str) -> int:
    """``value`` as an int, which must be 1 or more."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{what} must be a positive integer, got {value!r}")
    if value < 1:
        raise ValueError(f"{what} must be a positive integer, got {value}")
    return int(value)


def real(value: Any, what: str) -> float:
    """``value`` as a finite float (not a bool)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{what} must be a real number, got {value!r} of type "
                        f"{type(value).__name__}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{what} must be finite, got {value}")
    return value


def non_negative(value: Any, what: str) -> float:
    """``value`` as a finite float >= 0."""
    value = real(value, what)
    if value < 0:
        raise ValueError(f"{what} must be finite and >= 0, got {value}")
    return value


def float_dtype(dtype: Any) -> np.dtype:
    """``np.dtype(dtype)``, which must be a floating-point dtype."""
    try:
        result = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"dtype must be a floating-point dtype, got {dtype!r}") from None
    if result.kind != "f":
        raise TypeError(f"dtype must be a floating-point dtype, got {result}")
    return result
