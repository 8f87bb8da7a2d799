"""tensorlib's own step times in two (or more) source trees, for a before/after comparison.

    python benchmarks/compare.py before=/tmp/before after=.          # cases (a)-(d)
    python benchmarks/compare.py before=/tmp/before after=. --rounds 8 --cases a c

The cases are those of ``benchmarks/run.py`` (built by this tree's ``cases.py`` and
``twins.py``, which use only tensorlib's public API), timed for tensorlib alone. Each
measurement is one fresh process with that tree first on ``PYTHONPATH``: one process per
tree, case and round, the trees alternating within each round (A B, B A, ...) so that both
see the same machine load, all with the same thread count (``--threads``, default 1, set
through OMP/OPENBLAS/MKL_NUM_THREADS before numpy is imported). A process warms up, then
times ``--repeats`` steps and reports their median wall and CPU (``time.process_time``)
times. Printed per case and tree: the median over the rounds of those medians, their lowest
and highest, and each tree's ratio to the first tree (of the medians, and the median of the
per-round ratios, which pairs processes that ran back to back).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
LABELS = {"a": "decoder step, batch 12", "b": "decoder step, batch 64",
          "c": "MLP language model step, batch 32", "d": "generate 63 tokens (KV cache)"}


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", nargs="*", help="NAME=PATH of a source tree (two or more)")
    parser.add_argument("--cases", nargs="+", choices="abcd", default=list("abcd"))
    parser.add_argument("--rounds", type=int, default=6, help="processes per tree and case")
    parser.add_argument("--repeats", type=int, default=21, help="timed steps per process")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps per process")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--child", choices="abcd", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def child(case: str, args: argparse.Namespace) -> None:
    """Time one case with whatever tensorlib is first on the path; print JSON."""
    sys.path.insert(0, HERE)
    import cases  # imports numpy under the thread variables set by the parent
    import numpy as np
    import twins

    import tensorlib as tl
    from tensorlib.nn import Rng

    cases.torch = None
    if case == "d":
        model = twins.make_decoder(twins.decoder_config())
        prompt = np.zeros((1, 1), dtype=np.int64)

        def step() -> None:
            model.generate(prompt, 63, rng=Rng(1), use_cache=True)
    else:
        kind, batch = {"a": ("decoder", 12), "b": ("decoder", 64), "c": ("mlp", 32)}[case]
        step = cases.build_pair(kind, batch)[0]
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


def measure(path: str, case: str, args: argparse.Namespace) -> dict[str, float]:
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
    expected = os.path.join(os.path.abspath(path), "tensorlib", "__init__.py")
    if os.path.realpath(result["tensorlib"]) != os.path.realpath(expected):
        raise SystemExit(f"the child imported {result['tensorlib']}, not {expected}")
    return result


def summary(times: dict[tuple[str, str], list[dict[str, float]]], names: list[str],
            case: str, key: str) -> list[str]:
    first = [run[key] for run in times[case, names[0]]]
    lines = []
    for name in names:
        mine = [run[key] for run in times[case, name]]
        line = (f"({case}) {name:<8}{key[:-3]:<5}{statistics.median(mine):>9.2f} ms "
                f"[{min(mine):.2f}, {max(mine):.2f}]")
        if name != names[0]:
            paired = statistics.median(a / b for a, b in zip(mine, first, strict=True))
            line += (f"  ratio {statistics.median(mine) / statistics.median(first):.3f}, "
                     f"paired {paired:.3f}")
        lines.append(line)
    return lines


def main(argv: list[str] | None = None) -> int:
    args = parse_arguments(argv)
    if args.child:
        child(args.child, args)
        return 0
    trees = dict(tree.split("=", 1) for tree in args.trees)
    names = list(trees)
    if len(names) < 2:
        raise SystemExit("give two or more trees as NAME=PATH")
    times: dict[tuple[str, str], list[dict[str, float]]] = {}
    for case in args.cases:
        for round_ in range(args.rounds):
            for name in names if round_ % 2 == 0 else names[::-1]:
                times.setdefault((case, name), []).append(measure(trees[name], case, args))
            print(f"({case}) round {round_ + 1}: " + ", ".join(
                f"{name} {times[case, name][-1]['wall_ms']:.2f} ms" for name in names),
                flush=True)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"\n{args.rounds} processes per tree and case, {args.repeats} timed steps each "
          f"after {args.warmup} warm-up steps, {args.threads} thread(s), load average now "
          f"{load:.1f}; median [lowest, highest] over the processes of their median times")
    for case in args.cases:
        print(f"{LABELS[case]}:")
        for key in ("wall_ms", "cpu_ms"):
            print("\n".join(summary(times, names, case, key)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
