"""Differential fuzzing of random tensorlib programs, against PyTorch and against itself.

What is fuzzed
    Random *programs*, drawn by hypothesis: 1-3 leaf tensors (0-d, size-0 and 1-4-axis shapes,
    sizes 0..4; float64 or float32, one dtype per program; values from a numpy generator seeded
    by the drawn seed, |x| in [0.2, 2], float32-representable, with exact zeros (the kinks,
    ``x ** 0``) in a quarter of the leaves and ties (max, maximum) in a fifth; all require grad
    except, sometimes, one constant), then a DAG of 1-6 steps, each an op on earlier values:

    - elementwise: exp, log and sqrt (of a positive-made input, ``x.abs() + 0.5`` or
      ``x * x + 0.5``), tanh, sigmoid, relu, gelu (erf and tanh), silu, softplus (beta,
      threshold), leaky_relu, abs, neg, ``x ** p`` for p in 0, 1, 2, 3, 0.5, 2.5, -1;
    - binary with broadcasting: + - * / (positive divisor) and maximum, with a tensor, a 0-d
      tensor or a Python scalar (on either side), ``where`` with a boolean mask, masked_fill;
    - views: reshape (with -1), permute, transpose, ``.T``, expand (with -1), squeeze,
      unsqueeze, basic slicing (negative starts, steps of -2..2), integer indexing,
      integer-array indexing (repeats, 2-D index arrays), boolean-mask indexing;
    - reductions over None, an int or a tuple of dims, keepdim True/False: sum, mean, amax,
      amin, var and std (correction 0, 1 or the default), logsumexp; ``max(dim)`` and
      ``min(dim)`` over one dim (the ``(values, indices)`` pair; the int64 indices are
      compared but are no operand of later steps); softmax and log_softmax over a dim;
    - matmul (1-D operands, batch broadcasting), concat, stack, split (int and list sizes);
    - fused nn ops: ``F.linear`` (with/without bias), ``F.layer_norm`` (with/without weight
      and bias), ``F.rms_norm`` (with/without weight, eps None too), ``F.cross_entropy``
      (integer targets, -100 ignored, reductions, smoothing);
    - recurrent layers: ``F.rnn_layer`` (tanh), ``F.gru_layer``, ``F.lstm_layer`` in either
      direction, with or without first states and biases (against torch's own layers).

    Operands are made to fit by construction (each mismatch becomes recorded steps: flatten,
    slice, reshape, or sum-then-expand), so no example is rejected. Large intermediate values
    are tamed with tanh before exp/pow/matmul so that float32 never overflows.

    After the forward steps, a *protocol*: ``retain_grad()`` on some intermediates; in-place
    changes (``add_``, ``mul_``, ``fill_``, ``copy_``, ``zero_``) of a leaf under ``no_grad``
    (or, to check that both refuse it, with gradients on), or of an intermediate through
    ``.detach()``; then 1-3 backward calls: ``out.sum().backward()``, ``out.backward(g)`` with
    an explicit upstream gradient, ``out.backward()`` for one-element outputs, with or without
    ``retain_graph`` (so gradients accumulate over passes and over several outputs of the same
    leaves), ``leaf.grad = None`` between them, in-place changes between them.

The oracles
    1. PyTorch (tests ``*_torch``, skipped only where ``import torch`` fails): the same program
       in torch with the same initial values. Compared: every value's shape, dtype name and
       data (after the in-place changes too, so lost or aliased writes show), every leaf's
       ``.grad`` and every retained intermediate's ``.grad`` (None against None too) after
       each backward call, and which call raises. If torch raises, tensorlib must raise at
       the same call, with one exception: after an in-place change, tensorlib may instead
       return the gradients of the values the forward pass really used (torch's gradients of
       the program without the change), since a saved tensor that tensorlib did not keep
       cannot make it wrong. If tensorlib raises where torch does not, that is a failure,
       except for the deliberate departure listed in ``DEPARTURES``. (torch can let two
       leaves' ``.grad`` share one buffer and then accumulate into both; the harness clones
       torch's ``.grad`` after each backward so that this torch quirk is not blamed on
       tensorlib.) float32 runs are also compared with torch's float64 run, see Tolerances.
    2. tensorlib itself (always run, no torch needed): the program runs in float64 in
       reference mode (no kernels), in float64 with kernels and in float32 with kernels (on
       the same, float32-representable, initial values); the float64 runs must agree in
       values, gradients and raises, and the float32 run's values must agree with the
       float64 reference within float32 rounding.
    3. Finite differences (always run): programs built from smooth ops only (no relu, abs,
       leaky_relu, max, min, maximum; positive-making by ``x * x + 0.5``), float64, with
       a protocol of several accumulating backward calls; the accumulated leaf gradients are
       checked with ``tensorlib.engine.gradcheck`` (small programs) or against central differences
       of the summed projections along random directions.

Tolerances (``|ours - reference| <= rtol * |reference| + atol * S``)
    S is the magnitude involved: 1 or more, the largest |entry| of the reference value and of
    every value it was computed from (for gradients: of every reference value and gradient of
    the program). float64: rtol 1e-9, atol 1e-12 (sums of a few hundred products at
    magnitudes up to ~1e3 carry ~1e-13 relative error). float32: rtol 1e-4 and atol 1e-5,
    i.e. about 800 float32 ulps relative and 100 ulps of the magnitudes involved, for depth-6
    programs. For float32 each entry may in addition differ by 8 x the reference's own
    float32 rounding error there: |torch float32 - torch float64| against torch, and against
    tensorlib's float64 reference the change of the float64 result when the leaves move by
    2^-24 relative (layer_norm of a nearly constant row amplifies rounding far beyond the
    magnitudes involved). NaN must match NaN and infinities must match exactly.

Run time at FUZZ_SCALE=1 (2 cores): the two no-torch tests 300 programs each, about 4 s for
the file without torch; the two torch tests 800 programs each, about 30 s more. The recurrent
layers have tests of their own (programs that draw recurrent steps among the others, so that
the programs above stay the ones they were): 200 against torch, 100 without it.

FUZZ_SCALE
    The environment variable multiplies every test's example count (default 1; ``make test``
    runs with 1). Examples are derandomized (same programs on every run, no database), so a
    failure reproduces; the assertion prints the program as a listing of its steps with
    shapes, dtype and seed, enough to rebuild it by hand.
"""

from __future__ import annotations

import contextlib
import math
import os
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tensorlib as tl
from tensorlib.nn import functional as F

from helpers import every_window_reads_the_input

FUZZ_SCALE = max(1, int(os.environ.get("FUZZ_SCALE", "1")))
SELF_EXAMPLES = 300  # per no-torch test: about 1.5-2 s each (make test runs these)
TORCH_EXAMPLES = 800  # per torch test: about 10-15 s each
RECURRENT_EXAMPLES = 200  # the recurrent layers' torch test; half as many without torch

# Deliberate departures: tensorlib raises where torch answers, on purpose.
DEPARTURES = {
    # DESIGN.md, Engine: "fails clearly on a second pass over a freed graph". torch refuses a
    # second pass only through nodes that saved tensors (add, sum, reshape save none).
    "freed-graph": "tensorlib refuses any second backward through a freed graph; torch only "
                   "through nodes that saved tensors",
    # docs/departures.md: torch computes number / b as b.reciprocal() * number, whose node
    # keeps the result; tensorlib's div keeps the divisor b.
    # docs/departures.md: whether torch refuses depends on whether its kernel happened to
    # save a copy (matmul of an expanded, non-contiguous view reshapes it into one); the
    # version check of tensorlib depends only on the program.
    "saved-view-changed": "an in-place change of a tensor whose view an op saved is refused "
                          "at backward, where torch may have saved a copy",
    # docs/departures.md, "Recurrent layers": the layer's node keeps its output (the states
    # it needs backward); torch's keeps copies of them.
    "recurrent-output-changed": "an in-place change of a recurrent layer's output is refused "
                                "at backward, where torch kept copies of the states",
    "scalar-over-tensor": "after number / b, an in-place change of b is refused at backward "
                          "(tensorlib's div saves b; torch's reciprocal saves its result)",
}


def _settings(base: int) -> settings:
    return settings(derandomize=True, database=None, deadline=None,
                    max_examples=base * FUZZ_SCALE,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much,
                                           HealthCheck.large_base_example])


# ============================================================================ program model
@dataclass
class Action:
    """One line of a program: an op (``kind == "op"``) or a protocol action."""

    kind: str  # op | retain | mutate | backward | grad_none
    op: str = ""
    ins: tuple[int, ...] = ()
    params: dict[str, Any] = field(default_factory=dict)
    outs: tuple[int, ...] = ()


@dataclass
class Program:
    seed: int
    dtype: str
    leaves: list[np.ndarray]  # float64 arrays, float32-representable values
    requires: list[bool]
    actions: list[Action]
    shapes: dict[int, tuple[int, ...]]
    departure: dict[int, str] = field(default_factory=dict)  # action index -> departure key
    integer: set[int] = field(default_factory=set)  # int64 values: max(dim)'s indices

    def listing(self) -> str:
        lines = [f"program seed={self.seed} dtype={self.dtype}"]
        for i, (leaf, rg) in enumerate(zip(self.leaves, self.requires, strict=True)):
            lines.append(f"  v{i} = leaf shape={leaf.shape} requires_grad={rg} "
                         f"values={_short(leaf)}")
        for n, a in enumerate(self.actions):
            params = ", ".join(f"{k}={_short(v)}" for k, v in a.params.items())
            args = ", ".join(f"v{i}" for i in a.ins)
            if a.kind == "op":
                outs = ", ".join(f"v{o}" for o in a.outs)
                shapes = ", ".join(str(self.shapes[o]) for o in a.outs)
                lines.append(f"  [{n}] {outs} = {a.op}({args}{', ' if params else ''}{params})"
                             f"  # {shapes}")
            else:
                lines.append(f"  [{n}] {a.kind} {args} {params}")
        return "\n".join(lines)


def _short(value: Any) -> str:
    if isinstance(value, np.ndarray):
        if value.size > 64:
            return f"array(shape={value.shape}, dtype={value.dtype})"
        return f"np.array({np.array2string(value, separator=',', precision=17)})".replace(
            "\n", "")
    if isinstance(value, tuple) and any(isinstance(v, (slice, np.ndarray)) for v in value):
        return "(" + ", ".join(_short(v) for v in value) + ",)"
    if isinstance(value, slice):
        return f"{_none(value.start)}:{_none(value.stop)}:{_none(value.step)}"
    return repr(value)


def _none(value: Any) -> str:
    return "" if value is None else str(value)


# ============================================================================ generation
UNARY = ["exp", "log", "sqrt", "tanh", "sigmoid", "relu", "gelu", "gelu_tanh", "silu",
         "softplus", "leaky_relu", "abs", "neg", "pow"]
KINKED = {"relu", "abs", "leaky_relu", "maximum", "max", "min", "posabs", "std", "max_pool1d",
          "max_pool2d", "relu6", "hardswish"}
KINDS = (["unary"] * 6 + ["binary"] * 5 + ["view"] * 5 + ["reduce"] * 3 + ["softmax"]
         + ["matmul"] + ["nn"] * 2 + ["join"] * 2 + ["where"] + ["conv"] * 2)
# The recurrent layers' own tests draw from these (the programs of the tests above stay the
# ones they always were)
RECURRENT_KINDS = KINDS + ["recurrent"] * 6
# convolution, pooling and padding: the same function names and arguments in F and torch's F
CONVOLUTIONS = ["conv1d", "conv2d", "max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d",
                "pad", "unfold", "relu6", "hardswish", "mish"]


class Builder:
    """Draws a program with hypothesis, tracking each value's shape, magnitude and aliasing."""

    def __init__(self, data: Any, dtype: str, smooth: bool, mutations: bool,
                 max_steps: int = 6, kinds: list[str] = KINDS):
        self.data, self.dtype, self.smooth, self.mutations = data, dtype, smooth, mutations
        self.kinds = kinds
        self.seed = self.draw(st.integers(0, 2**32 - 1))
        self.rng = np.random.default_rng(self.seed)  # values, masks, indices, targets
        self.choices = np.random.default_rng([self.seed, 1])  # the program's structure
        self.shape: dict[int, tuple[int, ...]] = {}
        self.rg: dict[int, bool] = {}
        self.mag: dict[int, float] = {}
        self.group: dict[int, int] = {}
        self.readonly: set[int] = set()
        self.ambiguous: set[int] = set()  # alias groups where view-or-copy is unspecified
        self.integer: set[int] = set()  # int64 values (indices): no operand, never changed
        self.actions: list[Action] = []
        self.departure: dict[int, str] = {}
        self.count = 0
        self.max_steps = max_steps
        self.leaves: list[np.ndarray] = []
        self.requires: list[bool] = []

    # ------------------------------------------------------------------ drawing helpers
    def draw(self, strategy: Any) -> Any:
        return self.data.draw(strategy)

    # Every choice after the seed comes from the seeded generator: hypothesis's own draws
    # favour the first option of every list, which starves the ops listed last.
    def int(self, lo: int, hi: int) -> int:
        return int(self.choices.integers(lo, hi + 1))

    def choice(self, options: Any) -> Any:
        options = list(options)
        return options[int(self.choices.integers(len(options)))]

    def chance(self, percent: int) -> bool:
        return bool(self.choices.integers(100) < percent)

    def permutation(self, n: int) -> list[int]:
        return [int(i) for i in self.choices.permutation(n)]

    def draw_shape(self, allow_zero: bool = True) -> tuple[int, ...]:
        ndim = self.choice([0, 1, 1, 2, 2, 2, 3, 3, 4])
        low = 0 if allow_zero and self.chance(12) else 1
        return tuple(self.int(low, 4) if i == 0 or low == 0 else self.int(1, 4)
                     for i in range(ndim))

    def values(self, shape: tuple[int, ...]) -> np.ndarray:
        signs = self.rng.choice([-1.0, 1.0], size=shape)
        array = signs * self.rng.uniform(0.2, 2.0, size=shape)
        return np.asarray(array.astype(np.float32).astype(np.float64))

    # ------------------------------------------------------------------ recording
    def leaf(self, shape: tuple[int, ...], requires: bool) -> int:
        v = self.count
        self.count += 1
        values = self.values(shape)
        if values.size > 1 and self.chance(25):  # exact zeros: the kinks, x ** 0, x / x
            values.flat[self.rng.integers(0, values.size, size=2)] = 0.0
        if values.size > 1 and self.chance(20):  # ties: max, min and maximum split them
            values.flat[self.rng.integers(0, values.size, size=2)] = values.flat[0]
        self.leaves.append(values)
        self.requires.append(requires)
        self.shape[v], self.rg[v], self.mag[v], self.group[v] = shape, requires, 2.0, v
        return v

    def add(self, op: str, ins: tuple[int, ...], params: dict[str, Any],
            shapes: list[tuple[int, ...]], mag: float, view: bool = False,
            readonly: bool = False, ambiguous: bool = False,
            departure: str | None = None) -> list[int]:
        outs = []
        for shape in shapes:
            v = self.count
            self.count += 1
            self.shape[v] = tuple(int(d) for d in shape)
            self.rg[v] = any(self.rg[i] for i in ins)
            self.mag[v] = float(min(mag, 1e30))
            self.group[v] = self.group[ins[0]] if view else v
            if readonly or (view and ins[0] in self.readonly):
                self.readonly.add(v)
            if ambiguous:
                self.ambiguous.update({self.group[ins[0]], self.group[v]})
            outs.append(v)
        if departure:
            self.departure[len(self.actions)] = departure
        self.actions.append(Action("op", op, tuple(ins), params, tuple(outs)))
        return outs

    def one(self, *args: Any, **kwargs: Any) -> int:
        return self.add(*args, **kwargs)[0]

    # ------------------------------------------------------------------ operand helpers
    def pick(self) -> int:
        v = self.choice(v for v in range(self.count) if v not in self.integer)
        if self.mag[v] > 50.0:  # keep float32 far from overflow
            v = self.unary_op("tanh", v)
        return v

    def fit(self, v: int, target: tuple[int, ...]) -> int:
        """Record steps that turn value ``v`` into one of shape ``target``."""
        shape, n = self.shape[v], math.prod(target)
        if shape == target:
            return v
        size = math.prod(shape)
        if size >= n and (size > 0 or n == 0):
            if len(shape) != 1:
                v = self.one("reshape", (v,), {"shape": (-1,) if size else (0,)}, [(size,)],
                             self.mag[v], view=True, ambiguous=True)
            if size > n:
                start = self.int(0, size - n)
                v = self.one("slice", (v,), {"index": (slice(start, start + n),)}, [(n,)],
                             self.mag[v], view=True)
            if target != (n,):
                v = self.one("reshape", (v,), {"shape": target}, [target], self.mag[v],
                             view=True, ambiguous=True)
            return v
        total = self.one("reduce", (v,), {"how": "sum", "axis": None, "keepdims": False},
                         [()], self.mag[v] * max(size, 1))
        if target == ():
            return total
        return self.one("expand", (total,), {"shape": target}, [target], self.mag[total],
                        view=True, readonly=True)

    def positive(self, v: int) -> int:
        if self.smooth or self.chance(40):
            square = self.one("binary", (v, v), {"op": "mul", "form": "tt"},
                              [self.shape[v]], self.mag[v] ** 2)
            return self.one("binary", (square,), {"op": "add", "form": "ts", "s": 0.5},
                            [self.shape[v]], self.mag[square] + 0.5)
        return self.one("posabs", (v,), {}, [self.shape[v]], self.mag[v] + 0.5)

    def broadcast_target(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """A shape that broadcasts with ``shape`` (fewer axes, 1s, or an extra leading axis)."""
        target = list(shape)
        if target and self.chance(30):
            target = target[self.int(1, len(target)):]
        elif len(target) < 4 and self.chance(15):
            target = [self.int(1, 3)] + target
        return tuple(1 if d and self.chance(25) else d for d in target)

    def mask(self, shape: tuple[int, ...]) -> np.ndarray:
        return np.asarray(self.rng.random(size=shape) < 0.5)

    # ------------------------------------------------------------------ ops
    def unary_op(self, name: str, v: int, **params: Any) -> int:
        m = self.mag[v]
        mag = {"exp": math.exp(min(m, 60.0)), "tanh": 1.0, "sigmoid": 1.0,
               "log": abs(math.log(max(m, 0.5))) + 1.0, "sqrt": math.sqrt(m),
               "softplus": m + 1.0}.get(name, m)
        return self.one("unary", (v,), {"fn": name, **params}, [self.shape[v]], mag)

    def step_unary(self) -> None:
        options = [u for u in UNARY if not (self.smooth and u in KINKED)]
        name = self.choice(options)
        v = self.pick()
        params: dict[str, Any] = {}
        if name == "exp" and self.mag[v] > 4.0:
            v = self.unary_op("tanh", v)
        if name in ("log", "sqrt"):
            v = self.positive(v)
        if name == "softplus":
            params = {"beta": self.choice([1.0, 2.0]),
                      "threshold": 20.0 if self.smooth else self.choice([20.0, 1.0])}
        if name == "leaky_relu":
            params = {"slope": self.choice([0.01, 0.2])}
        if name == "pow":
            p = self.choice([0, 1, 2, 3, 0.5, 2.5, -1])
            if p in (0.5, 2.5, -1):
                v = self.positive(v)
            if p in (3, 2.5) and self.mag[v] > 8.0:
                v = self.unary_op("tanh", v)
            self.one("unary", (v,), {"fn": "pow", "p": p}, [self.shape[v]],
                     max(self.mag[v], 2.0) ** max(p, 1))
            return
        self.unary_op(name, v, **params)

    def step_binary(self) -> None:
        ops = ["add", "sub", "mul", "div"] + ([] if self.smooth else ["maximum"])
        op = self.choice(ops)
        a = self.pick()
        form = "tt" if op == "maximum" else self.choice(["tt", "tt", "tt", "ts", "st"])
        if form != "tt":
            s = self.choice([0.5, 1.5, -2.0, 3.0])
            if op == "div":
                s = abs(s)
                if form == "st":
                    a = self.positive(a)
            m = {"add": self.mag[a] + 3, "sub": self.mag[a] + 3, "mul": self.mag[a] * 3,
                 "div": self.mag[a] * 2 if form == "ts" else 2.0}[op]
            self.one("binary", (a,), {"op": op, "form": form, "s": s}, [self.shape[a]], m)
            return
        b = self.pick()
        target = () if self.chance(15) else self.broadcast_target(self.shape[a])
        b = self.fit(b, target)
        if op == "div":
            b = self.positive(b)
        if self.chance(50):
            a, b = b, a
            if op == "div":  # keep the divisor positive
                a, b = b, a
        shape = np.broadcast_shapes(self.shape[a], self.shape[b])
        ma, mb = self.mag[a], self.mag[b]
        m = {"add": ma + mb, "sub": ma + mb, "mul": ma * mb, "div": 2 * ma,
             "maximum": max(ma, mb)}[op]
        self.one("binary", (a, b), {"op": op, "form": "tt"}, [shape], m)

    def step_where(self) -> None:
        a = self.pick()
        form = self.choice(["tt", "ts", "st", "fill"])
        if form == "fill":
            shape = self.broadcast_target(self.shape[a])
            shape = shape[len(shape) - len(self.shape[a]):] if len(shape) > len(
                self.shape[a]) else shape
            mask = self.mask(shape)
            self.one("masked_fill", (a,), {"mask": mask, "value": self.choice([-1.5, 0.0, 2.0])},
                     [self.shape[a]], max(self.mag[a], 2.0))
            return
        if form == "tt":
            b = self.fit(self.pick(), () if self.chance(20) else
                         self.broadcast_target(self.shape[a]))
            shape = np.broadcast_shapes(self.shape[a], self.shape[b])
            ins = (a, b)
            m = max(self.mag[a], self.mag[b])
        else:
            shape, ins, m = self.shape[a], (a,), max(self.mag[a], 2.0)
        mask_shape = shape if self.chance(70) else self.broadcast_target(shape)[-len(shape):] \
            if shape else ()
        mask = self.mask(mask_shape)
        shape = np.broadcast_shapes(shape, mask.shape)
        self.one("where", ins, {"mask": mask, "form": form, "s": 0.75}, [shape], m)

    def step_view(self) -> None:
        v = self.pick()
        shape, m = self.shape[v], self.mag[v]
        ndim, size = len(shape), math.prod(shape)
        kinds = ["reshape", "unsqueeze", "expand"]
        if ndim >= 1:
            kinds += ["permute", "T", "slice", "array_index", "bool_index", "slice"]
            if size > 0:
                kinds += ["int_index"]
        if ndim >= 2:
            kinds += ["transpose"]
        if 1 in shape:
            kinds += ["squeeze"]
        kind = self.choice(kinds)
        dummy = np.zeros(shape)
        if kind == "reshape":
            target = self.reshape_target(shape)
            resolved = dummy.reshape(target).shape
            self.one("reshape", (v,), {"shape": target}, [resolved], m, view=True,
                     ambiguous=True)
        elif kind == "unsqueeze":
            axis = self.int(-ndim - 1, ndim)
            self.one("unsqueeze", (v,), {"axis": axis}, [np.expand_dims(dummy, axis).shape], m,
                     view=True)
        elif kind == "expand":
            target = [self.int(1, 3) if d == 1 else (-1 if self.chance(30) else d)
                      for d in shape]
            if len(target) < 4 and self.chance(40):
                target = [self.int(0, 3)] + target
            resolved = tuple(d if d != -1 else shape[i - (len(target) - ndim)]
                             for i, d in enumerate(target))
            self.one("expand", (v,), {"shape": tuple(target)}, [resolved], m, view=True,
                     readonly=True)
        elif kind == "permute":
            order = self.permutation(ndim)
            order = [a - ndim if self.chance(25) else a for a in order]
            self.one("permute", (v,), {"order": tuple(order)},
                     [dummy.transpose([a % ndim for a in order]).shape], m, view=True)
        elif kind == "transpose":
            a0, a1 = self.int(-ndim, ndim - 1), self.int(-ndim, ndim - 1)
            self.one("transpose", (v,), {"axes": (a0, a1)}, [np.swapaxes(dummy, a0, a1).shape],
                     m, view=True)
        elif kind == "T":
            self.one("T", (v,), {}, [dummy.T.shape], m, view=True)
        elif kind == "squeeze":
            ones = [i for i, d in enumerate(shape) if d == 1]
            axis = None if self.chance(30) else self.choice(ones) - (ndim if self.chance(30)
                                                                     else 0)
            out = np.squeeze(dummy, axis).shape
            self.one("squeeze", (v,), {"axis": axis}, [out], m, view=True)
        elif kind == "slice":
            count = self.int(1, ndim)
            index = tuple(self.draw_slice(shape[i]) for i in range(count))
            negative = any((s.step or 1) < 0 for s in index)
            self.one("slice", (v,), {"index": index}, [dummy[index].shape], m,
                     view=not negative, ambiguous=negative)
        elif kind == "int_index":
            index = []
            for i in range(self.int(1, ndim)):
                if self.chance(60):
                    index.append(self.int(-shape[i], shape[i] - 1))
                else:
                    index.append(self.draw_slice(shape[i], positive=True))
            index = tuple(index)
            self.one("index", (v,), {"index": index}, [dummy[index].shape], m, view=True)
        elif kind == "array_index":
            axis = self.int(0, ndim - 1)
            n = shape[axis]
            idx_shape = self.choice([(2,), (3,), (2, 2), (1,), (0,)]) if n else (0,)
            idx = self.rng.integers(-n, n, size=idx_shape) if n else np.zeros(0, np.int64)
            index = (slice(None),) * axis + (idx.astype(np.int64),)
            self.one("index", (v,), {"index": index}, [dummy[index].shape], m)
        elif kind == "bool_index":
            k = self.int(1, ndim)
            mask = self.mask(shape[:k])
            self.one("index", (v,), {"index": (mask,)}, [dummy[mask].shape], m)

    def draw_slice(self, n: int, positive: bool = False) -> slice:
        step = self.choice([1, 1, 2] if positive else [1, 1, 2, -1, -2])
        start = self.choice([None, 0, 1, -1, -2])
        stop = self.choice([None, None, 2, -1, 3])
        return slice(start, stop, step)

    def reshape_target(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        size = math.prod(shape)
        if size == 0:
            dims = [self.int(0, 3) for _ in range(self.int(1, 3))]
            dims[self.int(0, len(dims) - 1)] = 0
            if self.chance(30) and dims.count(0) == 1 and len(dims) > 1:
                dims[dims.index(0)] = -1
            return tuple(dims)
        dims, rest = [], size
        for _ in range(self.int(0, 3)):
            divisors = [d for d in range(1, rest + 1) if rest % d == 0]
            d = self.choice(divisors)
            dims.append(d)
            rest //= d
        dims.append(rest)
        order = self.permutation(len(dims))
        dims = [dims[i] for i in order]
        if self.chance(40):
            dims[self.int(0, len(dims) - 1)] = -1
        return tuple(dims)

    def step_reduce(self) -> None:
        v = self.pick()
        shape, m = self.shape[v], self.mag[v]
        ndim = len(shape)
        how = self.choice(["sum", "mean", "max", "var", "logsumexp"] +
                          ([] if self.smooth else ["max", "min", "std"]))
        if self.smooth and how in ("max", "min"):
            how = "sum"
        axis: Any = None
        if ndim and self.chance(70):
            axes = sorted(self.permutation(ndim)[:self.int(1, ndim)])
            axes = [a - ndim if self.chance(25) else a for a in axes]
            axis = axes[0] if len(axes) == 1 and self.chance(60) else tuple(axes)
        keepdims = self.chance(40)
        params: dict[str, Any] = {"how": how, "axis": axis, "keepdims": keepdims}
        norm = range(ndim) if axis is None else [a % ndim for a in np.atleast_1d(axis)]
        count = math.prod(shape[a] for a in norm)
        correction = 0
        if how in ("var", "std"):
            params["correction"] = self.choice([0, 1, None])  # None: the default, 1
            correction = 1 if params["correction"] is None else params["correction"]
        if how in ("mean", "var", "std", "logsumexp") and count - correction <= 0 \
                and (self.smooth or not self.chance(30)):  # nan, inf or -inf: now and then
            return
        if how in ("max", "min", "logsumexp") and math.prod(shape) == 0 and not self.chance(30):
            return
        out = np.sum(np.zeros(shape), axis=None if axis is None else axis,
                     keepdims=keepdims).shape
        m = {"sum": m * max(count, 1), "var": m * m + 1, "std": m + 1,
             "logsumexp": m + math.log(max(count, 1)) + 1}.get(how, m)
        if how in ("max", "min") and isinstance(axis, int) and self.chance(50):
            # max(dim) / min(dim): values (gradient to the first extreme) and int64 indices
            indices = self.add("max_dim", (v,), params, [out, out], m)[1]
            self.integer.add(indices)
            self.rg[indices] = False
            return
        self.one("reduce", (v,), params, [out], m)

    def step_softmax(self) -> None:
        v = self.pick()
        if not self.shape[v]:
            v = self.fit(v, (self.int(1, 3),))
        ndim = len(self.shape[v])
        axis = self.int(-ndim, ndim - 1)
        if self.shape[v][axis] == 0 and not self.chance(30):
            return
        log = self.chance(50)
        self.one("softmax", (v,), {"axis": axis, "log": log}, [self.shape[v]],
                 2 * self.mag[v] + 3 if log else 1.0)

    def step_matmul(self) -> None:
        a = self.pick()
        if self.mag[a] > 8:
            a = self.unary_op("tanh", a)
        if not self.shape[a]:
            a = self.fit(a, (self.int(0, 3),))
        sa = self.shape[a]
        k = sa[-1]
        n = self.int(1, 3)
        if len(sa) == 1:
            target = self.choice([(k,), (k, n), (self.int(1, 2), k, n)])
        else:
            batch = self.broadcast_target(sa[:-2])
            target = self.choice([(k,), tuple(batch) + (k, n), (k, n)])
        b = self.pick()
        if self.mag[b] > 8:
            b = self.unary_op("tanh", b)
        b = self.fit(b, target)
        out = np.matmul(np.zeros(sa), np.zeros(target)).shape
        self.one("matmul", (a, b), {}, [out], self.mag[a] * self.mag[b] * max(k, 1))

    def step_nn(self) -> None:
        which = self.choice(["linear", "layer_norm", "rms_norm", "cross_entropy"])
        x = self.pick()
        if self.mag[x] > 8:
            x = self.unary_op("tanh", x)
        shape = self.shape[x]
        if which == "linear":
            if not shape:
                x = self.fit(x, (self.int(1, 3),))
                shape = self.shape[x]
            out_features = self.int(0 if self.chance(10) else 1, 3)
            w = self.fit(self.pick(), (out_features, shape[-1]))
            ins = [x, w]
            if self.chance(60):
                ins.append(self.fit(self.pick(), (out_features,)))
            if max(self.mag[i] for i in ins) > 8:
                ins = [ins[0]] + [self.unary_op("tanh", i) for i in ins[1:]]
            self.one("linear", tuple(ins), {"bias": len(ins) == 3},
                     [shape[:-1] + (out_features,)],
                     self.mag[x] * self.mag[w] * max(shape[-1], 1) + 8)
        elif which in ("layer_norm", "rms_norm"):
            if not shape or shape[-1] == 0:
                x = self.fit(x, (shape[0] if shape else 2, self.int(1, 4)))
                shape = self.shape[x]
            ins, flags = [x], {"bias": False}
            for name in ("weight", "bias") if which == "layer_norm" else ("weight",):
                flags[name] = self.chance(60)
                if flags[name]:
                    ins.append(self.fit(self.pick(), (shape[-1],)))
            eps = self.choice([1e-5, 1e-3] if which == "layer_norm" else [1e-5, 1e-3, None])
            self.one(which, tuple(ins), {**flags, "eps": eps},
                     [shape], 2.0 * math.sqrt(shape[-1]) * (1 + sum(self.mag[i] for i in ins[1:])))
        else:
            if not shape or shape[-1] == 0 or math.prod(shape[:-1]) == 0:
                x = self.fit(x, self.choice([(self.int(1, 3),), (self.int(1, 3), self.int(1, 4)),
                                             (2, self.int(1, 2), 3)]))
                shape = self.shape[x]
            classes = shape[-1]
            targets = np.asarray(self.rng.integers(0, classes, size=shape[:-1]), np.int64)
            if self.chance(30) and targets.size and not self.smooth:  # -100: ignored
                targets = np.where(self.rng.random(size=targets.shape) < 0.4, -100, targets)
            reduction = self.choice(["mean", "sum", "none"])
            smoothing = self.choice([0.0, 0.0, 0.2])
            out = shape[:-1] if reduction == "none" else ()
            self.one("cross_entropy", (x,), {"targets": targets, "reduction": reduction,
                                             "label_smoothing": smoothing},
                     [out], (2 * self.mag[x] + 3) * max(math.prod(shape[:-1]), 1))

    def step_join(self) -> None:
        which = self.choice(["concat", "stack", "split"])
        a = self.pick()
        shape = self.shape[a]
        if which == "split":
            if not shape:
                a = self.fit(a, (self.int(1, 4),))
                shape = self.shape[a]
            axis = self.int(-len(shape), len(shape) - 1)
            n = shape[axis]
            if self.chance(50):
                sizes: Any = self.int(1, 3)
                count = max(1, -(-n // sizes))
                pieces = [min(sizes, n - s) for s in range(0, n, sizes)] or [0]
            else:
                pieces, rest = [], n
                while rest > 0 and len(pieces) < 3:
                    pieces.append(self.int(0, rest))
                    rest -= pieces[-1]
                pieces.append(rest)
                sizes, count = list(pieces), len(pieces)
            outs = [shape[:axis % len(shape)] + (p,) + shape[axis % len(shape) + 1:]
                    for p in pieces][:count]
            self.add("split", (a,), {"sizes": sizes, "axis": axis}, outs, self.mag[a],
                     view=True)
            return
        k = self.int(2, 3)
        if which == "concat":
            if not shape:
                a = self.fit(a, (self.int(1, 3),))
                shape = self.shape[a]
            axis = self.int(-len(shape), len(shape) - 1)
            ins = [a]
            for _ in range(k - 1):
                target = list(shape)
                target[axis] = self.int(0, 3)
                ins.append(self.fit(self.pick(), tuple(target)))
            out = np.concatenate([np.zeros(self.shape[i]) for i in ins], axis=axis).shape
        else:
            axis = self.int(-len(shape) - 1, len(shape))
            ins = [a] + [self.fit(self.pick(), shape) for _ in range(k - 1)]
            out = np.stack([np.zeros(shape)] * k, axis=axis).shape
        self.one(which, tuple(ins), {"axis": axis}, [out], max(self.mag[i] for i in ins))

    def step_conv(self) -> None:
        """A convolution, pooling, padding or unfold of a value fitted to ``(N, C, *S)``
        (random kernel, stride, padding, dilation and groups), or a mobile-net activation."""
        which = self.choice([c for c in CONVOLUTIONS if not (self.smooth and c in KINKED)])
        x = self.pick()
        if self.mag[x] > 8:
            x = self.unary_op("tanh", x)
        if which in ("relu6", "hardswish", "mish"):
            self.one("conv", (x,), {"fn": which, "kwargs": {}}, [self.shape[x]],
                     self.mag[x] + 1.0)
            return
        dims = 2 if which.endswith("2d") or which == "unfold" else 1
        if which == "pad":
            dims = self.int(1, 2)
        kernel = tuple(self.int(1, 3) for _ in range(dims))
        stride = tuple(self.int(1, 2) for _ in range(dims))
        dilation = tuple(1 if which.startswith("avg_pool") else self.int(1, 2)
                         for _ in range(dims))
        padding = tuple(self.int(0, k // 2) for k in kernel)
        spatial = tuple(max(1, d * (k - 1) + 1 - 2 * p + self.int(0, 3))
                        for k, d, p in zip(kernel, dilation, padding, strict=True))
        if which.startswith(("max_pool", "avg_pool")) and not all(
                every_window_reads_the_input(*axis) for axis
                in zip(spatial, kernel, stride, padding, dilation, strict=True)):
            # a window all padding: PyTorch reads memory it never wrote. No padding instead
            padding = (0,) * dims
            spatial = tuple(max(size, d * (k - 1) + 1)
                            for size, k, d in zip(spatial, kernel, dilation, strict=True))
        groups = self.choice([1, 1, 2]) if which.startswith("conv") else 1
        channels = groups * self.int(1, 2)
        x = self.fit(x, (self.int(1, 2), channels) + spatial)
        batch = self.shape[x][0]
        positions = tuple((size + 2 * p - d * (k - 1) - 1) // s + 1 for size, k, s, p, d
                          in zip(spatial, kernel, stride, padding, dilation, strict=True))
        sizes = {"stride": stride, "padding": padding, "dilation": dilation}
        if which.startswith("conv"):
            filters = groups * self.int(1, 2)
            w = self.fit(self.pick(), (filters, channels // groups) + kernel)
            ins = [x, w]
            if self.chance(60):
                ins.append(self.fit(self.pick(), (filters,)))
            if max(self.mag[i] for i in ins) > 8:
                ins = [ins[0]] + [self.unary_op("tanh", i) for i in ins[1:]]
            fan_in = channels // groups * math.prod(kernel)
            self.one("conv", tuple(ins), {"fn": which, "kwargs": {**sizes, "groups": groups}},
                     [(batch, filters) + positions],
                     self.mag[x] * self.mag[w] * fan_in + (self.mag[ins[2]] if len(ins) > 2
                                                           else 0.0))
        elif which.startswith("max_pool"):
            self.one("conv", (x,), {"fn": which, "kwargs": {"kernel_size": kernel, **sizes}},
                     [(batch, channels) + positions], self.mag[x])
        elif which.startswith("avg_pool"):
            del sizes["dilation"]
            include = self.chance(70)
            self.one("conv", (x,), {"fn": which, "kwargs": {
                "kernel_size": kernel, **sizes, "count_include_pad": include}},
                     [(batch, channels) + positions], self.mag[x])
        elif which == "unfold":
            self.one("conv", (x,), {"fn": which, "kwargs": {"kernel_size": kernel, **sizes}},
                     [(batch, channels * math.prod(kernel), math.prod(positions))],
                     self.mag[x])
        else:
            mode = self.choice(["constant", "reflect", "replicate", "circular"])
            widths: list[int] = []
            for size in reversed(spatial):  # pad's order: the last axis first
                limit = {"reflect": size - 1, "circular": size}.get(mode, 3)
                widths += [self.int(0, min(limit, 3)), self.int(0, min(limit, 3))]
            kwargs: dict[str, Any] = {"pad": tuple(widths), "mode": mode}
            if mode == "constant":
                kwargs["value"] = self.choice([0.0, 1.5])
            padded = tuple(size + widths[-2 - 2 * i] + widths[-1 - 2 * i]
                           for i, size in enumerate(spatial))
            self.one("conv", (x,), {"fn": which, "kwargs": kwargs},
                     [(batch, channels) + padded], max(self.mag[x], 1.5))

    def step_recurrent(self) -> None:
        """One recurrent layer (``rnn_layer`` with tanh, ``gru_layer``, ``lstm_layer``) in
        either direction over a value fitted to ``(T, B, I)``, with or without a first state
        and biases: its output ``(T, B, H)``, or the LSTM's final cell state ``(B, H)``."""
        kind = self.choice(["rnn", "gru", "lstm"])
        steps, batch, features, size = (self.int(1, 3), self.int(1, 2), self.int(1, 3),
                                        self.int(1, 3))
        rows = {"rnn": 1, "gru": 3, "lstm": 4}[kind] * size
        x = self.pick()
        if self.mag[x] > 8:
            x = self.unary_op("tanh", x)
        ins = [self.fit(x, (steps, batch, features))]
        states = (2 if kind == "lstm" else 1) if self.chance(50) else 0
        ins += [self.fit(self.pick(), (batch, size)) for _ in range(states)]
        ins += [self.fit(self.pick(), (rows, features)), self.fit(self.pick(), (rows, size))]
        biases = self.chance(60)
        if biases:
            ins += [self.fit(self.pick(), (rows,)) for _ in range(2)]
        ins = ins[:1] + [i if self.mag[i] <= 8 else self.unary_op("tanh", i) for i in ins[1:]]
        cell = kind == "lstm" and self.chance(30)
        out = (batch, size) if cell else (steps, batch, size)
        self.one("recurrent", tuple(ins), {"kind": kind, "states": states, "biases": biases,
                                           "reverse": self.chance(50), "cell": cell},
                 [out], float(steps) + 1.0 if cell else 1.0)

    # ------------------------------------------------------------------ whole programs
    def build(self, protocol: str) -> Program:
        for i in range(self.int(1, 3)):
            constant = i > 0 and self.chance(20)
            self.leaf(self.draw_shape(), requires=not constant)
        steps = {"unary": self.step_unary, "binary": self.step_binary, "view": self.step_view,
                 "reduce": self.step_reduce, "softmax": self.step_softmax,
                 "matmul": self.step_matmul, "nn": self.step_nn, "join": self.step_join,
                 "where": self.step_where, "conv": self.step_conv,
                 "recurrent": self.step_recurrent}
        for _ in range(self.int(1, self.max_steps)):
            steps[self.choice(self.kinds)]()
        self.protocol(protocol)
        return Program(self.seed, self.dtype, self.leaves, self.requires, self.actions,
                       dict(self.shape), self.departure, set(self.integer))

    def protocol(self, kind: str) -> None:
        derived = [v for v in range(len(self.leaves), self.count) if self.rg[v]]
        for v in derived:
            if kind != "fd" and self.chance(25):
                self.actions.append(Action("retain", ins=(v,)))
        calls = self.int(1, 3 if kind != "simple" else 2)
        rg_values = [v for v in range(self.count) if self.rg[v]] or [self.count - 1]
        for call in range(calls):
            if kind == "mutate" and self.chance(60 if call == 0 else 35):
                self.mutate()
            if kind != "fd" and call and self.chance(25):
                leaf = self.choice(range(len(self.leaves)))
                self.actions.append(Action("grad_none", ins=(leaf,)))
            last = call == calls - 1
            out = self.count - 1 if call == 0 and self.rg[self.count - 1] or not rg_values \
                else self.choice(rg_values)
            if kind != "fd" and not self.rg[out] and not self.chance(30):
                continue
            size = math.prod(self.shape[out])
            mode = self.choice(["sum", "grad"] + (["plain"] if size == 1 else []))
            retain = (not last and (kind == "fd" or self.chance(80))) or (last and self.chance(20))
            upstream = self.rng.uniform(-1.5, 1.5, size=self.shape[out]) if mode == "grad" \
                else None
            if upstream is not None:
                upstream = np.asarray(upstream.astype(np.float32).astype(np.float64))
            self.actions.append(Action("backward", ins=(out,),
                                       params={"mode": mode, "retain_graph": retain,
                                               "upstream": upstream}))
        if kind == "mutate" and self.chance(30):
            self.mutate()

    def mutate(self) -> None:
        targets = [v for v in range(self.count) if v not in self.readonly
                   and v not in self.integer and self.group[v] not in self.ambiguous]
        leaves = [v for v in targets if v < len(self.leaves)]
        if not targets:
            return
        v = self.choice(leaves if leaves and self.chance(50) else targets)
        how = self.choice(["add_", "mul_", "fill_", "copy_", "zero_"])
        arg: Any = None
        if how == "add_":
            arg = self.choice([0.5, -1.25]) if self.chance(50) else \
                np.asarray(self.values(self.shape[v]))
        elif how == "mul_":
            arg = self.choice([2.0, -0.5, 0.0])
        elif how == "fill_":
            arg = self.choice([0.0, 1.5])
        elif how == "copy_":
            arg = self.values(self.shape[v])
        leaf = v < len(self.leaves)
        no_grad = not leaf or not self.requires[v] or self.chance(90)
        self.actions.append(Action("mutate", ins=(v,), params={
            "how": how, "arg": arg, "through": "leaf" if leaf else "detach",
            "no_grad": no_grad}))
        self.mag[v] = max(self.mag[v], 2.0) * 2


# ============================================================================ execution
class TensorlibLib:
    name = "tensorlib"

    def __init__(self, dtype: str):
        self.dtype = np.dtype(dtype)

    def leaf(self, array: np.ndarray, requires: bool) -> Any:
        return tl.Tensor(array.astype(self.dtype), requires_grad=requires)

    def array(self, a: np.ndarray) -> Any:
        return a.astype(self.dtype)

    def no_grad(self) -> Any:
        return tl.no_grad()

    def numpy(self, t: Any) -> np.ndarray:
        return np.array(t.data, copy=True)

    def grad(self, t: Any) -> np.ndarray | None:
        return None if t.grad is None else np.array(t.grad, copy=True)

    def dtype_of(self, t: Any) -> str:
        return np.dtype(t.dtype).name

    def set_grad_none(self, t: Any) -> None:
        t.grad = None

    def is_leaf(self, t: Any) -> bool:
        return t.grad_fn is None

    def run(self, a: Action, xs: list[Any]) -> Any:
        p = a.params
        op = a.op
        if op == "unary":
            return _unary(xs[0], p, torch_f=None)
        if op == "posabs":
            return xs[0].abs() + 0.5
        if op == "binary":
            return _binary(xs, p, maximum=tl.maximum)
        if op == "where":
            a_, b_ = _where_operands(xs, p)
            return tl.where(p["mask"], a_, b_)
        if op == "masked_fill":
            return xs[0].masked_fill(p["mask"], p["value"])
        if op == "reshape":
            return xs[0].reshape(p["shape"])
        if op == "unsqueeze":
            return xs[0].unsqueeze(p["axis"])
        if op == "expand":
            return xs[0].expand(*p["shape"])
        if op == "permute":
            return xs[0].permute(*p["order"])
        if op == "transpose":
            return xs[0].transpose(*p["axes"])
        if op == "T":
            return xs[0].T
        if op == "squeeze":
            return xs[0].squeeze(p["axis"])
        if op in ("slice", "index"):
            return xs[0][p["index"]]
        if op == "reduce":
            x, how = xs[0], p["how"]
            if how in ("var", "std"):
                correction = {} if p["correction"] is None else {"correction": p["correction"]}
                return getattr(x, how)(p["axis"], keepdim=p["keepdims"], **correction)
            how = {"max": "amax", "min": "amin"}.get(how, how)  # over a tuple of dims too
            return getattr(x, how)(p["axis"], keepdim=p["keepdims"])
        if op == "max_dim":  # (values, indices), in tensorlib and torch alike
            return getattr(xs[0], p["how"])(p["axis"], keepdim=p["keepdims"])
        if op == "softmax":
            fn = F.log_softmax if p["log"] else F.softmax
            return fn(xs[0], p["axis"])
        if op == "matmul":
            return xs[0] @ xs[1]
        if op == "linear":
            return F.linear(*xs)
        if op == "layer_norm":
            w, b = _norm_params(xs, p)
            return F.layer_norm(xs[0], xs[0].shape[-1:], w, b, eps=p["eps"])
        if op == "rms_norm":
            w, _ = _norm_params(xs, p)
            return F.rms_norm(xs[0], xs[0].shape[-1:], w, eps=p["eps"])
        if op == "cross_entropy":
            return F.cross_entropy(xs[0], p["targets"], reduction=p["reduction"],
                                   label_smoothing=p["label_smoothing"])
        if op == "conv":
            return getattr(F, p["fn"])(*xs, **p["kwargs"])
        if op == "recurrent":
            x, states, weights = _recurrent_operands(xs, p)
            if p["kind"] == "lstm":
                output, (_, cell) = F.lstm_layer(x, states or None, *weights,
                                                 reverse=p["reverse"])
                return cell if p["cell"] else output
            layer = F.gru_layer if p["kind"] == "gru" else F.rnn_layer
            return layer(x, states[0] if states else None, *weights, reverse=p["reverse"])[0]
        if op == "concat":
            return tl.cat(xs, dim=p["axis"])
        if op == "stack":
            return tl.stack(xs, dim=p["axis"])
        if op == "split":
            return tl.split(xs[0], p["sizes"], dim=p["axis"])
        raise AssertionError(op)

    def backward(self, t: Any, p: dict[str, Any]) -> None:
        if p["mode"] == "sum":
            t.sum().backward(retain_graph=p["retain_graph"])
        elif p["mode"] == "grad":
            t.backward(p["upstream"].astype(self.dtype), retain_graph=p["retain_graph"])
        else:
            t.backward(retain_graph=p["retain_graph"])


class TorchLib(TensorlibLib):
    name = "torch"

    def __init__(self, dtype: str):
        super().__init__(dtype)
        import torch

        self.torch = torch
        self.tdtype = getattr(torch, dtype)
        self.F = torch.nn.functional

    def leaf(self, array: np.ndarray, requires: bool) -> Any:
        return self.torch.tensor(array.astype(self.dtype).copy(), requires_grad=requires)

    def array(self, a: np.ndarray) -> Any:
        return self.torch.tensor(a.astype(self.dtype).copy())

    def no_grad(self) -> Any:
        return self.torch.no_grad()

    def numpy(self, t: Any) -> np.ndarray:
        return t.detach().numpy().copy()

    def grad(self, t: Any) -> np.ndarray | None:
        return None if t.grad is None else t.grad.detach().numpy().copy()

    def dtype_of(self, t: Any) -> str:
        return str(t.dtype).removeprefix("torch.")

    def is_leaf(self, t: Any) -> bool:
        return t.grad_fn is None

    def run(self, a: Action, xs: list[Any]) -> Any:
        torch, tF = self.torch, self.F
        p, op = a.params, a.op
        if op == "unary":
            return _unary(xs[0], p, torch_f=tF)
        if op == "binary":
            return _binary(xs, p, maximum=torch.maximum)
        if op == "where":
            a_, b_ = _where_operands(xs, p)
            return torch.where(torch.from_numpy(p["mask"]), a_, b_)
        if op == "masked_fill":
            return xs[0].masked_fill(torch.from_numpy(p["mask"]), p["value"])
        if op == "T":
            return xs[0].permute(*reversed(range(xs[0].ndim)))
        if op == "expand":
            return xs[0].expand(p["shape"])
        if op == "squeeze":
            return xs[0].squeeze() if p["axis"] is None else xs[0].squeeze(p["axis"])
        if op == "slice":
            return self.basic_slice(xs[0], p["index"])
        if op == "index":
            index = tuple(torch.from_numpy(i) if isinstance(i, np.ndarray) else i
                          for i in p["index"])
            return xs[0][index]
        if op == "reduce":
            return self.reduce(xs[0], p)
        if op == "softmax":
            return (tF.log_softmax if p["log"] else tF.softmax)(xs[0], dim=p["axis"])
        if op == "linear":
            return tF.linear(*xs)
        if op == "layer_norm":
            w, b = _norm_params(xs, p)
            return tF.layer_norm(xs[0], (xs[0].shape[-1],), w, b, eps=p["eps"])
        if op == "rms_norm":
            w, _ = _norm_params(xs, p)
            return tF.rms_norm(xs[0], (xs[0].shape[-1],), w, eps=p["eps"])
        if op == "cross_entropy":
            logits = xs[0] if xs[0].ndim <= 2 else xs[0].movedim(-1, 1)
            return tF.cross_entropy(logits, torch.from_numpy(p["targets"]),
                                    reduction=p["reduction"],
                                    label_smoothing=p["label_smoothing"])
        if op == "conv":
            return getattr(tF, p["fn"])(*xs, **p["kwargs"])
        if op == "recurrent":  # torch's own layer (torch._VF), the reverse direction by flips
            x, states, weights = _recurrent_operands(xs, p)
            if p["reverse"]:
                x = x.flip(0)
            if not states:
                zeros = torch.zeros(x.shape[1], weights[1].shape[1], dtype=x.dtype)
                states = (zeros, zeros) if p["kind"] == "lstm" else (zeros,)
            run = {"rnn": torch._VF.rnn_tanh, "gru": torch._VF.gru, "lstm": torch._VF.lstm}
            arguments = (list(weights), p["biases"], 1, 0.0, False, False, False)
            if p["kind"] == "lstm":
                output, _, cell = run["lstm"](x, tuple(s[None] for s in states), *arguments)
                if p["cell"]:
                    return cell[0]
            else:
                output, _ = run[p["kind"]](x, states[0][None], *arguments)
            return output.flip(0) if p["reverse"] else output
        if op == "concat":
            return torch.cat(xs, dim=p["axis"])
        if op == "stack":
            return torch.stack(xs, dim=p["axis"])
        if op == "split":
            return torch.split(xs[0], p["sizes"], dim=p["axis"])
        return super().run(a, xs)  # methods with the same names and arguments

    def basic_slice(self, x: Any, index: tuple[slice, ...]) -> Any:
        """numpy slicing; torch has no negative steps, so those axes take an index_select."""
        positive = tuple(s if (s.step or 1) > 0 else slice(None) for s in index)
        out = x[positive]
        for axis, s in enumerate(index):
            if (s.step or 1) < 0:
                picks = list(range(*s.indices(x.shape[axis])))
                out = out.index_select(axis, self.torch.tensor(picks, dtype=self.torch.long))
        return out

    def reduce(self, x: Any, p: dict[str, Any]) -> Any:
        torch, axis, keep = self.torch, p["axis"], p["keepdims"]
        dims = tuple(range(x.ndim)) if axis is None else (
            tuple(axis) if isinstance(axis, tuple) else (axis,))
        how = p["how"]
        if how in ("var", "std"):
            return getattr(torch, how)(x, dim=dims, correction=p["correction"], keepdim=keep)
        fn = {"sum": torch.sum, "mean": torch.mean, "max": torch.amax, "min": torch.amin,
              "logsumexp": torch.logsumexp}[how]
        return fn(x, dim=dims, keepdim=keep)

    def backward(self, t: Any, p: dict[str, Any]) -> None:
        if p["mode"] == "grad":
            t.backward(self.array(p["upstream"]), retain_graph=p["retain_graph"])
        else:
            super().backward(t, p)

    def unshare_grads(self, tensors: list[Any]) -> None:
        """torch may hand two leaves views of one gradient buffer (``stack(...).sum()``
        gives a stride-0 gradient that AccumulateGrad keeps as it is); a later backward then
        adds in place into both. Each ``.grad`` is cloned after every backward, as the
        gradients of separate leaves are meant to be."""
        for t in tensors:
            if t.grad is not None:
                t.grad = t.grad.clone()


def _unary(x: Any, p: dict[str, Any], torch_f: Any) -> Any:
    fn = p["fn"]
    if fn == "pow":
        return x ** p["p"]
    if fn == "neg":
        return -x
    if torch_f is None:  # tensorlib
        if fn == "gelu_tanh":
            return x.gelu(approximate="tanh")
        if fn == "softplus":
            return x.softplus(beta=p["beta"], threshold=p["threshold"])
        if fn == "leaky_relu":
            return x.leaky_relu(p["slope"])
        return getattr(x, fn)()
    if fn in ("gelu", "silu"):
        return getattr(torch_f, fn)(x)
    if fn == "gelu_tanh":
        return torch_f.gelu(x, approximate="tanh")
    if fn == "softplus":
        return torch_f.softplus(x, beta=p["beta"], threshold=p["threshold"])
    if fn == "leaky_relu":
        return torch_f.leaky_relu(x, p["slope"])
    return getattr(x, fn)()


def _binary(xs: list[Any], p: dict[str, Any], maximum: Any) -> Any:
    form = p["form"]
    a, b = (xs[0], xs[1]) if form == "tt" else (xs[0], p["s"]) if form == "ts" \
        else (p["s"], xs[0])
    op = p["op"]
    if op == "add":
        return a + b
    if op == "sub":
        return a - b
    if op == "mul":
        return a * b
    if op == "div":
        return a / b
    return maximum(a, b)


def _where_operands(xs: list[Any], p: dict[str, Any]) -> tuple[Any, Any]:
    form = p["form"]
    if form == "tt":
        return xs[0], xs[1]
    return (xs[0], p["s"]) if form == "ts" else (p["s"], xs[0])


def _recurrent_operands(xs: list[Any], p: dict[str, Any]) -> tuple[Any, tuple, tuple]:
    """``(x, first states, weights)`` of a recurrent step: the weights W_ih, W_hh and, with
    biases, b_ih and b_hh (without, None twice for tensorlib; torch takes the two)."""
    states = tuple(xs[1:1 + p["states"]])
    weights = tuple(xs[1 + p["states"]:])
    return xs[0], states, weights


def _norm_params(xs: list[Any], p: dict[str, Any]) -> tuple[Any, Any]:
    rest = list(xs[1:])
    w = rest.pop(0) if p["weight"] else None
    b = rest.pop(0) if p["bias"] else None
    return w, b


@dataclass
class Record:
    """What one run of a program showed."""

    values: dict[int, np.ndarray] = field(default_factory=dict)
    dtypes: dict[int, str] = field(default_factory=dict)
    grads: dict[int, dict[str, np.ndarray | None]] = field(default_factory=dict)
    raised: tuple[int, str, str] | None = None  # (action index, class, message)
    split_counts: dict[int, int] = field(default_factory=dict)


def execute(program: Program, lib: TensorlibLib, skip_mutations: bool = False,
            leaves: list[np.ndarray] | None = None, forward_only: bool = False) -> Record:
    record = Record()
    vals: dict[int, Any] = {}
    leaves = program.leaves if leaves is None else leaves
    for i, (array, requires) in enumerate(zip(leaves, program.requires, strict=True)):
        vals[i] = lib.leaf(array, requires)
    retained: list[int] = []
    with warnings.catch_warnings():
        if lib.name == "torch":
            warnings.simplefilter("ignore")
        for n, a in enumerate(program.actions):
            if (a.kind == "mutate" and skip_mutations) or (a.kind != "op" and forward_only):
                continue
            try:
                if a.kind == "op":
                    out = lib.run(a, [vals[i] for i in a.ins])
                    outs = list(out) if isinstance(out, tuple) else [out]
                    if a.op == "split":
                        record.split_counts[n] = len(outs)
                    for v, t in zip(a.outs, outs, strict=False):
                        vals[v] = t
                elif a.kind == "retain":
                    vals[a.ins[0]].retain_grad()
                    retained.append(a.ins[0])
                elif a.kind == "grad_none":
                    lib.set_grad_none(vals[a.ins[0]])
                elif a.kind == "mutate":
                    _mutate(lib, vals[a.ins[0]], a.params)
                    if isinstance(lib, TorchLib):
                        # torch gives a view whose base changed in place a new grad_fn, which
                        # the graph built before does not reach: its retained .grad stays
                        # None. tensorlib's is the gradient that flowed through the view, so
                        # such a view's retained gradient is not compared.
                        retained = [v for v in retained if vals[v]._base is None]
                elif a.kind == "backward":
                    lib.backward(vals[a.ins[0]], a.params)
                    if isinstance(lib, TorchLib):
                        lib.unshare_grads([vals[i] for i in range(len(leaves))]
                                          + [vals[v] for v in retained])
                    record.grads[n] = {
                        **{f"v{i}.grad": lib.grad(vals[i]) for i in range(len(leaves))},
                        **{f"v{v}.grad (retained)": lib.grad(vals[v]) for v in retained}}
            except Exception as error:  # noqa: BLE001 - which call raises is compared
                record.raised = (n, type(error).__name__, str(error)[:300])
                break
    for v, t in vals.items():
        record.values[v] = lib.numpy(t)
        record.dtypes[v] = lib.dtype_of(t)
    return record


def _mutate(lib: TensorlibLib, t: Any, p: dict[str, Any]) -> None:
    target = t if p["through"] == "leaf" else t.detach()
    arg = p["arg"]
    if isinstance(arg, np.ndarray):
        arg = lib.array(arg)
    with lib.no_grad() if p["no_grad"] else contextlib.nullcontext():
        how = p["how"]
        if how in ("add_", "mul_", "fill_", "copy_"):
            getattr(target, how)(arg)
        else:
            target.zero_()


# ============================================================================ comparison
@dataclass
class Tolerance:
    rtol: float
    atol: float


F64 = Tolerance(1e-9, 1e-12)
F32 = Tolerance(1e-4, 1e-5)


def _scales(program: Program, ref: Record) -> dict[int, float]:
    """Per value: 1 or more, the largest |entry| of it and of every value it came from."""
    scale: dict[int, float] = {}

    def peak(v: int) -> float:
        a = ref.values.get(v)
        if a is None or a.size == 0:
            return 0.0
        finite = np.abs(a[np.isfinite(a)])
        return float(finite.max()) if finite.size else 0.0

    for i in range(len(program.leaves)):
        scale[i] = max(1.0, peak(i))
    for a in program.actions:
        if a.kind != "op":
            continue
        base = max([scale.get(i, 1.0) for i in a.ins] + [1.0])
        for v in a.outs:
            scale[v] = max(base, peak(v))
    return scale


def _close(ours: np.ndarray, ref: np.ndarray, tol: Tolerance, scale: float,
           slack: np.ndarray | None = None) -> str | None:
    if ours.shape != ref.shape:
        return f"shape {ours.shape} != {ref.shape}"
    if ours.size == 0:
        return None
    ours64, ref64 = ours.astype(np.float64), ref.astype(np.float64)
    if not np.array_equal(np.isnan(ours64), np.isnan(ref64)):
        return f"nan pattern differs: ours {_short(ours)} reference {_short(ref)}"
    inf = np.isinf(ref64) | np.isinf(ours64)
    if not np.array_equal(ours64[inf], ref64[inf]):
        return f"infinities differ: ours {_short(ours)} reference {_short(ref)}"
    finite = np.isfinite(ref64) & np.isfinite(ours64)
    error = np.abs(ours64[finite] - ref64[finite])
    allowed = tol.rtol * np.abs(ref64[finite]) + tol.atol * scale
    if slack is not None and slack.shape == ref.shape:
        allowed = allowed + np.nan_to_num(slack[finite], nan=0.0, posinf=0.0)
    if np.all(error <= allowed):
        return None
    worst = int(np.argmax(error - allowed))
    return (f"max excess at flat {worst}: ours {ours64[finite][worst]!r} reference "
            f"{ref64[finite][worst]!r} (abs error {error[worst]:.3g} > allowed "
            f"{allowed[worst]:.3g}, scale {scale:.3g})\n      ours {_short(ours)}\n"
            f"      reference {_short(ref)}")


def compare(program: Program, ours: Record, ref: Record, tol: Tolerance, ours_name: str,
            ref_name: str, snapshot: Record | None = None, dtypes: bool = True,
            grads: bool = True, gauge: Record | None = None,
            snapshot_gauge: Record | None = None) -> list[str]:
    """Everything in which ``ours`` disagrees with ``ref``, as readable lines.

    ``gauge``, for float32: the same program run in float64 by the reference's library;
    each entry may then also differ by 8 times the reference's own float32 rounding error
    there, |ref - gauge| (an ill-conditioned step, such as layer_norm of a nearly constant
    row, amplifies rounding far beyond the magnitudes involved). ``snapshot_gauge`` is the
    same for ``snapshot``, the reference run without the in-place changes."""
    problems: list[str] = []
    stop = len(program.actions)
    if ours.raised != ref.raised and (ours.raised is None or ref.raised is None
                                      or ours.raised[0] != ref.raised[0]):
        o = ours.raised[0] if ours.raised else stop
        r = ref.raised[0] if ref.raised else stop
        if r < o:  # the reference raised first
            action = program.actions[r]
            if snapshot is not None and action.kind == "backward" and r in ours.grads and \
                    (snapshot.raised is None or snapshot.raised[0] > r):
                # tensorlib answered where torch refused: only the values the forward pass
                # really used may have made that answer
                problems += _compare_grads(program, ours.grads[r], snapshot.grads[r], tol,
                                           ours_name, f"{ref_name} without the in-place "
                                           "changes", _grad_scale(snapshot), r,
                                           snapshot_gauge.grads.get(r) if snapshot_gauge
                                           else None)
            else:
                problems.append(f"[{r}] {ref_name} raises {ref.raised[1]}: {ref.raised[2]}\n"
                                f"    but {ours_name} does not raise there")
        else:
            departure = program.departure.get(o)
            if ours.raised[2].find("a second time") >= 0 and program.actions[o].kind == \
                    "backward":
                departure = "freed-graph"
            if "saved by 'div'" in ours.raised[2] and any(
                    a.op == "binary" and a.params.get("op") == "div"
                    and a.params.get("form") == "st" for a in program.actions):
                departure = "scalar-over-tensor"
            elif "was changed in place after the forward pass" in ours.raised[2] and \
                    "(input" in ours.raised[2]:
                departure = "saved-view-changed"
            elif "_layer' for backward (its output) was changed in place" in ours.raised[2]:
                departure = "recurrent-output-changed"
            if departure is None:
                problems.append(f"[{o}] {ours_name} raises {ours.raised[1]}: {ours.raised[2]}\n"
                                f"    but {ref_name} does not raise there")
        stop = min(o, r)
    elif ours.raised is not None:
        stop = ours.raised[0]
    scales = _scales(program, ref)
    if stop < len(program.actions) and any(a.kind == "mutate" for a in program.actions[stop:]):
        ours_values, ref_values = {}, {}  # one run went on changing values in place
    else:
        ours_values, ref_values = ours.values, ref.values
    for n, a in enumerate(program.actions[:stop]):
        if a.kind == "op" and a.op == "split" and ours.split_counts.get(n) != \
                ref.split_counts.get(n):
            problems.append(f"[{n}] split gives {ours.split_counts.get(n)} pieces in "
                            f"{ours_name}, {ref.split_counts.get(n)} in {ref_name}")
    for v in sorted(set(ours_values) & set(ref_values)):
        if dtypes and ours.dtypes[v] != ref.dtypes[v]:
            problems.append(f"v{v}: dtype {ours.dtypes[v]} in {ours_name}, {ref.dtypes[v]} "
                            f"in {ref_name}")
        problem = _close(ours.values[v], ref.values[v], tol, scales.get(v, 1.0),
                         _slack(ref.values[v], gauge.values.get(v) if gauge else None))
        if problem:
            problems.append(f"v{v} (final value): {problem}")
    if grads:
        scale = _grad_scale(ref)
        for n in sorted(set(ours.grads) & set(ref.grads)):
            if n < stop:
                problems += _compare_grads(program, ours.grads[n], ref.grads[n], tol,
                                           ours_name, ref_name, scale, n,
                                           gauge.grads.get(n) if gauge else None)
    return problems


def _slack(ref: np.ndarray | None, gauge: np.ndarray | None) -> np.ndarray | None:
    if ref is None or gauge is None or gauge.shape != ref.shape:
        return None
    with np.errstate(invalid="ignore"):  # inf - inf: nan, no slack (infinities match exactly)
        return 8.0 * np.abs(ref.astype(np.float64) - gauge.astype(np.float64))


def _grad_scale(record: Record) -> float:
    peaks = [1.0]
    for array in list(record.values.values()) + [g for grads in record.grads.values()
                                                  for g in grads.values() if g is not None]:
        finite = np.abs(array[np.isfinite(array)]) if array.size else np.zeros(0)
        if finite.size:
            peaks.append(float(finite.max()))
    return max(peaks)


def _compare_grads(program: Program, ours: dict[str, Any], ref: dict[str, Any],
                   tol: Tolerance, ours_name: str, ref_name: str, scale: float,
                   n: int, gauge: dict[str, Any] | None = None) -> list[str]:
    problems = []
    for key in ref:
        mine, theirs = ours.get(key), ref[key]
        if (mine is None) != (theirs is None):
            problems.append(f"after [{n}] {key}: {ours_name} {_short(mine)}, {ref_name} "
                            f"{_short(theirs)}")
        elif mine is not None:
            problem = _close(mine, theirs, tol, scale,
                             _slack(theirs, gauge.get(key) if gauge else None))
            if problem:
                problems.append(f"after [{n}] {key}: {problem}")
    return problems


def _fail(program: Program, problems: list[str], extra: str = "") -> None:
    if problems:
        raise AssertionError("\n".join([program.listing(), extra, "disagreements:"]
                                       + [f"  - {p}" for p in problems[:12]]))


def _tolerance(dtype: str) -> Tolerance:
    return F64 if dtype == "float64" else F32


def _torch_or_skip() -> Any:
    return pytest.importorskip("torch")


# ============================================================================ the tests
@_settings(TORCH_EXAMPLES)
@given(data=st.data(), dtype=st.sampled_from(["float64", "float32"]))
def test_programs_match_torch(data: Any, dtype: str) -> None:
    """Random programs with simple protocols: values, dtypes, gradients and raises."""
    _torch_or_skip()
    program = Builder(data, dtype, smooth=False, mutations=False).build("simple")
    _check_against_torch(program)


@_settings(TORCH_EXAMPLES)
@given(data=st.data(), dtype=st.sampled_from(["float64", "float32"]))
def test_in_place_changes_and_backward_protocols_match_torch(data: Any, dtype: str) -> None:
    """Programs with in-place changes, retained gradients, several backward passes."""
    _torch_or_skip()
    program = Builder(data, dtype, smooth=False, mutations=True).build("mutate")
    _check_against_torch(program)


def _check_against_torch(program: Program) -> None:
    ours = execute(program, TensorlibLib(program.dtype))
    theirs = execute(program, TorchLib(program.dtype))
    snapshot = None
    if theirs.raised is not None and any(a.kind == "mutate" for a in program.actions):
        snapshot = execute(program, TorchLib(program.dtype), skip_mutations=True)
    gauge = snapshot_gauge = None
    if program.dtype == "float32":  # torch's own float32 rounding error, for the tolerance
        gauge = execute(program, TorchLib("float64"))
        if snapshot is not None:
            snapshot_gauge = execute(program, TorchLib("float64"), skip_mutations=True)
    problems = compare(program, ours, theirs, _tolerance(program.dtype), "tensorlib", "torch",
                       snapshot=snapshot, gauge=gauge, snapshot_gauge=snapshot_gauge)
    raised = f"tensorlib raised {ours.raised}\ntorch raised {theirs.raised}"
    _fail(program, problems, raised)


def _perturbed(program: Program) -> Record:
    """The float64 reference run on leaves moved by about one float32 rounding (2^-24
    relative, random signs): a gauge of how much float32 rounding this program amplifies."""
    rng = np.random.default_rng([program.seed, 2])
    leaves = [leaf * (1.0 + rng.choice([-1.0, 1.0], leaf.shape) * 2.0**-24)
              for leaf in program.leaves]
    with tl.reference_mode():
        return execute(program, TensorlibLib("float64"), leaves=leaves)


@_settings(SELF_EXAMPLES)
@given(data=st.data())
def test_programs_match_float64_reference_mode(data: Any) -> None:
    """No torch needed: kernels (float64 and float32) against the float64 reference mode."""
    _check_against_reference_mode(Builder(data, "float64", smooth=False,
                                          mutations=False).build("simple"))


def _check_against_reference_mode(program: Program) -> None:
    with tl.reference_mode():
        reference = execute(program, TensorlibLib("float64"))
    kernels64 = execute(program, TensorlibLib("float64"))
    problems = compare(program, kernels64, reference, F64, "kernels float64",
                       "reference mode float64")
    _fail(program, problems)
    kernels32 = execute(program, TensorlibLib("float32"))
    problems = compare(program, kernels32, reference, F32, "kernels float32",
                       "reference mode float64", dtypes=False, grads=False,
                       gauge=_perturbed(program))
    if kernels32.raised is None:
        expected = {v: "int64" if v in program.integer else "float32" for v in kernels32.dtypes}
        problems += [f"v{v}: dtype {d}, expected {expected[v]}"
                     for v, d in kernels32.dtypes.items() if d != expected[v]]
    _fail(program, problems)


@_settings(SELF_EXAMPLES)
@given(data=st.data())
def test_program_gradients_match_finite_differences(data: Any) -> None:
    """No torch needed: accumulated gradients of smooth float64 programs against central
    differences of the summed projections Σ_k <w_k, out_k>."""
    _check_finite_differences(Builder(data, "float64", smooth=True, mutations=False).build("fd"))


def _check_finite_differences(program: Program) -> None:
    record = execute(program, TensorlibLib("float64"))
    assert record.raised is None, program.listing() + f"\nraised {record.raised}"
    backward = [(n, a) for n, a in enumerate(program.actions) if a.kind == "backward"]
    if not backward:
        return
    grads = record.grads[backward[-1][0]]
    wanted = [i for i, r in enumerate(program.requires) if r]

    def projection(leaves: list[np.ndarray]) -> float:
        with tl.no_grad():
            rec = execute(program, TensorlibLib("float64"), leaves=leaves, forward_only=True)
        total = 0.0
        for _, a in backward:
            out = rec.values[a.ins[0]]
            weights = a.params["upstream"] if a.params["mode"] == "grad" else 1.0
            total += float(np.sum(out * weights))
        return total

    size = sum(program.leaves[i].size for i in wanted)
    rng = np.random.default_rng(program.seed)
    if len(backward) == 1 and 0 < size <= 12:
        _gradcheck_single(program, backward[0][1])
        return
    analytic_total = 0.0
    for direction in range(2):
        steps = {i: rng.uniform(-1.0, 1.0, program.leaves[i].shape) for i in wanted}
        h = 1e-6

        def moved(sign: float, steps: dict[int, np.ndarray] = steps,
                  h: float = h) -> list[np.ndarray]:
            return [leaf + sign * h * steps[i] if i in steps else leaf
                    for i, leaf in enumerate(program.leaves)]

        numeric = (projection(moved(1.0)) - projection(moved(-1.0))) / (2 * h)
        analytic = sum(float(np.sum(grads[f"v{i}.grad"] * steps[i])) for i in wanted
                       if grads[f"v{i}.grad"] is not None)
        analytic_total = max(analytic_total, abs(analytic))
        value = abs(projection(program.leaves)) + 1.0
        assert abs(analytic - numeric) <= 1e-4 * abs(numeric) + 1e-6 * value, (
            f"{program.listing()}\ndirection {direction}: analytic directional derivative "
            f"{analytic!r}, central difference {numeric!r}")


# ------------------------------------------------ the recurrent layers (notebook 12d, issue 56)
@_settings(RECURRENT_EXAMPLES)
@given(data=st.data(), dtype=st.sampled_from(["float64", "float32"]),
       protocol=st.sampled_from(["simple", "mutate"]))
def test_recurrent_programs_match_torch(data: Any, dtype: str, protocol: str) -> None:
    """Programs with recurrent layers among the other ops, against torch's own layers."""
    _torch_or_skip()
    _check_against_torch(Builder(data, dtype, smooth=False, mutations=protocol == "mutate",
                                 kinds=RECURRENT_KINDS).build(protocol))


@_settings(RECURRENT_EXAMPLES // 2)
@given(data=st.data())
def test_recurrent_programs_match_reference_mode_and_finite_differences(data: Any) -> None:
    """No torch needed: the recurrent kernels against reference mode, and gradients of smooth
    programs with recurrent layers against central differences."""
    _check_against_reference_mode(Builder(data, "float64", smooth=False, mutations=False,
                                          kinds=RECURRENT_KINDS).build("simple"))
    _check_finite_differences(Builder(data, "float64", smooth=True, mutations=False,
                                      kinds=RECURRENT_KINDS).build("fd"))


def _gradcheck_single(program: Program, action: Action) -> None:
    """``tensorlib.engine.gradcheck`` of a one-backward program (its own projection weights)."""
    forward = Program(program.seed, program.dtype, program.leaves, program.requires,
                      [a for a in program.actions if a.kind == "op"], program.shapes)

    def fn(*leaves: Any) -> Any:
        vals: dict[int, Any] = dict(enumerate(leaves))
        lib = TensorlibLib("float64")
        for a in forward.actions:
            out = lib.run(a, [vals[i] for i in a.ins])
            for v, t in zip(a.outs, out if isinstance(out, tuple) else [out], strict=False):
                vals[v] = t
        return vals[action.ins[0]]

    inputs = [tl.Tensor(leaf.copy(), requires_grad=r)
              for leaf, r in zip(program.leaves, program.requires, strict=True)]
    try:
        tl.gradcheck(fn, *inputs, eps=1e-6, atol=1e-6, rtol=1e-4)
    except tl.GradcheckError as error:
        raise AssertionError(f"{program.listing()}\n{error}") from None
