"""safetensors files: a module's ``state_dict`` in the format PyTorch, Hugging Face and JAX
read, for moving a model between tensorlib and other libraries.

A file holds one array per state entry, keyed by tensorlib's dotted names
(``blocks.0.attention.qkv_weight``), plus string metadata. Saving is atomic, as for TLCKPT
(a temporary file renamed over the target). Loading reads and checks the whole file before
anything changes: a file that is not safetensors, holds non-finite or non-numeric values, or
does not fit the module raises :class:`tensorlib.saving.checkpoint.CheckpointError` and leaves the
module as it was. Values are converted to each parameter's dtype (a float64 file loads into
a float32 model), as ``Module.load_state_dict`` does.
"""

from __future__ import annotations

import os

import numpy as np
from safetensors import numpy as safetensors_numpy

from tensorlib.engine.validation import is_floating
from tensorlib.nn.module import Module, check_module
from tensorlib.nn.state_dict import IncompatibleKeys, StateDictError
from tensorlib.saving.checkpoint import CheckpointError
from tensorlib.saving.files import write_atomic

__all__ = ["load_safetensors", "read_safetensors", "save_safetensors"]


def save_safetensors(path: str | os.PathLike, module: Module,
                     metadata: dict[str, str] | None = None) -> None:
    """Write ``module.state_dict()`` to ``path`` as safetensors (atomically).

    ``metadata`` is an optional dict of strings stored in the file's header. Non-finite
    values raise ValueError and nothing is written.
    """
    check_module(module, "module")
    if metadata is not None and (not isinstance(metadata, dict) or not all(
            isinstance(key, str) and isinstance(value, str) for key, value in metadata.items())):
        raise TypeError(f"metadata must be a dict of strings, got {metadata!r}")
    state = module.state_dict()
    for name, array in state.items():
        if is_floating(array.dtype) and not np.isfinite(array).all():
            raise ValueError(f"'{name}' has non-finite values; nothing was written")
    contents = safetensors_numpy.save({name: np.ascontiguousarray(array).reshape(array.shape)
                                       for name, array in state.items()},  # 0-d stays 0-d
                                      metadata={"producer": "tensorlib", **(metadata or {})})
    write_atomic(path, [contents])


def read_safetensors(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """The arrays of a safetensors file, checked to be finite real numbers
    (CheckpointError otherwise; OSError when the file cannot be read)."""
    with open(path, "rb") as handle:
        contents = handle.read()
    try:
        arrays = safetensors_numpy.load(contents)
    except Exception as error:  # the reader raises its own error types, and TypeError
        raise CheckpointError(f"{os.fspath(path)!s} is not a readable safetensors file "
                              f"({type(error).__name__}: {error})") from None
    for name, array in arrays.items():
        if array.dtype.kind not in "fiu":
            raise CheckpointError(f"'{name}' in {os.fspath(path)!s} has dtype {array.dtype}, "
                                  "not a real number type")
        if is_floating(array.dtype) and not np.isfinite(array).all():
            raise CheckpointError(f"'{name}' in {os.fspath(path)!s} has non-finite values")
    return arrays


def load_safetensors(path: str | os.PathLike, module: Module,
                     strict: bool = True) -> IncompatibleKeys:
    """Load a safetensors file into ``module`` by name, all or nothing.

    With ``strict`` every key must match; otherwise the missing and unexpected keys are
    returned. Shapes must always match. Any problem raises CheckpointError and leaves the
    module untouched.
    """
    check_module(module, "module")
    arrays = read_safetensors(path)
    try:
        return module.load_state_dict(arrays, strict=strict)
    except StateDictError as error:
        raise CheckpointError(f"{os.fspath(path)!s} does not fit the module: {error}") from None
