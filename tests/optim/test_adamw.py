"""Tests for tensorlib.optim.AdamW (seed: test_nn_adamw)."""

import copy
import math

import numpy as np
import pytest

import tensorlib as tl
from tensorlib.nn.module import Module
from tensorlib.nn.parameter import Parameter
from tensorlib.optim import AdamW

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
        self.weight = Parameter(np.arange(6, dtype=np.float32).reshape(2, 3) / 4 - 0.5)
        self.bias = Parameter(np.array([0.1, 0.2, 0.3], dtype=np.float32))
        self.inner = Inner()


def set_grads(net: Module, seed: int = 0, scale: float = 1.0) -> None:
    rng = np.random.default_rng(seed)
    for p in net.parameters():
        if p.trainable:
            p.grad = (scale * rng.standard_normal(p.shape)).astype(np.float32)


def snapshot(net: Module, opt: AdamW):
    params = [(p.numpy().copy(), p.version) for p in net.parameters()]
    return params, opt.state_dict()


def assert_unchanged(net: Module, opt: AdamW, before) -> None:
    params, state = before
    for p, (data, version) in zip(net.parameters(), params, strict=True):
        np.testing.assert_array_equal(p.data, data)
        assert p.version == version
    assert state_picture(opt.state_dict()) == state_picture(state)


# ----------------------------------------------------------------------- configuration


def test_defaults_match_pytorch():
    opt = AdamW(Net())
    assert opt.lr == 1e-3
    assert opt.betas == (0.9, 0.999)
    assert opt.eps == 1e-8
    assert opt.weight_decay == 0.01
    assert opt.max_grad_norm == 0.0


def test_state_is_allocated_at_construction():
    net = Net()
    opt = AdamW(net)
    assert len(opt.state) == len(opt.parameters) == 4
    for p, entry in zip(opt.parameters, opt.state, strict=True):
        assert entry["step"] == 0
        for key in ("first_moment", "second_moment"):
            assert entry[key].shape == p.shape
            assert entry[key].dtype == p.dtype
            assert not entry[key].any()


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"lr": -1e-3}, "lr"),
        ({"lr": float("nan")}, "lr"),
        ({"betas": (1.0, 0.999)}, "beta1"),
        ({"betas": (-0.1, 0.999)}, "beta1"),
        ({"betas": (0.9, 1.0)}, "beta2"),
        ({"betas": (0.9, 1.5)}, "beta2"),
        ({"eps": 0.0}, "eps"),
        ({"eps": -1e-8}, "eps"),
        ({"weight_decay": -0.01}, "weight_decay"),
        ({"max_grad_norm": -1.0}, "max_grad_norm"),
        ({"max_grad_norm": float("inf")}, "max_grad_norm"),
    ],
)
def test_invalid_config_is_rejected(kwargs, match):
    with pytest.raises(ValueError, match=match):
        AdamW(Net(), **kwargs)


def test_beta_bounds_are_half_open():
    AdamW(Net(), betas=(0.0, 0.0))  # 0 is allowed
    AdamW(Net(), betas=(0.999999, 0.999999))
    with pytest.raises(TypeError, match="pair"):
        AdamW(Net(), betas=(0.9,))
    with pytest.raises(TypeError, match="beta2"):
        AdamW(Net(), betas=(0.9, "0.999"))


def test_invalid_module_or_parameter_list_is_rejected():
    with pytest.raises(ValueError, match="empty"):
        AdamW(Module())
    with pytest.raises(TypeError):
        AdamW([np.zeros(3, dtype=np.float32)])
    net = Net()
    with pytest.raises(ValueError, match="same Parameter"):
        AdamW([net.bias, net.bias])


def test_attributes_are_settable_and_validated():
    opt = AdamW(Net())
    opt.lr = 0.5
    opt.betas = [0.8, 0.9]
    opt.weight_decay = 0.0
    assert (opt.lr, opt.betas, opt.weight_decay) == (0.5, (0.8, 0.9), 0.0)
    with pytest.raises(ValueError, match="eps"):
        opt.eps = 0.0
    assert opt.eps == 1e-8


# ----------------------------------------------------------------------- the update by hand


def test_first_step_by_hand():
    # lr=0.1, wd=0.01. After one step m_hat = g and v_hat = g**2, so the update is
    # lr * (g / (|g| + eps) + wd * p) = lr * (sign(g) + wd * p) where g != 0.
    p = Parameter(np.array([1.0, -2.0, 0.5], dtype=np.float32))
    opt = AdamW([p], lr=0.1, weight_decay=0.01)
    p.grad = np.array([0.5, -0.25, 0.0], dtype=np.float32)
    opt.step()
    # 1.0 - 0.1 * (1 + 0.01 * 1.0) = 0.899
    # -2.0 - 0.1 * (-1 + 0.01 * -2.0) = -1.898
    # 0.5 - 0.1 * (0 + 0.01 * 0.5) = 0.4995       (g = 0: only the decay acts)
    np.testing.assert_allclose(p.data, [0.899, -1.898, 0.4995], rtol=1e-6)
    entry = opt.state[0]
    assert entry["step"] == 1
    np.testing.assert_allclose(entry["first_moment"], [0.05, -0.025, 0.0], rtol=1e-6)
    np.testing.assert_allclose(entry["second_moment"], [0.00025, 0.0000625, 0.0], rtol=1e-5)
    assert p.dtype == entry["first_moment"].dtype == entry["second_moment"].dtype == np.float32


def test_second_step_by_hand():
    p = Parameter(np.array([1.0, -2.0], dtype=np.float32))
    opt = AdamW([p], lr=0.1, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
    g1, g2 = [0.5, -0.25], [-1.0, 0.75]
    p.grad = np.array(g1, dtype=np.float32)
    opt.step()
    p.grad = np.array(g2, dtype=np.float32)
    opt.step()
    for i, p0 in enumerate([1.0, -2.0]):
        m1 = 0.1 * g1[i]
        v1 = 0.001 * g1[i] ** 2
        p1 = p0 - 0.1 * (m1 / 0.1 / (math.sqrt(v1 / 0.001) + 1e-8) + 0.01 * p0)
        m2 = 0.9 * m1 + 0.1 * g2[i]
        v2 = 0.999 * v1 + 0.001 * g2[i] ** 2
        m_hat = m2 / (1 - 0.9**2)
        v_hat = v2 / (1 - 0.999**2)
        p2 = p1 - 0.1 * (m_hat / (math.sqrt(v_hat) + 1e-8) + 0.01 * p1)
        assert p.numpy()[i] == pytest.approx(p2, rel=1e-6)
        assert opt.state[0]["first_moment"][i] == pytest.approx(m2, rel=1e-6)
        assert opt.state[0]["second_moment"][i] == pytest.approx(v2, rel=1e-5)
    assert opt.state[0]["step"] == 2
    # first element: m2 = 0.045 - 0.1 = -0.055, m_hat = -0.055 / 0.19
    assert opt.state[0]["first_moment"][0] == pytest.approx(-0.055, rel=1e-6)


def test_weight_decay_is_decoupled_from_the_gradient_scaling():
    # Same parameters and gradients; the only difference is wd. The difference of the two
    # updates must be exactly lr * wd * p (with L2 regularisation it would be divided by
    # sqrt(v_hat) and mixed into the moments).
    values = np.array([2.0, -4.0, 0.25], dtype=np.float32)
    grads = [np.array([0.3, -0.2, 0.1], dtype=np.float32),
             np.array([-0.1, 0.5, 0.2], dtype=np.float32)]
    p_wd, p_plain = Parameter(values.copy()), Parameter(values.copy())
    opt_wd = AdamW([p_wd], lr=0.01, weight_decay=0.5)
    opt_plain = AdamW([p_plain], lr=0.01, weight_decay=0.0)
    p_wd.grad = grads[0].copy()
    p_plain.grad = grads[0].copy()
    opt_wd.step()
    opt_plain.step()
    np.testing.assert_allclose(p_plain.data - p_wd.data, 0.01 * 0.5 * values, rtol=1e-4)
    # the moments do not see the decay
    np.testing.assert_array_equal(opt_wd.state[0]["first_moment"],
                                  opt_plain.state[0]["first_moment"])
    np.testing.assert_array_equal(opt_wd.state[0]["second_moment"],
                                  opt_plain.state[0]["second_moment"])


def test_zero_gradient_only_decays():
    p = Parameter(np.array([3.0, -1.0], dtype=np.float32))
    opt = AdamW([p], lr=0.1, weight_decay=0.2)
    for _ in range(3):
        p.grad = np.zeros(2, dtype=np.float32)
        opt.step()
    np.testing.assert_allclose(p.data, np.array([3.0, -1.0]) * (1 - 0.1 * 0.2) ** 3, rtol=1e-6)


def test_update_through_module_children_skips_frozen_and_gradless():
    net = Net()
    set_grads(net)
    net.bias.grad = None
    net.inner.scale.grad = np.ones(1, dtype=np.float32)  # frozen: ignored even with a grad
    before = {name: (p.numpy().copy(), p.version) for name, p in net.named_parameters()}
    opt = AdamW(net, lr=0.1)
    opt.step()
    changed = {name for name, p in net.named_parameters()
               if not np.array_equal(p.data, before[name][0])}
    assert changed == {"weight", "inner.weight"}
    for name, p in net.named_parameters():
        assert p.version == before[name][1] + (1 if name in changed else 0)
    assert [entry["step"] for entry in opt.state] == [1, 0, 1, 0]
    assert not opt.state[1]["first_moment"].any()


def test_step_counters_are_per_parameter():
    net = Net()
    opt = AdamW(net, lr=0.1)
    set_grads(net)
    opt.step()
    net.bias.grad = None
    opt.step()
    assert [entry["step"] for entry in opt.state] == [2, 1, 2, 0]


def test_versions_bump_once_per_step_and_zero_grad_clears():
    net = Net()
    opt = AdamW(net)
    for k in range(1, 4):
        set_grads(net, seed=k)
        opt.step()
        assert [p.version for p in net.parameters()] == [k, k, k, 0]
    opt.zero_grad()
    assert all(p.grad is None for p in net.parameters())
    opt.step()
    assert [p.version for p in net.parameters()] == [3, 3, 3, 0]


def test_float64_parameters_stay_float64():
    p = Parameter(np.array([1.0, 2.0]), dtype=np.float64)
    opt = AdamW([p], lr=0.1)
    p.grad = np.array([0.5, 0.25])
    opt.step()
    assert p.dtype == np.float64 and opt.state[0]["first_moment"].dtype == np.float64
    expected = [1.0 - 0.1 * (0.5 / (0.5 + 1e-8) + 0.01 * 1.0),
                2.0 - 0.1 * (0.25 / (0.25 + 1e-8) + 0.01 * 2.0)]
    np.testing.assert_allclose(p.data, expected, rtol=1e-14)


# ----------------------------------------------------------------------- clipping in step


def run_two_steps(max_grad_norm, first, second):
    """Two AdamW steps on p = [1, -2, 3] with the given gradients."""
    p = Parameter(np.array([1.0, -2.0, 3.0], dtype=np.float32))
    opt = AdamW([p], lr=0.1, max_grad_norm=max_grad_norm)
    for grad in (first, second):
        p.grad = np.array(grad, dtype=np.float32)
        opt.step()
    return p, opt


def test_clipping_above_the_threshold_scales_the_gradients_used():
    small = [0.1, 0.2, -0.2]  # norm 0.3: not clipped
    big = [3.0, 0.0, -4.0]  # norm 5: clipped to norm 1
    p_clip, opt_clip = run_two_steps(1.0, small, big)
    scale = 1.0 / (5.0 + 1e-6)
    p_ref, _ = run_two_steps(0.0, small, [3.0 * scale, 0.0, -4.0 * scale])
    p_raw, _ = run_two_steps(0.0, small, big)
    np.testing.assert_allclose(p_clip.data, p_ref.data, rtol=1e-6)
    assert not np.allclose(p_clip.data, p_raw.data, rtol=1e-4)
    # the gradient itself is not modified
    np.testing.assert_array_equal(p_clip.grad, np.float32(big))
    # moments saw the clipped gradient: m = 0.9 * 0.1 * g1 + 0.1 * g2 / 5
    np.testing.assert_allclose(opt_clip.state[0]["first_moment"],
                               0.09 * np.array(small) + 0.1 * np.array(big) * scale, rtol=1e-5)


def test_clipping_below_the_threshold_does_nothing():
    first, second = [0.1, 0.2, -0.2], [3.0, 0.0, -4.0]
    p_clip, _ = run_two_steps(5.5, first, second)
    p_raw, _ = run_two_steps(0.0, first, second)
    np.testing.assert_array_equal(p_clip.data, p_raw.data)


def test_clipping_uses_the_global_norm_over_all_parameters():
    # each gradient alone has norm 3 or 4 (< 4.5), together 5 (> 4.5): both are scaled
    a, b = Parameter(np.float32([1.0])), Parameter(np.float32([2.0]))
    a_ref, b_ref = Parameter(np.float32([1.0])), Parameter(np.float32([2.0]))
    opt = AdamW([a, b], lr=0.1, max_grad_norm=4.5)
    ref = AdamW([a_ref, b_ref], lr=0.1)
    scale = 4.5 / (5.0 + 1e-6)
    for grads in ([0.1, 0.1], [3.0, 4.0]):
        a.grad, b.grad = np.float32([grads[0]]), np.float32([grads[1]])
        factor = scale if grads == [3.0, 4.0] else 1.0
        a_ref.grad, b_ref.grad = np.float32([grads[0] * factor]), np.float32([grads[1] * factor])
        opt.step()
        ref.step()
    np.testing.assert_allclose(opt.state[1]["first_moment"], ref.state[1]["first_moment"],
                               rtol=1e-6)
    np.testing.assert_allclose([a.data[0], b.data[0]], [a_ref.data[0], b_ref.data[0]],
                               rtol=1e-6)


# ----------------------------------------------------------------------- all or nothing


def trained_net_and_optimizer(**kwargs):
    net = Net()
    opt = AdamW(net, lr=0.1, **kwargs)
    set_grads(net, seed=0)
    opt.step()
    set_grads(net, seed=1)
    return net, opt


def test_mismatched_gradient_shape_changes_nothing():
    net, opt = trained_net_and_optimizer()
    net.inner.weight.grad.data = np.ones((1, 3), dtype=np.float32)  # the setter would refuse
    before = snapshot(net, opt)
    with pytest.raises(ValueError, match=r"parameter 2 .*inner\.weight.*\(1, 3\)"):
        opt.step()
    assert_unchanged(net, opt, before)


@pytest.mark.parametrize("max_grad_norm", [0.0, 1.0])
def test_nan_gradient_changes_nothing(max_grad_norm):
    net, opt = trained_net_and_optimizer(max_grad_norm=max_grad_norm)
    net.inner.weight.grad[2] = np.nan
    before = snapshot(net, opt)
    with pytest.raises(ValueError, match="non-finite"):
        opt.step()
    assert_unchanged(net, opt, before)


def test_non_finite_parameter_changes_nothing():
    net, opt = trained_net_and_optimizer()
    net.inner.weight.data[0] = np.inf
    before = snapshot(net, opt)
    with pytest.raises(ValueError, match="non-finite"):
        opt.step()
    assert_unchanged(net, opt, before)


def test_overflowing_update_changes_nothing():
    net, opt = trained_net_and_optimizer(weight_decay=0.0)
    net.inner.weight.data[:] = 3e38
    net.inner.weight.grad = np.full(3, -1.0, dtype=np.float32)
    opt.lr = 1e38  # update ~ +1e38 on 3e38: overflows float32
    before = snapshot(net, opt)
    with pytest.raises(ValueError, match="value of parameter 2"):
        opt.step()
    assert_unchanged(net, opt, before)


def test_overflowing_second_moment_changes_nothing():
    net, opt = trained_net_and_optimizer()
    net.inner.weight.grad = np.full(3, 3e38, dtype=np.float32)  # g**2 overflows
    before = snapshot(net, opt)
    with pytest.raises(ValueError, match="second moment"):
        opt.step()
    assert_unchanged(net, opt, before)


# ----------------------------------------------------------------------- state dict


def train(net, opt, seeds):
    for seed in seeds:
        set_grads(net, seed)
        opt.step()


def test_state_dict_round_trip_continues_identically():
    net_a = Net()
    opt_a = AdamW(net_a, lr=0.05, betas=(0.8, 0.99), eps=1e-7, weight_decay=0.1,
                  max_grad_norm=1.0)
    train(net_a, opt_a, range(4))
    saved_params = net_a.state_dict()
    saved_opt = opt_a.state_dict()
    train(net_a, opt_a, range(4, 9))

    net_b = Net()
    net_b.load_state_dict(saved_params)
    opt_b = AdamW(net_b)
    opt_b.load_state_dict(saved_opt)
    assert opt_b.config() == {"lr": 0.05, "betas": (0.8, 0.99), "eps": 1e-7,
                              "weight_decay": 0.1, "max_grad_norm": 1.0}
    train(net_b, opt_b, range(4, 9))
    for p_a, p_b in zip(net_a.parameters(), net_b.parameters(), strict=True):
        np.testing.assert_array_equal(p_a.data, p_b.data)
    assert opt_b.state_dict()["state"][0]["step"].item() == 9


def test_state_dict_layout_is_pytorchs_and_copies():
    net, opt = trained_net_and_optimizer()
    state = opt.state_dict()
    assert list(state) == ["state", "param_groups", "max_grad_norm"]
    assert list(state["param_groups"][0]) == ["lr", "betas", "eps", "weight_decay", "params"]
    assert state["param_groups"][0]["params"] == [0, 1, 2, 3]
    assert list(state["state"]) == [0, 1, 2]  # the frozen parameter 3 was never updated
    entry = state["state"][0]
    assert list(entry) == ["step", "exp_avg", "exp_avg_sq"]
    assert entry["step"].shape == () and entry["step"].dtype == np.float32
    assert entry["step"].item() == 1.0
    entry["exp_avg"].numpy()[...] = 7.0
    assert not np.any(opt.state[0]["first_moment"] == 7.0)


def test_load_state_dict_copies_its_input_and_restarts_parameters_without_state():
    net, opt = trained_net_and_optimizer()
    state = opt.state_dict()
    other_net = Net()
    other = AdamW(other_net)
    train(other_net, other, [3])
    other.load_state_dict(state)
    state["state"][0]["exp_avg"].numpy()[...] = 7.0
    assert not np.any(other.state[0]["first_moment"] == 7.0)
    assert other.state[3]["step"] == 0 and not other.state[3]["first_moment"].any()


@pytest.mark.parametrize(
    "corrupt, error, match",
    [
        (lambda s: s.pop("param_groups"), KeyError, "param_groups"),
        (lambda s: s.pop("max_grad_norm"), KeyError, "max_grad_norm"),
        (lambda s: s["param_groups"][0].pop("eps"), KeyError, "eps"),
        (lambda s: s["param_groups"][0].update(betas=(0.9, 1.0)), ValueError, "beta2"),
        (lambda s: s["param_groups"][0].update(weight_decay=-1.0), ValueError, "weight_decay"),
        (lambda s: s["param_groups"][0].update(amsgrad=True), ValueError, "amsgrad"),
        (lambda s: s["param_groups"][0]["params"].append(4), ValueError, "5 parameters"),
        (lambda s: s["param_groups"].append(s["param_groups"][0]), ValueError, "2 parameter"),
        (lambda s: s["state"].update({7: s["state"][0]}), ValueError, "parameter id 7"),
        (lambda s: s["state"][2].update(exp_avg=np.zeros((3, 1))), ValueError, "shape"),
        (lambda s: s["state"][2].update(step=-1), ValueError, "step"),
        (lambda s: s["state"][2].update(step=1.5), TypeError, "step"),
        (lambda s: s["state"][2].update(step=tl.tensor(1.5)), ValueError, "whole number"),
        (lambda s: s["state"][2].pop("exp_avg_sq"), KeyError, "exp_avg_sq"),
        (lambda s: s["state"][2].update(momentum_buffer=None), ValueError, "momentum_buffer"),
        (lambda s: s["state"][1].update(exp_avg_sq=-np.ones(3)), ValueError, "negative"),
        (lambda s: s["state"][0].update(exp_avg=np.full((2, 3), np.nan)), ValueError,
         "non-finite"),
        (lambda s: s.update(state=[]), TypeError, "'state' must be a dict"),
    ],
)
def test_load_state_dict_rejects_bad_state_and_changes_nothing(corrupt, error, match):
    net, opt = trained_net_and_optimizer()
    donor, donor_opt = trained_net_and_optimizer(weight_decay=0.3)
    train(donor, donor_opt, [5])
    state = copy.deepcopy(donor_opt.state_dict())
    corrupt(state)
    before = snapshot(net, opt)
    with pytest.raises(error, match=match):
        opt.load_state_dict(state)
    assert_unchanged(net, opt, before)


def test_the_pytorch_arguments_fused_and_foreach_are_accepted_and_change_nothing():
    import inspect

    parameters = inspect.signature(AdamW).parameters
    assert parameters["fused"].default is None and parameters["foreach"].default is None
    nets = [Net() for _ in range(3)]
    optimizers = [AdamW(nets[0], lr=0.1), AdamW(nets[1], lr=0.1, fused=True),
                  AdamW(nets[2], lr=0.1, foreach=False)]
    for net, opt in zip(nets, optimizers, strict=True):
        set_grads(net)
        opt.step()
    for a, b, c in zip(*(net.parameters() for net in nets), strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        np.testing.assert_array_equal(a.numpy(), c.numpy())
    with pytest.raises(TypeError, match="fused must be None, True or False"):
        AdamW(Net(), fused="yes")


def test_zero_grad_sets_none_by_default_and_zeros_in_place_when_asked():
    net, opt = trained_net_and_optimizer()
    grad = net.weight.grad
    opt.zero_grad(set_to_none=False)
    assert net.weight.grad is grad and not grad.numpy().any()
    opt.zero_grad()
    assert all(p.grad is None for p in net.parameters())
    opt.zero_grad(set_to_none=False)  # no gradient: nothing to zero, as PyTorch
    assert all(p.grad is None for p in net.parameters())
