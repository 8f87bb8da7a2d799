"""``make test-portable``: the whole workbook under nbval on the BLAS kernels of other machines.

A learner's laptop does not compute a matrix product with the same instructions as ours: OpenBLAS
picks a kernel for the CPU it finds (AVX-512, AVX2, AVX, SSE3 ...), each kernel adds the
products in its own order, and so the last bits of a product differ from one machine to the
next. A stored output that depends on those bits fails nbval on the learner's machine. This
script runs the workbook (both copies) once for each kernel that this CPU can run and that a
learner's CPU may pick, at 1 and 2 BLAS threads:

* ``Sandybridge`` (AVX), ``Haswell`` (AVX2 and FMA, the kernel of most laptops) where the CPU
  has AVX2, and ``Prescott`` (SSE3, the lowest x86-64 kernel), forced with
  ``OPENBLAS_CORETYPE``;
* the kernel OpenBLAS detects by itself (both ``OPENBLAS_CORETYPE`` and ``OPENBLAS_L2_SIZE``
  unset), when it is none of those (``SkylakeX`` on an AVX-512 machine, for instance).

Each run says which kernel it ran, as threadpoolctl reports it from a process with the run's
environment. On a CPU that is not x86-64 only the detected kernel runs. ``make test`` never
sets the kernel: it tests the machine's own setting.

    python scripts/test_portable.py                               # every kernel, 1 and 2 threads
    python scripts/test_portable.py --kernels Prescott --threads 2 notebooks/07_*.ipynb

``--after-make-test`` (CI, whose first stage is ``make test``) leaves out the one run that
stage made already: the learner's copies on the kernel this environment picks, at one thread.

``--both-copies-at 1`` (CI) runs the teacher's copies at one thread only: at the other thread
counts each kernel runs the learner's copies, the workbook a learner runs. The teacher's
lesson cells store the learner's outputs (tests/course/test_exercises.py proves it), so they
compute what the learner's copies compute; the answers' own cells run on every kernel at one
thread. At two threads a run has one pytest worker per two cores, so this halves the
longest runs (about 22 minutes of CI's 48 on a 2-core machine).

A run in which a Jupyter kernel died before it started (jupyter_client's "Kernel died before
replying to kernel_info": no cell had run) is run once more, and says so; a notebook that
fails fails both times.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DETECTED = "detected"
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def has_avx2() -> bool:
    """Whether this CPU runs OpenBLAS's Haswell kernel (AVX2 and FMA)."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:  # not Linux: numpy knows the CPU's features too
        import numpy as np
        features = getattr(np._core._multiarray_umath, "__cpu_features__", {})
        return bool(features.get("AVX2") and features.get("FMA3"))
    return " avx2" in flags and " fma" in flags


def candidate_kernels() -> list[str]:
    """The kernels a run forces on this CPU, then the one OpenBLAS detects."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return [DETECTED]
    return ["Sandybridge", *(["Haswell"] if has_avx2() else []), "Prescott", DETECTED]


def run_environment(kernel: str, threads: int) -> dict[str, str]:
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    if kernel != DETECTED:
        environment["OPENBLAS_CORETYPE"] = kernel
    environment.update({name: str(threads) for name in THREAD_VARIABLES})
    environment["PYTHONDONTWRITEBYTECODE"] = ""  # as make test: every kernel compiles once
    return environment


def blas_in_use(environment: dict[str, str]) -> tuple[str, int]:
    """(architecture, threads) of the BLAS that numpy loads with this environment."""
    probe = ("import json, numpy, threadpoolctl; "
             "info = [i for i in threadpoolctl.threadpool_info() if i['user_api'] == 'blas']; "
             "print(json.dumps([(i.get('architecture') or i['internal_api'], i['num_threads']) "
             "for i in info]))")
    output = subprocess.run([sys.executable, "-c", probe], env=environment, check=True,
                            capture_output=True, text=True).stdout
    libraries = json.loads(output)
    if not libraries:
        return "no BLAS found", 0
    architecture, threads = libraries[0]
    return str(architecture), int(threads)


KERNEL_DIED = "Kernel died before replying to kernel_info"


def run_streaming(command: list[str], environment: dict[str, str]) -> tuple[int, bool]:
    """Run ``command``, printing its output as it comes; its exit code, and whether a
    kernel failed to start (which no notebook causes: it dies before running a cell)."""
    process = subprocess.Popen(command, cwd=ROOT, env=environment, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, bufsize=1)
    kernel_died = False
    assert process.stdout is not None
    for line in process.stdout:
        print(line, end="", flush=True)
        kernel_died = kernel_died or KERNEL_DIED in line
    return process.wait(), kernel_died


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernels", help="comma-separated OPENBLAS_CORETYPE names, or "
                        f"'{DETECTED}' (default: every kernel this CPU can run)")
    parser.add_argument("--threads", default="1,2", help="BLAS thread counts (default 1,2)")
    parser.add_argument("--after-make-test", action="store_true",
                        help="make test has just run the learner's copies in this environment "
                        "at 1 thread: on that kernel at 1 thread, run the teacher's copies only")
    parser.add_argument("--both-copies-at", metavar="THREADS",
                        help="comma-separated thread counts at which the teacher's copies run "
                        "too (default: every count); at the others, the learner's copies only")
    parser.add_argument("paths", nargs="*", default=["notebooks"],
                        help="notebooks or folders (default: the whole workbook, both copies)")
    arguments = parser.parse_args(argv)
    kernels = arguments.kernels.split(",") if arguments.kernels else candidate_kernels()
    thread_counts = [int(count) for count in arguments.threads.split(",")]
    both_copies_at = thread_counts if arguments.both_copies_at is None else \
        [int(count) for count in arguments.both_copies_at.split(",")]
    cores = os.cpu_count() or 1

    # make test's run: this environment as it is, at one thread (the Makefile's TEST_THREADS)
    already_run = blas_in_use({**os.environ, **{name: "1" for name in THREAD_VARIABLES}}) \
        if arguments.after_make_test and arguments.paths == ["notebooks"] else None

    results, seen = [], set()
    for kernel in kernels:
        for threads in thread_counts:
            environment = run_environment(kernel, threads)
            architecture, blas_threads = blas_in_use(environment)
            if kernel == DETECTED and (architecture, threads) in seen:
                print(f"== the detected kernel is {architecture}, already run at {threads} "
                      f"thread(s)", flush=True)
                continue
            seen.add((architecture, threads))
            workers = max(1, cores // threads)  # one BLAS thread per core, no more
            print(f"== kernel {architecture} (OPENBLAS_CORETYPE="
                  f"{environment.get('OPENBLAS_CORETYPE', 'unset')}), {blas_threads} BLAS "
                  f"thread(s), {workers} pytest worker(s)", flush=True)
            paths = arguments.paths
            if already_run == (architecture, blas_threads):
                print(f"== the learner's copies on {architecture} at 1 thread: run by make test; "
                      "the teacher's copies now", flush=True)
                paths = ["notebooks/solutions"]
            elif arguments.paths == ["notebooks"] and threads not in both_copies_at:
                print(f"== the learner's copies only at {threads} thread(s) (--both-copies-at "
                      f"{arguments.both_copies_at})", flush=True)
                paths = sorted(str(path.relative_to(ROOT))
                               for path in (ROOT / "notebooks").glob("*.ipynb"))
            command = [sys.executable, "-m", "pytest", "-n", str(workers), "--dist", "loadfile",
                       "--no-loadscope-reorder", "--nbval", "--nbval-current-env", "-q", *paths]
            start = time.perf_counter()
            code, kernel_died = run_streaming(command, environment)
            if code != 0 and kernel_died:  # the machine's fault, not a notebook's: once more
                print(f"== a Jupyter kernel died before it started ({KERNEL_DIED}); this "
                      "run once more, from the start", flush=True)
                code, _ = run_streaming(command, environment)
            results.append((architecture, blas_threads, code, time.perf_counter() - start))

    print("\n== portability summary")
    for architecture, threads, code, seconds in results:
        verdict = "passed" if code == 0 else f"FAILED (pytest exit {code})"
        print(f"{architecture:>12s}  {threads} thread(s)  {seconds:6.0f} s  {verdict}")
    return 0 if results and all(code == 0 for _, _, code, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())
