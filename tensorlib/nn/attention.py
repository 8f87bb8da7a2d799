"""Causal multi-head self-attention with a fused Q/K/V projection."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tensorlib.nn import functional as F
from tensorlib.nn.layers import (
    Dropout,
    Linear,
    check_float_dtype,
    check_input,
    check_positive_int,
    resolve_rng,
)
from tensorlib.nn.module import Module, Parameter
from tensorlib.nn.rng import Rng
from tensorlib.tensor import Tensor

__all__ = ["MultiheadAttention"]


class MultiheadAttention(Module):
    """Decoder-style causal self-attention: position t attends to positions 0..t.

    Parameters: ``qkv_weight (3, C, C)`` (query, key, value projections, applied as
    ``x @ qkv_weight[i] + qkv_bias[i]`` without a transpose; initialized
    ``U(-sqrt(3/C), sqrt(3/C))``), ``qkv_bias (3, C)`` (zero), and the children ``output``
    (Linear C → C) and ``output_dropout`` (Dropout). Heads split the channel axis into
    ``(H, D)``; scores are scaled by ``1/sqrt(D)`` before the causal softmax.
    """

    def __init__(self, channels: int, heads: int, dropout: float = 0.0, rng: Rng | None = None,
                 dtype: Any = np.float32):
        super().__init__()
        self.channels = check_positive_int(channels, "channels")
        self.heads = check_positive_int(heads, "heads")
        if self.channels % self.heads:
            raise ValueError(f"channels ({self.channels}) must be divisible by heads "
                             f"({self.heads})")
        self.head_width = self.channels // self.heads
        F.check_probability(dropout)
        dtype = check_float_dtype(dtype)
        generator = resolve_rng(rng)
        bound = math.sqrt(3.0 / self.channels)
        shape = (3, self.channels, self.channels)
        self.qkv_weight = Parameter(generator.uniform(-bound, bound, size=shape).astype(dtype))
        self.qkv_bias = Parameter(np.zeros((3, self.channels), dtype=dtype))
        self.output = Linear(self.channels, self.channels, rng=generator, dtype=dtype)
        self.output_dropout = Dropout(dropout, rng=rng)

    def forward(self, x: Tensor, return_attention: bool = False) -> Any:
        """``x (B, T, C)`` → ``(B, T, C)``; with ``return_attention`` also the attention
        probabilities ``(B, H, T, T)``."""
        check_input(x, "MultiheadAttention", self.channels, ndim=3)
        batch, length, channels = x.shape
        heads, width = self.heads, self.head_width
        # All three projections in one (B*T, C) @ (C, 3C) product: column block i is W[i].
        fused_weight = self.qkv_weight.permute(1, 0, 2).reshape(channels, 3 * channels)
        qkv = x.reshape(batch * length, channels) @ fused_weight + self.qkv_bias.reshape(-1)
        qkv = qkv.reshape(batch, length, 3, heads, width).permute(2, 0, 3, 1, 4)  # (3, B, H, T, D)
        query, key, value = qkv[0], qkv[1], qkv[2]  # (B, H, T, D) each
        scores = query @ key.transpose()  # (B, H, T, T)
        probabilities = F.causal_softmax(scores, scale=1.0 / math.sqrt(width))  # (B, H, T, T)
        context = probabilities @ value  # (B, H, T, D)
        merged = context.permute(0, 2, 1, 3).reshape(batch, length, channels)  # (B, T, C)
        out = self.output_dropout(self.output(merged))
        return (out, probabilities) if return_attention else out

    def extra_repr(self) -> str:
        return f"channels={self.channels}, heads={self.heads}"
