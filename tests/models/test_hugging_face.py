"""Hugging Face folders for the decoder (tensorlib.models.hugging_face): GPT-2 and Llama, both
ways. Without ``transformers``, tensorlib reads back what it wrote and refuses what it cannot
write or read; with it (the ``transformers`` extra), the same folder gives the same logits
and the same greedy tokens in tensorlib and in ``transformers``, whichever wrote it."""

import json
import os

import numpy as np
import pytest

import tensorlib as tl
from tensorlib import Rng
from tensorlib.models import Decoder, DecoderConfig
from tensorlib.models.hugging_face import folder_format, read_folder
from tensorlib.saving import CheckpointError
from tensorlib.saving.safetensors import read_safetensors, safetensors_bytes

from helpers import perturb_constants

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # transformers reads local folders only: no network

SIZES = {"vocabulary_size": 23, "context_length": 16, "channels": 16, "heads": 4, "layers": 2}
GPT2 = {"mlp": "gelu_tanh", "head_bias": False}
LLAMA = {"norm": "rms", "positions": "rotary", "mlp": "swiglu", "bias": False,
         "head_bias": False, "eps": 1e-6}
FOLDERS = {
    "gpt2-tied": {**GPT2, "tie_embeddings": True},
    "gpt2-untied": GPT2,
    "gpt2-exact-gelu": {**GPT2, "mlp": "gelu", "mlp_hidden": 40},
    "llama-grouped": {**LLAMA, "kv_heads": 2},
    "llama-full-tied": {**LLAMA, "tie_embeddings": True},
    "llama-multi-query-biases": {**LLAMA, "kv_heads": 1, "bias": True, "rope_theta": 500.0},
}


def make(design, seed=0, dtype=np.float32):
    model = Decoder(DecoderConfig(**SIZES, **design), rng=Rng(seed), dtype=dtype)
    return perturb_constants(model, seed)


def prompt(seed=1, length=5):
    return Rng(seed).integers(0, SIZES["vocabulary_size"], (2, length))


# ---------------------------------------------------------------------- tensorlib alone
@pytest.mark.parametrize("name", FOLDERS)
def test_a_written_folder_reads_back_as_the_same_model(name, tmp_path):
    model = make(FOLDERS[name], seed=2)
    model.save_pretrained(tmp_path / name)
    assert sorted(os.listdir(tmp_path / name)) == ["config.json", "model.safetensors"]
    again = Decoder.from_pretrained(tmp_path / name)
    assert again.config == model.config
    for key, value in model.state_dict().items():
        np.testing.assert_array_equal(again.state_dict()[key], value, err_msg=key)
    np.testing.assert_array_equal(again(prompt()).numpy(), model(prompt()).numpy())
    if model.config.tie_embeddings:
        assert again.language_model_head.weight is again.token_embedding.weight


def test_the_folders_hold_hugging_faces_names_and_layouts(tmp_path):
    model = make(FOLDERS["gpt2-untied"], seed=3)
    model.save_pretrained(tmp_path)
    weights = read_safetensors(tmp_path / "model.safetensors")
    c_attn = weights["transformer.h.0.attn.c_attn.weight"]  # Conv1D: (in, 3 · out)
    assert c_attn.shape == (16, 48)
    np.testing.assert_array_equal(c_attn[:, 16:32], model.blocks[0].attention.qkv_weight.numpy()[1])
    np.testing.assert_array_equal(weights["transformer.h.1.mlp.c_fc.weight"],
                                  model.blocks[1].mlp_input.weight.numpy().T)
    assert "lm_head.weight" in weights and "transformer.wpe.weight" in weights
    settings = json.loads((tmp_path / "config.json").read_text())
    assert settings["model_type"] == "gpt2" and settings["activation_function"] == "gelu_new"
    assert settings["n_inner"] == 64 and settings["tie_word_embeddings"] is False

    llama = make(FOLDERS["llama-grouped"], seed=4)
    llama.save_pretrained(tmp_path / "llama")
    weights = read_safetensors(tmp_path / "llama" / "model.safetensors")
    assert weights["model.layers.0.self_attn.k_proj.weight"].shape == (8, 16)
    assert weights["model.layers.1.mlp.gate_proj.weight"].shape == (48, 16)
    settings = json.loads((tmp_path / "llama" / "config.json").read_text())
    assert settings["num_key_value_heads"] == 2 and settings["rms_norm_eps"] == 1e-6
    assert settings["rope_parameters"] == {"rope_theta": 10000.0, "rope_type": "default"}


def test_the_hubs_gpt2_file_layout_reads_too(tmp_path):
    """The hub's gpt2 model.safetensors has no ``transformer.`` prefix, no lm_head and the
    old causal-mask buffers."""
    model = make(FOLDERS["gpt2-tied"], seed=5)
    model.save_pretrained(tmp_path)
    weights = read_safetensors(tmp_path / "model.safetensors")
    hub = {name.removeprefix("transformer."): array for name, array in weights.items()}
    hub["h.0.attn.bias"] = np.tril(np.ones((1, 1, 16, 16), dtype=np.float32))
    (tmp_path / "model.safetensors").write_bytes(safetensors_bytes(hub, {"format": "pt"}))
    again = Decoder.from_pretrained(tmp_path)
    np.testing.assert_array_equal(again(prompt()).numpy(), model(prompt()).numpy())


@pytest.mark.parametrize("design, message", [
    ({}, r"neither a Hugging Face GPT-2 \(head_bias=True where it has False\) nor a Llama"),
    ({**GPT2, "kv_heads": 2}, "kv_heads=2 where it has None"),
    ({**GPT2, "bias": False}, "bias=False where it has True"),
    ({**LLAMA, "positions": "learned"}, "positions='learned' where it has 'rotary'"),
])
def test_a_decoder_neither_model_has_is_refused_and_nothing_is_written(design, message,
                                                                       tmp_path):
    model = make(design)
    with pytest.raises(ValueError, match=message):
        model.save_pretrained(tmp_path / "out")
    assert not (tmp_path / "out").exists()
    assert folder_format(make(GPT2).config) == "gpt2"


def test_bad_folders_are_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="has no config.json"):
        Decoder.from_pretrained(tmp_path)
    make(FOLDERS["llama-grouped"]).save_pretrained(tmp_path)
    settings = json.loads((tmp_path / "config.json").read_text())
    for change, message in (({"model_type": "mistral"}, "model_type 'mistral' is not one"),
                            ({"hidden_act": "gelu"}, "hidden_act 'gelu' is not SwiGLU's silu"),
                            ({"rope_parameters": {"rope_type": "yarn", "factor": 4.0}},
                             "rotary scaling 'yarn'"),
                            ({"mlp_bias": True}, "attention_bias and mlp_bias differ")):
        (tmp_path / "config.json").write_text(json.dumps({**settings, **change}))
        with pytest.raises(ValueError, match=message):
            Decoder.from_pretrained(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps(settings))
    weights = read_safetensors(tmp_path / "model.safetensors")
    for broken, message in (
            ({k: v for k, v in weights.items() if "layers.1.mlp.up_proj" not in k},
             r"has no weight model.layers.1.mlp.up_proj.weight \(for blocks.1.mlp_input"),
            ({**weights, "model.layers.0.extra.weight": np.ones(2, np.float32)},
             "does not have: model.layers.0.extra.weight"),
            ({**weights, "model.norm.weight": np.ones(3, np.float32)},
             "does not fit its own config.json")):
        (tmp_path / "model.safetensors").write_bytes(safetensors_bytes(broken, {}))
        with pytest.raises(CheckpointError, match=message):
            Decoder.from_pretrained(tmp_path)


def test_sharded_weights_are_read_through_their_index(tmp_path):
    model = make(FOLDERS["llama-grouped"], seed=6)
    model.save_pretrained(tmp_path)
    weights = read_safetensors(tmp_path / "model.safetensors")
    os.remove(tmp_path / "model.safetensors")
    names = sorted(weights)
    shards = {"model-00001-of-00002.safetensors": names[:7],
              "model-00002-of-00002.safetensors": names[7:]}
    for shard, keys in shards.items():
        (tmp_path / shard).write_bytes(safetensors_bytes({k: weights[k] for k in keys}, {}))
    index = {"weight_map": {key: shard for shard, keys in shards.items() for key in keys}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    np.testing.assert_array_equal(Decoder.from_pretrained(tmp_path)(prompt()).numpy(),
                                  model(prompt()).numpy())
    config, state = read_folder(tmp_path)
    assert config == model.config and set(state) == set(model.state_dict())


# ------------------------------------------------------------------------- with transformers
def greedy(model, ids, new):
    return model.generate(ids, new, top_k=1, rng=Rng(0))


def hugging_face_greedy(torch, theirs, ids, new):
    with torch.no_grad():
        ids = torch.tensor(ids)  # every position attends: no padding in these prompts
        out = theirs.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new,
                              do_sample=False, pad_token_id=0, eos_token_id=None)
    return out.numpy()


@pytest.mark.parametrize("name", FOLDERS)
def test_transformers_reads_tensorlibs_folder_with_the_same_logits_and_tokens(name, tmp_path):
    transformers = pytest.importorskip("transformers")
    import torch

    model = make(FOLDERS[name], seed=7)
    model.save_pretrained(tmp_path)
    theirs = transformers.AutoModelForCausalLM.from_pretrained(tmp_path).eval()
    assert theirs.dtype == torch.float32
    ids = prompt(8, 6)
    with torch.no_grad():
        expected = theirs(torch.tensor(ids)).logits.numpy()
    np.testing.assert_allclose(model(ids).numpy(), expected, rtol=1e-4, atol=2e-5)
    np.testing.assert_array_equal(greedy(model, ids, 8),
                                  hugging_face_greedy(torch, theirs, ids, 8))
    with torch.no_grad():  # in float64: GPT-2's equal to float64 rounding; Llama's rotary
        double = theirs.double()(torch.tensor(ids)).logits.numpy()  # angles and RMSNorm run
    ours = Decoder.from_pretrained(tmp_path, dtype=np.float64)  # in float32 in transformers
    tolerance = 1e-10 if name.startswith("gpt2") else 1e-5
    np.testing.assert_allclose(ours(ids).numpy(), double, rtol=tolerance, atol=tolerance / 10)


def hugging_face_model(transformers, name, seed):
    """A random-weight GPT-2 or Llama made by transformers itself, its norms not at one."""
    import torch

    torch.manual_seed(seed)
    design = FOLDERS[name]
    common = {"vocab_size": 23, "tie_word_embeddings": design.get("tie_embeddings", False),
              "bos_token_id": None, "eos_token_id": None}
    if name.startswith("gpt2"):
        config = transformers.GPT2Config(
            n_positions=16, n_embd=16, n_layer=2, n_head=4, n_inner=design.get("mlp_hidden"),
            activation_function="gelu_new" if design["mlp"] == "gelu_tanh" else "gelu",
            resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, **common)
        model = transformers.GPT2LMHeadModel(config)
    else:
        config = transformers.LlamaConfig(
            hidden_size=16, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=design.get("kv_heads") or 4, max_position_embeddings=16,
            rms_norm_eps=1e-6, attention_bias=design["bias"], mlp_bias=design["bias"],
            rope_parameters={"rope_type": "default",
                             "rope_theta": design.get("rope_theta", 10000.0)}, **common)
        model = transformers.LlamaForCausalLM(config)
    with torch.no_grad():  # wider than transformers' N(0, 0.02), so that logits are apart
        for parameter in model.parameters():  # and greedy tokens are not near-ties
            if parameter.ndim == 1:  # norm weights and biases: not one and zero
                parameter.add_(0.2 * torch.randn_like(parameter))
            else:
                parameter.normal_(0.0, 0.3)
    return model.eval()


@pytest.mark.parametrize("name", FOLDERS)
def test_tensorlib_reads_transformers_folder_with_the_same_logits_and_tokens(name, tmp_path):
    transformers = pytest.importorskip("transformers")
    import torch

    theirs = hugging_face_model(transformers, name, seed=9)
    theirs.save_pretrained(tmp_path)
    ours = Decoder.from_pretrained(tmp_path)
    assert ours.config == DecoderConfig(**SIZES, **FOLDERS[name])
    ids = prompt(10, 6)
    with torch.no_grad():
        expected = theirs(torch.tensor(ids)).logits.numpy()
    np.testing.assert_allclose(ours(ids).numpy(), expected, rtol=1e-4, atol=2e-5)
    np.testing.assert_array_equal(greedy(ours, ids, 8), hugging_face_greedy(torch, theirs, ids, 8))
    with tl.no_grad():  # the cache agrees with transformers' too, step by step
        caches = ours.new_cache()
        stepped = np.concatenate([ours(ids[:, :4], caches).numpy(),
                                  ours(ids[:, 4:], caches).numpy()], axis=1)
    np.testing.assert_allclose(stepped, expected, rtol=1e-4, atol=2e-5)


def test_bfloat16_weights_are_read_as_float32(tmp_path):
    transformers = pytest.importorskip("transformers")
    import torch

    theirs = hugging_face_model(transformers, "llama-grouped", seed=11).to(torch.bfloat16)
    theirs.save_pretrained(tmp_path)
    ours = Decoder.from_pretrained(tmp_path)
    expected = theirs.state_dict()["model.layers.0.self_attn.q_proj.weight"].float().numpy()
    np.testing.assert_array_equal(ours.blocks[0].attention.query.weight.numpy(), expected)
