"""The checks of notebook 00 (welcome): its two exercises, ``dy_dW`` and ``predictions``.

``dy_dW`` is compared with tensorlib's ``W.grad`` for ``y = sum(tanh(W @ x))``: its shape
first (the shape of W), then its values, on the notebook's example and on two rectangular
random ones. ``predictions`` is compared shape by shape with what tensorlib computes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import tensorlib as tl
from tensorlib.course.checks.differences import as_array
from tensorlib.course.checks.registry import exercise_check
from tensorlib.course.exercises import Checker
from tensorlib.engine.splitmix64 import Rng

__all__ = ["check_dy_dw", "check_shape_predictions"]


def _tensorlib_dy_dw(weights: np.ndarray, x: np.ndarray) -> np.ndarray:
    """dy/dW of y = sum(tanh(W @ x)), by tensorlib's backward."""
    weights_tensor = tl.tensor(weights, requires_grad=True)
    (weights_tensor @ tl.tensor(x)).tanh().sum().backward()
    return np.asarray(weights_tensor.grad)


def _dy_dw_mistakes(weights: np.ndarray, x: np.ndarray) -> dict[str, Any]:
    """What the usual slips of dy/dW give (the shapes first, then the values)."""
    pre_activation = weights @ x
    slope = 1 - np.tanh(pre_activation) ** 2
    return {
        "np.outer(x, slope): the rows must follow W's rows (the slope), the columns x":
            (x.shape[0], weights.shape[0]),
        "W.T @ slope: that is dy/dx, one number per entry of x, not dy/dW":
            (x.shape[0],),
        "the slope alone, one number per row of W: entry (i, j) is slope_i times x_j":
            (weights.shape[0],),
        "the slope of tanh is missing: entry (i, j) is (1 - tanh^2((Wx)_i)) times x_j":
            lambda: np.outer(np.ones_like(slope), x),
        "1 - tanh((Wx)_i) without the square: the slope of tanh is 1 - tanh^2":
            lambda: np.outer(1 - np.tanh(pre_activation), x),
        "1 - (Wx)_i^2: the square belongs to tanh((Wx)_i), not to (Wx)_i":
            lambda: np.outer(1 - pre_activation**2, x),
        "tanh^2((Wx)_i) in place of 1 - tanh^2((Wx)_i)":
            lambda: np.outer(np.tanh(pre_activation) ** 2, x),
    }


@exercise_check("Exercise 1 (dy_dW)", yours="dy_dW")
def check_dy_dw(checker: Checker, dy_dW: Callable[..., Any], W: Any, x: Any) -> None:
    """``dy_dW(W, x)`` against tensorlib's gradient: the notebook's W and x, then a random
    3 x 2 and a random 1 x 4 W; the shape of W first, then the values."""
    examples = [("the example above (W and x of the first computation)",
                 as_array(W).astype(np.float64), as_array(x).astype(np.float64))]
    rng = Rng(0)
    for rows, columns in [(3, 2), (1, 4)]:
        weights = rng.normal(size=(rows, columns), dtype=np.float64)
        examples.append((f"a random {rows} x {columns} W", weights,
                         rng.normal(size=(columns,), dtype=np.float64)))
    for what, weights, vector in examples:
        mistakes = _dy_dw_mistakes(weights, vector)
        with checker.case(what, hint="entry (i, j) is the slope of tanh at row i times x_j: "
                          "an outer product, with the shape of W"):
            received = dy_dW(weights.copy(), vector.copy())
            checker.true(received is not None, "dy/dW: received None",
                         "None where an array was expected: a missing return?")
            checker.shape(received, weights.shape, "dy/dW", mistakes)
            checker.close(received, _tensorlib_dy_dw(weights, vector), "dy/dW", rtol=1e-9,
                          atol=1e-12, mistakes=mistakes)


# The example of exercise 2: what a learner may write for each shape, and why it is not so.
_SHAPE_MISTAKES: dict[str, dict[str, tuple[int, ...]]] = {
    "h": {"h = A @ v + b is a vector of 4 entries, (4,): a matrix times a vector keeps no "
          "axis of size 1": (4, 1),
          "A @ v sums over the 3 columns of A: h has 4 entries, (4,)": (3,),
          "A @ v sums over the 3 columns of A: h is (4,), not A's shape": (4, 3)},
    "z": {"z = h.tanh().sum() sums every entry: a scalar, shape ()": (1,),
          "z sums h's 4 entries into one number: a scalar, shape ()": (4,)},
    "A.grad": {"a gradient has the shape of its tensor: A.grad is (4, 3), as A": (3, 4),
               "a gradient has the shape of its tensor: A.grad is A's (4, 3), not h's": (4,)},
    "v.grad": {"a gradient has the shape of its tensor: v.grad is (3,), as v": (4,),
               "a gradient has the shape of its tensor: v.grad is (3,), not A's": (4, 3)},
    "b.grad": {"b.grad has b's shape (1,), though b was added to all 4 entries of h": (4,),
               "b.grad has b's shape (1,): one entry, not a scalar ()": ()},
}


def _grad_shape(tensor: tl.Tensor) -> tuple[int, ...]:
    """The shape of a tensor's gradient, after backward."""
    grad = tensor.grad
    assert grad is not None, "backward fills every leaf's grad"
    return tuple(grad.shape)


@exercise_check("Exercise 2 (predictions)", yours="predictions")
def check_shape_predictions(checker: Checker, predictions: Callable[[], Any]) -> None:
    """``predictions()`` against the shapes tensorlib gives for h = A @ v + b, z =
    h.tanh().sum() and the three gradients, one case per shape."""
    A = tl.tensor(np.ones((4, 3)), requires_grad=True)  # the text's names
    v = tl.tensor(np.ones(3), requires_grad=True)
    b = tl.tensor(np.ones(1), requires_grad=True)
    h = A @ v + b
    z = h.tanh().sum()
    z.backward()
    measured = {"h": h.shape, "z": z.shape, "A.grad": _grad_shape(A),
                "v.grad": _grad_shape(v), "b.grad": _grad_shape(b)}
    for name, shape in measured.items():
        with checker.case(f"the shape of {name}", hint="a matrix times a vector is a vector; "
                          "a gradient always has the shape of its tensor, broadcast or not"):
            predicted = predictions()
            checker.true(isinstance(predicted, dict), f"predictions() returned "
                         f"{type(predicted).__name__}, not a dict",
                         "return a dict keyed \"h\", \"z\", \"A.grad\", \"v.grad\", \"b.grad\"")
            checker.true(name in predicted, f"the dict has no key {name!r} (it has "
                         f"{sorted(map(str, predicted))})",
                         "a key missing or misspelt: the keys are \"h\", \"z\", \"A.grad\", "
                         "\"v.grad\" and \"b.grad\"")
            said = predicted[name]
            checker.true(isinstance(said, (tuple, list)), f"shape of {name}: expected "
                         f"{shape}, received {said!r}",
                         "a shape is a tuple: (4,) with its comma, not (4) nor 4")
            # each wrong shape given by a function: a tuple itself would be taken for a shape
            # that only Checker.shape compares
            checker.equal(tuple(said), shape, f"shape of {name}", {
                said_wrong: (lambda wrong=wrong: wrong)
                for said_wrong, wrong in _SHAPE_MISTAKES[name].items()})
