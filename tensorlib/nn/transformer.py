"""A GPT-style decoder: pre-norm blocks of causal attention and a GELU MLP."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np

from tensorlib.autograd import no_grad
from tensorlib.nn import functional as F
from tensorlib.nn.attention import MultiheadAttention
from tensorlib.nn.layers import (
    Dropout,
    Embedding,
    LayerNorm,
    Linear,
    PositionalEmbedding,
    check_float_dtype,
    check_input,
    check_positive_int,
    resolve_rng,
)
from tensorlib.nn.module import Module, ModuleList
from tensorlib.nn.rng import Rng
from tensorlib.tensor import Tensor

__all__ = ["Decoder", "DecoderBlock", "DecoderConfig"]


class DecoderBlock(Module):
    """One pre-norm transformer block on ``(B, T, C)``::

        x = x + attention(attention_norm(x))
        x = x + mlp_dropout(mlp_output(gelu(mlp_input(mlp_norm(x)))))

    Children, in order: ``attention_norm, attention, mlp_norm, mlp_input (C → 4C),
    mlp_output (4C → C), mlp_dropout``. GELU is the exact (erf) form.
    """

    def __init__(self, channels: int, heads: int, dropout: float = 0.0, eps: float = 1e-5,
                 rng: Rng | None = None, dtype: Any = np.float32):
        super().__init__()
        self.channels = check_positive_int(channels, "channels")
        check_positive_int(heads, "heads")
        if self.channels % heads:
            raise ValueError(f"channels ({self.channels}) must be divisible by heads ({heads})")
        F.check_probability(dropout)
        dtype = check_float_dtype(dtype)
        generator = resolve_rng(rng)  # init draws; the dropouts keep ``rng`` (None: default)
        hidden = 4 * self.channels
        self.attention_norm = LayerNorm(self.channels, eps, dtype=dtype)
        self.attention = MultiheadAttention(self.channels, heads, dropout, rng=rng, dtype=dtype)
        self.mlp_norm = LayerNorm(self.channels, eps, dtype=dtype)
        self.mlp_input = Linear(self.channels, hidden, rng=generator, dtype=dtype)
        self.mlp_output = Linear(hidden, self.channels, rng=generator, dtype=dtype)
        self.mlp_dropout = Dropout(dropout, rng=rng)

    def forward(self, x: Tensor) -> Tensor:
        check_input(x, "DecoderBlock", self.channels, ndim=3)
        x = x + self.attention(self.attention_norm(x))
        hidden = F.gelu(self.mlp_input(self.mlp_norm(x)))  # (B, T, 4C)
        return x + self.mlp_dropout(self.mlp_output(hidden))


@dataclass(frozen=True)
class DecoderConfig:
    """The shape of a Decoder. Validated on construction: positive integer sizes,
    ``channels % heads == 0``, ``0 <= dropout < 1`` and ``eps > 0``."""

    vocabulary_size: int
    context_length: int
    channels: int
    heads: int
    layers: int
    dropout: float = 0.0
    eps: float = 1e-5

    def __post_init__(self) -> None:
        for name in ("vocabulary_size", "context_length", "channels", "heads", "layers"):
            check_positive_int(getattr(self, name), f"DecoderConfig.{name}")
        if self.channels % self.heads:
            raise ValueError(f"DecoderConfig: channels ({self.channels}) must be divisible by "
                             f"heads ({self.heads})")
        if isinstance(self.dropout, bool) or not isinstance(self.dropout, numbers.Real) \
                or not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"DecoderConfig.dropout must be in [0, 1), got {self.dropout!r}")
        if isinstance(self.eps, bool) or not isinstance(self.eps, numbers.Real) \
                or not 0.0 < self.eps < math.inf:
            raise ValueError(f"DecoderConfig.eps must be a finite number > 0, got {self.eps!r}")


class Decoder(Module):
    """A GPT-style language model: token ids ``(B, T)`` → next-token logits ``(B, T, V)``.

    Children: ``token_embedding, positional_embedding, blocks`` (a ModuleList of
    DecoderBlocks), ``final_norm, language_model_head`` (Linear C → V with bias).
    """

    def __init__(self, config: DecoderConfig, rng: Rng | None = None, dtype: Any = np.float32):
        super().__init__()
        if not isinstance(config, DecoderConfig):
            raise TypeError(f"Decoder needs a DecoderConfig, got {type(config).__name__}")
        dtype = check_float_dtype(dtype)
        generator = resolve_rng(rng)
        self.config = config
        c = config
        self.token_embedding = Embedding(c.vocabulary_size, c.channels, rng=generator,
                                         dtype=dtype)
        self.positional_embedding = PositionalEmbedding(c.context_length, c.channels,
                                                        rng=generator, dtype=dtype)
        self.blocks = ModuleList(
            DecoderBlock(c.channels, c.heads, c.dropout, c.eps, rng=rng, dtype=dtype)
            for _ in range(c.layers)
        )
        self.final_norm = LayerNorm(c.channels, c.eps, dtype=dtype)
        self.language_model_head = Linear(c.channels, c.vocabulary_size, rng=generator,
                                          dtype=dtype)

    def _token_ids(self, token_ids: Any, what: str = "token id") -> np.ndarray:
        ids = F.token_ids(token_ids, self.config.vocabulary_size, what)
        if ids.ndim != 2:
            raise ValueError(f"Decoder expects {what}s of shape (B, T), got shape {ids.shape}")
        if ids.shape[0] == 0 or ids.shape[1] == 0:
            raise ValueError(f"Decoder needs at least one sequence of at least one token, got "
                             f"shape {ids.shape}")
        return ids

    def forward(self, token_ids: Any) -> Tensor:
        """Integer ids ``(B, T)`` with ``T <= context_length`` → logits ``(B, T, V)``."""
        ids = self._token_ids(token_ids)
        if ids.shape[1] > self.config.context_length:
            raise ValueError(f"sequence length {ids.shape[1]} exceeds the context length "
                             f"{self.config.context_length}")
        x = self.token_embedding(ids)  # (B, T, C)
        x = self.positional_embedding(x)  # (B, T, C)
        for block in self.blocks:
            x = block(x)
        return self.language_model_head(self.final_norm(x))  # (B, T, V)

    def loss(self, token_ids: Any, targets: Any) -> Tensor:
        """Mean cross-entropy of ``targets (B, T)`` (the next token at each position)."""
        ids = self._token_ids(token_ids)
        target_ids = self._token_ids(targets, "target")
        if target_ids.shape != ids.shape:
            raise ValueError(f"targets of shape {target_ids.shape} do not match token ids of "
                             f"shape {ids.shape}")
        return F.cross_entropy(self.forward(ids), target_ids)

    def generate(self, token_ids: Any, max_new_tokens: int, temperature: float = 1.0,
                 top_k: int | None = None, rng: Rng | None = None) -> np.ndarray:
        """Sample ``max_new_tokens`` tokens after each prompt row of ``token_ids (B, T)``.

        Runs in eval mode under ``no_grad`` (each module's previous mode is restored after),
        feeding at most the last ``context_length`` tokens. Logits are divided by
        ``temperature`` (> 0); with ``top_k`` only the k largest logits of each row can be
        drawn (ties with the k-th value are kept). Samples come from
        ``rng.sample_categorical`` (the default generator when ``rng`` is None), so the
        result is determined by the generator's state. Returns int64 ``(B, T + max_new)``.
        """
        ids = self._token_ids(token_ids)
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, numbers.Integral) \
                or max_new_tokens < 0:
            raise ValueError(f"max_new_tokens must be a non-negative integer, "
                             f"got {max_new_tokens!r}")
        if isinstance(temperature, bool) or not isinstance(temperature, numbers.Real) \
                or not 0.0 < temperature < math.inf:
            raise ValueError(f"temperature must be a finite number > 0, got {temperature!r}")
        vocabulary = self.config.vocabulary_size
        if top_k is not None and (isinstance(top_k, bool)
                                  or not isinstance(top_k, numbers.Integral)
                                  or not 1 <= top_k <= vocabulary):
            raise ValueError(f"top_k must be None or an integer in [1, {vocabulary}], "
                             f"got {top_k!r}")
        generator = resolve_rng(rng)
        modes = [(module, module.training) for module in self.modules()]
        self.eval()
        try:
            with no_grad():
                for _ in range(int(max_new_tokens)):
                    context = ids[:, -self.config.context_length:]  # (B, <= L)
                    logits = self.forward(context).data[:, -1, :]  # (B, V)
                    logits = np.asarray(logits, dtype=np.float64) / float(temperature)
                    if top_k is not None and top_k < vocabulary:
                        kth = np.partition(logits, -top_k, axis=-1)[:, [-top_k]]  # (B, 1)
                        logits = np.where(logits < kth, -np.inf, logits)
                    weights = np.exp(logits - logits.max(axis=-1, keepdims=True))  # (B, V)
                    next_ids = generator.sample_categorical(weights)  # (B,)
                    ids = np.concatenate([ids, next_ids[:, None]], axis=1)
        finally:
            for module, mode in modes:
                module.training = mode
        return ids

    def extra_repr(self) -> str:
        c = self.config
        return (f"vocabulary_size={c.vocabulary_size}, context_length={c.context_length}, "
                f"channels={c.channels}, heads={c.heads}, layers={c.layers}")
