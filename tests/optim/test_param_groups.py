"""Parameter groups (PyTorch's ``[{"params": [...], "lr": ...}, ...]``), SGD's per-parameter
learning rates and nanoGPT's weight-decay groups; trajectories against torch.optim are in
tests/optim/test_optim_torch_parity.py."""

import numpy as np
import pytest

import tensorlib.saving.checkpoint as checkpoint
from tensorlib import Rng
from tensorlib.nn import Decoder, DecoderConfig, Module, Parameter
from tensorlib.optim import SGD, AdamW, WarmupCosineSchedule, weight_decay_groups

from helpers import state_picture


class Net(Module):
    def __init__(self) -> None:
        super().__init__()
        rng = Rng(3)
        self.weight = Parameter(rng.normal(0.0, 1.0, size=(3, 2)).astype(np.float32))
        self.bias = Parameter(rng.normal(0.0, 1.0, size=(2,)).astype(np.float32))
        self.scale = Parameter(rng.normal(0.0, 1.0, size=(4,)).astype(np.float32))


def give_gradients(net, seed=0):
    rng = np.random.default_rng(seed)
    for parameter in net.parameters():
        parameter.grad = rng.standard_normal(parameter.shape).astype(np.float32)


def values(net):
    return [p.numpy().copy() for p in net.parameters()]


def picture(optimizer):
    """Everything a refused call must leave as it was."""
    return state_picture(optimizer.state_dict())


@pytest.mark.parametrize("make", [
    lambda params, **kw: SGD(params, lr=0.1, momentum=0.9, **kw),
    lambda params, **kw: AdamW(params, lr=0.01, weight_decay=0.1, **kw),
], ids=["SGD", "AdamW"])
def test_one_group_is_the_plain_optimizer_bit_for_bit(make):
    plain, grouped = Net(), Net()
    opt_plain = make(plain)
    opt_grouped = make([{"params": grouped.parameters()}])
    for step in range(3):
        give_gradients(plain, step)
        give_gradients(grouped, step)
        opt_plain.step()
        opt_grouped.step()
    for a, b in zip(values(plain), values(grouped), strict=True):
        assert a.tobytes() == b.tobytes()
    assert picture(opt_plain) == picture(opt_grouped)


def test_two_groups_step_as_two_optimizers_would():
    together, apart = Net(), Net()
    opt = AdamW([{"params": [together.weight], "lr": 0.05, "weight_decay": 0.2},
                 {"params": [together.bias, together.scale]}], lr=0.01, weight_decay=0.0)
    first = AdamW([apart.weight], lr=0.05, weight_decay=0.2)
    second = AdamW([apart.bias, apart.scale], lr=0.01, weight_decay=0.0)
    for step in range(3):
        give_gradients(together, step)
        give_gradients(apart, step)
        opt.step()
        first.step()
        second.step()
    for a, b in zip(values(together), values(apart), strict=True):
        np.testing.assert_array_equal(a, b)


def test_group_settings_are_read_and_changed_like_pytorchs():
    net = Net()
    opt = SGD([{"params": [net.weight], "lr": 0.5}, {"params": [net.bias, net.scale]}],
              lr=0.1, momentum=0.9)
    assert [g["lr"] for g in opt.param_groups] == [0.5, 0.1]
    assert [g["momentum"] for g in opt.param_groups] == [0.9, 0.9]
    assert opt.momentum == 0.9
    with pytest.raises(ValueError, match=r"different lr values \(0.5, 0.1\)"):
        _ = opt.lr
    opt.param_groups[1]["lr"] = 0.5
    assert opt.lr == 0.5
    opt.lr = 0.25  # assigning sets every group (what a schedule does)
    assert [g["lr"] for g in opt.param_groups] == [0.25, 0.25]
    schedule = WarmupCosineSchedule(opt, base_lr=1.0, warmup_steps=2, total_steps=4)
    assert [g["lr"] for g in opt.param_groups] == [schedule.last_lr] * 2


@pytest.mark.parametrize("change, error, message", [
    (lambda g: g.__setitem__("lr", -1.0), ValueError, "lr must be a finite number >= 0"),
    (lambda g: g.__setitem__("momentum", 1.5), ValueError, "momentum must be"),
    (lambda g: g.__setitem__("lr", "fast"), TypeError, "lr must be"),
    (lambda g: g.__setitem__("betas", (0.9, 0.9)), KeyError, "unknown hyperparameter 'betas'"),
    (lambda g: g.__setitem__("params", []), TypeError, "'params' are fixed"),
    (lambda g: g.update(lr=-2.0), ValueError, "lr must be"),
])
def test_a_group_refuses_bad_settings_and_keeps_its_own(change, error, message):
    net = Net()
    opt = SGD([{"params": [net.weight]}, {"params": [net.bias], "lr": 0.3}], lr=0.1)
    before = picture(opt)
    with pytest.raises(error, match=message):
        change(opt.param_groups[1])
    assert picture(opt) == before


@pytest.mark.parametrize("build, error, message", [
    (lambda n: SGD([{"params": [n.weight]}, {"lr": 0.1}], lr=0.1), KeyError,
     "parameter group 1 has no 'params'"),
    (lambda n: SGD([{"params": [n.weight], "nesterov": True}], lr=0.1), KeyError,
     "unknown hyperparameter 'nesterov'"),
    (lambda n: SGD([{"params": [n.weight], "lr": -0.1}], lr=0.1), ValueError, "lr must be"),
    (lambda n: SGD([{"params": [n.weight]}, {"params": [n.bias, n.weight]}], lr=0.1),
     ValueError, "same Parameter"),
    (lambda n: SGD([{"params": [n.weight]}, n.bias], lr=0.1), TypeError, "not a mix"),
    (lambda n: SGD([{"params": []}], lr=0.1), ValueError, "empty parameter list"),
    (lambda n: AdamW([{"params": [n.weight], "max_grad_norm": 1.0}]), ValueError,
     "max_grad_norm applies to the whole step"),
    (lambda n: SGD([{"params": [n.weight]}], lr=[0.1]), TypeError,
     "cannot be combined with parameter groups"),
    (lambda n: SGD(n, lr=[0.1, 0.2]), ValueError, r"has 2 rates for 3 parameters"),
    (lambda n: SGD(n, lr=[0.1, -0.2, 0.3]), ValueError, r"lr\[1\] must be a finite number"),
    (lambda n: weight_decay_groups([n.weight], 0.1), TypeError, "module must be a Module"),
    (lambda n: weight_decay_groups(n, -0.1), ValueError, "weight_decay must be"),
])
def test_bad_groups_are_refused_by_name(build, error, message):
    net = Net()
    before = values(net)
    with pytest.raises(error, match=message):
        build(net)
    assert all(a.tobytes() == b.tobytes() for a, b in zip(before, values(net), strict=True))


def test_per_parameter_learning_rates():
    net = Net()
    give_gradients(net)
    grads = [p.grad.numpy().copy() for p in net.parameters()]
    start = values(net)
    opt = SGD(net, lr=[0.0, 0.5, 2.0])
    opt.step()
    for rate, before, after, grad in zip([0.0, 0.5, 2.0], start, values(net), grads,
                                         strict=True):
        np.testing.assert_allclose(after, before - np.float32(rate) * grad, rtol=1e-6)
    assert opt.describe(2) == "parameter 2 ('scale', shape (4,))"


@pytest.mark.parametrize("kind", ["SGD", "AdamW"])
def test_grouped_state_round_trips_and_a_mismatched_one_changes_nothing(kind):
    def make(net):
        groups = [{"params": [net.weight], "lr": 0.05}, {"params": [net.bias, net.scale]}]
        return SGD(groups, lr=0.1, momentum=0.9) if kind == "SGD" else AdamW(
            groups, lr=0.01, max_grad_norm=2.0)

    net = Net()
    opt = make(net)
    give_gradients(net)
    opt.step()
    state = opt.state_dict()
    assert [g["params"] for g in state["param_groups"]] == [[0], [1, 2]]
    other_net = Net()
    other = make(other_net)
    other.param_groups[0]["lr"] = 0.7
    other.load_state_dict(state)
    assert picture(other) == picture(opt)
    # a state for other groups, or one group, is refused before anything changes
    plain = SGD(Net(), lr=0.1) if kind == "SGD" else AdamW(Net())
    before = picture(plain)
    with pytest.raises(ValueError,
                       match="state has 2 parameter groups, this optimizer has 1 parameter group$"):
        plain.load_state_dict(state)
    assert picture(plain) == before
    with pytest.raises(ValueError,
                       match="state has 1 parameter group, this optimizer has 2 parameter groups"):
        other.load_state_dict(plain.state_dict())
    regrouped = [{"params": [other_net.weight, other_net.bias]},
                 {"params": [other_net.scale]}]
    third = SGD(regrouped, lr=0.1) if kind == "SGD" else AdamW(regrouped)
    before = picture(third)
    with pytest.raises(ValueError, match="group 0 of the state holds 1 parameters, this "
                       "optimizer's holds 2"):
        third.load_state_dict(state)
    assert picture(third) == before
    broken = opt.state_dict()
    broken["param_groups"][1]["lr"] = -1.0
    before = picture(other)
    with pytest.raises(ValueError, match="lr must be"):
        other.load_state_dict(broken)
    assert picture(other) == before


def test_weight_decay_groups_split_matrices_from_vectors():
    config = DecoderConfig(vocabulary_size=7, context_length=4, channels=8, heads=2, layers=2)
    model = Decoder(config, rng=Rng(0))
    groups = weight_decay_groups(model, 0.1)
    named = dict(model.named_parameters())
    names = {id(p): name for name, p in named.items()}
    decayed = [names[id(p)] for p in groups[0]["params"]]
    plain = [names[id(p)] for p in groups[1]["params"]]
    assert [g["weight_decay"] for g in groups] == [0.1, 0.0]
    assert all(named[n].ndim >= 2 and "bias" not in n for n in decayed)
    assert all(named[n].ndim == 1 or n.endswith("qkv_bias") for n in plain)
    assert "blocks.0.attention.qkv_weight" in decayed and "blocks.0.attention.qkv_bias" in plain
    assert "blocks.1.mlp_norm.weight" in plain
    assert "token_embedding.weight" in decayed
    assert sorted(decayed + plain) == sorted(named)
    opt = AdamW(groups, lr=1e-3)
    assert opt.lr == 1e-3 and len(opt.parameters) == len(named)
    only_matrices = Module()
    only_matrices.weight = Parameter(np.zeros((2, 2), np.float32))
    assert len(weight_decay_groups(only_matrices, 0.1)) == 1  # no empty group


def test_checkpoints_write_v1_for_one_group_and_refuse_several(tmp_path):
    config = DecoderConfig(vocabulary_size=7, context_length=4, channels=8, heads=2, layers=1)
    model = Decoder(config, rng=Rng(0))
    plain_path, grouped_path = tmp_path / "plain.tlckpt", tmp_path / "grouped.tlckpt"
    checkpoint.save(plain_path, model, AdamW(model, lr=1e-3))
    checkpoint.save(grouped_path, model, AdamW([{"params": model.parameters()}], lr=1e-3))
    assert plain_path.read_bytes() == grouped_path.read_bytes()
    several = AdamW(weight_decay_groups(model, 0.1), lr=1e-3)
    with pytest.raises(ValueError, match="stores one set of AdamW settings; this optimizer has "
                                         "2 parameter groups"):
        checkpoint.save(plain_path, model, several)
    assert plain_path.read_bytes() == grouped_path.read_bytes()  # left as it was
    assert not (tmp_path / "plain.tlckpt.tmp").exists()
    before = picture(several)
    with pytest.raises(ValueError, match="2 parameter groups"):
        checkpoint.load(plain_path, model, several)
    assert picture(several) == before
