"""Causal self-attention and its key/value cache: :class:`MultiheadAttention` (a fused Q/K/V
projection, as the workbook builds it) and :class:`GroupedQueryAttention` (separate query,
key and value projections, with fewer key/value heads than query heads, as Llama has it).
Both can turn queries and keys by a :class:`~tensorlib.nn.RotaryEmbedding` and drop
attention probabilities."""

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
from tensorlib.nn.positions import RotaryEmbedding

__all__ = ["GroupedQueryAttention", "KVCache", "MultiheadAttention"]


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


class _CausalSelfAttention(Module):
    """What both attentions share: the heads, the rotary positions, the cache, the causal
    softmax over ``1/sqrt(D)``-scaled scores, the dropout of its probabilities, the output
    projection. A subclass makes its parameters and says how ``x`` becomes queries, keys
    and values (:meth:`project`)."""

    def _set_shape(self, channels: int, heads: int, kv_heads: int, attention_dropout: float,
                   rng: Rng | None) -> None:
        """Check and keep the sizes (nothing registered: the subclass registers its
        parameters first, in the order their initial values are drawn)."""
        self.channels = validation.positive_integer(channels, "channels")
        self.heads = validation.positive_integer(heads, "heads")
        validation.heads_divide(self.channels, self.heads)
        self.kv_heads = validation.positive_integer(kv_heads, "kv_heads")
        if self.heads % self.kv_heads:
            raise ValueError(f"kv_heads ({self.kv_heads}) must divide heads ({self.heads}): "
                             "each key/value head serves the same number of query heads")
        self.head_width = self.channels // self.heads
        self.attention_dropout = validation.probability(attention_dropout, "attention_dropout")
        if rng is not None and not isinstance(rng, Rng):
            raise TypeError(f"rng must be a tensorlib.Rng or None, got {type(rng).__name__}")
        self.rng = rng  # the attention dropout's generator (None: the default one)

    def _register_rest(self, dropout: float, bias: bool, rotary: RotaryEmbedding | None,
                       generator: Rng, dtype: Any) -> None:
        """Register what follows the projections: ``output``, ``output_dropout``,
        ``probabilities`` and ``rotary`` (a child when given, else None)."""
        if rotary is not None and (not isinstance(rotary, RotaryEmbedding)
                                   or rotary.head_dim != self.head_width):
            raise ValueError(f"rotary must be a RotaryEmbedding of head_dim {self.head_width} "
                             f"(channels / heads), got {rotary!r}")
        self.output = Linear(self.channels, self.channels, bias, rng=generator, dtype=dtype)
        self.output_dropout = Dropout(dropout, rng=self.rng)
        self.probabilities = HookPoint()  # (B, H, T, T_total), computed only when observed
        self.rotary = rotary

    def project(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """``x (B, T, C)`` → query ``(B, H, T, D)``, key and value ``(B, kv_heads, T, D)``."""
        raise NotImplementedError

    def _fused_core(self, x: Tensor) -> Tensor | None:
        """The merged heads ``(B, T, C)`` from one fused op, where the subclass has one and
        nothing asks for the steps (a cache, the probabilities, rotation, dropout)."""
        return None

    def forward(self, x: Tensor, return_attention: bool = False,
                cache: KVCache | None = None) -> Any:
        """``x (B, T, C)`` → ``(B, T, C)``; with ``return_attention`` also the attention
        probabilities ``(B, H, T, T_total)`` (before their dropout).

        Without a cache ``T_total = T``. With a :class:`KVCache` (inference only: no tensor
        involved may require grad) the new keys and values (rotated, with ``kv_heads``
        heads) are appended to it, and the ``T`` new queries, at positions ``length ..
        length + T - 1`` of the cached sequence, attend causally over all ``T_total =
        length + T`` cached positions.
        """
        check_input(x, type(self).__name__, self.channels, ndim=3)
        if x.shape[1] == 0:
            raise ValueError(f"{type(self).__name__} needs at least one position, got input "
                             f"shape {x.shape}")
        if cache is None and not return_attention and not self.probabilities.observed:
            merged = self._fused_core(x)
            if merged is not None:
                return self.output_dropout(self.output(merged))
        if cache is not None:
            _check_cache(cache)
        query, key, value = self.project(x)  # (B, H, T, D), (B, kv_heads, T, D) twice
        start = 0 if cache is None else cache.length
        if self.rotary is not None:  # positions start .. start + T - 1
            query, key = self.rotary(query, offset=start), self.rotary(key, offset=start)
        if cache is not None:
            key, value = _extend_cache(cache, key, value)  # (B, kv_heads, T_total, D)
        if self.kv_heads != self.heads:  # each key/value head serves heads/kv_heads queries
            key, value = (F.repeat_heads(t, self.heads // self.kv_heads) for t in (key, value))
        scores = query @ key.transpose()  # (B, H, T, T_total)
        probabilities = self.probabilities(
            F.causal_softmax(scores, 1.0 / math.sqrt(self.head_width), start))
        weights = probabilities  # dropped in training only; no call (and no check) otherwise
        if self.training and self.attention_dropout > 0.0:
            weights = F.dropout(probabilities, self.attention_dropout, rng=self.rng)
        out = self.output_dropout(self.output(F.merge_heads(weights @ value)))  # (B, T, C)
        return (out, probabilities) if return_attention else out

    def extra_repr(self) -> str:
        text = f"channels={self.channels}, heads={self.heads}"
        if self.kv_heads != self.heads or type(self) is not MultiheadAttention:
            text += f", kv_heads={self.kv_heads}"
        if self.output.bias is None:
            text += ", bias=False"
        if self.attention_dropout:
            text += f", attention_dropout={self.attention_dropout}"
        return text


class MultiheadAttention(_CausalSelfAttention):
    """Decoder-style causal self-attention: position t attends to positions 0..t.

    Parameters: ``qkv_weight (3, C, C)`` (query, key, value projections, applied as
    ``x @ qkv_weight[i] + qkv_bias[i]`` without a transpose; initialized
    ``U(-sqrt(3/C), sqrt(3/C))``), ``qkv_bias (3, C)`` (zero; none with ``bias=False``),
    and the children ``output`` (Linear C → C) and ``output_dropout`` (Dropout of the
    result, probability ``dropout``), and ``rotary`` when given. Heads split the channel
    axis into ``(H, D)``; scores are scaled by ``1/sqrt(D)`` before the causal softmax,
    whose probabilities are dropped with probability ``attention_dropout`` in training.
    """

    def __init__(self, channels: int, heads: int, dropout: float = 0.0, rng: Rng | None = None,
                 dtype: Any = np.float32, *, bias: bool = True, attention_dropout: float = 0.0,
                 rotary: RotaryEmbedding | None = None):
        super().__init__()
        self._set_shape(channels, heads, heads, attention_dropout, rng)
        validation.probability(dropout, "dropout")
        dtype = validation.float_dtype(dtype)
        generator = resolve_rng(rng)
        bound = math.sqrt(3.0 / self.channels)
        shape = (3, self.channels, self.channels)
        self.qkv_weight = Parameter(generator.uniform(-bound, bound, size=shape).astype(dtype))
        self.qkv_bias = Parameter(np.zeros((3, self.channels), dtype=dtype)) \
            if validation.boolean(bias, "bias") else None
        self._register_rest(dropout, bias, rotary, generator, dtype)

    def _fused_qkv(self, x: Tensor) -> Tensor:
        """All three projections as one linear layer, ``(B, T, 3C)``: row block i of the
        ``(3C, C)`` weight is ``W[i]ᵀ``."""
        channels = self.channels
        fused_weight = self.qkv_weight.permute(0, 2, 1).reshape(3 * channels, channels)
        bias = None if self.qkv_bias is None else self.qkv_bias.reshape(-1)
        return F.linear(x, fused_weight, bias)

    def project(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        return F.split_heads(self._fused_qkv(x), self.heads)  # (B, H, T, D) each

    def _fused_core(self, x: Tensor) -> Tensor | None:
        if self.rotary is not None or (self.training and self.attention_dropout > 0.0):
            return None
        return F.causal_attention(self._fused_qkv(x), self.heads)  # (B, T, C)


class GroupedQueryAttention(_CausalSelfAttention):
    """Causal self-attention whose ``kv_heads`` key/value heads each serve ``heads /
    kv_heads`` query heads in turn (grouped-query attention; ``kv_heads = 1`` is
    multi-query attention, ``kv_heads = heads`` full multi-head attention). The cache holds
    only the ``kv_heads`` heads.

    Children: ``query`` (Linear C → C), ``key`` and ``value`` (Linear C → kv_heads · D),
    ``output`` (Linear C → C), ``output_dropout``, and ``rotary`` when given: Hugging Face
    Llama's ``q_proj``, ``k_proj``, ``v_proj`` and ``o_proj``. Everything else is as
    :class:`MultiheadAttention`.
    """

    def __init__(self, channels: int, heads: int, kv_heads: int, dropout: float = 0.0,
                 rng: Rng | None = None, dtype: Any = np.float32, *, bias: bool = True,
                 attention_dropout: float = 0.0, rotary: RotaryEmbedding | None = None):
        super().__init__()
        self._set_shape(channels, heads, kv_heads, attention_dropout, rng)
        validation.probability(dropout, "dropout")
        bias = validation.boolean(bias, "bias")
        generator = resolve_rng(rng)
        kv_width = self.kv_heads * self.head_width
        self.query = Linear(self.channels, self.channels, bias, rng=generator, dtype=dtype)
        self.key = Linear(self.channels, kv_width, bias, rng=generator, dtype=dtype)
        self.value = Linear(self.channels, kv_width, bias, rng=generator, dtype=dtype)
        self._register_rest(dropout, bias, rotary, generator, dtype)

    def project(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        batch, length, _ = x.shape
        width = self.head_width

        def heads_of(linear: Linear, heads: int) -> Tensor:  # (B, T, h·D) → (B, h, T, D)
            return linear(x).reshape(batch, length, heads, width).permute(0, 2, 1, 3)

        return (heads_of(self.query, self.heads), heads_of(self.key, self.kv_heads),
                heads_of(self.value, self.kv_heads))


def _check_cache(cache: Any) -> None:
    if not isinstance(cache, KVCache):
        raise TypeError(f"cache must be a KVCache or None, got {type(cache).__name__}")


def _extend_cache(cache: KVCache, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor]:
    """Append the new keys and values to ``cache``; return all the cached ones."""
    if key.requires_grad or value.requires_grad:
        raise RuntimeError("a KVCache holds no autograd history: run cached attention "
                           "under tensorlib.no_grad()")
    keys, values = cache.append(key.numpy(), value.numpy())  # (B, h, T_total, D) views
    return Tensor(keys), Tensor(values)
