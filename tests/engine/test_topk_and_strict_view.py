"""topk (values, indices, gradient, the order among ties and nans) and view as strict as
PyTorch's (a view the strides cannot express is refused with PyTorch's advice): checked by
hand, by gradcheck in float64, and against PyTorch where it is installed."""

from __future__ import annotations

import numpy as np
import pytest

import tensorlib as tl
from tensorlib import gradcheck
from tensorlib.engine.methods.shape import view_strides


# ------------------------------------------------------------------------------------ topk
def test_topk_values_and_indices_by_hand():
    x = tl.tensor([[1.0, 5.0, 2.0, 4.0], [7.0, 0.0, 9.0, 8.0]])
    values, indices = tl.topk(x, 2)
    assert values.tolist() == [[5.0, 4.0], [9.0, 8.0]]
    assert indices.tolist() == [[1, 3], [2, 3]] and indices.dtype == tl.int64
    smallest = x.topk(3, dim=1, largest=False)
    assert smallest.values.tolist() == [[1.0, 2.0, 4.0], [0.0, 7.0, 8.0]]
    assert smallest.indices.tolist() == [[0, 2, 3], [1, 0, 3]]
    assert x.topk(1, dim=0).indices.tolist() == [[1, 0, 1, 1]]
    assert x.topk(0).values.shape == (2, 0)


def test_topk_ties_go_to_the_lower_index_and_nan_is_the_largest():
    x = tl.tensor([1.0, 3.0, 3.0, 2.0, 3.0])
    assert x.topk(2).indices.tolist() == [1, 2]
    assert x.topk(3, largest=False).indices.tolist() == [0, 3, 1]
    special = tl.tensor([1.0, float("nan"), 3.0, float("inf"), float("-inf")])
    assert special.topk(3).indices.tolist() == [1, 3, 2]
    assert special.topk(3, largest=False).indices.tolist() == [4, 0, 2]
    extremes = tl.tensor([3, 1, 2, np.iinfo(np.int64).min, np.iinfo(np.int64).max])
    assert extremes.topk(2).values.tolist() == [np.iinfo(np.int64).max, 3]
    assert extremes.topk(1, largest=False).values.tolist() == [np.iinfo(np.int64).min]


def test_topk_gradient_reaches_the_chosen_entries_only():
    x = tl.tensor(np.random.default_rng(0).normal(size=(3, 6, 4)), requires_grad=True)
    assert gradcheck(lambda t: t.topk(2, dim=1).values, x)
    assert gradcheck(lambda t: t.topk(3, largest=False).values, x)
    x.topk(2, dim=1).values.sum().backward()
    assert (x.grad.numpy() != 0).sum(axis=1).tolist() == [[2] * 4] * 3


@pytest.mark.parametrize("call, error, match", [
    (lambda x: x.topk(5), ValueError, "k=5 is more than the 4 entries"),
    (lambda x: x.topk(-1), ValueError, "topk k"),
    (lambda x: x.topk(1.5), TypeError, "topk k"),
    (lambda x: x.topk(1, dim=2), IndexError, "axis 2 is out of range"),
    (lambda x: x.topk(1, largest=None), TypeError, "largest"),
    (lambda x: tl.tensor(1.0).topk(1), ValueError, "0-d"),
    (lambda x: tl.topk([1.0, 2.0], 1), TypeError, "topk input must be a Tensor"),
])
def test_topk_refuses_bad_arguments(call, error, match):
    with pytest.raises(error, match=match):
        call(tl.zeros(2, 4))


def test_topk_is_pytorchs_where_no_values_tie():
    torch = pytest.importorskip("torch")
    data = np.random.default_rng(1).permutation(60).reshape(3, 4, 5).astype(np.float64)
    data[0, 0, 0] = np.nan
    for dim in range(3):
        for largest in (True, False):
            mine = tl.tensor(data).topk(2, dim=dim, largest=largest)
            theirs = torch.tensor(data).topk(2, dim=dim, largest=largest)
            np.testing.assert_array_equal(mine.values.numpy(), theirs.values.numpy())
            np.testing.assert_array_equal(mine.indices.numpy(), theirs.indices.numpy())


# ------------------------------------------------------------------------------ strict view
def test_view_of_a_transpose_is_refused_with_pytorchs_advice():
    x = tl.tensor(np.arange(24.0).reshape(2, 3, 4))
    with pytest.raises(ValueError, match=r"view size \(24,\) is not compatible with input "
                       r"tensor's size and stride .* Use \.reshape\(\.\.\.\) instead, or "
                       r"\.contiguous\(\)\.view\(\.\.\.\)"):
        x.transpose(0, 1).view(-1)
    assert x.transpose(0, 1).reshape(-1).tolist() == np.arange(24.0).reshape(2, 3, 4)\
        .transpose(1, 0, 2).ravel().tolist()
    assert x.transpose(0, 1).contiguous().view(-1).shape == (24,)
    split = x.transpose(0, 1).view(3, 2, 2, 2)  # splitting one axis needs no copy
    assert np.shares_memory(split.numpy(), x.numpy())
    with pytest.raises(ValueError, match="Use .reshape"):
        x[:, 1:].view(4, 4)
    with pytest.raises(ValueError, match="Use .reshape"):
        tl.ones(3, 1).expand(3, 4).view(12)
    assert tl.ones(3, 1).expand(3, 4).view(3, 2, 2).shape == (3, 2, 2)


def test_the_gpt_heads_view_then_transpose_then_contiguous_view():
    qkv = tl.tensor(np.arange(2 * 3 * 12, dtype=np.float32).reshape(2, 3, 12))
    q, k, v = qkv.split(4, dim=2)  # slices of the last axis, as nanoGPT's c_attn output
    heads = k.view(2, 3, 2, 2).transpose(1, 2)  # (B, nh, T, hs)
    assert np.shares_memory(heads.numpy(), qkv.numpy())
    y = heads @ tl.tensor(np.eye(2, dtype=np.float32))  # a new, contiguous (B, nh, T, hs)
    with pytest.raises(ValueError, match="contiguous"):
        y.transpose(1, 2).view(2, 3, 4)
    back = y.transpose(1, 2).contiguous().view(2, 3, 4)
    np.testing.assert_array_equal(back.numpy(), k.numpy())


def _layouts():
    """Tensors of many layouts: permuted, sliced, expanded, of up to three dims."""
    rng = np.random.default_rng(7)
    for _ in range(300):
        shape = tuple(int(s) for s in rng.integers(1, 4, size=rng.integers(1, 4)))
        array = np.arange(int(np.prod(shape))).reshape(shape)
        if array.ndim >= 2 and rng.random() < 0.6:
            array = array.transpose(rng.permutation(array.ndim))
        axis = int(rng.integers(0, array.ndim))
        if rng.random() < 0.4 and array.shape[axis] > 1:
            array = array[(slice(None),) * axis + (slice(1, None),)]
        if rng.random() < 0.3 and array.shape[axis] == 1:
            array = np.broadcast_to(array, array.shape[:axis] + (3,) + array.shape[axis + 1:])
        yield array


def _new_shapes(size):
    divisors = [d for d in range(1, size + 1) if size % d == 0]
    return [(size,), (1, size), (size, 1)] + [(d, size // d) for d in divisors] + [
        (d, 1, size // d) for d in divisors]


def test_view_strides_agree_with_pytorchs_rule():
    torch = pytest.importorskip("torch")
    checked = 0
    for array in _layouts():
        strides = tuple(s // array.itemsize for s in array.strides)
        twin = torch.as_strided(torch.arange(array.base.size if array.base is not None
                                             else array.size), array.shape, strides)
        for shape in _new_shapes(array.size):
            mine = view_strides(array.shape, strides, shape)
            try:
                theirs = tuple(twin.view(shape).stride())
            except RuntimeError:
                theirs = None
            assert (mine is None) == (theirs is None), (array.shape, strides, shape)
            if mine is not None:  # the strides of size-1 axes are never used
                assert [m for m, n in zip(mine, shape, strict=True) if n > 1] == \
                       [t for t, n in zip(theirs, shape, strict=True) if n > 1]
            checked += 1
    assert checked > 2000


def test_view_strides_by_hand():
    assert view_strides((2, 3, 4), (12, 4, 1), (6, 4)) == (4, 1)
    assert view_strides((3, 2, 4), (4, 12, 1), (3, 8)) is None  # a transpose's two axes
    assert view_strides((3, 2, 4), (4, 12, 1), (3, 2, 2, 2)) == (4, 12, 2, 1)
    assert view_strides((0, 3), (3, 1), (3, 0)) == (1, 1)
    assert view_strides((), (), (1, 1)) == (1, 1)


# ----------------------------------------------- masked_fill broadcasts either way; t()
def test_masked_fill_takes_a_mask_that_enlarges_the_result_as_pytorch():
    x = tl.tensor(np.random.default_rng(0).normal(size=(4, 4)), requires_grad=True)
    mask = np.random.default_rng(1).random((2, 1, 4, 4)) < 0.5
    out = x.masked_fill(tl.tensor(mask), 0.5)
    assert out.shape == (2, 1, 4, 4)
    np.testing.assert_array_equal(out.numpy(), np.where(mask, 0.5, x.numpy()))
    out.sum().backward()  # each entry of x counts once per copy that kept it
    np.testing.assert_array_equal(x.grad.numpy(), (~mask).sum(axis=(0, 1)))
    assert gradcheck(lambda t: t.masked_fill(tl.tensor(mask), 0.5), x)
    with pytest.raises(ValueError, match=r"mask of shape \(3, 4\) does not broadcast"):
        x.masked_fill(tl.tensor(np.ones((3, 4), dtype=bool)), 0.0)


def test_t_transposes_a_matrix_and_leaves_vectors():
    x = tl.tensor(np.arange(6.0).reshape(2, 3))
    assert x.t().tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]] and tl.t(x).shape == (3, 2)
    vector = tl.ones(3)
    assert vector.t() is vector
    with pytest.raises(ValueError, match="at most 2 dims"):
        tl.ones(2, 2, 2).t()
