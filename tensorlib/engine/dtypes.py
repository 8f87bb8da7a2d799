"""The dtypes a tensor can have, under numpy's names and PyTorch's (``tensorlib.long``), and
how two of them combine.

A tensor's dtype is a numpy dtype; these are the same objects under PyTorch's names, so
``x.to(torch.long)``-style code reads as it does in PyTorch. ``bfloat16`` is the numpy dtype of
``ml_dtypes`` (the one JAX uses): 8 exponent bits like float32, 7 fraction bits.

float16 and bfloat16 are the *low-precision* dtypes: an op given them computes in float32 and
rounds its result once (:mod:`tensorlib.engine.ops.low_precision`), as PyTorch's CPU kernels do.
"""

from __future__ import annotations

import builtins
import sys
from typing import Any

import ml_dtypes
import numpy as np

__all__ = ["DEFAULT_FLOAT", "bfloat16", "bool", "bool_", "double", "float", "float16", "float32",
           "float64", "finfo", "half", "int", "int16", "int32", "int64", "int8",
           "is_low_precision", "long", "promote_types", "short", "to_float32", "uint8"]

float16 = np.dtype(np.float16)
bfloat16 = np.dtype(ml_dtypes.bfloat16)
float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)
int8 = np.dtype(np.int8)
int16 = np.dtype(np.int16)
int32 = np.dtype(np.int32)
int64 = np.dtype(np.int64)
uint8 = np.dtype(np.uint8)
bool_ = np.dtype(np.bool_)
DEFAULT_FLOAT = float32  # what Python floats, and floating ops on integer tensors, make


def finfo(dtype: Any) -> ml_dtypes.finfo:
    """PyTorch's ``torch.finfo``: a floating dtype's ``bits``, ``eps``, ``max``, ``min``,
    ``tiny`` (= ``smallest_normal``) and ``resolution``, bfloat16's included (ml_dtypes')."""
    return ml_dtypes.finfo(np.dtype(dtype))


def is_low_precision(dtype: np.dtype) -> builtins.bool:
    """Whether ``dtype`` is float16 or bfloat16 (numpy kinds 'f' and 'V': test by value)."""
    return dtype == float16 or dtype == bfloat16


def to_float32(array: Any) -> Any:
    """``array`` (float16 or bfloat16) as a new float32 array, exactly. A bfloat16 is the top
    half of the float32 of the same value, so its bits are written there directly: five times
    faster than ml_dtypes' cast, which converts one element at a time."""
    if array.dtype != bfloat16 or type(array) is not np.ndarray or sys.byteorder != "little":
        return array.astype(float32)
    halves = np.zeros(array.shape + (2,), dtype=np.uint16)  # (low, high) of each float32
    halves[..., 1] = array.view(np.uint16)
    return halves.view(float32).reshape(array.shape)


# PyTorch's promotion between floating dtypes: the wider one, and float32 for the two 16-bit
# formats together (neither holds the other: float16 has the precision, bfloat16 the range).
_FLOAT_RANK = {float16: 1, bfloat16: 1, float32: 2, float64: 3}


def promote_types(a: Any, b: Any) -> np.dtype:
    """The dtype PyTorch's ``torch.promote_types`` gives for two dtypes: a float beats an
    integer or bool, the wider float beats the narrower, float16 with bfloat16 is float32, and
    two integer dtypes promote as numpy's do."""
    a, b = np.dtype(a), np.dtype(b)
    if a == b:
        return a
    rank_a, rank_b = _FLOAT_RANK.get(a), _FLOAT_RANK.get(b)
    if rank_a is None and rank_b is None:
        return np.result_type(a, b)
    if rank_b is None:
        return a
    if rank_a is None:
        return b
    if rank_a == rank_b:  # float16 and bfloat16
        return float32
    return a if rank_a > rank_b else b


# PyTorch's other spellings (last: below them, these names are no longer Python's builtins)
half = float16
double = float64
short = int16
long = int64
float = float32  # noqa: A001 - torch.float
int = int32  # noqa: A001 - torch.int
bool = bool_  # noqa: A001 - torch.bool
