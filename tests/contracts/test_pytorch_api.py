"""PyTorch's names, argument names, defaults and return types, one test per behaviour.

Each test states what tensorlib does; where PyTorch is importable, the same call on PyTorch
must give the same values, gradients, shapes and dtypes (float64, so the comparison is
tight), or raise where tensorlib raises.
"""

from __future__ import annotations

import numpy as np
import pytest

import tensorlib as tl
import tensorlib.nn.functional as F
from tensorlib.engine.methods.operands import MaxMin

try:
    import torch
except ImportError:  # the comparisons below run where PyTorch is installed
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="compares with PyTorch")

X = np.array([[1.0, 5.0, 3.0, 5.0], [4.0, 2.0, 6.0, -1.0], [0.5, 0.5, 0.5, 0.5]])


def ours(array=X, requires_grad=True):
    return tl.tensor(array, dtype=tl.float64, requires_grad=requires_grad)


def theirs(array=X, requires_grad=True):
    return torch.tensor(array, dtype=torch.float64, requires_grad=requires_grad)


def same(a, b, what=""):
    """A tensorlib result equals a PyTorch one: shape, dtype and values."""
    a_array, b_array = np.asarray(a.data if isinstance(a, tl.Tensor) else a), \
        b.detach().numpy() if hasattr(b, "detach") else np.asarray(b)
    assert a_array.shape == b_array.shape, what
    assert a_array.dtype == b_array.dtype, what
    np.testing.assert_allclose(a_array, b_array, rtol=1e-12, atol=1e-12, err_msg=what)


def gradients_agree(program, array=X):
    """``program(x)`` gives the same value and the same gradient of its sum on both."""
    x, y = ours(array), theirs(array)
    out_x, out_y = program(x, tl), program(y, torch)
    same(out_x, out_y, "value")
    out_x.sum().backward()
    out_y.sum().backward()
    same(x.grad, y.grad, "gradient")


# ------------------------------------------------------------------------ dim and keepdim
@pytest.mark.parametrize("name", ["sum", "mean", "amax", "amin", "var", "std", "logsumexp",
                                  "all", "any"])
def test_dim_keepdim_and_numpys_axis_keepdims_are_the_same_call(name):
    x = ours(requires_grad=False)
    method = getattr(x, name)
    np.testing.assert_array_equal(method(1, keepdim=True).data,
                                  method(axis=1, keepdims=True).data)
    np.testing.assert_array_equal(method(dim=0).data, method(axis=0).data)
    with pytest.raises(TypeError, match="dim or axis"):
        method(dim=0, axis=0)


@needs_torch
@pytest.mark.parametrize("name", ["sum", "mean", "amax", "amin", "var", "std", "logsumexp"])
@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1)])
def test_reductions_agree_with_pytorch(name, dim):
    for keepdim in (False, True):
        if dim is None:
            if name == "logsumexp":
                return  # PyTorch's logsumexp needs a dim
            gradients_agree(lambda x, lib: getattr(x, name)())
        else:
            gradients_agree(lambda x, lib, keep=keepdim: getattr(x, name)(dim, keepdim=keep))


# ------------------------------------------------------------------------ max, min, argmax
def test_max_over_a_dim_is_a_named_pair_of_values_and_indices():
    x = ours()
    values, indices = x.max(1)
    assert isinstance(x.max(1), MaxMin)
    np.testing.assert_array_equal(values.data, [5.0, 6.0, 0.5])
    np.testing.assert_array_equal(indices.data, [1, 2, 0])  # ties: the first
    assert indices.dtype == tl.int64
    assert x.max(dim=1, keepdim=True).values.shape == (3, 1)
    assert x.max(axis=1).indices.shape == (3,)
    values.sum().backward()
    np.testing.assert_array_equal(x.grad, [[0, 1, 0, 0], [0, 0, 1, 0], [1, 0, 0, 0]])
    with pytest.raises(TypeError, match="amax"):
        x.max((0, 1))


def test_max_of_everything_shares_the_gradient_between_ties():
    x = ours()
    assert x.max().shape == ()
    x.max().backward()
    np.testing.assert_array_equal(x.grad, [[0, 0, 0, 0], [0, 0, 1, 0], [0, 0, 0, 0]])
    y = ours(np.array([1.0, 3.0, 3.0]))
    y.max().backward()
    np.testing.assert_array_equal(y.grad, [0, 0.5, 0.5])


def test_max_of_two_tensors_is_maximum():
    a, b = tl.tensor([1.0, 4.0]), tl.tensor([3.0, 2.0])
    np.testing.assert_array_equal(a.max(b).data, [3.0, 4.0])
    np.testing.assert_array_equal(a.min(b).data, [1.0, 2.0])
    np.testing.assert_array_equal(tl.minimum(a, b).data, [1.0, 2.0])


@needs_torch
@pytest.mark.parametrize("which", ["max", "min"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_max_and_min_over_a_dim_agree_with_pytorch(which, dim):
    for keepdim in (False, True):
        x, y = ours(), theirs()
        ours_pair, theirs_pair = getattr(x, which)(dim, keepdim), getattr(y, which)(dim, keepdim)
        same(ours_pair.values, theirs_pair.values)
        same(ours_pair.indices, theirs_pair.indices)
        (ours_pair.values * ours(np.arange(ours_pair.values.numel()).reshape(
            ours_pair.values.shape), False)).sum().backward()
        (theirs_pair.values * theirs(np.arange(theirs_pair.values.numel()).reshape(
            theirs_pair.values.shape), False)).sum().backward()
        same(x.grad, y.grad)


@needs_torch
def test_argmax_argmin_agree_with_pytorch():
    x, y = ours(requires_grad=False), theirs(requires_grad=False)
    for name in ("argmax", "argmin"):
        same(getattr(x, name)(), getattr(y, name)())
        for dim in (0, 1):
            for keepdim in (False, True):
                same(getattr(x, name)(dim, keepdim), getattr(y, name)(dim, keepdim))


# ------------------------------------------------------------------------ var and std
def test_var_divides_by_n_minus_one_by_default():
    x = ours(np.array([1.0, 2.0, 3.0, 4.0]), requires_grad=False)
    assert x.var().item() == pytest.approx(5 / 3)
    assert x.var(unbiased=False).item() == pytest.approx(5 / 4)
    assert x.var(correction=0).item() == pytest.approx(5 / 4)
    assert x.var(correction=2).item() == pytest.approx(5 / 2)
    assert x.std().item() == pytest.approx((5 / 3) ** 0.5)
    with pytest.raises(TypeError, match="unbiased or correction"):
        x.var(unbiased=True, correction=1)


@needs_torch
@pytest.mark.parametrize("name", ["var", "std"])
@pytest.mark.parametrize("arguments", [{}, {"unbiased": False}, {"correction": 0},
                                       {"correction": 2}, {"dim": 1, "keepdim": True},
                                       {"dim": 0, "unbiased": True}])
def test_var_and_std_agree_with_pytorch(name, arguments):
    gradients_agree(lambda x, lib: getattr(x, name)(**arguments))


# ------------------------------------------------------------------------ size and numbers
def test_size_is_a_method_and_numel_counts():
    x = tl.zeros(2, 3)
    assert x.size() == (2, 3) and x.size(1) == 3 and x.size(-2) == 2
    assert x.numel() == 6 and x.nelement() == 6 and x.dim() == 2
    for numpy_habit in (lambda: x.size == 6, lambda: bool(x.size), lambda: x.size + 1,
                        lambda: int(x.size)):
        with pytest.raises(TypeError, match="numel"):
            numpy_habit()


def test_one_element_tensors_are_numbers_for_python():
    loss = tl.tensor(2.25)
    assert f"{loss:.3f}" == "2.250" and "%.1f" % loss == "2.2"  # noqa: UP031
    assert float(loss) == 2.25 and int(tl.tensor([7])) == 7
    assert list(range(10))[tl.tensor(3)] == 3
    with pytest.raises(TypeError, match="integer"):
        list(range(10))[tl.tensor(3.0)]
    with pytest.raises(ValueError, match="one element"):
        float(tl.zeros(2))
    assert f"{tl.zeros(2)}" == repr(tl.zeros(2))


# ------------------------------------------------------------------------ new everyday names
@needs_torch
@pytest.mark.parametrize("program", [
    lambda x, lib: lib.cat([x, x * 2], dim=1),
    lambda x, lib: lib.stack([x, x * 2], dim=2),
    lambda x, lib: lib.cat(lib.unbind(x, 1), 0),
    lambda x, lib: x.gather(1, (lib.tensor([[0, 0], [3, 1], [2, 2]]))),
    lambda x, lib: x.clone() * 3,
    lambda x, lib: x.flatten(),
    lambda x, lib: x.abs().log10(),
    lambda x, lib: x.pow(3),
    lambda x, lib: lib.exp(x) + lib.tanh(x) * lib.sum(x, 1, keepdim=True),
    lambda x, lib: lib.split(x, 3, dim=1)[1],
    lambda x, lib: x.transpose(0, 1),
    lambda x, lib: x.unsqueeze(1).squeeze(1),
    lambda x, lib: lib.softmax(x, dim=0),
    lambda x, lib: lib.minimum(x, x.T.sum(1)),
], ids=["cat", "stack", "unbind", "gather", "clone", "flatten", "log10", "pow", "functions",
        "split", "transpose", "squeeze", "softmax", "minimum"])
def test_everyday_names_agree_with_pytorch(program):
    gradients_agree(program)


@needs_torch
def test_predicates_factories_and_one_hot_agree_with_pytorch():
    x, y = ours(requires_grad=False), theirs(requires_grad=False)
    same((x > 1).all(1), (y > 1).all(1))
    same((x > 1).any(), (y > 1).any())
    assert tl.allclose(x, x + 1e-9) == torch.allclose(y, y + 1e-9)
    assert tl.allclose(x, x + 1e-3) == torch.allclose(y, y + 1e-3)
    same(tl.isclose(x, x * 1.001), torch.isclose(y, y * 1.001))
    assert tl.equal(x, x.clone()) and not tl.equal(x, x[:2])
    same(tl.linspace(-3, 0, 7), torch.linspace(-3, 0, 7))
    ids = np.array([[0, 3], [2, 1]])
    same(F.one_hot(tl.tensor(ids), num_classes=5),
         torch.nn.functional.one_hot(torch.tensor(ids), num_classes=5))
    same(F.one_hot(tl.tensor(ids)), torch.nn.functional.one_hot(torch.tensor(ids)))
    same(tl.zeros_like(x, dtype=tl.int64), torch.zeros_like(y, dtype=torch.int64))


def test_histogram_is_numpys_as_a_named_pair():
    x = tl.tensor([0.5, 1.5, 1.5, 2.0, 3.0, 9.0])
    hist, edges = tl.histogram(x, bins=4)
    assert isinstance(hist, tl.Tensor) and hist.dtype == np.float32
    expected = np.histogram(x.numpy(), bins=4)
    np.testing.assert_array_equal(hist.numpy(), expected[0])
    np.testing.assert_allclose(x.histogram(4).bin_edges.numpy(), expected[1], rtol=1e-6)
    density = x.histogram(3, range=(0.0, 3.0), density=True).hist
    np.testing.assert_allclose(density.numpy(), np.histogram(x.numpy(), 3, (0, 3),
                                                             density=True)[0], rtol=1e-6)
    with pytest.raises(TypeError, match="floating-point"):
        tl.histogram(tl.tensor([1, 2]))


@needs_torch
def test_histogram_agrees_with_pytorch():
    data = np.random.default_rng(0).standard_normal(200).astype(np.float32)
    for kwargs in ({"bins": 10}, {"bins": 5, "range": (-1.0, 1.0)},
                   {"bins": 7, "density": True}):
        ours_, theirs_ = tl.histogram(tl.tensor(data), **kwargs), torch.histogram(
            torch.tensor(data), **kwargs)
        np.testing.assert_allclose(ours_.hist.numpy(), theirs_.hist.numpy(), rtol=1e-5)
        np.testing.assert_allclose(ours_.bin_edges.numpy(), theirs_.bin_edges.numpy(),
                                   rtol=1e-5, atol=1e-6)


def test_one_hot_refuses_what_pytorch_refuses():
    with pytest.raises(TypeError, match="integer"):
        F.one_hot(tl.tensor([1.0, 2.0]), 3)
    with pytest.raises(ValueError, match=r"\[0, 3\)"):
        F.one_hot(tl.tensor([1, 3]), 3)


# ------------------------------------------------------------------------ in place
def test_counts_by_item_assignment():
    counts = tl.zeros((3, 3), dtype=tl.int32)
    for a, b in [(0, 1), (1, 2), (0, 1), (2, 2)]:
        counts[a, b] += 1
    counts[tl.tensor(2), tl.tensor(0)] = 5
    np.testing.assert_array_equal(counts.data, [[0, 2, 0], [0, 0, 1], [5, 0, 1]])
    assert counts.dtype == tl.int32


def test_in_place_changes_write_into_the_tensors_own_memory():
    x = tl.zeros(2, 3)
    alias, row = x, x[0]
    x += 1
    row *= 5  # a view: x changes too
    x[1, :] = tl.tensor([7.0, 8.0, 9.0])
    assert alias is x
    np.testing.assert_array_equal(x.data, [[5, 5, 5], [7, 8, 9]])
    x[0] /= 5
    np.testing.assert_array_equal(x.data[0], [1, 1, 1])


def test_a_leaf_that_requires_grad_changes_in_place_only_under_no_grad():
    w = tl.ones(3, requires_grad=True)
    for change in (lambda: w.__iadd__(1), lambda: w.__setitem__(0, 5.0), lambda: w.mul_(2)):
        with pytest.raises(RuntimeError, match="no_grad"):
            change()
    with tl.no_grad():
        w -= 0.5
        w[0] = 2.0
    np.testing.assert_array_equal(w.data, [2.0, 0.5, 0.5])


def test_in_place_results_that_do_not_fit_are_refused_and_change_nothing():
    ints = tl.zeros(3, dtype=tl.int64)
    with pytest.raises(TypeError, match="int64"):
        ints += 0.5
    small = tl.zeros(3)
    with pytest.raises(ValueError, match="shape"):
        small += tl.ones(2, 3)
    np.testing.assert_array_equal(ints.data, 0)
    np.testing.assert_array_equal(small.data, 0)


@needs_torch
@pytest.mark.parametrize("program", [
    lambda x, lib: _set(x * 2, (0, 1), 10.0),
    lambda x, lib: _set(x * 2, (slice(None), 2), x[:, 0] * 3),
    lambda x, lib: _set(x * 2, ([0, 2, 0], [1, 1, 3]), x[1, :3]),
    lambda x, lib: _add_at(x * 2, (1,), x[0] * x[2]),
    lambda x, lib: _add_at(x * 2, ([0, 2],), x[1]),
    lambda x, lib: _chain(x),
    lambda x, lib: _into_constant(x, lib),
], ids=["set-number", "set-column", "set-advanced", "add-row", "add-rows",
        "chain", "into-constant"])
def test_recorded_in_place_changes_agree_with_pytorch(program):
    gradients_agree(program)


def _set(h, index, value):
    h[index] = value
    return h


def _add_at(h, index, value):
    h[index] += value
    return h


def _softmax_minus_one_hot(logits, lib):
    dlogits = logits.softmax(1)
    dlogits[range(3), [1, 0, 3]] -= 1
    dlogits /= 3
    return dlogits


@needs_torch
def test_a_gradient_by_hand_from_softmax_in_place_agrees_and_refuses_backward_as_pytorch():
    x, y = ours(), theirs()
    ours_value, theirs_value = _softmax_minus_one_hot(x, tl), _softmax_minus_one_hot(y, torch)
    same(ours_value, theirs_value)
    with pytest.raises(RuntimeError):  # softmax saved its output, changed since
        ours_value.sum().backward()
    with pytest.raises(RuntimeError):
        theirs_value.sum().backward()


def _chain(x):
    h = x * 1.5
    h += x
    h *= x
    h -= 1
    h /= x.abs() + 1
    return h


def _into_constant(x, lib):
    out = lib.zeros_like(x)
    for k in range(2):
        out[k + 1] += x[k] * 2
    return out


def test_a_value_changed_after_an_op_saved_it_is_refused_at_backward():
    x = ours()
    h = x.exp()  # exp saves its output
    h += 1
    with pytest.raises(RuntimeError, match="in place|version|modified"):
        h.sum().backward()


def test_recorded_in_place_changes_of_views_are_refused_where_the_graph_would_be_wrong():
    x = ours()
    h = x * 2
    flat = h.reshape(-1)
    with pytest.raises(RuntimeError, match="clone"):
        flat += 1
    h2 = x * 2
    kept_row = h2[0]  # a live view in the graph
    with pytest.raises(RuntimeError, match="views"):
        h2 *= 3
    del kept_row
    h2 *= 3  # no live view any more
    h2.sum().backward()
    np.testing.assert_array_equal(x.grad, np.full(X.shape, 6.0))


def test_function_spellings_call_the_methods():
    x = tl.tensor([[1.0, -2.0]])
    assert tl.sum(x, dim=1).item() == x.sum(1).item()
    np.testing.assert_array_equal(tl.abs(x).data, x.abs().data)
    with pytest.raises(TypeError, match="Tensor"):
        tl.exp([1.0, 2.0])


# ------------------------------------------------------------------------ .grad and .data
def test_grad_and_data_are_tensors():
    w = tl.tensor([[1.0, -2.0], [3.0, 0.5]], requires_grad=True)
    (w * w).sum().backward()
    assert isinstance(w.grad, tl.Tensor) and isinstance(w.data, tl.Tensor)
    assert not w.data.requires_grad and w.grad.dtype == w.dtype
    ratio = (w.grad.std() / w.data.std()).log10().item()
    assert ratio == pytest.approx(np.log10(2.0))
    w.data -= 0.25 * w.grad  # changes w itself
    np.testing.assert_allclose(w.numpy(), [[0.5, -1.0], [1.5, 0.25]])
    first = w.grad
    (w * 2).sum().backward()  # accumulates into the same tensor
    assert w.grad is first
    np.testing.assert_allclose(w.grad.numpy(), [[4.0, -2.0], [8.0, 3.0]])
    w.grad = None
    with pytest.raises(ValueError, match="shape"):
        w.grad = tl.zeros(3)
    with pytest.raises(TypeError, match="Tensor or None"):
        w.grad = [1.0, 2.0]


def test_a_change_through_data_is_seen_by_the_version_check():
    w = tl.tensor([1.0, 2.0], requires_grad=True)
    loss = (w * w).sum()  # saves w
    w.data += 1
    with pytest.raises(RuntimeError, match="changed in place"):
        loss.backward()


def test_numpy_functions_on_tensors_give_numpys_answers():
    t = tl.tensor([1.0, 4.0])
    assert isinstance(np.sqrt(t), np.ndarray) and np.sum(t) == 5.0
    assert np.allclose(t, [1.0, 4.0]) and np.shares_memory(t, t.data)
    product = np.ones(2, dtype=np.float32) * t
    assert isinstance(product, tl.Tensor)
    array = np.zeros(2, dtype=np.float32)
    array += t  # numpy's in-place add, into the array
    np.testing.assert_array_equal(array, [1.0, 4.0])
