"""The checks of notebook 12 (names, from counts to an MLP): ``encode`` and ``decode``,
``count_bigrams``, ``bigram_probabilities``, ``negative_log_likelihood``, ``sample_name`` and
the exercises (``smoothed_probabilities``, ``pair_loss``, ``best_smoothings``,
``saturated_fraction``).

Each check compares the learner's piece with tensorlib's ``CharTokenizer`` and
``BigramModel`` on small cases chosen to expose the usual slips (an empty name, a row with no
counts, names of different lengths, a table with one path), a table's shape before its values,
and names the slip whose result the learner's code gave: the boundaries left out, rows and
columns swapped, a mean of means, a column of P drawn from, one draw too many...
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

import tensorlib as tl
import tensorlib.nn.functional as F
from tensorlib.course.checks.differences import likely_mistake, named_mistake
from tensorlib.course.checks.registry import HandOn, exercise_check, piece_check
from tensorlib.course.exercises import Checker
from tensorlib.data import CharTokenizer, context_target_pairs
from tensorlib.engine.splitmix64 import Rng
from tensorlib.models.bigram_counts import BigramModel

__all__ = ["check_encode_decode", "check_count_bigrams", "check_bigram_probabilities",
           "check_negative_log_likelihood", "check_sample_name", "check_smoothed_probabilities",
           "check_pair_loss", "check_best_smoothings", "check_saturated_fraction"]


# ------------------------------------------------------------------------------ tokenizer
class Tokenizer(NamedTuple):
    """The learner's ``encode`` and ``decode`` handed on together, used as a tokenizer is."""
    encode: Callable[[str], list[int]]
    decode: Callable[[Any], str]


def _error_raised(function: Callable[[Any], Any], argument: Any) -> str | None:
    """The name of the error ``function(argument)`` raises, or None (a stub's
    NotImplementedError goes through)."""
    try:
        function(argument)
    except NotImplementedError:
        raise
    except Exception as error:
        return type(error).__name__
    return None


@piece_check("encode and decode", yours=("encode", "decode"), reads=("stoi", "itos"),
             package_name="tensorlib's CharTokenizer")
def check_encode_decode(checker: Checker, encode: Any, decode: Any, words: Sequence[str]
                        ) -> HandOn:
    """``encode`` and ``decode`` against ``CharTokenizer(words)``: the vocabulary, round trips
    of 103 names, the empty string, and the errors for a character or an id without a place."""
    package = CharTokenizer(words)
    with checker.case("the vocabulary: '.' is 0, then 'a' to 'z' are 1 to 26",
                      hint="encode looks each character up in stoi, decode each id up in itos"):
        received = encode(".az")
        checker.true(isinstance(received, list), "encode must return a list, received "
                     f"{type(received).__name__}", f"encode returns a {type(received).__name__}"
                     ": return a list of ids, [stoi[ch] for ch in text]")
        checker.equal(received, package.encode(".az"), 'encode(".az")',
                      {"the boundary '.' is left out: encode every character of the text, "
                       "'.' included (its id is 0)": [1, 26]})
        letters = package.characters
        checker.equal(decode(range(27)), package.decode(range(27)), "decode(range(27))",
                      {"decode returns the characters as a list: join them into one string, "
                       "''.join(...)": letters})
    with checker.case("round trips of 103 names, some framed by boundaries",
                      hint="decode(encode(text)) must give text back"):
        for text in ["smith", "nguyen", ".mcdonald.", *words[::len(words) // 100][:100]]:
            checker.equal(encode(text), package.encode(text), f"encode({text!r})")
            checker.equal(decode(encode(text)), text, f"decode(encode({text!r}))")
        checker.equal(decode(np.array([7, 1, 18])), "gar", "decode(np.array([7, 1, 18]))")
    with checker.case("the empty string and no ids", hint="no characters, no ids: '' <-> []"):
        checker.equal(encode(""), [], 'encode("")')
        checker.equal(decode([]), "", "decode([])")
    with checker.case("characters that have no id", hint="check that each character is in stoi "
                      "and raise ValueError(...) for the first one that is not"):
        for text in ["o'brien", "Smith", "van der berg"]:
            checker.equal(_error_raised(encode, text), _error_raised(package.encode, text),
                          f"the error encode({text!r}) raises",
                          {"stoi[ch] raises KeyError for a character it lacks: test `ch not in "
                           "stoi` first and raise ValueError(...)": "KeyError",
                           "no error: a character that is not in stoi must raise ValueError, "
                           "not be skipped": None})
    with checker.case("ids outside 0 ... 26", hint="raise IndexError(...) for an id that itos "
                      "does not hold (a list would wrap -1 round to 'z': refuse it)"):
        for ids in [[27], [3, -1], [1, 100, 2]]:
            checker.equal(_error_raised(decode, ids), _error_raised(package.decode, ids),
                          f"the error decode({ids}) raises",
                          {"itos[i] raises KeyError for an id it lacks: test the id first and "
                           "raise IndexError(...)": "KeyError",
                           "no error for this id: an id outside 0 ... 26 (a negative one too, "
                           "which a list wraps round) must raise IndexError": None})
    return HandOn(Tokenizer(encode, decode), package)


# --------------------------------------------------------------------------------- counts
def _pair_counts(words: Sequence[str], tokenizer: CharTokenizer, start: bool = True,
                 end: bool = True) -> np.ndarray:
    """The (V, V) table of the names' pairs, each framed by a boundary at the start and at
    the end (or without either: what a slip counts)."""
    size = tokenizer.vocabulary_size
    counts = np.zeros((size, size), dtype=np.int64)
    for word in words:
        ids = tokenizer.encode(("." if start else "") + word + ("." if end else ""))
        np.add.at(counts, (ids[:-1], ids[1:]), 1)
    return counts


def _counts_mistakes(words: Sequence[str], tokenizer: CharTokenizer) -> dict[str, Any]:
    return {
        "no boundaries: frame each name as '.' + name + '.' before reading its pairs":
            lambda: _pair_counts(words, tokenizer, start=False, end=False),
        "the boundary at the end is missing: the last letter's pair with '.' is not counted":
            lambda: _pair_counts(words, tokenizer, end=False),
        "the boundary at the start is missing: the pair of '.' and the first letter is not "
        "counted": lambda: _pair_counts(words, tokenizer, start=False),
        "rows and columns swapped: N[a, b] has the previous character's id as its row":
            lambda: _pair_counts(words, tokenizer).T,
        "N[a, b] = 1 sets a count where it should add one: N[a, b] += 1":
            lambda: (_pair_counts(words, tokenizer) > 0).astype(np.int64),
    }


def _same_counts(checker: Checker, received: np.ndarray, expected: np.ndarray,
                 characters: Sequence[str], mistakes: dict[str, Any]) -> None:
    """Stop the case at the first count that differs, naming its pair."""
    wrong = np.argwhere(received != expected)
    if len(wrong):
        a, b = (int(i) for i in wrong[0])
        checker.true(False, f"N[{a}, {b}], the count of the pair "
                     f"{characters[a] + characters[b]!r}: expected {int(expected[a, b])}, "
                     f"received {int(received[a, b])} ({len(wrong)} of {expected.size} counts "
                     "differ)", named_mistake(received, mistakes, 0.0, 0.0)
                     or likely_mistake(received, expected, 0.0, 0.0))


@piece_check("count_bigrams", yours="count_bigrams", reads=("stoi",),
             package_name="BigramModel.from_words's")
def check_count_bigrams(checker: Checker, count_bigrams: Any, tokenizer: CharTokenizer,
                        validation_words: Sequence[str]) -> HandOn:
    """``count_bigrams`` against ``BigramModel.from_words``: an integer (27, 27) table, then
    its counts, on one name, repeated letters and names, a one-letter and an empty name, no
    names, and the validation names."""
    def package(words: Sequence[str]) -> np.ndarray:
        return BigramModel.from_words(words, tokenizer).counts

    size = tokenizer.vocabulary_size
    for what, words in [("one name, smith", ["smith"]),
                        ("letters twice in a row, a name twice", ["anna", "anna", "ll"]),
                        ("a one-letter name and an empty name", ["x", ""]),
                        ("no names at all", []),
                        ("the 8 880 validation names", validation_words)]:
        with checker.case(what, hint="frame each name as '.' + name + '.', then add 1 at "
                          "N[id of the previous character, id of the next] for each pair"):
            received = count_bigrams(words)
            checker.true(isinstance(received, np.ndarray), "N must be a numpy array, received "
                         f"{type(received).__name__}", "return the table itself, a numpy array")
            checker.shape(received, (size, size), "N",
                          {"one row and column short: the boundary '.' is a token too, id 0":
                           (size - 1, size - 1)})
            checker.true(received.dtype.kind in "iu", "N must hold integers, received dtype "
                         f"{received.dtype}", "N holds floats: make it with np.zeros((27, 27), "
                         "dtype=np.int64)")
            _same_counts(checker, received, package(words), tokenizer.characters,
                         _counts_mistakes(words, tokenizer))
    return HandOn(count_bigrams, package)


# ---------------------------------------------------------------------------- probabilities
def _normalised(table: np.ndarray, axis: int | None = 1, keepdims: bool = True) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return table / table.sum(axis=axis, keepdims=keepdims)


def _probabilities_mistakes(counts: np.ndarray, s: float = 1.0) -> dict[str, Any]:
    """What the usual slips of add-s smoothing give for ``counts``."""
    smoothed = counts + s
    by_columns, unkept = _normalised(smoothed, axis=0), _normalised(smoothed, keepdims=False)
    # A table of counts of framed names has equal row and column sums (each character is as
    # often before another as after one): there the two slips give the same table.
    columns = {"each column is divided by a sum: its own (axis=0), or a row's when "
               "keepdims=True is missing; divide each row by its own sum (axis=1, "
               "keepdims=True)": by_columns} if np.allclose(by_columns, unkept) else {
        "each column is divided by its sum (axis=0): divide each row by its own sum (axis=1)":
            by_columns,
        "keepdims=True is missing: the row sums, of shape (V,), divide the columns": unkept}
    return {
        "nothing is added to the counts: add s to every count before dividing":
            lambda: _normalised(counts.astype(np.float64)),
        "1 is added whatever s is: add s": lambda: _normalised(counts + 1.0),
        **columns,
        "the whole table is divided by its sum: divide each row by its own sum (axis=1)":
            lambda: _normalised(smoothed, axis=None, keepdims=False),
        "s is added after dividing: add it to the counts, then divide each row by its sum":
            lambda: _normalised(counts.astype(np.float64)) + s,
    }


@piece_check("bigram_probabilities", yours="bigram_probabilities",
             package_name="BigramModel's")
def check_bigram_probabilities(checker: Checker, bigram_probabilities: Any, N: np.ndarray
                               ) -> HandOn:
    """``bigram_probabilities`` against ``BigramModel(N, smoothing=1.0).probabilities``: the
    counts left unchanged, the table's shape, then its values, on the training counts and
    small tables (a row with no counts, a single count, rows of very different sizes)."""
    def package(counts: np.ndarray) -> np.ndarray:
        return BigramModel(counts, smoothing=1.0).probabilities

    for what, counts in [
            ("the counts N of the training names", N.copy()),
            ("3 tokens, a row with no counts", np.array([[2, 0, 1], [0, 0, 0], [5, 4, 0]])),
            ("2 tokens, a single count (how much is added?)", np.array([[0, 1], [0, 0]])),
            ("4 tokens, rows of very different sizes",
             np.array([[0, 0, 0, 90], [1, 0, 0, 0], [7, 3, 0, 1], [0, 0, 2, 2]]))]:
        with checker.case(what, hint="add 1 to every count, then divide each row by its own "
                          "sum (axis=1, keepdims=True), not by the whole table's or a column's"):
            before = counts.copy()
            received = np.asarray(bigram_probabilities(counts), dtype=np.float64)
            checker.equal(counts, before, "N after your function (leave it unchanged)",
                          {"the counts it was given are changed (N += 1): compute N + 1, a new "
                           "table": before + 1})
            checker.shape(received, before.shape, "P")
            checker.close(received, package(before), "P", rtol=1e-12, atol=1e-15,
                          mistakes=_probabilities_mistakes(before))
    return HandOn(bigram_probabilities, package)


# ------------------------------------------------------------------------------------ loss
def _nll(P: np.ndarray, words: Sequence[str], tokenizer: CharTokenizer, slip: str = ""
         ) -> float:
    """The mean -ln P[a, b] over the pairs of the framed names, or what a slip gives."""
    log = {"log10": math.log10, "log2": math.log2}.get(slip, math.log)
    start = "" if slip in ("no boundaries", "no start") else "."
    end = "" if slip in ("no boundaries", "no end") else "."
    total, count, means = 0.0, 0, []
    for word in words:
        ids = tokenizer.encode(start + word + end)
        pairs = list(zip(ids[:-1], ids[1:], strict=True))
        losses = [-log(P[b, a] if slip == "transposed" else P[a, b]) for a, b in pairs]
        total, count = total + sum(losses), count + len(losses)
        means.append(sum(losses) / len(losses) if losses else math.nan)
    if slip == "mean of means":
        return float(np.mean(means))
    if slip == "sum":
        return total
    if slip == "per name":
        return total / len(words)
    return total / count


_NLL_SLIPS = {
    "mean of means": "a mean of each name's mean: take one mean over all the pairs of all "
                     "the names",
    "no boundaries": "the boundaries are left out: read the pairs of '.' + name + '.'",
    "no end": "the boundary at the end is left out: the last pair is (last letter, '.')",
    "no start": "the boundary at the start is left out: the first pair is ('.', first letter)",
    "sum": "the sum of -ln P over the pairs: divide it by the number of pairs",
    "per name": "divided by the number of names: divide by the number of pairs",
    "transposed": "P[b, a]: the row of P is the previous character, P[previous, next]",
    "log10": "a logarithm in base 10: the loss is in nats, the natural log (math.log)",
    "log2": "a logarithm in base 2: the loss is in nats, the natural log (math.log)",
}


@piece_check("negative_log_likelihood", yours="negative_log_likelihood", reads=("tokenizer",),
             package_name="tensorlib's cross-entropy")
def check_negative_log_likelihood(checker: Checker, negative_log_likelihood: Any,
                                  N: np.ndarray, tokenizer: CharTokenizer,
                                  validation_words: Sequence[str]) -> HandOn:
    """``negative_log_likelihood`` against ``BigramModel.word_negative_log_likelihood``: names
    of different lengths, one name, an empty name, and 2 000 names with another table."""
    def package(P: np.ndarray, words: Sequence[str]) -> float:
        previous_ids, next_ids = context_target_pairs(words, tokenizer, 1)
        return F.cross_entropy(tl.tensor(np.log(P))[previous_ids[:, 0]], next_ids).item()

    add_one, light = BigramModel(N, smoothing=1.0), BigramModel(N, smoothing=0.1)
    for what, model, words in [
            ("names of 2, 10 and 2 letters: one mean over all the pairs", add_one,
             ["li", "montgomery", "ng"]),
            ("one name, smith", add_one, ["smith"]),
            ("an empty name: its one pair is '..'", add_one, ["", "ng"]),
            ("2 000 validation names, another table (smoothing 0.1)", light,
             validation_words[:2000])]:
        with checker.case(what, hint="every pair of '.' + name + '.', both boundaries "
                          "included; add up -ln P[a, b] and divide by the number of pairs"):
            P = model.probabilities
            mistakes = {said: (lambda slip=slip, P=P, words=words: _nll(P, words, tokenizer,
                                                                         slip))
                        for slip, said in _NLL_SLIPS.items()}
            checker.close(negative_log_likelihood(P, words),
                          model.word_negative_log_likelihood(words, tokenizer), "the loss",
                          rtol=1e-10, mistakes=mistakes)
    return HandOn(negative_log_likelihood, package)


# -------------------------------------------------------------------------------- sampling
_SAMPLE_SLIPS = {
    "column": "a column of P is drawn from, P[:, current]: draw from the current character's "
              "row, P[current]",
    "boundary kept": "the boundary that ends the name is kept: stop before adding it",
    "extra draw": "one draw too many once the name has max_length characters: stop before "
                  "drawing again",
    "short": "the name stops one character short of max_length",
    "new rng": "a new Rng is made inside: use the rng you are given, so that the next call "
               "goes on from where this one stopped",
}


def _sampler(slip: str, tokenizer: CharTokenizer) -> Callable[..., str]:
    """``sample_name`` done right (``slip`` empty), or with one of the usual slips."""
    def sample(model: BigramModel, rng: Rng, max_length: int = 50) -> str:
        P = model.probabilities
        rng = Rng(0) if slip == "new rng" else rng
        longest = max_length - 1 if slip == "short" else max_length
        ids: list[int] = []
        current = 0
        while slip == "extra draw" or len(ids) < longest:
            current = rng.sample_categorical(P[:, current] if slip == "column" else P[current])
            if current == 0 or (slip == "extra draw" and len(ids) >= longest):
                ids += [0] if current == 0 and slip == "boundary kept" else []
                break
            ids.append(current)
        return tokenizer.decode(ids)
    return sample


def _table(pair_counts: dict[str, int], tokenizer: CharTokenizer) -> np.ndarray:
    """A (V, V) table of counts from {"ab": count of the pair a, b}."""
    size = tokenizer.vocabulary_size
    table = np.zeros((size, size), dtype=np.int64)
    for pair, count in pair_counts.items():
        table[tokenizer.encode(pair)[0], tokenizer.encode(pair)[1]] = count
    return table


@piece_check("sample_name", yours="sample_name", reads=("tokenizer",),
             package_name="BigramModel.sample")
def check_sample_name(checker: Checker, sample_name: Any, N: np.ndarray,
                      tokenizer: CharTokenizer) -> HandOn:
    """``sample_name`` against ``BigramModel.sample``, 12 names in a row from one ``Rng``:
    from the add-one and a heavily smoothed table, a table with one path, and names that
    rarely end, cut at ``max_length``."""
    def package(model: BigramModel, rng: Rng, max_length: int = 50) -> str:
        return tokenizer.decode(model.sample(rng, 1, max_length)[0])

    for what, model, seed, max_length in [
            ("12 names from the add-one table, Rng(3)", BigramModel(N, smoothing=1.0), 3, None),
            ("12 names from a heavily smoothed table (100 added), Rng(7)",
             BigramModel(N, smoothing=100.0), 7, None),
            ("a table with one path: . c a b .",
             BigramModel(_table({".c": 1, "ca": 1, "ab": 1, "b.": 1}, tokenizer), smoothing=0.0),
             0, None),
            ("names that rarely end, cut at max_length=8",
             BigramModel(_table({".a": 1, "aa": 9, "a.": 1}, tokenizer), smoothing=0.0), 5, 8),
            ("names that rarely end, the default max_length (50)",
             BigramModel(_table({".a": 1, "aa": 49, "a.": 1}, tokenizer), smoothing=0.0), 5,
             None)]:
        with checker.case(what, hint="start at id 0; one rng.sample_categorical(P[current]) per "
                          "character (a row of P, not a column); stop at the boundary, which is "
                          "not part of the name, or at max_length characters; no new Rng"):
            extra = () if max_length is None else (max_length,)
            found: dict[str, list[str]] = {}

            def names(slip: str, model: BigramModel = model, seed: int = seed,
                      extra: tuple[int, ...] = extra, found: dict[str, list[str]] = found
                      ) -> list[str]:
                if slip not in found:
                    draw, rng = _sampler(slip, tokenizer), Rng(seed)
                    found[slip] = [draw(model, rng, *extra) for _ in range(12)]
                return found[slip]

            my_rng, package_rng = Rng(seed), Rng(seed)
            for index in range(12):
                checker.equal(sample_name(model, my_rng, *extra),
                              package(model, package_rng, *extra), f"name {index + 1} of 12",
                              {said: (lambda slip=slip, index=index: names(slip)[index])
                               for slip, said in _SAMPLE_SLIPS.items()})
    return HandOn(sample_name, package)


# ------------------------------------------------------------------------------ exercises
@exercise_check("Exercise 1 (smoothed_probabilities)", yours="smoothed_probabilities")
def check_smoothed_probabilities(checker: Checker, smoothed_probabilities: Any,
                                 N: np.ndarray) -> None:
    """``smoothed_probabilities(N, s)`` against ``BigramModel(N, smoothing=s)`` for three s:
    the table's shape, then its values."""
    for s in (1.0, 0.1, 25.0):
        with checker.case(f"smoothing {s}", hint="add s to every cell, then divide each row by "
                          "its own sum (not by the sum of the whole table)"):
            received = np.asarray(smoothed_probabilities(N, s), dtype=np.float64)
            checker.shape(received, N.shape, "table")
            checker.close(received, BigramModel(N, smoothing=s).probabilities, "table",
                          rtol=1e-12, atol=1e-15, mistakes=_probabilities_mistakes(N, s))


def _pair_loss_mistakes(P: np.ndarray, previous: np.ndarray, following: np.ndarray
                        ) -> dict[str, Any]:
    return {
        "P[following, previous]: the row of P is the previous character":
            lambda: -np.log(P[following, previous]).mean(),
        "P[previous][following] picks whole rows: index both axes at once, "
        "P[previous, following]": lambda: (-np.log(P).mean(axis=1))[previous[following]].mean(),
        "the sum over the pairs: take the mean": lambda: -np.log(P[previous, following]).sum(),
        "a logarithm in base 10: the loss is in nats, np.log":
            lambda: -np.log10(P[previous, following]).mean(),
    }


@exercise_check("Exercise 2 (pair_loss)", yours="pair_loss")
def check_pair_loss(checker: Checker, pair_loss: Any, N: np.ndarray,
                    previous: np.ndarray, following: np.ndarray,
                    validation_previous: np.ndarray, validation_following: np.ndarray) -> None:
    """``pair_loss`` against ``BigramModel.pair_negative_log_likelihood`` on the training and
    the validation pairs, for two smoothings."""
    for s in (1.0, 0.1):
        reference = BigramModel(N, smoothing=s)
        for what, pairs in (("training", (previous, following)),
                            ("validation", (validation_previous, validation_following))):
            with checker.case(f"{what} pairs, smoothing {s}",
                              hint="index P with both arrays at once, P[previous, following], "
                                   "then take -log and the mean"):
                checker.close(pair_loss(reference.probabilities, *pairs),
                              reference.pair_negative_log_likelihood(*pairs), "loss",
                              rtol=1e-10, atol=1e-12,
                              mistakes=_pair_loss_mistakes(reference.probabilities, *pairs))


@exercise_check("Exercise 3 (best_smoothings)", yours="best_smoothings",
                reads=("SMOOTHINGS", "N", "previous", "following", "validation_previous",
                       "validation_following"))
def check_best_smoothings(checker: Checker, best_smoothings: Any, SMOOTHINGS: Sequence[float],
                          N: np.ndarray, validation_previous: np.ndarray,
                          validation_following: np.ndarray) -> None:
    """The s of ``SMOOTHINGS`` with the lowest training loss (the training pairs are those N
    counts) and the one with the lowest validation loss."""
    training, validation = {}, {}
    for s in SMOOTHINGS:
        model = BigramModel(N, smoothing=s)
        training[s] = float(-(N * np.log(model.probabilities)).sum() / N.sum())
        validation[s] = model.pair_negative_log_likelihood(validation_previous,
                                                           validation_following)
    best = {"training": min(SMOOTHINGS, key=training.__getitem__),
            "validation": min(SMOOTHINGS, key=validation.__getitem__)}
    worst = {"training": max(SMOOTHINGS, key=training.__getitem__),
             "validation": max(SMOOTHINGS, key=validation.__getitem__)}
    losses = {"training": training, "validation": validation}
    for index, (which, other, hint) in enumerate([
            ("training", "validation", "smoothing moves the table away from the training "
                                       "frequencies"),
            ("validation", "training", "compute all five validation losses; the differences "
                                       "are small")]):
        with checker.case(f"lowest {which} loss", hint=hint):
            place = "first" if index else "second"
            checker.equal(best_smoothings()[index], best[which], "s",
                          {f"the s of the lowest {other} loss comes {place}: return "
                           "(training's, validation's)": best[other],
                           "the largest loss, not the lowest: min, not max": worst[which],
                           "the loss is returned: return the s that gives it":
                           losses[which][best[which]]})


_VOCABULARY, _CONTEXT = 27, 3  # the notebook's ContextMLP(tokenizer.vocabulary_size, context)


def _hidden(model: Any, ids: np.ndarray, before_tanh: bool = False,
            bias: bool = True) -> np.ndarray:
    """The hidden values of a ContextMLP: tanh of the hidden layer on the concatenated
    embeddings (or what it gives before the tanh, or without the bias)."""
    with tl.no_grad():
        e = model.embedding(ids).reshape(-1, model.context * model.width).numpy()
    h = e @ model.hidden.weight.numpy().T + (model.hidden.bias.numpy() if bias else 0.0)
    return h if before_tanh else np.tanh(h)


def _saturation_mistakes(model: Any, ids: np.ndarray, threshold: float) -> dict[str, Any]:
    return {
        "the values before the tanh are counted: h = tanh(...)":
            lambda: np.mean(np.abs(_hidden(model, ids, before_tanh=True)) > threshold),
        "h > threshold counts one side only: compare the size, np.abs(h) > threshold":
            lambda: np.mean(_hidden(model, ids) > threshold),
        "a count, not a fraction: take the mean (divide by the number of values)":
            lambda: np.sum(np.abs(_hidden(model, ids)) > threshold),
        "the hidden layer's bias is left out": lambda: np.mean(
            np.abs(_hidden(model, ids, bias=False)) > threshold),
        "the threshold argument is not used: compare with threshold, not 0.97":
            lambda: np.mean(np.abs(_hidden(model, ids)) > 0.97),
    }


@exercise_check("Exercise 4 (saturated_fraction)", yours="saturated_fraction")
def check_saturated_fraction(checker: Checker, saturated_fraction: Any, ContextMLP: Any,
                             normal_init: Callable[[Any], Any],
                             mlp_validation: tuple[np.ndarray, np.ndarray]) -> None:
    """``saturated_fraction`` on 2 000 validation examples at the start of the Xavier, the
    N(0, 1) and the N(0, 1)-with-scaled-output networks, at two thresholds."""
    ids = mlp_validation[0][:2000]
    scaled = normal_init(ContextMLP(_VOCABULARY, _CONTEXT, rng=Rng(0)))
    with tl.no_grad():
        scaled.output.weight.copy_(0.01 * scaled.output.weight.data)
    starts = {"Xavier": ContextMLP(_VOCABULARY, _CONTEXT, rng=Rng(0)),
              "N(0, 1)": normal_init(ContextMLP(_VOCABULARY, _CONTEXT, rng=Rng(0))),
              "N(0, 1), output scaled": scaled}
    for name, start in starts.items():
        for threshold in (0.97, 0.5):
            with checker.case(f"{name} initialization, threshold {threshold}",
                              hint="the hidden values are tanh of the hidden Linear applied to "
                                   "the three concatenated embeddings; count |h| > threshold "
                                   "over every example and unit"):
                expected = float(np.mean(np.abs(_hidden(start, ids)) > threshold))
                checker.close(saturated_fraction(start, ids, threshold), expected, "fraction",
                              rtol=0, atol=1e-4,
                              mistakes=_saturation_mistakes(start, ids, threshold))
