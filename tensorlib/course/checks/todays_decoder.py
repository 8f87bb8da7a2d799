"""The checks of notebook 15b (today's decoder): its three pieces, ``rms_norm``,
``apply_rotary`` and ``swiglu``, and its three exercises, ``repeat_kv``, ``kv_cache_bytes``
and ``llama_hidden``.

The pieces are compared with tensorlib's own: ``F.rms_norm``; ``F.apply_rotary`` with the
tables of ``F.rotary_tables``; ``nn.SwiGLU`` with the learner's three weights loaded. Their
inputs are seeded and chosen to expose the usual slips (a batch and heads as leading axes,
float32, large values, a row of zeros, an eps, an offset and a theta that are not the
defaults, a hidden width that is not the channels): the shape and dtype first, then the values
(what each usual slip gives is computed here, so that a report names the learner's: LayerNorm's
mean subtracted, eps outside the square root, the wrong axis; GPT-J's interleaved pairs, the
sign of rotate_half, theta^(-i/D), positions from 1; silu on the wrong branch, sigmoid, GELU
or ReLU for silu, a plus for the product), and only then, after one backward pass with an
upstream gradient that is not uniform, the gradients. The exercises are compared with
``F.repeat_heads`` (the heads tiled, not repeated in a row, is named), with the bytes that
the KV caches of small Decoders hold after a prefill (the 2, the layers, the heads, the
bytes per value), and with Llama's rule for its SwiGLU width (rounded down, to the nearest,
or without the 2/3).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from typing import Any

import numpy as np

import tensorlib as tl
import tensorlib.nn.functional as F
from tensorlib.course.checks.registry import HandOn, exercise_check, piece_check
from tensorlib.course.exercises import Checker
from tensorlib.engine.splitmix64 import Rng
from tensorlib.models import Decoder, DecoderConfig
from tensorlib.nn import SwiGLU

__all__ = ["check_rms_norm_piece", "check_apply_rotary", "check_swiglu", "check_repeat_kv",
           "check_kv_cache_bytes", "check_llama_hidden", "package_rms_norm",
           "package_apply_rotary", "package_swiglu"]


# ----------------------------------------------- the package's pieces, in the notebook's form
def package_rms_norm(x: tl.Tensor, weight: tl.Tensor, eps: float = 1e-5) -> tl.Tensor:
    """``F.rms_norm`` over the last axis, as the notebook's ``rms_norm(x, weight, eps)``."""
    return F.rms_norm(x, (x.shape[-1],), weight, eps)


def package_apply_rotary(x: tl.Tensor, theta: float = 10000.0, offset: int = 0) -> tl.Tensor:
    """``F.apply_rotary`` with ``F.rotary_tables``, as the notebook's ``apply_rotary``."""
    cos, sin = F.rotary_tables(x.shape[-2], x.shape[-1], theta, offset, dtype=x.dtype)
    return F.apply_rotary(x, cos, sin)


def package_swiglu(x: tl.Tensor, gate_weight: tl.Tensor, up_weight: tl.Tensor,
                   down_weight: tl.Tensor) -> tl.Tensor:
    """``nn.SwiGLU``'s forward on given weights (Linear's (out, in) layout), as the notebook's
    ``swiglu``."""
    return F.linear(F.silu(F.linear(x, gate_weight)) * F.linear(x, up_weight), down_weight)


# ---------------------------------------------------------------------------- shared steps
_CUT = ("the graph was cut: a numpy step (.numpy(), np.*, tl.tensor of an array) or a "
        ".detach() in place of a tensor operation, so no gradient flows back")
# float64 arrays promote a float32 computation to float64, as in PyTorch: a dtype slip
_FLOAT64_RESULT = {"a float64 array met a float32 tensor, and the result became float64 (as "
                   "in PyTorch): make what you build in x's dtype, tl.tensor(array, "
                   "dtype=x.dtype)": np.dtype(np.float64)}


def _tolerances(dtype: Any) -> tuple[float, float]:
    return (1e-4, 1e-5) if np.dtype(dtype) == np.float32 else (1e-9, 1e-11)


def _result(checker: Checker, received: Any, shape: tuple[int, ...], dtype: Any,
            what: str, shape_mistakes: dict[str, Any] | None = None) -> None:
    """``received`` is a Tensor that carries a gradient, of ``shape`` and ``dtype``."""
    checker.true(isinstance(received, tl.Tensor), f"{what} is a {type(received).__name__}, "
                 "not a tensorlib Tensor", "None where a tensor is expected: a missing "
                 "return?" if received is None else "build it from tensor operations, so "
                 "that autograd gives its gradient")
    checker.shape(received, shape, what, shape_mistakes)
    checker.equal(np.dtype(received.dtype), np.dtype(dtype), f"{what}'s dtype",
                  _FLOAT64_RESULT if np.dtype(dtype) != np.float64 else None)


def _gradients(checker: Checker, names: list[str], received: list[Any], expected: list[Any],
               dtype: Any, mistakes: dict[str, dict[str, Any]] | None = None) -> None:
    """Each gradient is there and close to the expected one."""
    rtol, atol = _tolerances(dtype)
    for name, mine, theirs in zip(names, received, expected, strict=True):
        checker.true(mine is not None, f"{name} is None after backward", _CUT)
        checker.close(mine, theirs, name, rtol=rtol, atol=atol,
                      mistakes=(mistakes or {}).get(name))


def _leaves(*arrays: np.ndarray) -> list[tl.Tensor]:
    return [tl.tensor(array, requires_grad=True) for array in arrays]


# ---------------------------------------------------------------------------------- rms_norm
def _rms_slips(x: np.ndarray, weight: np.ndarray, eps: float) -> dict[str, Any]:
    """What the usual slips of rms_norm give, in float64."""
    square = (x * x).mean(-1, keepdims=True)
    centered = x - x.mean(-1, keepdims=True)
    slips: dict[str, Any] = {
        "the mean subtracted first: that is LayerNorm; RMSNorm divides x itself by its root "
        "mean square": lambda: centered / np.sqrt((centered**2).mean(-1, keepdims=True) + eps)
        * weight,
        "eps added outside the square root: sqrt(mean(x²) + eps), eps inside":
            lambda: x / (np.sqrt(square) + eps) * weight,
        "eps not added: sqrt(mean(x²) + eps), which keeps a row of zeros finite":
            lambda: x / np.sqrt(square) * weight,
        "the square root missing: divide by sqrt(mean(x²) + eps), not by mean(x²) + eps":
            lambda: x / (square + eps) * weight,
        "the weight does not multiply the result: ... * weight at the end":
            lambda: x / np.sqrt(square + eps),
        "the weight added: it multiplies the normalised x": lambda: x / np.sqrt(square + eps)
        + weight,
        "the sum of the squares, not their mean (the 1/C missing): .mean(dim=-1, "
        "keepdim=True)": lambda: x / np.sqrt((x * x).sum(-1, keepdims=True) + eps) * weight,
        "the mean of x, not of its squares: mean(x * x)":
            lambda: x / np.sqrt(x.mean(-1, keepdims=True) + eps) * weight,
        "the mean square over every axis at once: one per vector, over the last axis "
        "(dim=-1, keepdim=True)": lambda: x / np.sqrt((x * x).mean() + eps) * weight,
    }
    for axis in range(x.ndim - 1):
        slips[f"the mean square over axis {axis}, not the last one: each vector's C features "
              "are the last axis, .mean(dim=-1, keepdim=True)"] = (
            lambda axis=axis: x / np.sqrt((x * x).mean(axis, keepdims=True) + eps) * weight)
    if eps != 1e-5:
        slips["the eps given is not used (1e-5 in its place): add the argument eps"] = (
            lambda: x / np.sqrt(square + 1e-5) * weight)
    return slips


def _rms_gradient_slips(x: np.ndarray, weight: np.ndarray, upstream: np.ndarray,
                        eps: float) -> dict[str, dict[str, Any]]:
    root = np.sqrt((x * x).mean(-1, keepdims=True) + eps)
    return {"x's gradient": {"the root mean square computed outside autograd (.detach(), "
                             ".numpy()): x's gradient must flow through it too":
                             upstream * weight / root}}


_RMS_HINT = "x / sqrt(mean(x * x) over the last axis, kept as (..., 1), + eps) * weight"
_ZEROS = np.array([[1.0, -2.0, 0.5, 3.0, -1.0], [0.0] * 5, [0.2, 0.1, -0.3, 0.0, 0.4]])
_Case = tuple[str, Any, Any, Any, float | None, str]
_RMS_CASES: list[_Case] = [  # what, x (an array or (shape, scale)), weight (None: drawn about
    # 1), dtype, eps (None: the default), hint
    ("the worked example: rows [2, -2, 2, -2] and [0, 3, 0, 4] (root mean squares 2 and "
     "2.5), weight [1, 1, 2, 2]", np.array([[2.0, -2.0, 2.0, -2.0], [0.0, 3.0, 0.0, 4.0]]),
     np.array([1.0, 1.0, 2.0, 2.0]), np.float64, None, _RMS_HINT),
    ("a batch (2, 3, 8), a weight that is not 1", ((2, 3, 8), 1.0), None, np.float64, None,
     "the mean is over the last axis only; the (..., 1) root broadcasts over C"),
    ("float32 in, float32 out, shape (4, 16)", ((4, 16), 1.0), None, np.float32, None,
     "eps is a Python float, which keeps the tensor's dtype"),
    ("large values: x of size 1000, shape (3, 6)", ((3, 6), 1000.0), None, np.float64, None,
     _RMS_HINT),
    ("a row of zeros gives zeros, not nan: eps keeps the division finite", _ZEROS, None,
     np.float64, None, "eps inside the square root: 0 / sqrt(0 + eps) = 0"),
    ("eps = 0.5, not the default, on small values (size 0.3), shape (2, 7)",
     ((2, 7), 0.3), None, np.float64, 0.5, "use the argument eps, not a constant"),
]
_KEEPDIM = {"broadcast": "keepdim=True missing: the mean square must stay (..., 1) to divide "
            "each vector"}


@piece_check("rms_norm", yours="rms_norm", package_name="tensorlib's (F.rms_norm)")
def check_rms_norm_piece(checker: Checker, rms_norm: Callable[..., Any]) -> HandOn:
    """``rms_norm(x, weight, eps=1e-5)`` against F.rms_norm on six inputs (a batch, float32,
    large values, a row of zeros, another eps): the shape and dtype, the values, then the
    gradients of x and weight."""
    draw = Rng(1515)
    for what, given, weight_given, dtype, eps, hint in _RMS_CASES:
        with checker.case(what, hint=hint):
            x: np.ndarray
            if isinstance(given, np.ndarray):
                x = given.astype(dtype)
            else:
                shape: tuple[int, ...] = given[0]
                x = (draw.normal(size=shape, dtype=np.float64) * given[1]).astype(dtype)
            weight = (draw.normal(1.0, 0.5, size=x.shape[-1:], dtype=np.float64)
                      if weight_given is None else weight_given).astype(dtype)
            upstream = draw.normal(size=x.shape, dtype=np.float64).astype(dtype)
            mine, theirs = _leaves(x, weight), _leaves(x, weight)
            with checker.named_errors(_KEEPDIM):
                received = rms_norm(*mine) if eps is None else rms_norm(*mine, eps=eps)
            chosen = 1e-5 if eps is None else eps
            expected = package_rms_norm(theirs[0], theirs[1], eps=chosen)
            _result(checker, received, x.shape, dtype, "rms_norm(x, weight)")
            wide = [a.astype(np.float64) for a in (x, weight, upstream)]
            rtol, atol = _tolerances(dtype)
            checker.close(received, expected, "rms_norm(x, weight)", rtol=rtol, atol=atol,
                          mistakes=_rms_slips(wide[0], wide[1], chosen))
            (received * upstream).sum().backward()
            (expected * upstream).sum().backward()
            _gradients(checker, ["x's gradient", "weight's gradient"],
                       [t.grad for t in mine], [t.grad for t in theirs], dtype,
                       _rms_gradient_slips(wide[0], wide[1], wide[2], chosen))
    return HandOn(rms_norm, package_rms_norm)


# -------------------------------------------------------------------------------- rotary
def _rotated(x: np.ndarray, theta: float, offset: int, interleaved: bool = False,
             repeated: bool = False, sign: float = 1.0, exponent: float = 2.0,
             first: int = 0, swapped: bool = False) -> np.ndarray:
    """x (..., T, D) turned as apply_rotary does, in float64, or with a usual slip: pairs
    (2i, 2i+1) in rotate_half, the angles np.repeat-ed, rotate_half's sign flipped,
    theta^(-exponent·i/D), positions from ``first``, cos and sin swapped."""
    length, width = x.shape[-2:]
    half = width // 2
    frequencies = float(theta) ** (-exponent * np.arange(half) / width)
    angles = np.outer(np.arange(length) + offset + first, frequencies)          # (T, D/2)
    angles = (np.repeat(angles, 2, axis=-1) if repeated
              else np.concatenate([angles, angles], axis=-1))                   # (T, D)
    turned = (np.stack([-x[..., 1::2], x[..., ::2]], axis=-1).reshape(x.shape) if interleaved
              else np.concatenate([-x[..., half:], x[..., :half]], axis=-1))
    cos, sin = np.cos(angles), np.sin(angles)
    if swapped:
        cos, sin = sin, cos
    return x * cos + sign * turned * sin


def _rotary_slips(x: np.ndarray, theta: float, offset: int) -> dict[str, Any]:
    slips: dict[str, Any] = {
        "the sign of rotate_half flipped: it is [-x2, x1] (the second half negated, put "
        "first), which turns each pair by +angle; yours turns it by -angle":
            lambda: _rotated(x, theta, offset, sign=-1.0),
        "pairs interleaved, GPT-J's layout (features 2i and 2i+1): Llama pairs feature i with "
        "i + D/2, the two halves": lambda: _rotated(x, theta, offset, True, True),
        "the angles interleaved (np.repeat): each angle is written twice side by side, at i "
        "and i + D/2, np.concatenate([angles, angles], axis=-1)":
            lambda: _rotated(x, theta, offset, repeated=True),
        "rotate_half interleaved ([-x1, x0, -x3, x2, ...]): Llama's is [-x2, x1] of the two "
        "halves": lambda: _rotated(x, theta, offset, interleaved=True),
        "the frequencies are theta^(-i/D): the exponent is -2i/D, np.arange(0, D, 2) / D":
            lambda: _rotated(x, theta, offset, exponent=1.0),
        "positions start at 1: row t is at position offset + t, the first row at offset (0 by "
        "default)": lambda: _rotated(x, theta, offset, first=1),
        "cos and sin swapped: x * cos + rotate_half(x) * sin":
            lambda: _rotated(x, theta, offset, swapped=True),
    }
    if offset:
        slips["the offset is ignored: row t is at position offset + t, "
              "np.arange(offset, offset + T)"] = lambda: _rotated(x, theta, 0)
    if theta != 10000.0:
        slips["theta is ignored (10000 in its place): the frequencies are theta^(-2i/D) "
              "with the theta given"] = lambda: _rotated(x, 10000.0, offset)
    return slips


_ROTARY_HINT = ("angles[t, i] = (offset + t) * theta^(-2i/D) for i < D/2, written at i and "
                "i + D/2; x * cos + rotate_half(x) * sin, rotate_half(x) = [-x2, x1]")
_ROTARY_CASES = [  # what, shape (None: the worked example), theta, offset, dtype, hint
    ("the worked example: D = 2, three rows [1, 0] at positions 0, 1, 2 give "
     "[cos p, sin p]", None, 10000.0, 0, np.float64,
     "with D = 2 the one pair turns by its position p (theta^0 = 1): [1, 0] -> [cos p, sin p]"),
    ("a batch and heads, shape (2, 3, 5, 8)", (2, 3, 5, 8), 10000.0, 0, np.float64,
     "the last two axes are (T, D); the (T, D) tables broadcast over the others"),
    ("offset 5: rows at positions 5 to 8, shape (4, 6)", (4, 6), 10000.0, 5, np.float64,
     "row t is at position offset + t"),
    ("one row at offset 9 (a token after nine cached), shape (2, 1, 8)", (2, 1, 8), 10000.0,
     9, np.float64, "row t is at position offset + t"),
    ("theta = 100, not 10000, shape (6, 8)", (6, 8), 100.0, 0, np.float64,
     "the frequencies are theta^(-2i/D) with the theta given"),
    ("float32 in, float32 out, shape (2, 7, 4), offset 3", (2, 7, 4), 10000.0, 3, np.float32,
     "make the tables in x's dtype: tl.tensor(np.cos(angles), dtype=x.dtype)"),
]


@piece_check("apply_rotary", yours="apply_rotary",
             package_name="tensorlib's (F.apply_rotary)")
def check_apply_rotary(checker: Checker, apply_rotary: Callable[..., Any]) -> HandOn:
    """``apply_rotary(x, theta=10000.0, offset=0)`` against F.apply_rotary with the tables of
    F.rotary_tables on six inputs (D = 2, a batch and heads, offsets, another theta,
    float32): the shape and dtype, the values, then x's gradient."""
    draw = Rng(1516)
    for what, shape, theta, offset, dtype, hint in _ROTARY_CASES:
        with checker.case(what, hint=hint):
            x = (np.array([[1.0, 0.0]] * 3) if shape is None
                 else draw.normal(size=shape, dtype=np.float64)).astype(dtype)
            upstream = draw.normal(size=x.shape, dtype=np.float64).astype(dtype)
            (mine,), (theirs,) = _leaves(x), _leaves(x)
            keywords: dict[str, Any] = {}
            if theta != 10000.0:
                keywords["theta"] = theta
            if offset:
                keywords["offset"] = offset
            with checker.named_errors({"broadcast": "tables that are not "
                                       "(T, D): write each of the D/2 angles twice, "
                                       "np.concatenate([angles, angles], axis=-1)"}):
                received = apply_rotary(mine, **keywords)
            expected = package_apply_rotary(theirs, theta, offset)
            _result(checker, received, x.shape, dtype, "apply_rotary(x)")
            rtol, atol = _tolerances(dtype)
            wide = x.astype(np.float64)
            checker.close(received, expected, "apply_rotary(x)", rtol=rtol, atol=atol,
                          mistakes=_rotary_slips(wide, theta, offset))
            (received * upstream).sum().backward()
            (expected * upstream).sum().backward()
            cos = np.cos(np.concatenate([np.outer(np.arange(x.shape[-2]) + offset, theta ** (
                -np.arange(0, x.shape[-1], 2) / x.shape[-1]))] * 2, axis=-1))
            _gradients(checker, ["x's gradient"], [mine.grad], [theirs.grad], dtype,
                       {"x's gradient": {"rotate_half(x) computed outside autograd (.detach(), "
                                         "numpy): the gradient flows through both terms":
                                         upstream.astype(np.float64) * cos}})
    return HandOn(apply_rotary, package_apply_rotary)


# -------------------------------------------------------------------------------- SwiGLU
def _glu_slips(x: np.ndarray, gate_weight: np.ndarray, up_weight: np.ndarray,
               down_weight: np.ndarray) -> dict[str, Any]:
    """What the usual slips of swiglu give, in float64 (through tensorlib's ops, no graph)."""
    def glu(join: Callable[[tl.Tensor, tl.Tensor], tl.Tensor]) -> Callable[[], np.ndarray]:
        def value() -> np.ndarray:
            gate, up = (tl.tensor(x) @ tl.tensor(w).transpose() for w in (gate_weight,
                                                                          up_weight))
            return (join(gate, up) @ tl.tensor(down_weight).transpose()).numpy()
        return value

    return {
        "silu on the up branch, not the gate (the two branches swapped): silu(x @ "
        "gate_weight.T) * (x @ up_weight.T)": glu(lambda g, u: g * F.silu(u)),
        "sigmoid where silu is (that is GLU): silu(z) = z * sigmoid(z)":
            glu(lambda g, u: g.sigmoid() * u),
        "GELU where silu is (that is GEGLU): silu(z) = z * sigmoid(z)":
            glu(lambda g, u: F.gelu(g) * u),
        "GELU (tanh form) where silu is (that is GEGLU): silu(z) = z * sigmoid(z)":
            glu(lambda g, u: F.gelu(g, approximate="tanh") * u),
        "ReLU where silu is (that is ReGLU): silu(z) = z * sigmoid(z)":
            glu(lambda g, u: g.relu() * u),
        "the two branches added: silu(gate) is multiplied by up, not added":
            glu(lambda g, u: F.silu(g) + u),
        "silu missing: silu(x @ gate_weight.T) * (x @ up_weight.T)": glu(lambda g, u: g * u),
        "silu of the product: silu applies to the gate alone, silu(gate) * up":
            glu(lambda g, u: F.silu(g * u)),
    }


_TRANSPOSED = {"not aligned": "a weight used as it is stored: a Linear keeps (out, in), so "
               "multiply by its transpose (x @ gate_weight.transpose(), and so for up_weight "
               "and down_weight)"}
_SWIGLU_HINT = "(silu(x @ gate_weight.T) * (x @ up_weight.T)) @ down_weight.T"
_SWIGLU_CASES = [  # what, shape of x (None: the worked example), hidden width, dtype, hint
    ("the worked example: C = 2, H = 3, x = [1, -2], small integer weights", None, 3,
     np.float64, _SWIGLU_HINT),
    ("a batch (2, 5, 8), H = 12: the weights are not square", (2, 5, 8), 12, np.float64,
     "gate_weight and up_weight are (H, C), down_weight (C, H): each is used transposed"),
    ("one vector x of shape (6,), H = 16", (6,), 16, np.float64, _SWIGLU_HINT),
    ("float32 in, float32 out, shape (3, 4, 16), H = 40", (3, 4, 16), 40, np.float32,
     _SWIGLU_HINT),
]
_WORKED_GLU = [np.array([[1.0, -2.0]]), np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]),
               np.array([[1.0, 1.0], [2.0, 0.0], [0.0, -1.0]]),
               np.array([[1.0, 0.0, 1.0], [0.0, 1.0, -1.0]])]


@piece_check("swiglu", yours="swiglu", package_name="tensorlib's (nn.SwiGLU)")
def check_swiglu(checker: Checker, swiglu: Callable[..., Any]) -> HandOn:
    """``swiglu(x, gate_weight, up_weight, down_weight)`` against nn.SwiGLU with those weights
    (w1, w3, w2) on four inputs (H not C, one vector, float32): the shape and dtype, the
    values, then the gradients of x and of the three weights."""
    draw = Rng(1517)
    for what, shape, hidden, dtype, hint in _SWIGLU_CASES:
        with checker.case(what, hint=hint):
            if shape is None:
                arrays = [a.astype(dtype) for a in _WORKED_GLU]
            else:
                width = shape[-1]
                arrays = [draw.normal(size=size, dtype=np.float64).astype(dtype) * scale
                          for size, scale in ((shape, 1.0), ((hidden, width), width ** -0.5),
                                              ((hidden, width), width ** -0.5),
                                              ((width, hidden), hidden ** -0.5))]
            x = arrays[0]
            upstream = draw.normal(size=x.shape, dtype=np.float64).astype(dtype)
            mine = _leaves(*arrays)
            with checker.named_errors(_TRANSPOSED):
                received = swiglu(*mine)
            module = SwiGLU(x.shape[-1], arrays[1].shape[0], rng=Rng(0), dtype=dtype)
            with tl.no_grad():
                for linear, array in zip((module.w1, module.w3, module.w2), arrays[1:],
                                         strict=True):
                    linear.weight.data[...] = array
            (x_theirs,) = _leaves(x)
            expected = module(x_theirs)
            _result(checker, received, x.shape, dtype, "swiglu(x, ...)")
            rtol, atol = _tolerances(dtype)
            checker.close(received, expected, "swiglu(x, ...)", rtol=rtol, atol=atol,
                          mistakes=_glu_slips(*[a.astype(np.float64) for a in arrays]))
            (received * upstream).sum().backward()
            (expected * upstream).sum().backward()
            _gradients(checker, ["x's gradient", "gate_weight's gradient",
                                 "up_weight's gradient", "down_weight's gradient"],
                       [t.grad for t in mine],
                       [x_theirs.grad] + [linear.weight.grad for linear in
                                          (module.w1, module.w3, module.w2)], dtype)
    return HandOn(swiglu, package_swiglu)


# ------------------------------------------------------------------------------ exercise 1
_TILED = ("the heads tiled, as tl.cat([x] * times, dim=1) or x.repeat(1, times, 1, 1) "
          "give: query head h would read key/value head h % H_kv; repeat each head times "
          "times in a row, so that it reads head h // times")


@exercise_check("Exercise 1 (repeat_kv)", yours="repeat_kv")
def check_repeat_kv(checker: Checker, repeat_kv: Callable[..., Any]) -> None:
    """``repeat_kv(x, times)`` against F.repeat_heads on five inputs (times 1, one key/value
    head): the shape, the values, then x's gradient (added over the copies)."""
    draw = Rng(1518)
    hint = ("(B, H_kv, T, D) -> (B, H_kv * times, T, D), heads [a, a, b, b] for times 2: "
            "unsqueeze(2), expand, reshape")
    cases: list[tuple[str, Any, int]] = [
        ("the worked example: key/value heads [1] and [2], times 2, give heads [1, 1, 2, 2]",
         np.array([1.0, 2.0]).reshape(1, 2, 1, 1), 2),
        ("shape (2, 3, 4, 5), times 2", (2, 3, 4, 5), 2),
        ("times 1: x as it is, shape (1, 4, 3, 2)", (1, 4, 3, 2), 1),
        ("one key/value head for every query head (multi-query), shape (2, 1, 3, 2), times 4",
         (2, 1, 3, 2), 4),
        ("shape (2, 2, 3, 4), times 3", (2, 2, 3, 4), 3)]
    for what, given, times in cases:
        with checker.case(what, hint=hint):
            x = given if isinstance(given, np.ndarray) else draw.normal(size=given,
                                                                        dtype=np.float64)
            batch, heads, length, width = x.shape
            upstream = draw.normal(size=(batch, heads * times, length, width),
                                   dtype=np.float64)
            (mine,), (theirs,) = _leaves(x), _leaves(x)
            received = repeat_kv(mine, times)
            expected = F.repeat_heads(theirs, times)
            _result(checker, received, expected.shape, np.float64, "repeat_kv(x, times)", {
                "repeated along the positions (dim 2): the copies go along the heads, dim 1":
                    (batch, heads, length * times, width),
                "repeated along the batch (dim 0): the copies go along the heads, dim 1":
                    (batch * times, heads, length, width),
                "repeated along the width (dim 3): the copies go along the heads, dim 1":
                    (batch, heads, length, width * times),
                "nothing repeated: return (B, H_kv * times, T, D)": x.shape})
            checker.close(received, expected, "repeat_kv(x, times)", rtol=0, atol=0,
                          mistakes={_TILED: np.concatenate([x] * times, axis=1)})
            (received * upstream).sum().backward()
            (expected * upstream).sum().backward()
            _gradients(checker, ["x's gradient"], [mine.grad], [theirs.grad], np.float64)


# ------------------------------------------------------------------------------ exercise 2
_CACHE_CASES = [  # layers, heads, kv_heads, channels, batch, length, dtype
    (3, 4, 4, 16, 1, 5, np.float32),   # full multi-head attention
    (3, 4, 2, 24, 5, 7, np.float32),   # grouped-query: two query heads per key/value head
    (1, 8, 1, 32, 3, 4, np.float32),   # multi-query: one key/value head
    (4, 6, 3, 36, 3, 6, np.float64),   # float64, bytes_per_value=8
]  # no factor of 2 among the layers, the batch and the width: a slip that drops one of
#   them is not taken for the 2 forgotten
_LLAMAS = [  # what, layers, kv_heads, heads, head_width: at 4096 positions, float16
    ("Llama 2 7B", 32, 32, 32, 128), ("Llama 3 8B", 32, 8, 32, 128)]


def _held_bytes(layers: int, heads: int, kv_heads: int, channels: int, batch: int,
                length: int, dtype: Any) -> int:
    """The bytes the caches of a small Decoder hold after a prefill of ``length`` tokens."""
    config = DecoderConfig(vocabulary_size=11, context_length=length, channels=channels,
                           heads=heads, layers=layers, norm="rms", positions="rotary",
                           mlp="swiglu", kv_heads=kv_heads, bias=False, head_bias=False)
    model = Decoder(config, rng=Rng(layers * 100 + heads), dtype=dtype)
    caches = model.new_cache()
    with tl.no_grad():
        model(Rng(length).integers(0, 11, (batch, length)), caches)
    return int(sum(cache.keys.nbytes + cache.values.nbytes for cache in caches))


def _bytes_slips(layers: int, batch: int, length: int, kv_heads: int, heads: int,
                 width: int, size: int) -> dict[str, int]:
    each = batch * length * width * size  # one layer's keys, for one head
    slips = {}
    if size != 4:  # first: in float64 it halves the bytes, as the 2 forgotten does
        slips["bytes_per_value ignored (4 in its place): multiply by the argument"] = (
            2 * layers * kv_heads * each // size * 4)
    slips |= {"keys only, the 2 forgotten: the values take as many bytes again":
             layers * kv_heads * each,
             "one layer's cache, the layers forgotten: every layer keeps its own":
             2 * kv_heads * each,
             "the batch forgotten: every sequence of the batch has its own keys and values":
             2 * layers * kv_heads * each // batch,
             "the head width forgotten: each head's key is head_width numbers":
             2 * layers * kv_heads * each // width}
    if heads != kv_heads:
        slips["the query heads counted: the cache keeps kv_heads heads, each shared by "
              "heads / kv_heads query heads"] = 2 * layers * heads * each
    return slips


def _an_int(checker: Checker, received: Any, what: str) -> None:
    checker.true(isinstance(received, numbers.Integral) and not isinstance(received, bool),
                 f"{what} returned {received!r}, a {type(received).__name__}, not an int",
                 "a float: / gives one; keep to *, // and int()")


@exercise_check("Exercise 2 (kv_cache_bytes)", yours="kv_cache_bytes")
def check_kv_cache_bytes(checker: Checker, kv_cache_bytes: Callable[..., Any]) -> None:
    """``kv_cache_bytes(layers, batch, length, kv_heads, head_width, bytes_per_value=4)``
    against the keys' and values' bytes of small Decoders' caches after a prefill (multi-head,
    grouped-query, multi-query, float64), then two Llamas' caches in float16."""
    hint = ("2 (keys and values) * layers * batch * kv_heads * length * head_width * "
            "bytes_per_value")
    for layers, heads, kv_heads, channels, batch, length, dtype in _CACHE_CASES:
        width, size = channels // heads, np.dtype(dtype).itemsize
        with checker.case(f"{layers} layer{'s' * (layers > 1)}, {heads} heads, kv_heads "
                          f"{kv_heads}, head width {width}, batch {batch}, {length} "
                          f"positions, {np.dtype(dtype).name}", hint=hint):
            received = (kv_cache_bytes(layers, batch, length, kv_heads, width) if size == 4
                        else kv_cache_bytes(layers, batch, length, kv_heads, width,
                                            bytes_per_value=size))
            held = _held_bytes(layers, heads, kv_heads, channels, batch, length, dtype)
            checker.equal(received, held, "bytes the caches hold",
                          _bytes_slips(layers, batch, length, kv_heads, heads, width, size))
            _an_int(checker, received, "kv_cache_bytes")
    for what, layers, kv_heads, heads, width in _LLAMAS:
        with checker.case(f"{what}: {layers} layers, {kv_heads} key/value heads of width "
                          f"{width}, batch 1, 4096 positions, float16 (bytes_per_value=2)",
                          hint=hint):
            received = kv_cache_bytes(layers, 1, 4096, kv_heads, width, bytes_per_value=2)
            checker.equal(received, 2 * layers * kv_heads * 4096 * width * 2, "bytes",
                          _bytes_slips(layers, 1, 4096, kv_heads, heads, width, 2))
            _an_int(checker, received, "kv_cache_bytes")


# ------------------------------------------------------------------------------ exercise 3
def _width_slips(channels: int, multiple_of: int) -> dict[str, int]:
    hidden = int(2 * 4 * channels / 3)
    down, nearest = (multiple_of * (hidden // multiple_of),
                     multiple_of * math.floor(hidden / multiple_of + 0.5))
    up = ("Llama rounds up to the next multiple, "
          "multiple_of * ((hidden + multiple_of - 1) // multiple_of)")
    rounded = ({f"rounded down, or to the nearest multiple: {up}": down} if nearest == down
               else {f"rounded down: {up}": down, f"rounded to the nearest multiple: {up}":
                     nearest})
    return {**rounded,
            "4 * channels without the 2/3: SwiGLU's three matrices take 2/3 of that width, "
            "int(2 * 4 * channels / 3)": multiple_of * math.ceil(4 * channels / multiple_of),
            "8 * channels without the /3: int(2 * 4 * channels / 3)":
            multiple_of * math.ceil(8 * channels / multiple_of),
            "8 * channels / 3 rounded up before the multiple is taken: Llama truncates it, "
            "int(2 * 4 * channels / 3), then rounds up to the multiple":
            multiple_of * math.ceil(math.ceil(8 * channels / 3) / multiple_of),
            "not rounded to a multiple: round int(2 * 4 * channels / 3) up to one": hidden}


@exercise_check("Exercise 3 (llama_hidden)", yours="llama_hidden")
def check_llama_hidden(checker: Checker, llama_hidden: Callable[..., Any]) -> None:
    """``llama_hidden(channels, multiple_of=256)`` against Llama's rule on eight widths
    (Llama's own, the workbook's default, widths already a multiple, a fraction that
    truncates to one)."""
    hint = ("hidden = int(2 * 4 * channels / 3), then up to a multiple: "
            "multiple_of * ((hidden + multiple_of - 1) // multiple_of)")
    cases = [(4096, None, "Llama 7B: 4096 channels, multiple_of left at 256, give 11008"),
             (64, 8, "64 channels, multiple_of 8: 176, the workbook's default_mlp_hidden"),
             (5120, 256, "Llama 13B: 5120 channels give 13824"),
             (96, 8, "96 channels, multiple_of 8: 8 * 96 / 3 = 256 is a multiple already"),
             (48, 64, "48 channels, multiple_of 64: 128 is a multiple already"),
             (100, 2, "100 channels, multiple_of 2: int(266.67) = 266 is a multiple already"),
             (6, 256, "6 channels, multiple_of 256: 16 rounds up to 256"),
             (3, 1, "3 channels, multiple_of 1: 8")]
    for channels, multiple_of, what in cases:
        with checker.case(what, hint=hint):
            size = 256 if multiple_of is None else multiple_of
            received = (llama_hidden(channels) if multiple_of is None
                        else llama_hidden(channels, multiple_of))
            hidden = int(2 * 4 * channels / 3)
            expected = size * ((hidden + size - 1) // size)
            checker.equal(received, expected, "the hidden width",
                          _width_slips(channels, size))
            _an_int(checker, received, "llama_hidden")
