"""What every optimizer shares: the parameter list, gradient checks and config validation.

An optimizer is built from a ``Module`` (it takes ``module.parameters()``, frozen ones
included) or from an iterable of ``Parameter``s, kept in the order given. ``step()`` is
all-or-nothing: every gradient and every new value is checked before any parameter changes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from tensorlib import validation
from tensorlib.backend import array_module
from tensorlib.nn.module import Module, Parameter
from tensorlib.tensor import Tensor

ParamsOrModule = Module | Iterable[Parameter]

def collect_parameters(params_or_module: ParamsOrModule) -> tuple[list[Parameter], list[str]]:
    """The parameters of a Module (``module.parameters()``) or of an iterable, and their names.

    Names are the module's dotted names, or ``"parameter i"`` for a plain iterable. Raises
    TypeError for anything that is not a Parameter, ValueError for an empty list or for a
    parameter that appears twice.
    """
    if isinstance(params_or_module, Module):
        named = list(params_or_module.named_parameters(include_frozen=True))
        parameters = [p for _, p in named]
        names = [name for name, _ in named]
    elif isinstance(params_or_module, Tensor):
        raise TypeError(
            "expected a Module or an iterable of Parameters, got a single "
            f"{type(params_or_module).__name__}; wrap it in a list"
        )
    elif isinstance(params_or_module, (str, bytes, dict)) or not isinstance(
        params_or_module, Iterable
    ):
        raise TypeError(
            "expected a Module or an iterable of Parameters, got "
            f"{type(params_or_module).__name__}"
        )
    else:
        parameters = list(params_or_module)
        names = [f"parameter {index}" for index in range(len(parameters))]
    if not parameters:
        raise ValueError("the optimizer got an empty parameter list")
    seen: dict[int, int] = {}
    for index, parameter in enumerate(parameters):
        if not isinstance(parameter, Parameter):
            raise TypeError(
                f"item {index} is a {type(parameter).__name__}, not a Parameter"
            )
        if id(parameter) in seen:
            raise ValueError(
                f"item {index} is the same Parameter as item {seen[id(parameter)]}; "
                "each parameter may appear only once"
            )
        seen[id(parameter)] = index
    return parameters, names


def all_finite(array: Any) -> bool:
    """True when every element of ``array`` is finite."""
    xp = array_module(array)
    return bool(xp.isfinite(array).all())


def staged_array(name: str, value: Any, parameter: Parameter) -> np.ndarray:
    """A finite copy of ``value`` in ``parameter``'s shape and dtype (state loading)."""
    if isinstance(value, Tensor):
        value = value.data
    xp = array_module(parameter.data)
    array = value if hasattr(value, "shape") and hasattr(value, "dtype") else np.asarray(value)
    if array.dtype.kind not in "fiu":
        raise ValueError(f"{name}: dtype {array.dtype} is not a real number type")
    if tuple(array.shape) != parameter.shape:
        raise ValueError(
            f"{name}: shape {tuple(array.shape)} does not match the parameter's shape "
            f"{parameter.shape}"
        )
    array = xp.asarray(array).astype(parameter.dtype, copy=True)
    if not all_finite(array):
        raise ValueError(f"{name} contains non-finite values")
    return array


def gradient_array(parameter: Parameter, label: str) -> Any:
    """``parameter.grad`` as an array, checked to have the parameter's shape.

    ``label`` names the parameter in the error (e.g. ``"parameter 2 ('fc.weight', ...)"``).
    """
    grad = parameter.grad
    if isinstance(grad, Tensor):
        grad = grad.data
    if not (hasattr(grad, "shape") and hasattr(grad, "dtype")):
        grad = np.asarray(grad)
    if tuple(grad.shape) != parameter.shape:
        raise ValueError(f"gradient of {label} has shape {tuple(grad.shape)}, but the "
                         f"parameter has shape {parameter.shape}")
    return grad


class Optimizer:
    """Base class: ``parameters``, ``zero_grad()`` and the checked gradient gathering.

    Subclasses define ``step()``, ``state_dict()`` and ``load_state_dict()``.
    """

    def __init__(self, params_or_module: ParamsOrModule):
        parameters, names = collect_parameters(params_or_module)
        self.parameters: list[Parameter] = parameters
        self._names = names

    @property
    def lr(self) -> float:
        """The learning rate (validated on every assignment; schedules set it)."""
        return self._lr

    @lr.setter
    def lr(self, value: float) -> None:
        self._lr = validation.real(value, "lr", low=0.0)

    def describe(self, index: int) -> str:
        """``parameter 2 ('blocks.0.weight', shape (4, 4))`` for error messages."""
        parameter = self.parameters[index]
        return f"parameter {index} ('{self._names[index]}', shape {parameter.shape})"

    def zero_grad(self) -> None:
        """Set every parameter's ``.grad`` to None (frozen ones included)."""
        for parameter in self.parameters:
            parameter.grad = None

    def gradients_to_apply(self) -> list[tuple[int, Parameter, Any]]:
        """``(index, parameter, gradient)`` for each parameter ``step()`` will update.

        Frozen parameters and those without a gradient are skipped. Raises ValueError, before
        anything changes, when a gradient's shape differs from its parameter's or a value or
        gradient is not finite. Gradients are returned in the parameter's dtype (no copy when
        they already are).
        """
        pending = []
        for index, parameter in enumerate(self.parameters):
            if not parameter.trainable or parameter.grad is None:
                continue
            grad = gradient_array(parameter, self.describe(index))
            if grad.dtype.kind not in "fiu":
                raise TypeError(
                    f"gradient of {self.describe(index)} has dtype {grad.dtype}, "
                    "expected a real number type"
                )
            if not all_finite(parameter.data):
                raise ValueError(f"{self.describe(index)} has non-finite values")
            if not all_finite(grad):
                raise ValueError(f"gradient of {self.describe(index)} has non-finite values")
            pending.append((index, parameter, grad.astype(parameter.dtype, copy=False)))
        return pending

    def check_staged(self, index: int, what: str, array: Any) -> None:
        """Raise ValueError when a computed ``array`` (new value, moment) is not finite."""
        if not all_finite(array):
            raise ValueError(
                f"the step would make the {what} of {self.describe(index)} non-finite "
                "(overflow); nothing was changed"
            )

    def _check_state_header(self, state: Any, kind: str, config_keys: tuple[str, ...]) -> None:
        """Common checks of ``load_state_dict`` input: type, keys, parameter count."""
        if not isinstance(state, dict):
            raise TypeError(f"load_state_dict expects a dict, got {type(state).__name__}")
        for key in ("type", "config", "state"):
            if key not in state:
                raise KeyError(f"optimizer state is missing '{key}'")
        if state["type"] != kind:
            raise ValueError(f"optimizer state is for {state['type']!r}, not {kind!r}")
        config = state["config"]
        if not isinstance(config, dict):
            raise TypeError(f"'config' must be a dict, got {type(config).__name__}")
        for key in config_keys:
            if key not in config:
                raise KeyError(f"{kind} config is missing '{key}'")
        unknown = sorted(set(config) - set(config_keys))
        if unknown:
            raise ValueError(f"{kind} config has unknown keys {unknown}")
        entries = state["state"]
        if not isinstance(entries, (list, tuple)):
            raise TypeError(f"'state' must be a list, got {type(entries).__name__}")
        if len(entries) != len(self.parameters):
            raise ValueError(
                f"optimizer state has {len(entries)} entries but the optimizer has "
                f"{len(self.parameters)} parameters"
            )
        for index, entry in enumerate(entries):
            if not isinstance(entry, dict):
                raise TypeError(f"state entry {index} must be a dict, got {type(entry).__name__}")

    def step(self) -> None:
        raise NotImplementedError

    def state_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    def load_state_dict(self, state: dict[str, Any]) -> None:
        raise NotImplementedError
