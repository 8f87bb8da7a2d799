"""The checks of notebook 15a (the tokenizer): its five pieces, ``get_stats``, ``merge``, the
naive ``train``, ``encode`` and ``decode``, and its three exercises, ``split_special``,
``bytes_to_unicode`` and ``bits_per_byte``.

The pieces work on ids, as the notebook writes them: the bytes are ids 0-255, ``merges`` maps
a pair of ids to the id it makes (in the order learned), ``vocab`` maps an id to its bytes.
Each is compared with the package's byte-level BPE (``tensorlib.data.BPETokenizer``, whose
trainer is the fast one) on small texts, hand-made ones first, then random corpora; what the
usual slips give (pairs two apart, overlapping matches merged twice, ties to the first pair
counted, merges across chunks, the most frequent pair merged first when encoding, each token
decoded alone) is computed by the same loop with that slip, so that a report names it.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable
from typing import Any

import regex

from tensorlib.course.checks.registry import HandOn, exercise_check, piece_check
from tensorlib.course.exercises import Checker
from tensorlib.course.worked_pieces import naive_bpe_train, pair_counts
from tensorlib.data.bpe import GPT2_PATTERN, BPETokenizer, _byte_characters, merge_pair

__all__ = ["check_get_stats", "check_merge", "check_train", "check_encode", "check_decode",
           "check_split_special", "check_bytes_to_unicode", "check_bits_per_byte",
           "package_train", "package_encode", "package_decode"]


# ----------------------------------------------- the package's pieces, in the notebook's form
def package_train(text: str, vocab_size: int, pattern: str | None
                  ) -> tuple[dict[tuple[int, int], int], dict[int, bytes]]:
    """``BPETokenizer.train`` (the fast trainer) as the notebook's ``train`` returns it:
    ``merges`` ({(id, id): new id}, in order) and ``vocab`` ({id: bytes})."""
    tokenizer = BPETokenizer.train(text, vocab_size, pattern=pattern)
    return merges_by_id(tokenizer), dict(tokenizer.vocab)


def merges_by_id(tokenizer: BPETokenizer) -> dict[tuple[int, int], int]:
    """A tokenizer's merges as the notebook writes them: {(id, id): new id}, in order."""
    ids = {token: i for i, token in tokenizer.vocab.items()}
    return {(ids[left], ids[right]): ids[left + right] for left, right in tokenizer.merges}


def _tokenizer(merges: dict[tuple[int, int], int], vocab: dict[int, bytes] | None,
               pattern: str | None) -> BPETokenizer:
    """The package's tokenizer for the notebook's ``merges`` (and ``vocab``, rebuilt from
    the merges when not given)."""
    if vocab is None:
        vocab = {i: bytes([i]) for i in range(256)}
        for (left, right), new in merges.items():
            vocab[new] = vocab[left] + vocab[right]
    return BPETokenizer(vocab, [(vocab[left], vocab[right]) for left, right in merges],
                        pattern=pattern)


def package_encode(text: str, merges: dict[tuple[int, int], int], pattern: str | None
                   ) -> list[int]:
    """``BPETokenizer.encode`` as the notebook's ``encode(text, merges, pattern)``."""
    return _tokenizer(merges, None, pattern).encode(text)


def package_decode(ids: list[int], vocab: dict[int, bytes]) -> str:
    """``BPETokenizer.decode`` as the notebook's ``decode(ids, vocab)``."""
    return BPETokenizer(vocab, [], pattern=None).decode(ids)


# --------------------------------------------------------------------------- the corpora
_CLASSIC = "aaabdaaabac"  # three merges: aa, aaa, aaab -> [258, 100, 258, 97, 99]


def _random_text(seed: int) -> str:
    """A small random corpus: words over a few letters (one of them not ASCII), spaces and
    punctuation, so that pairs repeat and ties happen."""
    rng = random.Random(seed)
    alphabet = rng.choice(["ab c", "abc  .", "xyé  ,", "tha e"])
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(120, 300)))


_PROSE = ("The tokenizer cuts text into tokens. The tokens are the model's words: a token "
          "is one id, and the ids are what the model reads. Tokens, tokens, tokens!\n"
          "Numbers such as 2026 and 3.14159, and naïve café text, are cut too.")


# ------------------------------------------------------------------------------ get_stats
def _stats_slipped(ids: list[int], slip: str) -> dict[tuple[int, int], int]:
    if slip == "two apart":
        return dict(Counter(zip(ids, ids[2:], strict=False)))
    if slip == "set to one":
        return dict.fromkeys(zip(ids, ids[1:], strict=False), 1)
    return pair_counts(ids)


@piece_check("get_stats", yours="get_stats", package_name="the workbook's")
def check_get_stats(checker: Checker, get_stats: Callable[..., Any]) -> HandOn:
    """``get_stats(ids, counts=None)``: the adjacent pairs of a list and how often each
    occurs, then the same added into a given dict."""
    hint = ("zip(ids, ids[1:]) gives each adjacent pair once; add 1 to counts.get(pair, 0) "
            "for each")

    def mistakes(ids: list[int]) -> dict[str, Any]:
        return {"pairs two apart: zip(ids, ids[1:]) pairs each id with the next one":
                lambda: _stats_slipped(ids, "two apart"),
                "each pair counted once: add 1 to what the pair already has":
                lambda: _stats_slipped(ids, "set to one")}

    for ids, what in (([1, 2, 3, 1, 2], "[1, 2, 3, 1, 2]"), ([97, 97, 97, 97], "'aaaa' as ids "
                      "(overlapping pairs are all counted)"), ([5], "one id: no pair"),
                      ([], "no ids")):
        with checker.case(f"the pairs of {what}", hint=hint):
            received = get_stats(list(ids))
            checker.true(isinstance(received, dict), f"get_stats returned a "
                         f"{type(received).__name__}, not a dict", "return counts")
            checker.equal(dict(received), pair_counts(ids), "counts", mistakes(ids))
    with checker.case("400 random ids below 6", hint=hint):
        ids = [random.Random(index).randrange(6) for index in range(400)]
        checker.equal(dict(get_stats(list(ids))), pair_counts(ids), "counts", mistakes(ids))
    with checker.case("counts given: the pairs of [7, 8, 7, 8] added into {(7, 8): 3, (1, 2): "
                      "1}, the same dict returned",
                      hint="counts = {} if counts is None else counts, then add into it"):
        given = {(7, 8): 3, (1, 2): 1}
        received = get_stats([7, 8, 7, 8], given)
        checker.equal(given, {(7, 8): 5, (1, 2): 1, (8, 7): 1}, "the given dict afterwards",
                      {"the given counts were left alone: add into `counts` when it is given":
                       {(7, 8): 3, (1, 2): 1}})
        checker.true(received is given, "get_stats did not return the dict it was given",
                     "return counts, the dict you added into")
    return HandOn(get_stats, pair_counts)


# ---------------------------------------------------------------------------------- merge
def _merge_slipped(ids: list[int], pair: tuple[int, int], new: int, slip: str) -> list[int]:
    out, i = [], 0
    while i < len(ids):
        if i + 1 < len(ids) and ids[i] == pair[0] and (slip == "first only"
                                                       or ids[i + 1] == pair[1]):
            out.append(new)
            i += 1 if slip == "overlap" else 2
        else:
            if not (slip == "last dropped" and i == len(ids) - 1):
                out.append(ids[i])
            i += 1
    return out


@piece_check("merge", yours="merge", package_name="tensorlib's")
def check_merge(checker: Checker, merge: Callable[..., Any]) -> HandOn:
    """``merge(ids, pair, new_id)``: a new list with every occurrence of the pair, left to
    right, replaced; the list given is left as it was."""
    hint = ("walk with an index i: where ids[i], ids[i + 1] is the pair, append new_id and "
            "step by 2, else append ids[i] and step by 1")

    def mistakes(ids: list[int], pair: tuple[int, int], new: int) -> dict[str, Any]:
        return {"a match merged again from its second id: after a match, step past both ids "
                "(i += 2)": lambda: _merge_slipped(ids, pair, new, "overlap"),
                "the last id is lost: an id without a right neighbour is kept as it is":
                lambda: _merge_slipped(ids, pair, new, "last dropped"),
                "only the pair's first id compared: a match needs ids[i + 1] == pair[1] too":
                lambda: _merge_slipped(ids, pair, new, "first only")}

    for ids, pair, new, what in (
            ([1, 2, 3, 1, 2], (1, 2), 99, "(1, 2) in [1, 2, 3, 1, 2]"),
            ([5, 6, 7], (6, 8), 99, "a pair that does not occur"),
            ([97, 97, 97], (97, 97), 256, "(97, 97) in 'aaa': left to right, the first two"),
            ([97, 97, 97, 97, 98], (97, 97), 256, "(97, 97) in 'aaaab'"),
            ([], (1, 2), 256, "no ids"), ([3], (3, 3), 256, "one id")):
        with checker.case(f"merge {what}", hint=hint):
            given = list(ids)
            received = merge(given, pair, new)
            checker.true(isinstance(received, list), f"merge returned a "
                         f"{type(received).__name__}, not a list", "return the new list")
            checker.equal(received, merge_pair(ids, pair, new), "ids",
                          mistakes(ids, pair, new))
            checker.equal(given, ids, "the list given, afterwards",
                          {"the given list was changed: build a new list": received})
    with checker.case("300 random ids below 4, the pair (1, 1)", hint=hint):
        ids = [random.Random(index).randrange(4) for index in range(300)]
        checker.equal(merge(list(ids), (1, 1), 300), merge_pair(ids, (1, 1), 300), "ids",
                      mistakes(ids, (1, 1), 300))
    return HandOn(merge, merge_pair)


# ---------------------------------------------------------------------------------- train
def _train_slipped(text: str, vocab_size: int, pattern: str | None, slip: str
                   ) -> dict[tuple[int, int], int]:
    """The merges the naive loop learns with one slip: "first" (ties to the pair counted
    first), "across" (the text not pre-split)."""
    if slip == "across":
        return naive_bpe_train(text, vocab_size, None)[0]
    chunks = regex.findall(pattern, text) if pattern is not None else [text]
    words = [list(chunk.encode("utf-8")) for chunk in chunks]
    merges: dict[tuple[int, int], int] = {}
    for new in range(256, vocab_size):
        counts: dict[tuple[int, int], int] = {}
        for ids in words:
            pair_counts(ids, counts)
        if not counts:
            break
        pair = max(counts, key=counts.__getitem__)
        words = [merge_pair(ids, pair, new) for ids in words]
        merges[pair] = new
    return merges


def _listed(merges: dict[tuple[int, int], int]) -> list[str]:
    """Merges as the report shows them: "(a, b) -> new id", in order."""
    return [f"{pair} -> {new}" for pair, new in merges.items()]


def _check_trained(checker: Checker, train: Callable[..., Any], text: str, vocab_size: int,
                   pattern: str | None, what: str) -> None:
    expected, vocab = naive_bpe_train(text, vocab_size, pattern)
    with checker.named_errors({"empty": "max() of no pairs: when counts is empty, no pair is "
                                        "left to merge, so stop (break)"}):
        received = train(text, vocab_size, pattern)
    checker.true(isinstance(received, tuple) and len(received) == 2,
                 f"train returned {type(received).__name__}, not the pair (merges, vocab)",
                 "return merges, vocab")
    merges, their_vocab = received
    mistakes = {"ties go to the first pair counted: the key of max must hold the count, then "
                "the two tokens' bytes": lambda: _train_slipped(text, vocab_size, pattern,
                                                                "first")}
    if pattern is not None:
        mistakes["pairs merged across chunks: count and merge within each chunk of "
                 "regex.findall(pattern, text)"] = lambda: _train_slipped(
                     text, vocab_size, pattern, "across")
    checker.equal(_listed(dict(merges)), _listed(expected), f"{what}: the merges, in order",
                  {name: (lambda found=found: _listed(found()))
                   for name, found in mistakes.items()})
    checker.equal(dict(their_vocab), vocab, f"{what}: the vocab",
                  {"the vocab lacks the new ids: vocab[new_id] = vocab[a] + vocab[b]":
                   {i: bytes([i]) for i in range(256)}})


@piece_check("train", yours="train", package_name="tensorlib's fast trainer")
def check_train(checker: Checker, train: Callable[..., Any]) -> HandOn:
    """``train(text, vocab_size, pattern)``: the merges and the vocab, against the naive loop
    of the notebook's text: the classic example, a tie, chunks, random corpora."""
    hint = ("for each new id: counts over every chunk's ids (get_stats), the pair with the "
            "largest (count, vocab[a], vocab[b]), merge it in every chunk, record it")
    with checker.case("the classic example: 'aaabdaaabac', 259, no pattern",
                      hint=hint):
        _check_trained(checker, train, _CLASSIC, 259, None, "'aaabdaaabac'")
    with checker.case("a tie: 'abcd', 257, no pattern: every pair occurs once, the greatest "
                      "bytes win, (b'c', b'd')", hint="max over (counts[p], vocab[p[0]], "
                      "vocab[p[1]]): the count first, then the bytes"):
        _check_trained(checker, train, "abcd", 257, None, "'abcd'")
    with checker.case("chunks: 'x. x. x.' with GPT-2's pattern, 258: no pair crosses a chunk",
                      hint="chunks = regex.findall(pattern, text); count and merge inside "
                           "each chunk's list of ids"):
        _check_trained(checker, train, "x. x. x.", 258, GPT2_PATTERN, "'x. x. x.'")
    with checker.case("'ab', 300: one pair, then nothing left to merge",
                      hint="stop when counts is empty"):
        _check_trained(checker, train, "ab", 300, None, "'ab'")
    with checker.case("3 random corpora and a paragraph, GPT-2's pattern, 30 merges",
                      hint=hint):
        for seed in (1, 2, 3):
            _check_trained(checker, train, _random_text(seed), 286, GPT2_PATTERN,
                           f"random corpus {seed}")
        _check_trained(checker, train, _PROSE, 286, GPT2_PATTERN, "the paragraph")
    return HandOn(train, package_train)


# --------------------------------------------------------------------------------- encode
def _encode_slipped(text: str, merges: dict[tuple[int, int], int], pattern: str | None,
                    slip: str) -> list[int]:
    """The ids with one slip: "frequent" (the chunk's most frequent pair taken, and the chunk
    left when that pair was never learned), "whole" (the text not pre-split), "unlearned
    first" (a pair never learned taken as learned first, which ends the chunk)."""
    chunks = regex.findall(pattern, text) if pattern is not None and slip != "whole" \
        else [text]
    out: list[int] = []
    for chunk in chunks:
        ids = list(chunk.encode("utf-8"))
        while len(ids) >= 2:
            counts = pair_counts(ids)
            if slip == "frequent":
                pair = max(counts, key=counts.__getitem__)
            else:
                default = 0 if slip == "unlearned first" else math.inf
                pair = min(counts, key=lambda p: merges.get(p, default))
            if pair not in merges:
                break
            ids = merge_pair(ids, pair, merges[pair])
        out += ids
    return out


@piece_check("encode", yours="encode", package_name="tensorlib's")
def check_encode(checker: Checker, encode: Callable[..., Any]) -> HandOn:
    """``encode(text, merges, pattern)``: the ids BPETokenizer.encode gives with the same
    merges, on the classic example, texts the merges were and were not learned from, empty
    text, and a round trip."""
    hint = ("per chunk: its bytes as ids, then repeatedly the adjacent pair with the smallest "
            "merges[pair] (the earliest learned), merged, until no pair of the chunk is in "
            "merges")
    classic, _ = naive_bpe_train(_CLASSIC, 259, None)
    learned, _ = package_train(_PROSE * 3, 356, GPT2_PATTERN)

    def mistakes(text: str, merges: dict[tuple[int, int], int], pattern: str | None
                 ) -> dict[str, Any]:
        found = {"the most frequent pair merged first: merge the pair learned first, the one "
                 "with the smallest id in merges": lambda: _encode_slipped(
                     text, merges, pattern, "frequent"),
                 "a pair never learned taken first, which stops the chunk: merges.get(p, "
                 "math.inf) puts those last": lambda: _encode_slipped(
                     text, merges, pattern, "unlearned first")}
        if pattern is not None:
            found["the text was not pre-split: encode each chunk of regex.findall(pattern, "
                  "text) and join their ids"] = lambda: _encode_slipped(text, merges, pattern,
                                                                        "whole")
        return found

    cases = [(_CLASSIC, classic, None, "'aaabdaaabac' with its three merges"),
             ("", learned, GPT2_PATTERN, "empty text"),
             (_PROSE, learned, GPT2_PATTERN, "the paragraph the merges were learned from"),
             ("Tokens cut numbers: 12345, and tokenizers cut text.", learned, GPT2_PATTERN,
              "a sentence never seen"),
             ("ééé naïve 東京 😀", learned, GPT2_PATTERN, "non-ASCII text")]
    for text, merges, pattern, what in cases:
        with checker.case(f"encode {what}", hint=hint):
            received = encode(text, dict(merges), pattern)
            checker.true(isinstance(received, list), f"encode returned a "
                         f"{type(received).__name__}, not a list of ids", "return ids")
            checker.equal(received, package_encode(text, merges, pattern), "ids",
                          mistakes(text, merges, pattern))
    with checker.case("chunks: 'x  y' with the merge (32, 32) gives [120, 32, 32, 121]: the "
                      "first space is a chunk of its own, the second goes with the word",
                      hint="cut the text with regex.findall(pattern, text) and merge inside "
                           "each chunk"):
        checker.equal(encode("x  y", {(32, 32): 256}, GPT2_PATTERN), [120, 32, 32, 121], "ids",
                      {"the text was not pre-split: encode each chunk of regex.findall("
                       "pattern, text) and join their ids": [120, 256, 121]})
    with checker.case("an order that matters: merges (b, c) then (a, b) on 'abc' give "
                      "[97, 256]", hint="the earliest learned pair first, not the first pair "
                      "of the text"):
        merges = {(98, 99): 256, (97, 98): 257}
        checker.equal(encode("abc", dict(merges), None), [97, 256], "ids",
                      {"the first pair of the text merged first: pick the pair with the "
                       "smallest merges[pair]": [257, 99]})
    return HandOn(encode, package_encode)


# --------------------------------------------------------------------------------- decode
@piece_check("decode", yours="decode", package_name="tensorlib's")
def check_decode(checker: Checker, decode: Callable[..., Any]) -> HandOn:
    """``decode(ids, vocab)``: the text of the tokens' bytes joined; bytes that are not
    UTF-8 (a character cut between tokens and one half missing) are U+FFFD, never an error."""
    hint = ("join the tokens' bytes first, b''.join(vocab[i] for i in ids), then "
            ".decode('utf-8', errors='replace')")
    merges, vocab = package_train("ééé éé naïve naïve", 262, GPT2_PATTERN)

    def each_alone(ids: list[int]) -> str:
        return "".join(vocab[i].decode("utf-8", errors="replace") for i in ids)

    texts = [("Hello, tokens", "ASCII text"), ("", "no ids"),
             ("ééé naïve é", "é, which is two bytes")]
    for text, what in texts:
        with checker.case(f"decode {what}", hint=hint):
            ids = package_encode(text, merges, GPT2_PATTERN)
            checker.equal(decode(ids, vocab), text, "text")
    with checker.case("a character whose two bytes are two tokens: [0xC3, 0xA9] is 'é'",
                      hint=hint):
        ids = [0xC3, 0xA9]
        checker.equal(decode(ids, vocab), "é", "text",
                      {"each token decoded alone: a character cut between two tokens needs "
                       "both, so join the bytes before decoding": each_alone(ids)})
    with checker.case("half a character, [0xC3] + 'a': the half becomes '\ufffd', no error",
                      hint="errors='replace' turns bytes that are not UTF-8 into U+FFFD"):
        with checker.named_errors({"can't decode": "bytes that are not UTF-8 raise: decode "
                                                   "with errors='replace'"}):
            received = decode([0xC3, 97], vocab)
        checker.equal(received, "\ufffda", "text",
                      {"the bytes that are not UTF-8 were dropped: errors='replace' keeps "
                       "a U+FFFD in their place": "a"})
    return HandOn(decode, package_decode)


# ----------------------------------------------------------------------------- exercise 1
_SPECIALS = ["<|endoftext|>", "<|endoftext|><|endoftext|>", "<|pad|>"]


def _split(text: str, specials: list[str], slip: str = "") -> list[str]:
    """``text`` cut at ``specials`` (each kept as one piece, the longest first), the empty
    pieces left out; ``slip``: "unsorted" (the given order), "empty" (empty pieces kept)."""
    ordered = specials if slip == "unsorted" else sorted(specials, key=len, reverse=True)
    pattern = "(" + "|".join(regex.escape(s) for s in ordered) + ")"
    pieces = regex.split(pattern, text)
    return pieces if slip == "empty" else [piece for piece in pieces if piece]


@exercise_check("Exercise 1 (split_special)", yours="split_special")
def check_split_special(checker: Checker, split_special: Callable[..., Any]) -> None:
    """``split_special(text, special_tokens)`` against the package's cut: texts with special
    tokens inside, back to back, overlapping, and none."""
    shell = BPETokenizer({b: bytes([b]) for b in range(256)}, [], _SPECIALS, None)
    texts = ["Hello<|endoftext|>world", "<|endoftext|><|pad|><|endoftext|>",
             "a<|endoftext|><|endoftext|>b<|endoftext|>", "no special token here", "",
             "<|pad|>|end|<|pad|"]
    for text in texts:
        with checker.case(f"{text!r} with {_SPECIALS}", hint="one regex: the tokens escaped "
                          "(regex.escape), longest first, joined by | in a capturing group; "
                          "regex.split keeps what the group matched; drop empty pieces"):
            expected = [piece for piece, _ in shell._pieces(text, "all")]
            checker.equal(list(split_special(text, list(_SPECIALS))), expected, "pieces", {
                "the shorter special token matched first: sort them longest first":
                    _split(text, _SPECIALS, "unsorted"),
                "empty pieces kept: leave out the empty strings regex.split gives":
                    _split(text, _SPECIALS, "empty")})


# ----------------------------------------------------------------------------- exercise 2
@exercise_check("Exercise 2 (bytes_to_unicode)", yours="bytes_to_unicode")
def check_bytes_to_unicode(checker: Checker, bytes_to_unicode: Callable[..., Any]) -> None:
    """``bytes_to_unicode()``: GPT-2's printable character for each of the 256 bytes."""
    expected = _byte_characters()
    hint = ("the printable bytes (33-126, 161-172, 174-255) keep their own character; the "
            "others, in byte order, get chr(256), chr(257), ...")
    with checker.case("256 bytes, 256 different characters", hint=hint):
        received = dict(bytes_to_unicode())
        checker.equal(sorted(received), list(range(256)), "the bytes it maps")
        checker.equal(len(set(received.values())), 256, "different characters")
    with checker.case("the printable bytes map to themselves: 'a', '!', '~', 'é'", hint=hint):
        received = dict(bytes_to_unicode())
        checker.equal([received[b] for b in b"a!~\xe9"], list("a!~é"), "characters")
    with checker.case("the others: space is 'Ġ' (U+0120), newline 'Ċ' (U+010A), byte 0 "
                      "chr(256), the soft hyphen 173 'Ń'", hint=hint):
        received = dict(bytes_to_unicode())
        checker.equal([received[b] for b in (32, 10, 0, 173)], ["Ġ", "Ċ", chr(256), "Ń"],
                      "characters", {"the count starts at 257: the first byte that is not "
                                     "printable gets chr(256 + 0)": ["ġ", "ċ", chr(257), "ń"]})
    with checker.case("every byte", hint=hint):
        checker.equal(dict(bytes_to_unicode()), expected, "the map")


# ----------------------------------------------------------------------------- exercise 3
@exercise_check("Exercise 3 (bits_per_byte)", yours="bits_per_byte")
def check_bits_per_byte(checker: Checker, bits_per_byte: Callable[..., Any]) -> None:
    """``bits_per_byte(total_nats, target_ids, vocab)``: nats over the predicted tokens in
    bits, per byte of text those tokens stand for."""
    vocab = {i: bytes([i]) for i in range(256)} | {256: b"the", 257: " é".encode()}
    hint = "bits = nats / ln 2; bytes = sum(len(vocab[i]) for i in target_ids)"
    for nats, ids in ((math.log(2) * 12, [104, 105, 33]), (7.5, [256, 257, 32]),
                      (3.0, [257, 257])):
        size = sum(len(vocab[i]) for i in ids)
        with checker.case(f"{nats:.3f} nats over {ids}", hint=hint):
            checker.close(float(bits_per_byte(nats, list(ids), vocab)),
                          nats / math.log(2) / size, "bits per byte", rtol=1e-9, mistakes={
                              "per token, not per byte: divide by the bytes the tokens stand "
                              "for": nats / math.log(2) / len(ids),
                              "nats, not bits: divide by ln 2": nats / size,
                              "per character, not per byte: é is two bytes": nats / math.log(2)
                              / len(b"".join(vocab[i] for i in ids).decode())})
