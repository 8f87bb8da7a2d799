"""The checks of notebook 15 (a GPT on census surnames): its three exercises, on the Decoder
the notebook trained (they never train again).

The expected values are computed here from the model's logits in float64, with tensorlib's
cross-entropy over the valid positions; the usual slips (the padding scored, a sum for a
mean, n targets for a name of n letters) are computed the same way, so that a report names
the one the learner's answer is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import tensorlib as tl
import tensorlib.nn.functional as F
from tensorlib.course.checks.registry import exercise_check
from tensorlib.course.exercises import Checker
from tensorlib.engine.splitmix64 import Rng

__all__ = ["check_masked_loss", "check_scored_and_padding", "check_name_nats"]

Rows = tuple[np.ndarray, np.ndarray, np.ndarray]  # inputs, targets, valid: (N, T) each


def _logits(model: Any, inputs: np.ndarray) -> np.ndarray:
    """The model's logits (N, T, V) in float64, in evaluation mode and without a graph."""
    with tl.no_grad(), tl.nn.evaluation_mode(model):
        return np.asarray(model(inputs).numpy(), dtype=np.float64)


def _nats(logits: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """-ln softmax(logits)[target] at every position, (N, T), computed stably."""
    shifted = logits - logits.max(axis=-1, keepdims=True)
    log_probabilities = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    return -np.take_along_axis(log_probabilities, targets[..., None], axis=-1)[..., 0]


def _cross_entropy(logits: np.ndarray, targets: np.ndarray, valid: np.ndarray) -> float:
    """tensorlib's cross-entropy over the valid positions only (their mean)."""
    scored = valid.ravel()
    return float(F.cross_entropy(tl.tensor(logits.reshape(-1, logits.shape[-1])[scored]),
                                 targets.ravel()[scored]).item())


def _loss_slips(logits: np.ndarray, targets: np.ndarray,
                valid: np.ndarray) -> dict[str, Callable[[], float]]:
    """What the usual slips of a masked loss give: {what the learner did: the loss}."""
    nats = _nats(logits, targets)
    return {
        "the mean over every position, padding included: take the mean over the valid ones "
        "only": lambda: float(nats.mean()),
        "the sum over the valid positions, not their mean": lambda: float(nats[valid].sum()),
        "each row's mean, then the mean of the rows: every valid target must weigh the same, "
        "one mean over all of them": lambda: float(np.mean([row[keep].mean() for row, keep
                                                            in zip(nats, valid, strict=True)
                                                            if keep.any()])),
        "the padding's targets scored as valid ones: valid says which to keep, and its "
        "mean divides by valid.sum()": lambda: float((nats * valid).sum() / nats.size),
    }


def _loss_cases(padded_names: Callable[[Sequence[str]], Rows], validation_words: Sequence[str],
                test_words: Sequence[str]) -> list[tuple[str, Rows]]:
    return [("the first 16 validation names", padded_names(validation_words[:16])),
            ("the first 200 test names", padded_names(test_words[:200])),
            ("one name, 'mcdonald'", padded_names(["mcdonald"]))]


@exercise_check("Exercise 1 (masked_loss)", yours="masked_loss")
def check_masked_loss(checker: Checker, masked_loss: Any, model: Any, padded_names: Any,
                      validation_words: Sequence[str], test_words: Sequence[str]) -> None:
    """``masked_loss(logits, targets, valid)`` on the trained model's logits of three sets of
    names, against tensorlib's cross-entropy over the valid positions; then logits of 1000
    and more, which must stay finite."""
    for what, (inputs, targets, valid) in _loss_cases(padded_names, validation_words,
                                                      test_words):
        with checker.case(what, hint="score only the positions where valid is True, and take "
                                     "the mean over those, not over all N x T"):
            logits = _logits(model, inputs)                                 # (N, T, V)
            received = masked_loss(logits, targets, valid)
            checker.shape(received, (), "the loss (one number)",
                          {"one loss per position (N, T): their mean over the valid ones is "
                           "the loss": valid.shape,
                           "only the valid positions' losses: their mean is the loss":
                               (int(valid.sum()),)})
            checker.close(received, _cross_entropy(logits, targets, valid), "loss", rtol=1e-4,
                          mistakes=_loss_slips(logits, targets, valid))
    with checker.case("large logits (1000 and more) stay finite",
                      hint="softmax is unchanged by subtracting each row's maximum; do it "
                           "before np.exp"):
        length, vocabulary = model.config.context_length, model.config.vocabulary_size
        big = Rng(3).normal(size=(2, length, vocabulary)) * 5 + 1000.0
        big_targets = Rng(4).integers(0, vocabulary, size=(2, length))
        big_valid = np.ones((2, length), dtype=bool)
        big_valid[1, 5:] = False
        with np.errstate(all="ignore"):
            received = masked_loss(big, big_targets, big_valid)
        checker.true(np.isfinite(np.asarray(received, dtype=np.float64)).all(),
                     f"the loss is {received}", "np.exp of logits near 1000 overflows to inf: "
                     "subtract each row's maximum before np.exp")
        checker.close(received, _cross_entropy(big, big_targets, big_valid), "loss",
                      rtol=1e-6, mistakes=_loss_slips(big, big_targets, big_valid))


@exercise_check("Exercise 2 (scored_and_padding)", yours="scored_and_padding", reads=("T",))
def check_scored_and_padding(checker: Checker, scored_and_padding: Any, padded_names: Any,
                             train_words: Sequence[str],
                             validation_words: Sequence[str]) -> None:
    """``scored_and_padding(word_list)`` against the valid mask of ``padded_names`` for one
    name, two, 32 training names and every validation name."""
    for what, words in [("['li']", ["li"]), ("['li', 'mcdonald']", ["li", "mcdonald"]),
                        ("the first 32 training names", train_words[:32]),
                        ("every validation name", validation_words)]:
        with checker.case(what, hint="a name of n letters has n + 1 targets: its letters and "
                                     "the closing boundary"):
            valid = padded_names(list(words))[2]
            scored, cells = int(valid.sum()), int(valid.size)
            letters = sum(len(word) for word in words)
            received = scored_and_padding(words)
            checker.true(isinstance(received, (tuple, list)) and len(received) == 2,
                         f"expected two numbers (scored, padding), received {received!r}",
                         "return both counts: return scored, padding")
            checker.equal(tuple(int(n) for n in received), (scored, cells - scored),
                          "(scored, padding)", mistakes={
                              "n targets for a name of n letters: the closing '.' is scored "
                              "too, n + 1": [letters, cells - letters],
                              "the opening '.' counted as a target too: a name of n letters "
                              "has n + 1": [letters + 2 * len(words),
                                            cells - letters - 2 * len(words)],
                              "(padding, scored): the other order": [cells - scored, scored],
                              "the padding counted as T - n per name: a row of T positions "
                              "holds n + 1 targets": [scored, cells - letters]})


@exercise_check("Exercise 3 (name_nats)", yours="name_nats")
def check_name_nats(checker: Checker, name_nats: Any, model: Any, padded_names: Any,
                    test_words: Sequence[str]) -> None:
    """``name_nats(model, word_list)``: the total nats of each of three names, then of the
    first 1000 test names, whose sum per character is the model's loss on them."""
    for word in ["smith", test_words[0], "li"]:
        with checker.case(f"the name {word!r}", hint="sum the nats of the valid targets of "
                                                     "the row, do not average them"):
            inputs, targets, valid = padded_names([word])
            nats = _nats(_logits(model, inputs), targets)[0]
            received = np.asarray(name_nats(model, [word]), dtype=np.float64)
            checker.shape(received, (1,), "one number per name (N,)",
                          {"one number for all the names: one per name, shape (N,)": (),
                           "one number per position (N, T): sum each row's valid ones":
                               valid.shape})
            checker.close(received[0], float(nats[valid[0]].sum()), "nats", rtol=1e-4,
                          mistakes={"the mean over the name's targets, not their sum":
                                    float(nats[valid[0]].mean()),
                                    "the padding positions summed too: keep the valid ones "
                                    "only": float(nats.sum())})
    with checker.case("the first 1000 test names, per character, against the model's loss",
                      hint="one number per name, in the order of word_list"):
        words = list(test_words[:1000])
        inputs, targets, valid = padded_names(words)
        logits = _logits(model, inputs)
        received = np.asarray(name_nats(model, words), dtype=np.float64)
        checker.shape(received, (1000,), "one number per name (N,)")
        per_name = (_nats(logits, targets) * valid).sum(axis=1)
        checker.close(received, per_name, "nats of each name", rtol=1e-4,
                      mistakes={"the names in another order: one number per name, in the "
                                "order of word_list": np.sort(per_name)})
        checker.close(received.sum() / valid.sum(), _cross_entropy(logits, targets, valid),
                      "nats per character", rtol=1e-4)
