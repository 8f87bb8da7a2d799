"""The training loop: history, evaluation cadence, schedules, clipping, the NaN stop."""

import math
import sys
import types

import numpy as np
import pytest

from tensorlib import Rng, Tensor, custom_gradient, is_grad_enabled
from tensorlib.nn import Linear, Module
from tensorlib.optim import SGD, WarmupCosineSchedule, warmup_cosine_lr
from tensorlib.training.loop import (
    DETERMINISTIC_FIELDS,
    TIMING_FIELDS,
    History,
    StepRecord,
    TrainingDivergedError,
    mean_loss,
    train,
)

X = Rng(1).normal(0.0, 1.0, size=(16, 3))  # float32
Y = X @ np.array([[1.0], [-2.0], [0.5]], dtype=np.float32)  # (16, 1)


class Regressor(Module):
    """Least squares with one Linear layer; ``loss`` is the mean squared error."""

    def __init__(self):
        super().__init__()
        self.linear = Linear(3, 1, rng=Rng(0))

    def forward(self, x):
        return self.linear(Tensor(x))

    def loss(self, x, y):
        difference = self.forward(x) - Tensor(y)
        return (difference * difference).mean()


def fixed_batches(step):
    return X, Y


def parameters_of(model):
    return {name: p.numpy().copy() for name, p in model.named_parameters()}


def test_history_records_every_step():
    model = Regressor()
    history = train(model, SGD(model, lr=0.1), fixed_batches, steps=20, progress=False)
    assert isinstance(history, History) and len(history) == 20
    assert [record.step for record in history] == list(range(1, 21))
    assert isinstance(history[0], StepRecord)
    columns = history.as_dict()
    assert set(columns) == set(DETERMINISTIC_FIELDS) | set(TIMING_FIELDS)
    assert all(len(values) == 20 for values in columns.values())
    assert set(history.as_dict(timings=False)) == set(DETERMINISTIC_FIELDS)
    assert "seconds" not in DETERMINISTIC_FIELDS and "tokens_per_second" in TIMING_FIELDS
    assert columns["learning_rate"] == [0.1] * 20
    assert columns["validation_loss"] == [None] * 20
    assert all(norm > 0 and math.isfinite(norm) for norm in columns["gradient_norm"])
    assert all(rate > 0 for rate in columns["tokens_per_second"])
    losses = columns["train_loss"]
    assert losses[-1] < 0.2 * losses[0]  # least squares converges
    final = history.final()
    assert final["step"] == 20 and final["train_loss"] == losses[-1]
    assert final["validation_loss"] is None
    assert "seconds" not in final


def test_first_records_match_a_hand_written_loop():
    model, reference = Regressor(), Regressor()
    history = train(model, SGD(model, lr=0.1), fixed_batches, steps=3, progress=False)
    optimizer = SGD(reference, lr=0.1)
    for record in history:
        optimizer.zero_grad()
        loss = reference.loss(X, Y)
        loss.backward()
        grads = np.concatenate([p.grad.numpy().ravel() for p in reference.parameters()])
        assert record.train_loss == float(loss.item())
        assert record.gradient_norm == pytest.approx(float(np.linalg.norm(grads)), rel=1e-6)
        optimizer.step()
    for (name, a), b in zip(parameters_of(model).items(), reference.parameters(), strict=True):
        np.testing.assert_array_equal(a, b.data, err_msg=name)


def test_runs_are_deterministic_apart_from_timings():
    def run():
        model = Regressor()
        return train(model, SGD(model, lr=0.05, momentum=0.9), fixed_batches, steps=8,
                     evaluate=lambda: model.loss(X, Y), evaluate_every=3,
                     progress=False).as_dict(timings=False)

    assert run() == run()


def test_evaluation_cadence_mode_and_no_grad():
    model = Regressor()
    seen = []

    def evaluate():
        seen.append((model.training, model.linear.training, is_grad_enabled()))
        return model.loss(X, Y)  # a Tensor is accepted

    history = train(model, SGD(model, lr=0.1), fixed_batches, steps=10, evaluate=evaluate,
                    evaluate_every=4, progress=False)
    assert [step for step, _ in history.evaluations()] == [4, 8, 10]  # and always the last
    assert [r.validation_loss is None for r in history] == [
        s not in (4, 8, 10) for s in range(1, 11)]
    assert seen == [(False, False, False)] * 3
    assert model.training and model.linear.training  # train mode restored
    assert history.final()["validation_loss"] == history[9].validation_loss
    only_last = train(model, SGD(model, lr=0.1), fixed_batches, steps=3, evaluate=evaluate,
                      progress=False)
    assert [step for step, _ in only_last.evaluations()] == [3]


def test_mean_loss_weights_each_chunk_by_its_rows():
    model = Regressor()
    whole = float(model.loss(X, Y).item())
    for batch_size in (1, 5, 16, 100):  # 5: chunks of 5, 5, 5 and 1 rows
        assert mean_loss(model, X, Y, batch_size=batch_size) == pytest.approx(whole, rel=1e-6)


def test_mean_loss_runs_in_eval_mode_without_a_graph():
    model = Regressor()
    seen = []
    plain_loss = model.loss

    def watched_loss(x, y):
        seen.append((model.training, is_grad_enabled()))
        return plain_loss(x, y)

    model.loss = watched_loss
    mean_loss(model, X, Y, batch_size=8)
    assert seen == [(False, False)] * 2
    assert model.training  # train mode restored
    with pytest.raises(ValueError, match="at least one row"):
        mean_loss(model, X[:0], Y[:0])
    with pytest.raises(ValueError, match="batch_size"):
        mean_loss(model, X, Y, batch_size=0)


def test_schedule_object_sets_each_steps_learning_rate():
    model = Regressor()
    optimizer = SGD(model, lr=1.0)
    schedule = WarmupCosineSchedule(optimizer, base_lr=0.1, warmup_steps=2, total_steps=6,
                                    min_lr=0.01)
    history = train(model, optimizer, fixed_batches, steps=6, schedule=schedule,
                    progress=False)
    expected = [warmup_cosine_lr(s, 0.1, 2, 6, 0.01) for s in range(1, 7)]
    assert history.as_dict()["learning_rate"] == pytest.approx(expected, abs=1e-15)
    assert expected[0] == pytest.approx(0.05) and expected[1] == pytest.approx(0.1)
    assert schedule.last_step == 6


def test_schedule_callable_assigns_the_rate_before_each_update():
    model = Regressor()
    history = train(model, SGD(model, lr=1.0), fixed_batches, steps=4,
                    schedule=lambda step: 0.1 / step, progress=False)
    assert history.as_dict()["learning_rate"] == pytest.approx([0.1, 0.05, 0.1 / 3, 0.025])


def test_gradient_clipping_limits_the_update_but_records_the_raw_norm():
    model = Regressor()
    before = parameters_of(model)
    history = train(model, SGD(model, lr=1.0), fixed_batches, steps=1, max_grad_norm=0.01,
                    progress=False)
    moved = np.sqrt(sum(np.sum((p.data - before[name]) ** 2)
                        for name, p in model.named_parameters()))
    assert history[0].gradient_norm > 0.1
    assert moved == pytest.approx(0.01, rel=1e-3)


def test_custom_loss_function_and_iterable_batches():
    model = Regressor()
    calls = []

    def absolute_error(m, x, y):
        calls.append(x.shape)
        return (m(x) - Tensor(y)).abs().mean()

    history = train(model, SGD(model, lr=0.01), iter([(X, Y), (X[:4], Y[:4])]), steps=2,
                    loss_fn=absolute_error, progress=False)
    assert calls == [(16, 3), (4, 3)] and len(history) == 2
    with pytest.raises(ValueError, match="batches ran out after 2 of 3 steps"):
        train(model, SGD(model, lr=0.01), [(X, Y), (X, Y)], steps=3, progress=False)


def test_nan_loss_stops_before_the_update_and_names_the_step():
    model = Regressor()
    snapshots = {}

    def batches(step):
        return (X, np.full_like(Y, np.nan)) if step == 3 else (X, Y)

    def remember(record):
        snapshots[record.step] = parameters_of(model)

    with pytest.raises(TrainingDivergedError, match="at step 3: the loss is nan") as error:
        train(model, SGD(model, lr=0.1), batches, steps=10, callback=remember,
              progress=False)
    assert isinstance(error.value, RuntimeError)
    assert error.value.step == 3 and math.isnan(error.value.value)
    assert sorted(snapshots) == [1, 2]
    for name, value in parameters_of(model).items():
        np.testing.assert_array_equal(value, snapshots[2][name])  # untouched at step 3
        assert np.all(np.isfinite(value))


def test_infinite_loss_also_stops():
    model = Regressor()
    calls = []

    def exploding(m, x, y):
        calls.append(1)
        loss = m.loss(x, y)
        return loss + Tensor(np.float32(np.inf)) if len(calls) == 2 else loss

    with pytest.raises(TrainingDivergedError, match="at step 2: the loss is inf") as error:
        train(model, SGD(model, lr=0.1), fixed_batches, steps=5, loss_fn=exploding,
              progress=False)
    assert error.value.quantity == "loss" and error.value.value == math.inf


def test_infinite_gradient_stops_before_the_update():
    model = Regressor()
    before = parameters_of(model)

    def infinite_gradient(m, x, y):  # a finite loss whose weight gradient is infinite
        weight = m.linear.weight
        return custom_gradient(np.float32(1.0), [weight],
                               lambda grad: [np.full(weight.shape, np.inf, np.float32)])

    with pytest.raises(TrainingDivergedError, match="at step 1: the gradient norm is inf"):
        train(model, SGD(model, lr=0.1), fixed_batches, steps=3, loss_fn=infinite_gradient,
              progress=False)
    for name, value in parameters_of(model).items():
        np.testing.assert_array_equal(value, before[name])


def test_progress_false_prints_nothing(capsys):
    model = Regressor()
    train(model, SGD(model, lr=0.1), fixed_batches, steps=5, evaluate=lambda: 1.0,
          progress=False)
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


def test_progress_bar_shows_the_loss_on_stderr_in_a_terminal(capsys):
    model = Regressor()
    train(model, SGD(model, lr=0.1), fixed_batches, steps=3, evaluate=lambda: 0.5)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert final_state(captured.err).startswith("training: 100%|")
    assert "3/3" in captured.err
    assert "loss=" in captured.err and "validation=0.5000" in captured.err


def test_bad_arguments_are_rejected_before_training():
    model = Regressor()
    before = parameters_of(model)
    optimizer = SGD(model, lr=0.1)
    with pytest.raises(ValueError, match="steps must be a positive integer"):
        train(model, optimizer, fixed_batches, steps=0, progress=False)
    with pytest.raises(ValueError, match="evaluate_every was given without"):
        train(model, optimizer, fixed_batches, steps=2, evaluate_every=1, progress=False)
    with pytest.raises(ValueError, match="max_grad_norm"):
        train(model, optimizer, fixed_batches, steps=2, max_grad_norm=-1.0, progress=False)
    with pytest.raises(TypeError, match="no loss"):
        train(Linear(3, 1, rng=Rng(0)), optimizer, fixed_batches, steps=2, progress=False)
    with pytest.raises(TypeError, match="batches"):
        train(model, optimizer, 42, steps=2, progress=False)
    for name, value in parameters_of(model).items():
        np.testing.assert_array_equal(value, before[name])
    with pytest.raises(ValueError, match="empty"):
        History().final()


# ------------------------------------------------------------------------------ progress bar
def final_state(stream_text: str) -> str:
    """What a terminal or a notebook shows of a bar that redraws itself after each '\\r'."""
    return stream_text.rstrip("\n").rsplit("\r", 1)[-1]


def pretend_jupyter_kernel(monkeypatch):
    """Make tensorlib.training.loop see an IPython shell with a kernel, as in a notebook."""
    ipython = types.ModuleType("IPython")
    shell = types.SimpleNamespace(kernel=object())
    ipython.get_ipython = lambda: shell
    monkeypatch.setitem(sys.modules, "IPython", ipython)


def test_progress_bar_goes_to_stdout_at_a_fixed_width_in_jupyter(monkeypatch, capsys):
    pretend_jupyter_kernel(monkeypatch)
    model = Regressor()
    history = train(model, SGD(model, lr=0.1), fixed_batches, steps=3,
                    evaluate=lambda: model.loss(X, Y))
    captured = capsys.readouterr()
    assert captured.err == ""  # stderr is drawn as an error in JupyterLab
    last = final_state(captured.out)
    assert last.startswith("training: 100%|" + "█" * 30 + "| 3/3 [")
    assert last.endswith(f"loss={history[-1].train_loss:.4f}, "
                         f"validation={history[-1].validation_loss:.4f}]")


def test_no_progress_prints_nothing(monkeypatch, capsys):
    for in_notebook in (False, True):
        if in_notebook:
            pretend_jupyter_kernel(monkeypatch)
        train(Regressor(), SGD(Regressor(), lr=0.1), fixed_batches, steps=3, progress=False)
        assert capsys.readouterr() == ("", "")
