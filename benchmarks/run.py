"""tensorlib against PyTorch eager on the CPU, side by side in one run.

    make bench                                   # or: python benchmarks/run.py
    python benchmarks/run.py --threads 1 2       # one child process per thread count
    python benchmarks/run.py --cases a c --repeats 31

Cases: (a) a Decoder training step (forward, backward, AdamW) at vocabulary 28, context 64,
4 layers, 4 heads, 128 channels, batch 12; (b) the same at batch 64; (c) an MLP language
model step (3 ids of context, embedding 10, hidden 200, batch 32, AdamW); (d) generation
tokens per second with the key/value cache; (e) peak memory of (a).

Both libraries run float32 with the same thread count, set through OMP/OPENBLAS/MKL_NUM_THREADS
before either is imported (and ``torch.set_num_threads``). Each case warms up, then times the
two libraries' steps interleaved (A B B A ...), so both see the same machine load, and prints
the medians and their ratio tensorlib / PyTorch (below 1: tensorlib is faster). PyTorch is
optional: without it the tensorlib timings are printed alone.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
# glibc returns freed heap memory to the system once more than this is free at the top, and
# the next step faults it back in page by page; --no-trim raises both limits (both libraries).
NO_TRIM = {"MALLOC_TRIM_THRESHOLD_": str(1 << 30), "MALLOC_MMAP_THRESHOLD_": str(1 << 25)}
CASES = ("a", "b", "c", "d", "e")


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1],
                        help="thread counts to run, one child process each (default: 1)")
    parser.add_argument("--cases", nargs="+", choices=CASES, default=list(CASES))
    parser.add_argument("--repeats", type=int, default=15, help="timed steps per library")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps per library")
    parser.add_argument("--no-torch", action="store_true", help="time tensorlib alone")
    parser.add_argument("--no-trim", action="store_true",
                        help="keep freed memory in the process (glibc), for both libraries")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    args = parse_arguments(arguments)
    if any(threads < 1 for threads in args.threads):
        raise SystemExit(f"--threads must be positive, got {args.threads}")
    if not args.child:
        # The thread count (and glibc's settings) must be in the environment before numpy
        # and torch are imported, so each configuration runs in a fresh child process.
        status = 0
        for threads in args.threads:
            env = dict(os.environ)
            env.update({name: str(threads) for name in THREAD_VARIABLES})
            if args.no_trim:
                env.update(NO_TRIM)
            child = [sys.executable, os.path.abspath(__file__), *_without_threads(arguments),
                     "--threads", str(threads), "--child"]
            status |= subprocess.run(child, env=env).returncode
            sys.stdout.flush()
        return status
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import cases  # imports numpy (and torch, when installed) under the child's environment

    return cases.run_all(args, args.threads[0])


def _without_threads(arguments: list[str]) -> list[str]:
    kept, skipping = [], False
    for argument in arguments:
        if argument == "--threads":
            skipping = True
        elif skipping and not argument.startswith("-"):
            continue
        else:
            skipping = False
            kept.append(argument)
    return kept


if __name__ == "__main__":
    sys.exit(main())
