"""Tests for tensorlib.engine.random (PyTorch's random factories) and the Generator spelling of Rng.

Every factory's values are pinned to the Rng draws its docstring names, bit for bit; its
shapes, dtypes and refusals are compared with PyTorch's where PyTorch is installed (its values
differ: it uses another generator).
"""

import numpy as np
import pytest

import tensorlib as tl
import tensorlib.engine.random as factories
from tensorlib.engine.factories import tensor
from tensorlib.engine.splitmix64 import Generator, Rng, default_rng, manual_seed
from tensorlib.engine.tensor import Tensor

MASK = 2**64 - 1
GAMMA = 0x9E3779B97F4A7C15


def advanced(seed, draws):
    """The state of ``Rng(seed)`` after ``draws`` draws."""
    return (seed + draws * GAMMA) & MASK


@pytest.fixture(autouse=True)
def keep_default_generator():
    """Restore the process default generator after each test (some tests draw from it)."""
    generator = default_rng()
    seed, state = generator.initial_seed(), generator.state
    yield
    generator.manual_seed(seed)
    generator.state = state


# --------------------------------------------------------------------------- Generator


def test_generator_is_rng_under_pytorchs_name():
    assert Generator is Rng
    generator = Generator()
    assert generator.state == 0 and generator.initial_seed() == 0
    assert Rng(5).state == 5


def test_manual_seed_sets_the_state_and_returns_the_generator():
    generator = Generator()
    generator.next_u64(3)
    assert generator.manual_seed(2147483647) is generator
    assert generator.state == 2147483647 and generator.initial_seed() == 2147483647
    assert generator.next_u64() == Rng(2147483647).next_u64()


def test_initial_seed_survives_draws_and_copies():
    generator = Rng(9)
    generator.next_u64(4)
    twin = generator.copy()
    assert generator.initial_seed() == twin.initial_seed() == 9
    assert twin.state == generator.state == advanced(9, 4)


def test_module_manual_seed_reseeds_the_default_generator():
    generator = manual_seed(123)
    assert generator is default_rng()
    assert generator.state == 123 and generator.initial_seed() == 123


@pytest.mark.parametrize("seed, error", [(-1, ValueError), (2**64, ValueError),
                                         (1.0, TypeError), (None, TypeError)])
def test_manual_seed_refuses_bad_seeds_and_keeps_the_state(seed, error):
    generator = Generator().manual_seed(7)
    generator.next_u64()
    with pytest.raises(error):
        generator.manual_seed(seed)
    assert generator.state == advanced(7, 1) and generator.initial_seed() == 7


def test_same_seed_same_draws():
    first = factories.randn(5, generator=Generator().manual_seed(42))
    second = factories.randn(5, generator=Generator().manual_seed(42))
    np.testing.assert_array_equal(first.data, second.data)


# --------------------------------------------------------------------------- randn, rand


@pytest.mark.parametrize("size", [(2, 3), ((2, 3),), ([2, 3],)])
def test_randn_equals_rng_normal_in_both_call_forms(size):
    generator = Generator().manual_seed(7)
    result = factories.randn(*size, generator=generator)
    assert isinstance(result, Tensor) and result.shape == (2, 3)
    assert result.dtype == np.float32 and not result.requires_grad
    np.testing.assert_array_equal(result.data, Rng(7).normal(0.0, 1.0, size=(2, 3)))
    assert generator.state == advanced(7, 12)  # two draws per element


def test_randn_of_n_equals_n_scalar_normal_calls():
    scalar = Rng(3)
    expected = np.array([scalar.normal() for _ in range(10)], dtype=np.float32)
    np.testing.assert_array_equal(factories.randn(10, generator=Rng(3)).data, expected)


def test_rand_equals_rng_uniform():
    generator = Generator().manual_seed(8)
    result = factories.rand(4, 5, generator=generator)
    assert result.shape == (4, 5) and result.dtype == np.float32
    np.testing.assert_array_equal(result.data, Rng(8).uniform(0.0, 1.0, size=(4, 5)))
    assert generator.state == advanced(8, 20)  # one draw per element
    assert 0.0 <= result.data.min() and result.data.max() < 1.0


@pytest.mark.parametrize("factory, method", [(factories.randn, "normal"),
                                             (factories.rand, "uniform")])
def test_float64_holds_the_float32_values(factory, method):
    result = factory(3, 2, generator=Rng(1), dtype=np.float64)
    assert result.dtype == np.float64
    expected = getattr(Rng(1), method)(size=(3, 2))
    np.testing.assert_array_equal(result.data, expected.astype(np.float64))


@pytest.mark.parametrize("factory", [factories.randn, factories.rand])
def test_zero_d_empty_and_requires_grad(factory):
    generator = Rng(0)
    assert factory((), generator=generator).shape == ()
    assert factory(0, 3, generator=generator).shape == (0, 3)
    assert generator.state == advanced(0, 2 if factory is factories.randn else 1)
    assert factory(2, generator=generator, requires_grad=True).requires_grad


@pytest.mark.parametrize("factory, method", [(factories.randn, "normal"),
                                             (factories.rand, "uniform")])
def test_the_default_generator_is_used_when_none_is_given(factory, method):
    manual_seed(5)
    expected = getattr(Rng(5), method)(size=4)
    np.testing.assert_array_equal(factory(4).data, expected)
    state = default_rng().state
    factory(4, generator=Rng(6))
    assert default_rng().state == state  # an explicit generator leaves the default alone


def test_randn_like_and_rand_like_take_shape_and_dtype():
    like = tensor(np.zeros((2, 3), dtype=np.float64))
    result = factories.randn_like(like, generator=Rng(4))
    assert result.shape == (2, 3) and result.dtype == np.float64
    np.testing.assert_array_equal(result.data, Rng(4).normal(size=(2, 3)).astype(np.float64))
    uniform = factories.rand_like(like, generator=Rng(4), dtype=np.float32)
    assert uniform.dtype == np.float32
    np.testing.assert_array_equal(uniform.data, Rng(4).uniform(size=(2, 3)))
    ids = tensor([1, 2])
    assert factories.randn_like(ids, dtype=np.float32).dtype == np.float32
    with pytest.raises(TypeError, match="a floating-point dtype, got int64"):
        factories.randn_like(ids)


class OtherDeviceArray(np.ndarray):
    """An array "on" a second, fake device (a numpy subclass)."""


def test_like_factories_put_the_result_on_the_tensors_device():
    from tensorlib.engine import backend

    backend.register_backend("otherdevice", np, lambda a: np.asarray(a).view(OtherDeviceArray),
                             lambda: True, array_types=(OtherDeviceArray,))
    try:
        like = tensor(np.zeros(3, dtype=np.float32)).to("otherdevice")
        for factory, method in ((factories.randn_like, "normal"), (factories.rand_like, "uniform")):
            result = factory(like, generator=Rng(2), requires_grad=True)
            assert result.device == "otherdevice" and result.requires_grad
            np.testing.assert_array_equal(np.asarray(result.data),
                                          getattr(Rng(2), method)(size=3))
    finally:
        backend.unregister_backend("otherdevice")


# --------------------------------------------------------------------------- randint


@pytest.mark.parametrize("call, low, high", [
    (lambda g: factories.randint(10, (3, 4), generator=g), 0, 10),
    (lambda g: factories.randint(-5, 5, (3, 4), generator=g), -5, 5),
    (lambda g: factories.randint(10, size=(3, 4), generator=g), 0, 10),
    (lambda g: factories.randint(2, 10, size=(3, 4), generator=g), 2, 10),
    (lambda g: factories.randint(low=2, high=10, size=(3, 4), generator=g), 2, 10),
    (lambda g: factories.randint(high=10, size=[3, 4], generator=g), 0, 10),
    (lambda g: factories.randint(2, high=10, size=(3, 4), generator=g), 2, 10),
])
def test_randint_call_forms_equal_rng_integers(call, low, high):
    generator = Rng(11)
    result = call(generator)
    assert result.shape == (3, 4) and result.dtype == np.int64
    np.testing.assert_array_equal(result.data, Rng(11).integers(low, high, size=(3, 4)))
    assert generator.state == advanced(11, 12)


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.bool_, np.float32, np.float64])
def test_randint_dtypes_hold_the_same_integers(dtype):
    high = 2 if dtype is np.bool_ else 100
    result = factories.randint(high, (50,), generator=Rng(2), dtype=dtype)
    assert result.dtype == dtype
    np.testing.assert_array_equal(result.data, Rng(2).integers(0, high, size=50).astype(dtype))


def test_randint_covers_its_range():
    values = factories.randint(-3, 4, (7000,), generator=Rng(1)).data
    assert values.min() == -3 and values.max() == 3
    assert np.all(np.abs(np.bincount(values + 3) - 1000) < 150)  # sd ~ 29


# --------------------------------------------------------------------------- randperm


def test_randperm_equals_rng_permutation():
    generator = Rng(6)
    result = factories.randperm(20, generator=generator)
    assert result.shape == (20,) and result.dtype == np.int64
    np.testing.assert_array_equal(result.data, Rng(6).permutation(20))
    assert sorted(result.data.tolist()) == list(range(20))
    assert generator.state == advanced(6, 20)
    assert factories.randperm(0).shape == (0,)


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.float64])
def test_randperm_dtypes(dtype):
    result = factories.randperm(10, generator=Rng(6), dtype=dtype)
    assert result.dtype == dtype
    np.testing.assert_array_equal(result.data, Rng(6).permutation(10).astype(dtype))


# --------------------------------------------------------------------------- normal


def test_normal_with_numbers_is_mean_plus_std_times_z_in_float32():
    generator = Rng(13)
    result = factories.normal(0.5, 2.0, (4, 3), generator=generator)
    assert result.shape == (4, 3) and result.dtype == np.float32
    z = Rng(13).normal(size=(4, 3))
    np.testing.assert_array_equal(result.data, np.float32(0.5) + np.float32(2.0) * z)
    assert generator.state == advanced(13, 24)
    result64 = factories.normal(0.5, 2.0, size=[4, 3], generator=Rng(13), dtype=np.float64)
    assert result64.dtype == np.float64
    np.testing.assert_array_equal(result64.data, 0.5 + 2.0 * z.astype(np.float64))


def test_normal_with_tensors_broadcasts_mean_and_std():
    mean = tensor(np.array([[0.0], [10.0]], dtype=np.float32))  # (2, 1)
    std = tensor(np.array([1.0, 2.0, 3.0], dtype=np.float32))  # (3,)
    result = factories.normal(mean, std, generator=Rng(3))
    assert result.shape == (2, 3) and result.dtype == np.float32
    z = Rng(3).normal(size=(2, 3))
    np.testing.assert_array_equal(result.data, mean.data + std.data * z)


def test_normal_dtype_is_means_when_mean_is_a_tensor_else_stds():
    mean64 = tensor(np.zeros(3))
    std32 = tensor(np.ones(3, dtype=np.float32))
    assert factories.normal(mean64, 1.0).dtype == np.float64
    assert factories.normal(mean64, std32).dtype == np.float64
    assert factories.normal(std32, mean64 + 1).dtype == np.float32
    assert factories.normal(1.0, tensor(np.ones((2, 2)))).dtype == np.float64
    result = factories.normal(2.0, tensor(np.full(4, 0.5)), generator=Rng(1))
    np.testing.assert_array_equal(result.data, 2.0 + 0.5 * Rng(1).normal(size=4).astype(float))


def test_normal_moments():
    values = factories.normal(3.0, 2.0, (20_000,), generator=Rng(0)).numpy().astype(np.float64)
    assert abs(values.mean() - 3.0) < 0.06 and abs(values.std() - 2.0) < 0.06  # sd ~ 0.014


# --------------------------------------------------------------------------- multinomial


def test_multinomial_with_replacement_equals_sample_categorical():
    weights = np.array([0.1, 0.0, 0.6, 0.3], dtype=np.float32)
    generator = Rng(10)
    result = factories.multinomial(tensor(weights), 50, replacement=True, generator=generator)
    assert result.shape == (50,) and result.dtype == np.int64
    np.testing.assert_array_equal(result.data, Rng(10).sample_categorical(weights, size=50))
    assert generator.state == advanced(10, 50)


def test_multinomial_rows_draw_row_by_row():
    weights = Rng(21).uniform(size=(5, 6)).astype(np.float64)
    result = factories.multinomial(tensor(weights), 7, True, generator=Rng(1))
    assert result.shape == (5, 7) and result.dtype == np.int64
    reference = Rng(1)
    expected = [reference.sample_categorical(row, size=7) for row in weights]
    np.testing.assert_array_equal(result.data, np.stack(expected))


def without_replacement_reference(seed, rows, num_samples):
    """The documented draws: row by row, each sample from the row with earlier picks zeroed."""
    rng, samples = Rng(seed), []
    for row in np.atleast_2d(rows):
        remaining, picks = row.astype(np.float64), []
        for _ in range(num_samples):
            picks.append(rng.sample_categorical(remaining))
            remaining[picks[-1]] = 0.0
        samples.append(picks)
    return np.array(samples).reshape(np.shape(rows)[:-1] + (num_samples,))


@pytest.mark.parametrize("shape, num_samples", [((6,), 4), ((3, 5), 3), ((2, 4), 4),
                                                 ((4, 60), 30)])
def test_multinomial_without_replacement_equals_the_documented_draws(shape, num_samples):
    weights = Rng(5).uniform(0.0, 1.0, size=shape) ** 3  # some tiny weights among them
    generator = Rng(2)
    result = factories.multinomial(tensor(weights), num_samples, generator=generator)
    assert result.shape == shape[:-1] + (num_samples,) and result.dtype == np.int64
    np.testing.assert_array_equal(result.data,
                                  without_replacement_reference(2, weights, num_samples))
    assert generator.state == advanced(2, result.numpy().size)  # one draw per sample


def test_multinomial_without_replacement_never_repeats_nor_draws_zero_weights():
    weights = np.tile(np.array([0.5, 0.0, 0.2, 0.2, 0.1], dtype=np.float32), (500, 1))
    samples = factories.multinomial(tensor(weights), 4, generator=Rng(8)).data  # (500, 4)
    assert all(len(set(row)) == 4 for row in samples.tolist())
    assert not np.any(samples == 1)
    np.testing.assert_array_equal(np.sort(samples, axis=1), np.tile([0, 2, 3, 4], (500, 1)))


def test_multinomial_frequencies():
    probabilities = np.array([0.1, 0.0, 0.6, 0.3])
    samples = factories.multinomial(tensor(probabilities), 20_000, True, generator=Rng(4)).numpy()
    frequencies = np.bincount(samples, minlength=4) / samples.size
    np.testing.assert_allclose(frequencies, probabilities, atol=0.015)  # sd <= 0.0035
    # Without replacement the first pick follows the weights, the second
    # P(j) = sum_i p_i p_j / (1 - p_i).
    pairs = factories.multinomial(tensor(np.tile(probabilities, (5000, 1))), 2,
                                  generator=Rng(4)).data
    np.testing.assert_allclose(np.bincount(pairs[:, 0], minlength=4) / 5000, probabilities,
                               atol=0.025)
    second = np.array([sum(p_i * p_j / (1 - p_i) for i, p_i in enumerate(probabilities)
                           if i != j) for j, p_j in enumerate(probabilities)])
    np.testing.assert_allclose(np.bincount(pairs[:, 1], minlength=4) / 5000, second,
                               atol=0.025)


def test_multinomial_of_no_rows_draws_nothing():
    generator = Rng(3)
    result = factories.multinomial(tensor(np.ones((0, 4), dtype=np.float32)), 2,
                                   generator=generator)
    assert result.shape == (0, 2) and result.dtype == np.int64
    assert generator.state == 3


# --------------------------------------------------------------------------- refusals

WEIGHTS = tensor(np.array([1.0, 2.0, 0.0], dtype=np.float32))

REFUSED = [
    (lambda g: factories.randn(generator=g), TypeError),
    (lambda g: factories.randn(2, -1, generator=g), ValueError),
    (lambda g: factories.randn(2.0, generator=g), TypeError),
    (lambda g: factories.randn((2,), 3, generator=g), TypeError),
    (lambda g: factories.randn(2, generator=g, dtype=np.int64), TypeError),
    (lambda g: factories.normal(0.0, 1.0, (2,), generator=g, dtype=np.float16), TypeError),
    (lambda g: factories.randn(2, generator=g, requires_grad=1), TypeError),
    (lambda g: factories.rand(2, generator=g, dtype="float33"), TypeError),
    (lambda g: factories.randint(10, 3, generator=g), TypeError),
    (lambda g: factories.randint(0, 10, generator=g), TypeError),
    (lambda g: factories.randint(10, generator=g), TypeError),
    (lambda g: factories.randint(1, 2, 3, size=(2,), generator=g), TypeError),
    (lambda g: factories.randint(5, 5, (3,), generator=g), ValueError),
    (lambda g: factories.randint(6, 5, (3,), generator=g), ValueError),
    (lambda g: factories.randint(0.0, 5, (3,), generator=g), TypeError),
    (lambda g: factories.randint(0, 2**64, (3,), generator=g), ValueError),
    (lambda g: factories.randint(0, 2**40, (3,), generator=g, dtype=np.int32), ValueError),
    (lambda g: factories.randint(-1, 10, (3,), generator=g, dtype=np.uint8), ValueError),
    (lambda g: factories.randint(0, 3, (3,), generator=g, dtype=np.bool_), ValueError),
    (lambda g: factories.randint(0, 3, (3,), generator=g, requires_grad=True), TypeError),
    (lambda g: factories.randperm(-1, generator=g), ValueError),
    (lambda g: factories.randperm(5.0, generator=g), TypeError),
    (lambda g: factories.randperm(300, generator=g, dtype=np.uint8), ValueError),
    (lambda g: factories.randperm(5, generator=g, dtype=np.bool_), TypeError),
    (lambda g: factories.randperm(5, generator=g, requires_grad=True), TypeError),
    (lambda g: factories.normal(0.0, 1.0, generator=g), TypeError),
    (lambda g: factories.normal(0.0, 1.0, 3, generator=g), TypeError),
    (lambda g: factories.normal(0.0, -1.0, (3,), generator=g), ValueError),
    (lambda g: factories.normal(float("nan"), 1.0, (3,), generator=g), ValueError),
    (lambda g: factories.normal(0.0, 1e39, (3,), generator=g), ValueError),
    (lambda g: factories.normal(tensor([0.0, 0.0]), tensor([1.0, -1.0]), generator=g),
     ValueError),
    (lambda g: factories.normal(tensor([0.0, 0.0]), float("inf"), generator=g), ValueError),
    (lambda g: factories.normal(tensor(np.zeros(6)), tensor(np.ones((2, 3))), generator=g),
     ValueError),
    (lambda g: factories.normal(tensor([0.0]), 1.0, (1,), generator=g), TypeError),
    (lambda g: factories.normal(tensor([0, 1]), 1.0, generator=g), TypeError),
    (lambda g: factories.multinomial(WEIGHTS, 3, generator=g), ValueError),
    (lambda g: factories.multinomial(WEIGHTS, 0, generator=g), ValueError),
    (lambda g: factories.multinomial(WEIGHTS, 2.0, generator=g), TypeError),
    (lambda g: factories.multinomial(WEIGHTS, 1, 1, generator=g), TypeError),
    (lambda g: factories.multinomial([1.0, 2.0], 1, generator=g), TypeError),
    (lambda g: factories.multinomial(tensor([1, 2]), 1, generator=g), TypeError),
    (lambda g: factories.multinomial(tensor([1.0, -2.0]), 1, generator=g), ValueError),
    (lambda g: factories.multinomial(tensor([1.0, float("nan")]), 1, generator=g),
     ValueError),
    (lambda g: factories.multinomial(tensor([[1.0, 1.0], [0.0, 0.0]]), 1, True, generator=g),
     ValueError),
    (lambda g: factories.multinomial(tensor(np.ones((2, 2, 2))), 1, generator=g), ValueError),
    (lambda g: factories.multinomial(tensor(np.ones((2, 0))), 1, True, generator=g),
     ValueError),
    (lambda g: factories.multinomial(tensor(np.array([1e308, 1e308])), 1, generator=g),
     ValueError),
    (lambda g: factories.randn_like(np.zeros(2), generator=g), TypeError),
]


@pytest.mark.parametrize("call, error", REFUSED)
def test_refused_calls_raise_and_leave_every_generator_unchanged(call, error):
    generator = Generator().manual_seed(17)
    default_state = default_rng().state
    with pytest.raises(error):
        call(generator)
    assert generator.state == 17 and default_rng().state == default_state


@pytest.mark.parametrize("bad", [3, np.random.default_rng(0), "cpu"])
def test_generator_of_the_wrong_type_is_a_type_error_naming_generator(bad):
    for call in (lambda: factories.randn(2, generator=bad),
                 lambda: factories.randint(3, (2,), generator=bad),
                 lambda: factories.multinomial(WEIGHTS, 1, generator=bad)):
        with pytest.raises(TypeError, match="generator"):
            call()


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match="non-negative.*row"):
        factories.multinomial(tensor([[1.0, 1.0], [1.0, -1.0]]), 1)
    with pytest.raises(ValueError, match="finite"):
        factories.multinomial(tensor([1.0, float("inf")]), 1)
    with pytest.raises(ValueError, match=r"positive, finite sum.*rows? \[1\]"):
        factories.multinomial(tensor([[1.0, 1.0], [0.0, 0.0]]), 1)
    with pytest.raises(ValueError, match="without replacement.*only 2 positive weights"):
        factories.multinomial(WEIGHTS, 3)
    with pytest.raises(ValueError, match="low < high"):
        factories.randint(4, 4, (1,))
    with pytest.raises(ValueError, match="negative|>= 0"):
        factories.randperm(-2)


# --------------------------------------------------------------------------- PyTorch

# The same calls, written once for both libraries: `lib` is torch or tensorlib.engine.random,
# `T(values, dtype)` makes a tensor, `g` is a seeded generator, dtypes are named by short
# names. Compared: the result's shape and dtype, or that both raise.
PARITY_CALLS = [
    "lib.randn(2, 3)", "lib.randn((2, 3))", "lib.randn([2, 3])", "lib.randn(())",
    "lib.randn(0, 4)", "lib.randn()", "lib.randn(2, -1)", "lib.randn(2.0)",
    "lib.randn(2, dtype=f64)", "lib.randn(2, dtype=i64)", "lib.randn(2, generator=g)",
    "lib.randn(2, generator=3)", "lib.randn(2, requires_grad=True).requires_grad",
    "lib.randn(2, requires_grad=1)", "lib.rand(3, 1)", "lib.rand(2, dtype=f64)",
    "lib.rand(2, dtype=i32)", "lib.rand((2,), (3,))",
    "lib.randint(10, (3,))", "lib.randint(0, 10, (3,))", "lib.randint(-5, 0, (2, 2))",
    "lib.randint(10, size=(3,))", "lib.randint(0, 10, size=(3,))",
    "lib.randint(low=2, high=10, size=(3,))", "lib.randint(high=10, size=(3,))",
    "lib.randint(5, high=6, size=(2,))", "lib.randint(5, high=6)", "lib.randint(size=(2,))",
    "lib.randint(1, 2, 3, size=(2,))",
    "lib.randint(0, 10, 3)", "lib.randint(10, 3)", "lib.randint(0, 10)", "lib.randint(10)",
    "lib.randint(5, 5, (3,))", "lib.randint(6, 5, (3,))", "lib.randint(0.0, 10, (3,))",
    "lib.randint(0, 10.5, (3,))", "lib.randint(0, 10, (3,), dtype=f32)",
    "lib.randint(0, 10, (3,), dtype=i32)", "lib.randint(0, 10, (3,), dtype=u8)",
    "lib.randint(0, 2, (3,), dtype=b8)", "lib.randint(0, 10, (3,), dtype=b8)",
    "lib.randint(0, 2**40, (3,), dtype=i32)", "lib.randint(-1, 10, (3,), dtype=u8)",
    "lib.randint(0, 10, (3,), requires_grad=True)", "lib.randint(3, (2,), generator=g)",
    "lib.randperm(5)", "lib.randperm(0)", "lib.randperm(-1)", "lib.randperm(5.0)",
    "lib.randperm(5, dtype=f32)", "lib.randperm(5, dtype=i32)",
    "lib.randperm(300, dtype=u8)", "lib.randperm(5, dtype=b8)",
    "lib.randperm(5, requires_grad=True)", "lib.randperm(5, dtype=f32, requires_grad=True)",
    "lib.normal(0.0, 1.0, (2, 3))", "lib.normal(0, 1, (2, 3))", "lib.normal(0.0, 1.0)",
    "lib.normal(0.0, 1.0, 3)", "lib.normal(0.0, 1.0, size=(2,))",
    "lib.normal(0.0, 1.0, (3,), dtype=f64)", "lib.normal(0.0, -1.0, (3,))",
    "lib.normal(T([[0.0], [1.0]]), 1.0)", "lib.normal(T(0.0), 1.0)",
    "lib.normal(T([[0.0], [1.0]]), T([1.0, 2.0, 3.0]))", "lib.normal(T([0.0] * 3), T([1.0] * 4))",
    "lib.normal(T([0.0] * 6), T([[1.0] * 3] * 2))", "lib.normal(0.0, T([1.0] * 3))",
    "lib.normal(T([0.0] * 3), T([1.0] * 3), (3,))", "lib.normal(T([0.0] * 3), 1.0, (3,))",
    "lib.normal(T([0.0] * 3), -1.0)", "lib.normal(T([0.0] * 3), T([1.0, -1.0, 1.0]))",
    "lib.normal(T([0.0] * 3), float('nan'))", "lib.normal(T([0.0] * 3, f64), 1.0)",
    "lib.normal(T([0.0] * 3, f64), T([1.0] * 3))", "lib.normal(T([0.0] * 3), T([1.0] * 3, f64))",
    "lib.normal(0.0, T([1.0] * 3, f64))", "lib.normal(T([0, 0], i64), 1.0)",
    "lib.multinomial(T([1.0, 2.0]), 3)", "lib.multinomial(T([1.0, 2.0]), 3, True)",
    "lib.multinomial(T([1.0, 2.0, 0.0]), 2)", "lib.multinomial(T([1.0, 2.0]), 0)",
    "lib.multinomial(T([1.0, 2.0]), -1)", "lib.multinomial(T([1.0, -2.0]), 1)",
    "lib.multinomial(T([1.0, float('inf')]), 1)", "lib.multinomial(T([1.0, float('nan')]), 1)",
    "lib.multinomial(T([0.0, 0.0]), 1)", "lib.multinomial(T([0.0, 0.0]), 1, True)",
    "lib.multinomial(T([1, 2], i64), 1)", "lib.multinomial(T([[1.0] * 3] * 2), 2)",
    "lib.multinomial(T([[[1.0]]]), 1)", "lib.multinomial(T([[1.0, 1.0], [0.0, 0.0]]), 1)",
    "lib.multinomial(T([[1.0, 1.0], [1.0, 0.0]]), 1)", "lib.multinomial(T(1.0), 1)",
    "lib.multinomial(T([1.0, 2.0], f64), 4, replacement=True)",
    "lib.multinomial([1.0, 2.0], 1)", "lib.multinomial(T([1.0] * 3), 2.0)",
    "lib.multinomial(T([1.0] * 3), 1, replacement=1)",
    "lib.multinomial(T([1.0, 2.0]), 1, generator=g)",
    "lib.randn_like(T([[0.0] * 3] * 2))", "lib.randn_like(T([0, 1], i64))",
    "lib.randn_like(T([0, 1], i64), dtype=f32)", "lib.rand_like(T([0.0] * 3, f64))",
    "lib.rand_like(T([0.0, 1.0]), generator=g)",
    "lib.randn_like(T([0.0]), requires_grad=True).requires_grad",
]


def tensorlib_namespace():
    dtypes = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64,
              "u8": np.uint8, "b8": np.bool_}
    return {"lib": factories, "g": Generator().manual_seed(0),
            "T": lambda values, dtype=np.float32: tensor(np.array(values, dtype=dtype)),
            **{name: np.dtype(dtype) for name, dtype in dtypes.items()}}


def torch_namespace(torch):
    dtypes = {"f32": torch.float32, "f64": torch.float64, "i32": torch.int32,
              "i64": torch.int64, "u8": torch.uint8, "b8": torch.bool}
    return {"lib": torch, "g": torch.Generator().manual_seed(0),
            "T": lambda values, dtype=torch.float32: torch.tensor(values, dtype=dtype),
            **dtypes}


def outcome(expression, namespace):
    """``("value", shape, dtype name)`` of a tensor, the plain value otherwise, or "raises"."""
    try:
        result = eval(expression, namespace)
    except Exception:  # noqa: BLE001 - only whether it raised is compared
        return "raises"
    if hasattr(result, "shape"):
        return tuple(result.shape), str(result.dtype).removeprefix("torch.")
    return result


def test_shapes_dtypes_and_refusals_agree_with_pytorch():
    torch = pytest.importorskip("torch")
    ours, theirs = tensorlib_namespace(), torch_namespace(torch)
    disagreements = [f"{call}: tensorlib {outcome(call, ours)}, PyTorch {outcome(call, theirs)}"
                     for call in PARITY_CALLS if outcome(call, ours) != outcome(call, theirs)]
    assert not disagreements, "\n".join(disagreements)


def test_pytorchs_generator_spelling_runs_in_both():
    torch = pytest.importorskip("torch")
    assert isinstance(torch.Generator().manual_seed(2147483647), torch.Generator)
    generator = Generator().manual_seed(2147483647)
    assert isinstance(generator, Rng) and generator.initial_seed() == 2147483647


# Where tensorlib refuses what PyTorch accepts (each a deliberate, stated choice).
DEPARTURES = [
    # Without replacement PyTorch allows up to K samples and then draws zero-weight
    # categories; tensorlib refuses more samples than positive weights.
    "lib.multinomial(T([1.0, 2.0, 0.0]), 3)",
    # Every mean and std must be finite (PyTorch lets infinities through).
    "lib.normal(T([float('inf')] * 2), 1.0)",
    "lib.normal(T([0.0] * 2), float('inf'))",
    "lib.normal(float('inf'), 1.0, (2,))",
    # normal returns float32 or float64 only (randn and rand round their draws to float16).
    "lib.normal(0.0, 1.0, (2,), dtype=torch.float16)",
]


def test_departures_from_pytorch_are_refusals():
    torch = pytest.importorskip("torch")
    ours, theirs = tensorlib_namespace(), torch_namespace(torch)
    ours["torch"] = type("dtypes", (), {"float16": np.float16})
    theirs["torch"] = torch
    for call in DEPARTURES:
        assert outcome(call, ours) == "raises" and outcome(call, theirs) != "raises", call


@pytest.mark.parametrize("dtype", [np.float16, "bfloat16"])
def test_randn_and_rand_in_low_precision_round_the_float32_draws(dtype):
    dtype = tl.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
    normal = factories.randn(3, 4, generator=Rng(5), dtype=dtype)
    assert normal.dtype == dtype
    np.testing.assert_array_equal(normal.numpy(), Rng(5).normal(size=(3, 4)).astype(dtype))
    uniform = factories.rand(4096, generator=Rng(6), dtype=dtype)
    assert uniform.dtype == dtype and 0.0 <= float(uniform.min()) and float(uniform.max()) < 1.0
