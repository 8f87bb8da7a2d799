"""The one owner of tensorlib's threads: how many there are, BLAS's share, and a small pool
that splits the elementwise kernels' rows into contiguous blocks.

``tensorlib.set_num_threads(n)`` and ``tensorlib.get_num_threads()`` are PyTorch's: ``n``
threads from then on, for the matrix products (numpy's BLAS, set through threadpoolctl) and
for the kernels' pool. The count starts at ``TENSORLIB_NUM_THREADS``, else the variables
numpy's OpenBLAS reads (``OPENBLAS_NUM_THREADS``, then ``OMP_NUM_THREADS``, the one PyTorch
reads), else the cores this process may run on, as PyTorch's does. tensorlib changes BLAS's
threads only when ``set_num_threads`` is called: a program that set them itself (an
environment variable, threadpoolctl) keeps its setting until then.

numpy runs each elementwise pass (an add, an exp, a row sum) on the calling thread, but
releases the GIL inside its loops, so two Python threads that each run the same passes
over half of the rows can share them out between two cores. ``for_row_blocks`` does that:
it cuts ``range(rows)`` into contiguous blocks (two per thread), which the calling thread
and the pool's workers take in turn until none is left.

The rules that keep the results the same whatever the number of threads
(tests/engine/test_threads.py checks them bit for bit at 1, 2 and 3 threads):

- a block's function computes each of its rows the way it would in any other block: only
  elementwise passes and reductions along a row (numpy's, or the einsum ``row_sums`` of
  ``tensorlib.engine.kernels.reductions``, never a BLAS product, whose rounding of one row depends
  on how many rows it is given);
- whatever combines rows (a loss's sum, a bias gradient, a finiteness check) is computed by
  the caller on the whole array after the blocks are done, on the calling thread.

Arrays below ``MIN_PARALLEL_ELEMENTS`` elements run on the calling thread with no pool work
at all; so does everything in ``reference_mode()``. The pool starts at the first call that
needs it.
"""

from __future__ import annotations

import contextvars
import itertools
import os
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from tensorlib.engine import validation
from tensorlib.engine.kernel_table import enabled
from tensorlib.engine.typing import Array

__all__ = ["BLOCKS_PER_THREAD", "MIN_PARALLEL_ELEMENTS", "THREAD_VARIABLE", "available_cores",
           "cpu_elements", "for_cache_blocks", "for_row_blocks", "get_num_threads",
           "pool_size", "row_blocks", "set_num_threads", "shutdown", "threads_from_environment"]

THREAD_VARIABLE = "TENSORLIB_NUM_THREADS"
# Where the count comes from, in order: tensorlib's own variable, then the ones numpy's
# OpenBLAS reads, in its order (so that the pool agrees with BLAS), PyTorch's among them.
COUNT_VARIABLES = (THREAD_VARIABLE, "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")

# Arrays with fewer elements than this stay on the calling thread, with no pool work at all.
# Measured on a 2-core machine with BLAS on both cores (docs/performance.md, "Two threads
# for the elementwise kernels"): splitting batch 12's arrays (at most 808K elements) made a
# decoder step 7-16% slower, splitting batch 64's (GELU over 2M) 1-3% faster. After each
# product OpenBLAS's idle thread keeps spinning on the second core, and a split pays only
# where a pass is long enough to outlast that.
MIN_PARALLEL_ELEMENTS = 1 << 20
# Blocks per thread: with two, a thread that starts late (its core busy with another process)
# leaves its second block to the others; each block costs a few µs of Python per pass.
BLOCKS_PER_THREAD = 2

_lock = threading.Lock()
_override: int | None = None
_from_environment: int | None = None
_pool: ThreadPoolExecutor | None = None
_pool_workers = 0
_worker = threading.local()  # .active is True on the pool's own threads


def threads_from_environment(environ: Mapping[str, str] | None = None) -> int:
    """The thread count the environment asks for: the first of ``COUNT_VARIABLES``
    (``TENSORLIB_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS``) that holds a
    positive integer; else the cores available."""
    environ = os.environ if environ is None else environ
    for variable in COUNT_VARIABLES:
        value = environ.get(variable, "").strip()
        if value.isdigit() and int(value) >= 1:
            return int(value)
    return available_cores()


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity where the system has one)."""
    if hasattr(os, "sched_getaffinity"):
        return max(len(os.sched_getaffinity(0)), 1)
    return os.cpu_count() or 1


def get_num_threads() -> int:
    """The number of threads tensorlib computes with (``set_num_threads``'s value, else the
    environment's, read once)."""
    global _from_environment
    if _override is not None:
        return _override
    if _from_environment is None:
        _from_environment = threads_from_environment()
    return _from_environment


def set_num_threads(count: int) -> None:
    """Compute with ``count`` threads from now on: numpy's BLAS is set to ``count`` threads
    (through threadpoolctl) and the kernels' pool splits large arrays over as many.
    ValueError or TypeError, changing nothing, unless ``count`` is a positive integer."""
    global _override
    count = validation.positive_integer(count, "number of threads")
    from threadpoolctl import threadpool_limits  # scans the loaded libraries: only here
    threadpool_limits(limits=count, user_api="blas")
    _override = count


def pool_size() -> int:
    """The number of worker threads the pool has started (0 before its first use)."""
    return _pool_workers if _pool is not None else 0


def shutdown() -> None:
    """Stop the pool's workers (the next call that needs them starts a new pool)."""
    global _pool, _pool_workers
    with _lock:
        pool, _pool, _pool_workers = _pool, None, 0
    if pool is not None:
        pool.shutdown(wait=True)


def cpu_elements(a: Array) -> int:
    """The size to pass ``for_row_blocks`` for array ``a``: its size for a numpy array, 0
    (one block, no threads) for an array on a GPU, whose library runs its own threads."""
    return a.size if isinstance(a, np.ndarray) else 0


def row_blocks(rows: int, elements: int) -> list[tuple[int, int]]:
    """The blocks ``(start, stop)`` that ``for_row_blocks`` cuts ``range(rows)`` into, for an
    array of ``elements`` elements: one block when the kernels are off, one thread is asked
    for, or the array is below ``MIN_PARALLEL_ELEMENTS``; else ``BLOCKS_PER_THREAD`` per
    thread (at most one per row), of sizes that differ by at most one row."""
    threads = get_num_threads()
    if threads == 1 or elements < MIN_PARALLEL_ELEMENTS or rows < 2 or not enabled() \
            or getattr(_worker, "active", False):
        return [(0, rows)]
    count = min(threads * BLOCKS_PER_THREAD, rows)
    return [(rows * i // count, rows * (i + 1) // count) for i in range(count)]


def for_row_blocks(function: Callable[[int, int], Any], rows: int,
                   elements: int) -> list[Any]:
    """Call ``function(start, stop)`` on the blocks of ``row_blocks(rows, elements)`` and
    return its results in block order.

    The calling thread and ``get_num_threads() - 1`` workers take the blocks in order, each
    the next one not yet taken, until none is left; so when a core is held by another
    process and a worker starts late, the calling thread does more of the blocks instead of
    waiting for it. ``function`` writes its rows' results into arrays the caller made; it
    runs with the caller's context (numpy's ``errstate`` included). An exception raised by
    a block is raised here, after every block that was started has finished.
    """
    blocks = row_blocks(rows, elements)
    if len(blocks) == 1:
        return [function(0, rows)]
    helpers = min(get_num_threads(), len(blocks)) - 1
    pool = _pool_with(helpers)
    results: list[Any] = [None] * len(blocks)
    errors: list[BaseException] = []
    taken = itertools.count()  # next() on it is atomic: each block is taken once

    def take_blocks() -> None:
        for index in taken:
            if index >= len(blocks) or errors:
                return
            try:
                results[index] = function(*blocks[index])
            except BaseException as error:  # the others stop at their next block
                errors.append(error)
                return

    context = contextvars.copy_context()
    futures = [pool.submit(context.copy().run, take_blocks) for _ in range(helpers)]
    take_blocks()
    for future in futures:
        if not future.cancel():  # a worker that never started has nothing left to do
            future.result()  # waits for the block it is on
    if errors:
        raise errors[0]
    return results


def for_cache_blocks(function: Callable[[slice], Any], size: int, block: int,
                     elements: int) -> None:
    """Call ``function(part)`` on the consecutive slices ``part`` of ``range(size)``, each
    ``block`` entries long (the last one shorter), the slices shared out in contiguous runs
    by ``for_row_blocks(..., elements)``.

    For elementwise kernels that make many passes over a long flat array: a slice small
    enough to stay in the CPU's cache takes all the passes before the next one begins.
    ``block`` is at least 1; ``size`` 0 calls nothing.
    """
    def run(first: int, last: int) -> None:  # the slices first .. last - 1
        for start in range(first * block, min(last * block, size), block):
            function(slice(start, min(start + block, size)))

    if size:
        for_row_blocks(run, -(-size // block), elements)


def _pool_with(workers: int) -> ThreadPoolExecutor:
    """The pool, started (or restarted larger) so that it has at least ``workers`` threads."""
    global _pool, _pool_workers
    with _lock:
        if _pool is None or _pool_workers < workers:
            old, _pool_workers = _pool, workers
            _pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tensorlib",
                                       initializer=_mark_worker)
            if old is not None:
                old.shutdown(wait=False)
        return _pool


def _mark_worker() -> None:
    _worker.active = True  # a kernel called on a worker runs its blocks there, unsplit


def _forget_pool() -> None:
    """In a child made by ``os.fork`` the pool's threads do not exist: start afresh."""
    global _pool, _pool_workers, _lock
    _pool, _pool_workers, _lock = None, 0, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)
