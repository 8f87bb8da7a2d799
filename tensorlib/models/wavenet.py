"""A WaveNet-style character model: the context merged in pairs, level by level.

As in makemore part 5 (after van den Oord et al., 2016, without the dilated convolutions'
sliding), each level puts ``merge`` neighbouring positions side by side and mixes them with
a Linear layer, a BatchNorm and tanh, so a context of 8 characters becomes 4 pairs, then 2
quadruples, then 1 summary of all 8. Shapes for the defaults (B names, context 8)::

    ids (B, 8) -> embedding (B, 8, 24)
    level 0: merge -> (B, 4, 48)  -> Linear, BatchNorm, tanh -> (B, 4, 128)
    level 1: merge -> (B, 2, 256) -> ...                      -> (B, 2, 128)
    level 2: merge -> (B, 1, 256) -> ...                      -> (B, 1, 128)
    flatten -> (B, 128) -> head -> logits (B, 27)

The start is the principled one of notebook 12a: embedding rows N(0, 1), each level's
weights N(0, (5/3)^2 / fan_in) (tanh's gain), the head's N(0, 0.1^2 / fan_in) with a zero
bias, so the first loss is near ln(vocabulary size).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tensorlib.engine import validation
from tensorlib.engine.autograd import no_grad
from tensorlib.engine.splitmix64 import Rng
from tensorlib.engine.tensor import Tensor
from tensorlib.nn import functional as F
from tensorlib.nn.container import ModuleList
from tensorlib.nn.layers import (
    BatchNorm1d,
    Embedding,
    Flatten,
    FlattenConsecutive,
    Linear,
    Tanh,
    resolve_rng,
)
from tensorlib.nn.module import Module

__all__ = ["WaveNet", "WaveNetLevel"]

TANH_GAIN = 5.0 / 3.0


class WaveNetLevel(Module):
    """Merge ``merge`` neighbours, then Linear (no bias), BatchNorm over the channels and
    tanh: ``(B, T, width)`` → ``(B, T / merge, hidden)``."""

    def __init__(self, width: int, hidden: int, merge: int = 2, rng: Rng | None = None,
                 dtype: Any = np.float32):
        super().__init__()
        self.merge = FlattenConsecutive(merge)
        self.linear = Linear(merge * width, hidden, bias=False, rng=rng, dtype=dtype)
        self.norm = BatchNorm1d(hidden, dtype=dtype)
        self.activation = Tanh()

    def forward(self, x: Tensor) -> Tensor:
        h = self.linear(self.merge(x))                         # (B, T/merge, hidden)
        h = self.norm(h.transpose(1, 2)).transpose(1, 2)       # BatchNorm1d wants (B, C, T)
        return self.activation(h)


class WaveNet(Module):
    """Next-character logits from a context of ``context_length`` ids, merged ``merge`` at a
    time (``context_length`` must be a power of ``merge``): ``ids (B, T)`` → ``(B, V)``."""

    def __init__(self, vocabulary_size: int, context_length: int = 8, embedding_width: int = 24,
                 hidden: int = 128, merge: int = 2, rng: Rng | None = None,
                 dtype: Any = np.float32):
        super().__init__()
        self.vocabulary_size = validation.positive_integer(vocabulary_size, "vocabulary_size")
        self.context_length = validation.positive_integer(context_length, "context_length")
        merge = validation.positive_integer(merge, "merge")
        levels = round(math.log(self.context_length, merge)) if merge > 1 else 0
        if merge < 2 or merge**levels != self.context_length:
            raise ValueError(f"context_length must be a power of merge (>= 2); got "
                             f"context_length={context_length} and merge={merge}")
        generator = resolve_rng(rng)
        self.embedding = Embedding(self.vocabulary_size, embedding_width, rng=generator,
                                   dtype=dtype)
        widths = [embedding_width] + [hidden] * levels
        self.levels = ModuleList(WaveNetLevel(width, hidden, merge, rng=generator, dtype=dtype)
                                 for width in widths[:-1])
        self.flatten = Flatten()
        self.head = Linear(hidden, self.vocabulary_size, rng=generator, dtype=dtype)
        with no_grad():  # the principled start (module docstring)
            self.embedding.weight.copy_(generator.normal(size=self.embedding.weight.shape))
            for level in self.levels:
                fan_in = level.linear.in_features
                level.linear.weight.copy_(generator.normal(
                    0.0, TANH_GAIN / math.sqrt(fan_in), size=level.linear.weight.shape))
            self.head.weight.copy_(generator.normal(0.0, 0.1 / math.sqrt(hidden),
                                                    size=self.head.weight.shape))

    def forward(self, ids: Any) -> Tensor:
        """``ids (B, context_length)`` → logits ``(B, vocabulary_size)``."""
        x = self.embedding(ids)                                # (B, T, embedding_width)
        if x.ndim != 3 or x.shape[1] != self.context_length:
            raise ValueError(f"WaveNet expects ids of shape (B, {self.context_length}), got "
                             f"{x.shape[:-1]}")
        for level in self.levels:
            x = level(x)
        return self.head(self.flatten(x))

    def loss(self, ids: Any, targets: Any) -> Tensor:
        """Mean cross-entropy of the next character ``targets (B,)``."""
        return F.cross_entropy(self(ids), targets)

    def extra_repr(self) -> str:
        return f"vocabulary_size={self.vocabulary_size}, context_length={self.context_length}"
