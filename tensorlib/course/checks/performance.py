"""The checks of notebook 20 (performance): its three exercises, ``linear_flops``, the
backward of the unmasked ``Attention`` Function, and ``accumulate`` (gradient accumulation).

Each compares the learner's answer with what the engine really does: the products a
``linear`` node runs forward and backward (alone, and over every node of the benchmark
model's training step), the gradients of the same attention built from primitives (the
forward's output first, then the gradients ``backward`` returns, their shapes before their
values, then ``tl.gradcheck``), and full-batch SGD steps of a small Decoder. The usual slips
(a multiply-add counted as one FLOP, both products always counted, a transpose missing, the
softmax's row sum left out, the gradients not zeroed, a step per micro-batch) are named by
what they give.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

import numpy as np

import tensorlib as tl
from tensorlib.course.checks.registry import exercise_check
from tensorlib.course.exercises import Checker
from tensorlib.engine.autograd import Context
from tensorlib.engine.splitmix64 import Rng
from tensorlib.nn import Decoder
from tensorlib.nn import functional as F
from tensorlib.optim import SGD

__all__ = ["check_linear_flops", "check_attention_backward", "check_accumulate"]


# ------------------------------------------------------------------------------ exercise 1
def _flops_that_ran(x_shape: tuple[int, ...], weight_shape: tuple[int, int], x_grad: bool,
                    weight_grad: bool, bias_grad: bool) -> tuple[tuple[bool, ...],
                                                                 tuple[int, int]]:
    """Run a linear node forward and backward: its needs_input_grad, and the FLOPs of the
    products behind what came out."""
    x = tl.Tensor(np.ones(x_shape, dtype=np.float32), requires_grad=x_grad)
    weight = tl.Tensor(np.ones(weight_shape, dtype=np.float32), requires_grad=weight_grad)
    bias = tl.Tensor(np.ones(weight_shape[0], dtype=np.float32), requires_grad=bias_grad)
    out = F.linear(x, weight, bias)
    node = out.grad_fn
    assert node is not None  # x or the weight needs a gradient in every case
    needs = node.needs_input_grad
    out.sum().backward()
    product = 2 * int(np.prod(x_shape)) * weight_shape[0]  # 2 N in out
    backward = product * ((x.grad is not None) + (weight.grad is not None))
    return needs, (product, backward)


def _linear_nodes(output: Any) -> list[Any]:
    """Every node named "linear" in the graph behind ``output``."""
    found, seen, stack = [], set(), [output.grad_fn]
    while stack:
        node = stack.pop()
        if isinstance(node, Context) and id(node) not in seen:
            seen.add(id(node))
            found += [node] if node.name == "linear" else []
            stack.extend(node.next)
    return found


def _flops_mistakes(x_shape: tuple[int, ...], weight_shape: tuple[int, int],
                    needs: tuple[bool, ...]) -> dict[str, list[int]]:
    """What the usual slips of counting one linear node's FLOPs give: [forward, backward]
    (a list: a tuple would be a mistake of a shape check)."""
    out_features, in_features = weight_shape
    rows = math.prod(x_shape[:-1])
    product = 2 * rows * in_features * out_features
    asked = int(needs[0]) + int(needs[1])

    def of(rows: int) -> int:
        return 2 * rows * in_features * out_features

    return {
        "a multiply-add counted as 1 FLOP: an (M, K) x (K, N) product takes 2 M K N":
            [product // 2, asked * product // 2],
        "the backward always counts two products: dx only when needs_input_grad[0], dW "
        "only when needs_input_grad[1]": [product, 2 * product],
        "the bias's flag counted as a product: the bias's gradient is a sum, not a product":
            [product, sum(map(int, needs)) * product],
        "the backward counted as one product: one for dx and one for dW, each when asked":
            [product, product],
        "N is x's first axis only: all the leading axes fold into N = prod(x_shape[:-1]) rows":
            [of(x_shape[0]), asked * of(x_shape[0])],
        "N counts every entry of x: the last axis is in_features, N = prod(x_shape[:-1])":
            [of(math.prod(x_shape)), asked * of(math.prod(x_shape))],
    }


@exercise_check("Exercise 1 (linear_flops)", yours="linear_flops")
def check_linear_flops(checker: Checker, linear_flops: Any, model: Any, inputs: np.ndarray,
                       targets: np.ndarray) -> None:
    """``linear_flops(x_shape, weight_shape, needs_input_grad)`` against the products a
    linear node runs, for three layers (trained, on data, frozen), then summed over every
    linear node of the benchmark model's training step (3 times their forward)."""
    config = model.config
    batch, c = inputs.shape[0], config.channels
    layers = [("the MLP's first layer at the benchmark size, everything trained",
               (batch, config.context_length, c), (4 * c, c), True, True, True),
              ("a first layer on data (x needs no gradient)", (32, 10), (20, 10), False, True,
               True),
              ("a frozen weight with a trainable bias", (4, 6, 8), (3, 8), True, False, True)]
    for what, x_shape, weight_shape, *flags in layers:
        with checker.case(what, hint="forward: one product of 2 N in out; backward: one such "
                          "product for each of dx and dW that is wanted"):
            needs, expected = _flops_that_ran(x_shape, weight_shape, *flags)
            checker.equal(tuple(linear_flops(x_shape, weight_shape, needs)), expected,
                          "(forward, backward) FLOPs",
                          _flops_mistakes(x_shape, weight_shape, needs))
    with checker.case("every linear node of a training step adds up to 3 x their forward",
                      hint="in the model every linear's input and weight need a gradient"):
        model.zero_grad()
        nodes = _linear_nodes(model.loss(inputs, targets))
        shapes = [(n.input_shapes[0], n.input_shapes[1], n.needs_input_grad) for n in nodes]
        steps = [linear_flops(*shape) for shape in shapes]
        r = batch * config.context_length
        linear_forward = config.layers * (2 * r * c * 3 * c + 2 * r * c * c
                                          + 2 * 2 * r * c * 4 * c) \
            + 2 * r * c * config.vocabulary_size
        checker.equal(len(nodes), 4 * config.layers + 1, "linear nodes in the graph")
        variants = [_flops_mistakes(*shape) for shape in shapes]
        checker.equal(sum(f + b for f, b in steps), 3 * linear_forward,
                      "FLOPs of a training step",
                      {slip: sum(sum(variant[slip]) for variant in variants)
                       for slip in variants[0]})


# ------------------------------------------------------------------------------ exercise 2
def _gradcheck_says(function: Callable[..., Any], *inputs: Any) -> str | None:
    """None when gradcheck passes, else its message, numbers to 4 significant digits."""
    try:
        tl.gradcheck(function, *inputs)
    except tl.GradcheckError as error:
        return re.sub(r"-?\d+\.\d+(e-?\d+)?", lambda m: f"{float(m.group()):.4g}", str(error))
    return None


def _composed_attention(q: Any, k: Any, v: Any) -> Any:
    """softmax(scale · q kᵀ) v built from primitives."""
    return ((q @ k.transpose()) * (1.0 / math.sqrt(q.shape[-1]))).softmax(-1) @ v


def _attention_gradients(q: np.ndarray, k: np.ndarray, v: np.ndarray, grad: np.ndarray,
                         slip: str = "") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(dq, dk, dv) of unmasked attention by the lesson's formulas; ``slip`` names a usual
    mistake."""
    def t(a: np.ndarray) -> np.ndarray:
        return np.swapaxes(a, -1, -2)

    scale = 1.0 / math.sqrt(q.shape[-1])
    scores = scale * (q @ t(k))
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    p = weights / weights.sum(axis=-1, keepdims=True)
    grad_v = p @ grad if slip == "dv" else t(p) @ grad
    grad_p = grad @ t(v)
    row_sum = (p * grad_p).sum(axis=-1, keepdims=slip != "keepdims")
    if slip == "keepdims":
        row_sum = row_sum[..., None, :]
    grad_s = p * (grad_p if slip == "row sum" else grad_p - row_sum)
    grad_s = grad_s * (1.0 if slip == "scale" else scale * scale if slip == "twice" else scale)
    grad_q, grad_k = grad_s @ k, (grad_s @ q if slip == "dk" else t(grad_s) @ q)
    if slip == "swapped":
        grad_q, grad_k = grad_k, grad_q
    return grad_q, grad_k, grad_v


def _slipped_gradients(q: np.ndarray, k: np.ndarray, v: np.ndarray, grad: np.ndarray,
                       slip: str) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The gradients a slip gives, or None where its shapes do not fit (it raises)."""
    try:
        return _attention_gradients(q, k, v, grad, slip)
    except ValueError:
        return None


_BACKWARD_SLIPS = {
    "dv": "dV without the transpose: dV = Pᵀ dO",
    "row sum": "dS without the softmax's row sum: dS = scale · P ⊙ (dP - Σⱼ P ⊙ dP)",
    "keepdims": "the row sum Σⱼ P ⊙ dP without keepdims=True: its axis is dropped, so it does "
                "not line up with dP",
    "scale": "dS is not multiplied by the scale",
    "twice": "the scale applied twice in dS",
    "dk": "dK without the transpose: dK = dSᵀ Q",
    "swapped": "dQ and dK swapped: backward returns (dq, dk, dv), in forward's order",
}


@exercise_check("Exercise 2 (the Attention backward)", yours="Attention")
def check_attention_backward(checker: Checker, Attention: Any) -> None:  # noqa: N803
    """The ``Attention`` Function against the same formula built from primitives, for
    self-attention, cross-attention and one query: the forward's shape and values, then
    the three gradients ``backward`` returns (their shapes, then their values), then
    ``tl.gradcheck`` in float64."""
    generator = Rng(20)
    shapes = {"self-attention, 2 heads of 3 positions": ((1, 2, 3, 4), (1, 2, 3, 4)),
              "cross-attention, 2 queries over 5 keys, batch 2": ((2, 1, 2, 3), (2, 1, 5, 3)),
              "one query over 6 keys": ((1, 1, 1, 4), (1, 1, 6, 4))}
    for what, (q_shape, kv_shape) in shapes.items():
        q, k, v = (generator.normal(size=s, dtype=np.float64)
                   for s in (q_shape, kv_shape, kv_shape))
        upstream = np.cos(np.arange(math.prod(q_shape))).reshape(q_shape)
        tensors = [tl.Tensor(a, requires_grad=True) for a in (q, k, v)]
        _composed_attention(*tensors).backward(upstream)
        with checker.case(what, hint="the mask never appears in the backward: the same dV, "
                          "dP, dS, dQ, dK; only the shapes of P (Tq, Tk) and of dK, dV (Tk) "
                          "change"):
            with tl.no_grad():
                expected = _composed_attention(*map(tl.Tensor, (q, k, v))).numpy()
                out = Attention.apply(*map(tl.Tensor, (q, k, v)))
            checker.shape(out, q_shape, "the forward's output (..., Tq, D)")
            checker.close(out, expected, "the forward's output", rtol=1e-12, atol=1e-14)
            ctx = Context(Attention)
            ctx.needs_input_grad = (True, True, True)
            Attention.forward(ctx, q, k, v)
            with checker.named_errors({"broadcast": _BACKWARD_SLIPS["keepdims"]}, (ValueError,)):
                grads = Attention.backward(ctx, upstream)
            checker.true(isinstance(grads, tuple) and len(grads) == 3,
                         f"backward returned {type(grads).__name__}"
                         + (f" of {len(grads)}" if isinstance(grads, (tuple, list)) else "")
                         + ", expected a tuple (dq, dk, dv)",
                         "backward returns one gradient per input of forward: (dq, dk, dv)")
            slipped = {said: _slipped_gradients(q, k, v, upstream, slip)
                       for slip, said in _BACKWARD_SLIPS.items()}
            for index, (name, tensor) in enumerate(zip("qkv", tensors, strict=True)):
                mistakes = {said: gradients[index] for said, gradients in slipped.items()
                            if gradients is not None}
                checker.shape(grads[index], tensor.shape, f"d{name} ({name}'s shape)",
                              mistakes)
                checker.close(grads[index], tensor.grad, f"d{name}", rtol=1e-10, atol=1e-12,
                              mistakes=mistakes)
            message = _gradcheck_says(Attention.apply,
                                      *[tl.Tensor(a, requires_grad=True) for a in (q, k, v)])
            checker.true(message is None, str(message))


# ------------------------------------------------------------------------------ exercise 3
def _steps(config: Any, inputs: np.ndarray, targets: np.ndarray, parts: int, calls: int,
           slip: str = "") -> tuple[list[float], list[np.ndarray]]:
    """What ``calls`` calls of gradient accumulation over ``parts`` micro-batches (SGD, lr
    0.1, from Decoder(config, rng=Rng(0)), the first call from leftover gradients of 1.0
    when there is one call) return, and the parameters after them; ``slip`` names a usual
    mistake ("": the right way; with one part, ``calls`` full-batch steps)."""
    model = Decoder(config, rng=Rng(0))
    if calls == 1:
        for p in model.parameters():
            p.grad = np.ones_like(p.data)  # what an earlier backward left behind
    optimizer = SGD(model, lr=0.1)
    size = len(inputs) // parts
    losses = []
    for _ in range(calls):
        if slip != "no zero_grad":
            optimizer.zero_grad()
        total, last = 0.0, 0.0
        for i in range(0, len(inputs), size):
            loss = model.loss(inputs[i:i + size], targets[i:i + size])
            if slip != "not divided":
                loss = loss / parts
            loss.backward()
            last = loss.item()
            total += last
            if slip == "step each":
                optimizer.step()
        if slip != "step each":
            optimizer.step()
        losses.append({"last": last, "mean again": total / parts}.get(slip, total))
    return losses, [p.numpy().copy() for p in model.parameters()]


_STEP_TOO_EARLY = ("optimizer.step() before the backward of a graph built earlier: the step "
                   "changes in place the weights that graph saved; run every backward first, "
                   "then one step")
_ACCUMULATION_SLIPS = {
    "no zero_grad": "the gradients are not zeroed first: what an earlier backward left in "
                    ".grad is added to this step's (optimizer.zero_grad() before the loop)",
    "not divided": "each micro-batch's loss is not divided by len(micro_batches): the step "
                   "follows their sum, len(micro_batches) times the mean",
    "step each": "a step after each micro-batch: one step, after every backward",
    "last": "the last micro-batch's loss returned: return the sum of the parts, each divided "
            "by len(micro_batches)",
    "mean again": "the parts' losses, already divided by len(micro_batches), averaged again: "
                  "return their sum",
}


@exercise_check("Exercise 3 (gradient accumulation)", yours="accumulate")
def check_accumulate(checker: Checker, accumulate: Any, small_config: Any,
                     small_inputs: np.ndarray, small_targets: np.ndarray) -> None:
    """``accumulate(model, optimizer, micro_batches)`` against full-batch SGD steps: the mean
    loss each call returns, then every parameter after the last step; from leftover
    gradients, with 1, 2 and 4 micro-batches, and two calls in a row."""
    hint = ("each graph saved the weights as they were at its forward: when may they change? "
            "Each part's loss counts 1/len(micro_batches); and a step's gradient is that of "
            "its own micro-batches only: zero the gradients first")
    for parts, calls in [(2, 1), (4, 1), (1, 1), (2, 2)]:
        size = len(small_inputs) // parts
        micro_batches = [(small_inputs[i:i + size], small_targets[i:i + size])
                         for i in range(0, len(small_inputs), size)]
        what = ("1 micro-batch (the whole batch)" if parts == 1 else
                f"{parts} micro-batches of {size} sequences")
        what += (", from leftover gradients (every .grad 1.0)" if calls == 1 else
                 f", {calls} calls in a row: {calls} steps")
        with checker.case(what, hint=hint):
            expected_losses, expected_parameters = _steps(small_config, small_inputs,
                                                          small_targets, 1, calls)
            slipped: dict[str, tuple[list[float], list[np.ndarray]]] = {}

            def variant(slip: str, parts: int = parts, calls: int = calls,
                        slipped: dict = slipped) -> tuple[list[float], list[np.ndarray]]:
                if slip not in slipped:
                    slipped[slip] = _steps(small_config, small_inputs, small_targets, parts,
                                           calls, slip)
                return slipped[slip]

            model = Decoder(small_config, rng=Rng(0))
            if calls == 1:
                for p in model.parameters():
                    p.grad = np.ones_like(p.data)  # what an earlier backward left behind
            optimizer = SGD(model, lr=0.1)
            for call, expected_loss in enumerate(expected_losses, start=1):
                with checker.named_errors({"changed in place": _STEP_TOO_EARLY}, (RuntimeError,)):
                    received = accumulate(model, optimizer, micro_batches)
                checker.close(received, expected_loss, f"the mean loss of call {call}",
                              rtol=1e-5, mistakes={
                                  said: lambda slip=slip, call=call: variant(slip)[0][call - 1]
                                  for slip, said in _ACCUMULATION_SLIPS.items()})
            for index, ((name, p), q) in enumerate(zip(model.named_parameters(),
                                                       expected_parameters, strict=True)):
                checker.close(p.numpy(), q, f"parameter {name} after the last step", rtol=1e-5,
                              atol=1e-6, mistakes={
                                  said: lambda slip=slip, index=index: variant(slip)[1][index]
                                  for slip, said in _ACCUMULATION_SLIPS.items()})
