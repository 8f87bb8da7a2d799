"""The gated feed-forward of today's decoders: SwiGLU (Shazeer, 2020; Llama's MLP)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorlib.engine import validation
from tensorlib.engine.splitmix64 import Rng, resolve_rng
from tensorlib.engine.tensor import Tensor
from tensorlib.nn import functional as F
from tensorlib.nn.layers import Linear
from tensorlib.nn.module import Module

__all__ = ["SwiGLU"]


class SwiGLU(Module):
    """``w2(silu(w1(x)) * w3(x))``: ``channels → hidden`` twice (the gate ``w1`` and the
    value ``w3``), multiplied, then ``hidden → channels`` (``w2``). Any ``hidden`` width;
    Llama's is about 8/3 · channels. No biases unless ``bias``. In Hugging Face's Llama the
    three are ``gate_proj``, ``down_proj`` and ``up_proj``."""

    def __init__(self, channels: int, hidden: int, bias: bool = False,
                 weight_init: str = "xavier_uniform", rng: Rng | None = None,
                 dtype: Any = np.float32):
        super().__init__()
        self.channels = validation.dimension(channels, "SwiGLU channels")
        self.hidden = validation.dimension(hidden, "SwiGLU hidden")
        generator = resolve_rng(rng)
        self.w1 = Linear(self.channels, self.hidden, bias, weight_init, rng=generator,
                         dtype=dtype)
        self.w3 = Linear(self.channels, self.hidden, bias, weight_init, rng=generator,
                         dtype=dtype)
        self.w2 = Linear(self.hidden, self.channels, bias, weight_init, rng=generator,
                         dtype=dtype)

    def forward(self, x: Tensor) -> Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))                # (..., C)

    def extra_repr(self) -> str:
        return f"channels={self.channels}, hidden={self.hidden}"
