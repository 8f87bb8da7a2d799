"""Tests for tensorlib.nn.init: fans and the six initialization policies."""

import math

import numpy as np
import pytest

from tensorlib import Rng
from tensorlib.nn import init


def test_policies_are_the_six_names():
    assert init.POLICIES == (
        "zero",
        "one",
        "xavier_uniform",
        "xavier_normal",
        "he_uniform",
        "he_normal",
    )


# --------------------------------------------------------------------------- fans


@pytest.mark.parametrize(
    "shape, fans",
    [
        ((7,), (7, 7)),
        ((5, 3), (3, 5)),  # Linear weight (out_features, in_features)
        ((16, 8, 3, 3), (8 * 9, 16 * 9)),  # conv-like (out, in, kh, kw)
        ((4, 2, 5), (10, 20)),
    ],
)
def test_fan_in_and_fan_out(shape, fans):
    assert init.fan_in_and_fan_out(shape) == fans


@pytest.mark.parametrize("shape", [(), (0,), (3, 0), (2, 3, 0)])
def test_fans_of_0d_or_empty_shape_raise(shape):
    with pytest.raises(ValueError):
        init.fan_in_and_fan_out(shape)


# --------------------------------------------------------------------------- constants


@pytest.mark.parametrize("policy, value", [("zero", 0.0), ("one", 1.0)])
def test_constant_policies(policy, value):
    array = init.initialize(policy, (3, 4))
    assert array.dtype == np.float32 and array.shape == (3, 4)
    assert np.all(array == value)
    assert init.initialize(policy, (), dtype=np.float64).dtype == np.float64
    assert init.initialize(policy, (0, 2)).shape == (0, 2)


def test_zeros_and_ones_functions():
    np.testing.assert_array_equal(init.zeros(3), np.zeros(3, np.float32))
    np.testing.assert_array_equal(init.ones((2, 2)), np.ones((2, 2), np.float32))


# --------------------------------------------------------------------------- uniform


@pytest.mark.parametrize(
    "policy, shape, bound",
    [
        ("xavier_uniform", (64, 32), math.sqrt(6 / (32 + 64))),
        ("xavier_uniform", (16, 8, 3, 3), math.sqrt(6 / (72 + 144))),
        ("he_uniform", (64, 32), math.sqrt(6 / 32)),
        ("he_uniform", (16, 8, 3, 3), math.sqrt(6 / 72)),
    ],
)
def test_uniform_policies_fill_their_range(policy, shape, bound):
    array = init.initialize(policy, shape, Rng(1))
    assert array.shape == shape and array.dtype == np.float32
    assert np.all(np.abs(array) <= np.float32(bound))
    assert array.max() > 0.95 * bound and array.min() < -0.95 * bound
    # Uniform on (-a, a) has variance a^2 / 3.
    assert abs(array.astype(np.float64).var() / (bound**2 / 3) - 1) < 0.1


def test_xavier_uniform_gain_scales_the_bound():
    plain = init.xavier_uniform((10, 10), Rng(3))
    doubled = init.xavier_uniform((10, 10), Rng(3), gain=2.0)
    np.testing.assert_allclose(doubled, 2 * plain, rtol=1e-6)


def test_uniform_policy_uses_rng_uniform_in_c_order():
    shape = (4, 6)
    bound = math.sqrt(6 / 10)
    expected = Rng(5).uniform(-bound, bound, size=shape)
    np.testing.assert_array_equal(init.xavier_uniform(shape, Rng(5)), expected)


# --------------------------------------------------------------------------- normal


@pytest.mark.parametrize(
    "policy, shape, std",
    [
        ("xavier_normal", (200, 100), math.sqrt(2 / 300)),
        ("xavier_normal", (32, 16, 3, 3), math.sqrt(2 / (144 + 288))),
        ("he_normal", (200, 100), math.sqrt(2 / 100)),
        ("he_normal", (32, 16, 3, 3), math.sqrt(2 / 144)),
    ],
)
def test_normal_policies_have_the_formula_std(policy, shape, std):
    array = init.initialize(policy, shape, Rng(2)).astype(np.float64)
    assert array.shape == shape
    assert abs(array.mean()) < 0.05 * std
    assert abs(array.std() / std - 1) < 0.05


def test_xavier_normal_gain_scales_the_std():
    plain = init.xavier_normal((10, 10), Rng(3))
    tripled = init.xavier_normal((10, 10), Rng(3), gain=3.0)
    np.testing.assert_allclose(tripled, 3 * plain, rtol=1e-5, atol=1e-7)


def test_float64_dtype():
    array = init.he_normal((5, 5), Rng(0), dtype=np.float64)
    assert array.dtype == np.float64
    np.testing.assert_array_equal(array, init.he_normal((5, 5), Rng(0)).astype(np.float64))


# --------------------------------------------------------------------------- determinism


@pytest.mark.parametrize("policy", ["xavier_uniform", "xavier_normal", "he_uniform", "he_normal"])
def test_random_policies_reproduce_and_diverge(policy):
    a = init.initialize(policy, (8, 5), Rng(42))
    b = init.initialize(policy, (8, 5), Rng(42))
    c = init.initialize(policy, (8, 5), Rng(43))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_successive_initializations_continue_the_stream():
    rng = Rng(9)
    first = init.he_uniform((3, 3), rng)
    second = init.he_uniform((3, 3), rng)
    assert not np.array_equal(first, second)
    both = Rng(9).uniform(-math.sqrt(2), math.sqrt(2), size=18)
    np.testing.assert_array_equal(np.concatenate([first.ravel(), second.ravel()]), both)


# --------------------------------------------------------------------------- errors


def test_unknown_policy_lists_the_valid_ones():
    with pytest.raises(ValueError, match="xavier_uniform") as error:
        init.initialize("glorot", (2, 2), Rng(0))
    assert "glorot" in str(error.value)


@pytest.mark.parametrize("policy", ["xavier_uniform", "xavier_normal", "he_uniform", "he_normal"])
def test_random_policy_without_rng_raises(policy):
    with pytest.raises(ValueError, match="rng"):
        init.initialize(policy, (2, 2))


def test_rng_of_wrong_type_raises():
    with pytest.raises(TypeError):
        init.xavier_uniform((2, 2), np.random.default_rng(0))


@pytest.mark.parametrize("shape", [(), (0, 3), (4, 0)])
def test_random_policies_reject_0d_and_empty_shapes(shape):
    for policy in ("xavier_uniform", "xavier_normal", "he_uniform", "he_normal"):
        with pytest.raises(ValueError):
            init.initialize(policy, shape, Rng(0))


@pytest.mark.parametrize(
    "shape, error", [((-1, 2), ValueError), ((2.0, 2), TypeError), ("3", TypeError)]
)
def test_invalid_shapes(shape, error):
    with pytest.raises(error):
        init.zeros(shape)
    with pytest.raises(error):
        init.he_normal(shape, Rng(0))


def test_invalid_dtype_and_gain():
    with pytest.raises(TypeError):
        init.zeros((2,), dtype=np.int64)
    with pytest.raises(ValueError):
        init.xavier_uniform((2, 2), Rng(0), gain=-1.0)
    with pytest.raises(TypeError):
        init.initialize(3, (2, 2))


# ------------------------------------------------------------- PyTorch's rules, reachable
def test_pytorchs_linear_and_embedding_rules_are_one_argument_away():
    from tensorlib.nn import Embedding, Linear

    layer = Linear(64, 32, weight_init="fan_in_uniform", bias_init="fan_in_uniform",
                   rng=Rng(0))
    bound = 1 / math.sqrt(64)  # U(±1/√in_features), the bias with the weight's fan_in
    for values in (layer.weight.numpy(), layer.bias.numpy()):
        assert np.abs(values).max() <= bound and np.abs(values).max() > 0.9 * bound
    table = Embedding(500, 40, weight_init="normal", rng=Rng(0)).weight.numpy()
    assert abs(table.mean()) < 0.01 and abs(table.std() - 1.0) < 0.01  # N(0, 1)
    default = Linear(64, 32, rng=Rng(0))  # the specification's: Xavier-uniform, zero bias
    assert np.abs(default.weight.numpy()).max() <= math.sqrt(6 / 96)
    assert not default.bias.numpy().any()
    with pytest.raises(ValueError, match="weight_init must be one of .*fan_in_uniform, normal"):
        Linear(2, 3, weight_init="kaiming")


def test_the_first_loss_of_a_bigram_table_shows_the_two_rules():
    """The lecture's bigram model on surnames: PyTorch's N(0, 1) table starts about half a nat
    above ln 27 (3.79 over five seeds, measured with PyTorch 2.13), the specification's
    Xavier-uniform table at ln 27 (docs/departures.md)."""
    import tensorlib as tl
    from tensorlib.data import names
    from tensorlib.nn import Embedding
    from tensorlib.nn import functional as F

    text = "".join(name + "\n" for name in names("last"))[:20000]
    chars = sorted(set(text))
    ids = np.array([chars.index(c) for c in text])
    x, y = tl.tensor(ids[:-1]), tl.tensor(ids[1:])
    losses = {rule: np.mean([F.cross_entropy(Embedding(27, 27, weight_init=rule, rng=Rng(s))(x),
                                             y).item() for s in range(5)])
              for rule in ("xavier_uniform", "normal")}
    assert abs(losses["xavier_uniform"] - math.log(27)) < 0.05
    assert 3.6 < losses["normal"] < 4.0
