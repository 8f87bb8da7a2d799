"""The recurrent character model of the ladder and notebook 12d: shapes, causality, the
state carried from one call to the next, sampling, and the ladder's sizes."""

import numpy as np
import pytest

import tensorlib as tl
from tensorlib import Rng
from tensorlib.models import RecurrentNameModel
from tensorlib.training.ladder import RECURRENT_WIDTHS, build_rung, ladder_data

IDS = np.array([[0, 3, 1, 4, 1, 5], [0, 9, 2, 6, 5, 3]])


@pytest.mark.parametrize("cell", ["rnn", "gru", "lstm"])
def test_logits_at_a_position_read_only_the_characters_up_to_it(cell):
    model = RecurrentNameModel(10, cell, embedding_width=4, hidden=5, rng=Rng(0),
                               dtype=np.float64)
    logits = model(IDS).numpy()
    assert logits.shape == (2, 6, 10)
    changed = IDS.copy()
    changed[:, 4:] = 7
    np.testing.assert_array_equal(model(changed).numpy()[:, :4], logits[:, :4])
    assert not np.allclose(model(changed).numpy()[:, 4:], logits[:, 4:])


@pytest.mark.parametrize("cell", ["rnn", "gru", "lstm"])
def test_the_state_carried_between_calls_continues_the_sequence(cell):
    model = RecurrentNameModel(10, cell, embedding_width=4, hidden=5, num_layers=2,
                               rng=Rng(1), dtype=np.float64)
    whole = model(IDS).numpy()
    first, state = model.forward_with_state(IDS[:, :2])
    rest, _ = model.forward_with_state(IDS[:, 2:], state)
    np.testing.assert_allclose(np.concatenate([first.numpy(), rest.numpy()], axis=1), whole,
                               rtol=1e-12, atol=1e-14)


def test_generation_is_seeded_and_continues_each_row():
    model = RecurrentNameModel(10, "gru", embedding_width=4, hidden=5, rng=Rng(2))
    a = model.generate(IDS[:, :1], 8, rng=Rng(3))
    b = model.generate(IDS[:, :1], 8, rng=Rng(3))
    assert a.shape == (2, 9) and a.dtype == np.int64
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a[:, :1], IDS[:, :1])
    assert ((a >= 0) & (a < 10)).all()
    assert model.training  # generation leaves the mode as it was
    with pytest.raises(ValueError, match="temperature"):
        model.generate(IDS[:, :1], 2, temperature=0.0)
    with pytest.raises(ValueError, match="cell"):
        RecurrentNameModel(10, "transformer")


def test_the_first_loss_is_near_ln_v_and_the_ladder_rungs_match_the_decoder_size():
    data = ladder_data(0)
    for rung, hidden in RECURRENT_WIDTHS.items():
        model = build_rung(rung, data)
        assert model.recurrent.hidden_size == hidden
        assert abs(model.num_parameters() - 204_443) < 0.005 * 204_443
    model = build_rung("gru", data)
    inputs, targets, valid = (part[:64] for part in data.train)
    loss = tl.nn.functional.cross_entropy(model(inputs)[valid], targets[valid]).item()
    assert abs(loss - np.log(data.vocabulary_size)) < 0.1
