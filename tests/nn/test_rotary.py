"""Rotary position embedding: Llama's half-split pairing by a complex rotation, the score of a
query and a key depends on their positions only through the difference, gradients, the
module's tables and offsets, and bad input."""

import numpy as np
import pytest

import tensorlib as tl
from tensorlib import Rng, gradcheck
from tensorlib.nn import RotaryEmbedding
from tensorlib.nn import functional as F


def _normal(seed, *shape):
    return Rng(seed).normal(size=shape, dtype=np.float64)


def test_each_pair_of_halves_is_turned_by_position_times_its_frequency():
    """Feature i and feature i + D/2 as one complex number, multiplied by exp(i p θ^(-2i/D))."""
    T, D, theta = 6, 8, 500.0
    x = _normal(0, 2, T, D)
    cos, sin = F.rotary_tables(T, D, theta, dtype=np.float64)
    out = F.apply_rotary(tl.Tensor(x), cos, sin).numpy()
    angles = np.arange(T)[:, None] * theta ** (-np.arange(0, D, 2) / D)[None, :]  # (T, D/2)
    pairs = (x[..., :D // 2] + 1j * x[..., D // 2:]) * np.exp(1j * angles)
    np.testing.assert_allclose(out, np.concatenate([pairs.real, pairs.imag], -1), atol=1e-12)


def test_a_score_depends_on_the_positions_only_through_their_difference():
    D = 16
    q, k = _normal(1, D), _normal(2, D)
    cos, sin = F.rotary_tables(40, D, dtype=np.float64)

    def at(vector, position):
        return F.apply_rotary(tl.Tensor(vector[None]), cos[position:position + 1],
                              sin[position:position + 1]).numpy()[0]

    for m, n in [(5, 2), (9, 9), (3, 11)]:
        score = at(q, m) @ at(k, n)
        for shift in (1, 7, 20):
            np.testing.assert_allclose(at(q, m + shift) @ at(k, n + shift), score, rtol=1e-10)
    assert abs(at(q, 5) @ at(k, 2) - at(q, 6) @ at(k, 2)) > 1e-3  # but not constant
    np.testing.assert_allclose(np.linalg.norm(at(q, 7)), np.linalg.norm(q), rtol=1e-12)


def test_gradcheck_in_float64():
    cos, sin = F.rotary_tables(4, 6, dtype=np.float64)
    x = tl.Tensor(_normal(3, 2, 4, 6), requires_grad=True)
    assert gradcheck(lambda t: F.apply_rotary(t, cos, sin), x)


def test_the_module_keeps_its_tables_out_of_the_state_dict_and_reads_them_at_an_offset():
    rope = RotaryEmbedding(8, max_positions=32, theta=10000.0, dtype=np.float64)
    assert list(rope.state_dict()) == [] and rope.cos.shape == (32, 8)
    x = tl.Tensor(_normal(4, 2, 3, 5, 8))                                  # (B, H, T, D)
    whole = rope(tl.Tensor(np.concatenate([np.zeros((2, 3, 4, 8)), x.numpy()], axis=2)))
    np.testing.assert_allclose(rope(x, offset=4).numpy(), whole.numpy()[:, :, 4:], atol=1e-12)
    assert repr(rope) == "RotaryEmbedding(head_dim=8, max_positions=32, theta=10000.0)"


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="even head_dim"):
        F.rotary_tables(4, 5)
    with pytest.raises(ValueError, match=r"must both end in the input's \(T, D\)"):
        cos, sin = F.rotary_tables(3, 4)
        F.apply_rotary(tl.zeros(2, 4, 4), cos, sin)
    with pytest.raises(ValueError, match="covers 8 positions; positions 6 to 9"):
        RotaryEmbedding(4, max_positions=8)(tl.zeros(1, 4, 4), offset=6)
    with pytest.raises(TypeError, match="mixed dtypes"):
        cos, sin = F.rotary_tables(3, 4, dtype=np.float64)
        F.apply_rotary(tl.zeros(3, 4), cos, sin)
