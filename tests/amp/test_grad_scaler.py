"""``tensorlib.amp.GradScaler``: dynamic loss scaling, PyTorch's ``torch.amp.GradScaler``.

The loss is multiplied by the scale before backward and the gradients divided by it before
the step; a step whose gradients hold an inf or a nan is skipped and the scale multiplied by
``backoff_factor``; after ``growth_interval`` good steps in a row it is multiplied by
``growth_factor``.

Without PyTorch: that rule step by step, ``unscale_``, skipped steps with SGD and AdamW,
clipping after ``unscale_``, gradient accumulation, a disabled scaler, ``state_dict`` and a
checkpoint through ``tl.save``/``tl.load``, and the errors. Where PyTorch is importable: the
scale trajectory and the parameters over 20 steps with infs and nans injected, against
``torch.amp.GradScaler("cpu")`` with SGD.
"""

import io
import math

import numpy as np
import pytest

import tensorlib as tl
from tensorlib import nn
from tensorlib.amp import GradScaler
from tensorlib.optim import SGD, AdamW

from helpers import state_picture

STATE_KEYS = {"scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"}
# the steps (of 20) whose batch holds an inf or a nan, so that the scaled gradients do too
BAD = {2: math.inf, 3: math.nan, 9: -math.inf, 10: math.inf, 11: math.nan, 17: math.nan}


def batch(step):
    """Step ``step``'s inputs (4, 3) and targets (4, 2); an inf or nan at the BAD steps."""
    data = np.random.default_rng(step)
    x = data.standard_normal((4, 3)).astype(np.float32)
    if step in BAD:
        x[1, 2] = BAD[step]
    return x, data.standard_normal((4, 2)).astype(np.float32)


WEIGHTS = {"weight": np.random.default_rng(99).standard_normal((2, 3)).astype(np.float32),
           "bias": np.array([0.1, -0.2], dtype=np.float32)}


def model():
    layer = nn.Linear(3, 2)
    layer.load_state_dict(WEIGHTS)
    return layer


def mse(layer, step):
    """Step ``step``'s loss: the mean squared error of ``layer`` on ``batch(step)``."""
    x, y = batch(step)
    return ((layer(tl.tensor(x)) - tl.tensor(y)) ** 2).mean()


def scaled_backward(scaler, layer, step):
    scaler.scale(mse(layer, step)).backward()


def train_step(scaler, layer, optimizer, step):
    optimizer.zero_grad()
    scaled_backward(scaler, layer, step)
    result = scaler.step(optimizer)
    scaler.update()
    return result


def expected_trajectory(init_scale, interval, steps, growth=2.0, backoff=0.5):
    """The rule, by hand: (scale, growth tracker) after each update."""
    scale, tracker, out = init_scale, 0, []
    for step in range(steps):
        if step in BAD:
            scale, tracker = scale * backoff, 0
        elif tracker + 1 == interval:
            scale, tracker = scale * growth, 0
        else:
            tracker += 1
        out.append((scale, tracker))
    return out


def parameters_now(layer):
    return [p.numpy().copy() for p in layer.parameters()]


# --------------------------------------------------------------------------- no torch
@pytest.mark.parametrize("interval", [1, 3, 4])
def test_the_dynamic_rule_skips_halves_and_grows(interval):
    scaler = GradScaler("cpu", init_scale=2.0 ** 10, growth_interval=interval)
    layer = model()
    optimizer = SGD(layer, lr=0.1)
    for step, (scale, tracker) in enumerate(expected_trajectory(2.0 ** 10, interval, 20)):
        before = parameters_now(layer)
        result = train_step(scaler, layer, optimizer, step)
        assert (scaler.get_scale(), scaler.state_dict()["_growth_tracker"]) == (scale, tracker)
        moved = any(not np.array_equal(a, p.numpy()) for a, p in zip(before, layer.parameters(),
                                                                    strict=True))
        assert moved == (step not in BAD), f"step {step}"
        if step in BAD:
            assert result is None
    assert all(np.isfinite(p.numpy()).all() for p in layer.parameters())


def test_other_growth_and_backoff_factors():
    scaler = GradScaler("cpu", init_scale=1000.0, growth_factor=3.0, backoff_factor=0.25,
                        growth_interval=2)
    layer = model()
    optimizer = SGD(layer, lr=0.1)
    for step in range(4):  # good, good, bad, bad
        train_step(scaler, layer, optimizer, step)
    assert scaler.get_scale() == 1000.0 * 3.0 * 0.25 * 0.25
    assert scaler.get_growth_factor() == 3.0 and scaler.get_backoff_factor() == 0.25
    scaler.set_growth_factor(4.0)
    scaler.set_backoff_factor(0.5)
    scaler.set_growth_interval(1)
    train_step(scaler, layer, optimizer, 0)
    assert scaler.get_scale() == 1000.0 * 3.0 * 0.25 * 0.25 * 4.0
    assert scaler.get_growth_interval() == 1


def test_growth_that_would_overflow_keeps_the_scale():
    big = float(np.finfo(np.float32).max) / 1.5
    scaler = GradScaler("cpu", init_scale=big, growth_interval=1)
    layer = nn.Linear(3, 2)
    scaler.scale(layer(tl.ones(1, 3)).sum() * 0.0).backward()
    scaler.step(SGD(layer, lr=0.1))
    scaler.update()
    assert scaler.get_scale() == float(np.float32(big))
    assert scaler.state_dict()["_growth_tracker"] == 0


def test_scale_multiplies_and_unscale_divides_the_gradients():
    scaler = GradScaler("cpu", init_scale=2.0 ** 12)
    layer, reference = model(), model()
    optimizer = SGD(layer, lr=0.1)
    loss = mse(layer, 0)
    scaled_loss = scaler.scale(loss)
    assert scaled_loss.dtype == tl.float32
    assert float(scaled_loss.item()) == float(loss.item()) * 2.0 ** 12
    scaled_loss.backward()
    mse(reference, 0).backward()
    for p, q in zip(layer.parameters(), reference.parameters(), strict=True):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy() * 2.0 ** 12, rtol=1e-6)
    scaler.unscale_(optimizer)
    for p, q in zip(layer.parameters(), reference.parameters(), strict=True):
        assert p.grad.dtype == tl.float32
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-6)
    scaler.step(optimizer)  # after unscale_, step does not divide again
    scaler.update()
    SGD(reference, lr=0.1).step()
    for p, q in zip(layer.parameters(), reference.parameters(), strict=True):
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-6)


def test_scale_of_several_outputs():
    scaler = GradScaler("cpu", init_scale=8.0)
    a, b = tl.tensor(1.5), tl.tensor(-2.0)
    assert [float(t.item()) for t in scaler.scale([a, b])] == [12.0, -16.0]
    scaled = scaler.scale((a, b))
    assert isinstance(scaled, tuple) and float(scaled[1].item()) == -16.0
    with pytest.raises(ValueError):
        scaler.scale("loss")


@pytest.mark.parametrize("make_optimizer", [
    lambda layer: SGD(layer, lr=0.1, momentum=0.9),
    lambda layer: AdamW(layer, lr=0.01),
], ids=["sgd_momentum", "adamw"])
def test_a_skipped_step_changes_neither_parameters_nor_optimizer_state(make_optimizer):
    scaler = GradScaler("cpu", init_scale=2.0 ** 8)
    layer = model()
    optimizer = make_optimizer(layer)
    train_step(scaler, layer, optimizer, 0)  # a good step first: the state is not empty
    before, state = parameters_now(layer), state_picture(optimizer.state_dict())
    assert train_step(scaler, layer, optimizer, 2) is None  # step 2 holds an inf
    for a, p in zip(before, layer.parameters(), strict=True):
        np.testing.assert_array_equal(a, p.numpy())
    assert state_picture(optimizer.state_dict()) == state
    assert scaler.get_scale() == 2.0 ** 7
    train_step(scaler, layer, optimizer, 4)
    assert any(not np.array_equal(a, p.numpy()) for a, p in zip(before, layer.parameters(),
                                                                strict=True))


def test_two_optimizers_skip_only_the_one_with_an_inf():
    scaler = GradScaler("cpu", init_scale=2.0 ** 8)
    good, bad = model(), model()
    first, second = SGD(good, lr=0.1), SGD(bad, lr=0.1)
    scaler.scale(mse(good, 0) + mse(bad, 2)).backward()
    before_good, before_bad = parameters_now(good), parameters_now(bad)
    scaler.step(first)
    scaler.step(second)
    scaler.update()
    assert not np.array_equal(before_good[0], good.weight.numpy())
    assert np.array_equal(before_bad[0], bad.weight.numpy())
    assert scaler.get_scale() == 2.0 ** 7  # any inf backs the scale off


def test_clipping_after_unscale_sees_the_true_gradients():
    scaler = GradScaler("cpu", init_scale=2.0 ** 14)
    layer, reference = model(), model()
    optimizer = SGD(layer, lr=0.1)
    scaled_backward(scaler, layer, 0)
    scaler.unscale_(optimizer)
    norm = tl.nn.utils.clip_grad_norm_(layer.parameters(), 0.1)
    mse(reference, 0).backward()
    true_norm = tl.nn.utils.clip_grad_norm_(reference.parameters(), 0.1)
    np.testing.assert_allclose(float(norm), float(true_norm), rtol=1e-6)
    assert float(true_norm) > 0.1  # so the clipping did something
    scaler.step(optimizer)
    scaler.update()
    SGD(reference, lr=0.1).step()
    for p, q in zip(layer.parameters(), reference.parameters(), strict=True):
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-6, atol=1e-7)


def test_gradient_accumulation_then_one_step():
    scaler = GradScaler("cpu", init_scale=2.0 ** 10)
    layer, reference = model(), model()
    optimizer = SGD(layer, lr=0.1)
    for step in (0, 1, 4):
        scaled_backward(scaler, layer, step)  # gradients add up, scaled
        mse(reference, step).backward()
    scaler.step(optimizer)
    scaler.update()
    SGD(reference, lr=0.1).step()
    for p, q in zip(layer.parameters(), reference.parameters(), strict=True):
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-6, atol=1e-7)
    assert scaler.state_dict()["_growth_tracker"] == 1


def test_float16_autocast_gradients_that_overflow_are_found_and_the_scale_comes_down():
    # the usual float16 loop: float32 parameters, float16 products, a scale far too big
    scaler = GradScaler("cpu", init_scale=2.0 ** 40, growth_interval=1000)
    layer = model()
    optimizer = SGD(layer, lr=0.01)
    skipped = 0
    for _ in range(30):
        optimizer.zero_grad()
        x, y = batch(0)
        with tl.autocast("cpu", dtype=tl.float16):
            out = layer(tl.tensor(x))
        assert out.dtype == tl.float16
        scaler.scale(((out.float() - tl.tensor(y)) ** 2).mean()).backward()
        assert layer.weight.grad.dtype == tl.float32
        before = layer.weight.numpy().copy()
        scaler.step(optimizer)
        scaler.update()
        skipped += np.array_equal(before, layer.weight.numpy())
    # 2**40 halves to below float16's largest number (65504) over the skipped steps
    assert 20 <= skipped <= 27
    assert scaler.get_scale() == 2.0 ** (40 - skipped) and scaler.get_scale() < 65504
    assert all(np.isfinite(p.numpy()).all() for p in layer.parameters())


def test_a_disabled_scaler_passes_everything_through():
    scaler = GradScaler("cpu", enabled=False)
    assert not scaler.is_enabled() and scaler.get_scale() == 1.0
    layer, reference = model(), model()
    optimizer = SGD(layer, lr=0.1)
    loss = mse(layer, 0)
    assert scaler.scale(loss) is loss
    loss.backward()
    scaler.unscale_(optimizer)
    scaler.step(optimizer)
    scaler.update()
    scaler.update()  # no step recorded: nothing to complain about when disabled
    mse(reference, 0).backward()
    SGD(reference, lr=0.1).step()
    for p, q in zip(layer.parameters(), reference.parameters(), strict=True):
        np.testing.assert_array_equal(p.numpy(), q.numpy())
    assert scaler.state_dict() == {}
    scaler.load_state_dict({"anything": 1})  # ignored, as PyTorch's disabled scaler does


def test_cuda_without_a_gpu_warns_and_is_disabled():
    if tl.cuda.is_available():
        pytest.skip("a GPU is available here")
    with pytest.warns(UserWarning, match="GPU"):
        scaler = GradScaler()
    assert not scaler.is_enabled() and scaler.get_scale() == 1.0


def test_state_dict_holds_pytorchs_five_entries():
    scaler = GradScaler("cpu", init_scale=512.0, growth_factor=3.0, backoff_factor=0.25,
                        growth_interval=7)
    assert scaler.state_dict() == {"scale": 512.0, "growth_factor": 3.0,
                                   "backoff_factor": 0.25, "growth_interval": 7,
                                   "_growth_tracker": 0}
    assert set(scaler.state_dict()) == STATE_KEYS


def test_a_checkpoint_round_trip_through_save_and_load(tmp_path):
    scaler = GradScaler("cpu", init_scale=2.0 ** 10, growth_interval=3)
    layer = model()
    optimizer = AdamW(layer, lr=0.01)
    for step in range(6):
        train_step(scaler, layer, optimizer, step)
    path = tmp_path / "checkpoint.pt"
    tl.save({"model": layer.state_dict(), "optimizer": optimizer.state_dict(),
             "scaler": scaler.state_dict(), "step": 6}, path)
    checkpoint = tl.load(path)
    assert checkpoint["scaler"] == scaler.state_dict()
    resumed_layer = nn.Linear(3, 2)
    resumed_layer.load_state_dict(checkpoint["model"])
    resumed_optimizer = AdamW(resumed_layer, lr=0.01)
    resumed_optimizer.load_state_dict(checkpoint["optimizer"])
    resumed = GradScaler("cpu")
    resumed.load_state_dict(checkpoint["scaler"])
    assert resumed.state_dict() == scaler.state_dict()
    for step in range(6, 14):  # both go on the same way, skipped steps included
        train_step(scaler, layer, optimizer, step)
        train_step(resumed, resumed_layer, resumed_optimizer, step)
        assert resumed.state_dict() == scaler.state_dict()
    for p, q in zip(layer.parameters(), resumed_layer.parameters(), strict=True):
        np.testing.assert_array_equal(p.numpy(), q.numpy())
    buffer = io.BytesIO()  # a file object too
    tl.save({"scaler": scaler.state_dict()}, buffer)
    assert tl.load(io.BytesIO(buffer.getvalue()))["scaler"] == scaler.state_dict()


GOOD_STATE = {"scale": 256.0, "growth_factor": 2.0, "backoff_factor": 0.5,
              "growth_interval": 5, "_growth_tracker": 2}


@pytest.mark.parametrize("bad, error", [
    ([("scale", 256.0)], TypeError),
    ({}, RuntimeError),
    ({k: v for k, v in GOOD_STATE.items() if k != "scale"}, KeyError),
    ({k: v for k, v in GOOD_STATE.items() if k != "_growth_tracker"}, KeyError),
    ({**GOOD_STATE, "scale": -1.0}, ValueError),
    ({**GOOD_STATE, "scale": 0.0}, ValueError),
    ({**GOOD_STATE, "scale": "big"}, TypeError),
    ({**GOOD_STATE, "growth_interval": 0}, ValueError),
    ({**GOOD_STATE, "growth_interval": 2.5}, TypeError),
    ({**GOOD_STATE, "_growth_tracker": -1}, ValueError),
], ids=["not_a_dict", "empty", "no_scale", "no_tracker", "negative_scale", "zero_scale",
        "str_scale", "zero_interval", "float_interval", "negative_tracker"])
def test_load_state_dict_refuses_bad_input_and_changes_nothing(bad, error):
    scaler = GradScaler("cpu", init_scale=64.0, growth_interval=9)
    before = scaler.state_dict()
    with pytest.raises(error):
        scaler.load_state_dict(bad)
    assert scaler.state_dict() == before
    scaler.load_state_dict(GOOD_STATE)
    assert scaler.state_dict() == GOOD_STATE


def _ready(init_scale=64.0):
    scaler = GradScaler("cpu", init_scale=init_scale)
    layer = model()
    optimizer = SGD(layer, lr=0.1)
    scaled_backward(scaler, layer, 0)
    return scaler, layer, optimizer


@pytest.mark.parametrize("first, then, message", [
    ("unscale_", "unscale_", "already been called"),
    ("step", "unscale_", "after step"),
    ("step", "step", "already been called"),
], ids=["unscale_twice", "unscale_after_step", "step_twice"])
def test_calls_out_of_order_are_errors_that_change_nothing(first, then, message):
    scaler, layer, optimizer = _ready()
    getattr(scaler, first)(optimizer)
    values, grads = parameters_now(layer), [p.grad.numpy().copy() for p in layer.parameters()]
    with pytest.raises(RuntimeError, match=message):
        getattr(scaler, then)(optimizer)
    for value, grad, p in zip(values, grads, layer.parameters(), strict=True):
        np.testing.assert_array_equal(value, p.numpy())
        np.testing.assert_array_equal(grad, p.grad.numpy())
    scaler.update()
    scaler.step(optimizer)  # the next iteration may step again


def test_update_without_a_step_is_an_error():
    scaler = GradScaler("cpu")
    with pytest.raises(RuntimeError, match="update"):
        scaler.update()
    scaler.update(new_scale=128.0)  # an explicit scale needs no step
    assert scaler.get_scale() == 128.0
    scaler.update(new_scale=tl.tensor(32.0))
    assert scaler.get_scale() == 32.0


def test_a_closure_is_refused():
    scaler, _, optimizer = _ready()
    with pytest.raises(RuntimeError, match="[Cc]losure"):
        scaler.step(optimizer, closure=lambda: None)


def test_float16_gradients_are_refused_and_left_as_they_are():
    scaler = GradScaler("cpu", init_scale=64.0)
    layer = model().half()
    optimizer = SGD(layer, lr=0.1)
    x, _ = batch(0)
    scaler.scale(layer(tl.tensor(x).half()).float().sum()).backward()
    grads = [p.grad.numpy().copy() for p in layer.parameters()]
    with pytest.raises(ValueError, match="float16"):
        scaler.unscale_(optimizer)
    for g, p in zip(grads, layer.parameters(), strict=True):
        np.testing.assert_array_equal(g, p.grad.numpy())


@pytest.mark.parametrize("arguments, error", [
    ({"device": "gpu"}, ValueError),
    ({"device": "cpu", "init_scale": 0.0}, ValueError),
    ({"device": "cpu", "growth_factor": 1.0}, ValueError),
    ({"device": "cpu", "backoff_factor": 1.0}, ValueError),
    ({"device": "cpu", "growth_interval": 0}, ValueError),
], ids=["device", "init_scale", "growth_factor", "backoff_factor", "growth_interval"])
def test_bad_settings_are_refused(arguments, error):
    with pytest.raises(error):
        GradScaler(**arguments)


# ------------------------------------------------------------------------ against PyTorch
def test_scale_trajectory_and_parameters_match_torch():
    torch = pytest.importorskip("torch")
    scaler = GradScaler("cpu", init_scale=2.0 ** 10, growth_interval=3)
    theirs = torch.amp.GradScaler("cpu", init_scale=2.0 ** 10, growth_interval=3)
    layer = model()
    their_layer = torch.nn.Linear(3, 2)
    their_layer.load_state_dict({k: torch.tensor(v) for k, v in WEIGHTS.items()})
    optimizer = SGD(layer, lr=0.1, momentum=0.9)
    their_optimizer = torch.optim.SGD(their_layer.parameters(), lr=0.1, momentum=0.9)
    for step in range(20):
        train_step(scaler, layer, optimizer, step)
        their_optimizer.zero_grad()
        x, y = batch(step)
        loss = ((their_layer(torch.tensor(x)) - torch.tensor(y)) ** 2).mean()
        theirs.scale(loss).backward()
        theirs.step(their_optimizer)
        theirs.update()
        assert scaler.get_scale() == theirs.get_scale(), f"step {step}"
        assert scaler.state_dict()["_growth_tracker"] == \
            theirs.state_dict()["_growth_tracker"], f"step {step}"
        for p, q in zip(layer.parameters(), their_layer.parameters(), strict=True):
            np.testing.assert_allclose(p.numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6,
                                       err_msg=f"step {step}")
    assert scaler.state_dict() == theirs.state_dict()
    assert scaler.get_scale() != 2.0 ** 10  # the trajectory went somewhere


def test_state_dicts_load_both_ways_with_torch():
    torch = pytest.importorskip("torch")
    theirs = torch.amp.GradScaler("cpu", init_scale=300.0, growth_interval=4)
    ours = GradScaler("cpu")
    ours.load_state_dict(theirs.state_dict())
    assert ours.state_dict() == theirs.state_dict()
    ours.load_state_dict(GOOD_STATE)
    theirs.load_state_dict(ours.state_dict())
    assert theirs.state_dict() == GOOD_STATE
