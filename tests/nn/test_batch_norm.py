"""BatchNorm1d: by hand, gradchecked in float64, fused against the primitive chain, bad input
refused with nothing changed, the checkpoint rule, and (where PyTorch is importable) against
torch.nn. (BatchNorm2d is in test_convolution.py.)"""

import numpy as np
import pytest

import tensorlib as tl
from tensorlib import Rng
from tensorlib.engine import backend
from tensorlib.engine.gradcheck import gradcheck
from tensorlib.nn import (
    BatchNorm1d,
    Linear,
    Sequential,
    Tanh,
)
from tensorlib.nn import functional as F
from tensorlib.saving import checkpoint
from tensorlib.saving.safetensors import load_safetensors, save_safetensors

SHAPES = [(6, 3), (4, 3, 5)]  # (N, C) and (N, C, L)


def axes_of(shape):
    return (0,) if len(shape) == 2 else (0, 2)


def by_hand(x, weight, bias, eps=1e-5):
    """Training-mode batch norm in numpy, per channel over every axis but 1."""
    axes = axes_of(x.shape)
    view = (1, -1) if x.ndim == 2 else (1, -1, 1)
    mean = x.mean(axis=axes, keepdims=True)
    variance = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(variance + eps) * weight.reshape(view) + bias.reshape(view)


def perturbed(layer, seed=0):
    """Give the affine parameters values other than one and zero."""
    rng = Rng(seed)
    with tl.no_grad():
        layer.weight.copy_(1.0 + 0.3 * rng.normal(size=layer.num_features, dtype=np.float64))
        layer.bias.copy_(0.3 * rng.normal(size=layer.num_features, dtype=np.float64))
    return layer


# =============================================================================== BatchNorm1d
def test_parameters_and_buffers_start_as_pytorch_and_are_named_as_pytorch():
    layer = BatchNorm1d(4)
    assert list(layer.state_dict()) == ["weight", "bias", "running_mean", "running_var",
                                        "num_batches_tracked"]
    state = layer.state_dict()
    np.testing.assert_array_equal(state["weight"], np.ones(4))
    np.testing.assert_array_equal(state["bias"], np.zeros(4))
    np.testing.assert_array_equal(state["running_mean"], np.zeros(4))
    np.testing.assert_array_equal(state["running_var"], np.ones(4))
    count = state["num_batches_tracked"]
    assert count.shape == () and count.dtype == np.int64 and count == 0
    assert [name for name, _ in layer.named_parameters()] == ["weight", "bias"]
    assert repr(layer) == ("BatchNorm1d(4, eps=1e-05, momentum=0.1, affine=True, "
                           "track_running_stats=True)")


@pytest.mark.parametrize("shape", SHAPES)
def test_training_forward_is_the_formula(shape):
    layer = perturbed(BatchNorm1d(3, dtype=np.float64))
    x = Rng(1).normal(2.0, 3.0, size=shape, dtype=np.float64)
    out = layer(tl.tensor(x))
    np.testing.assert_allclose(out.data, by_hand(x, layer.weight.data, layer.bias.data),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shape", SHAPES)
def test_running_statistics_follow_the_momentum_rule_then_normalize_in_eval(shape):
    layer = perturbed(BatchNorm1d(3, momentum=0.25, dtype=np.float64))
    mean, var = np.zeros(3), np.ones(3)
    batches = [Rng(seed).normal(1.0, 2.0, size=shape, dtype=np.float64) for seed in range(5)]
    for x in batches:
        layer(tl.tensor(x))
        count = x.size // 3
        mean = 0.75 * mean + 0.25 * x.mean(axis=axes_of(shape))
        var = 0.75 * var + 0.25 * x.var(axis=axes_of(shape)) * count / (count - 1)  # unbiased
    np.testing.assert_allclose(layer.running_mean.data, mean, rtol=1e-12)
    np.testing.assert_allclose(layer.running_var.data, var, rtol=1e-12)
    assert int(layer.num_batches_tracked.data) == 5

    layer.eval()
    before = layer.state_dict()
    view = (1, -1) if len(shape) == 2 else (1, -1, 1)
    x = batches[0]
    expected = ((x - mean.reshape(view)) / np.sqrt(var.reshape(view) + 1e-5)
                * layer.weight.data.reshape(view) + layer.bias.data.reshape(view))
    np.testing.assert_allclose(layer(tl.tensor(x)).data, expected, rtol=1e-12)
    assert all(np.array_equal(before[k], v) for k, v in layer.state_dict().items())
    one_row = layer(tl.tensor(x[:1]))           # one value per channel is fine in evaluation
    np.testing.assert_allclose(one_row.data, expected[:1], rtol=1e-12)


def test_momentum_none_averages_every_batch_seen():
    layer = BatchNorm1d(2, momentum=None, dtype=np.float64)
    batches = [Rng(seed).normal(size=(5, 2), dtype=np.float64) for seed in range(4)]
    for x in batches:
        layer(tl.tensor(x))
    np.testing.assert_allclose(layer.running_mean.data,
                               np.mean([x.mean(axis=0) for x in batches], axis=0), rtol=1e-12)
    np.testing.assert_allclose(layer.running_var.data,
                               np.mean([x.var(axis=0, ddof=1) for x in batches], axis=0),
                               rtol=1e-12)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("affine", [True, False])
def test_gradcheck_in_training_and_in_evaluation(shape, affine):
    layer = BatchNorm1d(3, affine=affine, dtype=np.float64)
    layer(tl.tensor(Rng(3).normal(1.0, 2.0, size=shape, dtype=np.float64)))  # running stats move
    x = tl.tensor(Rng(2).normal(size=shape, dtype=np.float64), requires_grad=True)
    leaves = [x]
    if affine:
        leaves += [tl.tensor(1.0 + 0.3 * Rng(4).normal(size=3, dtype=np.float64),
                             requires_grad=True),
                   tl.tensor(0.3 * Rng(5).normal(size=3, dtype=np.float64), requires_grad=True)]

    def training(x, weight=None, bias=None):
        return F.batch_norm(x, None, None, weight, bias, training=True)

    def evaluation(x, weight=None, bias=None):
        return F.batch_norm(x, layer.running_mean, layer.running_var, weight, bias)

    assert gradcheck(training, *leaves)
    assert gradcheck(evaluation, *leaves)


@pytest.mark.parametrize("shape", SHAPES)
def test_the_fused_node_equals_the_primitive_chain_in_value_and_gradient(shape):
    weight = tl.tensor(Rng(4).normal(size=3, dtype=np.float64), requires_grad=True)
    bias = tl.tensor(Rng(5).normal(size=3, dtype=np.float64), requires_grad=True)
    data = Rng(6).normal(size=shape, dtype=np.float64)
    upstream = Rng(7).normal(size=shape, dtype=np.float64)
    results = []
    for function in (lambda x: F.batch_norm(x, None, None, weight, bias, training=True),
                     lambda x: F.batch_norm_reference(x, weight, bias)):
        x = tl.tensor(data, requires_grad=True)
        weight.grad = bias.grad = None
        out = function(x)
        out.backward(upstream)
        results.append((out.data, x.grad, weight.grad, bias.grad))
    for fused, chained in zip(*results, strict=True):
        np.testing.assert_allclose(fused, chained, rtol=1e-10, atol=1e-12)


def test_without_running_statistics_the_batch_normalizes_in_evaluation_too():
    layer = BatchNorm1d(3, track_running_stats=False, dtype=np.float64)
    assert list(layer.state_dict()) == ["weight", "bias"]
    x = Rng(8).normal(size=(5, 3), dtype=np.float64)
    layer.eval()
    np.testing.assert_allclose(layer(tl.tensor(x)).data, by_hand(x, np.ones(3), np.zeros(3)),
                               rtol=1e-12, atol=1e-12)


def test_the_same_in_reference_mode():
    layer = perturbed(BatchNorm1d(3, dtype=np.float64))
    x = Rng(9).normal(size=(4, 3, 2), dtype=np.float64)
    fast = layer(tl.tensor(x)).data
    with tl.reference_mode():
        plain = layer(tl.tensor(x)).data
    np.testing.assert_array_equal(fast, plain)


@pytest.mark.parametrize("bad, error, message", [
    (tl.zeros(4, 5), ValueError, r"expects \(N, 3\) or \(N, 3, L\) input, got \(4, 5\)"),
    (tl.zeros(4), ValueError, r"got \(4,\)"),
    (tl.zeros(2, 3, 4, 5), ValueError, r"got \(2, 3, 4, 5\)"),
    (tl.tensor(np.zeros((4, 3), dtype=np.int64)), TypeError, "floating-point"),
    (tl.zeros(1, 3), ValueError, "more than 1 value per channel"),
    (tl.zeros(1, 3, 1), ValueError, "more than 1 value per channel"),
    (np.zeros((4, 3)), TypeError, "takes a Tensor, got ndarray"),
    (tl.tensor(np.zeros((4, 3))), TypeError, r"mixed dtypes \['float32', 'float64'\]"),
])
def test_bad_input_raises_naming_it_and_changes_nothing(bad, error, message):
    layer = BatchNorm1d(3)
    layer(tl.tensor(Rng(10).normal(size=(4, 3))))
    before = layer.state_dict()
    with pytest.raises(error, match=message):
        layer(bad)
    assert all(np.array_equal(before[k], v) for k, v in layer.state_dict().items())


@pytest.mark.parametrize("shape", [(0, 3), (0, 3, 4), (2, 3, 0)])
@pytest.mark.parametrize("training", [True, False])
def test_an_empty_batch_passes_through_and_changes_nothing(shape, training):
    layer = perturbed(BatchNorm1d(3, dtype=np.float64))
    layer(tl.tensor(Rng(13).normal(size=(4, 3), dtype=np.float64)))
    layer.train(training)
    before = layer.state_dict()
    x = tl.tensor(np.zeros(shape), requires_grad=True)
    out = layer(x)
    assert out.shape == shape
    out.sum().backward()
    assert x.grad.shape == shape and not layer.weight.grad.any() and not layer.bias.grad.any()
    assert all(np.array_equal(before[k], v) for k, v in layer.state_dict().items())


@pytest.mark.parametrize("arguments, message", [
    ({"num_features": 0}, "num_features"),
    ({"num_features": 3, "eps": 0.0}, "eps"),
    ({"num_features": 3, "momentum": 1.5}, "momentum"),
    ({"num_features": 3, "affine": 1}, "affine"),
    ({"num_features": 3, "dtype": np.int32}, "dtype"),
])
def test_bad_settings_are_refused(arguments, message):
    with pytest.raises((ValueError, TypeError), match=message):
        BatchNorm1d(**arguments)


def test_a_tlckpt_checkpoint_refuses_running_statistics_and_safetensors_keeps_them(tmp_path):
    model = Sequential(Linear(2, 4, rng=Rng(0)), BatchNorm1d(4), Tanh())
    model(tl.tensor(Rng(11).normal(size=(8, 2))))
    path = tmp_path / "model.tlckpt"
    with pytest.raises(ValueError, match=r"1\.running_mean, 1\.running_var, "
                                         r"1\.num_batches_tracked.*save_safetensors"):
        checkpoint.save(path, model)
    assert not path.exists() and not list(tmp_path.iterdir())
    save_safetensors(tmp_path / "model.safetensors", model)
    fresh = Sequential(Linear(2, 4, rng=Rng(1)), BatchNorm1d(4), Tanh())
    load_safetensors(tmp_path / "model.safetensors", fresh)
    assert all(np.array_equal(value, fresh.state_dict()[name])
               for name, value in model.state_dict().items())
    assert int(fresh[1].num_batches_tracked.data) == 1
    plain = BatchNorm1d(4, track_running_stats=False)            # parameters only: allowed
    checkpoint.save(tmp_path / "plain.tlckpt", plain)


class DeviceArray(np.ndarray):
    """An array "on" a fake device: a numpy subclass, so every op still runs."""


def test_to_a_device_moves_the_running_statistics_and_training_keeps_them_there():
    backend.register_backend("fakebn", np, lambda a: np.array(a, copy=True).view(DeviceArray),
                             lambda: True, array_types=(DeviceArray,))
    try:
        moved, staying = BatchNorm1d(3, dtype=np.float64), BatchNorm1d(3, dtype=np.float64)
        moved.to("fakebn")
        for layer in (moved, staying):
            layer(tl.tensor(Rng(12).normal(size=(5, 3), dtype=np.float64)))
        for name in ("running_mean", "running_var", "num_batches_tracked"):
            assert isinstance(getattr(moved, name).numpy(), DeviceArray), name
        assert all(np.array_equal(value, staying.state_dict()[name])
                   for name, value in moved.state_dict().items())
    finally:
        backend.unregister_backend("fakebn")


# =============================================================================== PyTorch
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("momentum", [0.1, None])
def test_matches_torch_batch_norm_1d(shape, momentum):
    torch = pytest.importorskip("torch")
    ours = perturbed(BatchNorm1d(3, momentum=momentum, dtype=np.float64))
    theirs = torch.nn.BatchNorm1d(3, momentum=momentum, dtype=torch.float64)
    with torch.no_grad():
        theirs.weight.copy_(torch.from_numpy(ours.weight.numpy()))
        theirs.bias.copy_(torch.from_numpy(ours.bias.numpy()))
    for seed in range(4):                                        # training steps
        data = Rng(seed).normal(0.5, 2.0, size=shape, dtype=np.float64)
        upstream = Rng(seed + 10).normal(size=shape, dtype=np.float64)
        x, tx = tl.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
        ours.zero_grad()
        theirs.zero_grad()
        out, t_out = ours(x), theirs(tx)
        out.backward(upstream)
        t_out.backward(torch.from_numpy(upstream))
        np.testing.assert_allclose(out.data, t_out.detach().numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(x.grad, tx.grad.numpy(), rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(ours.weight.grad, theirs.weight.grad.numpy(), rtol=1e-9)
        np.testing.assert_allclose(ours.bias.grad, theirs.bias.grad.numpy(), rtol=1e-9)
    state = ours.state_dict()
    for name, value in theirs.state_dict().items():
        np.testing.assert_allclose(state[name], value.numpy(), rtol=1e-12)
    # Our state_dict loads into a fresh torch layer, strictly, and evaluates the same.
    fresh = torch.nn.BatchNorm1d(3, momentum=momentum, dtype=torch.float64)
    fresh.load_state_dict({name: torch.from_numpy(np.asarray(value))
                           for name, value in state.items()}, strict=True)
    fresh.eval()
    ours.eval()
    data = Rng(20).normal(size=shape, dtype=np.float64)
    np.testing.assert_allclose(ours(tl.tensor(data)).data,
                               fresh(torch.from_numpy(data)).detach().numpy(), rtol=1e-10)
