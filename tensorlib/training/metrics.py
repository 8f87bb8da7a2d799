"""How well a classifier did, counted: the confusion matrix (numpy only, no drawing).

:func:`confusion_matrix` counts, for each true class, how often each class was predicted;
:func:`tensorlib.viz.plot_confusion_matrix` draws it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tensorlib.engine import validation
from tensorlib.training.layer_statistics import as_array

__all__ = ["class_ids", "class_names", "confusion_matrix"]


def class_names(classes: int | Sequence[Any] | None, largest_id: int) -> list[str]:
    """The names of the K classes: ``classes`` as strings if it is a sequence of names,
    ``"0" .. "K-1"`` if it is a count K, or ``"0" .. str(largest_id)`` when it is None."""
    if classes is None:
        return [str(c) for c in range(largest_id + 1)]
    if isinstance(classes, (bool, str, bytes)):
        raise TypeError("classes must be a count or a sequence of class names, got "
                        f"{type(classes).__name__} {classes!r}")
    if isinstance(classes, (int, np.integer)):
        return [str(c) for c in range(validation.positive_integer(int(classes), "classes"))]
    names = [str(c) for c in classes]
    if not names:
        raise ValueError("classes is empty")
    return names


def class_ids(values: Any, what: str) -> np.ndarray:
    """``values`` (an array, a Tensor or a list) as 1-D int64 class ids; ValueError or
    TypeError naming ``what`` otherwise."""
    array = np.asarray(as_array(values, what))
    if array.ndim != 1:
        raise ValueError(f"{what} must be 1-D (one class id per example), got shape "
                         f"{array.shape}")
    if array.size and array.dtype.kind not in "iu":
        raise TypeError(f"{what} must hold integer class ids, got dtype {array.dtype}")
    return array.astype(np.int64)


def confusion_matrix(labels: Any, predictions: Any,
                     classes: int | Sequence[Any] | None = None) -> np.ndarray:
    """``counts (K, K)`` int64: ``counts[t, p]`` is how many examples of true class t were
    predicted as class p. ``labels`` and ``predictions`` are 1-D integer ids of one length;
    ``classes`` is K or K class names (default: the largest id + 1)."""
    truth = class_ids(labels, "labels")
    guess = class_ids(predictions, "predictions")
    if truth.shape != guess.shape:
        raise ValueError(f"labels has {truth.size} entries, predictions {guess.size}")
    largest = int(max(truth.max(initial=-1), guess.max(initial=-1)))
    count = len(class_names(classes, largest))
    outside = (truth < 0) | (truth >= count) | (guess < 0) | (guess >= count)
    if outside.any():
        index = int(np.argmax(outside))
        raise ValueError(f"class ids must lie in 0..{count - 1}; example {index} has label "
                         f"{truth[index]} and prediction {guess[index]}")
    counts = np.zeros((count, count), dtype=np.int64)
    np.add.at(counts, (truth, guess), 1)
    return counts
