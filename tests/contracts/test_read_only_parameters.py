"""Every load and every optimizer step completes or changes nothing, also when a
parameter's array is read-only (``param.data = array`` accepts a read-only memory map)."""

import numpy as np
import pytest

import tensorlib as tl
from tensorlib import Rng
from tensorlib.adapters.lora import attach_lora, load_lora_state_dict, lora_parameters
from tensorlib.nn import Decoder, DecoderConfig, StateDictError
from tensorlib.optim import SGD, AdamW
from tensorlib.saving import checkpoint
from tensorlib.saving.checkpoint import CheckpointError
from tensorlib.saving.safetensors import load_safetensors, save_safetensors

from helpers import state_picture

CONFIG = DecoderConfig(vocabulary_size=7, context_length=6, channels=8, heads=2, layers=1)


def model_with_a_read_only_weight(seed=0):
    """A decoder whose last parameter's array is read-only (the first ones are writable, so
    a write phase that is not checked first changes them before it fails)."""
    model = Decoder(CONFIG, rng=Rng(seed))
    last = model.parameters()[-1]
    frozen = last.numpy().copy()
    frozen.flags.writeable = False
    last.data = frozen
    return model


def snapshot(model, optimizer=None):
    values = [p.numpy().copy() for p in model.parameters()]
    if optimizer is None:
        return values, None
    return values, optimizer.state_dict()


def assert_same(before, after):
    for old, new in zip(before[0], after[0], strict=True):
        np.testing.assert_array_equal(old, new)
    if before[1] is not None:
        assert state_picture(before[1]) == state_picture(after[1])


def give_gradients(model):
    ids = Rng(1).integers(0, 7, size=(2, 5))
    model.loss(ids[:, :-1], ids[:, 1:]).backward()


def test_a_checkpoint_load_changes_nothing_when_a_parameter_is_read_only(tmp_path):
    source = Decoder(CONFIG, rng=Rng(5))
    source_optimizer = AdamW(source, lr=0.1)
    give_gradients(source)
    source_optimizer.step()
    checkpoint.save(tmp_path / "run.tlckpt", source, source_optimizer)
    model = model_with_a_read_only_weight()
    optimizer = AdamW(model, lr=0.5)
    before = snapshot(model, optimizer)
    last = [name for name, _ in model.named_parameters()][-1]
    with pytest.raises(CheckpointError, match=f"'{last}': the model's array is read-only"):
        checkpoint.load(tmp_path / "run.tlckpt", model, optimizer)
    assert optimizer.lr == 0.5
    assert_same(before, snapshot(model, optimizer))


def test_state_dict_and_safetensors_loads_change_nothing_when_a_parameter_is_read_only(
        tmp_path):
    model = model_with_a_read_only_weight()
    before = snapshot(model)
    state = Decoder(CONFIG, rng=Rng(5)).state_dict()
    with pytest.raises(StateDictError, match="read-only"):
        model.load_state_dict(state)
    save_safetensors(tmp_path / "other.safetensors", Decoder(CONFIG, rng=Rng(5)))
    with pytest.raises(CheckpointError, match="read-only"):
        load_safetensors(tmp_path / "other.safetensors", model)
    assert_same(before, snapshot(model))


def test_a_lora_load_changes_nothing_when_an_adapter_is_read_only():
    model = Decoder(CONFIG, rng=Rng(0))
    attach_lora(model, "blocks.*.mlp_*", rank=2, alpha=4, rng=Rng(1))
    adapters = lora_parameters(model)
    last = list(adapters.values())[-1]
    frozen = last.numpy().copy()
    frozen.flags.writeable = False
    last.data = frozen
    before = {name: p.numpy().copy() for name, p in adapters.items()}
    state = {name: np.ones(p.shape, np.float32) for name, p in adapters.items()}
    with pytest.raises(StateDictError, match="read-only"):
        load_lora_state_dict(model, state)
    for name, parameter in adapters.items():
        np.testing.assert_array_equal(parameter.data, before[name])


@pytest.mark.parametrize("make", [lambda m: AdamW(m, lr=0.1, max_grad_norm=1.0),
                                  lambda m: SGD(m, lr=0.1, momentum=0.9)],
                         ids=["AdamW", "SGD"])
@pytest.mark.parametrize("reference", [False, True], ids=["kernels", "reference mode"])
def test_an_optimizer_step_changes_nothing_when_a_parameter_is_read_only(make, reference):
    model = model_with_a_read_only_weight()
    optimizer = make(model)
    give_gradients(model)
    before = snapshot(model, optimizer)
    with tl.reference_mode(reference):
        with pytest.raises(ValueError, match=r"is read-only .*nothing was changed"):
            optimizer.step()
    assert_same(before, snapshot(model, optimizer))
