"""``tensorlib.autocast``: PyTorch's ``torch.autocast`` on the CPU.

Inside a block the ops on PyTorch's lower-precision list (matmul, linear, convolution, the
attention cores) cast their floating inputs to the block's dtype, the losses compute in
float32, and every other op runs in its inputs' dtype. float64 and integer tensors are never
cast; the casts are differentiable, so float32 parameters get float32 gradients. The state is
per thread, nests, and is restored on the way out, exception or not.

Without PyTorch: output dtypes and values of each listed op and a few unlisted ones, the
block's state, the decorator form, threads, and the errors. Where PyTorch is importable: each
op's output and input gradients against ``torch.autocast("cpu", ...)`` in bfloat16 and
float16, and the float32 parameter gradients of a small model.
"""

import threading

import numpy as np
import pytest

import tensorlib as tl
from tensorlib import nn
from tensorlib.nn import functional as F

LOW = {"bfloat16": tl.bfloat16, "float16": tl.float16}
ROUNDING = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}  # one rounding, relative
TARGETS = [0, 2, 1, 2]


def normal(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def as_float(array):
    return np.asarray(array).astype(np.float32)


def ids(lib, values):
    return lib.tensor(np.array(values))


# name -> (the op for ``lib`` and its ``F``; its float32 inputs' shapes; the output dtype
# under autocast: "low" for the block's dtype, or a dtype name)
LISTED = {
    "matmul": (lambda lib, F, a, b: a @ b, [(4, 5), (5, 3)], "low"),
    "matmul_batched": (lambda lib, F, a, b: lib.matmul(a, b), [(2, 4, 5), (2, 5, 3)], "low"),
    "linear": (lambda lib, F, x, w, b: F.linear(x, w, b), [(4, 5), (3, 5), (3,)], "low"),
    "linear_no_bias": (lambda lib, F, x, w: F.linear(x, w), [(2, 4, 5), (3, 5)], "low"),
    "conv1d": (lambda lib, F, x, w, b: F.conv1d(x, w, b, padding=1),
               [(2, 3, 7), (4, 3, 3), (4,)], "low"),
    "conv2d": (lambda lib, F, x, w, b: F.conv2d(x, w, b, stride=2),
               [(2, 3, 6, 6), (4, 3, 3, 3), (4,)], "low"),
    "sdpa": (lambda lib, F, q, k, v: F.scaled_dot_product_attention(q, k, v),
             [(2, 2, 4, 8), (2, 2, 6, 8), (2, 2, 6, 8)], "low"),
    "sdpa_causal": (lambda lib, F, q, k, v: F.scaled_dot_product_attention(
        q, k, v, is_causal=True), [(2, 2, 4, 8)] * 3, "low"),
    "cross_entropy": (lambda lib, F, a: F.cross_entropy(a, ids(lib, TARGETS)), [(4, 3)],
                      "float32"),
    "cross_entropy_of_matmul": (lambda lib, F, x, w: F.cross_entropy(x @ w, ids(lib, TARGETS)),
                                [(4, 5), (5, 3)], "float32"),
}
UNLISTED = {
    "softmax_of_matmul": (lambda lib, F, a, b: F.softmax(a @ b, dim=-1), [(4, 5), (5, 3)],
                          "low"),
    "softmax": (lambda lib, F, a: F.softmax(a, dim=-1), [(4, 5)], "float32"),
    "layer_norm": (lambda lib, F, x, w, b: F.layer_norm(x, (5,), w, b), [(4, 5), (5,), (5,)],
                   "float32"),
    "gelu_of_linear": (lambda lib, F, x, w: F.gelu(F.linear(x, w)), [(4, 5), (3, 5)], "low"),
    "gelu": (lambda lib, F, a: F.gelu(a), [(4, 5)], "float32"),
    "sum_of_matmul": (lambda lib, F, a, b: (a @ b).sum(), [(4, 5), (5, 3)], "low"),
    "add_low_and_float32": (lambda lib, F, a, b, c: a @ b + c, [(4, 5), (5, 3), (3,)],
                            "float32"),
}
CASES = {**LISTED, **UNLISTED}


def run(name, low, lib=tl, functional=F):
    """``CASES[name]`` on fresh float32 leaves inside an autocast block of ``low`` (a
    tensorlib or torch run); backward from the float32 sum of the output times fixed
    weights. Returns (output, leaves)."""
    function, shapes, _ = CASES[name]
    leaves = [lib.tensor(normal(*shape, seed=i), requires_grad=True)
              for i, shape in enumerate(shapes)]
    block = tl.autocast("cpu", dtype=LOW[low]) if lib is tl else \
        lib.autocast("cpu", dtype=getattr(lib, low))
    with block:
        out = function(lib, functional, *leaves)
    weights = lib.tensor(normal(*tuple(out.shape), seed=9))
    (out.float() * weights).sum().backward()
    return out, leaves


# --------------------------------------------------------------------------- no torch
@pytest.mark.parametrize("low", LOW)
@pytest.mark.parametrize("name", CASES)
def test_output_dtype_and_float32_gradients(name, low):
    out, leaves = run(name, low)
    expected = CASES[name][2]
    assert out.dtype == (LOW[low] if expected == "low" else np.dtype(expected)), name
    for leaf in leaves:
        assert leaf.grad.dtype == tl.float32 and leaf.grad.shape == leaf.shape


@pytest.mark.parametrize("low", LOW)
@pytest.mark.parametrize("name", [n for n in LISTED if CASES[n][2] == "low"])
def test_a_listed_op_is_the_op_on_inputs_cast_to_the_blocks_dtype(name, low):
    function, shapes, _ = CASES[name]
    inputs = [tl.tensor(normal(*shape, seed=i)) for i, shape in enumerate(shapes)]
    with tl.autocast("cpu", dtype=LOW[low]):
        out = function(tl, F, *inputs)
    by_hand = function(tl, F, *[t.to(LOW[low]) for t in inputs])
    np.testing.assert_array_equal(as_float(out.numpy()), as_float(by_hand.numpy()))


def test_the_modules_and_the_fused_attention_core():
    x = tl.tensor(normal(2, 3, 8))
    with tl.autocast("cpu"):
        assert nn.Linear(8, 4)(x).dtype == tl.bfloat16
        assert nn.Conv1d(3, 4, 3)(x).dtype == tl.bfloat16
        assert nn.Conv2d(2, 4, 3)(tl.tensor(normal(1, 2, 5, 5))).dtype == tl.bfloat16
        assert F.causal_attention(tl.tensor(normal(2, 4, 24)), 2).dtype == tl.bfloat16
        mask = tl.tensor(normal(4, 6))  # a float mask is cast with the query
        q, k = tl.tensor(normal(2, 4, 8)), tl.tensor(normal(2, 6, 8))
        assert F.scaled_dot_product_attention(q, k, k, attn_mask=mask).dtype == tl.bfloat16
        assert nn.Embedding(5, 3)(ids(tl, [1, 2])).dtype == tl.float32  # not on the list


def test_the_default_cpu_dtype_is_bfloat16_and_the_state_is_reported():
    assert not tl.is_autocast_enabled("cpu") and tl.get_autocast_dtype("cpu") == tl.bfloat16
    x = tl.tensor(normal(3, 4))
    with tl.autocast("cpu") as block:
        assert isinstance(block, tl.autocast)
        assert tl.is_autocast_enabled("cpu") and not tl.is_autocast_enabled("cuda")
        assert tl.get_autocast_dtype("cpu") == tl.bfloat16
        assert (x @ x.t()).dtype == tl.bfloat16
    assert tl.amp.autocast is tl.autocast
    assert not tl.is_autocast_enabled("cpu")


def test_nesting_and_enabled_false_restore_the_outer_block():
    x = tl.tensor(normal(3, 4))
    with tl.autocast("cpu", dtype=tl.bfloat16):
        with tl.autocast("cpu", dtype=tl.float16):
            assert (x @ x.t()).dtype == tl.float16 and tl.get_autocast_dtype("cpu") == tl.float16
            with tl.autocast("cpu", enabled=False):
                assert (x @ x.t()).dtype == tl.float32 and not tl.is_autocast_enabled("cpu")
            assert (x @ x.t()).dtype == tl.float16
        assert (x @ x.t()).dtype == tl.bfloat16 and tl.get_autocast_dtype("cpu") == tl.bfloat16
    assert (x @ x.t()).dtype == tl.float32
    assert tl.get_autocast_dtype("cpu") == tl.bfloat16


def test_the_decorator_form():
    @tl.autocast("cpu", dtype=tl.float16)
    def product(a):
        return a @ a.t(), tl.is_autocast_enabled("cpu")

    out, on = product(tl.tensor(normal(3, 4)))
    assert on and out.dtype == tl.float16
    assert not tl.is_autocast_enabled("cpu")
    with tl.autocast("cpu"):  # the decorated function's own dtype inside another block
        assert product(tl.tensor(normal(3, 4)))[0].dtype == tl.float16
        assert tl.get_autocast_dtype("cpu") == tl.bfloat16


def test_another_thread_sees_autocast_off():
    seen = {}

    def worker():
        x = tl.tensor(normal(3, 4))
        seen["on"], seen["dtype"] = tl.is_autocast_enabled("cpu"), (x @ x.t()).dtype

    with tl.autocast("cpu"):
        thread = threading.Thread(target=worker)
        thread.start()
        thread.join()
        assert tl.is_autocast_enabled("cpu")
    assert seen == {"on": False, "dtype": tl.float32}


def test_float64_and_integer_tensors_are_left_alone():
    wide = tl.tensor(normal(3, 4).astype(np.float64))
    whole = tl.tensor(np.arange(12).reshape(3, 4))
    with tl.autocast("cpu"):
        assert (wide @ wide.t()).dtype == tl.float64
        assert F.linear(wide, wide).dtype == tl.float64
        assert (whole @ whole.t()).dtype == tl.int64
        np.testing.assert_array_equal((whole @ whole.t()).numpy(),
                                      whole.numpy() @ whole.numpy().T)
        logits = tl.tensor(normal(4, 3).astype(np.float64))
        assert F.cross_entropy(logits, np.array(TARGETS)).dtype == tl.float64


def test_low_precision_inputs_are_cast_to_the_blocks_dtype():
    x = tl.tensor(normal(3, 4)).half()
    with tl.autocast("cpu", dtype=tl.bfloat16):
        assert (x @ x.t()).dtype == tl.bfloat16
        assert F.cross_entropy(x.bfloat16(), np.array([0, 1, 3])).dtype == tl.float32


def test_float32_parameters_get_float32_gradients():
    model = nn.Linear(4, 3)
    with tl.autocast("cpu"):
        out = model(tl.tensor(normal(2, 4)))
        loss = F.cross_entropy(out, np.array([0, 2]))
    assert out.dtype == tl.bfloat16 and loss.dtype == tl.float32
    loss.backward()
    assert model.weight.dtype == model.weight.grad.dtype == tl.float32
    assert model.bias.grad.dtype == tl.float32


def test_the_state_is_restored_after_an_exception():
    with pytest.raises(KeyError), tl.autocast("cpu", dtype=tl.float16):
        raise KeyError("inside")
    assert not tl.is_autocast_enabled("cpu") and tl.get_autocast_dtype("cpu") == tl.bfloat16
    with tl.autocast("cpu"):
        with pytest.raises(ValueError), tl.autocast("cpu", enabled=False):
            raise ValueError("inside")
        assert tl.is_autocast_enabled("cpu")


@pytest.mark.parametrize("device_type", [None, 1, tl.float16])
def test_a_device_type_that_is_not_a_str_is_a_type_error(device_type):
    with pytest.raises(TypeError, match="device_type"):
        tl.autocast(device_type)


@pytest.mark.parametrize("device_type", ["gpu", "CPU", "mps", ""])
def test_an_unknown_device_type_is_a_value_error(device_type):
    with pytest.raises(ValueError, match="device_type"):
        tl.autocast(device_type)
    with pytest.raises(ValueError):
        tl.is_autocast_enabled(device_type)


@pytest.mark.parametrize("dtype", [tl.float32, tl.float64])
def test_an_unsupported_dtype_warns_and_leaves_autocast_off(dtype):
    x = tl.tensor(normal(3, 4))
    with pytest.warns(UserWarning, match="autocast"), tl.autocast("cpu", dtype=dtype):
        assert not tl.is_autocast_enabled("cpu")
        assert (x @ x.t()).dtype == tl.float32


def test_cuda_without_a_gpu_warns_and_leaves_autocast_off():
    if tl.cuda.is_available():
        pytest.skip("a GPU is available here")
    with pytest.warns(UserWarning, match="GPU"), tl.autocast("cuda"):
        assert not tl.is_autocast_enabled("cuda")
        x = tl.tensor(normal(3, 4))
        assert (x @ x.t()).dtype == tl.float32


# ------------------------------------------------------------------------ against PyTorch
def assert_within_rounding(ours, theirs, low, slack, what):
    ours, theirs = as_float(ours), as_float(theirs)
    assert ours.shape == theirs.shape, what
    tolerance = slack * ROUNDING[low]
    np.testing.assert_allclose(ours, theirs, rtol=tolerance,
                               atol=tolerance * max(np.abs(theirs).max(), 1e-3), err_msg=what)


@pytest.mark.parametrize("low", LOW)
@pytest.mark.parametrize("name", CASES)
def test_op_under_autocast_matches_torch(name, low):
    torch = pytest.importorskip("torch")
    out, leaves = run(name, low)
    their_out, their_leaves = run(name, low, torch, torch.nn.functional)
    assert str(out.dtype) == str(their_out.dtype).removeprefix("torch."), name
    assert_within_rounding(out.numpy(), their_out.detach().float().numpy(), low, 2, name)
    for position, (leaf, theirs) in enumerate(zip(leaves, their_leaves, strict=True)):
        assert theirs.grad.dtype == torch.float32 and leaf.grad.dtype == tl.float32
        assert_within_rounding(leaf.grad.numpy(), theirs.grad.numpy(), low, 4,
                               f"{name}: gradient {position}")


def _small_model(lib, weights):
    """Linear(6, 8) -> GELU -> Linear(8, 3) with the given float32 weights."""
    model = lib.nn.Sequential(lib.nn.Linear(6, 8), lib.nn.GELU(), lib.nn.Linear(8, 3))
    if lib is tl:
        model.load_state_dict(weights)
    else:
        model.load_state_dict({k: lib.tensor(v) for k, v in weights.items()})
    return model


@pytest.mark.parametrize("low", LOW)
def test_small_model_float32_gradients_match_torch(low):
    torch = pytest.importorskip("torch")
    weights = {"0.weight": normal(8, 6, seed=1) / 3, "0.bias": normal(8, seed=2),
               "2.weight": normal(3, 8, seed=3) / 3, "2.bias": normal(3, seed=4)}
    x, targets = normal(5, 6, seed=5), np.array([0, 2, 1, 1, 0])
    results = []
    for lib in (tl, torch):
        model = _small_model(lib, weights)
        block = tl.autocast("cpu", dtype=LOW[low]) if lib is tl else \
            torch.autocast("cpu", dtype=getattr(torch, low))
        with block:
            logits = model(lib.tensor(x))
            loss = lib.nn.functional.cross_entropy(logits, lib.tensor(targets))
        loss.backward()
        results.append((logits, loss, dict(model.named_parameters())))
    (logits, loss, params), (their_logits, their_loss, their_params) = results
    assert str(logits.dtype) == str(their_logits.dtype).removeprefix("torch.") == low
    assert loss.dtype == tl.float32 and their_loss.dtype == torch.float32
    assert_within_rounding(loss.numpy(), their_loss.detach().numpy(), low, 4, "loss")
    assert params.keys() == their_params.keys()
    for name, p in params.items():
        assert p.grad.dtype == tl.float32
        assert_within_rounding(p.grad.numpy(), their_params[name].grad.numpy(), low, 4, name)
