"""A character-level tokenizer with one boundary token, and the training arrays built with it.

As in Karpathy's makemore: ``CharTokenizer`` maps characters to ids (id 0 is the boundary
that starts and ends a word), ``context_target_pairs`` makes fixed-context examples for an
MLP language model, and ``sequence_targets`` makes (input, target) windows for a GPT-style
model that predicts the next character at every position.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Sequence

import numpy as np

from tensorlib.engine import validation

__all__ = ["CharTokenizer", "context_target_pairs", "sequence_targets", "stream_windows",
           "token_stream"]


class CharTokenizer:
    """Maps characters to integer ids and back.

    The vocabulary is the boundary token (id 0, ``"."`` by default, marking both the start
    and the end of a word) followed by the sorted distinct characters of
    ``alphabet_or_words``: either one string (its characters form the alphabet) or an
    iterable of words (the union of their characters). The boundary character may not
    appear in the alphabet or in any word.

    >>> tokenizer = CharTokenizer(["emma", "ava"])
    >>> tokenizer.characters
    ['.', 'a', 'e', 'm', 'v']
    >>> tokenizer.encode("ava.")
    [1, 4, 1, 0]
    >>> tokenizer.decode([2, 3, 3, 1])
    'emma'
    """

    def __init__(self, alphabet_or_words: str | Iterable[str], boundary: str = ".") -> None:
        if not isinstance(boundary, str) or len(boundary) != 1:
            raise ValueError(f"boundary must be a single character, got {boundary!r}")
        words = [alphabet_or_words] if isinstance(alphabet_or_words, str) else alphabet_or_words
        distinct: set[str] = set()
        for index, word in enumerate(words):
            if not isinstance(word, str):
                raise TypeError(
                    f"word {index} must be a str, got {word!r} of type {type(word).__name__}"
                )
            if boundary in word:
                raise ValueError(
                    f"word {index} ({word!r}) contains the boundary character {boundary!r}"
                )
            distinct.update(word)
        self._boundary = boundary
        self._characters = [boundary, *sorted(distinct)]
        self._ids = {character: index for index, character in enumerate(self._characters)}

    @property
    def boundary(self) -> str:
        """The boundary character (start and end of a word)."""
        return self._boundary

    @property
    def boundary_id(self) -> int:
        """The id of the boundary token: always 0."""
        return 0

    @property
    def vocabulary_size(self) -> int:
        """The number of tokens, boundary included."""
        return len(self._characters)

    @property
    def characters(self) -> list[str]:
        """Every token in id order (``characters[i]`` is the token with id ``i``); a copy."""
        return list(self._characters)

    def encode(self, text: str) -> list[int]:
        """The ids of the characters of ``text`` (the boundary character maps to 0).

        Raises ValueError naming the first character not in the vocabulary and its position.
        """
        if not isinstance(text, str):
            raise TypeError(f"encode expects a str, got {type(text).__name__}")
        ids = self._ids
        try:
            return [ids[character] for character in text]
        except KeyError:
            position = next(i for i, character in enumerate(text) if character not in ids)
            raise ValueError(
                f"character {text[position]!r} at position {position} of {text!r} "
                f"is not in the vocabulary"
            ) from None

    def decode(self, ids: Sequence[int] | np.ndarray) -> str:
        """The string of the tokens ``ids`` (a list of ints or a 1-D integer numpy array).

        Raises IndexError naming an id outside ``[0, vocabulary_size)`` (negative ids are
        not wrapped around), and TypeError for non-integer ids.
        """
        if isinstance(ids, np.ndarray):
            if ids.ndim != 1:
                raise ValueError(f"decode expects a 1-D array of ids, got shape {ids.shape}")
            if ids.size and ids.dtype.kind not in "iu":
                raise TypeError(f"decode expects integer ids, got dtype {ids.dtype}")
            ids = ids.tolist()
        characters = self._characters
        pieces = []
        for token in ids:
            if isinstance(token, (bool, np.bool_)) or not isinstance(token, numbers.Integral):
                raise TypeError(f"decode expects integer ids, got {token!r}")
            if not 0 <= int(token) < len(characters):
                raise IndexError(
                    f"id {int(token)} is out of range for a vocabulary of size {len(characters)}"
                )
            pieces.append(characters[token])
        return "".join(pieces)

    def __len__(self) -> int:
        return len(self._characters)

    def __repr__(self) -> str:
        alphabet = "".join(self._characters[1:])
        return (
            f"CharTokenizer(vocabulary_size={self.vocabulary_size}, "
            f"boundary={self._boundary!r}, characters={alphabet!r})"
        )


def _check_tokenizer(tokenizer: CharTokenizer) -> None:
    if not isinstance(tokenizer, CharTokenizer):
        raise TypeError(f"tokenizer must be a CharTokenizer, got {type(tokenizer).__name__}")


def context_target_pairs(
    words: Iterable[str], tokenizer: CharTokenizer, context_length: int
) -> tuple[np.ndarray, np.ndarray]:
    """Every (context, next character) example of ``words``, makemore style.

    Each word is framed as ``context_length`` boundary ids, the word's ids, and one closing
    boundary id; a window of ``context_length + 1`` ids slides over it one step at a time,
    its first ``context_length`` ids being the context and the last the target. A word of
    length L gives L + 1 examples, in order, words in order.

    Returns ``(contexts, targets)``: int64 arrays of shapes (N, context_length) and (N,).

    >>> tokenizer = CharTokenizer("ab")
    >>> contexts, targets = context_target_pairs(["ab"], tokenizer, 2)
    >>> contexts.tolist(), targets.tolist()
    ([[0, 0], [0, 1], [1, 2]], [1, 2, 0])
    """
    words = validation.words(words)
    _check_tokenizer(tokenizer)
    context_length = validation.positive_integer(context_length, "context_length")
    boundary = [tokenizer.boundary_id]
    stream: list[int] = []
    firsts: list[int] = []  # per word: where its first window starts in the stream
    counts: list[int] = []  # per word: how many windows it gives (its length + 1)
    for word in words:
        ids = tokenizer.encode(word)
        firsts.append(len(stream))
        counts.append(len(ids) + 1)
        stream += boundary * context_length + ids + boundary
    if not words:
        return np.zeros((0, context_length), np.int64), np.zeros(0, np.int64)
    stream_array = np.asarray(stream, dtype=np.int64)
    count_array = np.asarray(counts, dtype=np.int64)
    # Start of every window: its word's first start, plus 0, 1, ..., count - 1.
    word_offsets = np.cumsum(count_array) - count_array
    within_word = np.arange(count_array.sum()) - np.repeat(word_offsets, count_array)
    starts = np.repeat(np.asarray(firsts, dtype=np.int64), count_array) + within_word
    windows = np.lib.stride_tricks.sliding_window_view(stream_array, context_length + 1)
    windows = windows[starts]  # (N, context_length + 1), a copy
    return np.ascontiguousarray(windows[:, :-1]), windows[:, -1].copy()


def sequence_targets(
    words: Iterable[str],
    tokenizer: CharTokenizer,
    block_size: int,
    stride: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Next-character (input, target) windows over one stream of all words, GPT style.

    The stream is the boundary id, then every word's ids each followed by one boundary id
    (``.emma.olivia.ava.``), so each word is framed by boundaries and neighbouring words
    share the boundary between them. Windows of ``block_size + 1`` ids start at 0, stride,
    2 * stride, ... (``stride`` defaults to ``block_size``; a shorter stride overlaps
    windows); a final partial window is dropped. For each window, ``inputs = window[:-1]``
    and ``targets = window[1:]``: every position has a real target, so no ignore index is
    needed, and contexts may run across word boundaries (the boundary token tells the
    model that a new word starts).

    Returns ``(inputs, targets)``: int64 arrays, both (N, block_size). Raises ValueError
    when the stream is shorter than ``block_size + 1``.
    """
    words = validation.words(words)
    block_size = validation.positive_integer(block_size, "block_size")
    stride = block_size if stride is None else validation.positive_integer(stride, "stride")
    stream = token_stream(words, tokenizer)
    if len(stream) < block_size + 1:
        raise ValueError(
            f"the token stream of {len(words)} words has {len(stream)} ids, fewer than "
            f"block_size + 1 = {block_size + 1}"
        )
    return stream_windows(stream, block_size, stride)


def token_stream(words: Iterable[str], tokenizer: CharTokenizer) -> np.ndarray:
    """``.word.word.`` as int64 ids: the boundary id, then every word's ids each followed by
    one boundary id."""
    _check_tokenizer(tokenizer)
    stream = [tokenizer.boundary_id]
    for word in validation.words(words):
        stream += tokenizer.encode(word)
        stream.append(tokenizer.boundary_id)
    return np.asarray(stream, dtype=np.int64)


def stream_windows(stream: np.ndarray, block_size: int,
                   stride: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Windows of ``block_size + 1`` ids of ``stream`` starting at 0, stride, 2·stride, ...
    (``stride`` defaults to ``block_size``; a final partial window is dropped): inputs
    ``window[:-1]`` and next-token targets ``window[1:]``, both ``(N, block_size)``."""
    windows = np.lib.stride_tricks.sliding_window_view(stream, block_size + 1)
    windows = windows[::block_size if stride is None else stride]  # (N, block_size + 1)
    return np.ascontiguousarray(windows[:, :-1]), np.ascontiguousarray(windows[:, 1:])
