"""Splitting a data set and cutting it into mini-batches (of rows, or of windows of a token
stream), all seeded by ``tensorlib.Rng``."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import TypeVar

import numpy as np
from numpy.typing import ArrayLike

from tensorlib.engine import validation
from tensorlib.engine.splitmix64 import Rng

__all__ = ["batches", "random_batch", "random_windows", "train_validation_test_split"]

Items = TypeVar("Items", list, np.ndarray)


def _check_batch_size(batch_size: int) -> int:
    return validation.positive_integer(batch_size, "batch_size")


def _aligned_arrays(arrays: Sequence) -> tuple[list[np.ndarray], int]:
    """The inputs as numpy arrays, and their shared first dimension (or ValueError)."""
    if not arrays:
        raise ValueError("expected at least one array")
    converted = [np.asarray(array) for array in arrays]
    for index, array in enumerate(converted):
        if array.ndim == 0:
            raise ValueError(f"array {index} is a scalar; arrays need a first (batch) dimension")
    lengths = [len(array) for array in converted]
    if len(set(lengths)) != 1:
        raise ValueError(f"arrays must share their first dimension, got lengths {lengths}")
    return converted, lengths[0]


def train_validation_test_split(
    items: Items,
    fractions: tuple[float, float, float] = (0.8, 0.1, 0.1),
    seed: int = 0,
) -> tuple[Items, Items, Items]:
    """Shuffle ``items`` with ``Rng(seed).permutation`` and cut it into three parts.

    ``fractions`` are three non-negative numbers summing to 1 (within 1e-9). The cut points
    are ``round(f0 * n)`` and ``round((f0 + f1) * n)``, so every item lands in exactly one
    part. A numpy array gives three arrays (indexed along the first axis); any other
    sequence gives three lists. The same seed always gives the same split.
    """
    values = [float(fraction) for fraction in fractions]
    if len(values) != 3:
        raise ValueError(f"fractions must have 3 entries (train, validation, test), got {values}")
    if any(not math.isfinite(value) or value < 0 for value in values):
        raise ValueError(f"fractions must be finite and non-negative, got {values}")
    if abs(sum(values) - 1.0) > 1e-9:
        raise ValueError(f"fractions must sum to 1, got {values} (sum {sum(values)!r})")
    n = len(items)
    order = Rng(seed).permutation(n)
    first_cut = round(values[0] * n)
    second_cut = min(round((values[0] + values[1]) * n), n)
    parts = (order[:first_cut], order[first_cut:second_cut], order[second_cut:])
    if isinstance(items, np.ndarray):
        return tuple(items[part] for part in parts)
    return tuple([items[i] for i in part.tolist()] for part in parts)  # type: ignore[return-value]


def batches(
    *arrays: ArrayLike,
    batch_size: int,
    rng: Rng | None = None,
    shuffle: bool = True,
    drop_last: bool = False,
) -> Iterator[tuple[np.ndarray, ...]]:
    """One epoch of aligned mini-batches: yields a tuple with one slice of each array.

    All arrays must share their first dimension. With ``shuffle`` (the default) the order
    is ``rng.permutation(n)``, drawn when ``batches`` is called (``rng`` is then required);
    without it batches are consecutive views in the original order. The last batch may be
    smaller unless ``drop_last``. Arguments are checked at the call, not at the first
    ``next``.

    >>> x, y = np.arange(10).reshape(5, 2), np.arange(5)
    >>> [len(xb) for xb, yb in batches(x, y, batch_size=2, shuffle=False)]
    [2, 2, 1]
    """
    converted, n = _aligned_arrays(arrays)
    batch_size = _check_batch_size(batch_size)
    if shuffle:
        if not isinstance(rng, Rng):
            raise TypeError(f"shuffle=True needs rng to be a tensorlib Rng, got {rng!r}")
        order = rng.permutation(n)
    else:
        order = None
    stop = n - n % batch_size if drop_last else n
    return _generate_batches(converted, order, batch_size, stop)


def _generate_batches(
    arrays: list[np.ndarray], order: np.ndarray | None, batch_size: int, stop: int
) -> Iterator[tuple[np.ndarray, ...]]:
    for start in range(0, stop, batch_size):
        end = min(start + batch_size, stop)
        if order is None:
            yield tuple(array[start:end] for array in arrays)
        else:
            indices = order[start:end]
            yield tuple(array[indices] for array in arrays)


def random_batch(rng: Rng, batch_size: int, *arrays: ArrayLike) -> tuple[np.ndarray, ...]:
    """One batch for step-based training: the same random rows of every array.

    Draws ``batch_size`` row indices with ``rng.integers(0, n, size=batch_size)`` (with
    replacement, as in makemore) and returns a tuple with those rows of each array.
    """
    if not isinstance(rng, Rng):
        raise TypeError(f"rng must be a tensorlib Rng, got {rng!r}")
    batch_size = _check_batch_size(batch_size)
    converted, n = _aligned_arrays(arrays)
    if n == 0:
        raise ValueError("cannot draw a batch from empty arrays")
    indices = rng.integers(0, n, size=batch_size)
    return tuple(array[indices] for array in converted)


def random_windows(stream: np.ndarray, block_size: int, batch_size: int,
                   rng: Rng) -> tuple[np.ndarray, np.ndarray]:
    """One batch for step-based training on a token stream: ``batch_size`` windows of
    ``block_size + 1`` ids starting at random offsets of ``stream`` (drawn as
    :func:`random_batch` draws rows, with replacement), as inputs ``window[:-1]`` and
    next-token targets ``window[1:]``, both ``(batch_size, block_size)``.

    :func:`tensorlib.data.stream_windows` cuts the same windows at fixed offsets instead.
    ValueError unless ``stream`` is 1-D and holds at least ``block_size + 1`` ids.
    """
    block_size = validation.positive_integer(block_size, "block_size")
    stream = np.asarray(stream)
    if stream.ndim != 1 or len(stream) < block_size + 1:
        raise ValueError(f"stream must be 1-D with at least block_size + 1 = {block_size + 1} "
                         f"ids, got shape {stream.shape}")
    windows = np.lib.stride_tricks.sliding_window_view(stream, block_size + 1)  # (W, T+1)
    (chosen,) = random_batch(rng, batch_size, windows)                           # (B, T+1)
    return chosen[:, :-1], chosen[:, 1:]
