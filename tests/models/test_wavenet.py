"""tensorlib.nn.WaveNet: the levels by hand, the start, gradients, bad input, the checkpoint
rule, and (where PyTorch is importable) the same model in torch.nn."""

import math

import numpy as np
import pytest

import tensorlib as tl
from tensorlib import Rng
from tensorlib.engine.gradcheck import gradcheck
from tensorlib.nn import WaveNet
from tensorlib.nn import functional as F
from tensorlib.saving import checkpoint

IDS = Rng(1).integers(0, 11, size=(5, 8))


def small(context_length=8, seed=0, dtype=np.float64):
    return WaveNet(11, context_length=context_length, embedding_width=3, hidden=4,
                   rng=Rng(seed), dtype=dtype)


def by_hand(model, ids):
    """Embedding, then per level: pairs side by side, x W^T, batch norm over (B, T'), tanh."""
    x = model.embedding.weight.numpy()[ids]                               # (B, T, C)
    for level in model.levels:
        batch, length, width = x.shape
        h = x.reshape(batch, length // 2, 2 * width) @ level.linear.weight.numpy().T
        mean, variance = h.mean(axis=(0, 1)), h.var(axis=(0, 1))
        h = (h - mean) / np.sqrt(variance + 1e-5)
        h = h * level.norm.weight.numpy() + level.norm.bias.numpy()
        x = np.tanh(h)
    return x.reshape(len(ids), -1) @ model.head.weight.numpy().T + model.head.bias.numpy()


def test_the_default_model_has_makemores_shapes_and_parameter_count():
    model = WaveNet(27, rng=Rng(0))
    assert model.num_parameters() == 76_579
    assert [level.linear.in_features for level in model.levels] == [48, 256, 256]
    assert model(Rng(2).integers(0, 27, size=(3, 8))).shape == (3, 27)
    assert [name for name, _ in model.named_buffers()][:3] == [
        "levels.0.norm.running_mean", "levels.0.norm.running_var",
        "levels.0.norm.num_batches_tracked"]


def test_the_forward_pass_is_the_levels_by_hand():
    model = small()
    np.testing.assert_allclose(model(IDS).data, by_hand(model, IDS), rtol=1e-10)
    four = small(context_length=4, seed=1)
    np.testing.assert_allclose(four(IDS[:, :4]).data, by_hand(four, IDS[:, :4]), rtol=1e-10)


def test_the_principled_start_gives_a_first_loss_near_uniform():
    model = WaveNet(27, rng=Rng(3))
    targets = Rng(4).integers(0, 27, size=64)
    loss = model.loss(Rng(5).integers(0, 27, size=(64, 8)), targets).item()
    assert abs(loss - math.log(27)) < 0.05
    std = model.levels[1].linear.weight.numpy().std()
    assert std == pytest.approx((5 / 3) / math.sqrt(256), rel=0.05)


def test_gradcheck_through_every_level():
    model = small()
    embedded = tl.tensor(model.embedding(IDS).data, requires_grad=True)

    def rest(x):
        for level in model.levels:
            x = level(x)
        return model.head(model.flatten(x))

    assert gradcheck(rest, embedded)
    model.eval()
    assert gradcheck(rest, embedded)


@pytest.mark.parametrize("arguments, message", [
    ({"context_length": 6}, "power of merge"),
    ({"context_length": 8, "merge": 1}, "power of merge"),
    ({"context_length": 9, "merge": 2}, "power of merge"),
    ({"vocabulary_size": 0}, "vocabulary_size"),
])
def test_bad_settings_are_refused(arguments, message):
    settings = {"vocabulary_size": 11, **arguments}
    with pytest.raises(ValueError, match=message):
        WaveNet(rng=Rng(0), **settings)


def test_bad_ids_are_refused_and_change_nothing():
    model = small(dtype=np.float32)
    before = model.state_dict()
    with pytest.raises(ValueError, match=r"ids of shape \(B, 8\), got \(5, 4\)"):
        model(IDS[:, :4])
    with pytest.raises(IndexError):
        model(IDS + 20)
    assert all(np.array_equal(value, model.state_dict()[name]) for name, value in before.items())
    assert WaveNet(27, context_length=9, merge=3, rng=Rng(0))(
        Rng(6).integers(0, 27, size=(2, 9))).shape == (2, 27)


def test_a_wavenet_is_saved_as_safetensors_not_as_tlckpt(tmp_path):
    model = small(dtype=np.float32)
    model(IDS)
    with pytest.raises(ValueError, match="levels.0.norm.running_mean"):
        checkpoint.save(tmp_path / "wavenet.tlckpt", model)


def test_matches_the_same_model_in_torch():
    torch = pytest.importorskip("torch")
    ours = small()
    embedding = torch.nn.Embedding(11, 3, dtype=torch.float64)
    levels = [(torch.nn.Linear(6 if i == 0 else 8, 4, bias=False, dtype=torch.float64),
               torch.nn.BatchNorm1d(4, dtype=torch.float64)) for i in range(3)]
    head = torch.nn.Linear(4, 11, dtype=torch.float64)
    state = ours.state_dict()
    with torch.no_grad():
        embedding.weight.copy_(torch.from_numpy(state["embedding.weight"]))
        for i, (linear, _) in enumerate(levels):
            linear.weight.copy_(torch.from_numpy(state[f"levels.{i}.linear.weight"]))
        head.weight.copy_(torch.from_numpy(state["head.weight"]))
        head.bias.copy_(torch.from_numpy(state["head.bias"]))
    x = embedding(torch.from_numpy(IDS))
    for linear, norm in levels:
        batch, length, width = x.shape
        h = linear(x.reshape(batch, length // 2, 2 * width))
        x = torch.tanh(norm(h.transpose(1, 2)).transpose(1, 2))
    theirs = head(x.flatten(1))
    targets = Rng(7).integers(0, 11, size=5)
    loss = F.cross_entropy(ours(IDS), targets)                   # one training pass each
    loss.backward()
    torch_loss = torch.nn.functional.cross_entropy(theirs, torch.from_numpy(targets))
    torch_loss.backward()
    assert loss.item() == pytest.approx(torch_loss.item(), rel=1e-10)
    np.testing.assert_allclose(ours.embedding.weight.grad, embedding.weight.grad.numpy(),
                               rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(ours.levels[0].linear.weight.grad,
                               levels[0][0].weight.grad.numpy(), rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(state["levels.2.norm.running_var"],
                               np.ones(4))  # the state was taken before the forward passes
    np.testing.assert_allclose(ours.levels[2].norm.running_var.data,
                               levels[2][1].running_var.numpy(), rtol=1e-10)
