"""How a module tree changes its tensors in place: ``Module._apply`` (one transaction over
every parameter, buffer and extra parameter) and what ``Module.to``, ``float`` and ``double``
hand it: a move to a device, a cast to a floating dtype, or both."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from tensorlib.engine.backend import copy_to_backend, device_of
from tensorlib.engine.devices import backend_for, to_arguments
from tensorlib.engine.tensor import Tensor
from tensorlib.engine.validation import is_floating
from tensorlib.nn.parameter import Parameter

if TYPE_CHECKING:
    from tensorlib.nn.module import Module


def convert_in_place(module: Module, fn: Callable[[Any], Any],
                     convert_grads: bool | Callable[[Any, Any], Any] = True) -> Module:
    """``Module._apply``: every tensor of the tree takes ``fn(data)``, all or nothing (its
    docstring states the contract); returns ``module``."""
    staged: list[tuple[Tensor, Any, Any]] = []
    for name, tensor in module._named_members(_own_tensors, remove_duplicate=True,
                                              children_first=True):
        array = fn(tensor.numpy())
        if array is tensor.numpy():
            continue
        if not (hasattr(array, "shape") and hasattr(array, "dtype")) \
                or tuple(array.shape) != tensor.shape:
            raise ValueError(f"_apply: fn turned '{name}' of shape {tensor.shape} into "
                             f"{type(array).__name__} of shape "
                             f"{getattr(array, 'shape', None)}; it must keep the shape")
        if isinstance(tensor, Parameter) and not is_floating(array.dtype):
            raise ValueError(f"_apply: fn turned parameter '{name}' into dtype "
                             f"{array.dtype}; a Parameter must be floating point")
        grad = None
        if tensor.grad is not None and convert_grads is not False:
            grad = fn(tensor.grad.numpy()) if convert_grads is True \
                else convert_grads(tensor.grad.numpy(), tensor.numpy())
        staged.append((tensor, array, grad))
    for tensor, array, grad in staged:  # plain assignments, which cannot fail
        tensor._data = array
        tensor._bump_version()
        tensor.grad = grad
    return module


def move_or_cast(module: Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Module:
    """``Module.to(*args, **kwargs)`` (its docstring states the contract); returns
    ``module``."""
    target, dtype, _, _ = to_arguments(args, kwargs, Tensor, "Module.to", takes_copy=False)
    if dtype is not None and not is_floating(dtype):
        raise TypeError(f"Module.to only casts to a floating dtype, got {dtype}: integer "
                        f"buffers keep their dtype, and parameters must stay floating")
    cast = (lambda array: array) if dtype is None else floating_to(dtype)
    if target is None:
        return module if dtype is None else module._apply(cast)
    backend = backend_for(target, "Module.to device")  # before any work

    def move(array: Any) -> Any:
        return cast(array if device_of(array) == backend.name
                    else copy_to_backend(backend, array))

    def convert_grad(grad: Any, data: Any) -> Any:  # dropped where the tensor moves
        return cast(grad) if device_of(data) == backend.name else None

    return module._apply(move, convert_grads=convert_grad)


def _own_tensors(module: Module) -> Iterator[tuple[str, Tensor]]:
    """A module's own parameters, all its buffers, then its extra parameters: what
    ``_apply`` converts."""
    yield from module._parameters.items()
    yield from module._buffers.items()
    yield from module._extra_parameters()


def floating_to(dtype: np.dtype) -> Callable[[Any], Any]:
    """An ``_apply`` function: a floating array as ``dtype``, any other array as it is."""
    def cast(array: Any) -> Any:
        return array.astype(dtype) if is_floating(array.dtype) and array.dtype != dtype else array
    return cast


