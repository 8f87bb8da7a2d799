"""Numerics at the edges: huge logits, constant rows, zero and huge gradients, divergence.

* softmax, log-softmax, attention's causal softmax and cross-entropy are exact (to float
  rounding) at logits of +-1e4, in value and gradient, where a naive exp overflows;
* layer norm maps a constant row to exactly ``bias`` with a finite gradient, whatever the
  constant and the width;
* AdamW with zero gradients moves parameters by weight decay only; with gradients of 1e30
  its update stays finite and about ``lr`` in size (float64, or float32 with clipping), and
  where float32 moments cannot hold 1e30 squared it refuses the step, changing nothing;
* ``tensorlib.training.loop.train`` stops with ``TrainingDivergedError`` naming the first step whose
  loss is not finite, before that step's update.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import tensorlib as tl
from tensorlib import Rng
from tensorlib.nn import Linear, Module, Parameter
from tensorlib.nn import functional as F
from tensorlib.optim import SGD, AdamW
from tensorlib.training.loop import TrainingDivergedError, train

HUGE = 1e4
DTYPES = [np.float32, np.float64]


def reference_log_softmax(logits: np.ndarray) -> np.ndarray:
    """log-softmax in float64, shifting by the row maximum first (exact for these inputs)."""
    shifted = logits.astype(np.float64) - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def huge_logits(dtype) -> np.ndarray:
    """Rows of logits at +-1e4: far apart, close together, all equal, mixed signs."""
    return np.array([
        [HUGE, -HUGE, 0.0, 1.0],
        [HUGE, HUGE - 1, HUGE - 2, HUGE - 3],
        [-HUGE, -HUGE, -HUGE, -HUGE],
        [-HUGE, -HUGE + 1, -HUGE + 2, -HUGE + 0.5],
        [HUGE, HUGE, -HUGE, -HUGE],
    ], dtype=dtype)


# =============================================================================== softmax family
@pytest.mark.parametrize("dtype", DTYPES)
def test_softmax_and_log_softmax_are_exact_at_huge_logits(dtype):
    logits = huge_logits(dtype)
    expected_log = reference_log_softmax(logits)
    tolerance = 2e-7 if dtype == np.float32 else 1e-15
    for log_softmax in (F.log_softmax, F.log_softmax_reference):
        x = tl.Tensor(logits, requires_grad=True)
        out = log_softmax(x)
        assert out.dtype == dtype and np.isfinite(out.data).all()
        np.testing.assert_allclose(out.data, expected_log, rtol=tolerance, atol=tolerance)
        weights = np.arange(logits.size, dtype=dtype).reshape(logits.shape)
        (out * tl.Tensor(weights)).sum().backward()
        # d/dx sum(w * log_softmax(x)) = w - softmax(x) * sum(w)
        expected_grad = weights - np.exp(expected_log) * weights.sum(-1, keepdims=True)
        np.testing.assert_allclose(x.grad, expected_grad, rtol=1e-5, atol=1e-5)
    for softmax in (F.softmax, F.softmax_reference):
        x = tl.Tensor(logits, requires_grad=True)
        out = softmax(x)
        np.testing.assert_allclose(out.data, np.exp(expected_log), rtol=tolerance, atol=1e-30)
        out[:, 0].sum().backward()
        assert np.isfinite(x.grad).all()
    # the exact values a reader can check by hand
    exact = F.log_softmax(tl.Tensor(np.array([HUGE, -HUGE], dtype=dtype))).data
    assert exact.tolist() == [0.0, -2 * HUGE]
    assert F.softmax(tl.Tensor(np.array([HUGE, -HUGE], dtype=dtype))).data.tolist() == [1.0, 0.0]


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_naive_softmax_overflows_where_the_stable_one_does_not(dtype):
    """The failure the stable versions avoid (so the test above tests something)."""
    with np.errstate(over="ignore", invalid="ignore"):
        naive = np.exp(huge_logits(dtype)) / np.exp(huge_logits(dtype)).sum(-1, keepdims=True)
    assert not np.isfinite(naive).all()


@pytest.mark.parametrize("dtype", DTYPES)
def test_causal_softmax_is_exact_at_huge_scores(dtype):
    scores = np.array([[HUGE, -HUGE, HUGE], [-HUGE, HUGE, HUGE], [HUGE, HUGE - 1, -HUGE]],
                      dtype=dtype)[None, None]  # (1, 1, T, T)
    masked = np.where(np.triu(np.ones((3, 3), bool), k=1), -np.inf, scores[0, 0])
    expected = np.exp(reference_log_softmax(masked))
    for causal_softmax in (F.causal_softmax, F.causal_softmax_reference):
        x = tl.Tensor(scores, requires_grad=True)
        out = causal_softmax(x)
        np.testing.assert_allclose(out.data[0, 0], expected, rtol=2e-7, atol=1e-30)
        out.sum().backward()
        assert np.isfinite(x.grad).all()


@pytest.mark.parametrize("dtype", DTYPES)
def test_causal_softmax_rows_do_not_depend_on_each_other_at_any_magnitude(dtype):
    """Moderate rows need no shift and extreme rows are shifted by their maximum; the rule
    looks at one row at a time, so making later rows (or masked entries) extreme changes
    no earlier row by a single bit, and each extreme row is exact."""
    rng = np.random.default_rng(5)
    scores = rng.normal(size=(2, 3, 6, 6)).astype(dtype)
    moderate = F.causal_softmax(tl.Tensor(scores)).data
    extreme = scores.copy()
    extreme[:, :, 4:] *= HUGE  # later rows: far beyond the no-shift range
    extreme[:, :, :4, 5] = HUGE  # masked entries of earlier rows
    extreme[0, 1, 3, :3] = -HUGE  # a row whose diagonal is far above the rest
    extreme[1, 2, 0, 0] = -HUGE  # a row that is only its diagonal, far below 0
    extreme[1, 0, 2, 2] = -HUGE  # a row whose diagonal is far below the rest
    out = F.causal_softmax(tl.Tensor(extreme)).data
    # rows 0-3 changed only in masked entries, but for the three changed on purpose
    unchanged = np.ones((2, 3, 6), dtype=bool)
    unchanged[:, :, 4:] = False
    unchanged[0, 1, 3] = unchanged[1, 2, 0] = unchanged[1, 0, 2] = False
    np.testing.assert_array_equal(out[unchanged], moderate[unchanged])
    assert out[1, 2, 0, 0] == 1.0
    masked = np.where(np.triu(np.ones((6, 6), bool), k=1), -np.inf, extreme)
    expected = np.exp(reference_log_softmax(masked.astype(np.float64)))
    np.testing.assert_allclose(out, expected, rtol=2e-6, atol=1e-30)


def test_causal_softmax_keeps_a_nan_in_its_own_row():
    scores = np.random.default_rng(6).normal(size=(1, 1, 4, 4)).astype(np.float32)
    clean = F.causal_softmax(tl.Tensor(scores)).data
    scores[0, 0, 2, 1] = np.nan
    out = F.causal_softmax(tl.Tensor(scores)).data
    assert np.isnan(out[0, 0, 2, :3]).all()
    np.testing.assert_array_equal(np.delete(out, 2, axis=2), np.delete(clean, 2, axis=2))


@pytest.mark.parametrize("dtype", DTYPES)
def test_cross_entropy_is_exact_at_huge_logits(dtype):
    logits = huge_logits(dtype)
    targets = np.array([1, 3, 2, 0, 2])
    expected_log = reference_log_softmax(logits)
    rows = np.arange(len(targets))
    expected = -expected_log[rows, targets].mean()
    for cross_entropy in (F.cross_entropy, F.cross_entropy_reference):
        x = tl.Tensor(logits, requires_grad=True)
        loss = cross_entropy(x, targets)
        assert loss.dtype == dtype
        np.testing.assert_allclose(loss.item(), expected, rtol=1e-6)
        loss.backward()
        onehot = np.eye(4)[targets]
        np.testing.assert_allclose(x.grad, (np.exp(expected_log) - onehot) / len(targets),
                                   rtol=1e-6, atol=1e-7)
    two = tl.Tensor(np.array([[HUGE, -HUGE]], dtype=dtype), requires_grad=True)
    assert F.cross_entropy(two, [1]).item() == 2 * HUGE
    assert F.cross_entropy(two, [0]).item() == 0.0
    loss = F.cross_entropy(two, [1])
    loss.backward()
    assert two.grad.tolist() == [[1.0, -1.0]]


# =============================================================================== layer norm
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("width", [1, 3, 5, 7, 16, 100])
def test_layer_norm_maps_constant_rows_to_bias_with_a_finite_gradient(dtype, width):
    rng = Rng(width)
    weight = tl.Tensor(rng.normal(1.0, 0.5, size=width).astype(dtype), requires_grad=True)
    bias = tl.Tensor(rng.normal(0.0, 1.0, size=width).astype(dtype), requires_grad=True)
    constants = np.array([0.0, 0.1, -3.3, 1e4, 123456.7, -2.5e7, 1e30], dtype=dtype)
    x = tl.Tensor(np.repeat(constants[:, None], width, axis=1), requires_grad=True)  # (7, C)
    out = F.layer_norm(x, weight.shape, weight, bias, eps=1e-5)
    np.testing.assert_array_equal(out.data, np.broadcast_to(bias.data, out.shape))
    upstream = rng.normal(0.0, 1.0, size=out.shape).astype(dtype)
    out.backward(upstream)
    # normalized = 0 on a constant row, so dx = (g - mean(g)) / sqrt(eps) with g = dy * w
    g = upstream.astype(np.float64) * weight.numpy()
    expected = (g - g.mean(-1, keepdims=True)) / math.sqrt(1e-5)
    assert np.isfinite(x.grad).all()
    np.testing.assert_allclose(x.grad, expected, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(weight.grad, np.zeros(width, dtype))
    np.testing.assert_allclose(bias.grad, upstream.sum(0), rtol=1e-6)


def test_layer_norm_module_on_constant_rows():
    layer = tl.nn.LayerNorm(5)
    with tl.no_grad():
        layer.bias.copy_(np.arange(5, dtype=np.float32))
    out = layer(tl.full((2, 3, 5), 98765.4))
    np.testing.assert_array_equal(out.data, np.broadcast_to(np.arange(5.0), (2, 3, 5)))


# =============================================================================== AdamW
class Pair(Module):
    def __init__(self, dtype=np.float32) -> None:
        super().__init__()
        self.weight = Parameter(Rng(1).normal(0.0, 1.0, size=(3, 4)).astype(dtype))
        self.bias = Parameter(Rng(2).normal(0.0, 1.0, size=(4,)).astype(dtype))


def test_adamw_with_zero_gradients_moves_by_weight_decay_only():
    model = Pair()
    start = [p.numpy().copy() for p in model.parameters()]
    optimizer = AdamW(model, lr=0.1, weight_decay=0.01)
    for _ in range(10):
        for parameter in model.parameters():
            parameter.grad = np.zeros(parameter.shape, np.float32)
        optimizer.step()
    for parameter, before in zip(model.parameters(), start, strict=True):
        np.testing.assert_allclose(parameter.data, before * (1 - 0.1 * 0.01) ** 10, rtol=1e-6)
    for entry in optimizer.state:
        assert entry["step"] == 10
        assert not entry["first_moment"].any() and not entry["second_moment"].any()
    # without weight decay nothing moves at all, bit for bit
    model = Pair()
    start = [p.numpy().copy() for p in model.parameters()]
    optimizer = AdamW(model, lr=0.1, weight_decay=0.0)
    for _ in range(3):
        for parameter in model.parameters():
            parameter.grad = np.zeros(parameter.shape, np.float32)
        optimizer.step()
    for parameter, before in zip(model.parameters(), start, strict=True):
        assert parameter.numpy().tobytes() == before.tobytes()


def huge_gradients(model: Module, scale: float = 1e30) -> None:
    signs = Rng(3)
    for parameter in model.parameters():
        parameter.grad = np.where(signs.uniform(size=parameter.shape) < 0.5, -scale,
                                  scale).astype(parameter.dtype)


@pytest.mark.parametrize("dtype, max_grad_norm, scale", [
    (np.float64, 0.0, 1e30),   # float64 moments hold 1e60
    (np.float32, 1.0, 1e30),   # clipping first brings the gradient back into range
    (np.float32, 0.0, 1e18),   # the largest gradients float32 moments can hold
])
def test_adamw_with_huge_gradients_takes_finite_steps_of_about_lr(dtype, max_grad_norm, scale):
    lr, decay = 1e-2, 0.1
    slack = lr * 1e-6 if dtype == np.float64 else 4e-7  # float32 rounding of p near 1
    model = Pair(dtype)
    optimizer = AdamW(model, lr=lr, weight_decay=decay, max_grad_norm=max_grad_norm)
    for _ in range(5):
        before = [p.numpy().copy() for p in model.parameters()]
        huge_gradients(model, scale)
        optimizer.step()
        for parameter, old in zip(model.parameters(), before, strict=True):
            assert np.isfinite(parameter.data).all()
            # the Adam part of the update is lr * m_hat / (sqrt(v_hat) + eps): |.| <= lr
            adam_part = old - lr * decay * old - parameter.data
            assert np.all(np.abs(adam_part) <= lr + slack)
            assert np.all(np.abs(adam_part) >= lr - slack)  # constant-sign gradients
    for entry in optimizer.state:
        assert np.isfinite(entry["second_moment"]).all()


def test_adamw_refuses_a_float32_step_whose_moments_would_overflow():
    """1e30 squared does not fit in float32: the step raises and changes nothing (PyTorch
    would store inf in the second moment and silently freeze those weights forever)."""
    model = Pair()
    optimizer = AdamW(model, lr=1e-2)
    huge_gradients(model)
    before = ([p.numpy().tobytes() for p in model.parameters()],
              [(e["step"], e["first_moment"].tobytes(), e["second_moment"].tobytes())
               for e in optimizer.state])
    with pytest.raises(ValueError, match=r"second moment of parameter 0 \('weight'.*non-finite"):
        optimizer.step()
    after = ([p.numpy().tobytes() for p in model.parameters()],
             [(e["step"], e["first_moment"].tobytes(), e["second_moment"].tobytes())
              for e in optimizer.state])
    assert after == before


# =============================================================================== divergence
class Regression(Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = Linear(4, 1, rng=Rng(4))


def regression_data():
    rng = Rng(5)
    return rng.normal(0.0, 1.0, size=(16, 4)), rng.normal(0.0, 1.0, size=(16, 1))


def squared_error(model, inputs, targets):
    residual = model.linear(tl.Tensor(inputs)) - tl.Tensor(targets)
    return (residual * residual).mean()


def manual_losses(lr: float, steps: int):
    """The same run written out by hand: the loss of every step and the parameters before
    each step, until the first non-finite loss."""
    model = Regression()
    optimizer = SGD(model, lr=lr)
    inputs, targets = regression_data()
    losses, parameters = [], []
    with np.errstate(over="ignore", invalid="ignore"):
        for _ in range(steps):
            parameters.append([p.numpy().copy() for p in model.parameters()])
            loss = squared_error(model, inputs, targets)
            losses.append(loss.item())
            if not math.isfinite(losses[-1]):
                break
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return losses, parameters


def test_training_stops_at_the_first_non_finite_loss():
    """A learning rate far too large makes the loss grow geometrically until it overflows
    float32; training stops exactly there, naming the step, with the previous parameters."""
    lr = 3.0
    losses, parameters = manual_losses(lr, 200)
    first_bad = len(losses)  # steps count from 1
    assert not math.isfinite(losses[-1]) and all(map(math.isfinite, losses[:-1]))
    assert first_bad > 5 and losses[-2] > 1e30  # it really diverged, step by step
    model = Regression()
    inputs, targets = regression_data()
    seen = []
    with np.errstate(over="ignore", invalid="ignore"), \
            pytest.raises(TrainingDivergedError) as info:
        train(model, SGD(model, lr=lr), lambda step: (inputs, targets), steps=200,
              progress=False, loss_fn=squared_error, callback=lambda r: seen.append(r.step))
    error = info.value
    assert error.step == first_bad and error.quantity == "loss"
    assert f"step {first_bad}" in str(error) and not math.isfinite(error.value)
    assert seen == list(range(1, first_bad))
    for parameter, expected in zip(model.parameters(), parameters[-1], strict=True):
        np.testing.assert_array_equal(parameter.data, expected)  # not updated at that step


def test_training_stops_at_a_nan_in_the_data():
    model = Regression()
    inputs, targets = regression_data()
    poisoned = inputs.copy()
    poisoned[3, 2] = np.nan

    def batches(step):
        return (poisoned if step == 4 else inputs), targets

    seen = []
    with pytest.raises(TrainingDivergedError, match="step 4") as info:
        train(model, AdamW(model, lr=1e-2), batches, steps=10, progress=False,
              loss_fn=squared_error, callback=lambda r: seen.append(r.step))
    assert info.value.step == 4 and math.isnan(info.value.value)
    assert seen == [1, 2, 3]
    assert all(np.isfinite(p.data).all() for p in model.parameters())
