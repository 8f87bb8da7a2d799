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

from tensorlib.engine.dtypes import bfloat16
from tensorlib.engine.typing import Array


def is_floating(dtype: np.dtype) -> bool:
    """Whether ``dtype`` is a floating-point dtype (float16, bfloat16, float32, float64): the
    one spelling of this test (``np.issubdtype`` is slow on a hot path, and bfloat16's numpy
    kind is 'V')."""
    return dtype.kind == "f" or dtype == bfloat16


def is_real(dtype: np.dtype) -> bool:
    """Whether ``dtype`` holds real numbers: an integer or a float (not bool)."""
    return dtype.kind in "fiu" or dtype == bfloat16


def is_numeric(dtype: np.dtype) -> bool:
    """Whether ``dtype`` is one a tensor can have: bool, an integer or a float."""
    return dtype.kind in "biuf" or dtype == bfloat16


def integer(value: Any, what: str, minimum: int | None = None,
            maximum: int | None = None) -> int:
    """``value`` as an int: an integer (not a bool), within ``[minimum, maximum]`` where given."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{what} must be {_integer_range(minimum, maximum)}, got {value!r} of "
                        f"type {type(value).__name__}")
    number = int(value)  # exact for every Integral
    if (minimum is not None and number < minimum) or (maximum is not None and number > maximum):
        raise ValueError(f"{what} must be {_integer_range(minimum, maximum)}, got {value}")
    return number


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


def heads_divide(channels: int, heads: int, names: tuple[str, str] = ("channels", "heads"),
                 ) -> None:
    """ValueError unless ``heads`` divides ``channels`` (each head gets channels/heads), the
    message naming the two by ``names``."""
    if channels % heads:
        raise ValueError(f"{names[0]} ({channels}) must be divisible by {names[1]} ({heads})")


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


def choice(value: Any, options: tuple[str, ...], what: str) -> str:
    """``value``, which must be one of the strings ``options``."""
    if not isinstance(value, str) or value not in options:
        raise ValueError(f"{what} must be one of {', '.join(map(repr, options))}, got {value!r}")
    return value


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
    if not is_floating(result):
        raise TypeError(f"dtype must be a floating-point dtype, got {result}")
    return result


# The most elements one array can hold (numpy indexes them with a signed pointer-sized int).
MAX_ELEMENTS = int(np.iinfo(np.intp).max)


def dimension(value: Any, what: str, minimum: int = 1) -> int:
    """``value`` as an int: a size of one axis, at least ``minimum``, and small enough that
    an array can have it."""
    size = integer(value, what, minimum=minimum)
    if size > MAX_ELEMENTS:
        raise ValueError(f"{what} must be at most {MAX_ELEMENTS} (the largest array size), "
                         f"got {size}")
    return size


def shape(value: Any, what: str) -> tuple[int, ...]:
    """``value`` (an int or a sequence of ints) as the shape of a new array: every size
    >= 0, and the element count within what one array can hold."""
    sizes = (value,) if isinstance(value, numbers.Integral) and not isinstance(value, bool) \
        else value
    if not isinstance(sizes, (tuple, list)):
        raise TypeError(f"{what} must be an integer or a sequence of integers, got {value!r}")
    result = tuple(dimension(size, f"{what}: each size", minimum=0) for size in sizes)
    if math.prod(result) > MAX_ELEMENTS:
        raise ValueError(f"{what} {result} has {math.prod(result)} elements, more than one "
                         f"array can hold ({MAX_ELEMENTS})")
    return result


def tensor_dtype(dtype: Any, what: str = "dtype") -> np.dtype:
    """``np.dtype(dtype)``, which must be a dtype a tensor can have: bool, an integer or a
    float."""
    try:
        result = np.dtype(dtype)
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be a bool, integer or floating-point dtype, got "
                        f"{dtype!r}") from None
    if not is_numeric(result):
        raise TypeError(f"{what} must be a bool, integer or floating-point dtype, got {result}")
    return result


def fill_value(value: Any, what: str) -> Any:
    """``value`` as one number to write into a tensor: a Python or numpy bool, int or float,
    or a one-element array of numbers (as PyTorch takes a 0-d tensor), made 0-d."""
    if isinstance(value, (numbers.Real, np.bool_)):
        return value
    if hasattr(value, "dtype") and hasattr(value, "shape") and is_numeric(value.dtype):
        if math.prod(value.shape) != 1:
            raise ValueError(f"{what} must be one number, got an array of shape "
                             f"{tuple(value.shape)}")
        return value.reshape(())
    raise TypeError(f"{what} must be a number, got {value!r} of type {type(value).__name__}")


def numeric_array(value: Any, what: str) -> Array:
    """``value`` as an array of numbers (bool, integer or float) without copying where it
    already is one; TypeError for None, strings and other objects."""
    array = value if hasattr(value, "dtype") and hasattr(value, "shape") else None
    if array is None:
        try:
            array = np.asarray(value)
        except (TypeError, ValueError):
            array = None
    if array is None or not is_numeric(array.dtype):
        raise TypeError(f"{what} must be a number or an array of numbers, got {value!r} of "
                        f"type {type(value).__name__}")
    return array
