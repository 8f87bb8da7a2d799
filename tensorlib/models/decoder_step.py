"""One cached decoding step of a Decoder on raw arrays, with no graph and no modules, and
the rule that says when it may stand in for the modules.

``decoder_step`` stands in for ``tensorlib.nn.Decoder.forward(token_ids, caches)`` under
``no_grad`` (inference with a key/value cache). The Decoder does not know of it: this module
registers ``prepare_decoder_step`` for the Decoder class in the kernel table
(:func:`register_cached_step`), and ``Decoder.generate`` asks the table once per call, at the
prefill. It takes the model (``decoder_arrays``) only when the kernels are
enabled (not ``reference_mode()``), no gradient is wanted, nothing observes the model (no
forward hook anywhere, so no ``capture_activations``), every part of the model is the plain
module it expects with its class's own forward (no LoRA or NF4 layer in a Linear's place, no
subclass, no forward replaced on an instance or a class, no training-mode dropout), the
configuration is GPT-2's shape (LayerNorm, learned positions, a GELU MLP of either form, full
multi-head attention; biases and tying as it likes) and the arrays are float32 or float64
numpy arrays; otherwise the modules run.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, cast

import numpy as np

from tensorlib.engine import autograd, kernel_table, ops
from tensorlib.engine.kernel_table import enabled
from tensorlib.engine.kernels.fast_ops import CausalAttentionKernel
from tensorlib.engine.ops.attention import attend
from tensorlib.engine.ops.function import Function, _implementation, _Unrecorded
from tensorlib.engine.typing import Array
from tensorlib.models.decoder import Decoder, DecoderBlock
from tensorlib.models.decoder_config import GELU_APPROXIMATE, DecoderConfig
from tensorlib.nn.attention import KVCache, MultiheadAttention
from tensorlib.nn.container import ModuleList
from tensorlib.nn.layers import (
    Dropout,
    Embedding,
    HookPoint,
    LayerNorm,
    Linear,
    PositionalEmbedding,
)
from tensorlib.nn.module import Module

__all__ = ["BlockArrays", "CachedStep", "DecoderArrays", "decoder_arrays", "decoder_step",
           "prepare_decoder_step", "register_cached_step"]

CachedStep = Callable[[np.ndarray], Any]
"""One cached forward of a model on arrays: ``step(ids)`` takes the next token ids
``(B, T)`` of the sequences in its caches and returns the array of their logits
``(B, T, V)``, appending their keys and values to the caches."""


def register_cached_step(model_class: type[Module],
                         prepare: Callable[[Any, list[KVCache]], CachedStep | None]) -> None:
    """Let a step stand in for the cached forwards of ``generate`` on models of exactly
    ``model_class`` (not its subclasses; in the kernel table,
    :mod:`tensorlib.engine.kernel_table`, which reference mode switches off): :func:`register`
    puts :func:`prepare_decoder_step` there for :class:`~tensorlib.models.Decoder`.

    At the prefill of each ``generate`` call, ``prepare(model, caches)`` gets the model and
    its fresh caches (one empty :class:`KVCache` per block). It returns None when the
    forwards must run through the modules, or a :data:`CachedStep` that gives, bit for bit,
    the logits ``model.forward(ids, caches)`` would give, and fills the caches as it would;
    ``generate`` then calls that step for the prefill and each following cached step. When
    it may stand in is the step's rule, not the model's. A second registration for the
    same class replaces the first.
    """
    kernel_table.register(model_class, prepare, Module, "register_cached_step")


class BlockArrays(NamedTuple):
    """The arrays of one DecoderBlock, as its modules hold them (norm weights and biases
    may be None, as LayerNorm(affine=False) and Linear(bias=False) have them)."""

    heads: int
    attention_norm: tuple[Array | None, Array | None, float]  # weight (C,), bias (C,), eps
    qkv_weight: Array  # (3C, C), C-contiguous: row block i is W[i]ᵀ (i = query, key, value),
    # the fused weight MultiheadAttention.forward builds, made once per generate call
    qkv_bias: Array | None  # (3C,)
    output: tuple[Array, Array | None]  # weight (C, C), bias (C,)
    mlp_norm: tuple[Array | None, Array | None, float]
    mlp_input: tuple[Array, Array | None]  # (4C, C), (4C,)
    mlp_output: tuple[Array, Array | None]  # (C, 4C), (C,)


class DecoderArrays(NamedTuple):
    """The arrays of a whole Decoder: the embedding tables, the blocks, the final norm and
    the language-model head."""

    token_table: Array  # (V, C)
    position_table: Array  # (context_length, C)
    blocks: tuple[BlockArrays, ...]
    final_norm: tuple[Array | None, Array | None, float]
    head: tuple[Array, Array | None]  # (V, C), (V,)


def decoder_step(model: DecoderArrays, ids: Array, start: int, caches: Sequence[KVCache],
                 layer_norm: Callable[[Array, Array | None, Array | None, float], Array],
                 gelu: Callable[[Array], Array]) -> Array:
    """Logits ``(B, T, V)`` of token ids ``ids (B, T)`` (already checked) at positions
    ``start .. start + T - 1``, the sequences' first ``start`` positions being cached.

    Each block appends its new keys and values to its cache (``caches[i].append(keys,
    values)``, which writes them in place into the cache's preallocated storage and returns
    views of all cached positions, as ``tensorlib.nn.KVCache`` does) and attends over them.
    ``layer_norm(x, weight, bias, eps)`` and ``gelu(a)`` compute on arrays exactly what the
    LayerNorm and Gelu ops compute (the caller passes the ops' own forwards).

    Stands in for: ``Decoder.forward(ids, caches)`` under ``no_grad``, that is the token
    plus position embedding, then per block ``x = x + attention(attention_norm(x))`` and
    ``x = x + mlp_output(gelu(mlp_input(mlp_norm(x))))``, then the final norm and the head,
    each module calling ops (``tensorlib.engine.ops``: Embedding, Add, LayerNorm, Linear, Reshape,
    Permute, GetItem, MatMul, Softmax, Gelu), every op call a ``Function.apply`` with its
    argument checks and a Tensor, every module call a ``Module.__call__``.
    How: the same numpy calls as those ops' forwards, in the same order and on arrays of the
    same layout (the fused (3C, C) Q/K/V weight, made once per ``generate`` call by
    ``decoder_arrays``; the strided head views; the CausalAttention kernel's steps),
    with nothing in between: no Tensor, no module call, no graph node, no check.
    Accuracy: bit for bit the module path's logits (test_generation_fast_path.py, in
    tests/engine, checks equality of logits and of sampled tokens, float32 and float64).
    Why: through the modules, a cached step of case (d)'s decoder makes about a hundred op
    calls and fifty module calls per token, half of its time.
    Measured: docs/performance.md, "Generation without the graph".
    """
    batch, length = ids.shape
    x = model.token_table[ids]  # (B, T, C), as Embedding
    x = x + model.position_table[start:start + length]  # the positions after the cached ones
    for block, cache in zip(model.blocks, caches, strict=True):
        x = x + _attention(block, layer_norm(x, *block.attention_norm), start, cache)
        hidden = gelu(_linear(layer_norm(x, *block.mlp_norm), *block.mlp_input))
        x = x + _linear(hidden, *block.mlp_output)
    return _linear(layer_norm(x, *model.final_norm), *model.head)  # (B, T, V)


def _attention(block: BlockArrays, x: Array, start: int, cache: KVCache) -> Array:
    """MultiheadAttention.forward with a cache: fused Q/K/V, append, the attention core
    (``attend`` with the CausalAttention kernel's steps) over all the cached keys, merge the
    heads, output projection."""
    batch, length, channels = x.shape
    heads = block.heads
    width = channels // heads
    qkv = _linear(x, block.qkv_weight, block.qkv_bias)  # (B, T, 3C)
    split = qkv.reshape(batch, length, 3, heads, width).transpose(2, 0, 3, 1, 4)
    keys, values = cache.append(split[1], split[2])  # (B, H, T_total, D) views
    context, _ = attend(CausalAttentionKernel, split[0], keys, values,
                        1.0 / math.sqrt(width), start)  # (B, H, T, D)
    merged = context.transpose(0, 2, 1, 3).reshape(batch, length, channels)
    return _linear(merged, *block.output)


def _op_forward(op: type[Function], *arrays: Array | None, **params: Any) -> Array:
    """The array ``op.apply`` computes under ``no_grad`` (the op's kernel, where one is
    registered), on raw arrays, with nothing saved or recorded: so that a whole step on
    arrays computes exactly what the modules' ops compute."""
    function = _implementation(op, arrays, params)
    ctx = _Unrecorded(function)
    ctx.needs_input_grad = (False,) * len(arrays)
    return function.forward(ctx, *arrays, **params)


def _linear(x: Array, weight: Array, bias: Array | None) -> Array:
    """What the Linear op computes, x Wᵀ + b over the last axis, on arrays."""
    return _op_forward(ops.Linear, x, weight, bias)


# ------------------------------------------------------------------------ when it stands in
def prepare_decoder_step(model: Decoder, caches: Sequence[KVCache]) -> CachedStep | None:
    """The cached-step kernel of :class:`~tensorlib.nn.Decoder` (registered with
    ``register_cached_step``): for one ``generate`` call on ``model`` with ``caches``, a
    step ``ids (B, T)`` → logits array ``(B, T, V)`` that runs ``decoder_step`` at the
    positions after the cached ones, or None when the modules must run (see
    ``decoder_arrays``).

    The model's arrays are read here, once: the step is for the ``generate`` call that
    asked, between whose steps only the sampling runs (with no hook, which the rule
    requires, no user code runs inside a step), so nothing changes the model meanwhile.
    """
    arrays = decoder_arrays(model)
    if arrays is None:
        return None

    def step(ids: np.ndarray) -> np.ndarray:
        return decoder_step(arrays, ids, caches[0].length, caches, _layer_norm, gelu)

    form = GELU_APPROXIMATE[model.config.mlp]  # exact, or GPT-2's tanh form

    def gelu(a: np.ndarray) -> np.ndarray:
        return _gelu(a, form)

    return step


def decoder_arrays(model: Any) -> DecoderArrays | None:
    """The arrays of ``model`` for ``decoder_step``, or None when a cached forward of
    ``model`` must run through its modules: the kernels are off (``reference_mode()``), a
    gradient could be wanted (not under ``no_grad``), a forward hook is registered on a
    module the forward calls (``capture_activations`` must see every HookPoint), one of them
    is not the plain module a Decoder is built with (a LoRA or NF4 layer in a Linear's
    place, a subclass, a forward replaced on an instance or on the class), a dropout would
    drop (training mode), or the parameters are not numpy arrays of one dtype, float32 or
    float64. The fused ``(3C, C)`` Q/K/V weight of each block is made here."""
    if not enabled() or autograd.is_grad_enabled() or not _plain(model, Decoder) \
            or not _gpt2_shape(model.config):
        return None
    parts = _plain_children(model, _DECODER_PARTS)
    if parts is None or type(model.blocks) is not ModuleList:
        return None
    token_embedding, positional_embedding, _, final_norm, head = parts
    table = _plain_children(positional_embedding, {"table": Embedding})
    blocks = tuple(_block_arrays(block) for block in model.blocks)
    if table is None or None in blocks:
        return None
    arrays = DecoderArrays(token_embedding.weight.numpy(), table[0].weight.numpy(),
                           cast("tuple[BlockArrays, ...]", blocks),  # None is not in it
                           _norm_arrays(final_norm), _linear_arrays(head))
    dtype = arrays.token_table.dtype
    every = [arrays.token_table, arrays.position_table, *arrays.final_norm[:2], *arrays.head]
    for block in arrays.blocks:
        every += [*block.attention_norm[:2], block.qkv_weight, block.qkv_bias, *block.output,
                  *block.mlp_norm[:2], *block.mlp_input, *block.mlp_output]
    if dtype not in (np.float32, np.float64) or not all(
            a is None or (type(a) is np.ndarray and a.dtype == dtype) for a in every):
        return None
    return arrays


def _gpt2_shape(config: Any) -> bool:
    """The configurations ``decoder_step`` computes: GPT-2's shape (LayerNorm, learned
    positions, a GELU MLP of either form, full multi-head attention), with or without
    biases and tied embeddings. RMSNorm, rotary positions, SwiGLU and grouped-query
    attention run through the modules."""
    return isinstance(config, DecoderConfig) and config.norm == "layer" \
        and config.positions == "learned" and config.mlp in GELU_APPROXIMATE \
        and config.key_value_heads == config.heads


def _plain(module: Any, kind: type[Module]) -> bool:
    """``module`` is exactly a ``kind``, with no forward hook and the forward ``kind`` had
    when this module was imported (none replaced on the instance or on the class)."""
    return type(module) is kind and not module._forward_hooks \
        and "forward" not in module.__dict__ and kind.forward is _FORWARDS[kind]


def _plain_children(module: Module, kinds: dict[str, type[Module]]) -> list[Any] | None:
    """The children of ``module`` named in ``kinds``, in that order, if each is plain (see
    ``_plain``); else None."""
    children = module._modules
    found = [children.get(name) for name in kinds]
    if not all(_plain(child, kind) for child, kind in zip(found, kinds.values(), strict=True)):
        return None
    return found


def _block_arrays(block: Any) -> BlockArrays | None:
    if not _plain(block, DecoderBlock) or set(block._modules) != set(_BLOCK_PARTS) \
            or block.mlp_kind not in GELU_APPROXIMATE:
        return None
    parts = _plain_children(block, _BLOCK_PARTS)
    if parts is None:
        return None
    attention_norm, attention, mlp_norm, mlp_input, mlp_output, mlp_dropout = parts[:6]
    inside = _plain_children(attention, _ATTENTION_PARTS)
    if inside is None or set(attention._modules) != set(_ATTENTION_PARTS):  # no rotary child
        return None
    output, output_dropout = inside[:2]
    if any(d.training and d.p > 0.0 for d in (mlp_dropout, output_dropout)) \
            or (attention.training and attention.attention_dropout > 0.0):
        return None
    return BlockArrays(attention.heads, _norm_arrays(attention_norm), _fused_qkv(attention),
                       None if attention.qkv_bias is None
                       else attention.qkv_bias.numpy().reshape(-1), _linear_arrays(output),
                       _norm_arrays(mlp_norm), _linear_arrays(mlp_input),
                       _linear_arrays(mlp_output))


def _fused_qkv(attention: MultiheadAttention) -> Array:
    """The array of the fused ``(3C, C)`` Q/K/V weight that ``MultiheadAttention.forward``
    builds (row block i is ``qkv_weight[i]ᵀ``), a C-contiguous copy."""
    weight = attention.qkv_weight.numpy()  # (3, C, C)
    return weight.transpose(0, 2, 1).reshape(3 * attention.channels, attention.channels)


def _norm_arrays(norm: LayerNorm) -> tuple[Array | None, Array | None, float]:
    weight, bias = norm.weight, norm.bias
    return (None if weight is None else weight.numpy(), None if bias is None else bias.numpy(),
            norm.eps)


def _linear_arrays(linear: Linear) -> tuple[Array, Array | None]:
    bias = linear.bias
    return linear.weight.numpy(), None if bias is None else bias.numpy()


def _layer_norm(x: np.ndarray, weight: Array | None, bias: Array | None, eps: float) -> np.ndarray:
    """What the LayerNorm op computes, on arrays (the ``layer_norm`` of ``decoder_step``)."""
    return _op_forward(ops.LayerNorm, x, weight, bias, eps=eps)


def _gelu(a: np.ndarray, approximate: str) -> np.ndarray:
    """What the Gelu op computes (exact GELU, or its tanh form), on an array (the ``gelu``
    of ``decoder_step``)."""
    return _op_forward(ops.Gelu, a, approximate=approximate)


# The children a cached forward calls, and what each must be for decoder_step to stand in.
_DECODER_PARTS: dict[str, type[Module]] = {
    "token_embedding": Embedding, "positional_embedding": PositionalEmbedding,
    "embedding": HookPoint, "final_norm": LayerNorm, "language_model_head": Linear}
_BLOCK_PARTS: dict[str, type[Module]] = {
    "attention_norm": LayerNorm, "attention": MultiheadAttention, "mlp_norm": LayerNorm,
    "mlp_input": Linear, "mlp_output": Linear, "mlp_dropout": Dropout,
    "residual_attention": HookPoint, "residual_mlp": HookPoint}
_ATTENTION_PARTS: dict[str, type[Module]] = {
    "output": Linear, "output_dropout": Dropout, "probabilities": HookPoint}
# The forward each kind of module has as defined; a forward replaced on the class since
# (a spy, a patch) makes the module not plain.
_FORWARDS: dict[type[Module], Callable[..., Any]] = {
    kind: kind.forward for kind in (Decoder, DecoderBlock, MultiheadAttention, Embedding,
                                    PositionalEmbedding, HookPoint, LayerNorm, Linear, Dropout)}


def register() -> None:
    """Let ``decoder_step`` stand in for the cached forwards of ``Decoder.generate``."""
    register_cached_step(Decoder, prepare_decoder_step)
