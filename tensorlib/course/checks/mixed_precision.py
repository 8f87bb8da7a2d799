"""The checks of notebook 19a (number formats and mixed precision): its piece, the
hand-written dynamic loss scaler ``LossScaler``, and its three exercises, ``spacing_at``,
``round_to_bfloat16`` and ``kahan_sum``.

``LossScaler`` is run beside ``tl.amp.GradScaler("cpu")`` on the same sequences of losses,
``(w * c).sum()`` for a float32 parameter ``w`` and SGD, where some steps' ``c`` makes the
scaled gradient overflow float32 or holds a nan: after every step, whether it stepped, the
scale, the count of good steps and the weights must be GradScaler's. What each usual slip
gives is simulated here (the gradients not divided by the scale, the loss not scaled, a step
taken on an inf, the scale not lowered, the count not restarted, the growth a step late or
early) and named when the learner's trajectory is that one.

``spacing_at`` is compared with numpy's ``np.spacing`` in the format (powers of two, numbers
just below them, subnormals, zero, negatives, the largest finite numbers' neighbours);
``round_to_bfloat16`` bit for bit with ml_dtypes' ``astype(bfloat16)`` (ties to even, the
carry into the exponent, overflow to inf, infinities, NaNs whose payload would carry, signed
zeros, subnormals); ``kahan_sum`` with the exact sum of the values, within a few units of the
last place of the values' own format, on sums that a plain loop in that format gets wrong.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

import numpy as np

import tensorlib as tl
from tensorlib.amp import GradScaler
from tensorlib.course.checks.registry import HandOn, exercise_check, piece_check
from tensorlib.course.exercises import Checker
from tensorlib.engine.splitmix64 import Rng
from tensorlib.nn import Parameter
from tensorlib.optim import SGD

__all__ = ["check_loss_scaler", "check_spacing_at", "check_round_to_bfloat16",
           "check_kahan_sum", "PackageLossScaler", "package_kahan_sum"]


# ------------------------------------------------------------------------------ LossScaler
class PackageLossScaler:
    """The notebook's ``LossScaler`` built on ``tl.amp.GradScaler("cpu")``: ``scale`` and
    ``good_steps`` read its state, ``step(loss, optimizer)`` runs its usual loop (scale,
    backward, step, update) and returns whether the optimizer stepped."""

    def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000) -> None:
        self._scaler = GradScaler("cpu", init_scale=init_scale, growth_factor=growth_factor,
                                  backoff_factor=backoff_factor, growth_interval=growth_interval)
        self.growth_factor, self.backoff_factor = growth_factor, backoff_factor
        self.growth_interval = growth_interval

    @property
    def scale(self) -> float:
        return self._scaler.get_scale()

    @property
    def good_steps(self) -> int:
        return int(self._scaler.state_dict()["_growth_tracker"])

    def step(self, loss: tl.Tensor, optimizer: Any) -> bool:
        before = self.scale
        self._scaler.scale(loss).backward()
        self._scaler.step(optimizer)
        self._scaler.update()
        return not self.scale < before  # lowered only when a gradient was not finite


_SCALER_CASES = [  # what, init_scale, growth_factor, backoff_factor, growth_interval, steps
    ("six good steps, growth_interval 2: the scale doubles after the 2nd, 4th and 6th",
     2.0 ** 10, 2.0, 0.5, 2, "gggggg"),
    ("an overflow at step 3 (the scaled gradient beyond float32's range): skipped, the "
     "scale halved, the count of good steps restarted", 2.0 ** 16, 2.0, 0.5, 3, "ggogggg"),
    ("a nan in a gradient, then two overflows in a row, then good steps", 2.0 ** 20, 2.0,
     0.5, 2, "gnooggg"),
    ("other factors: growth_factor 4, backoff_factor 0.25, growth_interval 1 (it grows "
     "after every good step)", 1.0, 4.0, 0.25, 1, "ggogg"),
    ("PyTorch's defaults (2^16, growth_interval 2000): eight good steps, the scale stays",
     2.0 ** 16, 2.0, 0.5, 2000, "gggggggg"),
]
_LEARNING_RATE = 0.1
_STEPPED_ON_INF = {"non-finite values": "the optimizer stepped on a gradient with an inf or a "
                  "nan (tensorlib's optimizers refuse it): skip the step when any gradient "
                  "is not finite"}
_SCALER_HINT = ("(loss * self.scale).backward(); every gradient divided by self.scale; if all "
                "finite: optimizer.step(), good_steps + 1, and at growth_interval the scale "
                "times growth_factor and good_steps 0; else no step, the scale times "
                "backoff_factor, good_steps 0")


def _step_arrays(draw: Rng, kinds: str) -> list[np.ndarray]:
    """Each step's ``c`` (float32, 6 numbers): "g" a gradient of about 1e-2, "o" one whose
    entry 1e35 overflows float32 once multiplied by a scale of 2^12 or more, "n" one that
    holds a nan."""
    arrays = []
    for kind in kinds:
        c = (draw.normal(size=(6,), dtype=np.float64) * 1e-2).astype(np.float32)
        if kind == "o":
            c[2] = np.float32(1e35)
        elif kind == "n":
            c[4] = np.float32("nan")
        arrays.append(c)
    return arrays


def _simulate(cs: list[np.ndarray], w0: np.ndarray, init: float, growth: float,
              backoff: float, interval: int, slip: str = "") -> dict[str, np.ndarray]:
    """What a loss scaler does on these steps (GradScaler's rule, or one usual ``slip``):
    after each step, whether it stepped, the scale, the good steps and the weights."""
    scale, good, w = float(init), 0, w0.astype(np.float64)
    stepped, scales, goods, weights = [], [], [], []
    for c in cs:
        with np.errstate(over="ignore", invalid="ignore"):
            scaled = (np.float32(scale) * c).astype(np.float64)
            if slip == "not scaled":
                scaled = c.astype(np.float64)
            finite = bool(np.isfinite(scaled).all())
            gradient = {"not unscaled": scaled, "multiplied": scaled * scale}.get(
                slip, scaled / scale)
            take = finite
            if take:
                w = w - _LEARNING_RATE * gradient
        if finite:
            good += 1
            grows = {"late": good > interval, "early": good >= interval - 1}.get(
                slip, good == interval)
            if grows:
                scale, good = scale * growth, 0
        else:
            scale = {"no backoff": scale, "grows on inf": scale * growth}.get(
                slip, scale * backoff)
            good = good if slip == "count kept" else 0
        stepped.append(take)
        scales.append(scale)
        goods.append(good)
        weights.append(w.copy())
    return {"stepped": np.array(stepped), "scales": np.array(scales),
            "good_steps": np.array(goods), "weights": np.array(weights)}


_SCALER_SLIPS = {
    "not unscaled": "the gradients not divided by the scale: the optimizer then steps with "
                    "gradients `scale` times too large",
    "multiplied": "the gradients multiplied by the scale again, not divided by it",
    "not scaled": "the loss not multiplied by the scale before backward: nothing is lifted "
                  "out of float16's underflow, and the scale never meets an overflow",
    "no backoff": "the scale not lowered after an inf or a nan: multiply it by "
                  "backoff_factor",
    "grows on inf": "the scale grown after an inf or a nan: it is multiplied by "
                    "backoff_factor then, growth_factor only after good steps",
    "count kept": "the count of good steps not restarted after an inf or a nan: set "
                  "good_steps to 0 there",
    "late": "the scale grown one good step late (good_steps > growth_interval): it grows on "
            "the growth_interval-th good step in a row",
    "early": "the scale grown one good step early: it grows when good_steps reaches "
             "growth_interval",
}


def _consistent(slips: dict[str, dict[str, np.ndarray]], received: dict[str, list[Any]],
                compared: list[str], key: str) -> dict[str, np.ndarray]:
    """The ``key`` entry of each slip whose trajectory agrees with what was received in
    every entry compared before (the first to differ names the slip)."""
    return {slip: simulated[key].astype(np.float64) for slip, simulated in slips.items()
            if all(np.array_equal(simulated[earlier].astype(np.float64),
                                  np.array(received[earlier], dtype=np.float64))
                   for earlier in compared)}


@piece_check("LossScaler", yours="LossScaler",
             package_name="tensorlib's (tl.amp.GradScaler)")
def check_loss_scaler(checker: Checker, LossScaler: type) -> HandOn:  # noqa: N803
    """``LossScaler(init_scale, growth_factor, backoff_factor, growth_interval)`` beside
    GradScaler("cpu") on five sequences of steps (growth, an overflow, a nan, other factors,
    PyTorch's defaults): after each step, the returned flag, ``scale``, ``good_steps`` and
    the weights (SGD)."""
    draw = Rng(1931)
    for what, init, growth, backoff, interval, kinds in _SCALER_CASES:
        with checker.case(what, hint=_SCALER_HINT):
            cs = _step_arrays(draw, kinds)
            w0 = (draw.normal(size=(6,), dtype=np.float64)).astype(np.float32)
            settings: dict[str, Any] = {"growth_factor": growth, "backoff_factor": backoff,
                                        "growth_interval": interval}
            expected: dict[str, list[Any]] = {"stepped": [], "scales": [], "good_steps": [],
                                              "weights": []}
            reference = PackageLossScaler(init, **settings)
            theirs = Parameter(w0.copy())
            their_optimizer = SGD([theirs], lr=_LEARNING_RATE)
            scaler = (LossScaler(init, **settings) if interval != 2000 or growth != 2.0
                      else LossScaler())
            checker.true(scaler.scale == init and scaler.good_steps == 0,
                         f"a new LossScaler has scale {scaler.scale!r} and good_steps "
                         f"{scaler.good_steps!r}, not {init:g} and 0",
                         "set self.scale = init_scale and self.good_steps = 0 in __init__")
            mine = Parameter(w0.copy())
            optimizer = SGD([mine], lr=_LEARNING_RATE)
            received: dict[str, list[Any]] = {"stepped": [], "scales": [], "good_steps": [],
                                              "weights": []}
            for c in cs:
                for parameter, step_optimizer, record, runner in (
                        (theirs, their_optimizer, expected, reference),
                        (mine, optimizer, received, scaler)):
                    step_optimizer.zero_grad()
                    loss = (parameter * tl.tensor(c)).sum()
                    with np.errstate(over="ignore", invalid="ignore"), \
                            checker.named_errors(_STEPPED_ON_INF, (ValueError,)):
                        flag = runner.step(loss, step_optimizer)
                    record["stepped"].append(flag)
                    record["scales"].append(runner.scale)
                    record["good_steps"].append(runner.good_steps)
                    record["weights"].append(parameter.numpy().astype(np.float64))
            checker.true(all(isinstance(flag, (bool, np.bool_)) for flag in received["stepped"]),
                         f"step returned {received['stepped'][0]!r}, not True or False",
                         "return whether the optimizer stepped: True, or False for a skipped "
                         "step")
            slips = {_SCALER_SLIPS[slip]: _simulate(cs, w0, init, growth, backoff, interval,
                                                    slip) for slip in _SCALER_SLIPS}
            compared: list[str] = []
            for key, what_is in (("stepped", "whether each step was taken"),
                                 ("scales", "the scale after each step"),
                                 ("good_steps", "good_steps after each step")):
                checker.equal(np.array(received[key], dtype=np.float64),
                              np.array(expected[key], dtype=np.float64), what_is,
                              mistakes=_consistent(slips, received, compared, key))
                compared.append(key)
            checker.close(np.array(received["weights"]), np.array(expected["weights"]),
                          "the weights after each step (SGD, lr 0.1)", rtol=1e-6, atol=1e-7,
                          mistakes=_consistent(slips, received, compared, "weights"))
    return HandOn(LossScaler, PackageLossScaler)


# ------------------------------------------------------------------------------ exercise 1
_FORMATS = {"float32": tl.float32, "float16": tl.float16, "bfloat16": tl.bfloat16}


def _exact_gaps(x: np.ndarray, dtype: Any) -> np.ndarray:
    """numpy's gap from |x| to the next number of the format above it (float64)."""
    return np.abs(np.spacing(np.abs(x).astype(dtype)).astype(np.float64))


def _gap_slips(x: np.ndarray, dtype: Any) -> dict[str, np.ndarray]:
    info = tl.finfo(dtype)
    m, minexp = int(info.nmant), int(info.minexp)
    magnitude = np.abs(x)
    with np.errstate(divide="ignore"):
        exponent = np.floor(np.log2(np.where(magnitude > 0, magnitude, 1.0)))
        normal = np.where(magnitude > 0, exponent, minexp)
        ceiling = np.ceil(np.log2(np.where(magnitude > 0, magnitude, 1.0)))
    clamped = np.maximum(normal, minexp)
    return {
        "eps times |x|: the gap is a power of two, 2^(e - m) with e = floor(log2|x|), the "
        "same for every number of one binade": float(info.eps) * magnitude,
        "the exponent rounded up (ceil): e is floor(log2|x|), the power of two at or below "
        "|x|": 2.0 ** (np.maximum(ceiling, minexp) - m),
        "m + 1 fraction bits (the hidden bit counted): the gap is 2^(e - m) with m = "
        "finfo(dtype).nmant, the stored fraction bits": 2.0 ** (clamped - m - 1),
        "no floor for the subnormals: below the smallest normal number every gap is the "
        "smallest subnormal, 2^(minexp - m)": 2.0 ** (np.where(magnitude > 0, exponent,
                                                              minexp) - m),
        "the exponent np.frexp returns taken as floor(log2|x|): frexp gives |x| = f · 2^e "
        "with f in [0.5, 1), so floor(log2|x|) is e - 1": 2.0 ** (np.maximum(normal + 1,
                                                                           minexp) - m),
    }


_SPACING_CASES = [  # what, format, values
    ("float16: powers of two 1, 2, 256, 0.5, 2^-14 (the gap is the one above them)",
     "float16", [1.0, 2.0, 256.0, 0.5, 2.0 ** -14]),
    ("bfloat16: numbers just below a power of two, and between them",
     "bfloat16", [0.99609375, 255.0, 3.0, 100.0, 0.1000976562]),
    ("float16: subnormals and zero (one gap, the smallest subnormal)",
     "float16", [0.0, 2.0 ** -24, 3 * 2.0 ** -24, 2.0 ** -15, 6.0e-5]),
    ("float32 and negative numbers (the gap from |x|)", "float32",
     [-1.0, -3.0, 1e-3, -2.0 ** -126, 1e30]),
    ("float16's large numbers: 60000, 32768, 2047", "float16",
     [60000.0, 32768.0, 1024.0, 2047.0, 4.0]),
    ("bfloat16 at the bottom of its range: 2^-126 and below", "bfloat16",
     [2.0 ** -126, 2.0 ** -130, 2.0 ** -133, 2.0 ** 100, 0.0]),
]


@exercise_check("Exercise 1 (spacing_at)", yours="spacing_at")
def check_spacing_at(checker: Checker, spacing_at: Callable[..., Any]) -> None:
    """``spacing_at(x, dtype)`` (x a float64 array of numbers the format holds) against
    ``np.spacing`` in that format, on six arrays: powers of two, numbers between them,
    subnormals and zero, negatives, large and tiny numbers."""
    hint = ("e = floor(log2|x|) (np.frexp gives it exactly), at least finfo(dtype).minexp; "
            "the gap is 2.0 ** (e - finfo(dtype).nmant)")
    for what, name, values in _SPACING_CASES:
        with checker.case(what, hint=hint):
            dtype = _FORMATS[name]
            x = np.array(values, dtype=np.float64).astype(dtype).astype(np.float64)
            received = spacing_at(x.copy(), dtype)
            checker.true(isinstance(received, np.ndarray) and received.shape == x.shape,
                         f"spacing_at returned {type(received).__name__}"
                         + (f" of shape {received.shape}" if isinstance(received, np.ndarray)
                            else "") + f", not an array of shape {x.shape}",
                         "return one gap per entry of x, as a numpy array")
            checker.close(received, _exact_gaps(x, dtype), f"the gaps in {name} at {values}",
                          rtol=0, atol=0, mistakes=_gap_slips(x, dtype))


# ------------------------------------------------------------------------------ exercise 2
def _float32_words(words: list[int]) -> np.ndarray:
    return np.array(words, dtype=np.uint32).view(np.float32)


def _rounding_slips(x: np.ndarray) -> dict[str, np.ndarray]:
    """What the usual slips give, as bfloat16 bit patterns (uint16)."""
    bits = x.view(np.uint32).astype(np.uint64)
    odd = (bits >> 16) & 1
    return {
        "the NaNs rounded like numbers: a NaN's payload can carry into the sign or leave "
        "only zeros (inf); keep a NaN a NaN (np.isnan, then 0x7FC0)":
            (((bits + 0x7FFF + odd) & 0xFFFFFFFF) >> 16).astype(np.uint16),
        "truncated: the low 16 bits dropped, not rounded (add 0x7FFF plus the kept part's "
        "last bit before the shift)": (bits >> 16).astype(np.uint16),
        "ties rounded up (0x8000 added): a tie goes to the even neighbour, so add 0x7FFF + "
        "the last kept bit": (((bits + 0x8000) & 0xFFFFFFFF) >> 16).astype(np.uint16),
        "ties rounded down (only 0x7FFF added): a tie goes to the even neighbour, so add "
        "0x7FFF + the last kept bit": (((bits + 0x7FFF) & 0xFFFFFFFF) >> 16).astype(np.uint16),
    }


_ROUNDING_CASES = [  # what, float32 bit patterns or values
    ("1, 0.1, pi, -2.5 and 1/3", _float32_words([0x3F800000]).tolist()
     + [0.1, np.pi, -2.5, 1 / 3]),
    ("ties: the low 16 bits exactly 0x8000, after an even and after an odd kept part",
     _float32_words([0x3F808000, 0x3F818000, 0xBF808000, 0xBF818000, 0x40490000 | 0x8000])),
    ("a carry into the exponent: 0x3F7FFFFF rounds to 1.0; float32's largest rounds to inf",
     _float32_words([0x3F7FFFFF, 0x7F7FFFFF, 0x7F7F7FFF, 0xFF7FFFFF])),
    ("inf, -inf, 0.0 and -0.0", [np.inf, -np.inf, 0.0, -0.0]),
    ("NaNs whose payload would carry into the sign or vanish: 0x7FFFFFFF, 0x7F800001, "
     "0xFFC00000", _float32_words([0x7FFFFFFF, 0x7F800001, 0xFFC00000, 0x3F800000])),
    ("subnormal float32s and a 2 x 3 array of random numbers", None),
]


@exercise_check("Exercise 2 (round_to_bfloat16)", yours="round_to_bfloat16")
def check_round_to_bfloat16(checker: Checker, round_to_bfloat16: Callable[..., Any]) -> None:
    """``round_to_bfloat16(x)`` (x float32) bit for bit against ``x.astype(tl.bfloat16)``
    (NaNs need only be NaNs), on six arrays: ordinary numbers, ties, a carry into the
    exponent and an overflow, infinities and signed zeros, NaNs, subnormals and a 2-D array."""
    hint = ("bits = x.view(np.uint32); add 0x7FFF + ((bits >> 16) & 1); keep bits >> 16 as "
            "np.uint16 and .view(tl.bfloat16); a NaN stays a NaN")
    draw = Rng(1932)
    for what, values in _ROUNDING_CASES:
        with checker.case(what, hint=hint):
            if values is None:
                tiny = _float32_words([0x00000001, 0x00008000, 0x00018000, 0x807FFFFF])
                x = np.concatenate([tiny, draw.normal(size=(2,), dtype=np.float32)])
                x = np.concatenate([x, draw.normal(size=(6,), dtype=np.float32)]).reshape(2, 6)
            else:
                x = np.asarray(values, dtype=np.float32)
            with np.errstate(over="ignore", invalid="ignore"):
                received = round_to_bfloat16(x.copy())
            checker.true(isinstance(received, np.ndarray) and received.shape == x.shape,
                         f"round_to_bfloat16 returned {type(received).__name__}"
                         + (f" of shape {received.shape}" if isinstance(received, np.ndarray)
                            else "") + f", not an array of shape {x.shape}",
                         "return a numpy array of x's shape")
            checker.true(received.dtype == tl.bfloat16,
                         f"the result's dtype is {received.dtype}, not bfloat16",
                         "view the 16-bit words as bfloat16: words.astype(np.uint16)"
                         ".view(tl.bfloat16)")
            expected = x.astype(tl.bfloat16)
            nan = np.isnan(expected.astype(np.float32))
            checker.equal(np.isnan(received.astype(np.float32)), nan,
                          "where the result is a NaN",
                          mistakes={slip: np.isnan(words.view(tl.bfloat16).astype(np.float32))
                                    for slip, words in _rounding_slips(x).items()})
            kept = ~nan
            checker.equal(received.view(np.uint16)[kept], expected.view(np.uint16)[kept],
                          "the 16-bit words of the numbers (not NaN)",
                          mistakes={slip: words[kept]
                                    for slip, words in _rounding_slips(x).items()})


# ------------------------------------------------------------------------------ exercise 3
def package_kahan_sum(values: np.ndarray) -> Any:
    """Kahan's compensated sum of ``values`` with every operation in their own dtype."""
    total = values.dtype.type(0)
    compensation = values.dtype.type(0)
    for value in values:
        corrected = value - compensation
        added = total + corrected
        compensation = (added - total) - corrected
        total = added
    return total


def _naive(values: np.ndarray) -> Any:
    total = values.dtype.type(0)
    for value in values:
        total = total + value
    return total


def _kahan_slips(values: np.ndarray) -> dict[str, float]:
    kind = values.dtype.type

    def run(sign: int) -> float:
        total, compensation = kind(0), kind(0)
        for value in values:
            corrected = value - compensation
            added = total + corrected
            compensation = (added - total) - corrected if sign > 0 else \
                (added - total) + corrected
            total = added
        return float(total)
    return {"no compensation: every value added as it is, as the plain loop does (subtract "
            "the compensation from each value first)": float(_naive(values)),
            "the compensation's sign: c = (t - total) - y, what the addition lost, with y "
            "the corrected value": run(-1)}


def _kahan_values(draw: Rng, which: str) -> np.ndarray:
    if which == "hundredths bfloat16":
        return np.full(10_000, 0.01, dtype=tl.bfloat16)
    if which == "hundredths float16":
        return np.full(10_000, 0.01, dtype=tl.float16)
    if which == "large then small":
        return np.concatenate([[1000.0], np.full(4000, 0.125)]).astype(tl.bfloat16)
    if which == "uniform":
        return draw.uniform(0.0, 1.0, size=(3000,)).astype(tl.float16)
    if which == "mixed signs":
        return (draw.normal(size=(5000,), dtype=np.float64) + 0.05).astype(tl.bfloat16)
    return np.array([0.3], dtype=tl.bfloat16)


_KAHAN_CASES = [  # what, values, units of the last place allowed
    ("10,000 copies of 0.01 in bfloat16 (a plain loop stops at 4)", "hundredths bfloat16", 3),
    ("10,000 copies of 0.01 in float16 (a plain loop stops at 32)", "hundredths float16", 3),
    ("1000 then 4000 copies of 0.125, bfloat16 (a plain loop stays at 1000)",
     "large then small", 3),
    ("3000 numbers from U(0, 1) in float16", "uniform", 3),
    ("5000 numbers of both signs in bfloat16 (mean 0.05)", "mixed signs", 3),
    ("one number", "one", 0),
]


@exercise_check("Exercise 3 (kahan_sum)", yours="kahan_sum")
def check_kahan_sum(checker: Checker, kahan_sum: Callable[..., Any]) -> None:
    """``kahan_sum(values)`` on six 1-D arrays of bfloat16 or float16 against the exact sum
    of the values: a number of the values' dtype, within 3 units of the last place of that
    format at the exact sum (4 at most, of both signs, within Kahan's bound)."""
    hint = ("total = c = 0 in values.dtype; per value: y = value - c; t = total + y; "
            "c = (t - total) - y; total = t")
    draw = Rng(1933)
    for what, which, units in _KAHAN_CASES:
        with checker.case(what, hint=hint):
            values = _kahan_values(draw, which)
            received = kahan_sum(values.copy())
            checker.true(isinstance(received, (numbers.Real, np.generic))
                         and not isinstance(received, bool),
                         f"kahan_sum returned {received!r}, a {type(received).__name__}, not "
                         "a number", "return the total, a number of the values' dtype")
            checker.true(np.asarray(received).dtype == values.dtype,
                         f"the total is a {np.asarray(received).dtype} number, not "
                         f"{values.dtype}",
                         "keep every operation in the values' dtype: start from "
                         "values.dtype.type(0), and add the values' own entries")
            exact = float(values.astype(np.float64).sum())
            gap = float(np.spacing(np.abs(np.asarray(exact, dtype=values.dtype))))
            checker.close(float(received), exact,
                          f"the total (exact sum {exact:.6g}; {units} units of the last place "
                          f"allowed, {units * gap:.3g})", rtol=0, atol=max(units, 0.5) * gap,
                          mistakes=_kahan_slips(values))
