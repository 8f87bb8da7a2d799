"""The checks of notebook 19 (generation and the KV cache): its four exercises,
``sample_next``, ``predicted_cache``, ``cached_attention`` and ``multiply_adds``.

Each compares the learner's answer with what the notebook's trained ``model`` really does:
the tokens ``Decoder.generate`` draws from the same generator, what its caches hold after a
prompt and single tokens, the keys, values and outputs of a cached attention step (storage
filled with NaN, so that reading a position never written shows), and the multiply-adds of
the shapes a step processes (recorded with ``capture_activations``). The usual slips (the
logits multiplied by the temperature, the k-th logit dropped, no causal mask within a chunk,
the scores not divided by sqrt(D), storage sized by the positions filled, keys only, the
scores counted once) are named by what they give.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

import tensorlib as tl
from tensorlib.course.checks.registry import exercise_check
from tensorlib.course.exercises import Checker
from tensorlib.engine.splitmix64 import Rng
from tensorlib.nn import Decoder, DecoderConfig, KVCache, capture_activations

__all__ = ["check_sample_next", "check_predicted_cache", "check_cached_attention",
           "check_multiply_adds"]


# ------------------------------------------------------------------------------ exercise 1
def _drawn(logits: np.ndarray, temperature: float, top_k: int | None, seed: int,
           slip: str = "") -> np.ndarray:
    """The tokens a sampler draws with ``Rng(seed)``; ``slip`` names a usual mistake."""
    z = np.asarray(logits, dtype=np.float64)
    z = z * temperature if slip == "times" else z / temperature
    if top_k is not None and slip != "no top_k":
        if slip == "row of the batch":  # the lesson's 1-D code on a (B, V) array
            kth = np.sort(z)[-top_k]
        else:
            kth = np.sort(z, axis=-1)[:, [-top_k - 1 if slip == "k + 1" else -top_k]]
        z = np.where(z <= kth if slip == "strict" else z < kth, -np.inf, z)
    if slip == "argmax":
        return z.argmax(axis=-1)
    weights = np.exp(z - z.max(axis=-1, keepdims=True))
    return np.asarray(Rng(seed).sample_categorical(weights))


def _sampling_mistakes(logits: np.ndarray, temperature: float, top_k: int | None,
                       seed: int) -> dict[str, Any]:
    """What the usual slips of sampling give (each computed when asked)."""
    def drawn(slip: str) -> Any:
        return lambda: _drawn(logits, temperature, top_k, seed, slip)

    return {
        "the logits multiplied by the temperature: divide them by it": drawn("times"),
        "top_k is ignored: keep only the k largest logits of each row": drawn("no top_k"),
        "the k-th largest logit is dropped too: drop only the logits below it "
        "(z < the k-th largest)": drawn("strict"),
        "k + 1 logits kept: the k-th largest of a row is np.sort(z, axis=-1)[:, [-k]]":
            drawn("k + 1"),
        "np.sort(z)[-top_k] picks a row of the batch (the lesson's code is for one row): "
        "take each row's k-th largest, np.sort(z, axis=-1)[:, [-top_k]]":
            drawn("row of the batch"),
        "the most likely token every time (argmax): draw with "
        "generator.sample_categorical(weights)": drawn("argmax"),
    }


def _sample_checked(checker: Checker, sample_next: Any, logits: np.ndarray,
                    temperature: float, top_k: int | None, seed: int) -> np.ndarray:
    """The learner's tokens, their shape checked; an overflow in exp named as such."""
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        try:
            received, failure = sample_next(logits, temperature, top_k, Rng(seed)), None
        except Exception as error:  # reported below, after the overflow that caused it
            received, failure = None, error
    if any("overflow" in str(warning.message) for warning in warned):
        checker.true(False, "exp overflowed to inf on logits hundreds apart"
                     + (f", then your code raised {type(failure).__name__}: {failure}"
                        if failure else ""),
                     "exp(z) without subtracting each row's largest logit first: it "
                     "overflows past about 709")
    if failure is not None:
        raise failure
    received = np.asarray(received)
    checker.shape(received, (len(logits),), "tokens (B,): one per row",
                  {"one token for the whole batch: draw one per row, with one "
                   "sample_categorical call on the (B, V) weights": ()})
    return received


@exercise_check("Exercise 1 (sample_next)", yours="sample_next")
def check_sample_next(checker: Checker, sample_next: Any, model: Any,
                      prompts: np.ndarray) -> None:
    """``sample_next(logits, temperature, top_k, generator)`` against the token
    ``model.generate`` draws after each prompt, for five settings and ten seeds; then a tie
    at the k-th value and logits hundreds apart."""
    with tl.no_grad():
        prompt_logits = model(prompts).numpy()[:, -1]  # (6, V): the next letter
    for temperature, top_k in ((1.0, None), (0.7, None), (1.5, 5), (0.8, 3), (1.0, 1)):
        with checker.case(f"temperature {temperature}, top_k {top_k}, seeds 0 to 9",
                          hint="temperature first, then top-k, then one sample_categorical "
                               "call for all the rows"):
            for seed in range(10):
                theirs = model.generate(prompts, 1, temperature=temperature, top_k=top_k,
                                        rng=Rng(seed), use_cache=False)[:, -1]
                mine = _sample_checked(checker, sample_next, prompt_logits, temperature,
                                       top_k, seed)
                checker.equal(mine, theirs, f"the tokens drawn with Rng({seed})",
                              _sampling_mistakes(prompt_logits, temperature, top_k, seed))
    with checker.case("a tie at the k-th value is kept (top_k=2 of logits 2, 1, 1, 0)",
                      hint="drop the logits below the k-th largest, not all but k of them"):
        tied = np.array([[2.0, 1.0, 1.0, 0.0]])
        kept_weights = np.exp(np.array([[0.0, -1.0, -1.0, -np.inf]]))
        for seed in range(20):
            checker.equal(_sample_checked(checker, sample_next, tied, 1.0, 2, seed),
                          Rng(seed).sample_categorical(kept_weights),
                          f"the token drawn with Rng({seed})",
                          {"only k logits kept where the k-th value is tied: keep every "
                           "logit not below the k-th largest (z < kth dropped)":
                               lambda seed=seed: Rng(seed).sample_categorical(
                                   np.exp(np.array([[0.0, -1.0, -np.inf, -np.inf]]))),
                           **_sampling_mistakes(tied, 1.0, 2, seed)})
    with checker.case("logits hundreds apart at temperature 0.25 (rows 400, 399.75, 0 and "
                      "-300, 250, 249.5), with and without top_k=2",
                      hint="exp overflows past about 709: subtract each row's largest logit "
                           "(after the temperature) before exp; the probabilities do not "
                           "change"):
        extreme = np.array([[400.0, 399.75, 0.0], [-300.0, 250.0, 249.5]])
        # divided by 0.25, less the row's largest: (0, -1, -1600) and (-2200, 0, -2)
        extreme_weights = np.exp(np.array([[0.0, -1.0, -1600.0], [-2200.0, 0.0, -2.0]]))
        for top_k in (None, 2):
            for seed in range(10):
                checker.equal(_sample_checked(checker, sample_next, extreme, 0.25, top_k, seed),
                              Rng(seed).sample_categorical(extreme_weights),
                              f"the tokens drawn with Rng({seed}), top_k {top_k}",
                              _sampling_mistakes(extreme, 0.25, top_k, seed))


# ------------------------------------------------------------------------------ exercise 2
def _what_the_caches_hold(model: Any, batch: int, prompt_length: int,
                          new_tokens: int) -> dict[str, Any] | None:
    """length, storage shape and bytes of the model's caches after a prompt and single
    tokens, or None when a pass raises ValueError (it does not fit)."""
    ids = Rng(batch).integers(0, model.config.vocabulary_size,
                              (batch, prompt_length + new_tokens))
    caches = model.new_cache()
    try:
        with tl.no_grad():
            model(ids[:, :prompt_length], caches)
            for t in range(prompt_length, prompt_length + new_tokens):
                model(ids[:, t:t + 1], caches)
    except ValueError:
        return None
    return {"length": caches[0].length, "storage": tuple(caches[0].keys.shape),
            "bytes": sum(c.keys.nbytes + c.values.nbytes for c in caches)}


def _cache_mistakes(config: Any, batch: int, prompt_length: int,
                    new_tokens: int) -> dict[str, dict[str, Any]]:
    """What the usual slips of predicting the caches give, key by key (a storage shape as an
    array: a tuple would be a mistake of a shape check)."""
    length, capacity, heads = prompt_length + new_tokens, config.context_length, config.heads
    width = config.channels // heads
    storage = batch * heads * capacity * width
    return {
        "length": {"only the prompt counted: every single token adds a position too":
                       prompt_length,
                   "only the single tokens counted: the prompt fills positions too":
                       new_tokens},
        "storage": {"storage for the positions filled: a cache allocates all "
                    "context_length positions at its first append":
                        np.array([batch, heads, length, width]),
                    "(batch, positions, heads, width): a cache keeps (B, H, T, D), heads "
                    "before positions": np.array([batch, capacity, heads, width]),
                    "the full width C per head: a head's keys have C / heads entries":
                        np.array([batch, heads, capacity, config.channels]),
                    "no batch axis: every sequence of the batch has its own keys":
                        np.array([heads, capacity, width])},
        "bytes": {"keys only: the values take as many bytes again": config.layers * storage * 4,
                  "one block's cache: every block has its own": 2 * storage * 4,
                  "8 bytes a number: the cache is float32, 4 bytes":
                      2 * config.layers * storage * 8,
                  "the positions filled: the storage holds context_length positions":
                      2 * config.layers * batch * heads * length * width * 4},
    }


@exercise_check("Exercise 2 (predicted_cache)", yours="predicted_cache", reads=("config",))
def check_predicted_cache(checker: Checker, predicted_cache: Any, model: Any) -> None:
    """``predicted_cache(batch, prompt_length, new_tokens)`` against the model's caches after
    those passes: None where they do not fit, else the length, storage and bytes."""
    config = model.config
    for batch, prompt_length, new_tokens in ((1, 1, 0), (6, 3, 5), (8, 16, 0), (2, 10, 7)):
        fits = prompt_length + new_tokens <= config.context_length
        with checker.case(f"batch {batch}, a prompt of {prompt_length}, then {new_tokens} "
                          "single tokens", hint="storage is allocated for the whole capacity "
                          "(context_length), not for the positions filled" if fits else
                          "how many positions can a cache from new_cache() hold?"):
            truth = _what_the_caches_hold(model, batch, prompt_length, new_tokens)
            mine = predicted_cache(batch, prompt_length, new_tokens)
            if truth is None or mine is None:
                checker.true(mine is None and truth is None,
                             f"the prediction (None: it does not fit): expected "
                             f"{'None' if truth is None else truth}, received {mine}",
                             "it does not fit: a cache from new_cache() holds context_length "
                             "positions, and one more raises ValueError (return None)"
                             if truth is None else
                             "None though it fits: a cache holds exactly context_length "
                             "positions, so a length equal to it still fits")
                continue
            mistakes = _cache_mistakes(config, batch, prompt_length, new_tokens)
            for key in ("length", "storage", "bytes"):
                checker.equal(tuple(mine[key]) if key == "storage" else mine[key],
                              truth[key], key, mistakes[key])


# ------------------------------------------------------------------------------ exercise 3
def _attended(layer: Any, inputs: np.ndarray, chunks: list[int], slip: str = ""
              ) -> tuple[np.ndarray, np.ndarray]:
    """(the outputs (T, C) of the chunks joined, the keys stored (H, T, D)) of a cached
    attention step by step; ``slip`` names a usual mistake."""
    W, b = layer.qkv_weight.numpy(), layer.qkv_bias.numpy()  # noqa: N806
    heads, width = layer.heads, layer.head_width
    total = sum(chunks)
    keys, values = np.full((heads, 16, width), np.nan), np.full((heads, 16, width), np.nan)
    length, outputs = 0, []
    for size in chunks:
        x_new = inputs[length:length + size]
        q, k, v = ((x_new @ W[i] + (0 if slip == "no key bias" and i == 1 else b[i]))
                   .reshape(size, heads, width).transpose(1, 0, 2) for i in range(3))
        end = length + size
        at = slice(0, size) if slip == "written at 0" else slice(length, end)
        keys[:, at], values[:, at] = k, v
        scores = q @ keys[:, :end].transpose(0, 2, 1)
        if slip != "no scale":
            scores = scores / np.sqrt(width)
        first = 0 if slip == "mask from 0" else length
        future = np.arange(end)[None, :] > first + np.arange(size)[:, None]
        if slip == "mask off by one":
            future = np.arange(end)[None, :] >= length + np.arange(size)[:, None]
        if slip != "no mask":
            scores = np.where(future, -np.inf, scores)
        with np.errstate(invalid="ignore"):
            weights = np.exp(scores - scores.max(-1, keepdims=True))
            weights /= weights.sum(-1, keepdims=True)
        mixed = (weights @ values[:, :end]).transpose(1, 0, 2).reshape(size, heads * width)
        if slip == "no output projection":
            outputs.append(mixed)
        else:
            outputs.append(mixed @ layer.output.weight.numpy().T
                           + (0 if slip == "no output bias" else layer.output.bias.numpy()))
        length = end
    return np.concatenate(outputs), keys[:, :total]


_ATTENTION_SLIPS = {
    "no mask": "no causal mask within a chunk: new query i sees keys 0 .. length + i only",
    "mask off by one": "the mask hides each query's own key: new query i sees keys 0 .. "
                       "length + i, itself included",
    "mask from 0": "the mask counts from position 0, not from `length`: new query i sits at "
                   "position length + i",
    "no scale": "the scores are not divided by sqrt(D)",
    "no output projection": "the output projection is missing: mixed @ output.weightᵀ + "
                            "output.bias",
    "no output bias": "the output projection's bias is not added",
    "written at 0": "the new keys and values written at positions 0 .. T_new: they go at "
                    "length .. length + T_new",
    "no key bias": "the keys without their bias: k = x W[1] + b[1]",
}


@exercise_check("Exercise 3 (cached_attention)", yours="cached_attention")
def check_cached_attention(checker: Checker, cached_attention: Any, model: Any, x: Any) -> None:
    """``cached_attention(attention, keys, values, length, x_new)`` chunk by chunk over
    storage filled with NaN: each new length and output's shape, then the keys and values
    stored, then the outputs joined, against the layer's full causal output and a
    ``KVCache``; on the lesson's 7 positions in block 0 and 10 random ones in block 1."""
    inputs = x.numpy() if hasattr(x, "numpy") else np.asarray(x)
    other_input = Rng(12).normal(size=(1, 10, model.config.channels))
    layers = {"block 0 on the lesson's 7 positions": (model.blocks[0].attention, inputs),
              "block 1 on 10 random positions": (model.blocks[1].attention, other_input)}
    for what, chunks in (("block 0 on the lesson's 7 positions", [1] * 7),
                         ("block 0 on the lesson's 7 positions", [6, 1]),
                         ("block 0 on the lesson's 7 positions", [4, 3]),
                         ("block 1 on 10 random positions", [10]),
                         ("block 1 on 10 random positions", [5, 1, 1, 3])):
        layer, data = layers[what]
        with tl.no_grad():
            expected = layer(tl.Tensor(data)).numpy()[0]
        with checker.case(f"{what}, in chunks {chunks}",
                          hint="new query i sits at position length + i and sees keys 0 .. "
                               "length + i; read only the first `end` positions of the "
                               "storage"):
            shape = (layer.heads, 16, layer.head_width)
            keys, values = np.full(shape, np.nan), np.full(shape, np.nan)
            length, outputs, reference = 0, [], KVCache(16)
            for size in chunks:
                out, new_length = cached_attention(layer, keys, values, length,
                                                   data[0, length:length + size])
                checker.equal(new_length, length + size, "the new length", {
                    "the old length returned: return length + T_new": length,
                    "T_new returned: return length + T_new": size})
                checker.shape(out, (size, data.shape[-1]), "the output (T_new, C)", {
                    "the heads are not merged back: (H, T_new, D) -> (T_new, H * D)":
                        (layer.heads, size, layer.head_width)})
                outputs.append(np.asarray(out))
                length = new_length
            with tl.no_grad():
                layer(tl.Tensor(data), cache=reference)

            def slipped(slip: str, part: int, data: Any = data, chunks: list = chunks,
                        layer: Any = layer) -> Any:
                return lambda: _attended(layer, data[0], chunks, slip)[part]

            unwritten = np.full((layer.heads, length, layer.head_width), np.nan)
            checker.close(keys[:, :length], reference.keys[0, :, :length], "the stored keys",
                          rtol=1e-5, atol=1e-5, mistakes={
                              "the new keys are not written into the storage: "
                              "keys[:, length:end] = k": unwritten,
                              **{said: slipped(slip, 1)
                                 for slip, said in _ATTENTION_SLIPS.items()}})
            checker.close(values[:, :length], reference.values[0, :, :length],
                          "the stored values", rtol=1e-5, atol=1e-5, mistakes={
                              "the new values are not written into the storage: "
                              "values[:, length:end] = v": unwritten})
            checker.close(np.concatenate(outputs), expected, "the outputs, all chunks joined",
                          rtol=1e-4, atol=1e-5, mistakes={
                              "the storage read past the positions written (NaN there): "
                              "attend over keys[:, :end] only": np.full(expected.shape, np.nan),
                              **{said: slipped(slip, 0)
                                 for slip, said in _ATTENTION_SLIPS.items()}})


# ------------------------------------------------------------------------------ exercise 4
def _counted_multiply_adds(decoder: Any, t: int, cached: bool) -> int:
    """Multiply-adds from the shapes a step really processes (recorded by hooks)."""
    ids = Rng(t).integers(0, decoder.config.vocabulary_size, (1, t))
    with capture_activations(decoder) as recorded, tl.no_grad():
        if cached:
            caches = decoder.new_cache()
            if t > 1:
                decoder(ids[:, :-1], caches)  # the earlier positions, cached
            decoder(ids[:, -1:], caches)  # the step itself: the last pass recorded
        else:
            decoder(ids)
    total, rows = 0, 0
    for i, block in enumerate(decoder.blocks):
        rows = recorded.arrays(f"blocks.{i}.residual_mlp")[-1].shape[1]  # positions processed
        per_row = sum(p.numel() for p in (block.attention.qkv_weight,
                                          block.attention.output.weight,
                                          block.mlp_input.weight, block.mlp_output.weight))
        probabilities = recorded.arrays(f"blocks.{i}.attention.probabilities")[-1]
        total += rows * per_row + 2 * probabilities.size * block.attention.head_width
    return total + rows * decoder.language_model_head.weight.numel()


def _work_mistakes(config: Any, t: int, cached: bool) -> dict[str, int]:
    """What the usual slips of counting a step's multiply-adds give."""
    c, v, layers = config.channels, config.vocabulary_size, config.layers
    rows, keys = (1, t) if cached else (t, t)

    def count(per_row: int = 12 * c * c, attention: int = 2 * rows * keys * c,
              head: int = rows * c * v, blocks: int = layers) -> int:
        return blocks * (rows * per_row + attention) + head

    mistakes = {
        "the scores and the mixing counted once: each takes D per query, key and head":
            count(attention=rows * keys * c),
        "the language-model head is not counted: C V per position processed": count(head=0),
        "the MLP counted as 4C²: its two layers take 4C² each": count(per_row=8 * c * c),
        "the Q/K/V projection counted as C²: it is 3C²": count(per_row=10 * c * c),
        "one block counted: every one of config.layers blocks does this work":
            count(blocks=1),
    }
    if cached:
        mistakes |= {
            "a cached step counted as the full recomputation: it processes one new position":
                layers * (12 * t * c * c + 2 * t * t * c) + t * c * v,
            "the cached step's query meets t - 1 keys: with its own it meets t":
                count(attention=2 * (t - 1) * c),
            "the cached step's scores counted as t x t: its one query meets t keys":
                count(attention=2 * t * t * c),
        }
    else:
        mistakes["only the causal half of the scores: the fused attention computes the "
                 "whole t x t matrix, then masks it"] = count(attention=t * (t + 1) * c)
    return mistakes


@exercise_check("Exercise 4 (multiply_adds)", yours="multiply_adds")
def check_multiply_adds(checker: Checker, multiply_adds: Any, model: Any, long_model: Any) -> None:
    """``multiply_adds(config, t, cached)`` against the multiply-adds of the shapes a full
    recomputation and a cached step really process, for the lesson's model, the timing
    cell's ``long_model`` and a wider model."""
    wide_config = DecoderConfig(vocabulary_size=27, context_length=32, channels=64, heads=8,
                                layers=3)
    decoders = {"the lesson's model": model, "the timing cell's long_model": long_model,
                "a wider model (64 channels, 8 heads, 3 blocks)": Decoder(wide_config,
                                                                          rng=Rng(4))}
    for what, t in (("the lesson's model", 1), ("the lesson's model", 9),
                    ("the timing cell's long_model", 100),
                    ("a wider model (64 channels, 8 heads, 3 blocks)", 32)):
        decoder = decoders[what]
        for cached in (False, True):
            step = "a cached step" if cached else "full recomputation"
            with checker.case(f"{what}, {step} at t = {t}",
                              hint="full: t positions through every layer and a t x t score "
                                   "matrix; cached: one position and 1 x t scores"):
                checker.equal(multiply_adds(decoder.config, t, cached),
                              _counted_multiply_adds(decoder, t, cached), "multiply-adds",
                              _work_mistakes(decoder.config, t, cached))
