"""The checks of notebook 13 (attention): ``causal_attention_head``, ``CausalSelfAttention``
and the four exercises.

The head is compared with tensorlib's ``F.causal_attention`` and ``F.causal_softmax``, the
layer with ``MultiheadAttention``, on seeded inputs chosen to expose the usual slips (a
batch and heads as leading axes, T = 1, large scores, float32, biases that are not zero):
the shapes first, then the weights (where a mistake in the scores, the scale or the mask
shows), then the output, and only then, after one backward pass, the gradients. Each usual
slip is computed here in numpy, so that a report names the one the learner's result is.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

import tensorlib as tl
import tensorlib.nn.functional as F
from tensorlib.course.checks.registry import HandOn, exercise_check, piece_check
from tensorlib.course.exercises import Checker
from tensorlib.engine.splitmix64 import Rng
from tensorlib.nn import MultiheadAttention

__all__ = ["check_causal_attention_head", "check_causal_self_attention",
           "check_attention_predictions", "check_last_position_attention",
           "check_window_mask", "check_float16_predictions"]


# ------------------------------------------------------------------------------ numpy twins
def _softmax(scores: np.ndarray, axis: int = -1) -> np.ndarray:
    """A stable softmax along ``axis`` (a row of -inf gives nan, as it does in the learner's)."""
    with np.errstate(invalid="ignore", over="ignore"):
        exp = np.exp(scores - scores.max(axis=axis, keepdims=True))
        return exp / exp.sum(axis=axis, keepdims=True)


def _attend(q: np.ndarray, k: np.ndarray, v: np.ndarray, divide_by: float = 1.0,
            forbidden: np.ndarray | None = None, axis: int = -1,
            keys_first: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(output, weights) of one head in float64: the scores ``q k^T`` (``k q^T`` when
    ``keys_first``) divided by ``divide_by``, -inf where ``forbidden``, a softmax along
    ``axis``."""
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    scores = (k @ np.swapaxes(q, -1, -2) if keys_first else q @ np.swapaxes(k, -1, -2))
    scores = scores / divide_by
    if forbidden is not None:
        scores = np.where(forbidden, -np.inf, scores)
    weights = _softmax(scores, axis)
    with np.errstate(invalid="ignore"):
        return weights @ v, weights


def _future(length: int, diagonal: int = 1) -> np.ndarray:
    """True where the key comes ``diagonal`` or more places after the query."""
    return np.triu(np.ones((length, length), dtype=bool), k=diagonal)


def _head_slips(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> dict[str, tuple[np.ndarray,
                                                                              np.ndarray]]:
    """What the usual slips of one head give: {what the learner did: (output, weights)}."""
    length, width = q.shape[-2:]
    root, future = math.sqrt(width), _future(length)
    return {
        "the scores are not divided by sqrt(D)": _attend(q, k, v, 1.0, future),
        "the scores are divided by D, not by sqrt(D)": _attend(q, k, v, width, future),
        "the scores are divided by sqrt(T), the length, not by sqrt(D), the head's width":
            _attend(q, k, v, math.sqrt(length), future),
        "no mask: each query also sees the keys after it": _attend(q, k, v, root),
        "the mask forbids the diagonal too (k=0 in np.triu): position 0 sees no key, a row "
        "of nan": _attend(q, k, v, root, _future(length, 0)),
        "the mask forbids the past (np.tril), not the future: True above the diagonal, "
        "np.triu(..., k=1)": _attend(q, k, v, root, np.tril(np.ones((length, length), bool),
                                                            k=-1)),
        "the softmax runs over the queries (dim=-2), not over the keys (dim=-1)":
            _attend(q, k, v, root, future, axis=-2),
        "the scores are k @ q.transpose(): keys times queries, the transpose of "
        "q @ k.transpose()": _attend(q, k, v, root, future, keys_first=True),
    }


def _weights_of(slips: Mapping[str, tuple[np.ndarray, np.ndarray]],
                index: int) -> dict[str, np.ndarray]:
    """The weights (index 1) or the outputs (index 0) of each slip."""
    return {what: pair[index] for what, pair in slips.items()}


# ------------------------------------------------------------------------- tensorlib's head
def _tensorlib_head(q: Any, k: Any, v: Any) -> tuple[Any, Any]:
    """tensorlib's one head: the output from F.causal_attention (one head, with q, k and v
    side by side as its fused qkv), the weights from F.causal_softmax."""
    length, width = q.shape[-2:]
    qkv = tl.cat([q, k, v], dim=-1).reshape(-1, length, 3 * width)          # (N, T, 3D)
    output = F.causal_attention(qkv, heads=1).reshape(q.shape)
    return output, F.causal_softmax(q @ k.transpose(), scale=1 / math.sqrt(width))


_HEAD_USUAL = ("q @ k.transpose() / math.sqrt(D); -inf above the diagonal; softmax over the "
               "last axis")
_HEAD_CASES = [  # what, shape of q, k and v, their size (0: the worked example), dtype, hint
    ("the worked example: T = 2, D = 1", (2, 1), 0, np.float64, _HEAD_USUAL + "; weights @ v"),
    ("one sequence, T = 5, D = 4", (5, 4), 1, np.float64, _HEAD_USUAL + " (a row per query)"),
    ("T = 3, D = 16", (3, 16), 1, np.float64, "scale by 1/sqrt(D), D = q.shape[-1]"),
    ("a batch, shape (3, 4, 2)", (3, 4, 2), 1, np.float64,
     "k.transpose() swaps the last two axes only; the mask's T is q.shape[-2]"),
    ("a batch and heads, shape (2, 3, 5, 4)", (2, 3, 5, 4), 1, np.float64,
     "work on the last two axes only; the (T, T) mask broadcasts over the others"),
    ("T = 1, shape (2, 1, 3)", (2, 1, 3), 1, np.float64, "a lone position sees itself"),
    ("large scores: q and k of size 40", (4, 5), 40, np.float64,
     "a stable softmax subtracts each row's maximum before exp (or use .softmax)"),
    ("float32 in, float32 out, shape (2, 6, 4)", (2, 6, 4), 1, np.float32,
     "keep float32: build nothing in float64 (a float64 array widens the result)"),
]
_WORKED = [np.array([[1.0], [2.0]]), np.array([[0.0], [1.0]]), np.array([[10.0], [20.0]])]
_CUT = ("the graph was cut: a numpy step (.numpy(), np.exp, np.where) in place of a tensor "
        "operation, so no gradient flows back")


def _pair(checker: Checker, result: Any, what: str) -> tuple[Any, Any]:
    """``result`` as (output, weights), or the case stops saying what came instead."""
    checker.true(isinstance(result, tuple) and len(result) == 2,
                 f"{what} should return (output, weights), received "
                 f"{type(result).__name__}", "only one result returned: return weights @ v, "
                 "weights")
    return result


def _tensors(checker: Checker, pair: tuple[Any, Any]) -> None:
    """Both results are tensors (so that autograd gives their gradients)."""
    for value, name in zip(pair, ("the output", "the weights"), strict=True):
        checker.true(isinstance(value, tl.Tensor), f"{name} is a {type(value).__name__}, not "
                     "a tensorlib Tensor", "numpy arrays where tensors are needed: build it "
                     "from tensor operations (q @ k.transpose(), masked_fill, .softmax)")


def _gradients(checker: Checker, names: list[str], received: list[Any],
               expected: list[Any], rtol: float, atol: float) -> None:
    """Each gradient is there and close to the expected one."""
    for name, mine, theirs in zip(names, received, expected, strict=True):
        checker.true(mine is not None, f"{name} is None after backward", _CUT)
        checker.close(mine, theirs, name, rtol=rtol, atol=atol)


@piece_check("one head of causal self-attention", yours="causal_attention_head",
             label="causal_attention_head", package_name="tensorlib's (F.causal_attention)")
def check_causal_attention_head(checker: Checker, causal_attention_head: Any) -> HandOn:
    """``causal_attention_head(q, k, v)`` against F.causal_attention and F.causal_softmax on
    eight shapes (a batch, heads, T = 1, large scores, float32): the shapes, the weights,
    the output, then the gradients of q, k and v; then that no position sees the future."""
    draw = Rng(131)
    for what, shape, size, dtype, hint in _HEAD_CASES:
        with checker.case(what, hint=hint):
            arrays = [(draw.normal(size=shape, dtype=np.float64) * size).astype(dtype)
                      for _ in range(3)] if size else _WORKED
            upstream = [draw.normal(size=shape[:-1] + (n,), dtype=np.float64).astype(dtype)
                        for n in shape[-1:] + shape[-2:-1]]   # for the output, the weights
            mine = [tl.tensor(array, requires_grad=True) for array in arrays]
            theirs = [tl.tensor(array, requires_grad=True) for array in arrays]
            result = causal_attention_head(*mine)
            output, weights = _pair(checker, result, "causal_attention_head")
            expected_output, expected_weights = _tensorlib_head(*theirs)
            _tensors(checker, (output, weights))
            length = shape[-2]
            swapped = "output and weights swapped: return (weights @ v, weights), in that order"
            checker.shape(weights, shape[:-1] + (length,), "the weights (..., T, T)",
                          {swapped: shape})
            checker.shape(output, shape, "the output (..., T, D)",
                          {swapped: shape[:-1] + (length,)})
            checker.equal(np.dtype(output.dtype), np.dtype(dtype), "the output's dtype")
            rtol, atol = (1e-4, 1e-5) if dtype == np.float32 else (1e-9, 1e-11)
            slips = _head_slips(*arrays)
            checker.close(weights, expected_weights, "the weights", rtol=rtol, atol=atol,
                          mistakes=_weights_of(slips, 1))
            checker.close(output, expected_output, "the output", rtol=rtol, atol=atol,
                          mistakes={"the weights average the queries (weights @ q), "
                                    "not the values: weights @ v": np.asarray(
                                        expected_weights.numpy(), np.float64) @ arrays[0]})
            ((output * upstream[0]).sum() + (weights * upstream[1]).sum()).backward()
            ((expected_output * upstream[0]).sum()
             + (expected_weights * upstream[1]).sum()).backward()
            _gradients(checker, ["q's gradient", "k's gradient", "v's gradient"],
                       [t.grad for t in mine], [t.grad for t in theirs], rtol, atol)
    with checker.case("position 0 sees only itself; changing positions 4 and 5 changes no "
                      "earlier output", hint="forbid the keys after the query (column > row), "
                      "not the diagonal, with -inf before the softmax"):
        arrays = [draw.normal(size=(6, 3), dtype=np.float64) for _ in range(3)]
        before_output, before_weights = _pair(checker, causal_attention_head(
            *map(tl.tensor, arrays)), "causal_attention_head")
        later = (np.arange(6) >= 4)[:, None] * 5.0                    # +5 at positions 4 and 5
        after_output, _ = causal_attention_head(*(tl.tensor(array + later) for array in arrays))
        checker.close(before_weights[0], np.eye(6)[0], "the weights of position 0")
        checker.close(after_output[:4], before_output[:4], "outputs 0..3 once 4 and 5 changed")
    return HandOn(causal_attention_head, _tensorlib_head)


# ------------------------------------------------------------------- the multi-head layer
def _layer_numpy(layer: Any, x: np.ndarray, transposed: bool = False,
                 heads_first: bool = False, no_bias: bool = False, width_scale: bool = False,
                 merged_straight: bool = False,
                 no_output: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(output (B, T, C), weights (B, H, T, T)) of ``layer``'s parameters on x, in float64,
    as the layer computes them or with one of the usual slips: qkv_weight[i] transposed,
    q, k, v reshaped straight to (B, H, T, D), no qkv_bias, the scores divided by sqrt(C),
    the heads merged without permuting back, no output projection."""
    weight, bias = (np.asarray(p.numpy(), np.float64) for p in (layer.qkv_weight,
                                                                layer.qkv_bias))
    batch, length, channels = x.shape
    heads = layer.heads
    width = channels // heads

    def split(z: np.ndarray) -> np.ndarray:  # (B, T, C) -> (B, H, T, D)
        if heads_first:
            return z.reshape(batch, heads, length, width)
        return z.reshape(batch, length, heads, width).transpose(0, 2, 1, 3)

    q, k, v = (split(x @ (weight[i].T if transposed else weight[i])
                     + (0.0 if no_bias else bias[i])) for i in range(3))
    context, weights = _attend(q, k, v, math.sqrt(channels if width_scale else width),
                               _future(length))
    merged = (context.reshape(batch, length, channels) if merged_straight
              else context.transpose(0, 2, 1, 3).reshape(batch, length, channels))
    if no_output:
        return merged, weights
    out_weight, out_bias = (np.asarray(p.numpy(), np.float64) for p in (layer.output.weight,
                                                                      layer.output.bias))
    return merged @ out_weight.T + out_bias, weights


_LAYER_SLIPS = {  # what the learner did: the keywords of _layer_numpy that do it
    "qkv_weight[i] used transposed: q = x @ qkv_weight[0] + qkv_bias[0], with no .T":
        {"transposed": True},
    "q, k, v reshaped straight to (B, H, T, D): reshape to (B, T, H, D), then permute(0, 2, 1, "
    "3)": {"heads_first": True},
    "qkv_bias is not added: q = x @ qkv_weight[0] + qkv_bias[0]": {"no_bias": True},
    "the scores are divided by sqrt(C), the layer's width, not by sqrt(D), a head's":
        {"width_scale": True},
    "the heads are merged without permuting back: permute(0, 2, 1, 3) to (B, T, H, D), then "
    "reshape to (B, T, C)": {"merged_straight": True},
    "the output projection is missing: return self.output(merged)": {"no_output": True},
}


def _layer_case(layer_class: Any, channels: int, heads: int, batch: int, length: int,
                seed: int) -> tuple[Any, Any, list[np.ndarray]]:
    """A float64 layer_class(channels, heads) from Rng(seed), its biases made nonzero; a
    random input x (B, T, C) that requires its gradient; the upstream gradients of the output
    and of the weights."""
    layer = layer_class(channels, heads, rng=Rng(seed), dtype=np.float64)
    data = Rng(seed + 1)
    with tl.no_grad():
        layer.qkv_bias.copy_(data.normal(size=(3, channels), dtype=np.float64))
        layer.output.bias.copy_(data.normal(size=(channels,), dtype=np.float64))
    x = tl.tensor(data.normal(size=(batch, length, channels), dtype=np.float64),
                  requires_grad=True)
    upstream = [data.normal(size=shape, dtype=np.float64)
                for shape in [(batch, length, channels), (batch, heads, length, length)]]
    return layer, x, upstream


_LAYER_USUAL = ("q, k, v = x @ qkv_weight[i] + qkv_bias[i]; reshape to (B, T, H, D) and permute "
                "to (B, H, T, D); attend; permute back, reshape to (B, T, C); then self.output")
_LAYER_CASES = [  # what, C, H, B, T, hint
    ("B = 2, T = 6, C = 8, H = 2", 8, 2, 2, 6, _LAYER_USUAL),
    ("one head: B = 1, T = 5, C = 4, H = 1", 4, 1, 1, 5, _LAYER_USUAL),
    ("4 heads of width 3: B = 3, T = 7, C = 12", 12, 4, 3, 7,
     "each head scores with 1/sqrt(D), D = C / H; split as (B, T, H, D), not (B, H, T, D)"),
    ("T = 1: B = 2, C = 6, H = 3", 6, 3, 2, 1, _LAYER_USUAL),
]


@piece_check("CausalSelfAttention", yours="CausalSelfAttention")
def check_causal_self_attention(checker: Checker, CausalSelfAttention: Any) -> HandOn:  # noqa: N803
    """``CausalSelfAttention.forward`` against MultiheadAttention with the same weights (biases
    not zero), in float64 on four shapes: the shapes, the weights, the output, then the
    gradients of x and of every parameter; then float32 without return_attention."""
    for what, channels, heads, batch, length, hint in _LAYER_CASES:
        with checker.case(what, hint=hint):
            mine, x_mine, upstream = _layer_case(CausalSelfAttention, channels, heads, batch,
                                                 length, 3)
            theirs, x_theirs, _ = _layer_case(MultiheadAttention, channels, heads, batch,
                                              length, 3)
            output, weights = _pair(checker, mine(x_mine, return_attention=True),
                                    "with return_attention=True the layer")
            expected_output, expected_weights = theirs(x_theirs, return_attention=True)
            _tensors(checker, (output, weights))
            width = channels // heads
            checker.shape(weights, (batch, heads, length, length), "the weights (B, H, T, T)",
                          {"the heads are not split: reshape q, k, v to (B, T, H, D), then "
                           "permute to (B, H, T, D), before attending": (batch, length, length),
                           "split to (B, T, H, D) but not permuted: permute(0, 2, 1, 3) to "
                           "(B, H, T, D) before attending": (batch, length, heads, heads)})
            checker.shape(output, (batch, length, channels), "the output (B, T, C)",
                          {"the heads are not merged back: permute to (B, T, H, D), then "
                           "reshape to (B, T, C)": (batch, heads, length, width)})
            x_array = x_theirs.numpy()
            slips = {said: _layer_numpy(theirs, x_array, **keywords)
                     for said, keywords in _LAYER_SLIPS.items()}
            checker.close(weights, expected_weights, "the weights", rtol=1e-9, atol=1e-11,
                          mistakes=_weights_of(slips, 1))
            checker.close(output, expected_output, "the output", rtol=1e-9, atol=1e-11,
                          mistakes=_weights_of(slips, 0))
            ((output * upstream[0]).sum() + (weights * upstream[1]).sum()).backward()
            ((expected_output * upstream[0]).sum()
             + (expected_weights * upstream[1]).sum()).backward()
            names = [name for name, _ in theirs.named_parameters()]
            mine_parameters = dict(mine.named_parameters())
            checker.true(set(mine_parameters) == set(names), "the layer's parameters are "
                         f"{sorted(mine_parameters)}, expected {sorted(names)}",
                         "__init__ is given: keep its parameters as they are")
            _gradients(checker, ["x's gradient"] + [f"{name}'s gradient" for name in names],
                       [x_mine.grad] + [mine_parameters[name].grad for name in names],
                       [x_theirs.grad] + [p.grad for _, p in theirs.named_parameters()],
                       1e-9, 1e-11)
    with checker.case("float32 as in training, C = 32, H = 1, without return_attention",
                      hint="return the output alone unless return_attention; keep float32 "
                           "(a float64 array would widen it)"):
        x_32 = tl.tensor(Rng(9).normal(size=(4, 8, 32)))
        received = CausalSelfAttention(32, 1, rng=Rng(8))(x_32)
        checker.true(isinstance(received, tl.Tensor), "without return_attention the layer "
                     f"returns one tensor, received {type(received).__name__}",
                     "(output, weights) returned whatever return_attention says: return "
                     "(output, weights) if return_attention else output")
        checker.equal(received.dtype, np.dtype(np.float32), "the output's dtype")
        checker.close(received, MultiheadAttention(32, 1, rng=Rng(8))(x_32), "the output",
                      rtol=1e-4, atol=1e-5)
    return HandOn(CausalSelfAttention, MultiheadAttention,
                  given=bool(check_causal_attention_head.passed))


# ------------------------------------------------------------------------------ exercises
def _answer(checker: Checker, answers: Any, key: Any, what: str) -> Any:
    """``answers[key]``, or the case stops saying that the dict lacks it."""
    checker.true(isinstance(answers, dict), f"{what} should return a dict, received "
                 f"{type(answers).__name__}", "a missing return, or a value in place of the dict?")
    checker.true(key in answers, f"the dict has no key {key!r} (its keys: {list(answers)})",
                 f"the keys are named in the docstring: {key!r} is missing or misspelt")
    return answers[key]


# key -> {what the learner thought: the answer}; shapes as lists (named_mistake reads a tuple
# as a shape for Checker.shape only)
_SHAPE_SLIPS: dict[str, dict[str, Any]] = {
    "qkv_weight": {"one (C, 3C) matrix: MultiheadAttention keeps the three (C, C) matrices "
                   "stacked, (3, C, C)": [12, 36],
                   "(3, C, D): each projection maps the C channels to all C, not to one "
                   "head's D": [3, 12, 4]},
    "head_width": {"D = C: the heads split the channels, D = C / H": 12,
                   "D = H: the number of heads is not the width of one": 3},
    "probabilities": {"the head axis is missing: one (T, T) map per sequence and per head, "
                      "(B, H, T, T)": [2, 5, 5],
                      "(B, H, T, D) is the shape of the heads' outputs; the maps are "
                      "(B, H, T, T)": [2, 3, 5, 4]},
    "output": {"the heads are not merged back: the layer returns (B, T, C)": [2, 3, 5, 4]},
    "parameters": {"no bias counted: qkv_bias (3 C) and the output's bias (C) are parameters "
                   "too": 4 * 12 * 12,
                   "the output Linear is not counted (C x C and C more)": 3 * 12 * 12 + 3 * 12,
                   "qkv_bias is not counted (3 x C)": 4 * 12 * 12 + 12,
                   "the output Linear's bias is not counted (C)": 4 * 12 * 12 + 3 * 12},
}
_SHAPE_HINTS = {"qkv_weight": "one (C, C) matrix each for queries, keys and values",
                "head_width": "the heads split the channels",
                "probabilities": "one (T, T) map per sequence and per head",
                "output": "the heads are merged back and projected to C channels",
                "parameters": "the fused Q/K/V weight and bias, then the output Linear's "
                              "weight and bias"}


@exercise_check("Exercise 1 (predictions)", yours="predictions")
def check_attention_predictions(checker: Checker, predictions: Any) -> None:
    """Each predicted shape and count against MultiheadAttention(12, 3) on (2, 5, 12)."""
    layer = MultiheadAttention(12, 3, rng=Rng(0))
    output, probabilities = layer(tl.tensor(Rng(1).normal(size=(2, 5, 12))),
                                  return_attention=True)
    truth = {"qkv_weight": layer.qkv_weight.shape, "head_width": layer.head_width,
             "probabilities": probabilities.shape, "output": output.shape,
             "parameters": layer.num_parameters()}
    for key, expected in truth.items():
        with checker.case(key, hint=_SHAPE_HINTS[key]):
            received = _answer(checker, predictions(), key, "predictions()")
            checker.equal(tuple(received) if isinstance(received, (list, tuple)) else received,
                          expected, key, mistakes=_SHAPE_SLIPS[key])


def _random_attention(channels: int, heads: int, seed: int) -> MultiheadAttention:
    """A float64 MultiheadAttention with random weights and biases that are not zero."""
    module = MultiheadAttention(channels, heads, rng=Rng(seed), dtype=np.float64)
    qkv_bias, output_bias = module.qkv_bias, module.output.bias
    assert qkv_bias is not None and output_bias is not None  # a MultiheadAttention's, with bias
    with tl.no_grad():
        qkv_bias.copy_(Rng(seed + 100).normal(size=(3, channels), dtype=np.float64))
        output_bias.copy_(Rng(seed + 200).normal(size=(channels,), dtype=np.float64))
    return module


def _last_numpy(module: MultiheadAttention, x: np.ndarray, divide_by: str = "D",
                qkv_bias: bool = True, project: bool = True, transpose_output: bool = True,
                output_bias: bool = True) -> np.ndarray:
    """The layer's output at the last position (B, C), in numpy, or what a slip gives: the
    scores divided by sqrt(C) or not at all, no qkv_bias, no output projection, its weight
    not transposed or its bias left out."""
    batch, _, channels = x.shape
    heads, width = module.heads, module.head_width
    weight = module.qkv_weight.numpy()
    bias = np.zeros((3, channels)) if module.qkv_bias is None else module.qkv_bias.numpy()
    bias = bias if qkv_bias else np.zeros_like(bias)
    q = x[:, -1:] @ weight[0] + bias[0]                                         # (B, 1, C)
    k, v = x @ weight[1] + bias[1], x @ weight[2] + bias[2]                     # (B, T, C)
    q, k, v = (z.reshape(batch, -1, heads, width).transpose(0, 2, 1, 3) for z in (q, k, v))
    scale = {"D": math.sqrt(width), "C": math.sqrt(channels), "none": 1.0}[divide_by]
    p = _softmax(q @ k.transpose(0, 1, 3, 2) / scale)                            # (B, H, 1, T)
    merged = (p @ v).transpose(0, 2, 1, 3).reshape(batch, channels)             # (B, C)
    if not project:
        return merged
    out_weight = module.output.weight.numpy()
    out_weight = out_weight.T if transpose_output else out_weight
    output = module.output.bias
    return merged @ out_weight + (output.numpy() if output_bias and output is not None else 0.0)


@exercise_check("Exercise 2 (last_position_attention)", yours="last_position_attention")
def check_last_position_attention(checker: Checker, last_position_attention: Any) -> None:
    """``last_position_attention(attention, x)`` against ``attention(x)[:, -1]`` on three
    layers (biases not zero): the shape (B, C), then the values."""
    for batch, length, channels, heads in ((2, 6, 8, 2), (1, 9, 12, 3), (3, 1, 4, 1)):
        with checker.case(f"B={batch}, T={length}, C={channels}, H={heads}",
                          hint="split q, k and v into heads before the scores, scale by "
                               "1/sqrt(D) with D the head width, and merge the heads before "
                               "the output projection"):
            module = _random_attention(channels, heads, seed=length)
            inputs = Rng(length + 1).normal(size=(batch, length, channels), dtype=np.float64)
            with tl.no_grad():
                expected = module(tl.tensor(inputs)).numpy()[:, -1]
            received = np.asarray(last_position_attention(module, inputs))
            checker.shape(received, (batch, channels), "output at the last position (B, C)",
                          {"every position's output (B, T, C): keep only the last, "
                           "x[:, -1:] for the query": (batch, length, channels),
                           "the last position's axis is kept, (B, 1, C): reshape to (B, C)":
                           (batch, 1, channels),
                           "the heads are not merged: (B, H, D) back to (B, C)":
                           (batch, heads, channels // heads)})
            slips: dict[str, dict[str, Any]] = {
                     "the scores are not divided by sqrt(D)": {"divide_by": "none"},
                     "the scores are divided by sqrt(C), the layer's width, not by sqrt(D), a "
                     "head's": {"divide_by": "C"},
                     "qkv_bias is not added to q, k and v": {"qkv_bias": False},
                     "the output projection is missing: merged @ output.weight.T + "
                     "output.bias": {"project": False},
                     "output.weight is not transposed: a Linear stores (out, in), so "
                     "merged @ W.T + b": {"transpose_output": False},
                     "output.bias is not added": {"output_bias": False}}
            checker.close(received, expected, "output at the last position", rtol=1e-9,
                          atol=1e-10, mistakes={said: _last_numpy(module, inputs, **keywords)
                                                for said, keywords in slips.items()})


def _windows(length: int) -> tuple[np.ndarray, np.ndarray]:
    """The query (row) and key (column) index of every entry of a (length, length) mask."""
    rows, columns = np.indices((length, length))
    return rows, columns


_WINDOW_SLIPS: dict[str, Callable[[np.ndarray, np.ndarray, int], np.ndarray]] = {
    "True where attention is allowed: the mask is True where it is forbidden, as "
    "F.causal_mask": lambda t, s, w: ~((s > t) | (s <= t - w)),
    "the future is not forbidden: s > t must be True too": lambda t, s, w: s <= t - w,
    "the window is one key too long: key t - window must be forbidden (s <= t - window)":
        lambda t, s, w: (s > t) | (s < t - w),
    "the window is one key too short: key t - window + 1 is allowed (s <= t - window)":
        lambda t, s, w: (s > t) | (s <= t - w + 1),
    "the query's own key (s = t) is forbidden: only s > t is the future":
        lambda t, s, w: (s >= t) | (s <= t - w),
}


def _window_slips(length: int, window: int) -> dict[str, np.ndarray]:
    rows, columns = _windows(length)
    return {said: slip(rows, columns, window) for said, slip in _WINDOW_SLIPS.items()}


@exercise_check("Exercise 3 (window_mask)", yours="window_mask")
def check_window_mask(checker: Checker, window_mask: Any, q: np.ndarray, k: np.ndarray) -> None:
    """``window_mask(length, window)``: F.causal_mask for a window as long as the sequence,
    the mask itself for three shorter windows, then the attention of the first section's
    ``q`` and ``k`` with window 2."""
    for length in (5, 8):
        with checker.case(f"window {length} on length {length}: the causal mask",
                          hint="with a window as long as the sequence only the future is "
                               "forbidden"):
            received = np.asarray(window_mask(length, length))
            checker.shape(received, (length, length), "mask")
            checker.equal(received.astype(bool), F.causal_mask(length).numpy(), "mask",
                          mistakes=_window_slips(length, length))
    for length, window in ((6, 1), (6, 2), (8, 3)):
        with checker.case(f"window {window} on length {length}",
                          hint="key s is allowed for query t when t - window < s <= t"):
            received = np.asarray(window_mask(length, window))
            rows, columns = _windows(length)
            checker.shape(received, (length, length), "mask")
            checker.equal(received.astype(bool), (columns > rows) | (columns <= rows - window),
                          "mask", mistakes=_window_slips(length, window))
    scores = np.asarray(q, np.float64)[:5] @ np.asarray(k, np.float64)[:5].T / math.sqrt(
        np.shape(q)[1])
    with checker.case("window 2 applied to the 5 x 5 scores of the first section",
                      hint="forbidden scores become -inf, then the softmax renormalises each "
                           "row"):
        masked = _softmax(np.where(window_mask(5, 2), -np.inf, scores))
        expected = np.zeros((5, 5))
        for t in range(5):
            allowed = slice(max(0, t - 1), t + 1)
            expected[t, allowed] = _softmax(scores[t, allowed])
        checker.close(masked, expected, "attention weights", rtol=1e-9, atol=1e-12,
                      mistakes={said: _softmax(np.where(mask, -np.inf, scores))
                                for said, mask in _window_slips(5, 2).items()})


@exercise_check("Exercise 4 (float16_predictions)", yours="float16_predictions")
def check_float16_predictions(checker: Checker, float16_predictions: Any) -> None:
    """Each prediction against what float16 does: the masked weights, np.float16(-1e5), a
    row masked with -inf and one masked with -1e4."""
    row = np.array([1, 2, 3], dtype=np.float16)
    with np.errstate(all="ignore"):
        partly = _softmax(row + np.array([0, -1e4, -1e4], dtype=np.float16))
        all_inf = _softmax(row + np.full(3, -np.inf, dtype=np.float16))
        all_large = _softmax(row + np.full(3, -1e4, dtype=np.float16))
        minus_1e5 = float(np.float16(-1e5))
    what = "float16_predictions()"
    with checker.case("(a) two keys masked with -1e4", hint="how small is exp(-10000)?"):
        checker.equal(bool(_answer(checker, float16_predictions(), "a", what)),
                      bool((partly[1:] == 0).all()), "masked weights exactly 0",
                      mistakes={"exp(-10000) is far below the smallest float16 (about 6e-8): "
                                "it rounds to exactly 0": False})
    with checker.case("(b) np.float16(-1e5)", hint="compare with float16's largest value"):
        checker.equal(float(_answer(checker, float16_predictions(), "b", what)), minus_1e5,
                      "value", mistakes={"-1e5 is beyond float16's largest value, 65504: it "
                                         "becomes -inf": -1e5,
                                         "a number too large for float16 becomes -inf, not "
                                         "the largest float16": -65504.0})
    with checker.case("(c) a fully masked row with -inf",
                      hint="the stable softmax subtracts the row's maximum first"):
        checker.equal(bool(_answer(checker, float16_predictions(), "c", what)),
                      bool(np.isnan(all_inf).any()), "the row contains NaN",
                      mistakes={"the row's maximum is -inf, and -inf - (-inf) is nan": False})
    with checker.case("(d) a fully masked row with -1e4 in float16",
                      hint="what is -10000 + 1 in float16, with neighbours 8 apart?"):
        received = np.asarray(_answer(checker, float16_predictions(), "d", what),
                              dtype=np.float64)
        checker.shape(received, (3,), "weights")
        checker.close(received, all_large.astype(np.float64), "weights", rtol=0, atol=1e-3,
                      mistakes={"-1e4 + 1, -1e4 + 2 and -1e4 + 3 all round to -1e4 in float16 "
                                "(neighbours 8 apart): the three scores are equal":
                                _softmax(np.array([1.0, 2.0, 3.0])),
                                "-1e4 is finite, so the row's maximum is finite and no nan "
                                "comes": np.full(3, np.nan)})
