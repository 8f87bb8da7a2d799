"""Each kernel in tensorlib.engine.kernels equals the plain formula it stands in for, to the
accuracy its docstring states; and reference mode switches every one of them off."""

import math

import numpy as np
import pytest
from scipy import special

import tensorlib as tl
from tensorlib import Rng
from tensorlib.engine import kernel_table, kernels, ops
from tensorlib.engine.ops.elementwise import Exp, exact_gelu
from tensorlib.engine.ops.function import register_kernel
from tensorlib.engine.ops.softmax import softmax
from tensorlib.nn import Linear
from tensorlib.nn import functional as F
from tensorlib.optim import AdamW, adamw_flat
from tensorlib.optim.optimizer import register_step_kernel

from helpers import assert_same_adamw_run


def normal(*shape, seed=0, dtype=np.float32, scale=1.0):
    return (np.random.default_rng(seed).normal(size=shape) * scale).astype(dtype)


# --------------------------------------------------------------------------------- the switch
def test_reference_mode_is_a_context_manager_and_a_global_switch():
    assert not tl.is_reference_mode() and kernels.enabled()
    with tl.reference_mode() as mode:
        assert tl.is_reference_mode() and not kernels.enabled()
        assert repr(mode) == "reference_mode(True)"
        with tl.reference_mode(False):
            assert kernels.enabled()
        assert not kernels.enabled()  # the inner block restored what it found
    assert kernels.enabled()
    try:
        tl.reference_mode(True)  # a plain call switches the mode for the process
        assert tl.is_reference_mode()
        assert tl.set_reference_mode(False) is True  # returns the previous mode
        assert not tl.is_reference_mode()
    finally:
        tl.set_reference_mode(False)


def test_reference_mode_is_restored_after_an_error_and_takes_only_booleans():
    with pytest.raises(ZeroDivisionError), tl.reference_mode():
        _ = 1 / 0
    assert kernels.enabled()
    for bad in ("yes", 1, None):
        with pytest.raises(TypeError, match="True or False"):
            tl.set_reference_mode(bad)
    assert kernels.enabled()


# --------------------------------------------------------------------------------- reductions
@pytest.mark.parametrize("shape", [(5, 7), (2, 3, 4, 6), (1, 1), (0, 3)])
def test_row_and_column_sums_equal_numpy_reductions(shape):
    a = normal(*shape)
    for dtype, rtol in ((np.float32, 2e-6), (np.float64, 1e-13)):
        x = a.astype(dtype)
        rows = x.reshape(-1, shape[-1])
        plain = {"rows": rows.sum(1), "columns": rows.sum(0)}
        fast = {"rows": kernels.row_sums(rows), "columns": kernels.column_sums(rows)}
        for name, expected in plain.items():
            assert fast[name].shape == expected.shape and fast[name].dtype == dtype, name
            np.testing.assert_allclose(fast[name], expected, rtol=rtol, atol=rtol * 10)


def test_einsum_row_sums_do_not_depend_on_the_rows_around():
    rows = normal(64, 300).astype(np.float32)
    whole = kernels.row_sums(rows)
    for start, stop in ((0, 1), (5, 9), (17, 64)):
        np.testing.assert_array_equal(kernels.row_sums(rows[start:stop]), whole[start:stop])


# --------------------------------------------------------------------------------- gelu, erf
def test_gelu_float32_equals_the_exact_gelu_and_slope():
    x = np.linspace(-10.0, 10.0, 200_001).astype(np.float32)
    value, slope = kernels.gelu_float32(x, with_slope=True)
    exact_value, exact_slope = exact_gelu(x.astype(np.float64), with_slope=True)
    assert value.dtype == slope.dtype == np.float32
    ulp = np.spacing(np.abs(x)).astype(np.float64)
    assert (np.abs(value - exact_value) / ulp).max() <= 4.0  # within 4 ulps of |x|
    assert np.abs(slope - exact_slope).max() < 2.3e-7 + 1e-9
    no_slope = kernels.gelu_float32(x, with_slope=False)
    assert no_slope[1] is None
    np.testing.assert_array_equal(no_slope[0], value)


def test_gelu_float32_keeps_shapes_and_handles_inf_nan_and_empty_input():
    x = normal(3, 70_000, seed=2)  # more than one 64K block, not a multiple of it
    value, slope = kernels.gelu_float32(x, with_slope=True)
    assert value.shape == slope.shape == x.shape
    value, slope = kernels.gelu_float32(np.array([np.inf, -np.inf, np.nan], np.float32), True)
    assert value[0] == np.inf and np.isnan(value[1:]).all() and np.isnan(slope).all()
    value, slope = kernels.gelu_float32(np.zeros((0, 4), np.float32), True)
    assert value.shape == slope.shape == (0, 4)


def test_erf_float32_is_within_four_ulps_of_scipy():
    x = np.linspace(-6.0, 6.0, 100_001).astype(np.float32)
    exact = special.erf(x.astype(np.float64))
    error = np.abs(kernels.erf_float32(x) - exact)
    assert error.max() < 1.7e-7 + 1e-9
    ulp = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    assert (error / np.maximum(ulp, 1e-45)).max() <= 4.0


def test_reference_mode_gelu_is_the_exact_formula_in_float32():
    x = tl.Tensor(normal(4, 9, seed=3), requires_grad=True)
    with tl.reference_mode():
        y = x.gelu()
        y.backward(np.ones(x.shape, np.float32))
    value, slope = exact_gelu(x.numpy(), with_slope=True)
    np.testing.assert_array_equal(y.data, value)
    np.testing.assert_array_equal(x.grad, slope)
    cdf = 0.5 * (1 + special.erf(x.numpy().astype(np.float64) / math.sqrt(2)))
    np.testing.assert_allclose(y.data, x.numpy() * cdf, rtol=1e-6, atol=1e-7)


# --------------------------------------------------------------------------------- softmax
@pytest.mark.parametrize("offset, queries", [(0, 6), (0, 1), (3, 4), (5, 1)])
@pytest.mark.parametrize("dtype, rtol", [(np.float32, 1e-6), (np.float64, 1e-14)])
def test_causal_softmax_kernel_equals_the_masked_softmax(offset, queries, dtype, rtol):
    scores = normal(2, 3, queries, offset + queries, seed=4, dtype=dtype, scale=3.0)
    forbidden = np.triu(np.ones(scores.shape[-2:], bool), k=offset + 1)
    masked = np.where(forbidden, -np.inf, scores)
    expected = np.exp(masked - masked.max(-1, keepdims=True))
    expected /= expected.sum(-1, keepdims=True)
    fast = kernels.causal_softmax_(scores.copy(), offset)
    with tl.reference_mode():
        plain = softmax(scores.copy(), causal=True, offset=offset)
    np.testing.assert_allclose(fast, expected, rtol=rtol, atol=1e-300)
    np.testing.assert_array_equal(plain, expected)
    assert (fast[..., forbidden] == 0).all()


def test_causal_softmax_kernel_shifts_only_the_rows_that_need_it():
    scores = normal(1, 1, 4, 4, seed=5, dtype=np.float64)
    scores[0, 0, 3] = [1e4, -1e4, 3e3, 2e4]  # one row far beyond the no-shift range
    out = kernels.causal_softmax_(scores.copy())
    assert np.isfinite(out).all()
    np.testing.assert_allclose(out[0, 0, 3], [0.0, 0.0, 0.0, 1.0])
    clean = kernels.causal_softmax_(normal(1, 1, 4, 4, seed=5, dtype=np.float64))
    np.testing.assert_array_equal(out[0, 0, :3], clean[0, 0, :3])  # other rows: same bits


@pytest.mark.parametrize("dtype, rtol", [(np.float32, 2e-5), (np.float64, 1e-12)])
def test_softmax_backward_kernel_equals_the_formula(dtype, rtol):
    probabilities = kernels.causal_softmax_(normal(2, 3, 5, 5, seed=6, dtype=dtype, scale=2.0))
    grad = normal(2, 3, 5, 5, seed=7, dtype=dtype)
    expected = 0.3 * probabilities * (grad - (grad * probabilities).sum(-1, keepdims=True))
    fast = grad.copy()
    assert kernels.softmax_backward_(fast, probabilities, 0.3) is fast
    np.testing.assert_allclose(fast, expected, rtol=rtol, atol=rtol * np.abs(expected).max())
    masked = np.triu(np.ones((5, 5), bool), k=1)  # P = 0 there: a gradient of exactly 0
    assert (fast[..., masked] == 0).all()


def test_softmax_backward_kernel_on_a_strided_gradient_writes_it():
    probabilities = kernels.causal_softmax_(normal(1, 2, 4, 4, seed=8, dtype=np.float64))
    grad = np.repeat(normal(1, 2, 4, 4, seed=9, dtype=np.float64), 2, axis=-1)[..., ::2]
    expected = kernels.softmax_backward_(grad.copy(), probabilities, 1.0)
    out = kernels.softmax_backward_(grad, probabilities, 1.0)
    assert out is grad and not grad.flags.c_contiguous
    # einsum adds a strided row in another order than a contiguous one: equal to rounding
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-15)


# --------------------------------------------------------------------------------- layer norm
def _layer_norm_both_modes(x, weight, bias, grad):
    """F.layer_norm's output and gradients (x, weight, bias), with the kernels and without."""
    results = []
    for reference in (False, True):
        leaves = [tl.Tensor(a, requires_grad=True) if a is not None else None
                  for a in (x, weight, bias)]
        with tl.reference_mode(reference):
            out = F.layer_norm(leaves[0], x.shape[-1:], *leaves[1:], eps=1e-5)
            out.backward(grad)
        results.append([out.data] + [None if t is None else t.grad for t in leaves])
    return results


@pytest.mark.parametrize("affine", [(True, True), (True, False), (False, True), (False, False)])
@pytest.mark.parametrize("dtype, rtol", [(np.float32, 2e-5), (np.float64, 1e-12)])
@pytest.mark.parametrize("batch", [3, 8])  # below and above 64K elements (test_threads' split)
def test_layer_norm_kernels_equal_the_plain_formula(affine, dtype, rtol, batch):
    x = normal(batch, 100, 96, seed=1, dtype=dtype, scale=3.0) + dtype(1e3)  # far from 0
    x[0, 0] = 7.0  # a constant row: exactly the bias
    weight = normal(96, seed=2, dtype=dtype) if affine[0] else None
    bias = normal(96, seed=3, dtype=dtype) if affine[1] else None
    grad = normal(*x.shape, seed=4, dtype=dtype)
    fast, plain = _layer_norm_both_modes(x, weight, bias, grad)
    for a, b in zip(fast, plain, strict=True):
        if b is None:
            assert a is None
        else:
            assert a.dtype == b.dtype == dtype and a.shape == b.shape
            np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * float(np.abs(b).max()))
    expected_row = np.zeros(96, dtype) if bias is None else bias
    np.testing.assert_array_equal(fast[0][0, 0], expected_row)


def test_layer_norm_kernel_returns_only_the_wanted_gradients():
    x, grad = normal(4, 8, seed=5), normal(4, 8, seed=6)
    weight = normal(8, seed=7)
    out, normalized, inverse_std = kernels.layer_norm(x, weight, None, 1e-5)
    assert normalized.shape == x.shape and inverse_std.shape == (4, 1)
    dx, dweight, dbias = kernels.layer_norm_backward(grad, normalized, inverse_std, weight,
                                                     (False, True, False))
    assert dx is None and dbias is None
    np.testing.assert_allclose(dweight, (grad * normalized).sum(0), rtol=1e-5)


# --------------------------------------------------------------------------------- cross-entropy
@pytest.mark.parametrize("label_smoothing", [0.0, 0.2])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dtype, rtol", [(np.float32, 1e-5), (np.float64, 1e-13)])
@pytest.mark.parametrize("batch", [6, 300])  # below and above 64K elements (test_threads' split)
def test_cross_entropy_kernels_equal_the_plain_formula(label_smoothing, reduction, dtype, rtol,
                                                       batch):
    logits = normal(batch, 20, 13, seed=8, dtype=dtype, scale=4.0)
    targets = Rng(9).integers(0, 13, size=(batch, 20))
    targets[0, :5] = -100  # ignored positions
    grad = normal(batch, 20, seed=10, dtype=dtype) if reduction == "none" else None
    results = []
    for reference in (False, True):
        leaf = tl.Tensor(logits, requires_grad=True)
        with tl.reference_mode(reference):
            loss = F.cross_entropy(leaf, targets, reduction=reduction,
                                   label_smoothing=label_smoothing)
            loss.backward(grad)
        results.append((loss.data, leaf.grad))
    (fast_loss, fast_grad), (plain_loss, plain_grad) = results
    assert fast_loss.dtype == plain_loss.dtype and fast_loss.shape == plain_loss.shape
    np.testing.assert_allclose(fast_loss, plain_loss, rtol=rtol, atol=rtol)
    np.testing.assert_array_equal(fast_grad[0, :5], 0.0)
    np.testing.assert_allclose(fast_grad, plain_grad, rtol=rtol, atol=rtol * 0.1)  # p - 1 near 0


# --------------------------------------------------------------------------------- matmul
@pytest.mark.parametrize("dtype, rtol", [(np.float32, 1e-5), (np.float64, 1e-13)])
def test_shared_matmul_equals_the_batched_product(dtype, rtol):
    a, b = normal(3, 5, 4, seed=6, dtype=dtype), normal(4, 7, seed=7, dtype=dtype)
    grad = normal(3, 5, 7, seed=8, dtype=dtype)
    np.testing.assert_allclose(kernels.shared_matmul(a, b), np.matmul(a, b), rtol=rtol)
    grad_a, grad_b = kernels.shared_matmul_backward(a, b, grad, (True, True))
    np.testing.assert_allclose(grad_a, grad @ b.T, rtol=rtol)
    np.testing.assert_allclose(grad_b, (np.swapaxes(a, -1, -2) @ grad).sum(0), rtol=rtol)
    assert kernels.shared_matmul_backward(a, b, grad, (False, True))[0] is None


# --------------------------------------------------------------------------------- embedding
@pytest.mark.parametrize("ids", [[3, 0, 3, 3, 1, 0], [2], [], [4, 4, 4]])
def test_rows_summed_by_id_equals_add_at(ids):
    ids = np.array(ids, dtype=np.int64)
    rows = normal(len(ids), 5, seed=9)
    expected = np.zeros((6, 5), np.float32)
    np.add.at(expected, ids, rows)
    summed = kernels.rows_summed_by_id(ids, rows, 6)
    assert summed.shape == (6, 5) and summed.dtype == np.float32
    np.testing.assert_allclose(summed, expected, rtol=1e-6, atol=1e-6)
    assert (summed[np.setdiff1d(np.arange(6), ids)] == 0).all()


# --------------------------------------------------------------------------------- adamw
def _trained(clip, reference_step, steps=3):
    layers = [Linear(4, 6, rng=Rng(0)), Linear(6, 2, rng=Rng(1))]
    parameters = [p for layer in layers for p in layer.parameters()]
    optimizer = AdamW(parameters, lr=0.05, max_grad_norm=clip)
    data = np.random.default_rng(7).normal(size=(steps, 5, 4)).astype(np.float32)
    for batch in data:
        optimizer.zero_grad()
        out = layers[1](layers[0](tl.Tensor(batch)).tanh())
        (out * out).mean().backward()
        with tl.reference_mode(reference_step):
            optimizer.step()
    return optimizer, parameters


@pytest.mark.parametrize("clip", [0.0, 0.05])
def test_adamw_kernel_is_bit_identical_to_the_loop(clip):
    fast, fast_parameters = _trained(clip, reference_step=False)
    loop, loop_parameters = _trained(clip, reference_step=True)
    assert_same_adamw_run(fast_parameters, fast, loop_parameters, loop, steps=3)


def test_adamw_kernel_declines_what_it_does_not_cover_and_changes_nothing():
    optimizer, parameters = _trained(0.0, reference_step=False, steps=1)
    parameters[1].grad = None  # one parameter without a gradient: not the flat case
    before = [p.numpy().copy() for p in parameters]
    assert optimizer._flat_step(adamw_flat.adamw_update) is False
    parameters[1].grad = np.zeros(parameters[1].shape, np.float32)
    parameters[0].grad = parameters[0].grad * np.nan  # a non-finite gradient
    assert optimizer._flat_step(adamw_flat.adamw_update) is False
    for p, data in zip(parameters, before, strict=True):
        np.testing.assert_array_equal(p.data, data)


# --------------------------------------------------------------------------------- engine
def test_sole_owner_sees_other_holders():
    def held_by_one_name():
        array = np.ones(3)
        return kernels.sole_owner(array)

    assert held_by_one_name() is True
    shared = np.ones(3)
    others = [shared]
    assert kernels.sole_owner(shared) is False and others
    assert kernels.sole_owner(np.ones(4)[1:]) is False  # a view does not own its memory


def test_a_fresh_leaf_gradient_is_kept_without_a_copy_only_outside_reference_mode():
    made = []
    original = ops.Linear.backward

    def recording(ctx, grad):
        grads = original(ctx, grad)
        made.append(id(grads[1]))  # not the array: a reference would make it shared
        return grads

    weight = tl.Tensor(normal(3, 4, dtype=np.float64), requires_grad=True)
    x = tl.Tensor(normal(5, 4, seed=1, dtype=np.float64))
    ops.Linear.backward = staticmethod(recording)
    try:
        F.linear(x, weight).sum().backward()
        kept = id(weight.grad.numpy()) == made[-1]
        weight.grad = None
        made.clear()
        with tl.reference_mode():
            F.linear(x, weight).sum().backward()
        copied = id(weight.grad.numpy()) != made[-1]
    finally:
        ops.Linear.backward = staticmethod(original)
    assert kept and copied


# --------------------------------------------------------------------------------- caches
def test_reference_mode_fills_no_kernel_cache():
    from tensorlib.nn import Decoder, DecoderConfig

    config = DecoderConfig(vocabulary_size=11, context_length=8, channels=16, heads=2, layers=2)
    model = Decoder(config, rng=Rng(0))
    optimizer = AdamW(model, lr=1e-2)
    ids = Rng(1).integers(0, 11, size=(3, 9))
    kernels.clear_caches()
    with tl.reference_mode():
        model.loss(ids[:, :-1], ids[:, 1:]).backward()
        optimizer.step()
        model.generate(ids[:, :2], 3, rng=Rng(2))
    assert set(kernels.cache_entries().values()) == {0}
    assert optimizer._flat is None  # reference mode made no flat work buffers
    optimizer.zero_grad()
    model.loss(ids[:, :-1], ids[:, 1:]).backward()
    optimizer.step()
    assert all(kernels.cache_entries()[name] > 0 for name in
               ("causal_masks", "unshifted_ranges", "gelu_coefficients"))
    assert optimizer._flat is not None


def test_every_registration_checks_what_it_puts_in_the_one_kernel_table():
    before = dict(kernel_table._TABLE)
    with pytest.raises(TypeError, match="register_kernel: .* must be a subclass of Function"):
        register_kernel(int, Exp)
    with pytest.raises(TypeError, match="the kernel for Exp must be a subclass of it"):
        register_kernel(Exp, Exp)
    with pytest.raises(TypeError, match="register_step_kernel: .* must be a subclass of Optimizer"):
        register_step_kernel(object, lambda optimizer: False)
    with pytest.raises(TypeError, match="register_step_kernel: the kernel must be callable"):
        register_step_kernel(AdamW, None)
    assert kernel_table._TABLE == before  # nothing registered by a refused call
    assert kernel_table.kernel_for(AdamW) is adamw_flat.adamw_update
    with kernels.reference_mode():
        assert kernel_table.kernel_for(AdamW) is None


def test_recurrent_sigmoid_kernel_is_within_two_ulps_of_expit():
    from tensorlib.engine.kernels.recurrent import sigmoid_into

    a = np.concatenate([np.linspace(-100, 100, 20001), [-np.inf, np.inf, 0.0]]).astype(np.float32)
    out = np.empty_like(a)
    with np.errstate(all="raise", under="ignore"):  # numpy's default for underflow
        result = sigmoid_into(a, out)
    assert result is out
    expected = special.expit(a.astype(np.float64)).astype(np.float32)
    tiny = np.finfo(np.float32).tiny  # below a = -87.3 expit is subnormal; the kernel gives 0
    assert np.all(np.abs(out - expected) <= np.maximum(2 * np.spacing(expected), tiny))
    assert out[-3] == 0.0 and out[-2] == 1.0 and out[-1] == 0.5


@pytest.mark.parametrize("layer", [F.gru_layer, F.lstm_layer])
def test_recurrent_kernels_equal_the_plain_ops_in_float32(layer):
    rng = Rng(3)
    gates = 3 if layer is F.gru_layer else 4
    x, w_ih, w_hh, b_ih, b_hh = (
        tl.tensor(rng.normal(size=shape).astype(np.float32), requires_grad=True)
        for shape in [(6, 4, 5), (gates * 7, 5), (gates * 7, 7), (gates * 7,), (gates * 7,)])
    runs = []
    for reference in (False, True):
        with tl.reference_mode(reference):
            output, _ = layer(x, None, w_ih, w_hh, b_ih, b_hh)
            output.sum().backward()
        runs.append([output.numpy()] + [t.grad.numpy().copy() for t in (x, w_ih, w_hh)])
        for t in (x, w_ih, w_hh, b_ih, b_hh):
            t.grad = None
    for fast, plain in zip(*runs, strict=True):
        np.testing.assert_allclose(fast, plain, rtol=2e-5, atol=2e-6)
    assert kernel_table.kernel_for(ops.GRULayer) is not None


@pytest.mark.parametrize("shape", [(3, 4, 8, 8), (2, 2, 7, 9), (1, 1, 2, 2)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("special_values", ["ties", "nan_and_inf", "none"])
def test_max_pool_2x2_kernel_equals_the_plain_op_bit_for_bit(shape, dtype, special_values):
    x = normal(*shape, seed=4, dtype=dtype)
    grad = normal(*shape[:2], shape[2] // 2, shape[3] // 2, seed=5, dtype=dtype)
    if special_values == "ties":  # equal maxima: the first in row-major order is chosen
        x[..., :2, :2] = 1.5
        x[..., 0, 1::2] = x[..., 1, :x.shape[-1] // 2 * 2:2]
    elif special_values == "nan_and_inf":
        x[0, 0, 0, 1] = np.nan
        x[-1, -1, -1, 0] = np.inf
        grad[0, 0, -1, -1] = np.nan  # a NaN gradient reaches only its chosen entry
    runs = []
    for reference in (False, True):
        with tl.reference_mode(reference):
            t = tl.tensor(x, requires_grad=True)
            y = F.max_pool2d(t, 2)
            y.backward(tl.tensor(grad))
        runs.append((y.numpy(), t.grad.numpy()))
    for fast, plain in zip(*runs, strict=True):
        np.testing.assert_array_equal(fast, plain)
    assert kernel_table.kernel_for(ops.MaxPool) is not None


def test_max_pool_2x2_kernel_applies_only_to_unpadded_2x2_windows_at_stride_2():
    kernel = kernel_table.kernel_for(ops.MaxPool)
    x = normal(2, 3, 6, 6)
    assert kernel.applies(x, (2, 2), (2, 2), (0, 0), (1, 1))
    for geometry in [((3, 3), (2, 2), (0, 0), (1, 1)), ((2, 2), (1, 1), (0, 0), (1, 1)),
                     ((2, 2), (2, 2), (1, 1), (1, 1)), ((2, 2), (2, 2), (0, 0), (2, 2))]:
        assert not kernel.applies(x, *geometry)
    assert not kernel.applies(normal(2, 3, 6), (2,), (2,), (0,), (1,))


# --------------------------------------------------------------------------------- convolution
@pytest.mark.parametrize("batch, channels, out_channels, size, padding, groups", [
    (5, 3, 4, 9, 1, 1), (2, 1, 6, 8, 0, 1), (3, 4, 6, 7, 2, 2), (1, 2, 2, 3, 1, 2),
    (4, 3, 5, 6, (2, 0), 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("values", ["normal", "small integers"])
def test_convolution_kernel_equals_the_plain_op(batch, channels, out_channels, size, padding,
                                                 groups, dtype, values):
    def draw(*shape, seed):
        a = normal(*shape, seed=seed, dtype=dtype)
        # small integers: every product and sum is exact, so any order gives the same bits
        return np.round(a * 2).astype(dtype) if values == "small integers" else a

    x = draw(batch, channels, size, size + 1, seed=6)
    weight = draw(out_channels, channels // groups, 3, 2, seed=7)
    bias = draw(out_channels, seed=8)
    if values == "normal":
        x[0, 0, 0, 0] = np.inf  # an infinity reaches the same places in both
    runs = []
    for reference in (False, True):
        leaves = [tl.tensor(a, requires_grad=True) for a in (x, weight, bias)]
        with tl.reference_mode(reference):
            y = F.conv2d(*leaves, padding=padding, groups=groups)
            y.backward(tl.tensor(draw(*y.shape, seed=9)))
        runs.append([y.numpy()] + [t.grad.numpy() for t in leaves])
    for fast, plain in zip(*runs, strict=True):
        if values == "small integers":
            np.testing.assert_array_equal(fast, plain)
        else:
            np.testing.assert_allclose(fast, plain, rtol=1e-6 if dtype == np.float32 else 1e-13)
    assert kernel_table.kernel_for(ops.Convolution) is not None


def test_convolution_kernel_applies_only_to_2d_at_stride_1_without_dilation():
    kernel = kernel_table.kernel_for(ops.Convolution)
    x, weight = normal(2, 3, 6, 6), normal(4, 3, 3, 3)
    assert kernel.applies(x, weight, None, (1, 1), (1, 1), (1, 1), 1)
    assert not kernel.applies(x, weight, None, (2, 2), (1, 1), (1, 1), 1)
    assert not kernel.applies(x, weight, None, (1, 1), (1, 1), (2, 1), 1)
    assert not kernel.applies(normal(2, 3, 6), normal(4, 3, 3), None, (1,), (1,), (1,), 1)
