"""The tensorlib command line: train a small GPT on US census names and sample from it, run
the capstone's ladder of models, and show a learner's progress through the workbook.

    python -m tensorlib train-names [--steps 1500] [--output runs/names] [...]
    python -m tensorlib sample-names --checkpoint runs/names/checkpoint.tlckpt [--count 20]
    python -m tensorlib ladder [--steps 10000] [--rungs bigram,mlp3,...] [--output runs/ladder]
    python -m tensorlib progress [notebooks]
    python -m tensorlib generate FOLDER --prompt TEXT [--max-new-tokens 30] [--top-k 40]

``train-names`` trains a names run (``tensorlib.command_line.names_gpt``): it splits the census list
80/10/10 (train/validation/test, seeded), builds the ``tensorlib.nn.Decoder`` with its head's
weights scaled by 0.1 (so the first loss is near ln V, notebook 15's fix) and prints that
loss, trains it on the training names with AdamW, a warm-up + cosine schedule and gradient
clipping, compares its loss with the count-based bigram baseline on the same windows, writes
``checkpoint.tlckpt`` (TLCKPT with AdamW and RNG state, or the parameters only with
``--weights-only``), ``config.json`` and ``loss_curve.png`` into the output folder, and
prints sampled names. ``sample-names`` loads such a run and prints new names. ``ladder``
trains notebook 15's ladder of ten surname models under one budget
(``tensorlib.training.ladder``), prints their table and writes it as ``ladder.json``. ``progress``
prints, notebook by notebook and in the order of their cells, which core pieces and exercises are
done, as their check cells last recorded (``tensorlib.course.checks.progress``), and the whole
workbook's count. ``generate`` reads a Hugging Face GPT-2 or Llama folder
(``Decoder.from_pretrained``) and prints a prompt's continuation. Bad options and
unreadable files print one ``error:`` line and exit with status 2.

This module parses the options and prints; the library modules named above compute.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tensorlib.command_line.names_gpt import (
    CONFIG_FILE,
    MAX_GRAD_NORM,
    MAX_SEED,
    NamesSettings,
    RunConfigError,
    SavedRunConfig,
    load_names_model,
    prepare_names_run,
    read_run_config,
    sample_names,
    save_names_run,
    train_names_run,
)
from tensorlib.course.checks import progress as workbook
from tensorlib.data import NAME_KINDS, names
from tensorlib.data.bpe import BPETokenizer
from tensorlib.engine.memory import keep_freed_memory
from tensorlib.engine.splitmix64 import Rng
from tensorlib.engine.validation import heads_divide
from tensorlib.models import Decoder
from tensorlib.saving import checkpoint
from tensorlib.training.ladder import (
    RUNGS,
    Budget,
    RungResult,
    ladder_table,
    run_ladder,
    save_ladder,
)
from tensorlib.training.loop import TrainingDivergedError


class CommandError(Exception):
    """A problem the user can fix (an option, a file); reported as one ``error:`` line."""


# =============================================================================== option types
def _option_type(parse: Callable[[str], Any], accept: Callable[[Any], bool], expected: str,
                 rule: str) -> Callable[[str], Any]:
    """An argparse ``type``: ``parse(text)``, refused with "expected <expected>" when it
    cannot be parsed and "must be <rule>" when ``accept`` says no."""
    def convert(text: str) -> Any:
        try:
            value = parse(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
        if not accept(value):
            raise argparse.ArgumentTypeError(f"must be {rule}, got {text}")
        return value
    return convert


_positive_int = _option_type(int, lambda v: v >= 1, "a positive integer", "a positive integer")
_non_negative_int = _option_type(int, lambda v: v >= 0, "an integer >= 0", "an integer >= 0")
_seed = _option_type(int, lambda v: 0 <= v <= MAX_SEED, "an integer >= 0",
                     "an integer from 0 to 2**63 - 1")
_positive_float = _option_type(float, lambda v: 0.0 < v < math.inf, "a positive number",
                               "a finite number > 0")
_fraction = _option_type(float, lambda v: 0.0 <= v < 1.0, "a number in [0, 1)", "in [0, 1)")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``python -m tensorlib``."""
    parser = argparse.ArgumentParser(
        prog="tensorlib",
        description="tensorlib's command line: train a character-level GPT on US census "
                    "names, sample names from a trained run, and show your progress through "
                    "the workbook.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    defaults = NamesSettings()
    trainer = commands.add_parser(
        "train-names", help="train a GPT-style decoder on census names",
        description="Train tensorlib's GPT-style Decoder on a census name list (split "
                    "80/10/10 into train/validation/test), compare it with a count-based "
                    "bigram model, save the run and print sampled names.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    trainer.add_argument("--kind", choices=NAME_KINDS, default=defaults.kind,
                         help="which census list to learn")
    trainer.add_argument("--steps", type=_positive_int, default=defaults.steps,
                         help="optimizer steps")
    trainer.add_argument("--layers", type=_positive_int, default=defaults.layers,
                         help="decoder blocks")
    trainer.add_argument("--channels", type=_positive_int, default=defaults.channels,
                         help="embedding width (a multiple of --heads)")
    trainer.add_argument("--heads", type=_positive_int, default=defaults.heads,
                         help="attention heads")
    trainer.add_argument("--context-length", type=_positive_int,
                         default=defaults.context_length,
                         help="tokens the model sees at once")
    trainer.add_argument("--batch-size", type=_positive_int, default=defaults.batch_size,
                         help="windows per step")
    trainer.add_argument("--learning-rate", type=_positive_float,
                         default=defaults.learning_rate,
                         help="peak AdamW learning rate (warm-up, then cosine to a tenth)")
    trainer.add_argument("--weight-decay", type=_fraction, default=defaults.weight_decay,
                         help="AdamW weight decay")
    trainer.add_argument("--dropout", type=_fraction, default=defaults.dropout,
                         help="dropout probability")
    trainer.add_argument("--eval-every", type=_positive_int, default=defaults.eval_every,
                         help="steps between validation losses (default: steps / 10)")
    trainer.add_argument("--eval-windows", type=_non_negative_int,
                         default=defaults.eval_windows,
                         help="windows of each split used to measure losses (0: all)")
    trainer.add_argument("--seed", type=_seed, default=defaults.seed,
                         help="seed of the split, the initialization, the batches and the "
                              "samples")
    trainer.add_argument("--output", type=Path, default=Path("runs/names"),
                         help="folder for checkpoint.tlckpt, config.json, loss_curve.png")
    trainer.add_argument("--samples", type=_non_negative_int, default=10,
                         help="names to sample after training")
    trainer.add_argument("--quiet", action="store_true",
                         help="no progress bar (results are still printed)")
    trainer.add_argument("--weights-only", action="store_true",
                         help="save only the model's parameters in the checkpoint (no AdamW "
                              "or RNG state: a third of the size, but training cannot resume "
                              "from it)")
    trainer.set_defaults(handler=train_names_command)

    sampler = commands.add_parser(
        "sample-names", help="sample names from a trained run",
        description="Load a run written by train-names and print sampled names.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    sampler.add_argument("--checkpoint", type=Path, required=True,
                         help="the run's checkpoint.tlckpt")
    sampler.add_argument("--config", type=Path, default=None,
                         help="the run's config.json (default: beside the checkpoint)")
    sampler.add_argument("--count", type=_non_negative_int, default=10, help="names to print")
    sampler.add_argument("--temperature", type=_positive_float, default=1.0,
                         help="divide the logits by this (lower: safer, more common names)")
    sampler.add_argument("--top-k", type=_positive_int, default=None,
                         help="sample only among the k most likely characters")
    sampler.add_argument("--seed", type=_seed, default=None,
                         help="sampling seed (default: the run's seed, which repeats the "
                              "names train-names printed)")
    sampler.set_defaults(handler=sample_names_command)

    ladder = commands.add_parser(
        "ladder", help="train the capstone's ladder of surname models",
        description="Train the ladder of notebook 15 under one budget: bigram counts, an MLP "
                    "on 3 characters, an MLP and a WaveNet on the whole name, a vanilla RNN, "
                    "a GRU and an LSTM, attention with one head and with 4 heads, and the "
                    "Decoder; print their table and write it as ladder.json.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ladder.add_argument("--steps", type=_positive_int, default=10_000,
                        help="optimizer steps of every trained rung")
    ladder.add_argument("--rungs", type=_rung_list, default=",".join(RUNGS),
                        help="comma-separated rungs to run, in this order")
    ladder.add_argument("--output", type=Path, default=Path("runs/ladder"),
                        help="folder for ladder.json")
    ladder.add_argument("--quiet", action="store_true", help="no progress bars")
    ladder.set_defaults(handler=ladder_command)

    pretrained = commands.add_parser(
        "generate", help="continue a prompt with a Hugging Face GPT-2 or Llama folder",
        description="Load a Hugging Face causal-LM folder (config.json and model.safetensors "
                    "of a GPT-2 or a Llama, on disk: nothing is downloaded) into tensorlib's "
                    "Decoder and print the prompt's continuation. A text prompt is encoded "
                    "with the folder's vocab.json and merges.txt (GPT-2's byte-level BPE); "
                    "without them, give the token ids.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    pretrained.add_argument("folder", type=Path, help="the model's folder")
    given = pretrained.add_mutually_exclusive_group(required=True)
    given.add_argument("--prompt", help="text to continue (needs vocab.json and merges.txt)")
    given.add_argument("--prompt-ids", type=_token_id_list,
                       help="token ids to continue, comma-separated")
    pretrained.add_argument("--max-new-tokens", type=_positive_int, default=30,
                            help="tokens to add")
    pretrained.add_argument("--temperature", type=_positive_float, default=1.0,
                            help="divide the logits by this")
    pretrained.add_argument("--top-k", type=_positive_int, default=None,
                            help="draw from the k most likely tokens only (1: greedy)")
    pretrained.add_argument("--seed", type=_seed, default=0, help="seed of the sampling")
    pretrained.set_defaults(handler=generate_command)

    progress = commands.add_parser(
        "progress", help="which workbook pieces and exercises are done",
        description="Print, notebook by notebook, which core pieces and exercises are done, "
                    "as their check cells last recorded them (in .progress/ beside the "
                    "notebooks).")
    progress.add_argument("folder", type=Path, nargs="?", default=None,
                          help="the notebooks' folder (default: notebooks/ if there is one "
                               "here, else this folder)")
    progress.set_defaults(handler=progress_command)
    return parser


# =============================================================================== printing
def _print_samples(samples: list[str], known: set[str], heading: str) -> None:
    print(heading)
    for name in samples:
        note = "   (in the census list)" if name in known else ""
        print(f"  {name if name else '(empty)'}{note}")
    if samples:
        real = sum(name in known for name in samples)
        print(f"{real} of {len(samples)} sampled names are in the census list; "
              f"{len(samples) - real} are new")


def _prepare_output(folder: Path) -> None:
    """Create the --output folder before any work, or say why it cannot be."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise CommandError(f"--output {folder} exists and is not a folder") from None
    except OSError as error:
        raise CommandError(f"cannot create the output folder {folder}: "
                           f"{error.strerror or error}") from None


# =============================================================================== train-names
def train_names_command(args: argparse.Namespace) -> int:
    """Train a names run, print it against the bigram baseline, save it, print samples."""
    try:
        heads_divide(args.channels, args.heads, ("--channels", "--heads"))
    except ValueError as error:
        raise CommandError(str(error)) from None
    # The options of train-names carry the names of NamesSettings' fields.
    settings = NamesSettings(**{field.name: getattr(args, field.name)
                                for field in dataclasses.fields(NamesSettings)})
    try:
        run = prepare_names_run(settings)
    except ValueError as error:
        raise CommandError(str(error)) from None
    _prepare_output(args.output)
    # A program of our own: keep the memory each step frees for the next (docs/performance.md).
    keep_freed_memory()

    config, vocabulary = run.model.config, run.tokenizer.vocabulary_size
    print(f"census {settings.kind} names: {len(run.words):,} names, "
          f"{vocabulary - 1} letters + boundary; split {len(run.train_words):,} / "
          f"{len(run.validation_words):,} / {len(run.test_words):,} "
          f"(train / validation / test, seed {settings.seed})")
    print(f"model: Decoder(layers={config.layers}, channels={config.channels}, "
          f"heads={config.heads}, context_length={config.context_length}), "
          f"{run.model.num_parameters():,} parameters")
    print(f"training: {settings.steps} steps of {settings.batch_size} x "
          f"{settings.context_length} tokens, AdamW lr {settings.learning_rate:g} (warm-up "
          f"{settings.warmup_steps} steps, cosine to {settings.min_learning_rate:g}), "
          f"gradient clipping at {MAX_GRAD_NORM}")
    print(f"loss before training: {run.initial_validation_loss:.2f} (ln {vocabulary} = "
          f"{math.log(vocabulary):.2f})", flush=True)
    try:
        result = train_names_run(run, progress=not args.quiet)
    except TrainingDivergedError as error:
        print(f"tensorlib train-names: error: {error}", file=sys.stderr)
        return 1

    history, losses = result.history, result.losses
    print("step  train loss (batch)  validation loss")
    for step, validation in history.evaluations():
        print(f"{step:>4}  {history[step - 1].train_loss:>18.4f}  {validation:>15.4f}")
    evaluated = len(run.validation_windows[0])
    windows = "all" if not settings.eval_windows else f"the first {evaluated:,}"
    print(f"\nmean loss per character (nats) on {windows} windows of "
          f"{settings.context_length} tokens of each split:")
    print("                         train  validation")
    print(f"  bigram (add-one)     {losses.bigram_train_loss:>7.4f}  "
          f"{losses.bigram_validation_loss:>10.4f}")
    print(f"  decoder              {losses.train_loss:>7.4f}  {losses.validation_loss:>10.4f}")
    tokens = settings.steps * settings.batch_size * settings.context_length
    print(f"trained in {result.seconds:.1f} s ({tokens / result.seconds:,.0f} tokens/s, "
          f"evaluation included)")

    try:
        checkpoint_path, config_path, figure_path = save_names_run(
            run, result, args.output, weights_only=args.weights_only)
    except OSError as error:
        raise CommandError(f"cannot write the run to {args.output}: "
                           f"{error.strerror or error}") from None
    print(f"wrote {checkpoint_path}, {config_path.name}, {figure_path.name}")

    samples = sample_names(run.model, run.tokenizer, args.samples, Rng(settings.seed),
                           run.max_name_length)
    if samples:
        _print_samples(samples, set(run.words),
                       f"\n{len(samples)} sampled names (seed {settings.seed}, temperature 1):")
    return 0


# =============================================================================== sample-names
def _read_run_config(path: Path) -> SavedRunConfig:
    try:
        return read_run_config(path)
    except FileNotFoundError:
        raise CommandError(f"config file {path} not found (pass --config)") from None
    except OSError as error:
        raise CommandError(f"cannot read config file {path}: {error.strerror or error}") \
            from None
    except RunConfigError as error:
        raise CommandError(str(error)) from None


def sample_names_command(args: argparse.Namespace) -> int:
    """Load a run (config + checkpoint) and print sampled names."""
    if not args.checkpoint.is_file():
        raise CommandError(f"checkpoint {args.checkpoint} not found" if not
                           args.checkpoint.exists() else
                           f"checkpoint {args.checkpoint} is not a file")
    saved = _read_run_config(args.config or args.checkpoint.parent / CONFIG_FILE)
    if args.top_k is not None and args.top_k > saved.model.vocabulary_size:
        raise CommandError(f"--top-k {args.top_k} exceeds the vocabulary size "
                           f"{saved.model.vocabulary_size}")
    try:
        seed = args.seed if args.seed is not None else saved.seed
        max_length = saved.max_name_length
    except RunConfigError as error:
        raise CommandError(str(error)) from None
    try:
        model = load_names_model(saved.model, args.checkpoint)
    except checkpoint.CheckpointError as error:
        raise CommandError(f"cannot load checkpoint {args.checkpoint}: {error}") from None
    except OSError as error:
        raise CommandError(f"cannot read checkpoint {args.checkpoint}: "
                           f"{error.strerror or error}") from None
    samples = sample_names(model, saved.tokenizer, args.count, Rng(seed), max_length,
                           temperature=args.temperature, top_k=args.top_k)
    known = set(names(saved.kind)) if saved.kind is not None else set()
    top_k = "" if args.top_k is None else f", top-k {args.top_k}"
    heading = f"{len(samples)} sampled names (seed {seed}, temperature {args.temperature:g}" \
              f"{top_k}):"
    if samples:
        _print_samples(samples, known, heading)
    return 0


# ==================================================================================== ladder
def _rung_list(text: str) -> list[str]:
    rungs = [rung.strip() for rung in text.split(",") if rung.strip()]
    unknown = [rung for rung in rungs if rung not in RUNGS]
    if not rungs or unknown:
        raise argparse.ArgumentTypeError(f"expected rungs among {', '.join(RUNGS)}, got "
                                         f"{text!r}")
    if len(set(rungs)) != len(rungs):
        raise argparse.ArgumentTypeError(f"a rung is named twice in {text!r}")
    return rungs


def ladder_command(args: argparse.Namespace) -> int:
    """Train the ladder's rungs under one budget, print the table, write ladder.json."""
    rungs = args.rungs if isinstance(args.rungs, list) else _rung_list(args.rungs)
    _prepare_output(args.output)
    keep_freed_memory()
    budget = Budget.of_steps(args.steps)
    print(f"the ladder: {len(rungs)} rungs on the census surnames; every trained rung "
          f"{budget.steps:,} AdamW steps of {budget.batch_names} names, lr "
          f"{budget.learning_rate:g} (warm-up {budget.warmup_steps}, cosine to "
          f"{budget.min_learning_rate:g}), weight decay {budget.weight_decay:g}, clipping at "
          f"{budget.max_grad_norm:g}", flush=True)

    def report(result: RungResult) -> None:
        print(f"{result.rung}: validation {result.validation_loss:.4f} nats per character, "
              f"{result.parameters:,} parameters, {result.seconds:.1f} s", flush=True)

    try:
        record = run_ladder(rungs, budget, progress=not args.quiet, report=report)
    except TrainingDivergedError as error:
        print(f"tensorlib ladder: error: {error}", file=sys.stderr)
        return 1
    print("\nvalidation loss in nats per character, on every character of the "
          f"{record['data']['validation_names']:,} validation names:")
    print(ladder_table(record))
    path = args.output / "ladder.json"
    try:
        save_ladder(record, path)
    except OSError as error:
        raise CommandError(f"cannot write {path}: {error.strerror or error}") from None
    print(f"wrote {path}")
    return 0


# ================================================================================= generate
def _token_id_list(text: str) -> list[int]:
    try:
        ids = [int(piece) for piece in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated token ids, got {text!r}") from None
    if not ids or min(ids) < 0:
        raise argparse.ArgumentTypeError(f"expected non-negative token ids, got {text!r}")
    return ids


def generate_command(args: argparse.Namespace) -> int:
    """Load a Hugging Face folder into a Decoder and print a prompt's continuation."""
    folder: Path = args.folder
    try:
        model = Decoder.from_pretrained(folder)
    except (OSError, ValueError, TypeError) as error:  # CheckpointError is a ValueError
        raise CommandError(f"cannot read {folder}: {error}") from None
    tokenizer = None
    if (folder / "vocab.json").is_file() and (folder / "merges.txt").is_file():
        tokenizer = BPETokenizer.from_files(folder / "vocab.json", folder / "merges.txt")
    if args.prompt is None:
        ids = args.prompt_ids
    elif tokenizer is None:
        raise CommandError(f"{folder} has no vocab.json and merges.txt to encode --prompt "
                           "with: give --prompt-ids")
    else:
        ids = tokenizer.encode(args.prompt)
    vocabulary = model.config.vocabulary_size
    if not ids or max(ids) >= vocabulary:
        raise CommandError(f"the prompt must be at least one token id below {vocabulary}, "
                           f"got {ids}")
    config = model.config
    print(f"{folder}: {config!r}, {model.num_parameters():,} parameters")
    new = model.generate([ids], args.max_new_tokens, temperature=args.temperature,
                         top_k=args.top_k, rng=Rng(args.seed))[0, len(ids):].tolist()
    if tokenizer is None:
        print(",".join(map(str, ids)) + " | " + ",".join(map(str, new)))
    else:
        print(tokenizer.decode(ids) + tokenizer.decode(new))
    return 0


# ================================================================================= progress
def progress_command(args: argparse.Namespace) -> int:
    """Print every notebook's checks with their last status, and the workbook's counts."""
    folder = args.folder
    if folder is None:
        folder = Path("notebooks") if Path("notebooks").is_dir() else Path(".")
    if not folder.is_dir():
        raise CommandError(f"{folder} is not a folder")
    try:
        notebooks = workbook.workbook_progress(folder)
    except ValueError as error:
        raise CommandError(str(error)) from None
    print(f"progress in {folder}/ (as each check cell last reported):")
    for progress in notebooks:
        if not progress.readable:
            print(f"{progress.notebook}: its progress file is unreadable (run its check cells "
                  "again)")
        print(f"{progress.notebook}: {_said(workbook.done_counts(progress.checks))}")
        for name, kind, status in progress.checks:
            print(f"    {status:13s} {kind:9s} {name}")
    every_check = [check for progress in notebooks for check in progress.checks]
    print(f"the workbook: {_said(workbook.done_counts(every_check))}")
    return 0


def _said(counts: dict[str, tuple[int, int]]) -> str:
    """"core pieces 1 of 2 done, exercises 0 of 4 done" (a kind with no check left out)."""
    return ", ".join(f"{label} {counts[kind][0]} of {counts[kind][1]} done"
                     for kind, label in (("piece", "core pieces"), ("exercise", "exercises"))
                     if counts[kind][1])


# =============================================================================== entry point
def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); returns the exit
    status: 0 on success, 2 for bad options or unreadable files, 1 if training diverged."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_request:  # argparse printed usage and the error (or --help)
        code = exit_request.code
        return code if isinstance(code, int) else (0 if code is None else 2)
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        return handler(args)
    except CommandError as error:
        print(f"tensorlib {args.command}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"tensorlib {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (`... | head`): stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
