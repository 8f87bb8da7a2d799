"""Rotary position embedding as a module: the cos and sin tables of a head width, kept as
buffers that are not saved, and applied to queries or keys (``tensorlib.nn.functional``'s
:func:`~tensorlib.nn.functional.apply_rotary`, Llama's half-split pairing)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorlib.engine import validation
from tensorlib.engine.tensor import Tensor
from tensorlib.nn import functional as F
from tensorlib.nn.module import Module

__all__ = ["RotaryEmbedding"]


class RotaryEmbedding(Module):
    """Turns each position's feature pairs of ``x (..., T, head_dim)`` by ``position ·
    theta^(-2i/head_dim)``, for positions ``offset`` to ``offset + T - 1`` (``offset``: the
    positions already in a KV cache). The tables cover ``max_positions`` positions; they are
    non-persistent buffers (not in the state dict), rebuilt from the three numbers."""

    def __init__(self, head_dim: int, max_positions: int = 2048, theta: float = 10000.0,
                 dtype: Any = np.float32):
        super().__init__()
        self.head_dim = validation.dimension(head_dim, "RotaryEmbedding head_dim")
        self.max_positions = validation.dimension(max_positions, "RotaryEmbedding max_positions")
        self.theta = validation.positive(theta, "RotaryEmbedding theta")
        cos, sin = F.rotary_tables(self.max_positions, self.head_dim, self.theta,
                                   dtype=validation.float_dtype(dtype))
        self.register_buffer("cos", cos, persistent=False)  # (max_positions, head_dim)
        self.register_buffer("sin", sin, persistent=False)

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        offset = validation.integer(offset, "RotaryEmbedding offset", minimum=0)
        length = x.shape[-2] if isinstance(x, Tensor) and x.ndim >= 2 else 0
        if offset + length > self.max_positions:
            raise ValueError(f"RotaryEmbedding covers {self.max_positions} positions; positions "
                             f"{offset} to {offset + length - 1} were asked for")
        window = slice(offset, offset + length)
        return F.apply_rotary(x, self.cos[window], self.sin[window])

    def extra_repr(self) -> str:
        return f"head_dim={self.head_dim}, max_positions={self.max_positions}, theta={self.theta}"
