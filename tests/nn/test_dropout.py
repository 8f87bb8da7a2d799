"""Tests for tensorlib.nn.Dropout (inverted dropout driven by the splitmix64 RNG)."""

import numpy as np
import pytest

import tensorlib as tl
from tensorlib import Rng, manual_seed
from tensorlib.engine.splitmix64 import default_rng
from tensorlib.nn import Dropout, Module


def test_same_seed_same_mask_and_the_mask_is_uniform_below_p():
    x = tl.ones(6, 7)
    first = Dropout(0.4, rng=Rng(11))(x).data
    second = Dropout(0.4, rng=Rng(11))(x).data
    np.testing.assert_array_equal(first, second)
    dropped = Rng(11).uniform(0.0, 1.0, size=(6, 7)) < 0.4  # the documented rule
    np.testing.assert_array_equal(first == 0, dropped)
    assert not np.array_equal(first, Dropout(0.4, rng=Rng(12))(x).data)


def test_inverted_scaling_of_the_kept_elements():
    x = tl.Tensor(np.arange(1.0, 201.0, dtype=np.float32))
    y = Dropout(0.25, rng=Rng(3))(x).data
    kept = y != 0
    np.testing.assert_allclose(y[kept], x.data[kept] / 0.75, rtol=1e-6)
    assert 0.6 < kept.mean() < 0.9


def test_expected_value_is_preserved():
    y = Dropout(0.5, rng=Rng(4))(tl.ones(100_000)).numpy()
    assert abs(y.mean() - 1.0) < 0.02


def test_successive_calls_draw_new_masks():
    layer = Dropout(0.5, rng=Rng(5))
    x = tl.ones(50)
    assert not np.array_equal(layer(x).data, layer(x).data)


def test_backward_passes_the_gradient_through_the_mask():
    rng = Rng(6)
    x = tl.Tensor(np.linspace(-1, 1, 12).reshape(3, 4), requires_grad=True)
    y = Dropout(0.3, rng=rng)(x)
    upstream = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    y.backward(upstream)
    multiplier = np.where(Rng(6).uniform(0, 1, size=(3, 4)) < 0.3, 0.0, 1 / 0.7)
    np.testing.assert_allclose(x.grad, upstream * multiplier, rtol=1e-6)
    assert tl.gradcheck(lambda t: Dropout(0.3, rng=Rng(6))(t),
                        tl.Tensor(np.ones((3, 4)), requires_grad=True))


def test_eval_mode_is_the_identity_and_draws_nothing():
    rng = Rng(7)
    layer = Dropout(0.9, rng=rng)
    layer.eval()
    x = tl.ones(4, 4, requires_grad=True)
    assert layer(x) is x
    assert rng.state == 7
    layer.train()
    assert layer(x) is not x and rng.state != 7


def test_zero_probability_is_the_identity_and_draws_nothing():
    rng = Rng(8)
    x = tl.ones(3)
    assert Dropout(0.0, rng=rng)(x) is x
    assert rng.state == 8


def test_mode_follows_the_parent_module():
    parent = Module()
    parent.drop = Dropout(0.5, rng=Rng(0))
    parent.eval()
    x = tl.ones(10)
    assert parent.drop(x) is x
    parent.train()
    assert parent.drop(x) is not x


def test_default_rng_is_looked_up_at_call_time():
    layer = Dropout(0.5)
    x = tl.ones(20)
    manual_seed(99)
    first = layer(x).data
    manual_seed(99)
    np.testing.assert_array_equal(layer(x).data, first)
    np.testing.assert_array_equal(Dropout(0.5, rng=Rng(99))(x).data, first)
    assert default_rng().state != 99


def test_has_no_parameters():
    assert Dropout(0.1).parameters() == []


@pytest.mark.parametrize("p", [1.0, -0.01, 2.0, float("nan")])
def test_probability_must_be_in_zero_one(p):
    with pytest.raises(ValueError, match=r"\[0, 1\)"):
        Dropout(p)


@pytest.mark.parametrize("p", [None, True, "0.5"])
def test_probability_must_be_a_number(p):
    with pytest.raises(TypeError, match=r"dropout probability must be a finite number in \[0, 1\)"):
        Dropout(p)


def test_rejects_a_non_rng():
    with pytest.raises(TypeError, match="Rng"):
        Dropout(0.1, rng=np.random.default_rng(0))
