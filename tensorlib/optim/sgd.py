"""Stochastic gradient descent, with optional classic (PyTorch-style) momentum."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tensorlib.engine import validation
from tensorlib.engine.autograd import no_grad
from tensorlib.engine.tensor import Tensor
from tensorlib.optim.optimizer import (
    GroupSetting,
    Optimizer,
    ParamsOrModule,
    staged_array,
)


def _momentum(value: Any, what: str) -> float:
    return validation.real(value, what, low=0.0, high=1.0)


class SGD(Optimizer):
    """``p -= lr * g``; with momentum, ``buf = momentum * buf + g`` then ``p -= lr * buf``.

    ``lr`` is one rate, or a sequence of rates, one per parameter (in ``parameters`` order:
    each parameter then forms its own group). ``params_or_module`` may also be PyTorch's list
    of groups, each with its own ``lr`` and ``momentum``. The first momentum step starts from
    ``buf = g`` (as ``torch.optim.SGD``). ``step()`` skips frozen parameters and parameters
    whose ``.grad`` is None, and changes nothing at all if any gradient is mis-shaped or any
    value, gradient or updated value is not finite.
    """

    GROUP_SETTINGS = {"lr": validation.non_negative, "momentum": _momentum}
    lr = GroupSetting()
    momentum = GroupSetting()

    def __init__(self, params_or_module: ParamsOrModule, lr: float | Sequence[float],
                 momentum: float = 0.0):
        self._rates = None
        if isinstance(lr, (Sequence, np.ndarray)) and not isinstance(lr, (str, bytes)):
            self._rates = [validation.non_negative(rate, f"lr[{index}]")
                           for index, rate in enumerate(np.asarray(lr, dtype=object).ravel()
                                                         if isinstance(lr, np.ndarray) else lr)]
            lr = 0.0  # every parameter gets its own rate below
        super().__init__(params_or_module, lr=lr, momentum=momentum)
        # One dict per parameter; the buffer is created by the parameter's first update.
        self.state: list[dict[str, Any]] = [{"momentum_buffer": None} for _ in self.parameters]

    def _split(self, specs: list, grouped: bool) -> list:
        """With a sequence of rates, one group per parameter, each with its rate."""
        if self._rates is None:
            return specs
        if grouped:
            raise TypeError("a per-parameter lr sequence cannot be combined with parameter "
                            "groups; give each group its own 'lr'")
        parameters, names, settings = specs[0]
        if len(self._rates) != len(parameters):
            raise ValueError(f"lr {self._rates!r} has {len(self._rates)} rates for "
                             f"{len(parameters)} parameters (one rate per parameter)")
        return [([parameter], [name], {**settings, "lr": rate})
                for parameter, name, rate in zip(parameters, names, self._rates, strict=True)]

    def __repr__(self) -> str:
        if len(self.param_groups) > 1:
            return f"SGD({len(self.param_groups)} groups, parameters={len(self.parameters)})"
        return (f"SGD(lr={self.lr}, momentum={self.momentum}, "
                f"parameters={len(self.parameters)})")

    # ------------------------------------------------------------------- update
    def step(self) -> None:
        """Apply one update to every trainable parameter that has a gradient (all or nothing)."""
        pending = self.gradients_to_apply()
        staged = []
        with np.errstate(over="ignore", invalid="ignore"):
            for index, parameter, grad in pending:
                group = self.group_of(index)
                lr, momentum = group["lr"], group["momentum"]
                dtype = parameter.dtype.type
                direction = grad
                buffer = self.state[index]["momentum_buffer"]
                if momentum > 0.0:
                    if buffer is None:
                        direction = grad.copy()  # the first step starts the buffer at g
                    else:
                        direction = dtype(momentum) * buffer + grad
                    self.check_staged(index, "momentum buffer", direction)
                new_value = parameter.numpy() - dtype(lr) * direction
                self.check_staged(index, "value", new_value)
                staged.append((index, parameter, new_value, direction, momentum > 0.0))
        with no_grad():
            for index, parameter, new_value, direction, keeps_buffer in staged:
                parameter.copy_(new_value)
                if keeps_buffer:
                    self.state[index]["momentum_buffer"] = direction

    # ------------------------------------------------------------------- state
    def state_dict(self) -> dict[str, Any]:
        """PyTorch's structure, with copies: ``{"state": {index: {"momentum_buffer": buf}},
        "param_groups": [{"lr", "momentum", "params": [indices]}]}``; only parameters that
        have a momentum buffer have a ``state`` entry."""
        return {
            "state": {index: {"momentum_buffer": Tensor(entry["momentum_buffer"].copy())}
                      for index, entry in enumerate(self.state)
                      if entry["momentum_buffer"] is not None},
            "param_groups": self._param_groups_state(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore settings and buffers from a :meth:`state_dict` (a parameter without an
        entry has no buffer); everything is checked first, so a bad state changes nothing
        (ValueError/KeyError/TypeError naming the problem)."""
        groups, _, staged = self._staged_state(state, ("momentum_buffer",))
        buffers = []
        for index, parameter in enumerate(self.parameters):
            buffer = staged.get(index, {}).get("momentum_buffer")
            if buffer is not None:
                buffer = staged_array(f"momentum buffer of {self.describe(index)}", buffer,
                                      parameter)
            buffers.append(buffer)
        self._commit_groups(groups)
        self.state = [{"momentum_buffer": buffer} for buffer in buffers]
