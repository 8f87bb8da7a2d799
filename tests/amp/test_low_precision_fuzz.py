"""Differential fuzzing of float16/bfloat16 programs, autocast and GradScaler.

Programs: hypothesis draws a seed, a numpy generator seeded by it the rest (as in
tests/contracts/test_differential.py). 1-4 leaves, shapes suffixes of one base shape (0-3 axes,
sizes 1-4, some 1), values uniform in [-2, 2]; 1-5 smooth ops: + - * (broadcasting), / by
``sigmoid(b) + 0.5``, exp, tanh, sigmoid, gelu, silu, softmax and log_softmax, layer_norm and
rms_norm (eps in [0.25, 1], weights optional), sum and mean over a dim, matmul (by a weight or
by the value's transpose), linear, reshape, transpose; weights are further leaves. No tie or
kink (max, relu, comparisons); a value goes through tanh first where exp, a product or a sum
could take it past 16 (float16 never overflows). Then ``(y * w).sum()``, ``w`` a random
upstream in y's dtype, and backward. "cast": the leaves converted to the low dtype;
"autocast": float32 leaves, the program inside ``autocast("cpu", dtype=low)``.

Oracles: (1) PyTorch (``*_torch``, skipped without it), on the same values: every value's and
leaf gradient's dtype equal, values within twice the bound. (2) tensorlib's float64 run on the
same (already rounded) leaves: values and gradients within the bound; dtypes as PyTorch's
rules give (``promote_types``, a 0-d operand yielding to one with axes; under autocast matmul
and linear in the low dtype, every other op in its inputs'), each gradient in its leaf's.
(3) ``tl.reference_mode()``, not bit for bit: an op whose inputs agree gives the same bits,
except an op with a kernel (float32 code that differs in the last bits; GELU's is a fitted
approximation), whose output may round the other way, one step of its dtype's spacing; what
follows carries that, within twice the bound. (4) GradScaler: random sequences of finite and
non-finite gradients, against ``torch.amp.GradScaler("cpu")`` and the rule written out here.

Tolerance, |ours - reference| <= SLACK * bound, one bound per value: a running first-order
error analysis in the max-norm, from the float64 values. Each op adds its inputs' errors times
its Lipschitz constant there (mul: |b| e_a + |a| e_b; matmul: k times that; layer_norm:
|w| (2 + 2|x̂|) e_x / σ; softmax: 2 |p| e_x; ...) and 2 roundings, u each, of the magnitude it
computes at: u = 2**-8 (bfloat16), 2**-11 (float16), 2**-20 (float32: tensorlib's kernels are
within 4 ulps) for the narrowest dtype it touches, plus float16's subnormal spacing. Gradients
go back the same way: bounds on their magnitude (no cancellation assumed) and error, from the
upstream's error, the errors of what the backward reads, and 3 roundings (product, reduction,
accumulation). It holds for any order of the float32 work inside an op, PyTorch's kernels too;
SLACK = 2 covers the second-order terms it drops. Over 20000 programs each, differences reach
0.6 of the bound against float64 (SLACK allows 2), 1.0 against PyTorch (4 allowed).
"""

from __future__ import annotations

import contextlib
import math
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tensorlib as tl
from tensorlib.amp import GradScaler
from tensorlib.engine.dtypes import promote_types
from tensorlib.optim import SGD

FUZZ_SCALE = max(1, int(os.environ.get("FUZZ_SCALE", "1")))
SELF_EXAMPLES, TORCH_EXAMPLES, SCALER_EXAMPLES = 120, 200, 60
LOW = {"bfloat16": tl.bfloat16, "float16": tl.float16}
UNIT = {"bfloat16": 2.0 ** -8, "float16": 2.0 ** -11, "float32": 2.0 ** -20, "float64": 0.0}
FLOOR = {"float16": 2.0 ** -25}  # half float16's subnormal spacing: its absolute rounding
SLACK = 2.0
LOWER = {"matmul", "linear"}  # autocast's lower-precision list, among these ops
KERNEL_OPS = {"gelu", "layer_norm", "softmax", "linear", "matmul"}  # kernels/fast_ops.py
BINARY, UNARY = ("add", "sub", "mul", "div"), ("exp", "tanh", "sigmoid", "gelu", "silu")
SMOOTH = {"tanh": (1.0, None), "sigmoid": (0.25, None), "gelu": (1.13, 0.8), "silu": (1.1, 0.5)}
KINDS = ["binary"] * 4 + ["div", "unary", "unary", "softmax", "log_softmax", "layer_norm",
                          "rms_norm", "reduce", "reduce", "matmul", "linear", "reshape",
                          "transpose"]
OPS = {  # the same spelling in tensorlib and PyTorch; F is either's functional
    "add": lambda F, a, b: a + b, "sub": lambda F, a, b: a - b,
    "mul": lambda F, a, b: a * b, "div": lambda F, a, b: a / b,
    "shift": lambda F, a, c: a + c, "exp": lambda F, a: a.exp(),
    "tanh": lambda F, a: a.tanh(), "sigmoid": lambda F, a: a.sigmoid(),
    "gelu": lambda F, a: F.gelu(a), "silu": lambda F, a: F.silu(a),
    "softmax": lambda F, a, dim: F.softmax(a, dim=dim),
    "log_softmax": lambda F, a, dim: F.log_softmax(a, dim=dim),
    "layer_norm": lambda F, a, w, b, eps: F.layer_norm(a, (a.shape[-1],), w, b, eps=eps),
    "rms_norm": lambda F, a, w, eps: F.rms_norm(a, (a.shape[-1],), w, eps=eps),
    "sum": lambda F, a, dim, keepdim: a.sum(dim, keepdim=keepdim),
    "mean": lambda F, a, dim, keepdim: a.mean(dim, keepdim=keepdim),
    "matmul": lambda F, a, b: a @ b, "linear": lambda F, a, w, b: F.linear(a, w, b),
    "reshape": lambda F, a, shape: a.reshape(shape),
    "transpose": lambda F, a, dims: a.transpose(*dims),
}


def _settings(base: int) -> settings:
    return settings(derandomize=True, database=None, deadline=None,
                    max_examples=base * FUZZ_SCALE,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _peak(array: np.ndarray) -> float:
    return float(np.abs(array).max()) if array.size else 0.0


# ============================================================================ programs
@dataclass
class Step:
    op: str
    ins: tuple[int | None, ...]
    out: int
    params: dict[str, Any]


@dataclass
class Program:
    seed: int
    low: str
    mode: str  # "cast" | "autocast"
    leaves: dict[int, np.ndarray] = field(default_factory=dict)  # float32, exact in dtype
    steps: list[Step] = field(default_factory=list)
    dtype: dict[int, str] = field(default_factory=dict)  # every value's, by PyTorch's rules
    upstream: np.ndarray | None = None

    def listing(self) -> str:
        return "\n".join([f"program seed={self.seed} low={self.low} mode={self.mode}"]
                         + [f"  v{v} = leaf {self.dtype[v]} {a.tolist()}"
                            for v, a in self.leaves.items()]
                         + [f"  v{s.out} = {s.op}{tuple(s.ins)} {s.params} {self.dtype[s.out]}"
                            for s in self.steps] + [f"  upstream {self.upstream.tolist()}"])


class Builder:
    """Draws a program, running it in float64 as it goes (shapes; magnitudes to tame)."""

    def __init__(self, seed: int, low: str, mode: str):
        self.rng = np.random.default_rng(seed)
        self.p = Program(seed, low, mode)
        self.val: dict[int, Any] = {}  # float64 tensors
        self.inputs: list[int] = []  # the values ops draw from: not the weights

    def int(self, lo: int, hi: int) -> int:
        return int(self.rng.integers(lo, hi + 1))

    def chance(self, percent: int) -> bool:
        return bool(self.rng.integers(100) < percent)

    def shape(self, v: int) -> tuple[int, ...]:
        return tuple(self.val[v].shape)

    def leaf(self, shape: tuple[int, ...], lo: float = -2.0, hi: float = 2.0,
             weight: bool = False) -> int:
        v, dtype = len(self.val), self.p.low if self.p.mode == "cast" else "float32"
        value = self.rng.uniform(lo, hi, shape).astype(LOW.get(dtype, np.float32))
        self.p.leaves[v], self.p.dtype[v] = value.astype(np.float32), dtype
        self.val[v] = tl.tensor(value.astype(np.float64))
        self.inputs += [] if weight else [v]
        return v

    def op(self, name: str, *ins: int | None, **params: Any) -> int:
        v = len(self.val)
        self.p.steps.append(Step(name, ins, v, params))
        self.val[v] = OPS[name](tl.nn.functional, *[None if i is None else self.val[i]
                                                     for i in ins], **params)
        dtypes, zero_d = [self.p.dtype[ins[0]]], [self.shape(ins[0]) == ()]
        if name in BINARY:
            dtypes.append(self.p.dtype[ins[1]])
            zero_d.append(self.shape(ins[1]) == ())
        if self.p.mode == "autocast" and name in LOWER:
            self.p.dtype[v] = self.p.low
        elif len(dtypes) == 2 and zero_d[0] != zero_d[1]:  # a 0-d operand yields
            self.p.dtype[v] = dtypes[zero_d[0]]
        else:  # a norm's weights have its input's dtype
            self.p.dtype[v] = str(np.dtype(promote_types(dtypes[0], dtypes[-1])))
        self.inputs.append(v)
        return v

    def tame(self, v: int, limit: float) -> int:
        return self.op("tanh", v) if _peak(self.val[v].numpy()) > limit else v

    def build(self) -> Program:
        base = tuple(self.int(1, 4) for _ in range(self.int(0, 3)))
        for _ in range(self.int(1, 4)):
            self.leaf(tuple(1 if self.chance(25) else n for n in base[self.int(0, len(base)):]))
        for _ in range(self.int(1, 5)):
            x = self.inputs[-1] if self.chance(60) else \
                self.inputs[self.int(0, len(self.inputs) - 1)]
            self.random_op(x, KINDS[self.int(0, len(KINDS) - 1)])
        y = self.p.steps[-1].out
        upstream = self.rng.uniform(-1.0, 1.0, self.shape(y)).astype(LOW[self.p.low])
        self.p.upstream = upstream.astype(np.float32)
        return self.p

    def partner(self, x: int) -> int:
        """A value whose shape broadcasts with x's (x itself if no other does)."""
        fits = [v for v in self.inputs if all(a == b or 1 in (a, b) for a, b in zip(
            self.shape(v)[::-1], self.shape(x)[::-1], strict=False))]
        return fits[self.int(0, len(fits) - 1)]

    def random_op(self, x: int, kind: str) -> None:
        shape = self.shape(x)
        if not shape and kind not in ("binary", "div", "unary"):
            kind = "unary"
        if kind == "transpose" and len(shape) < 2:
            kind = "reshape"
        if kind == "binary":
            b = self.partner(x)
            mx, mb = _peak(self.val[x].numpy()), _peak(self.val[b].numpy())
            if max(mx * mb, mx + mb) > 16:
                x, b = self.tame(x, 1.0), self.tame(b, 1.0)
            self.op(("add", "sub", "mul")[self.int(0, 2)], *((x, b) if self.chance(50) else
                                                             (b, x)))
        elif kind == "div":  # by sigmoid(b) + 0.5, in [0.5, 1.5]
            x = self.tame(x, 8.0)
            self.op("div", x, self.op("shift", self.op("sigmoid", self.partner(x)), c=0.5))
        elif kind == "unary":
            name = UNARY[self.int(0, len(UNARY) - 1)]
            self.op(name, self.tame(x, 2.0) if name == "exp" else x)
        elif kind in ("softmax", "log_softmax"):
            self.op(kind, self.tame(x, 8.0), dim=self.int(-len(shape), len(shape) - 1))
        elif kind in ("layer_norm", "rms_norm"):
            # a low-precision input with float32 weights under autocast: PyTorch's mixed-type
            # kernel takes a bias only with a weight
            plain, n = self.p.mode == "cast" or self.p.dtype[x] == "float32", shape[-1]
            w = self.leaf((n,), 0.5, 1.5, weight=True) if self.chance(60) else None
            b = self.leaf((n,), -0.5, 0.5, weight=True) if self.chance(50) and (
                plain or w is not None) else None
            eps = float(self.rng.uniform(0.25, 1.0))
            self.op(kind, x, w, *[b] * (kind == "layer_norm"), eps=eps)
        elif kind == "reduce":
            dim, name = self.int(-len(shape), len(shape) - 1), ("sum", "mean")[self.int(0, 1)]
            x = self.tame(x, 16.0 / shape[dim]) if name == "sum" else x
            self.op(name, x, dim=dim, keepdim=self.chance(50))
        elif kind in ("matmul", "linear"):
            k, x = shape[-1], self.tame(x, 4.0 / shape[-1])
            if kind == "linear":
                n = self.int(1, 4)
                bias = self.leaf((n,), -1.0, 1.0, weight=True) if self.chance(50) else None
                self.op("linear", x, self.leaf((n, k), -1.0, 1.0, weight=True), bias)
            elif len(shape) >= 2 and self.chance(50):  # x @ x^T
                self.op("matmul", x, self.op("transpose", x, dims=(-1, -2)))
            else:
                self.op("matmul", x, self.leaf((k, self.int(1, 4)), -1.0, 1.0, weight=True))
        elif kind == "reshape":
            options = [(int(np.prod(shape)),), (1, *shape)]
            options += [shape[:-2] + (shape[-2] * shape[-1],)] if len(shape) >= 2 else []
            self.op("reshape", x, shape=options[self.int(0, len(options) - 1)])
        else:
            dims = self.rng.choice(len(shape), 2, replace=False)
            self.op("transpose", x, dims=(int(dims[0]), int(dims[1])))


# ============================================================================ execution
@dataclass
class Record:
    values: dict[Any, np.ndarray]  # each step's output and "loss", in float64
    dtypes: dict[Any, str]
    grads: dict[int, np.ndarray | None]  # each leaf's, in float64
    grad_dtypes: dict[int, str | None]


def execute(p: Program, lib: Any, wide: bool = False) -> Record:
    """``p`` on tensorlib (``lib`` = tl) or PyTorch; ``wide``: in float64, no autocast."""
    ours = lib is tl
    values: dict[Any, Any] = {}
    for v, array in p.leaves.items():
        dtype = "float64" if wide else p.dtype[v]
        values[v] = tl.tensor(array.astype(LOW.get(dtype, dtype)), requires_grad=True) if ours \
            else lib.tensor(array).to(getattr(lib, dtype)).requires_grad_()
    autocast = p.mode == "autocast" and not wide
    with lib.autocast("cpu", dtype=getattr(lib, p.low)) if autocast else contextlib.nullcontext():
        for s in p.steps:
            values[s.out] = OPS[s.op](lib.nn.functional, *[None if i is None else values[i]
                                                            for i in s.ins], **s.params)
        y = values[p.steps[-1].out]
        values["loss"] = (y * lib.tensor(p.upstream).to(y.dtype)).sum()
    values["loss"].backward()
    grads = {v: values[v].grad for v in p.leaves}
    outputs = {k: t for k, t in values.items() if k not in p.leaves}

    def array(t: Any) -> np.ndarray | None:
        return None if t is None else np.asarray(t.numpy(), np.float64) if ours else \
            t.detach().double().numpy()

    def name(t: Any) -> str | None:
        return None if t is None else str(t.dtype).removeprefix("torch.")
    return Record({k: array(t) for k, t in outputs.items()},
                  {k: name(t) for k, t in outputs.items()},
                  {v: array(g) for v, g in grads.items()}, {v: name(g) for v, g in grads.items()})


# ============================================================================ the bound
def error_bounds(p: Program, ref: dict[Any, np.ndarray]) -> tuple[dict, dict]:
    """Bounds on |low precision - exact| of every value (``e``) and gradient (``eg``), from
    the float64 values ``ref`` (leaves included); inf where none holds."""
    M = {v: _peak(a) for v, a in ref.items()}
    e: dict[Any, float] = dict.fromkeys(p.leaves, 0.0)
    backs = []
    for s in p.steps:
        e[s.out], back = _rule(p, s, ref, M, e)
        backs.append((s, back))
    y = p.steps[-1].out  # loss = (y * w).sum(); y's gradient is w, exact
    u, floor, w, size = UNIT[p.dtype[y]], FLOOR.get(p.dtype[y], 0.0), _peak(p.upstream), ref[y].size
    e["loss"] = size * (w * e[y] + 2 * (u * M[y] * w + floor)) + 2 * (u * size * M[y] * w + floor)
    A, eg = {y: w}, {y: 0.0}  # bounds on each gradient's magnitude and error
    for s, back in reversed(backs):
        if s.out in A:
            for v, (a, g) in zip(s.ins, back(A[s.out], eg[s.out]), strict=True):
                if v is not None:
                    A[v], eg[v] = A.get(v, 0.0) + a, eg.get(v, 0.0) + g
    return tuple({k: math.inf if math.isnan(b) else b for k, b in d.items()} for d in (e, eg))


def _rule(p: Program, s: Step, ref: dict, M: dict, e: dict) -> tuple[float, Any]:
    """(the error bound of ``s``'s output, ``back(A, g)``: each input's gradient magnitude and
    error bounds, given those of the output's gradient)."""
    narrowest = max([p.dtype[v] for v in s.ins if v is not None] + [p.dtype[s.out]],
                    key=UNIT.__getitem__)
    u, floor = UNIT[narrowest], FLOOR.get(narrowest, 0.0)

    def rnd(R: float, count: int = 2) -> float:  # count roundings at magnitude R
        return count * (u * R + floor)

    x, op, none = s.ins[0], s.op, (math.inf, lambda A, g: [(math.inf, math.inf)] * len(s.ins))
    Mx, ex, My, xr = M[x], e[x], M[s.out], ref[x]
    ry = ref[s.out].size / max(xr.size, 1)  # x's broadcast factor
    if p.mode == "autocast" and op in LOWER:  # float32 inputs cast to the low dtype
        e = {v: e[v] + rnd(M[v], 1) * (p.dtype[v] == "float32") for v in s.ins if v is not None}
        ex = e[x]
    if op in BINARY:
        b = s.ins[1]
        Mb, eb, rb = M[b], e[b], ref[s.out].size / max(ref[b].size, 1)
        if op in ("add", "sub"):
            return ex + eb + rnd(My), lambda A, g: [(ry * A, ry * g + rnd(ry * A, 3)),
                                                    (rb * A, rb * g + rnd(rb * A, 3))]
        if op == "mul":
            return Mb * ex + Mx * eb + ex * eb + rnd(My), lambda A, g: [
                (ry * A * Mb, ry * (g * (Mb + eb) + A * eb) + rnd(ry * A * Mb, 3)),
                (rb * A * Mx, rb * (g * (Mx + ex) + A * ex) + rnd(rb * A * Mx, 3))]
        d = float(np.abs(ref[b]).min()) - eb  # >= 0.5 - eb by construction
        return none if d <= 0 else (ex / d + (Mx + ex) * eb / d ** 2 + rnd(My), lambda A, g: [
            (ry * A / d, ry * (g / d + A * eb / d ** 2) + rnd(ry * A / d, 3)),
            (rb * A * Mx / d ** 2, rb * (g * Mx + A * ex + 2 * A * Mx * eb / d) / d ** 2
             + rnd(rb * A * Mx / d ** 2, 4))])
    if op in ("reshape", "transpose", "shift"):
        return ex + rnd(My) * (op == "shift"), lambda A, g: [(A, g)]
    if op == "exp":
        ey = My * math.expm1(ex) + rnd(My)
        return ey, lambda A, g: [(A * My, g * (My + ey) + A * ey + rnd(A * My, 3))]
    if op in SMOOTH:  # max |f'|; f' read from the output (error ey), or from x (max |f''|)
        k, curve = SMOOTH[op]
        ey = k * ex + rnd(max(My, Mx))
        reads = 2 * ey if curve is None else curve * ex
        return ey, lambda A, g: [(k * A, k * g + A * reads + rnd(k * A, 3))]
    if op in ("softmax", "log_softmax", "sum", "mean"):
        n = xr.shape[s.params["dim"]]
        if op == "sum":
            return n * ex + rnd(n * Mx), lambda A, g: [(A, g)]
        if op == "mean":
            return ex + rnd(Mx), lambda A, g: [(A / n, g / n + rnd(A / n, 1))]
        if op == "softmax":  # |dp_i| <= p_i (|dx_i| + sum_j p_j |dx_j|)
            ey = My * math.expm1(2 * ex) + rnd(My)
            return ey, lambda A, g: [(2 * My * A, 2 * ey * A + My * (2 * g + n * ey * A)
                                      + rnd(2 * My * A, 3))]
        ey, top = 2 * ex + rnd(max(My, Mx)), math.exp(float(ref[s.out].max()))
        dp = top * math.expm1(ey)  # softmax, recomputed from the output
        return ey, lambda A, g: [(A * (1 + n * top), g * (1 + n * top) + n * A * dp
                                  + rnd(A * (1 + n * top), 3))]
    if op in ("layer_norm", "rms_norm"):
        w, b = s.ins[1], s.ins[2] if op == "layer_norm" else None
        centred = xr - xr.mean(-1, keepdims=True) if op == "layer_norm" else xr
        sigma = np.sqrt((centred ** 2).mean(-1, keepdims=True) + s.params["eps"])
        X, rows = _peak(centred / sigma), xr.size / xr.shape[-1]
        Mw, ew = (M[w], e[w]) if w is not None else (1.0, 0.0)
        Mb, eb = (M[b], e[b]) if b is not None else (0.0, 0.0)
        c = 2.0 if op == "layer_norm" else 1.0  # the mean subtracted, or not
        sigma = float(sigma.min()) - c * ex
        if sigma <= 0:
            return none
        dxh = (c + c * X) * ex / sigma  # error of x̂ = (x - mean) / σ
        Xr = X + Mx / sigma  # PyTorch's kernels scale x, then shift: x / σ is rounded too

        def back(A: float, g: float) -> list:
            Gh, egh, k = A * Mw, g * (Mw + ew) + A * ew, (c + X * X) / sigma
            gx = k * egh + (2 * X * Gh * dxh + Gh * k * c * ex) / sigma \
                + rnd(Gh * (c + Xr * Xr) / sigma, 3)
            return [(Gh * k, gx),
                    (rows * A * X, rows * (g * (X + dxh) + A * dxh) + rnd(rows * A * Xr, 3)),
                    (rows * A, rows * g + rnd(rows * A, 3))][:len(s.ins)]
        return Mw * dxh + (X + dxh) * ew + eb + rnd(Xr * Mw + Mb, 3), back
    # matmul and linear: y = x @ b (+ bias), each entry a sum of k products
    b, bias = s.ins[1], s.ins[2] if op == "linear" else None
    k, Mb, eb = xr.shape[-1], M[b], e[b]
    Mc, ec = (M[bias], e[bias]) if bias is not None else (0.0, 0.0)
    cx = ref[s.out].size * k / xr.size  # the terms in each entry of x's gradient, b's, bias's
    cb = ref[s.out].size * k / ref[b].size if op == "matmul" else xr.size / k
    return k * (Mb * ex + Mx * eb + ex * eb) + ec + rnd(k * Mx * Mb + Mc), lambda A, g: [
        (cx * A * Mb, cx * (g * (Mb + eb) + A * eb) + rnd(cx * A * Mb, 3)),
        (cb * A * Mx, cb * (g * (Mx + ex) + A * ex) + rnd(cb * A * Mx, 3)),
        (cb * A, cb * g + rnd(cb * A, 3))][:len(s.ins)]


# ============================================================================ the tests
def _program(data: Any) -> Program:
    seed = data.draw(st.integers(0, 2 ** 32 - 1))
    rng = np.random.default_rng([seed, 1])  # hypothesis's draws would favour the first
    low, mode = str(rng.choice(list(LOW))), str(rng.choice(["cast", "autocast"]))
    return Builder(seed, low, mode).build()


def _reference(p: Program) -> tuple[Record, tuple[dict, dict]]:
    """The float64 run on the same leaves, and the bounds it gives."""
    wide = execute(p, tl, wide=True)
    peak = max(_peak(a) for a in [*wide.values.values(), *wide.grads.values()] if a is not None)
    assert peak < 1e3, f"{p.listing()}\nthe generator let a value grow to {peak}"
    return wide, error_bounds(p, wide.values | p.leaves)


def compare(ours: Record, ref: Record, bounds: tuple[dict, dict], factor: float) -> list[str]:
    """Each value and leaf gradient of ``ours`` within ``factor`` times its bound of ``ref``'s
    (the dtypes: see the tests)."""
    pairs = [(f"v{k}", ours.values[k], a, bounds[0][k]) for k, a in ref.values.items()]
    pairs += [(f"v{v}.grad", ours.grads[v], g, bounds[1].get(v)) for v, g in ref.grads.items()]
    return [f"{what}: {_short(mine)}\n    reference {_short(theirs)}, tolerance "
            f"{factor * (bound or 0):.3g}" for what, mine, theirs, bound in pairs
            if (mine is None) != (theirs is None) or mine is not None and (
                mine.shape != theirs.shape or not (np.abs(mine - theirs) <= factor * bound).all())]


def _short(a: np.ndarray | None) -> str:
    return "None" if a is None else np.array2string(a.ravel()[:12], precision=6)


def _fail(p: Program, problems: list[str]) -> None:
    if problems:
        raise AssertionError("\n".join([p.listing(), "disagreements:"]
                                       + [f"  - {x}" for x in problems[:10]]))


@_settings(SELF_EXAMPLES)
@given(data=st.data())
def test_programs_match_float64_within_the_rounding_bound(data: Any) -> None:
    """No torch needed: values and leaf gradients against the float64 run, every dtype the
    one PyTorch's rules give, each leaf gradient in its leaf's dtype."""
    p = _program(data)
    ours, (wide, bounds) = execute(p, tl), _reference(p)
    expected = {s.out: p.dtype[s.out] for s in p.steps} | {"loss": p.dtype[p.steps[-1].out]}
    _fail(p, compare(ours, wide, bounds, SLACK)
          + [f"v{k}: dtype {d}, PyTorch's rules give {expected[k]}"
             for k, d in ours.dtypes.items() if d != expected[k]]
          + [f"v{v}.grad: dtype {d}, the leaf is {p.dtype[v]}"
             for v, d in ours.grad_dtypes.items() if d not in (None, p.dtype[v])])


@_settings(SELF_EXAMPLES)
@given(data=st.data())
def test_reference_mode_differs_by_at_most_one_rounding_per_kernel(data: Any) -> None:
    """No torch needed: kernels off, an op given the same inputs gives the same bits, or for
    an op with a kernel one rounding away; what follows, and the gradients, within twice the
    bound; the same dtypes."""
    p = _program(data)
    ours, (ref, bounds) = execute(p, tl), _reference(p)
    with tl.reference_mode():
        plain = execute(p, tl)
    same, problems = set(p.leaves), compare(ours, plain, bounds, 2 * SLACK)
    for s in p.steps:
        a, b = ours.values[s.out], plain.values[s.out]
        if np.array_equal(a, b):
            same.add(s.out)
        elif all(v is None or v in same for v in s.ins) and (s.op not in KERNEL_OPS or not (
                np.abs(a - b) <= _spacing(max(_peak(ref.values.get(v, p.leaves.get(v)))
                                              for v in (s.out, *s.ins) if v is not None),
                                          p.dtype[s.out])).all()):
            problems.append(f"v{s.out} = {s.op} of the same inputs: {_short(a)}\n"
                            f"    reference mode {_short(b)}")
    _fail(p, problems + [f"dtypes {ours.dtypes} / {plain.dtypes}"] * (ours.dtypes != plain.dtypes))


def _spacing(magnitude: float, dtype: str) -> float:
    """One rounding at ``magnitude`` (the op's inputs' and output's): the spacing of ``dtype``
    there (float32: 16 of them, the kernels' float32 code is within a few ulps of the op's)."""
    info = tl.finfo(LOW.get(dtype, np.float32))
    spacing = float(info.eps) * 2.0 ** math.floor(math.log2(max(magnitude, float(info.tiny))))
    return spacing * (16 if dtype == "float32" else 1)


@pytest.mark.filterwarnings("ignore:Mismatch dtype between input and weight")  # rms_norm's
@_settings(TORCH_EXAMPLES)
@given(data=st.data())
def test_programs_match_torch(data: Any) -> None:
    """The dtypes of values and gradients PyTorch's, values and gradients within twice the
    bound (each side within it of the exact answer)."""
    torch = pytest.importorskip("torch")
    p = _program(data)
    ours, theirs, (_, bounds) = execute(p, tl), execute(p, torch), _reference(p)
    _fail(p, compare(ours, theirs, bounds, 2 * SLACK)
          + [f"v{k}: dtype {d}, torch {theirs.dtypes[k]}" for k, d in ours.dtypes.items()
             if d != theirs.dtypes[k]]
          + [f"v{v}.grad: dtype {d}, torch {theirs.grad_dtypes[v]}"
             for v, d in ours.grad_dtypes.items() if d != theirs.grad_dtypes[v]])


# ============================================================================ GradScaler
def scaler_case(seed: int) -> dict[str, Any]:
    """GradScaler settings, SGD's lr (a power of two), a 2-element parameter and 5-30 scaled
    gradients, a third of them holding an inf or a nan."""
    rng = np.random.default_rng(seed)
    growth = float(rng.uniform(1.01, 4.0)) if rng.random() < 0.7 else 2.0
    backoff = float(rng.uniform(0.05, 0.95)) if rng.random() < 0.7 else 0.5
    grads = [(rng.uniform(-1, 1, 2) * 2.0 ** rng.uniform(-10, 10, 2)).astype(np.float32)
             for _ in range(int(rng.integers(5, 31)))]
    for g in grads:
        if rng.random() < 0.35:
            g[rng.integers(2)] = rng.choice([np.inf, -np.inf, np.nan])
    case = {"settings": {"init_scale": 2.0 ** int(rng.integers(-20, 128)),
                         "growth_factor": growth, "backoff_factor": backoff,
                         "growth_interval": int(rng.integers(1, 6))},
            "lr": 2.0 ** -int(rng.integers(1, 7)), "start": rng.uniform(-1, 1, 2).astype(
                np.float32), "grads": grads}
    # It stops before the scale falls below 2**-100, where an unscaled gradient could
    # overflow float32: PyTorch's SGD steps to inf, tensorlib's optimizers refuse it.
    case["grads"] = grads[:next((n + 1 for n, (scale, _, _) in enumerate(rule(case))
                                 if scale < 2.0 ** -100), len(grads))]
    return case


def rule(case: dict[str, Any]) -> list[tuple[float, int, np.ndarray]]:
    """PyTorch's rule, written out: (scale, growth tracker, parameter) after each update. A
    step whose scaled gradients are not all finite is skipped and the scale multiplied by
    backoff_factor; after growth_interval good steps in a row, by growth_factor (unless that
    overflows). The scale is float32, each product rounded to float32 once; the gradient is
    multiplied by the float32 inverse of the scale, and SGD steps in float32."""
    settings, param, out = case["settings"], case["start"].copy(), []
    scale, tracker = np.float32(settings["init_scale"]), 0
    with np.errstate(over="ignore", invalid="ignore"):
        for grad in case["grads"]:
            if np.isfinite(grad).all():
                param = param - np.float32(case["lr"]) * (grad * np.float32(1 / np.float64(scale)))
                tracker += 1
                if tracker == settings["growth_interval"]:
                    grown = np.float32(np.float64(scale) * settings["growth_factor"])
                    scale, tracker = (grown if np.isfinite(grown) else scale), 0
            else:
                scale = np.float32(np.float64(scale) * settings["backoff_factor"])
                tracker = 0
            out.append((float(scale), tracker, param.copy()))
    return out


def drive(case: dict[str, Any], lib: Any) -> list[tuple[float, dict, np.ndarray]]:
    """``case`` on tensorlib's or PyTorch's GradScaler and SGD: (get_scale(), state_dict(),
    the parameter) after each update."""
    param = lib.nn.Parameter(lib.tensor(case["start"].copy()))
    scaler = GradScaler("cpu", **case["settings"]) if lib is tl else \
        lib.amp.GradScaler("cpu", **case["settings"])
    optimizer = (SGD if lib is tl else lib.optim.SGD)([param], lr=case["lr"])
    out = []
    for grad in case["grads"]:
        scaled = scaler.scale(lib.tensor(np.float32(1.0)))  # where PyTorch sets its scale up
        assert float(scaled.item()) == scaler.get_scale()
        param.grad = lib.tensor(grad)
        scaler.step(optimizer)
        scaler.update()
        array = param.numpy() if lib is tl else param.detach().numpy()
        out.append((scaler.get_scale(), scaler.state_dict(), np.array(array)))
    return out


@_settings(SCALER_EXAMPLES)
@given(seed=st.integers(0, 2 ** 32 - 1))
def test_grad_scaler_follows_the_rule(seed: int) -> None:
    """No torch needed: scale, state_dict and parameter after each update, bit for bit."""
    case = scaler_case(seed)
    fixed = {k: v for k, v in case["settings"].items() if k != "init_scale"}
    for n, (ours, (scale, tracker, param)) in enumerate(zip(drive(case, tl), rule(case),
                                                             strict=True)):
        assert ours[0] == scale and ours[1] == {**fixed, "scale": scale,
                                                "_growth_tracker": tracker} and \
            np.array_equal(ours[2], param), f"{case}\nafter update {n}: {ours}\nthe rule: " \
            f"scale {scale}, tracker {tracker}, parameter {param}"


@_settings(SCALER_EXAMPLES)
@given(seed=st.integers(0, 2 ** 32 - 1))
def test_grad_scaler_matches_torch(seed: int) -> None:
    """get_scale(), state_dict() and the parameter after each update: PyTorch's."""
    torch = pytest.importorskip("torch")
    case = scaler_case(seed)
    for n, (ours, theirs) in enumerate(zip(drive(case, tl), drive(case, torch), strict=True)):
        assert ours[:2] == theirs[:2] and np.array_equal(ours[2], theirs[2]), \
            f"{case}\nafter update {n}: {ours}\ntorch {theirs}"
