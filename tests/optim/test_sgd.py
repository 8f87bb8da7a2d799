"""Tests for tensorlib.optim.SGD and the shared parameter collection (seed: test_nn_sgd)."""

import copy

import numpy as np
import pytest

from tensorlib.engine.tensor import Tensor
from tensorlib.nn.module import Module
from tensorlib.nn.parameter import Parameter
from tensorlib.optim import SGD, collect_parameters

from helpers import state_picture


class Inner(Module):
    def __init__(self):
        super().__init__()
        self.weight = Parameter(np.array([0.5, -1.0, 2.0], dtype=np.float32))
        self.scale = Parameter(np.array([3.0], dtype=np.float32), trainable=False)


class Net(Module):
    """weight (2, 3), bias (3,), inner.weight (3,), inner.scale (1,) frozen."""

    def __init__(self):
        super().__init__()
        self.weight = Parameter(np.arange(6, dtype=np.float32).reshape(2, 3) / 4)
        self.bias = Parameter(np.array([0.1, 0.2, 0.3], dtype=np.float32))
        self.inner = Inner()


def set_grads(net: Net, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    for p in net.parameters():
        if p.trainable:
            p.grad = rng.standard_normal(p.shape).astype(np.float32)


def snapshot(net: Module):
    return [(p.numpy().copy(), p.version) for p in net.parameters()]


def assert_unchanged(net: Module, before) -> None:
    for p, (data, version) in zip(net.parameters(), before, strict=True):
        np.testing.assert_array_equal(p.data, data)
        assert p.version == version


# ----------------------------------------------------------------------- construction


def test_parameters_come_from_the_module_in_order_including_frozen():
    net = Net()
    opt = SGD(net, lr=0.1)
    assert [id(p) for p in opt.parameters] == [id(p) for p in net.parameters()]
    assert len(opt.parameters) == 4
    assert opt.parameters[3] is net.inner.scale


def test_parameters_from_an_iterable_keep_the_given_order():
    net = Net()
    given = [net.inner.weight, net.weight]
    opt = SGD(iter(given), lr=0.1)
    assert [id(p) for p in opt.parameters] == [id(p) for p in given]


def test_collect_parameters_rejections():
    net = Net()
    with pytest.raises(ValueError, match="empty"):
        SGD([], lr=0.1)
    with pytest.raises(ValueError, match="same Parameter"):
        SGD([net.weight, net.bias, net.weight], lr=0.1)
    with pytest.raises(TypeError, match="not a Parameter"):
        SGD([net.weight, Tensor(np.zeros(3, dtype=np.float32))], lr=0.1)
    with pytest.raises(TypeError, match="wrap it in a list"):
        SGD(net.weight, lr=0.1)
    with pytest.raises(TypeError):
        collect_parameters(42)
    with pytest.raises(ValueError, match="empty"):
        SGD(Module(), lr=0.1)


@pytest.mark.parametrize("lr", [-0.1, -1e-9, float("nan"), float("inf")])
def test_invalid_learning_rate_is_rejected(lr):
    with pytest.raises(ValueError, match="lr"):
        SGD(Net(), lr=lr)


@pytest.mark.parametrize("momentum", [-0.1, 1.0, 1.5])
def test_invalid_momentum_is_rejected(momentum):
    with pytest.raises(ValueError, match="momentum"):
        SGD(Net(), lr=0.1, momentum=momentum)


def test_non_numeric_learning_rate_is_a_type_error():
    with pytest.raises(TypeError, match="lr"):
        SGD(Net(), lr="0.1")
    with pytest.raises(TypeError, match="lr"):
        SGD(Net(), lr=True)


def test_learning_rate_attribute_is_settable_and_validated():
    net = Net()
    opt = SGD(net, lr=0.1)
    opt.lr = 0.5
    w0 = net.weight.numpy().copy()
    set_grads(net)
    opt.step()
    np.testing.assert_allclose(net.weight.data, w0 - np.float32(0.5) * net.weight.grad)
    with pytest.raises(ValueError, match="lr"):
        opt.lr = -1.0
    assert opt.lr == 0.5


# ----------------------------------------------------------------------- the update


def test_step_updates_every_trainable_parameter_recursively():
    net = Net()
    set_grads(net)
    before = {name: p.numpy().copy() for name, p in net.named_parameters()}
    SGD(net, lr=0.25).step()
    for name in ("weight", "bias", "inner.weight"):
        p = dict(net.named_parameters())[name]
        expected = before[name] - np.float32(0.25) * p.grad
        np.testing.assert_allclose(p.data, expected, rtol=1e-7)
        assert not np.array_equal(p.data, before[name])
        assert p.dtype == np.float32


def test_step_uses_gradients_from_backward():
    net = Net()
    loss = (net.weight * net.weight).sum() + (net.inner.weight * 3.0).sum()
    loss.backward()
    w0 = net.weight.numpy().copy()
    iw0 = net.inner.weight.numpy().copy()
    SGD(net, lr=0.1).step()
    np.testing.assert_allclose(net.weight.data, w0 - 0.1 * 2 * w0, rtol=1e-6)
    np.testing.assert_allclose(net.inner.weight.data, iw0 - 0.3, rtol=1e-6)
    np.testing.assert_array_equal(net.bias.data, np.float32([0.1, 0.2, 0.3]))  # no grad: skipped


def test_frozen_and_gradless_parameters_are_skipped():
    net = Net()
    net.weight.grad = np.ones((2, 3), dtype=np.float32)
    # a frozen parameter that somehow carries a gradient is still skipped
    net.inner.scale.grad = np.ones(1, dtype=np.float32)
    before = snapshot(net)
    SGD(net, lr=1.0).step()
    np.testing.assert_array_equal(net.weight.data, before[0][0] - 1.0)
    assert net.weight.version == before[0][1] + 1
    for index in (1, 2, 3):  # bias and inner.weight have no grad; inner.scale is frozen
        np.testing.assert_array_equal(net.parameters()[index].data, before[index][0])
        assert net.parameters()[index].version == before[index][1]


def test_step_bumps_versions_once_per_update():
    net = Net()
    opt = SGD(net, lr=0.1)
    versions = [p.version for p in net.parameters()]
    for k in range(1, 4):
        set_grads(net, seed=k)
        opt.step()
        assert [p.version for p in net.parameters()] == [
            versions[0] + k, versions[1] + k, versions[2] + k, versions[3]
        ]


def test_zero_grad_clears_every_gradient():
    net = Net()
    set_grads(net)
    net.inner.scale.grad = np.ones(1, dtype=np.float32)
    opt = SGD(net, lr=0.1)
    opt.zero_grad()
    assert all(p.grad is None for p in net.parameters())
    opt.step()  # nothing to do, nothing changes
    assert [p.version for p in net.parameters()] == [0, 0, 0, 0]


def test_lr_zero_keeps_values_but_counts_as_an_update():
    net = Net()
    set_grads(net)
    w0 = net.weight.numpy().copy()
    SGD(net, lr=0.0).step()
    np.testing.assert_array_equal(net.weight.data, w0)
    assert net.weight.version == 1


# ----------------------------------------------------------------------- momentum


def test_momentum_matches_hand_computation():
    p = Parameter(np.array([1.0, -2.0], dtype=np.float32))
    opt = SGD([p], lr=0.1, momentum=0.9)
    grads = [np.array([1.0, 0.5]), np.array([-1.0, 0.5]), np.array([2.0, 0.0])]
    # buf1 = g1; buf2 = 0.9 buf1 + g2; buf3 = 0.9 buf2 + g3
    bufs = [np.array([1.0, 0.5]), np.array([-0.1, 0.95]), np.array([1.91, 0.855])]
    value = np.array([1.0, -2.0])
    for grad, buf in zip(grads, bufs, strict=True):
        p.grad = grad.astype(np.float32)
        opt.step()
        value = value - 0.1 * buf
        np.testing.assert_allclose(p.data, value, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(opt.state[0]["momentum_buffer"], buf, rtol=1e-6)


def test_no_momentum_keeps_no_buffer():
    net = Net()
    set_grads(net)
    opt = SGD(net, lr=0.1)
    opt.step()
    assert all(entry["momentum_buffer"] is None for entry in opt.state)


# ----------------------------------------------------------------------- all or nothing


def test_mismatched_gradient_shape_changes_nothing():
    net = Net()
    opt = SGD(net, lr=0.1, momentum=0.5)
    set_grads(net)
    opt.step()
    buffers = [None if e["momentum_buffer"] is None else e["momentum_buffer"].copy()
               for e in opt.state]
    set_grads(net, seed=1)
    net.inner.weight.grad.data = np.ones((3, 1), dtype=np.float32)  # the last one is wrong
    before = snapshot(net)
    with pytest.raises(ValueError, match=r"parameter 2 .*inner\.weight.*\(3, 1\)"):
        opt.step()
    assert_unchanged(net, before)
    for entry, buffer in zip(opt.state, buffers, strict=True):
        if buffer is None:
            assert entry["momentum_buffer"] is None
        else:
            np.testing.assert_array_equal(entry["momentum_buffer"], buffer)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_gradient_changes_nothing(bad):
    net = Net()
    set_grads(net)
    net.inner.weight.grad[1] = bad
    before = snapshot(net)
    with pytest.raises(ValueError, match="non-finite"):
        SGD(net, lr=0.1).step()
    assert_unchanged(net, before)


def test_non_finite_parameter_value_changes_nothing():
    net = Net()
    net.inner.weight.data[0] = np.nan  # direct array write, as a corrupted value would be
    set_grads(net)
    before = snapshot(net)
    with pytest.raises(ValueError, match="non-finite"):
        SGD(net, lr=0.1).step()
    assert_unchanged(net, before)


def test_overflowing_update_changes_nothing():
    net = Net()
    set_grads(net)
    net.inner.weight.data[:] = 3e38
    net.inner.weight.grad = np.full(3, -3e38, dtype=np.float32)  # 3e38 + 3e38 overflows
    before = snapshot(net)
    with pytest.raises(ValueError, match="overflow"):
        SGD(net, lr=1.0).step()
    assert_unchanged(net, before)


def test_overflowing_momentum_buffer_changes_nothing():
    p = Parameter(np.zeros(2, dtype=np.float32))
    opt = SGD([p], lr=0.0, momentum=0.99)
    p.grad = np.full(2, 3e38, dtype=np.float32)
    opt.step()
    before = opt.state[0]["momentum_buffer"].copy()
    with pytest.raises(ValueError, match="momentum buffer"):
        opt.step()  # 0.99 * 3e38 + 3e38 overflows
    np.testing.assert_array_equal(opt.state[0]["momentum_buffer"], before)
    assert p.version == 1


# ----------------------------------------------------------------------- state dict


def test_state_dict_round_trip_continues_identically():
    def train(net, opt, seeds):
        for seed in seeds:
            set_grads(net, seed)
            opt.step()

    net_a = Net()
    opt_a = SGD(net_a, lr=0.05, momentum=0.9)
    train(net_a, opt_a, range(3))
    saved_params = net_a.state_dict()
    saved_opt = opt_a.state_dict()
    train(net_a, opt_a, range(3, 6))

    net_b = Net()
    net_b.load_state_dict(saved_params)
    opt_b = SGD(net_b, lr=1.0)
    opt_b.load_state_dict(saved_opt)
    assert opt_b.lr == 0.05 and opt_b.momentum == 0.9
    train(net_b, opt_b, range(3, 6))
    for p_a, p_b in zip(net_a.parameters(), net_b.parameters(), strict=True):
        np.testing.assert_array_equal(p_a.data, p_b.data)


def test_state_dict_is_a_copy():
    net = Net()
    opt = SGD(net, lr=0.1, momentum=0.5)
    set_grads(net)
    opt.step()
    state = opt.state_dict()
    assert list(state) == ["state", "param_groups"]
    assert state["param_groups"] == [{"lr": 0.1, "momentum": 0.5, "params": [0, 1, 2, 3]}]
    state["state"][0]["momentum_buffer"].numpy()[...] = 123.0
    assert not np.any(opt.state[0]["momentum_buffer"] == 123.0)


@pytest.mark.parametrize(
    "corrupt, error, match",
    [
        (lambda s: s["param_groups"][0].pop("momentum"), KeyError, "momentum"),
        (lambda s: s["param_groups"][0].update(lr=-1.0), ValueError, "lr"),
        (lambda s: s["param_groups"][0].update(nesterov=True), ValueError, "nesterov"),
        (lambda s: s["param_groups"][0]["params"].pop(), ValueError, "3 parameters"),
        (lambda s: s["param_groups"][0].update(params=[0, 0, 1, 2]), ValueError, "distinct"),
        (lambda s: s["state"][1].update(momentum_buffer=np.zeros(4)), ValueError, "shape"),
        (lambda s: s["state"][2].update(momentum_buffer=np.array([np.nan, 0, 0])),
         ValueError, "non-finite"),
        (lambda s: s["state"][0].clear(), KeyError, "momentum_buffer"),
        (lambda s: s["state"][0].update(exp_avg=None), ValueError, "exp_avg"),
        (lambda s: s.pop("state"), KeyError, "state"),
    ],
)
def test_load_state_dict_rejects_bad_state_and_changes_nothing(corrupt, error, match):
    net = Net()
    opt = SGD(net, lr=0.1, momentum=0.5)
    set_grads(net)
    opt.step()
    good = opt.state_dict()
    other = SGD(Net(), lr=0.3, momentum=0.2)
    state = other.state_dict()
    state["state"] = copy.deepcopy(good["state"])
    corrupt(state)
    with pytest.raises(error, match=match):
        opt.load_state_dict(state)
    assert state_picture(opt.state_dict()) == state_picture(good)
