"""Flatten and FlattenConsecutive: the axes they merge, gradchecked in float64, bad input
refused, and a WaveNet-style stack built of them. (Against torch.nn.Flatten: in
test_container.py, with Sequential.)"""

import numpy as np
import pytest

import tensorlib as tl
from tensorlib import Rng
from tensorlib.engine.gradcheck import gradcheck
from tensorlib.nn import BatchNorm1d, Flatten, FlattenConsecutive, Linear, Module, Sequential


def test_flatten_merges_the_given_axes():
    x = tl.tensor(np.arange(2 * 3 * 4 * 5, dtype=np.float64).reshape(2, 3, 4, 5),
                  requires_grad=True)
    assert Flatten()(x).shape == (2, 60)
    assert Flatten(0, 1)(x).shape == (6, 4, 5)
    assert Flatten(1, 2)(x).shape == (2, 12, 5)
    assert Flatten(-2)(x).shape == (2, 3, 20)
    np.testing.assert_array_equal(Flatten()(x).data, x.data.reshape(2, 60))
    assert gradcheck(lambda t: Flatten(1, 2)(t) * 1.0, x)
    for start, end in [(2, 1), (4, -1), (0, 4)]:
        with pytest.raises(ValueError, match=r"does not fit an input of shape \(2, 3, 4, 5\)"):
            Flatten(start, end)(x)
    with pytest.raises(TypeError, match="Tensor"):
        Flatten()(np.zeros((2, 3)))


def test_flatten_consecutive_puts_each_run_of_n_positions_side_by_side():
    x = Rng(3).normal(size=(2, 8, 3), dtype=np.float64)
    out = FlattenConsecutive(2)(tl.tensor(x))
    assert out.shape == (2, 4, 6)
    for k in range(4):                                           # positions 2k and 2k+1
        np.testing.assert_array_equal(out.data[:, k], np.concatenate([x[:, 2 * k],
                                                                      x[:, 2 * k + 1]], axis=1))
    assert FlattenConsecutive(8)(tl.tensor(x)).shape == (2, 1, 24)
    leaf = tl.tensor(x, requires_grad=True)
    assert gradcheck(lambda t: FlattenConsecutive(4)(t) * 1.0, leaf)
    with pytest.raises(ValueError, match=r"T a multiple of 3, got \(2, 8, 3\)"):
        FlattenConsecutive(3)(tl.tensor(x))
    with pytest.raises(ValueError, match=r"got \(8, 3\)"):
        FlattenConsecutive(2)(tl.tensor(x[0]))
    with pytest.raises(ValueError):
        FlattenConsecutive(0)


def test_a_wavenet_stack_is_built_of_these_pieces():
    """Embedding-free: (B, 8, C) merged in pairs three times, BatchNorm between levels."""

    class Level(Module):
        def __init__(self, width, hidden, rng):
            super().__init__()
            self.merge = FlattenConsecutive(2)
            self.linear = Linear(2 * width, hidden, bias=False, rng=rng)
            self.norm = BatchNorm1d(hidden)

        def forward(self, x):                                    # (B, T, C) -> (B, T/2, H)
            h = self.linear(self.merge(x))
            return self.norm(h.transpose(1, 2)).transpose(1, 2).tanh()

    rng = Rng(4)
    stack = Sequential(Level(5, 6, rng), Level(6, 6, rng), Level(6, 6, rng), Flatten())
    out = stack(tl.tensor(Rng(5).normal(size=(7, 8, 5))))
    assert out.shape == (7, 6)
    out.sum().backward()
    assert all(p.grad is not None for p in stack.parameters())
