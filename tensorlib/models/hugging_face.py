"""Hugging Face causal-LM folders for the decoder, both ways: ``config.json`` and
``model.safetensors`` (or shards named by ``model.safetensors.index.json``) of
``model_type`` ``"gpt2"`` (``GPT2LMHeadModel``) or ``"llama"`` (``LlamaForCausalLM``).

:func:`read_folder` gives the :class:`DecoderConfig` and the state dict, in tensorlib's names,
of such a folder; :func:`write_folder` writes one that ``transformers`` loads with
``AutoModelForCausalLM.from_pretrained``. ``Decoder.from_pretrained`` and
``Decoder.save_pretrained`` are these two with the model around them. The names:

========================================  =========================  ==========================
tensorlib                                 GPT-2 (``transformer.``)   Llama (``model.``)
========================================  =========================  ==========================
``token_embedding.weight``                ``wte.weight``             ``embed_tokens.weight``
``positional_embedding.table.weight``     ``wpe.weight``             (rotary: none)
``blocks.i.attention_norm``               ``h.i.ln_1``               ``layers.i.input_layernorm``
``blocks.i.attention.qkv_weight``/bias    ``h.i.attn.c_attn``        ``q_proj``, ``k_proj``,
(``query``/``key``/``value`` with GQA)                               ``v_proj`` (``self_attn.``)
``blocks.i.attention.output``             ``h.i.attn.c_proj``        ``self_attn.o_proj``
``blocks.i.mlp_norm``                     ``h.i.ln_2``               ``post_attention_layernorm``
``blocks.i.mlp_gate``                     (none)                     ``mlp.gate_proj``
``blocks.i.mlp_input``                    ``h.i.mlp.c_fc``           ``mlp.up_proj``
``blocks.i.mlp_output``                   ``h.i.mlp.c_proj``         ``mlp.down_proj``
``final_norm``                            ``ln_f``                   ``norm``
``language_model_head.weight``            ``lm_head.weight`` (no prefix; absent when tied)
========================================  =========================  ==========================

GPT-2's layers are ``Conv1D``s, ``x @ W + b`` with ``W (in, out)``: the transpose of a
Linear's weight. Its ``c_attn`` holds the query, key and value projections side by side.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from tensorlib.engine.files import write_atomic, write_text_atomic
from tensorlib.models.decoder_config import DecoderConfig, default_mlp_hidden
from tensorlib.nn.module import Module
from tensorlib.nn.state_dict import StateDictError
from tensorlib.saving.checkpoint import CheckpointError
from tensorlib.saving.safetensors import read_safetensors, safetensors_bytes, strict_json

__all__ = ["folder_format", "load_state", "read_folder", "write_folder"]

Arrays = dict[str, np.ndarray]


# ------------------------------------------------------------------------------- reading
def read_folder(folder: str | os.PathLike) -> tuple[DecoderConfig, Arrays]:
    """The configuration and the state dict (tensorlib's names, the file's dtypes; bfloat16
    as float32) of the Hugging Face folder ``folder``.

    Raises FileNotFoundError when ``config.json`` or the weights are missing, ValueError
    for a ``model_type`` other than gpt2 and llama or a setting the decoder does not have
    (named), and CheckpointError for weights missing, left over or of the wrong shape.
    """
    path = os.fspath(folder)
    config_path = os.path.join(path, "config.json")
    if not os.path.isfile(config_path):
        raise FileNotFoundError(f"{path} has no config.json: not a Hugging Face model folder")
    with open(config_path, "rb") as handle:
        settings = strict_json(handle.read(), config_path)
    if not isinstance(settings, dict):
        raise CheckpointError(f"{config_path} does not hold a JSON object")
    kind = settings.get("model_type")
    if kind not in _FORMATS:
        raise ValueError(f"{config_path}: model_type {kind!r} is not one tensorlib reads "
                         f"(it reads {', '.join(map(repr, _FORMATS))})")
    config_of, names_of = _FORMATS[kind][:2]
    config = _plainest(config_of(settings, config_path))
    weights = _read_weights(path)
    prefix = "transformer." if kind == "gpt2" else "model."
    state: Arrays = {}
    for ours, (theirs, convert) in names_of(config).items():
        found = _find(weights, theirs, prefix)
        if found is None:
            raise CheckpointError(f"{path} has no weight {prefix}{theirs} (for {ours})")
        state[ours] = convert(weights.pop(found))
    leftover = [name for name in weights if not _ignored(name, kind, config)]
    if leftover:
        raise CheckpointError(f"{path} holds weights tensorlib's {kind} decoder does not "
                              f"have: {', '.join(sorted(leftover)[:5])}")
    if config.tie_embeddings:  # the state dict names the one tied weight twice
        state["language_model_head.weight"] = state["token_embedding.weight"]
    return config, (_fuse_qkv(state, config) if kind == "llama" else state)


def load_state(model: Module, state: Arrays, folder: str | os.PathLike) -> None:
    """Load ``state`` (from :func:`read_folder`) into ``model``, all or nothing;
    CheckpointError naming ``folder`` when it does not fit."""
    try:
        model.load_state_dict(state)
    except StateDictError as error:
        raise CheckpointError(f"{os.fspath(folder)} does not fit its own config.json: "
                              f"{error}") from None


def _plainest(config: DecoderConfig) -> DecoderConfig:
    """``config`` with the MLP width and key/value heads left to their defaults where they
    are the defaults (so a written and read decoder's config equals the one it had)."""
    mlp_hidden = None if config.mlp_hidden == default_mlp_hidden(config.mlp, config.channels) \
        else config.mlp_hidden
    kv_heads = None if config.kv_heads == config.heads else config.kv_heads
    return replace(config, mlp_hidden=mlp_hidden, kv_heads=kv_heads)


def _read_weights(path: str) -> Arrays:
    single = os.path.join(path, "model.safetensors")
    index = os.path.join(path, "model.safetensors.index.json")
    if os.path.isfile(single):
        return read_safetensors(single)
    if not os.path.isfile(index):
        raise FileNotFoundError(f"{path} has neither model.safetensors nor "
                                "model.safetensors.index.json")
    with open(index, "rb") as handle:
        weight_map = strict_json(handle.read(), index).get("weight_map")
    if not isinstance(weight_map, dict):
        raise CheckpointError(f"{index} has no weight_map")
    weights: Arrays = {}
    for shard in sorted(set(weight_map.values())):
        weights.update(read_safetensors(os.path.join(path, os.path.basename(str(shard)))))
    return weights


def _find(weights: Arrays, name: str, prefix: str) -> str | None:
    """The key of ``name`` in ``weights``: with the model's prefix, as ``transformers``
    saves a causal LM, or without it, as the hub's GPT-2 files have it."""
    for key in (name, prefix + name) if name == "lm_head.weight" else (prefix + name, name):
        if key in weights:
            return key
    return None


def _ignored(name: str, kind: str, config: DecoderConfig) -> bool:
    """Weights a folder may hold that the decoder has no place for and need none: GPT-2's
    causal-mask buffers, Llama's rotary frequencies, a tied head's copy of the embedding."""
    return (kind == "gpt2" and name.endswith((".attn.bias", ".attn.masked_bias"))) \
        or name.endswith("rotary_emb.inv_freq") \
        or (config.tie_embeddings and name == "lm_head.weight")


def _gpt2_config(settings: Mapping[str, Any], where: str) -> DecoderConfig:
    activation = settings.get("activation_function", "gelu_new")
    mlp = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu": "gelu"}.get(
        activation)
    if mlp is None:
        raise ValueError(f"{where}: activation_function {activation!r} is not GELU")
    for key, plain in (("scale_attn_weights", True), ("scale_attn_by_inverse_layer_idx", False),
                       ("add_cross_attention", False)):
        if settings.get(key, plain) != plain:
            raise ValueError(f"{where}: {key}={settings[key]!r} is not the decoder's attention")
    return DecoderConfig(
        vocabulary_size=settings.get("vocab_size", 50257),
        context_length=settings.get("n_positions", 1024),
        channels=settings.get("n_embd", 768), heads=settings.get("n_head", 12),
        layers=settings.get("n_layer", 12), dropout=settings.get("resid_pdrop", 0.0),
        attention_dropout=settings.get("attn_pdrop", 0.0),
        eps=settings.get("layer_norm_epsilon", 1e-5), mlp=mlp,
        mlp_hidden=settings.get("n_inner"), head_bias=False,
        tie_embeddings=settings.get("tie_word_embeddings", True))


def _llama_config(settings: Mapping[str, Any], where: str) -> DecoderConfig:
    rope = settings.get("rope_parameters") or settings.get("rope_scaling") or {}
    rope_type = rope.get("rope_type", rope.get("type", "default"))
    if rope_type != "default":
        raise ValueError(f"{where}: rotary scaling {rope_type!r} is not the decoder's (it "
                         "turns by the plain angles)")
    theta = rope.get("rope_theta", settings.get("rope_theta", 10000.0))
    activation = settings.get("hidden_act", "silu")
    if activation != "silu":
        raise ValueError(f"{where}: hidden_act {activation!r} is not SwiGLU's silu")
    attention_bias = settings.get("attention_bias", False)
    if settings.get("mlp_bias", False) != attention_bias:
        raise ValueError(f"{where}: attention_bias and mlp_bias differ; the decoder's bias "
                         "is one setting")
    channels, heads = settings.get("hidden_size", 4096), settings.get("num_attention_heads", 32)
    head_dim = settings.get("head_dim")
    if head_dim is not None and head_dim * heads != channels:
        raise ValueError(f"{where}: head_dim {head_dim} × {heads} heads is not hidden_size "
                         f"{channels}")
    return DecoderConfig(
        vocabulary_size=settings.get("vocab_size", 32000),
        context_length=settings.get("max_position_embeddings", 2048), channels=channels,
        heads=heads, layers=settings.get("num_hidden_layers", 32),
        attention_dropout=settings.get("attention_dropout", 0.0),
        eps=settings.get("rms_norm_eps", 1e-6), norm="rms", positions="rotary",
        rope_theta=theta, mlp="swiglu", mlp_hidden=settings.get("intermediate_size", 11008),
        kv_heads=settings.get("num_key_value_heads", heads), bias=attention_bias,
        head_bias=False, tie_embeddings=settings.get("tie_word_embeddings", False))


# ------------------------------------------------------------------------------- the names
Convert = Callable[[np.ndarray], np.ndarray]
Names = dict[str, tuple[str, Convert]]  # ours → (theirs without the prefix, how to read it)


def _same(array: np.ndarray) -> np.ndarray:
    return array


def _transposed(array: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(array.T)


def _gpt2_names(config: DecoderConfig) -> Names:
    channels = config.channels

    def qkv_weight(c_attn: np.ndarray) -> np.ndarray:  # (C, 3C) → (3, C, C), W[i] = block i
        return np.ascontiguousarray(c_attn.reshape(channels, 3, channels).transpose(1, 0, 2))

    def qkv_bias(c_attn_bias: np.ndarray) -> np.ndarray:  # (3C,) → (3, C)
        return c_attn_bias.reshape(3, channels)

    names: Names = {"token_embedding.weight": ("wte.weight", _same),
                    "positional_embedding.table.weight": ("wpe.weight", _same)}
    for i in range(config.layers):
        ours, theirs = f"blocks.{i}.", f"h.{i}."
        names.update({
            ours + "attention_norm.weight": (theirs + "ln_1.weight", _same),
            ours + "attention_norm.bias": (theirs + "ln_1.bias", _same),
            ours + "attention.qkv_weight": (theirs + "attn.c_attn.weight", qkv_weight),
            ours + "attention.qkv_bias": (theirs + "attn.c_attn.bias", qkv_bias),
            ours + "attention.output.weight": (theirs + "attn.c_proj.weight", _transposed),
            ours + "attention.output.bias": (theirs + "attn.c_proj.bias", _same),
            ours + "mlp_norm.weight": (theirs + "ln_2.weight", _same),
            ours + "mlp_norm.bias": (theirs + "ln_2.bias", _same),
            ours + "mlp_input.weight": (theirs + "mlp.c_fc.weight", _transposed),
            ours + "mlp_input.bias": (theirs + "mlp.c_fc.bias", _same),
            ours + "mlp_output.weight": (theirs + "mlp.c_proj.weight", _transposed),
            ours + "mlp_output.bias": (theirs + "mlp.c_proj.bias", _same)})
    names.update({"final_norm.weight": ("ln_f.weight", _same),
                  "final_norm.bias": ("ln_f.bias", _same)})
    if not config.tie_embeddings:
        names["language_model_head.weight"] = ("lm_head.weight", _same)
    return names


def _llama_names(config: DecoderConfig) -> Names:
    """Llama's names, the attention's as GroupedQueryAttention has them (``query``, ``key``,
    ``value``); :func:`_fuse_qkv` makes MultiheadAttention's fused layout of them."""
    names: Names = {"token_embedding.weight": ("embed_tokens.weight", _same)}
    parts = ("weight", "bias") if config.bias else ("weight",)
    for i in range(config.layers):
        ours, theirs = f"blocks.{i}.", f"layers.{i}."
        names[ours + "attention_norm.weight"] = (theirs + "input_layernorm.weight", _same)
        for mine, hf in (("attention.query", "self_attn.q_proj"),
                         ("attention.key", "self_attn.k_proj"),
                         ("attention.value", "self_attn.v_proj"),
                         ("attention.output", "self_attn.o_proj"),
                         ("mlp_gate", "mlp.gate_proj"), ("mlp_input", "mlp.up_proj"),
                         ("mlp_output", "mlp.down_proj")):
            for part in parts:
                names[f"{ours}{mine}.{part}"] = (f"{theirs}{hf}.{part}", _same)
        names[ours + "mlp_norm.weight"] = (theirs + "post_attention_layernorm.weight", _same)
    names["final_norm.weight"] = ("norm.weight", _same)
    if not config.tie_embeddings:
        names["language_model_head.weight"] = ("lm_head.weight", _same)
    return names


def _fuse_qkv(state: Arrays, config: DecoderConfig) -> Arrays:
    """Llama's separate projections as MultiheadAttention's fused ones, where every head
    has its own keys and values: ``qkv_weight[i]`` is the transpose of query, key, value's
    Linear weight (``x @ W[i]``), ``qkv_bias[i]`` its bias."""
    if config.key_value_heads != config.heads:
        return state
    fused: Arrays = {}
    for name, array in state.items():
        block, dot, rest = name.partition(".attention.")
        if rest.startswith("query."):
            part = rest.removeprefix("query.")
            three = [state[f"{block}.attention.{kind}.{part}"]
                     for kind in ("query", "key", "value")]
            fused[f"{block}.attention.qkv_{part}"] = np.stack(
                [t.T for t in three] if part == "weight" else three)
        elif not (rest.startswith("key.") or rest.startswith("value.")):
            fused[name] = array
    return fused


def _split_qkv(state: Mapping[str, np.ndarray]) -> Arrays:
    """The inverse of :func:`_fuse_qkv` (a grouped attention's state passes unchanged)."""
    split: Arrays = {}
    for name, array in state.items():
        block, dot, rest = name.partition(".attention.qkv_")
        if not dot:
            split[name] = array
            continue
        for index, kind in enumerate(("query", "key", "value")):
            piece = array[index]
            split[f"{block}.attention.{kind}.{rest}"] = \
                np.ascontiguousarray(piece.T) if rest == "weight" else piece
    return split


# ------------------------------------------------------------------------------- writing
def folder_format(config: DecoderConfig) -> str:
    """``"gpt2"`` or ``"llama"``: the Hugging Face model a decoder of ``config`` is, or
    ValueError saying which settings neither has."""
    gpt2 = _differences(config, {"norm": "layer", "positions": "learned", "kv_heads": None,
                                 "bias": True, "head_bias": False},
                        mlp=("gelu", "gelu_tanh"))
    llama = _differences(config, {"norm": "rms", "positions": "rotary", "mlp": "swiglu",
                                  "head_bias": False})
    if not gpt2:
        return "gpt2"
    if not llama:
        return "llama"
    raise ValueError(f"this decoder is neither a Hugging Face GPT-2 ({'; '.join(gpt2)}) nor "
                     f"a Llama ({'; '.join(llama)})")


def _differences(config: DecoderConfig, wanted: Mapping[str, Any],
                 mlp: tuple[str, ...] | None = None) -> list[str]:
    found = [f"{key}={getattr(config, key)!r} where it has {value!r}"
             for key, value in wanted.items()
             if (config.key_value_heads != config.heads if key == "kv_heads"
                 else getattr(config, key) != value)]
    if mlp is not None and config.mlp not in mlp:
        found.append(f"mlp={config.mlp!r} where it has {' or '.join(map(repr, mlp))}")
    return found


def write_folder(folder: str | os.PathLike, config: DecoderConfig,
                 state: Mapping[str, np.ndarray]) -> None:
    """Write ``config`` and ``state`` (a Decoder's state dict) as a Hugging Face folder
    ``folder`` (made if missing): ``config.json`` and ``model.safetensors``, each written
    whole or not at all, in the model's dtype. ValueError (nothing written) when the
    decoder is neither a GPT-2 nor a Llama (:func:`folder_format`)."""
    kind = folder_format(config)
    names = _FORMATS[kind][1](config)
    prefix = "transformer." if kind == "gpt2" else "model."
    source = dict(state) if kind == "gpt2" else _split_qkv(state)
    weights: Arrays = {}
    for ours, (theirs, convert) in names.items():
        key = theirs if theirs == "lm_head.weight" else prefix + theirs
        weights[key] = _inverse(convert, source[ours], config)
    settings = {**_FORMATS[kind][2](config),
                "dtype": str(next(iter(weights.values())).dtype)}
    path = os.fspath(folder)
    os.makedirs(path, exist_ok=True)
    write_atomic(os.path.join(path, "model.safetensors"),
                 [safetensors_bytes(weights, {"format": "pt"})])
    write_text_atomic(os.path.join(path, "config.json"),
                      json.dumps(settings, indent=2, sort_keys=True) + "\n")


def _inverse(convert: Convert, array: np.ndarray, config: DecoderConfig) -> np.ndarray:
    """Their array from ours: the inverse of the reading conversion ``convert``."""
    if convert is _same:
        return array
    if convert is _transposed:
        return np.ascontiguousarray(array.T)
    channels = config.channels
    if array.ndim == 3:  # qkv_weight (3, C, C) → c_attn (C, 3C)
        return np.ascontiguousarray(array.transpose(1, 0, 2).reshape(channels, 3 * channels))
    return array.reshape(3 * channels)  # qkv_bias (3, C) → (3C,)


def _gpt2_settings(config: DecoderConfig) -> dict[str, Any]:
    return {
        "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2",
        "vocab_size": config.vocabulary_size, "n_positions": config.context_length,
        "n_embd": config.channels, "n_head": config.heads, "n_layer": config.layers,
        "n_inner": config.mlp_hidden_width,
        "activation_function": "gelu_new" if config.mlp == "gelu_tanh" else "gelu",
        "layer_norm_epsilon": config.eps, "resid_pdrop": config.dropout, "embd_pdrop": 0.0,
        "attn_pdrop": config.attention_dropout, "scale_attn_weights": True,
        "tie_word_embeddings": config.tie_embeddings, "bos_token_id": None,
        "eos_token_id": None}


def _llama_settings(config: DecoderConfig) -> dict[str, Any]:
    return {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "vocab_size": config.vocabulary_size, "hidden_size": config.channels,
        "intermediate_size": config.mlp_hidden_width, "num_hidden_layers": config.layers,
        "num_attention_heads": config.heads, "num_key_value_heads": config.key_value_heads,
        "head_dim": config.head_width, "hidden_act": "silu",
        "max_position_embeddings": config.context_length, "rms_norm_eps": config.eps,
        "rope_parameters": {"rope_theta": config.rope_theta, "rope_type": "default"},
        "attention_bias": config.bias, "mlp_bias": config.bias,
        "attention_dropout": config.attention_dropout,
        "tie_word_embeddings": config.tie_embeddings, "bos_token_id": None,
        "eos_token_id": None}


_FORMATS: dict[str, tuple[Callable[[Mapping[str, Any], str], DecoderConfig],
                          Callable[[DecoderConfig], Names],
                          Callable[[DecoderConfig], dict[str, Any]]]] = {
    "gpt2": (_gpt2_config, _gpt2_names, _gpt2_settings),
    "llama": (_llama_config, _llama_names, _llama_settings),
}
