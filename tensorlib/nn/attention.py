"""Causal multi-head self-attention with a fused Q/K/V projection, and its key/value cache."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tensorlib.engine import validation
from tensorlib.engine.backend import array_module
from tensorlib.engine.splitmix64 import Rng
from tensorlib.engine.tensor import Tensor
from tensorlib.nn import functional as F
from tensorlib.nn.layers import (
    Dropout,
    HookPoint,
    Linear,
    check_input,
    resolve_rng,
)
from tensorlib.nn.module import Module
from tensorlib.nn.parameter import Parameter

__all__ = ["KVCache", "MultiheadAttention"]


class KVCache:
    """The keys and values ``(B, H, T, D)`` one attention layer has computed so far.

    Storage for ``capacity`` positions is allocated at the first :meth:`append` (with that
    call's batch, heads, width, dtype and array module); ``length`` counts the positions
    filled. Caches are for inference: they hold raw arrays, so no gradient flows through them.
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = validation.positive_integer(capacity, "KVCache capacity")
        self.length = 0
        self.keys: Any = None  # (B, H, capacity, D) once allocated
        self.values: Any = None

    def append(self, keys: Any, values: Any) -> tuple[Any, Any]:
        """Store ``keys`` and ``values`` ``(B, H, T_new, D)`` after the cached positions and
        return views of everything cached, ``(B, H, length, D)`` each.

        Raises ValueError (and stores nothing) when the shapes disagree with each other or
        with what is cached, or when the new positions would not fit in ``capacity``.
        """
        if keys.shape != values.shape or keys.ndim != 4:
            raise ValueError(f"KVCache.append needs keys and values of one (B, H, T, D) shape, "
                             f"got {keys.shape} and {values.shape}")
        batch, heads, new, width = keys.shape
        if self.keys is not None:
            held = (self.keys.shape[0], self.keys.shape[1], self.keys.shape[3])  # (B, H, D)
            if held != (batch, heads, width) or keys.dtype != self.keys.dtype:
                raise ValueError(f"KVCache holds (B, H, D) = {held} of {self.keys.dtype}, got "
                                 f"keys of shape {keys.shape} and dtype {keys.dtype}")
        if self.length + new > self.capacity:
            raise ValueError(f"KVCache is full: {self.length} cached + {new} new positions "
                             f"exceed the capacity {self.capacity}")
        if self.keys is None:
            xp = array_module(keys)
            self.keys = xp.empty((batch, heads, self.capacity, width), dtype=keys.dtype)
            self.values = xp.empty_like(self.keys)
        end = self.length + new
        self.keys[:, :, self.length:end] = keys
        self.values[:, :, self.length:end] = values
        self.length = end
        return self.keys[:, :, :end], self.values[:, :, :end]

    def reset(self) -> None:
        """Forget every cached position (the storage is kept for reuse)."""
        self.length = 0

    def __repr__(self) -> str:
        shape = None if self.keys is None else tuple(self.keys.shape)
        return f"KVCache(length={self.length}, capacity={self.capacity}, storage={shape})"


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
        self.channels = validation.positive_integer(channels, "channels")
        self.heads = validation.positive_integer(heads, "heads")
        validation.heads_divide(self.channels, self.heads)
        self.head_width = self.channels // self.heads
        validation.probability(dropout, "dropout")
        dtype = validation.float_dtype(dtype)
        generator = resolve_rng(rng)
        bound = math.sqrt(3.0 / self.channels)
        shape = (3, self.channels, self.channels)
        self.qkv_weight = Parameter(generator.uniform(-bound, bound, size=shape).astype(dtype))
        self.qkv_bias = Parameter(np.zeros((3, self.channels), dtype=dtype))
        self.output = Linear(self.channels, self.channels, rng=generator, dtype=dtype)
        self.output_dropout = Dropout(dropout, rng=rng)
        self.probabilities = HookPoint()  # (B, H, T, T_total), computed only when observed

    def forward(self, x: Tensor, return_attention: bool = False,
                cache: KVCache | None = None) -> Any:
        """``x (B, T, C)`` → ``(B, T, C)``; with ``return_attention`` also the attention
        probabilities ``(B, H, T, T_total)``.

        Without a cache ``T_total = T``. With a :class:`KVCache` (inference only: no tensor
        involved may require grad) the new keys and values are appended to it, and the ``T``
        new queries, at positions ``length .. length + T - 1`` of the cached sequence, attend
        causally over all ``T_total = length + T`` cached positions.
        """
        check_input(x, "MultiheadAttention", self.channels, ndim=3)
        batch, length, channels = x.shape
        if length == 0:
            raise ValueError(f"MultiheadAttention needs at least one position, got input "
                             f"shape {x.shape}")
        heads, width = self.heads, self.head_width
        # All three projections as one linear layer: row block i of the (3C, C) weight is W[i]ᵀ.
        fused_weight = self.qkv_weight.permute(0, 2, 1).reshape(3 * channels, channels)
        qkv = F.linear(x, fused_weight, self.qkv_bias.reshape(-1))  # (B, T, 3C)
        if cache is None and not return_attention and not self.probabilities.observed:
            merged = F.causal_attention(qkv, heads)  # (B, T, C): the fused attention core
            return self.output_dropout(self.output(merged))
        query, key, value = F.split_heads(qkv, heads)  # (B, H, T, D) each
        start = 0
        if cache is not None:
            key, value, start = self._extend_cache(cache, key, value)  # (B, H, T_total, D)
        context, probabilities = F.attend(query, key, value, 1.0 / math.sqrt(width),
                                          offset=start, observe=self.probabilities)
        out = self.output_dropout(self.output(F.merge_heads(context)))  # (B, T, C)
        return (out, probabilities) if return_attention else out

    @staticmethod
    def _extend_cache(cache: KVCache, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor, int]:
        """Append the new keys/values to ``cache``; return all cached ones and the position
        of the first new query."""
        if not isinstance(cache, KVCache):
            raise TypeError(f"cache must be a KVCache or None, got {type(cache).__name__}")
        if key.requires_grad or value.requires_grad:
            raise RuntimeError("a KVCache holds no autograd history: run cached attention "
                               "under tensorlib.no_grad()")
        start = cache.length
        keys, values = cache.append(key.numpy(), value.numpy())  # (B, H, T_total, D) views
        return Tensor(keys), Tensor(values), start

    def extra_repr(self) -> str:
        return f"channels={self.channels}, heads={self.heads}"
