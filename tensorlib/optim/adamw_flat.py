"""AdamW's update over every parameter at once: the loop over the flat buffers AdamW owns.

:class:`~tensorlib.optim.AdamW` keeps its moments in two flat buffers (``optimizer.state``'s
arrays are views into them), lays the step's gradients and values end to end in flat work
buffers, and asks the kernel table for an update loop over them; this module's
:func:`adamw_update` is that loop. It reads and writes only the buffers it is handed: the
optimizer checks the result and commits it (moments, parameters, step counts).
"""

from __future__ import annotations

from types import ModuleType

import numpy as np

from tensorlib.engine.backend import array_module
from tensorlib.engine.kernels.threads import cpu_elements, for_cache_blocks
from tensorlib.optim.adamw import AdamW, FlatBuffers
from tensorlib.optim.optimizer import register_step_kernel

__all__ = ["adamw_update", "register"]

# Entries per cache block: the update's 15 passes over 32K entries of its seven buffers
# (900 KB) find them in the CPU's cache after the first (on the CPU; a GPU takes the
# buffers whole).
_CACHE_BLOCK = 1 << 15


def adamw_update(flat: FlatBuffers, scalars: dict[str, float]) -> None:
    """One AdamW update of every entry of ``flat``: the new moments into ``flat.staged`` and
    the new values into ``flat.values`` (the gradient buffer is used up as scratch), from
    ``flat.moments``, ``flat.grads`` (already clipped) and ``flat.values``. ``scalars``:
    ``beta1``, ``beta2``, ``lr``, and the update's ``decay``, ``epsilon`` and ``correction``
    (:meth:`AdamW.update_scalars`).

    Stands in for: ``AdamW.step``'s loop over parameters (same update, same float operations
    in the same order). How: 32K entries at a time, so that the passes after the first find
    them in the CPU's cache, in contiguous blocks on the kernels' threads
    (``tensorlib.engine.kernels.threads``): every entry is updated alone, so the blocks
    change no bit. A few dozen array passes in all, instead of a few dozen per parameter.
    Accuracy: bit-identical to the loop (tests/engine/test_kernels.py).
    Measured: docs/performance.md, "AdamW over flat buffers" and
    "Two threads for the elementwise kernels".
    """
    values = flat.values
    xp: ModuleType = array_module(values)
    dtype = values.dtype.type
    size = values.shape[0]
    chunk = _CACHE_BLOCK if xp is np else max(size, 1)  # a GPU takes the buffers whole
    keep_first, take_first = dtype(scalars["beta1"]), dtype(1.0 - scalars["beta1"])
    keep_second, take_second = dtype(scalars["beta2"]), dtype(1.0 - scalars["beta2"])
    epsilon, correction = dtype(scalars["epsilon"]), dtype(scalars["correction"])
    lr, decay = dtype(scalars["lr"]), dtype(scalars["decay"])
    (old_first, old_second), (new_first, new_second) = flat.moments, flat.staged

    def update(part: slice) -> None:
        g, s, first, second = flat.grads[part], flat.scratch[part], new_first[part], \
            new_second[part]
        xp.multiply(old_first[part], keep_first, out=first)
        xp.multiply(g, take_first, out=s)
        first += s  # m = beta1·m + (1 - beta1)·g
        xp.multiply(g, g, out=s)
        s *= take_second
        xp.multiply(old_second[part], keep_second, out=second)
        second += s  # v = beta2·v + (1 - beta2)·g²
        denominator = g  # the gradients are no longer needed
        xp.sqrt(second, out=denominator)
        denominator += epsilon
        xp.divide(first, denominator, out=s)
        s *= correction
        s *= lr
        v = values[part]
        v *= decay
        v -= s  # p·(1 - lr·wd) - (m / d)·correction·lr

    for_cache_blocks(update, size, chunk, cpu_elements(values))


def register() -> None:
    """Let ``adamw_update`` run ``AdamW.step``'s update when its flat case applies."""
    register_step_kernel(AdamW, adamw_update)


