"""Tests for tensorlib.engine.splitmix64: the splitmix64 generator and its distributions."""

import math
import time

import numpy as np
import pytest

from tensorlib import Rng

MASK = 2**64 - 1
GAMMA = 0x9E3779B97F4A7C15


# --------------------------------------------------------------------------- reference
# An independent splitmix64 written with plain Python integers and masking.


def reference_outputs(seed, count):
    state = seed
    outputs = []
    for _ in range(count):
        state = (state + GAMMA) & MASK
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        outputs.append(z ^ (z >> 31))
    return outputs


def undo_xorshift(value, shift):
    result = value
    for _ in range(64 // shift + 1):
        result = value ^ (result >> shift)
    return result


def state_producing(output):
    """The state to set so that the next draw returns ``output`` (the mixer is a bijection)."""
    z = undo_xorshift(output, 31)
    z = (z * pow(0x94D049BB133111EB, -1, 2**64)) & MASK
    z = undo_xorshift(z, 27)
    z = (z * pow(0xBF58476D1CE4E5B9, -1, 2**64)) & MASK
    z = undo_xorshift(z, 30)
    return (z - GAMMA) & MASK


# --------------------------------------------------------------------------- raw bits


def test_first_output_for_seed_zero_is_the_published_value():
    assert Rng(0).next_u64() == 0xE220A8397B1DCDAF


@pytest.mark.parametrize("seed", [0, 42, 2**64 - 1, 0x0123456789ABCDEF])
def test_first_outputs_match_independent_reference(seed):
    rng = Rng(seed)
    assert [rng.next_u64() for _ in range(5)] == reference_outputs(seed, 5)


def test_reference_helper_inverts_the_mixer():
    rng = Rng(0)
    rng.state = state_producing(0xDEADBEEF12345678)
    assert rng.next_u64() == 0xDEADBEEF12345678


def test_scalar_draws_are_python_ints_in_range():
    rng = Rng(7)
    values = [rng.next_u64() for _ in range(100)]
    assert all(type(v) is int and 0 <= v <= MASK for v in values)


@pytest.mark.parametrize("size", [1, 5, 1000, (3, 4), (2, 0, 3), ()])
def test_array_draws_equal_scalar_draws(size):
    array_rng, scalar_rng = Rng(1234), Rng(1234)
    values = array_rng.next_u64(size)
    shape = (size,) if isinstance(size, int) else size
    assert values.dtype == np.uint64
    assert values.shape == shape
    expected = [scalar_rng.next_u64() for _ in range(values.size)]
    assert values.ravel().tolist() == expected
    assert array_rng.state == scalar_rng.state
    # And both continue identically afterwards.
    assert array_rng.next_u64() == scalar_rng.next_u64()


def test_array_draws_wrap_the_state_around_two_to_the_64():
    seed = 2**64 - 3 * GAMMA % 2**64  # the state wraps inside the array
    values = Rng(seed).next_u64(10)
    assert values.tolist() == reference_outputs(seed, 10)


def test_state_advances_by_gamma_per_draw():
    rng = Rng(5)
    rng.next_u64(1000)
    assert rng.state == (5 + 1000 * GAMMA) & MASK


# --------------------------------------------------------------------------- state


def test_state_round_trip_and_continuation():
    rng = Rng(99)
    rng.next_u64(17)
    saved = rng.state
    expected = [rng.next_u64() for _ in range(5)]
    other = Rng(0)
    other.state = saved
    assert other.state == saved
    assert [other.next_u64() for _ in range(5)] == expected


def test_copy_is_independent():
    rng = Rng(3)
    twin = rng.copy()
    assert twin.state == rng.state and twin is not rng
    first = rng.next_u64()
    assert twin.state != rng.state
    assert twin.next_u64() == first


def test_repr_shows_state_in_hex():
    assert repr(Rng(255)) == "Rng(state=0x00000000000000ff)"


def test_same_seed_same_stream_different_seed_different_stream():
    assert Rng(11).next_u64(50).tolist() == Rng(11).next_u64(50).tolist()
    a, b = Rng(11).next_u64(50), Rng(12).next_u64(50)
    assert np.count_nonzero(a == b) == 0


@pytest.mark.parametrize("bad", [-1, 2**64, 2**70])
def test_out_of_range_seed_or_state_raises_value_error(bad):
    with pytest.raises(ValueError, match=str(bad)):
        Rng(bad)
    rng = Rng(0)
    with pytest.raises(ValueError, match=str(bad)):
        rng.state = bad
    assert rng.state == 0


@pytest.mark.parametrize("bad", [True, 1.0, "1", None, np.float64(3)])
def test_non_integer_seed_or_state_raises_type_error(bad):
    with pytest.raises(TypeError):
        Rng(bad)
    rng = Rng(0)
    with pytest.raises(TypeError):
        rng.state = bad


def test_numpy_integer_seed_is_accepted():
    assert Rng(np.uint64(2**64 - 1)).state == 2**64 - 1


# --------------------------------------------------------------------------- uniform


def reference_uniform(seed, count, low, high):
    f32 = np.float32
    low, high = f32(low), f32(high)
    return [
        float(low + (high - low) * (f32(v >> 40) * f32(2.0**-24)))
        for v in reference_outputs(seed, count)
    ]


def test_uniform_matches_float32_reference():
    rng = Rng(42)
    assert [rng.uniform(-2.5, 3.0) for _ in range(50)] == reference_uniform(42, 50, -2.5, 3.0)


def test_uniform_scalar_is_python_float_array_is_float32():
    rng = Rng(1)
    assert type(rng.uniform()) is float
    assert rng.uniform(size=4).dtype == np.float32
    assert rng.uniform(size=4, dtype=np.float64).dtype == np.float64


@pytest.mark.parametrize("low, high", [(0.0, 1.0), (-3.0, 7.5), (1e-3, 2e-3)])
def test_uniform_array_equals_scalar_draws(low, high):
    array_rng, scalar_rng = Rng(8), Rng(8)
    values = array_rng.uniform(low, high, size=(20, 50))
    expected = np.array([scalar_rng.uniform(low, high) for _ in range(1000)], np.float32)
    np.testing.assert_array_equal(values.ravel(), expected)
    assert array_rng.state == scalar_rng.state


def test_uniform_range_mean_and_variance():
    values = Rng(2024).uniform(-1.0, 3.0, size=100_000).astype(np.float64)
    assert values.min() >= -1.0 and values.max() < 3.0
    assert abs(values.mean() - 1.0) < 0.02  # sd of the mean is 4/sqrt(12)/sqrt(1e5) ~ 0.004
    assert abs(values.var() - 16.0 / 12.0) < 0.03


def test_uniform_with_equal_bounds_is_constant():
    np.testing.assert_array_equal(Rng(0).uniform(2.0, 2.0, size=5), np.full(5, 2.0, np.float32))


@pytest.mark.parametrize(
    "low, high, error",
    [
        (1.0, 0.0, ValueError),
        (float("nan"), 1.0, ValueError),
        (0.0, float("inf"), ValueError),
        (-3e38, 3e38, ValueError),  # high - low overflows float32
        (0.0, 1e39, ValueError),  # outside the float32 range
        ("0", 1.0, TypeError),
    ],
)
def test_uniform_invalid_bounds(low, high, error):
    rng = Rng(0)
    with pytest.raises(error):
        rng.uniform(low, high)
    assert rng.state == 0  # nothing was drawn


# --------------------------------------------------------------------------- normal


def reference_normal(seed, count, mean, std):
    """Box-Muller in float64 from the reference ints (u1 divisor 2^24, as float32 has it)."""
    draws = reference_outputs(seed, 2 * count)
    out = []
    for v1, v2 in zip(draws[0::2], draws[1::2], strict=True):
        u1 = ((v1 >> 40) + 1) / 2**24
        u2 = (v2 >> 40) / 2**24
        out.append(mean + std * math.sqrt(-2 * math.log(u1)) * math.cos(2 * math.pi * u2))
    return np.array(out)


def test_normal_matches_reference_and_draw_order():
    rng = Rng(42)
    values = np.array([rng.normal(0.5, 2.0) for _ in range(200)])
    np.testing.assert_allclose(values, reference_normal(42, 200, 0.5, 2.0), rtol=1e-5, atol=1e-5)
    assert rng.state == (42 + 400 * GAMMA) & MASK  # two draws per sample


def test_normal_u1_divisor_is_two_to_the_24_as_in_float32():
    # A first draw whose top 24 bits are all ones gives u1 = 2^24 / 16777217.0f = 1 exactly,
    # log(u1) = 0 and the sample is exactly the mean (with a float64 divisor it would not be).
    rng = Rng(0)
    rng.state = state_producing((0xFFFFFF << 40) | 0x123)
    assert rng.normal(0.25, 3.0) == 0.25


def test_normal_smallest_u1_is_finite():
    rng = Rng(0)
    rng.state = state_producing(0x123)  # top 24 bits zero: u1 = 2^-24
    value = rng.normal()
    assert math.isfinite(value) and abs(value) <= math.sqrt(2 * 24 * math.log(2)) + 1e-5


@pytest.mark.parametrize("mean, std", [(0.0, 1.0), (-1.5, 0.02), (3.0, 10.0)])
def test_normal_array_equals_scalar_draws(mean, std):
    array_rng, scalar_rng = Rng(77), Rng(77)
    values = array_rng.normal(mean, std, size=(10, 100))
    expected = np.array([scalar_rng.normal(mean, std) for _ in range(1000)], np.float32)
    assert values.dtype == np.float32
    np.testing.assert_array_equal(values.ravel(), expected)
    assert array_rng.state == scalar_rng.state


def test_normal_moments():
    values = Rng(5).normal(2.0, 3.0, size=100_000).astype(np.float64)
    assert abs(values.mean() - 2.0) < 0.05  # sd of the mean ~ 0.0095
    assert abs(values.std() - 3.0) < 0.05
    standardized = (values - values.mean()) / values.std()
    assert abs(np.mean(standardized**3)) < 0.05
    assert abs(np.mean(standardized**4) - 3.0) < 0.1


def test_normal_with_zero_std_is_the_mean():
    np.testing.assert_array_equal(Rng(0).normal(1.5, 0.0, size=3), np.full(3, 1.5, np.float32))


@pytest.mark.parametrize(
    "mean, std, error",
    [
        (0.0, -1.0, ValueError),
        (float("nan"), 1.0, ValueError),
        (0.0, float("inf"), ValueError),
        (None, 1.0, TypeError),
    ],
)
def test_normal_invalid_arguments(mean, std, error):
    with pytest.raises(error):
        Rng(0).normal(mean, std)


def test_std_error_names_the_value():
    with pytest.raises(ValueError, match="-0.5"):
        Rng(0).normal(0.0, -0.5)


# --------------------------------------------------------------------------- integers


def test_integers_match_reference():
    rng = Rng(42)
    expected = [3 + ((v * 10) >> 64) for v in reference_outputs(42, 20)]
    assert [rng.integers(3, 13) for _ in range(20)] == expected


@pytest.mark.parametrize(
    "low, high", [(0, 10), (-5, 5), (0, 2**40 + 7), (-(2**63), 2**63 - 1), (7, 8)]
)
def test_integers_array_equals_scalar_draws(low, high):
    array_rng, scalar_rng = Rng(31), Rng(31)
    values = array_rng.integers(low, high, size=(4, 250))
    expected = [scalar_rng.integers(low, high) for _ in range(1000)]
    assert values.dtype == np.int64
    assert values.ravel().tolist() == expected
    assert all(low <= v < high for v in expected)
    assert array_rng.state == scalar_rng.state


def test_integers_cover_the_range_evenly():
    values = Rng(9).integers(-3, 7, size=100_000)
    counts = np.bincount(values + 3, minlength=10)
    assert values.min() == -3 and values.max() == 6
    assert np.all(np.abs(counts - 10_000) < 500)  # sd ~ 95


@pytest.mark.parametrize(
    "low, high, error",
    [
        (5, 5, ValueError),
        (5, 4, ValueError),
        (0, 2**63, ValueError),
        (0.0, 4, TypeError),
        (0, True, TypeError),
    ],
)
def test_integers_invalid_bounds(low, high, error):
    with pytest.raises(error):
        Rng(0).integers(low, high)


# --------------------------------------------------------------------------- permutation


def test_permutation_is_a_deterministic_permutation():
    p = Rng(4).permutation(1000)
    assert p.dtype == np.int64
    assert sorted(p.tolist()) == list(range(1000))
    assert p.tolist() == Rng(4).permutation(1000).tolist()
    assert p.tolist() != list(range(1000))
    assert Rng(4).permutation(0).shape == (0,)


def test_permutation_consumes_n_draws_and_sorts_them():
    draws = Rng(6).next_u64(50)
    rng = Rng(6)
    assert rng.permutation(50).tolist() == np.argsort(draws, kind="stable").tolist()
    assert rng.state == (6 + 50 * GAMMA) & MASK


def test_permutation_rejects_negative_n():
    with pytest.raises(ValueError, match="-1"):
        Rng(0).permutation(-1)


# --------------------------------------------------------------------------- categorical


def test_categorical_frequencies_follow_probabilities():
    probabilities = np.array([0.1, 0.0, 0.6, 0.3])
    samples = Rng(10).sample_categorical(probabilities, size=100_000)
    frequencies = np.bincount(samples, minlength=4) / samples.size
    assert frequencies[1] == 0.0
    np.testing.assert_allclose(frequencies, probabilities, atol=0.01)


def test_categorical_normalises_unnormalised_weights():
    a = Rng(3).sample_categorical([1.0, 3.0], size=200)
    b = Rng(3).sample_categorical([0.25, 0.75], size=200)
    assert a.tolist() == b.tolist()


def test_categorical_array_equals_scalar_draws_and_choice_is_the_same():
    probabilities = [0.2, 0.5, 0.3]
    array_rng, scalar_rng, choice_rng = Rng(12), Rng(12), Rng(12)
    values = array_rng.sample_categorical(probabilities, size=(5, 20))
    expected = [scalar_rng.sample_categorical(probabilities) for _ in range(100)]
    assert values.dtype == np.int64 and values.shape == (5, 20)
    assert values.ravel().tolist() == expected
    assert type(expected[0]) is int
    assert choice_rng.choice(probabilities, size=(5, 20)).tolist() == values.tolist()


def test_categorical_rows_one_sample_per_row():
    rows = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 2.0], [0.0, 5.0, 0.0]])
    rng = Rng(0)
    assert rng.sample_categorical(rows).tolist() == [0, 2, 1]
    assert rng.state == (3 * GAMMA) & MASK
    # A batch of rows equals drawing each row in turn.
    batch = Rng(21).uniform(size=(8, 6)).astype(np.float64)
    row_rng, batch_rng = Rng(1), Rng(1)
    by_row = [row_rng.sample_categorical(row) for row in batch]
    assert batch_rng.sample_categorical(batch).tolist() == by_row


def test_categorical_leading_zero_weight_is_skipped_even_for_u_equal_zero():
    # A draw of 0 gives u = 0 exactly; the first index with positive weight must be chosen.
    rng = Rng(0)
    rng.state = state_producing(0)
    assert rng.sample_categorical([0.0, 0.0, 1.0, 1.0]) == 2
    rng.state = state_producing(0)
    assert rng.sample_categorical([[0.0, 3.0, 1.0]]).tolist() == [1]


def test_categorical_zero_weight_at_the_ends_is_never_drawn():
    samples = Rng(2).sample_categorical([0.0, 1.0, 1.0, 0.0], size=10_000)
    assert set(samples.tolist()) == {1, 2}


@pytest.mark.parametrize(
    "probabilities, error",
    [
        ([0.5, -0.1, 0.6], ValueError),
        ([0.5, float("nan")], ValueError),
        ([0.5, float("inf")], ValueError),
        ([0.0, 0.0], ValueError),
        ([], ValueError),
        ([[[0.5]]], ValueError),
        ([[0.5, 0.5], [0.0, 0.0]], ValueError),
        (["a", "b"], TypeError),
    ],
)
def test_categorical_invalid_probabilities(probabilities, error):
    with pytest.raises(error):
        Rng(0).sample_categorical(probabilities)


def test_categorical_rows_refuse_size():
    with pytest.raises(ValueError, match="one sample is drawn per row"):
        Rng(0).sample_categorical([[0.5, 0.5]], size=3)


# --------------------------------------------------------------------------- sizes & speed


@pytest.mark.parametrize(
    "size, error",
    [
        (-1, ValueError),
        ((2, -3), ValueError),
        (2.0, TypeError),
        ((2, 1.5), TypeError),
        (True, TypeError),
        ("3", TypeError),
    ],
)
def test_invalid_sizes(size, error):
    rng = Rng(0)
    for method in (rng.next_u64, rng.uniform, rng.normal):
        with pytest.raises(error):
            method(size=size)
    with pytest.raises(error):
        rng.integers(0, 3, size=size)


def test_non_float_dtype_is_rejected():
    with pytest.raises(TypeError):
        Rng(0).uniform(size=3, dtype=np.int32)


def test_million_element_draws_are_vectorized():
    rng = Rng(0)
    start = time.perf_counter()
    rng.next_u64(1_000_000)
    rng.uniform(size=1_000_000)
    rng.normal(size=1_000_000)
    assert time.perf_counter() - start < 1.0  # a Python loop would take many seconds
