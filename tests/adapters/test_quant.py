"""Tests for tensorlib.adapters.nf4: NF4 codes, quantized Linear layers, QLoRA and its export."""

import gc
import weakref
from statistics import NormalDist

import numpy as np
import pytest

import tensorlib as tl
from tensorlib import Rng
from tensorlib.adapters.lora import LoRALinear, attach_lora, lora_parameters, merge_lora
from tensorlib.adapters.nf4 import (
    NF4_LEVELS,
    NF4Linear,
    NF4Weight,
    dequantize_linear,
    dequantize_model,
    dequantize_nf4,
    export_merged,
    memory_report,
    model_memory_bytes,
    pack_codes,
    quantization_error,
    quantize_linear,
    quantize_model,
    quantize_nf4,
    unpack_codes,
)
from tensorlib.nn import Decoder, DecoderConfig, Linear
from tensorlib.optim import SGD, AdamW

CONFIG = DecoderConfig(vocabulary_size=11, context_length=6, channels=16, heads=2, layers=2)
# Largest distance from a value in [-1, 1] to its nearest level: half the widest gap.
MAX_HALF_GAP = float(np.max(np.diff(NF4_LEVELS))) / 2


def small_decoder(seed=0):
    return Decoder(CONFIG, rng=Rng(seed))


def token_batch(seed=1, shape=(3, 6)):
    return Rng(seed).integers(0, CONFIG.vocabulary_size, size=shape)


def logits(model, ids):
    with tl.no_grad():
        return model(ids).numpy().copy()


# ----------------------------------------------------------------------------- the levels
def test_nf4_levels():
    assert NF4_LEVELS.shape == (16,) and NF4_LEVELS.dtype == np.float32
    assert np.all(np.diff(NF4_LEVELS) > 0)
    assert NF4_LEVELS[0] == -1.0 and NF4_LEVELS[-1] == 1.0
    assert NF4_LEVELS[7] == 0.0
    assert (NF4_LEVELS > 0).sum() == 8 and (NF4_LEVELS < 0).sum() == 7


def test_nf4_levels_are_normal_quantiles():
    inverse_cdf = np.vectorize(NormalDist().inv_cdf)
    p = (1 - 1 / 30 + 1 - 1 / 32) / 2
    positive = inverse_cdf(np.linspace(p, 0.5, 9)[:-1])
    negative = -inverse_cdf(np.linspace(p, 0.5, 8)[:-1])
    derived = np.sort(np.concatenate([positive, [0.0], negative]))
    derived /= derived.max()
    np.testing.assert_allclose(NF4_LEVELS, derived, atol=1e-6)


# ----------------------------------------------------------------------------- packing
def test_pack_layout_and_round_trip():
    assert pack_codes(np.array([1, 2, 15, 0], dtype=np.uint8)).tolist() == [0x12, 0xF0]
    codes = Rng(0).integers(0, 16, size=1000).astype(np.uint8)
    packed = pack_codes(codes)
    assert packed.dtype == np.uint8 and packed.shape == (500,)
    np.testing.assert_array_equal(unpack_codes(packed), codes)
    every_byte = np.arange(256, dtype=np.uint8)
    np.testing.assert_array_equal(pack_codes(unpack_codes(every_byte)), every_byte)


def test_pack_rejects_bad_codes():
    with pytest.raises(ValueError, match="even number"):
        pack_codes(np.zeros(3, dtype=np.uint8))
    with pytest.raises(ValueError, match=r"\[0, 15\]"):
        pack_codes(np.array([3, 16]))
    with pytest.raises(ValueError, match=r"\[0, 15\]"):
        pack_codes(np.array([-1, 2]))
    with pytest.raises(TypeError):
        unpack_codes(np.zeros(2, dtype=np.int64))


# ----------------------------------------------------------------------------- quantizing
def test_quantize_shapes_and_absmax():
    weight = Rng(0).normal(0.0, 0.05, size=(12, 16))
    quantized = quantize_nf4(weight, block_size=32)
    assert isinstance(quantized, NF4Weight)
    assert quantized.codes.dtype == np.uint8 and quantized.codes.shape == (96,)
    assert quantized.absmax.dtype == np.float32 and quantized.absmax.shape == (6,)
    assert quantized.shape == (12, 16) and quantized.block_size == 32
    expected = np.abs(weight.reshape(6, 32)).max(axis=1)
    np.testing.assert_array_equal(quantized.absmax, expected)
    codes, absmax, shape, block_size, dtype = quantized  # a plain tuple too
    np.testing.assert_array_equal(dequantize_nf4(codes, absmax, shape, block_size, dtype),
                                  quantized.dequantize())
    assert quantized.nbytes == 96 + 6 * 4


def test_codes_are_the_nearest_levels():
    weight = Rng(1).normal(size=(8, 64))
    quantized = quantize_nf4(weight)
    codes = unpack_codes(quantized.codes).reshape(8, 64)
    normalized = weight / quantized.absmax[:, None]
    brute = np.abs(normalized[..., None] - NF4_LEVELS).argmin(axis=-1)
    np.testing.assert_array_equal(codes, brute)


def test_reconstruction_error_bounds():
    weight = Rng(2).normal(0.0, 0.02, size=(48, 40))  # 1920 = 30 blocks of 64
    quantized = quantize_nf4(weight)
    restored = quantized.dequantize()
    assert restored.shape == weight.shape and restored.dtype == np.float32
    error = np.abs(restored - weight).reshape(30, 64)
    assert np.all(error <= quantized.absmax[:, None] * MAX_HALF_GAP + 1e-7)
    # the largest magnitude of each block comes back exactly (it maps to ±1)
    blocks = weight.astype(np.float32).reshape(30, 64)
    largest = np.abs(blocks).argmax(axis=1)
    np.testing.assert_array_equal(restored.reshape(30, 64)[np.arange(30), largest],
                                  blocks[np.arange(30), largest])
    report = quantization_error(weight, quantized)
    assert set(report) == {"max_abs", "mean_abs", "relative"}
    assert report["max_abs"] == pytest.approx(np.abs(restored - weight).max())
    assert report["mean_abs"] == pytest.approx(np.abs(restored - weight).mean())
    assert 0.02 < report["relative"] < 0.15  # NF4 on normal weights: about 9%
    assert report["mean_abs"] < report["max_abs"] < 0.2 * np.abs(weight).max()


def test_exact_levels_and_zero_blocks_round_trip_exactly():
    scale = np.float32(0.37)
    block = NF4_LEVELS * scale  # every level once, largest magnitude 0.37
    weight = np.concatenate([block, block[::-1], np.zeros(32, np.float32)]).reshape(2, 32)
    quantized = quantize_nf4(weight, block_size=16)
    np.testing.assert_array_equal(quantized.absmax, [scale, scale, 0, 0])
    np.testing.assert_array_equal(quantized.dequantize(), weight)


def test_padding_of_a_partial_last_block():
    weight = Rng(3).normal(size=(5, 7))  # 35 values: two blocks of 16 and 3 left over
    quantized = quantize_nf4(weight, block_size=16)
    assert quantized.absmax.shape == (3,) and quantized.codes.shape == (24,)
    assert quantized.absmax[2] == np.float32(np.abs(weight.reshape(-1)[32:]).max())
    codes = unpack_codes(quantized.codes)
    assert np.all(codes[35:] == 7)  # padding takes the exact zero code
    restored = quantized.dequantize()
    assert restored.shape == (5, 7)
    flat_error = np.abs(restored - weight).reshape(-1)
    assert np.all(flat_error[32:] <= quantized.absmax[2] * MAX_HALF_GAP + 1e-7)


def test_float64_weights_dequantize_to_float64():
    weight = Rng(4).normal(size=(4, 16), dtype=np.float64)
    quantized = quantize_nf4(weight, block_size=16)
    assert quantized.dtype == np.float64 and quantized.dequantize().dtype == np.float64
    single = quantize_nf4(weight.astype(np.float32), block_size=16)
    np.testing.assert_array_equal(quantized.codes, single.codes)


@pytest.mark.parametrize("block_size, error", [
    (0, ValueError), (-64, ValueError), (63, ValueError), (1, ValueError),
    (64.0, TypeError), (True, TypeError), ("64", TypeError),
])
def test_block_size_validation(block_size, error):
    with pytest.raises(error, match="block_size"):
        quantize_nf4(np.ones((4, 16), np.float32), block_size=block_size)


def test_quantize_rejects_bad_weights():
    with pytest.raises(ValueError, match="non-finite"):
        quantize_nf4(np.array([1.0, np.nan, 0.0, 2.0]), block_size=2)
    with pytest.raises(ValueError, match="empty"):
        quantize_nf4(np.zeros((0, 4), np.float32))
    with pytest.raises(TypeError, match="floating point"):
        quantize_nf4(np.arange(8), block_size=2)


def test_dequantize_validates_sizes():
    quantized = quantize_nf4(Rng(5).normal(size=(4, 16)), block_size=16)
    with pytest.raises(ValueError, match="scales"):
        dequantize_nf4(quantized.codes, quantized.absmax[:3], (4, 16), 16)
    with pytest.raises(ValueError, match="bytes of codes"):
        dequantize_nf4(quantized.codes[:-1], quantized.absmax, (4, 16), 16)
    with pytest.raises(ValueError, match="scales"):
        dequantize_nf4(quantized.codes, quantized.absmax, (4, 16), 32)


# ----------------------------------------------------------------------------- a Linear
def test_quantize_linear_returns_an_nf4_layer_and_releases_the_weight():
    layer = Linear(64, 32, rng=Rng(0))
    x = tl.tensor(Rng(1).normal(size=(5, 64)))
    before = layer(x).numpy().copy()
    original = layer.weight.numpy().copy()
    layer.weight.grad = np.ones_like(original)
    weight = weakref.ref(layer.weight)  # a weak reference: a strong one blocks quantizing
    bias = layer.bias
    assert model_memory_bytes(layer) == (64 * 32 + 32) * 4

    nf4 = quantize_linear(layer)
    weight = weight()
    assert isinstance(nf4, NF4Linear) and nf4.bias is bias  # the same bias Parameter
    assert (nf4.in_features, nf4.out_features, nf4.block_size) == (64, 32, 64)
    assert nf4.dtype == np.float32
    quantized = nf4.quantized
    assert isinstance(quantized, NF4Weight) and quantized.shape == (32, 64)
    assert [name for name, _ in nf4.named_parameters()] == ["bias"]
    assert [name for name, _ in nf4.named_buffers()] == ["codes", "absmax"]
    assert nf4.codes.dtype == np.uint8 and nf4.codes.shape == (64 * 32 // 2,)
    assert nf4.absmax.dtype == np.float32 and nf4.absmax.shape == (32,)
    assert list(nf4.state_dict()) == ["bias"]  # the buffers are not persistent
    assert nf4.num_parameters() == 32
    assert weight.numel() == 0 and weight.grad is None and not weight.trainable  # released
    report = memory_report(nf4)
    assert report == {"float_parameters": 32 * 4, "lora_parameters": 0,
                      "nf4_codes": 64 * 32 // 2, "nf4_scales": 64 * 32 // 64 * 4,
                      "total": 32 * 4 + 1024 + 128}
    after = nf4(x).data
    expected = x.data @ quantized.dequantize().T + bias.data
    np.testing.assert_allclose(after, expected, rtol=1e-6, atol=1e-6)
    assert np.abs(after - before).max() < 0.25 * np.abs(before).max()
    assert quantization_error(original, quantized)["relative"] < 0.15
    assert repr(nf4) == ("NF4Linear(in_features=64, out_features=32, bias=True, "
                         "weight=NF4(block_size=64))")
    with pytest.raises(ValueError, match="released when it was quantized"):
        quantize_linear(layer)  # the old layer gave its weight away
    with pytest.raises(ValueError, match="2-D"):
        layer(x)


def test_dequantize_linear_gives_a_frozen_float_layer_with_the_same_bias():
    nf4 = quantize_linear(Linear(16, 4, rng=Rng(0)), block_size=16)
    x = tl.tensor(Rng(1).normal(size=(3, 16)))
    layer = dequantize_linear(nf4)
    assert type(layer) is Linear and layer.bias is nf4.bias
    assert [name for name, _ in layer.named_parameters()] == ["weight", "bias"]
    assert not layer.weight.trainable
    np.testing.assert_array_equal(layer.weight.data, nf4.quantized.dequantize())
    np.testing.assert_allclose(layer(x).data, nf4(x).data, rtol=1e-6)
    with pytest.raises(TypeError):
        dequantize_linear(layer)
    no_bias = dequantize_linear(quantize_linear(Linear(4, 2, bias=False, rng=Rng(0)),
                                                block_size=8))
    assert no_bias.bias is None and [n for n, _ in no_bias.named_parameters()] == ["weight"]


def test_nf4_linear_checks_what_it_is_built_from():
    quantized = quantize_nf4(Rng(0).normal(size=(4, 8)), block_size=8)
    with pytest.raises(TypeError, match="2-D"):
        NF4Linear(quantize_nf4(Rng(0).normal(size=(32,)), block_size=8))
    with pytest.raises(TypeError):
        NF4Linear(np.zeros((4, 8)))
    with pytest.raises(ValueError, match="scales"):
        NF4Linear(quantized._replace(absmax=quantized.absmax[:2]))
    with pytest.raises(ValueError, match="bias"):
        NF4Linear(quantized, tl.nn.Parameter(np.zeros(3, np.float32)))
    with pytest.raises(ValueError, match="bias"):
        NF4Linear(quantized, tl.nn.Parameter(np.zeros(4, np.float64)))
    layer = NF4Linear(quantized, tl.nn.Parameter(np.zeros(4, np.float32)))
    np.testing.assert_allclose(layer(tl.ones(2, 8)).data,
                               np.ones((2, 8)) @ quantized.dequantize().T, rtol=1e-6)


def test_quantized_linear_backward_reaches_input_and_bias_only():
    layer = quantize_linear(Linear(8, 4, rng=Rng(0), dtype=np.float64), block_size=8)
    assert layer.dtype == np.float64
    x = tl.tensor(Rng(1).normal(size=(3, 8), dtype=np.float64), requires_grad=True)
    assert tl.gradcheck(lambda t: layer(t), x)
    x.grad = layer.bias.grad = None
    layer(x).sum().backward()
    np.testing.assert_allclose(layer.bias.grad, [3.0] * 4)
    np.testing.assert_allclose(x.grad, np.tile(layer.quantized.dequantize().sum(axis=0),
                                               (3, 1)))


def test_quantizing_twice_or_a_non_linear_fails():
    layer = quantize_linear(Linear(4, 4, rng=Rng(0)), block_size=16)
    with pytest.raises(ValueError, match="already NF4-quantized"):
        quantize_linear(layer)
    with pytest.raises(TypeError):
        quantize_linear(small_decoder())
    with pytest.raises(ValueError, match="matches no Linear"):
        quantize_model(small_decoder(), "nothing.*")
    model = small_decoder()
    quantize_model(model, "blocks.0.mlp_input")
    with pytest.raises(ValueError, match="already NF4-quantized: blocks.0.mlp_input"):
        quantize_model(model, "blocks.*.mlp_input")
    assert type(model.blocks[1].mlp_input) is Linear  # nothing changed
    with pytest.raises(ValueError, match="child of a model.*quantize_model"):
        quantize_linear(model.blocks[1].mlp_input)
    with pytest.raises(ValueError, match="itself matches.*quantize_linear"):
        quantize_model(Linear(4, 4, rng=Rng(0)))


def test_quantizing_a_weight_an_optimizer_holds_is_rejected():
    model = small_decoder()
    optimizer = AdamW(model, lr=1e-3)
    state = model.state_dict()
    with pytest.raises(RuntimeError, match="'blocks.0.attention.output'.*AdamW"):
        quantize_model(model, "blocks.*")
    assert not any(isinstance(m, NF4Linear) for m in model.modules())
    for name, value in model.state_dict().items():  # nothing released
        np.testing.assert_array_equal(value, state[name])
    layer = Linear(4, 4, rng=Rng(0))
    other = SGD([layer.bias, layer.weight], lr=0.1)
    with pytest.raises(RuntimeError, match="SGD"):
        quantize_linear(layer, block_size=16)
    del optimizer, other
    gc.collect()
    assert quantize_model(model, "blocks.*")[0] == "blocks.0.attention.output"
    quantize_linear(layer, block_size=16)


def test_quantizing_a_weight_anything_else_holds_is_rejected():
    # The seeds' rule: the dense weight is released only when nothing outside the layer can
    # still reach it. A handle of our own (a local variable here) blocks it.
    layer = Linear(64, 8, rng=Rng(0))
    handle = layer.weight
    values = handle.numpy().copy()
    with pytest.raises(RuntimeError, match=r"'\(root\)': 1 other reference\(s\) still hold "
                                           r"it \(a local variable of a running function\)"):
        quantize_linear(layer)
    assert layer.weight is handle and handle.shape == (8, 64)  # nothing changed
    np.testing.assert_array_equal(handle.data, values)
    holders = {"kept": handle}
    del handle
    with pytest.raises(RuntimeError, match="a dict"):
        quantize_linear(layer)
    model = tl.nn.Module()
    model.layer = layer
    with pytest.raises(RuntimeError, match=r"Linear 'layer'.*a dict"):
        quantize_model(model)
    assert model.layer is layer
    del holders
    quantize_model(model)
    assert isinstance(model.layer, NF4Linear) and layer.weight.numel() == 0


def test_an_optimizer_of_other_parameters_does_not_block():
    model = small_decoder()
    attach_lora(model, "blocks.*.mlp_*", rank=2, alpha=2, rng=Rng(1))
    optimizer = AdamW(list(lora_parameters(model).values()), lr=1e-3)
    assert quantize_model(model, ["blocks.*.attention.output", "language_model_head"]) == [
        "blocks.0.attention.output", "blocks.1.attention.output", "language_model_head"]
    assert len(optimizer.parameters) == 8


def test_layers_with_adapters_are_not_quantized():
    model = small_decoder()
    attach_lora(model, "blocks.*.mlp_input", rank=2, alpha=2, rng=Rng(1))
    with pytest.raises(ValueError, match="have a LoRA adapter: blocks.0.mlp_input, "
                                         "blocks.1.mlp_input; quantize before attaching"):
        quantize_model(model)
    assert not any(isinstance(m, NF4Linear) for m in model.modules())
    assert all(isinstance(m.base, Linear) for m in model.modules() if isinstance(m, LoRALinear))


def test_quantize_model_and_dequantize_back():
    model = small_decoder()
    names = [name for name, _ in model.named_parameters()]
    ids = token_batch()
    before = logits(model, ids)
    float_bytes = model_memory_bytes(model)
    bias = model.blocks[0].mlp_input.bias
    quantized = quantize_model(model, ["blocks.*.mlp_*", "language_model_head"])
    assert quantized == ["blocks.0.mlp_input", "blocks.0.mlp_output", "blocks.1.mlp_input",
                         "blocks.1.mlp_output", "language_model_head"]
    assert isinstance(model.blocks[0].mlp_input, NF4Linear)
    assert model.blocks[0].mlp_input.bias is bias
    assert [name for name, _ in model.named_parameters()] == [
        name for name in names if not (name.endswith(".weight") and name[:-7] in quantized)]
    assert list(model.state_dict()) == [name for name, _ in model.named_parameters()]
    assert [name for name, _ in model.named_buffers()][:2] == ["blocks.0.mlp_input.codes",
                                                               "blocks.0.mlp_input.absmax"]
    linear_values = 4 * 16 * 64 + 16 * 11
    linear_blocks = 4 * (16 * 64 // 64) + -(-16 * 11 // 64)
    report = memory_report(model)
    assert report["nf4_codes"] == (4 * 16 * 64 + 3 * 64) // 2
    assert report["nf4_scales"] == 4 * linear_blocks
    assert report["float_parameters"] == float_bytes - 4 * linear_values
    assert report["total"] < float_bytes
    after = logits(model, ids)
    relative = np.linalg.norm(after - before) / np.linalg.norm(before)
    assert 0.01 < relative < 0.2  # changed by the rounding, but not by much
    assert dequantize_model(model) == quantized
    assert [name for name, _ in model.named_parameters()] == names  # same names and order
    assert type(model.blocks[0].mlp_input) is Linear and model.blocks[0].mlp_input.bias is bias
    assert not model.blocks[0].mlp_input.weight.trainable
    assert model.buffers() == []
    np.testing.assert_allclose(logits(model, ids), after, atol=1e-6)


def test_codes_and_scales_are_buffers_that_move_but_are_not_saved():
    layer = quantize_linear(Linear(16, 8, rng=Rng(0)), block_size=16)
    x = tl.tensor(Rng(1).normal(size=(2, 16)))
    before = layer(x).numpy().copy()
    copies = {name: buffer.numpy().copy() for name, buffer in layer.named_buffers()}
    layer.codes, layer.absmax = copies["codes"], copies["absmax"]  # buffers are replaced
    assert layer.quantized.codes is copies["codes"]
    np.testing.assert_array_equal(layer(x).data, before)
    state = layer.state_dict()
    layer.load_state_dict(state)  # strict: the bias is all there is to save
    assert layer.quantized.codes is copies["codes"]
    codes = layer.codes
    layer.to("cpu")
    assert layer.codes is codes
    np.testing.assert_array_equal(layer(x).data, before)


def test_merge_lora_refuses_nf4_layers():
    model = small_decoder()
    quantize_model(model, "blocks.0.mlp_input")
    attach_lora(model, "blocks.*.mlp_input", rank=2, alpha=2, rng=Rng(1))
    with pytest.raises(ValueError, match="export_merged"):
        merge_lora(model)
    assert all(isinstance(model.blocks[i].mlp_input, LoRALinear) for i in (0, 1))  # unmerged
    with pytest.raises(ValueError, match="have a LoRA adapter: blocks.0.mlp_input"):
        dequantize_model(model)
    assert isinstance(model.blocks[0].mlp_input.base, NF4Linear)


# ----------------------------------------------------------------------------- QLoRA
def qlora_model():
    model = small_decoder()
    quantize_model(model)
    attach_lora(model, ["blocks.*.attention.output", "blocks.*.mlp_*"], rank=4, alpha=8,
                rng=Rng(2))
    return model


def test_qlora_trains_end_to_end():
    model = qlora_model()
    assert model.trainable_parameters() == []  # the base is frozen, the adapters apart
    codes = {name: buffer.numpy().copy() for name, buffer in model.named_buffers()}
    assert len(codes) == 2 * 7  # codes and scales of every Linear, once each
    frozen = model.state_dict()  # the base's: no adapter in it
    optimizer = AdamW(list(lora_parameters(model).values()), lr=1e-2)
    ids, targets = token_batch(1), token_batch(2)
    losses = []
    for _ in range(20):
        optimizer.zero_grad()
        loss = model.loss(ids, targets)
        loss.backward()
        optimizer.step()
        losses.append(float(loss.data))
    assert losses[-1] < losses[0] - 0.5
    for name, buffer in model.named_buffers():
        np.testing.assert_array_equal(buffer.data, codes[name])
    for name, value in frozen.items():
        np.testing.assert_array_equal(model.state_dict()[name], value)


def test_export_merged_loads_into_a_plain_decoder():
    model = qlora_model()
    optimizer = AdamW(list(lora_parameters(model).values()), lr=1e-2)
    for _ in range(5):
        optimizer.zero_grad()
        model.loss(token_batch(1), token_batch(2)).backward()
        optimizer.step()
    exported = export_merged(model)
    plain = Decoder(CONFIG, rng=Rng(99))
    assert list(exported) == list(plain.state_dict())  # original names, original order
    assert all(isinstance(v, np.ndarray) and v.dtype == np.float32 for v in exported.values())
    plain.load_state_dict(exported)  # strict
    ids = token_batch(3)
    np.testing.assert_allclose(logits(plain, ids), logits(model, ids), atol=1e-5)
    head = model.language_model_head
    np.testing.assert_array_equal(exported["language_model_head.weight"],
                                  head.quantized.dequantize())  # no adapter there
    layer = model.blocks[0].mlp_input
    np.testing.assert_allclose(exported["blocks.0.mlp_input.weight"],
                               layer.base.quantized.dequantize() + layer.lora.delta_weight(),
                               rtol=1e-6)
    assert isinstance(layer, LoRALinear) and isinstance(layer.base, NF4Linear)  # unchanged


def test_module_to_moves_nf4_and_lora_state_in_one_transaction():
    backend = pytest.importorskip("tensorlib.engine.backend")
    if not hasattr(backend, "register_backend") or not hasattr(Decoder, "to"):
        pytest.skip("no pluggable backends here")

    class FakeArray(np.ndarray):
        pass

    calls = {"count": 0, "fail_on": None}

    def copy(array):
        calls["count"] += 1
        if calls["count"] == calls["fail_on"]:
            raise RuntimeError("fake device: out of memory")
        return np.array(array, copy=True).view(FakeArray)

    backend.register_backend("fake_nf4", np, copy, lambda: True, array_types=(FakeArray,))
    try:
        model = qlora_model()
        ids = token_batch()
        before = logits(model, ids)
        layer = model.blocks[0].mlp_input
        codes = layer.base.quantized.codes
        tensors = model.parameters() + model.buffers() + list(lora_parameters(model).values())
        for fail_on in (3, len(tensors)):  # a parameter's copy, the last adapter's copy
            calls["count"], calls["fail_on"] = 0, fail_on
            with pytest.raises(RuntimeError, match="out of memory"):
                model.to("fake_nf4")
            assert layer.base.quantized.codes is codes  # nothing moved
            assert all(type(t.numpy()) is np.ndarray for t in tensors)
        calls["count"], calls["fail_on"] = 0, None
        model.to("fake_nf4")
        assert calls["count"] == len(tensors)
        assert isinstance(layer.base.quantized.codes, FakeArray)
        assert isinstance(layer.base.quantized.absmax, FakeArray)
        assert isinstance(layer.lora.A.numpy(), FakeArray) and isinstance(layer.lora.B.numpy(),
                                                                           FakeArray)
        assert all(isinstance(t.numpy(), FakeArray) for t in tensors)
        np.testing.assert_allclose(logits(model, ids), before, atol=1e-6)
        model.to("cpu")
        assert type(layer.base.quantized.codes) is np.ndarray
        assert type(layer.lora.A.numpy()) is np.ndarray
        np.testing.assert_allclose(logits(model, ids), before, atol=1e-6)
    finally:
        backend.unregister_backend("fake_nf4")
