"""PyTorch's nn surface that nanoGPT-shaped programs touch, part 2: the in-place
``nn.init`` functions (tensorlib.nn.init_in_place, attributes of tensorlib.nn.init): what
they draw, that they write in place without a graph, their statistics, fans and gains, the
refusals; and, where PyTorch is importable, the same gains, fans and statistics as torch.nn.init."""

import math
import warnings

import numpy as np
import pytest
from scipy import stats

import tensorlib as tl
from tensorlib import Generator
from tensorlib.nn import Parameter, init

RANDOM = ["normal_", "uniform_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
          "kaiming_normal_", "trunc_normal_"]
ALL = [*RANDOM, "zeros_", "ones_", "constant_"]


def call(name, tensor, **kwargs):
    if name == "constant_":
        return init.constant_(tensor, 0.25)
    return getattr(init, name)(tensor, **kwargs)


# --------------------------------------------------------------------------------- the surface
def test_the_functions_are_attributes_of_nn_init_beside_the_policies():
    import tensorlib as torch

    for name in [*ALL, "calculate_gain", "_calculate_fan_in_and_fan_out",
                 "_calculate_correct_fan"]:
        assert callable(getattr(torch.nn.init, name)), name
    assert set(ALL) | {"calculate_gain"} <= set(init.__all__)
    assert init.POLICIES == ("zero", "one", "xavier_uniform", "xavier_normal", "he_uniform",
                             "he_normal")  # the specification's policies are still there
    assert init.fan_in_and_fan_out((7,)) == (7, 7) and init.fan_in_and_fan_out((5, 3)) == (3, 5)


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_each_writes_in_place_without_a_graph_bumping_the_version(name, dtype):
    weight = Parameter(np.full((6, 5), 9.0, dtype=dtype))
    array, version = weight.numpy(), weight.version
    result = call(name, weight, generator=Generator(1)) if name in RANDOM else call(name, weight)
    assert result is weight and weight.numpy() is array  # the same object and memory
    assert weight.dtype == dtype and weight.shape == (6, 5)
    assert weight.version > version and weight.grad_fn is None and weight.requires_grad
    assert not np.any(weight.data == 9.0)


def test_a_change_after_a_forward_pass_is_caught_at_backward():
    weight = Parameter(np.ones((3, 3), np.float32))
    loss = (weight * weight).sum()  # saves the weight
    init.normal_(weight, std=0.1)  # allowed: no graph is recorded
    with pytest.raises(RuntimeError, match="version|in place|modified"):
        loss.backward()


def test_views_change_their_base_and_constants_fit_any_dtype():
    weight = tl.zeros(4, 3)
    init.ones_(weight[1])
    np.testing.assert_array_equal(weight.data.sum(axis=1), [0, 3, 0, 0])
    ids = tl.zeros(3, dtype=tl.int64)
    assert init.constant_(ids, 7).dtype == np.int64 and ids.data.tolist() == [7, 7, 7]


# --------------------------------------------------------------------------------- what they draw
def test_normal_and_uniform_draw_what_the_random_factories_draw():
    shape = (4, 7)
    tensor = tl.zeros(shape)
    init.normal_(tensor, mean=1.5, std=0.5, generator=Generator(3))
    np.testing.assert_array_equal(tensor.data,
                                  tl.normal(1.5, 0.5, shape, generator=Generator(3)).data)
    init.uniform_(tensor, a=-2.0, b=3.0, generator=Generator(4))
    units = tl.rand(shape, generator=Generator(4)).data
    np.testing.assert_array_equal(tensor.data, np.float32(-2.0) + np.float32(5.0) * units)
    double = tl.zeros(shape, dtype=tl.float64)
    init.normal_(double, 1.5, 0.5, generator=Generator(3))
    np.testing.assert_array_equal(double.data, tl.normal(1.5, 0.5, shape, generator=Generator(3),
                                                         dtype=tl.float64).data)


@pytest.mark.parametrize("name", RANDOM)
def test_the_default_generator_is_the_one_manual_seed_seeds(name):
    first, second = tl.zeros(8, 5), tl.zeros(8, 5)
    tl.manual_seed(123)
    call(name, first)
    tl.manual_seed(123)
    call(name, second)
    np.testing.assert_array_equal(first.data, second.data)
    call(name, second)  # the generator moved on
    assert not np.array_equal(first.data, second.data)
    third = tl.zeros(8, 5)
    call(name, third, generator=Generator(123).manual_seed(5))
    assert not np.array_equal(first.data, third.data)


def test_draw_counts_are_as_documented():
    rng = Generator(9)
    init.normal_(tl.zeros(10), generator=rng)  # two draws per element
    init.trunc_normal_(tl.zeros(10), generator=rng)  # one
    init.kaiming_uniform_(tl.zeros(2, 5), generator=rng)  # one
    reference = Generator(9)
    reference.next_u64(20 + 10 + 10)
    assert rng.state == reference.state


# --------------------------------------------------------------------------------- statistics
def test_normal_uniform_and_constant_statistics():
    big = tl.zeros(400, 500)
    init.normal_(big, mean=0.0, std=0.02, generator=Generator(0))
    assert abs(big.data.mean()) < 2e-4 and big.data.std() == pytest.approx(0.02, rel=0.01)
    init.uniform_(big, -0.5, 0.25, generator=Generator(1))
    assert -0.5 <= big.data.min() < -0.499 and 0.249 < big.data.max() <= 0.25
    assert big.data.mean() == pytest.approx(-0.125, abs=2e-3)
    assert init.zeros_(big) is big and not big.data.any()


def test_xavier_and_kaiming_bounds_and_stds():
    weight = tl.zeros(300, 200, 3)  # fan_in 600, fan_out 900
    init.xavier_uniform_(weight, gain=2.0, generator=Generator(0))
    bound = 2.0 * math.sqrt(6.0 / 1500)
    assert np.abs(weight.data).max() <= bound and np.abs(weight.data).max() > 0.999 * bound
    init.xavier_normal_(weight, generator=Generator(1))
    assert weight.data.std() == pytest.approx(math.sqrt(2.0 / 1500), rel=0.01)
    init.kaiming_uniform_(weight, a=math.sqrt(5), generator=Generator(2))  # Linear's default
    bound = 1.0 / math.sqrt(600)
    assert np.abs(weight.data).max() <= bound and np.abs(weight.data).max() > 0.999 * bound
    init.kaiming_normal_(weight, mode="fan_out", nonlinearity="relu", generator=Generator(3))
    assert weight.data.std() == pytest.approx(math.sqrt(2.0 / 900), rel=0.01)
    init.kaiming_normal_(weight, mode="FAN_IN", nonlinearity="tanh", generator=Generator(3))
    assert weight.data.std() == pytest.approx(5.0 / 3 / math.sqrt(600), rel=0.01)


@pytest.mark.parametrize("mean, std, a, b", [
    (0.0, 1.0, -2.0, 2.0),        # PyTorch's defaults
    (0.0, 0.02, -0.04, 0.04),     # timm's usual call, in values
    (1.0, 2.0, 0.0, 10.0),        # asymmetric
    (0.0, 1.0, 5.0, 6.0),         # far in the right tail, where erfinv loses every digit
    (0.0, 1.0, -40.0, -39.0),     # farther still, in the left tail
    (3.0, 0.5, -1.0, 1.0),        # mean 4 std to the right of [a, b]
])
def test_trunc_normal_has_the_truncated_normals_range_and_moments(mean, std, a, b):
    values = init.trunc_normal_(tl.zeros(200_000, dtype=tl.float64), mean, std, a, b,
                                generator=Generator(7)).data
    assert values.min() >= a and values.max() <= b
    expected = stats.truncnorm((a - mean) / std, (b - mean) / std, loc=mean, scale=std)
    assert values.mean() == pytest.approx(expected.mean(), abs=5 * expected.std() / 447)
    assert values.std() == pytest.approx(expected.std(), rel=0.02)
    # the whole distribution: a Kolmogorov-Smirnov test at a strict level
    assert stats.kstest(values[:20_000], expected.cdf).pvalue > 1e-4


def test_trunc_normal_in_float32_stays_in_range():
    values = init.trunc_normal_(tl.zeros(100_000), std=0.02, a=-0.03, b=0.03,
                                generator=Generator(1)).data
    assert values.dtype == np.float32
    assert values.min() >= np.float32(-0.03) and values.max() <= np.float32(0.03)


# --------------------------------------------------------------------------------- fans and gains
@pytest.mark.parametrize("shape, fans", [((5, 3), (3, 5)), ((16, 8, 3, 3), (72, 144)),
                                         ((4, 2, 5), (10, 20)), ((0, 4), (4, 0))])
def test_fans_are_pytorchs(shape, fans):
    assert init._calculate_fan_in_and_fan_out(tl.zeros(shape)) == fans
    assert init._calculate_correct_fan(tl.zeros(shape), "fan_out") == fans[1]


@pytest.mark.parametrize("shape", [(), (7,)])
@pytest.mark.parametrize("name", ["xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
                                  "kaiming_normal_"])
def test_fans_of_fewer_than_two_dims_are_refused(shape, name):
    rng = Generator(0)
    with pytest.raises(ValueError, match="Fan in and fan out can not be computed for tensor "
                                         "with fewer than 2 dimensions"):
        getattr(init, name)(tl.ones(shape), generator=rng)
    assert rng.state == 0  # nothing drawn


def test_calculate_gain_values():
    for linear in ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
                   "conv_transpose2d", "conv_transpose3d", "sigmoid"]:
        assert init.calculate_gain(linear) == 1
    assert init.calculate_gain("tanh") == 5.0 / 3
    assert init.calculate_gain("relu") == math.sqrt(2.0)
    assert init.calculate_gain("leaky_relu") == math.sqrt(2.0 / (1 + 0.01 ** 2))
    assert init.calculate_gain("leaky_relu", 0.2) == math.sqrt(2.0 / 1.04)
    assert init.calculate_gain("leaky_relu", 0) == math.sqrt(2.0)
    assert init.calculate_gain("selu") == 0.75
    with pytest.raises(ValueError, match="Unsupported nonlinearity 'gelu'"):
        init.calculate_gain("gelu")
    with pytest.raises(ValueError, match="True is not a valid number"):
        init.calculate_gain("leaky_relu", True)
    with pytest.raises(TypeError, match="nonlinearity"):
        init.calculate_gain(None)


def test_zero_element_tensors_are_left_alone():
    empty = tl.zeros(0, 4)
    with pytest.warns(UserWarning, match="zero-element tensors is a no-op"):
        assert init.kaiming_uniform_(empty) is empty
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert init.xavier_uniform_(empty).shape == (0, 4)
        assert init.normal_(tl.zeros(0)).shape == (0,)
        assert init.trunc_normal_(tl.zeros(0)).shape == (0,)


# --------------------------------------------------------------------------------- refusals
@pytest.mark.parametrize("call_, error, match", [
    (lambda t: init.normal_(t, std=-1.0), ValueError, "normal_ std"),
    (lambda t: init.normal_(t, mean=float("nan")), ValueError, "normal_ mean"),
    (lambda t: init.uniform_(t, a=1.0, b=0.0), ValueError, "a <= b"),
    (lambda t: init.uniform_(t, a=-1e39, b=1e39), ValueError, "do not fit"),
    (lambda t: init.trunc_normal_(t, a=1.0, b=1.0), ValueError, "a < b"),
    (lambda t: init.trunc_normal_(t, std=-0.5), ValueError, "trunc_normal_ std"),
    (lambda t: init.trunc_normal_(t, std=0.0), ValueError, "trunc_normal_ std"),
    (lambda t: init.xavier_uniform_(t, gain=-1.0), ValueError, "gain"),
    (lambda t: init.kaiming_uniform_(t, mode="fan_avg"), ValueError, "Mode 'fan_avg' not"),
    (lambda t: init.kaiming_normal_(t, nonlinearity="swish"), ValueError, "nonlinearity"),
    (lambda t: init.normal_(t, generator=np.random.default_rng()), TypeError, "generator"),
    (lambda t: init.normal_(t.numpy()), TypeError, "normal_: tensor must be a Tensor"),
    (lambda t: init.zeros_([1.0, 2.0]), TypeError, "zeros_: tensor must be a Tensor"),
    (lambda t: init.uniform_(tl.zeros(3, dtype=tl.int64)), TypeError, "floating point"),
    (lambda t: init.constant_(t, "x"), TypeError, "fill_ value"),
])
def test_bad_input_is_refused_naming_the_argument_and_changes_nothing(call_, error, match):
    tensor = tl.ones(3, 4)
    version = tensor.version
    state = tl.default_rng().state
    with pytest.raises(error, match=match):
        call_(tensor)
    assert np.all(tensor.data == 1.0) and tensor.version == version
    assert tl.default_rng().state == state


def test_a_read_only_tensor_is_refused():
    tensor = tl.ones(2, 2)
    tensor.numpy().flags.writeable = False
    for name in ALL:
        with pytest.raises(ValueError, match="read-only"):
            call(name, tensor)


# --------------------------------------------------------------------------------- PyTorch
def test_gains_and_fans_agree_with_pytorch():
    torch = pytest.importorskip("torch")
    for name in ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                 "conv_transpose3d", "sigmoid", "tanh", "relu", "leaky_relu", "selu"]:
        assert init.calculate_gain(name) == torch.nn.init.calculate_gain(name), name
    for slope in [0, 0.2, 1, 3.5]:
        assert init.calculate_gain("leaky_relu", slope) == \
            torch.nn.init.calculate_gain("leaky_relu", slope)
    for shape in [(5, 3), (16, 8, 3, 3), (4, 2, 5), (2, 3, 4, 5, 6)]:
        assert init._calculate_fan_in_and_fan_out(tl.zeros(shape)) == \
            torch.nn.init._calculate_fan_in_and_fan_out(torch.zeros(shape))
    with pytest.raises(ValueError) as theirs:
        torch.nn.init.xavier_uniform_(torch.zeros(5))
    with pytest.raises(ValueError) as ours:
        init.xavier_uniform_(tl.zeros(5))
    assert str(ours.value).startswith(str(theirs.value))


def test_statistics_agree_with_pytorch():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    shape = (256, 128, 3)

    def both(name, **kwargs):
        theirs = getattr(torch.nn.init, name)(torch.empty(shape), **kwargs).numpy()
        ours = getattr(init, name)(tl.zeros(shape), generator=Generator(0), **kwargs).data
        return ours, theirs

    ours, theirs = both("normal_", mean=0.0, std=0.02)
    assert ours.std() == pytest.approx(theirs.std(), rel=0.02)
    assert abs(ours.mean()) < 3e-4 and abs(theirs.mean()) < 3e-4
    for name, kwargs in [("xavier_uniform_", {"gain": 1.5}), ("uniform_", {"a": -0.3, "b": 0.7}),
                         ("kaiming_uniform_", {"a": math.sqrt(5)}),
                         ("kaiming_uniform_", {"mode": "fan_out", "nonlinearity": "relu"})]:
        ours, theirs = both(name, **kwargs)
        assert ours.min() == pytest.approx(theirs.min(), rel=1e-3, abs=1e-4), name
        assert ours.max() == pytest.approx(theirs.max(), rel=1e-3, abs=1e-4), name
        assert ours.std() == pytest.approx(theirs.std(), rel=0.02), name
    for name, kwargs in [("xavier_normal_", {}), ("kaiming_normal_", {"nonlinearity": "relu"})]:
        ours, theirs = both(name, **kwargs)
        assert ours.std() == pytest.approx(theirs.std(), rel=0.02), name
    ours, theirs = both("trunc_normal_", mean=0.1, std=1.0, a=-1.0, b=0.5)
    assert ours.min() >= -1.0 and theirs.min() >= -1.0 and ours.max() <= 0.5
    assert ours.mean() == pytest.approx(theirs.mean(), abs=0.01)
    assert ours.std() == pytest.approx(theirs.std(), rel=0.02)
