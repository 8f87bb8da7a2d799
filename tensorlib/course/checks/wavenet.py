"""The checks of notebook 12b (a WaveNet): ``wavenet_forward`` and the two exercises.

``wavenet_forward(model, ids)`` is compared with the model's own forward on twin float64
WaveNets (the same seed): the logits' shape, then their values, then the running statistics
they moved, and only then the gradients of every parameter; in training and in evaluation, with
three levels and with two. What the usual slips give (no tanh, the tanh before the norm, the
pairs merged from the wrong positions, no head) is computed by the same forward with that slip,
so that a report names it.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import numpy as np

import tensorlib as tl
from tensorlib.course.checks.registry import HandOn, exercise_check, piece_check
from tensorlib.course.exercises import Checker
from tensorlib.engine.splitmix64 import Rng
from tensorlib.nn import WaveNet

__all__ = ["check_wavenet_forward", "check_receptive_positions", "check_wavenet_parameters"]

_VOCABULARY = 27  # the names' characters and the boundary token, as the notebook's tokenizer


_ERRORS = {  # what an error's message says -> the slip behind it
    "expects (N,": "level.norm got (B, T', H): BatchNorm1d takes the channels in the middle, "
                   "so transpose(1, 2) before the norm and back after it",
    "does not end in the weight's": "the merged pairs do not end in 2 C numbers: reshape to "
                                    "(B, T // 2, 2 * C), the pairs' numbers last",
}


def _twin(context_length: int = 8, seed: int = 5) -> Any:
    """A small float64 WaveNet; the same seed makes the same one."""
    return WaveNet(_VOCABULARY, context_length=context_length, embedding_width=6, hidden=10,
                   rng=Rng(seed), dtype=np.float64)


def _model_forward(model: Any, ids: Any) -> Any:
    """The model's own forward (what stands in for an unfinished wavenet_forward)."""
    return model(ids)


def _forward_with(model: Any, ids: Any, tanh: bool = True, tanh_first: bool = False,
                  halves: bool = False) -> np.ndarray:
    """The logits by the notebook's recipe, with one slip on request: no ``tanh``, the tanh
    before the norm (``tanh_first``), or positions k and k + T/2 merged (``halves``)."""
    x = model.embedding(ids)
    for level in model.levels:
        batch, length, width = x.shape
        if halves:
            x = x.reshape(batch, 2, length // 2, width).transpose(1, 2)
        x = level.linear(x.reshape(batch, length // 2, 2 * width))
        if tanh and tanh_first:
            x = x.tanh()
        x = level.norm(x.transpose(1, 2)).transpose(1, 2)
        if tanh and not tanh_first:
            x = x.tanh()
    return model.head(x.reshape(x.shape[0], -1)).numpy()


def _logits_mistakes(model: Any, ids: Any) -> dict[str, Any]:
    """What the usual slips give on a copy of ``model`` as it is now (its running statistics
    are left alone): the shapes first, then the values."""
    batch, hidden = len(ids), model.head.in_features
    vocabulary = model.head.out_features

    def slipped(**slip: bool) -> Any:
        return lambda: _forward_with(copy.deepcopy(model), ids, **slip)

    return {
        "model.head is not applied: the logits are its (B, V), from the last level's (B, H)":
            (batch, hidden),
        "the last level's (B, 1, H) is not flattened to (B, H) before the head":
            (batch, 1, vocabulary),
        "the logits of every position: the levels halve the positions until one is left; "
        "reshape at every level": (batch, model.context_length // 2, vocabulary),
        "no tanh after the norm: a level is merge, Linear, BatchNorm, tanh":
            slipped(tanh=False),
        "the tanh before the norm: a level is merge, Linear, BatchNorm, tanh":
            slipped(tanh_first=True),
        "positions k and k + T/2 merged: neighbours 2k and 2k + 1 go side by side, which "
        "x.reshape(B, T // 2, 2 * C) does": slipped(halves=True),
    }


def _check_logits(checker: Checker, wavenet_forward: Any, mine: Any, theirs: Any,
                  ids: np.ndarray) -> Any:
    """Your logits against the model's own: shape, then values; returns your logits."""
    mistakes = _logits_mistakes(theirs, ids)   # computed on a copy, when asked
    with checker.named_errors(_ERRORS):
        received = wavenet_forward(mine, ids)
    expected = theirs(ids)
    checker.shape(received, expected.shape, "logits (B, V)", mistakes)
    checker.close(received, expected, "logits", rtol=1e-10, atol=1e-12, mistakes=mistakes)
    return received


@piece_check("wavenet_forward", yours="wavenet_forward", package_name="the model's own")
def check_wavenet_forward(checker: Checker, wavenet_forward: Any) -> HandOn:
    """``wavenet_forward(model, ids)`` against the model's own forward: the logits (shape,
    then values) and the running statistics they moved, then the gradients of every
    parameter, in training; the logits in evaluation, and with a context of 4."""
    hint_merge = ("x.reshape(B, T // 2, 2 * C) puts positions 2k and 2k+1 side by side; the "
                  "norm takes (B, H, T') and gives it back: transpose(1, 2) before and after")
    mine, theirs = _twin(), _twin()
    ids = Rng(160).integers(0, _VOCABULARY, size=(6, 8))
    with checker.case("training: the logits of 6 contexts of 8 (three levels), and each "
                      "level's running statistics", hint=hint_merge + "; call level.norm once "
                      "per level"):
        _check_logits(checker, wavenet_forward, mine, theirs, ids)
        for index, (a, b) in enumerate(zip(mine.levels, theirs.levels, strict=True)):
            for name, unmoved in (("running_mean", 0.0), ("running_var", 1.0)):
                checker.close(getattr(a.norm, name).data, getattr(b.norm, name).data,
                              f"level {index} {name}", rtol=1e-10, atol=1e-12, mistakes={
                                  "the running statistics did not move: call the level's own "
                                  "norm module, level.norm, in training mode": np.full(
                                      getattr(b.norm, name).shape, unmoved)})
    with checker.case("training: the gradient of every parameter",
                      hint="use the model's own layers (model.embedding, level.linear, "
                           "level.norm, model.head), so that their parameters get the "
                           "gradients"):
        upstream = Rng(161).normal(size=(6, _VOCABULARY), dtype=np.float64)
        with checker.named_errors(_ERRORS):
            logits = wavenet_forward(mine, ids)
        checker.shape(logits, (6, _VOCABULARY), "logits (B, V)")
        (logits * tl.tensor(upstream)).sum().backward()
        (theirs(ids) * tl.tensor(upstream)).sum().backward()
        for (name, a), b in zip(mine.named_parameters(), theirs.parameters(), strict=True):
            checker.true(a.grad is not None, f"{name} got no gradient",
                         "the graph is cut before that parameter: a .data, .numpy() or "
                         "tl.tensor(...) of a result, or a layer of your own in place of the "
                         "model's")
            checker.close(a.grad, b.grad, f"d {name}", rtol=1e-8, atol=1e-12)
    with checker.case("evaluation: one context at a time", hint="in eval mode the norms use "
                      "their running statistics; nothing else changes"):
        mine.eval()
        theirs.eval()
        _check_logits(checker, wavenet_forward, mine, theirs, ids[:1])
    with checker.case("a context of 4 (two levels)", hint="loop over model.levels, however "
                      "many"):
        mine, theirs = _twin(context_length=4, seed=6), _twin(context_length=4, seed=6)
        _check_logits(checker, wavenet_forward, mine, theirs,
                      Rng(162).integers(0, _VOCABULARY, size=(5, 4)))
    return HandOn(wavenet_forward, _model_forward)


# ---------------------------------------------------------------------------------- exercises
def _measured(contexts: np.ndarray, vocabulary_size: int, level: int,
              position: int) -> list[int]:
    """Input positions with a nonzero gradient from one output of `level` (evaluation mode)."""
    probe = WaveNet(vocabulary_size, embedding_width=4, hidden=6, rng=Rng(170),
                    dtype=np.float64)
    probe.eval()
    x = tl.tensor(probe.embedding(contexts[:2]).data, requires_grad=True)   # (2, 8, 4)
    h = x
    for index in range(level + 1):
        h = probe.levels[index](h)
    h[:, position].sum().backward()
    assert x.grad is not None  # tensorlib's backward reaches the embedded input
    gradient = x.grad.numpy()
    return [t for t in range(x.shape[1]) if np.abs(gradient[:, t]).max() > 0]


@exercise_check("Exercise 1 (receptive_positions)", yours="receptive_positions")
def check_receptive_positions(checker: Checker, receptive_positions: Any,
                              contexts: np.ndarray, V: int) -> None:  # noqa: N803
    """``receptive_positions(level, position)`` against the input positions that receive a
    gradient from that output of an evaluation-mode WaveNet on the notebook's ``contexts``
    (ids below ``V``)."""
    for level, position in [(0, 0), (0, 3), (1, 1), (2, 0)]:
        width = 2 ** (level + 1)
        with checker.case(f"level {level}, position {position}",
                          hint="a level-0 output sees 2 positions; each level doubles the "
                               "width"):
            checker.equal(list(receptive_positions(level, position)),
                          _measured(contexts, V, level, position), "the positions", {
                              "the width grows by 2 at each level, 2 (level + 1): each level "
                              "doubles it, 2 ** (level + 1)": list(range(
                                  position * 2 * (level + 1), (position + 1) * 2 * (level + 1))),
                              "a width of 2 ** level: a level-0 output already reads a pair, "
                              "2 ** (level + 1)": list(range(position * 2 ** level,
                                                             (position + 1) * 2 ** level)),
                              "one position too many: range's end is not included":
                                  list(range(position * width, (position + 1) * width + 1)),
                              "the window starts at `position`: output p of a level reads the "
                              "positions from p * width": list(range(position,
                                                                     position + width)),
                          })


def _parameters_with(vocabulary_size: int, context_length: int, embedding_width: int,
                     hidden: int, norm: bool = True, head_bias: bool = True,
                     buffers: bool = False, first_everywhere: bool = False,
                     linear_bias: bool = False, levels: int | None = None,
                     embedding: bool = True) -> int:
    """A WaveNet's parameter count by the formula, with one slip on request."""
    count = round(math.log2(context_length)) if levels is None else levels
    per_channel = (2 if norm else 0) + (2 if buffers else 0) + (1 if linear_bias else 0)
    widths = [embedding_width] + [embedding_width if first_everywhere else hidden] * (count - 1)
    total = sum(2 * width * hidden + per_channel * hidden for width in widths)
    return (total + (vocabulary_size * embedding_width if embedding else 0)
            + hidden * vocabulary_size + (vocabulary_size if head_bias else 0))


@exercise_check("Exercise 2 (wavenet_parameters)", yours="wavenet_parameters")
def check_wavenet_parameters(checker: Checker, wavenet_parameters: Any) -> None:
    """``wavenet_parameters(...)`` against ``num_parameters()`` of WaveNets of four sizes."""
    for sizes in [(27, 8, 24, 128), (27, 4, 10, 20), (50, 16, 8, 32), (27, 2, 5, 7)]:
        with checker.case(f"vocabulary {sizes[0]}, context {sizes[1]}, embedding {sizes[2]}, "
                          f"hidden {sizes[3]}",
                          hint="levels = log2(context); the first level reads 2 * "
                               "embedding_width numbers, the others 2 * hidden"):
            expected = WaveNet(*sizes, rng=Rng(0)).num_parameters()
            checker.equal(wavenet_parameters(*sizes), expected, "parameters", {
                "the BatchNorms' weight and bias (2 per channel, each level) not counted":
                    _parameters_with(*sizes, norm=False),
                "the head's bias (one per character) not counted": _parameters_with(
                    *sizes, head_bias=False),
                "the running statistics counted: they are buffers, not parameters":
                    _parameters_with(*sizes, buffers=True),
                "every level read 2 * embedding_width numbers: only the first does, the others "
                "2 * hidden": _parameters_with(*sizes, first_everywhere=True),
                "a bias counted in the levels' Linear: it has none (a BatchNorm follows)":
                    _parameters_with(*sizes, linear_bias=True),
                "context_length // 2 levels: there are log2(context_length)": _parameters_with(
                    *sizes, levels=sizes[1] // 2),
                "the embedding table (vocabulary x embedding_width) not counted":
                    _parameters_with(*sizes, embedding=False),
            })
