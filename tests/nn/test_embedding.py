"""Tests for tensorlib.nn.Embedding and tensorlib.nn.PositionalEmbedding."""

import math

import numpy as np
import pytest

import tensorlib as tl
from tensorlib import Rng, gradcheck
from tensorlib.nn import Embedding, PositionalEmbedding
from tensorlib.nn import functional as F


def manual_table(rows, width, offset=0.0):
    return (np.arange(rows * width, dtype=np.float64).reshape(rows, width) + offset) / 10


# --------------------------------------------------------------------------------- Embedding
def test_names_shape_and_xavier_init():
    layer = Embedding(10, 4, rng=Rng(0))
    assert [(n, p.shape) for n, p in layer.named_parameters()] == [("weight", (10, 4))]
    assert np.all(np.abs(layer.weight.data) <= math.sqrt(6 / 14))
    np.testing.assert_array_equal(Embedding(10, 4, rng=Rng(0)).weight.data, layer.weight.data)


@pytest.mark.parametrize("ids", [
    [[2, 0], [2, 5]],
    np.array([[2, 0], [2, 5]], dtype=np.int32),
    tl.tensor([[2, 0], [2, 5]]),
])
def test_lookup_returns_the_rows(ids):
    layer = Embedding(6, 3, rng=Rng(0))
    out = layer(ids)
    assert out.shape == (2, 2, 3)
    table = layer.weight.data
    np.testing.assert_array_equal(out.data, np.stack([table[[2, 0]], table[[2, 5]]]))


def test_scalar_and_one_dimensional_ids():
    layer = Embedding(4, 2, rng=Rng(0))
    np.testing.assert_array_equal(layer(3).data, layer.weight.data[3])
    assert layer(np.array([1, 1, 1])).shape == (3, 2)


def test_backward_accumulates_repeated_ids_into_the_weight():
    layer = Embedding(5, 2, rng=Rng(0), dtype=np.float64)
    ids = np.array([[1, 3, 1], [1, 0, 3]])
    upstream = np.arange(12.0).reshape(2, 3, 2)
    layer(ids).backward(upstream)
    expected = np.zeros((5, 2))
    for position, token in np.ndenumerate(ids):
        expected[token] += upstream[position]
    np.testing.assert_array_equal(layer.weight.grad, expected)
    np.testing.assert_array_equal(layer.weight.grad[[2, 4]], 0.0)


def test_weight_gradient_passes_gradcheck():
    layer = Embedding(5, 3, rng=Rng(4), dtype=np.float64)
    ids = np.array([[4, 4, 0], [2, 4, 1]])
    assert gradcheck(lambda weight: F.embedding(weight, ids), layer.weight)
    layer(ids).sum().backward()  # the layer and the functional form share one op
    np.testing.assert_array_equal(layer.weight.grad[:, 0], [1, 1, 1, 0, 3])


@pytest.mark.parametrize("ids, error, message", [
    ([0, 7], IndexError, "token id 7"),
    ([[0, 1], [-1, 2]], IndexError, "token id -1"),
    ([0.0, 2.0], TypeError, "integer dtype"),
    (tl.tensor([1.0, 2.0]), TypeError, "integer dtype"),
    (tl.tensor([1.0, 2.0], requires_grad=True), TypeError, "require grad"),
    (np.array([True, False]), TypeError, "integer dtype"),
    ("abc", TypeError, "integer"),
])
def test_rejects_bad_ids_naming_them(ids, error, message):
    layer = Embedding(7, 2, rng=Rng(0))
    with pytest.raises(error, match=message):
        layer(ids)


@pytest.mark.parametrize("args, error", [((0, 3), ValueError), ((3, -1), ValueError),
                                          ((3.0, 2), TypeError)])
def test_constructor_validation(args, error):
    with pytest.raises(error):
        Embedding(*args, rng=Rng(0))
    with pytest.raises(ValueError, match="weight_init"):
        Embedding(3, 2, weight_init="nope")


# --------------------------------------------------------------------------------- Positional
def positional(context=4, width=3, dtype=np.float64):
    layer = PositionalEmbedding(context, width, rng=Rng(1), dtype=dtype)
    with tl.no_grad():
        layer.table.weight.copy_(manual_table(context, width, offset=1.0))
    return layer


def test_positional_embedding_owns_a_table_child():
    layer = PositionalEmbedding(8, 4, rng=Rng(0))
    assert isinstance(layer.table, Embedding)
    assert [n for n, _ in layer.named_parameters()] == ["table.weight"]
    assert layer.table.weight.shape == (8, 4)
    assert layer.num_parameters() == 32


def test_positional_embedding_adds_rows_zero_to_t_minus_one():
    layer = positional()
    x = tl.Tensor(manual_table(3, 3).reshape(1, 3, 3).repeat(2, axis=0))  # (2, 3, 3)
    out = layer(x)
    table = manual_table(4, 3, offset=1.0)
    np.testing.assert_allclose(out.data, x.data + table[:3])
    full = layer(tl.zeros(1, 4, 3, dtype=np.float64))
    np.testing.assert_allclose(full.data[0], table)


def test_positional_embedding_backward_sums_over_batch_and_skips_unused_rows():
    layer = positional()
    x = tl.Tensor(np.ones((2, 3, 3)), requires_grad=True)
    upstream = np.arange(18.0).reshape(2, 3, 3)
    layer(x).backward(upstream)
    expected = np.zeros((4, 3))
    expected[:3] = upstream.sum(axis=0)
    np.testing.assert_array_equal(layer.table.weight.grad, expected)
    np.testing.assert_array_equal(x.grad, upstream)


def test_positional_embedding_rejects_too_long_sequences_naming_both_lengths():
    layer = positional(context=4)
    with pytest.raises(ValueError, match="sequence length 5 exceeds the context length 4"):
        layer(tl.zeros(1, 5, 3, dtype=np.float64))


def test_positional_embedding_rejects_wrong_width_and_rank():
    layer = positional(width=3)
    with pytest.raises(ValueError, match=r"3 features, got shape \(1, 2, 4\)"):
        layer(tl.zeros(1, 2, 4, dtype=np.float64))
    with pytest.raises(ValueError, match=r"T, C\)"):
        layer(tl.zeros(3, dtype=np.float64))
    with pytest.raises(ValueError):
        PositionalEmbedding(0, 3)
