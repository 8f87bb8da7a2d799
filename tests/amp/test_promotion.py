"""Dtype promotion between tensors of different floating dtypes, as PyTorch's.

Two floating tensors meet in the wider dtype (float16 with bfloat16: float32); a 0-d tensor
yields to a tensor with axes of the same category; a Python float takes the tensor's dtype
(float32 for integer and boolean tensors); ``cat`` and ``stack`` promote floats; the casts
are differentiable, so each input's gradient comes back in that input's own dtype.

Without PyTorch: the table for every pair of float16, bfloat16, float32, float64 and int64,
bool with each, for ``+ - * /`` in each layout (2-D with 2-D, 2-D with 0-d, 0-d with 2-D, 0-d
with 0-d), the values, ``cat``/``stack`` and the gradients. Where PyTorch is importable: the
same table, Python numbers and ``tl.promote_types`` against PyTorch's for every pair.
"""

import itertools
import operator

import numpy as np
import pytest

import tensorlib as tl

FLOATS = {"float16": tl.float16, "bfloat16": tl.bfloat16, "float32": tl.float32,
          "float64": tl.float64}
OTHERS = {"int64": tl.int64, "bool": tl.bool_}
DTYPES = {**FLOATS, **OTHERS}
OPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.truediv}
# (first operand 0-d, second operand 0-d)
LAYOUTS = {"2d-2d": (False, False), "2d-0d": (False, True), "0d-2d": (True, False),
           "0d-0d": (True, True)}
# float16 with bfloat16 is float32 (neither holds the other); otherwise the wider float
WIDTH = {"float16": 1, "bfloat16": 1, "float32": 2, "float64": 3}

FLOAT_PAIRS = list(itertools.product(FLOATS, repeat=2))
MIXED_PAIRS = [pair for f in FLOATS for o in OTHERS for pair in ((f, o), (o, f))]


def float_promotion(a, b):
    """The hand-written table for two float dtype names."""
    if a == b:
        return a
    if WIDTH[a] == WIDTH[b]:
        return "float32"
    return a if WIDTH[a] > WIDTH[b] else b


def expected_name(a, b, zero_a, zero_b):
    """PyTorch's result dtype for a binary op, in the cases this file tests (at least one
    float): a float beats int64 and bool whatever the layout; between two floats a 0-d
    tensor yields to one with axes."""
    if a not in FLOATS:
        return b
    if b not in FLOATS:
        return a
    if zero_a != zero_b:
        return b if zero_a else a
    return float_promotion(a, b)


def operand(name, zero, seed=0):
    """A tensor of dtype ``name``: 0-d or (2, 3), values exact in every dtype, no zeros (they
    divide)."""
    shape = () if zero else (2, 3)
    values = np.random.default_rng(seed).integers(1, 5, size=shape)
    if name == "bool":
        return tl.tensor(values > 0)
    return tl.tensor((values * (0.5 if name in FLOATS else 1)).astype(DTYPES[name]))


def reference(op, a, b, dtype):
    """``op`` on the operands cast to ``dtype``, computed in float32 for the 16-bit dtypes
    (or float64) and rounded once to ``dtype``."""
    compute = tl.float64 if dtype == tl.float64 else tl.float32
    wide = [t.numpy().astype(dtype).astype(compute) for t in (a, b)]
    return op(*wide).astype(dtype)


# --------------------------------------------------------------------- the table, no torch
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("a, b", FLOAT_PAIRS + MIXED_PAIRS)
def test_binary_op_result_dtype_and_value(a, b, layout):
    zero_a, zero_b = LAYOUTS[layout]
    x, y = operand(a, zero_a, seed=1), operand(b, zero_b, seed=2)
    want = DTYPES[expected_name(a, b, zero_a, zero_b)]
    for name, op in OPS.items():
        out = op(x, y)
        assert out.dtype == want, f"{a} {name} {b} ({layout}): {out.dtype}, expected {want}"
        assert out.shape == np.broadcast_shapes(x.shape, y.shape)
        np.testing.assert_array_equal(out.numpy(), reference(op, x, y, want), err_msg=name)


@pytest.mark.parametrize("zero", [False, True], ids=["2d", "0d"])
@pytest.mark.parametrize("name", DTYPES)
def test_python_float_takes_the_tensors_float_dtype(name, zero):
    x = operand(name, zero)
    want = DTYPES[name] if name in FLOATS else tl.float32
    for op_name, op in OPS.items():
        for out in (op(x, 1.5), op(1.5, x)):
            assert out.dtype == want, f"{name} {op_name} 1.5: {out.dtype}, expected {want}"


def test_python_float_is_rounded_to_the_low_precision_dtype():
    # 1/3 is not a bfloat16: the number is held in the tensor's dtype before the sum
    x = tl.zeros(3, dtype=tl.bfloat16)
    np.testing.assert_array_equal((x + 1 / 3).numpy(), np.full(3, 1 / 3).astype(tl.bfloat16))


@pytest.mark.parametrize("a, b", FLOAT_PAIRS)
def test_cat_and_stack_promote_floats(a, b):
    want = DTYPES[float_promotion(a, b)]
    x, y = operand(a, False, seed=1), operand(b, False, seed=2)
    joined = tl.cat([x, y])
    assert joined.dtype == want and joined.shape == (4, 3)
    np.testing.assert_array_equal(joined.numpy(), np.concatenate(
        [x.numpy().astype(want), y.numpy().astype(want)]))
    stacked = tl.stack([x, y])
    assert stacked.dtype == want and stacked.shape == (2, 2, 3)
    assert tl.stack([operand(a, True), operand(b, True)]).dtype == want


def test_cat_of_three_dtypes_meets_in_the_widest():
    parts = [operand(name, False) for name in ("float16", "bfloat16", "float64")]
    assert tl.cat(parts).dtype == tl.float64
    assert tl.cat(parts[:2]).dtype == tl.float32


@pytest.mark.parametrize("layout", ["2d-2d", "2d-0d", "0d-2d"])
@pytest.mark.parametrize("a, b", FLOAT_PAIRS)
def test_gradients_come_back_in_each_inputs_dtype(a, b, layout):
    zero_a, zero_b = LAYOUTS[layout]
    for name, op in OPS.items():
        x = operand(a, zero_a, seed=1).requires_grad_()
        y = operand(b, zero_b, seed=2).requires_grad_()
        out = op(x, y)
        out.float().sum().backward()
        for leaf, dtype in ((x, DTYPES[a]), (y, DTYPES[b])):
            assert leaf.grad.dtype == dtype, f"{a} {name} {b}: a gradient in {leaf.grad.dtype}"
            assert leaf.grad.shape == leaf.shape
        # d(x*y)/dx = y etc., summed over the broadcast copies: exact for these values
        xs, ys = x.numpy().astype(np.float64), y.numpy().astype(np.float64)
        ones = np.ones(np.broadcast_shapes(xs.shape, ys.shape))
        grads = {"add": (ones, ones), "sub": (ones, -ones), "mul": (ones * ys, ones * xs),
                 "div": (ones / ys, -ones * xs / ys ** 2)}[name]
        for leaf, grad in zip((x, y), grads, strict=True):
            total = grad.sum() if leaf.ndim == 0 else grad
            tolerance = 4 * float(tl.finfo(leaf.dtype).eps)
            np.testing.assert_allclose(leaf.grad.numpy().astype(np.float64), total,
                                       rtol=tolerance, err_msg=f"{a} {name} {b}")


def test_the_documented_example_float16_plus_float32():
    a = tl.tensor([1.0, 2.0], dtype=tl.float16, requires_grad=True)
    b = tl.tensor([0.5, 0.25], dtype=tl.float32, requires_grad=True)
    out = a + b
    assert out.dtype == tl.float32
    (out * out).sum().backward()
    assert a.grad.dtype == tl.float16 and b.grad.dtype == tl.float32
    np.testing.assert_array_equal(a.grad.numpy(), np.array([3.0, 4.5], dtype=np.float16))
    np.testing.assert_array_equal(b.grad.numpy(), np.array([3.0, 4.5], dtype=np.float32))


def test_gradient_through_cat_of_mixed_dtypes():
    x = operand("float16", False).requires_grad_()
    y = operand("bfloat16", False).requires_grad_()
    (tl.cat([x, y]) * 3.0).sum().backward()
    assert x.grad.dtype == tl.float16 and y.grad.dtype == tl.bfloat16
    np.testing.assert_array_equal(x.grad.numpy().astype(np.float32), np.full((2, 3), 3.0))
    np.testing.assert_array_equal(y.grad.numpy().astype(np.float32), np.full((2, 3), 3.0))


@pytest.mark.parametrize("a, b", FLOAT_PAIRS)
def test_promote_types_table(a, b):
    assert tl.promote_types(FLOATS[a], FLOATS[b]) == FLOATS[float_promotion(a, b)]
    for other in OTHERS.values():
        assert tl.promote_types(FLOATS[a], other) == FLOATS[a]
        assert tl.promote_types(other, FLOATS[a]) == FLOATS[a]


# ------------------------------------------------------------------------ against PyTorch
def _torch_dtype(torch, name):
    return getattr(torch, name)


def _torch_operand(torch, name, zero):
    shape = () if zero else (2, 3)
    return torch.ones(shape, dtype=_torch_dtype(torch, name))


def _name(dtype):
    return str(dtype).removeprefix("torch.")


@pytest.mark.parametrize("a, b", list(itertools.product(DTYPES, repeat=2)))
def test_binary_op_dtypes_match_torch(a, b):
    torch = pytest.importorskip("torch")
    for (layout, (zero_a, zero_b)), (name, op) in itertools.product(LAYOUTS.items(),
                                                                      OPS.items()):
        if name == "sub" and "bool" in (a, b):
            continue  # PyTorch refuses to subtract a boolean tensor
        theirs = op(_torch_operand(torch, a, zero_a), _torch_operand(torch, b, zero_b))
        ours = op(operand(a, zero_a), operand(b, zero_b))
        assert str(ours.dtype) == _name(theirs.dtype), f"{a} {name} {b} ({layout})"


@pytest.mark.parametrize("number", [1.5, 2], ids=["float", "int"])
@pytest.mark.parametrize("zero", [False, True], ids=["2d", "0d"])
@pytest.mark.parametrize("name", DTYPES)
def test_python_numbers_match_torch(name, zero, number):
    torch = pytest.importorskip("torch")
    for op_name, op in OPS.items():
        if op_name == "sub" and name == "bool":
            continue  # PyTorch refuses to subtract a boolean tensor
        theirs = _torch_operand(torch, name, zero)
        for ours_out, theirs_out in ((op(operand(name, zero), number), op(theirs, number)),
                                     (op(number, operand(name, zero)), op(number, theirs))):
            assert str(ours_out.dtype) == _name(theirs_out.dtype), f"{name} {op_name} {number}"


@pytest.mark.parametrize("a, b", FLOAT_PAIRS)
def test_cat_and_stack_match_torch(a, b):
    torch = pytest.importorskip("torch")
    for function in ("cat", "stack"):
        ours = getattr(tl, function)([operand(a, False), operand(b, False)])
        theirs = getattr(torch, function)([_torch_operand(torch, a, False),
                                          _torch_operand(torch, b, False)])
        assert str(ours.dtype) == _name(theirs.dtype), f"{function}({a}, {b})"


PROMOTE_NAMES = ["float16", "bfloat16", "float32", "float64", "int8", "int16", "int32",
                 "int64", "uint8", "bool"]


@pytest.mark.parametrize("a", PROMOTE_NAMES)
def test_promote_types_matches_torch(a):
    torch = pytest.importorskip("torch")
    for b in PROMOTE_NAMES:
        ours = tl.promote_types(np.dtype(tl.bool_ if a == "bool" else getattr(tl, a)),
                                np.dtype(tl.bool_ if b == "bool" else getattr(tl, b)))
        theirs = torch.promote_types(_torch_dtype(torch, a), _torch_dtype(torch, b))
        assert str(ours) == _name(theirs), f"promote_types({a}, {b})"
