"""tril, triu, contiguous and repeat: numpy's values, gradients checked in float64,
PyTorch's results where PyTorch is installed."""

from __future__ import annotations

import numpy as np
import pytest

import tensorlib as tl
from tensorlib import gradcheck

SHAPES = [(4, 4), (3, 5), (5, 3), (2, 3, 4)]
DIAGONALS = [-2, -1, 0, 1, 3]


def _values(shape):
    return np.arange(1.0, 1.0 + np.prod(shape)).reshape(shape)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("diagonal", DIAGONALS)
def test_the_triangles_are_numpys(shape, diagonal):
    x = _values(shape)
    assert np.array_equal(tl.tensor(x).tril(diagonal).numpy(), np.tril(x, diagonal))
    assert np.array_equal(tl.triu(tl.tensor(x), diagonal).numpy(), np.triu(x, diagonal))


@pytest.mark.parametrize("which", ["tril", "triu"])
@pytest.mark.parametrize("diagonal", [-1, 0, 2])
def test_the_triangles_gradients(which, diagonal):
    x = tl.tensor(np.linspace(-1.0, 1.0, 24).reshape(2, 3, 4), dtype=tl.float64,
                  requires_grad=True)
    assert gradcheck(lambda t: getattr(t, which)(diagonal), x)
    getattr(x, which)(diagonal).sum().backward()
    expected = (np.tril if which == "tril" else np.triu)(np.ones((3, 4)), diagonal)
    assert np.array_equal(x.grad.numpy(), np.broadcast_to(expected, (2, 3, 4)))


def test_the_triangles_refuse_what_they_cannot_do():
    with pytest.raises(ValueError, match="tril needs at least 2 dims"):
        tl.zeros(3).tril()
    with pytest.raises(TypeError, match="triu diagonal"):
        tl.zeros(2, 2).triu(0.5)
    with pytest.raises(TypeError, match="tril input must be a Tensor"):
        tl.tril([[1.0]])


def test_contiguous_is_the_tensor_itself_or_a_copy_in_row_order():
    x = tl.tensor(_values((3, 4)), requires_grad=True)
    assert x.contiguous() is x
    y = x.transpose()
    z = y.contiguous()
    assert z is not y and z.numpy().flags.c_contiguous
    assert np.array_equal(z.numpy(), y.numpy())
    z.sum().backward()
    assert np.array_equal(x.grad.numpy(), np.ones((3, 4)))


def test_the_triangles_agree_with_pytorch():
    torch = pytest.importorskip("torch")
    x = _values((2, 3, 5)).astype(np.float32)
    for diagonal in DIAGONALS:
        assert np.array_equal(tl.tensor(x).tril(diagonal).numpy(),
                              torch.tensor(x).tril(diagonal).numpy())
        assert np.array_equal(tl.tensor(x).triu(diagonal).numpy(),
                              torch.tensor(x).triu(diagonal).numpy())


@pytest.mark.parametrize("shape, sizes", [((2, 3), (2, 1)), ((2, 3), (1, 2, 3)),
                                          ((4,), (3,)), ((2, 1, 3), (1, 4, 2)),
                                          ((2, 3), (0, 1))])
def test_repeat_tiles_as_numpy_and_adds_the_copies_gradients(shape, sizes):
    x = tl.tensor(_values(shape), dtype=tl.float64, requires_grad=True)
    assert np.array_equal(x.repeat(*sizes).numpy(), np.tile(x.numpy(), sizes))
    assert np.array_equal(x.repeat(sizes).numpy(), np.tile(x.numpy(), sizes))
    assert gradcheck(lambda t: t.repeat(*sizes), x)
    x.repeat(*sizes).sum().backward()
    assert np.array_equal(x.grad.numpy(), np.full(shape, float(np.prod(sizes))))


def test_repeat_refuses_too_few_sizes_and_negative_ones():
    with pytest.raises(ValueError, match="repeat needs at least one size per dim"):
        tl.zeros(2, 3).repeat(2)
    with pytest.raises(ValueError, match="repeat size"):
        tl.zeros(2).repeat(-1)


def test_repeat_agrees_with_pytorch():
    torch = pytest.importorskip("torch")
    x = _values((2, 3)).astype(np.float32)
    for sizes in [(2, 1), (1, 2, 3), (3, 2)]:
        assert np.array_equal(tl.tensor(x).repeat(*sizes).numpy(),
                              torch.tensor(x).repeat(*sizes).numpy())
