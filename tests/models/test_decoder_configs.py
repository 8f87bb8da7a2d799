"""The decoder in every configuration DecoderConfig names: the default builds the workbook's
GPT-style decoder unchanged; each combination of norm, positions, MLP, key/value heads,
biases and tying keeps its KV cache equal to recomputing and its cached generation equal to
the uncached one; gradients pass gradcheck; and, where PyTorch is installed, the logits and
every parameter's gradient equal those of the same model written independently in PyTorch."""

import itertools
import math

import numpy as np
import pytest

import tensorlib as tl
from tensorlib import Rng
from tensorlib.engine.gradcheck import gradcheck_module
from tensorlib.models import Decoder, DecoderConfig
from tensorlib.nn import GroupedQueryAttention, MultiheadAttention, RMSNorm

from helpers import perturb_constants

SIZES = {"vocabulary_size": 13, "context_length": 8, "channels": 16, "heads": 4, "layers": 2}
DESIGNS = [
    {"norm": norm, "positions": positions, "mlp": mlp, "kv_heads": kv_heads, "bias": bias,
     "head_bias": bias, "tie_embeddings": tie}
    for norm, positions, mlp, kv_heads, bias, tie in itertools.product(
        ("layer", "rms"), ("learned", "rotary"), ("gelu", "gelu_tanh", "swiglu"), (None, 2, 1),
        (True, False), (False, True))
]
LLAMA = {"norm": "rms", "positions": "rotary", "mlp": "swiglu", "kv_heads": 2, "bias": False,
         "head_bias": False, "tie_embeddings": False}


def design_id(design):
    return "-".join(f"{value}" for value in design.values())


def make(design, seed=0, dtype=np.float64, **sizes):
    config = DecoderConfig(**{**SIZES, **sizes}, **design)
    return perturb_constants(Decoder(config, rng=Rng(seed), dtype=dtype), seed)


# ------------------------------------------------------------------------------ structure
def test_the_default_config_is_the_workbooks_decoder():
    config = DecoderConfig(**SIZES)
    assert config.design() == "" and config.mlp_hidden_width == 64
    assert config.key_value_heads == 4 and config.head_width == 4
    model = Decoder(config, rng=Rng(0))
    names = list(model.state_dict())
    assert names[:6] == ["token_embedding.weight", "positional_embedding.table.weight",
                         "blocks.0.attention_norm.weight", "blocks.0.attention_norm.bias",
                         "blocks.0.attention.qkv_weight", "blocks.0.attention.qkv_bias"]
    assert names[-3:] == ["final_norm.bias", "language_model_head.weight",
                          "language_model_head.bias"]
    assert type(model.blocks[0].attention) is MultiheadAttention
    assert repr(model).startswith("Decoder(vocabulary_size=13, context_length=8, channels=16, "
                                  "heads=4, layers=2\n")


def test_a_llama_config_has_llamas_parts():
    model = make(LLAMA, dtype=np.float32)
    block = model.blocks[0]
    assert model.positional_embedding is None
    assert isinstance(block.attention, GroupedQueryAttention) and block.attention.kv_heads == 2
    assert isinstance(block.attention_norm, RMSNorm) and isinstance(model.final_norm, RMSNorm)
    assert block.attention.rotary.head_dim == 4 and block.attention.rotary.max_positions == 8
    assert block.mlp_gate.weight.shape == (48, 16)  # 8·16/3 = 42.7, up to a multiple of 8
    assert block.mlp_input.weight.shape == (48, 16) and block.mlp_output.weight.shape == (16, 48)
    assert block.attention.key.weight.shape == (8, 16)  # 2 key/value heads of width 4
    assert all(not name.endswith("bias") for name in model.state_dict())
    assert "rotary" not in " ".join(model.state_dict())  # its tables are not saved


def test_tied_embeddings_are_one_parameter_in_two_places():
    model = make({"tie_embeddings": True, "head_bias": False})
    assert model.language_model_head.weight is model.token_embedding.weight
    state = model.state_dict()
    assert "language_model_head.weight" in state and "language_model_head.bias" not in state
    assert len(list(model.parameters())) == len(state) - 1  # listed once
    model.loss(np.array([[1, 2, 3]]), np.array([[2, 3, 4]])).backward()
    grad = model.token_embedding.weight.grad
    assert np.abs(grad[5:]).max() > 0  # rows no input used: the head's gradient reaches them


@pytest.mark.parametrize("field, value, message", [
    ("norm", "batch", "DecoderConfig.norm must be one of 'layer', 'rms', got 'batch'"),
    ("positions", "sinusoidal", "DecoderConfig.positions must be one of"),
    ("mlp", "relu", "DecoderConfig.mlp must be one of 'gelu', 'gelu_tanh', 'swiglu'"),
    ("kv_heads", 3, r"DecoderConfig.kv_heads \(3\) must divide heads \(4\)"),
    ("kv_heads", 0, "DecoderConfig.kv_heads"),
    ("mlp_hidden", 0, "DecoderConfig.mlp_hidden"),
    ("rope_theta", 0.0, "DecoderConfig.rope_theta"),
    ("attention_dropout", 1.0, "DecoderConfig.attention_dropout"),
    ("bias", 1, "DecoderConfig.bias must be True or False"),
])
def test_bad_config_fields_are_named(field, value, message):
    error = TypeError if field == "bias" else ValueError
    with pytest.raises(error, match=message):
        DecoderConfig(**SIZES, **{field: value})


def test_rotary_positions_need_an_even_head_width():
    with pytest.raises(ValueError, match="head width channels / heads = 3 must be even"):
        DecoderConfig(13, 8, 12, 4, 1, positions="rotary")
    DecoderConfig(13, 8, 12, 4, 1)  # learned positions take any width


# ---------------------------------------------------------------------- cache and sampling
@pytest.mark.parametrize("design", DESIGNS, ids=design_id)
def test_the_kv_cache_equals_recomputing(design):
    model = make(design, seed=3)
    ids = Rng(4).integers(0, 13, (2, 8))
    with tl.no_grad():
        whole = model(ids).numpy()
        caches = model.new_cache()
        pieces = [model(ids[:, lo:hi], caches).numpy() for lo, hi in ((0, 3), (3, 4), (4, 8))]
    np.testing.assert_allclose(np.concatenate(pieces, axis=1), whole, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("design", DESIGNS[::7] + [LLAMA], ids=design_id)
def test_cached_generation_gives_the_uncached_tokens(design):
    model = make(design, seed=5, dtype=np.float32)
    prompt = Rng(6).integers(0, 13, (2, 3))
    for top_k in (None, 1):  # past the context length: the window slides
        cached = model.generate(prompt, 9, rng=Rng(7), top_k=top_k)
        uncached = model.generate(prompt, 9, rng=Rng(7), top_k=top_k, use_cache=False)
        np.testing.assert_array_equal(cached, uncached)


# --------------------------------------------------------------------------------- gradients
@pytest.mark.parametrize("design", [DESIGNS[0], DESIGNS[-1], LLAMA,
                                    {**LLAMA, "kv_heads": None, "tie_embeddings": True}],
                         ids=design_id)
def test_gradcheck_of_every_parameter(design):
    model = make(design, seed=8, channels=8, heads=2, layers=1, vocabulary_size=7)
    ids, targets = Rng(9).integers(0, 7, (2, 5)), Rng(10).integers(0, 7, (2, 5))
    checked = gradcheck_module(model, lambda: model.loss(ids, targets), entries=6)
    assert checked == len(list(model.parameters()))


def test_attention_dropout_drops_probabilities_in_training_only():
    model = make({"kv_heads": 2}, seed=11)
    dropping = make({"kv_heads": 2}, seed=11, attention_dropout=0.5)
    ids = Rng(12).integers(0, 13, (2, 6))
    dropping.eval()
    np.testing.assert_allclose(dropping(ids).numpy(), model(ids).numpy(), rtol=1e-12)
    dropping.train()
    first = dropping(ids).numpy()
    assert np.abs(first - model(ids).numpy()).max() > 1e-3
    assert np.abs(first - dropping(ids).numpy()).max() > 1e-3  # new masks at each call
    twin = make({"kv_heads": 2}, seed=11, attention_dropout=0.5)  # the masks come from the
    np.testing.assert_array_equal(twin(ids).numpy(), first)  # generator the model was given


def test_grouped_query_attention_with_every_head_is_multihead_attention():
    full = MultiheadAttention(8, 2, rng=Rng(13), dtype=np.float64)
    grouped = GroupedQueryAttention(8, 2, 2, rng=Rng(14), dtype=np.float64)
    perturb_constants(full, 1)
    with tl.no_grad():
        for index, linear in enumerate((grouped.query, grouped.key, grouped.value)):
            linear.weight.copy_(full.qkv_weight.numpy()[index].T)
            linear.bias.copy_(full.qkv_bias.numpy()[index])
        grouped.output.weight.copy_(full.output.weight.numpy())
        grouped.output.bias.copy_(full.output.bias.numpy())
    x = tl.Tensor(Rng(15).normal(size=(2, 5, 8), dtype=np.float64))
    np.testing.assert_allclose(grouped(x).numpy(), full(x).numpy(), rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match=r"kv_heads \(3\) must divide heads \(2\)"):
        GroupedQueryAttention(8, 2, 3)


# ------------------------------------------------------------------------------- PyTorch
def torch_logits(torch, config, state, ids):
    """The decoder's logits written in PyTorch from the formulas, for ``state`` (leaf
    tensors; the tied head reads the token embedding)."""
    fn = torch.nn.functional
    c, eps = config, config.eps
    batch, length = ids.shape
    width = c.head_width

    def norm(x, name):
        if c.norm == "rms":
            return fn.rms_norm(x, (c.channels,), state[f"{name}.weight"], eps)
        return fn.layer_norm(x, (c.channels,), state[f"{name}.weight"],
                             state.get(f"{name}.bias"), eps)

    def heads(t, count):  # (B, T, count·D) → (B, count, T, D)
        return t.reshape(batch, length, count, width).transpose(1, 2)

    def rotate(t):  # Llama's half-split pairs, at positions 0 .. T-1
        inverse = c.rope_theta ** (-torch.arange(0, width, 2, dtype=torch.float64) / width)
        angles = torch.arange(length, dtype=torch.float64)[:, None] * inverse[None, :]
        cos, sin = torch.cat([angles.cos()] * 2, -1), torch.cat([angles.sin()] * 2, -1)
        first, second = t[..., :width // 2], t[..., width // 2:]
        return t * cos + torch.cat([-second, first], -1) * sin

    x = fn.embedding(ids, state["token_embedding.weight"])
    if c.positions == "learned":
        x = x + state["positional_embedding.table.weight"][:length]
    for index in range(c.layers):
        name = f"blocks.{index}"
        h = norm(x, f"{name}.attention_norm")
        if f"{name}.attention.qkv_weight" in state:
            weight = state[f"{name}.attention.qkv_weight"]
            bias = state.get(f"{name}.attention.qkv_bias")
            q, k, v = (h @ weight[i] + (0 if bias is None else bias[i]) for i in range(3))
        else:
            q, k, v = (fn.linear(h, state[f"{name}.attention.{part}.weight"],
                                 state.get(f"{name}.attention.{part}.bias"))
                       for part in ("query", "key", "value"))
        q, k, v = heads(q, c.heads), heads(k, c.key_value_heads), heads(v, c.key_value_heads)
        if c.positions == "rotary":
            q, k = rotate(q), rotate(k)
        attended = fn.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        merged = attended.transpose(1, 2).reshape(batch, length, c.channels)
        x = x + fn.linear(merged, state[f"{name}.attention.output.weight"],
                          state.get(f"{name}.attention.output.bias"))
        h = norm(x, f"{name}.mlp_norm")

        def linear(part, t, name=name):
            return fn.linear(t, state[f"{name}.{part}.weight"], state.get(f"{name}.{part}.bias"))

        if c.mlp == "swiglu":
            hidden = fn.silu(linear("mlp_gate", h)) * linear("mlp_input", h)
        else:
            hidden = fn.gelu(linear("mlp_input", h),
                             approximate="tanh" if c.mlp == "gelu_tanh" else "none")
        x = x + linear("mlp_output", hidden)
    x = norm(x, "final_norm")
    head = state["token_embedding.weight"] if c.tie_embeddings \
        else state["language_model_head.weight"]
    return fn.linear(x, head, state.get("language_model_head.bias"))


@pytest.mark.parametrize("design", DESIGNS, ids=design_id)
def test_logits_and_gradients_are_those_of_the_same_model_in_pytorch(design):
    torch = pytest.importorskip("torch")
    model = make(design, seed=16)
    ids, targets = Rng(17).integers(0, 13, (2, 7)), Rng(18).integers(0, 13, (2, 7))
    state = {name: torch.tensor(array, requires_grad=True)
             for name, array in model.state_dict().items()}
    expected = torch_logits(torch, model.config, state, torch.tensor(ids))
    logits = model(ids)
    np.testing.assert_allclose(logits.numpy(), expected.detach().numpy(), rtol=1e-10,
                               atol=1e-12)
    loss = model.loss(ids, targets)
    torch.nn.functional.cross_entropy(expected.reshape(-1, 13),
                                      torch.tensor(targets).reshape(-1)).backward()
    loss.backward()
    assert math.isclose(loss.item(), torch.nn.functional.cross_entropy(
        expected.reshape(-1, 13), torch.tensor(targets).reshape(-1)).item(), rel_tol=1e-12)
    for name, parameter in model.named_parameters():
        np.testing.assert_allclose(parameter.grad, state[name].grad.numpy(), rtol=1e-9,
                                   atol=1e-12, err_msg=name)
