"""``Parameter``: a leaf tensor a module owns, trainable or frozen."""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorlib.engine.tensor import Tensor
from tensorlib.engine.validation import is_floating


class Parameter(Tensor):
    """A leaf tensor a module owns. ``trainable=False`` freezes it (it never gets a grad)."""

    def __init__(self, data: Any, trainable: bool = True, dtype: Any = None):
        if isinstance(data, Tensor):
            data = data._data
        super().__init__(data, dtype=dtype)
        if not is_floating(self.dtype):
            raise TypeError(f"a Parameter must be floating point, got dtype {self.dtype}")
        self.requires_grad = bool(trainable)

    @Tensor.data.setter  # type: ignore[attr-defined]  # (mypy: a parent's setter)
    def data(self, value: Any) -> None:
        """Read as :attr:`Tensor.data`. Assigning new values is an in-place change whose
        shape and dtype must stay the same (a module, its optimizer and its checkpoints rely
        on both)."""
        array = value._data if isinstance(value, Tensor) else value
        if not (hasattr(array, "shape") and hasattr(array, "dtype")):
            array = np.asarray(array)
        if tuple(array.shape) != self.shape or array.dtype != self.dtype:
            owner = f"parameter {self._owner}" if self._owner else "a parameter"
            raise ValueError(f"cannot assign data of shape {tuple(array.shape)} and dtype "
                             f"{array.dtype} to {owner} of shape {self.shape} and dtype "
                             f"{self.dtype}; use copy_() for values, or register a new "
                             "Parameter")
        Tensor.data.fset(self, array)  # type: ignore[attr-defined]

    def _release(self, empty: Any) -> None:
        """Drop the values for good (NF4 quantization does, once it holds the weight in its
        own storage): data becomes ``empty``, the version bumps, the gradient goes."""
        self._data = empty
        self._bump_version()
        self.grad = None

    @property
    def _owner(self) -> str:
        """``'name' of ModuleType`` once registered (set by ``register_parameter``)."""
        return self.__dict__.get("_registered_as", "")

    @property
    def trainable(self) -> bool:
        return self.requires_grad

    @trainable.setter
    def trainable(self, flag: bool) -> None:
        self.requires_grad = bool(flag)
        if not flag:
            self.grad = None

    def __repr__(self) -> str:
        return "Parameter(" + super().__repr__()[len("tensor(") :]


def as_buffer(value: Any, name: str) -> Tensor:
    """The Tensor a module keeps for buffer ``name``: an array wrapped as it is, a Tensor
    taken as it is; a Parameter, or anything that requires grad, is refused."""
    if isinstance(value, Parameter):
        raise TypeError(f"buffer '{name}' cannot be a Parameter: register it with "
                        "register_parameter, or pass its data")
    if isinstance(value, Tensor):
        if value.requires_grad or value.grad_fn is not None:
            raise ValueError(f"buffer '{name}' must not require grad or come from a graph; "
                             "pass tensor.detach()")
        return value
    if not (hasattr(value, "shape") and hasattr(value, "dtype")):
        raise TypeError(f"buffer '{name}' must be an array or a Tensor, "
                        f"got {type(value).__name__}")
    return Tensor(value)
