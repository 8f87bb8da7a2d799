"""A GPT-style decoder: pre-norm blocks of causal attention and a GELU MLP.

Its cached generation step on raw arrays is beside it, in :mod:`tensorlib.models.decoder_step`
(a change to a block here is a change to make there too; tests/engine/test_generation_fast_path.py
holds the two equal). ``Decoder.generate`` runs its cached forwards through the modules, or
through that step when the kernel table has it for the model's class and it takes the
model; this file knows the step only as what the table holds."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tensorlib.engine import kernel_table, validation
from tensorlib.engine.splitmix64 import Rng
from tensorlib.engine.tensor import Tensor
from tensorlib.models.decoder_config import (
    GELU_APPROXIMATE,
    MLPS,
    NORMS,
    DecoderConfig,
    default_mlp_hidden,
)
from tensorlib.nn import functional as F
from tensorlib.nn.attention import GroupedQueryAttention, KVCache, MultiheadAttention
from tensorlib.nn.container import ModuleList
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
from tensorlib.nn.module import Module
from tensorlib.nn.positions import RotaryEmbedding
from tensorlib.nn.rms_norm import RMSNorm

__all__ = ["Decoder", "DecoderBlock", "DecoderConfig"]

class DecoderBlock(Module):
    r"""One pre-norm transformer block on ``(B, T, C)``::

        x = x + attention(attention_norm(x))
        x = x + mlp_dropout(mlp_output(gelu(mlp_input(mlp_norm(x)))))      # GELU MLP
        x = x + mlp_dropout(mlp_output(silu(mlp_gate(h)) * mlp_input(h)))  # SwiGLU MLP,
                                                                           # h = mlp_norm(x)

    Children, in order: ``attention_norm, attention, mlp_norm``, ``mlp_gate`` (C → hidden,
    SwiGLU only), ``mlp_input`` (C → hidden), ``mlp_output`` (hidden → C), ``mlp_dropout``,
    and two :class:`HookPoint`\ s on the residual stream, ``residual_attention`` (after the
    attention branch) and ``residual_mlp`` (the block's output).

    The keywords choose the pieces, as :class:`DecoderConfig`'s fields of the same names do:
    ``norm`` (``"layer"``: LayerNorm, ``"rms"``: RMSNorm), ``mlp`` (``"gelu"``: exact GELU,
    ``"gelu_tanh"``: its tanh form, ``"swiglu"``) of width ``mlp_hidden`` (None: the
    default, 4C for GELU), ``kv_heads`` (fewer than ``heads``: a
    :class:`GroupedQueryAttention`, else a :class:`MultiheadAttention`), ``bias`` (in the
    linear layers and LayerNorms), ``attention_dropout`` and ``rotary`` (a
    :class:`RotaryEmbedding` for the attention's queries and keys, or None).
    """

    def __init__(self, channels: int, heads: int, dropout: float = 0.0, eps: float = 1e-5,
                 rng: Rng | None = None, dtype: Any = np.float32, *, norm: str = "layer",
                 mlp: str = "gelu", mlp_hidden: int | None = None, kv_heads: int | None = None,
                 bias: bool = True, attention_dropout: float = 0.0,
                 rotary: RotaryEmbedding | None = None):
        super().__init__()
        # channels, norm, mlp and mlp_hidden are checked here, where they are used; the
        # rest by the layers that take them (the attentions, Dropout, the norms, Linear).
        self.channels = validation.positive_integer(channels, "channels")
        self.norm_kind = validation.choice(norm, NORMS, "DecoderBlock norm")
        self.mlp_kind = validation.choice(mlp, MLPS, "DecoderBlock mlp")
        hidden = default_mlp_hidden(mlp, self.channels) if mlp_hidden is None \
            else validation.positive_integer(mlp_hidden, "mlp_hidden")
        generator = resolve_rng(rng)  # init draws; the dropouts keep ``rng`` (None: default)
        self.attention_norm = _norm(norm, self.channels, eps, bias, dtype)
        if kv_heads is None or kv_heads == heads:
            self.attention: MultiheadAttention | GroupedQueryAttention = MultiheadAttention(
                self.channels, heads, dropout, rng=rng, dtype=dtype, bias=bias,
                attention_dropout=attention_dropout, rotary=rotary)
        else:
            self.attention = GroupedQueryAttention(
                self.channels, heads, kv_heads, dropout, rng=rng, dtype=dtype, bias=bias,
                attention_dropout=attention_dropout, rotary=rotary)
        self.mlp_norm = _norm(norm, self.channels, eps, bias, dtype)
        if mlp == "swiglu":
            self.mlp_gate = Linear(self.channels, hidden, bias, rng=generator, dtype=dtype)
        self.mlp_input = Linear(self.channels, hidden, bias, rng=generator, dtype=dtype)
        self.mlp_output = Linear(hidden, self.channels, bias, rng=generator, dtype=dtype)
        self.mlp_dropout = Dropout(dropout, rng=rng)
        self.residual_attention = HookPoint()  # (B, T, C)
        self.residual_mlp = HookPoint()  # (B, T, C)

    def forward(self, x: Tensor, cache: KVCache | None = None) -> Tensor:
        """``x (B, T, C)`` → ``(B, T, C)``; ``cache`` is passed on to the attention (the new
        positions follow the cached ones)."""
        check_input(x, "DecoderBlock", self.channels, ndim=3)
        x = self.residual_attention(x + self.attention(self.attention_norm(x), cache=cache))
        h = self.mlp_norm(x)
        if self.mlp_kind == "swiglu":
            hidden = F.silu(self.mlp_gate(h)) * self.mlp_input(h)  # (B, T, hidden)
        else:
            hidden = F.gelu(self.mlp_input(h), approximate=GELU_APPROXIMATE[self.mlp_kind])
        return self.residual_mlp(x + self.mlp_dropout(self.mlp_output(hidden)))

    def extra_repr(self) -> str:
        design = [f"norm={self.norm_kind!r}"] if self.norm_kind != "layer" else []
        return ", ".join(design + ([f"mlp={self.mlp_kind!r}"] if self.mlp_kind != "gelu" else []))



def _norm(norm: str, channels: int, eps: float, bias: bool, dtype: Any) -> LayerNorm | RMSNorm:
    if norm == "rms":
        return RMSNorm(channels, eps, dtype=dtype)
    return LayerNorm(channels, eps, dtype=dtype, bias=bias)


class Decoder(Module):
    """A GPT-style language model: token ids ``(B, T)`` → next-token logits ``(B, T, V)``.

    Children: ``token_embedding``, ``positional_embedding`` (learned positions only; None
    with rotary ones), ``blocks`` (a ModuleList of DecoderBlocks built as the config says),
    ``final_norm, language_model_head`` (Linear C → V, with a bias unless
    ``config.head_bias`` is False; its weight is ``token_embedding.weight`` itself when
    ``config.tie_embeddings``), and the :class:`HookPoint` ``embedding`` on the token (plus
    position) embedding ``(B, T, C)``. Initial values are drawn from ``rng`` in that order.
    """

    def __init__(self, config: DecoderConfig, rng: Rng | None = None, dtype: Any = np.float32):
        super().__init__()
        if not isinstance(config, DecoderConfig):
            raise TypeError(f"Decoder needs a DecoderConfig, got {type(config).__name__}")
        # The config checked itself when it was made; dtype is checked by the first layer.
        generator = resolve_rng(rng)
        self.config = config
        c = config
        self.token_embedding = Embedding(c.vocabulary_size, c.channels, rng=generator,
                                         dtype=dtype)
        self.positional_embedding = PositionalEmbedding(
            c.context_length, c.channels, rng=generator, dtype=dtype) \
            if c.positions == "learned" else None
        self.blocks = ModuleList(
            DecoderBlock(c.channels, c.heads, c.dropout, c.eps, rng=rng, dtype=dtype,
                         norm=c.norm, mlp=c.mlp, mlp_hidden=c.mlp_hidden, kv_heads=c.kv_heads,
                         bias=c.bias, attention_dropout=c.attention_dropout,
                         rotary=RotaryEmbedding(c.head_width, c.context_length, c.rope_theta,
                                                dtype=dtype)
                         if c.positions == "rotary" else None)
            for _ in range(c.layers)
        )
        self.final_norm = _norm(c.norm, c.channels, c.eps, c.bias, dtype)
        self.language_model_head = Linear(c.channels, c.vocabulary_size, c.head_bias,
                                          rng=generator, dtype=dtype)
        if c.tie_embeddings:  # one parameter in two places, as PyTorch's weight tying
            self.language_model_head.weight = self.token_embedding.weight
        self.embedding = HookPoint()  # token (plus position) embedding, (B, T, C)

    @classmethod
    def from_pretrained(cls, folder: str | os.PathLike, dtype: Any = np.float32) -> Decoder:
        """The decoder of a Hugging Face causal-LM folder (``config.json`` and
        ``model.safetensors``, or its shards) of ``model_type`` ``"gpt2"`` or ``"llama"``,
        in ``dtype``: its configuration read from the folder, its weights loaded (see
        :mod:`tensorlib.models.hugging_face` for the names). The folder must be on disk:
        nothing is downloaded."""
        from tensorlib.models import hugging_face  # the file formats load when first used

        config, state = hugging_face.read_folder(folder)
        model = cls(config, dtype=dtype)
        hugging_face.load_state(model, state, folder)
        return model

    def save_pretrained(self, folder: str | os.PathLike) -> None:
        """Write this decoder as a Hugging Face folder that ``transformers``'
        ``AutoModelForCausalLM.from_pretrained(folder)`` loads: ``config.json`` and
        ``model.safetensors``, as a GPT-2 (LayerNorm, learned positions, a GELU MLP, biases,
        no head bias) or a Llama (RMSNorm, rotary positions, SwiGLU, no head bias);
        ValueError, and nothing written, for any other configuration."""
        from tensorlib.models import hugging_face

        hugging_face.write_folder(folder, self.config, self.state_dict())

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
        those a forward pass over the whole sequence gives at these positions.
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
        x = self.token_embedding(ids)  # (B, T, C)
        if self.positional_embedding is None:
            pass  # rotary positions: each attention turns its queries and keys
        elif start == 0:
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

        The cached forwards of one call (the prefill and each step) run through
        :meth:`forward`, unless the step the kernel table holds for the model's class
        (:mod:`tensorlib.models.decoder_step` for a Decoder; reference mode sets it aside)
        takes this model at the prefill: then it runs them, with the same logits bit for bit
        and so the same tokens.
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
            cached_forward: Callable[[np.ndarray], Any] | None = None
            for _ in range(int(max_new_tokens)):
                if not use_cache or ids.shape[1] > window:
                    logits = self.forward(ids[:, -window:]).numpy()  # recompute the window
                elif cached_forward is None:
                    cached_forward = _cached_forward(self, self.new_cache())
                    logits = cached_forward(ids)  # prefill: the whole prompt
                else:
                    logits = cached_forward(ids[:, -1:])  # the newest token only
                next_ids = _sample_next(logits[:, -1, :], temperature, top_k,
                                        generator)  # (B,)
                ids = np.concatenate([ids, next_ids[:, None]], axis=1)
        return ids

    def extra_repr(self) -> str:
        c = self.config
        design = c.design()
        return (f"vocabulary_size={c.vocabulary_size}, context_length={c.context_length}, "
                f"channels={c.channels}, heads={c.heads}, layers={c.layers}"
                + (f", {design}" if design else ""))


def _cached_forward(model: Module, caches: list[KVCache]) -> Callable[[np.ndarray], Any]:
    """How one ``generate`` call runs its cached forwards, ``step(ids) -> logits``: the step
    the kernel table holds for ``type(model)`` when it takes this model, else
    ``model.forward``."""
    prepare = kernel_table.kernel_for(type(model))
    step = None if prepare is None else prepare(model, caches)
    if step is not None:
        return step
    return lambda ids: model.forward(ids, caches).numpy()


def _sample_next(logits: Any, temperature: float, top_k: int | None, generator: Rng) -> np.ndarray:
    """Draw one id per row of ``logits (B, V)`` after temperature and top-k filtering."""
    logits = np.asarray(logits, dtype=np.float64) / float(temperature)  # (B, V)
    if top_k is not None and top_k < logits.shape[-1]:
        kth = np.partition(logits, -top_k, axis=-1)[:, [-top_k]]  # (B, 1)
        logits = np.where(logits < kth, -np.inf, logits)
    weights = np.exp(logits - logits.max(axis=-1, keepdims=True))  # (B, V)
    return generator.sample_categorical(weights)  # (B,)
