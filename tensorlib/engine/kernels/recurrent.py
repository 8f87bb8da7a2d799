"""The gates' sigmoid for the recurrent layers, from one exp.

``sigmoid_into`` stands in for the step ``sigmoid`` of
``tensorlib.engine.ops.recurrent.GRULayer`` and ``LSTMLayer`` on float32 CPU arrays.
"""

from __future__ import annotations

import numpy as np

from tensorlib.engine.typing import Array

__all__ = ["sigmoid_into"]


def sigmoid_into(a: Array, out: Array) -> Array:
    """σ(a) = 1 / (1 + e^-a) of a float32 array, written into ``out`` and returned.

    Stands in for: ``scipy.special.expit(a, out=out)``, which works element by element.
    How: numpy's vectorized exp, an add and a reciprocal, in place; e^-a overflows to inf
    below a = -88.7, where 1 / inf gives the exact 0.
    Accuracy: within 2 float32 ulps of expit, and 0 where expit is subnormal (below
    a = -87.3) (tests/engine/test_kernels.py).
    Measured: half of expit's time on a (32, 1024) array (docs/performance.md, "Recurrent
    layers").
    """
    np.negative(a, out=out)
    with np.errstate(over="ignore"):
        np.exp(out, out=out)
    out += np.float32(1)
    return np.reciprocal(out, out=out)
