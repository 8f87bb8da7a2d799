"""What every optimizer shares: the parameter list, gradient checks and config validation.

An optimizer is built from a ``Module`` (it takes ``module.parameters()``, frozen ones
included) or from an iterable of ``Parameter``s, kept in the order given. ``step()`` is
all-or-nothing: every gradient and every new value is checked before any parameter changes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

from tensorlib.engine import kernel_table, validation
from tensorlib.engine.backend import array_module, writable
from tensorlib.engine.tensor import Tensor
from tensorlib.engine.typing import Array
from tensorlib.nn.module import Module, check_module, named_extra_parameters
from tensorlib.nn.parameter import Parameter

ParamsOrModule = Module | Mapping[str, Parameter] | Iterable[Parameter]

def collect_parameters(params_or_module: ParamsOrModule, allow_empty: bool = False
                       ) -> tuple[list[Parameter], list[str]]:
    """The parameters of a Module (``module.parameters()``), of a mapping of names to
    Parameters (``lora_parameters(model)``) or of an iterable, and their names.

    Names are the module's dotted names, the mapping's keys, or ``"parameter i"`` for a
    plain iterable. Raises TypeError for anything that is not a Parameter, ValueError for an
    empty list, for a parameter that appears twice, and for a module whose parameters are all
    frozen while it holds extra parameters (``named_extra_parameters``: parameters outside
    ``parameters()``, such as attached adapters), which nothing would train.
    """
    if isinstance(params_or_module, Module):
        named = list(params_or_module.named_parameters(include_frozen=True))
        parameters = [p for _, p in named]
        names = [name for name, _ in named]
        extra = [name for name, _ in named_extra_parameters(params_or_module)]
        if extra and not any(p.trainable for p in parameters):
            raise ValueError(
                f"every parameter of this {type(params_or_module).__name__} is frozen, and "
                f"the {len(extra)} it holds outside parameters() ('{extra[0]}', ...) train "
                "only when given by name, as their owner lists them (for LoRA adapters: "
                "give the optimizer lora_parameters(model))")
    elif isinstance(params_or_module, Mapping):
        if not all(isinstance(name, str) for name in params_or_module):
            raise TypeError("a mapping of parameters must have string names as its keys")
        parameters = list(params_or_module.values())
        names = list(params_or_module)
    elif isinstance(params_or_module, Tensor):
        raise TypeError(
            "expected a Module or an iterable of Parameters, got a single "
            f"{type(params_or_module).__name__}; wrap it in a list"
        )
    elif isinstance(params_or_module, (str, bytes, np.ndarray)) or not isinstance(
        params_or_module, Iterable
    ):
        raise TypeError(
            "expected a Module or an iterable of Parameters, got "
            f"{type(params_or_module).__name__}"
        )
    else:
        parameters = list(params_or_module)
        names = [f"parameter {index}" for index in range(len(parameters))]
    if not parameters and not allow_empty:
        raise ValueError("the optimizer got an empty parameter list")
    for index, parameter in enumerate(parameters):
        if not isinstance(parameter, Parameter):
            raise TypeError(
                f"item {index} is a {type(parameter).__name__}, not a Parameter"
            )
    _check_distinct(parameters, [f"item {index}" for index in range(len(parameters))])
    return parameters, names


def _check_distinct(parameters: list[Parameter], labels: list[str]) -> None:
    """ValueError when one Parameter appears twice (in one group or in two)."""
    seen: dict[int, int] = {}
    for index, parameter in enumerate(parameters):
        if id(parameter) in seen:
            raise ValueError(
                f"{labels[index]} is the same Parameter as {labels[seen[id(parameter)]]}; "
                "each parameter may appear only once"
            )
        seen[id(parameter)] = index


def _groups(count: int) -> str:
    return f"{count} parameter group" + ("" if count == 1 else "s")


def check_keys(entries: Any, keys: tuple[str, ...], what: str) -> None:
    """KeyError for a missing key, ValueError for an unknown one."""
    if not isinstance(entries, dict):
        raise TypeError(f"'{what}' must be a dict, got {type(entries).__name__}")
    for key in keys:
        if key not in entries:
            raise KeyError(f"{what} is missing '{key}'")
    unknown = sorted(set(entries) - set(keys))
    if unknown:
        raise ValueError(f"{what} has unknown keys {unknown}")


def all_finite(array: Any) -> bool:
    """True when every element of ``array`` is finite."""
    xp = array_module(array)
    return bool(xp.isfinite(array).all())


def staged_array(name: str, value: Any, parameter: Parameter) -> np.ndarray:
    """A finite copy of ``value`` in ``parameter``'s shape and dtype (state loading)."""
    if isinstance(value, Tensor):
        value = value.numpy()
    xp = array_module(parameter.numpy())
    array = value if hasattr(value, "shape") and hasattr(value, "dtype") else np.asarray(value)
    if not validation.is_real(array.dtype):
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


def gradient_array(parameter: Parameter, label: str) -> Array:
    """``parameter.grad`` as an array, checked to have the parameter's shape.

    ``label`` names the parameter in the error (e.g. ``"parameter 2 ('fc.weight', ...)"``).
    """
    grad: Any = parameter.grad
    if isinstance(grad, Tensor):
        grad = grad.numpy()
    if not (hasattr(grad, "shape") and hasattr(grad, "dtype")):
        grad = np.asarray(grad)
    if tuple(grad.shape) != parameter.shape:
        raise ValueError(f"gradient of {label} has shape {tuple(grad.shape)}, but the "
                         f"parameter has shape {parameter.shape}")
    return grad


Validator = Callable[[Any, str], Any]


class ParamGroup(dict):
    """One parameter group, PyTorch's shape: ``{"params": [...], "lr": ..., ...}``.

    Its hyperparameters may be changed (``group["lr"] = 3e-4``) and are validated on every
    assignment; its ``"params"`` are fixed when the optimizer is built, and it takes no keys
    the optimizer does not know.
    """

    def __init__(self, params: list[Parameter], settings: dict[str, Any],
                 validators: dict[str, Validator]):
        super().__init__(params=params)
        self._validators = validators
        for key, value in settings.items():
            self[key] = value

    def __setitem__(self, key: str, value: Any) -> None:
        if key == "params" and "params" in self:
            raise TypeError("a parameter group's 'params' are fixed when the optimizer is built")
        if key != "params":
            if key not in self._validators:
                raise KeyError(f"unknown hyperparameter {key!r}; a group takes "
                               f"{', '.join(self._validators)}")
            value = self._validators[key](value, key)
        super().__setitem__(key, value)

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def setdefault(self, key: str, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return self[key]

    def settings(self) -> dict[str, Any]:
        """The hyperparameters, without the parameters."""
        return {key: value for key, value in self.items() if key != "params"}


class GroupSetting:
    """``optimizer.lr`` and the like, a view of the groups (where each value is kept, as in
    PyTorch): reading gives the value every group shares (ValueError when groups differ:
    read ``param_groups[i][name]``); assigning checks the value once and sets it in every
    group."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, optimizer: Any, owner: type | None = None) -> Any:
        if optimizer is None:
            return self
        values = [group[self.name] for group in optimizer.param_groups]
        if any(value != values[0] for value in values):
            shown = ", ".join(dict.fromkeys(repr(value) for value in values))
            raise ValueError(f"the parameter groups have different {self.name} values "
                             f"({shown}); read param_groups[i][{self.name!r}]")
        return values[0]

    def __set__(self, optimizer: Any, value: Any) -> None:
        value = optimizer.GROUP_SETTINGS[self.name](value, self.name)  # checked once, for all
        for group in optimizer.param_groups:
            dict.__setitem__(group, self.name, value)


def _group_specs(params_or_module: Any) -> tuple[list[tuple[list[Parameter], list[str], dict]],
                                                  bool]:
    """``(parameters, names, settings)`` per group: one group for a Module or an iterable of
    Parameters, one per dict for PyTorch's list of groups; and whether groups were given."""
    dicts: list[bool] = []
    if isinstance(params_or_module, Iterable) and not isinstance(
            params_or_module, (Module, Tensor, np.ndarray, str, bytes, dict)):
        params_or_module = list(params_or_module)
        dicts = [isinstance(item, dict) for item in params_or_module]
        if any(dicts) and not all(dicts):
            raise TypeError("expected Parameters or parameter groups (dicts), not a mix of both")
    if isinstance(params_or_module, list) and params_or_module and all(dicts):
        specs = []
        for number, group in enumerate(params_or_module):
            if "params" not in group:
                raise KeyError(f"parameter group {number} has no 'params'")
            parameters, names = collect_parameters(group["params"], allow_empty=True)
            names = [f"group {number} {name}" for name in names]
            specs.append((parameters, names, {k: v for k, v in group.items() if k != "params"}))
        return specs, True
    parameters, names = collect_parameters(params_or_module)
    return [(parameters, names, {})], False


class Optimizer:
    """Base class: ``param_groups``, the flat ``parameters`` list, ``zero_grad()`` and the
    checked gradient gathering.

    Built from a Module, an iterable of Parameters, or PyTorch's list of parameter groups
    (``[{"params": [...], "lr": 0.1}, ...]``: a group's own settings override the
    optimizer's arguments). ``GROUP_SETTINGS`` names each hyperparameter a group may set and
    its validator; ``GLOBAL_SETTINGS`` those that apply to the whole step (clipping).
    Subclasses define ``step()``, ``state_dict()`` and ``load_state_dict()``.
    """

    GROUP_SETTINGS: dict[str, Validator] = {}
    GLOBAL_SETTINGS: dict[str, Validator] = {}

    def __init__(self, params_or_module: ParamsOrModule, **defaults: Any):
        defaults = {key: self.GROUP_SETTINGS[key](value, key) for key, value in defaults.items()}
        self.param_groups: list[ParamGroup] = []
        self.parameters: list[Parameter] = []
        self._names: list[str] = []
        self._group_of: list[int] = []
        for parameters, names, settings in self._split(*_group_specs(params_or_module)):
            for key in settings:
                if key in self.GLOBAL_SETTINGS:
                    raise ValueError(f"{key} applies to the whole step, not to one group; pass "
                                     f"it to {type(self).__name__}(...)")
            group = ParamGroup(parameters, {**defaults, **settings}, self.GROUP_SETTINGS)
            self._group_of += [len(self.param_groups)] * len(parameters)
            self.param_groups.append(group)
            self.parameters += parameters
            self._names += names
        if not self.parameters:
            raise ValueError("the optimizer got an empty parameter list")
        _check_distinct(self.parameters, self._names)

    def _split(self, specs: list, grouped: bool) -> list:
        """Hook for per-parameter settings (SGD's lr sequence); the groups as given here."""
        return specs

    def group_of(self, index: int) -> ParamGroup:
        """The parameter group that ``parameters[index]`` belongs to."""
        return self.param_groups[self._group_of[index]]

    def _param_groups_state(self) -> list[dict[str, Any]]:
        """``state_dict()["param_groups"]``, PyTorch's structure: each group's settings, then
        ``"params"``, the indices of its parameters in the optimizer's order."""
        groups, start = [], 0
        for group in self.param_groups:
            count = len(group["params"])
            groups.append({**group.settings(), "params": list(range(start, start + count))})
            start += count
        return groups

    def config(self) -> dict[str, Any]:
        """The hyperparameters as a plain dict (one group only: ``param_groups`` holds them
        per group otherwise)."""
        if len(self.param_groups) > 1:
            raise ValueError(f"this optimizer has {len(self.param_groups)} parameter groups; "
                             "read param_groups for their settings")
        settings = self.param_groups[0].settings()
        return {**settings, **{key: getattr(self, key) for key in self.GLOBAL_SETTINGS}}

    def _staged_state(self, state: Any, entry_keys: tuple[str, ...]
                      ) -> tuple[list[dict], dict[str, Any], dict[int, dict]]:
        """Check a ``state_dict`` in PyTorch's structure against this optimizer, changing
        nothing. Returns the validated settings of each group, the global settings, and the
        state entries by parameter index (each a dict holding exactly ``entry_keys``; a
        parameter without an entry has not been updated yet). Saved parameter ids are matched
        to this optimizer's parameters by position, group by group, as PyTorch matches them.
        TypeError, KeyError or ValueError name what does not fit."""
        if not isinstance(state, dict):
            raise TypeError(f"load_state_dict expects a dict, got {type(state).__name__}")
        for key in ("state", "param_groups", *self.GLOBAL_SETTINGS):
            if key not in state:
                raise KeyError(f"optimizer state is missing '{key}'")
        saved_groups = state["param_groups"]
        if not isinstance(saved_groups, (list, tuple)):
            raise TypeError(f"'param_groups' must be a list, got {type(saved_groups).__name__}")
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(f"optimizer state has {_groups(len(saved_groups))}, this "
                             f"optimizer has {_groups(len(self.param_groups))}")
        groups: list[dict] = []
        index_of: dict[int, int] = {}
        for number, (saved, group) in enumerate(zip(saved_groups, self.param_groups,
                                                    strict=True)):
            check_keys(saved, ("params", *self.GROUP_SETTINGS), f"parameter group {number}")
            ids = saved["params"]
            if not isinstance(ids, (list, tuple)) or len(ids) != len(group["params"]):
                count = len(ids) if isinstance(ids, (list, tuple)) else "no list of"
                raise ValueError(f"parameter group {number} of the state holds {count} "
                                 f"parameters, this optimizer's holds {len(group['params'])}")
            for saved_id in ids:
                if type(saved_id) is not int or saved_id in index_of:
                    raise ValueError(f"parameter group {number}'s 'params' must be distinct "
                                     f"integer ids, got {saved_id!r}")
                index_of[saved_id] = len(index_of)
            groups.append({key: self.GROUP_SETTINGS[key](saved[key], key)
                           for key in self.GROUP_SETTINGS})
        entries = state["state"]
        if not isinstance(entries, dict):
            raise TypeError(f"'state' must be a dict from parameter ids to their state, got "
                            f"{type(entries).__name__}")
        staged = {}
        for saved_id, entry in entries.items():
            if saved_id not in index_of:
                raise ValueError(f"optimizer state has an entry for parameter id {saved_id!r}, "
                                 "which no parameter group holds")
            index = index_of[saved_id]
            check_keys(entry, entry_keys, f"state of {self.describe(index)}")
            staged[index] = entry
        globals_ = {key: self.GLOBAL_SETTINGS[key](state[key], key)
                    for key in self.GLOBAL_SETTINGS}
        return groups, globals_, staged

    def _commit_groups(self, groups: list[dict]) -> None:
        for group, settings in zip(self.param_groups, groups, strict=True):
            group.update(settings)

    def describe(self, index: int) -> str:
        """``parameter 2 ('blocks.0.weight', shape (4, 4))`` for error messages."""
        parameter = self.parameters[index]
        return f"parameter {index} ('{self._names[index]}', shape {parameter.shape})"

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Set every parameter's ``.grad`` to None (frozen ones included), PyTorch's default;
        with ``set_to_none=False`` fill the gradients that exist with zeros instead."""
        for parameter in self.parameters:
            if set_to_none:
                parameter.grad = None
            elif parameter.grad is not None:
                parameter.grad.zero_()  # in place, as PyTorch

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
            if not validation.is_real(grad.dtype):
                raise TypeError(
                    f"gradient of {self.describe(index)} has dtype {grad.dtype}, "
                    "expected a real number type"
                )
            if not all_finite(parameter.numpy()):
                raise ValueError(f"{self.describe(index)} has non-finite values")
            if not writable(parameter.numpy()):
                raise ValueError(f"{self.describe(index)} is read-only (its array cannot be "
                                 "written in place); nothing was changed")
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

    def step(self) -> None:
        raise NotImplementedError

    def state_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    def load_state_dict(self, state: dict[str, Any]) -> None:
        raise NotImplementedError


# ------------------------------------------------------------------------ step kernels
def register_step_kernel(optimizer_class: type[Optimizer], update: Callable[..., None]) -> None:
    """Let ``update`` be the update loop of optimizers of exactly ``optimizer_class`` (in the
    kernel table, :mod:`tensorlib.engine.kernel_table`): a function over the flat buffers the
    optimizer owns, which it calls with them and then checks and commits what came out.
    ``tensorlib.optim.adamw_flat`` registers ``adamw_update`` for ``AdamW``; reference mode
    sets it aside."""
    kernel_table.register(optimizer_class, update, Optimizer, "register_step_kernel")


def weight_decay_groups(module: Module, weight_decay: float) -> list[dict[str, Any]]:
    """nanoGPT's two parameter groups for AdamW: weight decay on the weight matrices (two or
    more axes: Linear, Embedding, the stacked Q/K/V weights), none on the rest (biases,
    LayerNorm weights, and the stacked (3, C) Q/K/V bias, which has two axes but is a bias).
    Trainable parameters only, in module order; an empty group is left out::

        AdamW(weight_decay_groups(model, 0.1), lr=3e-4)
    """
    check_module(module, "weight_decay_groups' module")
    weight_decay = validation.real(weight_decay, "weight_decay", low=0.0)
    decayed: list[Parameter] = []
    plain: list[Parameter] = []
    for name, parameter in module.named_parameters(include_frozen=False):
        is_matrix = parameter.ndim >= 2 and not name.rsplit(".", 1)[-1].endswith("bias")
        (decayed if is_matrix else plain).append(parameter)
    groups = [{"params": decayed, "weight_decay": weight_decay},
              {"params": plain, "weight_decay": 0.0}]
    return [group for group in groups if group["params"]]
