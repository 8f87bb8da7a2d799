"""The count-based bigram baseline: counts, smoothing, probabilities, NLL, sampling."""

import math

import numpy as np
import pytest

from tensorlib import Rng
from tensorlib.data import CharTokenizer, sequence_targets
from tensorlib.models.bigram_counts import BigramModel, bigram_pairs

# ".ab." and ".b." with the vocabulary [".", "a", "b"]: the pairs are
# (., a) (a, b) (b, .) and (., b) (b, .).
WORDS = ["ab", "b"]
TOKENIZER = CharTokenizer(WORDS)
EXPECTED_COUNTS = np.array([[0, 1, 1],
                            [0, 0, 1],
                            [2, 0, 0]])


def test_pairs_frame_every_word_with_the_boundary():
    previous, following = bigram_pairs([[1, 2], [2]])
    assert previous.tolist() == [0, 1, 2, 0, 2]
    assert following.tolist() == [1, 2, 0, 2, 0]
    assert previous.dtype == np.int64


def test_counts_of_a_tiny_corpus():
    model = BigramModel.from_words(WORDS, TOKENIZER)
    np.testing.assert_array_equal(model.counts, EXPECTED_COUNTS)
    assert model.vocabulary_size == 3


def test_add_one_probabilities_and_training_nll_by_hand():
    model = BigramModel.from_words(WORDS, TOKENIZER, smoothing=1.0)
    expected = np.array([[1, 2, 2], [1, 1, 2], [3, 1, 1]]) / np.array([[5], [4], [5]])
    np.testing.assert_allclose(model.probabilities, expected, rtol=0, atol=1e-15)
    np.testing.assert_allclose(model.probabilities.sum(axis=1), 1.0, rtol=0, atol=1e-15)
    # Pairs: (.,a) 2/5, (a,b) 2/4, (b,.) 3/5, (.,b) 2/5, (b,.) 3/5.
    by_hand = -(2 * math.log(2 / 5) + math.log(2 / 4) + 2 * math.log(3 / 5)) / 5
    assert model.word_negative_log_likelihood(WORDS, TOKENIZER) == pytest.approx(by_hand,
                                                                                 abs=1e-12)
    assert model.negative_log_likelihood([[1, 2], [2]]) == pytest.approx(by_hand, abs=1e-12)


def test_maximum_likelihood_estimate_without_smoothing():
    model = BigramModel.from_words(WORDS, TOKENIZER, smoothing=0.0)
    # Only (., a) and (., b) are uncertain (1/2 each); the other three pairs are certain.
    assert model.word_negative_log_likelihood(WORDS, TOKENIZER) == pytest.approx(
        2 * math.log(2) / 5, abs=1e-12)
    assert model.word_negative_log_likelihood(["ba"], TOKENIZER) == math.inf  # (b, a) unseen


def test_configurable_smoothing_moves_towards_uniform():
    light = BigramModel.from_words(WORDS, TOKENIZER, smoothing=0.5)
    np.testing.assert_allclose(light.probabilities[1], [0.5 / 2.5, 0.5 / 2.5, 1.5 / 2.5])
    heavy = BigramModel.from_words(WORDS, TOKENIZER, smoothing=1e9)
    np.testing.assert_allclose(heavy.probabilities, 1 / 3, atol=1e-8)


def test_rows_sum_to_one_on_a_larger_corpus():
    words = ["emma", "olivia", "ava", "isabella", "sophia", "mia", "charlotte", "amelia"]
    tokenizer = CharTokenizer(words)
    model = BigramModel.from_words(words, tokenizer)
    assert model.probabilities.shape == (tokenizer.vocabulary_size,) * 2
    np.testing.assert_allclose(model.probabilities.sum(axis=1), 1.0, atol=1e-12)
    assert int(model.counts.sum()) == sum(len(w) + 1 for w in words)


def test_scores_the_same_pairs_as_a_decoder_on_sequence_windows():
    words = ["emma", "olivia", "ava", "isabella", "sophia"]  # a stream of 33 ids: 32 pairs
    tokenizer = CharTokenizer(words)
    model = BigramModel.from_words(words, tokenizer)
    inputs, targets = sequence_targets(words, tokenizer, block_size=4)
    assert inputs.size == 32
    assert model.pair_negative_log_likelihood(inputs, targets) == pytest.approx(
        model.word_negative_log_likelihood(words, tokenizer), abs=1e-12)
    stream = np.concatenate([inputs.ravel(), targets[-1:, -1]])
    refit = BigramModel.fit_pairs(stream[:-1], stream[1:], tokenizer.vocabulary_size)
    np.testing.assert_array_equal(refit.counts, model.counts)


def test_sampling_is_seeded_and_follows_the_counts():
    certain = BigramModel.from_words(["ab"], CharTokenizer(["ab"]), smoothing=0.0)
    assert certain.sample(Rng(0), count=4) == [[1, 2]] * 4
    model = BigramModel.from_words(WORDS, TOKENIZER)
    first = model.sample(Rng(5), count=20, max_length=6)
    assert first == model.sample(Rng(5), count=20, max_length=6)
    assert len(first) == 20
    assert all(len(word) <= 6 and all(1 <= i <= 2 for i in word) for word in first)
    assert model.sample(Rng(0), count=0) == []


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(ValueError, match="smoothing"):
        BigramModel.from_words(WORDS, TOKENIZER, smoothing=-1.0)
    with pytest.raises(IndexError, match="id 7 is out of range"):
        BigramModel.fit([[1, 7]], vocabulary_size=3)
    with pytest.raises(TypeError, match="encode it"):
        BigramModel.fit(["ab"], vocabulary_size=3)
    with pytest.raises(ValueError, match="vocabulary_size"):
        BigramModel.fit([[1]], vocabulary_size=0)
    model = BigramModel.from_words(WORDS, TOKENIZER)
    with pytest.raises(ValueError, match="do not match"):
        model.pair_negative_log_likelihood(np.zeros(3, np.int64), np.zeros(2, np.int64))
    with pytest.raises(ValueError, match="square"):
        BigramModel(np.zeros((2, 3), np.int64))
