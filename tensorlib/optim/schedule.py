"""Learning-rate schedule: linear warm-up, then cosine decay to a floor.

Steps count optimizer updates from 1. ``warmup_cosine_lr(s, ...)`` is the learning rate of
update ``s``:

* ``0 <= s <= warmup_steps``: ``base_lr * s / warmup_steps`` (0 at ``s = 0``, ``base_lr / W``
  for the first update, ``base_lr`` at the end of warm-up; with no warm-up, ``base_lr``);
* ``warmup_steps < s < total_steps``: ``min_lr + (base_lr - min_lr) * (1 + cos(pi * f)) / 2``
  with ``f = (s - warmup_steps) / (total_steps - warmup_steps)``;
* ``s >= total_steps``: ``min_lr``.

``WarmupCosineSchedule`` keeps the optimizer's ``lr`` at the rate of the *next* update, so it
is used as in PyTorch::

    schedule = WarmupCosineSchedule(optimizer, base_lr=1e-3, warmup_steps=10, total_steps=100)
    for batch in batches:          # optimizer.lr == lr_at(1) before the first update
        ...backward...
        optimizer.step()
        schedule.step()            # now optimizer.lr == lr_at(2), and so on
"""

from __future__ import annotations

import math
from typing import Any

from tensorlib.engine import validation
from tensorlib.optim.optimizer import check_keys


def _check_schedule(base_lr: float, warmup_steps: int, total_steps: int,
                    min_lr: float) -> tuple[float, int, int, float]:
    base_lr = validation.real(base_lr, "base_lr", low=0.0)
    warmup_steps = validation.integer(warmup_steps, "warmup_steps", minimum=0)
    total_steps = validation.integer(total_steps, "total_steps", minimum=1)
    min_lr = validation.real(min_lr, "min_lr", low=0.0)
    if warmup_steps > total_steps:
        raise ValueError(
            f"warmup_steps ({warmup_steps}) must not exceed total_steps ({total_steps})"
        )
    if min_lr > base_lr:
        raise ValueError(f"min_lr ({min_lr}) must not exceed base_lr ({base_lr})")
    return base_lr, warmup_steps, total_steps, min_lr


def warmup_cosine_lr(step: int, base_lr: float, warmup_steps: int, total_steps: int,
                     min_lr: float = 0.0) -> float:
    """The learning rate of update ``step`` (1-based; see the module docstring)."""
    step = validation.integer(step, "step", minimum=0)
    base_lr, warmup_steps, total_steps, min_lr = _check_schedule(
        base_lr, warmup_steps, total_steps, min_lr
    )
    if step <= warmup_steps:
        return base_lr if warmup_steps == 0 else base_lr * step / warmup_steps
    if step >= total_steps:
        return min_lr
    fraction = (step - warmup_steps) / (total_steps - warmup_steps)
    return min_lr + 0.5 * (base_lr - min_lr) * (1.0 + math.cos(math.pi * fraction))


class WarmupCosineSchedule:
    """Sets ``optimizer.lr`` (any optimizer with an ``lr`` attribute: SGD, AdamW).

    ``last_step`` counts ``step()`` calls (completed updates); ``optimizer.lr`` and
    ``last_lr`` are ``lr_at(last_step + 1)``, the rate of the next update. Construction sets
    ``optimizer.lr = lr_at(1)``.
    """

    def __init__(self, optimizer: Any, base_lr: float, warmup_steps: int, total_steps: int,
                 min_lr: float = 0.0):
        if not hasattr(optimizer, "lr"):
            raise TypeError(
                f"{type(optimizer).__name__} has no 'lr' attribute to schedule"
            )
        self.base_lr, self.warmup_steps, self.total_steps, self.min_lr = _check_schedule(
            base_lr, warmup_steps, total_steps, min_lr
        )
        self.optimizer = optimizer
        self.last_step = 0
        self._apply()

    def lr_at(self, step: int) -> float:
        """The learning rate of update ``step`` (pure: changes nothing)."""
        return warmup_cosine_lr(step, self.base_lr, self.warmup_steps, self.total_steps,
                                self.min_lr)

    @property
    def last_lr(self) -> float:
        """The learning rate this schedule last set on the optimizer."""
        return self._last_lr

    def _apply(self) -> None:
        self._last_lr = self.lr_at(self.last_step + 1)
        self.optimizer.lr = self._last_lr

    def step(self) -> float:
        """Count one completed update and set the next update's rate; returns it."""
        self.last_step += 1
        self._apply()
        return self._last_lr

    def state_dict(self) -> dict[str, Any]:
        return {"type": "WarmupCosineSchedule", "base_lr": self.base_lr,
                "warmup_steps": self.warmup_steps, "total_steps": self.total_steps,
                "min_lr": self.min_lr, "last_step": self.last_step}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore the configuration and position (checked first) and set the optimizer's lr."""
        if not isinstance(state, dict):
            raise TypeError(f"load_state_dict expects a dict, got {type(state).__name__}")
        check_keys(state, ("type", "base_lr", "warmup_steps", "total_steps", "min_lr",
                           "last_step"), "schedule state")
        if state["type"] != "WarmupCosineSchedule":
            raise ValueError(f"schedule state is for {state['type']!r}, "
                             "not 'WarmupCosineSchedule'")
        config = _check_schedule(state["base_lr"], state["warmup_steps"],
                                 state["total_steps"], state["min_lr"])
        last_step = validation.integer(state["last_step"], "last_step", minimum=0)
        self.base_lr, self.warmup_steps, self.total_steps, self.min_lr = config
        self.last_step = last_step
        self._apply()
