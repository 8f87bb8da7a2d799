"""Watching training (tensorlib.viz.watch_training) and the learning-rate range test
(tensorlib.training.loop.learning_rate_range_test)."""

import math

import numpy as np
import pytest
from matplotlib.figure import Figure

import tensorlib as tl
from tensorlib import Rng
from tensorlib.nn import BatchNorm1d, Linear, ReLU, Sequential, Tanh
from tensorlib.nn import functional as F
from tensorlib.optim import SGD, AdamW
from tensorlib.training.loop import RangeTest, learning_rate_range_test, train
from tensorlib.viz import dead_unit_fraction, plot_update_ratios, watch_training

from helpers import state_picture

FEATURES = Rng(1).normal(size=(256, 6))
LABELS = (FEATURES[:, 0] > 0).astype(np.int64) + 2 * (FEATURES[:, 1] > 0)


def batch(step):
    rows = Rng(100 + step).integers(0, len(LABELS), size=16)
    return tl.tensor(FEATURES[rows]), LABELS[rows]


def loss_fn(model, inputs, targets):
    return F.cross_entropy(model(inputs), targets)


def network(seed=0, norm=False):
    rng = Rng(seed)
    layers = [Linear(6, 12, rng=rng)] + ([BatchNorm1d(12)] if norm else [])
    return Sequential(*layers, Tanh(), Linear(12, 12, rng=rng), Tanh(), Linear(12, 4, rng=rng))


# =============================================================================== the watch
def test_the_watch_keeps_each_layers_output_and_its_gradient_at_the_watched_steps():
    model = network()
    with watch_training(model, every=3) as watch:
        train(model, SGD(model, lr=0.0), batch, 7, loss_fn=loss_fn, callback=watch.step_done,
              progress=False, evaluate=lambda: loss_fn(model, *batch(0)), evaluate_every=3)
    assert watch.steps == [1, 3, 6]
    assert not any(module._forward_hooks for module in model.modules())  # hooks removed
    inputs, targets = batch(6)                     # lr 0: the weights are those of step 6
    hidden = model[1](model[0](inputs))
    hidden.retain_grad()
    output = model[3](model[2](hidden))
    output.retain_grad()
    loss_fn(lambda x: model[4](output), inputs, targets).backward()
    record = watch.at(6)
    assert list(record.activations) == ["1", "3"]  # the Tanh layers, by their names
    np.testing.assert_allclose(record.activations["1"], hidden.data, rtol=1e-6)
    np.testing.assert_allclose(record.activations["3"], output.data, rtol=1e-6)
    np.testing.assert_allclose(record.gradients["1"], hidden.grad, rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(record.gradients["3"], output.grad, rtol=1e-5, atol=1e-8)
    assert set(record.update_ratios) == {"0.weight", "2.weight", "4.weight"}  # weights only
    assert all(ratio == 0.0 for ratio in record.update_ratios.values())
    assert watch.update_ratio_history()["0.weight"] == [-math.inf] * 3
    with pytest.raises(KeyError, match=r"step 2 was not watched; watched steps: \[1, 3, 6\]"):
        watch.at(2)


def test_for_plain_sgd_the_update_ratio_is_the_rate_times_the_gradient_ratio():
    model = network(1, norm=True)
    with watch_training(model, every=5) as watch:
        train(model, SGD(model, lr=0.05), batch, 10, loss_fn=loss_fn, callback=watch.step_done,
              progress=False)
    for record in watch.records:
        for name, ratio in record.update_ratios.items():
            assert ratio == pytest.approx(0.05 * record.gradient_ratios[name], rel=1e-4)
    figure = plot_update_ratios(watch)
    assert isinstance(figure, Figure) and len(figure.axes[0].lines) == 3 + 1  # and the guide
    assert figure.axes[0].lines[-1].get_ydata()[0] == -3.0
    with watch_training(model, modules=BatchNorm1d) as empty:
        pass
    with pytest.raises(ValueError, match="nothing watched yet"):
        plot_update_ratios(empty)
    with pytest.raises(TypeError, match="found no ReLU"):
        with watch_training(model, modules=ReLU):
            pass


def test_dead_unit_fraction_counts_units_that_pass_no_gradient_for_any_example():
    tanh_values = np.array([[0.999, 0.2, -0.995, 0.3],
                            [0.998, -0.999, -0.999, 0.1]])   # units 0 and 2 saturated always
    assert dead_unit_fraction(tanh_values) == 0.5
    assert dead_unit_fraction(tanh_values, saturation=0.996) == 0.25  # unit 2 reaches 0.995
    relu_values = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 2.0]])
    assert dead_unit_fraction(relu_values, activation="relu") == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="'tanh' or 'relu'"):
        dead_unit_fraction(relu_values, activation="gelu")
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        dead_unit_fraction(np.zeros(3))


# =============================================================================== range test
def test_the_range_test_grows_the_rate_exponentially_and_restores_everything():
    model = network(2, norm=True)
    optimizer = AdamW(model, lr=3e-3)
    train(model, optimizer, batch, 3, loss_fn=loss_fn, progress=False)   # moments to restore
    model.eval()
    model_before, optimizer_before = model.state_dict(), optimizer.state_dict()
    result = learning_rate_range_test(model, optimizer, batch, start=1e-3, end=1e-1, steps=30,
                                      loss_fn=loss_fn)
    assert len(result.losses) == 30
    np.testing.assert_allclose(result.learning_rates, 1e-3 * 100 ** (np.arange(30) / 29))
    assert all(np.array_equal(value, model.state_dict()[name])
               for name, value in model_before.items())
    assert all(not module.training for module in model.modules())
    after = optimizer.state_dict()
    assert state_picture(after) == state_picture(optimizer_before) and optimizer.lr == 3e-3


def test_the_range_test_stops_once_the_loss_blows_up_and_suggests_a_tenth_of_the_best_rate():
    model = network(3)
    result = learning_rate_range_test(model, SGD(model, lr=0.1), batch, start=1e-3,
                                      end=1e4, steps=80, loss_fn=loss_fn)
    assert len(result.losses) < 80
    assert result.losses[-1] > 4 * min(result.losses[:-1]) or not np.isfinite(result.losses[-1])
    by_hand, average = [], result.losses[0]
    for loss in result.losses:
        average = 0.9 * average + 0.1 * loss
        by_hand.append(average)
    np.testing.assert_allclose(result.smoothed_losses(), by_hand)
    assert result.suggestion() == result.learning_rates[int(np.argmin(by_hand))] / 10
    fixed = RangeTest(np.array([0.1, 1.0, 10.0]), np.array([2.0, 1.0, 3.0]))
    assert fixed.suggestion(smoothing=0.0) == pytest.approx(0.1)


@pytest.mark.parametrize("arguments, message", [
    ({"start": 1.0, "end": 0.5}, "end must be larger than start"),
    ({"start": 0.0}, "start"),
    ({"steps": 1}, "at least 2 steps"),
    ({"stop_factor": -1.0}, "stop_factor"),
])
def test_the_range_test_refuses_bad_settings_before_training(arguments, message):
    model = network(4)
    before = model.state_dict()
    with pytest.raises((ValueError, TypeError), match=message):
        learning_rate_range_test(model, SGD(model, lr=0.1), batch, loss_fn=loss_fn, **arguments)
    assert all(np.array_equal(value, model.state_dict()[name]) for name, value in before.items())


def test_the_range_test_plot_marks_the_suggestion():
    from tensorlib.viz import plot_learning_rate_range_test

    losses = np.array([3.0, 2.9, 2.5, 2.0, 1.8, 2.5, 6.0])
    result = RangeTest(10.0 ** np.linspace(-3, 0, 7), losses)
    lines = plot_learning_rate_range_test(result).axes[0].lines
    assert len(lines) == 3
    assert lines[2].get_xdata()[0] == pytest.approx(math.log10(result.suggestion()))
    with pytest.raises(TypeError, match="RangeTest"):
        plot_learning_rate_range_test([1, 2])
