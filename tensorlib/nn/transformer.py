"""A GPT-style decoder: pre-norm blocks of causal attention and a GELU MLP."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tensorlib import autograd, kernels, ops, validation
from tensorlib.kernels.generation import BlockArrays, DecoderArrays
from tensorlib.nn import functional as F
from tensorlib.nn.attention import KVCache, MultiheadAttention
from tensorlib.nn.layers import (
    Dropout,
    Embedding,
    HookPoint,
    LayerNorm,
    Linear,
    PositionalEmbedding,
    check_input,
    resolve_rng,
)
from tensorlib.nn.modes import evaluation_mode
from tensorlib.nn.module import Module, ModuleList
from tensorlib.rng import Rng
from tensorlib.tensor import Tensor

__all__ = ["Decoder", "DecoderBlock", "DecoderConfig"]

class DecoderBlock(Module):
    r"""One pre-norm transformer block on ``(B, T, C)``::

        x = x + attention(attention_norm(x))
        x = x + mlp_dropout(mlp_output(gelu(mlp_input(mlp_norm(x)))))

    Children, in order: ``attention_norm, attention, mlp_norm, mlp_input (C → 4C),
    mlp_output (4C → C), mlp_dropout``, and two :class:`HookPoint`\ s on the residual stream,
    ``residual_attention`` (after the attention branch) and ``residual_mlp`` (the block's
    output). GELU is the exact (erf) form.
    """

    def __init__(self, channels: int, heads: int, dropout: float = 0.0, eps: float = 1e-5,
                 rng: Rng | None = None, dtype: Any = np.float32):
        super().__init__()
        self.channels = validation.positive_integer(channels, "channels")
        validation.positive_integer(heads, "heads")
        if self.channels % heads:
            raise ValueError(f"channels ({self.channels}) must be divisible by heads ({heads})")
        validation.probability(dropout, "dropout")
        dtype = validation.float_dtype(dtype)
        generator = resolve_rng(rng)  # init draws; the dropouts keep ``rng`` (None: default)
        hidden = 4 * self.channels
        self.attention_norm = LayerNorm(self.channels, eps, dtype=dtype)
        self.attention = MultiheadAttention(self.channels, heads, dropout, rng=rng, dtype=dtype)
        self.mlp_norm = LayerNorm(self.channels, eps, dtype=dtype)
        self.mlp_input = Linear(self.channels, hidden, rng=generator, dtype=dtype)
        self.mlp_output = Linear(hidden, self.channels, rng=generator, dtype=dtype)
        self.mlp_dropout = Dropout(dropout, rng=rng)
        self.residual_attention = HookPoint()  # (B, T, C)
        self.residual_mlp = HookPoint()  # (B, T, C)

    def forward(self, x: Tensor, cache: KVCache | None = None) -> Tensor:
        """``x (B, T, C)`` → ``(B, T, C)``; ``cache`` is passed on to the attention (the new
        positions follow the cached ones)."""
        check_input(x, "DecoderBlock", self.channels, ndim=3)
        x = self.residual_attention(x + self.attention(self.attention_norm(x), cache=cache))
        hidden = F.gelu(self.mlp_input(self.mlp_norm(x)))  # (B, T, 4C)
        return self.residual_mlp(x + self.mlp_dropout(self.mlp_output(hidden)))


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
            validation.positive_integer(getattr(self, name), f"DecoderConfig.{name}")
        if self.channels % self.heads:
            raise ValueError(f"DecoderConfig: channels ({self.channels}) must be divisible by "
                             f"heads ({self.heads})")
        validation.probability(self.dropout, "DecoderConfig.dropout")
        validation.positive(self.eps, "DecoderConfig.eps")


class Decoder(Module):
    """A GPT-style language model: token ids ``(B, T)`` → next-token logits ``(B, T, V)``.

    Children: ``token_embedding, positional_embedding, blocks`` (a ModuleList of
    DecoderBlocks), ``final_norm, language_model_head`` (Linear C → V with bias), and the
    :class:`HookPoint` ``embedding`` on the token plus position embedding ``(B, T, C)``.
    """

    def __init__(self, config: DecoderConfig, rng: Rng | None = None, dtype: Any = np.float32):
        super().__init__()
        if not isinstance(config, DecoderConfig):
            raise TypeError(f"Decoder needs a DecoderConfig, got {type(config).__name__}")
        dtype = validation.float_dtype(dtype)
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
        self.embedding = HookPoint()  # token plus position embedding, (B, T, C)

    def _token_ids(self, token_ids: Any, what: str = "token id") -> np.ndarray:
        ids = F.token_ids(token_ids, self.config.vocabulary_size, what)
        if ids.ndim != 2:
            raise ValueError(f"Decoder expects {what}s of shape (B, T), got shape {ids.shape}")
        if ids.shape[0] == 0 or ids.shape[1] == 0:
            raise ValueError(f"Decoder needs at least one sequence of at least one token, got "
                             f"shape {ids.shape}")
        return ids

    def new_cache(self) -> list[KVCache]:
        """One empty :class:`KVCache` per block, each with room for ``context_length``
        positions, for :meth:`forward` with ``caches``."""
        return [KVCache(self.config.context_length) for _ in self.blocks]

    def _cache_start(self, caches: Any, batch: int, length: int) -> int:
        """Validate ``caches`` for ``length`` new positions of ``batch`` rows, before
        anything changes; return how many positions they already hold."""
        if isinstance(caches, KVCache) or not isinstance(caches, Sequence) \
                or len(caches) != len(self.blocks) \
                or not all(isinstance(c, KVCache) for c in caches):
            raise TypeError(f"caches must be a sequence of {len(self.blocks)} KVCaches (one per "
                            f"block, see Decoder.new_cache), got {caches!r}")
        starts = {c.length for c in caches}
        if len(starts) != 1:
            raise ValueError(f"the blocks' caches hold different lengths {sorted(starts)}")
        start = starts.pop()
        for index, cache in enumerate(caches):
            if cache.keys is not None and cache.keys.shape[0] != batch:
                raise ValueError(f"caches[{index}] holds {cache.keys.shape[0]} sequences, got "
                                 f"token ids for {batch}")
            if start + length > cache.capacity:
                raise ValueError(f"{start} cached + {length} new positions exceed "
                                 f"caches[{index}]'s capacity {cache.capacity}")
        if start + length > self.config.context_length:
            raise ValueError(f"{start} cached + {length} new positions exceed the context "
                             f"length {self.config.context_length}")
        return start

    def forward(self, token_ids: Any, caches: Sequence[KVCache] | None = None) -> Tensor:
        """Integer ids ``(B, T)`` → logits ``(B, T, V)``.

        Without ``caches``: ``T <= context_length``, at positions ``0 .. T-1``. With
        ``caches`` (one KVCache per block, from :meth:`new_cache`; inference only, under
        ``no_grad``) the ids are the next ``T`` tokens of sequences whose first ``start``
        positions are cached: they sit at positions ``start .. start + T - 1`` (at most
        ``context_length``), every block appends their keys and values, and the logits are
        those a forward pass over the whole sequence gives at these positions. Such a cached
        forward of a plain Decoder with no hooks runs as one kernel on arrays,
        ``tensorlib.kernels.decoder_step``, with the modules' logits bit for bit (see
        ``_step_arrays`` for when).
        """
        ids = self._token_ids(token_ids)
        batch, length = ids.shape
        if caches is None:
            if length > self.config.context_length:
                raise ValueError(f"sequence length {length} exceeds the context length "
                                 f"{self.config.context_length}")
            start = 0
        else:
            start = self._cache_start(caches, batch, length)
            if isinstance(caches, _GenerationCaches):  # one check per generate call
                if not caches.checked:
                    caches.arrays, caches.checked = _step_arrays(self, caches), True
                arrays = caches.arrays
            else:
                arrays = _step_arrays(self, caches)
            if arrays is not None:  # the same logits without modules or graph: see there
                return Tensor(kernels.decoder_step(arrays, ids, start, caches, _layer_norm,
                                                   _gelu))
        x = self.token_embedding(ids)  # (B, T, C)
        if start == 0:
            x = self.positional_embedding(x)  # (B, T, C)
        else:  # positions continue after the cached ones
            x = x + self.positional_embedding.table(np.arange(start, start + length))
        x = self.embedding(x)
        for index, block in enumerate(self.blocks):
            x = block(x, cache=None if caches is None else caches[index])
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
                 top_k: int | None = None, rng: Rng | None = None,
                 use_cache: bool = True) -> np.ndarray:
        """Sample ``max_new_tokens`` tokens after each prompt row of ``token_ids (B, T)``.

        Runs in eval mode under ``no_grad`` (each module's previous mode is restored after).
        Each next token is drawn from the logits of the last position of the last
        ``context_length`` tokens, divided by ``temperature`` (> 0); with ``top_k`` only
        the k largest logits of each row can be drawn (ties with the k-th value are kept).
        Samples come from ``rng.sample_categorical`` (the default generator when ``rng`` is
        None), so the result is determined by the generator's state. Returns int64
        ``(B, T + max_new)``.

        ``use_cache=False`` recomputes the whole window at every step. ``use_cache=True``
        (the default) gives the same tokens faster: one forward pass over the prompt fills
        a :class:`KVCache` per block, then each step feeds only the newest token, at
        position ``current length - 1``, attending over the cached keys and values. Once
        the sequence is longer than ``context_length`` the window slides and its positions
        restart at 0, which changes every cached key and value, so from then on each step
        recomputes the window (exactly as ``use_cache=False``): the cache speeds up the
        first ``context_length`` positions. The logits of the two paths agree to float
        rounding, not bit for bit (the sums run in another order).
        """
        ids = self._token_ids(token_ids)
        max_new_tokens = validation.integer(max_new_tokens, "max_new_tokens", minimum=0)
        temperature = validation.positive(temperature, "temperature")
        if top_k is not None:
            top_k = validation.integer(top_k, "top_k", minimum=1,
                                       maximum=self.config.vocabulary_size)
        use_cache = validation.boolean(use_cache, "use_cache")
        generator = resolve_rng(rng)
        window = self.config.context_length
        with evaluation_mode(self):
            caches: list[KVCache] | None = None
            for _ in range(int(max_new_tokens)):
                if not use_cache or ids.shape[1] > window:
                    logits = self.forward(ids[:, -window:])  # recompute the window
                elif caches is None:
                    caches = _GenerationCaches(self.new_cache())
                    logits = self.forward(ids, caches)  # prefill: the whole prompt
                else:
                    logits = self.forward(ids[:, -1:], caches)  # the newest token only
                next_ids = _sample_next(logits.data[:, -1, :], temperature, top_k,
                                        generator)  # (B,)
                ids = np.concatenate([ids, next_ids[:, None]], axis=1)
        return ids

    def extra_repr(self) -> str:
        c = self.config
        return (f"vocabulary_size={c.vocabulary_size}, context_length={c.context_length}, "
                f"channels={c.channels}, heads={c.heads}, layers={c.layers}")


class _GenerationCaches(list):
    """The KVCaches of one ``generate`` call, which nothing outside it sees. Whether the fast
    path applies (``_step_arrays``) is decided once, at the prefill, and its arrays are kept
    for the steps: between two steps only the sampling runs, and without a hook (the fast
    path's condition) no user code runs inside a step, so nothing can change the model."""

    arrays: DecoderArrays | None = None
    checked = False


def _step_arrays(model: Decoder, caches: Sequence[KVCache]) -> DecoderArrays | None:
    """The arrays for ``tensorlib.kernels.decoder_step``, or None when a cached forward of
    ``model`` must run through its modules: the kernels are off (``reference_mode()``), a
    gradient could be wanted (not under ``no_grad``), a forward hook is registered on a
    module the forward calls (``capture_activations`` must see every HookPoint), one of them
    is not the plain module the Decoder is built with (a LoRA or NF4 layer in a Linear's
    place, a subclass, a forward replaced on an instance), a dropout would drop (training
    mode), or the parameters are not numpy arrays of one dtype, float32 or float64."""
    if not kernels.enabled() or autograd.is_grad_enabled() or not _plain(model, Decoder):
        return None
    parts = _plain_children(model, _DECODER_PARTS)
    if parts is None or type(model.blocks) is not ModuleList:
        return None
    token_embedding, positional_embedding, _, final_norm, head = parts
    table = _plain_children(positional_embedding, {"table": Embedding})
    blocks = tuple(_block_arrays(block, cache) for block, cache in zip(model.blocks, caches,
                                                                         strict=True))
    if table is None or None in blocks:
        return None
    arrays = DecoderArrays(token_embedding.weight.data, table[0].weight.data, blocks,
                           _norm_arrays(final_norm), _linear_arrays(head))
    dtype = arrays.token_table.dtype
    every = [arrays.token_table, arrays.position_table, *arrays.final_norm[:2], *arrays.head]
    for block in blocks:
        every += [*block.attention_norm[:2], block.qkv_weight, block.qkv_bias, *block.output,
                  *block.mlp_norm[:2], *block.mlp_input, *block.mlp_output]
    if dtype not in (np.float32, np.float64) or not all(
            a is None or (type(a) is np.ndarray and a.dtype == dtype) for a in every):
        return None
    return arrays


def _plain(module: Any, kind: type) -> bool:
    """``module`` is exactly a ``kind``, with its class's forward and no forward hook."""
    return type(module) is kind and not module._forward_hooks \
        and "forward" not in module.__dict__


def _plain_children(module: Module, kinds: dict[str, type]) -> list[Any] | None:
    """The children of ``module`` named in ``kinds``, in that order, if each is plain (see
    ``_plain``); else None."""
    children = module._modules
    found = [children.get(name) for name in kinds]
    if not all(_plain(child, kind) for child, kind in zip(found, kinds.values(), strict=True)):
        return None
    return found


def _block_arrays(block: Any, cache: KVCache) -> BlockArrays | None:
    if not _plain(block, DecoderBlock):
        return None
    parts = _plain_children(block, _BLOCK_PARTS)
    if parts is None:
        return None
    attention_norm, attention, mlp_norm, mlp_input, mlp_output, mlp_dropout = parts[:6]
    inside = _plain_children(attention, _ATTENTION_PARTS)
    if inside is None:
        return None
    output, output_dropout = inside[:2]
    if any(d.training and d.p > 0.0 for d in (mlp_dropout, output_dropout)):
        return None
    return BlockArrays(attention.heads, _norm_arrays(attention_norm),
                       attention.fused_qkv_array(cache), attention.qkv_bias.data.reshape(-1),
                       _linear_arrays(output), _norm_arrays(mlp_norm),
                       _linear_arrays(mlp_input), _linear_arrays(mlp_output))


def _norm_arrays(norm: LayerNorm) -> tuple[Any, Any, float]:
    weight, bias = norm.weight, norm.bias
    return (None if weight is None else weight.data, None if bias is None else bias.data,
            norm.eps)


def _linear_arrays(linear: Linear) -> tuple[Any, Any]:
    bias = linear.bias
    return linear.weight.data, None if bias is None else bias.data


# The children a cached forward calls, and what each must be for decoder_step to stand in.
_DECODER_PARTS = {"token_embedding": Embedding, "positional_embedding": PositionalEmbedding,
                  "embedding": HookPoint, "final_norm": LayerNorm,
                  "language_model_head": Linear}
_BLOCK_PARTS = {"attention_norm": LayerNorm, "attention": MultiheadAttention,
                "mlp_norm": LayerNorm, "mlp_input": Linear, "mlp_output": Linear,
                "mlp_dropout": Dropout, "residual_attention": HookPoint,
                "residual_mlp": HookPoint}
_ATTENTION_PARTS = {"output": Linear, "output_dropout": Dropout, "probabilities": HookPoint}


def _layer_norm(x: np.ndarray, weight: Any, bias: Any, eps: float) -> np.ndarray:
    """What the LayerNorm op computes, on arrays (the ``layer_norm`` of ``decoder_step``)."""
    affine = [a for a in (weight, bias) if a is not None]
    return ops.LayerNorm.forward_only(x, *affine, eps=eps, has_weight=weight is not None,
                                      has_bias=bias is not None)


def _gelu(a: np.ndarray) -> np.ndarray:
    """What the Gelu op computes (exact GELU), on an array."""
    return ops.Gelu.forward_only(a)


def _sample_next(logits: Any, temperature: float, top_k: int | None, generator: Rng) -> np.ndarray:
    """Draw one id per row of ``logits (B, V)`` after temperature and top-k filtering."""
    logits = np.asarray(logits, dtype=np.float64) / float(temperature)  # (B, V)
    if top_k is not None and top_k < logits.shape[-1]:
        kth = np.partition(logits, -top_k, axis=-1)[:, [-top_k]]  # (B, 1)
        logits = np.where(logits < kth, -np.inf, logits)
    weights = np.exp(logits - logits.max(axis=-1, keepdims=True))  # (B, V)
    return generator.sample_categorical(weights)  # (B,)
