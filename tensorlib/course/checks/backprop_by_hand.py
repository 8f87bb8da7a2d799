"""The checks of notebook 09 (backpropagation by hand): the core piece ``backward_by_hand``,
every ``d_`` line of the network's backward pass graded on its own, and the exercises
(``relu_backward``, ``softmax_backward``, ``FixedCrossEntropy``, ``embedding_backward``).

``backward_by_hand``'s lines are compared with tensorlib's gradients of the same forward
pass (the notebook's numpy steps redone in tensorlib ops, float64, every step retaining its
gradient), step by step in the order the learner writes them: each line's shape, then its
values, against what the usual slips on that line give (a gradient not summed over a
broadcast axis, a lost keepdims, a ``+=`` missing where a value is used twice, a transpose, a
factor such as the mean's 1/B or 1/H, a sign, an overwrite where ``np.add.at`` adds). When
the function stops at an error, the lines it wrote before are graded all the same, and the
error is reported at the first step it did not reach.
"""

from __future__ import annotations

import linecache
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

import tensorlib as tl
import tensorlib.nn.functional as F
from tensorlib.course.checks.differences import clipped
from tensorlib.course.checks.registry import HandOn, exercise_check, piece_check
from tensorlib.course.exercises import Checker
from tensorlib.engine.splitmix64 import Rng
from tensorlib.nn import Embedding

__all__ = ["check_backward_by_hand", "check_relu_backward", "check_softmax_backward_closed_form",
           "check_fixed_cross_entropy", "check_embedding_backward"]


def _grad(leaf: tl.Tensor) -> np.ndarray:
    """The gradient backward left on a tensor (a leaf, or one that retained it), as an array."""
    assert leaf.grad is not None, "the backward pass gave this tensor no gradient"
    return leaf.grad.numpy()


# ------------------------------------------------------------------- the network's backward
_STEPS = ["logprobs", "probs", "counts_sum", "counts", "shifted", "row_max", "logits", "h",
          "W2", "b2", "hln", "gamma", "beta", "xhat", "rstd", "diff", "var", "mu", "hpre",
          "embcat", "W1", "b1", "emb", "C"]
_READS = ("logprobs", "probs", "counts_sum", "counts", "shifted", "row_max", "logits", "h", "hln",
          "xhat", "rstd", "diff", "var", "mu", "hpre", "embcat", "emb", "W1", "b1", "gamma",
          "beta", "W2", "b2", "C", "X", "Y", "B", "D", "H", "eps")


def _forward(X: np.ndarray, Y: np.ndarray, embedding: Any, hidden: Any, norm: Any,
             output: Any) -> dict[str, Any]:
    """The notebook's numpy forward pass: the parameters and every step's array by name."""
    v: dict[str, Any] = {"C": embedding.weight.numpy(), "W1": hidden.weight.numpy(),
                         "b1": hidden.bias.numpy(), "gamma": norm.weight.numpy(),
                         "beta": norm.bias.numpy(), "W2": output.weight.numpy(),
                         "b2": output.bias.numpy(), "eps": norm.eps, "X": X, "Y": Y}
    v["emb"] = v["C"][X]
    v["embcat"] = v["emb"].reshape(len(Y), -1)
    v["hpre"] = v["embcat"] @ v["W1"].T + v["b1"]
    v["mu"] = v["hpre"].mean(axis=1, keepdims=True)
    v["diff"] = v["hpre"] - v["mu"]
    v["var"] = (v["diff"] ** 2).mean(axis=1, keepdims=True)
    v["rstd"] = (v["var"] + v["eps"]) ** -0.5
    v["xhat"] = v["diff"] * v["rstd"]
    v["hln"] = v["gamma"] * v["xhat"] + v["beta"]
    v["h"] = np.tanh(v["hln"])
    v["logits"] = v["h"] @ v["W2"].T + v["b2"]
    v["row_max"] = v["logits"].max(axis=1, keepdims=True)
    v["shifted"] = v["logits"] - v["row_max"]
    v["counts"] = np.exp(v["shifted"])
    v["counts_sum"] = v["counts"].sum(axis=1, keepdims=True)
    v["probs"] = v["counts"] / v["counts_sum"]
    v["logprobs"] = np.log(v["probs"])
    return v


def _tensorlib_gradients(v: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """The same forward pass step for step in tensorlib ops (float64), and the loss's gradient
    with respect to every step, by tensorlib's backward."""
    X, Y, B = v["X"], v["Y"], len(v["Y"])
    t = {name: tl.tensor(v[name], requires_grad=True)
         for name in ("C", "W1", "b1", "gamma", "beta", "W2", "b2")}
    t["emb"] = t["C"][X]
    t["embcat"] = t["emb"].reshape(B, -1)
    t["hpre"] = t["embcat"] @ t["W1"].T + t["b1"]
    t["mu"] = t["hpre"].mean(dim=1, keepdim=True)
    t["diff"] = t["hpre"] - t["mu"]
    t["var"] = (t["diff"] ** 2).mean(dim=1, keepdim=True)
    t["rstd"] = (t["var"] + v["eps"]) ** -0.5
    t["xhat"] = t["diff"] * t["rstd"]
    t["hln"] = t["gamma"] * t["xhat"] + t["beta"]
    t["h"] = t["hln"].tanh()
    t["logits"] = t["h"] @ t["W2"].T + t["b2"]
    t["row_max"] = t["logits"].amax(dim=1, keepdim=True)
    t["shifted"] = t["logits"] - t["row_max"]
    t["counts"] = t["shifted"].exp()
    t["counts_sum"] = t["counts"].sum(dim=1, keepdim=True)
    t["probs"] = t["counts"] / t["counts_sum"]
    t["logprobs"] = t["probs"].log()
    for tensor in t.values():
        tensor.retain_grad()
    (-t["logprobs"][np.arange(B), Y].mean()).backward()
    return {name: _grad(tensor) for name, tensor in t.items()}


def _summed_over_batch(batch: int, size: int) -> dict[str, Any]:
    """The shapes a parameter's gradient takes when its sum over the batch goes wrong."""
    return {"not summed over the batch: the parameter was broadcast along axis 0, so its "
            "gradient sums over it": (batch, size),
            "keepdims=True on a sum that makes a parameter's gradient: it has the "
            "parameter's own shape": (1, size),
            "summed over axis 1, not over the batch (axis 0)": (batch,)}


def _summed_over_row(batch: int, size: int, what: str) -> dict[str, Any]:
    """The shapes a per-row gradient takes when its sum over the row goes wrong."""
    return {"keepdims=True missing in the sum over the row (it stays (B, 1))": (batch,),
            f"not summed over the row: {what} is used by every column of its row, so its "
            "gradient sums over them": (batch, size)}


def _step_mistakes(v: Mapping[str, Any], G: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """For each step, what the usual slips on its line give (a value, a function computing
    it, or a shape), from the right gradients of the steps before it."""
    B, V = v["probs"].shape
    H, D3 = v["W1"].shape
    rows, Y = np.arange(B), v["Y"]
    onehot = np.zeros((B, V))
    onehot[rows, Y] = 1.0
    probs, counts, total = v["probs"], v["counts"], v["counts_sum"]

    def overwritten() -> np.ndarray:
        wrong = np.zeros_like(v["C"])
        wrong[v["X"]] = G["emb"]
        return wrong

    return {
        "logprobs": {
            "the mean's 1/B missing: each right character's log-probability gets -1/B":
                -onehot,
            "the sign: the loss is minus the mean of the log-probabilities": onehot / B,
            "every entry set: the loss reads only logprobs[rows, Y], the others get 0":
                np.full((B, V), -1.0 / B),
        },
        "probs": {
            "times probs, not divided by it: the derivative of log p is 1 / p":
                lambda: G["logprobs"] * probs,
        },
        "counts_sum": {
            **_summed_over_row(B, V, "counts_sum"),
            "the sign: d(c / s)/ds = -c / s**2":
                lambda: (counts / total**2 * G["probs"]).sum(axis=1, keepdims=True),
            "-c / s, not -c / s**2: the derivative of 1 / s is -1 / s**2":
                lambda: (-counts / total * G["probs"]).sum(axis=1, keepdims=True),
        },
        "counts": {
            "the += missing: counts also reaches the loss through counts_sum, so d_counts "
            "adds d_counts_sum": lambda: G["probs"] / total,
            "d_counts = d_counts_sum, shape (B, 1): d_counts starts from d_probs / counts_sum, "
            "then adds d_counts_sum (+=)": (B, 1),
            "only the path through counts_sum: d_counts starts from d_probs / counts_sum":
                lambda: np.broadcast_to(G["counts_sum"], (B, V)),
            "d_probs times counts_sum, not divided by it":
                lambda: G["probs"] * total + G["counts_sum"],
        },
        "shifted": {
            "times shifted, not exp(shifted), which is counts": lambda: v["shifted"] * G["counts"],
            "d_counts passed on unchanged: times exp(shifted), which is counts": G["counts"],
        },
        "row_max": _summed_over_row(B, V, "row_max"),
        "logits": {},
        "h": {},
        "W2": {"transposed: d_W2 has W2's shape (V, H), d_logits.T @ h": (H, V)},
        "b2": _summed_over_batch(B, V),
        "hln": {
            "tanh's derivative with hln: it is 1 - h**2, with h = tanh(hln) the output":
                lambda: G["h"] * (1 - v["hln"] ** 2),
            "1 - h, not 1 - h**2": lambda: G["h"] * (1 - v["h"]),
            "1 + h**2: tanh's derivative is 1 - h**2": lambda: G["h"] * (1 + v["h"] ** 2),
            "d_h passed on unchanged: times tanh's derivative 1 - h**2": G["h"],
        },
        "gamma": {**_summed_over_batch(B, H),
                  "times hln, not xhat: gamma multiplies xhat":
                      lambda: (G["hln"] * v["hln"]).sum(axis=0)},
        "beta": _summed_over_batch(B, H),
        "xhat": {
            "d_hln passed on without gamma: xhat is multiplied by gamma": G["hln"],
            "times beta, not gamma: xhat is multiplied by gamma": lambda: G["hln"] * v["beta"],
        },
        "rstd": {**_summed_over_row(B, H, "rstd"),
                 "times xhat, not diff: xhat = diff * rstd":
                     lambda: (G["xhat"] * v["xhat"]).sum(axis=1, keepdims=True)},
        "diff": {
            "the += missing: diff is used twice (in xhat and in var), so d_diff adds "
            "d_var * 2 * diff / H": lambda: G["xhat"] * v["rstd"],
            "the var path without the mean's 1/H: d_var * 2 * diff / H":
                lambda: G["xhat"] * v["rstd"] + G["var"] * 2 * v["diff"],
            "the var path without the 2 of diff**2: d_var * 2 * diff / H":
                lambda: G["xhat"] * v["rstd"] + G["var"] * v["diff"] / H,
        },
        "var": {
            **_summed_over_row(B, H, "var"),
            "the exponent: (var + eps)**-0.5 has the derivative -0.5 (var + eps)**-1.5":
                lambda: G["rstd"] * -0.5 * (v["var"] + v["eps"]) ** -0.5,
            "the -0.5 of the exponent missing: d_rstd * -0.5 * (var + eps)**-1.5":
                lambda: G["rstd"] * (v["var"] + v["eps"]) ** -1.5,
        },
        "mu": {
            **_summed_over_row(B, H, "mu"),
            "the sign: diff = hpre - mu, so mu gets minus the row sum of d_diff":
                lambda: G["diff"].sum(axis=1, keepdims=True),
            "the mean's 1/H taken here: d_mu is minus the row sum; hpre then gets d_mu / H":
                lambda: -G["diff"].sum(axis=1, keepdims=True) / H,
        },
        "hpre": {
            "the += missing: hpre is used twice (directly and in mu), so d_hpre adds "
            "d_mu / H": G["diff"],
            "d_mu added without the mean's 1/H: d_hpre += d_mu / H":
                lambda: G["diff"] + G["mu"],
        },
        "embcat": {},
        "W1": {"transposed: d_W1 has W1's shape (H, 3D), d_hpre.T @ embcat": (D3, H)},
        "b1": _summed_over_batch(B, H),
        "emb": {"the reshape back missing: d_emb has emb's shape (B, 3, D)": (B, D3)},
        "C": {"an overwrite where rows add up: d_C[X] = d_emb keeps one gradient of a row "
              "read twice; np.add.at(d_C, X, d_emb) adds them": overwritten},
    }


_STEP_ERRORS = {  # the step a line makes -> {text of the error it raises: the slip}
    "h": {"matmul": "W2 is stored (V, H), as Linear stores it: d_h = d_logits @ W2, no "
                    "transpose"},
    "W2": {"matmul": "d_W2 = d_logits.T @ h: (V, B) @ (B, H) gives W2's shape (V, H)"},
    "embcat": {"matmul": "W1 is stored (H, 3D): d_embcat = d_hpre @ W1, no transpose"},
    "W1": {"matmul": "d_W1 = d_hpre.T @ embcat: (H, B) @ (B, 3D) gives W1's shape (H, 3D)"},
    "logits": {"broadcast": "d_row_max lost its axis: keep the sum over the row (B, 1) with "
                            "keepdims=True"},
    "counts": {"broadcast": "d_counts_sum lost its axis: keep the sum over the row (B, 1) with "
                            "keepdims=True"},
    "hpre": {"broadcast": "d_mu lost its axis: keep the sum over the row (B, 1) with "
                          "keepdims=True"},
    "diff": {"broadcast": "d_rstd or d_var lost its axis: keep the sum over the row (B, 1) "
                          "with keepdims=True"},
}


def _lines_written(backward_by_hand: Any
                   ) -> tuple[dict[str, Any], BaseException | None, str | None]:
    """The d_ arrays the learner's function made, by step name, the error that stopped it
    (None when it returned) and the step of the line where it stopped (None when not known):
    where it stopped, the lines before are read from its frame."""
    try:
        returned = backward_by_hand()
    except Exception as error:
        found: dict[str, Any] = {}
        stopped = None
        trace = error.__traceback__
        while trace is not None:
            frame = trace.tb_frame
            if frame.f_code is getattr(backward_by_hand, "__code__", None):
                found = {name[2:]: value for name, value in frame.f_locals.items()
                         if name.startswith("d_")}
                line = linecache.getline(frame.f_code.co_filename, trace.tb_lineno)
                named = _ASSIGNED.match(line) or _NAMED.search(line)
                stopped = named.group(1) if named and named.group(1) in _STEPS else None
            trace = trace.tb_next
        return found, error, stopped
    if not isinstance(returned, Mapping):
        return {}, TypeError(f"backward_by_hand returned {type(returned).__name__}, not the "
                             "dict of its d_ arrays (keep its last line)"), None
    return dict(returned), None, None


_ASSIGNED = re.compile(r"\s*d_(\w+)\s*[-+*/]?=[^=]")  # the d_ a line sets
_NAMED = re.compile(r"\bd_(\w+)")  # else the first d_ it names (np.add.at(d_C, ...))
_HINT = ("the gradient of the step's output times its local derivative; sum over broadcast "
         "axes, add (+=) where a value is used twice")


@piece_check("the backward pass, line by line", yours="backward_by_hand", reads=_READS,
             label="d_ lines", package_name="tensorlib's gradients")
def check_backward_by_hand(checker: Checker, backward_by_hand: Any, X: np.ndarray,
                           Y: np.ndarray, embedding: Any, hidden: Any, norm: Any,
                           output: Any) -> HandOn:
    """Each of ``backward_by_hand()``'s d_ arrays (d_logprobs down to d_C) against tensorlib's
    gradient of that step of the network (its layers, the batch X, Y): shape, then values.
    When the function stops at an error, that error comes first, as the case of the line
    that raised it; the lines written before it are graded, the others are not reached."""
    v = _forward(X, Y, embedding, hidden, norm, output)
    expected = _tensorlib_gradients(v)
    mistakes = _step_mistakes(v, expected)
    yours, failure, stopped = _lines_written(backward_by_hand)
    steps = list(_STEPS)
    if failure is not None and not isinstance(failure, NotImplementedError):
        if stopped is None:  # not known: the first step it did not write
            stopped = next((name for name in _STEPS if name not in yours), _STEPS[-1])
        steps.remove(stopped)
        with checker.case(f"d_{stopped}", hint=_HINT):
            with checker.named_errors(_STEP_ERRORS.get(stopped, {})):
                raise failure
    for name in steps:
        with checker.case(f"d_{name}", hint=_HINT):
            if name not in yours:
                if failure is None or isinstance(failure, NotImplementedError):
                    raise NotImplementedError()
                checker.true(False, "not reached: your code stopped at the error above")
            shapes = {said: value for said, value in mistakes[name].items()
                      if isinstance(value, tuple)}
            checker.shape(yours[name], expected[name].shape, f"d_{name}", shapes)
            checker.close(yours[name], expected[name], f"d_{name}", rtol=1e-8, atol=1e-12,
                          mistakes=mistakes[name])
    return HandOn({name: yours.get(name) for name in _STEPS}, expected)


# ------------------------------------------------------------------------------ exercises
@exercise_check("Exercise 1 (relu_backward)", yours="relu_backward")
def check_relu_backward(checker: Checker, relu_backward: Any, hln: np.ndarray, W2: np.ndarray,
                        b2: np.ndarray, Y: np.ndarray) -> None:
    """``relu_backward(d_out, pre)`` against the gradient autograd leaves on the network's
    ``hln`` with relu in place of tanh, then against ``F.relu`` on inputs exactly 0."""
    hln_relu = tl.tensor(hln, requires_grad=True)
    h_relu = F.relu(hln_relu)
    h_relu.retain_grad()
    F.cross_entropy(h_relu @ tl.tensor(W2.T) + tl.tensor(b2), Y).backward()
    edge = tl.tensor([-2.0, -0.0, 0.0, 1e-300, 3.0], dtype=np.float64, requires_grad=True)
    upstream = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    F.relu(edge).backward(upstream)
    for what, d_out, pre, expected, hint in [
            ("the network's hln, with relu in place of tanh", _grad(h_relu), hln,
             _grad(hln_relu), "relu passes the gradient where its input was positive, and "
             "nothing elsewhere"),
            ("inputs -2, -0, 0, 1e-300, 3", upstream, edge.numpy(), _grad(edge),
             "at exactly 0 the slope is 0")]:
        mistakes = {
            "pre >= 0: at exactly 0 relu's slope is 0 (pre > 0)": d_out * (pre >= 0),
            "the mask alone: it multiplies the incoming gradient d_out": (pre > 0) * 1.0,
            "gated by the sign of d_out, not of relu's input pre": d_out * (d_out > 0),
            "times the input pre, not relu's slope (0 or 1)": d_out * pre,
            "relu of pre, not its slope: np.maximum(pre, 0)": np.maximum(pre, 0),
        }
        with checker.case(what, hint=hint):
            received = relu_backward(d_out, pre)
            checker.shape(received, expected.shape, "d_input")
            checker.close(received, expected, "d_input", rtol=1e-10, atol=1e-14,
                          mistakes=mistakes)


def _softmax_mistakes(probs: np.ndarray, d_probs: np.ndarray) -> dict[str, Any]:
    """What the usual slips of the softmax's backward give."""
    weighted = (d_probs * probs).sum(axis=-1, keepdims=True)
    return {
        "the diagonal only: each s_j moves every p_i of its row, so subtract the row's "
        "sum of d_probs * probs": lambda: probs * d_probs,
        "the sign of the row's sum: probs * (d_probs - sum(d_probs * probs))":
            lambda: probs * (d_probs + weighted),
        "the row's sum without probs: sum(d_probs * probs), not sum(d_probs)":
            lambda: probs * (d_probs - d_probs.sum(axis=-1, keepdims=True)),
        "summed over the first axis, not over the row (the last axis)":
            lambda: probs * (d_probs - (d_probs * probs).sum(axis=0, keepdims=True)),
        "the leading probs missing: probs * (d_probs - ...)": lambda: d_probs - weighted,
    }


@exercise_check("Exercise 2 (softmax_backward)", yours="softmax_backward")
def check_softmax_backward_closed_form(checker: Checker, softmax_backward: Any,
                                       probs: np.ndarray, Y: np.ndarray) -> None:
    """``softmax_backward(probs, d_probs)`` against tensorlib's softmax backward: on the
    network's probabilities with its loss's d_probs, then on random rows of three shapes."""
    batch = len(Y)
    probs_t = tl.tensor(probs, requires_grad=True)
    (-probs_t.log()[np.arange(batch), Y].mean()).backward()
    d_probs = _grad(probs_t)
    scores = tl.tensor(np.log(probs), requires_grad=True)
    F.softmax(scores).backward(d_probs)
    cases = [("the network's d_shifted, from its d_probs", probs, d_probs, _grad(scores),
              "each s_j moves every p_i of its row: sum over i of d_probs_i dp_i/ds_j")]
    for shape in [(4, 5), (1, 3), (2, 3, 7)]:
        draw = Rng(sum(shape))
        random = tl.tensor(3 * draw.normal(size=shape).astype(np.float64), requires_grad=True)
        upstream = draw.normal(size=shape).astype(np.float64)
        out = F.softmax(random)
        out.backward(upstream)
        cases.append((f"F.softmax on random rows of shape {shape}", out.numpy(), upstream,
                      _grad(random), "the sum runs over the last axis and keeps it, so "
                      "it broadcasts back"))
    keepdims = ("the row's sum lost its axis: keepdims=True keeps it (..., 1), so that it "
                "broadcasts against probs")
    for what, p, d_p, expected, hint in cases:
        with checker.case(what, hint=hint):
            with checker.named_errors({"broadcast": keepdims}):
                received = softmax_backward(p, d_p)
            checker.shape(received, expected.shape, "d_shifted")
            checker.close(received, expected, "d_shifted", rtol=1e-8, atol=1e-14,
                          mistakes=_softmax_mistakes(p, d_p))


def _gradcheck_cross_entropy(function: Any, batch: int) -> bool:
    """tl.gradcheck of ``function.apply(z, targets=...)`` on seeded logits (batch, 5)."""
    z = tl.tensor(Rng(batch).normal(size=(batch, 5)), dtype=np.float64, requires_grad=True)
    classes = Rng(batch + 1).integers(0, 5, size=batch)
    return tl.gradcheck(lambda t: function.apply(t, targets=classes), z)


@exercise_check("Exercise 3 (FixedCrossEntropy)", yours="FixedCrossEntropy")
def check_fixed_cross_entropy(checker: Checker, FixedCrossEntropy: Any,  # noqa: N803
                              logits: np.ndarray, Y: np.ndarray) -> None:
    """``FixedCrossEntropy``'s backward against ``F.cross_entropy``'s on the network's logits
    with an upstream gradient of 0.7 (its shape, then values), then ``tl.gradcheck`` in
    float64 for batches of 1, 2 and 32."""
    batch = len(Y)
    mine = tl.tensor(logits, requires_grad=True)
    theirs = tl.tensor(logits, requires_grad=True)
    F.cross_entropy(theirs, Y).backward(np.array(0.7))
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    onehot = np.zeros_like(probs)
    onehot[np.arange(batch), Y] = 1.0
    mistakes = {
        "the mean's 1/B missing: the loss is a mean over the batch, so each row's "
        "gradient is divided by len(targets)": 0.7 * (probs - onehot),
        "the upstream gradient `grad` not multiplied in": (probs - onehot) / batch,
        "divided by the number of classes, not by the batch size len(targets)":
            0.7 * (probs - onehot) / probs.shape[1],
        "the sign: probs - onehot, not onehot - probs": 0.7 * (onehot - probs) / batch,
        "probs + onehot: the one-hot target is subtracted": 0.7 * (probs + onehot) / batch,
    }
    with checker.case("the network's logits, upstream gradient 0.7: d_logits equals "
                      "F.cross_entropy's", hint="compare with the compact form of the notebook"):
        FixedCrossEntropy.apply(mine, targets=Y).backward(np.array(0.7))
        checker.shape(mine.grad, _grad(theirs).shape, "d_logits")
        checker.close(mine.grad, theirs.grad, "d_logits", rtol=1e-10, atol=1e-14,
                      mistakes=mistakes)
    for size in (1, 2, 32):
        with checker.case(f"gradcheck in float64, batch of {size}",
                          hint="it passes for a batch of one: what in the forward depends on "
                               "the batch size?"):
            try:
                _gradcheck_cross_entropy(FixedCrossEntropy, size)
            except tl.GradcheckError as error:
                checker.true(False, f"gradcheck failed: {clipped(str(error), 140)}",
                             "a gradient B times too large: the forward's mean divides by the "
                             "batch size, so backward divides by len(targets)"
                             if size > 1 else None)


@exercise_check("Exercise 4 (embedding_backward)", yours="embedding_backward")
def check_embedding_backward(checker: Checker, embedding_backward: Any, X: np.ndarray,
                             V: int) -> None:
    """``embedding_backward(ids, d_rows, vocabulary_size)`` against ``Embedding``'s backward:
    on the network's batch X, ids of three axes, and a batch where every id is the same."""
    for what, ids, vocabulary, width in [
            ("the network's batch X", X, V, 10),
            ("ids of shape (2, 3, 4)", Rng(4).integers(0, 9, size=(2, 3, 4)), 9, 2),
            ("every id the same", np.full((5, 3), 2), 4, 3)]:
        table = Embedding(vocabulary, width, rng=Rng(vocabulary), dtype=np.float64)
        upstream = Rng(width).normal(size=ids.shape + (width,)).astype(np.float64)
        table(ids).backward(upstream)
        flat = upstream.reshape(-1, width)

        def every_column(ids: np.ndarray = ids, flat: np.ndarray = flat,
                         vocabulary: int = vocabulary) -> np.ndarray:
            wrong = np.zeros((ids.size, vocabulary))
            wrong[:, ids.reshape(-1)] = 1.0
            return wrong.T @ flat

        def overwritten(ids: np.ndarray = ids, flat: np.ndarray = flat,
                        vocabulary: int = vocabulary) -> np.ndarray:
            wrong = np.zeros((vocabulary, flat.shape[1]))
            wrong[ids.reshape(-1)] = flat
            return wrong

        mistakes = {
            "a 1 in every id's column on each row of O: one 1 per row, "
            "O[np.arange(n), ids] = 1": every_column,
            "each id's row written once, not summed: rows that share an id add up":
                overwritten,
            "O without the transpose, (ids, V): the product sums over the ids with O.T":
                (ids.size, width),
        }
        slips = {  # numpy's matmul says which sizes differ
            f"(size {ids.size} is different from {vocabulary})": "O is (ids, V): transpose it, "
            "O.T @ d_rows, to sum the rows that share an id",
            f"is different from {ids.size})": "d_rows is not flattened: reshape it to one row "
            "per id read, (ids, width)"}
        with checker.case(what, hint="one row of O per id read, a 1 in the column of that id; "
                                     "O transposed sums the rows that share a column"):
            with checker.named_errors(slips):
                received = embedding_backward(ids, upstream, vocabulary)
            checker.shape(received, (vocabulary, width), "d_C",
                          {said: value for said, value in mistakes.items()
                           if isinstance(value, tuple)})
            checker.close(received, table.weight.grad, "d_C", rtol=1e-10, atol=1e-14,
                          mistakes=mistakes)
