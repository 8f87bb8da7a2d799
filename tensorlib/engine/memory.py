"""Process-wide memory settings that make numpy-heavy training faster (Linux with glibc).

A training step allocates its activations afresh and frees them all at the end of the
backward pass. By default glibc's malloc then hands the top of its heap back to the operating
system, and gives large arrays pages of their own that are unmapped when freed, so the next
step touches every page anew: about 5,000-7,000 page faults per step of the benchmark's
decoder at batch 12, some 7% of its time (docs/performance.md, "Page faults").
:func:`keep_freed_memory` asks malloc to keep that memory for reuse instead. It changes a
setting of the whole process, so it is never called on import: programs call it (the CLI's
``train-names`` does), and so may a notebook that trains for a while.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import platform
import sys

from tensorlib.engine import validation

__all__ = ["keep_freed_memory"]

# mallopt parameter numbers, from glibc's <malloc.h>.
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_MMAP_THRESHOLD_MAX = 32 * 2**20  # glibc's ceiling on 64-bit machines
_INT_MAX = 2**31 - 1


def _check_threshold(name: str, value: object, high: int) -> int:
    return validation.integer(value, f"{name} (bytes)", minimum=0, maximum=high)


def _glibc() -> ctypes.CDLL | None:
    """The C library when it is glibc (Linux), else None."""
    if not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc":
        return None
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")


def keep_freed_memory(trim_threshold: int = _INT_MAX,
                      mmap_threshold: int = _MMAP_THRESHOLD_MAX) -> bool:
    """Make malloc keep freed memory for reuse rather than return it to the system.

    Sets glibc's ``M_TRIM_THRESHOLD`` (how much free memory may stay at the top of the heap;
    default here: 2 GiB - 1) and ``M_MMAP_THRESHOLD`` (allocations at least this large get
    pages of their own, given back when freed; default here: 32 MiB, glibc's maximum), for
    the whole process, as the environment variables ``MALLOC_TRIM_THRESHOLD_`` and
    ``MALLOC_MMAP_THRESHOLD_`` would at start-up. The price is a resident set that stays at
    its peak. Returns True when applied, False (changing nothing) where the C library is not
    glibc. Bad arguments raise before anything is changed.
    """
    trim = _check_threshold("trim_threshold", trim_threshold, _INT_MAX)
    mmap = _check_threshold("mmap_threshold", mmap_threshold, _MMAP_THRESHOLD_MAX)
    libc = _glibc()
    if libc is None:
        return False
    libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    libc.mallopt.restype = ctypes.c_int
    return bool(libc.mallopt(_M_MMAP_THRESHOLD, mmap)) and bool(
        libc.mallopt(_M_TRIM_THRESHOLD, trim))
