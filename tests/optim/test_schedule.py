"""Tests for the warm-up + cosine learning-rate schedule."""

import math

import numpy as np
import pytest

from tensorlib.nn.parameter import Parameter
from tensorlib.optim import SGD, AdamW, WarmupCosineSchedule, warmup_cosine_lr

CONFIG = {"base_lr": 1.0, "warmup_steps": 4, "total_steps": 12, "min_lr": 0.1}


@pytest.mark.parametrize(
    "step, expected",
    [
        (0, 0.0),  # warm-up starts from 0 ...
        (1, 0.25),  # ... so the first update uses base_lr / warmup_steps
        (2, 0.5),
        (4, 1.0),  # end of warm-up: base_lr
        (6, 0.1 + 0.45 * (1 + math.cos(math.pi / 4))),  # a quarter of the way: 0.8681980...
        (8, 0.55),  # halfway through the decay: (base + min) / 2
        (12, 0.1),  # total_steps: min_lr
        (13, 0.1),  # constant afterwards
        (1000, 0.1),
    ],
)
def test_values_at_key_steps(step, expected):
    assert warmup_cosine_lr(step, **CONFIG) == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_quarter_point_written_out():
    assert warmup_cosine_lr(6, **CONFIG) == pytest.approx(0.8681980515, rel=1e-9)


def test_shape_rises_then_falls():
    values = [warmup_cosine_lr(s, 3e-4, 10, 50, 1e-5) for s in range(60)]
    assert all(a < b for a, b in zip(values[:10], values[1:11], strict=True))
    assert all(a >= b for a, b in zip(values[10:-1], values[11:], strict=True))
    assert max(values) == pytest.approx(3e-4)
    assert values[-1] == pytest.approx(1e-5)


def test_no_warmup_starts_at_base_lr():
    assert warmup_cosine_lr(0, 2.0, 0, 10) == 2.0
    assert warmup_cosine_lr(5, 2.0, 0, 10) == pytest.approx(1.0)
    assert warmup_cosine_lr(10, 2.0, 0, 10) == 0.0


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"base_lr": -1.0}, ValueError, "base_lr"),
        ({"base_lr": float("nan")}, ValueError, "base_lr"),
        ({"warmup_steps": -1}, ValueError, "warmup_steps"),
        ({"warmup_steps": 13}, ValueError, "warmup_steps"),
        ({"total_steps": 0, "warmup_steps": 0}, ValueError, "total_steps"),
        ({"min_lr": 2.0}, ValueError, "min_lr"),
        ({"min_lr": -0.1}, ValueError, "min_lr"),
        ({"warmup_steps": 2.5}, TypeError, "warmup_steps"),
        ({"total_steps": "12"}, TypeError, "total_steps"),
    ],
)
def test_invalid_configuration_is_rejected(kwargs, error, match):
    config = {**CONFIG, **kwargs}
    with pytest.raises(error, match=match):
        warmup_cosine_lr(1, **config)
    with pytest.raises(error, match=match):
        WarmupCosineSchedule(SGD([Parameter(np.zeros(1, dtype=np.float32))], lr=0.1), **config)


def test_negative_step_is_rejected():
    with pytest.raises(ValueError, match="step"):
        warmup_cosine_lr(-1, **CONFIG)


def test_schedule_drives_sgd_learning_rate():
    p = Parameter(np.zeros(1, dtype=np.float32))
    opt = SGD([p], lr=123.0)
    schedule = WarmupCosineSchedule(opt, **CONFIG)
    assert opt.lr == schedule.last_lr == 0.25  # the rate of the first update
    used = []
    for _ in range(14):
        p.grad = np.ones(1, dtype=np.float32)
        before = float(p.data[0])
        opt.step()
        used.append(before - float(p.data[0]))  # lr * 1
        schedule.step()
    expected = [warmup_cosine_lr(s, **CONFIG) for s in range(1, 15)]
    np.testing.assert_allclose(used, expected, rtol=1e-5)
    assert schedule.last_step == 14
    assert schedule.last_lr == opt.lr == schedule.lr_at(15) == 0.1


def test_schedule_drives_adamw_and_lr_at_is_pure():
    opt = AdamW([Parameter(np.ones(2, dtype=np.float32))])
    schedule = WarmupCosineSchedule(opt, 3e-3, 2, 6)
    assert schedule.lr_at(4) == pytest.approx(1.5e-3)
    assert schedule.last_step == 0 and opt.lr == pytest.approx(1.5e-3)  # lr_at(1)
    assert schedule.step() == pytest.approx(3e-3)
    assert opt.lr == pytest.approx(3e-3)


def test_optimizer_without_lr_is_rejected():
    with pytest.raises(TypeError, match="lr"):
        WarmupCosineSchedule(object(), **CONFIG)


def test_state_dict_round_trip():
    opt_a = SGD([Parameter(np.zeros(1, dtype=np.float32))], lr=0.1)
    schedule_a = WarmupCosineSchedule(opt_a, **CONFIG)
    for _ in range(5):
        schedule_a.step()
    state = schedule_a.state_dict()
    opt_b = AdamW([Parameter(np.zeros(1, dtype=np.float32))])
    schedule_b = WarmupCosineSchedule(opt_b, 5.0, 0, 3)
    schedule_b.load_state_dict(state)
    assert schedule_b.last_step == 5
    assert opt_b.lr == schedule_b.last_lr == warmup_cosine_lr(6, **CONFIG)
    for _ in range(4):
        assert schedule_a.step() == schedule_b.step()


@pytest.mark.parametrize(
    "corrupt, error, match",
    [
        (lambda s: s.pop("last_step"), KeyError, "last_step"),
        (lambda s: s.update(last_step=-2), ValueError, "last_step"),
        (lambda s: s.update(min_lr=9.0), ValueError, "min_lr"),
        (lambda s: s.update(type="StepLR"), ValueError, "StepLR"),
        (lambda s: s.update(gamma=0.5), ValueError, "gamma"),
    ],
)
def test_load_state_dict_rejects_bad_state_and_changes_nothing(corrupt, error, match):
    opt = SGD([Parameter(np.zeros(1, dtype=np.float32))], lr=0.1)
    schedule = WarmupCosineSchedule(opt, **CONFIG)
    schedule.step()
    good = schedule.state_dict()
    lr = opt.lr
    state = dict(good)
    corrupt(state)
    with pytest.raises(error, match=match):
        schedule.load_state_dict(state)
    assert schedule.state_dict() == good
    assert opt.lr == lr
