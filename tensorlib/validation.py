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


def integer(value: Any, what: str, minimum: int | None = None,
            maximum: int | None = None) -> int:
    """``value`` as an int: an integer (not a bool), within ``[minimum, maximum]`` where given."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{what} must be {_integer_range(minimum, maximum)}, got {value!r} of "
                        f"type {type(value).__name__}")
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise ValueError(f"{what} must be {_integer_range(minimum, maximum)}, got {value}")
    return int(value)


def _integer_range(minimum: int | None, maximum: int | None) -> str:
    if minimum is not None and maximum is not None:
        return f"an integer in [{minimum}, {maximum}]"
    if minimum is not None:
        return f"an integer >= {minimum}"
    if maximum is not None:
        return f"an integer <= {maximum}"
    return "an integer"


def positive_integer(value: Any, what: str) -> int:
    """``value`` as an int, which must be 1 or more."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{what} must be a positive integer, got {value!r}")
    if value < 1:
        raise ValueError(f"{what} must be a positive integer, got {value}")
    return int(value)


def real(value: Any, what: str, *, low: float | None = None, low_open: bool = False,
         high: float | None = None, high_open: bool = True) -> float:
    """``value`` as a finite float (not a bool), within the bounds where given.

    ``low`` is included unless ``low_open``; ``high`` is excluded unless ``high_open`` is
    False. The error says the whole requirement, as in "must be a finite number in [0, 1)".
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{what} must be {_real_range(low, low_open, high, high_open)}, got "
                        f"{value!r} of type {type(value).__name__}")
    number = float(value)
    below = low is not None and (number < low or (low_open and number == low))
    above = high is not None and (number > high or (high_open and number == high))
    if not math.isfinite(number) or below or above:
        raise ValueError(f"{what} must be {_real_range(low, low_open, high, high_open)}, "
                         f"got {number}")
    return number


def _real_range(low: float | None, low_open: bool, high: float | None, high_open: bool) -> str:
    if low is not None and high is not None:
        return (f"a finite number in {'(' if low_open else '['}{low:g}, "
                f"{high:g}{')' if high_open else ']'}")
    if low is not None:
        return f"a finite number {'>' if low_open else '>='} {low:g}"
    if high is not None:
        return f"a finite number {'<' if high_open else '<='} {high:g}"
    return "a finite number"


def non_negative(value: Any, what: str) -> float:
    """``value`` as a finite float >= 0."""
    return real(value, what, low=0.0)


def positive(value: Any, what: str) -> float:
    """``value`` as a finite float > 0 (an ``eps``, a temperature, a scale)."""
    return real(value, what, low=0.0, low_open=True)


def probability(value: Any, what: str) -> float:
    """``value`` as a float in [0, 1) (a dropout probability: 1 would drop everything)."""
    return real(value, what, low=0.0, high=1.0)


def boolean(value: Any, what: str) -> bool:
    """``value`` as a bool; a Python or numpy bool only (1 and 0 are refused)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{what} must be True or False, got {value!r}")
    return bool(value)


def words(values: Any, what: str = "words") -> list[str]:
    """``values`` as a list; one string is refused (it would be taken letter by letter)."""
    if isinstance(values, str):
        raise TypeError(f"{what} must be an iterable of strings, not one string")
    return list(values)


def float_dtype(dtype: Any) -> np.dtype:
    """``np.dtype(dtype)``, which must be a floating-point dtype."""
    try:
        result = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"dtype must be a floating-point dtype, got {dtype!r}") from None
    if result.kind != "f":
        raise TypeError(f"dtype must be a floating-point dtype, got {result}")
    return result
