"""How an op meets float16 and bfloat16 arrays: in float32, rounded once.

numpy has no fast arithmetic for the 16-bit formats, and summing many terms in them loses
most of the sum. So an op given a float16 or bfloat16 input (its ``low_precision`` attribute
"float32", the default) runs its own forward and backward on float32 copies, through a
*rounding twin* made once per op: the output is rounded to the inputs' low-precision dtype
once, and each input's gradient once to that input's dtype, as PyTorch's CPU kernels do.
What the op saved for backward is kept narrow: a saved input is the caller's own 16-bit
array, a saved output the rounded result (PyTorch saves them so too), widened again only
while the backward runs; other saved arrays (a norm's statistics) stay float32. The ops that
only move or pick values (``low_precision = "any"``) run on the 16-bit arrays themselves, so
a view stays a view.

Overflow is silent here, as in PyTorch: beyond float16's range is inf, infs make nans, and
GradScaler looks for them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from tensorlib.engine import autograd
from tensorlib.engine.dtypes import float32, is_low_precision, promote_types, to_float32
from tensorlib.engine.typing import Array
from tensorlib.engine.validation import is_floating

if TYPE_CHECKING:
    from tensorlib.engine.autograd import Context
    from tensorlib.engine.ops.function import Function

__all__ = ["rounding_target", "rounding_twin", "widened"]


def rounding_target(policy: str, arrays: Sequence[Array | None]) -> Any:
    """The low-precision dtype an op's result is rounded to, or None when the op computes
    as it is: no float16 or bfloat16 input, or ``policy`` "any". Mixed inputs round to their
    promotion (float16 with bfloat16: float32, so no rounding); under ``policy`` "first" (the
    norms, whose weights may stay float32 as PyTorch's mixed-type kernels allow) to the first
    input's dtype."""
    if policy == "any":
        return None
    if policy == "first":
        first = arrays[0]
        return first.dtype if first is not None and is_low_precision(first.dtype) else None
    target = None
    for array in arrays:
        if array is not None and is_floating(array.dtype):
            target = array.dtype if target is None else promote_types(target, array.dtype)
    return target if target is not None and is_low_precision(target) else None


def widened(array: Array | None) -> Array | None:
    """``array`` in float32 when it is float16 or bfloat16 (a new array), else itself."""
    return to_float32(array) if array is not None and is_low_precision(array.dtype) else array


def _overflow_is_inf() -> np.errstate:
    return np.errstate(over="ignore", invalid="ignore")


_TWINS: dict[type[Function], type[Function]] = {}


def rounding_twin(function: type[Function]) -> type[Function]:
    """``function`` run on float32 copies of its inputs (``Function.apply`` passes them, and
    sets ``ctx.rounded_to`` and ``ctx.given``, the arrays it was given): the output rounded,
    the saved arrays narrowed, each gradient rounded to its input's dtype."""
    twin = _TWINS.get(function)
    if twin is not None:
        return twin

    def forward(ctx: Context, *arrays: Any, **params: Any) -> Array:
        with _overflow_is_inf():
            output = function.forward(ctx, *arrays, **params)
            rounded = output.astype(ctx.rounded_to) if output.dtype == float32 else output
        if getattr(ctx, "saved", None):
            _narrow_saved(ctx, arrays, output, rounded)
        del ctx.given
        return rounded

    def backward(ctx: Context, grad: Array) -> Any:
        narrow = ctx.saved
        if narrow:
            ctx.saved = tuple(widened(array) for array in narrow)
        try:
            with _overflow_is_inf():
                grads = function.backward(ctx, to_float32(grad))
        finally:
            ctx.saved = narrow
        if not isinstance(grads, tuple):
            return _narrowed(grads, ctx.input_dtypes[0])
        return tuple(_narrowed(g, dtype) for g, dtype in zip(grads, ctx.input_dtypes,
                                                             strict=False))

    twin = type(function.__name__, (function,), {
        "forward": staticmethod(forward), "backward": staticmethod(backward),
        "op_name": autograd.node_name(function), "__doc__": function.__doc__})
    _TWINS[function] = twin
    return twin


def _narrow_saved(ctx: Context, wide: Sequence[Array | None], output: Array,
                  rounded: Array) -> None:
    """In ``ctx.saved``, each float32 copy of an input replaced by the input's own array, and
    the float32 output by the rounded one."""
    narrow = {id(copy): given for copy, given in zip(wide, ctx.given, strict=True)
              if copy is not given and copy is not None}
    if rounded is not output:
        narrow[id(output)] = rounded
    ctx.saved = tuple(None if array is None else narrow.get(id(array), array)
                      for array in ctx.saved or ())


def _narrowed(grad: Array | None, dtype: Any) -> Array | None:
    if grad is None or dtype is None or not is_low_precision(dtype) or grad.dtype == dtype:
        return grad
    with _overflow_is_inf():
        return grad.astype(dtype)
