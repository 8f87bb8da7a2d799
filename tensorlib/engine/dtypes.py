"""The dtypes a tensor can have, under numpy's names and PyTorch's (``tensorlib.long``).

A tensor's dtype is a numpy dtype; these are the same objects under PyTorch's names, so
``x.to(torch.long)``-style code reads as it does in PyTorch. ``bfloat16`` is a name only: numpy
has no bfloat16, and a conversion to it says so (its arithmetic comes with the chapter on
number formats).
"""

from __future__ import annotations

import numpy as np

__all__ = ["DEFAULT_FLOAT", "bfloat16", "bool", "bool_", "double", "float", "float16", "float32",
           "float64", "half", "int", "int16", "int32", "int64", "int8", "long", "short", "uint8"]

float16 = np.dtype(np.float16)
float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)
int8 = np.dtype(np.int8)
int16 = np.dtype(np.int16)
int32 = np.dtype(np.int32)
int64 = np.dtype(np.int64)
uint8 = np.dtype(np.uint8)
bool_ = np.dtype(np.bool_)
DEFAULT_FLOAT = float32  # what Python floats, and floating ops on integer tensors, make


class _NotYetADtype:
    """A dtype name tensorlib knows but cannot compute in yet."""

    def __init__(self, name: str, why: str):
        self.name, self.why = name, why

    def __repr__(self) -> str:
        return f"tensorlib.{self.name}"


bfloat16 = _NotYetADtype("bfloat16", "numpy has no bfloat16; it comes with the chapter on "
                         "number formats (use float32, or float16)")

# PyTorch's other spellings (last: below them, these names are no longer Python's builtins)
half = float16
double = float64
short = int16
long = int64
float = float32  # noqa: A001 - torch.float
int = int32  # noqa: A001 - torch.int
bool = bool_  # noqa: A001 - torch.bool
