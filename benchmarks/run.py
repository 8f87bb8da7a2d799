"""tensorlib against PyTorch eager on the CPU, each library in a process of its own.

    make bench                                   # or: python benchmarks/run.py
    python benchmarks/run.py --threads 1         # one thread count only
    python benchmarks/run.py --cases a c --rounds 5 --repeats 31

Cases: (a) a Decoder training step (forward, backward, AdamW) at vocabulary 28, context 64,
4 layers, 4 heads, 128 channels, batch 12; (b) the same at batch 64; (c) an MLP language
model step (3 ids of context, embedding 10, hidden 200, batch 32, AdamW); (d) generating 63
tokens after a one-token prompt with the key/value cache; (e) peak memory of one step of (a);
(f) every matrix product of one step of (a) and nothing else (numpy's BLAS against PyTorch's),
so that the table can also say how (a) compares without them ("(a) - (f)"); (g) a small CNN
classifier's training step (two 3×3 convolutions of 16 and 32 channels, each with relu and a
2×2 max-pool, a Linear to 10 classes, AdamW) on 8×8 images, batch 64; (h) the same on 28×28
images, batch 32; (i)-(l) a recurrent character model's training step (embedding 32, one GRU
or LSTM layer of 128 or 256, a Linear to 28 logits at each step, AdamW) on 32 sequences of 32
characters: (i) GRU 128, (j) GRU 256, (k) LSTM 128, (l) LSTM 256; (m) and (n): (a) and (b)
with the forward pass and the loss under ``autocast("cpu", dtype=bfloat16)`` (float32
weights, AdamW in float32), what mixed precision costs or buys on this CPU.

How it measures. Two libraries in one process distort each other: their thread pools (numpy's
OpenBLAS, PyTorch's OpenMP and MKL) wait for and compete over the same cores. So every
measurement runs in a fresh child process that imports only one of the libraries. For each
thread count, the children alternate over ``--rounds`` rounds (tensorlib, PyTorch; then
PyTorch, tensorlib; ...), so both see the machine's load drift alike; both get the same
``OMP/OPENBLAS/MKL_NUM_THREADS``, set before either is imported, and each library's
``set_num_threads``. Each child warms up, then times ``--repeats`` steps of each case and
reports their median. The table gives, per case and thread count, the median over the rounds of each
library's medians and their ratio tensorlib / PyTorch (below 1: tensorlib is faster), with
the lowest and highest per-round ratio. One more child prints the versions and BLAS kernels,
checks that both libraries compute the same losses from the same weights (so the timings
compare the same work) and measures (e) (memory.py: each library in a fresh process again).
PyTorch is optional: without it tensorlib's timings are printed alone.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
# glibc returns freed heap memory to the system once more than this is free at the top, and
# the next step faults it back in page by page; --no-trim raises both limits (both libraries).
NO_TRIM = {"MALLOC_TRIM_THRESHOLD_": str(1 << 30), "MALLOC_MMAP_THRESHOLD_": str(1 << 25)}
CASES = ("a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n")
LABELS = {"a": "(a) decoder step, batch 12", "b": "(b) decoder step, batch 64",
          "c": "(c) MLP language model step, batch 32", "d": "(d) generate 63 tokens",
          "f": "(f) the matrix products of (a) alone",
          "g": "(g) CNN step, 8x8 images, batch 64", "h": "(h) CNN step, 28x28, batch 32",
          "i": "(i) GRU 128 step, batch 32 x 32", "j": "(j) GRU 256 step, batch 32 x 32",
          "k": "(k) LSTM 128 step, batch 32 x 32", "l": "(l) LSTM 256 step, batch 32 x 32",
          "m": "(m) (a) under bfloat16 autocast", "n": "(n) (b) under bfloat16 autocast"}


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2],
                        help="thread counts to run (default: 1 2)")
    parser.add_argument("--cases", nargs="+", choices=CASES, default=list(CASES))
    parser.add_argument("--rounds", type=int, default=3,
                        help="processes per library and thread count (default: 3)")
    parser.add_argument("--repeats", type=int, default=15, help="timed steps per process")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps per process")
    parser.add_argument("--no-torch", action="store_true", help="time tensorlib alone")
    parser.add_argument("--no-trim", action="store_true",
                        help="keep freed memory in the process (glibc), for both libraries")
    parser.add_argument("--json", metavar="PATH", help="also write every figure to PATH")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--library", choices=("tensorlib", "torch"), help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def child_environment(threads: int, no_trim: bool) -> dict[str, str]:
    env = dict(os.environ)
    env.update({name: str(threads) for name in THREAD_VARIABLES})
    if no_trim:
        env.update(NO_TRIM)
    return env


def run_child(args: argparse.Namespace, threads: int, library: str | None,
              cases: list[str]) -> dict:
    """Start one child (a library's timings, or the machine and checks) and read its JSON."""
    command = [sys.executable, os.path.abspath(__file__), "--child", "--threads", str(threads),
               "--repeats", str(args.repeats), "--warmup", str(args.warmup), "--cases", *cases]
    if library:
        command += ["--library", library]
    if args.no_torch:
        command.append("--no-torch")
    done = subprocess.run(command, env=child_environment(threads, args.no_trim),
                          capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"the {library or 'checking'} process failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def ratio_line(label: str, ours: list[float], theirs: list[float] | None) -> str:
    """Medians over the rounds, their ratio and the range of the per-round ratios."""
    mine = statistics.median(ours)
    line = f"{label:<40}{mine:>10.1f} ms"
    if theirs:
        other = statistics.median(theirs)
        per_round = [a / b for a, b in zip(ours, theirs, strict=True)]
        line += (f"{other:>10.1f} ms{mine / other:>8.2f}   "
                 f"{min(per_round):.2f}-{max(per_round):.2f}")
    return line


def memory_lines(memory: dict) -> list[str]:
    lines = []
    for key, label in (("allocator_bytes", "(e) peak memory of (a), allocator"),
                       ("rss_bytes", "    resident-set growth of (a)")):
        ours = memory["tensorlib"][key]
        if ours is None:
            continue
        line = f"{label:<40}{ours / 2**20:>9.1f} MiB"
        theirs = memory.get("torch", {}).get(key)
        if theirs:
            line += f"{theirs / 2**20:>9.1f} MiB{ours / theirs:>8.2f}"
        lines.append(line)
    lines.append("    allocator: tracemalloc (numpy) against PyTorch's profiler (its CPU "
                 "allocator), from the start of one step to its peak; each in a fresh process")
    return lines


def measure(args: argparse.Namespace, threads: int) -> dict:
    """Every figure for one thread count: the checking child, then the rounds."""
    info = run_child(args, threads, None, args.cases)
    for line in info["machine"] + info["checks"]:
        print(line, flush=True)
    timing_cases = [case for case in args.cases if case != "e"]
    libraries = ["tensorlib"] if args.no_torch or "not installed" in " ".join(
        info["machine"]) else ["tensorlib", "torch"]
    rounds: dict[str, list[dict]] = {library: [] for library in libraries}
    if timing_cases:
        for number in range(args.rounds):
            for library in libraries if number % 2 == 0 else reversed(libraries):
                rounds[library].append(run_child(args, threads, library, timing_cases)["timings"])
    print(f"{args.rounds} rounds of one process per library (alternating), each the median of "
          f"{args.repeats} steps after {args.warmup} warm-up steps; ratio = tensorlib / PyTorch "
          "of the medians over the rounds (below 1: tensorlib is faster), then the range of "
          "the per-round ratios")
    print(f"{'case':<40}{'tensorlib':>13}{'PyTorch':>13}{'ratio':>8}   range")
    figures = {"machine": info["machine"], "cases": {}}
    for case in timing_cases:
        ours = [result[case]["median_ms"] for result in rounds["tensorlib"]]
        theirs = ([result[case]["median_ms"] for result in rounds["torch"]]
                  if "torch" in rounds else None)
        print(ratio_line(LABELS[case], ours, theirs), flush=True)
        figures["cases"][case] = {"tensorlib_ms": ours, "torch_ms": theirs}
    if "a" in timing_cases and "f" in timing_cases:
        ours = [r["a"]["median_ms"] - r["f"]["median_ms"] for r in rounds["tensorlib"]]
        theirs = ([r["a"]["median_ms"] - r["f"]["median_ms"] for r in rounds["torch"]]
                  if "torch" in rounds else None)
        print(ratio_line("    (a) - (f): all but the products", ours, theirs), flush=True)
    if "e" in args.cases:
        for line in memory_lines(info["memory"]):
            print(line)
        figures["memory"] = info["memory"]
    return figures


def main(argv: list[str] | None = None) -> int:
    args = parse_arguments(sys.argv[1:] if argv is None else argv)
    if any(threads < 1 for threads in args.threads) or args.rounds < 1 or args.repeats < 1:
        raise SystemExit("--threads, --rounds and --repeats must be positive")
    if args.child:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import cases  # numpy (and torch, in its own processes) load under the child's setting

        return cases.run_child(args, args.threads[0])
    figures = {}
    for threads in args.threads:
        print(f"\n=== {threads} thread(s) ===", flush=True)
        figures[str(threads)] = measure(args, threads)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(figures, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
