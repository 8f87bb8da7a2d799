"""AdamW's update over every parameter at once, in flat buffers."""

from __future__ import annotations

import weakref
from types import ModuleType
from typing import Any

import numpy as np

from tensorlib.engine.backend import array_module, writable
from tensorlib.engine.kernels.threads import cpu_elements, for_cache_blocks
from tensorlib.engine.typing import Array
from tensorlib.engine.validation import is_floating
from tensorlib.optim.adamw import AdamW
from tensorlib.optim.optimizer import register_step_kernel

__all__ = ["adamw_step"]

# Per optimizer: the flat buffers (moments, staged new moments, gradients, values, scratch) and
# the views into them. Kept here, not on the optimizer, so reference mode never sees them.
_BUFFERS: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()
# Entries per cache block: the update's 15 passes over 32K entries of its seven buffers
# (900 KB) find them in the CPU's cache after the first (on the CPU; a GPU takes the
# buffers whole).
_CACHE_BLOCK = 1 << 15


def adamw_step(optimizer: AdamW) -> bool:
    """One AdamW step for every parameter of ``optimizer`` (a ``tensorlib.optim.AdamW``),
    laid end to end in flat buffers. Returns False, having changed nothing, when the flat
    case does not apply or a number is not finite; the caller then runs its own loop.

    Stands in for: ``AdamW.step``'s loop over parameters (same update, same float operations
    in the same order). The flat case: one parameter group, every parameter trainable with a
    gradient, one dtype, one array type, one step count.
    How: the moments live in two flat buffers, and ``optimizer.state[i]``'s arrays are views
    into them, updated in place (as PyTorch does); new moments and values are staged in flat
    buffers, checked (two sums: a non-finite gradient or value makes the new values non-finite,
    an overflowing square the second moment), then committed. The update itself runs 32K
    entries at a time, so that its passes after the first find the entries in the CPU's
    cache, in contiguous blocks of the buffers on the kernels' threads
    (``tensorlib.engine.kernels.threads``); the two sums run afterwards on the calling thread over
    the whole buffers, so the decision does not depend on the thread count. A few dozen
    array passes in all, instead of a few dozen per parameter.
    Accuracy: bit-identical to the loop (tests/engine/test_kernels.py).
    Measured: docs/performance.md, "AdamW over flat buffers" and
    "Two threads for the elementwise kernels".
    """
    step = _common_step(optimizer)
    if step is None:
        return False
    parameters = optimizer.parameters
    first = parameters[0]._data
    xp, dtype = array_module(first), first.dtype.type
    coefficient = None
    if optimizer.max_grad_norm > 0.0:
        try:
            coefficient = optimizer.clip_coefficient(  # _common_step found every grad
                [p.grad._data for p in parameters])  # type: ignore[union-attr]
        except ValueError:  # a non-finite norm: the caller's loop finds and reports the cause
            return False
    flat = _flat_buffers(optimizer, xp, first.dtype)
    xp.concatenate([p.grad._data.reshape(-1) for p in parameters],  # type: ignore[union-attr]
                   out=flat["grads"])
    xp.concatenate([p._data.reshape(-1) for p in parameters], out=flat["values"])
    if coefficient is not None:
        flat["grads"] *= dtype(coefficient)
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        _staged_update(optimizer, flat, step, xp, dtype)
        # A sum that merely overflows is a false alarm: it only costs the caller's loop.
        if not (_finite_sum(flat["staged"][1]) and _finite_sum(flat["values"])):
            return False
    _commit(optimizer, flat, step)
    return True


def _common_step(optimizer: AdamW) -> int | None:
    """The next step number when the flat case applies, else None."""
    if len(optimizer.param_groups) != 1:
        return None
    parameters, state = optimizer.parameters, optimizer.state
    first = parameters[0]._data
    if not is_floating(first.dtype):
        return None
    step = state[0]["step"] + 1
    for parameter, entry in zip(parameters, state, strict=True):
        grad = None if parameter.grad is None else parameter.grad._data
        data = parameter._data
        if (not parameter.requires_grad or grad is None or not writable(data)
                or type(grad) is not type(data)
                or grad.shape != data.shape or grad.dtype != first.dtype
                or data.dtype != first.dtype or type(data) is not type(first)
                or entry["step"] != step - 1):
            return None
    return step


def _staged_update(optimizer: AdamW, flat: dict[str, Any], step: int, xp: ModuleType,
                   dtype: type[np.floating[Any]]) -> None:
    """The new moments into ``flat["staged"]`` and the new values into ``flat["values"]``
    (the gradient buffer is used up as scratch), over blocks of the flat buffers on the
    kernels' threads: every entry is updated alone, so the blocks change no bit."""
    moments, grads, values, scratch = flat["moments"], flat["grads"], flat["values"], \
        flat["scratch"]
    group = optimizer.param_groups[0]
    beta1, beta2 = group["betas"]
    decay, epsilon, correction = optimizer.update_scalars(step, group)
    staged_first, staged_second = flat["staged"]

    size = values.shape[0]
    chunk = _CACHE_BLOCK if xp is np else max(size, 1)  # a GPU takes the buffers whole
    keep_first, take_first = dtype(beta1), dtype(1.0 - beta1)
    keep_second, take_second = dtype(beta2), dtype(1.0 - beta2)
    epsilon, correction, lr, decay = (dtype(epsilon), dtype(correction), dtype(group["lr"]),
                                      dtype(decay))

    def update(part: slice) -> None:
        g, s, first, second = grads[part], scratch[part], staged_first[part], \
            staged_second[part]
        xp.multiply(moments[0][part], keep_first, out=first)
        xp.multiply(g, take_first, out=s)
        first += s  # m = beta1·m + (1 - beta1)·g
        xp.multiply(g, g, out=s)
        s *= take_second
        xp.multiply(moments[1][part], keep_second, out=second)
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


def _commit(optimizer: AdamW, flat: dict[str, Any], step: int) -> None:
    moments = flat["moments"]
    moments[0][...] = flat["staged"][0]
    moments[1][...] = flat["staged"][1]
    for parameter, entry, new_value in zip(optimizer.parameters, optimizer.state,
                                           flat["value_views"], strict=True):
        parameter._data[...] = new_value  # shapes and dtypes were checked
        parameter._bump_version()  # what copy_ would do, without re-checking
        entry["step"] = step


def _finite_sum(array: Array) -> bool:
    """True when the sum of ``array`` is finite: no inf or nan inside (and no overflow)."""
    return bool(array_module(array).isfinite(array.sum()))


def _flat_buffers(optimizer: AdamW, xp: ModuleType, dtype: np.dtype) -> dict[str, Any]:
    """The optimizer's flat buffers, rebuilt (from its state) when the state's moment arrays
    are no longer their views: after construction, ``load_state_dict`` or a step of the
    loop."""
    flat = _BUFFERS.get(optimizer)
    sizes = [p.numel() for p in optimizer.parameters]
    if flat is not None and flat["dtype"] == dtype and flat["sizes"] == sizes and all(
            entry["first_moment"] is first and entry["second_moment"] is second
            for entry, first, second in zip(optimizer.state, *flat["moment_views"],
                                            strict=True)):
        return flat
    total = sum(sizes)

    def views(buffer: Array) -> list[Array]:
        out, start = [], 0
        for parameter, size in zip(optimizer.parameters, sizes, strict=True):
            out.append(buffer[start:start + size].reshape(parameter.shape))
            start += size
        return out

    moments = tuple(xp.concatenate([entry[key].reshape(-1) for entry in optimizer.state])
                    .astype(dtype, copy=False) for key in ("first_moment", "second_moment"))
    moment_views = (views(moments[0]), views(moments[1]))
    for entry, first, second in zip(optimizer.state, *moment_views, strict=True):
        entry["first_moment"], entry["second_moment"] = first, second
    values = xp.empty(total, dtype=dtype)
    flat = {
        "dtype": dtype, "sizes": sizes, "moments": moments, "moment_views": moment_views,
        "staged": (xp.empty(total, dtype=dtype), xp.empty(total, dtype=dtype)),
        "grads": xp.empty(total, dtype=dtype), "values": values,
        "value_views": views(values), "scratch": xp.empty(total, dtype=dtype),
    }
    _BUFFERS[optimizer] = flat
    return flat


def register() -> None:
    """Let ``adamw_step`` stand in for ``AdamW.step``'s loop (when its flat case applies)."""
    register_step_kernel(AdamW, adamw_step)
