"""SwiGLU: w2(silu(w1 x) * w3 x) by hand, any hidden width, no biases by default, gradients,
and PyTorch's values where it is installed."""

import numpy as np
import pytest

import tensorlib as tl
from tensorlib import Rng, gradcheck
from tensorlib.nn import SwiGLU
from tensorlib.nn import functional as F


def test_forward_by_hand_with_any_hidden_width():
    layer = SwiGLU(6, 10, rng=Rng(0), dtype=np.float64)
    assert [(name, p.shape) for name, p in layer.named_parameters()] == [
        ("w1.weight", (10, 6)), ("w3.weight", (10, 6)), ("w2.weight", (6, 10))]
    x = Rng(1).normal(size=(2, 3, 6), dtype=np.float64)
    gate = x @ layer.w1.weight.numpy().T
    expected = (gate / (1 + np.exp(-gate)) * (x @ layer.w3.weight.numpy().T)) \
        @ layer.w2.weight.numpy().T
    np.testing.assert_allclose(layer(tl.Tensor(x)).numpy(), expected, rtol=1e-12)
    assert repr(layer).startswith("SwiGLU(channels=6, hidden=10")
    assert len(list(SwiGLU(4, 8, bias=True).parameters())) == 6


def test_gradcheck_in_float64():
    layer = SwiGLU(3, 5, bias=True, rng=Rng(2), dtype=np.float64)
    x = tl.Tensor(Rng(3).normal(size=(4, 3), dtype=np.float64), requires_grad=True)
    assert gradcheck(lambda t: layer(t), x)

    def swiglu(t, w1, b1, w3, b3, w2, b2):  # the module's formula, every weight an input
        return F.linear(F.silu(F.linear(t, w1, b1)) * F.linear(t, w3, b3), w2, b2)

    weights = [layer.w1.weight, layer.w1.bias, layer.w3.weight, layer.w3.bias, layer.w2.weight,
               layer.w2.bias]
    np.testing.assert_allclose(swiglu(x, *weights).numpy(), layer(x).numpy(), rtol=1e-14)
    assert gradcheck(swiglu, x, *[tl.Tensor(w.numpy(), requires_grad=True) for w in weights])


def test_values_are_pytorchs():
    torch = pytest.importorskip("torch")
    layer = SwiGLU(6, 10, rng=Rng(4), dtype=np.float64)
    x = Rng(5).normal(size=(2, 6), dtype=np.float64)
    w1, w2, w3 = (torch.tensor(getattr(layer, name).weight.numpy()) for name in ("w1", "w2", "w3"))
    t = torch.tensor(x)
    expected = torch.nn.functional.silu(t @ w1.T) * (t @ w3.T) @ w2.T
    np.testing.assert_allclose(layer(tl.Tensor(x)).numpy(), expected.numpy(), rtol=1e-12)


def test_bad_sizes_are_named():
    with pytest.raises(ValueError, match="SwiGLU hidden"):
        SwiGLU(4, 0)
