"""Automatic mixed precision: ``tensorlib.autocast``, PyTorch's ``torch.autocast``.

Inside ``with tensorlib.autocast("cpu", dtype=tensorlib.bfloat16):`` each op declares what
happens to its floating inputs (the ``autocast`` attribute of its ``Function``, one word per
op, read by ``Function.apply``):

* ``"lower"``: matmul, linear, convolution, the fused attention core (PyTorch's
  ``lower_precision_fp`` list): float32 and float16/bfloat16 inputs are cast to the autocast
  dtype, so the products run in it;
* ``"float32"``: the losses (PyTorch's ``fp32`` list): low-precision inputs are cast to
  float32, so the sums of many terms are taken there;
* no policy: the op runs in the dtype its inputs have. A low-precision input still computes
  in float32 inside the op (softmax, the norms, sums), rounded once at its output, as
  PyTorch's CPU kernels do.

float64 tensors are never cast (PyTorch's rule), and only tensors on the autocast's device
type are. The casts are ``Tensor.to``, so gradients flow back to float32 parameters in
float32. The state is per thread and per device type; a block restores what it found.
Departures from PyTorch: docs/departures.md, "Mixed precision".
"""

from __future__ import annotations

import contextlib
import functools
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from tensorlib.engine import accelerators
from tensorlib.engine.backend import device_of
from tensorlib.engine.dtypes import bfloat16, float16, float32, float64
from tensorlib.engine.validation import is_floating

if TYPE_CHECKING:
    from tensorlib.engine.tensor import Tensor

__all__ = ["autocast", "cast_inputs", "get_autocast_dtype", "is_autocast_enabled"]

# The dtype each device type's autocast uses when none is given (PyTorch's defaults), and
# the ones it accepts.
_DEFAULT_DTYPE = {"cpu": bfloat16, "cuda": float16}
_SUPPORTED = {"cpu": (bfloat16, float16), "cuda": (bfloat16, float16)}

Callable_ = TypeVar("Callable_", bound=Callable[..., Any])


class _State(threading.local):
    def __init__(self) -> None:
        # device type -> the dtype autocast casts to there, for the enabled ones only
        self.enabled: dict[str, np.dtype] = {}
        self.dtype = dict(_DEFAULT_DTYPE)


_state = _State()


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether an autocast block is on for ``device_type`` (PyTorch's; without an argument,
    its older meaning: for 'cuda')."""
    return ("cuda" if device_type is None else _device_type(device_type)) in _state.enabled


def get_autocast_dtype(device_type: str) -> np.dtype:
    """The dtype an autocast for ``device_type`` casts to when given none: bfloat16 on the
    CPU, float16 on a GPU, or what the innermost enclosing block set."""
    return _state.dtype[_device_type(device_type)]


def _device_type(device_type: Any) -> str:
    if not isinstance(device_type, str):
        raise TypeError(f"autocast: device_type must be a str ('cpu' or 'cuda'), got "
                        f"{device_type!r} of type {type(device_type).__name__}")
    if device_type not in _DEFAULT_DTYPE:
        raise ValueError(f"autocast: device_type must be 'cpu' or 'cuda', got {device_type!r}")
    return device_type


class autocast:  # noqa: N801 - PyTorch's name
    """``autocast(device_type, dtype=None, enabled=True, cache_enabled=None)``: a context
    manager (and decorator) in which the ops listed above run in ``dtype`` (bfloat16 by
    default on the CPU). ``enabled=False`` switches an enclosing block off inside it. As in
    PyTorch, a dtype the device type does not support, or 'cuda' without a GPU, warns and
    leaves autocast off; ``cache_enabled`` is accepted and changes nothing (each use of a
    weight is cast anew)."""

    def __init__(self, device_type: str, dtype: Any = None, enabled: bool = True,
                 cache_enabled: bool | None = None) -> None:
        self.device = _device_type(device_type)
        if not isinstance(enabled, (bool, np.bool_)):
            raise TypeError(f"autocast: enabled must be True or False, got {enabled!r}")
        self.fast_dtype = get_autocast_dtype(self.device) if dtype is None else np.dtype(dtype)
        self._enabled = bool(enabled)
        if self._enabled and self.fast_dtype not in _SUPPORTED[self.device]:
            warnings.warn(f"autocast on '{self.device}' supports bfloat16 and float16, not "
                          f"{self.fast_dtype}: autocast is off in this block", stacklevel=2)
            self._enabled = False
        if self._enabled and self.device == "cuda" and not accelerators.is_available():
            warnings.warn("autocast('cuda') but no GPU is available here: autocast is off in "
                          "this block", stacklevel=2)
            self._enabled = False
        self._saved: list[tuple[np.dtype | None, np.dtype]] = []

    def __enter__(self) -> autocast:
        self._saved.append((_state.enabled.get(self.device), _state.dtype[self.device]))
        if self._enabled:
            _state.enabled[self.device] = self.fast_dtype
            _state.dtype[self.device] = self.fast_dtype
        else:
            _state.enabled.pop(self.device, None)
        return self

    def __exit__(self, *exception: object) -> None:
        before, dtype = self._saved.pop()
        if before is None:
            _state.enabled.pop(self.device, None)
        else:
            _state.enabled[self.device] = before
        _state.dtype[self.device] = dtype

    def __call__(self, function: Callable_) -> Callable_:
        @functools.wraps(function)
        def in_autocast(*args: Any, **kwargs: Any) -> Any:
            with autocast(self.device, self.fast_dtype, self._enabled):
                return function(*args, **kwargs)
        return in_autocast  # type: ignore[return-value]


def active() -> bool:
    """Whether any autocast block is on in this thread (the check ``Function.apply`` makes
    before it looks at an op's policy)."""
    return bool(_state.enabled)


@contextlib.contextmanager
def suspended() -> Iterator[None]:
    """Autocast off for every device type inside (a composed op computing its own float32
    core, as PyTorch's fused kernels do), on again as it was after."""
    saved = dict(_state.enabled)
    _state.enabled.clear()
    try:
        yield
    finally:
        _state.enabled.update(saved)


def cast_inputs(policy: str, inputs: Sequence[Tensor | None]) -> tuple[Any, ...]:
    """``inputs`` with each floating tensor that autocast is on for cast as ``policy`` says:
    to the block's dtype ("lower") or, from float16 and bfloat16, to float32 ("float32").
    float64 tensors, integer tensors and tensors on other device types pass unchanged."""
    enabled = _state.enabled
    cast: list[Tensor | None] = []
    for t in inputs:
        if t is not None and is_floating(t.dtype) and t.dtype != float64:
            target = enabled.get(device_of(t._data))
            if target is not None:
                wanted = target if policy == "lower" else float32
                if policy == "lower" or t.dtype in (float16, bfloat16):
                    t = t.to(wanted) if t.dtype != wanted else t
        cast.append(t)
    return tuple(cast)
