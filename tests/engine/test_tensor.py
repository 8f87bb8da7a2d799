"""Tests for tensorlib.engine.tensor: construction, factories, dtype rules, conversions, in-place
ops."""

import numpy as np
import pytest

import tensorlib as tl
from tensorlib import Tensor, no_grad

# --------------------------------------------------------------------------- construction


def test_python_floats_become_float32():
    assert tl.tensor(1.5).dtype == np.float32
    assert tl.tensor([1.0, 2.0]).dtype == np.float32
    assert tl.tensor([[1.0, 2], [3, 4]]).dtype == np.float32
    assert Tensor([0.25]).dtype == np.float32


def test_python_ints_become_int64_and_bools_stay_bool():
    assert tl.tensor(3).dtype == np.int64
    assert tl.tensor([1, 2, 3]).dtype == np.int64
    assert tl.tensor([True, False]).dtype == np.bool_


def test_numpy_arrays_keep_their_dtype():
    for dtype in (np.float64, np.float32, np.int32, np.int64, np.bool_):
        assert tl.tensor(np.zeros(3, dtype=dtype)).dtype == dtype
    assert tl.tensor(np.float64(2.0)).dtype == np.float64


def test_explicit_dtype_wins():
    t = tl.tensor([1, 2], dtype=tl.float64)
    assert t.dtype == np.float64
    np.testing.assert_array_equal(t.data, [1.0, 2.0])
    assert tl.tensor([1.7], dtype=np.int32).dtype == np.int32


def test_tensor_copies_its_input_but_Tensor_shares():
    source = np.arange(3.0)
    copied = tl.tensor(source)
    shared = Tensor(source)
    source[0] = 42.0
    assert copied.data[0] == 0.0
    assert shared.data[0] == 42.0


def test_tensor_from_tensor_copies_values():
    a = tl.tensor([1.0, 2.0])
    b = tl.tensor(a)
    b.data[0] = 5.0
    assert a.data[0] == 1.0


def test_unsupported_data_raises_type_error():
    with pytest.raises(TypeError, match="dtype"):
        tl.tensor(["a", "b"])


def test_basic_properties():
    t = tl.zeros(2, 3, 4)
    assert t.shape == (2, 3, 4)
    assert t.ndim == 3
    assert t.numel() == 24 and t.size() == (2, 3, 4) and t.size(1) == 3
    assert len(t) == 2
    assert t.is_leaf and t.grad is None and t.grad_fn is None
    assert t.version == 0
    assert t.device == "cpu"
    with pytest.raises(TypeError):
        len(tl.tensor(1.0))


def test_iteration_yields_rows():
    t = tl.tensor([[1.0, 2.0], [3.0, 4.0]])
    rows = list(t)
    assert len(rows) == 2
    np.testing.assert_array_equal(rows[1].data, [3.0, 4.0])


# --------------------------------------------------------------------------- factories


@pytest.mark.parametrize("factory, value", [(tl.zeros, 0.0), (tl.ones, 1.0)])
def test_zeros_ones_accept_varargs_and_tuple(factory, value):
    for t in (factory(2, 3), factory((2, 3))):
        assert t.shape == (2, 3)
        assert t.dtype == np.float32
        assert np.all(t.data == value)
    assert factory(2, dtype=tl.float64).dtype == np.float64
    assert factory(3, requires_grad=True).requires_grad


def test_full():
    t = tl.full((2, 2), 7.5)
    assert t.dtype == np.float32 and t.shape == (2, 2)
    assert np.all(t.data == 7.5)
    assert tl.full(3, -1.0, dtype=tl.float64).shape == (3,)


def test_arange_dtypes():
    a = tl.arange(5)
    assert a.dtype == np.int64
    np.testing.assert_array_equal(a.data, [0, 1, 2, 3, 4])
    b = tl.arange(0.0, 1.0, 0.25)
    assert b.dtype == np.float32
    np.testing.assert_allclose(b.data, [0.0, 0.25, 0.5, 0.75])
    np.testing.assert_array_equal(tl.arange(2, 8, 3).data, [2, 5])
    with pytest.raises(ValueError):
        tl.arange(0, 3, 0)


def test_zeros_like_ones_like_follow_dtype_and_shape():
    base = tl.tensor(np.ones((2, 3), dtype=np.float64))
    z, o = tl.zeros_like(base), tl.ones_like(base)
    assert z.shape == o.shape == (2, 3)
    assert z.dtype == o.dtype == np.float64
    assert np.all(z.data == 0) and np.all(o.data == 1)


def test_shape_entries_must_be_integers():
    with pytest.raises(TypeError):
        tl.zeros(2.5, 3)


# --------------------------------------------------------------------------- dtype rules


@pytest.mark.parametrize("scalar", [2, 2.5, -0.5])
@pytest.mark.parametrize(
    "op",
    [
        lambda t, s: t + s,
        lambda t, s: s + t,
        lambda t, s: t - s,
        lambda t, s: s - t,
        lambda t, s: t * s,
        lambda t, s: s * t,
        lambda t, s: t / s,
        lambda t, s: s / t,
        lambda t, s: t**s,
        lambda t, s: tl.maximum(t, s),
        lambda t, s: t.maximum(s),
    ],
)
def test_python_scalars_never_upcast_float32(op, scalar):
    t = tl.tensor([1.0, 2.0, 3.0])
    assert op(t, scalar).dtype == np.float32


def test_python_scalars_keep_float64_tensors_float64():
    t = tl.tensor(np.array([1.0, 2.0]))
    assert (t * 0.5).dtype == np.float64
    assert (1 - t).dtype == np.float64


def test_float_scalar_with_int_tensor_gives_float32():
    assert (tl.tensor([1, 2]) * 1.5).dtype == np.float32
    assert (tl.tensor([1, 2]) + 1).dtype == np.int64


@pytest.mark.parametrize(
    "op",
    [
        lambda a, b: a + b,
        lambda a, b: a - b,
        lambda a, b: a * b,
        lambda a, b: a / b,
        lambda a, b: a**b,
        lambda a, b: a @ b,
        lambda a, b: tl.maximum(a, b),
        lambda a, b: tl.where(np.array([True, False]), a, b),
        lambda a, b: tl.concat([a, b]),
        lambda a, b: tl.stack([a, b]),
    ],
)
def test_mixed_float32_float64_promote_to_float64_as_in_pytorch(op):
    a = tl.tensor(np.array([1.0, 2.0], dtype=np.float32), requires_grad=True)
    b = tl.tensor(np.array([3.0, 4.0], dtype=np.float64), requires_grad=True)
    assert op(a, b).dtype == np.float64 and op(b, a).dtype == np.float64
    op(a, b).sum().backward()  # each gradient in its own tensor's dtype
    assert a.grad.dtype == np.float32 and b.grad.dtype == np.float64


def test_float64_numpy_array_with_float32_tensor_gives_float64_a_float64_scalar_does_not():
    assert (tl.tensor([1.0, 2.0]) + np.array([1.0, 2.0])).dtype == np.float64
    assert (tl.tensor([1.0, 2.0]) * np.float64(2.0)).dtype == np.float32  # a 0-d operand


def test_astype_float_double_long():
    t = tl.tensor([1.5, 2.5])
    assert t.double().dtype == np.float64
    assert t.double().float().dtype == np.float32
    assert t.long().dtype == np.int64
    np.testing.assert_array_equal(t.long().data, [1, 2])


def test_cast_is_differentiable_between_floats():
    x = tl.tensor([1.0, 2.0], requires_grad=True)
    (x.double() * 3.0).sum().backward()
    assert x.grad.dtype == np.float32
    np.testing.assert_array_equal(x.grad, [3.0, 3.0])


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.bool_])
def test_non_float_tensors_cannot_require_grad(dtype):
    with pytest.raises(TypeError, match="floating"):
        tl.tensor(np.zeros(3, dtype=dtype), requires_grad=True)
    t = tl.tensor(np.zeros(3, dtype=dtype))
    with pytest.raises(TypeError):
        t.requires_grad = True
    assert not t.requires_grad


def test_float_tensors_can_require_grad_and_switch_it_off():
    t = tl.tensor([1.0])
    t.requires_grad = True
    assert t.requires_grad
    t.requires_grad = False
    assert not t.requires_grad


def test_requires_grad_cannot_be_switched_off_on_non_leaf():
    y = tl.tensor([1.0], requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="leaf"):
        y.requires_grad = False


def test_result_requires_grad_iff_an_input_does():
    a = tl.tensor([1.0], requires_grad=True)
    b = tl.tensor([2.0])
    assert (a * b).requires_grad
    assert (a * b).grad_fn is not None
    assert not (b * b).requires_grad
    assert (b * b).grad_fn is None


# --------------------------------------------------------------------------- conversions


def test_item():
    assert tl.tensor(2.5).item() == 2.5
    assert isinstance(tl.tensor(2.5).item(), float)
    assert tl.tensor([[7]]).item() == 7
    assert isinstance(tl.tensor([[7]]).item(), int)
    assert tl.tensor(True).item() is True
    with pytest.raises(ValueError, match=r"\(2,\)"):
        tl.tensor([1.0, 2.0]).item()


def test_numpy_shares_memory():
    t = tl.tensor([1.0, 2.0])
    array = t.numpy()
    assert isinstance(array, np.ndarray)
    assert np.shares_memory(array, t.data)
    np.testing.assert_array_equal(np.asarray(t), [1.0, 2.0])


def test_tolist():
    assert tl.tensor([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]


def test_detach_shares_data_and_version_but_not_graph():
    x = tl.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    d = y.detach()
    assert d.grad_fn is None and not d.requires_grad and d.is_leaf
    assert np.shares_memory(d.data, y.data)
    d.add_(1.0)
    assert y.version == 1
    np.testing.assert_array_equal(y.data, [3.0, 5.0])


def test_repr_shows_values_dtype_and_grad_state():
    assert repr(tl.tensor([1.0, 2.5])) == "tensor([1. , 2.5], dtype=float32)"
    x = tl.tensor([1.0], requires_grad=True)
    assert "requires_grad=True" in repr(x)
    y = x * 2
    assert "grad_fn=<mul>" in repr(y)
    assert "requires_grad" not in repr(y)
    assert "int64" in repr(tl.tensor([1, 2]))


def test_bool_of_one_element_and_ambiguous_bool():
    assert bool(tl.tensor([3.0]) > 1)
    with pytest.raises(ValueError, match="ambiguous"):
        bool(tl.tensor([1.0, 2.0]))


def test_tensors_are_hashable_by_identity():
    a, b = tl.tensor([1.0]), tl.tensor([1.0])
    assert len({a, b}) == 2


# --------------------------------------------------------------------------- comparisons


@pytest.mark.parametrize(
    "op, expected",
    [
        (lambda a, b: a < b, [True, False, False]),
        (lambda a, b: a <= b, [True, True, False]),
        (lambda a, b: a > b, [False, False, True]),
        (lambda a, b: a >= b, [False, True, True]),
        (lambda a, b: a == b, [False, True, False]),
        (lambda a, b: a != b, [True, False, True]),
    ],
)
def test_comparisons_give_bool_tensors_without_grad(op, expected):
    a = tl.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = tl.tensor([2.0, 2.0, 2.0], requires_grad=True)
    for result in (op(a, b), op(a, 2.0), op(a, 2)):
        assert result.dtype == np.bool_
        assert not result.requires_grad
        assert result.grad_fn is None
        np.testing.assert_array_equal(result.data, expected)


def test_comparison_broadcasts():
    a = tl.tensor([[1.0], [3.0]])
    b = tl.tensor([0.0, 2.0, 4.0])
    np.testing.assert_array_equal((a > b).data, [[True, False, False], [True, True, False]])


# --------------------------------------------------------------------------- in place


@pytest.mark.parametrize(
    "op, expected",
    [
        (lambda t: t.copy_(tl.tensor([5.0, 6.0])), [5.0, 6.0]),
        (lambda t: t.copy_(9.0), [9.0, 9.0]),
        (lambda t: t.add_(tl.tensor([1.0, 1.0])), [2.0, 3.0]),
        (lambda t: t.add_(tl.tensor([1.0, 1.0]), alpha=-2.0), [-1.0, 0.0]),
        (lambda t: t.mul_(3.0), [3.0, 6.0]),
        (lambda t: t.fill_(4.0), [4.0, 4.0]),
        (lambda t: t.zero_(), [0.0, 0.0]),
    ],
)
def test_in_place_ops_change_values_and_bump_version(op, expected):
    t = tl.tensor([1.0, 2.0])
    before = t.numpy()
    returned = op(t)
    assert returned is t
    assert t.numpy() is before  # truly in place
    assert t.version == 1
    np.testing.assert_array_equal(t.data, expected)
    op(t)
    assert t.version == 2


def test_data_assignment_bumps_version():
    t = tl.tensor([1.0])
    t.data = np.array([2.0], dtype=np.float32)
    assert t.version == 1
    assert t.data[0] == 2.0


@pytest.mark.parametrize(
    "op",
    [
        lambda t: t.copy_(tl.tensor([5.0, 6.0])),
        lambda t: t.add_(1.0),
        lambda t: t.mul_(2.0),
        lambda t: t.fill_(0.0),
        lambda t: t.zero_(),
    ],
)
def test_in_place_refused_on_leaf_requiring_grad_outside_no_grad(op):
    t = tl.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="no_grad"):
        op(t)
    assert t.version == 0
    np.testing.assert_array_equal(t.data, [1.0, 2.0])
    with no_grad():
        op(t)
    assert t.version == 1


def test_in_place_on_non_leaf_is_recorded_and_gives_the_out_of_place_gradient():
    """In-place on a non-leaf is recorded in the graph (as PyTorch): the result and the
    gradient are those of the out-of-place computation."""
    x = tl.tensor([1.0, -2.0, 3.0], requires_grad=True)
    y = x * 2
    y.add_(1.0)
    y.mul_(x)  # y = (2x + 1) * x
    assert y.version == 2 and y.grad_fn is not None and not y.is_leaf
    y.sum().backward()
    reference = tl.tensor([1.0, -2.0, 3.0], requires_grad=True)
    ((reference * 2 + 1.0) * reference).sum().backward()
    np.testing.assert_array_equal(y.data, ((reference * 2 + 1.0) * reference).data)
    np.testing.assert_array_equal(x.grad, reference.grad)  # 4x + 1


def test_in_place_on_non_leaf_under_no_grad_is_a_plain_write():
    x = tl.tensor([1.0], requires_grad=True)
    y = x * 2
    with no_grad():
        y.add_(1.0)
    assert y.version == 1
    np.testing.assert_array_equal(y.data, [3.0])
    y.sum().backward()  # mul by a constant saved only the constant: x's gradient is still 2
    np.testing.assert_array_equal(x.grad, [2.0])


def test_in_place_operand_that_would_enlarge_raises_and_leaves_tensor_unchanged():
    t = tl.tensor([1.0, 2.0])
    with pytest.raises(ValueError, match=r"\(2,\) and \(3,\)"):
        t.add_(tl.tensor([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match=r"\(2, 2\).*\(2,\)"):
        t.add_(tl.zeros(2, 2))
    with pytest.raises(ValueError, match=r"\(2, 2\)"):
        t.copy_(np.ones((2, 2), dtype=np.float32))
    assert t.version == 0
    np.testing.assert_array_equal(t.data, [1.0, 2.0])


def test_in_place_broadcasts_smaller_operand():
    t = tl.zeros(2, 3)
    t.add_(tl.tensor([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(t.data, [[1, 2, 3], [1, 2, 3]])


# --------------------------------------------------------------------------- grad mode


def test_no_grad_nests_and_restores():
    assert tl.is_grad_enabled()
    with no_grad():
        assert not tl.is_grad_enabled()
        with tl.enable_grad():
            assert tl.is_grad_enabled()
        assert not tl.is_grad_enabled()
    assert tl.is_grad_enabled()


def test_no_grad_as_decorator_restores_after_exception():
    @no_grad()
    def failing():
        assert not tl.is_grad_enabled()
        raise KeyError("boom")

    with pytest.raises(KeyError):
        failing()
    assert tl.is_grad_enabled()
