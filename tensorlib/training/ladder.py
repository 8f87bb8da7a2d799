"""The capstone's ladder: ten models of surnames, from counting to a transformer.

Each rung adds one thing to the rung below it, and all of them are scored on the same
validation characters and trained on the same batches, under one budget:

=============  ==================================================================
``bigram``     counts of (previous, next) character, add-one smoothed; no training
``mlp3``       an MLP on the previous 3 characters (notebook 12's, trained properly)
``mlp_name``   an MLP on the whole name so far (the decoder's context, 14 tokens), as
               many parameters as the decoder
``wavenet``    the WaveNet of notebook 12b over 16 tokens (the whole name), as many
               parameters as the decoder
``rnn``        notebook 12d's vanilla RNN (tanh) over the whole name so far, as many
               parameters as the decoder
``gru``        the same with a GRU
``lstm``       the same with an LSTM
``one_head``   token and position embeddings, one causal attention head, no MLP
``heads``      the same block with 4 heads of a quarter of the width
``decoder``    notebook 15's long-run Decoder: 4 pre-norm attention-MLP blocks
=============  ==================================================================

A name is one row, as notebook 15 reads it: the input is ``.`` followed by the name, the
target the name followed by ``.``, padded to the longest name (``T = 14`` for the census
surnames), and ``valid`` marks the real targets. Position ``t`` predicts target ``t``; the
window models (the MLPs and the WaveNet) see the last ``context`` input tokens up to ``t``
(``.``-padded on the left), the recurrent models carry a state through every input token up
to ``t``, the attention models see every input token up to ``t``.

The budget (:class:`Budget`): every trained rung takes the same ``steps`` AdamW steps on the
same batches of random training names (one seeded generator, so step ``s`` shows every rung
the same names), with the same warm-up and cosine schedule, weight decay and gradient
clipping. Each rung's validation loss, its loss by position in the name, its parameters,
the characters it was trained on and its seconds are recorded; ``python -m tensorlib
ladder`` runs them all and writes the results as JSON (the notebooks ship one such file).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tensorlib.data import CharTokenizer, names, random_batch, train_validation_test_split
from tensorlib.engine.autograd import no_grad
from tensorlib.engine.files import write_text_atomic
from tensorlib.engine.splitmix64 import Rng
from tensorlib.engine.tensor import Tensor
from tensorlib.models.bigram_counts import BigramModel
from tensorlib.models.decoder import Decoder, DecoderConfig
from tensorlib.models.recurrent_names import RecurrentNameModel
from tensorlib.models.wavenet import TANH_GAIN, WaveNet
from tensorlib.nn import functional as F
from tensorlib.nn.attention import MultiheadAttention
from tensorlib.nn.layers import Embedding, LayerNorm, Linear, PositionalEmbedding
from tensorlib.nn.modes import evaluation_mode
from tensorlib.nn.module import Module
from tensorlib.optim import AdamW, WarmupCosineSchedule
from tensorlib.training.loop import train

__all__ = [
    "RUNGS",
    "AttentionOnly",
    "Budget",
    "ContextMLP",
    "LadderData",
    "RungResult",
    "WindowModel",
    "build_rung",
    "context_windows",
    "ladder_data",
    "ladder_table",
    "mean_nats",
    "name_rows",
    "position_nats",
    "run_ladder",
    "run_rung",
    "rung_loss",
    "save_ladder",
    "train_rung",
    "scored_logits",
]

RUNGS: tuple[str, ...] = ("bigram", "mlp3", "mlp_name", "wavenet", "rnn", "gru", "lstm",
                          "one_head", "heads", "decoder")
DESCRIPTIONS: dict[str, str] = {
    "bigram": "bigram counts (add-one)",
    "mlp3": "MLP, previous 3 characters",
    "mlp_name": "MLP, whole name so far",
    "wavenet": "WaveNet, whole name so far",
    "rnn": "RNN (tanh), 405 units",
    "gru": "GRU, 225 units",
    "lstm": "LSTM, 192 units",
    "one_head": "one attention head, no MLP",
    "heads": "4 attention heads, no MLP",
    "decoder": "Decoder, 4 blocks",
}
EVALUATION_CHUNK = 1024  # rows per forward pass when scoring a split
# the recurrent rungs' widths: as many parameters as the decoder's 204,443, within 0.5%
RECURRENT_WIDTHS = {"rnn": 405, "gru": 225, "lstm": 192}


@dataclass(frozen=True)
class Budget:
    """What every trained rung gets: ``steps`` AdamW steps of ``batch_names`` random training
    names, the rate warmed up over ``warmup_steps`` to ``learning_rate`` then cosine-decayed
    to ``min_learning_rate``, weight decay, gradient clipping at ``max_grad_norm``; the
    validation loss measured every ``evaluate_every`` steps, and the batches' training losses
    averaged over windows of ``train_window`` steps. ``seed`` seeds the split, each
    model's initialization and the batches."""

    steps: int = 10_000
    batch_names: int = 32
    learning_rate: float = 2e-3
    min_learning_rate: float = 2e-4
    warmup_steps: int = 100
    weight_decay: float = 0.01
    max_grad_norm: float = 1.0
    evaluate_every: int = 250
    train_window: int = 100
    seed: int = 0

    @classmethod
    def of_steps(cls, steps: int) -> Budget:
        """The default budget with ``steps`` steps: its warm-up cut to a tenth of them where
        that is shorter, and the validation loss measured at least once."""
        return cls(steps=steps, warmup_steps=min(cls.warmup_steps, steps // 10),
                   evaluate_every=min(cls.evaluate_every, steps))


# ======================================================================================= data
def name_rows(words: Sequence[str], tokenizer: CharTokenizer,
              length: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One row per name: inputs ``.name``, targets ``name.``, and ``valid`` marking the real
    targets, each ``(N, length)`` and padded with the boundary id (invalid there)."""
    inputs = np.full((len(words), length), tokenizer.boundary_id, dtype=np.int64)
    targets = np.full((len(words), length), tokenizer.boundary_id, dtype=np.int64)
    valid = np.zeros((len(words), length), dtype=bool)
    for row, word in enumerate(words):
        ids = tokenizer.encode(word)
        if len(ids) + 1 > length:
            raise ValueError(f"name {word!r} needs {len(ids) + 1} positions; rows have "
                             f"{length}")
        inputs[row, 1:len(ids) + 1] = ids
        targets[row, :len(ids)] = ids  # then the closing boundary
        valid[row, :len(ids) + 1] = True
    return inputs, targets, valid


@dataclass
class LadderData:
    """The census surnames split 80/10/10 with ``seed``, as rows (:func:`name_rows`):
    ``train``, ``validation``, and ``train_sample`` (as many training names as there are
    validation names, to measure the training loss)."""

    tokenizer: CharTokenizer
    train_words: list[str]
    validation_words: list[str]
    length: int
    train: tuple[np.ndarray, np.ndarray, np.ndarray]
    validation: tuple[np.ndarray, np.ndarray, np.ndarray]
    train_sample: tuple[np.ndarray, np.ndarray, np.ndarray]

    @property
    def vocabulary_size(self) -> int:
        return self.tokenizer.vocabulary_size


def ladder_data(seed: int = 0, kind: str = "last") -> LadderData:
    """The ladder's data: census names of ``kind`` (the surnames), split with ``seed``."""
    words = names(kind)
    tokenizer = CharTokenizer(words)
    train_words, validation_words, _ = train_validation_test_split(words, seed=seed)
    length = max(len(word) for word in words) + 1  # the longest name and its boundary
    return LadderData(tokenizer, train_words, validation_words, length,
                      name_rows(train_words, tokenizer, length),
                      name_rows(validation_words, tokenizer, length),
                      name_rows(train_words[:len(validation_words)], tokenizer, length))


def context_windows(inputs: np.ndarray, context: int, boundary_id: int = 0) -> np.ndarray:
    """``(N, T)`` rows → ``(N, T, context)``: at position ``t`` the ``context`` input ids up to
    and including ``t``, boundary-padded on the left (a read-only view)."""
    batch = inputs.shape[0]
    padding = np.full((batch, context - 1), boundary_id, dtype=inputs.dtype)
    padded = np.concatenate([padding, inputs], axis=1)  # (N, context - 1 + T)
    return np.lib.stride_tricks.sliding_window_view(padded, context, axis=1)  # (N, T, context)


# ===================================================================================== models
class ContextMLP(Module):
    """Embed each of ``context`` ids, concatenate, one tanh layer, logits:
    ``ids (M, context)`` → ``(M, V)``. The principled start of notebook 12a: embedding rows
    N(0, 1), the hidden weights N(0, (5/3)² / fan_in), the head's N(0, 0.1² / fan_in), zero
    biases."""

    def __init__(self, vocabulary_size: int, context: int, width: int, hidden: int, rng: Rng):
        super().__init__()
        self.context, self.width = context, width
        self.embedding = Embedding(vocabulary_size, width, rng=rng)
        self.hidden = Linear(context * width, hidden, rng=rng)
        self.head = Linear(hidden, vocabulary_size, rng=rng)
        with no_grad():
            self.embedding.weight.copy_(rng.normal(size=self.embedding.weight.shape))
            self.hidden.weight.copy_(rng.normal(0.0, TANH_GAIN / math.sqrt(context * width),
                                                size=self.hidden.weight.shape))
            self.head.weight.copy_(rng.normal(0.0, 0.1 / math.sqrt(hidden),
                                              size=self.head.weight.shape))
            assert self.hidden.bias is not None and self.head.bias is not None  # bias=True
            self.hidden.bias.zero_()
            self.head.bias.zero_()

    def forward(self, ids: Any) -> Tensor:
        e = self.embedding(ids)                                          # (M, context, width)
        h = self.hidden(e.reshape(-1, self.context * self.width)).tanh()  # (M, hidden)
        return self.head(h)                                              # (M, V)


class WindowModel(Module):
    """A model of ``context`` ids (``net``: ``(M, context)`` → ``(M, V)``) applied at every
    position of name rows, to the window that ends there (:func:`context_windows`)."""

    def __init__(self, net: Module, context: int):
        super().__init__()
        self.net = net
        self.context = context

    def forward(self, inputs: Any) -> Tensor:
        """``(N, T)`` rows → logits ``(N, T, V)``."""
        inputs = np.asarray(inputs)
        windows = context_windows(inputs, self.context).reshape(-1, self.context)
        return self.net(windows).reshape(inputs.shape[0], inputs.shape[1], -1)


class AttentionOnly(Module):
    """One pre-norm attention block and no MLP: token plus position embeddings,
    ``x + attention(norm(x))``, a final LayerNorm and the head: ``(N, T)`` → ``(N, T, V)``."""

    def __init__(self, vocabulary_size: int, context_length: int, channels: int, heads: int,
                 rng: Rng):
        super().__init__()
        self.token_embedding = Embedding(vocabulary_size, channels, rng=rng)
        self.positional_embedding = PositionalEmbedding(context_length, channels, rng=rng)
        self.attention_norm = LayerNorm(channels)
        self.attention = MultiheadAttention(channels, heads, rng=rng)
        self.final_norm = LayerNorm(channels)
        self.language_model_head = Linear(channels, vocabulary_size, rng=rng)

    def forward(self, inputs: Any) -> Tensor:
        x = self.positional_embedding(self.token_embedding(inputs))  # (N, T, C)
        x = x + self.attention(self.attention_norm(x))
        return self.language_model_head(self.final_norm(x))         # (N, T, V)


def build_rung(rung: str, data: LadderData, seed: int = 0) -> Module:
    """The untrained model of a trained rung, initialized from ``Rng(seed)``. The attention
    and recurrent models' heads are scaled by 0.1 (notebook 15's fix: the first loss near
    ln V)."""
    vocabulary, length, rng = data.vocabulary_size, data.length, Rng(seed)
    if rung == "mlp3":
        return WindowModel(ContextMLP(vocabulary, 3, width=10, hidden=200, rng=rng), 3)
    if rung == "mlp_name":
        return WindowModel(ContextMLP(vocabulary, length, width=24, hidden=560, rng=rng),
                           length)
    if rung == "wavenet":
        return WindowModel(WaveNet(vocabulary, context_length=16, embedding_width=24,
                                   hidden=178, rng=rng), 16)
    if rung in RECURRENT_WIDTHS:  # its head already scaled
        return RecurrentNameModel(vocabulary, rung, embedding_width=64,
                                  hidden=RECURRENT_WIDTHS[rung], rng=rng)
    if rung in ("one_head", "heads"):
        model: Module = AttentionOnly(vocabulary, length, channels=64,
                                      heads=1 if rung == "one_head" else 4, rng=rng)
    elif rung == "decoder":
        model = Decoder(DecoderConfig(vocabulary_size=vocabulary, context_length=length,
                                      channels=64, heads=4, layers=4), rng=rng)
    else:
        raise ValueError(f"unknown trained rung {rung!r}; the trained rungs are "
                         f"{', '.join(RUNGS[1:])}")
    with no_grad():
        model.language_model_head.weight.mul_(0.1)
    return model


# =============================================================================== loss, scoring
def scored_logits(model: Module, inputs: np.ndarray, scored: np.ndarray) -> Tensor:
    """The logits ``(M, V)`` at the flat positions ``scored`` of ``(N, T)`` rows. A window
    model computes only those; an attention model needs every position up to them."""
    if isinstance(model, WindowModel):
        windows = context_windows(inputs, model.context).reshape(-1, model.context)
        return model.net(windows[scored])
    logits = model(inputs)                                      # (N, T, V)
    return logits.reshape(-1, logits.shape[-1])[scored]


def rung_loss(model: Module, inputs: np.ndarray,
              targets_and_valid: tuple[np.ndarray, np.ndarray]) -> Tensor:
    """Mean cross-entropy over the valid positions of ``(N, T)`` rows (``train``'s loss_fn)."""
    targets, valid = targets_and_valid
    scored = np.flatnonzero(valid.ravel())
    return F.cross_entropy(scored_logits(model, inputs, scored), targets.ravel()[scored])


def position_nats(model: Module | BigramModel,
                  rows: tuple[np.ndarray, np.ndarray, np.ndarray]) -> tuple[np.ndarray,
                                                                             np.ndarray]:
    """Summed nats and counts of the valid targets at each position ``(T,)`` of ``rows``,
    in eval mode without a graph; their ratio is the loss by position, their sums' ratio
    the loss per character."""
    inputs, targets, valid = rows
    nats = np.zeros(inputs.shape[1])
    if isinstance(model, BigramModel):
        picked = -np.log(model.probabilities[inputs, targets])          # (N, T)
        return (picked * valid).sum(axis=0), valid.sum(axis=0)
    with no_grad(), evaluation_mode(model):
        for start in range(0, len(inputs), EVALUATION_CHUNK):
            part = slice(start, start + EVALUATION_CHUNK)
            scored = np.flatnonzero(valid[part].ravel())
            losses = F.cross_entropy(scored_logits(model, inputs[part], scored),
                                     targets[part].ravel()[scored], reduction="none")
            positions = scored % inputs.shape[1]
            nats += np.bincount(positions, weights=losses.numpy().astype(np.float64),
                                minlength=inputs.shape[1])
    return nats, valid.sum(axis=0)


def mean_nats(model: Module | BigramModel,
              rows: tuple[np.ndarray, np.ndarray, np.ndarray]) -> float:
    """Nats per valid target of ``rows``."""
    nats, counts = position_nats(model, rows)
    return float(nats.sum() / counts.sum())


# ==================================================================================== one rung
@dataclass
class RungResult:
    """One rung's record: what the ladder's table and plots show."""

    rung: str
    description: str
    parameters: int
    steps: int
    characters: int              # valid targets trained on (the bigram: counted once each)
    seconds: float               # wall-clock training time, evaluations excluded
    train_loss: float            # on ``LadderData.train_sample``
    validation_loss: float
    validation_curve: list[tuple[int, float]]
    train_curve: list[tuple[int, float]]   # (last step, mean batch loss of its window)
    position_loss: list[float]   # validation nats by position in the name
    position_count: list[int]


def _by_position(nats: np.ndarray, counts: np.ndarray) -> tuple[list[float], list[int]]:
    """The loss at each position (0 where there is no target) and the counts, as lists."""
    return [float(x) for x in nats / np.maximum(counts, 1)], [int(c) for c in counts]


def _bigram_result(data: LadderData) -> tuple[RungResult, BigramModel]:
    started = time.perf_counter()
    bigram = BigramModel.from_words(data.train_words, data.tokenizer, smoothing=1.0)
    seconds = time.perf_counter() - started
    nats, counts = position_nats(bigram, data.validation)
    characters = int(data.train[2].sum())
    result = RungResult("bigram", DESCRIPTIONS["bigram"], bigram.counts.size, 0, characters,
                        seconds, mean_nats(bigram, data.train_sample),
                        float(nats.sum() / counts.sum()), [], [], *_by_position(nats, counts))
    return result, bigram


def run_rung(rung: str, data: LadderData, budget: Budget = Budget(), steps: int | None = None,
             progress: bool = True,
             evaluate: bool = True) -> tuple[RungResult, Module | BigramModel]:
    """Train one rung under ``budget`` and score it; return its result and its model.

    ``steps`` (at most ``budget.steps``) stops early on the budget's schedule: the first
    ``steps`` steps are exactly those of the full run, so their validation losses are the
    full run's at those steps. ``evaluate=False`` skips the final scoring (the result's
    losses by position are then empty).
    """
    if rung == "bigram":
        return _bigram_result(data)
    steps = budget.steps if steps is None else steps
    if not 1 <= steps <= budget.steps:
        raise ValueError(f"steps must be in [1, {budget.steps}] (the budget's), got {steps}")
    model = build_rung(rung, data, budget.seed)
    return train_rung(model, rung, DESCRIPTIONS[rung], data, budget, steps, progress,
                      evaluate), model


def train_rung(model: Module, rung: str, description: str, data: LadderData, budget: Budget,
               steps: int, progress: bool = True, evaluate: bool = True) -> RungResult:
    """Train ``model`` for the first ``steps`` steps of ``budget`` (its batches from
    ``Rng(budget.seed + 1)``) and score it on ``data``'s validation names: what
    :func:`run_rung` does once it has built a rung's model."""
    optimizer = AdamW(model, lr=budget.learning_rate, weight_decay=budget.weight_decay)
    schedule = WarmupCosineSchedule(optimizer, base_lr=budget.learning_rate,
                                    warmup_steps=budget.warmup_steps,
                                    total_steps=budget.steps,
                                    min_lr=budget.min_learning_rate)
    batch_rng = Rng(budget.seed + 1)
    characters = 0

    def batch(step: int) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
        nonlocal characters
        inputs, targets, valid = random_batch(batch_rng, budget.batch_names, *data.train)
        length = int(np.flatnonzero(valid.any(axis=0))[-1]) + 1  # the batch's longest name
        characters += int(valid.sum())
        return inputs[:, :length], (targets[:, :length], valid[:, :length])

    scored: list[tuple[np.ndarray, np.ndarray]] = []  # the latest validation, by position

    def validation_loss() -> float:
        scored[:] = [position_nats(model, data.validation)]
        nats, counts = scored[0]
        return float(nats.sum() / counts.sum())

    history = train(model, optimizer, batch, steps=steps, loss_fn=rung_loss,
                    schedule=schedule, max_grad_norm=budget.max_grad_norm,
                    evaluate=validation_loss if evaluate else None,
                    evaluate_every=budget.evaluate_every if evaluate else None,
                    progress=progress)
    seconds = float(sum(record.seconds for record in history))
    curve = [(step, float(loss)) for step, loss in history.evaluations()]
    batch_losses = np.array([record.train_loss for record in history], dtype=np.float64)
    window = budget.train_window
    train_curve = [(end, float(batch_losses[end - window:end].mean()))
                   for end in range(window, len(batch_losses) + 1, window)]
    if evaluate:  # train() scored the validation set after the last step: reuse it
        train_loss, final_loss = mean_nats(model, data.train_sample), curve[-1][1]
        by_position, count_list = _by_position(*scored[0])
    else:
        train_loss = final_loss = math.nan
        by_position, count_list = [], []
    return RungResult(rung, description, model.num_parameters(), steps, characters, seconds,
                      train_loss, final_loss, curve, train_curve, by_position, count_list)


# ================================================================================= the ladder
def _machine() -> dict[str, Any]:
    """Where the seconds were measured."""
    processor = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            models = [line.split(":", 1)[1].strip() for line in info
                      if line.startswith("model name")]
        processor = models[0] if models else processor
    except OSError:
        pass
    return {"processor": processor, "cores": os.cpu_count(), "system": platform.system(),
            "python": platform.python_version(), "numpy": np.__version__,
            "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS")}


def run_ladder(rungs: Sequence[str] = RUNGS, budget: Budget = Budget(), progress: bool = True,
               report: Callable[[RungResult], Any] | None = None) -> dict[str, Any]:
    """Run ``rungs`` in order under ``budget``; return the JSON-ready record of all of them
    (see ``notebooks/data/ladder/README.md``). ``report`` is called after each rung."""
    unknown = [rung for rung in rungs if rung not in RUNGS]
    if unknown:
        raise ValueError(f"unknown rung(s) {', '.join(map(repr, unknown))}; the rungs are "
                         f"{', '.join(RUNGS)}")
    data = ladder_data(budget.seed)
    results = []
    for rung in rungs:
        result, _ = run_rung(rung, data, budget, progress=progress)
        results.append(dataclasses.asdict(result))
        if report is not None:
            report(result)
    return {
        "format": "tensorlib ladder",
        "version": 1,
        "budget": dataclasses.asdict(budget),
        "data": {"kind": "last", "split": [0.8, 0.1, 0.1], "row_length": data.length,
                 "train_names": len(data.train_words),
                 "validation_names": len(data.validation_words),
                 "validation_characters": int(data.validation[2].sum())},
        "machine": _machine(),
        "rungs": results,
    }



def save_ladder(record: dict[str, Any], path: str | os.PathLike) -> None:
    """Write a ladder's record (what :func:`run_ladder` returns) to ``path`` as JSON, whole or
    not at all; OSError when it cannot be written."""
    write_text_atomic(path, json.dumps(record, indent=1) + "\n")


def ladder_table(record: dict[str, Any]) -> str:
    """The ladder's results (what :func:`run_ladder` returns, or its JSON file read back) as
    a text table, one row per rung."""
    lines = [f"{'rung':<10} {'model':<28} {'parameters':>10} {'steps':>6} {'characters':>11} "
             f"{'seconds':>7} {'train':>6} {'validation':>10}"]
    for rung in record["rungs"]:
        steps = f"{rung['steps']:,}" if rung["steps"] else "-"
        lines.append(f"{rung['rung']:<10} {rung['description']:<28} {rung['parameters']:>10,} "
                     f"{steps:>6} {rung['characters']:>11,} {rung['seconds']:>7.1f} "
                     f"{rung['train_loss']:>6.3f} {rung['validation_loss']:>10.3f}")
    return "\n".join(lines)
