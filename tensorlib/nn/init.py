"""Weight initialization: the specification's policies, and PyTorch's in-place functions.

PyTorch's ``torch.nn.init`` functions (``normal_``, ``uniform_``, ``constant_``, ``zeros_``,
``ones_``, ``xavier_uniform_``, ``xavier_normal_``, ``kaiming_uniform_``,
``kaiming_normal_``, ``trunc_normal_``, ``calculate_gain``), which fill an existing tensor in
place, live in :mod:`tensorlib.nn.init_in_place` and are attributes of this module too, so
``tensorlib.nn.init.normal_(p, mean=0.0, std=0.02)`` reads as it does in PyTorch.

The specification's six policies make new arrays, by name (see :data:`POLICIES`):

* ``zero``: W = 0 (biases).
* ``one``: W = 1 (LayerNorm weight).
* ``xavier_uniform``: U(-a, a), a = gain * sqrt(6 / (fan_in + fan_out)) (Linear, Embedding).
* ``xavier_normal``: N(0, gain * sqrt(2 / (fan_in + fan_out))) (alternative Linear init).
* ``he_uniform``: U(-a, a), a = sqrt(6 / fan_in) (ReLU networks).
* ``he_normal``: N(0, sqrt(2 / fan_in)) (ReLU networks).

``fan_in_uniform`` is PyTorch's default for ``Conv1d``/``Conv2d`` (weights and biases alike):
U(-1/√fan_in, 1/√fan_in), what ``torch.nn.init.kaiming_uniform_(w, a=√5)`` draws.

Fans follow the PyTorch convention: a weight has shape ``(out, in, *receptive_field)``
(``Linear.weight`` is ``(out_features, in_features)``); the receptive field multiplies both
fans. Random policies take an explicit :class:`~tensorlib.engine.splitmix64.Rng` and fill the array
in C order from its vectorized draws, so the same seed always gives the same weights.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import DTypeLike

from tensorlib.engine import validation
from tensorlib.engine.splitmix64 import Rng, Size, normalize_shape
from tensorlib.nn.init_in_place import _calculate_correct_fan as _calculate_correct_fan
from tensorlib.nn.init_in_place import (
    _calculate_fan_in_and_fan_out as _calculate_fan_in_and_fan_out,
)
from tensorlib.nn.init_in_place import (
    calculate_gain,
    constant_,
    kaiming_normal_,
    kaiming_uniform_,
    normal_,
    ones_,
    receptive_fans,
    trunc_normal_,
    uniform_,
    xavier_normal_,
    xavier_uniform_,
    zeros_,
)

__all__ = [
    "POLICIES",
    "PYTORCH_POLICIES",
    "fan_in_and_fan_out",
    "he_normal",
    "fan_in_uniform",
    "he_uniform",
    "initialize",
    "ones",
    "xavier_normal",
    "xavier_uniform",
    "zeros",
    # PyTorch's in-place functions (tensorlib.nn.init_in_place)
    "calculate_gain",
    "constant_",
    "kaiming_normal_",
    "kaiming_uniform_",
    "normal_",
    "ones_",
    "trunc_normal_",
    "uniform_",
    "xavier_normal_",
    "xavier_uniform_",
    "zeros_",
]

POLICIES: tuple[str, ...] = (
    "zero",
    "one",
    "xavier_uniform",
    "xavier_normal",
    "he_uniform",
    "he_normal",
)


# PyTorch's rules for the layers the specification initializes otherwise, by name too:
# nn.Linear's weight and bias (U(±1/√fan_in), the bias with its weight's fan_in) and
# nn.Embedding's weight (N(0, 1)). The layers' defaults stay the specification's
# (docs/departures.md, "Linear and Embedding start as the specification says").
PYTORCH_POLICIES: tuple[str, ...] = ("fan_in_uniform", "normal")


def _as_shape(shape: Size) -> tuple[int, ...]:
    return normalize_shape(shape, "shape")


def _check_rng(rng: Any, policy: str) -> Rng:
    if rng is None:
        raise ValueError(f"init policy {policy!r} is random and needs an rng (an Rng instance)")
    if not isinstance(rng, Rng):
        raise TypeError(f"rng must be a tensorlib.Rng, got {type(rng).__name__}")
    return rng


def _check_gain(gain: float) -> float:
    return validation.non_negative(gain, "gain")


def fan_in_and_fan_out(shape: Size) -> tuple[int, int]:
    """``(fan_in, fan_out)`` of a weight of shape ``(out, in, *receptive_field)``.

    ``receptive = prod(shape[2:])``, ``fan_in = in * receptive``, ``fan_out = out * receptive``.
    A 1-D shape ``(n,)`` has ``fan_in = fan_out = n``. Raises ValueError for a 0-D shape or a
    shape with a zero dimension, which have no meaningful fan.
    """
    dims = _as_shape(shape)
    if len(dims) == 0:
        raise ValueError("fan_in and fan_out are undefined for a 0-D shape ()")
    if any(dim == 0 for dim in dims):
        raise ValueError(f"fan_in and fan_out are undefined for an empty shape {dims}")
    if len(dims) == 1:
        return dims[0], dims[0]
    return receptive_fans(dims)


def zeros(shape: Size, dtype: DTypeLike = np.float32) -> np.ndarray:
    """An array of zeros (policy ``"zero"``)."""
    return np.zeros(_as_shape(shape), dtype=validation.float_dtype(dtype))


def ones(shape: Size, dtype: DTypeLike = np.float32) -> np.ndarray:
    """An array of ones (policy ``"one"``)."""
    return np.ones(_as_shape(shape), dtype=validation.float_dtype(dtype))


def xavier_uniform(shape: Size, rng: Rng, gain: float = 1.0,
                   dtype: DTypeLike = np.float32) -> np.ndarray:
    """U(-a, a) with ``a = gain * sqrt(6 / (fan_in + fan_out))`` (Glorot & Bengio, 2010)."""
    _check_rng(rng, "xavier_uniform")
    fan_in, fan_out = fan_in_and_fan_out(shape)
    bound = _check_gain(gain) * math.sqrt(6.0 / (fan_in + fan_out))
    return rng.uniform(-bound, bound, size=_as_shape(shape), dtype=validation.float_dtype(dtype))


def xavier_normal(shape: Size, rng: Rng, gain: float = 1.0,
                  dtype: DTypeLike = np.float32) -> np.ndarray:
    """N(0, std) with ``std = gain * sqrt(2 / (fan_in + fan_out))`` (Glorot & Bengio, 2010)."""
    _check_rng(rng, "xavier_normal")
    fan_in, fan_out = fan_in_and_fan_out(shape)
    std = _check_gain(gain) * math.sqrt(2.0 / (fan_in + fan_out))
    return rng.normal(0.0, std, size=_as_shape(shape), dtype=validation.float_dtype(dtype))


def he_uniform(shape: Size, rng: Rng, dtype: DTypeLike = np.float32) -> np.ndarray:
    """U(-a, a) with ``a = sqrt(6 / fan_in)`` (He et al., 2015)."""
    _check_rng(rng, "he_uniform")
    fan_in, _ = fan_in_and_fan_out(shape)
    bound = math.sqrt(6.0 / fan_in)
    return rng.uniform(-bound, bound, size=_as_shape(shape), dtype=validation.float_dtype(dtype))


def he_normal(shape: Size, rng: Rng, dtype: DTypeLike = np.float32) -> np.ndarray:
    """N(0, std) with ``std = sqrt(2 / fan_in)`` (He et al., 2015)."""
    _check_rng(rng, "he_normal")
    fan_in, _ = fan_in_and_fan_out(shape)
    std = math.sqrt(2.0 / fan_in)
    return rng.normal(0.0, std, size=_as_shape(shape), dtype=validation.float_dtype(dtype))


def fan_in_uniform(shape: Size, rng: Rng, fan_in: int | None = None,
                   dtype: DTypeLike = np.float32) -> np.ndarray:
    """U(-a, a) with ``a = 1 / sqrt(fan_in)``, ``fan_in`` the shape's own unless given (a
    bias is drawn with its weight's fan_in): PyTorch's default for convolution layers."""
    _check_rng(rng, "fan_in_uniform")
    if fan_in is None:
        fan_in, _ = fan_in_and_fan_out(shape)
    bound = 1.0 / math.sqrt(validation.positive_integer(fan_in, "fan_in"))
    return rng.uniform(-bound, bound, size=_as_shape(shape), dtype=validation.float_dtype(dtype))


def initialize(policy: str, shape: Size, rng: Rng | None = None,
               dtype: DTypeLike = np.float32, fan_in: int | None = None) -> np.ndarray:
    """A new array of ``shape`` initialized by the policy named ``policy`` (see POLICIES
    and PYTORCH_POLICIES).

    ``"zero"`` and ``"one"`` ignore ``rng``; the random policies require it.
    ``"fan_in_uniform"`` takes ``fan_in`` when given (a bias is drawn with its weight's).
    """
    if not isinstance(policy, str):
        raise TypeError(f"policy must be a string naming one of {POLICIES + PYTORCH_POLICIES}, "
                        f"got {policy!r}")
    if policy == "fan_in_uniform":
        return fan_in_uniform(shape, _check_rng(rng, policy), fan_in, dtype)
    if policy == "normal":
        return _check_rng(rng, policy).normal(0.0, 1.0, size=_as_shape(shape),
                                              dtype=validation.float_dtype(dtype))
    if policy == "zero":
        return zeros(shape, dtype)
    if policy == "one":
        return ones(shape, dtype)
    if policy == "xavier_uniform":
        return xavier_uniform(shape, _check_rng(rng, policy), dtype=dtype)
    if policy == "xavier_normal":
        return xavier_normal(shape, _check_rng(rng, policy), dtype=dtype)
    if policy == "he_uniform":
        return he_uniform(shape, _check_rng(rng, policy), dtype=dtype)
    if policy == "he_normal":
        return he_normal(shape, _check_rng(rng, policy), dtype=dtype)
    raise ValueError(f"unknown init policy {policy!r}; valid policies are "
                     f"{', '.join(POLICIES + PYTORCH_POLICIES)}")
