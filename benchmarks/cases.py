"""The benchmark cases, run by run.py in child processes after the thread variables are set:
one process per library and round (PyTorch is imported only in its own processes), and one
that describes the machine, checks that both libraries compute the same losses and measures
memory (each library again in a fresh process, benchmarks/memory.py)."""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

try:
    import resource
except ImportError:  # not on Windows: page faults are then reported as 0
    resource = None

import numpy as np
import twins
from threadpoolctl import threadpool_info
from twins import Rng

import tensorlib as tl
from tensorlib.optim import AdamW

torch: Any = None  # imported by run_child only in the processes that run PyTorch

LEARNING_RATE = 1e-3
WEIGHT_DECAY = 0.01


# --------------------------------------------------------------------------------- timing
@dataclass
class Timings:
    """Per-call wall seconds, CPU seconds (this process, all threads) and minor page faults."""

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    faults: list[int] = field(default_factory=list)


def _faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt if resource else 0


def timed(step: Callable[[], Any], warmup: int, repeats: int) -> Timings:
    """Time ``step`` ``repeats`` times after ``warmup`` untimed calls."""
    for _ in range(warmup):
        step()
    timings = Timings()
    for _ in range(repeats):
        faults, cpu, wall = _faults(), time.process_time(), time.perf_counter()
        step()
        timings.wall.append(time.perf_counter() - wall)
        timings.cpu.append(time.process_time() - cpu)
        timings.faults.append(_faults() - faults)
    return timings


def summary(timings: Timings, per_call_tokens: int | None = None) -> dict[str, Any]:
    """The medians (ms) of one library's timings, for the parent to compare."""
    result = {"median_ms": statistics.median(timings.wall) * 1e3,
              "best_ms": min(timings.wall) * 1e3,
              "cpu_ms": statistics.median(timings.cpu) * 1e3,
              "faults": statistics.median(timings.faults)}
    if per_call_tokens:
        result["tokens_per_second"] = per_call_tokens / statistics.median(timings.wall)
    return result


# --------------------------------------------------------------------------------- steps
def tensorlib_step(model: Any, optimizer: AdamW, batches: list[tuple],
                   autocast: str | None = None) -> Callable[[], float]:
    position = [0]
    block = tl.autocast("cpu", dtype=getattr(tl, autocast or "bfloat16"),
                        enabled=autocast is not None)

    def step() -> float:
        ids, targets = batches[position[0] % len(batches)]
        position[0] += 1
        optimizer.zero_grad()
        with block:
            loss = model.loss(ids, targets)
        loss.backward()
        optimizer.step()
        return float(loss.item())

    return step


def torch_step(model: Any, optimizer: Any, batches: list[tuple],
               autocast: str | None = None) -> Callable[[], float]:
    converted = [(torch.from_numpy(i), torch.from_numpy(t)) for i, t in batches]
    position = [0]
    block = torch.autocast("cpu", dtype=getattr(torch, autocast or "bfloat16"),
                           enabled=autocast is not None)

    def step() -> float:
        ids, targets = converted[position[0] % len(converted)]
        position[0] += 1
        optimizer.zero_grad(set_to_none=True)
        with block:
            loss = model.loss(ids, targets)
        loss.backward()
        optimizer.step()
        return float(loss.item())

    return step


def training_step(library: str, kind: str, batch: int,
                  autocast: str | None = None) -> Callable[[], float]:
    """A fresh training step of one library: ``kind`` "decoder", "mlp", "cnn8", "cnn28" or a
    recurrent model ("gru128", "lstm256", ...), the same initial weights (tensorlib's, copied
    into the torch twin) and batches for both; the forward and loss under ``autocast``
    ("bfloat16" or "float16") where given."""
    if kind == "decoder":
        config = twins.decoder_config()
        model = twins.make_decoder(config)
        batches = twins.token_batches(batch, config.context_length, 4)
    elif kind.startswith("cnn"):
        size = int(kind[3:])
        model = twins.CNNClassifier(size)
        batches = twins.image_batches(batch, size, 4)
    elif kind.startswith(("gru", "lstm")):
        cell, hidden = kind.rstrip("0123456789"), int(kind.lstrip("grulstm"))
        model = twins.RecurrentLanguageModel(cell, hidden)
        batches = twins.token_batches(batch, RECURRENT_LENGTH, 4)
    else:
        model = twins.MLPLanguageModel()
        batches = twins.mlp_batches(batch, model.context, 4)
    if library == "tensorlib":
        return tensorlib_step(model, AdamW(model, lr=LEARNING_RATE,
                                           weight_decay=WEIGHT_DECAY), batches, autocast)
    if kind == "decoder":
        twin = twins.torch_decoder_class()(config)
    elif kind.startswith("cnn"):
        twin = twins.torch_cnn_class()(size)
    elif kind.startswith(("gru", "lstm")):
        twin = twins.torch_recurrent_class()(cell, hidden)
    else:
        twin = twins.torch_mlp_class()()
    twins.copy_weights_to_torch(model, twin)
    optimizer = torch.optim.AdamW(twin.parameters(), lr=LEARNING_RATE, weight_decay=WEIGHT_DECAY)
    return torch_step(twin, optimizer, batches, autocast)


def generation_step(library: str, new_tokens: int = 63) -> Callable[[], Any]:
    """Sampling ``new_tokens`` after a one-token prompt, each library with its key/value
    cache."""
    config = twins.decoder_config()
    model = twins.make_decoder(config)
    prompt = np.zeros((1, 1), dtype=np.int64)
    if library == "tensorlib":
        return lambda: model.generate(prompt, new_tokens, rng=Rng(1), use_cache=True)
    twin = twins.torch_decoder_class()(config)
    twins.copy_weights_to_torch(model, twin)
    twin.eval()
    torch_prompt = torch.from_numpy(prompt)
    return lambda: twin.generate(torch_prompt, new_tokens)


def product_operands(batch: int = 12) -> list[tuple[np.ndarray, np.ndarray]]:
    """The operands ``(a, b)`` of every matrix product ``a @ b`` in one training step of
    case (a)'s Decoder at ``batch``, as numpy arrays laid out as the ops lay them out.

    Per linear layer (x Wᵀ + b with x (N, in), W (out, in), dy (N, out)): x @ Wᵀ, dy @ W
    and dyᵀ @ x; per attention (q, k, v, dO (B, H, T, D) as views of (B, T, 3, H, D) and
    (B, T, H, D) arrays, P and dS (B, H, T, T)): q kᵀ, P v, Pᵀ dO, dO vᵀ, dS k and dSᵀ q.
    """
    config = twins.decoder_config()
    rng = Rng(7)
    rows, channels, length = batch * config.context_length, config.channels, config.context_length
    heads, width = config.heads, config.channels // config.heads
    linears = [(channels, 3 * channels), (channels, channels), (channels, 4 * channels),
               (4 * channels, channels)] * config.layers + [(channels, config.vocabulary_size)]
    pairs = []
    for inputs, outputs in linears:
        x = rng.normal(size=(rows, inputs))
        weight = rng.normal(size=(outputs, inputs))
        grad = rng.normal(size=(rows, outputs))
        pairs += [(x, weight.T), (grad, weight), (grad.T, x)]
    for _ in range(config.layers):
        qkv = rng.normal(size=(batch, length, 3, heads, width))
        query, key, value = (qkv[:, :, i].transpose(0, 2, 1, 3) for i in range(3))
        grad_out = rng.normal(size=(batch, length, heads, width)).transpose(0, 2, 1, 3)
        probabilities, grad_scores = (rng.normal(size=(batch, heads, length, length))
                                      for _ in range(2))
        pairs += [(query, key.swapaxes(-1, -2)), (probabilities, value),
                  (probabilities.swapaxes(-1, -2), grad_out), (grad_out, value.swapaxes(-1, -2)),
                  (grad_scores, key), (grad_scores.swapaxes(-1, -2), query)]
    return pairs


def products_step(library: str, batch: int = 12) -> Callable[[], Any]:
    """Case (f): every matrix product of one step of (a), and nothing else: numpy's
    ``matmul`` on tensorlib's side, ``torch.matmul`` on the same arrays (the same strides)
    on PyTorch's."""
    pairs = product_operands(batch)
    if library == "torch":
        pairs = [(torch.from_numpy(a), torch.from_numpy(b)) for a, b in pairs]
        multiply = torch.matmul
    else:
        multiply = np.matmul

    def step() -> None:
        for a, b in pairs:
            multiply(a, b)

    return step


TRAINING_CASES = {"a": ("decoder", 12), "b": ("decoder", 64), "c": ("mlp", 32),
                  "g": ("cnn8", 64), "h": ("cnn28", 32), "i": ("gru128", 32),
                  "j": ("gru256", 32), "k": ("lstm128", 32), "l": ("lstm256", 32),
                  "m": ("decoder", 12, "bfloat16"), "n": ("decoder", 64, "bfloat16")}
# the cases in bfloat16 agree with PyTorch to bfloat16's precision, not float32's
LOSS_TOLERANCE = {"m": 1e-2, "n": 1e-2}
RECURRENT_LENGTH = 32  # cases (i)-(l): sequences of 32 characters
NEW_TOKENS = 63


def time_library(library: str, args: argparse.Namespace) -> dict[str, Any]:
    """Every asked-for timing case ((a)-(d), (f)-(h)) of one library, in this process alone."""
    results = {}
    for case in args.cases:
        if case in TRAINING_CASES:
            step = training_step(library, *TRAINING_CASES[case])
            results[case] = summary(timed(step, args.warmup, args.repeats))
        elif case == "d":
            step = generation_step(library, NEW_TOKENS)
            results[case] = summary(timed(step, max(1, args.warmup // 2),
                                          max(3, args.repeats // 2)), NEW_TOKENS)
        elif case == "f":
            results[case] = summary(timed(products_step(library), args.warmup, args.repeats))
    return results


def check_losses(cases: list[str], steps: int = 3) -> list[str]:
    """The first losses of both libraries from the same weights and batches, for the training
    cases among ``cases`` ((a) also for (d), (e) and (f), which use its model); run once, apart
    from the timing processes. SystemExit when they disagree."""
    checked = {case for case in cases if case in TRAINING_CASES}
    if not {"d", "e", "f"}.isdisjoint(cases):
        checked.add("a")
    lines = []
    for case, settings in TRAINING_CASES.items():
        if case not in checked:
            continue
        ours, theirs = training_step("tensorlib", *settings), training_step("torch", *settings)
        a = np.array([ours() for _ in range(steps)])
        b = np.array([theirs() for _ in range(steps)])
        worst = float(np.max(np.abs(a - b) / np.abs(b)))
        if not np.allclose(a, b, rtol=LOSS_TOLERANCE.get(case, 1e-4), atol=0):
            raise SystemExit(f"case ({case}): tensorlib and PyTorch disagree on the loss "
                             f"({a} against {b}); the timing would be meaningless")
        lines.append(f"({case}) the first {steps} losses agree (largest relative difference "
                     f"{worst:.1e})")
    return lines


def memory_case(batch: int = 12) -> dict[str, Any]:
    """Case (e): the peak memory of one step of (a), each library in a fresh process."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "memory.py")
    results = {}
    for library in ("tensorlib", "torch") if torch is not None else ("tensorlib",):
        output = subprocess.run([sys.executable, script, library, str(batch)],
                                capture_output=True, text=True, env=dict(os.environ))
        if output.returncode:
            raise SystemExit(f"memory measurement for {library} failed:\n{output.stderr}")
        results[library] = json.loads(output.stdout.strip().splitlines()[-1])
    return results


# --------------------------------------------------------------------------------- report
def describe_machine(threads: int) -> list[str]:
    """The versions, the BLAS kernels and the thread counts this process runs with."""
    lines = [f"tensorlib {tl.__version__}, numpy {np.__version__}, Python "
             f"{platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs"]
    for pool in threadpool_info():
        if pool.get("user_api") == "blas" and "numpy" in pool.get("filepath", ""):
            lines.append(f"numpy BLAS: {pool['internal_api']} {pool.get('version')}, kernel "
                         f"{pool.get('architecture')}, {pool['num_threads']} thread(s)")
    if torch is None:
        lines.append("PyTorch: not installed; its columns are skipped")
    else:
        torch.set_num_threads(threads)
        lines.append(f"PyTorch {torch.__version__}: {torch.get_num_threads()} thread(s), "
                     f"BLAS {_torch_blas()}")
    lines.append(f"tensorlib: {tl.get_num_threads()} thread(s) (tensorlib.set_num_threads: "
                 f"BLAS, and the kernels' pool for arrays of "
                 f"{tl.engine.kernels.threads.MIN_PARALLEL_ELEMENTS:,} elements or more)")
    coretype = os.environ.get("OPENBLAS_CORETYPE")
    lines.append(f"threads: {threads} (OMP/OPENBLAS/MKL_NUM_THREADS, the same for both); "
                 f"float32; OPENBLAS_CORETYPE {coretype or 'unset (detected)'}")
    return lines


def _torch_blas() -> str:
    config = torch.__config__.show()
    for part in config.replace(",", "\n").splitlines():
        if "BLAS_INFO=" in part:
            return part.split("=", 1)[1].strip()
    return "unknown"


def run_child(args: argparse.Namespace, threads: int) -> int:
    """One child process: ``--library`` times its cases alone, ``describe`` reports the
    machine and checks that both libraries compute the same losses. Prints one JSON line."""
    global torch
    if args.library != "tensorlib" and not args.no_torch:
        try:
            import torch
        except ImportError:  # PyTorch is optional
            torch = None
    tl.set_num_threads(threads)  # numpy's BLAS and tensorlib's pool, as torch's below
    if args.library == "tensorlib":  # PyTorch is not imported here at all
        result: dict[str, Any] = {"timings": time_library("tensorlib", args)}
    elif args.library == "torch":
        if torch is None:
            raise SystemExit("PyTorch is not installed")
        torch.set_num_threads(threads)
        result = {"timings": time_library("torch", args)}
    else:
        result = {"machine": describe_machine(threads),
                  "checks": [] if torch is None or args.no_torch else check_losses(args.cases)}
        if "e" in args.cases:
            result["memory"] = memory_case()
    print(json.dumps(result), flush=True)
    return 0
