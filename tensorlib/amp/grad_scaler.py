"""``GradScaler``: dynamic loss scaling, PyTorch's ``torch.amp.GradScaler``.

A float16 gradient smaller than about 6e-8 is zero. Multiplying the loss by a large scale
before ``backward`` lifts the gradients into float16's range; dividing them by it before the
optimizer's step (``unscale_``) gives the true gradients back. The scale is found as training
goes: a step whose gradients hold an inf or a nan is skipped and the scale multiplied by
``backoff_factor`` (0.5); after ``growth_interval`` (2000) good steps in a row it is multiplied
by ``growth_factor`` (2.0). The usual loop::

    scaler = tensorlib.amp.GradScaler("cpu")
    with tensorlib.autocast("cpu", dtype=tensorlib.float16):
        loss = loss_fn(model(x), y)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)                     # only to clip, or read, true gradients
    clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)                         # skipped when a gradient is not finite
    scaler.update()
    optimizer.zero_grad()

The scale is held as a float32 number, each update its product with the factor taken in
float64 and rounded once, as PyTorch's is, so the two follow the same trajectory on the same
sequence of finite and non-finite gradients.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable
from typing import Any

import numpy as np

from tensorlib.engine import accelerators, validation
from tensorlib.engine.backend import array_module
from tensorlib.engine.dtypes import float16, float32, float64
from tensorlib.engine.tensor import Tensor
from tensorlib.optim.optimizer import Optimizer

__all__ = ["GradScaler"]

_READY, _UNSCALED, _STEPPED = "ready", "unscaled", "stepped"  # an optimizer's stage per step
_STATE_KEYS = ("scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker")


class GradScaler:
    """``GradScaler(device="cuda", init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
    growth_interval=2000, enabled=True)``, as PyTorch's. Disabled (``enabled=False``, or
    'cuda' with no GPU here, which warns as PyTorch does), every method passes through:
    ``scale`` returns its argument, ``step`` calls ``optimizer.step()``, ``get_scale`` is 1.0.
    """

    def __init__(self, device: str = "cuda", init_scale: float = 2.0 ** 16,
                 growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        if not isinstance(device, str) or device not in ("cpu", "cuda"):
            raise ValueError(f"GradScaler: device must be 'cpu' or 'cuda', got {device!r}")
        self._device = device
        self._enabled = validation.boolean(enabled, "GradScaler enabled")
        init_scale = validation.real(init_scale, "GradScaler init_scale", low=0.0, low_open=True)
        growth_factor = validation.real(growth_factor, "GradScaler growth_factor")
        backoff_factor = validation.real(backoff_factor, "GradScaler backoff_factor", low=0.0)
        growth_interval = validation.positive_integer(growth_interval,
                                                      "GradScaler growth_interval")
        if self._enabled and device == "cuda" and not accelerators.is_available():
            warnings.warn("GradScaler('cuda') is enabled, but no GPU is available here: it is "
                          "disabled (use GradScaler('cpu'))", stacklevel=2)
            self._enabled = False
        if self._enabled and growth_factor <= 1.0:
            raise ValueError(f"GradScaler growth_factor must be > 1.0, got {growth_factor}")
        if self._enabled and backoff_factor >= 1.0:
            raise ValueError(f"GradScaler backoff_factor must be < 1.0, got {backoff_factor}")
        self._scale = np.float32(init_scale)
        self._growth_factor = growth_factor
        self._backoff_factor = backoff_factor
        self._growth_interval = growth_interval
        self._growth_tracker = 0
        self._stages: dict[int, str] = {}  # per optimizer (by identity) in this step
        self._found_inf: dict[int, bool] = {}

    # ------------------------------------------------------------------- the training step
    def scale(self, outputs: Any) -> Any:
        """``outputs`` (a tensor, or a list, tuple or other iterable of them) multiplied by
        the scale; the graph goes through the product, so ``backward`` gives scaled
        gradients."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            return outputs * Tensor(np.asarray(self._scale, dtype=float32))
        if isinstance(outputs, (str, bytes)) or not isinstance(outputs, Iterable):
            raise ValueError(f"GradScaler.scale: outputs must be a Tensor or an iterable of "
                             f"Tensors, got {type(outputs).__name__}")
        scaled = (self.scale(output) for output in outputs)
        return type(outputs)(scaled) if isinstance(outputs, (list, tuple)) else list(scaled)

    def unscale_(self, optimizer: Optimizer) -> None:
        """Divide ``optimizer``'s gradients by the scale, in place (multiplied by 1/scale,
        rounded to float32 as PyTorch does), and note whether any holds an inf or a nan. Once
        per optimizer per step, before ``step``: RuntimeError otherwise. ValueError for a
        float16 gradient (keep the parameters in float32 and let autocast lower the ops)."""
        if not self._enabled:
            return
        stage = self._stages.get(id(optimizer), _READY)
        if stage == _UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since "
                               "the last update()")
        if stage == _STEPPED:
            raise RuntimeError("unscale_() is being called after step()")
        gradients = _gradients(optimizer)
        for grad in gradients:  # checked first: nothing changes if one is refused
            if grad._data.dtype == float16:
                raise ValueError("Attempting to unscale float16 gradients: GradScaler needs "
                                 "float32 parameters (autocast computes in float16 for them)")
        with np.errstate(over="ignore", divide="ignore"):
            inverse = np.float32(1.0 / np.float64(self._scale))
        found_inf = False
        for grad in gradients:
            array = grad._data
            xp = array_module(array)
            if not bool(xp.isfinite(array).all()):
                found_inf = True
            with np.errstate(over="ignore", invalid="ignore"):  # inf and nan, as PyTorch's
                wide = array.astype(float32) if array.dtype != float64 else array
                array[...] = (wide * inverse).astype(array.dtype)
            grad._version[0] += 1
        self._found_inf[id(optimizer)] = found_inf
        self._stages[id(optimizer)] = _UNSCALED

    def step(self, optimizer: Optimizer, *args: Any, **kwargs: Any) -> Any:
        """``unscale_(optimizer)`` unless done already, then ``optimizer.step(*args,
        **kwargs)`` unless a gradient was not finite (then the step is skipped, and None
        returned). Once per optimizer per step; a ``closure`` is refused, as in PyTorch."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not supported if GradScaler is enabled")
        stage = self._stages.get(id(optimizer), _READY)
        if stage == _STEPPED:
            raise RuntimeError("step() has already been called since the last update()")
        if stage == _READY:
            self.unscale_(optimizer)
        step: Any = optimizer.step  # PyTorch returns what the optimizer's step returns
        result = None if self._found_inf[id(optimizer)] else step(*args, **kwargs)
        self._stages[id(optimizer)] = _STEPPED
        return result

    def update(self, new_scale: float | Tensor | None = None) -> None:
        """End the step: the scale times ``backoff_factor`` if any optimizer's gradients
        held an inf or a nan (and the count of good steps back to 0), times
        ``growth_factor`` after ``growth_interval`` good steps in a row; or ``new_scale``
        when given. RuntimeError when no optimizer was unscaled or stepped since the last
        update."""
        if not self._enabled:
            return
        if new_scale is not None:
            self._scale = np.float32(_one_number(new_scale))
        else:
            if not self._found_inf:
                raise RuntimeError("GradScaler.update(): no inf checks were recorded since the "
                                   "last update (call scaler.step(optimizer) first)")
            if any(self._found_inf.values()):
                self._scale = _times(self._scale, self._backoff_factor)
                self._growth_tracker = 0
            elif self._growth_tracker + 1 == self._growth_interval:
                grown = _times(self._scale, self._growth_factor)
                if math.isfinite(grown):  # PyTorch keeps the scale when growing overflows
                    self._scale = grown
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
        self._stages.clear()
        self._found_inf.clear()

    # -------------------------------------------------------------------- its settings
    def get_scale(self) -> float:
        """The scale now (1.0 when disabled)."""
        return float(self._scale) if self._enabled else 1.0

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = validation.real(new_factor, "GradScaler growth_factor")

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = validation.real(new_factor, "GradScaler backoff_factor")

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = validation.positive_integer(new_interval,
                                                            "GradScaler growth_interval")

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict[str, Any]:
        """PyTorch's five entries (``scale``, ``growth_factor``, ``backoff_factor``,
        ``growth_interval``, ``_growth_tracker``) as Python numbers; {} when disabled. Take
        it after ``update``."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """The state ``state_dict`` gave, all checked before any is set (a disabled scaler
        ignores it, as PyTorch's does). RuntimeError for the empty dict of a disabled one."""
        if not self._enabled:
            return
        if not isinstance(state_dict, dict):
            raise TypeError(f"GradScaler.load_state_dict takes a dict, got "
                            f"{type(state_dict).__name__}")
        if not state_dict:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled GradScaler")
        missing = [key for key in _STATE_KEYS if key not in state_dict]
        if missing:
            raise KeyError(f"GradScaler.load_state_dict: missing {', '.join(missing)}")
        scale = validation.real(state_dict["scale"], "GradScaler state scale", low=0.0,
                               low_open=True)
        growth = validation.real(state_dict["growth_factor"], "GradScaler state growth_factor")
        backoff = validation.real(state_dict["backoff_factor"],
                                  "GradScaler state backoff_factor")
        interval = validation.positive_integer(state_dict["growth_interval"],
                                               "GradScaler state growth_interval")
        tracker = validation.integer(state_dict["_growth_tracker"],
                                     "GradScaler state _growth_tracker", minimum=0)
        self._scale = np.float32(scale)
        self._growth_factor, self._backoff_factor = growth, backoff
        self._growth_interval, self._growth_tracker = interval, tracker

    def __repr__(self) -> str:
        if not self._enabled:
            return f"GradScaler(device={self._device!r}, enabled=False)"
        return (f"GradScaler(device={self._device!r}, scale={self.get_scale():g}, "
                f"growth_tracker={self._growth_tracker})")


def _times(scale: np.float32, factor: float) -> np.float32:
    """The float32 scale times a factor, in float64 and rounded once, as PyTorch's update."""
    with np.errstate(over="ignore", under="ignore"):
        return np.float32(np.float64(scale) * factor)


def _gradients(optimizer: Any) -> list[Tensor]:
    """The gradients of ``optimizer``'s parameters that exist."""
    groups = getattr(optimizer, "param_groups", None)
    if groups is None:
        raise TypeError(f"GradScaler takes an optimizer (with param_groups), got "
                        f"{type(optimizer).__name__}")
    return [param.grad for group in groups for param in group["params"]
            if param.grad is not None]


def _one_number(value: Any) -> float:
    if isinstance(value, Tensor):
        if value.numel() != 1 or value.requires_grad:
            raise ValueError("GradScaler.update new_scale must be a float or a one-element "
                             "tensor that does not require grad")
        return float(value.item())
    return validation.real(value, "GradScaler.update new_scale", low=0.0)
