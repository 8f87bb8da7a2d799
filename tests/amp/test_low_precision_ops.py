"""float16 and bfloat16 tensors: every op computes in float32 and rounds its output once.

An op given low-precision arrays widens them to float32, runs its float32 code and rounds the
result (and, in backward, each input's gradient) once to the low dtype, as PyTorch's CPU
kernels do. So for one op the answer is exactly the float32 answer on the widened inputs,
rounded: that is what the tests without PyTorch assert, bit for bit, for the elementwise,
reduction, normalization, softmax, loss, matmul, convolution and attention ops, and their
gradients. The shape ops run natively (no widening) and keep the dtype. Also: modules
converted by ``half()``/``bfloat16()``, and a bfloat16 tensor's repr.

Where PyTorch is importable: a set of ops on the same bfloat16 and float16 inputs against
``torch``, dtypes equal and values and gradients within one rounding of the low dtype.
"""

import warnings

import numpy as np
import pytest

import tensorlib as tl
from tensorlib import nn
from tensorlib.nn import functional as F

LOW = {"float16": tl.float16, "bfloat16": tl.bfloat16}
# one rounding of each low dtype, relative to the values' magnitude (its epsilon)
ROUNDING = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}
TARGETS = [0, 1, 2, 4]  # class ids for the (4, 5) logits
IDS = [[0, 2, 5], [5, 1, 1]]  # rows of a (6, 3) embedding table


def ids(lib, values):
    return lib.tensor(np.array(values))


def embedding(lib, F, weight):
    if lib is tl:
        return F.embedding(weight, ids(lib, IDS))
    return F.embedding(ids(lib, IDS), weight)  # PyTorch's order: (input, weight)


# name -> (the op, written for ``lib`` = tensorlib or torch and its functional ``F``; the
# shapes of its floating inputs; True where the inputs must be positive)
CASES = {
    "add": (lambda lib, F, a, b: a + b, [(4, 5), (4, 5)], False),
    "add_broadcast": (lambda lib, F, a, b: a + b, [(4, 5), (5,)], False),
    "sub": (lambda lib, F, a, b: a - b, [(4, 5), (4, 5)], False),
    "mul": (lambda lib, F, a, b: a * b, [(4, 5), (1, 5)], False),
    "div": (lambda lib, F, a, b: a / b, [(4, 5), (4, 5)], True),
    "pow": (lambda lib, F, a, b: a ** b, [(4, 5), (4, 5)], True),
    "pow_number": (lambda lib, F, a: a ** 3.0, [(4, 5)], False),
    "square": (lambda lib, F, a: a ** 2, [(4, 5)], False),
    "neg": (lambda lib, F, a: -a, [(4, 5)], False),
    "maximum": (lambda lib, F, a, b: lib.maximum(a, b), [(4, 5), (4, 5)], False),
    "minimum": (lambda lib, F, a, b: lib.minimum(a, b), [(4, 5), (4, 5)], False),
    "abs": (lambda lib, F, a: a.abs(), [(4, 5)], False),
    "exp": (lambda lib, F, a: a.exp(), [(4, 5)], False),
    "log": (lambda lib, F, a: a.log(), [(4, 5)], True),
    "sqrt": (lambda lib, F, a: a.sqrt(), [(4, 5)], True),
    "tanh": (lambda lib, F, a: a.tanh(), [(4, 5)], False),
    "sigmoid": (lambda lib, F, a: a.sigmoid(), [(4, 5)], False),
    "relu": (lambda lib, F, a: F.relu(a), [(4, 5)], False),
    "gelu": (lambda lib, F, a: F.gelu(a), [(4, 5)], False),
    "gelu_tanh": (lambda lib, F, a: F.gelu(a, approximate="tanh"), [(4, 5)], False),
    "silu": (lambda lib, F, a: F.silu(a), [(4, 5)], False),
    "softplus": (lambda lib, F, a: F.softplus(a), [(4, 5)], False),
    "leaky_relu": (lambda lib, F, a: F.leaky_relu(a), [(4, 5)], False),
    "relu6": (lambda lib, F, a: F.relu6(a), [(4, 5)], False),
    "hardswish": (lambda lib, F, a: F.hardswish(a), [(4, 5)], False),
    "mish": (lambda lib, F, a: F.mish(a), [(4, 5)], False),
    "sum": (lambda lib, F, a: a.sum(), [(4, 5)], False),
    "sum_dim": (lambda lib, F, a: a.sum(-1), [(4, 5)], False),
    "mean": (lambda lib, F, a: a.mean(), [(4, 5)], False),
    "mean_dim": (lambda lib, F, a: a.mean(0, keepdim=True), [(4, 5)], False),
    "var": (lambda lib, F, a: a.var(-1), [(4, 5)], False),
    "std": (lambda lib, F, a: a.std(0), [(4, 5)], False),
    "amax": (lambda lib, F, a: a.amax(-1), [(4, 5)], False),
    "max": (lambda lib, F, a: a.max(), [(4, 5)], False),
    "logsumexp": (lambda lib, F, a: a.logsumexp(-1), [(4, 5)], False),
    "softmax": (lambda lib, F, a: F.softmax(a, dim=-1), [(4, 5)], False),
    "log_softmax": (lambda lib, F, a: F.log_softmax(a, dim=0), [(4, 5)], False),
    "layer_norm": (lambda lib, F, a, w, b: F.layer_norm(a, (5,), w, b),
                   [(4, 5), (5,), (5,)], False),
    "rms_norm": (lambda lib, F, a, w: F.rms_norm(a, (5,), w, eps=1e-6), [(4, 5), (5,)], False),
    "cross_entropy": (lambda lib, F, a: F.cross_entropy(a, ids(lib, TARGETS)), [(4, 5)], False),
    "cross_entropy_none": (lambda lib, F, a: F.cross_entropy(a, ids(lib, TARGETS),
                                                             reduction="none"), [(4, 5)], False),
    "matmul": (lambda lib, F, a, b: a @ b, [(4, 5), (5, 3)], False),
    "matmul_batched": (lambda lib, F, a, b: lib.matmul(a, b), [(2, 4, 5), (2, 5, 3)], False),
    "linear": (lambda lib, F, x, w, b: F.linear(x, w, b), [(2, 4, 5), (3, 5), (3,)], False),
    "linear_no_bias": (lambda lib, F, x, w: F.linear(x, w), [(4, 5), (3, 5)], False),
    "conv1d": (lambda lib, F, x, w, b: F.conv1d(x, w, b, padding=1),
               [(2, 3, 7), (4, 3, 3), (4,)], False),
    "conv2d": (lambda lib, F, x, w, b: F.conv2d(x, w, b, stride=2),
               [(2, 3, 6, 6), (4, 3, 3, 3), (4,)], False),
    "embedding": (embedding, [(6, 3)], False),
    "sdpa": (lambda lib, F, q, k, v: F.scaled_dot_product_attention(q, k, v),
             [(2, 2, 4, 8), (2, 2, 6, 8), (2, 2, 6, 8)], False),
    "sdpa_causal": (lambda lib, F, q, k, v: F.scaled_dot_product_attention(
        q, k, v, is_causal=True), [(2, 2, 4, 8)] * 3, False),
    "avg_pool1d": (lambda lib, F, x: F.avg_pool1d(x, 2), [(2, 3, 8)], False),
    "max_pool2d": (lambda lib, F, x: F.max_pool2d(x, 2), [(2, 3, 4, 4)], False),
}
# tensorlib's own ops, without a PyTorch twin
OURS_ONLY = {
    "causal_softmax": (lambda lib, F, s: F.causal_softmax(s, 0.5), [(2, 4, 4)], False),
    "causal_attention": (lambda lib, F, qkv: F.causal_attention(qkv, 2), [(2, 4, 24)], False),
    "batch_norm": (lambda lib, F, x, w, b: F.batch_norm(x, None, None, w, b, training=True),
                   [(6, 3), (3,), (3,)], False),
}
# the shape ops run on the low-precision arrays themselves
MASK = np.arange(20).reshape(4, 5) % 3 == 0
SHAPE_OPS = {
    "reshape": lambda a: a.reshape(5, 4),
    "permute": lambda a: a.permute(1, 0),
    "expand": lambda a: a[:1].expand(3, 5),
    "getitem": lambda a: a[1:, ::2],
    "cat": lambda a: tl.cat([a, a[:2]]),
    "stack": lambda a: tl.stack([a, a]),
    "where": lambda a: tl.where(tl.tensor(MASK), a, a * 0.5),
    "masked_fill": lambda a: a.masked_fill(tl.tensor(MASK), 0.25),
    "gather": lambda a: a.gather(1, tl.tensor(np.array([[0, 4]] * 4))),
    "clone": lambda a: a.clone(),
    "pad": lambda a: F.pad(a, (1, 2)),
}


# The ops whose backward reads their output, which they keep rounded to the low dtype, as
# PyTorch keeps it: their gradients are not the float32 ones rounded once, but close to them.
READ_THE_OUTPUT = {"pow", "exp", "sqrt", "tanh", "sigmoid", "softmax", "log_softmax",
                   "causal_softmax"}
EPS = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}


def arrays(shapes, dtype, positive=False, seed=0):
    """Standard normal values, rounded to ``dtype`` (exact in it and in float32)."""
    data = np.random.default_rng(seed)
    out = []
    for shape in shapes:
        a = data.standard_normal(shape).astype(np.float32)
        out.append((np.abs(a) + 0.5 if positive else a).astype(dtype))
    return out


def upstream_gradient(shape, low):
    """The gradient backward starts from: values of the low dtype ``low``."""
    return arrays([tuple(shape)], LOW[low], seed=7)[0]


def run(function, values, low):
    """Forward ``function`` on fresh tensorlib leaves holding ``values``, then backward
    ``upstream_gradient`` (held in the output's dtype: exact). Returns the output and the
    leaves."""
    leaves = [tl.tensor(v, requires_grad=True) for v in values]
    out = function(tl, F, *leaves)
    upstream = upstream_gradient(out.shape, low).astype(out.numpy().dtype)
    (out * tl.tensor(upstream)).sum().backward()
    return out, leaves


def as_float(array):
    return np.asarray(array).astype(np.float32)


# --------------------------------------------------------------------------- no torch
@pytest.mark.parametrize("low", LOW)
@pytest.mark.parametrize("name", [*CASES, *OURS_ONLY])
def test_op_is_the_float32_result_rounded_once(name, low):
    function, shapes, positive = {**CASES, **OURS_ONLY}[name]
    dtype = LOW[low]
    values = arrays(shapes, dtype, positive)
    out, leaves = run(function, values, low)
    wide_out, wide_leaves = run(function, [as_float(v) for v in values], low)
    assert out.dtype == dtype, f"{name}: output {out.dtype}"
    assert wide_out.dtype == tl.float32
    np.testing.assert_array_equal(as_float(out.numpy()), as_float(wide_out.numpy().astype(dtype)))
    for position, (leaf, wide) in enumerate(zip(leaves, wide_leaves, strict=True)):
        assert leaf.grad.dtype == dtype, f"{name}: gradient {position} in {leaf.grad.dtype}"
        expected = as_float(wide.grad.numpy().astype(dtype))
        if name not in READ_THE_OUTPUT:
            np.testing.assert_array_equal(as_float(leaf.grad.numpy()), expected,
                                          err_msg=f"{name}: gradient {position}")
        else:  # from the rounded output: within a few roundings of the float32 gradient
            slack = 4 * EPS[low]
            np.testing.assert_allclose(as_float(leaf.grad.numpy()), expected, rtol=slack,
                                       atol=slack * np.abs(expected).max(),
                                       err_msg=f"{name}: gradient {position}")


@pytest.mark.parametrize("low", LOW)
@pytest.mark.parametrize("name", SHAPE_OPS)
def test_shape_ops_keep_the_dtype_and_the_values(name, low):
    dtype = LOW[low]
    (value,) = arrays([(4, 5)], dtype)
    x = tl.tensor(value, requires_grad=True)
    out = SHAPE_OPS[name](x)
    wide = SHAPE_OPS[name](tl.tensor(as_float(value)))
    assert out.dtype == dtype
    np.testing.assert_array_equal(as_float(out.numpy()), wide.numpy())
    out.sum().backward()
    assert x.grad.dtype == dtype and x.grad.shape == (4, 5)


@pytest.mark.parametrize("low", LOW)
def test_rms_norm_default_eps_is_the_epsilon_of_the_inputs_dtype(low):
    dtype = LOW[low]
    x, w = arrays([(4, 5), (5,)], dtype)
    out = F.rms_norm(tl.tensor(x), (5,), tl.tensor(w))  # PyTorch: eps = finfo(x.dtype).eps
    eps = float(tl.finfo(dtype).eps)
    wide = F.rms_norm(tl.tensor(as_float(x)), (5,), tl.tensor(as_float(w)), eps=eps)
    assert out.dtype == dtype
    np.testing.assert_array_equal(as_float(out.numpy()), as_float(wide.numpy().astype(dtype)))


@pytest.mark.parametrize("low", LOW)
def test_a_result_is_rounded_once_not_at_each_step(low):
    # (a * b) summed in float32 and rounded once: not the sum of rounded products
    dtype = LOW[low]
    a = tl.tensor(np.full(256, 1 + 2 ** -6, dtype=np.float32).astype(dtype))
    b = tl.tensor(np.full(256, 1 + 2 ** -6, dtype=np.float32).astype(dtype))
    exact = 256 * (1 + 2 ** -6) ** 2
    assert (a @ b).dtype == dtype
    assert float((a @ b).item()) == float(np.float32(exact).astype(dtype))


@pytest.mark.parametrize("low", LOW)
def test_overflow_is_silent_and_gives_inf(low):
    dtype = LOW[low]
    big = float(tl.finfo(dtype).max)
    x = tl.tensor(np.array([big, 1.0], dtype=np.float32).astype(dtype), requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # not even numpy's overflow warning
        out = x * 4.0
        total = tl.tensor(np.full(8, big, dtype=np.float32).astype(dtype)).sum()
        (out * tl.tensor(np.full(2, big, dtype=np.float32).astype(dtype))).sum().backward()
    assert out.dtype == dtype and as_float(out.numpy()).tolist() == [np.inf, 4.0]
    assert total.dtype == dtype and float(total.item()) == np.inf
    assert x.grad.dtype == dtype and np.isinf(as_float(x.grad.numpy())).all()


def _model():
    return nn.Sequential(nn.Linear(4, 8, rng=tl.Rng(0)), nn.GELU(), nn.LayerNorm(8),
                         nn.Linear(8, 3, rng=tl.Rng(1)))


@pytest.mark.parametrize("low", LOW)
def test_module_conversion_casts_every_parameter_and_a_forward_runs(low):
    dtype = LOW[low]
    model = _model()
    converted = getattr(model, "half" if low == "float16" else "bfloat16")()
    assert converted is model
    assert {name: p.dtype for name, p in model.named_parameters()} == \
        {name: dtype for name, _ in _model().named_parameters()}
    x = tl.tensor(arrays([(2, 4)], dtype)[0])
    out = model(x)
    assert out.dtype == dtype and out.shape == (2, 3)
    assert np.isfinite(as_float(out.numpy())).all()
    F.cross_entropy(out, np.array([0, 2])).backward()
    assert all(p.grad.dtype == dtype for p in model.parameters())
    # the same parameters in float32: one rounding per op apart
    wide = _model()
    wide.load_state_dict({k: as_float(v) for k, v in
                          model.state_dict().items()})
    expected = wide(tl.tensor(as_float(x.numpy()))).numpy()
    np.testing.assert_allclose(as_float(out.numpy()), expected, rtol=0,
                               atol=8 * ROUNDING[low] * np.abs(expected).max())
    model.float()
    assert all(p.dtype == tl.float32 for p in model.parameters())


@pytest.mark.parametrize("method, dtype", [("half", tl.float16), ("bfloat16", tl.bfloat16)])
def test_module_conversion_casts_floating_buffers_too(method, dtype):
    norm = getattr(nn.BatchNorm1d(3), method)()
    state = norm.state_dict()
    assert state["running_mean"].dtype == state["running_var"].dtype == dtype
    assert state["num_batches_tracked"].dtype == tl.int64  # integers stay
    assert norm(tl.tensor(arrays([(5, 3)], dtype)[0])).dtype == dtype


def test_tensor_conversions():
    x = tl.tensor([1.5, -2.25, 3.0])
    assert x.half().dtype == tl.float16 == tl.half
    assert x.bfloat16().dtype == tl.bfloat16
    assert x.to(tl.bfloat16).float().dtype == tl.float32
    np.testing.assert_array_equal(x.bfloat16().float().numpy(), x.numpy())
    # round to nearest even: 1 + 2**-8 is halfway between two bfloat16 numbers
    assert float(tl.tensor([1 + 2 ** -8]).bfloat16().item()) == 1.0
    assert tl.finfo(tl.bfloat16).eps == 2 ** -7 and tl.finfo(tl.float16).eps == 2 ** -10


def test_repr_of_a_bfloat16_tensor():
    x = tl.tensor([1.5, -2.25, 3.0]).bfloat16()
    text = repr(x)
    assert text.startswith("tensor(") and "dtype=bfloat16" in text
    assert "1.5" in text and "-2.25" in text and "3." in text
    assert "requires_grad=True" in repr(x.requires_grad_())
    assert "dtype=float16" in repr(tl.tensor(0.5).half())


# ------------------------------------------------------------------------ against PyTorch
TORCH_CASES = ["add", "mul", "exp", "tanh", "gelu", "softmax", "log_softmax", "layer_norm",
               "rms_norm", "sum", "mean", "matmul", "linear", "conv1d", "cross_entropy",
               "embedding", "sdpa", "sdpa_causal"]
# reductions over many terms may round a sum that PyTorch ordered otherwise: a little slack
SLACK = {"sum": 2, "mean": 2, "matmul": 2, "linear": 2, "conv1d": 2, "sdpa": 2,
         "sdpa_causal": 2, "layer_norm": 2, "rms_norm": 2}


def assert_within_rounding(ours, theirs, low, slack=1, what=""):
    """|ours - theirs| within ``slack`` roundings of ``low``, relative to the magnitude."""
    ours, theirs = as_float(ours), as_float(theirs)
    assert ours.shape == theirs.shape, what
    tolerance = slack * ROUNDING[low]
    np.testing.assert_allclose(ours, theirs, rtol=tolerance,
                               atol=tolerance * max(np.abs(theirs).max(), 1e-3), err_msg=what)


def to_torch(torch, values, low):
    return [torch.tensor(as_float(v)).to(getattr(torch, low)) for v in values]


@pytest.mark.parametrize("low", LOW)
@pytest.mark.parametrize("name", TORCH_CASES)
def test_op_matches_torch(name, low):
    torch = pytest.importorskip("torch")
    function, shapes, positive = CASES[name]
    values = arrays(shapes, LOW[low], positive)
    out, leaves = run(function, values, low)
    theirs = [t.requires_grad_() for t in to_torch(torch, values, low)]
    their_out = function(torch, torch.nn.functional, *theirs)
    upstream = upstream_gradient(out.shape, low)
    (their_out * to_torch(torch, [upstream], low)[0]).sum().backward()
    assert str(out.dtype) == str(their_out.dtype).removeprefix("torch.")
    slack = SLACK.get(name, 1)
    assert_within_rounding(out.numpy(), their_out.detach().float().numpy(), low, slack, name)
    for position, (leaf, their_leaf) in enumerate(zip(leaves, theirs, strict=True)):
        assert str(leaf.grad.dtype) == str(their_leaf.grad.dtype).removeprefix("torch.")
        assert_within_rounding(leaf.grad.numpy(), their_leaf.grad.float().numpy(), low,
                               2 * slack, f"{name}: gradient {position}")


@pytest.mark.parametrize("low", LOW)
def test_rms_norm_default_eps_matches_torch(low):
    torch = pytest.importorskip("torch")
    x, w = arrays([(4, 5), (5,)], LOW[low])
    ours = F.rms_norm(tl.tensor(x), (5,), tl.tensor(w))
    theirs = torch.nn.functional.rms_norm(*to_torch(torch, [x], low), (5,),
                                          *to_torch(torch, [w], low))
    assert_within_rounding(ours.numpy(), theirs.float().numpy(), low, 2)
