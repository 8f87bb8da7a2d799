"""Tests for tensorlib.optim.clip_grad_norm and global_gradient_norm."""

import math

import numpy as np
import pytest

from tensorlib.nn.module import Module
from tensorlib.nn.parameter import Parameter
from tensorlib.optim import clip_grad_norm, global_gradient_norm


class TwoLayer(Module):
    def __init__(self):
        super().__init__()
        self.first = Parameter(np.zeros(2, dtype=np.float32))
        child = Module()
        child.second = Parameter(np.zeros((1, 1), dtype=np.float32))
        child.unused = Parameter(np.zeros(4, dtype=np.float32))
        self.child = child


def model_with_grads(a=(3.0, 0.0), b=4.0):
    net = TwoLayer()
    net.first.grad = np.array(a, dtype=np.float32)
    net.child.second.grad = np.array([[b]], dtype=np.float32)
    return net


def test_global_norm_over_a_module_and_its_children():
    net = model_with_grads()
    assert global_gradient_norm(net) == pytest.approx(5.0, rel=1e-12)
    assert global_gradient_norm([net.child.second]) == pytest.approx(4.0)
    # no clipping happened
    np.testing.assert_array_equal(net.first.grad, [3.0, 0.0])


def test_global_norm_without_gradients_is_zero():
    assert global_gradient_norm(TwoLayer()) == 0.0


def test_global_norm_is_accumulated_in_float64():
    # the squares (9e40, 16e40) overflow float32; float64 accumulation still gives 5e20
    net = model_with_grads(a=(3e20, 0.0), b=4e20)
    assert global_gradient_norm(net) == pytest.approx(5e20, rel=1e-6)


def test_clip_returns_the_norm_before_clipping_and_scales_in_place():
    net = model_with_grads()
    first_grad = net.first.grad
    norm = clip_grad_norm(net, max_norm=1.0)
    assert norm == pytest.approx(5.0, rel=1e-12)
    scale = 1.0 / (5.0 + 1e-6)
    np.testing.assert_allclose(net.first.grad, [3.0 * scale, 0.0], rtol=1e-6)
    np.testing.assert_allclose(net.child.second.grad, [[4.0 * scale]], rtol=1e-6)
    assert net.first.grad is first_grad  # scaled in place
    assert net.first.grad.dtype == np.float32
    assert global_gradient_norm(net) <= 1.0
    assert global_gradient_norm(net) == pytest.approx(1.0, rel=1e-5)


def test_clip_below_the_threshold_leaves_gradients_alone():
    net = model_with_grads()
    assert clip_grad_norm(net, max_norm=5.5) == pytest.approx(5.0)
    np.testing.assert_array_equal(net.first.grad, [3.0, 0.0])
    np.testing.assert_array_equal(net.child.second.grad, [[4.0]])


def test_clip_read_only_gradient_is_replaced():
    net = model_with_grads()
    net.first.grad.numpy().flags.writeable = False
    clip_grad_norm(net, 2.5)
    np.testing.assert_allclose(net.first.grad, [3.0 * 2.5 / 5.0, 0.0], rtol=1e-6)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_norm_raises_and_changes_nothing(bad):
    net = model_with_grads(a=(3.0, bad))
    with pytest.raises(ValueError, match="norm"):
        clip_grad_norm(net, 1.0)
    np.testing.assert_array_equal(net.first.grad, np.float32([3.0, bad]))
    np.testing.assert_array_equal(net.child.second.grad, [[4.0]])
    assert not math.isfinite(global_gradient_norm(net))


@pytest.mark.parametrize("max_norm", [0.0, -1.0, float("nan")])
def test_invalid_max_norm_is_rejected(max_norm):
    net = model_with_grads()
    with pytest.raises(ValueError, match="max_norm"):
        clip_grad_norm(net, max_norm)
    np.testing.assert_array_equal(net.first.grad, [3.0, 0.0])


def test_mismatched_gradient_shape_is_rejected():
    net = model_with_grads()
    net.child.second.grad.data = np.ones(3, dtype=np.float32)  # the setter would refuse
    with pytest.raises(ValueError, match=r"child\.second.*\(3,\)"):
        clip_grad_norm(net, 1.0)
    np.testing.assert_array_equal(net.first.grad, [3.0, 0.0])


def test_parameter_list_validation():
    net = model_with_grads()
    with pytest.raises(ValueError, match="same Parameter"):
        global_gradient_norm([net.first, net.first])
    with pytest.raises(TypeError):
        clip_grad_norm([np.zeros(2)], 1.0)
