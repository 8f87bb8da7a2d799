"""The argument checks every function of :mod:`tensorlib.nn.functional` shares."""

from __future__ import annotations

from typing import Any

from tensorlib.engine.tensor import Tensor
from tensorlib.engine.validation import is_floating


def _check_tensor(value: Any, what: str) -> Tensor:
    if not isinstance(value, Tensor):
        raise TypeError(f"{what} must be a Tensor, got {type(value).__name__}")
    return value


def _check_one_dtype(what: str, *tensors: Any) -> None:
    """TypeError when the tensors given (None: absent) do not share one dtype."""
    dtypes = {t.dtype for t in tensors if t is not None}
    if len(dtypes) > 1:
        raise TypeError(f"{what}: mixed dtypes {sorted(map(str, dtypes))}; convert with "
                        ".float() or .double() first")


def _check_floating(value: Any, what: str) -> Tensor:
    _check_tensor(value, what)
    if not is_floating(value.dtype):
        raise TypeError(f"{what} must be a floating-point tensor, got dtype {value.dtype}")
    return value
