"""Tests for tensorlib.nn.DecoderBlock, DecoderConfig and Decoder (the GPT-style model)."""

import math

import numpy as np
import pytest

import tensorlib as tl
from tensorlib import Rng, manual_seed
from tensorlib.engine.gradcheck import gradcheck_module
from tensorlib.nn import (
    Decoder,
    DecoderBlock,
    DecoderConfig,
    Dropout,
    Embedding,
    HookPoint,
    LayerNorm,
    Linear,
    ModuleList,
    MultiheadAttention,
    PositionalEmbedding,
)
from tensorlib.nn import functional as F

from helpers import perturb_constants

TINY = DecoderConfig(vocabulary_size=5, context_length=4, channels=4, heads=2, layers=1)


# --------------------------------------------------------------------------------- block
def test_block_children_in_order():
    block = DecoderBlock(8, 2, rng=Rng(0))
    children = list(block.named_children())
    assert [n for n, _ in children] == ["attention_norm", "attention", "mlp_norm", "mlp_input",
                                        "mlp_output", "mlp_dropout", "residual_attention",
                                        "residual_mlp"]
    kinds = [LayerNorm, MultiheadAttention, LayerNorm, Linear, Linear, Dropout, HookPoint,
             HookPoint]
    assert all(isinstance(m, k) for (_, m), k in zip(children, kinds, strict=True))
    assert (block.mlp_input.in_features, block.mlp_input.out_features) == (8, 32)
    assert (block.mlp_output.in_features, block.mlp_output.out_features) == (32, 8)


def test_block_with_zero_branches_is_the_identity():
    block = DecoderBlock(4, 2, rng=Rng(1))
    with tl.no_grad():
        for layer in (block.attention.output, block.mlp_output):
            layer.weight.zero_()
            layer.bias.zero_()
    x = tl.Tensor(np.random.default_rng(0).normal(size=(2, 3, 4)).astype(np.float32))
    np.testing.assert_array_equal(block(x).data, x.data)


def test_block_is_pre_norm_with_residuals():
    block = DecoderBlock(4, 2, rng=Rng(2), dtype=np.float64)
    perturb_constants(block)
    x = tl.Tensor(np.random.default_rng(1).normal(size=(2, 3, 4)))
    middle = x + block.attention(block.attention_norm(x))
    hidden = block.mlp_input(block.mlp_norm(middle)).gelu()
    expected = middle + block.mlp_output(hidden)
    np.testing.assert_allclose(block(x).data, expected.data, rtol=1e-13, atol=1e-14)


def test_block_backward_through_every_parameter():
    block = DecoderBlock(4, 2, rng=Rng(3), dtype=np.float64)
    perturb_constants(block, seed=1)
    x = tl.Tensor(np.random.default_rng(2).normal(size=(2, 3, 4)), requires_grad=True)
    assert gradcheck_module(block, lambda: block(x), entries=12, atol=1e-7, rtol=1e-5) == 12
    assert tl.gradcheck(lambda t: block(t), x)


def test_block_validation():
    with pytest.raises(ValueError, match="divisible"):
        DecoderBlock(6, 4)
    with pytest.raises(ValueError, match=r"\[0, 1\)"):
        DecoderBlock(4, 2, dropout=-0.5)
    with pytest.raises(ValueError, match="eps"):
        DecoderBlock(4, 2, eps=0)
    block = DecoderBlock(4, 2, rng=Rng(0))
    with pytest.raises(ValueError, match=r"4 features, got shape \(1, 2, 3\)"):
        block(tl.zeros(1, 2, 3))
    with pytest.raises(ValueError, match="3-D"):
        block(tl.zeros(2, 4))


# --------------------------------------------------------------------------------- config
def test_config_defaults():
    config = DecoderConfig(10, 8, 16, 4, 2)
    assert (config.dropout, config.eps) == (0.0, 1e-5)


@pytest.mark.parametrize("changes, error, message", [
    ({"vocabulary_size": 0}, ValueError, "vocabulary_size"),
    ({"context_length": -1}, ValueError, "context_length"),
    ({"channels": 2.0}, TypeError, "channels"),
    ({"heads": True}, TypeError, "heads"),
    ({"layers": 0}, ValueError, "layers"),
    ({"channels": 6, "heads": 4}, ValueError, r"channels \(6\) must be divisible by heads \(4\)"),
    ({"dropout": 1.0}, ValueError, "dropout"),
    ({"dropout": -0.1}, ValueError, "dropout"),
    ({"eps": 0.0}, ValueError, "eps"),
    ({"eps": float("nan")}, ValueError, "eps"),
])
def test_config_validation(changes, error, message):
    arguments = {"vocabulary_size": 10, "context_length": 8, "channels": 8, "heads": 2,
                 "layers": 1} | changes
    with pytest.raises(error, match=message):
        DecoderConfig(**arguments)


# --------------------------------------------------------------------------------- decoder
def test_decoder_topology_and_names():
    model = Decoder(DecoderConfig(11, 6, 8, 2, 2), rng=Rng(0))
    assert [n for n, _ in model.named_children()] == [
        "token_embedding", "positional_embedding", "blocks", "final_norm",
        "language_model_head", "embedding"]
    kinds = [Embedding, PositionalEmbedding, ModuleList, LayerNorm, Linear, HookPoint]
    assert all(isinstance(m, k) for m, k in zip(model.children(), kinds, strict=True))
    assert len(model.blocks) == 2 and all(isinstance(b, DecoderBlock) for b in model.blocks)
    shapes = dict((n, p.shape) for n, p in model.named_parameters())
    for name, shape in {
        "token_embedding.weight": (11, 8),
        "positional_embedding.table.weight": (6, 8),
        "blocks.0.attention_norm.weight": (8,),
        "blocks.0.attention.qkv_weight": (3, 8, 8),
        "blocks.0.attention.qkv_bias": (3, 8),
        "blocks.0.attention.output.weight": (8, 8),
        "blocks.0.mlp_input.weight": (32, 8),
        "blocks.0.mlp_output.bias": (8,),
        "final_norm.bias": (8,),
        "language_model_head.weight": (11, 8),
        "language_model_head.bias": (11,),
    }.items():
        assert shapes[name] == shape, name
    assert "blocks.1.mlp_dropout" in dict(model.named_modules())
    per_block = 2 * 2 * 8 + (3 * 64 + 3 * 8 + 64 + 8) + (32 * 8 + 32) + (8 * 32 + 8)
    assert model.num_parameters() == 11 * 8 + 6 * 8 + 2 * per_block + 2 * 8 + 11 * 8 + 11
    assert list(model.state_dict())[:3] == ["token_embedding.weight",
                                            "positional_embedding.table.weight",
                                            "blocks.0.attention_norm.weight"]


def test_forward_shape_and_loss_equals_cross_entropy_of_the_logits():
    model = Decoder(DecoderConfig(7, 5, 8, 2, 2), rng=Rng(1))
    ids = Rng(2).integers(0, 7, (3, 5))
    targets = Rng(3).integers(0, 7, (3, 5))
    logits = model(ids)
    assert logits.shape == (3, 5, 7) and logits.dtype == np.float32
    assert model(ids[:, :2]).shape == (3, 2, 7)
    loss = model.loss(ids, targets)
    assert loss.shape == ()
    assert loss.item() == pytest.approx(F.cross_entropy(logits, targets).item(), rel=1e-6)


def test_backward_reaches_every_parameter():
    model = Decoder(DecoderConfig(7, 5, 8, 2, 2), rng=Rng(1))
    ids = Rng(2).integers(0, 7, (3, 5))
    model.loss(ids, np.roll(ids, -1, axis=1)).backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and p.grad.shape == p.shape, name
        assert np.all(np.isfinite(p.grad)) and np.any(p.grad != 0), name


def test_decoder_gradients_match_central_differences():
    model = Decoder(TINY, rng=Rng(4), dtype=np.float64)
    perturb_constants(model, seed=3)
    ids = Rng(5).integers(0, 5, (2, 4))
    targets = Rng(6).integers(0, 5, (2, 4))
    checked = gradcheck_module(model, lambda: model.loss(ids, targets), entries=8, atol=1e-7,
                               rtol=1e-5)
    assert checked == 18


def test_loss_at_initialization_is_close_to_log_vocabulary():
    vocabulary = 96
    model = Decoder(DecoderConfig(vocabulary, 8, 16, 2, 2), rng=Rng(0))
    ids = Rng(1).integers(0, vocabulary, (8, 8))
    with tl.no_grad():
        loss = model.loss(ids, np.roll(ids, -1, axis=1)).item()
    assert abs(loss - math.log(vocabulary)) < 0.3


def test_plain_gradient_descent_overfits_a_tiny_batch():
    model = Decoder(DecoderConfig(8, 8, 16, 2, 1), rng=Rng(0))
    sequence = Rng(1).integers(0, 8, (2, 9))
    inputs, targets = sequence[:, :-1], sequence[:, 1:]
    first = model.loss(inputs, targets).item()
    for _ in range(150):
        loss = model.loss(inputs, targets)
        model.zero_grad()
        loss.backward()
        with tl.no_grad():
            for p in model.parameters():
                p.add_(p.grad, alpha=-0.3)
    final = model.loss(inputs, targets).item()
    assert first > 1.5
    assert final < 0.05


def test_train_and_eval_reach_every_dropout():
    model = Decoder(DecoderConfig(6, 4, 8, 2, 2, dropout=0.5), rng=Rng(0))
    dropouts = [m for m in model.modules() if isinstance(m, Dropout)]
    assert len(dropouts) == 4 and all(d.p == 0.5 for d in dropouts)
    ids = np.array([[1, 2, 3, 4]])
    model.eval()
    assert not any(m.training for m in model.modules())
    np.testing.assert_array_equal(model(ids).data, model(ids).data)  # deterministic in eval
    model.train()
    assert all(m.training for m in model.modules())
    assert not np.array_equal(model(ids).data, model(ids).data)  # dropout active


def test_same_seed_same_model():
    a = Decoder(TINY, rng=Rng(42)).state_dict()
    b = Decoder(TINY, rng=Rng(42)).state_dict()
    c = Decoder(TINY, rng=Rng(43)).state_dict()
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert not np.array_equal(a["token_embedding.weight"], c["token_embedding.weight"])
    manual_seed(42)
    d = Decoder(TINY).state_dict()
    assert all(np.array_equal(a[k], d[k]) for k in a)


@pytest.mark.parametrize("ids, error, message", [
    ([1, 2, 3], ValueError, r"\(B, T\)"),
    ([[[1]]], ValueError, r"\(B, T\)"),
    ([[1, 2, 5]], IndexError, "token id 5"),
    ([[0.0, 1.0]], TypeError, "integer"),
    ([[1, 2, 3, 4, 0]], ValueError, "sequence length 5 exceeds the context length 4"),
    (np.zeros((1, 0), dtype=np.int64), ValueError, "at least one"),
])
def test_forward_rejects_bad_token_ids(ids, error, message):
    model = Decoder(TINY, rng=Rng(0))
    with pytest.raises(error, match=message):
        model(ids)


def test_loss_rejects_bad_targets_before_running_the_model():
    model = Decoder(TINY, rng=Rng(0))
    ids = np.array([[0, 1, 2]])
    with pytest.raises(ValueError, match=r"targets of shape \(1, 2\)"):
        model.loss(ids, [[1, 2]])
    with pytest.raises(IndexError, match="target 9"):
        model.loss(ids, [[1, 2, 9]])
    with pytest.raises(TypeError):
        Decoder({"vocabulary_size": 5})


# --------------------------------------------------------------------------------- generate
def test_generate_shape_dtype_prompt_and_determinism():
    model = Decoder(DecoderConfig(9, 6, 8, 2, 1), rng=Rng(0))
    prompt = np.array([[1, 2], [3, 4], [5, 6]])
    out = model.generate(prompt, 7, rng=Rng(10))
    assert out.shape == (3, 9) and out.dtype == np.int64
    np.testing.assert_array_equal(out[:, :2], prompt)
    assert out.min() >= 0 and out.max() < 9
    np.testing.assert_array_equal(model.generate(prompt, 7, rng=Rng(10)), out)
    assert not np.array_equal(model.generate(prompt, 7, rng=Rng(11)), out)
    np.testing.assert_array_equal(model.generate(prompt, 0, rng=Rng(10)), prompt)


def test_generate_top_k_one_and_tiny_temperature_are_greedy():
    model = Decoder(DecoderConfig(9, 6, 8, 2, 1), rng=Rng(1))
    prompt = np.array([[1], [7]])
    greedy = prompt
    with tl.no_grad():
        model.eval()
        for _ in range(5):
            next_ids = model(greedy).data[:, -1].argmax(-1)
            greedy = np.concatenate([greedy, next_ids[:, None]], axis=1)
        model.train()
    np.testing.assert_array_equal(model.generate(prompt, 5, top_k=1, rng=Rng(0)), greedy)
    np.testing.assert_array_equal(model.generate(prompt, 5, temperature=1e-6, rng=Rng(0)),
                                  greedy)


def test_generate_top_k_only_draws_the_k_most_likely():
    model = Decoder(DecoderConfig(9, 4, 8, 2, 1), rng=Rng(2))
    prompt = np.zeros((200, 1), dtype=np.int64)
    with tl.no_grad():
        model.eval()
        logits = model(prompt[:1]).data[0, -1]
        model.train()
    allowed = set(np.argsort(logits)[-3:].tolist())
    drawn = model.generate(prompt, 1, top_k=3, rng=Rng(3))[:, 1]
    assert set(drawn.tolist()) == allowed


def test_generate_crops_the_context():
    model = Decoder(DecoderConfig(9, 4, 8, 2, 1), rng=Rng(3))
    long_prompt = np.array([[1, 2, 3, 4, 5, 6, 7]])
    out = model.generate(long_prompt, 6, rng=Rng(5))
    assert out.shape == (1, 13)
    cropped = model.generate(long_prompt[:, -4:], 6, rng=Rng(5))
    np.testing.assert_array_equal(out[:, 7:], cropped[:, 4:])


def test_generate_restores_modes_and_records_no_graph():
    model = Decoder(DecoderConfig(9, 4, 8, 2, 1, dropout=0.5), rng=Rng(4))
    model.blocks[0].eval()  # mixed modes must come back as they were
    modes = [m.training for m in model.modules()]
    model.generate(np.array([[1, 2]]), 3, rng=Rng(0))
    assert [m.training for m in model.modules()] == modes
    assert tl.is_grad_enabled()
    assert all(p.grad is None for p in model.parameters())


def test_generate_uses_the_default_rng_when_none_is_given():
    model = Decoder(DecoderConfig(9, 4, 8, 2, 1), rng=Rng(5))
    prompt = np.array([[1, 2]])
    manual_seed(7)
    first = model.generate(prompt, 5)
    np.testing.assert_array_equal(model.generate(prompt, 5, rng=Rng(7)), first)


@pytest.mark.parametrize("kwargs, message", [
    ({"temperature": 0.0}, "temperature"),
    ({"temperature": -1.0}, "temperature"),
    ({"top_k": 0}, "top_k"),
    ({"top_k": 10}, "top_k"),
    ({"top_k": 2.0}, "top_k"),
    ({"max_new_tokens": -1}, "max_new_tokens"),
    ({"max_new_tokens": 2.0}, "max_new_tokens"),
    ({"use_cache": 1}, "use_cache"),
])
def test_generate_validation(kwargs, message):
    model = Decoder(DecoderConfig(9, 4, 8, 2, 1), rng=Rng(6))
    arguments = {"max_new_tokens": 2} | kwargs
    rng = Rng(1)
    with pytest.raises((TypeError, ValueError), match=message):
        model.generate(np.array([[1]]), rng=rng, **arguments)
    assert rng.state == 1 and model.training


# --------------------------------------------------------------------------------- PyTorch
def test_block_matches_torch_forward_and_backward():
    torch = pytest.importorskip("torch")
    block = DecoderBlock(8, 2, rng=Rng(7), dtype=np.float64)
    perturb_constants(block, seed=4)
    data = np.random.default_rng(9)
    x_np, upstream = data.normal(size=(2, 5, 8)), data.normal(size=(2, 5, 8))
    x = tl.Tensor(x_np, requires_grad=True)
    out = block(x)
    out.backward(upstream)

    p = {n: torch.tensor(q.numpy(), requires_grad=True) for n, q in block.named_parameters()}
    functional = torch.nn.functional
    tx = torch.tensor(x_np, requires_grad=True)

    def attention(h):
        q, k, v = (h @ p["attention.qkv_weight"][i] + p["attention.qkv_bias"][i]
                   for i in range(3))
        q, k, v = (t.reshape(2, 5, 2, 4).transpose(1, 2) for t in (q, k, v))
        context = functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        merged = context.transpose(1, 2).reshape(2, 5, 8)
        return functional.linear(merged, p["attention.output.weight"],
                                 p["attention.output.bias"])

    h = functional.layer_norm(tx, (8,), p["attention_norm.weight"], p["attention_norm.bias"])
    middle = tx + attention(h)
    h = functional.layer_norm(middle, (8,), p["mlp_norm.weight"], p["mlp_norm.bias"])
    h = functional.gelu(functional.linear(h, p["mlp_input.weight"], p["mlp_input.bias"]))
    t_out = middle + functional.linear(h, p["mlp_output.weight"], p["mlp_output.bias"])
    t_out.backward(torch.tensor(upstream))

    np.testing.assert_allclose(out.data, t_out.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(x.grad, tx.grad.numpy(), rtol=1e-9, atol=1e-12)
    for name, parameter in block.named_parameters():
        np.testing.assert_allclose(parameter.grad, p[name].grad.numpy(), rtol=1e-9, atol=1e-12,
                                   err_msg=name)
