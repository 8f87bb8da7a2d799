"""Tests for tensorlib.nn.functional: activations, softmax, losses, masks, fused ops.

Each fused op is checked three ways: hand-computed values, gradcheck in float64, and
agreement (value and gradient) with its chain-of-primitives reference twin.
"""

import math

import numpy as np
import pytest
from scipy import special

import tensorlib as tl
from tensorlib import Rng, gradcheck, nn
from tensorlib.nn import functional as F

from helpers import count_nodes


def random64(*shape, seed=0, scale=1.0):
    """A float64 leaf of normal(0, scale) values, fixed by ``seed``."""
    data = np.random.default_rng(seed).normal(0.0, scale, shape)
    return tl.Tensor(data, requires_grad=True)


def value_and_gradients(fn, *inputs, weights=None):
    """Run fn on fresh copies of the inputs; return its value and each input's gradient."""
    leaves = [tl.Tensor(t.numpy().copy(), requires_grad=t.requires_grad) for t in inputs]
    out = fn(*leaves)
    if weights is None:
        weights = np.cos(np.arange(out.numel()) * 0.7 + 0.1).reshape(out.shape) + 1.2
    out.backward(weights.astype(out.dtype))
    return out.data, [leaf.grad for leaf in leaves if leaf.requires_grad]


def assert_twins_agree(fused, reference, *inputs, rtol=1e-10, atol=1e-12):
    value_f, grads_f = value_and_gradients(fused, *inputs)
    value_r, grads_r = value_and_gradients(reference, *inputs)
    np.testing.assert_allclose(value_f, value_r, rtol=rtol, atol=atol)
    assert len(grads_f) == len(grads_r) > 0
    for grad_f, grad_r in zip(grads_f, grads_r, strict=True):
        np.testing.assert_allclose(grad_f, grad_r, rtol=rtol, atol=atol)


# --------------------------------------------------------------------------------- activations
def test_activation_values():
    x = tl.tensor([-2.0, -0.5, 0.0, 0.5, 3.0])
    values = np.array([-2.0, -0.5, 0.0, 0.5, 3.0])
    np.testing.assert_allclose(F.relu(x).data, [0, 0, 0, 0.5, 3.0])
    np.testing.assert_allclose(F.sigmoid(x).data, 1 / (1 + np.exp(-values)), rtol=1e-6)
    np.testing.assert_allclose(F.tanh(x).data, np.tanh(values), rtol=1e-6)
    exact = values * 0.5 * (1 + special.erf(values / math.sqrt(2)))
    np.testing.assert_allclose(F.gelu(x).data, exact, rtol=1e-6, atol=1e-7)
    approx = 0.5 * values * (1 + np.tanh(math.sqrt(2 / math.pi) * (values + 0.044715 * values**3)))
    np.testing.assert_allclose(F.gelu(x, approximate="tanh").data, approx, rtol=1e-6, atol=1e-7)


def test_new_activation_values_by_hand():
    values = np.array([-30.0, -2.0, -0.5, 0.0, 0.5, 3.0, 30.0])
    x = tl.tensor(values, dtype=np.float64)
    np.testing.assert_allclose(F.leaky_relu(x).data, np.where(values > 0, values, 0.01 * values))
    np.testing.assert_allclose(F.leaky_relu(x, 0.2).data,
                               np.where(values > 0, values, 0.2 * values))
    # softplus: log(1 + e^x), finite at ±30; x itself above the threshold
    expected = np.array([math.log1p(math.exp(v)) for v in values])
    np.testing.assert_allclose(F.softplus(x).data, expected, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(F.softplus(x, beta=2.0).data,
                               [math.log1p(math.exp(2 * v)) / 2 for v in values], rtol=1e-12)
    assert F.softplus(x, threshold=2.0).data[5] == 3.0
    np.testing.assert_allclose(F.silu(x).data, values / (1 + np.exp(-values)), rtol=1e-12)
    np.testing.assert_array_equal(F.sign(x).data, [-1, -1, -1, 0, 1, 1, 1])


def test_sign_passes_no_gradient_and_leaky_relu_uses_the_slope_at_zero():
    x = tl.Tensor(np.array([-1.0, 0.0, 2.0]), requires_grad=True)
    (F.sign(x) * 3.0).sum().backward()
    np.testing.assert_array_equal(x.grad, [0.0, 0.0, 0.0])
    x.grad = None
    F.leaky_relu(x, 0.1).sum().backward()
    np.testing.assert_array_equal(x.grad, [0.1, 0.1, 1.0])  # PyTorch's choice at 0


def test_new_activations_keep_float32_and_lift_integers_to_float32():
    x = tl.tensor([-1.0, 2.0], dtype=np.float32)
    for fn in (F.leaky_relu, F.softplus, F.silu, F.sign):
        assert fn(x).dtype == np.float32
    ints = tl.tensor([-1, 2])
    for fn in (F.leaky_relu, F.softplus, F.silu):
        assert fn(ints).dtype == np.float32
    np.testing.assert_allclose(F.leaky_relu(ints).data, [-0.01, 2.0])


@pytest.mark.parametrize("call, error, message", [
    (lambda x: F.leaky_relu(x, "0.1"), TypeError, "negative_slope must be a finite number"),
    (lambda x: F.leaky_relu(x, float("nan")), ValueError, "negative_slope must be a finite"),
    (lambda x: F.softplus(x, beta=0.0), ValueError, r"softplus beta must be a finite number > 0"),
    (lambda x: F.softplus(x, beta=True), TypeError, "softplus beta"),
    (lambda x: F.softplus(x, threshold=None), TypeError, "softplus threshold"),
    (lambda x: x.softplus(beta=-1.0), ValueError, "softplus beta"),
])
def test_new_activations_reject_bad_hyperparameters(call, error, message):
    with pytest.raises(error, match=message):
        call(tl.tensor([1.0, -1.0]))


def test_new_activation_modules_and_mlp_names():
    x = tl.tensor([-2.0, 0.5])
    np.testing.assert_allclose(nn.LeakyReLU(0.25)(x).data, [-0.5, 0.5])
    np.testing.assert_allclose(nn.Softplus(beta=3.0)(x).data, F.softplus(x, beta=3.0).data)
    np.testing.assert_allclose(nn.SiLU()(x).data, F.silu(x).data)
    assert repr(nn.LeakyReLU(0.25)) == "LeakyReLU(negative_slope=0.25)"
    assert nn.Softplus().parameters() == []
    with pytest.raises(ValueError, match="beta must be a finite number > 0"):
        nn.Softplus(beta=0)
    with pytest.raises(TypeError, match="negative_slope"):
        nn.LeakyReLU("steep")
    mlp = nn.MLP(2, [3], 1, ["silu", "leaky_relu"], rng=tl.Rng(0))
    assert mlp(tl.tensor([[1.0, -1.0]])).shape == (1, 1)


@pytest.mark.parametrize("fn", [F.relu, F.gelu, F.sigmoid, F.tanh, F.leaky_relu, F.softplus,
                                F.silu])
def test_activation_gradients(fn):
    x = tl.Tensor(np.array([-2.0, -0.7, 0.3, 1.1, 2.5]), requires_grad=True)
    assert gradcheck(fn, x)


@pytest.mark.parametrize("fn", [F.relu, F.gelu, F.sigmoid, F.tanh, F.softmax, F.leaky_relu,
                                F.softplus, F.silu, F.sign])
def test_functions_reject_non_tensors(fn):
    with pytest.raises(TypeError, match="Tensor"):
        fn(np.ones(3))


# --------------------------------------------------------------------------------- softmax
def test_softmax_values_by_hand():
    p = F.softmax(tl.tensor([[1.0, 2.0, 3.0]]))
    e = np.exp([1.0, 2.0, 3.0])
    np.testing.assert_allclose(p.data, [e / e.sum()], rtol=1e-6)
    np.testing.assert_allclose(F.log_softmax(tl.tensor([0.0, 0.0])).data, [-math.log(2)] * 2,
                               rtol=1e-6)


def test_softmax_extreme_values_are_finite_and_exact():
    x = tl.tensor([[1e4, 0.0, -1e4], [-1e4, -1e4, -1e4]])
    p = F.softmax(x).data
    assert np.all(np.isfinite(p))
    np.testing.assert_allclose(p, [[1, 0, 0], [1 / 3, 1 / 3, 1 / 3]], atol=1e-7)
    log_p = F.log_softmax(x).data
    np.testing.assert_allclose(log_p, [[0, -1e4, -2e4], [-math.log(3)] * 3], rtol=1e-6)


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_fused_softmax_and_log_softmax_agree_with_primitive_chain(axis):
    x = random64(3, 4, 5, scale=3.0)
    assert_twins_agree(lambda t: F.softmax(t, axis), lambda t: F.softmax_reference(t, axis), x)
    assert_twins_agree(lambda t: F.log_softmax(t, axis),
                       lambda t: F.log_softmax_reference(t, axis), x)
    assert gradcheck(lambda t: F.log_softmax(t, axis), x)
    assert gradcheck(lambda t: F.softmax(t, axis), x)


def test_fused_softmax_is_one_node_reference_is_many():
    x = random64(2, 3)
    assert count_nodes(F.softmax(x)) == 1
    assert count_nodes(F.softmax_reference(x)) > 3


# --------------------------------------------------------------------------------- cross-entropy
def test_cross_entropy_by_hand():
    logits = tl.tensor([[2.0, 1.0, 0.1], [0.5, 2.5, 0.0]], dtype=np.float64)
    targets = np.array([0, 2])
    loss = F.cross_entropy(logits, targets)
    rows = logits.numpy()
    log_probs = rows - np.log(np.exp(rows).sum(-1, keepdims=True))
    expected = -(log_probs[0, 0] + log_probs[1, 2]) / 2
    assert loss.shape == ()
    assert loss.item() == pytest.approx(expected, rel=1e-12)


def test_cross_entropy_of_uniform_logits_is_log_v():
    loss = F.cross_entropy(tl.zeros(4, 7), [0, 3, 6, 2])
    assert loss.item() == pytest.approx(math.log(7), rel=1e-6)


def test_cross_entropy_gradient_is_softmax_minus_onehot_over_n():
    logits = random64(3, 4)
    targets = np.array([1, 0, 3])
    F.cross_entropy(logits, targets).backward()
    probs = np.exp(logits.data) / np.exp(logits.data).sum(-1, keepdims=True)
    expected = (probs - np.eye(4)[targets]) / 3
    np.testing.assert_allclose(logits.grad, expected, rtol=1e-12, atol=1e-15)


def test_cross_entropy_agrees_with_primitive_chain_and_gradcheck():
    logits = random64(2, 3, 5, scale=2.0)
    targets = np.array([[0, 4, 2], [1, 1, 3]])
    assert_twins_agree(lambda t: F.cross_entropy(t, targets),
                       lambda t: F.cross_entropy_reference(t, targets), logits)
    assert gradcheck(lambda t: F.cross_entropy(t, targets), logits)
    assert count_nodes(F.cross_entropy(logits, targets)) == 1


def test_cross_entropy_means_over_every_leading_position():
    logits = random64(2, 3, 4)
    targets = np.array([[0, 1, 2], [3, 2, 1]])
    loss = F.cross_entropy(logits, targets).item()
    flat = F.cross_entropy(tl.Tensor(logits.data.reshape(6, 4)), targets.reshape(6)).item()
    assert loss == pytest.approx(flat, rel=1e-12)


def test_cross_entropy_is_stable_at_huge_logits():
    logits = tl.tensor([[1e4, -1e4, 0.0], [1e4, -1e4, 0.0]], requires_grad=True)
    loss = F.cross_entropy(logits, [0, 1])
    assert loss.item() == pytest.approx(1e4, rel=1e-6)  # (0 + 2e4) / 2
    loss.backward()
    assert np.all(np.isfinite(logits.grad))
    np.testing.assert_allclose(logits.grad, [[0, 0, 0], [0.5, -0.5, 0]], atol=1e-6)


def test_cross_entropy_does_not_mutate_its_inputs():
    logits = random64(3, 4)
    targets = np.array([0, 1, 2])
    before_logits, before_targets = logits.numpy().copy(), targets.copy()
    F.cross_entropy(logits, targets).backward()
    np.testing.assert_array_equal(logits.data, before_logits)
    np.testing.assert_array_equal(targets, before_targets)


@pytest.mark.parametrize("targets", [[0, 1, 2], np.array([0, 1, 2], dtype=np.int32),
                                     tl.tensor([0, 1, 2])])
def test_cross_entropy_accepts_lists_arrays_and_int_tensors(targets):
    logits = tl.tensor(np.arange(12.0).reshape(3, 4))
    expected = F.cross_entropy(logits, np.array([0, 1, 2])).item()
    assert F.cross_entropy(logits, targets).item() == expected


@pytest.mark.parametrize("bad, error, message", [
    ([0, 4], IndexError, "target 4"),
    ([-1, 0], IndexError, "target -1"),
    ([0.0, 1.0], TypeError, "integer"),
    (np.array([True, False]), TypeError, "integer"),
    ([0, 1, 2], ValueError, r"\(3,\)"),
    ([[0, 1]], ValueError, "shape"),
])
def test_cross_entropy_rejects_bad_targets(bad, error, message):
    logits = tl.zeros(2, 4, requires_grad=True)
    with pytest.raises(error, match=message):
        F.cross_entropy(logits, bad)
    assert logits.grad is None


# ignore_index, reduction and label_smoothing: PyTorch's meaning
# (tests/contracts/test_torch_parity.py holds them against torch.nn.functional.cross_entropy)
def _per_position_loss_by_hand(logits, targets, smoothing=0.0):
    log_probs = logits - special.logsumexp(logits, -1, keepdims=True)
    picked = np.take_along_axis(log_probs, np.maximum(targets, 0)[..., None], -1)[..., 0]
    return -(1 - smoothing) * picked - smoothing * log_probs.mean(-1)


OPTIONS = [
    dict(),
    dict(reduction="sum"),
    dict(reduction="none"),
    dict(label_smoothing=0.2),
    dict(label_smoothing=1.0, reduction="sum"),
    dict(ignore_index=-100),
    dict(ignore_index=-100, reduction="none", label_smoothing=0.1),
    dict(ignore_index=3, reduction="sum"),
    dict(ignore_index=3, label_smoothing=0.3),
]
PADDED = np.array([[0, 4, -100], [1, -100, -100]])  # two words padded to length 3


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in
                                                                     o.items()) or "default")
def test_cross_entropy_options_by_hand_twin_and_gradcheck(options):
    logits = random64(2, 3, 5, scale=2.0)
    targets = np.array([[0, 4, 2], [1, 3, 3]])
    if options.get("ignore_index") == -100:
        targets = PADDED
    ignored = targets == options.get("ignore_index", -100)
    per = np.where(ignored, 0.0, _per_position_loss_by_hand(
        logits.data, targets, options.get("label_smoothing", 0.0)))
    expected = {"none": per, "sum": per.sum(),
                "mean": per.sum() / (~ignored).sum()}[options.get("reduction", "mean")]
    loss = F.cross_entropy(logits, targets, **options)
    np.testing.assert_allclose(loss.data, expected, rtol=1e-12, atol=1e-14)
    assert_twins_agree(lambda t: F.cross_entropy(t, targets, **options),
                       lambda t: F.cross_entropy_reference(t, targets, **options), logits)
    assert gradcheck(lambda t: F.cross_entropy(t, targets, **options), logits)
    F.cross_entropy(logits, targets, **options).sum().backward()
    assert not logits.grad[ignored].any()  # an ignored position gets no gradient


def test_a_padded_batch_of_words_averages_over_their_letters():
    logits = random64(2, 3, 5)
    first = F.cross_entropy(tl.Tensor(logits.data[0, :2]), [0, 4], reduction="sum").item()
    second = F.cross_entropy(tl.Tensor(logits.data[1, :1]), [1], reduction="sum").item()
    padded = F.cross_entropy(logits, PADDED).item()
    assert padded == pytest.approx((first + second) / 3, rel=1e-12)


def test_cross_entropy_default_path_is_unchanged_by_the_options():
    logits = random64(4, 6, seed=3).astype(np.float32)
    targets = np.array([5, 0, 2, 2])
    plain = F.cross_entropy(logits, targets).data
    assert F.cross_entropy(logits, targets, ignore_index=-7).data == plain
    assert F.cross_entropy(logits, targets, label_smoothing=0.0, reduction="mean").data == plain
    assert F.cross_entropy(logits, targets, reduction="none").dtype == np.float32


def test_cross_entropy_with_every_target_ignored_is_nan_with_zero_gradient():
    for fn in (F.cross_entropy, F.cross_entropy_reference):
        logits = random64(2, 3)
        loss = fn(logits, [-100, -100])
        assert math.isnan(loss.item())
        loss.backward()
        np.testing.assert_array_equal(logits.grad, np.zeros((2, 3)))
        assert F.cross_entropy(random64(2, 3), [-100, -100], reduction="sum").item() == 0.0


@pytest.mark.parametrize("options, error, message", [
    (dict(reduction="average"), ValueError, "reduction must be one of mean, sum, none"),
    (dict(reduction=None), TypeError, "reduction must be one of"),
    (dict(label_smoothing=1.5), ValueError, r"label_smoothing must be a finite number in \[0, 1\]"),
    (dict(label_smoothing=-0.1), ValueError, "label_smoothing"),
    (dict(label_smoothing="0.1"), TypeError, "label_smoothing"),
    (dict(ignore_index=1.5), TypeError, "ignore_index must be an integer"),
    (dict(ignore_index=True), TypeError, "ignore_index"),
])
def test_cross_entropy_rejects_bad_options(options, error, message):
    logits = tl.zeros(2, 4, requires_grad=True)
    with pytest.raises(error, match=message):
        F.cross_entropy(logits, [0, 1], **options)
    with pytest.raises(error, match=message):
        F.cross_entropy_reference(logits, [0, 1], **options)
    assert logits.grad is None


def test_cross_entropy_still_refuses_negative_targets_that_are_not_the_ignore_index():
    with pytest.raises(IndexError, match="target -1 at position"):
        F.cross_entropy(tl.zeros(2, 4), [-1, -100])
    with pytest.raises(IndexError, match="target -100"):
        F.cross_entropy(tl.zeros(2, 4), [0, -100], ignore_index=0)


def test_cross_entropy_rejects_bad_logits():
    with pytest.raises(TypeError, match="floating"):
        F.cross_entropy(tl.tensor([[1, 2]]), [0])
    with pytest.raises(TypeError, match="Tensor"):
        F.cross_entropy(np.zeros((1, 2)), [0])
    with pytest.raises(ValueError, match="0-d"):
        F.cross_entropy(tl.tensor(1.0), 0)


# --------------------------------------------------------------------------------- causal mask
def test_causal_mask_boolean_and_additive():
    mask = F.causal_mask(3)
    assert mask.dtype == np.bool_
    np.testing.assert_array_equal(mask.data, [[False, True, True], [False, False, True],
                                              [False, False, False]])
    additive = F.causal_mask(3, additive=True).data
    assert additive.dtype == np.float32
    np.testing.assert_array_equal(additive, [[0, -np.inf, -np.inf], [0, 0, -np.inf], [0, 0, 0]])
    for bad, error in ((0, ValueError), (-1, ValueError), (2.5, TypeError), (True, TypeError)):
        with pytest.raises(error, match="causal_mask length must be a positive integer"):
            F.causal_mask(bad)


def test_apply_causal_mask_then_softmax_zeroes_the_future():
    scores = tl.Tensor(np.random.default_rng(3).normal(size=(2, 4, 4)))
    masked = F.apply_causal_mask(scores)
    assert np.all(np.isneginf(masked.data[:, [0, 0, 0, 1, 1, 2], [1, 2, 3, 2, 3, 3]]))
    probs = F.softmax(masked).data
    np.testing.assert_array_equal(np.triu(probs[0], 1), 0)
    np.testing.assert_allclose(probs.sum(-1), 1.0)
    np.testing.assert_allclose(probs[:, 0, 0], 1.0)


def test_the_causal_mask_is_added_so_its_gradient_passes_unchanged():
    # TensorLib: the mask adds 0 / -inf, so the gradient of the masked scores is the
    # upstream gradient everywhere, the masked positions included.
    scores = tl.tensor(np.random.default_rng(4).normal(size=(2, 3, 3)), requires_grad=True)
    masked = F.apply_causal_mask(scores)
    np.testing.assert_array_equal(np.tril(masked.data[0]), np.tril(scores.data[0]))
    upstream = np.random.default_rng(5).normal(size=(2, 3, 3))
    masked.backward(upstream)
    np.testing.assert_array_equal(scores.grad, upstream)
    for dtype in (np.float32, np.float64):
        assert F.apply_causal_mask(tl.zeros(2, 2, dtype=dtype)).dtype == dtype


def test_causal_softmax_values_by_hand():
    scores = tl.tensor([[1.0, 5.0], [2.0, 4.0]], dtype=np.float64)
    probs = F.causal_softmax(scores, scale=0.5).data
    tail = np.exp([1.0, 2.0]) / np.exp([1.0, 2.0]).sum()
    np.testing.assert_allclose(probs, [[1.0, 0.0], tail], rtol=1e-12)


def test_causal_softmax_agrees_with_primitive_chain_and_gradcheck():
    scores = random64(2, 3, 4, 4, scale=2.0)
    assert_twins_agree(lambda s: F.causal_softmax(s, 0.5),
                       lambda s: F.causal_softmax_reference(s, 0.5), scores)
    assert gradcheck(lambda s: F.causal_softmax(s, 0.5), scores)
    assert count_nodes(F.causal_softmax(scores, 0.5)) == 1


def test_masks_reject_non_square_scores():
    for fn in (F.apply_causal_mask, F.causal_softmax, F.causal_softmax_reference):
        with pytest.raises(ValueError, match=r"\(2, 3\)"):
            fn(tl.zeros(2, 3))
        with pytest.raises(ValueError, match="square"):
            fn(tl.zeros(4))


# --------------------------------------------------------------------------------- layer norm
def test_layer_norm_by_hand():
    x = tl.tensor([[1.0, 2.0, 3.0, 4.0]])
    weight = tl.tensor([1.0, 2.0, 0.5, -1.0])
    bias = tl.tensor([0.0, 1.0, 0.0, 0.5])
    std = math.sqrt(1.25 + 1e-5)  # mean 2.5, biased variance (2.25+0.25+0.25+2.25)/4
    normalized = np.array([-1.5, -0.5, 0.5, 1.5]) / std
    np.testing.assert_allclose(F.layer_norm(x, (4,)).data, [normalized], rtol=1e-6)
    np.testing.assert_allclose(F.layer_norm(x, 4, weight, bias).data,
                               [normalized * weight.numpy() + bias.numpy()], rtol=1e-6)


@pytest.mark.parametrize("affine", ["both", "weight", "bias", "none"])
def test_fused_layer_norm_agrees_with_primitive_chain_and_gradcheck(affine):
    x = random64(2, 3, 5, scale=2.0)
    weight = random64(5, seed=1) if affine in ("both", "weight") else None
    bias = random64(5, seed=2) if affine in ("both", "bias") else None
    params = [t for t in (weight, bias) if t is not None]

    def run(fn):
        def call(x, *affine_params):
            items = iter(affine_params)
            w = next(items) if weight is not None else None
            b = next(items) if bias is not None else None
            return fn(x, (5,), w, b, eps=1e-5)
        return call

    assert_twins_agree(run(F.layer_norm), run(F.layer_norm_reference), x, *params)
    assert gradcheck(run(F.layer_norm), x, *params)
    assert count_nodes(run(F.layer_norm)(x, *params)) == 1


def test_layer_norm_rejects_bad_arguments():
    x = tl.zeros(2, 4)
    with pytest.raises(ValueError, match="eps"):
        F.layer_norm(x, (4,), eps=0.0)
    with pytest.raises(ValueError, match="eps"):
        F.layer_norm(x, (4,), eps=-1e-5)
    with pytest.raises(ValueError, match=r"weight of shape \(3,\)"):
        F.layer_norm(x, (4,), tl.ones(3))
    with pytest.raises(TypeError, match="floating"):
        F.layer_norm(tl.tensor([[1, 2]]), (2,))
    with pytest.raises(ValueError, match=r"normalized_shape \[3\] does not match"):
        F.layer_norm(x, (3,))
    with pytest.raises(ValueError, match=r"normalized_shape \[3, 2, 4\] does not match"):
        F.layer_norm(x, (3, 2, 4))
    with pytest.raises(TypeError, match="normalized_shape must be"):
        F.layer_norm(x, tl.ones(4))  # the weight where PyTorch's order puts normalized_shape
    with pytest.raises(TypeError, match="normalized_shape must be"):
        F.layer_norm(x, ())


def test_layer_norm_over_several_trailing_axes_is_pytorchs():
    x = random64(2, 3, 4, scale=2.0)
    weight, bias = random64(3, 4, seed=1), random64(3, 4, seed=2)
    out = F.layer_norm(x, (3, 4), weight, bias)
    flat = x.numpy().reshape(2, 12)
    expected = (flat - flat.mean(-1, keepdims=True)) / np.sqrt(flat.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(out.numpy(), expected.reshape(2, 3, 4) * weight.numpy()
                               + bias.numpy(), rtol=1e-10)
    call = lambda fn: lambda x, w, b: fn(x, (3, 4), w, b)  # noqa: E731
    assert_twins_agree(call(F.layer_norm), call(F.layer_norm_reference), x, weight, bias)
    assert gradcheck(call(F.layer_norm), x, weight, bias)


# --------------------------------------------------------------------------------- embedding
def test_embedding_gathers_rows_and_accumulates_repeated_ids():
    weight = tl.Tensor(np.arange(12.0).reshape(4, 3), requires_grad=True)
    ids = np.array([[3, 1, 3], [3, 0, 1]])
    out = F.embedding(weight, ids)
    np.testing.assert_array_equal(out.data, weight.data[ids])
    out.sum().backward()
    np.testing.assert_array_equal(weight.grad, [[1] * 3, [2] * 3, [0] * 3, [3] * 3])


def test_fused_embedding_agrees_with_onehot_matmul_and_gradcheck():
    weight = random64(5, 3)
    ids = np.array([[4, 0, 4, 2], [1, 1, 1, 3]])
    assert_twins_agree(lambda w: F.embedding(w, ids), lambda w: F.embedding_reference(w, ids),
                       weight)
    assert gradcheck(lambda w: F.embedding(w, ids), weight)


@pytest.mark.parametrize("ids, error, message", [
    ([0, 5], IndexError, "token id 5"),
    ([[0, 1], [2, -3]], IndexError, "token id -3"),
    ([0.0, 1.0], TypeError, "integer"),
    (tl.tensor([0.0, 1.0], requires_grad=True), TypeError, "require grad"),
    (tl.tensor([0.0, 1.0]), TypeError, "integer"),
    ([[0, 1], [2]], TypeError, "integer"),
])
def test_embedding_rejects_bad_ids(ids, error, message):
    with pytest.raises(error, match=message):
        F.embedding(tl.zeros(5, 2), ids)


# --------------------------------------------------------------------------------- dropout
def test_functional_dropout_agrees_with_primitive_twin_given_the_same_draws():
    x = random64(4, 6)
    assert_twins_agree(lambda t: F.dropout(t, 0.3, rng=Rng(5)),
                       lambda t: F.dropout_reference(t, 0.3, rng=Rng(5)), x)
    assert gradcheck(lambda t: F.dropout(t, 0.3, rng=Rng(5)), x)


def test_functional_dropout_identity_cases_draw_nothing():
    x = tl.ones(3, 3)
    rng = Rng(9)
    assert F.dropout(x, 0.5, training=False, rng=rng) is x
    assert F.dropout(x, 0.5, False, rng=rng) is x  # PyTorch's positional order
    assert F.dropout(x, 0.0, rng=rng) is x
    assert F.dropout.__defaults__ == (0.5, True, False)  # PyTorch's p, training, inplace
    with pytest.raises(ValueError, match="inplace=True is not supported"):
        F.dropout(x, 0.5, True, True)
    with pytest.raises(TypeError, match="dropout training"):
        F.dropout(x, 0.5, Rng(1))  # the generator is a keyword: rng=
    assert rng.state == 9


@pytest.mark.parametrize(("p", "error"), [(1.0, ValueError), (-0.1, ValueError),
                                          (1.5, ValueError), (float("nan"), ValueError),
                                          (True, TypeError), ("0.5", TypeError)])
def test_functional_dropout_rejects_bad_probability(p, error):
    with pytest.raises(error, match=r"\[0, 1\)"):
        F.dropout(tl.ones(2), p)


# --------------------------------------------------------------------------------- PyTorch
def test_matches_torch_layer_norm_cross_entropy_and_gelu():
    torch = pytest.importorskip("torch")
    data = np.random.default_rng(4)
    x_np = data.normal(size=(2, 3, 6)) * 3
    w_np, b_np = data.normal(size=6), data.normal(size=6)
    targets = np.array([[0, 5, 2], [1, 3, 4]])
    upstream = data.normal(size=(2, 3, 6))

    # layer norm, value and gradients
    x, w, b = (tl.Tensor(a.copy(), requires_grad=True) for a in (x_np, w_np, b_np))
    out = F.layer_norm(x, (6,), w, b, eps=1e-5)
    out.backward(upstream)
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x_np, w_np, b_np))
    t_out = torch.nn.functional.layer_norm(tx, (6,), tw, tb, eps=1e-5)
    t_out.backward(torch.tensor(upstream))
    np.testing.assert_allclose(out.data, t_out.detach().numpy(), rtol=1e-10, atol=1e-12)
    for ours, theirs in ((x, tx), (w, tw), (b, tb)):
        np.testing.assert_allclose(ours.grad, theirs.grad.numpy(), rtol=1e-9, atol=1e-12)

    # cross-entropy
    logits = tl.Tensor(x_np.copy(), requires_grad=True)
    loss = F.cross_entropy(logits, targets)
    loss.backward()
    t_logits = torch.tensor(x_np, requires_grad=True)
    t_loss = torch.nn.functional.cross_entropy(t_logits.reshape(-1, 6),
                                               torch.tensor(targets.reshape(-1)))
    t_loss.backward()
    assert loss.item() == pytest.approx(t_loss.item(), rel=1e-12)
    np.testing.assert_allclose(logits.grad, t_logits.grad.numpy(), rtol=1e-10, atol=1e-14)

    # gelu, both forms
    for approximate in ("none", "tanh"):
        g = tl.Tensor(x_np.copy(), requires_grad=True)
        F.gelu(g, approximate).backward(upstream)
        tg = torch.tensor(x_np, requires_grad=True)
        torch.nn.functional.gelu(tg, approximate=approximate).backward(torch.tensor(upstream))
        np.testing.assert_allclose(F.gelu(tl.Tensor(x_np), approximate).data,
                                   torch.nn.functional.gelu(torch.tensor(x_np),
                                                            approximate=approximate).numpy(),
                                   rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(g.grad, tg.grad.numpy(), rtol=1e-9, atol=1e-12)
