"""tensorlib.engine.validation: one set of checks, each naming what was wrong."""

import numpy as np
import pytest

from tensorlib.engine import validation


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
    with pytest.raises(ValueError, match="lr must be a finite number, got inf"):
        validation.real(float("inf"), "lr")
    with pytest.raises(ValueError, match="noise must be a finite number >= 0, got -1.0"):
        validation.non_negative(-1, "noise")
    with pytest.raises(TypeError, match="lr must be a finite number, got False of type bool"):
        validation.real(False, "lr")
    assert validation.real(1.0, "beta", low=0.0, high=1.0, high_open=False) == 1.0
    with pytest.raises(ValueError, match=r"beta must be a finite number in \[0, 1\), got 1.0"):
        validation.real(1.0, "beta", low=0.0, high=1.0)
    with pytest.raises(ValueError, match=r"x must be a finite number < 2, got nan"):
        validation.real(float("nan"), "x", high=2.0)


def test_positive_probability_and_boolean():
    assert validation.positive(1e-5, "eps") == 1e-5
    for bad in (0.0, -1.0, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="eps must be a finite number > 0"):
            validation.positive(bad, "eps")
    assert validation.probability(0, "p") == 0.0 and validation.probability(0.999, "p") == 0.999
    for bad in (1.0, -0.1, float("nan")):
        with pytest.raises(ValueError, match=r"p must be a finite number in \[0, 1\)"):
            validation.probability(bad, "p")
    for bad in (True, "0.5", None):
        with pytest.raises(TypeError, match=r"p must be a finite number in \[0, 1\)"):
            validation.probability(bad, "p")
    assert validation.boolean(np.bool_(True), "flag") is True
    for bad in (1, 0, "yes", None):
        with pytest.raises(TypeError, match="flag must be True or False"):
            validation.boolean(bad, "flag")
    assert validation.integer(3, "k", minimum=1, maximum=3) == 3
    with pytest.raises(ValueError, match=r"k must be an integer in \[1, 3\], got 4"):
        validation.integer(4, "k", minimum=1, maximum=3)


def test_float_dtypes():
    assert validation.float_dtype("float64") == np.float64
    with pytest.raises(TypeError, match="dtype must be a floating-point dtype, got int32"):
        validation.float_dtype(np.int32)
    with pytest.raises(TypeError, match="got 'nonsense'"):
        validation.float_dtype("nonsense")
