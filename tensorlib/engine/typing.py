"""Type names for signatures: ``Array``, the raw array a Tensor holds.

``Array`` is the array of whichever backend holds the data (:mod:`tensorlib.engine.backend`): a
``numpy.ndarray`` on the CPU, a ``cupy.ndarray`` on a CUDA GPU, or the array class of a
registered backend. It is spelled ``numpy.typing.NDArray[Any]`` (any dtype, any shape), so
that a type checker knows numpy's methods; CuPy arrays, which offer the same methods, stand
in for it at run time without being numpy arrays (CuPy ships no type information, so the
checker never sees one). Where a signature says ``Array``, a raw array is meant; where it
says ``Tensor``, a :class:`tensorlib.Tensor`.

This module imports numpy only (never CuPy, nor the rest of tensorlib), so any module may
import it.
"""

from __future__ import annotations

from typing import Any, TypeAlias

from numpy.typing import NDArray

__all__ = ["Array"]

#: A numpy or CuPy array (whichever backend holds the data), of any dtype and shape.
Array: TypeAlias = NDArray[Any]
