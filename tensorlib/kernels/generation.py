"""One cached decoding step of a Decoder on raw arrays, with no graph and no modules.

``decoder_step`` stands in for ``tensorlib.nn.Decoder.forward(token_ids, caches)`` under
``no_grad`` (inference with a key/value cache). The caller, ``Decoder.forward``, uses it only
when the kernels are enabled, nothing observes the model (no forward hook anywhere, so no
``capture_activations``), every part of the model is the plain module it expects (no LoRA or
NF4 layer in a Linear's place, no training-mode dropout) and the arrays are float32 or float64
numpy arrays; otherwise the modules run.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from tensorlib.kernels.softmax import causal_softmax_

__all__ = ["BlockArrays", "DecoderArrays", "decoder_step"]


class BlockArrays(NamedTuple):
    """The arrays of one DecoderBlock, as its modules hold them (norm weights and biases
    may be None, as LayerNorm(affine=False) and Linear(bias=False) have them)."""

    heads: int
    attention_norm: tuple[Any, Any, float]  # weight (C,), bias (C,), eps
    qkv_weight: Any  # (3C, C), C-contiguous: row block i is W[i]ᵀ (i = query, key, value)
    qkv_bias: Any  # (3C,)
    output: tuple[Any, Any]  # weight (C, C), bias (C,)
    mlp_norm: tuple[Any, Any, float]
    mlp_input: tuple[Any, Any]  # (4C, C), (4C,)
    mlp_output: tuple[Any, Any]  # (C, 4C), (C,)


class DecoderArrays(NamedTuple):
    """The arrays of a whole Decoder: the embedding tables, the blocks, the final norm and
    the language-model head."""

    token_table: Any  # (V, C)
    position_table: Any  # (context_length, C)
    blocks: tuple[BlockArrays, ...]
    final_norm: tuple[Any, Any, float]
    head: tuple[Any, Any]  # (V, C), (V,)


def decoder_step(model: DecoderArrays, ids: Any, start: int, caches: Sequence[Any],
                 layer_norm: Callable[[Any, Any, Any, float], Any],
                 gelu: Callable[[Any], Any]) -> Any:
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
    each module calling ops (``tensorlib.ops``: Embedding, Add, LayerNorm, Linear, Reshape,
    Permute, GetItem, MatMul, Softmax, Gelu), every op call a ``Function.apply`` with its
    argument checks and a Tensor, every module call a ``Module.__call__``.
    How: the same numpy calls as those ops' forwards, in the same order and on arrays of the
    same layout (the fused (3C, C) Q/K/V weight, made once per cache by
    ``MultiheadAttention.fused_qkv_array``; the strided head views; ``causal_softmax_``),
    with nothing in between: no Tensor, no module call, no graph node, no check.
    Accuracy: bit for bit the module path's logits (tests/test_generation_fast_path.py
    checks equality of logits and of sampled tokens, float32 and float64).
    Why: a cached step of case (d)'s decoder (4 blocks, 128 channels) made 97 op calls per
    token, each a ``Function.apply`` with its checks, a Tensor and a Context, plus some fifty
    module calls; the op forwards were about half of the time. With this kernel, generating
    63 tokens (benchmarks/run.py case (d), tensorlib alone, before and after in alternating
    processes, medians of 14 rounds) went from 176 to 82 ms at one thread and from 224 to
    70 ms at two; a second run of 10 rounds gave 192 to 65 and 173 to 61 ms
    (docs/performance.md, "Generation without the graph").
    """
    batch, length = ids.shape
    x = model.token_table[ids]  # (B, T, C), as Embedding
    x = x + model.position_table[start:start + length]  # the positions after the cached ones
    for block, cache in zip(model.blocks, caches, strict=True):
        x = x + _attention(block, layer_norm(x, *block.attention_norm), start, cache)
        hidden = gelu(_linear(layer_norm(x, *block.mlp_norm), *block.mlp_input))
        x = x + _linear(hidden, *block.mlp_output)
    return _linear(layer_norm(x, *model.final_norm), *model.head)  # (B, T, V)


def _attention(block: BlockArrays, x: Any, start: int, cache: Any) -> Any:
    """MultiheadAttention.forward with a cache: fused Q/K/V, append, softmax over all the
    cached keys, merge the heads, output projection."""
    batch, length, channels = x.shape
    heads = block.heads
    width = channels // heads
    qkv = _linear(x, block.qkv_weight, block.qkv_bias)  # (B, T, 3C)
    split = qkv.reshape(batch, length, 3, heads, width).transpose(2, 0, 3, 1, 4)
    keys, values = cache.append(split[1], split[2])  # (B, H, T_total, D) views
    scores = np.matmul(split[0], keys.transpose(0, 1, 3, 2))  # (B, H, T, T_total)
    scores = scores * scores.dtype.type(float(1.0 / math.sqrt(width)))  # as Softmax
    probabilities = causal_softmax_(scores, start)
    context = np.matmul(probabilities, values)  # (B, H, T, D)
    merged = context.transpose(0, 2, 1, 3).reshape(batch, length, channels)
    return _linear(merged, *block.output)


def _linear(x: Any, weight: Any, bias: Any) -> Any:
    """x Wᵀ + b over the last axis, as ``tensorlib.ops.Linear.forward``."""
    rows = x.reshape(-1, x.shape[-1])  # (N, in)
    out = rows @ weight.T  # (N, out), a fresh array
    if bias is not None:
        out += bias
    return out.reshape(*x.shape[:-1], weight.shape[0])
