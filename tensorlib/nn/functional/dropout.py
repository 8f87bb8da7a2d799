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


def _dropout_arguments(input: Tensor, p: float, training: bool, inplace: bool,
                       rng: Rng | None) -> tuple[float, bool, Rng]:
    """The checked ``p``, ``training`` and generator of a dropout call."""
    p = validation.probability(p, "dropout probability")
    _check_floating(input, "dropout input")
    training = validation.boolean(training, "dropout training")
    if validation.boolean(inplace, "dropout inplace"):
        raise ValueError("dropout with inplace=True is not supported: it returns a new tensor "
                         "(write x = F.dropout(x, p))")
    return p, training, resolve_rng(rng)


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False, *,
            rng: Rng | None = None) -> Tensor:
    """PyTorch's ``F.dropout``: inverted dropout, zero each element with probability ``p``
    and scale the rest by 1/(1-p).

    Returns ``input`` itself, drawing nothing, when ``training`` is False or p == 0. The
    mask is ``rng.uniform(0, 1, input.shape) < p``, from tensorlib's generator when ``rng``
    is None. ``inplace=True`` is refused (ValueError).
    """
    p, training, generator = _dropout_arguments(input, p, training, inplace, rng)
    if not training or p == 0.0:
        return input
    return ops.Dropout.apply(input, multiplier=_dropout_multiplier(input, p, generator))


def dropout_reference(input: Tensor, p: float = 0.5, training: bool = True,
                      inplace: bool = False, *, rng: Rng | None = None) -> Tensor:
    """The primitive twin of ``dropout`` (same draws): input * Tensor(multiplier)."""
    p, training, generator = _dropout_arguments(input, p, training, inplace, rng)
    if not training or p == 0.0:
        return input
    return input * Tensor(_dropout_multiplier(input, p, generator))
