"""A count-based character bigram model: the baseline every neural name model must beat.

The model counts how often token ``b`` follows token ``a`` in the training words (each word
framed by the boundary token, id 0, on both sides: ``.emma.``), adds ``smoothing`` to every
count, and normalises each row into a next-token distribution::

    P[a, b] = (count[a, b] + smoothing) / sum_c (count[a, c] + smoothing)

Its loss on a set of words is the mean negative log-likelihood (in nats) of every
(previous, next) pair those words contain, boundaries included. A GPT-style model trained on
the same words with ``tensorlib.data.sequence_targets`` is scored on exactly these pairs, so
the two numbers are directly comparable.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from tensorlib.data.tokenizer import CharTokenizer
from tensorlib.engine import validation
from tensorlib.engine.splitmix64 import Rng

__all__ = ["BigramModel", "bigram_pairs"]


def bigram_pairs(encoded_words: Iterable[Sequence[int]],
                 boundary_id: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Every (previous, next) id pair of ``encoded_words`` framed by ``boundary_id``.

    ``encoded_words`` holds one id sequence per word, without boundaries (what
    ``CharTokenizer.encode`` returns). A word of length L gives L + 1 pairs. The words are
    joined into one stream ``0 w1 0 w2 0 ...``, whose neighbouring ids are exactly the pairs
    of the separately framed words. Returns two int64 arrays of equal length.
    """
    if isinstance(encoded_words, (str, bytes)):
        raise TypeError("encoded_words must be a sequence of id sequences, not a string")
    stream: list[int] = [boundary_id]
    for index, ids in enumerate(encoded_words):
        if isinstance(ids, (str, bytes)):
            raise TypeError(f"word {index} is a string ({ids!r}); encode it with the tokenizer "
                            "first (or use BigramModel.from_words)")
        stream.extend(ids)
        stream.append(boundary_id)
    array = np.asarray(stream)
    if array.ndim != 1 or array.dtype.kind not in "iu":
        raise TypeError("encoded_words must hold sequences of integer ids")
    array = array.astype(np.int64, copy=False)
    return array[:-1], array[1:]


class BigramModel:
    """Next-token probabilities from smoothed bigram counts.

    ``counts`` is the (V, V) int64 table of observed pairs (row: previous token, column:
    next token) and ``probabilities`` the (V, V) float64 table whose rows sum to 1. Build one
    with :meth:`fit` (encoded words) or :meth:`from_words` (strings and a tokenizer).
    ``smoothing >= 0`` is added to every count (1.0 is add-one / Laplace smoothing; 0 gives
    the maximum-likelihood estimate, which assigns probability 0, and so an infinite loss, to
    pairs never seen in training).
    """

    def __init__(self, counts: np.ndarray, smoothing: float = 1.0, boundary_id: int = 0) -> None:
        counts = np.asarray(counts)
        if counts.ndim != 2 or counts.shape[0] != counts.shape[1] or counts.shape[0] == 0:
            raise ValueError(f"counts must be a non-empty square (V, V) table, "
                             f"got shape {counts.shape}")
        if counts.dtype.kind not in "iu" or np.any(counts < 0):
            raise ValueError("counts must be non-negative integers")
        smoothing = validation.non_negative(smoothing, "smoothing")
        vocabulary_size = counts.shape[0]
        if not 0 <= boundary_id < vocabulary_size:
            raise ValueError(f"boundary_id {boundary_id} is outside the vocabulary of size "
                             f"{vocabulary_size}")
        self.counts = counts.astype(np.int64, copy=True)
        self.smoothing = float(smoothing)
        self.boundary_id = int(boundary_id)
        smoothed = self.counts + self.smoothing  # (V, V) float64
        totals = smoothed.sum(axis=1, keepdims=True)  # (V, 1)
        with np.errstate(invalid="ignore", divide="ignore"):
            probabilities = smoothed / totals
        # A row never seen with smoothing 0 has no estimate: make it uniform, not NaN.
        self.probabilities = np.where(totals > 0, probabilities, 1.0 / vocabulary_size)

    @property
    def vocabulary_size(self) -> int:
        return self.counts.shape[0]

    @classmethod
    def fit(cls, encoded_words: Iterable[Sequence[int]], vocabulary_size: int,
            smoothing: float = 1.0, boundary_id: int = 0) -> BigramModel:
        """Count the pairs of ``encoded_words`` (id sequences without boundaries)."""
        previous, following = bigram_pairs(encoded_words, boundary_id)
        return cls.fit_pairs(previous, following, vocabulary_size, smoothing, boundary_id)

    @classmethod
    def fit_pairs(cls, previous: np.ndarray, following: np.ndarray, vocabulary_size: int,
                  smoothing: float = 1.0, boundary_id: int = 0) -> BigramModel:
        """Count aligned ``(previous, following)`` id arrays of any equal shape, such as
        ``stream[:-1], stream[1:]`` of a boundary-framed token stream."""
        vocabulary_size = validation.positive_integer(vocabulary_size, "vocabulary_size")
        previous, following = np.asarray(previous), np.asarray(following)
        if previous.shape != following.shape:
            raise ValueError(f"previous ids of shape {previous.shape} do not match following "
                             f"ids of shape {following.shape}")
        _check_ids(previous, following, int(vocabulary_size))
        counts = np.zeros((vocabulary_size, vocabulary_size), dtype=np.int64)
        np.add.at(counts, (previous.ravel(), following.ravel()), 1)
        return cls(counts, smoothing, boundary_id)

    @classmethod
    def from_words(cls, words: Iterable[str], tokenizer: CharTokenizer,
                   smoothing: float = 1.0) -> BigramModel:
        """Encode ``words`` with ``tokenizer`` and :meth:`fit` its vocabulary."""
        encoded = [tokenizer.encode(word) for word in validation.words(words)]
        return cls.fit(encoded, tokenizer.vocabulary_size, smoothing, tokenizer.boundary_id)

    def pair_negative_log_likelihood(self, previous: np.ndarray,
                                     following: np.ndarray) -> float:
        """Mean ``-log P[previous, following]`` over aligned id arrays of any equal shape
        (for example a model's ``(inputs, targets)`` windows)."""
        previous, following = np.asarray(previous), np.asarray(following)
        if previous.shape != following.shape:
            raise ValueError(f"previous ids of shape {previous.shape} do not match following "
                             f"ids of shape {following.shape}")
        if previous.size == 0:
            raise ValueError("cannot score an empty set of pairs")
        _check_ids(previous, following, self.vocabulary_size)
        with np.errstate(divide="ignore"):
            log_probabilities = np.log(self.probabilities[previous, following])
        return float(-log_probabilities.mean())

    def negative_log_likelihood(self, encoded_words: Iterable[Sequence[int]]) -> float:
        """Mean negative log-likelihood (nats per token) of every pair of ``encoded_words``."""
        previous, following = bigram_pairs(encoded_words, self.boundary_id)
        return self.pair_negative_log_likelihood(previous, following)

    def word_negative_log_likelihood(self, words: Iterable[str],
                                     tokenizer: CharTokenizer) -> float:
        """:meth:`negative_log_likelihood` of ``words`` encoded with ``tokenizer``."""
        return self.negative_log_likelihood([tokenizer.encode(w) for w in validation.words(words)])

    def sample(self, rng: Rng, count: int = 1, max_length: int = 50) -> list[list[int]]:
        """Draw ``count`` words (id lists without boundaries), all at once: every step draws
        the next id of each unfinished word from its row of ``probabilities``; a word ends
        at the boundary or after ``max_length`` ids."""
        if not isinstance(rng, Rng):
            raise TypeError(f"rng must be a tensorlib Rng, got {type(rng).__name__}")
        count = validation.integer(count, "count", minimum=0)
        max_length = validation.integer(max_length, "max_length", minimum=0)
        ids = np.zeros((count, max_length), dtype=np.int64)
        current = np.full(count, self.boundary_id, dtype=np.int64)
        lengths = np.full(count, max_length, dtype=np.int64)
        alive = np.ones(count, dtype=bool)
        for position in range(max_length):
            if not alive.any():
                break
            drawn = rng.sample_categorical(self.probabilities[current[alive]])  # (alive,)
            ended = drawn == self.boundary_id
            rows = np.flatnonzero(alive)
            lengths[rows[ended]] = position
            ids[rows, position] = drawn
            current[rows] = drawn
            alive[rows[ended]] = False
        return [ids[row, :lengths[row]].tolist() for row in range(count)]

    def __repr__(self) -> str:
        return (f"BigramModel(vocabulary_size={self.vocabulary_size}, "
                f"smoothing={self.smoothing}, pairs={int(self.counts.sum())})")


def _check_ids(previous: np.ndarray, following: np.ndarray, vocabulary_size: int) -> None:
    for array in (previous, following):
        if array.size and array.dtype.kind not in "iu":
            raise TypeError(f"ids must be integers, got dtype {array.dtype}")
        if array.size and (array.min() < 0 or array.max() >= vocabulary_size):
            bad = array[(array < 0) | (array >= vocabulary_size)][0]
            raise IndexError(f"id {int(bad)} is out of range for a vocabulary of size "
                             f"{vocabulary_size}")
