"""Tests for tensorlib.adapters.layer_replacement: the LinearStandIn interface, find_linear_layers,
replace_layer and export_merged, and the layout that keeps LoRA and NF4 apart."""

import ast
from pathlib import Path

import numpy as np
import pytest

import tensorlib as tl
import tensorlib.nn
from tensorlib import Rng
from tensorlib.adapters import layer_replacement as surgery
from tensorlib.adapters import lora
from tensorlib.adapters import nf4 as quant
from tensorlib.adapters.layer_replacement import (
    LinearStandIn,
    export_merged,
    find_linear_layers,
    replace_layer,
)
from tensorlib.adapters.lora import LoRALinear, attach_lora, lora_parameters, merge_lora
from tensorlib.adapters.nf4 import NF4Linear, memory_report, quantize_model
from tensorlib.models import Decoder, DecoderConfig
from tensorlib.nn import Linear, functional

CONFIG = DecoderConfig(vocabulary_size=11, context_length=6, channels=8, heads=2, layers=2)


def small_decoder(seed=0):
    return Decoder(CONFIG, rng=Rng(seed))


def logits(model, ids):
    with tl.no_grad():
        return model(ids).numpy().copy()


class HalfLinear(LinearStandIn):
    """A stand-in of neither LoRA's nor NF4's making: the weight kept in float16."""

    def __init__(self, linear):
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.dtype = linear.weight.dtype
        self.register_buffer("weight_half", linear.weight.data.astype(np.float16))
        self.bias = linear.bias

    def dense_weight(self):
        return self.weight_half.data.astype(self.dtype)

    def forward(self, x):
        return functional.linear(x, tl.Tensor(self.dense_weight()), self.bias)


def test_the_public_names_are_one_function_wherever_they_are_imported_from():
    assert lora.find_linear_layers is surgery.find_linear_layers
    assert quant.export_merged is surgery.export_merged is tensorlib.nn.export_merged
    assert issubclass(LoRALinear, LinearStandIn) and issubclass(NF4Linear, LinearStandIn)
    with pytest.raises(NotImplementedError, match="dense_weight"):
        LinearStandIn().dense_weight()


def test_lora_and_quant_do_not_import_each_other():
    folder = Path(tensorlib.adapters.__file__).parent

    def imported(stem):  # every import, those inside functions included
        found = set()
        for node in ast.walk(ast.parse((folder / f"{stem}.py").read_text())):
            if isinstance(node, ast.Import):
                found |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                found |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
        return found

    assert not {"tensorlib.adapters.nf4", "tensorlib.adapters.lora"} & imported("layer_replacement")
    assert "tensorlib.adapters.nf4" not in imported("lora")
    assert "tensorlib.adapters.lora" not in imported("nf4")
    assert not hasattr(lora, "NF4Linear") and not hasattr(quant, "LoRALinear")


def test_find_linear_layers_lists_every_stand_in_with_the_linears():
    model = small_decoder()
    replace_layer(model, "blocks.0.mlp_input", HalfLinear(model.blocks[0].mlp_input))
    quantize_model(model, "blocks.1.mlp_*")
    attach_lora(model, "blocks.*.attention.output", rank=2, alpha=4, rng=Rng(1))
    kinds = {name: type(layer).__name__ for name, layer in find_linear_layers(model)}
    assert kinds == {
        "blocks.0.attention.output": "LoRALinear", "blocks.0.mlp_input": "HalfLinear",
        "blocks.0.mlp_output": "Linear", "blocks.1.attention.output": "LoRALinear",
        "blocks.1.mlp_input": "NF4Linear", "blocks.1.mlp_output": "NF4Linear",
        "language_model_head": "Linear"}
    assert [name for name, _ in find_linear_layers(model, "blocks.0.*")] == [
        "blocks.0.attention.output", "blocks.0.mlp_input", "blocks.0.mlp_output"]


def test_replace_layer_keeps_the_training_mode_and_returns_the_old_layer():
    model = small_decoder().eval()
    old = model.blocks[0].mlp_input
    new = Linear(old.in_features, old.out_features, rng=Rng(5))
    assert new.training
    assert replace_layer(model, "blocks.0.mlp_input", new) is old
    assert model.blocks[0].mlp_input is new and not new.training
    with pytest.raises(KeyError):
        replace_layer(model, "blocks.0.nothing", Linear(2, 2))


def test_lora_adapts_any_stand_in_through_the_interface():
    model = small_decoder()
    ids = Rng(2).integers(0, CONFIG.vocabulary_size, size=(3, 6))
    replace_layer(model, "blocks.0.mlp_input", HalfLinear(model.blocks[0].mlp_input))
    with pytest.raises(TypeError, match="'blocks.0.mlp_input' is a HalfLinear, not a Linear"):
        quantize_model(model, "blocks.0.mlp_input")
    before = logits(model, ids)
    attach_lora(model, "blocks.0.mlp_input", rank=2, alpha=4, rng=Rng(1))
    layer = model.blocks[0].mlp_input
    assert isinstance(layer.base, HalfLinear) and layer.dtype == np.float32
    assert [name for name, _ in layer.named_buffers()] == ["weight_half"]
    np.testing.assert_array_equal(logits(model, ids), before)  # B = 0 at attach time
    for parameter in lora_parameters(model).values():
        parameter.data[...] = Rng(3).normal(size=parameter.shape).astype(np.float32)
    adapter_bytes = sum(p.numpy().nbytes for p in lora_parameters(model).values())
    assert memory_report(model)["lora_parameters"] == adapter_bytes
    with pytest.raises(ValueError, match="have a LoRA adapter: blocks.0.mlp_input"):
        quantize_model(model, "blocks.0.mlp_input")
    with pytest.raises(ValueError, match="export_merged"):
        merge_lora(model)
    exported = export_merged(model)
    plain = small_decoder(seed=9)
    assert list(exported) == list(plain.state_dict())
    plain.load_state_dict(exported)  # strict
    np.testing.assert_allclose(logits(plain, ids), logits(model, ids), atol=1e-5)
    np.testing.assert_array_equal(exported["blocks.0.mlp_input.weight"], layer.dense_weight())


def test_export_merged_of_a_lone_stand_in_and_of_a_plain_model():
    linear = Linear(6, 4, rng=Rng(0))
    wrapped = LoRALinear(linear, rank=2, alpha=2, rng=Rng(1))
    exported = export_merged(wrapped)
    assert list(exported) == ["weight", "bias"]  # the adapter is folded in, not listed
    np.testing.assert_array_equal(exported["weight"], linear.weight.data)  # B = 0
    model = small_decoder()
    state = export_merged(model)
    assert list(state) == list(model.state_dict())
    for name, value in model.state_dict().items():
        np.testing.assert_array_equal(state[name], value)
        assert state[name] is not dict(model.named_parameters())[name].data  # copies
    with pytest.raises(TypeError, match="model must be a Module"):
        export_merged({"weight": np.zeros(2)})
