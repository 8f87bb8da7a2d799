"""The benchmark cases; imported by run.py only after the thread variables are set."""

from __future__ import annotations

import argparse
import inspect
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

try:
    import torch
except ImportError:  # PyTorch is optional
    torch = None

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


def interleaved(steps: dict[str, Callable[[], Any]], warmup: int,
                repeats: int) -> dict[str, Timings]:
    """Time each step ``repeats`` times in alternating order (A B, B A, ...) after warm-up."""
    for _ in range(warmup):
        for step in steps.values():
            step()
    timings = {name: Timings() for name in steps}
    names = list(steps)
    for repeat in range(repeats):
        for name in names if repeat % 2 == 0 else reversed(names):
            faults, cpu, wall = _faults(), time.process_time(), time.perf_counter()
            steps[name]()
            timings[name].wall.append(time.perf_counter() - wall)
            timings[name].cpu.append(time.process_time() - cpu)
            timings[name].faults.append(_faults() - faults)
    return timings


def report(label: str, timings: dict[str, Timings]) -> dict[str, float]:
    """Print one line per case: the medians in ms and four ratios tensorlib / PyTorch: of
    the median wall times (the headline), of the best wall times, of the median CPU times,
    and the median of the paired ratios (each repeat's two steps ran back to back, so a
    paired ratio sees one machine load; the least sensitive to load that drifts)."""
    ours = timings["tensorlib"]
    wall = statistics.median(ours.wall) * 1e3
    line = f"{label:<40}{wall:>10.1f} ms"
    result = {"tensorlib_ms": wall}
    if "torch" in timings:
        theirs = timings["torch"]
        other_wall = statistics.median(theirs.wall) * 1e3
        best = min(ours.wall) / min(theirs.wall)
        cpu = statistics.median(ours.cpu) / statistics.median(theirs.cpu)
        paired = statistics.median(a / b for a, b in zip(ours.wall, theirs.wall, strict=True))
        line += (f"{other_wall:>10.1f} ms{wall / other_wall:>8.2f}{best:>7.2f}{cpu:>7.2f}"
                 f"{paired:>8.2f}")
        result.update(torch_ms=other_wall, ratio=wall / other_wall, best=best, cpu=cpu,
                      paired=paired)
    print(line, flush=True)
    faults = "    page faults per step: tensorlib " + f"{statistics.median(ours.faults):.0f}"
    if "torch" in timings:
        faults += f", PyTorch {statistics.median(timings['torch'].faults):.0f}"
    print(faults, flush=True)
    return result


# --------------------------------------------------------------------------------- steps
def tensorlib_step(model: Any, optimizer: AdamW, batches: list[tuple]) -> Callable[[], float]:
    position = [0]

    def step() -> float:
        ids, targets = batches[position[0] % len(batches)]
        position[0] += 1
        optimizer.zero_grad()
        loss = model.loss(ids, targets)
        loss.backward()
        optimizer.step()
        return float(loss.item())

    return step


def torch_step(model: Any, optimizer: Any, batches: list[tuple]) -> Callable[[], float]:
    converted = [(torch.from_numpy(i), torch.from_numpy(t)) for i, t in batches]
    position = [0]

    def step() -> float:
        ids, targets = converted[position[0] % len(converted)]
        position[0] += 1
        optimizer.zero_grad(set_to_none=True)
        loss = model.loss(ids, targets)
        loss.backward()
        optimizer.step()
        return float(loss.item())

    return step


def build_pair(kind: str, batch: int) -> tuple[Callable, Callable | None, Callable, Callable]:
    """Fresh (tensorlib step, torch step) for ``kind`` "decoder" or "mlp", plus two more
    fresh ones for the loss-agreement check."""

    def make() -> tuple[Callable, Callable | None]:
        if kind == "decoder":
            config = twins.decoder_config()
            model = twins.make_decoder(config)
            batches = twins.token_batches(batch, config.context_length, 4)
        else:
            model = twins.MLPLanguageModel()
            batches = twins.mlp_batches(batch, model.context, 4)
        ours = tensorlib_step(model, AdamW(model, lr=LEARNING_RATE,
                                           weight_decay=WEIGHT_DECAY), batches)
        if torch is None:
            return ours, None
        twin = (twins.torch_decoder_class()(config) if kind == "decoder"
                else twins.torch_mlp_class()())
        twins.copy_weights_to_torch(model, twin)
        optimizer = torch.optim.AdamW(twin.parameters(), lr=LEARNING_RATE,
                                      weight_decay=WEIGHT_DECAY)
        return ours, torch_step(twin, optimizer, batches)

    return (*make(), *make())


def check_losses(ours: Callable, theirs: Callable | None, steps: int = 3) -> None:
    if theirs is None:
        return
    a = np.array([ours() for _ in range(steps)])
    b = np.array([theirs() for _ in range(steps)])
    worst = float(np.max(np.abs(a - b) / np.abs(b)))
    verdict = "agree" if np.allclose(a, b, rtol=1e-4, atol=0) else "DISAGREE"
    print(f"    losses of the first {steps} steps {verdict} (rtol 1e-4; largest relative "
          f"difference {worst:.1e}): {np.round(a, 5).tolist()}", flush=True)
    if verdict != "agree":
        raise SystemExit("tensorlib and PyTorch disagree on the loss; the timing is meaningless")


def training_case(label: str, kind: str, batch: int, args: argparse.Namespace) -> None:
    ours, theirs, check_ours, check_theirs = build_pair(kind, batch)
    check_losses(check_ours, check_theirs)
    steps = {"tensorlib": ours} if theirs is None else {"tensorlib": ours, "torch": theirs}
    report(label, interleaved(steps, args.warmup, args.repeats))


def generation_case(args: argparse.Namespace, batch: int = 1, new_tokens: int = 63) -> None:
    """Sampling ``new_tokens`` after a one-token prompt; reported as time per call."""
    config = twins.decoder_config()
    model = twins.make_decoder(config)
    prompt = np.zeros((batch, 1), dtype=np.int64)
    options: dict[str, Any] = {}
    cached = "use_cache" in inspect.signature(model.generate).parameters
    if cached:
        options["use_cache"] = True
    steps: dict[str, Callable] = {
        "tensorlib": lambda: model.generate(prompt, new_tokens, rng=Rng(1), **options)}
    if torch is not None:
        twin = twins.torch_decoder_class()(config)
        twins.copy_weights_to_torch(model, twin)
        twin.eval()
        torch_prompt = torch.from_numpy(prompt)
        steps["torch"] = lambda: twin.generate(torch_prompt, new_tokens)
    timings = interleaved(steps, max(1, args.warmup // 2), max(3, args.repeats // 2))
    report(f"(d) generate {new_tokens} tokens", timings)
    tokens = batch * new_tokens
    rates = {name: tokens / statistics.median(t.wall) for name, t in timings.items()}
    line = f"    tokens per second: tensorlib {rates['tensorlib']:.0f}"
    if "torch" in rates:
        line += f", PyTorch {rates['torch']:.0f} (with its own key/value cache)"
    print(line)
    print("    tensorlib " + ("uses generate(use_cache=True)" if cached else
                            "has no key/value cache yet: it recomputes the whole context"))


def memory_case(args: argparse.Namespace, batch: int = 12) -> None:
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "memory.py")
    results = {}
    for library in ("tensorlib", "torch") if torch is not None else ("tensorlib",):
        output = subprocess.run([sys.executable, script, library, str(batch)],
                                capture_output=True, text=True, env=dict(os.environ))
        if output.returncode:
            print(f"    memory measurement for {library} failed:\n{output.stderr}")
            return
        results[library] = json.loads(output.stdout.strip().splitlines()[-1])
    for key, label in (("allocator_bytes", "(e) peak memory of (a), allocator"),
                       ("rss_bytes", "    resident-set growth of (a)")):
        ours = results["tensorlib"][key]
        if ours is None:
            continue
        line = f"{label:<40}{ours / 2**20:>9.1f} MiB"
        theirs = results.get("torch", {}).get(key)
        if theirs:
            line += f"{theirs / 2**20:>9.1f} MiB{ours / theirs:>8.2f}"
        print(line)
    print("    allocator: tracemalloc (numpy) against PyTorch's profiler (its CPU allocator), "
          "from the start of one step to its peak")


# --------------------------------------------------------------------------------- report
def describe_machine(threads: int) -> None:
    print(f"tensorlib {tl.__version__}, numpy {np.__version__}, Python "
          f"{platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs")
    for pool in threadpool_info():
        if pool.get("user_api") == "blas" and "numpy" in pool.get("filepath", ""):
            print(f"numpy BLAS: {pool['internal_api']} {pool.get('version')}, kernel "
                  f"{pool.get('architecture')}, {pool['num_threads']} thread(s)")
    if torch is None:
        print("PyTorch: not installed; its columns are skipped")
    else:
        torch.set_num_threads(threads)
        print(f"PyTorch {torch.__version__}: {torch.get_num_threads()} thread(s), "
              f"BLAS {_torch_blas()}")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    trim = os.environ.get("MALLOC_TRIM_THRESHOLD_")
    print(f"threads for both: {threads} (OMP/OPENBLAS/MKL_NUM_THREADS); float32; load average "
          f"{load:.1f}; glibc heap trimming " + ("off (--no-trim)" if trim else "default"))


def _torch_blas() -> str:
    config = torch.__config__.show()
    for part in config.replace(",", "\n").splitlines():
        if "BLAS_INFO=" in part:
            return part.split("=", 1)[1].strip()
    return "unknown"


def run_all(args: argparse.Namespace, threads: int) -> int:
    global torch
    if args.no_torch:
        torch = None
    describe_machine(threads)
    print(f"medians of {args.repeats} interleaved repeats after {args.warmup} warm-up steps; "
          "ratio = tensorlib / PyTorch of the medians (below 1: tensorlib is faster); best = "
          "of the fastest repeats; CPU = of the median CPU times; paired = median of the "
          "per-repeat ratios (the two steps of a repeat run back to back)")
    print(f"{'case':<40}{'tensorlib':>13}{'PyTorch':>13}{'ratio':>8}{'best':>7}{'CPU':>7}"
          f"{'paired':>8}")
    if "a" in args.cases:
        training_case("(a) decoder step, batch 12", "decoder", 12, args)
    if "b" in args.cases:
        training_case("(b) decoder step, batch 64", "decoder", 64, args)
    if "c" in args.cases:
        training_case("(c) MLP language model step, batch 32", "mlp", 32, args)
    if "d" in args.cases:
        generation_case(args)
    if "e" in args.cases:
        memory_case(args)
    return 0
