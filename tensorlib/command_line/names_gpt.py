"""A names run: a GPT-style Decoder trained on a census name list, saved as a folder, loaded
back and sampled; what ``python -m tensorlib train-names`` and ``sample-names`` do::

    run = prepare_names_run(NamesSettings(steps=300))   # data, model, optimizer, first loss
    result = train_names_run(run)                        # and the bigram baseline's losses
    save_names_run(run, result, Path("runs/names"))
    saved = read_run_config(Path("runs/names/config.json"))
    model = load_names_model(saved.model, Path("runs/names/checkpoint.tlckpt"))
    sample_names(model, saved.tokenizer, 10, Rng(saved.seed), saved.max_name_length)

The census list is split 80/10/10 (train/validation/test, seeded). The Decoder starts with
its head's weights scaled by 0.1, so the first loss is near ln V (notebook 15's fix), and is
trained on random windows of the training names' token stream with AdamW, a warm-up + cosine
schedule and gradient clipping. Its losses are measured on the first consecutive windows of
each split, where the count-based bigram model is scored too. A saved run is a folder holding
``checkpoint.tlckpt`` (TLCKPT, with the AdamW and RNG state unless weights only),
``config.json`` (what :func:`read_run_config` reads back) and ``loss_curve.png``.

Nothing here prints: the command line (``tensorlib.command_line.main``) reports.
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tensorlib.data import (
    NAME_KINDS,
    CharTokenizer,
    names,
    random_windows,
    stream_windows,
    token_stream,
    train_validation_test_split,
)
from tensorlib.engine import validation
from tensorlib.engine.autograd import no_grad
from tensorlib.engine.files import write_text_atomic
from tensorlib.engine.splitmix64 import Rng
from tensorlib.models.bigram_counts import BigramModel
from tensorlib.nn import Decoder, DecoderConfig
from tensorlib.optim import AdamW, WarmupCosineSchedule
from tensorlib.saving import checkpoint
from tensorlib.training.loop import History, mean_loss, train

__all__ = [
    "CONFIG_FORMAT",
    "CONFIG_VERSION",
    "MAX_SEED",
    "SPLIT",
    "NamesResult",
    "NamesRun",
    "NamesSettings",
    "RunConfigError",
    "RunLosses",
    "SavedRunConfig",
    "load_names_model",
    "prepare_names_run",
    "read_run_config",
    "run_record",
    "sample_names",
    "save_names_run",
    "train_names_run",
]

CONFIG_FORMAT = "tensorlib names run"
CONFIG_VERSION = 1
SPLIT = (0.8, 0.1, 0.1)
MAX_SEED = 2**63 - 1  # the batches come from Rng(seed + 1), which must stay below 2**64
MAX_GRAD_NORM = 1.0
EVALUATION_BATCH = 256  # windows per forward pass when measuring a loss
DEFAULT_MAX_NAME_LENGTH = 32  # for a config without "max_name_length"
CHECKPOINT_FILE = "checkpoint.tlckpt"
CONFIG_FILE = "config.json"
LOSS_CURVE_FILE = "loss_curve.png"


# =================================================================================== training
@dataclass(frozen=True)
class NamesSettings:
    """What to train: the census list (``kind``), the Decoder's shape, the optimizer's
    settings, when and on how many windows of each split to measure the losses, and the seed
    of the split, the initialization, the batches and the samples.

    ``eval_every`` None measures the validation loss every ``steps // 10`` steps (at least
    every step); ``eval_windows`` 0 measures on every window of a split. ``seed`` must be in
    [0, :data:`MAX_SEED`]; the model's sizes are checked when :class:`DecoderConfig` is built.
    """

    kind: str = "last"
    steps: int = 1500
    layers: int = 2
    channels: int = 64
    heads: int = 4
    context_length: int = 16
    batch_size: int = 32
    learning_rate: float = 3e-3
    weight_decay: float = 0.01
    dropout: float = 0.0
    eval_every: int | None = None
    eval_windows: int = 1000
    seed: int = 0

    def __post_init__(self) -> None:
        validation.integer(self.seed, "seed", minimum=0, maximum=MAX_SEED)
        validation.integer(self.eval_windows, "eval_windows", minimum=0)

    @property
    def warmup_steps(self) -> int:
        """Steps of linear warm-up: a tenth of the run, at most 100."""
        return min(100, self.steps // 10)

    @property
    def min_learning_rate(self) -> float:
        """Where the cosine ends: a tenth of the peak rate."""
        return self.learning_rate / 10

    @property
    def evaluate_every(self) -> int:
        """Steps between validation losses."""
        return self.eval_every or max(1, self.steps // 10)


@dataclass
class NamesRun:
    """A run ready to train (:func:`prepare_names_run`): the names, their split and their
    tokenizer; the training split's token stream (where the batches come from); the
    ``(inputs, targets)`` windows the losses are measured on; the model with its optimizer,
    schedule and the generator of the batches; and the validation loss before training."""

    settings: NamesSettings
    words: list[str]
    tokenizer: CharTokenizer
    train_words: list[str]
    validation_words: list[str]
    test_words: list[str]
    train_stream: np.ndarray
    train_windows: tuple[np.ndarray, np.ndarray]
    validation_windows: tuple[np.ndarray, np.ndarray]
    model: Decoder
    optimizer: AdamW
    schedule: WarmupCosineSchedule
    batch_rng: Rng
    initial_validation_loss: float

    @property
    def max_name_length(self) -> int:
        """The longest name's characters: where sampling cuts a name that does not end."""
        return max(len(word) for word in self.words)


@dataclass(frozen=True)
class RunLosses:
    """Mean loss per character (nats) on the evaluation windows, before and after
    training, beside the add-one bigram model's on the same windows."""

    initial_validation_loss: float
    train_loss: float
    validation_loss: float
    bigram_train_loss: float
    bigram_validation_loss: float


@dataclass(frozen=True)
class NamesResult:
    """What :func:`train_names_run` gives back: the training's :class:`History`, the losses,
    and the seconds training took (its evaluations included)."""

    history: History
    losses: RunLosses
    seconds: float


def _first_windows(stream: np.ndarray, length: int,
                   count: int) -> tuple[np.ndarray, np.ndarray]:
    """The first ``count`` consecutive, non-overlapping windows of ``stream`` (0: all)."""
    inputs, targets = stream_windows(stream, length)
    return (inputs[:count], targets[:count]) if count else (inputs, targets)


def _windows_loss(model: Decoder, windows: tuple[np.ndarray, np.ndarray]) -> float:
    """The model's mean loss per character on ``(inputs, targets)`` windows."""
    return mean_loss(model, *windows, batch_size=EVALUATION_BATCH)


def prepare_names_run(settings: NamesSettings) -> NamesRun:
    """Load and split the census names of ``settings.kind``, cut the evaluation windows, build
    the Decoder (from ``Rng(seed)``, its head's weights scaled by 0.1), AdamW and its
    schedule, and measure the validation loss before training.

    ValueError when the settings cannot make a run: a context longer than the validation
    split's text, or a model shape :class:`DecoderConfig` refuses.
    """
    words = names(settings.kind)
    tokenizer = CharTokenizer(words)
    train_words, validation_words, test_words = train_validation_test_split(
        words, SPLIT, seed=settings.seed)
    length = settings.context_length
    train_stream = token_stream(train_words, tokenizer)
    validation_stream = token_stream(validation_words, tokenizer)
    if len(validation_stream) < length + 1:
        raise ValueError(f"a context of {length} tokens is longer than the validation text "
                         f"({len(validation_stream)} tokens)")
    validation_windows = _first_windows(validation_stream, length, settings.eval_windows)
    config = DecoderConfig(vocabulary_size=tokenizer.vocabulary_size, context_length=length,
                           channels=settings.channels, heads=settings.heads,
                           layers=settings.layers, dropout=settings.dropout)
    model = Decoder(config, rng=Rng(settings.seed))
    # Near-equal first logits, so the first loss is near ln V (notebook 15's fix).
    with no_grad():
        model.language_model_head.weight.mul_(0.1)
    initial_loss = _windows_loss(model, validation_windows)
    optimizer = AdamW(model, lr=settings.learning_rate, weight_decay=settings.weight_decay)
    schedule = WarmupCosineSchedule(optimizer, base_lr=settings.learning_rate,
                                    warmup_steps=settings.warmup_steps,
                                    total_steps=settings.steps,
                                    min_lr=settings.min_learning_rate)
    return NamesRun(settings, words, tokenizer, train_words, validation_words, test_words,
                    train_stream, _first_windows(train_stream, length, settings.eval_windows),
                    validation_windows, model, optimizer, schedule, Rng(settings.seed + 1),
                    initial_loss)


def train_names_run(run: NamesRun, progress: bool = True) -> NamesResult:
    """Train ``run.model`` for ``settings.steps`` steps of random training windows (clipped
    at :data:`MAX_GRAD_NORM`), measuring the validation loss every ``evaluate_every`` steps;
    then score it and the add-one bigram model of the training stream on the evaluation
    windows. ``progress`` shows :func:`tensorlib.training.loop.train`'s progress bar. Raises
    :class:`tensorlib.training.loop.TrainingDivergedError` if the loss stops being finite."""
    settings = run.settings

    def batches(step: int) -> tuple[np.ndarray, np.ndarray]:
        return random_windows(run.train_stream, settings.context_length, settings.batch_size,
                              run.batch_rng)

    started = time.perf_counter()
    history = train(run.model, run.optimizer, batches, settings.steps,
                    evaluate=lambda: _windows_loss(run.model, run.validation_windows),
                    evaluate_every=settings.evaluate_every, schedule=run.schedule,
                    max_grad_norm=MAX_GRAD_NORM, progress=progress)
    seconds = time.perf_counter() - started
    bigram = BigramModel.fit_pairs(run.train_stream[:-1], run.train_stream[1:],
                                   run.tokenizer.vocabulary_size, smoothing=1.0)
    losses = RunLosses(
        initial_validation_loss=run.initial_validation_loss,
        train_loss=_windows_loss(run.model, run.train_windows),
        validation_loss=history.final()["validation_loss"],
        bigram_train_loss=bigram.pair_negative_log_likelihood(*run.train_windows),
        bigram_validation_loss=bigram.pair_negative_log_likelihood(*run.validation_windows),
    )
    return NamesResult(history, losses, seconds)


# ================================================================================ saving
def run_record(run: NamesRun, result: NamesResult) -> dict[str, Any]:
    """The JSON-ready record of a trained run, as ``config.json`` holds it: the format and
    version, the model's :class:`DecoderConfig`, the tokenizer's characters (boundary
    first), the seed, the census list, the longest name, the training settings and the
    losses."""
    settings = run.settings
    return {
        "format": CONFIG_FORMAT,
        "version": CONFIG_VERSION,
        "model": dataclasses.asdict(run.model.config),
        "characters": run.tokenizer.characters,
        "seed": settings.seed,
        "kind": settings.kind,
        "max_name_length": run.max_name_length,
        "training": {"steps": settings.steps, "batch_size": settings.batch_size,
                     "learning_rate": settings.learning_rate,
                     "warmup_steps": settings.warmup_steps,
                     "min_learning_rate": settings.min_learning_rate,
                     "weight_decay": settings.weight_decay, "max_grad_norm": MAX_GRAD_NORM,
                     "split": list(SPLIT), "eval_windows": settings.eval_windows},
        "results": dataclasses.asdict(result.losses),
    }


def save_names_run(run: NamesRun, result: NamesResult, folder: Path,
                   weights_only: bool = False) -> tuple[Path, Path, Path]:
    """Write the run into ``folder`` (created with its parents if missing): the checkpoint
    (the model's parameters, and unless ``weights_only`` AdamW's state and the batch
    generator's, so training could resume), :func:`run_record` as ``config.json``, and the
    loss curves against the bigram's validation loss as ``loss_curve.png``. Returns the three
    paths. Raises OSError when a file cannot be written."""
    folder.mkdir(parents=True, exist_ok=True)
    checkpoint_path = folder / CHECKPOINT_FILE
    config_path = folder / CONFIG_FILE
    figure_path = folder / LOSS_CURVE_FILE
    if weights_only:
        checkpoint.save(checkpoint_path, run.model)
    else:
        checkpoint.save(checkpoint_path, run.model, run.optimizer, rng=run.batch_rng)
    write_text_atomic(config_path, json.dumps(run_record(run, result), indent=2) + "\n")
    _save_loss_curve(result.history, result.losses.bigram_validation_loss, figure_path)
    return checkpoint_path, config_path, figure_path


def _save_loss_curve(history: History, bigram_loss: float, path: Path) -> None:
    from tensorlib.viz.plots import plot_loss_curves

    figure = plot_loss_curves(history, smoothing=0.9, title="census names: decoder loss")
    axes = figure.axes[0]
    axes.axhline(bigram_loss, color="gray", linestyle="--", linewidth=1.0,
                 label="bigram (validation)")
    axes.legend(loc="upper right")
    figure.savefig(path, dpi=120)


# ================================================================================ loading
class RunConfigError(ValueError):
    """A run's ``config.json`` cannot be used; the message names the file and the entry."""


@dataclass(frozen=True)
class SavedRunConfig:
    """A run's ``config.json`` read back by :func:`read_run_config`: the model's shape, the
    tokenizer, and the whole ``record``. The other entries are checked when they are read,
    so an entry that is not needed cannot fail."""

    path: Path
    model: DecoderConfig
    tokenizer: CharTokenizer
    record: dict[str, Any]

    def integer(self, key: str, default: int) -> int:
        """The entry ``key`` (``default`` when missing), an integer in [0, MAX_SEED]; a
        :class:`RunConfigError` naming the entry otherwise."""
        value = self.record.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SEED:
            raise RunConfigError(f"config file {self.path}: {key!r} must be a non-negative "
                                 f"integer, got {value!r}")
        return value

    @property
    def seed(self) -> int:
        """The run's seed (0 when missing): sampling with it repeats the run's samples."""
        return self.integer("seed", 0)

    @property
    def max_name_length(self) -> int:
        """The longest name of the run's list (32 when missing or 0)."""
        return self.integer("max_name_length", DEFAULT_MAX_NAME_LENGTH) or \
            DEFAULT_MAX_NAME_LENGTH

    @property
    def kind(self) -> str | None:
        """The census list the run learned, or None when the entry names none."""
        kind = self.record.get("kind")
        return kind if kind in NAME_KINDS else None


def read_run_config(path: Path) -> SavedRunConfig:
    """Read and check a run's ``config.json``: its format and version, the model's
    :class:`DecoderConfig` and the tokenizer's characters (distinct, sorted after the
    boundary, as many as the model's vocabulary).

    OSError (FileNotFoundError among them) when the file cannot be read;
    :class:`RunConfigError` naming the file and the entry when its contents are wrong.
    """
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise RunConfigError(f"config file {path} is not valid JSON: {error}") from None
    if not isinstance(record, dict) or record.get("format") != CONFIG_FORMAT:
        raise RunConfigError(f"{path} is not a train-names config (no \"format\": "
                             f"\"{CONFIG_FORMAT}\")")
    if record.get("version") != CONFIG_VERSION:
        raise RunConfigError(f"config file {path} has version {record.get('version')!r}; "
                             f"this tensorlib reads version {CONFIG_VERSION}")
    for key in ("model", "characters"):
        if key not in record:
            raise RunConfigError(f"config file {path} has no {key!r} entry")
    if not isinstance(record["model"], dict):
        raise RunConfigError(f"config file {path}: 'model' must be an object")
    try:
        config = DecoderConfig(**record["model"])
    except (TypeError, ValueError) as error:
        raise RunConfigError(f"config file {path} has a bad model configuration: "
                             f"{error}") from None
    characters = record["characters"]
    if not (isinstance(characters, list) and len(characters) >= 2
            and all(isinstance(c, str) and len(c) == 1 for c in characters)):
        raise RunConfigError(f"config file {path}: 'characters' must be a list of single "
                             "characters, the boundary first")
    try:
        tokenizer = CharTokenizer("".join(characters[1:]), boundary=characters[0])
    except ValueError as error:
        raise RunConfigError(f"config file {path} has bad characters: {error}") from None
    if tokenizer.characters != characters:
        raise RunConfigError(f"config file {path}: 'characters' must be distinct and sorted "
                             "after the boundary")
    if tokenizer.vocabulary_size != config.vocabulary_size:
        raise RunConfigError(f"config file {path}: {len(characters)} characters but "
                             f"vocabulary_size {config.vocabulary_size}")
    return SavedRunConfig(path, config, tokenizer, record)


def load_names_model(config: DecoderConfig, checkpoint_path: Path) -> Decoder:
    """A Decoder of shape ``config`` holding the parameters saved at ``checkpoint_path``.
    Raises :class:`tensorlib.saving.checkpoint.CheckpointError` when the file is malformed or does
    not fit the model, OSError when it cannot be read."""
    model = Decoder(config, rng=Rng(0))  # every initial value is replaced by the checkpoint's
    checkpoint.load(checkpoint_path, model)
    return model


# =============================================================================== sampling
def sample_names(model: Decoder, tokenizer: CharTokenizer, count: int, rng: Rng,
                 max_length: int, temperature: float = 1.0,
                 top_k: int | None = None) -> list[str]:
    """``count`` names generated after the boundary token, each cut at its next boundary
    (or after ``max_length`` characters)."""
    if count == 0:
        return []
    prompt = np.full((count, 1), tokenizer.boundary_id, dtype=np.int64)
    ids = model.generate(prompt, max_new_tokens=max_length + 1, temperature=temperature,
                         top_k=top_k, rng=rng)[:, 1:]  # (count, max_length + 1)
    ended = ids == tokenizer.boundary_id
    lengths = np.where(ended.any(axis=1), ended.argmax(axis=1), max_length)  # (count,)
    return [tokenizer.decode(ids[row, :lengths[row]]) for row in range(count)]
