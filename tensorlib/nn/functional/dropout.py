"""Dropout with a mask drawn from a splitmix64 generator, and its reference twin."""

from __future__ import annotations

import numpy as np

from tensorlib.engine import ops, validation
from tensorlib.engine.backend import array_module
from tensorlib.engine.splitmix64 import Rng, resolve_rng
from tensorlib.engine.tensor import Tensor
from tensorlib.engine.typing import Array
from tensorlib.nn.functional.arguments import _check_floating


def _dropout_multiplier(x: Tensor, p: float, rng: Rng) -> Array:
    """Draw the inverted-dropout multiplier: 0 where uniform(0, 1) < p, else 1/(1-p)."""
    dropped = rng.uniform(0.0, 1.0, size=x.shape) < p
    xp = array_module(x.numpy())
    keep_scale = x.dtype.type(1.0 / (1.0 - p))
    return xp.asarray(np.where(dropped, x.dtype.type(0), keep_scale))


def dropout(x: Tensor, p: float, rng: Rng | None = None, training: bool = True) -> Tensor:
    """Inverted dropout: zero each element with probability ``p``, scale the rest by 1/(1-p).

    Returns ``x`` itself, drawing nothing from the RNG, when ``training`` is False or p == 0.
    The mask is ``rng.uniform(0, 1, x.shape) < p`` (the default RNG when ``rng`` is None).
    """
    p = validation.probability(p, "dropout probability")
    _check_floating(x, "dropout input")
    generator = resolve_rng(rng)
    if not training or p == 0.0:
        return x
    return ops.Dropout.apply(x, multiplier=_dropout_multiplier(x, p, generator))


def dropout_reference(x: Tensor, p: float, rng: Rng | None = None,
                      training: bool = True) -> Tensor:
    """The primitive twin of ``dropout`` (same draws): x * Tensor(multiplier)."""
    p = validation.probability(p, "dropout probability")
    _check_floating(x, "dropout input")
    generator = resolve_rng(rng)
    if not training or p == 0.0:
        return x
    return x * Tensor(_dropout_multiplier(x, p, generator))
