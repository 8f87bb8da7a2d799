"""The checks of notebook 05 (matmul, softmax and cross-entropy): the core pieces
``matmul_backward``, ``softmax_backward`` and ``cross_entropy_by_hand``, and the exercises
``matvec_backward``, ``LogSoftmax`` (its backward), ``smoothed_cross_entropy_grad``.

Each check compares the learner's numpy code with tensorlib's gradients on seeded float64
inputs chosen to expose the usual slips: square matrices first (where a missing transpose
gives wrong numbers instead of an error), rectangular ones, batches with one and two batch
axes, a batch with as many rows as classes (where a missing ``keepdims=True`` broadcasts
without an error), logits of 10 000. Shapes are compared before values, the loss before its
gradient, a Function's forward before its backward; each slip named in ``mistakes=`` is
computed here from the same inputs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import tensorlib as tl
import tensorlib.nn.functional as F
from tensorlib.course.checks.registry import HandOn, exercise_check, piece_check
from tensorlib.course.exercises import Checker
from tensorlib.engine.splitmix64 import Rng

__all__ = ["check_matmul_backward", "check_softmax_backward", "check_cross_entropy_by_hand",
           "check_matvec_backward", "check_log_softmax_backward",
           "check_smoothed_cross_entropy_grad"]


def _pair(checker: Checker, received: Any, what: str) -> tuple[Any, Any]:
    """``received`` as a pair, or the case stops saying what came instead."""
    checker.true(isinstance(received, (tuple, list)) and len(received) == 2,
                 f"{what}: expected a pair, received {type(received).__name__}"
                 + (f" of length {len(received)}" if isinstance(received, (tuple, list)) else ""),
                 "None where a pair was expected: a missing return?" if received is None
                 else None)
    return received[0], received[1]


def _grad(leaf: tl.Tensor) -> np.ndarray:
    """The gradient a backward pass left on a leaf, as an array."""
    assert leaf.grad is not None, "the backward pass gave this leaf no gradient"
    return leaf.grad.numpy()


def _softmax(z: np.ndarray) -> np.ndarray:
    """Softmax over the last axis, shifted by each row's maximum."""
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _log_softmax(z: np.ndarray) -> np.ndarray:
    """The stable log-softmax over the last axis."""
    shifted = z - z.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


# ------------------------------------------------------------------------- matmul_backward
def _tensorlib_matmul_backward(a: np.ndarray, b: np.ndarray,
                              grad_c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """tensorlib's gradients (dL/da, dL/db) of ``a @ b`` for the upstream gradient grad_c."""
    a_t, b_t = tl.tensor(a, requires_grad=True), tl.tensor(b, requires_grad=True)
    (a_t @ b_t).backward(grad_c)
    return _grad(a_t), _grad(b_t)


def _swap(x: np.ndarray) -> np.ndarray:
    return np.swapaxes(x, -1, -2)


def _matmul_mistakes(a: np.ndarray, b: np.ndarray, grad_c: np.ndarray, grad_a: np.ndarray,
                     grad_b: np.ndarray) -> tuple[dict[str, Any], dict[str, Any]]:
    """What the usual slips give for grad_a and for grad_b (shapes and values)."""
    batch = a.shape[:-2]
    per_matrix = _swap(a) @ grad_c                        # grad_b before the batch is summed
    for_a = {
        "grad_a and grad_b returned the other way round: return grad_a, grad_b": grad_b,
        "grad_a = grad_c @ b: b is not transposed (grad_c @ b.T has a's shape)":
            lambda: grad_c @ b,
        "grad_a transposed: b @ grad_c.T is (grad_c @ b.T).T; write grad_c @ b.T":
            _swap(grad_a),
    }
    for_b = {
        "grad_a and grad_b returned the other way round: return grad_a, grad_b": grad_a,
        "grad_b not summed over the batch axes: b is shared by every matrix of the batch, so "
        "its gradient is the sum of theirs": per_matrix.shape,
        "grad_b summed over the first batch axis only: sum every batch axis (while ndim > 2)":
            per_matrix.sum(axis=0).shape if len(batch) > 1 else None,
        "grad_b = a @ grad_c: a is not transposed (a.T @ grad_c has b's shape)":
            lambda: (a @ grad_c).reshape(-1, *grad_b.shape).sum(axis=0),
        "grad_b = grad_c.T @ a: the product in the wrong order gives grad_b transposed":
            _swap(grad_b),
        "grad_b is the mean over the batch, not the sum": (
            grad_b / int(np.prod(batch)) if batch else None),
    }
    return for_a, {key: value for key, value in for_b.items() if value is not None}


_NO_T = ("shapes that do not fit in a product: a transpose missing? grad_a = grad_c @ b.T, "
         "grad_b = a.T @ grad_c")
_BATCH_T = ("a.T on a batch reverses all its axes: transpose the last two only, "
            "np.swapaxes(a, -1, -2)")
_MATMUL_SHAPES = [  # a's shape, b's shape
    ((3, 3), (3, 3)), ((3, 4), (4, 2)), ((1, 5), (5, 1)), ((2, 3), (3, 7)),
    ((5, 3, 4), (4, 2)), ((2, 6, 1, 3), (3, 4))]


@piece_check("matmul's backward", yours="matmul_backward", label="matmul_backward")
def check_matmul_backward(checker: Checker, matmul_backward: Callable[..., Any]) -> HandOn:
    """``matmul_backward(a, b, grad_c)`` against tensorlib's gradients of ``a @ b``: square
    matrices (a missing transpose gives wrong numbers), rectangular ones, a batch with one
    and with two batch axes; the pair, both shapes, then both values."""
    rng = Rng(51)
    for a_shape, b_shape in _MATMUL_SHAPES:
        a = rng.normal(size=a_shape, dtype=np.float64)
        b = rng.normal(size=b_shape, dtype=np.float64)
        grad_c = rng.normal(size=(a @ b).shape, dtype=np.float64)
        square = " (square: every product fits, so only the values tell)" \
            if a_shape == b_shape else ""
        with checker.case(f"a {a_shape} @ b {b_shape}{square}",
                          hint="grad_a = grad_c @ b.T; grad_b = a.T @ grad_c, summed over the "
                               "batch axes when a has them"):
            with checker.named_errors({"matmul": _BATCH_T if len(a_shape) > 2 else _NO_T},
                                      (ValueError,)):
                received = matmul_backward(a.copy(), b.copy(), grad_c.copy())
            grad_a, grad_b = _tensorlib_matmul_backward(a, b, grad_c)
            for_a, for_b = _matmul_mistakes(a, b, grad_c, grad_a, grad_b)
            mine_a, mine_b = _pair(checker, received, "matmul_backward's result")
            checker.shape(mine_a, grad_a.shape, "grad_a (a's shape)", for_a)
            checker.shape(mine_b, grad_b.shape, "grad_b (b's shape)", for_b)
            checker.close(mine_a, grad_a, "grad_a", rtol=1e-10, atol=1e-12, mistakes=for_a)
            checker.close(mine_b, grad_b, "grad_b", rtol=1e-10, atol=1e-12, mistakes=for_b)
    return HandOn(matmul_backward, _tensorlib_matmul_backward)


# ------------------------------------------------------------------------ softmax_backward
def _tensorlib_softmax_backward(p: np.ndarray, grad_p: np.ndarray) -> np.ndarray:
    """tensorlib's dL/dz, from the logits log(p) (softmax(log p) = p)."""
    z = tl.tensor(np.log(p), requires_grad=True)
    z.softmax().backward(grad_p)
    return _grad(z)


def _softmax_mistakes(p: np.ndarray, g: np.ndarray) -> dict[str, Any]:
    """What the usual slips of softmax's vector-Jacobian product give."""
    return {
        "keepdims=True missing: the row sums, shape (N,), broadcast along the rows instead of "
        "down them, so row n subtracts other rows' sums": lambda: p * (g - (g * p).sum(-1)),
        "summed down the columns (axis 0), not along each row (axis -1)":
            lambda: p * (g - (g * p).sum(axis=0, keepdims=True)),
        "one sum over the whole batch: each row subtracts its own, sum(axis=-1, "
        "keepdims=True)": lambda: p * (g - (g * p).sum()),
        "the sum is sum(grad_p), without the weights p: sum(grad_p * p)":
            lambda: p * (g - g.sum(axis=-1, keepdims=True)),
        "p * grad_p alone: the - p (p . grad_p) part of the Jacobian is missing": p * g,
        "only the Jacobian's diagonal p (1 - p) used": p * (1 - p) * g,
        "the p in front is missing: p * (grad_p - sum(grad_p * p))":
            g - (g * p).sum(axis=-1, keepdims=True),
    }


@piece_check("softmax's backward", yours="softmax_backward", label="softmax_backward")
def check_softmax_backward(checker: Checker, softmax_backward: Callable[..., Any]) -> HandOn:
    """``softmax_backward(p, grad_p)`` against tensorlib's softmax backward: one row, a batch
    of as many rows as classes (keepdims), a rectangular batch, two classes, a confident row;
    the shape, then the values."""
    rng = Rng(52)
    rows = [("one row of 4 logits", rng.normal(size=(4,), dtype=np.float64)),
            ("a batch of 4 rows of 4 (as many rows as classes)",
             rng.normal(size=(4, 4), dtype=np.float64)),
            ("a batch of 3 rows of 5", rng.normal(size=(3, 5), dtype=np.float64)),
            ("two classes", np.array([[0.3, -0.3]])),
            ("a confident row (logits 12 apart)", np.array([[6.0, -6.0, 0.0]]))]
    for what, logits in rows:
        p = _softmax(logits)
        grad_p = rng.normal(size=p.shape, dtype=np.float64)
        mistakes = _softmax_mistakes(p, grad_p)
        with checker.case(what, hint="p * (grad_p - sum(grad_p * p)) with the sum over the "
                          "last axis, keepdims=True so each row subtracts its own"):
            with checker.named_errors({"broadcast": "keepdims=True missing: the row sums, shape "
                                       "(N,), do not line up with the rows of p, shape (N, V)"},
                                      (ValueError,)):
                received = softmax_backward(p.copy(), grad_p.copy())
            checker.shape(received, p.shape, "dL/dz (p's shape)", mistakes)
            checker.close(received, _tensorlib_softmax_backward(p, grad_p), "dL/dz",
                          rtol=1e-9, atol=1e-12, mistakes=mistakes)
    return HandOn(softmax_backward, _tensorlib_softmax_backward)


# -------------------------------------------------------------------- cross_entropy_by_hand
def _tensorlib_cross_entropy(logits: np.ndarray, targets: np.ndarray) -> tuple[float, np.ndarray]:
    """tensorlib's F.cross_entropy: (the mean loss, dL/dlogits)."""
    z = tl.tensor(logits, requires_grad=True)
    loss = F.cross_entropy(z, targets)
    loss.backward()
    return loss.item(), _grad(z)


def _cross_entropy_mistakes(logits: np.ndarray, targets: np.ndarray
                            ) -> tuple[dict[str, Any], dict[str, Any]]:
    """What the usual slips give for the loss and for its gradient."""
    n = logits.shape[0]
    rows = np.arange(n)
    log_p = _log_softmax(logits)
    p = np.exp(log_p)
    one_hot = np.eye(logits.shape[1])[targets]

    def naive_loss() -> float:
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            e = np.exp(logits)
            return float(-np.log(e / e.sum(axis=-1, keepdims=True))[rows, targets].mean())

    def log_of_softmax() -> float:
        with np.errstate(divide="ignore"):
            return float(-np.log(p)[rows, targets].mean())

    def every_row_every_target() -> np.ndarray:
        wrong = p.copy()
        wrong[:, targets] -= 1.0
        return wrong / n

    loss = -log_p[rows, targets].mean()
    for_loss = {
        "the loss not averaged: one per row, shape (N,); take their mean": (n,),
        "the loss is the sum over the rows, not their mean": n * loss,
        "the minus sign missing: the loss is -mean(log p[row, target])": -loss,
        "log_p[:, targets] picks every target in every row: index with (np.arange(N), "
        "targets)": -log_p[:, targets].mean(),
        "the naive softmax, exp(z) / sum(exp(z)): exp(10 000) overflows (subtract each row's "
        "max first: log_softmax_by_hand)": naive_loss,
        "the log of a softmax: a probability that rounds to 0 has log -inf (use the "
        "log-softmax: log_softmax_by_hand)": log_of_softmax,
    }
    for_grad = {
        "the gradient not divided by N: the loss is a mean over the rows": p - one_hot,
        "the one-hot not subtracted: grad = (softmax - one_hot) / N": p / n,
        "grad[:, targets] -= 1 subtracts at every target in every row: index with "
        "(np.arange(N), targets)": every_row_every_target,
        "the log-probabilities used where the probabilities belong: exp(log_p)":
            (log_p - one_hot) / n,
        "the gradient has the opposite sign: softmax minus one-hot, not one-hot minus softmax":
            (one_hot - p) / n,
    }
    return for_loss, for_grad


@piece_check("cross-entropy and its gradient", yours="cross_entropy_by_hand",
             label="cross_entropy_by_hand")
def check_cross_entropy_by_hand(checker: Checker,
                                cross_entropy_by_hand: Callable[..., Any]) -> HandOn:
    """``cross_entropy_by_hand(logits, targets)`` against ``F.cross_entropy``: the loss (a
    number, then its value) before the gradient (its shape, then its values), on several rows
    and classes, one row, one target everywhere, logits of 10 000."""
    rng = Rng(53)
    for what, logits, targets in [
            ("4 rows of 5 classes", rng.normal(size=(4, 5), std=2.0, dtype=np.float64),
             np.array([1, 0, 4, 1])),
            ("one row", rng.normal(size=(1, 3), dtype=np.float64), np.array([2])),
            ("the same target in every row", rng.normal(size=(3, 2), dtype=np.float64),
             np.array([0, 0, 0])),
            ("logits of 10 000 (stable?)", np.array([[1e4, -1e4, 0.0], [0.0, 1e4, 1e4]]),
             np.array([1, 2]))]:
        for_loss, for_grad = _cross_entropy_mistakes(logits, targets)
        with checker.case(what, hint="loss = -mean(log_softmax[row, target]); grad = (softmax - "
                                     "one_hot) / N, with the stable log-softmax"):
            loss, grad = _tensorlib_cross_entropy(logits, targets)
            received = cross_entropy_by_hand(logits.copy(), targets.copy())
            mine_loss, mine_grad = _pair(checker, received, "cross_entropy_by_hand's result")
            checker.shape(mine_loss, (), "the loss (a number)", for_loss)
            checker.close(mine_loss, loss, "the loss", rtol=1e-10, mistakes=for_loss)
            checker.shape(mine_grad, logits.shape, "dL/dlogits (the logits' shape)", for_grad)
            checker.close(mine_grad, grad, "dL/dlogits", rtol=1e-9, atol=1e-12,
                          mistakes=for_grad)
    return HandOn(cross_entropy_by_hand, _tensorlib_cross_entropy)


# ------------------------------------------------------------------------------ exercises
def _matvec_mistakes(A: np.ndarray, v: np.ndarray, grad_u: np.ndarray, grad_A: np.ndarray,
                     grad_v: np.ndarray) -> tuple[dict[str, Any], dict[str, Any]]:
    """What the usual slips give for dL/dA and for dL/dv."""
    return ({"np.outer(v, grad_u): the outer product the wrong way round gives dA transposed":
             np.outer(v, grad_u),
             "grad_u * v, an elementwise product: dA_ip = grad_u_i v_p is an outer product":
             lambda: grad_u * v,
             "dA and dv returned the other way round": grad_v},
            {"A @ grad_u: A is not transposed (A.T @ grad_u has v's shape)": lambda: A @ grad_u,
             "dA and dv returned the other way round": grad_A})


@exercise_check("Exercise 1 (matrix-vector backward)", yours="matvec_backward")
def check_matvec_backward(checker: Checker, matvec_backward: Callable[..., Any]) -> None:
    """``matvec_backward(A, v, grad_u)`` against tensorlib's gradients of ``A @ v``: a
    square A first (a missing transpose gives wrong numbers), then rectangular ones."""
    rng = Rng(54)
    for n, k in [(3, 3), (3, 4), (1, 5), (4, 1)]:
        A = rng.normal(size=(n, k), dtype=np.float64)
        v = rng.normal(size=(k,), dtype=np.float64)
        grad_u = rng.normal(size=(n,), dtype=np.float64)
        A_t, v_t = tl.tensor(A, requires_grad=True), tl.tensor(v, requires_grad=True)
        (A_t @ v_t).backward(grad_u)
        for_A, for_v = _matvec_mistakes(A, v, grad_u, _grad(A_t), _grad(v_t))
        with checker.case(f"A of shape ({n}, {k}), v of shape ({k},)",
                          hint="A_ip meets v_p in u_i only: an outer product; v_p meets "
                               "column p of A in every u_i: a transposed product"):
            with checker.named_errors({"matmul": "A @ grad_u: A is not transposed (A.T @ grad_u "
                                                 "has v's shape)"}, (ValueError,)):
                received = matvec_backward(A.copy(), v.copy(), grad_u.copy())
            grad_A, grad_v = _pair(checker, received, "matvec_backward's result")
            checker.shape(grad_A, (n, k), "dL/dA (A's shape)", for_A)
            checker.shape(grad_v, (k,), "dL/dv (v's shape)", for_v)
            checker.close(grad_A, A_t.grad, "dL/dA", rtol=1e-10, atol=1e-12, mistakes=for_A)
            checker.close(grad_v, v_t.grad, "dL/dv", rtol=1e-10, atol=1e-12, mistakes=for_v)


def _log_softmax_mistakes(y: np.ndarray, g: np.ndarray) -> dict[str, Any]:
    """What the usual slips of log-softmax's backward give, from its output y = log p."""
    p = np.exp(y)
    return {
        "keepdims=True missing: the row sums, shape (N,), broadcast along the rows instead of "
        "down them": lambda: g - p * g.sum(-1),
        "y used as p: the forward saves y = log p, so p = np.exp(y)":
            g - y * g.sum(axis=-1, keepdims=True),
        "softmax's backward, p * (grad - sum(grad * p)): log-softmax's is grad - p * sum(grad)":
            p * (g - (g * p).sum(axis=-1, keepdims=True)),
        "sum(grad * p) where sum(grad) belongs: d y_i / d z_j = [i = j] - p_j, with p_j "
        "outside the sum over i": g - p * (g * p).sum(axis=-1, keepdims=True),
        "summed down the columns (axis 0), not along each row (axis -1)":
            lambda: g - p * g.sum(axis=0, keepdims=True),
        "one sum over the whole batch: each row needs its own, sum(axis=-1, keepdims=True)":
            g - p * g.sum(),
        "grad returned unchanged: the - p_j part (from the log-sum-exp) is missing": g,
    }


@exercise_check("Exercise 2 (log-softmax backward)", yours="LogSoftmax")
def check_log_softmax_backward(checker: Checker, LogSoftmax: Any) -> None:
    """``LogSoftmax.apply`` against tensorlib's ``log_softmax``: the forward's shape and
    values, then the backward's gradient for an uneven upstream gradient, then gradcheck; one
    row, a square batch (keepdims), a rectangular one, logits around 1000."""
    rng = Rng(55)
    rows = [("one row of 5 logits", rng.normal(size=(5,), dtype=np.float64)),
            ("a batch of 4 rows of 4 logits (as many rows as classes)",
             rng.normal(size=(4, 4), dtype=np.float64)),
            ("a batch of 3 rows of 4 logits", rng.normal(size=(3, 4), std=2.0, dtype=np.float64)),
            ("logits around 1000", 1000.0 + rng.normal(size=(2, 3), dtype=np.float64))]
    for what, z in rows:
        upstream = rng.normal(size=z.shape, dtype=np.float64)
        theirs = tl.tensor(z, requires_grad=True)
        y = theirs.log_softmax()
        y.backward(upstream)
        mistakes = _log_softmax_mistakes(y.numpy(), upstream)
        with checker.case(what, hint="dy_i/dz_j = [i = j] - p_j; sum over i against the upstream "
                          "gradient, row by row (axis=-1, keepdims=True)"):
            mine = tl.tensor(z, requires_grad=True)
            out = LogSoftmax.apply(mine)
            checker.shape(out, z.shape, "the forward's output y (z's shape)")
            checker.close(out, y, "the forward's output y = log_softmax(z)", rtol=1e-12,
                          atol=1e-12)
            with checker.named_errors({"broadcast": "keepdims=True missing: the row sums, shape "
                                       "(N,), do not line up with the rows, shape (N, V)"},
                                      (ValueError,)):
                out.backward(upstream)
            checker.true(mine.grad is not None, "backward gave z no gradient")
            checker.shape(mine.grad, z.shape, "dL/dz (z's shape)", mistakes)
            checker.close(mine.grad, theirs.grad, "dL/dz (yours against tensorlib's)",
                          rtol=1e-9, atol=1e-12, mistakes=mistakes)
            try:
                tl.gradcheck(LogSoftmax.apply, tl.tensor(z, requires_grad=True))
            except tl.GradcheckError as error:
                checker.true(False, f"gradcheck: {str(error).split(':')[0]}")


def _smoothing_mistakes(logits: np.ndarray, targets: np.ndarray,
                        epsilon: float) -> dict[str, Any]:
    """What the usual slips of the label-smoothed gradient give."""
    n, v = logits.shape
    p, one_hot = _softmax(logits), np.eye(v)[targets]
    q = (1 - epsilon) * one_hot + epsilon / v
    return {
        "the gradient not divided by N: the loss is a mean over the rows": p - q,
        "epsilon not divided by V: every class gets epsilon / V": (
            p - ((1 - epsilon) * one_hot + epsilon)) / n,
        "the right class keeps 1: q = (1 - epsilon) one_hot + epsilon / V":
            (p - (one_hot + epsilon / v)) / n,
        "epsilon spread over the other V - 1 classes: every class gets epsilon / V, the right "
        "one too": (p - ((1 - epsilon) * one_hot + epsilon / (v - 1) * (1 - one_hot))) / n,
        "epsilon not used: that is the gradient without smoothing, (p - one_hot) / N":
            (p - one_hot) / n,
        "the logits used where the probabilities belong: p = softmax(logits)": (logits - q) / n,
        "the gradient has the opposite sign: p - q, not q - p": (q - p) / n,
    }


@exercise_check("Exercise 3 (label smoothing)", yours="smoothed_cross_entropy_grad")
def check_smoothed_cross_entropy_grad(checker: Checker,
                                      smoothed_cross_entropy_grad: Callable[..., Any]) -> None:
    """``smoothed_cross_entropy_grad(logits, targets, epsilon)`` against the gradient of the
    smoothed loss built from tensorlib's primitives (log_softmax, a product with q, sums, a
    mean): the shape, then the values, for three epsilons."""
    rng = Rng(56)
    for epsilon, (n, v) in [(0.1, (4, 5)), (0.0, (3, 3)), (0.5, (6, 4))]:
        logits = rng.normal(size=(n, v), std=2.0, dtype=np.float64)
        targets = np.arange(n) % v
        q = (1 - epsilon) * np.eye(v)[targets] + epsilon / v
        z = tl.tensor(logits, requires_grad=True)
        (-(tl.tensor(q) * z.log_softmax()).sum(-1).mean()).backward()
        mistakes = _smoothing_mistakes(logits, targets, epsilon)
        with checker.case(f"epsilon = {epsilon}, {n} rows of {v} logits",
                          hint="as without smoothing, the log-sum-exp part gives p (because q "
                               "sums to 1) and the other part gives q; then average over rows"):
            received = smoothed_cross_entropy_grad(logits.copy(), targets.copy(), epsilon)
            checker.shape(received, (n, v), "dL/dlogits (the logits' shape)", mistakes)
            checker.close(received, z.grad, "dL/dlogits", rtol=1e-9, atol=1e-12,
                          mistakes=mistakes)
