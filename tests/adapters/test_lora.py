"""Tests for tensorlib.adapters.lora: LowRankAdapter, attach_lora, lora_parameters, merge_lora."""

import math

import numpy as np
import pytest

import tensorlib as tl
from tensorlib import Rng, gradcheck
from tensorlib.adapters.lora import (
    LoRALinear,
    LowRankAdapter,
    attach_lora,
    detach_lora,
    find_linear_layers,
    load_adapters,
    load_lora_state_dict,
    lora_parameters,
    lora_state_dict,
    merge_lora,
    save_adapters,
)
from tensorlib.nn import Decoder, DecoderConfig, Linear
from tensorlib.optim import SGD, AdamW
from tensorlib.saving import checkpoint

CONFIG = DecoderConfig(vocabulary_size=11, context_length=6, channels=8, heads=2, layers=2)
PATTERNS = ["blocks.*.attention.output", "blocks.*.mlp_*"]


def small_decoder(seed=0, dtype=np.float32):
    return Decoder(CONFIG, rng=Rng(seed), dtype=dtype)


def token_batch(seed=1, shape=(3, 6)):
    return Rng(seed).integers(0, CONFIG.vocabulary_size, size=shape)


def logits(model, ids):
    with tl.no_grad():
        return model(ids).numpy().copy()


def base_names(model):
    """The model's parameter names less the adapters'."""
    return [name for name, _ in model.named_parameters() if ".lora." not in "." + name]


def randomize_b(model, seed=5, scale=0.5):
    """Give every adapter a non-zero B, as training would."""
    rng = Rng(seed)
    with tl.no_grad():
        for name, parameter in lora_parameters(model).items():
            if name.endswith(".B"):
                parameter.copy_(rng.normal(0.0, scale, size=parameter.shape,
                                           dtype=parameter.dtype))


def numeric_parameter_check(parameters, run, eps=1e-6, atol=1e-7, rtol=1e-5):
    """Each parameter's .grad from one backward of run() against central differences."""
    out = run()
    weights = np.cos(np.arange(out.numel()) * 1.618 + 0.3).reshape(out.shape) + 1.5
    for parameter in parameters.values():
        parameter.grad = None
    out.backward(weights)
    for name, parameter in parameters.items():
        assert parameter.grad is not None, name
        numeric = np.zeros(parameter.shape)
        array = parameter.numpy()
        with tl.no_grad():
            for index in np.ndindex(parameter.shape):
                original = array[index]
                array[index] = original + eps
                upper = float(np.sum(run().data * weights))
                array[index] = original - eps
                lower = float(np.sum(run().data * weights))
                array[index] = original
                numeric[index] = (upper - lower) / (2 * eps)
        np.testing.assert_allclose(parameter.grad, numeric, atol=atol, rtol=rtol, err_msg=name)


# ----------------------------------------------------------------------------- the adapter
def test_adapter_shapes_and_initialization():
    adapter = LowRankAdapter(12, 5, rank=3, alpha=6, rng=Rng(0))
    assert adapter.A.shape == (3, 12) and adapter.B.shape == (5, 3)
    assert adapter.A.dtype == np.float32 and adapter.B.dtype == np.float32
    assert adapter.scale == 2.0
    assert np.all(adapter.B.data == 0)
    bound = 1 / math.sqrt(12)
    assert np.all(np.abs(adapter.A.data) <= bound)
    assert np.abs(adapter.A.data).max() > 0.5 * bound  # really drawn, not tiny
    assert adapter.A.trainable and adapter.B.trainable
    again = LowRankAdapter(12, 5, rank=3, alpha=6, rng=Rng(0))
    np.testing.assert_array_equal(adapter.A.data, again.A.data)
    other = LowRankAdapter(12, 5, rank=3, alpha=6, rng=Rng(1))
    assert not np.array_equal(adapter.A.data, other.A.data)
    assert [name for name, _ in adapter.named_parameters()] == ["A", "B"]


def test_adapter_forward_matches_formula():
    adapter = LowRankAdapter(4, 3, rank=2, alpha=3, rng=Rng(0), dtype=np.float64)
    with tl.no_grad():
        adapter.B.copy_(np.arange(6, dtype=np.float64).reshape(3, 2) - 2.5)
    x = Rng(2).normal(size=(2, 5, 4), dtype=np.float64)
    expected = 1.5 * x @ adapter.A.data.T @ adapter.B.data.T
    np.testing.assert_allclose(adapter(tl.tensor(x)).data, expected, rtol=1e-12)
    np.testing.assert_allclose(adapter.delta_weight(), 1.5 * adapter.B.data @ adapter.A.data)


@pytest.mark.parametrize("kwargs, error", [
    ({"rank": 0}, ValueError), ({"rank": 2.0}, TypeError), ({"rank": True}, TypeError),
    ({"alpha": 0}, ValueError), ({"alpha": -1.0}, ValueError), ({"alpha": math.inf}, ValueError),
    ({"alpha": True}, TypeError), ({"alpha": "8"}, TypeError), ({"alpha": math.nan}, ValueError),
])
def test_adapter_rejects_bad_arguments(kwargs, error):
    arguments = {"rank": 2, "alpha": 4.0} | kwargs
    with pytest.raises(error):
        LowRankAdapter(4, 3, arguments["rank"], arguments["alpha"], rng=Rng(0))


# ----------------------------------------------------------------------------- gradients
def test_lora_linear_gradcheck_float64():
    layer = LoRALinear(Linear(5, 4, rng=Rng(0), dtype=np.float64), rank=2, alpha=4,
                       rng=Rng(1))
    randomize_b(layer)
    x = tl.tensor(Rng(3).normal(size=(2, 3, 5), dtype=np.float64), requires_grad=True)
    assert gradcheck(lambda t: layer(t), x)
    adapter_parameters = lora_parameters(layer)
    assert list(adapter_parameters) == ["lora.A", "lora.B"]
    numeric_parameter_check(adapter_parameters, lambda: layer(x))
    assert layer.weight.grad is None and layer.bias.grad is None  # frozen base


def test_lora_decoder_gradients_float64():
    model = small_decoder(dtype=np.float64)
    attach_lora(model, ["blocks.0.attention.output", "blocks.1.mlp_output"], rank=1,
                alpha=2, rng=Rng(1))
    randomize_b(model, scale=0.3)
    ids, targets = token_batch(1, (2, 4)), token_batch(2, (2, 4))
    numeric_parameter_check(lora_parameters(model), lambda: model.loss(ids, targets))
    adapters = {id(p) for p in lora_parameters(model).values()}
    assert all(p.grad is None for p in model.parameters() if id(p) not in adapters)


# ----------------------------------------------------------------------------- attaching
def test_attach_leaves_outputs_unchanged_and_freezes_the_base():
    model = small_decoder()
    ids = token_batch()
    before = logits(model, ids)
    attached = attach_lora(model, PATTERNS, rank=2, alpha=4, rng=Rng(3))
    assert attached == ["blocks.0.attention.output", "blocks.0.mlp_input",
                        "blocks.0.mlp_output", "blocks.1.attention.output",
                        "blocks.1.mlp_input", "blocks.1.mlp_output"]
    np.testing.assert_array_equal(logits(model, ids), before)  # B = 0: exactly unchanged
    assert model.trainable_parameters() == []  # the base is frozen; the adapters are apart
    assert all(p.trainable for p in lora_parameters(model).values())
    layer = model.blocks[0].mlp_input
    assert isinstance(layer, LoRALinear) and isinstance(layer.base, Linear)
    assert layer.weight is layer.base.weight and layer.bias is layer.base.bias
    modules = dict(model.named_modules())
    assert "blocks.0.mlp_input.lora" not in modules and "blocks.0.mlp_input.base" not in modules
    assert repr(layer) == ("LoRALinear(base=Linear(in_features=8, out_features=32, bias=True), "
                           "lora=LowRankAdapter(in_features=8, out_features=32, rank=2, "
                           "alpha=4))")


def test_adapters_stay_outside_the_base_parameter_tree():
    # Riftco: attached adapter factors are exposed by lora_parameters() and are not added to
    # the base parameters(); state_dict() keeps the base schema too.
    model = small_decoder()
    names, count = [name for name, _ in model.named_parameters()], model.num_parameters()
    keys = list(model.state_dict())
    attach_lora(model, PATTERNS, rank=2, alpha=4, rng=Rng(3))
    assert [name for name, _ in model.named_parameters()] == names
    assert model.num_parameters() == count and list(model.state_dict()) == keys
    adapters = lora_parameters(model)
    assert adapters
    assert not {id(p) for p in adapters.values()} & {id(p) for p in model.parameters()}
    assert not set(adapters) & set(model.state_dict())

def test_lora_parameters_names_order_and_count():
    model = small_decoder()
    attach_lora(model, ["blocks.*.mlp_input", "blocks.0.attention.output"], rank=3, alpha=3,
                rng=Rng(3))
    named = lora_parameters(model)
    assert list(named) == [
        "blocks.0.attention.output.lora.A", "blocks.0.attention.output.lora.B",
        "blocks.0.mlp_input.lora.A", "blocks.0.mlp_input.lora.B",
        "blocks.1.mlp_input.lora.A", "blocks.1.mlp_input.lora.B",
    ]
    assert named["blocks.0.mlp_input.lora.B"].shape == (32, 3)
    assert sum(p.numel() for p in named.values()) == 3 * (8 + 8) + 2 * 3 * (8 + 32)
    assert all(p.trainable for p in named.values())
    assert list(lora_parameters(model)) == list(named)  # stable
    assert named["blocks.0.mlp_input.lora.A"] is model.blocks[0].mlp_input.lora.A
    assert lora_state_dict(model).keys() == named.keys()

def test_base_checkpoint_still_loads(tmp_path):
    trained = small_decoder(seed=7)
    ids = token_batch()
    checkpoint.save(tmp_path / "base.tlckpt", trained)  # saved before any adapter exists
    for attach_first in (False, True):
        model = small_decoder(seed=0)
        if attach_first:
            attach_lora(model, PATTERNS, rank=2, alpha=4, rng=Rng(3))
        model.load_state_dict(trained.state_dict())  # strict, before and after attaching
        np.testing.assert_array_equal(logits(model, ids), logits(trained, ids))
    model = small_decoder(seed=0)
    attach_lora(model, PATTERNS, rank=2, alpha=4, rng=Rng(3))
    checkpoint.load(tmp_path / "base.tlckpt", model)
    np.testing.assert_array_equal(logits(model, ids), logits(trained, ids))

def test_adapters_are_saved_and_loaded_through_their_own_path(tmp_path):
    model = small_decoder()
    attach_lora(model, PATTERNS, rank=2, alpha=4, rng=Rng(3))
    randomize_b(model)
    ids = token_batch()
    other = small_decoder(seed=9)
    attach_lora(other, PATTERNS, rank=2, alpha=4, rng=Rng(4))
    other.load_state_dict(model.state_dict())  # strict: the base
    load_lora_state_dict(other, lora_state_dict(model))  # the adapters
    np.testing.assert_array_equal(logits(other, ids), logits(model, ids))
    checkpoint.save(tmp_path / "base.tlckpt", model)
    save_adapters(tmp_path / "adapters.tlckpt", model)
    stored = [entry["name"] for entry in checkpoint.inspect(tmp_path / "base.tlckpt")
              ["parameters"]]
    assert stored == [name for name, _ in model.named_parameters()]
    stored = [entry["name"] for entry in checkpoint.inspect(tmp_path / "adapters.tlckpt")
              ["parameters"]]
    assert stored == list(lora_parameters(model))
    third = small_decoder(seed=10)
    attach_lora(third, PATTERNS, rank=2, alpha=4, rng=Rng(5))
    checkpoint.load(tmp_path / "base.tlckpt", third)
    load_adapters(tmp_path / "adapters.tlckpt", third)
    np.testing.assert_array_equal(logits(third, ids), logits(model, ids))
    with pytest.raises(checkpoint.CheckpointError, match="unexpected key"):
        load_adapters(tmp_path / "adapters.tlckpt", small_decoder())  # no adapters there
    fewer = small_decoder(seed=10)
    attach_lora(fewer, "blocks.0.mlp_input", rank=2, alpha=4, rng=Rng(5))
    before = lora_state_dict(fewer)
    with pytest.raises(tl.nn.StateDictError, match="unexpected key 'blocks.0.attention"):
        load_lora_state_dict(fewer, lora_state_dict(model))
    assert all(np.array_equal(before[k], v) for k, v in lora_state_dict(fewer).items())
    with pytest.raises(ValueError, match="no LoRA adapters to save"):
        save_adapters(tmp_path / "none.tlckpt", small_decoder())

def test_attach_errors_change_nothing():
    model = small_decoder()
    with pytest.raises(ValueError, match="matches no Linear.*blocks.0.mlp_input"):
        attach_lora(model, "blocks.*.attn", rank=2, alpha=4)
    with pytest.raises(ValueError, match="'blocks.0.attention'"):
        # matches a MultiheadAttention (not a Linear) and nothing else
        attach_lora(model, ["blocks.0.mlp_input", "blocks.0.attention"], rank=2, alpha=4)
    with pytest.raises(TypeError):
        attach_lora(model, [3], rank=2, alpha=4)
    with pytest.raises(ValueError):
        attach_lora(model, [], rank=2, alpha=4)
    with pytest.raises(ValueError):
        attach_lora(model, "*", rank=0, alpha=4)
    with pytest.raises(ValueError):
        attach_lora(model, "*", rank=2, alpha=-4)
    with pytest.raises(TypeError):
        attach_lora(model, "*", rank=2, alpha="4")
    assert lora_parameters(model) == {}
    assert all(p.trainable for p in model.parameters())
    layer = Linear(3, 2, rng=Rng(0))
    with pytest.raises(ValueError, match=r"itself is the layer.*LoRALinear\(layer"):
        attach_lora(layer, "*", rank=1, alpha=1)
    assert isinstance(layer, Linear) and layer.weight.trainable

    attach_lora(model, "blocks.0.mlp_input", rank=2, alpha=4, rng=Rng(0))
    before = lora_parameters(model)
    with pytest.raises(ValueError, match="already have a LoRA adapter: blocks.0.mlp_input"):
        attach_lora(model, "blocks.*.mlp_*", rank=2, alpha=4, rng=Rng(0))
    assert list(lora_parameters(model)) == list(before)
    assert all(a is b for a, b in zip(lora_parameters(model).values(), before.values(),
                                      strict=True))


def test_a_lora_linear_swapped_in_by_hand_is_what_attach_lora_does():
    by_hand, attached = small_decoder(), small_decoder()
    layer = by_hand.blocks[0].mlp_input
    by_hand.blocks[0].mlp_input = LoRALinear(layer, rank=2, alpha=4, rng=Rng(3))
    attach_lora(attached, "blocks.0.mlp_input", rank=2, alpha=4, rng=Rng(3))
    assert [n for n, _ in by_hand.named_parameters()] == \
        [n for n, _ in attached.named_parameters()]
    for (_, a), (_, b) in zip(by_hand.state_dict().items(), attached.state_dict().items(),
                              strict=True):
        np.testing.assert_array_equal(a, b)
    assert not layer.weight.trainable and not layer.bias.trainable  # the base is frozen
    assert by_hand.blocks[0].mlp_output.weight.trainable  # (attach_lora freezes them all)
    with pytest.raises(TypeError, match="already has an adapter"):
        LoRALinear(by_hand.blocks[0].mlp_input, rank=1, alpha=1)
    with pytest.raises(TypeError, match="Linear or NF4Linear"):
        LoRALinear(by_hand.blocks[0].mlp_norm, rank=1, alpha=1)
    with pytest.raises(ValueError, match="rank"):
        LoRALinear(Linear(3, 2), rank=0, alpha=1)


def test_find_linear_layers_patterns():
    model = small_decoder()
    names = [name for name, _ in find_linear_layers(model, "blocks.1.*")]
    assert names == ["blocks.1.attention.output", "blocks.1.mlp_input", "blocks.1.mlp_output"]
    everything = [name for name, _ in find_linear_layers(model)]
    assert everything[-1] == "language_model_head" and len(everything) == 7
    attach_lora(model, "blocks.1.mlp_*", rank=2, alpha=4, rng=Rng(3))
    found = find_linear_layers(model, "blocks.1.*")  # adapted layers are linear layers too
    assert [name for name, _ in found] == names
    assert [type(layer).__name__ for _, layer in found] == ["Linear", "LoRALinear",
                                                            "LoRALinear"]


def test_training_moves_only_the_adapters():
    model = small_decoder()
    attach_lora(model, PATTERNS, rank=2, alpha=4, rng=Rng(3))
    base = {name: p.numpy().copy() for name, p in model.named_parameters() if ".lora." not in name}
    ids, targets = token_batch(1), token_batch(2)
    optimizer = AdamW(list(lora_parameters(model).values()), lr=1e-2)
    losses = []
    for _ in range(15):
        optimizer.zero_grad()
        loss = model.loss(ids, targets)
        loss.backward()
        optimizer.step()
        losses.append(float(loss.data))
    assert losses[-1] < losses[0] - 0.2
    for name, parameter in model.named_parameters():
        if name in base:
            np.testing.assert_array_equal(parameter.data, base[name], err_msg=name)
            assert parameter.grad is None
    assert any(np.abs(p.data).max() > 0 for n, p in lora_parameters(model).items()
               if n.endswith(".B"))


# ----------------------------------------------------------------------------- merging
def test_merge_keeps_outputs_and_removes_adapters():
    model = small_decoder()
    attach_lora(model, PATTERNS, rank=2, alpha=4, rng=Rng(3))
    randomize_b(model)
    ids = token_batch()
    with_adapters = logits(model, ids)
    assert not np.allclose(with_adapters, logits(small_decoder(), ids))  # adapters matter
    expected = (model.blocks[0].mlp_input.weight.data
                + model.blocks[0].mlp_input.lora.delta_weight())
    wrapper, weight = model.blocks[0].mlp_input, model.blocks[0].mlp_input.weight
    merged = merge_lora(model)
    assert merged == ["blocks.0.attention.output", "blocks.0.mlp_input", "blocks.0.mlp_output",
                      "blocks.1.attention.output", "blocks.1.mlp_input", "blocks.1.mlp_output"]
    assert lora_parameters(model) == {}
    assert type(model.blocks[0].mlp_input) is Linear  # the base layer is back in its place
    assert model.blocks[0].mlp_input.weight is weight  # the same Parameter, merged
    assert [name for name, _ in model.named_parameters()] == \
        [name for name, _ in small_decoder().named_parameters()]
    np.testing.assert_allclose(model.blocks[0].mlp_input.weight.data, expected, rtol=1e-6)
    np.testing.assert_allclose(logits(model, ids), with_adapters, atol=1e-5)
    with pytest.raises(ValueError, match="no LoRA adapters"):
        merge_lora(model)
    with pytest.raises(RuntimeError, match="merged"):  # a spent wrapper does not add twice
        wrapper(tl.ones(2, 8))


def test_detach_restores_the_base_outputs():
    model = small_decoder()
    ids = token_batch()
    base = logits(model, ids)
    attach_lora(model, PATTERNS, rank=2, alpha=4, rng=Rng(3))
    randomize_b(model)
    assert not np.allclose(logits(model, ids), base)
    removed = detach_lora(model)
    assert list(removed) == ["blocks.0.attention.output", "blocks.0.mlp_input",
                             "blocks.0.mlp_output", "blocks.1.attention.output",
                             "blocks.1.mlp_input", "blocks.1.mlp_output"]
    assert isinstance(removed["blocks.0.mlp_input"], LowRankAdapter)
    np.testing.assert_array_equal(logits(model, ids), base)
    assert type(model.blocks[0].mlp_input) is Linear
    assert [name for name, _ in model.named_parameters()] == \
        [name for name, _ in small_decoder().named_parameters()]
    with pytest.raises(ValueError):
        detach_lora(model)


def test_linear_with_adapter_handles_all_input_ranks():
    layer = LoRALinear(Linear(4, 3, rng=Rng(0)), rank=2, alpha=2, rng=Rng(1))
    randomize_b(layer)
    x = Rng(2).normal(size=(2, 5, 4))
    full = layer(tl.tensor(x)).data
    assert full.shape == (2, 5, 3)
    np.testing.assert_allclose(layer(tl.tensor(x[0])).data, full[0], rtol=1e-6)
    np.testing.assert_allclose(layer(tl.tensor(x[0, 0])).data, full[0, 0], rtol=1e-6)
    merged_weight = layer.weight.data + layer.lora.delta_weight()
    np.testing.assert_allclose(full, x @ merged_weight.T + layer.bias.data, rtol=1e-5,
                               atol=1e-6)


def test_a_lone_lora_linear_lists_base_and_adapter_parameters():
    base = Linear(4, 3, rng=Rng(0))
    layer = LoRALinear(base, rank=2, alpha=2, rng=Rng(1))
    assert [name for name, _ in layer.named_parameters()] == ["weight", "bias"]
    assert lora_parameters(layer) == {"lora.A": layer.lora.A, "lora.B": layer.lora.B}
    assert layer.trainable_parameters() == []
    with pytest.raises(ValueError, match=r"\.merge\(\)"):
        merge_lora(layer)
    randomize_b(layer)
    expected = base.weight.data + layer.lora.delta_weight()
    merged = layer.merge()
    assert merged is base and np.array_equal(base.weight.data, expected)
    with pytest.raises(ValueError, match="already merged"):
        layer.merge()
    without_bias = LoRALinear(Linear(4, 3, bias=False, rng=Rng(0)), rank=1, alpha=1)
    assert without_bias.bias is None
    assert [name for name, _ in without_bias.named_parameters()] == ["weight"]

def test_an_optimizer_over_the_adapters_leaves_the_frozen_base_alone():
    model = small_decoder()
    attach_lora(model, PATTERNS, rank=2, alpha=4, rng=Rng(3))
    base, adapters = model.state_dict(), lora_state_dict(model)
    optimizer = SGD(list(lora_parameters(model).values()), lr=0.1)
    loss = model.loss(token_batch(1), token_batch(2))
    loss.backward()
    optimizer.step()
    for name, value in lora_state_dict(model).items():
        assert name.endswith(".A") or not np.array_equal(value, adapters[name])  # B moved
    for name, value in model.state_dict().items():
        np.testing.assert_array_equal(value, base[name])
    model.zero_grad()  # clears the adapters' gradients too
    assert all(p.grad is None for p in lora_parameters(model).values())

def test_matches_pytorch_lora_linear():
    torch = pytest.importorskip("torch")
    layer = LoRALinear(Linear(6, 5, rng=Rng(0), dtype=np.float64), rank=3, alpha=5,
                       rng=Rng(1))
    layer.weight.trainable = True  # check the base weight's gradient too
    randomize_b(layer)
    x = Rng(2).normal(size=(4, 6), dtype=np.float64)
    out = layer(tl.tensor(x))
    out.sum().backward()

    weight = torch.tensor(layer.weight.numpy(), requires_grad=True)
    bias = torch.tensor(layer.bias.numpy())
    a = torch.tensor(layer.lora.A.numpy(), requires_grad=True)
    b = torch.tensor(layer.lora.B.numpy(), requires_grad=True)
    xt = torch.tensor(x)
    reference = torch.nn.functional.linear(xt, weight, bias) + (5 / 3) * (xt @ a.T @ b.T)
    reference.sum().backward()
    np.testing.assert_allclose(out.data, reference.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(layer.lora.A.grad, a.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(layer.lora.B.grad, b.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(layer.weight.grad, weight.grad.numpy(), rtol=1e-10)


def test_a_lora_fine_tune_checkpoints_with_its_optimizer(tmp_path):
    # An adapter-only fine-tune saves its adapters with their optimizer (save_adapters);
    # the frozen base is the base checkpoint. Resuming from both continues bit for bit.
    def step(model, optimizer):
        optimizer.zero_grad()
        model.loss(token_batch(1), token_batch(2)).backward()
        optimizer.step()

    model = small_decoder()
    checkpoint.save(tmp_path / "base.tlckpt", model)
    attach_lora(model, PATTERNS, rank=2, alpha=4, rng=Rng(3))
    optimizer = AdamW(list(lora_parameters(model).values()), lr=1e-2)
    step(model, optimizer)
    save_adapters(tmp_path / "run.tlckpt", model, optimizer)
    resumed = small_decoder(seed=4)
    attach_lora(resumed, PATTERNS, rank=2, alpha=4, rng=Rng(6))
    resumed_optimizer = AdamW(list(lora_parameters(resumed).values()), lr=1e-2)
    checkpoint.load(tmp_path / "base.tlckpt", resumed)
    load_adapters(tmp_path / "run.tlckpt", resumed, resumed_optimizer)
    step(model, optimizer)
    step(resumed, resumed_optimizer)
    for (name, a), (_, b) in zip(model.named_parameters(), resumed.named_parameters(),
                                 strict=True):
        np.testing.assert_array_equal(a.data, b.data, err_msg=name)
    for name, value in lora_state_dict(model).items():
        np.testing.assert_array_equal(value, lora_state_dict(resumed)[name], err_msg=name)


def test_adapters_convert_and_clear_with_the_base_in_one_transaction():
    model = small_decoder()
    attach_lora(model, PATTERNS, rank=2, alpha=4, rng=Rng(3))
    adapters = lora_parameters(model)
    model.double()
    assert all(p.dtype == np.float64 for p in model.parameters())
    assert all(p.dtype == np.float64 for p in adapters.values())
    assert lora_parameters(model) == adapters  # the same Parameter objects

    def refuse_the_last_adapter(array):
        if array is adapters["blocks.1.mlp_output.lora.B"].numpy():
            raise RuntimeError("no room")
        return array.astype(np.float32)

    with pytest.raises(RuntimeError, match="no room"):
        model._apply(refuse_the_last_adapter)
    assert all(p.dtype == np.float64 for p in model.parameters())  # nothing converted
    assert all(p.dtype == np.float64 for p in adapters.values())
    model.float()
    assert all(p.dtype == np.float32 for p in adapters.values())


def test_an_optimizer_takes_the_adapters_by_name_and_refuses_the_frozen_model():
    model = small_decoder()
    attach_lora(model, PATTERNS, rank=2, alpha=4, rng=Rng(3))
    optimizer = AdamW(lora_parameters(model), lr=1e-2)  # the mapping: names kept
    assert optimizer.parameters == list(lora_parameters(model).values())
    assert "blocks.0.attention.output.lora.A" in optimizer.describe(0)
    with pytest.raises(ValueError, match=r"give the optimizer lora_parameters\(model\)"):
        AdamW(model, lr=1e-2)  # everything in parameters() is frozen: nothing would train
    with pytest.raises(TypeError, match="string names"):
        SGD({1: model.blocks[0].mlp_input.lora.A}, lr=0.1)
