"""Loading arrays into a module's tensors by name: the one loader by name that
``Module.load_state_dict``, the adapters' and the checkpoint's loads are made of, all or
nothing, with every problem reported in one ``StateDictError``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from tensorlib.engine.autograd import no_grad
from tensorlib.engine.backend import writable
from tensorlib.engine.tensor import Tensor
from tensorlib.engine.validation import is_floating, is_real
from tensorlib.nn.parameter import Parameter


class StateDictError(ValueError):
    """A state dictionary does not fit the module; the message lists every problem."""


class IncompatibleKeys(NamedTuple):
    missing_keys: list[str]
    unexpected_keys: list[str]


def load_by_name(own: Mapping[str, Tensor], state: Any, strict: bool,
                 failure: str) -> IncompatibleKeys:
    """Copy ``state``'s values into the tensors ``own`` by name, all or nothing
    (:func:`stage_by_name`, then :func:`copy_staged`). What ``load_state_dict``
    and ``tensorlib.adapters.lora.load_lora_state_dict`` are made of."""
    staged, keys = stage_by_name(own, state, strict, failure)
    copy_staged(staged)
    return keys


def copy_staged(staged: list[tuple[Tensor, np.ndarray]]) -> None:
    """Commit what :func:`stage_by_name` staged: each array into its tensor with ``copy_``
    under ``no_grad`` (bumping its version)."""
    with no_grad():
        for target, array in staged:
            target.copy_(array)


def stage_by_name(own: Mapping[str, Tensor], state: Any, strict: bool, failure: str,
                  source: str = "the state"
                  ) -> tuple[list[tuple[Tensor, np.ndarray]], IncompatibleKeys]:
    """Check ``state`` (arrays or Tensors by name) against the tensors ``own`` and return
    what to copy where, each value as a new array of its target's dtype, with the missing
    and unexpected keys. Nothing is changed. Every problem (a missing or unexpected key
    under ``strict``, a shape, a dtype that is not a number or changes a buffer's kind of
    number, a read-only target) is collected and raised in one ``StateDictError`` starting
    with ``failure``; ``source`` names where the values come from in its messages. The one
    loader by name: ``load_state_dict``, the adapters' and the checkpoint's loads use it."""
    if not isinstance(state, dict):
        raise TypeError(f"expected a dict of arrays by name, got {type(state).__name__}")
    missing = [name for name in own if name not in state]
    unexpected = [name for name in state if name not in own]
    problems = []
    staged: list[tuple[Tensor, np.ndarray]] = []
    for name, target in own.items():
        if name not in state:
            continue
        value = state[name]
        array = value.numpy() if isinstance(value, Tensor) else np.asarray(value)
        if array.shape != target.shape:
            problems.append(f"'{name}': shape {array.shape} in {source}, {target.shape} in "
                            "the model")
        elif not is_real(array.dtype):
            problems.append(f"'{name}': dtype {array.dtype} is not numeric")
        elif not isinstance(target, Parameter) and \
                is_floating(array.dtype) != is_floating(target.dtype):
            problems.append(f"'{name}': dtype {array.dtype} in {source}, {target.dtype} "
                            "in the model (a buffer keeps its kind of number)")
        elif not writable(target.numpy()):
            problems.append(f"'{name}': the model's array is read-only")
        else:
            staged.append((target, array.astype(target.dtype, copy=True)))
    if strict:
        problems = ([f"missing key '{name}'" for name in missing]
                    + [f"unexpected key '{name}'" for name in unexpected] + problems)
    if problems:
        raise StateDictError(f"{failure}: " + "; ".join(problems))
    return staged, IncompatibleKeys(missing, unexpected)
