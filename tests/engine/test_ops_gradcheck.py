"""Gradcheck of every differentiable op in float64, on broadcast and non-contiguous inputs.

Each case is ``(fn, input specs, numpy reference)``. An input spec is ``(shape, domain)``;
the domain keeps inputs away from the points where an op is not differentiable (the kinks
of abs/relu, ties of max/maximum) or not defined (log and sqrt of non-positive numbers).
Every case runs twice: on C-contiguous arrays and on non-contiguous views (a transposed or
strided slice of a larger buffer) passed straight in as the tensor's data.

Methods and arguments are PyTorch's (``dim``/``keepdim``, ``amax``, ``var(correction=...)``);
some cases spell a dim numpy's way (``axis=``/``keepdims=``), which tensorlib also accepts.
"""

import numpy as np
import pytest
from scipy import special

import tensorlib as tl
from tensorlib import GradcheckError, Rng, Tensor, gradcheck
from tensorlib.engine import ops
from tensorlib.engine.ops.function import Function
from tensorlib.nn import functional as F

from helpers import conv_by_definition as _conv
from helpers import pool_by_definition as _pool
from helpers import unfold_by_definition as _unfold

# --------------------------------------------------------------------------- input data


def _values(shape, domain, rng):
    """Float64 values of ``shape`` drawn from a domain that avoids non-smooth points."""
    size = int(np.prod(shape))
    if domain == "any":
        return rng.uniform(-2.0, 2.0, size=shape)
    if domain == "positive":
        return rng.uniform(0.5, 2.0, size=shape)
    if domain == "nonzero":  # |x| >= 0.3: away from the kink of abs and relu
        return rng.choice([-1.0, 1.0], size=shape) * rng.uniform(0.3, 2.0, size=shape)
    if domain == "distinct":  # all values distinct, at least 0.1 apart: no max ties
        return ((rng.permutation(size) - size / 2) * 0.1 + 0.01).reshape(shape)
    if domain == "grid":  # multiples of 0.1 (compared against "offgrid": never equal)
        return rng.integers(-20, 20, size=shape) * 0.1
    if domain == "offgrid":  # multiples of 0.1 shifted by 0.05
        return rng.integers(-20, 20, size=shape) * 0.1 + 0.05
    raise ValueError(domain)


def _non_contiguous(values, position):
    """The same values in a non-contiguous float64 view (transposed or strided slice)."""
    if values.ndim >= 2 and values.shape[-1] > 1 and values.shape[-2] > 1 and position % 2 == 0:
        buffer = np.ascontiguousarray(np.swapaxes(values, -1, -2))
        view = np.swapaxes(buffer, -1, -2)
    else:
        buffer = np.zeros(values.shape[:-1] + (2 * values.shape[-1],))
        view = buffer[..., ::2]
        view[...] = values
    np.testing.assert_array_equal(view, values)
    return view


def _inputs(specs, layout, seed=0):
    rng = np.random.default_rng(seed)
    arrays = []
    for position, (shape, domain) in enumerate(specs):
        values = _values(shape, domain, rng)
        if layout == "non-contiguous" and values.size > 1:
            values = _non_contiguous(values, position)
            assert not values.flags.c_contiguous
        arrays.append(values)
    return arrays


# --------------------------------------------------------------------------- the cases
# A reference of SAME means "the fn itself works on numpy arrays".
SAME = object()
A, P, NZ, D = "any", "positive", "nonzero", "distinct"
M = np.array([[True, False, False, True], [False, False, True, False], [True, True, False, False]])
M_ROW = np.array([False, True, False, True])


def _erf_gelu(x):
    return 0.5 * x * (1.0 + special.erf(x / np.sqrt(2.0)))


def _tanh_gelu(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))


def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _logsumexp(x, axis, keepdims):
    return special.logsumexp(x, axis=axis, keepdims=keepdims)


def _layer_norm(x, weight=1.0, bias=0.0):
    centered = x - x.mean(-1, keepdims=True)
    return centered / np.sqrt((centered**2).mean(-1, keepdims=True) + 1e-5) * weight + bias


def _lstm_parts(result):
    output, (hidden, cell) = result
    return output, hidden, cell


def _rms_norm(x, weight=1.0):
    return x / np.sqrt((x**2).mean(-1, keepdims=True) + np.finfo(x.dtype).eps) * weight


def _batch_norm(x, weight=1.0, bias=0.0):
    axes, view = (0, *range(2, x.ndim)), (1, -1) + (1,) * (x.ndim - 2)
    centered = x - x.mean(axes, keepdims=True)
    normalized = centered / np.sqrt((centered**2).mean(axes, keepdims=True) + 1e-5)
    return normalized * np.reshape(weight, view) + np.reshape(bias, view)


def _cross_entropy(logits):
    log_probs = logits - _logsumexp(logits, -1, True)
    return -np.take_along_axis(log_probs, TARGETS[..., None], -1).mean()


def _causal_softmax(scores, scale, offset=0):
    forbidden = np.triu(np.ones(scores.shape[-2:], bool), k=offset + 1)
    return _softmax(np.where(forbidden, -np.inf, scores * scale), -1)


def _causal_attention(qkv, heads):
    batch, length, triple = qkv.shape
    q, k, v = qkv.reshape(batch, length, 3, heads, -1).transpose(2, 0, 3, 1, 4)
    p = _causal_softmax(q @ np.swapaxes(k, -1, -2), 1 / np.sqrt(q.shape[-1]))
    return (p @ v).transpose(0, 2, 1, 3).reshape(batch, length, triple // 3)


def _hardswish(x):
    return x * np.clip(x + 3, 0, 6) / 6


def _mish(x):
    return x * np.tanh(np.log1p(np.exp(x)))


def _index_put(a, value, index):
    """``a`` with ``a[index] = value``, out of place: a clone of ``a`` written in place (the
    write into a non-leaf is recorded as an IndexPut node on top of a Clone node). Works on
    numpy arrays too, as its own reference."""
    out = a.clone() if isinstance(a, Tensor) else a.copy()
    out[index] = value
    return out


TARGETS = np.array([[1, 3, 0], [2, 2, 1]])
IDS = np.array([[4, 0, 4], [1, 4, 2]])
# gather indices: a repeated pick along dim 1 (3 x 5 picks from 3 x 4), and a smaller index
# than the input off the gathered dim (2 x 3 picks along dim 0 from 3 x 4)
PICKS = np.array([[0, 3, 3, 1, 0], [2, 2, 2, 2, 2], [1, 0, 3, 2, 1]])
PICKS_SMALL = np.array([[2, 0, 1], [2, 2, 0]])
# an advanced index that writes entry (0, 1) twice; the last write wins in the forward and
# in every entry's gradient to ``a`` (each overwritten entry gets none)
REPEATED = (np.array([0, 2, 0]), np.array([1, 3, 1]))
REPEATED_VALUES = np.array([7.0, -3.0, 5.0])


CASES = {
    # ---- binary arithmetic: same shapes, broadcast shapes, Python-scalar operands
    "add": (lambda a, b: a + b, [((3, 4), A), ((3, 4), A)], SAME),
    "add-broadcast": (lambda a, b: a + b, [((2, 3, 1), A), ((3, 4), A)], SAME),
    "add-broadcast-ones": (lambda a, b: a + b, [((1, 4), A), ((3, 1), A)], SAME),
    "add-scalar": (lambda a: 1.5 + a + 2, [((3, 4), A)], SAME),
    "sub": (lambda a, b: a - b, [((3, 4), A), ((3, 4), A)], SAME),
    "sub-broadcast": (lambda a, b: a - b, [((4,), A), ((2, 3, 4), A)], SAME),
    "sub-scalar": (lambda a: 2.0 - a - 0.5, [((3, 4), A)], SAME),
    "mul": (lambda a, b: a * b, [((3, 4), A), ((3, 4), A)], SAME),
    "mul-broadcast": (lambda a, b: a * b, [((3, 1), A), ((2, 1, 4), A)], SAME),
    "mul-self": (lambda a: a * a, [((3, 4), A)], SAME),
    "mul-scalar": (lambda a: 3 * a * -0.5, [((3, 4), A)], SAME),
    "div": (lambda a, b: a / b, [((3, 4), A), ((3, 4), P)], SAME),
    "div-broadcast": (lambda a, b: a / b, [((2, 3, 4), A), ((3, 1), P)], SAME),
    "div-scalar": (lambda a: 2.0 / a + a / 4, [((3, 4), P)], SAME),
    "pow-scalar-2": (lambda a: a**2, [((3, 4), A)], SAME),
    "pow-scalar-3": (lambda a: a**3, [((3, 4), A)], SAME),
    "pow-scalar-half": (lambda a: a**0.5, [((3, 4), P)], SAME),
    "pow-scalar-negative": (lambda a: a**-1.5, [((3, 4), P)], SAME),
    "pow-tensor": (lambda a, b: a**b, [((3, 4), P), ((3, 4), A)], SAME),
    "pow-tensor-broadcast": (lambda a, b: a**b, [((2, 3, 4), P), ((4,), A)], SAME),
    "pow-scalar-base": (lambda b: 2.0**b, [((3, 4), A)], SAME),
    "neg": (lambda a: -a, [((3, 4), A)], SAME),
    "neg-broadcast": (lambda a: -a.expand(2, 3, 4), [((3, 1), A)], None),
    "pos-chain": (lambda a: +(a * 2.0), [((3, 4), A)], SAME),
    "cast": (lambda a: a.astype(np.float64) * 2.0, [((3, 4), A)], lambda a: a * 2.0),
    # ---- matmul: 2-D, batched, broadcast batch axes, and the 1-D cases
    "matmul": (lambda a, b: a @ b, [((3, 4), A), ((4, 5), A)], SAME),
    "matmul-batched": (lambda a, b: a @ b, [((2, 3, 4), A), ((2, 4, 5), A)], SAME),
    "matmul-batched-by-matrix": (lambda a, b: a @ b, [((2, 3, 4), A), ((4, 2), A)], SAME),
    "matmul-matrix-by-batched": (lambda a, b: a @ b, [((3, 4), A), ((2, 4, 2), A)], SAME),
    "matmul-broadcast-batch": (lambda a, b: a @ b, [((2, 1, 3, 4), A), ((3, 4, 2), A)], SAME),
    "matmul-vec-mat": (lambda a, b: a @ b, [((4,), A), ((4, 3), A)], SAME),
    "matmul-mat-vec": (lambda a, b: a @ b, [((3, 4), A), ((4,), A)], SAME),
    "matmul-vec-vec": (lambda a, b: a @ b, [((4,), A), ((4,), A)], SAME),
    "matmul-batched-vec": (lambda a, b: a @ b, [((2, 3, 4), A), ((4,), A)], SAME),
    "matmul-vec-batched": (lambda a, b: a @ b, [((4,), A), ((2, 4, 3), A)], SAME),
    "matmul-shared-operand": (lambda a: a @ a, [((3, 3), A)], SAME),
    # ---- unary elementwise, plain and on a broadcast (expanded) input
    "exp": (lambda a: a.exp(), [((3, 4), A)], np.exp),
    "log": (lambda a: a.log(), [((3, 4), P)], np.log),
    "log10": (lambda a: a.log10(), [((3, 4), P)], np.log10),
    "log10-broadcast": (lambda a: a.expand(2, 3, 4).log10(), [((3, 1), P)], None),
    "sqrt": (lambda a: a.sqrt(), [((3, 4), P)], np.sqrt),
    "abs": (lambda a: a.abs(), [((3, 4), NZ)], np.abs),
    "tanh": (lambda a: a.tanh(), [((3, 4), A)], np.tanh),
    "sigmoid": (lambda a: a.sigmoid(), [((3, 4), A)], special.expit),
    "relu": (lambda a: a.relu(), [((3, 4), NZ)], lambda a: np.maximum(a, 0)),
    "gelu": (lambda a: a.gelu(), [((3, 4), A)], _erf_gelu),
    "gelu-tanh": (lambda a: a.gelu(approximate="tanh"), [((3, 4), A)], _tanh_gelu),
    "exp-broadcast": (lambda a: a.expand(2, 3, 4).exp(), [((3, 1), A)], None),
    "log-broadcast": (lambda a: a.expand(2, 3, 4).log(), [((3, 1), P)], None),
    "sqrt-broadcast": (lambda a: a.expand(2, 3, 4).sqrt(), [((1, 4), P)], None),
    "abs-broadcast": (lambda a: a.expand(2, 3, 4).abs(), [((3, 1), NZ)], None),
    "tanh-broadcast": (lambda a: a.expand(2, 3, 4).tanh(), [((3, 1), A)], None),
    "sigmoid-broadcast": (lambda a: a.expand(2, 3, 4).sigmoid(), [((1, 4), A)], None),
    "relu-broadcast": (lambda a: a.expand(2, 3, 4).relu(), [((3, 1), NZ)], None),
    "leaky-relu": (lambda a: a.leaky_relu(0.1), [((3, 4), NZ)],
                   lambda a: np.where(a > 0, a, 0.1 * a)),
    "leaky-relu-negative-slope": (lambda a: F.leaky_relu(a, -0.5), [((3, 4), NZ)],
                                  lambda a: np.where(a > 0, a, -0.5 * a)),
    "softplus": (lambda a: a.softplus(), [((3, 4), A)], lambda a: np.log1p(np.exp(a))),
    "softplus-beta-threshold": (lambda a: F.softplus(a * 10.0, beta=2.0, threshold=5.0),
                                [((3, 4), NZ)],
                                lambda a: np.where(20.0 * a > 5.0, 10.0 * a,
                                                   np.log1p(np.exp(20.0 * a)) / 2.0)),
    "silu": (lambda a: a.silu(), [((3, 4), A)], lambda a: a / (1.0 + np.exp(-a))),
    "sign": (lambda a: a.sign() * a, [((3, 4), NZ)], lambda a: np.abs(a)),
    "gelu-broadcast": (lambda a: a.expand(2, 3, 4).gelu(), [((3, 1), A)], None),
    "gelu-tanh-broadcast": (lambda a: a.expand(2, 3, 4).gelu(approximate="tanh"),
                            [((1, 4), A)], None),
    # ---- maximum (grid vs offgrid values never tie)
    "maximum": (lambda a, b: tl.maximum(a, b), [((3, 4), "grid"), ((3, 4), "offgrid")],
                np.maximum),
    "maximum-broadcast": (lambda a, b: a.maximum(b), [((3, 4), "grid"), ((4,), "offgrid")],
                          np.maximum),
    "maximum-broadcast-both": (lambda a, b: tl.maximum(a, b),
                               [((3, 1), "offgrid"), ((2, 1, 4), "grid")], np.maximum),
    "maximum-scalar": (lambda a: tl.maximum(a, 0.05), [((3, 4), "grid")],
                       lambda a: np.maximum(a, 0.05)),
    # ---- logsumexp, softmax, log_softmax
    "logsumexp-all": (lambda a: a.logsumexp(), [((2, 3, 4), A)],
                      lambda a: _logsumexp(a, None, False)),
    "logsumexp-axis": (lambda a: a.logsumexp(axis=-1), [((2, 3, 4), A)],
                       lambda a: _logsumexp(a, -1, False)),
    "logsumexp-tuple-keepdims": (lambda a: a.logsumexp(axis=(0, 2), keepdims=True),
                                 [((2, 3, 4), A)], lambda a: _logsumexp(a, (0, 2), True)),
    "logsumexp-broadcast": (lambda a: a.expand(2, 3, 4).logsumexp(axis=1), [((3, 1), A)],
                            None),
    "softmax-last": (lambda a: a.softmax(), [((2, 3, 4), A)], lambda a: _softmax(a, -1)),
    "softmax-axis0": (lambda a: a.softmax(axis=0), [((2, 3, 4), A)], lambda a: _softmax(a, 0)),
    "softmax-axis1": (lambda a: a.softmax(axis=1), [((2, 3, 4), A)], lambda a: _softmax(a, 1)),
    "softmax-broadcast": (lambda a: a.expand(2, 3, 4).softmax(axis=1), [((3, 1), A)], None),
    "log-softmax-last": (lambda a: a.log_softmax(), [((2, 3, 4), A)],
                         lambda a: np.log(_softmax(a, -1))),
    "log-softmax-axis0": (lambda a: a.log_softmax(axis=0), [((2, 3, 4), A)],
                          lambda a: np.log(_softmax(a, 0))),
    "log-softmax-broadcast": (lambda a: a.expand(2, 3, 4).log_softmax(axis=-1),
                              [((1, 4), A)], None),
    # ---- shape ops
    "reshape": (lambda a: a.reshape(6, 4), [((2, 3, 4), A)], lambda a: a.reshape(6, 4)),
    "reshape-infer": (lambda a: a.reshape((4, -1, 2)), [((2, 3, 4), A)],
                      lambda a: a.reshape(4, 3, 2)),
    "reshape-flatten": (lambda a: a.flatten(), [((2, 3, 4), A)], lambda a: a.reshape(-1)),
    "reshape-broadcast": (lambda a: a.expand(2, 3, 4).reshape(4, 6), [((3, 1), A)], None),
    "transpose-default": (lambda a: a.transpose(), [((2, 3, 4), A)],
                          lambda a: np.swapaxes(a, -1, -2)),
    "transpose-axes": (lambda a: a.transpose(0, 2), [((2, 3, 4), A)],
                       lambda a: np.swapaxes(a, 0, 2)),
    "transpose-T": (lambda a: a.T, [((2, 3, 4), A)], lambda a: a.T),
    "permute": (lambda a: a.permute(2, 0, 1), [((2, 3, 4), A)],
                lambda a: a.transpose(2, 0, 1)),
    "permute-broadcast": (lambda a: a.expand(2, 3, 4).permute((1, 2, 0)), [((1, 4), A)],
                          None),
    "expand": (lambda a: a.expand(2, 3, 4), [((3, 1), A)],
               lambda a: np.broadcast_to(a, (2, 3, 4))),
    "expand-keep": (lambda a: a.expand(2, -1, 4), [((3, 1), A)],
                    lambda a: np.broadcast_to(a, (2, 3, 4))),
    "squeeze-axis": (lambda a: a.squeeze(1), [((3, 1, 4), A)], lambda a: a.squeeze(1)),
    "squeeze-all": (lambda a: a.squeeze(), [((3, 1, 4, 1), A)], lambda a: a.squeeze()),
    "unsqueeze-front": (lambda a: a.unsqueeze(0), [((3, 4), A)], lambda a: a[None]),
    "unsqueeze-back": (lambda a: a.unsqueeze(-1), [((3, 4), A)], lambda a: a[..., None]),
    # ---- indexing
    "getitem-int": (lambda a: a[1], [((3, 4), A)], lambda a: a[1]),
    "getitem-negative-int": (lambda a: a[-1, 2], [((3, 4), A)], lambda a: a[-1, 2]),
    "getitem-slice": (lambda a: a[:, 1:3], [((3, 4), A)], lambda a: a[:, 1:3]),
    "getitem-step": (lambda a: a[::-1, ::2], [((3, 4), A)], lambda a: a[::-1, ::2]),
    "getitem-none": (lambda a: a[None, 1:, None], [((3, 4), A)], lambda a: a[None, 1:, None]),
    "getitem-ellipsis": (lambda a: a[..., 0], [((2, 3, 4), A)], lambda a: a[..., 0]),
    "getitem-ellipsis-none": (lambda a: a[1, ..., None], [((2, 3, 4), A)],
                              lambda a: a[1, ..., None]),
    "getitem-int-array": (lambda a: a[np.array([2, 0])], [((3, 4), A)],
                          lambda a: a[np.array([2, 0])]),
    "getitem-repeated": (lambda a: a[np.array([0, 2, 2, 0, 2])], [((3, 4), A)],
                         lambda a: a[np.array([0, 2, 2, 0, 2])]),
    "getitem-repeated-list": (lambda a: a[:, [1, 1, 3, 1]], [((3, 4), A)],
                              lambda a: a[:, [1, 1, 3, 1]]),
    "getitem-repeated-pairs": (lambda a: a[np.array([0, 1, 0]), np.array([2, 3, 2])],
                               [((3, 4), A)], SAME),
    "getitem-tensor-index": (lambda a: a[tl.tensor([[1, 1], [0, 2]])], [((3, 4), A)],
                             lambda a: a[np.array([[1, 1], [0, 2]])]),
    "getitem-bool-mask": (lambda a: a[M], [((3, 4), A)], lambda a: a[M]),
    "getitem-broadcast": (lambda a: a.expand(2, 3, 4)[:, np.array([1, 1]), 1:], [((3, 1), A)],
                          None),
    # ---- gather, clone and index_put (x[index] = value into a clone)
    "gather-repeated": (lambda a: a.gather(1, PICKS), [((3, 4), A)],
                        lambda a: np.take_along_axis(a, PICKS, 1)),
    "gather-negative-dim-tensor-index": (lambda a: a.gather(-1, tl.tensor(PICKS)),
                                         [((3, 4), A)],
                                         lambda a: np.take_along_axis(a, PICKS, -1)),
    "gather-smaller-index": (lambda a: a.gather(0, PICKS_SMALL), [((3, 4), A)],
                             lambda a: np.take_along_axis(a[:, :3], PICKS_SMALL, 0)),
    "gather-broadcast": (lambda a: a.expand(3, 4).gather(1, PICKS), [((3, 1), A)], None),
    "clone": (lambda a: a.clone(), [((3, 4), A)], lambda a: a.copy()),
    "clone-broadcast": (lambda a: a.expand(2, 3, 4).clone() * 2.0, [((1, 4), A)], None),
    "index-put-basic": (lambda a, v: _index_put(a, v, (1, slice(1, 3))),
                        [((3, 4), A), ((2,), A)], SAME),
    "index-put-advanced": (lambda a, v: _index_put(a, v, (np.array([2, 0]), slice(None))),
                           [((3, 4), A), ((2, 4), A)], SAME),
    "index-put-bool-mask": (lambda a, v: _index_put(a, v, M), [((3, 4), A), ((5,), A)], SAME),
    # a repeated index: the value is a constant, because the entry written twice keeps only
    # the last write, while value's gradient is, as PyTorch's, the output's gradient at every
    # entry it was written to (not a derivative there: see the test below the table); a's
    # gradient is zero at the overwritten entries, each once
    "index-put-advanced-repeated": (lambda a: _index_put(a, REPEATED_VALUES, REPEATED),
                                    [((3, 4), A)], SAME),
    "index-put-broadcast-value": (lambda a, v: _index_put(a, v, np.array([0, 2])),
                                  [((3, 4), A), ((4,), A)], SAME),
    "index-put-broadcast-value-extra-dims": (lambda a, v: _index_put(a, v, 1),
                                             [((3, 4), A), ((1, 4), A)], SAME),
    "index-put-broadcast-input": (lambda a, v: _index_put(a.expand(3, 4), v, (0, slice(None))),
                                  [((1, 4), A), ((4,), A)], None),
    # ---- joining and cutting
    "concat-axis0": (lambda a, b: tl.concat([a, b]), [((2, 3), A), ((4, 3), A)],
                     lambda a, b: np.concatenate([a, b])),
    "concat-axis1-three": (lambda a, b, c: tl.concat([a, b, c], axis=1),
                           [((2, 3), A), ((2, 1), A), ((2, 2), A)],
                           lambda a, b, c: np.concatenate([a, b, c], axis=1)),
    "concat-same-twice": (lambda a: tl.concat([a, a * 2.0], axis=-1), [((2, 3), A)],
                          lambda a: np.concatenate([a, a * 2.0], axis=-1)),
    "concat-broadcast": (lambda a, b: tl.concat([a.expand(2, 3), b]), [((1, 3), A), ((2, 3), A)],
                         None),
    "stack-axis0": (lambda a, b: tl.stack([a, b]), [((2, 3), A), ((2, 3), A)],
                    lambda a, b: np.stack([a, b])),
    "stack-last": (lambda a, b, c: tl.stack([a, b, c], axis=-1),
                   [((2, 3), A), ((2, 3), A), ((2, 3), A)],
                   lambda a, b, c: np.stack([a, b, c], axis=-1)),
    "stack-broadcast": (lambda a, b: tl.stack([a.expand(2, 3), b], axis=1),
                        [((3,), A), ((2, 3), A)], None),
    "split-equal": (lambda a: tl.concat(list(a.split(2)[::-1]) + [a.split(2)[0] * 3.0]),
                    [((5, 3), A)], None),
    "split-sizes-skip-one": (lambda a: tl.concat([p * (i + 1.0) for i, p in
                                                  enumerate(tl.split(a, [1, 2, 1], axis=1))
                                                  if i != 1], axis=1),
                             [((3, 4), A)], None),
    "split-broadcast": (lambda a: tl.split(a.expand(2, 4), [3, 1], axis=1)[0], [((4,), A)],
                        None),
    "where": (lambda a, b: tl.where(M, a, b), [((3, 4), A), ((3, 4), A)],
              lambda a, b: np.where(M, a, b)),
    "where-broadcast": (lambda a, b: tl.where(M_ROW, a, b), [((3, 1), A), ((2, 1, 4), A)],
                        lambda a, b: np.where(M_ROW, a, b)),
    "where-scalar-other": (lambda a: a.where(tl.tensor(M), 0.5), [((3, 4), A)],
                           lambda a: np.where(M, a, 0.5)),
    "masked-fill": (lambda a: a.masked_fill(M, -3.0), [((3, 4), A)],
                    lambda a: np.where(M, -3.0, a)),
    "masked-fill-broadcast-mask": (lambda a: a.masked_fill(tl.tensor(M_ROW), 9.0),
                                   [((2, 3, 4), A)], lambda a: np.where(M_ROW, 9.0, a)),
    "masked-fill-broadcast-input": (lambda a: a.expand(3, 4).masked_fill(M, 0.0),
                                    [((1, 4), A)], None),
    # ---- the fused ops of tensorlib.nn.functional (one node each)
    "linear": (lambda x, w, b: F.linear(x, w, b), [((2, 3, 4), A), ((5, 4), A), ((5,), A)],
               lambda x, w, b: x @ w.T + b),
    "linear-no-bias": (lambda x, w: F.linear(x, w), [((3, 4), A), ((2, 4), A)],
                       lambda x, w: x @ w.T),
    "layer-norm": (lambda x, w, b: F.layer_norm(x, (5,), w, b),
                   [((2, 3, 5), A), ((5,), A), ((5,), A)], _layer_norm),
    "layer-norm-plain": (lambda x: F.layer_norm(x, 5), [((3, 5), A)], _layer_norm),
    "rms-norm": (lambda x, w: F.rms_norm(x, (5,), w), [((2, 3, 5), A), ((5,), A)], _rms_norm),
    "rms-norm-plain": (lambda x: F.rms_norm(x, 5), [((3, 5), A)], _rms_norm),
    "batch-norm": (lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
                   [((4, 3), A), ((3,), A), ((3,), A)], _batch_norm),
    "batch-norm-sequence": (lambda x: F.batch_norm(x, None, None, training=True),
                            [((3, 2, 4), A)], _batch_norm),
    "cross-entropy": (lambda z: F.cross_entropy(z, TARGETS), [((2, 3, 4), A)], _cross_entropy),
    "embedding": (lambda w: F.embedding(w, IDS), [((5, 3), A)], lambda w: w[IDS]),
    "causal-softmax": (lambda s: F.causal_softmax(s, 0.7), [((2, 4, 4), A)],
                       lambda s: _causal_softmax(s, 0.7)),
    "causal-softmax-offset": (lambda s: F.causal_softmax(s, 0.7, offset=2), [((2, 3, 5), A)],
                              lambda s: _causal_softmax(s, 0.7, offset=2)),
    "causal-attention": (lambda q: F.causal_attention(q, 2), [((2, 3, 12), A)],
                         lambda q: _causal_attention(q, 2)),
    "dropout": (lambda x: F.dropout(x, 0.5, rng=Rng(0)), [((3, 4), A)], None),
    # ---- the recurrent layers over a sequence (T=3, B=2, I=4, H=3), the first state given
    "rnn-layer": (lambda x, h, wi, wh, bi, bh: F.rnn_layer(x, h, wi, wh, bi, bh)[0],
                  [((3, 2, 4), A), ((2, 3), A), ((3, 4), A), ((3, 3), A), ((3,), A), ((3,), A)],
                  None),
    "gru-layer-reverse": (
        lambda x, h, wi, wh, bi, bh: F.gru_layer(x, h, wi, wh, bi, bh, reverse=True)[0],
        [((3, 2, 4), A), ((2, 3), A), ((9, 4), A), ((9, 3), A), ((9,), A), ((9,), A)], None),
    "lstm-layer": (
        lambda x, h, c, wi, wh: tl.cat([part.reshape(-1) for part in _lstm_parts(
            F.lstm_layer(x, (h, c), wi, wh))]),
        [((3, 2, 4), A), ((2, 3), A), ((2, 3), A), ((12, 4), A), ((12, 3), A)], None),
    "batch-norm-images": (lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
                          [((3, 2, 2, 3), A), ((2,), A), ((2,), A)], _batch_norm),
    # ---- convolution, pooling, padding, unfold and fold (rectangular images, channels !=
    # filters, every argument away from its default somewhere)
    "conv1d": (lambda x, w, b: F.conv1d(x, w, b), [((2, 3, 7), A), ((4, 3, 3), A), ((4,), A)],
               _conv),
    "conv1d-stride-padding-dilation": (
        lambda x, w: F.conv1d(x, w, stride=2, padding=2, dilation=3),
        [((2, 3, 11), A), ((5, 3, 3), A)],
        lambda x, w: _conv(x, w, stride=2, padding=2, dilation=3)),
    "conv1d-groups": (lambda x, w, b: F.conv1d(x, w, b, groups=3, padding=1),
                      [((2, 6, 5), A), ((9, 2, 2), A), ((9,), A)],
                      lambda x, w, b: _conv(x, w, b, padding=1, groups=3)),
    "conv1d-same": (lambda x, w: F.conv1d(x, w, padding="same", dilation=3),
                    [((1, 2, 6), A), ((3, 2, 2), A)],
                    lambda x, w: _conv(np.pad(x, [(0, 0), (0, 0), (1, 2)]), w, dilation=3)),
    "conv2d": (lambda x, w, b: F.conv2d(x, w, b), [((2, 3, 5, 4), A), ((4, 3, 3, 2), A),
                                                   ((4,), A)], _conv),
    "conv2d-stride-padding-dilation-groups": (
        lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=(1, 2), dilation=(2, 1),
                                 groups=2),
        [((2, 4, 7, 5), A), ((6, 2, 3, 2), A), ((6,), A)],
        lambda x, w, b: _conv(x, w, b, (2, 1), (1, 2), (2, 1), 2)),
    "conv2d-depthwise": (lambda x, w: F.conv2d(x, w, stride=2, padding=1, groups=3),
                         [((1, 3, 5, 6), A), ((3, 1, 3, 3), A)],
                         lambda x, w: _conv(x, w, stride=2, padding=1, groups=3)),
    "conv2d-unbatched": (lambda x, w: F.conv2d(x, w), [((2, 4, 3), A), ((3, 2, 2, 2), A)],
                         lambda x, w: _conv(x[None], w)[0]),
    "max-pool1d": (lambda x: F.max_pool1d(x, 3, stride=2, padding=1), [((2, 3, 8), D)],
                   lambda x: _pool(x, np.max, 3, 2, 1, value=-np.inf)),
    "max-pool2d": (lambda x: F.max_pool2d(x, 2), [((2, 3, 6, 4), D)],
                   lambda x: _pool(x, np.max, 2, 2)),
    "max-pool2d-overlapping": (lambda x: F.max_pool2d(x, (3, 2), stride=(2, 1), padding=1,
                                                      dilation=(1, 2)),
                               [((2, 2, 7, 6), D)],
                               lambda x: _pool(x, np.max, (3, 2), (2, 1), 1, (1, 2), -np.inf)),
    "avg-pool1d": (lambda x: F.avg_pool1d(x, 2), [((2, 3, 7), A)],
                   lambda x: _pool(x, np.mean, 2, 2)),
    "avg-pool2d-overlapping": (lambda x: F.avg_pool2d(x, 3, stride=(1, 2), padding=1),
                               [((2, 3, 5, 6), A)],
                               lambda x: _pool(x, np.mean, 3, (1, 2), 1)),
    "avg-pool2d-without-padding-in-the-count": (
        lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False),
        [((1, 2, 5, 4), A)],
        lambda x: _pool(x, np.nanmean, 3, 2, 1, value=np.nan)),
    "unfold": (lambda x: F.unfold(x, (3, 2), dilation=(1, 2), padding=1, stride=2),
               [((2, 3, 6, 5), A)], lambda x: _unfold(x, (3, 2), 2, 1, (1, 2))),
    "fold": (lambda c: F.fold(c, (5, 4), (2, 3), padding=1, stride=(2, 1)),
             [((2, 12, 12), A)], None),
    "fold-of-unfold": (lambda x: F.fold(F.unfold(x, 2, stride=1), (4, 3), 2),
                       [((1, 2, 4, 3), A)], None),
    "pad-constant": (lambda x: F.pad(x, (1, 2, 0, 3), value=0.5), [((2, 3, 4), A)],
                     lambda x: np.pad(x, [(0, 0), (0, 3), (1, 2)], constant_values=0.5)),
    "pad-reflect": (lambda x: F.pad(x, (2, 1, 1, 2), mode="reflect"), [((2, 3, 4), A)],
                    lambda x: np.pad(x, [(0, 0), (1, 2), (2, 1)], mode="reflect")),
    "pad-replicate": (lambda x: F.pad(x, (3, 1), mode="replicate"), [((2, 3, 4), A)],
                      lambda x: np.pad(x, [(0, 0), (0, 0), (3, 1)], mode="edge")),
    "pad-circular": (lambda x: F.pad(x, (1, 4, 2, 0), mode="circular"), [((2, 3, 4), A)],
                     lambda x: np.pad(x, [(0, 0), (2, 0), (1, 4)], mode="wrap")),
    "relu6": (lambda a: F.relu6(a * 4.0), [((3, 4), NZ)], lambda a: np.clip(a * 4.0, 0, 6)),
    "hardswish": (lambda a: F.hardswish(a * 2.5), [((3, 4), NZ)], lambda a: _hardswish(a * 2.5)),
    "mish": (lambda a: F.mish(a * 3.0), [((3, 4), A)], lambda a: _mish(a * 3.0)),
    # ---- a composite: softmax attention weights on a matmul, through a masked fill
    "composite-attention": (lambda q, k, v: ((q @ k.transpose() * 0.5)
                                             .masked_fill(np.triu(np.ones((3, 3), bool), 1),
                                                          -1e9)
                                             .softmax() @ v),
                            [((2, 3, 4), A), ((2, 3, 4), A), ((2, 3, 2), A)], None),
}

# ---- reductions: every dim form, keepdim both ways. amax/amin: a tensor over an int or a
# tuple of dims; var/std: PyTorch's default correction=1 (numpy's ddof=1) and correction=0
AXES = [None, 1, -1, (0, 2)]
for _axis in AXES:
    for _keep in (False, True):
        _tag = f"{_axis}-keepdims" if _keep else f"{_axis}"
        CASES[f"sum-{_tag}"] = (
            lambda a, ax=_axis, k=_keep: a.sum(axis=ax, keepdims=k), [((2, 3, 4), A)],
            lambda a, ax=_axis, k=_keep: a.sum(axis=ax, keepdims=k))
        CASES[f"mean-{_tag}"] = (
            lambda a, ax=_axis, k=_keep: a.mean(axis=ax, keepdims=k), [((2, 3, 4), A)],
            lambda a, ax=_axis, k=_keep: a.mean(axis=ax, keepdims=k))
        CASES[f"amax-{_tag}"] = (
            lambda a, ax=_axis, k=_keep: a.amax(ax, keepdim=k), [((2, 3, 4), D)],
            lambda a, ax=_axis, k=_keep: a.max(axis=ax, keepdims=k))
        CASES[f"amin-{_tag}"] = (
            lambda a, ax=_axis, k=_keep: a.amin(ax, keepdim=k), [((2, 3, 4), D)],
            lambda a, ax=_axis, k=_keep: a.min(axis=ax, keepdims=k))
        CASES[f"var-{_tag}"] = (
            lambda a, ax=_axis, k=_keep: a.var(ax, keepdim=k), [((2, 3, 4), A)],
            lambda a, ax=_axis, k=_keep: a.var(axis=ax, keepdims=k, ddof=1))
        CASES[f"var-correction0-{_tag}"] = (
            lambda a, ax=_axis, k=_keep: a.var(ax, keepdim=k, correction=0), [((2, 3, 4), A)],
            lambda a, ax=_axis, k=_keep: a.var(axis=ax, keepdims=k))
        CASES[f"std-{_tag}"] = (
            lambda a, ax=_axis, k=_keep: a.std(ax, keepdim=k), [((2, 3, 4), A)],
            lambda a, ax=_axis, k=_keep: a.std(axis=ax, keepdims=k, ddof=1))
        CASES[f"std-correction0-{_tag}"] = (
            lambda a, ax=_axis, k=_keep: a.std(ax, keepdim=k, correction=0), [((2, 3, 4), A)],
            lambda a, ax=_axis, k=_keep: a.std(axis=ax, keepdims=k))
        CASES[f"logsumexp-{_tag}"] = (
            lambda a, ax=_axis, k=_keep: a.logsumexp(axis=ax, keepdims=k), [((2, 3, 4), A)],
            lambda a, ax=_axis, k=_keep: _logsumexp(a, ax, k))
# max(dim) / min(dim): the values of the (values, indices) pair, their gradient going to the
# first extreme only (the values are distinct here; see the broadcast cases for ties)
for _axis in (0, 1, -1):
    for _keep in (False, True):
        _tag = f"{_axis}-keepdims" if _keep else f"{_axis}"
        CASES[f"max-dim-{_tag}"] = (
            lambda a, ax=_axis, k=_keep: a.max(ax, keepdim=k).values, [((2, 3, 4), D)],
            lambda a, ax=_axis, k=_keep: a.max(axis=ax, keepdims=k))
        CASES[f"min-dim-{_tag}"] = (
            lambda a, ax=_axis, k=_keep: a.min(ax, keepdim=k)[0], [((2, 3, 4), D)],
            lambda a, ax=_axis, k=_keep: a.min(axis=ax, keepdims=k))
CASES["max-dim-axis-keyword"] = (lambda a: a.max(axis=1, keepdims=True).values,
                                 [((2, 3, 4), D)], lambda a: a.max(axis=1, keepdims=True))
# reductions of a broadcast (expanded) input: copies tie in amax, but amax stays smooth in
# the original values because every copy moves together.
for _axis in (None, 0, (1, 2)):
    for _name in ("sum", "mean", "amax", "amin", "var", "std", "logsumexp"):
        CASES[f"{_name}-{_axis}-broadcast"] = (
            lambda a, ax=_axis, n=_name: getattr(a.expand(2, 3, 4), n)(axis=ax),
            [((3, 4), D)], None)
# max(dim) / min(dim) along the expanded dim: every copy ties, the first takes the gradient
CASES["max-dim-0-broadcast-ties"] = (lambda a: a.expand(2, 3, 4).max(0).values,
                                     [((3, 4), D)], None)
CASES["min-dim-0-broadcast-ties"] = (lambda a: a.expand(2, 3, 4).min(dim=0).values,
                                     [((3, 4), D)], None)
CASES["var-correction1"] = (lambda a: a.var(1, correction=1), [((2, 3, 4), A)],
                            lambda a: a.var(axis=1, ddof=1))
CASES["var-correction1-all-keepdims"] = (lambda a: a.var(correction=1, keepdim=True),
                                         [((2, 3, 4), A)],
                                         lambda a: a.var(ddof=1, keepdims=True))
CASES["var-correction0-all"] = (lambda a: a.var(correction=0), [((2, 3, 4), A)],
                                lambda a: a.var())
CASES["var-correction2-axis-keyword"] = (lambda a: a.var(axis=(0, 2), correction=2),
                                         [((2, 3, 4), A)], lambda a: a.var(axis=(0, 2), ddof=2))
CASES["var-unbiased-true"] = (lambda a: a.var(1, unbiased=True), [((2, 3, 4), A)],
                              lambda a: a.var(axis=1, ddof=1))
CASES["var-unbiased-false"] = (lambda a: a.var(1, unbiased=False), [((2, 3, 4), A)],
                               lambda a: a.var(axis=1))
CASES["var-unbiased-positional-keepdim"] = (lambda a: a.var(-1, False, True), [((2, 3, 4), A)],
                                            lambda a: a.var(axis=-1, keepdims=True))
CASES["std-correction1-all"] = (lambda a: a.std(correction=1), [((2, 3, 4), A)],
                                lambda a: a.std(ddof=1))
CASES["std-unbiased-true"] = (lambda a: a.std((0, 2), unbiased=True), [((2, 3, 4), A)],
                              lambda a: a.std(axis=(0, 2), ddof=1))
CASES["std-unbiased-false-keepdim"] = (lambda a: a.std((0, 2), unbiased=False, keepdim=True),
                                       [((2, 3, 4), A)],
                                       lambda a: a.std(axis=(0, 2), keepdims=True))

LAYOUTS = ["contiguous", "non-contiguous"]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", list(CASES))
def test_gradcheck_and_forward_value(name, layout):
    fn, specs, reference = CASES[name]
    arrays = _inputs(specs, layout)
    if layout == "non-contiguous":
        assert any(not a.flags.c_contiguous for a in arrays)
    if reference is not None:
        expected = (fn if reference is SAME else reference)(*[a.copy() for a in arrays])
        result = fn(*[Tensor(a) for a in arrays])
        assert result.dtype == np.float64
        assert result.shape == np.shape(expected)
        np.testing.assert_allclose(result.data, expected, rtol=1e-12, atol=1e-12)
    inputs = [Tensor(a, requires_grad=True) for a in arrays]
    for t, a in zip(inputs, arrays, strict=True):
        assert t.numpy() is a  # the view itself is the tensor's data, not a contiguous copy
    assert gradcheck(fn, *inputs)


@pytest.mark.parametrize("name", ["add-broadcast", "matmul-batched-vec", "softmax-axis1",
                                  "getitem-repeated", "amax-(0, 2)", "max-dim-1", "std-1",
                                  "gather-repeated", "index-put-broadcast-value", "gelu-tanh",
                                  "conv2d-stride-padding-dilation-groups", "max-pool1d",
                                  "avg-pool2d-overlapping", "fold", "pad-reflect", "mish"])
def test_float32_forward_and_gradient_dtypes(name):
    fn, specs, _ = CASES[name]
    arrays = _inputs(specs, "contiguous")
    inputs = [Tensor(a.astype(np.float32), requires_grad=True) for a in arrays]
    out = fn(*inputs)
    assert out.dtype == np.float32
    out.sum().backward()
    for t in inputs:
        assert t.grad.dtype == np.float32 and t.grad.shape == t.shape


FUSED = ["linear", "linear-no-bias", "layer-norm", "layer-norm-plain", "cross-entropy",
         "embedding", "causal-softmax", "causal-softmax-offset", "causal-attention", "dropout",
         "gelu", "matmul-batched-by-matrix", "softmax-last"]


@pytest.mark.parametrize("name", FUSED)
def test_gradcheck_on_the_plain_paths_of_reference_mode(name):
    fn, specs, _ = CASES[name]
    inputs = [Tensor(a, requires_grad=True) for a in _inputs(specs, "contiguous")]
    with tl.reference_mode():
        assert gradcheck(fn, *inputs)


def test_max_and_min_along_a_dim_give_the_gradient_to_the_first_extreme_only():
    """x.max(dim).values takes its gradient at the first maximum (where its indices point),
    as PyTorch; amax and the full max() share it among tied maxima."""
    data = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]])
    x = Tensor(data.copy(), requires_grad=True)
    values, indices = x.max(1)
    np.testing.assert_array_equal(values.data, [3.0, 2.0])
    np.testing.assert_array_equal(indices.data, [1, 0])
    assert indices.dtype == np.int64
    values.backward(np.array([1.0, 2.0]))
    np.testing.assert_array_equal(x.grad, [[0.0, 1.0, 0.0], [2.0, 0.0, 0.0]])
    x = Tensor(data.copy(), requires_grad=True)
    smallest = x.min(0, keepdim=True)
    np.testing.assert_array_equal(smallest.indices.data, [[0, 1, 1]])
    smallest.values.sum().backward()
    np.testing.assert_array_equal(x.grad, [[1.0, 0.0, 0.0], [0.0, 1.0, 1.0]])
    x = Tensor(data.copy(), requires_grad=True)
    x.amax(1).backward(np.array([1.0, 2.0]))
    np.testing.assert_array_equal(x.grad, [[0.0, 0.5, 0.5], [1.0, 1.0, 0.0]])
    x = Tensor(data.copy(), requires_grad=True)
    x.max().backward()
    np.testing.assert_array_equal(x.grad, [[0.0, 0.5, 0.5], [0.0, 0.0, 0.0]])


def test_index_put_with_a_repeated_index_gives_value_the_gradient_of_each_write():
    """With a repeated advanced index only the last write survives in the forward, but the
    value's gradient is the output's gradient at every entry it was written to (each repeat
    its own, summed over broadcasting), as PyTorch's index_put."""
    weights = np.arange(12.0).reshape(3, 4) + 1.0
    a = Tensor(np.zeros((3, 4)), requires_grad=True)
    value = Tensor(REPEATED_VALUES.copy(), requires_grad=True)
    out = _index_put(a, value, REPEATED)
    np.testing.assert_array_equal(out.data, _index_put(np.zeros((3, 4)), REPEATED_VALUES,
                                                       REPEATED))
    assert out.grad_fn.function is ops.IndexPut
    out.backward(weights)
    np.testing.assert_array_equal(value.grad, [weights[0, 1], weights[2, 3], weights[0, 1]])
    expected = weights.copy()
    expected[0, 1] = expected[2, 3] = 0.0
    np.testing.assert_array_equal(a.grad, expected)
    scalar = Tensor(np.array(0.5), requires_grad=True)
    _index_put(Tensor(np.zeros((3, 4)), requires_grad=True), scalar, REPEATED).backward(weights)
    assert scalar.grad == 2 * weights[0, 1] + weights[2, 3]


def test_every_op_is_gradchecked_here():
    """Each Function that tensorlib.engine.ops exports is a node of some case's graph above."""
    seen = set()
    for fn, specs, _ in CASES.values():
        out = fn(*[Tensor(a, requires_grad=True) for a in _inputs(specs, "contiguous")])
        stack = [out.grad_fn]
        while stack:
            node = stack.pop()
            if node is not None and hasattr(node, "function"):
                seen.update(node.function.__mro__)  # a kernel in the op's place: the op too
                stack.extend(node.next)
    exported = {getattr(ops, name) for name in ops.__all__}
    functions = {f for f in exported if isinstance(f, type) and issubclass(f, Function)}
    assert functions - seen == set()


# --------------------------------------------------------------------------- the checker


def test_gradcheck_catches_a_wrong_backward():
    class WrongSquare(tl.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * x  # should be 2 * x * grad

    x = Tensor(np.array([0.5, -1.0, 2.0]), requires_grad=True)
    with pytest.raises(GradcheckError, match="input 0"):
        gradcheck(lambda t: WrongSquare.apply(t), x)


def test_gradcheck_catches_a_missing_broadcast_reduction():
    class ForgetfulAdd(tl.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a + b

        @staticmethod
        def backward(ctx, grad):
            return grad, grad.sum(axis=0) * 0.5  # wrong: half the broadcast gradient

    a = Tensor(np.ones((3, 2)), requires_grad=True)
    b = Tensor(np.ones(2), requires_grad=True)
    with pytest.raises(GradcheckError, match="input 1"):
        gradcheck(lambda x, y: ForgetfulAdd.apply(x, y), a, b)


def test_gradcheck_requires_float64():
    with pytest.raises(TypeError, match="float64"):
        gradcheck(lambda t: t * 2, tl.tensor([1.0], requires_grad=True))


def test_gradcheck_skips_inputs_without_grad_and_leaves_data_unchanged():
    a = np.array([1.0, 2.0, 3.0])
    x = Tensor(a.copy(), requires_grad=True)
    c = Tensor(np.array([4.0, 5.0, 6.0]))
    assert gradcheck(lambda u, v: u * v, x, c)
    np.testing.assert_array_equal(x.data, a)
    with pytest.raises(ValueError):
        gradcheck(lambda v: v * 2, c)
