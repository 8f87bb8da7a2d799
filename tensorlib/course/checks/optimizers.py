"""The checks of notebook 10 (optimizers): the core pieces ``sgd_step`` and ``adamw_step``,
and the exercises (``momentum_step``, ``adam_l2_step``, the valley predictions,
``best_momentum``).

Each update is run step after step next to tensorlib's optimizer on the same numbers (a
Parameter holding a copy of the learner's parameter, the optimizer's state loaded with the
learner's): first what it returns (a tuple of new arrays, the arrays it was given left
unchanged, their shapes), then the state it keeps (the velocity, or the moments m and v),
then the parameter, each against what the usual slips give from the right state before that
step (a dampening, the learning rate inside the velocity, the step taken with g, eps inside
the square root, a bias correction missing or kept in m and v, the decay added to the
gradient or to the new p, a sign). The case stops at the first step that differs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from tensorlib.course.checks.differences import clipped
from tensorlib.course.checks.registry import HandOn, exercise_check, piece_check
from tensorlib.course.exercises import Checker
from tensorlib.engine.tensor import Tensor
from tensorlib.nn import Parameter
from tensorlib.optim import SGD, AdamW

__all__ = ["check_sgd_step", "check_adamw_step", "check_momentum_step", "check_adam_l2_step",
           "check_valley_predictions", "check_best_momentum"]

_IN_PLACE = ("an update in place (-=, *=, +=, or out=) changes the caller's array: compute "
             "new arrays")


def _grad(leaf: Tensor) -> np.ndarray:
    """The gradient backward left on a leaf, as an array."""
    assert leaf.grad is not None, "the backward pass gave this leaf no gradient"
    return leaf.grad.numpy()


# ----------------------------------------------------------------------------------- SGD
def _reference_sgd_step(p: Any, g: Any, b: Any, lr: float,
                        momentum: float = 0.0) -> tuple[np.ndarray, np.ndarray | None]:
    """tensorlib.optim.SGD's step on a Parameter holding a copy of p, with gradient g and
    momentum_buffer b; returns copies of the new value and buffer."""
    parameter = Parameter(np.array(p, dtype=np.float64))
    optimizer = SGD([parameter], lr=lr, momentum=momentum)
    if b is not None:
        state = optimizer.state_dict()
        state["state"][0] = {"momentum_buffer": b}
        optimizer.load_state_dict(state)
    parameter.grad = np.array(g, dtype=np.float64)
    optimizer.step()
    buffer = optimizer.state[0]["momentum_buffer"]
    return parameter.numpy().copy(), None if buffer is None else buffer.copy()


def _sgd_mistakes(p: np.ndarray, g: np.ndarray, b: np.ndarray | None, lr: float,
                  momentum: float) -> dict[str, dict[str, Any]]:
    """What the usual slips of one SGD step give, from the right p and b before it: {"b" |
    "p": {what was done: its value}}."""
    before = np.zeros_like(g) if b is None else b
    right = momentum * before + g
    velocity = {
        "a dampening: b = momentum * b + g, with g at weight 1, not 1 - momentum":
            momentum * before + (1 - momentum) * g,
        "the learning rate inside the velocity: b = momentum * b + g, and lr only in "
        "p - lr * b": momentum * before + lr * g,
    }
    if np.isclose(lr, 1 - momentum):  # here the two give the same: say both
        velocity = {"g at weight 1 - momentum (a dampening) or lr (the learning rate inside the "
                    "velocity): b = momentum * b + g": momentum * before + lr * g}
    velocity |= {
        "the velocity holds the step -lr (momentum b + g): keep b = momentum * b + g and "
        "step p - lr * b": -lr * right,
    }
    if momentum == 0:
        return {"b": {}, "p": {"the learning rate missing: p - lr * g": p - g,
                               "the sign: p - lr * g goes downhill": p + lr * g}}
    step = {
        "the step uses g, not the velocity: p - lr * b": p - lr * g,
        "the sign: p - lr * b goes downhill": p + lr * right,
        "the step uses the old velocity: make the new b first, then p - lr * b":
            p - lr * before,
        "a dampening in the step: p - lr * b with b = momentum * b + g":
            p - lr * (momentum * before + (1 - momentum) * g),
        "the learning rate missing: p - lr * b": p - right,
    }
    return {"b": velocity, "p": step}


def _sgd_steps(checker: Checker, sgd_step: Any, p_start: Any, gradients: Sequence[np.ndarray],
               lr: float, momentum: float) -> None:
    """Run sgd_step and tensorlib's SGD side by side; stop at the first difference."""
    p_mine, b_mine = np.array(p_start, dtype=np.float64), None
    p_package, b_package = p_mine.copy(), None
    for t, g in enumerate(gradients, start=1):
        given = [p_mine.copy(), g.copy(), None if b_mine is None else b_mine.copy()]
        mistakes = _sgd_mistakes(p_package, g, b_package, lr, momentum)
        new = sgd_step(p_mine, g, b_mine, lr, momentum)
        checker.true(isinstance(new, tuple) and len(new) == 2,
                     f"sgd_step returns (p, b), two values; received {clipped(repr(new), 100)}")
        new_p, new_b = new
        checker.true(np.array_equal(p_mine, given[0]) and np.array_equal(g, given[1])
                     and (b_mine is None or np.array_equal(b_mine, given[2])),
                     f"step {t} changed an array it was given (p, g or b)", _IN_PLACE)
        p_package, b_package = _reference_sgd_step(p_package, g, b_package, lr, momentum)
        checker.shape(new_p, p_package.shape, f"p after step {t}")
        if b_package is None:
            checker.true(new_b is None, f"with momentum 0 there is no velocity: b must come "
                         f"back as given (None) after step {t}, received "
                         f"{clipped(repr(new_b), 80)}",
                         "a velocity made with momentum 0: return b as it came (tensorlib's "
                         "SGD keeps none)")
        else:
            checker.true(new_b is not None, f"the velocity b after step {t} is None",
                         "b is None only before the first step: start it at a copy of g")
            checker.shape(new_b, b_package.shape, f"the velocity b after step {t}")
            checker.close(new_b, b_package, f"the velocity b after step {t}", rtol=1e-12,
                          atol=1e-12, mistakes=mistakes["b"])
            checker.true(not np.shares_memory(new_b, g), f"the velocity after step {t} is "
                         "the gradient array g itself",
                         "b = g on the first step makes b the same array as g: start it from a "
                         "copy, g.copy()")
        checker.close(new_p, p_package, f"p after step {t}", rtol=1e-12, atol=1e-12,
                      mistakes=mistakes["p"])
        p_mine, b_mine = new_p, new_b


@piece_check("sgd_step", yours="sgd_step",
             package_name="the check's own (_reference_sgd_step, on tensorlib's SGD)")
def check_sgd_step(checker: Checker, sgd_step: Any) -> HandOn:
    """``sgd_step(p, g, b, lr, momentum)`` step after step next to ``tensorlib.optim.SGD``:
    plain SGD, the worked case, a 3 x 4 parameter with a zero gradient entry, a spike."""
    draw = np.random.default_rng(10)
    grid = draw.normal(size=(10, 3, 4))
    grid[:, 1, 2] = 0.0  # one entry whose gradient is always 0
    spike = [draw.normal(size=5) for _ in range(4)]
    spike[1][3] = 1e8  # a large gradient in step 2
    hint = ("on the first step b = a copy of g; then b = momentum * b + g (no 1 - momentum); "
            "p - lr * b; with momentum 0: p - lr * g and b unchanged")
    with checker.case("plain SGD (momentum 0), two steps on a 2-vector: no velocity", hint=hint):
        _sgd_steps(checker, sgd_step, [1.0, 2.0], [np.array([0.5, -3.0]), np.array([2.0, 0.25])],
                   0.1, 0.0)
    with checker.case("the worked case: momentum 0.9, lr 0.1, two steps from p = (1, 2)",
                      hint=hint):
        _sgd_steps(checker, sgd_step, [1.0, 2.0], [np.array([1.0, -1.0]), np.array([1.0, 0.0])],
                   0.1, 0.9)
    with checker.case("momentum 0.6, ten steps on a 3 x 4 parameter with a zero gradient entry",
                      hint=hint):
        _sgd_steps(checker, sgd_step, draw.normal(size=(3, 4)), list(grid), 0.05, 0.6)
    with checker.case("momentum 0.9 on a 1-D parameter (5,), a gradient of 1e8 in step 2",
                      hint=hint):
        _sgd_steps(checker, sgd_step, draw.normal(size=5), spike, 1e-3, 0.9)
    return HandOn(sgd_step, _reference_sgd_step)


# --------------------------------------------------------------------------------- AdamW
def _reference_adamw_step(p: Any, g: Any, m: Any, v: Any, t: int, lr: float, beta1: float,
                          beta2: float, eps: float,
                          decay: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """tensorlib.optim.AdamW's step on a Parameter holding a copy of p, with gradient g,
    moments m and v, and step counter t - 1; returns copies of the new value and moments."""
    parameter = Parameter(np.array(p, dtype=np.float64))
    optimizer = AdamW([parameter], lr=lr, betas=(beta1, beta2), eps=eps, weight_decay=decay)
    state = optimizer.state_dict()
    state["state"][0] = {"step": t - 1, "exp_avg": m, "exp_avg_sq": v}
    optimizer.load_state_dict(state)
    parameter.grad = np.array(g, dtype=np.float64)
    optimizer.step()
    entry = optimizer.state[0]
    return (parameter.numpy().copy(), entry["first_moment"].copy(),
            entry["second_moment"].copy())


def _adam_mistakes(p: np.ndarray, g: np.ndarray, m: np.ndarray, v: np.ndarray, t: int,
                   lr: float, beta1: float, beta2: float, eps: float, decay: float,
                   l2: bool = False) -> dict[str, dict[str, Callable[[], np.ndarray]]]:
    """What the usual slips of one Adam step give, from the right p, m and v before it:
    {"m" | "v" | "p": {what was done: a function computing its value}}. ``l2``: Adam with the
    penalty decay * p in the gradient (exercise 2), else AdamW."""
    grad = g + decay * p if l2 else g
    m1, v1 = beta1 * m + (1 - beta1) * grad, beta2 * v + (1 - beta2) * grad**2
    m_hat, v_hat = m1 / (1 - beta1**t), v1 / (1 - beta2**t)
    kept = 0.0 if l2 else decay

    def running(g_used: np.ndarray) -> dict[str, Callable[[], np.ndarray]]:
        """m and v after this step with ``g_used`` in place of the gradient."""
        return {"m": lambda: beta1 * m + (1 - beta1) * g_used,
                "v": lambda: beta2 * v + (1 - beta2) * g_used**2}

    def constant(value: np.ndarray) -> Callable[[], np.ndarray]:
        return lambda: value

    def step(m_used: np.ndarray, v_used: np.ndarray, root: Callable[[np.ndarray], np.ndarray]
             = lambda a: np.sqrt(a) + eps) -> np.ndarray:
        return p - lr * (m_used / root(v_used) + kept * p)

    def corrected(when: int) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return step(m1 / (1 - beta1**when), v1 / (1 - beta2**when))

    moments = {
        "m": {"(1 - beta1) missing: m = beta1 * m + (1 - beta1) * g":
              lambda: beta1 * m + grad,
              "beta2 where beta1 belongs: m = beta1 * m + (1 - beta1) * g":
              lambda: beta2 * m + (1 - beta2) * grad,
              "m returned corrected: keep m as it is, m_hat only makes this step":
              lambda: m_hat},
        "v": {"g, not g**2: v is the running mean of the squared gradient":
              lambda: beta2 * v + (1 - beta2) * grad,
              "(1 - beta2) missing: v = beta2 * v + (1 - beta2) * g**2":
              lambda: beta2 * v + grad**2,
              "beta1 where beta2 belongs: v = beta2 * v + (1 - beta2) * g**2":
              lambda: beta1 * v + (1 - beta1) * grad**2,
              "v returned corrected: keep v as it is, v_hat only makes this step":
              lambda: v_hat},
    }
    if not np.any(m) and not np.any(v):  # the first step: m_hat = g = m without 1 - beta1
        for name, beta in (("m", "beta1"), ("v", "beta2")):
            right = "m = beta1 * m + (1 - beta1) * g" if name == "m" else \
                "v = beta2 * v + (1 - beta2) * g**2"
            moments[name] = {
                f"{name} after the first step is {name}_hat: the corrected {name} returned where "
                f"{name} belongs, or (1 - {beta}) missing in {right}":
                    constant(m_hat if name == "m" else v_hat),
                **moments[name]}
    if l2:
        for said, g_used in [("the penalty left out of g: g + decay * p before m and v", g),
                             ("the penalty's sign: g + decay * p, the gradient of "
                              "decay/2 |p|^2 added", g - decay * p)]:
            for name, slip in running(g_used).items():
                moments[name][said] = slip
    else:
        for name, slip in running(g + decay * p).items():
            moments[name]["the decay added to g (Adam with an L2 penalty): AdamW adds decay * p "
                          "to the step, not to the gradient"] = slip
    update = {
        "eps inside the square root: add it after the root, sqrt(v_hat) + eps":
            lambda: step(m_hat, v_hat, lambda a: np.sqrt(a + eps)),
        "no bias correction: m_hat = m / (1 - beta1**t), v_hat = v / (1 - beta2**t)":
            lambda: step(m1, v1),
        "only m corrected: divide v by 1 - beta2**t too (v_hat)": lambda: step(m_hat, v1),
        "only v corrected: divide m by 1 - beta1**t too (m_hat)": lambda: step(m1, v_hat),
        "m divided by 1 + beta1**t: the correction is 1 - beta1**t":
            lambda: step(m1 / (1 + beta1**t), v_hat),
        "v divided by 1 + beta2**t: the correction is 1 - beta2**t":
            lambda: step(m_hat, v1 / (1 + beta2**t)),
        "t counted from 0 in the correction: the first update has t = 1":
            lambda: corrected(t - 1),
        "t + 1 in the correction: the first update has t = 1": lambda: corrected(t + 1),
        "the sign: p - lr * (...) goes downhill":
            lambda: 2 * p - step(m_hat, v_hat),
    }
    if l2:
        update["the decay added to the step as well (AdamW's way): with the penalty in g, the "
               "update is plain Adam"] = lambda: step(m_hat, v_hat) - lr * decay * p
    else:
        adam = p - lr * m_hat / (np.sqrt(v_hat) + eps)
        update.update({
            "the decay left out: p - lr * (m_hat / (sqrt(v_hat) + eps) + decay * p)":
                lambda: adam,
            "the decay applied to the new p: it uses p from before the update":
                lambda: adam - lr * decay * adam,
            "the decay without the learning rate: lr multiplies decay * p too":
                lambda: adam - decay * p,
        })
    return {**moments, "p": update}


def _adam_steps(checker: Checker, step: Any, reference: Any, name: str, p_start: Any,
                gradients: Sequence[np.ndarray] | Callable[[np.ndarray], np.ndarray],
                count: int, lr: float, beta1: float, beta2: float, eps: float, decay: float,
                l2: bool = False, atol: Mapping[str, float] | None = None) -> None:
    """Run the learner's Adam step and ``reference`` side by side (t = 1, 2, ...): what it
    returns, then m, v and p; stop at the first difference. ``gradients``: one per step, or a
    function of the parameter; ``atol``: each one's absolute tolerance (rtol is 1e-10)."""
    atol = atol or {"m": 1e-300, "v": 1e-300, "p": 1e-13}
    p_mine = np.array(p_start, dtype=np.float64)
    m_mine, v_mine = np.zeros_like(p_mine), np.zeros_like(p_mine)
    p_right, m_right, v_right = p_mine.copy(), m_mine.copy(), v_mine.copy()
    for t in range(1, count + 1):
        g = gradients(p_right) if callable(gradients) else gradients[t - 1]
        given = [a.copy() for a in (p_mine, g, m_mine, v_mine)]
        mistakes = _adam_mistakes(p_right, g, m_right, v_right, t, lr, beta1, beta2, eps, decay,
                                  l2)
        new = step(p_mine, g, m_mine, v_mine, t, lr, beta1, beta2, eps, decay)
        checker.true(isinstance(new, tuple) and len(new) == 3,
                     f"{name} returns (p, m, v), three arrays; received {clipped(repr(new), 100)}")
        checker.true(all(np.array_equal(a, b) for a, b in zip((p_mine, g, m_mine, v_mine), given,
                                                              strict=True)),
                     f"step {t} changed an array it was given (p, g, m or v)", _IN_PLACE)
        p_right, m_right, v_right = reference(p_right, g, m_right, v_right, t, lr, beta1, beta2,
                                              eps, decay)
        for what, mine, right in zip("pmv", new, (p_right, m_right, v_right), strict=True):
            checker.shape(mine, right.shape, f"{what} after step {t}")
        for what, mine, right in [("m", new[1], m_right), ("v", new[2], v_right),
                                  ("p", new[0], p_right)]:
            checker.close(mine, right, f"{what} after step {t}", rtol=1e-10, atol=atol[what],
                          mistakes=mistakes[what])
        p_mine, m_mine, v_mine = new


@piece_check("adamw_step", yours="adamw_step",
             package_name="the check's own (_reference_adamw_step, on tensorlib's AdamW)")
def check_adamw_step(checker: Checker, adamw_step: Any) -> HandOn:
    """``adamw_step(p, g, m, v, t, lr, beta1, beta2, eps, decay)`` step after step next to
    ``tensorlib.optim.AdamW``: the worked case, a 3 x 4 parameter with a zero gradient entry,
    small gradients where eps's place matters, a spike."""
    draw = np.random.default_rng(11)
    grid = draw.normal(size=(10, 3, 4))
    grid[:, 0, 3] = 0.0  # one entry whose gradient is always 0
    small = [1e-3 * draw.normal(size=6) for _ in range(10)]
    spike = [draw.normal(size=4) for _ in range(10)]
    spike[1][2] = -1e8  # a large gradient in step 2
    hint = ("m and v: running means of g and g**2 (keep them uncorrected); m_hat, v_hat: divided "
            "by 1 - beta**t; p - lr * (m_hat / (sqrt(v_hat) + eps) + decay * p), with the old p")
    cases = [
        ("the worked case: one coordinate, two steps, weight decay 0.1", [2.0],
         [np.array([0.5]), np.array([-0.5])], 0.1, 0.9, 0.999, 1e-8, 0.1),
        ("ten steps on a 3 x 4 parameter with a zero gradient entry, decay 0.05",
         draw.normal(size=(3, 4)), list(grid), 0.01, 0.9, 0.999, 1e-8, 0.05),
        ("ten steps with betas (0.8, 0.95) on a 1-D parameter (6,) with gradients near 1e-3 "
         "and eps = 1e-3, where eps's place matters", draw.normal(size=6), small, 0.05, 0.8,
         0.95, 1e-3, 0.2),
        ("ten steps with a gradient of -1e8 in step 2, decay 0.01", draw.normal(size=4), spike,
         0.1, 0.9, 0.999, 1e-8, 0.01)]
    for what, start, gradients, lr, beta1, beta2, eps, decay in cases:
        with checker.case(what, hint=hint):
            _adam_steps(checker, adamw_step, _reference_adamw_step, "adamw_step", start,
                        gradients, len(gradients), lr, beta1, beta2, eps, decay)
    return HandOn(adamw_step, _reference_adamw_step)


# ------------------------------------------------------------------------------ exercises
def _gradient(f: Callable[[Any], Any], p: np.ndarray) -> np.ndarray:
    """The gradient of ``f`` at p, from backward() on a Parameter holding a copy of p."""
    parameter = Parameter(np.array(p), dtype=np.float64)
    f(parameter).backward()
    return _grad(parameter)


@exercise_check("Exercise 1 (momentum_step)", yours="momentum_step")
def check_momentum_step(checker: Checker, momentum_step: Any, f: Callable[[Any], Any],
                        START: Sequence[float]) -> None:  # noqa: N803
    """20 updates of ``momentum_step(p, g, b, lr, mu)`` from START on the valley f, next to
    ``SGD(lr, momentum=mu)``: the parameter, and its momentum_buffer, after every update."""
    for lr, mu in ((0.07, 0.6), (0.05, 0.9), (0.02, 0.0)):
        with checker.case(f"20 updates with lr={lr}, momentum={mu}",
                          hint="the velocity remembers mu times its old value and adds the new "
                               "gradient; the step uses the velocity, not the gradient"):
            p = Parameter(np.array(START), dtype=np.float64)
            optimizer = SGD([p], lr=lr, momentum=mu)
            p_hand, b_hand = np.array(START, dtype=np.float64), np.zeros(2)
            for t in range(1, 21):
                p_before, b_before = p.numpy().copy(), (
                    np.zeros(2) if optimizer.state[0]["momentum_buffer"] is None
                    else optimizer.state[0]["momentum_buffer"].copy())
                optimizer.zero_grad()
                f(p).backward()
                g = _grad(p).copy()
                optimizer.step()
                new = momentum_step(p_hand, _gradient(f, p_hand), b_hand, lr, mu)
                checker.true(isinstance(new, tuple) and len(new) == 2,
                             f"momentum_step returns (p, b), two values; received "
                             f"{clipped(repr(new), 100)}")
                mistakes = _sgd_mistakes(p_before, g, b_before, lr, mu)
                p_hand, b_hand = new
                if mu > 0:
                    checker.close(b_hand, optimizer.state[0]["momentum_buffer"],
                                  f"velocity after update {t}", rtol=1e-10, atol=1e-12,
                                  mistakes=mistakes["b"])
                checker.close(p_hand, p.numpy(), f"p after update {t}", rtol=1e-10, atol=1e-12,
                              mistakes=mistakes["p"])


@exercise_check("Exercise 2 (adam_l2_step)", yours="adam_l2_step")
def check_adam_l2_step(checker: Checker, adam_l2_step: Any, f: Callable[[Any], Any],
                       START: Sequence[float]) -> None:  # noqa: N803
    """Ten steps of ``adam_l2_step`` from START on the valley f, next to
    ``AdamW(weight_decay=0.0)`` on f(p) + decay/2 |p|^2: m, v and p after every step."""
    for penalty in (0.05, 0.5):
        def reference(p: Any, g: Any, m: Any, v: Any, t: int, lr: float, beta1: float,
                      beta2: float, eps: float, decay: float) -> Any:
            # AdamW without decay, on the loss with the penalty: its gradient is g + decay p
            return _reference_adamw_step(p, g + decay * p, m, v, t, lr, beta1, beta2, eps,
                                         0.0)

        with checker.case(f"ten steps with decay={penalty}",
                          hint="the penalty goes into g itself, so m and v see it; the update is "
                               "then plain Adam, with no separate decay term"):
            _adam_steps(checker, adam_l2_step, reference, "adam_l2_step", START,
                        lambda p: _gradient(f, p), 10, 0.1, 0.9, 0.999, 1e-8, penalty,
                        l2=True, atol={"m": 1e-12, "v": 1e-12, "p": 1e-12})


def _rate_slip(rate: float) -> str | None:
    """The likely mistake behind a wrong answer to (b), SGD's largest stable rate."""
    if np.isclose(rate, 2 / 25):
        return ("the rate of the curvature-25 valley (2/25): with curvature 100, y is "
                "multiplied by 1 - 100 lr each step")
    if np.isclose(rate, 1 / 100):
        return ("1/100 lands y on 0 in one step; stable means |1 - 100 lr| < 1, which holds up "
                "to 2/100")
    return None


@exercise_check("Exercise 3 (predictions)", yours="predictions")
def check_valley_predictions(checker: Checker, predictions: Any,
                             valley_after: Callable[..., float]) -> None:
    """The three predictions against the experiments, each run with ``valley_after``."""
    sgd_25 = valley_after(25.0, lambda ps: SGD(ps, lr=0.07))
    with checker.case("(a) AdamW rates that beat SGD's 0.0067 on curvature 25",
                      hint="AdamW's step length is about lr per coordinate at first and then "
                           "shrinks slowly: too small a rate crawls, too large a rate keeps "
                           "swinging around the minimum"):
        truth = {rate for rate in (0.1, 1.0, 2.0)
                 if valley_after(25.0, lambda ps, rate=rate: AdamW(ps, lr=rate, weight_decay=0.0))
                 < sgd_25}
        checker.equal(set(predictions()["a"]), truth, "the rates that beat SGD")
    with checker.case("(b) SGD's largest stable rate on curvature 100",
                      hint="y is multiplied by 1 - 100·lr each step"):
        rate = float(predictions()["b"])
        checker.true(valley_after(100.0, lambda ps: SGD(ps, lr=0.98 * rate)) < 1e3,
                     f"SGD with lr={0.98 * rate:.4g} (just below your answer) should not diverge",
                     _rate_slip(rate))
        checker.true(valley_after(100.0, lambda ps: SGD(ps, lr=1.02 * rate)) > 1e3,
                     f"SGD with lr={1.02 * rate:.4g} (just above your answer) should diverge",
                     _rate_slip(rate))
    with checker.case("(c) AdamW lr=0.5 against the best stable SGD on curvature 100",
                      hint="what limits SGD's rate now, and how fast does x shrink with it?"):
        best_sgd = min(valley_after(100.0, lambda ps, rate=rate: SGD(ps, lr=rate))
                       for rate in np.linspace(0.002, 0.98 * 2 / 100, 12))
        adamw_100 = valley_after(100.0, lambda ps: AdamW(ps, lr=0.5, weight_decay=0.0))
        checker.equal(bool(predictions()["c"]), adamw_100 < best_sgd, "AdamW wins")


@exercise_check("Exercise 4 (best_momentum)", yours="best_momentum")
def check_best_momentum(checker: Checker, best_momentum: Any,
                        valley_after: Callable[..., float]) -> None:
    """``best_momentum(lr)`` for lr 0.07 and 0.03 against every candidate run with
    ``valley_after``."""
    for rate in (0.07, 0.03):
        with checker.case(f"the best momentum for lr={rate} on curvature 25",
                          hint="too little momentum crawls along x, too much overshoots and "
                               "rings; try every candidate and keep the lowest final f"):
            finals = {mu: valley_after(25.0, lambda ps, mu=mu, rate=rate: SGD(
                          ps, lr=rate, momentum=mu))
                      for mu in (0.0, 0.3, 0.45, 0.6, 0.75, 0.9)}
            choice = best_momentum(rate)
            lowest = min(finals.values())
            checker.true(choice in finals, f"choose one of {sorted(finals)}, received "
                         f"{clipped(repr(choice), 80)}",
                         "the lowest f itself, not the momentum that gives it: "
                         "min(candidates, key=...) returns the candidate"
                         if isinstance(choice, float) and np.isclose(choice, lowest) else None)
            checker.equal(choice, min(finals, key=finals.__getitem__),
                          "the momentum with the lowest f",
                          mistakes={"the highest f: max where min belongs":
                                    max(finals, key=finals.__getitem__)})
