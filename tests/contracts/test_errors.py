"""Every error path of the tensor engine: the right exception type, raised at the call that
received the bad input, with a message that names the shapes, axes or values involved."""

import re

import numpy as np
import pytest

import tensorlib as tl


def _x(*shape):
    return tl.zeros(*shape, requires_grad=True)


# --------------------------------------------------------------------------- broadcasting


@pytest.mark.parametrize(
    "op, name",
    [
        (lambda a, b: a + b, "add"),
        (lambda a, b: a - b, "sub"),
        (lambda a, b: a * b, "mul"),
        (lambda a, b: a / b, "div"),
        (lambda a, b: a**b, "pow"),
        (lambda a, b: tl.maximum(a, b), "maximum"),
        (lambda a, b: tl.where(np.array(True), a, b), "where"),
    ],
)
def test_mismatched_broadcast_names_both_shapes(op, name):
    a, b = _x(2, 3), _x(4)
    with pytest.raises(ValueError) as info:
        op(a, b)
    message = str(info.value)
    assert "(2, 3)" in message and "(4,)" in message
    assert name in message
    with pytest.raises(ValueError, match=re.escape("(4,)")):
        op(b, a)


def test_broadcast_error_with_higher_rank_shapes():
    with pytest.raises(ValueError, match=re.escape("(2, 3, 4)") + ".*" + re.escape("(3, 5)")):
        _x(2, 3, 4) * _x(3, 5)


def test_failed_op_records_nothing():
    a = _x(2, 3)
    with pytest.raises(ValueError):
        a + _x(4)
    assert a.grad is None and a.grad_fn is None and a.version == 0


# --------------------------------------------------------------------------- matmul


@pytest.mark.parametrize(
    "shape_a, shape_b, fragment",
    [
        ((2, 3), (2, 3), "(3 != 2)"),
        ((3,), (4,), "(3 != 4)"),
        ((2, 3), (4,), "(3 != 4)"),
        ((4,), (3, 5), "(4 != 3)"),
        ((5, 2, 3), (5, 4, 2), "(3 != 4)"),
    ],
)
def test_matmul_misalignment_names_shapes(shape_a, shape_b, fragment):
    with pytest.raises(ValueError, match="not aligned") as info:
        _x(*shape_a) @ _x(*shape_b)
    message = str(info.value)
    assert str(shape_a) in message and str(shape_b) in message
    assert fragment in message


def test_matmul_batch_axes_that_do_not_broadcast():
    with pytest.raises(ValueError, match=r"batch axes.*\(2, 2, 3\).*\(3, 3, 4\)"):
        _x(2, 2, 3) @ _x(3, 3, 4)


def test_matmul_of_a_0d_operand():
    with pytest.raises(ValueError, match="1-D"):
        tl.tensor(2.0) @ _x(2, 3)
    with pytest.raises(ValueError, match="1-D"):
        _x(3) @ tl.tensor(2.0)


# --------------------------------------------------------------------------- shapes


@pytest.mark.parametrize("shape", [(4, 2), (7,), (-1, 4), (-1, -1), (2, -2, 3), (0, -1)])
def test_bad_reshape_names_both_shapes(shape):
    with pytest.raises(ValueError, match=re.escape("(2, 3)")):
        _x(2, 3).reshape(shape)


def test_reshape_needs_integer_entries():
    with pytest.raises(TypeError, match="integers"):
        _x(2, 3).reshape(2.0, 3)


def test_bad_permutation():
    with pytest.raises(ValueError, match="permutation"):
        _x(2, 3, 4).permute(0, 0, 1)
    with pytest.raises(ValueError, match="permutation"):
        _x(2, 3, 4).permute(0, 1)


def test_transpose_of_a_vector():
    with pytest.raises(ValueError, match=r"\(3,\)"):
        _x(3).transpose()


@pytest.mark.parametrize("target", [(2, 4), (3,), (4, 3)])
def test_bad_expand(target):
    with pytest.raises(ValueError, match=re.escape("(2, 3)")):
        _x(2, 3).expand(*target)


def test_squeeze_of_an_axis_that_is_not_one():
    with pytest.raises(ValueError, match=r"dim 0 of size 2"):
        _x(2, 1).squeeze(0)


# --------------------------------------------------------------------------- axes


@pytest.mark.parametrize(
    "call",
    [
        lambda t: t.sum(axis=2),
        lambda t: t.mean(axis=-3),
        lambda t: t.max(axis=5),
        lambda t: t.amin(axis=(0, 2)),
        lambda t: t.amax(dim=(0, -3)),
        lambda t: t.var(axis=2),
        lambda t: t.logsumexp(axis=-3),
        lambda t: t.softmax(axis=2),
        lambda t: t.log_softmax(axis=-3),
        lambda t: t.transpose(0, 2),
        lambda t: t.permute(0, 2),
        lambda t: t.squeeze(2),
        lambda t: t.unsqueeze(3),
        lambda t: t.unsqueeze(-4),
        lambda t: tl.concat([t, t], axis=2),
        lambda t: tl.stack([t, t], axis=3),
        lambda t: tl.split(t, 1, axis=2),
    ],
)
def test_bad_axis_raises_index_error_naming_it(call):
    with pytest.raises(IndexError, match=r"axis -?\d+ is out of range for a tensor with \d axes"):
        call(_x(2, 3))


@pytest.mark.parametrize(
    "call",
    [
        lambda t: t.sum(axis=0),
        lambda t: t.softmax(axis=0),
        lambda t: t.log_softmax(),
        lambda t: t.max(axis=-1),
        lambda t: tl.concat([t, t]),
        lambda t: tl.split(t, 1),
    ],
)
def test_any_axis_of_a_0d_tensor_is_out_of_range(call):
    with pytest.raises(IndexError, match="0 axes"):
        call(tl.tensor(1.0))


def test_axis_must_be_an_integer():
    with pytest.raises(TypeError, match="integer"):
        _x(2, 3).sum(axis=1.0)
    with pytest.raises(TypeError, match="integer"):
        _x(2, 3).softmax(axis="last")


def test_repeated_axis():
    with pytest.raises(ValueError, match="repeated axis"):
        _x(2, 3).sum(axis=(1, -1))


def test_reductions_over_nothing_give_what_pytorch_gives():
    """A mean over no elements is nan (0 / 0), logsumexp -inf (the log of an empty sum), a
    variance with n - correction <= 0 nan or inf; max has no value to give and raises, as in
    PyTorch."""
    assert np.isnan(_x(2, 3).var(axis=0, correction=2).data).all()  # 0 / 0
    assert np.array_equal(tl.tensor([1.0, 3.0]).var(correction=2).data, np.inf)  # 2 / 0
    assert tl.zeros(0, 3).mean(axis=0).shape == (3,)
    assert np.isnan(tl.zeros(0, 3).mean(axis=0).data).all()
    assert np.isnan(tl.zeros(0).mean().item())
    assert np.array_equal(tl.zeros(2, 0).logsumexp(axis=1).data, [-np.inf, -np.inf])
    with pytest.raises(ValueError, match=re.escape("(0,)")):
        tl.zeros(0).max()
    x = tl.zeros(2, 0, requires_grad=True)
    (x.logsumexp(axis=1).sum() + x.mean(axis=0).sum()).backward()
    assert x.grad.shape == (2, 0)


# --------------------------------------------------------------------------- indexing


@pytest.mark.parametrize(
    "index",
    [
        2,
        -3,
        (0, 3),
        (slice(None), -4),
        np.array([0, 2]),
        [1, -3],
        (0, 0, 0),
    ],
)
def test_index_out_of_range_raises_index_error_naming_the_shape(index):
    x = _x(2, 3)
    with pytest.raises(IndexError, match=re.escape("(2, 3)")):
        x[index]


@pytest.mark.parametrize(
    "index",
    [
        np.array([0.0, 1.0]),
        [0.5],
        tl.tensor([1.0]),
        (slice(None), np.array([1.0])),
        1.0,
    ],
)
def test_float_index_raises_index_error(index):
    with pytest.raises(IndexError):
        _x(2, 3)[index]


def test_float_index_array_names_its_dtype():
    with pytest.raises(IndexError, match="float64"):
        _x(2, 3)[np.array([0.0])]


# --------------------------------------------------------------------------- masks


@pytest.mark.parametrize(
    "mask", [np.ones((2, 3)), np.ones((2, 3), dtype=np.int64), tl.tensor([[1, 0, 1], [0, 1, 0]])]
)
def test_masked_fill_non_bool_mask_raises_type_error(mask):
    with pytest.raises(TypeError, match="boolean"):
        _x(2, 3).masked_fill(mask, 0.0)


def test_masked_fill_mask_shapes():
    with pytest.raises(ValueError, match=re.escape("(4,)") + ".*" + re.escape("(2, 3)")):
        _x(2, 3).masked_fill(np.ones(4, dtype=bool), 0.0)
    # a mask with more axes enlarges the result, as in PyTorch (it broadcasts either way)
    assert _x(2, 3).masked_fill(np.ones((5, 2, 3), dtype=bool), 0.0).shape == (5, 2, 3)


def test_where_condition_must_be_boolean_and_broadcast():
    a, b = _x(2, 3), _x(2, 3)
    with pytest.raises(TypeError, match="boolean"):
        tl.where(np.ones((2, 3)), a, b)
    with pytest.raises(ValueError, match=re.escape("(4,)")):
        tl.where(np.ones(4, dtype=bool), a, b)


# --------------------------------------------------------------------------- concat / stack


def test_concat_shape_mismatch_names_shapes():
    with pytest.raises(ValueError, match=re.escape("[(2, 3), (2, 4)]")):
        tl.concat([_x(2, 3), _x(2, 4)], axis=0)
    with pytest.raises(ValueError, match=re.escape("(3,)")):
        tl.concat([_x(2, 3), _x(3)])


def test_stack_shape_mismatch_names_shapes():
    with pytest.raises(ValueError, match=re.escape("(2, 3)") + ".*" + re.escape("(3, 2)")):
        tl.stack([_x(2, 3), _x(3, 2)])


def test_concat_and_stack_take_tensors_and_promote_their_dtypes():
    with pytest.raises(ValueError, match="at least one"):
        tl.concat([])
    with pytest.raises(ValueError, match="at least one"):
        tl.stack([])
    with pytest.raises(TypeError, match="ndarray"):
        tl.concat([_x(2), np.zeros(2)])
    assert tl.concat([tl.zeros(2), tl.zeros(2, dtype=tl.float64)]).dtype == tl.float64
    assert tl.stack([tl.zeros(2, dtype=tl.half), tl.zeros(2, dtype=tl.bfloat16)]).dtype == \
        tl.float32  # PyTorch's promotion
    assert tl.concat([tl.zeros(2, dtype=tl.int64), tl.zeros(2)]).dtype == tl.float32


# --------------------------------------------------------------------------- gelu, split


@pytest.mark.parametrize("approximate", ["fast", "Tanh", "erf", None])
def test_gelu_bad_approximate(approximate):
    with pytest.raises(ValueError, match="approximate") as info:
        _x(3).gelu(approximate=approximate)
    assert repr(approximate) in str(info.value)


@pytest.mark.parametrize("sizes", [[1, 1], [4], [2, 2], [4, -1], [3, 0, 1]])
def test_split_sizes_must_add_up(sizes):
    with pytest.raises(ValueError, match=r"do not add up to dim 0's length 3") as info:
        tl.split(_x(3, 2), sizes)
    assert str(list(sizes)) in str(info.value)


@pytest.mark.parametrize("size", [0, -2])
def test_split_size_must_be_positive(size):
    with pytest.raises(ValueError, match="positive"):
        _x(3, 2).split(size)


def test_split_of_uneven_length_gives_a_short_last_piece():
    pieces = tl.split(_x(5, 2), 2)
    assert [p.shape for p in pieces] == [(2, 2), (2, 2), (1, 2)]


# --------------------------------------------------------------------------- misc


def test_item_of_many_elements():
    with pytest.raises(ValueError, match=r"\(2, 3\)"):
        _x(2, 3).item()


def test_backward_of_integer_result():
    with pytest.raises(RuntimeError, match="does not require grad"):
        tl.tensor([1, 2]).sum().backward()


def test_apply_with_non_tensor_names_the_function():
    with pytest.raises(TypeError, match="Exp.apply"):
        tl.engine.ops.Exp.apply(np.ones(2))
