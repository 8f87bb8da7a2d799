"""What random programs found that hand-picked cases had not: each a test named after the
behaviour it shows, PyTorch's (or a refusal with tensorlib's own clear error where that is
the documented choice, docs/departures.md). tests/contracts/test_differential.py is the fuzzer
that keeps looking."""

from __future__ import annotations

import numpy as np
import pytest

import tensorlib as tl
import tensorlib.nn.functional as F
from tensorlib.nn import LayerNorm


# ------------------------------------------------------------------------ 1. x ** 0 at x = 0
def test_the_gradient_of_x_to_the_power_zero_is_zero_even_at_zero():
    x = tl.tensor([0.0, 2.0], requires_grad=True)
    (x**0.0).sum().backward()
    assert np.array_equal(x.grad, [0.0, 0.0])


def test_a_tensor_exponent_of_zero_gives_zero_gradients_at_a_zero_base():
    base = tl.tensor([0.0, 2.0], dtype=np.float64, requires_grad=True)
    exponent = tl.tensor([0.0, 0.0], dtype=np.float64, requires_grad=True)
    (base**exponent).sum().backward()
    assert np.array_equal(base.grad, [0.0, 0.0])
    assert np.array_equal(exponent.grad, [0.0, np.log(2.0)])  # d/db = a^b log a; 0 at a = 0


# ---------------------------------------------------------- 2. 0-d results are 0-d arrays
def test_a_reduction_to_one_number_can_be_changed_in_place():
    total = tl.tensor([1.0, 2.0]).sum()
    assert isinstance(total.numpy(), np.ndarray) and total.shape == ()
    total.fill_(0)
    assert total.item() == 0.0
    total.copy_(tl.tensor(5.0))
    assert total.item() == 5.0


def test_detach_of_a_0d_result_shares_its_values():
    x = tl.tensor(2.0, requires_grad=True)
    y = x * 3
    y.detach().add_(1)
    assert y.item() == 7.0


def test_one_element_of_a_tensor_is_a_view_of_it():
    c = tl.zeros(2, 3)
    c[0, 1].fill_(9)
    assert c.data[0, 1] == 9 and c.data.sum() == 9
    assert c.version == 1  # the view shares the version counter


# ------------------------------------- 3. in-place changes of max and logsumexp results
@pytest.mark.parametrize("reduce", ["amax", "logsumexp"])
def test_an_in_place_change_of_a_reduced_result_is_refused_at_backward(reduce):
    """amax (and logsumexp) save their output for the backward, as PyTorch's do."""
    x = tl.tensor([[1.0, 5.0, 2.0]], requires_grad=True)
    result = getattr(x, reduce)(1)
    result.detach().add_(10)
    with pytest.raises(RuntimeError, match="in-place|inplace|modified"):
        result.sum().backward()
    assert x.grad is None


def test_a_constant_factor_may_change_in_place_after_the_forward():
    x = tl.tensor([1.0, 2.0], requires_grad=True)
    factor = tl.tensor([3.0, 4.0])
    y = (x * factor).sum()
    with tl.no_grad():
        x.add_(100)  # mul saved only the factor: x's own value is not needed
    y.backward()
    assert np.array_equal(x.grad, [3.0, 4.0])


# ----------------------------------------------------------------- 4. layer_norm dtypes
def test_layer_norm_refuses_mixed_float_dtypes_at_the_call():
    x = tl.tensor(np.ones((2, 3)), dtype=np.float64, requires_grad=True)
    weight = tl.ones(3, requires_grad=True)  # float32
    with pytest.raises(TypeError, match="layer_norm: mixed dtypes"):
        F.layer_norm(x, (3,), weight, None)
    with pytest.raises(TypeError, match="layer_norm: mixed dtypes"):
        LayerNorm(3)(x)


# ------------------------------------------------------------------------- 5. None values
@pytest.mark.parametrize("call", [
    lambda t: t.masked_fill(np.array([True, False]), None),
    lambda t: t.fill_(None),
    lambda t: t.copy_(None),
    lambda t: tl.full((2,), None),
], ids=["masked_fill", "fill_", "copy_", "full"])
def test_none_as_a_value_is_a_type_error(call):
    t = tl.zeros(2)
    with pytest.raises(TypeError, match="None"):
        call(t)
    assert np.array_equal(t.data, [0.0, 0.0]) and t.version == 0


# ------------------------------------------- 6. tensorlib's own errors, naming the argument
@pytest.mark.parametrize("call, error, named", [
    (lambda: tl.zeros(2).add_("a"), TypeError, "add_"),
    (lambda: tl.zeros(2).mul_(None), TypeError, "mul_"),
    (lambda: tl.zeros(2).fill_("a"), TypeError, "fill_ value"),
    (lambda: tl.zeros(2).copy_("a"), TypeError, "copy_"),
    (lambda: tl.zeros(2).masked_fill(np.array([True, False]), "a"), TypeError, "masked_fill"),
    (lambda: tl.zeros(2).masked_fill(np.array([True, False]), (1, 4)), TypeError,
     "masked_fill value"),
    (lambda: tl.full((2,), "a"), TypeError, "full value"),
    (lambda: tl.zeros((-2, 3)), ValueError, "zeros shape"),
    (lambda: tl.full((-2, 3), 1.0), ValueError, "full shape"),
    (lambda: tl.zeros(10**20), ValueError, "zeros shape"),
    (lambda: tl.tensor([[1.0, 2.0], [3.0]]), ValueError, "nested lists of different lengths"),
    (lambda: tl.zeros(2).astype("float128x"), TypeError, "astype dtype"),
    (lambda: tl.zeros(4).split(2.5), TypeError, "split sizes"),
    (lambda: tl.zeros(4).split(None), TypeError, "split sizes"),
    (lambda: tl.zeros(4).var(correction="a"), TypeError, "var correction"),
    (lambda: tl.zeros(4).std(unbiased="a"), TypeError, "std unbiased"),
    (lambda: tl.zeros(4).sum(keepdim="yes"), TypeError, "keepdim"),
    (lambda: tl.zeros(4).sum(dim=()), ValueError, "dim=()"),
    (lambda: F.causal_softmax(tl.zeros(2, 2), scale=None), TypeError, "scale"),
    (lambda: tl.tensor(np.uint8([1])) + 1000, ValueError, "uint8"),
    (lambda: tl.tensor([1, 2]) ** -1, ValueError, "negative power"),
], ids=lambda value: None)
def test_bad_input_gets_tensorlibs_own_error_naming_it(call, error, named):
    with pytest.raises(error, match=named.replace("(", r"\(").replace(")", r"\)")) as info:
        call()
    assert type(info.value).__module__ == "builtins"  # not numpy's UFuncTypeError and kin


@pytest.mark.parametrize("build, named", [
    (lambda: tl.nn.LayerNorm(10**20), "normalized_width"),
    (lambda: tl.nn.BatchNorm1d(10**20), "num_features"),
    (lambda: tl.nn.Linear(10**20, 3), "in_features"),
    (lambda: tl.nn.Embedding(10**20, 4), "vocabulary_size"),
], ids=["LayerNorm", "BatchNorm1d", "Linear", "Embedding"])
def test_a_layer_too_large_for_any_array_is_refused_naming_the_size(build, named):
    with pytest.raises(ValueError, match=named):
        build()


def test_optimizers_refuse_arrays_where_parameters_and_betas_belong():
    from tensorlib.optim import SGD, AdamW
    with pytest.raises(TypeError, match="ndarray"):
        SGD(np.array(1.0), lr=0.1)
    parameter = tl.nn.Parameter(np.zeros(2, dtype=np.float32))
    with pytest.raises(TypeError, match="betas"):
        AdamW([parameter], betas=np.array(0.9))


# ---------------------------------------------------------- 7. softmax over an empty axis
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_over_an_empty_axis_is_empty(name):
    x = tl.zeros(2, 0, requires_grad=True)
    out = getattr(x, name)(axis=1)
    assert out.shape == (2, 0)
    out.sum().backward()
    assert x.grad.shape == (2, 0)


# ------------------------------------------------- 8. integers in floating ops: float32
def test_small_integer_tensors_compute_floating_ops_in_float32():
    ids = tl.tensor(np.uint8([10, 12, 20]))
    assert ids.exp().dtype == np.float32 and np.isfinite(ids.exp().data).all()
    total = ids.logsumexp()
    assert total.dtype == np.float32 and abs(total.item() - 20.000381) < 1e-4
    assert ids.sum().dtype == np.int64


@pytest.mark.parametrize("compute, dtype", [
    (lambda i: i / i, np.float32),
    (lambda i: i.mean(), np.float32),
    (lambda i: i.sqrt(), np.float32),
    (lambda i: i ** 0.5, np.float32),
    (lambda i: i ** 3, np.int64),
    (lambda i: i + 1.5, np.float32),
    (lambda i: i * tl.tensor([1.0], dtype=np.float64), np.float64),
    (lambda i: (i > 1).sum(), np.int64),
    (lambda i: i.softmax(), np.float32),
], ids=["div", "mean", "sqrt", "pow-float", "pow-int", "add-float", "mul-float64",
        "sum-bool", "softmax"])
def test_integer_tensors_promote_as_pytorch_does(compute, dtype):
    assert compute(tl.tensor([1, 2, 3])).dtype == dtype


# ------------------------------------------------ found by the fuzzer, after the eight
def test_a_retained_gradient_accumulates_over_backward_passes():
    x = tl.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.retain_grad()
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    assert np.array_equal(y.grad, [2.0, 2.0]) and np.array_equal(x.grad, [4.0, 4.0])


def test_splitting_an_empty_axis_gives_one_empty_piece():
    pieces = tl.split(tl.zeros(0, 3), 2, dim=0)
    assert [piece.shape for piece in pieces] == [(0, 3)]


def test_linear_and_matmul_with_no_features_give_empty_products():
    x = tl.zeros(2, 0, requires_grad=True)
    weight = tl.zeros(1, 0, requires_grad=True)
    y = F.linear(x, weight)
    assert y.shape == (2, 1) and np.array_equal(y.data, [[0.0], [0.0]])
    y.sum().backward()
    assert x.grad.shape == (2, 0) and weight.grad.shape == (1, 0)
    assert (tl.zeros(4, 1, 0) @ tl.zeros(0, 2)).shape == (4, 1, 2)
    assert F.linear(tl.zeros(2, 3), tl.zeros(0, 3)).shape == (2, 0)


def test_max_of_an_empty_tensor_over_a_non_empty_axis_is_empty():
    assert tl.zeros(0, 3).amax(1).shape == (0,)
    values, indices = tl.zeros(0, 3).max(1)
    assert values.shape == (0,) and indices.shape == (0,) and indices.dtype == np.int64
    with pytest.raises(ValueError, match="no elements"):
        tl.zeros(0, 3).amax(0)
    with pytest.raises(ValueError, match="no elements"):
        tl.zeros(0, 3).max(0)


def test_changing_a_layer_norm_output_in_place_leaves_its_gradient_right():
    x = tl.tensor(np.array([0.3, -1.2, 0.7]), requires_grad=True)
    y = F.layer_norm(x, (3,))
    y.detach().add_(0.5)  # the output is not what the backward saved
    y.sum().backward()
    np.testing.assert_allclose(x.grad, 0.0, atol=1e-12)  # Σ of a normalized row is constant


def test_matmul_by_a_constant_lets_the_other_operand_change_in_place():
    """d(a @ c)/da needs c, not a: a itself may change after the forward (as in PyTorch).
    (linear keeps its weight: a graph recorded before Module.to must refuse backward.)"""
    a = tl.tensor(np.ones((3, 4)), requires_grad=True)
    constant = tl.tensor(np.ones((4, 2)))
    y = (a @ constant).sum() + (constant.T @ a.T).sum()
    with tl.no_grad():
        a.mul_(2)
    y.backward()
    assert np.array_equal(a.grad, np.full((3, 4), 4.0))


def test_a_nan_maximum_gives_nan_gradients_quietly_as_pytorchs_amax():
    x = tl.tensor(np.array([1.0, np.nan, 2.0]), requires_grad=True)
    x.max().backward()  # RuntimeWarnings from tensorlib are errors in these tests
    assert np.isnan(x.grad).all()


def test_cross_entropy_with_every_target_ignored_is_nan_with_zero_gradients():
    logits = tl.tensor(np.array([[0.5, -0.5]]), requires_grad=True)
    loss = F.cross_entropy(logits, np.array([-100]))
    assert np.isnan(loss.item())
    loss.backward()
    assert np.array_equal(logits.grad, [[0.0, 0.0]])


def test_ignored_targets_get_zero_gradient_even_from_a_nan_upstream_gradient():
    logits = tl.tensor(np.array([[0.5, -0.5], [1.0, 2.0]]), requires_grad=True)
    losses = F.cross_entropy(logits, np.array([-100, 1]), reduction="none")
    losses.backward(np.array([np.nan, 1.0]))
    assert np.array_equal(logits.grad[0], [0.0, 0.0]) and np.isfinite(logits.grad[1]).all()


def test_maximum_with_a_nan_gives_each_side_the_whole_gradient():
    a = tl.tensor(np.array([0.0, 1.0]), requires_grad=True)
    b = tl.tensor(np.array([np.nan, 1.0]), requires_grad=True)
    tl.maximum(a, b).sum().backward()
    assert np.array_equal(a.grad, [1.0, 0.5]) and np.array_equal(b.grad, [1.0, 0.5])


def test_layer_norm_of_a_row_with_an_infinity_is_nan_quietly():
    x = tl.tensor(np.full((2, 4), -np.inf), requires_grad=True)
    y = F.layer_norm(x, (4,))  # RuntimeWarnings from tensorlib are errors in these tests
    y.sum().backward()
    assert np.isnan(y.data).all() and np.isnan(x.grad).all()


def test_products_of_inf_and_zero_are_nan_without_a_warning():
    """Found by the differential fuzzer: ``[-1.13, 0.] @ ones(2, 2) * -inf`` made numpy warn
    "invalid value encountered in matmul" (an error under this project's warning filter);
    PyTorch gives NaN quietly. The products of matmul, linear and convolution now do too."""
    import warnings

    inf = np.full((1, 2, 2), -np.inf)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        vector = tl.tensor(np.array([-1.13, 0.0]), requires_grad=True)
        out = vector @ tl.tensor(inf, requires_grad=True)
        assert np.isnan(out.numpy()).all()
        out.sum().backward()
        linear = F.linear(tl.tensor([[0.0, 1.0]]), tl.tensor([[np.inf, 1.0]]))
        assert np.isnan(linear.numpy()).all()
        conv = F.conv1d(tl.tensor([[[0.0, 1.0]]]), tl.tensor([[[np.inf, 1.0]]]))
        assert np.isnan(conv.numpy()).all()


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_padding_by_zero_widths_gives_a_new_tensor_that_later_changes_do_not_reach(mode):
    """Found at FUZZ_SCALE=10 (seed 462087): F.pad with nothing to add returned its input's
    own array for the copying modes, so zeroing the input later zeroed the padded result.
    PyTorch's pad always returns a new tensor."""
    x = tl.tensor([[[1.0, 2.0, 3.0]]])
    padded = F.pad(x, (0, 0), mode=mode)
    assert not np.shares_memory(padded.numpy(), x.numpy())
    with tl.no_grad():
        x.zero_()
    assert padded.tolist() == [[[1.0, 2.0, 3.0]]]


@pytest.mark.parametrize("activation", [F.relu, F.relu6, F.hardswish])
def test_a_nan_gradient_does_not_cross_a_flat_activation(activation):
    """Found at FUZZ_SCALE=25 (seed 5642): the std of one entry is NaN, and its NaN gradient
    went back through relu6 where the slope is 0 as NaN (NaN · 0). PyTorch's backward of
    relu, relu6 (hardtanh) and hardswish selects instead of multiplying: 0 where the slope
    is 0, whatever arrives there."""
    x = tl.tensor([-4.0, 1.0], dtype=np.float64, requires_grad=True)
    activation(x).backward(tl.tensor([np.nan, 1.0], dtype=np.float64))
    assert x.grad.tolist()[0] == 0.0
    assert not np.isnan(x.grad.tolist()[1])


def test_relu_passes_the_gradient_of_a_nan_input():
    """PyTorch's relu gives a NaN output the upstream gradient (its mask is output <= 0)."""
    x = tl.tensor([np.nan, -1.0, 2.0], dtype=np.float64, requires_grad=True)
    F.relu(x).sum().backward()
    assert x.grad.tolist() == [1.0, 0.0, 1.0]


@pytest.mark.parametrize("stride", [1, 2])  # overlapping windows, and windows apart
def test_max_pooling_gives_a_nan_gradient_to_the_chosen_entries_only(stride):
    x = tl.tensor(np.arange(8.0).reshape(1, 1, 8), requires_grad=True)
    pooled = F.max_pool1d(x, 2, stride=stride)
    pooled.backward(tl.tensor(np.full(pooled.shape, np.nan)))
    chosen = np.isnan(x.grad.numpy())[0, 0]
    assert chosen.tolist() == [False, True] * 4 if stride == 2 else [False] + [True] * 7
    assert (x.grad.numpy()[0, 0][~chosen] == 0.0).all()


# ------------------------------------------- 9. var, std, stack and cat: PyTorch's refusals
@pytest.mark.parametrize("call, error, match", [
    (lambda: tl.tensor([1, 2, 3]).var(), TypeError, "var takes a floating-point tensor"),
    (lambda: tl.tensor([1, 2, 3]).std(), TypeError, "std takes a floating-point tensor"),
    (lambda: tl.var(tl.tensor([True, False])), TypeError, "var takes a floating-point"),
    (lambda: tl.ones(3).var(correction=10**20), ValueError, "does not fit in a 64-bit"),
    (lambda: tl.ones(3).std(correction=-(2**64)), ValueError, "does not fit in a 64-bit"),
    (lambda: tl.stack([tl.ones(2), tl.ones(2)], axis=None), TypeError, "got None"),
    (lambda: tl.stack([tl.ones(2), tl.ones(2)], dim=None), TypeError, "got None"),
    (lambda: tl.cat([tl.ones(2), tl.ones(2)], axis=None), TypeError, "got None"),
])
def test_what_pytorch_refuses_is_refused_at_the_call(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_a_large_correction_that_fits_gives_pytorchs_infinity():
    assert tl.tensor([1.0, 2.0, 4.0]).var(correction=2**62).item() == float("inf")
    assert tl.stack([tl.ones(2), tl.ones(2)], axis=1).shape == (2, 2)
