"""Stochastic gradient descent, with optional classic (PyTorch-style) momentum."""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorlib import validation
from tensorlib.autograd import no_grad
from tensorlib.optim.optimizer import (
    Optimizer,
    ParamsOrModule,
    staged_array,
)


class SGD(Optimizer):
    """``p -= lr * g``; with momentum, ``buf = momentum * buf + g`` then ``p -= lr * buf``.

    The first momentum step starts from ``buf = g`` (as ``torch.optim.SGD``). ``step()`` skips
    frozen parameters and parameters whose ``.grad`` is None, and changes nothing at all if any
    gradient is mis-shaped or any value, gradient or updated value is not finite.
    """

    def __init__(self, params_or_module: ParamsOrModule, lr: float, momentum: float = 0.0):
        self.lr = lr
        self.momentum = momentum
        super().__init__(params_or_module)
        # One dict per parameter; the buffer is created by the parameter's first update.
        self.state: list[dict[str, Any]] = [{"momentum_buffer": None} for _ in self.parameters]

    # ------------------------------------------------------------------- configuration
    @property
    def momentum(self) -> float:
        return self._momentum

    @momentum.setter
    def momentum(self, value: float) -> None:
        self._momentum = validation.real(value, "momentum", low=0.0, high=1.0)

    def __repr__(self) -> str:
        return (f"SGD(lr={self.lr}, momentum={self.momentum}, "
                f"parameters={len(self.parameters)})")

    # ------------------------------------------------------------------- update
    def step(self) -> None:
        """Apply one update to every trainable parameter that has a gradient (all or nothing)."""
        pending = self.gradients_to_apply()
        staged = []
        with np.errstate(over="ignore", invalid="ignore"):
            for index, parameter, grad in pending:
                dtype = parameter.dtype.type
                direction = grad
                buffer = self.state[index]["momentum_buffer"]
                if self.momentum > 0.0:
                    if buffer is None:
                        direction = grad.copy()  # the first step starts the buffer at g
                    else:
                        direction = dtype(self.momentum) * buffer + grad
                    self.check_staged(index, "momentum buffer", direction)
                new_value = parameter.data - dtype(self.lr) * direction
                self.check_staged(index, "value", new_value)
                staged.append((index, parameter, new_value, direction))
        with no_grad():
            for index, parameter, new_value, direction in staged:
                parameter.copy_(new_value)
                if self.momentum > 0.0:
                    self.state[index]["momentum_buffer"] = direction

    # ------------------------------------------------------------------- state
    def state_dict(self) -> dict[str, Any]:
        """``{"type": "SGD", "config": {lr, momentum}, "state": [{"momentum_buffer"}...]}``
        with copied arrays."""
        return {
            "type": "SGD",
            "config": {"lr": self.lr, "momentum": self.momentum},
            "state": [
                {"momentum_buffer": None if entry["momentum_buffer"] is None
                 else entry["momentum_buffer"].copy()}
                for entry in self.state
            ],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore config and buffers; everything is checked first, so a bad state changes
        nothing (ValueError/KeyError/TypeError naming the problem)."""
        self._check_state_header(state, "SGD", ("lr", "momentum"))
        lr = validation.real(state["config"]["lr"], "lr", low=0.0)
        momentum = validation.real(state["config"]["momentum"], "momentum", low=0.0, high=1.0)
        buffers = []
        for index, entry in enumerate(state["state"]):
            if "momentum_buffer" not in entry:
                raise KeyError(f"state entry {index} is missing 'momentum_buffer'")
            buffer = entry["momentum_buffer"]
            if buffer is not None:
                buffer = staged_array(
                    f"momentum buffer of {self.describe(index)}", buffer, self.parameters[index]
                )
            buffers.append(buffer)
        self._lr, self._momentum = lr, momentum
        self.state = [{"momentum_buffer": buffer} for buffer in buffers]
