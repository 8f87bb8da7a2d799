"""The benchmark's models on both sides: tensorlib and the same architecture in torch.nn.

The PyTorch twins use the same parameter names as tensorlib (``blocks.0.attention.qkv_weight``
...), so weights are copied by name, and the first losses of the two agree. Every function
that needs torch imports it lazily, so this module imports without PyTorch installed.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import tensorlib as tl
from tensorlib.nn import Conv2d, Decoder, DecoderConfig, Embedding, Linear, MaxPool2d, Module

try:
    from tensorlib.nn import GRU, LSTM
except ImportError:  # trees older than the recurrent layers: cases (i)-(l) cannot run there
    GRU = LSTM = None
from tensorlib.nn import functional as F

try:
    from tensorlib import Rng
except ImportError:  # benchmarks/compare.py also times trees older than tensorlib.Rng
    from tensorlib.nn import Rng

VOCABULARY = 28  # 26 letters, the boundary token and one spare, as in the names workbook


def decoder_config(context: int = 64, channels: int = 128, heads: int = 4,
                   layers: int = 4) -> DecoderConfig:
    """Case (a)/(b)'s model: vocabulary 28, context 64, 4 layers, 4 heads, 128 channels."""
    return DecoderConfig(vocabulary_size=VOCABULARY, context_length=context, channels=channels,
                         heads=heads, layers=layers)


def make_decoder(config: DecoderConfig, seed: int = 0) -> Decoder:
    return Decoder(config, rng=Rng(seed))


class MLPLanguageModel(Module):
    """Bengio-style character model: 3 previous ids → embedding (10) → tanh(200) → 28 logits."""

    def __init__(self, context: int = 3, width: int = 10, hidden: int = 200, seed: int = 0):
        super().__init__()
        rng = Rng(seed)
        self.context = context
        self.embedding = Embedding(VOCABULARY, width, rng=rng)
        self.hidden = Linear(context * width, hidden, rng=rng)
        self.output = Linear(hidden, VOCABULARY, rng=rng)

    def forward(self, ids: Any) -> tl.Tensor:
        """``ids (B, context)`` → logits ``(B, 28)``."""
        x = self.embedding(ids)  # (B, context, width)
        x = x.reshape(x.shape[0], -1)  # (B, context * width)
        return self.output(self.hidden(x).tanh())

    def loss(self, ids: Any, targets: Any) -> tl.Tensor:
        return F.cross_entropy(self.forward(ids), targets)


def token_batches(batch: int, length: int, count: int, seed: int = 0) -> list[tuple]:
    """``count`` (ids, next ids) pairs of shape (batch, length), drawn from a seeded Rng."""
    rng = Rng(seed)
    out = []
    for _ in range(count):
        ids = rng.integers(0, VOCABULARY, size=(batch, length + 1)).astype(np.int64)
        out.append((ids[:, :-1].copy(), ids[:, 1:].copy()))
    return out


def mlp_batches(batch: int, context: int, count: int, seed: int = 0) -> list[tuple]:
    """``count`` (ids (batch, context), targets (batch,)) pairs."""
    rng = Rng(seed)
    out = []
    for _ in range(count):
        ids = rng.integers(0, VOCABULARY, size=(batch, context + 1)).astype(np.int64)
        out.append((ids[:, :-1].copy(), ids[:, -1].copy()))
    return out


class CNNClassifier(Module):
    """Cases (g)/(h)'s model: ``images (B, 1, S, S)`` → conv 3×3 (16) → relu → max-pool 2 →
    conv 3×3 (32) → relu → max-pool 2 → ``Linear`` to 10 logits (S = 8 or 28)."""

    def __init__(self, size: int, seed: int = 0):
        super().__init__()
        rng = Rng(seed)
        self.first = Conv2d(1, 16, 3, padding=1, rng=rng)
        self.second = Conv2d(16, 32, 3, padding=1, rng=rng)
        self.pool = MaxPool2d(2)
        self.output = Linear(32 * (size // 4) ** 2, 10, rng=rng)

    def forward(self, images: tl.Tensor) -> tl.Tensor:
        x = self.pool(self.first(images).relu())                     # (B, 16, S/2, S/2)
        x = self.pool(self.second(x).relu())                          # (B, 32, S/4, S/4)
        return self.output(x.flatten(1))

    def loss(self, images: Any, labels: Any) -> tl.Tensor:
        return F.cross_entropy(self.forward(tl.tensor(images)), labels)


def image_batches(batch: int, size: int, count: int, seed: int = 0) -> list[tuple]:
    """``count`` (images (batch, 1, size, size) float32, labels (batch,)) pairs."""
    rng = Rng(seed)
    return [(rng.normal(size=(batch, 1, size, size), dtype=np.float32),
             rng.integers(0, 10, size=(batch,)).astype(np.int64)) for _ in range(count)]


class RecurrentLanguageModel(Module):
    """Cases (i)-(l)'s character model: ``ids (B, T)`` → embedding (32) → one GRU or LSTM
    layer of ``hidden`` (batch first) → ``Linear`` to 28 logits at every step."""

    def __init__(self, cell: str, hidden: int, width: int = 32, seed: int = 0):
        super().__init__()
        rng = Rng(seed)
        self.embedding = Embedding(VOCABULARY, width, rng=rng)
        layer = GRU if cell == "gru" else LSTM
        self.recurrent = layer(width, hidden, batch_first=True, rng=rng)
        self.output = Linear(hidden, VOCABULARY, rng=rng)

    def forward(self, ids: Any) -> tl.Tensor:
        states, _ = self.recurrent(self.embedding(ids))                # (B, T, hidden)
        return self.output(states)                                     # (B, T, 28)

    def loss(self, ids: Any, targets: Any) -> tl.Tensor:
        logits = self.forward(ids)
        return F.cross_entropy(logits.reshape(-1, VOCABULARY), np.asarray(targets).reshape(-1))


# --------------------------------------------------------------------------------- torch side
def torch_decoder_class() -> type:
    """The torch.nn twin of ``tensorlib.nn.Decoder`` (built lazily: torch is optional)."""
    import torch
    from torch import nn
    from torch.nn import functional as tf

    class Attention(nn.Module):
        def __init__(self, channels: int, heads: int):
            super().__init__()
            self.heads = heads
            self.qkv_weight = nn.Parameter(torch.empty(3, channels, channels))
            self.qkv_bias = nn.Parameter(torch.zeros(3, channels))
            self.output = nn.Linear(channels, channels)
            mask = torch.triu(torch.ones(1024, 1024, dtype=torch.bool), diagonal=1)
            self.register_buffer("forbidden", mask, persistent=False)

        def project(self, x: Any) -> tuple:
            batch, length, channels = x.shape
            heads, width = self.heads, channels // self.heads
            weight = self.qkv_weight.permute(1, 0, 2).reshape(channels, 3 * channels)
            qkv = x @ weight + self.qkv_bias.reshape(-1)  # x @ W[i] + b[i], fused
            qkv = qkv.view(batch, length, 3, heads, width).permute(2, 0, 3, 1, 4)
            return qkv[0], qkv[1], qkv[2]  # (B, H, T, D)

        def forward(self, x: Any) -> Any:
            batch, length, channels = x.shape
            query, key, value = self.project(x)
            scores = (query @ key.transpose(-2, -1)) * (1.0 / math.sqrt(query.shape[-1]))
            scores = scores.masked_fill(self.forbidden[:length, :length], float("-inf"))
            context = torch.softmax(scores, dim=-1) @ value  # (B, H, T, D)
            merged = context.transpose(1, 2).reshape(batch, length, channels)
            return self.output(merged)

        def step(self, x: Any, cache: list) -> Any:
            """Attention of new positions ``x (B, t, C)`` over the cached keys/values."""
            batch, length, channels = x.shape
            query, key, value = self.project(x)
            if cache:
                key = torch.cat([cache[0], key], dim=2)
                value = torch.cat([cache[1], value], dim=2)
            cache[:] = [key, value]
            total = key.shape[2]
            scores = (query @ key.transpose(-2, -1)) * (1.0 / math.sqrt(query.shape[-1]))
            mask = self.forbidden[total - length:total, :total]
            scores = scores.masked_fill(mask, float("-inf"))
            context = torch.softmax(scores, dim=-1) @ value
            return self.output(context.transpose(1, 2).reshape(batch, length, channels))

    class Block(nn.Module):
        def __init__(self, channels: int, heads: int, eps: float):
            super().__init__()
            self.attention_norm = nn.LayerNorm(channels, eps=eps)
            self.attention = Attention(channels, heads)
            self.mlp_norm = nn.LayerNorm(channels, eps=eps)
            self.mlp_input = nn.Linear(channels, 4 * channels)
            self.mlp_output = nn.Linear(4 * channels, channels)

        def mlp(self, x: Any) -> Any:
            return self.mlp_output(tf.gelu(self.mlp_input(self.mlp_norm(x))))

        def forward(self, x: Any) -> Any:
            x = x + self.attention(self.attention_norm(x))
            return x + self.mlp(x)

        def step(self, x: Any, cache: list) -> Any:
            x = x + self.attention.step(self.attention_norm(x), cache)
            return x + self.mlp(x)

    class PositionalEmbedding(nn.Module):
        def __init__(self, length: int, channels: int):
            super().__init__()
            self.table = nn.Embedding(length, channels)

    class TorchDecoder(nn.Module):
        def __init__(self, config: DecoderConfig):
            super().__init__()
            c = config
            self.config = c
            self.token_embedding = nn.Embedding(c.vocabulary_size, c.channels)
            self.positional_embedding = PositionalEmbedding(c.context_length, c.channels)
            self.blocks = nn.ModuleList(Block(c.channels, c.heads, c.eps)
                                        for _ in range(c.layers))
            self.final_norm = nn.LayerNorm(c.channels, eps=c.eps)
            self.language_model_head = nn.Linear(c.channels, c.vocabulary_size)

        def forward(self, ids: Any, start: int = 0) -> Any:
            length = ids.shape[1]
            positions = self.positional_embedding.table.weight[start:start + length]
            x = self.token_embedding(ids) + positions
            for block in self.blocks:
                x = block(x)
            return self.language_model_head(self.final_norm(x))

        def loss(self, ids: Any, targets: Any) -> Any:
            logits = self.forward(ids)
            return tf.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))

        @torch.no_grad()
        def generate(self, ids: Any, max_new_tokens: int) -> Any:
            """Sample with a key/value cache: the prompt once, then one position per step."""
            caches: list[list] = [[] for _ in self.blocks]
            x, start = ids, 0
            for _ in range(max_new_tokens):
                h = self.token_embedding(x)
                h = h + self.positional_embedding.table.weight[start:start + x.shape[1]]
                for block, cache in zip(self.blocks, caches, strict=True):
                    h = block.step(h, cache)
                logits = self.language_model_head(self.final_norm(h[:, -1]))
                start += x.shape[1]
                x = torch.multinomial(torch.softmax(logits, dim=-1), 1)  # (B, 1)
                ids = torch.cat([ids, x], dim=1)
            return ids

    return TorchDecoder


def torch_mlp_class() -> type:
    import torch
    from torch import nn
    from torch.nn import functional as tf

    class TorchMLPLanguageModel(nn.Module):
        def __init__(self, context: int = 3, width: int = 10, hidden: int = 200):
            super().__init__()
            self.embedding = nn.Embedding(VOCABULARY, width)
            self.hidden = nn.Linear(context * width, hidden)
            self.output = nn.Linear(hidden, VOCABULARY)

        def forward(self, ids: Any) -> Any:
            x = self.embedding(ids).flatten(1)
            return self.output(torch.tanh(self.hidden(x)))

        def loss(self, ids: Any, targets: Any) -> Any:
            return tf.cross_entropy(self.forward(ids), targets)

    return TorchMLPLanguageModel


def torch_cnn_class() -> type:
    import torch
    from torch import nn
    from torch.nn import functional as tf

    class TorchCNNClassifier(nn.Module):
        def __init__(self, size: int):
            super().__init__()
            self.first = nn.Conv2d(1, 16, 3, padding=1)
            self.second = nn.Conv2d(16, 32, 3, padding=1)
            self.pool = nn.MaxPool2d(2)
            self.output = nn.Linear(32 * (size // 4) ** 2, 10)

        def forward(self, images: Any) -> Any:
            x = self.pool(torch.relu(self.first(images)))
            x = self.pool(torch.relu(self.second(x)))
            return self.output(x.flatten(1))

        def loss(self, images: Any, labels: Any) -> Any:
            return tf.cross_entropy(self.forward(images), labels)

    return TorchCNNClassifier


def torch_recurrent_class() -> type:
    import torch
    from torch import nn
    from torch.nn import functional as tf

    class TorchRecurrentLanguageModel(nn.Module):
        def __init__(self, cell: str, hidden: int, width: int = 32):
            super().__init__()
            self.embedding = nn.Embedding(VOCABULARY, width)
            layer = nn.GRU if cell == "gru" else nn.LSTM
            self.recurrent = layer(width, hidden, batch_first=True)
            self.output = nn.Linear(hidden, VOCABULARY)

        def loss(self, ids: Any, targets: Any) -> Any:
            states, _ = self.recurrent(self.embedding(torch.as_tensor(ids)))
            logits = self.output(states)
            return tf.cross_entropy(logits.reshape(-1, VOCABULARY),
                                    torch.as_tensor(targets).reshape(-1))

    return TorchRecurrentLanguageModel


def copy_weights_to_torch(source: Module, target: Any) -> None:
    """Copy every parameter of a tensorlib module into the torch twin with the same names."""
    import torch

    theirs = dict(target.named_parameters())
    ours = dict(source.named_parameters())
    if set(theirs) != set(ours):
        raise KeyError(f"parameter names differ: only tensorlib {sorted(set(ours) - set(theirs))}, "
                       f"only torch {sorted(set(theirs) - set(ours))}")
    with torch.no_grad():
        for name, parameter in ours.items():
            theirs[name].copy_(torch.from_numpy(np.array(parameter.data)))
