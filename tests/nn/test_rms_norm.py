"""Tests for tensorlib.nn.RMSNorm and F.rms_norm: the formula, PyTorch's defaults and names,
several trailing axes, bad input, and PyTorch's values and gradients where it is installed."""

import math

import numpy as np
import pytest

import tensorlib as tl
from tensorlib import Rng, gradcheck
from tensorlib.nn import RMSNorm
from tensorlib.nn import functional as F


def test_the_weight_starts_at_one_and_eps_defaults_to_the_dtypes_epsilon():
    layer = RMSNorm(4)
    assert [(n, p.shape) for n, p in layer.named_parameters()] == [("weight", (4,))]
    np.testing.assert_array_equal(layer.weight.data, 1.0)
    assert layer.normalized_shape == (4,) and layer.eps is None and layer.elementwise_affine
    assert repr(layer) == "RMSNorm((4,), eps=None, elementwise_affine=True)"
    assert list(RMSNorm(4, elementwise_affine=False).named_parameters()) == []


def test_forward_by_hand():
    layer = RMSNorm(4, eps=1e-6)
    with tl.no_grad():
        layer.weight.copy_(np.array([1.0, 2.0, 1.0, -1.0]))
    x = tl.tensor([[1.0, 2.0, 3.0, 4.0], [0.0, 0.0, 0.0, 0.0]])
    r = 1 / math.sqrt((1 + 4 + 9 + 16) / 4 + 1e-6)  # no centring: the mean stays
    expected = [[r, 4 * r, 3 * r, -4 * r], [0.0, 0.0, 0.0, 0.0]]
    np.testing.assert_allclose(layer(x).numpy(), expected, rtol=1e-6)


def test_the_output_has_unit_root_mean_square_and_eps_none_is_the_machine_epsilon():
    x = tl.Tensor(Rng(0).normal(3.0, 5.0, size=(3, 2, 64), dtype=np.float64))  # float64
    y = F.rms_norm(x, 64).numpy()
    np.testing.assert_allclose(np.sqrt((y ** 2).mean(-1)), 1.0, rtol=1e-12)
    tiny = tl.tensor(np.full((1, 4), 1e-9, dtype=np.float32))
    expected = 1e-9 / math.sqrt(1e-18 + float(np.finfo(np.float32).eps))
    np.testing.assert_allclose(F.rms_norm(tiny, 4).numpy(), expected, rtol=1e-5)


def test_several_trailing_axes_are_normalized_as_one():
    x = tl.Tensor(Rng(1).normal(size=(2, 3, 4), dtype=np.float64))
    weight = tl.Tensor(Rng(2).normal(size=(3, 4), dtype=np.float64))
    flat = F.rms_norm(x.reshape(2, 12), 12, weight.reshape(12)).reshape(2, 3, 4)
    np.testing.assert_allclose(F.rms_norm(x, (3, 4), weight).numpy(), flat.numpy(), rtol=1e-12)
    layer = RMSNorm((3, 4), dtype=np.float64)
    assert layer.weight.shape == (3, 4) and layer(x).shape == (2, 3, 4)


def test_the_fused_op_equals_its_reference_twin_in_value_and_gradient():
    x = tl.Tensor(Rng(3).normal(size=(4, 6), dtype=np.float64), requires_grad=True)
    weight = tl.Tensor(Rng(4).normal(size=(6,), dtype=np.float64), requires_grad=True)
    upstream = tl.Tensor(Rng(5).normal(size=(4, 6), dtype=np.float64))
    grads = []
    for norm in (F.rms_norm, F.rms_norm_reference):
        x.grad = weight.grad = None
        out = norm(x, 6, weight, 1e-5)
        (out * upstream).sum().backward()
        grads.append((out.numpy(), x.grad.numpy().copy(), weight.grad.numpy().copy()))
    for fused, reference in zip(*grads, strict=True):
        np.testing.assert_allclose(fused, reference, rtol=1e-10, atol=1e-13)


def test_gradcheck_of_the_module_in_float64():
    layer = RMSNorm((2, 3), eps=1e-5, dtype=np.float64)
    with tl.no_grad():
        layer.weight.copy_(Rng(6).normal(size=(2, 3), dtype=np.float64))
    x = tl.Tensor(Rng(7).normal(size=(4, 2, 3), dtype=np.float64), requires_grad=True)
    assert gradcheck(lambda t, w: F.rms_norm(t, (2, 3), w, 1e-5), x, layer.weight)


def test_bad_input_is_named():
    with pytest.raises(ValueError, match=r"rms_norm normalized_shape \[5\] does not match"):
        F.rms_norm(tl.tensor(np.ones((2, 4))), 5)
    with pytest.raises(ValueError, match=r"rms_norm weight of shape \(3,\) does not match"):
        F.rms_norm(tl.tensor(np.ones((2, 4))), 4, tl.tensor(np.ones(3)))
    with pytest.raises(ValueError, match="rms_norm eps must be"):
        F.rms_norm(tl.tensor(np.ones((2, 4))), 4, eps=0.0)
    with pytest.raises(TypeError, match="rms_norm input must be a floating-point tensor"):
        F.rms_norm(tl.tensor(np.ones((2, 4), dtype=np.int64)), 4)
    with pytest.raises(ValueError, match="RMSNorm normalized_shape"):
        RMSNorm(0)
    with pytest.raises(ValueError, match="RMSNorm eps"):
        RMSNorm(4, eps=-1.0)
    with pytest.raises(ValueError, match=r"does not match the last axes of the input"):
        RMSNorm(4)(tl.tensor(np.ones((2, 5), dtype=np.float32)))


@pytest.mark.parametrize("shape, affine, eps", [((5,), True, None), ((5,), False, 1e-6),
                                                 ((3, 5), True, 1e-5), ((3, 5), True, None)])
def test_values_and_gradients_are_pytorchs(shape, affine, eps):
    torch = pytest.importorskip("torch")
    x = Rng(8).normal(size=(2, 3, 5), dtype=np.float64)
    upstream = Rng(9).normal(size=(2, 3, 5), dtype=np.float64)
    ours = RMSNorm(shape, eps=eps, elementwise_affine=affine, dtype=np.float64)
    theirs = torch.nn.RMSNorm(shape, eps=eps, elementwise_affine=affine, dtype=torch.float64)
    if affine:
        weight = Rng(10).normal(size=shape, dtype=np.float64)
        with tl.no_grad():
            ours.weight.copy_(weight)
        with torch.no_grad():
            theirs.weight.copy_(torch.tensor(weight))
    mine, twin = tl.Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, expected = ours(mine), theirs(twin)
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-12, atol=1e-14)
    (out * tl.Tensor(upstream)).sum().backward()
    expected.backward(torch.tensor(upstream))
    np.testing.assert_allclose(mine.grad, twin.grad.numpy(), rtol=1e-10, atol=1e-13)
    if affine:
        np.testing.assert_allclose(ours.weight.grad, theirs.weight.grad.numpy(), rtol=1e-10,
                                   atol=1e-13)
    functional = torch.nn.functional.rms_norm(torch.tensor(x).float(), shape, eps=eps)
    np.testing.assert_allclose(F.rms_norm(tl.Tensor(x).float(), shape, eps=eps).numpy(),
                               functional.numpy(), rtol=1e-5, atol=1e-6)
