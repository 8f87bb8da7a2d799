"""The checks of notebook 21 (a programmed induction head): its three exercises,
``two_back_keys``, ``predicted_logits`` and ``question_count``.

Each compares the learner's answer with what the package's programmed heads do: the
attention of a ``ProgrammedAttentionHead`` built on the learner's keys, the logits of
``ProgrammedSequenceCore(4, 6)``, and a count by brute force with ``induction_targets``. The
usual slips (the keys shifted the wrong way, the follower's token confused with the matched
one, the weight spread over key 0 too, the last token or the copy's place not chosen) are
named by what they give.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

import tensorlib as tl
from tensorlib.course.checks.differences import named_mistake
from tensorlib.course.checks.registry import exercise_check
from tensorlib.course.exercises import Checker
from tensorlib.models.programmed import (
    ProgrammedAttentionHead,
    ProgrammedSequenceCore,
    induction_targets,
)
from tensorlib.nn import capture_activations

__all__ = ["check_two_back_keys", "check_predicted_logits", "check_question_count"]


# ------------------------------------------------------------------------------ exercise 1
def _key_mistakes(length: int) -> dict[str, np.ndarray]:
    """The keys the usual slips write."""
    return {
        "row s is e_(s-2): key s must be found by the query of position t = s + 2, so row "
        "s is e_(s+2)": np.eye(length, k=-2),
        "the previous-token head's keys (e_(s+1)): two back needs e_(s+2)": np.eye(length, k=1),
        "row s is e_(s-1): key s must be found by the query of position s + 2":
            np.eye(length, k=-1),
        "the identity: each query then finds its own position, not t - 2": np.eye(length),
    }


@exercise_check("Exercise 1 (two_back_keys)", yours="two_back_keys")
def check_two_back_keys(checker: Checker, two_back_keys: Any) -> None:
    """``two_back_keys(length)``: its shape, then a ``ProgrammedAttentionHead`` on position
    one-hots with those keys puts more than 0.999 of every row t >= 2 on key t - 2."""
    for length in (3, 6, 12):
        with checker.case(f"a context of {length}",
                          hint="key s must be the one-hot of the query position that should "
                               "find it: which t has t - 2 = s?"):
            keys = np.asarray(two_back_keys(length), dtype=np.float64)
            checker.shape(keys, (length, length), "keys (T, T)")
            head = ProgrammedAttentionHead(np.eye(length), keys, np.eye(length), np.eye(length),
                                           sharpness=20.0)
            with capture_activations(head) as capture:
                head(tl.tensor(np.eye(length)[None]))  # (1, T, T) positions
            attention = capture["probabilities"][0, 0]  # (T, T)
            on_two_back = attention[np.arange(2, length), np.arange(length - 2)]
            checker.true(bool((on_two_back > 0.999).all()),
                         f"rows t >= 2 put {np.round(on_two_back, 3).tolist()} on key t - 2",
                         named_mistake(keys, _key_mistakes(length), 0.0, 0.0))


# ------------------------------------------------------------------------------ exercise 2
_NO_SCALE = "the logit scale is missing: the logits are λ = 10 times the head's output"
# position -> what a wrong prediction there says (on a b a c a: tokens 0 1 0 2 0)
_LOGIT_MISTAKES: dict[int, dict[str, list[float]]] = {
    2: {"the matched token itself (a) copied: the head attends to the position right after "
        "the earlier a and copies the token there, b": [10, 0, 0, 0],
        _NO_SCALE: [0, 1, 0, 0]},
    3: {"no match does not give zero logits: the head's weights still sum to 1, spread evenly "
        "over positions 1 .. t": [0, 0, 0, 0],
        "the weight spread over positions 0 .. t: key 0 scores -1, so positions 1 .. t (b, a, "
        "c) share it": [5, 2.5, 2.5, 0],
        "the current token (c) copied: with no earlier c the weight spreads over positions "
        "1 .. t": [0, 0, 10, 0],
        _NO_SCALE: [1 / 3, 1 / 3, 1 / 3, 0]},
    4: {"only the first a's follower: with two matches the weight is split evenly between the "
        "tokens after them, b and c": [0, 10, 0, 0],
        "only the last a's follower: with two matches the weight is split evenly between the "
        "tokens after them, b and c": [0, 0, 10, 0],
        "the matched token itself (a) copied: the head copies the tokens right after the "
        "earlier a's": [10, 0, 0, 0],
        _NO_SCALE: [0, 0.5, 0.5, 0]},
}


@exercise_check("Exercise 2 (predicted_logits)", yours="predicted_logits")
def check_predicted_logits(checker: Checker, predicted_logits: Any) -> None:
    """``predicted_logits()`` against the logits of ``ProgrammedSequenceCore(4, 6)`` on
    a b a c a at positions 2 (one match), 3 (none) and 4 (two), to 0.01."""
    with tl.no_grad():
        truth = ProgrammedSequenceCore(4, 6)(np.array([[0, 1, 0, 2, 0]])).numpy()[0]  # (5, 4)
    hints = {2: "one earlier occurrence: the copying head puts all its weight on the token "
                "after it",
             3: "no match: every key but key 0 scores 0, so the weight is spread evenly over "
                "positions 1..t",
             4: "two matches: the weight is split evenly between the tokens after them"}
    for position, hint in hints.items():
        with checker.case(f"position {position}", hint=hint):
            guess = np.asarray(predicted_logits()[position], dtype=np.float64)
            checker.shape(guess, (4,), "logits (a, b, c, d)")
            checker.close(guess, truth[position], "logits (a, b, c, d)", atol=0.01, rtol=0.0,
                          mistakes={said: np.array(value, dtype=np.float64)
                                    for said, value in _LOGIT_MISTAKES[position].items()})


# ------------------------------------------------------------------------------ exercise 3
def _count_mistakes(v: int, t: int) -> dict[str, int]:
    """What the usual slips of counting give."""
    return {
        "the exponent is one too many: the other positions are T - 2 (neither the last one "
        "nor the copy's)": v * (t - 1) * (v - 1) ** (t - 1),
        "the last token is not chosen: it is any of V": (t - 1) * (v - 1) ** (t - 2),
        "the place of the earlier copy is not chosen: it is any of the T - 1 earlier "
        "positions": v * (v - 1) ** (t - 2),
        "the other positions left free: they must avoid the last token (V - 1 choices each)":
            v * (t - 1) * v ** (t - 2),
        "at least once, not exactly once": v ** t - v * (v - 1) ** (t - 1),
    }


@exercise_check("Exercise 3 (question_count)", yours="question_count")
def check_question_count(checker: Checker, question_count: Any) -> None:
    """``question_count(vocabulary_size, length)`` against a count by brute force with
    ``induction_targets`` over every sequence, for five sizes."""
    for vocabulary_size, length in [(4, 6), (3, 5), (2, 8), (5, 4), (6, 2)]:
        with checker.case(f"V = {vocabulary_size}, T = {length}",
                          hint="choose the last token, then the position of its one earlier "
                               "copy; every other position must hold a different token"):
            all_ids = np.array(list(itertools.product(range(vocabulary_size), repeat=length)))
            counted = int(induction_targets(all_ids)[0][:, -1].sum())
            checker.equal(question_count(vocabulary_size, length), counted, "sequences",
                          _count_mistakes(vocabulary_size, length))
