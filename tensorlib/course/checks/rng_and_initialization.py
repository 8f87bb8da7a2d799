"""The checks of notebook 07 (random numbers and initialization): the exercises
``uniform_by_hand``, ``normal_by_hand``, ``permutation_by_hand`` and ``predicted_std``.

The first three are compared with ``tensorlib.Rng`` bit for bit: the result's shape, then its
dtype, then the bits of every sample. Each usual slip (arithmetic in float64 rounded at the
end, the wrong bits of a draw, the draws paired the wrong way, a rank for a position, a
generator advanced twice) is computed here from the same draws, so that the report names the
one the learner's numbers are. ``predicted_std`` is compared with the std measured on 2000
inputs through a layer drawn by the policy, and its slips (a missing 2, a variance for a std,
fan_out for fan_in, a uniform's bound for its std) are computed the same way.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from tensorlib.course.checks.registry import exercise_check
from tensorlib.course.exercises import Checker
from tensorlib.engine.splitmix64 import Rng
from tensorlib.nn import init

__all__ = ["check_uniform_by_hand", "check_normal_by_hand", "check_permutation_by_hand",
           "check_predicted_std"]

_F32 = np.float32


def _as_float32(value: Any) -> np.ndarray | None:
    """A mistake's value (or what a function gives) as a float32 array, or None when it
    cannot be computed."""
    try:
        with np.errstate(all="ignore"):
            return np.asarray(value() if callable(value) else value, dtype=_F32)
    except Exception:  # a mistake that does not apply to this case
        return None


def _same_bits(checker: Checker, received: np.ndarray, expected: np.ndarray, what: str,
               mistakes: dict[str, Any]) -> None:
    """Stop the case unless every float32 sample of ``received`` has ``expected``'s bits;
    the report names the first mistake whose samples have the received bits."""
    differ = received.view(np.uint32) != expected.view(np.uint32)
    if not differ.any():
        return
    first = int(np.argmax(differ))
    named = None
    for description, value in mistakes.items():
        wrong = _as_float32(value)
        if wrong is not None and wrong.shape == received.shape and \
                np.array_equal(wrong.view(np.uint32), received.view(np.uint32)):
            named = description
            break
    with np.errstate(all="ignore"):
        gap = np.abs(received.astype(np.float64) - expected.astype(np.float64))
    checker.true(False, f"{what}: {int(differ.sum())} of {differ.size} samples differ in their "
                 f"bits; the first at [{first}]: expected {expected[first]:.9g}, received "
                 f"{received[first]:.9g}; largest difference {float(np.nanmax(gap)):.3g}",
                 named)


def _float32_result(checker: Checker, received: Any, n: int) -> np.ndarray:
    """``received`` as an array of n float32 samples, or the case stops saying how it is
    not: its shape, then its dtype."""
    checker.true(received is not None, "received None, not an array of samples",
                 "None where an array was expected: a missing return?")
    array = np.asarray(received)
    checker.shape(array, (n,), f"the samples (an array of {n})")
    checker.equal(str(array.dtype), "float32", "the samples' dtype", {
        "a float64 result: make every step float32 (np.float32(...), .astype(np.float32))":
            "float64"})
    return array


def _top24(draws: np.ndarray) -> np.ndarray:
    return (draws >> np.uint64(40)).astype(_F32)


# ------------------------------------------------------------------------ uniform_by_hand
def _uniform_mistakes(seed: int, low: float, high: float, n: int) -> dict[str, Any]:
    """What the usual slips of a float32 uniform give for these draws."""
    draws = Rng(seed).next_u64(size=n)
    unit = _top24(draws) * _F32(2.0**-24)
    return {
        "low + (high - low) * u in float64, rounded at the end: make low, high and high - low "
        "float32 first": lambda: (low + (high - low) * unit.astype(np.float64)).astype(_F32),
        "the width high - low taken from the Python floats and then rounded: subtract "
        "np.float32(high) - np.float32(low)": lambda: _F32(low) + _F32(high - low) * unit,
        "the top 32 bits times 2^-32: a float32 keeps 24 significant bits, so shift right by "
        "40 and multiply by 2^-24": lambda: _F32(low) + (_F32(high) - _F32(low)) * (
            (draws >> np.uint64(32)).astype(_F32) * _F32(2.0**-32)),
        "the low 24 bits (& 0xFFFFFF) taken: the top ones are draws >> 40":
            lambda: _F32(low) + (_F32(high) - _F32(low)) * (
                (draws & np.uint64(0xFFFFFF)).astype(_F32) * _F32(2.0**-24)),
        "u returned: low + (high - low) * u is missing": unit,
    }


@exercise_check("Exercise 1 (uniform_by_hand)", yours="uniform_by_hand")
def check_uniform_by_hand(checker: Checker, uniform_by_hand: Callable[..., Any]) -> None:
    """``uniform_by_hand(seed, low, high, n)`` against ``Rng(seed).uniform(low, high,
    size=n)``, bit for bit: the shape, the dtype, then every sample's bits, also for a range
    where float64 arithmetic would differ in the last bit."""
    for seed, low, high, n in [(7, 0.0, 1.0, 5), (1, -3.0, 5.0, 1000), (2, 0.1, 0.7, 1000)]:
        with checker.case(f"seed {seed}, uniform({low}, {high}), {n} samples",
                          hint="a float32 has 24 significant bits: shift the draw right by 40; "
                               "make low, high and the width float32 before combining them"):
            mine = _float32_result(checker, uniform_by_hand(seed, low, high, n), n)
            _same_bits(checker, mine, Rng(seed).uniform(low, high, size=n),
                       "the samples", _uniform_mistakes(seed, low, high, n))


# ------------------------------------------------------------------------- normal_by_hand
def _box_muller(v1: np.ndarray, v2: np.ndarray, mean: float, std: float, plus_one: bool = True,
                log32: bool = False, cos32: bool = False) -> np.ndarray:
    """Box-Muller on the draws v1, v2 in float32, right (the defaults) or with a slip: no + 1
    in u1, the logarithm or the cosine taken in float32."""
    u1 = (_top24(v1) + _F32(1 if plus_one else 0)) / _F32(2.0**24)
    u2 = _top24(v2) * _F32(2.0**-24)
    log_u1 = np.log(u1) if log32 else np.log(u1.astype(np.float64)).astype(_F32)
    angle = _F32(2 * np.pi) * u2
    cosine = np.cos(angle) if cos32 else np.cos(angle.astype(np.float64)).astype(_F32)
    return _F32(mean) + _F32(std) * np.sqrt(_F32(-2) * log_u1) * cosine


def _normal_mistakes(seed: int, mean: float, std: float, n: int) -> dict[str, Any]:
    """What the usual slips of a float32 Box-Muller give for these draws."""
    draws = Rng(seed).next_u64(size=2 * n)
    pairs = draws.reshape(n, 2)
    halves = draws.reshape(2, n)

    def in_float64() -> np.ndarray:
        u1 = ((pairs[:, 0] >> np.uint64(40)).astype(np.float64) + 1) / 2.0**24
        u2 = (pairs[:, 1] >> np.uint64(40)).astype(np.float64) * 2.0**-24
        return (mean + std * np.sqrt(-2 * np.log(u1)) * np.cos(2 * np.pi * u2)).astype(_F32)

    return {
        "v1 and v2 the other way round: v1 is the even draw (reshape(n, 2)[:, 0]), v2 the odd":
            lambda: _box_muller(pairs[:, 1], pairs[:, 0], mean, std),
        "the first n draws paired with the last n: reshape(n, 2) pairs neighbours":
            lambda: _box_muller(halves[0], halves[1], mean, std),
        "u1 without the + 1: u1 = (top24(v1) + 1) / 2^24, never 0":
            lambda: _box_muller(pairs[:, 0], pairs[:, 1], mean, std, plus_one=False),
        "the logarithm taken in float32: go through float64 for log (and cos) and round":
            lambda: _box_muller(pairs[:, 0], pairs[:, 1], mean, std, log32=True),
        "the cosine taken in float32: go through float64 for cos (and log) and round":
            lambda: _box_muller(pairs[:, 0], pairs[:, 1], mean, std, cos32=True),
        "every step in float64, rounded at the end: keep each step float32, except log and "
        "cos": in_float64,
    }


@exercise_check("Exercise 2 (normal_by_hand)", yours="normal_by_hand")
def check_normal_by_hand(checker: Checker, normal_by_hand: Callable[..., Any]) -> None:
    """``normal_by_hand(seed, mean, std, n)`` against ``Rng(seed).normal(mean, std,
    size=n)``, bit for bit: the shape, the dtype, then every sample's bits."""
    for seed, mean, std, n in [(7, 0.0, 1.0, 1), (3, 0.0, 1.0, 1000), (5, 2.5, 0.3, 1000)]:
        with checker.case(f"seed {seed}, normal({mean}, {std}), {n} samples",
                          hint="v1 is the even draw, v2 the odd one; keep every intermediate "
                               "float32, and go through float64 only for log and cos"):
            mine = _float32_result(checker, normal_by_hand(seed, mean, std, n), n)
            _same_bits(checker, mine, Rng(seed).normal(mean, std, size=n), "the samples",
                       _normal_mistakes(seed, mean, std, n))


# -------------------------------------------------------------------- permutation_by_hand
@exercise_check("Exercise 3 (permutation_by_hand)", yours="permutation_by_hand")
def check_permutation_by_hand(checker: Checker, permutation_by_hand: Callable[..., Any]) -> None:
    """``permutation_by_hand(rng, n)`` against ``rng.permutation(n)``: the shape, the values,
    then the generator's state afterwards (n draws, no more, no fewer)."""
    for seed, n in [(0, 10), (4, 1), (9, 1000)]:
        draws = Rng(seed).next_u64(size=n)
        order = np.argsort(draws, kind="stable")
        twice, untouched = Rng(seed), Rng(seed).state
        twice.next_u64(size=n)
        twice.next_u64(size=n)
        with checker.case(f"seed {seed}, n = {n}", hint="position k of the result is the index "
                          "of the k-th smallest draw"):
            mine_rng, theirs_rng = Rng(seed), Rng(seed)
            mine = permutation_by_hand(mine_rng, n)
            checker.true(mine is not None, "received None, not a permutation",
                         "None where an array was expected: a missing return?")
            checker.shape(mine, (n,), f"the permutation (an array of {n})")
            checker.equal(np.asarray(mine), theirs_rng.permutation(n), "the permutation", {
                "the sorted draws, not their positions: np.argsort gives the positions":
                    np.sort(draws),
                "the rank of each draw (the inverse permutation): position k holds the index "
                "of the k-th smallest draw, np.argsort(draws)": np.argsort(order),
                "the largest draw first: argsort sorts from the smallest": order[::-1]})
            checker.equal(mine_rng.state, theirs_rng.state, "the generator's state afterwards", {
                "the generator advanced by 2n draws: draw once, rng.next_u64(size=n)":
                    twice.state,
                "the generator not advanced: draw from the rng passed in (not a copy or a new "
                "Rng)": untouched})


# -------------------------------------------------------------------------- predicted_std
def _std_mistakes(policy: str, n_in: int, n_out: int, m: float) -> dict[str, float]:
    """What the usual slips of the prediction give (their shared factors: fan_in, the
    policy's variance, the inputs' mean square)."""
    xavier = policy.startswith("xavier")
    variance = 2 / (n_in + n_out) if xavier else 2 / n_in
    slips = {
        "the weights' std returned: the output's is sqrt(fan_in * sigma^2 * m)":
            math.sqrt(variance),
        "the variance returned: take its square root": n_in * variance * m,
        "m multiplies the std: it multiplies the variance, sqrt(fan_in * sigma^2 * m)":
            math.sqrt(n_in * variance) * m,
        "m not used: the inputs' mean square scales the variance": math.sqrt(n_in * variance),
        ("Xavier's sigma^2 without the 2: 2 / (fan_in + fan_out)" if xavier else
         "He's sigma^2 without the 2: 2 / fan_in"): math.sqrt(n_in * variance / 2 * m),
        "fan_out where fan_in belongs: each output sums n_in products":
            math.sqrt(n_out * variance * m),
        "the uniform's bound a taken for its std: std = a / sqrt(3)":
            math.sqrt(n_in * 3 * variance * m) if policy.endswith("uniform") else math.nan,
        "fan_out in He's sigma^2: it is 2 / fan_in": (
            math.nan if xavier else math.sqrt(n_in * 2 / n_out * m)),
    }
    return {description: value for description, value in slips.items() if not math.isnan(value)}


_POLICY_CASES = [  # policy, n_in, n_out, the inputs, their scale (None: relu), mean square
    ("he_normal", 512, 256, "standard normal", 1.0, 1.0),
    ("xavier_uniform", 300, 100, "normal with std 3", 3.0, 9.0),
    ("he_uniform", 256, 2048, "relu of standard normal", None, 0.5),
    ("xavier_normal", 128, 2048, "relu of standard normal", None, 0.5)]


@exercise_check("Exercise 4 (predicted_std)", yours="predicted_std")
def check_predicted_std(checker: Checker, predicted_std: Callable[..., Any]) -> None:
    """``predicted_std(policy, n_in, n_out, m)`` against the std of x Wᵀ measured on 2000
    inputs, W drawn by the policy as notebook 07's ``Affine`` draws it (its bias is zero):
    within 3%, for four policies and three kinds of inputs."""
    for policy, n_in, n_out, what, scale, mean_square in _POLICY_CASES:
        z = Rng(n_in).normal(size=(2000, n_in))
        x = np.maximum(z, 0) if scale is None else _F32(scale) * z
        weight = init.initialize(policy, (n_out, n_in), Rng(n_out))
        measured = float((x @ weight.T).std())
        with checker.case(f"{policy}, {n_in} -> {n_out}, inputs {what}",
                          hint="the std of each policy is in the table; for relu(z), half the "
                               "inputs are 0 and the other half keep their square"):
            with checker.named_errors({"": "a policy missing from your table: all four are "
                                           "asked for"}, (KeyError,)):  # any KeyError
                predicted = predicted_std(policy, n_in, n_out, mean_square)
            checker.shape(predicted, (), "the prediction (a number)")
            checker.close(predicted, measured, "the predicted std (the measured one, 3% "
                          "allowed)", rtol=0.03, atol=0.0,
                          mistakes=_std_mistakes(policy, n_in, n_out, mean_square))
