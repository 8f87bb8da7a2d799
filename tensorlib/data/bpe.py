"""Byte-level byte-pair encoding, as GPT-2 and GPT-4 tokenize text.

Text is first cut at special tokens (``<|endoftext|>``, kept whole) and then pre-split by a
regular expression into chunks (words with their leading space, runs of digits, punctuation,
whitespace); each chunk's UTF-8 bytes start as one token per byte, and merges, learned in
order, fuse adjacent tokens. Pairs are never merged across chunks or special tokens.

Ids: the 256 bytes are ids 0-255, the merges follow in the order learned (merge ``k`` makes
id ``256 + k``), and the special tokens come last, in the order given (GPT-2's
``<|endoftext|>`` is its last id too). A tokenizer read from GPT-2's files keeps GPT-2's ids.

Training counts each distinct chunk once, with the number of times it occurs, and after each
merge updates only the pair counts that merge changed (the words that hold the merged pair):
the result is the naive loop's (count every pair, merge the most frequent, repeat), merge for
merge. Ties between equally frequent pairs go to the lexicographically greatest pair of byte
strings, the rule of the widely used reference trainers.
"""

from __future__ import annotations

import heapq
import json
import os
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Iterator
from functools import lru_cache
from itertools import pairwise
from typing import Any

import regex

from tensorlib.engine.files import write_atomic

__all__ = ["GPT2_PATTERN", "GPT4_PATTERN", "BPETokenizer", "learn_merges", "merge_pair"]

# The pre-split patterns of GPT-2 and of GPT-4's cl100k_base (public in both projects' code).
GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
GPT4_PATTERN = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}|"""
                r""" ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+""")
PATTERNS = {"gpt2": GPT2_PATTERN, "gpt4": GPT4_PATTERN}
FORMAT = "tensorlib-bpe"  # the marker of a file BPETokenizer.save wrote
LOOKAHEAD = 4  # a chunk's end can depend on this many characters after it (``'ll``)


class BPETokenizer:
    """A byte-level BPE tokenizer: ``vocab`` (id -> bytes), ``merges`` (the ordered list of
    ``(bytes, bytes)`` pairs), ``special_tokens`` (name -> id) and ``pattern`` (the pre-split
    regex, or None). Build one with :meth:`train`, :meth:`load` or :meth:`from_files`, or
    from a vocabulary and its merges: every merge's two parts and their concatenation must
    be in ``vocab``, and so must every single byte."""

    def __init__(self, vocab: dict[int, bytes], merges: list[tuple[bytes, bytes]],
                 special_tokens: dict[str, int] | Collection[str] | None = None,
                 pattern: str | None = "gpt2"):
        self.vocab = {int(i): bytes(b) for i, b in vocab.items()}
        self.merges = [(bytes(a), bytes(b)) for a, b in merges]
        self.pattern = PATTERNS.get(pattern, pattern) if pattern is not None else None
        if self.pattern is not None and not isinstance(self.pattern, str):
            raise TypeError(f"pattern must be 'gpt2', 'gpt4', a regex string or None, "
                            f"got {pattern!r}")
        self._split = regex.compile(self.pattern) if self.pattern is not None else None
        ids = {token: i for i, token in self.vocab.items()}
        missing = [bytes([b]) for b in range(256) if bytes([b]) not in ids]
        if missing:
            raise ValueError(f"vocab lacks {len(missing)} of the 256 single bytes, "
                             f"first {missing[0]!r}")
        self._byte_ids = [ids[bytes([b])] for b in range(256)]
        self._ranks: dict[tuple[int, int], tuple[int, int]] = {}  # pair -> (rank, merged id)
        for rank, (left, right) in enumerate(self.merges):
            for part in (left, right, left + right):
                if part not in ids:
                    raise ValueError(f"merge {rank} ({left!r}, {right!r}): {part!r} is not in "
                                     "the vocab")
            self._ranks[(ids[left], ids[right])] = (rank, ids[left + right])
        self.special_tokens = _special_ids(special_tokens, ids, len(self.vocab))
        for name, i in self.special_tokens.items():
            self.vocab.setdefault(i, name.encode("utf-8"))
        self._special_split = _special_regex(self.special_tokens)
        self._encode_chunk = lru_cache(maxsize=65536)(self._merge_chunk)

    def __repr__(self) -> str:
        return (f"BPETokenizer(vocab_size={self.vocab_size}, merges={len(self.merges)}, "
                f"special_tokens={list(self.special_tokens)})")

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    # ----------------------------------------------------------------------------- training
    @classmethod
    def train(cls, text: str, vocab_size: int, *, special_tokens: Collection[str] = (),
              pattern: str | None = "gpt2") -> BPETokenizer:
        """Learn ``vocab_size - 256 - len(special_tokens)`` merges from ``text`` (fewer when
        no pair is left to merge) and return the tokenizer. The special tokens are cut out of
        the text before counting and take the last ids."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        special_tokens = list(special_tokens)
        if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) \
                or vocab_size < 256 + len(special_tokens):
            raise ValueError(f"vocab_size must be an int of at least 256 + "
                             f"{len(special_tokens)} (the bytes and the special tokens), "
                             f"got {vocab_size!r}")
        shell = cls({b: bytes([b]) for b in range(256)}, [], special_tokens, pattern)
        chunks: Counter[bytes] = Counter()
        for piece, is_special in shell._pieces(text, "all"):
            if not is_special:
                chunks.update(chunk.encode("utf-8") for chunk in shell._chunks(piece))
        merges = learn_merges(chunks, vocab_size - 256 - len(special_tokens))
        vocab = {b: bytes([b]) for b in range(256)}
        for rank, (left, right) in enumerate(merges):
            vocab[256 + rank] = left + right
        return cls(vocab, merges, {name: len(vocab) + k
                                   for k, name in enumerate(special_tokens)}, pattern)

    # ----------------------------------------------------------------------------- encoding
    def encode(self, text: str, allowed_special: str | Collection[str] = "all") -> list[int]:
        """The ids of ``text``. ``allowed_special``: ``"all"`` (every special token in the
        text is one id), ``"none"`` (special tokens are encoded as plain text), or the names
        to treat as special."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        ids: list[int] = []
        for piece, is_special in self._pieces(text, allowed_special):
            if is_special:
                ids.append(self.special_tokens[piece])
            else:
                for chunk in self._chunks(piece):
                    ids.extend(self._encode_chunk(chunk))
        return ids

    def encode_iterable(self, texts: Iterable[str],
                        allowed_special: str | Collection[str] = "all") -> Iterator[int]:
        """The ids of the concatenation of ``texts`` (the lines of a file, say), as
        :meth:`encode` gives them, yielded as the text arrives: only the part of the text
        whose tokens may still depend on what follows is held back."""
        held = ""
        hold = LOOKAHEAD + max((len(name) for name in self.special_tokens), default=0)
        for text in texts:
            if not isinstance(text, str):
                raise TypeError(f"encode_iterable takes strs, got {type(text).__name__}")
            held += text
            if len(held) <= 2 * hold:
                continue
            settled = self._settled_prefix(held, hold, allowed_special)
            if settled:
                yield from self.encode(held[:settled], allowed_special)
                held = held[settled:]
        yield from self.encode(held, allowed_special)

    def decode(self, ids: Iterable[int]) -> str:
        """The text of ``ids``; bytes that are not valid UTF-8 (a token cut inside a
        character) become U+FFFD, never an error. An unknown id is a ValueError."""
        parts = []
        for i in ids:
            token = self.vocab.get(i) if isinstance(i, int) and not isinstance(i, bool) \
                else None
            if token is None:
                raise ValueError(f"decode: {i!r} is not an id of this tokenizer "
                                 f"(0 to {self.vocab_size - 1})")
            parts.append(token)
        return b"".join(parts).decode("utf-8", errors="replace")

    def _pieces(self, text: str, allowed_special: str | Collection[str]
                ) -> Iterator[tuple[str, bool]]:
        """``text`` cut at the allowed special tokens: ``(piece, is_special)`` in order."""
        allowed = _allowed(allowed_special, self.special_tokens)
        if not allowed:
            yield text, False
            return
        position = 0
        for match in self._special_split.finditer(text):
            if match.group() not in allowed:
                continue
            if match.start() > position:
                yield text[position:match.start()], False
            yield match.group(), True
            position = match.end()
        if position < len(text):
            yield text[position:], False

    def _chunks(self, text: str) -> list[str]:
        return self._split.findall(text) if self._split is not None else [text] if text else []

    def _merge_chunk(self, chunk: str) -> tuple[int, ...]:
        """One chunk's ids: its bytes, then, repeatedly, every occurrence of the adjacent
        pair whose merge was learned first merged, until no learned pair is left."""
        ids = [self._byte_ids[b] for b in chunk.encode("utf-8")]
        ranks = self._ranks
        while len(ids) > 1:
            learned = [pair for pair in pairwise(ids) if pair in ranks]
            if not learned:
                break
            pair = min(learned, key=ranks.__getitem__)  # (rank, id): the earliest merge
            ids = merge_pair(ids, pair, ranks[pair][1])
        return tuple(ids)

    def _settled_prefix(self, text: str, hold: int,
                        allowed_special: str | Collection[str]) -> int:
        """How much of ``text`` encodes the same whatever follows: up to the start of the
        last chunk that ends within ``hold`` characters of the end (0 when none)."""
        limit = len(text) - hold
        settled = 0
        position = 0
        for piece, is_special in self._pieces(text, allowed_special):
            end = position + len(piece)
            if is_special:
                if end > limit:
                    break
                settled = end
            else:
                for chunk in self._chunks(piece):
                    if position + len(chunk) > limit:
                        return settled
                    position += len(chunk)
                    settled = position
            position = end
        return settled

    # ------------------------------------------------------------------------------- files
    def save(self, path: str | os.PathLike) -> None:
        """Write the tokenizer to ``path`` as one readable JSON file (whole or not at all):
        its pattern, its special tokens and its merges, each merge written as GPT-2's
        merges.txt writes it (bytes as printable characters, ``Ġ`` for a space). The
        vocabulary follows from the merges, so the tokenizer must have the ids :meth:`train`
        gives (ValueError otherwise: keep GPT-2's own files as they are)."""
        in_order = all(i == b for b, i in enumerate(self._byte_ids)) and all(
            merged == 256 + rank for rank, merged in self._ranks.values())
        if not in_order:
            raise ValueError("save writes tokenizers whose ids are the 256 bytes, then the "
                             "merges in order (as train and load make them)")
        document = {"format": FORMAT, "version": 1, "pattern": self.pattern,
                    "special_tokens": self.special_tokens,
                    "merges": [f"{_printable(a)} {_printable(b)}" for a, b in self.merges]}
        write_atomic(path, [json.dumps(document, ensure_ascii=False, indent=1).encode()])

    @classmethod
    def load(cls, path: str | os.PathLike) -> BPETokenizer:
        """The tokenizer :meth:`save` wrote to ``path``; ValueError naming what is wrong."""
        with open(path, encoding="utf-8") as handle:
            try:
                document = json.load(handle)
            except json.JSONDecodeError as error:
                raise ValueError(f"{os.fspath(path)} is not a saved BPETokenizer: {error}") \
                    from None
        if not isinstance(document, dict) or document.get("format") != FORMAT \
                or document.get("version") != 1:
            raise ValueError(f"{os.fspath(path)} is not a saved BPETokenizer (version 1 of "
                             f"the format {FORMAT!r})")
        merges = [_merge_line(line, number, path)
                  for number, line in enumerate(document.get("merges", []))]
        vocab = {b: bytes([b]) for b in range(256)}
        for rank, (left, right) in enumerate(merges):
            vocab[256 + rank] = left + right
        return cls(vocab, merges, document.get("special_tokens") or {},
                   document.get("pattern"))

    @classmethod
    def from_files(cls, vocab_json: str | os.PathLike, merges_txt: str | os.PathLike,
                   special_tokens: Collection[str] | None = None) -> BPETokenizer:
        """GPT-2's file pair (``encoder.json``/``vocab.json`` and ``merges.txt``/
        ``vocab.bpe``), with GPT-2's ids and pattern; ``special_tokens`` are looked up in the
        vocabulary (added after its last id when absent)."""
        with open(vocab_json, encoding="utf-8") as handle:
            encoder = json.load(handle)
        vocab = {int(i): _bytes_of(token, vocab_json) for token, i in encoder.items()}
        with open(merges_txt, encoding="utf-8") as handle:
            lines = [line.rstrip("\n") for line in handle]
        lines = [line for line in lines if line and not line.startswith("#version")]
        merges = [_merge_line(line, number, merges_txt) for number, line in enumerate(lines)]
        names = list(special_tokens or [])
        return cls(vocab, merges, names, "gpt2")


# ------------------------------------------------------------------------------- training
def learn_merges(chunks: Counter[bytes], count: int) -> list[tuple[bytes, bytes]]:
    """``count`` merges (fewer when no pair is left) from ``chunks``, each distinct chunk's
    bytes with the number of times it occurs: the naive loop's merges. Each merge rewrites
    only the words that hold the merged pair (``where`` lists them; a word that lost the
    pair since is skipped) and pushes the pairs whose counts changed onto the heap; an entry
    whose count is no longer the pair's is skipped when it comes up."""
    words = [list(chunk) for chunk in chunks]  # token ids; the bytes are ids 0-255
    frequency = list(chunks.values())
    tokens: list[bytes] = [bytes([b]) for b in range(256)]
    counts: defaultdict[tuple[int, int], int] = defaultdict(int)
    where: defaultdict[tuple[int, int], set[int]] = defaultdict(set)
    for w, word in enumerate(words):
        for pair in pairwise(word):
            counts[pair] += frequency[w]
            where[pair].add(w)
    heap = [_Candidate(n, tokens[a], tokens[b], (a, b)) for (a, b), n in counts.items()]
    heapq.heapify(heap)
    merges: list[tuple[bytes, bytes]] = []
    while len(merges) < count and heap:
        best = heapq.heappop(heap)
        if counts.get(best.pair, 0) != best.count or best.count <= 0:
            continue  # a stale entry: the pair's count changed since it was pushed
        new = len(tokens)
        tokens.append(best.left + best.right)
        merges.append((best.left, best.right))
        delta: defaultdict[tuple[int, int], int] = defaultdict(int)
        for w in where.pop(best.pair, ()):
            old = words[w]
            merged = merge_pair(old, best.pair, new)
            if len(merged) == len(old):
                continue  # the pair left this word with an earlier merge
            for pair in pairwise(old):
                delta[pair] -= frequency[w]
            for pair in pairwise(merged):
                delta[pair] += frequency[w]
                if new in pair:  # every pair a merge creates holds the new token
                    where[pair].add(w)
            words[w] = merged
        for pair, change in delta.items():
            if change == 0:
                continue
            counts[pair] += change
            if counts[pair] > 0:
                heapq.heappush(heap, _Candidate(counts[pair], tokens[pair[0]],
                                                tokens[pair[1]], pair))
            else:
                del counts[pair]
    return merges


class _Candidate:
    """A heap entry: the pair with the highest count first, ties to the greatest bytes."""

    __slots__ = ("count", "left", "right", "pair")

    def __init__(self, count: int, left: bytes, right: bytes, pair: tuple[int, int]):
        self.count, self.left, self.right, self.pair = count, left, right, pair

    def __lt__(self, other: _Candidate) -> bool:
        if self.count != other.count:
            return self.count > other.count
        return (self.left, self.right) > (other.left, other.right)


def merge_pair(ids: list[int], pair: tuple[int, int], new: int) -> list[int]:
    """A new list: ``ids`` with every occurrence of ``pair``, scanned left to right, replaced
    by ``new`` (in ``[a, a, a]`` the pair ``(a, a)`` is replaced once, at the start)."""
    out, i, first, second = [], 0, pair[0], pair[1]
    while i < len(ids):
        if i + 1 < len(ids) and ids[i] == first and ids[i + 1] == second:
            out.append(new)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


# ------------------------------------------------------------------------ special tokens
def _special_ids(special_tokens: Any, ids: dict[bytes, int], size: int) -> dict[str, int]:
    if special_tokens is None:
        return {}
    if isinstance(special_tokens, dict):
        named = {str(name): int(i) for name, i in special_tokens.items()}
    else:
        named, next_id = {}, max(size, max(ids.values(), default=-1) + 1)
        for name in special_tokens:
            if not isinstance(name, str) or not name:
                raise TypeError(f"a special token must be a non-empty str, got {name!r}")
            if name.encode("utf-8") in ids:
                named[name] = ids[name.encode("utf-8")]
            else:
                named[name], next_id = next_id, next_id + 1
    return named


def _special_regex(special_tokens: dict[str, int]) -> Any:
    """Alternatives longest first, so overlapping special tokens pick the longest."""
    if not special_tokens:
        return None
    names = sorted(special_tokens, key=len, reverse=True)
    return regex.compile("|".join(regex.escape(name) for name in names))


def _allowed(allowed_special: Any, special_tokens: dict[str, int]) -> set[str]:
    if allowed_special == "all":
        return set(special_tokens)
    if allowed_special == "none":
        return set()
    if isinstance(allowed_special, str) or not isinstance(allowed_special, Collection):
        raise ValueError(f"allowed_special must be 'all', 'none' or a collection of special "
                         f"tokens, got {allowed_special!r}")
    unknown = sorted(set(allowed_special) - set(special_tokens))
    if unknown:
        raise ValueError(f"allowed_special names {unknown}, which are not special tokens of "
                         f"this tokenizer ({sorted(special_tokens)})")
    return set(allowed_special)


# ---------------------------------------------- GPT-2's printable form of bytes, in files
def _byte_characters() -> dict[int, str]:
    """GPT-2's map of the 256 bytes to printable characters: the printable Latin-1 bytes
    stand for themselves, the others (space, control bytes) for the characters from U+0100
    on, in byte order (so a space is ``Ġ``, U+0120)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
                 *range(ord("®"), ord("ÿ") + 1)]
    characters, extra = {}, 0
    for b in range(256):
        if b in printable:
            characters[b] = chr(b)
        else:
            characters[b] = chr(256 + extra)
            extra += 1
    return characters


_CHARACTER_OF_BYTE = _byte_characters()
_BYTE_OF_CHARACTER = {c: b for b, c in _CHARACTER_OF_BYTE.items()}


def _printable(token: bytes) -> str:
    return "".join(_CHARACTER_OF_BYTE[b] for b in token)


def _bytes_of(text: str, source: Any) -> bytes:
    try:
        return bytes(_BYTE_OF_CHARACTER[c] for c in text)
    except KeyError as error:
        raise ValueError(f"{os.fspath(source)}: token {text!r} holds {error.args[0]!r}, which "
                         "is not one of GPT-2's byte characters") from None


def _merge_line(line: Any, number: int, source: Any) -> tuple[bytes, bytes]:
    parts = line.split(" ") if isinstance(line, str) else []
    if len(parts) != 2 or not all(parts):
        raise ValueError(f"{os.fspath(source)}: merge {number} is {line!r}, not two tokens "
                         "separated by one space")
    return _bytes_of(parts[0], source), _bytes_of(parts[1], source)
