"""The checks of notebook 12a (watching a network train): ``BatchNormFunction`` with
``OurBatchNorm1d``, and the exercises (``fold_batch_norm``, ``batch_norm_sequence``,
``steepest_rate``).

BatchNorm is checked against ``tensorlib.nn.BatchNorm1d`` with a weight and a bias that are
not one and zero: the training forward (its shape, then its values), then the node's
backward called on its own after its forward was checked again (the three gradients' shapes,
then their values), then the same gradients through the module and autograd, the running
statistics after three batches, evaluation, and float32. The usual slips (the unbiased
variance, eps outside the square root, statistics along the wrong axis, a backward without
the mean terms, a momentum the wrong way round...) are computed here in numpy, so that a
report names the one the learner's code gave.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import tensorlib as tl
import tensorlib.nn
from tensorlib.course.checks.registry import HandOn, exercise_check, piece_check
from tensorlib.course.exercises import Checker
from tensorlib.engine.autograd import Context
from tensorlib.engine.splitmix64 import Rng
from tensorlib.nn import Linear

__all__ = ["check_batch_norm", "check_fold_batch_norm", "check_batch_norm_sequence",
           "check_steepest_rate"]

EPS, MOMENTUM = 1e-5, 0.1  # BatchNorm1d's defaults


# ------------------------------------------------------------------------------ BatchNorm
def _forward(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, slip: str = "",
             eps: float = EPS) -> np.ndarray:
    """Training-mode batch norm of x (N, C), or what a slip of its forward gives."""
    axis = 1 if slip == "rows" else 0
    mean = np.zeros(x.shape[1]) if slip == "running" else x.mean(axis=axis, keepdims=True)
    variance = np.ones(x.shape[1]) if slip == "running" else x.var(
        axis=axis, ddof=1 if slip == "unbiased" else 0, keepdims=True)
    spread = {"eps outside": np.sqrt(variance) + eps, "no sqrt": variance + eps}.get(
        slip, np.sqrt(variance + eps))
    x_hat = (x if slip == "no mean" else x - mean) / spread
    return x_hat if slip == "no affine" else x_hat * weight + bias


_FORWARD_SLIPS = {
    "unbiased": "the unbiased variance (ddof=1) normalises: batch norm divides by the biased "
                "one, x.var(axis=0)",
    "eps outside": "eps is added outside the square root: divide by sqrt(var + eps)",
    "no sqrt": "the variance divides, not its square root: divide by sqrt(var + eps)",
    "no mean": "the mean is not subtracted: x_hat = (x - mean) / sqrt(var + eps)",
    "no affine": "the weight and the bias are not applied: y = x_hat * weight + bias",
    "rows": "the statistics are taken along each row (axis=1, as LayerNorm): batch norm takes "
            "them per column, over the batch (axis=0)",
    "running": "the running statistics normalise in training too: in training, use the batch's "
               "mean and variance",
}


def _forward_mistakes(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> dict[str, Any]:
    return {said: (lambda slip=slip: _forward(x, weight, bias, slip))
            for slip, said in _FORWARD_SLIPS.items()}


def _backward(x: np.ndarray, weight: np.ndarray, dy: np.ndarray, slip: str = "",
              eps: float = EPS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(dx, dweight, dbias) of training-mode batch norm for the upstream dy, or what a slip
    of its backward gives."""
    axis = 1 if slip == "rows" else 0
    inverse_std = 1.0 / np.sqrt(x.var(axis=0) + eps)
    x_hat = (x - x.mean(axis=0)) * inverse_std
    g = dy if slip == "no weight" else dy * weight
    if slip == "no means":
        dx = inverse_std * g
    elif slip == "one mean":
        dx = inverse_std * (g - g.mean(axis=0))
    else:
        dx = inverse_std * (g - g.mean(axis=axis, keepdims=True)
                            - x_hat * (g * x_hat).mean(axis=axis, keepdims=True))
    dweight = (dy * (x if slip == "x for x_hat" else x_hat)).sum(axis=0)
    dbias = dy.sum(axis=0)
    if slip == "means":
        dweight, dbias = dweight / len(x), dbias / len(x)
    return dx, dweight, dbias


_BACKWARD_SLIPS = {
    "no means": "dx = dy * weight / sqrt(var + eps) alone: the batch's mean and variance depend "
                "on x too; subtract mean(g) and x_hat * mean(g * x_hat)",
    "one mean": "only mean(g) is subtracted: the term x_hat * mean(g * x_hat), from the "
                "variance, is missing",
    "no weight": "the weight is left out of dx: g = dy * weight",
    "rows": "the means of the backward are taken along each row (axis=1): take them over the "
            "batch (axis=0)",
    "x for x_hat": "dweight = sum(dy * x): the weight multiplies x_hat, so dweight = "
                   "sum(dy * x_hat)",
    "means": "dweight and dbias are means over the batch: sum them over axis 0",
}


def _backward_mistakes(x: np.ndarray, weight: np.ndarray, dy: np.ndarray,
                       which: int) -> dict[str, Any]:
    return {said: (lambda slip=slip: _backward(x, weight, dy, slip)[which])
            for slip, said in _BACKWARD_SLIPS.items()}


def _pair(BatchNorm: Any, dtype: Any = np.float64) -> tuple[Any, Any]:  # noqa: N803
    """Yours and the package's, with the same weight and bias (not one and zero)."""
    layers: tuple[Any, Any] = BatchNorm(4, dtype=dtype), tensorlib.nn.BatchNorm1d(4, dtype=dtype)
    gamma, beta = Rng(120).normal(1.0, 0.3, size=4), Rng(121).normal(0.0, 0.3, size=4)
    with tl.no_grad():
        for layer in layers:
            layer.weight.copy_(gamma)
            layer.bias.copy_(beta)
    return layers


def _through_autograd(layer: Any, data: np.ndarray, upstream: np.ndarray) -> tuple[Any, ...]:
    """The layer's output and the gradients of x, its weight and its bias for ``upstream``."""
    x = tl.tensor(data, requires_grad=True)
    layer.zero_grad()
    out = layer(x)
    out.backward(upstream)
    return out.data, x.grad, layer.weight.grad, layer.bias.grad


def _check_node(checker: Checker, function: Any, data: np.ndarray, weight: np.ndarray,
                bias: np.ndarray, upstream: np.ndarray) -> None:
    """``function``'s forward on its own (y's shape, then its values), then its backward:
    three gradients, their shapes, then their values."""
    ctx = Context(function)
    y = function.forward(ctx, data, weight, bias, eps=EPS)
    checker.shape(y, data.shape, "the forward's y (N, C)")
    checker.close(y, _forward(data, weight, bias), "the forward's y", rtol=1e-6, atol=1e-6,
                  mistakes=_forward_mistakes(data, weight, bias))
    grads = function.backward(ctx, upstream)
    checker.true(isinstance(grads, (tuple, list)) and len(grads) == 3,
                 f"backward returns (dx, dweight, dbias); received {grads!r:.80}",
                 "backward returns one gradient per input of forward: (dx, dweight, dbias)")
    expected = _backward(data, weight, upstream)
    order = {"the gradients are not in the order of forward's inputs: (dx, dweight, dbias)":
             weight.shape}
    for which, (name, received) in enumerate(zip(("dx", "dweight", "dbias"), grads,
                                                 strict=True)):
        checker.shape(received, expected[which].shape, name, order if which == 0 else None)
        checker.close(received, expected[which], name, rtol=1e-5, atol=1e-6,
                      mistakes=_backward_mistakes(data, weight, upstream, which))


def _running(batches: Sequence[np.ndarray], slip: str = "") -> tuple[np.ndarray, np.ndarray]:
    """(running mean, running variance) after ``batches`` in training, or what a slip of
    their update gives."""
    mean, variance = np.zeros(batches[0].shape[1]), np.ones(batches[0].shape[1])
    if slip == "still":
        return mean, variance
    keep = MOMENTUM if slip == "swapped" else 1 - MOMENTUM
    for batch in batches:
        count = len(batch)
        with np.errstate(divide="ignore", invalid="ignore"):  # one row: no unbiased variance
            batch_variance = batch.var(axis=0) * (1 if slip == "biased" else
                                                  count / (count - 1))
        if slip == "replaced":
            mean, variance = batch.mean(axis=0), batch_variance
        else:
            mean = keep * mean + (1 - keep) * batch.mean(axis=0)
            variance = keep * variance + (1 - keep) * batch_variance
    return mean, variance


_RUNNING_SLIPS = {
    "biased": "the biased variance moves the running variance: use the unbiased one, the "
              "batch's variance times N / (N - 1)",
    "swapped": "the momentum the wrong way round: running = 0.9 running + 0.1 batch",
    "replaced": "the running statistics are replaced by the batch's: move them, running = 0.9 "
                "running + 0.1 batch",
    "still": "the running statistics do not move in training: update them in forward, under "
             "tl.no_grad()",
}


def _running_mistakes(batches: Sequence[np.ndarray], which: int) -> dict[str, Any]:
    return {said: (lambda slip=slip: _running(batches, slip)[which])
            for slip, said in _RUNNING_SLIPS.items()}


@piece_check("BatchNorm1d", yours=("BatchNormFunction", "OurBatchNorm1d"))
def check_batch_norm(checker: Checker, BatchNormFunction: Any, OurBatchNorm1d: Any  # noqa: N803
                     ) -> HandOn:
    """``BatchNormFunction`` and ``OurBatchNorm1d`` against ``tensorlib.nn.BatchNorm1d``: the
    training forward, the node's backward (after its forward), the gradients through the
    module, the running statistics and the count, evaluation, and float32."""
    hint_forward = ("per column: mean and biased var over axis 0; x_hat = (x - mean) / "
                    "sqrt(var + eps); y = x_hat * weight + bias")
    hint_backward = ("g = dy * weight; dx = r (g - mean(g) - x_hat mean(g x_hat)), means over "
                     "axis 0; dweight = sum(dy x_hat), dbias = sum(dy) over axis 0")
    for what, shape, mean in [("a batch of 8, 4 channels", (8, 4), 0.0),
                              ("channels far from 0 (mean 1000)", (6, 4), 1000.0),
                              ("the smallest batch, 2 rows", (2, 4), 0.5)]:
        mine, theirs = _pair(OurBatchNorm1d)
        weight, bias = theirs.weight.numpy(), theirs.bias.numpy()
        data = Rng(122).normal(mean, 2.0, size=shape).astype(np.float64)
        upstream = Rng(123).normal(size=shape).astype(np.float64)
        with checker.case(f"training forward: {what}", hint=hint_forward):
            y = mine(tl.tensor(data))
            checker.shape(y, shape, "y (N, C)")
            checker.close(y, theirs(tl.tensor(data)), "y", rtol=1e-6, atol=1e-6,
                          mistakes=_forward_mistakes(data, weight, bias))
        with checker.case(f"backward: {what}", hint=hint_backward):
            _check_node(checker, BatchNormFunction, data, weight, bias, upstream)
            mine, theirs = _pair(OurBatchNorm1d)
            received = _through_autograd(mine, data, upstream)
            expected = _through_autograd(theirs, data, upstream)
            for which, (name, a, b) in enumerate(zip(
                    ["dx", "dweight", "dbias"], received[1:], expected[1:], strict=True)):
                checker.true(a is not None, f"{name} through the module: no gradient reached "
                             "it", "the module does not apply BatchNormFunction to x, "
                             "self.weight and self.bias (Tensors) in training")
                checker.close(a, b, f"{name} through the module", rtol=1e-5, atol=1e-6,
                              mistakes=_backward_mistakes(data, weight, upstream, which))
    mine, theirs = _pair(OurBatchNorm1d)
    batches = [Rng(124 + k).normal(k, 1.0 + k, size=(5, 4)).astype(np.float64)
               for k in range(3)]
    with checker.case("running statistics after three batches (momentum 0.1, unbiased "
                      "variance), and the count", hint="running = 0.9 running + 0.1 batch; "
                      "the variance times N / (N - 1); num_batches_tracked + 1 per batch"):
        for batch in batches:
            mine(tl.tensor(batch))
            theirs(tl.tensor(batch))
        for which, name in enumerate(("running_mean", "running_var")):
            checker.close(getattr(mine, name), getattr(theirs, name), name, rtol=1e-5,
                          mistakes=_running_mistakes(batches, which))
        checker.equal(int(mine.num_batches_tracked.numpy()), 3, "num_batches_tracked",
                      {"num_batches_tracked is not counted: add 1 per batch in training": 0})
    with checker.case("evaluation: the running statistics normalize, even one row, and nothing "
                      "moves", hint="if not self.training: (x - running_mean) / sqrt("
                      "running_var + eps) * weight + bias, and no update"):
        mine.eval()
        theirs.eval()
        for rows in (batches[0], batches[1][:1]):
            checker.close(mine(tl.tensor(rows)), theirs(tl.tensor(rows)),
                          f"the output for {len(rows)} row(s)", rtol=1e-9, atol=1e-12,
                          mistakes={"the batch's statistics normalise in evaluation too: use "
                                    "the running mean and variance when not self.training":
                                    lambda rows=rows: _forward(rows, theirs.weight.numpy(),
                                                               theirs.bias.numpy())})
        checker.close(mine.running_mean, theirs.running_mean, "running_mean afterwards",
                      rtol=1e-5, mistakes={"the running statistics move in evaluation: update "
                                           "them only in training": lambda: _running(
                                               [*batches, batches[0], batches[1][:1]])[0]})
        checker.equal(int(mine.num_batches_tracked.numpy()), 3, "num_batches_tracked afterwards",
                      {"evaluation batches are counted: count only in training": 5})
    with checker.case("float32, as the network below uses it: output and buffers",
                      hint="keep the buffers' dtype: add float32 batch statistics to them"):
        mine, theirs = OurBatchNorm1d(4), tensorlib.nn.BatchNorm1d(4)
        data = Rng(127).normal(3.0, 2.0, size=(16, 4))                    # float32
        checker.close(mine(tl.tensor(data)), theirs(tl.tensor(data)), "y", rtol=1e-4,
                      atol=1e-5)
        checker.close(mine.running_var, theirs.running_var, "running_var", rtol=1e-5)
        checker.equal(str(mine.running_var.dtype), "float32", "running_var's dtype",
                      {"the buffers became float64: move them with float32 statistics "
                       "(mul_ and add_ keep the buffer's dtype)": "float64"})
    return HandOn(OurBatchNorm1d, tensorlib.nn.BatchNorm1d)


# ------------------------------------------------------------------------------ exercises
def _folded(weight: np.ndarray, bias: np.ndarray | None, norm: Any, slip: str = ""
            ) -> tuple[np.ndarray, np.ndarray]:
    """The folded Linear's (weight, bias), or what a slip of the fold gives."""
    gamma, beta = norm.weight.numpy(), norm.bias.numpy()
    mu, variance, eps = norm.running_mean.numpy(), norm.running_var.numpy(), norm.eps
    scale = gamma / {"no eps": np.sqrt(variance), "no sqrt": variance + eps}.get(
        slip, np.sqrt(variance + eps))
    b = np.zeros(len(gamma)) if bias is None or slip == "no b" else bias
    shift = {"no mu": b * scale, "unscaled": b - mu}.get(slip, (b - mu) * scale)
    return weight * scale[:, None], shift + (0.0 if slip == "no beta" else beta)


_FOLD_SLIPS = {
    "no b": "the Linear's bias is left out of the fold: the new bias is (b - mu) * scale + beta",
    "no mu": "the running mean is not subtracted: the new bias is (b - mu) * scale + beta",
    "no beta": "the norm's bias (beta) is not added to the new bias",
    "unscaled": "b - mu is not scaled: the new bias is (b - mu) * gamma / sqrt(v + eps) + beta",
    "no eps": "eps is left out: scale = gamma / sqrt(v + eps)",
    "no sqrt": "the variance divides, not its square root: scale = gamma / sqrt(v + eps)",
}


@exercise_check("Exercise 1 (fold_batch_norm)", yours="fold_batch_norm")
def check_fold_batch_norm(checker: Checker, fold_batch_norm: Any) -> None:
    """``fold_batch_norm`` against the Linear and the BatchNorm1d (eval mode, running
    statistics away from 0 and 1) in a row, with and without the Linear's bias."""
    for what, has_bias in [("a Linear with a bias (not 0)", True),
                           ("a Linear without a bias", False)]:
        linear: Any = Linear(6, 4, bias=has_bias, rng=Rng(130), dtype=np.float64)
        norm: Any = tensorlib.nn.BatchNorm1d(4, dtype=np.float64)
        with tl.no_grad():
            if has_bias:  # a Linear's bias starts at 0, which would hide a fold that drops it
                linear.bias.copy_(Rng(139).normal(0.0, 1.0, size=4, dtype=np.float64))
            norm.weight.copy_(Rng(131).normal(1.0, 0.5, size=4, dtype=np.float64))
            norm.bias.copy_(Rng(132).normal(0.0, 0.5, size=4))
        for k in range(3):                                    # running statistics away from 0, 1
            norm(linear(tl.tensor(Rng(133 + k).normal(2.0, 3.0, size=(16, 6),
                                                      dtype=np.float64))))
        norm.eval()
        x = Rng(140).normal(size=(5, 6), dtype=np.float64)
        weight = linear.weight.numpy()
        bias = linear.bias.numpy() if has_bias else None

        def slipped(slip: str, weight: np.ndarray = weight, bias: np.ndarray | None = bias,
                    norm: Any = norm, x: np.ndarray = x) -> np.ndarray:
            folded_weight, folded_bias = _folded(weight, bias, norm, slip)
            return x @ folded_weight.T + folded_bias

        with checker.case(what, hint="y = gamma (xW^T + b - mu) / sqrt(v + eps) + beta: scale "
                          "each output row of W by gamma / sqrt(v + eps)"):
            folded = fold_batch_norm(linear, norm)
            checker.true(isinstance(folded, Linear), f"fold_batch_norm returned "
                         f"{type(folded).__name__}, not a Linear",
                         "return a new Linear (float64), with the folded weight and bias")
            y = folded(tl.tensor(x))
            checker.shape(y, (5, 4), "the output (N, out)")
            checker.close(y, norm(linear(tl.tensor(x))), "the output", rtol=1e-10,
                          mistakes={said: (lambda slip=slip: slipped(slip))
                                    for slip, said in _FOLD_SLIPS.items()})


def _sequence_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, slip: str = "",
                   eps: float = EPS) -> np.ndarray:
    """Training-mode batch norm of x (N, C, L) per channel, or what a slip gives."""
    axes = {"batch only": 0, "length only": 2}.get(slip, (0, 2))
    mean = x.mean(axis=axes, keepdims=True)
    variance = x.var(axis=axes, ddof=1 if slip == "unbiased" else 0, keepdims=True)
    spread = np.sqrt(variance) + eps if slip == "eps outside" else np.sqrt(variance + eps)
    return (x - mean) / spread * weight[:, None] + bias[:, None]


_SEQUENCE_SLIPS = {
    "batch only": "the statistics are taken over the batch only (axis 0): take them over the "
                  "batch and the length, axis=(0, 2)",
    "length only": "the statistics are taken over the length only (axis 2): take them over the "
                   "batch and the length, axis=(0, 2)",
    "unbiased": "the unbiased variance (ddof=1): batch norm divides by the biased one",
    "eps outside": "eps is added outside the square root: divide by sqrt(var + eps)",
}


_UNALIGNED = ("an array of shape (C,) lines up with the last axis, the length: keep the "
              "statistics' axes (keepdims=True) and shape weight and bias (C, 1), "
              "weight[:, None]")


@exercise_check("Exercise 2 (batch_norm_sequence)", yours="batch_norm_sequence")
def check_batch_norm_sequence(checker: Checker, batch_norm_sequence: Any) -> None:
    """``batch_norm_sequence`` against ``tensorlib.nn.BatchNorm1d`` on (N, C, L) inputs in
    float64: y's shape, then its values, for three shapes."""
    for what, shape in [("a batch of 4 sequences of length 6, 3 channels", (4, 3, 6)),
                        ("one sequence of length 5", (1, 3, 5)),
                        ("sequences of length 1 (as (N, C))", (7, 3, 1))]:
        norm: Any = tensorlib.nn.BatchNorm1d(3, dtype=np.float64)
        with tl.no_grad():
            norm.weight.copy_(Rng(150).normal(1.0, 0.5, size=3))
            norm.bias.copy_(Rng(151).normal(0.0, 0.5, size=3))
        x = Rng(152).normal(1.0, 2.0, size=shape, dtype=np.float64)
        weight, bias = norm.weight.numpy(), norm.bias.numpy()
        with checker.case(what, hint="take the mean and the biased variance over axes (0, 2) "
                          "with keepdims, and shape weight and bias as (C, 1)"):
            with checker.named_errors({"broadcast": _UNALIGNED}):
                y = batch_norm_sequence(x, weight, bias, EPS)
            checker.shape(y, shape, "y (N, C, L)",
                          {_UNALIGNED: (shape[0], 3, 3)})
            checker.close(y, norm(tl.tensor(x)), "y", rtol=1e-9, atol=1e-10,
                          mistakes={said: (lambda slip=slip, x=x, weight=weight, bias=bias:
                                           _sequence_norm(x, weight, bias, slip))
                                    for slip, said in _SEQUENCE_SLIPS.items()})


def _steepest(rates: np.ndarray, losses: np.ndarray, slip: str = "") -> float:
    """The first rate of the pair where the loss falls fastest against log10(rate), or what
    a slip of it gives."""
    steps = {"rates": np.diff(rates), "no division": np.ones(len(rates) - 1)}.get(
        slip, np.diff(np.log10(rates)))
    slopes = np.diff(losses) / steps
    index = int(np.argmax(slopes) if slip == "argmax" else np.argmin(slopes))
    if slip == "lowest":
        index = int(np.argmin(losses))
    return float(rates[index + 1 if slip == "second" else index])


_STEEPEST_SLIPS = {
    "second": "the rate at the end of the steepest pair: take its first rate, rates[i]",
    "rates": "the slope against the rate itself: divide by np.diff(np.log10(rates))",
    "no division": "the differences of the losses alone: divide them by the differences of "
                   "log10(rate)",
    "argmax": "the steepest rise (argmax): the loss falls fastest where the slope is most "
              "negative (argmin)",
    "lowest": "the rate of the lowest loss: the steepest fall comes before it",
}


@exercise_check("Exercise 3 (steepest_rate)", yours="steepest_rate")
def check_steepest_rate(checker: Checker, steepest_rate: Any, result: Any) -> None:
    """``steepest_rate`` on two made-up curves whose answer is known (evenly and unevenly
    spaced rates), then on the notebook's range test ``result``; when all are right, the
    rate it gives beside the range test's suggestion."""
    grid = 10.0 ** np.linspace(-4, 1, 11)                        # 1e-4, 10^-3.5, ..., 10
    curve = np.array([3.3, 3.3, 3.29, 3.25, 3.1, 2.5, 2.3, 2.2, 2.6, 4.0, 9.0])
    uneven = np.array([1e-4, 1e-3, 2e-3, 1e-1, 1.0])
    uneven_curve = np.array([3.0, 2.9, 2.7, 2.0, 3.0])
    rates, smoothed = result.learning_rates, result.smoothed_losses()
    rate = None
    for what, hint, (x, y) in [
            ("a loss that drops most between 1e-2 and 10^-1.5",
             "slopes = np.diff(losses) / np.diff(np.log10(rates)); take the rate at the start "
             "of the most negative one", (grid, curve)),
            ("rates that are not evenly spaced", "divide by the differences of log10(rate), "
             "not by the differences of the rates or by 1", (uneven, uneven_curve)),
            ("the range test above", "use result.learning_rates and result.smoothed_losses()",
             (rates, smoothed))]:
        with checker.case(what, hint=hint):
            rate = steepest_rate(x, y)
            checker.close(rate, _steepest(x, y), "the rate", rtol=1e-9,
                          mistakes={said: (lambda slip=slip, x=x, y=y: _steepest(x, y, slip))
                                    for slip, said in _STEEPEST_SLIPS.items()})
    if checker.passed:
        print(f"steepest descent at {rate:.3f}, against the suggestion "
              f"{result.suggestion():.3f}")
