"""tensorlib's own step times in two (or more) source trees, for a before/after comparison.

    python benchmarks/compare.py before=/tmp/before after=.          # cases (a)-(d)
    python benchmarks/compare.py before=/tmp/before after=. --rounds 8 --cases a c
    python benchmarks/compare.py before=/tmp/before after=. --cases a b c d e    # all five

The cases are those of ``benchmarks/run.py`` (built by this tree's ``cases.py`` and
``twins.py``, which use only tensorlib's public API), timed for tensorlib alone. Each
measurement is one fresh process with that tree first on ``PYTHONPATH``: one process per
tree, case and round, the trees alternating within each round (A B, B A, ...) so that both
see the same machine load, all with the same thread count (``--threads``, default 1, set
through OMP/OPENBLAS/MKL_NUM_THREADS before numpy is imported). A process warms up, then
times ``--repeats`` steps and reports their median wall and CPU (``time.process_time``)
times. Printed per case and tree: the median over the rounds of those medians, their lowest
and highest, and each tree's ratio to the first tree (of the medians, and the median of the
per-round ratios, which pairs processes that ran back to back). Case (e) is the peak memory
of one step of (a), measured by this folder's ``memory.py`` (allocator bytes and resident
set growth), one fresh process per tree and round.

With ``--same-process`` each round is instead one process that imports every tree's
tensorlib side by side (copies renamed ``tensorlib_<name>``, made in a temporary folder,
each with its own copy of ``twins.py``) and alternates their steps within it (A B, B A, ...),
as ``benchmarks/run.py`` does with PyTorch: the steps of a pair then run under one machine
load, which on a shared machine moves absolute times far more than any change measured.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
LABELS = {"a": "decoder step, batch 12", "b": "decoder step, batch 64",
          "c": "MLP language model step, batch 32", "d": "generate 63 tokens (KV cache)",
          "e": "peak memory of one step of (a)"}
MEMORY_KEYS = ("allocator_bytes", "rss_bytes")


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", nargs="*", help="NAME=PATH of a source tree (two or more)")
    parser.add_argument("--cases", nargs="+", choices="abcde", default=list("abcd"))
    parser.add_argument("--rounds", type=int, default=6, help="rounds (processes) per case")
    parser.add_argument("--repeats", type=int, default=21, help="timed steps per process")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps per process")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--same-process", action="store_true",
                        help="alternate the trees' steps inside each round's one process")
    parser.add_argument("--child", choices="abcd", help=argparse.SUPPRESS)
    parser.add_argument("--packages", nargs="+", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def renamed_copies(trees: dict[str, str], folder: str) -> list[str]:
    """Copy each tree's ``tensorlib`` to ``folder/tensorlib_<name>`` and this folder's
    ``twins.py`` to ``folder/twins_<name>.py``, every ``tensorlib`` import renamed."""
    packages = []
    pattern = re.compile(r"\btensorlib\b")
    for name, path in trees.items():
        package = f"tensorlib_{name}"
        target = os.path.join(folder, package)
        shutil.copytree(os.path.join(path, "tensorlib"), target,
                        ignore=shutil.ignore_patterns("__pycache__"))
        sources = [os.path.join(root, file) for root, _, files in os.walk(target)
                   for file in files if file.endswith(".py")]
        for source in sources:
            with open(source, encoding="utf-8") as handle:
                text = pattern.sub(package, handle.read())
            with open(source, "w", encoding="utf-8") as handle:
                handle.write(text)
        with open(os.path.join(HERE, "twins.py"), encoding="utf-8") as handle:
            twins = pattern.sub(package, handle.read())
        with open(os.path.join(folder, f"twins_{name}.py"), "w", encoding="utf-8") as handle:
            handle.write(twins)
        packages.append(name)
    return packages


def _step_of(case: str, name: str) -> Any:
    """A fresh tensorlib step of ``case`` built with the renamed tree ``name``."""
    twins = importlib.import_module(f"twins_{name}")
    package = importlib.import_module(f"tensorlib_{name}")
    if case == "d":
        model = twins.make_decoder(twins.decoder_config())
        prompt = twins.np.zeros((1, 1), dtype=twins.np.int64)
        rng_class = getattr(package, "Rng", None) or package.nn.Rng  # older trees: nn.Rng
        return lambda: model.generate(prompt, 63, rng=rng_class(1), use_cache=True)
    if case in "ab":
        config = twins.decoder_config()
        model = twins.make_decoder(config)
        batches = twins.token_batches(12 if case == "a" else 64, config.context_length, 4)
    else:
        model = twins.MLPLanguageModel()
        batches = twins.mlp_batches(32, model.context, 4)
    optimizer = package.optim.AdamW(model, lr=1e-3, weight_decay=0.01)
    position = [0]

    def step() -> None:
        ids, targets = batches[position[0] % len(batches)]
        position[0] += 1
        optimizer.zero_grad()
        model.loss(ids, targets).backward()
        optimizer.step()

    return step


def pair_child(case: str, args: argparse.Namespace) -> None:
    """Alternate the renamed trees' steps of ``case`` in this process; print JSON."""
    steps = {name: _step_of(case, name) for name in args.packages}
    for _ in range(args.warmup):
        for step in steps.values():
            step()
    wall: dict[str, list[float]] = {name: [] for name in steps}
    cpu: dict[str, list[float]] = {name: [] for name in steps}
    names = list(steps)
    for repeat in range(args.repeats):
        for name in names if repeat % 2 == 0 else names[::-1]:
            started_cpu, started = time.process_time(), time.perf_counter()
            steps[name]()
            wall[name].append(time.perf_counter() - started)
            cpu[name].append(time.process_time() - started_cpu)
    print(json.dumps({name: {"wall_ms": 1e3 * statistics.median(wall[name]),
                             "cpu_ms": 1e3 * statistics.median(cpu[name])} for name in names}))


def child(case: str, args: argparse.Namespace) -> None:
    """Time one case with whatever tensorlib is first on the path; print JSON."""
    sys.path.insert(0, HERE)
    import cases  # imports numpy under the thread variables set by the parent
    import numpy as np
    import twins

    import tensorlib as tl

    Rng = twins.Rng  # noqa: N806
    cases.torch = None
    if case == "d":
        model = twins.make_decoder(twins.decoder_config())
        prompt = np.zeros((1, 1), dtype=np.int64)

        def step() -> None:
            model.generate(prompt, 63, rng=Rng(1), use_cache=True)
    else:
        kind, batch = {"a": ("decoder", 12), "b": ("decoder", 64), "c": ("mlp", 32)}[case]
        step = cases.training_step("tensorlib", kind, batch)
    for _ in range(args.warmup):
        step()
    wall, cpu = [], []
    for _ in range(args.repeats):
        started_cpu, started = time.process_time(), time.perf_counter()
        step()
        wall.append(time.perf_counter() - started)
        cpu.append(time.process_time() - started_cpu)
    print(json.dumps({"wall_ms": 1e3 * statistics.median(wall),
                      "cpu_ms": 1e3 * statistics.median(cpu), "tensorlib": tl.__file__}))


def measure_memory(path: str, args: argparse.Namespace) -> dict[str, float]:
    """Case (e) with ``path``'s tensorlib: this folder's ``memory.py`` in a fresh process."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.abspath(path)
    env.update({name: str(args.threads) for name in THREAD_VARIABLES})
    for name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        env.pop(name, None)
    program = (f"import json, sys; sys.path.insert(0, {HERE!r}); import memory, tensorlib; "
               "result = memory.measure('tensorlib', 12); result['tensorlib'] = "
               "tensorlib.__file__; print(json.dumps(result))")
    output = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True,
                            text=True, check=True, cwd=os.path.abspath(path)).stdout
    result = json.loads(output.strip().splitlines()[-1])
    _check_imported(result["tensorlib"], path)
    return {key: float(result[key]) for key in MEMORY_KEYS}


def _check_imported(imported: str, path: str) -> None:
    expected = os.path.join(os.path.abspath(path), "tensorlib", "__init__.py")
    if os.path.realpath(imported) != os.path.realpath(expected):
        raise SystemExit(f"the child imported {imported}, not {expected}")


def measure(path: str, case: str, args: argparse.Namespace) -> dict[str, float]:
    if case == "e":
        return measure_memory(path, args)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.abspath(path)
    env.update({name: str(args.threads) for name in THREAD_VARIABLES})
    for name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        env.pop(name, None)
    command = [sys.executable, os.path.abspath(__file__), "--child", case, "--repeats",
               str(args.repeats), "--warmup", str(args.warmup)]
    output = subprocess.run(command, env=env, capture_output=True, text=True, check=True,
                            cwd=os.path.abspath(path)).stdout
    result = json.loads(output.strip().splitlines()[-1])
    _check_imported(result["tensorlib"], path)
    return result


def measure_pair(folder: str, names: list[str], case: str,
                 args: argparse.Namespace) -> dict[str, dict[str, float]]:
    env = dict(os.environ)
    env["PYTHONPATH"] = folder
    env.update({name: str(args.threads) for name in THREAD_VARIABLES})
    for name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        env.pop(name, None)
    command = [sys.executable, os.path.abspath(__file__), "--child", case, "--repeats",
               str(args.repeats), "--warmup", str(args.warmup), "--packages", *names]
    output = subprocess.run(command, env=env, capture_output=True, text=True, check=True,
                            cwd=folder).stdout
    return json.loads(output.strip().splitlines()[-1])


def summary(times: dict[tuple[str, str], list[dict[str, float]]], names: list[str],
            case: str, key: str) -> list[str]:
    first = [run[key] for run in times[case, names[0]]]
    scale, unit, label = (1e-6, "MB", key[:-6]) if key.endswith("_bytes") else \
        (1.0, "ms", key[:-3])
    lines = []
    for name in names:
        mine = [run[key] for run in times[case, name]]
        line = (f"({case}) {name:<8}{label:<10}{statistics.median(mine) * scale:>9.2f} {unit} "
                f"[{min(mine) * scale:.2f}, {max(mine) * scale:.2f}]")
        if name != names[0]:
            paired = statistics.median(a / b for a, b in zip(mine, first, strict=True))
            line += (f"  ratio {statistics.median(mine) / statistics.median(first):.3f}, "
                     f"paired {paired:.3f}")
        lines.append(line)
    return lines


def main(argv: list[str] | None = None) -> int:
    args = parse_arguments(argv)
    if args.child and args.packages:
        pair_child(args.child, args)
        return 0
    if args.child:
        child(args.child, args)
        return 0
    trees = {name: os.path.abspath(path) for name, path in
             (tree.split("=", 1) for tree in args.trees)}
    names = list(trees)
    if len(names) < 2:
        raise SystemExit("give two or more trees as NAME=PATH")
    times: dict[tuple[str, str], list[dict[str, float]]] = {}
    folder = tempfile.mkdtemp(prefix="tensorlib-compare-") if args.same_process else ""
    if folder:
        renamed_copies(trees, folder)
    for case in args.cases:
        for round_ in range(args.rounds):
            if folder and case != "e":
                order = names if round_ % 2 == 0 else names[::-1]
                for name, result in measure_pair(folder, order, case, args).items():
                    times.setdefault((case, name), []).append(result)
            else:
                for name in names if round_ % 2 == 0 else names[::-1]:
                    times.setdefault((case, name), []).append(
                        measure(trees[name], case, args))
            key, scale, unit = ("allocator_bytes", 1e-6, "MB") if case == "e" else \
                ("wall_ms", 1.0, "ms")
            print(f"({case}) round {round_ + 1}: " + ", ".join(
                f"{name} {times[case, name][-1][key] * scale:.2f} {unit}" for name in names),
                flush=True)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    where = "all trees alternating in one process per round" if folder else \
        "one process per tree and round"
    print(f"\n{args.rounds} rounds ({where}), {args.repeats} timed steps each "
          f"after {args.warmup} warm-up steps, {args.threads} thread(s), load average now "
          f"{load:.1f}; median [lowest, highest] over the rounds of the median times")
    for case in args.cases:
        print(f"{LABELS[case]}:")
        for key in MEMORY_KEYS if case == "e" else ("wall_ms", "cpu_ms"):
            print("\n".join(summary(times, names, case, key)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
