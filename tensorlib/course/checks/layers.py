"""The checks of notebook 08 (layers): the core piece ``layer_norm_forward`` with
``layer_norm_backward``, and the exercises (LayerNorm's row sums, ``rms_norm``,
``rms_norm_backward``, ``gelu_minimum``).

LayerNorm's two functions are compared with the package's fused ``F.layer_norm`` in float64:
the forward first (y's shape, then its values) on every case, and only then the backward
(the three gradients' shapes, then their values), so a wrong forward is never taken for a wrong
backward. Each comparison names the usual slips (a variance divided by C - 1, eps outside the
square root, a lost keepdims, a gradient not summed over every leading axis, a sign...).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import tensorlib as tl
import tensorlib.nn.functional as F
from tensorlib.course.checks.differences import clipped
from tensorlib.course.checks.registry import HandOn, exercise_check, piece_check
from tensorlib.course.exercises import Checker
from tensorlib.engine.splitmix64 import Rng
from tensorlib.nn import LayerNorm

__all__ = ["check_layer_norm", "check_layer_norm_row_sums", "check_rms_norm",
           "check_rms_norm_backward", "check_gelu_minimum"]

_KEEPDIMS = ("a mean (or a sum) over the last axis lost that axis: keepdims=True keeps it as "
             "(..., 1), which broadcasts against x (..., C)")


def _grad(leaf: tl.Tensor) -> np.ndarray:
    """The gradient backward left on a tensor (a leaf, or one that retained it), as an array."""
    assert leaf.grad is not None, "the backward pass gave this tensor no gradient"
    return leaf.grad.numpy()


# ------------------------------------------------------------------------------ LayerNorm
def package_layer_norm_forward(x: np.ndarray, weight: np.ndarray, bias: np.ndarray,
                               eps: float) -> np.ndarray:
    """``F.layer_norm`` on numpy arrays: y of x (..., C), weight and bias (C,)."""
    return F.layer_norm(tl.tensor(x), weight.shape, tl.tensor(weight), tl.tensor(bias),
                        eps).numpy()


def package_layer_norm_backward(x: np.ndarray, weight: np.ndarray, eps: float,
                                dy: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(dx, dweight, dbias) of ``F.layer_norm`` at x (..., C) for the upstream dy (..., C)."""
    xt, wt, bt = (tl.tensor(a, requires_grad=True) for a in (x, weight, np.zeros_like(weight)))
    F.layer_norm(xt, weight.shape, wt, bt, eps).backward(dy)
    return _grad(xt), _grad(wt), _grad(bt)


def _forward_mistakes(x: np.ndarray, weight: np.ndarray, bias: np.ndarray,
                      eps: float) -> dict[str, Any]:
    """What the usual slips of LayerNorm's forward give (each computed when asked)."""
    mu = x.mean(-1, keepdims=True)
    var = x.var(-1, keepdims=True)
    return {
        "the variance divided by C - 1 (ddof=1): LayerNorm's is the biased one, divided by C":
            lambda: (x - mu) / np.sqrt(x.var(-1, ddof=1, keepdims=True) + eps) * weight + bias,
        "eps added outside the square root: divide by sqrt(var + eps), not sqrt(var) + eps":
            lambda: (x - mu) / (np.sqrt(var) + eps) * weight + bias,
        "eps left out: divide by sqrt(var + eps)":
            lambda: (x - mu) / np.sqrt(var) * weight + bias,
        "divided by the variance, not by its square root (the standard deviation)":
            lambda: (x - mu) / (var + eps) * weight + bias,
        "the mean is not subtracted: x_hat = (x - mean) / sqrt(var + eps)":
            lambda: x / np.sqrt(var + eps) * weight + bias,
        "the bias is not added": lambda: (x - mu) / np.sqrt(var + eps) * weight,
        "the weight does not multiply x_hat": lambda: (x - mu) / np.sqrt(var + eps) + bias,
        "the weight and the bias swapped: x_hat * weight + bias":
            lambda: (x - mu) / np.sqrt(var + eps) * bias + weight,
        "normalized over the first axis (axis 0), not the last": lambda: (
            (x - x.mean(0, keepdims=True)) / np.sqrt(x.var(0, keepdims=True) + eps)
            * weight + bias),
    }


def _backward_mistakes(x: np.ndarray, weight: np.ndarray, eps: float,
                       dy: np.ndarray) -> dict[str, dict[str, Any]]:
    """What the usual slips of LayerNorm's backward give: {"dx" | "dweight" | "dbias":
    {what was done: its value, or its shape}}."""
    mu = x.mean(-1, keepdims=True)
    r = 1 / np.sqrt(x.var(-1, keepdims=True) + eps)
    x_hat, g = (x - mu) * r, dy * weight
    width = x.shape[-1]
    rows, hats = dy.reshape(-1, width), x_hat.reshape(-1, width)

    def mean(a: np.ndarray) -> np.ndarray:
        return a.mean(-1, keepdims=True)

    return {
        "dx": {
            "the last term's sign: dx subtracts x_hat * mean(g * x_hat)":
                lambda: r * (g - mean(g) + x_hat * mean(g * x_hat)),
            "g = dy, without the weight: g = dy * weight":
                lambda: r * (dy - mean(dy) - x_hat * mean(dy * x_hat)),
            "r missing in front of dx: dx = r (g - ...)":
                lambda: g - mean(g) - x_hat * mean(g * x_hat),
            "the mean(g) term's sign: dx subtracts mean(g)":
                lambda: r * (g + mean(g) - x_hat * mean(g * x_hat)),
            "the mean(g) term missing (every x_j also moves the mean)":
                lambda: r * (g - x_hat * mean(g * x_hat)),
            "the x_hat * mean(g * x_hat) term missing (every x_j also moves the variance)":
                lambda: r * (g - mean(g)),
            "sums where the formula has means (the 1/C missing)":
                lambda: r * (g - g.sum(-1, keepdims=True)
                             - x_hat * (g * x_hat).sum(-1, keepdims=True)),
        },
        "dweight": {
            "dweight not summed over the rows: sum dy * x_hat over every leading axis":
                x.shape,
            "dweight summed over the first axis only: sum over every leading axis "
            "(reshape to (-1, C) first)": x.shape[1:],
            "dweight summed over the last axis: sum over the rows, keep the C features":
                x.shape[:-1],
            "dweight = sum of dy * x: the weight multiplies x_hat, not x":
                lambda: (rows * x.reshape(-1, width)).sum(0),
            "dweight = sum of dy: that is dbias; dweight is the sum of dy * x_hat":
                lambda: rows.sum(0),
            "dweight with the weight in it: sum of dy * x_hat, without the weight":
                lambda: (rows * hats).sum(0) * weight,
        },
        "dbias": {
            "dbias not summed over the rows: sum dy over every leading axis": x.shape,
            "dbias summed over the first axis only: sum over every leading axis "
            "(reshape to (-1, C) first)": x.shape[1:],
            "dbias summed over the last axis: sum over the rows, keep the C features":
                x.shape[:-1],
            "dbias as a mean over the rows: it is their sum": lambda: rows.mean(0),
            "dbias = sum of dy * x_hat: that is dweight; dbias is the sum of dy":
                lambda: (rows * hats).sum(0),
        },
    }


_NORM_CASES = [  # what, x's shape, its mean and scale, eps
    ("4 rows of 6, weight and bias not 1 and 0, eps 0.1", (4, 6), 2.0, 3.0, 0.1),
    ("a batch of sequences (2, 3, 5)", (2, 3, 5), 0.0, 1.0, 1e-5),
    ("rows far from 0 (mean 1000)", (3, 4), 1000.0, 0.5, 1e-5),
    ("one row of 2, a large eps", (1, 2), 0.0, 1.0, 0.5)]
_FORWARD_HINT = ("mean and biased variance over the last axis (keepdims=True); "
                 "(x - mean) / sqrt(var + eps) * weight + bias")
_BACKWARD_HINT = ("dx = r (g - mean(g) - x_hat mean(g x_hat)) with g = dy * weight; dweight "
                  "and dbias sum over every leading axis")


def _norm_inputs(draw: Rng, shape: tuple[int, ...], mean: float,
                 scale: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """x, weight (about 1), bias (about 0) and dy, in float64."""
    x = draw.normal(mean, scale, size=shape).astype(np.float64)
    weight = draw.normal(1.0, 0.5, size=shape[-1]).astype(np.float64)
    bias = draw.normal(0.0, 0.5, size=shape[-1]).astype(np.float64)
    return x, weight, bias, draw.normal(size=shape).astype(np.float64)


@piece_check("LayerNorm forward and backward", yours=("layer_norm_forward", "layer_norm_backward"),
             label="layer_norm_forward and layer_norm_backward")
def check_layer_norm(checker: Checker, layer_norm_forward: Any,
                     layer_norm_backward: Any) -> HandOn:
    """``layer_norm_forward(x, weight, bias, eps)`` against ``F.layer_norm`` on four cases (y's
    shape, then its values), then ``layer_norm_backward(x, weight, eps, dy)``'s (dx, dweight,
    dbias) against its backward on the same cases (shapes, then values)."""
    draw = Rng(80)
    cases = [(what, shape, eps, *_norm_inputs(draw, shape, mean, scale))
             for what, shape, mean, scale, eps in _NORM_CASES]
    for what, shape, eps, x, weight, bias, _ in cases:
        with checker.case(f"forward: {what}", hint=_FORWARD_HINT):
            mistakes = _forward_mistakes(x, weight, bias, eps)
            with checker.named_errors({"broadcast": _KEEPDIMS}):
                y = layer_norm_forward(x, weight, bias, eps)
            checker.shape(y, shape, "y")
            checker.close(y, package_layer_norm_forward(x, weight, bias, eps), "y", rtol=1e-9,
                          atol=1e-10, mistakes=mistakes)
    for what, shape, eps, x, weight, _, dy in cases:
        summed = ": dweight and dbias sum over both leading axes" if len(shape) > 2 else ""
        with checker.case(f"backward: {what}{summed}", hint=_BACKWARD_HINT):
            mistakes = _backward_mistakes(x, weight, eps, dy)
            with checker.named_errors({"broadcast": _KEEPDIMS}):
                received = layer_norm_backward(x, weight, eps, dy)
            checker.true(isinstance(received, (tuple, list)) and len(received) == 3,
                         f"layer_norm_backward returns (dx, dweight, dbias); received "
                         f"{clipped(repr(received), 100)}")
            expected = package_layer_norm_backward(x, weight, eps, dy)
            names = ["dx", "dweight", "dbias"]
            for name, mine, theirs in zip(names, received, expected, strict=True):
                shapes = {said: value for said, value in mistakes[name].items()
                          if isinstance(value, tuple)}
                checker.shape(mine, theirs.shape, name, shapes)
            for name, mine, theirs in zip(names, received, expected, strict=True):
                checker.close(mine, theirs, name, rtol=1e-8, atol=1e-10, mistakes=mistakes[name])
    return HandOn((layer_norm_forward, layer_norm_backward),
                  (package_layer_norm_forward, package_layer_norm_backward))


# ------------------------------------------------------------------------------ exercises
_ROW_SUMS = {
    "sum of dx": ("a non-zero sum: adding the same constant to every x_j of a row leaves the "
                  "output unchanged, so the derivative along (1, ..., 1), the sum of dx, is 0"),
    "sum of dx * x_hat": ("a non-zero sum: scaling a row leaves the output unchanged (up to "
                          "eps), so the derivative along x, and along x_hat, is about 0"),
}


@exercise_check("Exercise 1 (LayerNorm's row sums)", yours="predictions")
def check_layer_norm_row_sums(checker: Checker, predictions: Any) -> None:
    """The two predicted numbers against the sums measured with ``LayerNorm``'s backward on
    random rows of three means and scales."""
    for seed, (mean, std) in enumerate([(0.0, 1.0), (5.0, 2.0), (-3.0, 20.0)]):
        draw = Rng(100 + seed)
        layer = LayerNorm(7, dtype=np.float64)
        assert layer.weight is not None, "LayerNorm(7) has a weight"
        with tl.no_grad():
            layer.weight.copy_(draw.normal(1.0, 0.5, size=7))
        rows = tl.tensor(draw.normal(mean, std, size=(3, 7)).astype(np.float64),
                         requires_grad=True)
        layer(rows).backward(draw.normal(size=(3, 7)).astype(np.float64))
        centred = rows.data - rows.data.mean(-1, keepdims=True)
        normalized = centred / np.sqrt((centred**2).mean(-1, keepdims=True) + layer.eps)
        measured = {"sum of dx": _grad(rows).sum(-1),
                    "sum of dx * x_hat": (_grad(rows) * normalized).sum(-1)}
        for what, values in measured.items():
            with checker.case(f"{what}, rows of mean {mean} and std {std}",
                              hint="which direction of x leaves the output unchanged?"):
                said = predictions()
                checker.true(isinstance(said, dict) and what in said,
                             f"predictions() returns a dict with the key {what!r}; received "
                             f"{clipped(repr(said), 100)}",
                             "the keys are exactly \"sum of dx\" and \"sum of dx * x_hat\"")
                predicted = float(said[what])
                checker.true(bool(np.all(np.abs(values - predicted) <= 1e-4)),
                             f"{what}: you predicted {predicted:.6g}; measured on the 3 rows: "
                             f"{', '.join(f'{value:.3g}' for value in values)}",
                             _ROW_SUMS[what])


def _rms(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    return x / np.sqrt((x**2).mean(-1, keepdims=True) + eps) * weight


def _rms_norm_mistakes(x: np.ndarray, weight: np.ndarray, eps: float) -> dict[str, Any]:
    """What the usual slips of RMSNorm's value give."""
    square = (x**2).mean(-1, keepdims=True)
    return {
        "the mean of the squares over every axis: it is over the last axis only":
            lambda: x / np.sqrt((x**2).mean() + eps) * weight,
        "the sum of the squares, not their mean (the 1/C missing)":
            lambda: x / np.sqrt((x**2).sum(-1, keepdims=True) + eps) * weight,
        "the mean subtracted: that is LayerNorm; RMSNorm divides x itself":
            lambda: (x - x.mean(-1, keepdims=True)) / np.sqrt(
                x.var(-1, keepdims=True) + eps) * weight,
        "eps added outside the square root": lambda: x / (np.sqrt(square) + eps) * weight,
        "the square root missing: divide by sqrt(mean(x^2) + eps)":
            lambda: x / (square + eps) * weight,
        "the weight does not multiply the result": lambda: x / np.sqrt(square + eps),
    }


@exercise_check("Exercise 2 (rms_norm)", yours="rms_norm")
def check_rms_norm(checker: Checker, rms_norm: Any) -> None:
    """``rms_norm(x, weight, eps)``'s value (shape, then values) against numpy, then
    ``tl.gradcheck`` in float64 on x and weight, on three shapes."""
    for shape, scale in [((4, 6), 1.0), ((2, 3, 5), 10.0), ((1, 8), 0.01)]:
        draw = Rng(sum(shape))
        x = tl.tensor(scale * draw.normal(size=shape).astype(np.float64), requires_grad=True)
        weight = tl.tensor(draw.normal(1.0, 0.5, size=shape[-1:]).astype(np.float64),
                           requires_grad=True)
        with checker.case(f"value, shape {shape}, inputs of size about {scale}",
                          hint="the mean of the squares is over the last axis only, kept as "
                               "(..., 1)"):
            with checker.named_errors({"broadcast": _KEEPDIMS}):
                y = rms_norm(x, weight, eps=1e-3)
            checker.shape(y, shape, "rms_norm(x, w)")
            checker.close(y, _rms(x.numpy(), weight.numpy(), 1e-3), "rms_norm(x, w)",
                          rtol=1e-10, atol=1e-12,
                          mistakes=_rms_norm_mistakes(x.numpy(), weight.numpy(), 1e-3))
        with checker.case(f"gradcheck in float64, shape {shape}",
                          hint="build it only from tensor operations, never from .data, so "
                               "autograd sees every step"):
            outside = ("a step computed outside autograd (.data, .numpy() or a numpy "
                       "function): its gradient is missing from backward")
            y = rms_norm(x, weight, eps=1e-3)
            checker.true(isinstance(y, tl.Tensor) and y.requires_grad,
                         f"rms_norm(x, w) must be a Tensor that carries a gradient; received "
                         f"{type(y).__name__}" + ("" if not isinstance(y, tl.Tensor) else
                                                  " with requires_grad False"), outside)
            try:
                tl.gradcheck(lambda a, b: rms_norm(a, b, eps=1e-3), x, weight)
            except tl.GradcheckError as error:
                checker.true(False, f"gradcheck failed: {clipped(str(error), 140)}", outside)


def _rms_backward_mistakes(x: np.ndarray, w: np.ndarray, dy: np.ndarray,
                           eps: float) -> dict[str, dict[str, Any]]:
    """What the usual slips of RMSNorm's backward give: {"dx" | "dw": {what: value or shape}}."""
    r = 1 / np.sqrt((x**2).mean(-1, keepdims=True) + eps)
    x_hat, g = x * r, dy * w
    width = x.shape[-1]
    return {
        "dx": {
            "the term along x_hat missing: r depends on every x_j of the row":
                lambda: r * g,
            "the sign of the x_hat term: dx = r (g - x_hat mean(g x_hat))":
                lambda: r * (g + x_hat * (g * x_hat).mean(-1, keepdims=True)),
            "the sum where the formula has a mean (the 1/C missing)":
                lambda: r * (g - x_hat * (g * x_hat).sum(-1, keepdims=True)),
            "LayerNorm's mean(g) subtracted: RMSNorm has no mean to subtract":
                lambda: r * (g - g.mean(-1, keepdims=True)
                             - x_hat * (g * x_hat).mean(-1, keepdims=True)),
            "g = dy, without the weight: g = dy * w":
                lambda: r * (dy - x_hat * (dy * x_hat).mean(-1, keepdims=True)),
            "r missing in front: dx = r (g - ...)":
                lambda: g - x_hat * (g * x_hat).mean(-1, keepdims=True),
        },
        "dw": {
            "dw not summed over the rows: sum dy * x_hat over every leading axis": x.shape,
            "dw summed over the first axis only: sum over every leading axis (reshape to "
            "(-1, C) first)": x.shape[1:],
            "dw summed over the last axis: sum over the rows, keep the C features":
                x.shape[:-1],
            "dw = sum of dy * x: the weight multiplies x_hat, not x":
                lambda: (dy * x).reshape(-1, width).sum(0),
            "dw as a mean over the rows: it is their sum":
                lambda: (dy * x_hat).reshape(-1, width).mean(0),
        },
    }


@exercise_check("Exercise 3 (rms_norm_backward)", yours="rms_norm_backward")
def check_rms_norm_backward(checker: Checker, rms_norm_backward: Any) -> None:
    """``rms_norm_backward(x, w, dy, eps)``'s (dx, dw) against tensorlib's autograd through the
    chain of primitives, shapes then values, on three shapes and two eps."""
    for shape, scale, eps in [((4, 6), 1.0, 1e-6), ((2, 3, 5), 3.0, 1e-6),
                              ((3, 4), 0.01, 1e-2)]:
        draw = Rng(7 * sum(shape))
        x = scale * draw.normal(size=shape).astype(np.float64)
        w = draw.normal(1.0, 0.5, size=shape[-1:]).astype(np.float64)
        dy = draw.normal(size=shape).astype(np.float64)
        x_t, w_t = tl.tensor(x, requires_grad=True), tl.tensor(w, requires_grad=True)
        (x_t / ((x_t * x_t).mean(dim=-1, keepdim=True) + eps).sqrt() * w_t).backward(dy)
        mistakes = _rms_backward_mistakes(x, w, dy, eps)
        with checker.case(f"shape {shape}, inputs of size about {scale}, eps {eps}",
                          hint="r depends on x: its derivative gives a term along x_hat; the "
                               "weight's gradient sums over every axis but the last"):
            with checker.named_errors({"broadcast": _KEEPDIMS}):
                received = rms_norm_backward(x, w, dy, eps)
            checker.true(isinstance(received, (tuple, list)) and len(received) == 2,
                         f"rms_norm_backward returns (dx, dw); received "
                         f"{clipped(repr(received), 100)}")
            expected = {"dx": _grad(x_t), "dw": _grad(w_t)}
            for name, mine in zip(expected, received, strict=True):
                checker.shape(mine, expected[name].shape, name,
                              {said: value for said, value in mistakes[name].items()
                               if isinstance(value, tuple)})
            for name, mine in zip(expected, received, strict=True):
                checker.close(mine, expected[name], name, rtol=1e-8, atol=1e-10,
                              mistakes=mistakes[name])


def _bisected(slope: Any, low: float = -2.0, high: float = 0.0) -> float:
    """The zero of an increasing ``slope`` in [low, high], by bisection."""
    for _ in range(60):
        middle = (low + high) / 2
        low, high = (middle, high) if slope(middle) < 0 else (low, middle)
    return (low + high) / 2


def _gelu_slope(x: float, approximate: str = "none") -> float:
    """gelu's derivative at x, from tensorlib's backward."""
    point = tl.tensor([x], dtype=np.float64, requires_grad=True)
    F.gelu(point, approximate=approximate).sum().backward()
    return float(_grad(point)[0])


def _gelu(x: float, approximate: str = "none") -> float:
    return float(F.gelu(tl.tensor([float(x)], dtype=np.float64),
                        approximate=approximate).numpy()[0])


@exercise_check("Exercise 4 (gelu_minimum)", yours="gelu_minimum")
def check_gelu_minimum(checker: Checker, gelu_minimum: Any) -> None:
    """``gelu_minimum()``'s (x, gelu(x)): the derivative there (from backward), x against the
    lowest point of ``F.gelu`` on a grid of step 1e-5, and the value there."""
    fine = np.linspace(-2.0, 0.0, 200_001)
    on_grid = F.gelu(tl.tensor(fine, dtype=np.float64)).numpy()
    lowest = int(np.argmin(on_grid))
    x_tanh = _bisected(lambda t: _gelu_slope(t, "tanh"))
    wrong_half = ("the bisection keeps the wrong half (the slope is negative left of the "
                  "minimum, positive right of it)")
    x_mistakes = {
        f"x = -2, the left end of the search: {wrong_half}": -2.0,
        f"x = 0, the right end of the search: {wrong_half}": 0.0,
        "the minimum of the tanh approximation, not of the exact gelu x Phi(x)": x_tanh,
    }
    with checker.case("the derivative (from backward) is zero at your x",
                      hint="the minimum is where Phi(x) + x phi(x) changes sign, between -1 and "
                           "-0.5"):
        answer = gelu_minimum()
        checker.true(isinstance(answer, (tuple, list)) and len(answer) == 2,
                     f"gelu_minimum returns (x, gelu(x)); received {clipped(repr(answer), 100)}")
        received_x = float(answer[0])
        slope = _gelu_slope(received_x)
        named = next((said for said, value in x_mistakes.items()
                      if abs(received_x - value) < 1e-7), None)
        checker.true(abs(slope) <= 1e-5, f"gelu'(your x) at x = {received_x:.8g} is "
                     f"{slope:.3g}, not 0", named)
    with checker.case("your x is the lowest point on a grid of step 1e-5",
                      hint="search the negative side: gelu is positive for x > 0"):
        checker.close(gelu_minimum()[0], fine[lowest], "x at the minimum", rtol=0, atol=2e-5,
                      mistakes=x_mistakes)
    with checker.case("your value is the gelu of your x and the minimum on the grid",
                      hint="the value is x * Phi(x) at your x"):
        x_min, value = gelu_minimum()
        x_min = float(x_min)
        value_mistakes = {
            "Phi(x), not x Phi(x): the value is gelu(x) = x Phi(x)":
                lambda: 0.5 * (1 + math.erf(x_min / math.sqrt(2))),
            "Phi with 1 - erf: Phi(x) = (1 + erf(x / sqrt(2))) / 2":
                lambda: x_min * 0.5 * (1 - math.erf(x_min / math.sqrt(2))),
            "the tanh approximation's value, not the exact gelu's": lambda: _gelu(x_min, "tanh"),
            "the derivative at x, not gelu(x)": lambda: _gelu_slope(x_min),
        }
        checker.close(value, _gelu(x_min), "gelu(your x)", rtol=0, atol=1e-9,
                      mistakes=value_mistakes)
        checker.close(value, on_grid[lowest], "the grid's minimum", rtol=0, atol=1e-9)
    if checker.passed:
        x_min, value = gelu_minimum()
        print(f"gelu has its minimum {value:.4f} at x = {x_min:.4f}")
