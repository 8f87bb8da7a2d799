"""safetensors files: a module's ``state_dict`` in the format PyTorch, Hugging Face and JAX
read, for moving a model between tensorlib and other libraries.

A file holds one array per state entry, keyed by tensorlib's dotted names
(``blocks.0.attention.qkv_weight``), plus string metadata. Saving is atomic, as for TLCKPT
(a temporary file renamed over the target). Loading reads and checks the whole file before
anything changes: a file that is not safetensors, holds non-finite or non-numeric values, or
does not fit the module raises :class:`tensorlib.saving.checkpoint.CheckpointError` and leaves the
module as it was. Values are converted to each parameter's dtype (a float64 file loads into
a float32 model), as ``Module.load_state_dict`` does.

The writing and checked reading of safetensors bytes (``safetensors_bytes``,
``parse_safetensors``, ``safetensors_metadata``, ``strict_json``) are shared with
:mod:`tensorlib.saving.objects`, whose ``tensorlib.save`` files are safetensors files too.
"""

from __future__ import annotations

import json
import os
import struct
from collections import Counter
from collections.abc import Mapping
from typing import Any

import numpy as np
from safetensors import numpy as safetensors_numpy

from tensorlib.engine import dtypes
from tensorlib.engine.files import write_atomic
from tensorlib.engine.validation import is_floating, is_real
from tensorlib.nn.module import Module, check_module
from tensorlib.nn.state_dict import IncompatibleKeys, StateDictError
from tensorlib.saving.checkpoint import CheckpointError

__all__ = ["load_safetensors", "parse_safetensors", "read_safetensors", "safetensors_bytes",
           "safetensors_metadata", "save_safetensors", "strict_json"]


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
    write_atomic(path, [safetensors_bytes(state, {"producer": "tensorlib", **(metadata or {})})])


def read_safetensors(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """The arrays of a safetensors file, checked to be finite real numbers
    (CheckpointError otherwise; OSError when the file cannot be read). bfloat16 arrays are
    returned as float32, which holds each value exactly (Llama's weights are stored so)."""
    with open(path, "rb") as handle:
        contents = handle.read()
    arrays = parse_safetensors(contents, str(os.fspath(path)))
    for name, array in arrays.items():
        if array.dtype == dtypes.bfloat16:
            arrays[name] = array = dtypes.to_float32(array)
        if not is_real(array.dtype):
            raise CheckpointError(f"'{name}' in {os.fspath(path)!s} has dtype {array.dtype}, "
                                  "not a real number type")
        if is_floating(array.dtype) and not np.isfinite(array).all():
            raise CheckpointError(f"'{name}' in {os.fspath(path)!s} has non-finite values")
    return arrays


def safetensors_bytes(arrays: Mapping[str, np.ndarray], metadata: dict[str, str]) -> bytes:
    """The bytes of a safetensors file holding ``arrays`` (written C-ordered, a 0-d array
    staying 0-d) and the string ``metadata``."""
    return safetensors_numpy.save({name: np.ascontiguousarray(array).reshape(array.shape)
                                   for name, array in arrays.items()}, metadata=metadata)


def parse_safetensors(contents: bytes, source: str) -> dict[str, np.ndarray]:
    """The arrays of a safetensors file's bytes. The safetensors library checks the layout
    before it makes any array (a header length within the file, a JSON header, known dtypes,
    shapes of non-negative ints, offsets that tile the data exactly, each array's byte count
    its shape times its item size); anything wrong raises CheckpointError naming ``source``.
    bfloat16 arrays are returned as bfloat16 (ml_dtypes')."""
    bfloat16 = _bfloat16_names(contents, source) if b'"BF16"' in contents[:1 << 20] else []
    if bfloat16:  # the reader knows no bfloat16: its bits read as uint16 (same size, checks)
        length = struct.unpack_from("<Q", contents)[0]
        header = contents[8:8 + length].replace(b'"BF16"', b'"U16" ')
        contents = contents[:8] + header + contents[8 + length:]
    try:
        arrays = safetensors_numpy.load(contents)
    except Exception as error:  # the reader raises its own error types, and TypeError
        raise CheckpointError(f"{source} is not a readable safetensors file "
                              f"({type(error).__name__}: {error})") from None
    for name in bfloat16:
        arrays[name] = arrays[name].view(dtypes.bfloat16)
    return arrays


def _bfloat16_names(contents: bytes, source: str) -> list[str]:
    """The names of the bfloat16 arrays in the header of safetensors bytes (Llama's weights
    are stored so)."""
    if len(contents) < 8:
        return []
    (length,) = struct.unpack_from("<Q", contents)
    try:
        header = strict_json(contents[8:8 + length], f"the header of {source}")
    except CheckpointError:
        return []  # the safetensors reader names what is wrong
    return [name for name, entry in header.items() if isinstance(entry, dict)
            and entry.get("dtype") == "BF16"] if isinstance(header, dict) else []


def safetensors_metadata(contents: bytes, source: str) -> dict[str, str]:
    """The string metadata in the header of bytes that :func:`parse_safetensors` accepted
    (``{}`` when there is none); CheckpointError when the header names a key twice, which
    the safetensors library lets pass."""
    (length,) = struct.unpack_from("<Q", contents)
    header = strict_json(contents[8:8 + length], f"the header of {source}")
    return header.get("__metadata__") or {}


def strict_json(text: str | bytes, what: str) -> Any:
    """``json.loads(text)``, refusing what no tensorlib writer writes: an object naming a key
    twice, NaN and Infinity, and nesting too deep for Python's parser (CheckpointError naming
    ``what``, never RecursionError)."""
    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        result = dict(pairs)
        if len(result) < len(pairs):
            counts = Counter(key for key, _ in pairs)
            repeated = next(key for key, count in counts.items() if count > 1)
            raise CheckpointError(f"{what} names the key {repeated!r} twice")
        return result

    def refuse_constant(name: str) -> None:
        raise CheckpointError(f"{what} holds {name}, which is not JSON")

    try:
        return json.loads(text, object_pairs_hook=unique, parse_constant=refuse_constant)
    except CheckpointError:
        raise
    except RecursionError:
        raise CheckpointError(f"{what} is nested too deeply to read") from None
    except ValueError as error:  # JSONDecodeError, UnicodeDecodeError, too many digits
        raise CheckpointError(f"{what} is not valid JSON ({error})") from None


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
