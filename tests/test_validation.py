"""tensorlib.validation: one set of checks, each naming what was wrong."""

import numpy as np
import pytest

from tensorlib import validation


def test_integers():
    assert validation.integer(np.int64(3), "n") == 3 and type(validation.integer(3, "n")) is int
    assert validation.integer(-2, "n") == -2
    assert validation.integer(5, "n", minimum=5) == 5
    with pytest.raises(ValueError, match="n must be an integer >= 2, got 1"):
        validation.integer(1, "n", minimum=2)
    for bad in (True, 2.0, "3", None):
        with pytest.raises(TypeError, match="n must be an integer"):
            validation.integer(bad, "n")
    assert validation.positive_integer(1, "steps") == 1
    with pytest.raises(ValueError, match="steps must be a positive integer, got 0"):
        validation.positive_integer(0, "steps")
    with pytest.raises(TypeError, match="steps must be a positive integer, got True"):
        validation.positive_integer(True, "steps")


def test_real_numbers():
    assert validation.real(np.float32(0.5), "lr") == 0.5
    assert validation.non_negative(0, "noise") == 0.0
    with pytest.raises(ValueError, match="lr must be finite, got inf"):
        validation.real(float("inf"), "lr")
    with pytest.raises(ValueError, match="noise must be finite and >= 0, got -1.0"):
        validation.non_negative(-1, "noise")
    with pytest.raises(TypeError, match="lr must be a real number, got False"):
        validation.real(False, "lr")


def test_float_dtypes():
    assert validation.float_dtype("float64") == np.float64
    with pytest.raises(TypeError, match="dtype must be a floating-point dtype, got int32"):
        validation.float_dtype(np.int32)
    with pytest.raises(TypeError, match="got 'nonsense'"):
        validation.float_dtype("nonsense")
