"""Cross-entropy of logits against integer targets (fused, with its reference twin), the
targets' checks (``token_ids``) and ``one_hot``."""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from tensorlib.engine import ops, validation
from tensorlib.engine.ops.loss import REDUCTIONS
from tensorlib.engine.tensor import Tensor
from tensorlib.engine.typing import Array
from tensorlib.nn.functional.arguments import _check_floating
from tensorlib.nn.functional.softmax import log_softmax_reference


def one_hot(tensor: Any, num_classes: int = -1) -> Tensor:
    """int64 rows of zeros with a 1 at each id: shape ``tensor.shape + (num_classes,)``.
    ``num_classes=-1`` takes the largest id plus one."""
    if not isinstance(tensor, Tensor) or tensor.dtype.kind not in "iu":
        raise TypeError("one_hot takes an integer tensor of class ids, got "
                        f"{getattr(tensor, 'dtype', type(tensor).__name__)}")
    num_classes = validation.integer(num_classes, "one_hot num_classes", minimum=-1)
    ids = tensor.numpy()
    if num_classes == -1:
        if ids.size == 0:
            raise ValueError("one_hot of an empty tensor needs num_classes")
        num_classes = int(ids.max()) + 1
    if ids.size and (ids.min() < 0 or ids.max() >= num_classes):
        raise ValueError(f"one_hot: class ids must lie in [0, {num_classes}), got "
                         f"{int(ids.min())} to {int(ids.max())}")
    return Tensor(np.arange(num_classes) == ids[..., None]).long()


def token_ids(ids: Any, limit: int, what: str = "token id", ignore: int | None = None
              ) -> Array:
    """Validate integer class/token ids against ``[0, limit)`` and return them as int64.

    ``ids`` may be an integer Tensor, an integer numpy array, a nested list or an int.
    Floating-point or boolean ids raise TypeError, ids that require grad raise TypeError,
    and any id outside ``[0, limit)`` raises IndexError naming the first offending value;
    ids equal to ``ignore`` (a padding marker such as -100) are let through as they are.
    """
    if isinstance(ids, Tensor):
        if ids.requires_grad:
            raise TypeError(f"{what}s must not require grad (they are indices, not values)")
        array = ids.numpy()
    elif isinstance(ids, (bool, np.bool_)):
        raise TypeError(f"{what}s must be integers, got a bool")
    elif isinstance(ids, numbers.Integral):
        if not 0 <= int(ids) < limit and int(ids) != ignore:
            raise IndexError(f"{what} {int(ids)} is out of range [0, {limit})")
        array = np.asarray(int(ids), dtype=np.int64)
    else:
        try:
            array = np.asarray(ids)
        except (ValueError, TypeError) as error:
            raise TypeError(f"{what}s must be an integer array or nested list: {error}") from None
        if array.dtype == object:
            raise TypeError(f"{what}s must be a rectangular array of integers, got {ids!r}")
    if array.dtype.kind not in "iu":
        if array.size == 0 and array.dtype == np.float64 and not isinstance(ids, Tensor):
            array = array.astype(np.int64)  # an empty list has numpy's default float dtype
        else:
            raise TypeError(f"{what}s must have an integer dtype, got {array.dtype}")
    if array.size:  # checked before the cast, so a huge uint64 id is named as it is
        bad = (array < 0) | (array >= limit)
        if ignore is not None:
            bad &= array != ignore
        if bad.any():
            first = int(array[bad].reshape(-1)[0])
            position = tuple(int(i) for i in np.argwhere(bad)[0])
            raise IndexError(f"{what} {first} at position {position} is out of range "
                             f"[0, {limit})")
    return array.astype(np.int64, copy=False)


IGNORE_INDEX = -100  # PyTorch's default marker for targets that do not count
def _check_cross_entropy(logits: Any, targets: Any, ignore_index: int = IGNORE_INDEX,
                         reduction: str = "mean", label_smoothing: float = 0.0
                         ) -> tuple[np.ndarray, np.ndarray | None, float]:
    """Checked targets (ignored positions set to class 0), the kept mask (None when nothing
    is ignored) and the smoothing, or a clear error naming what is wrong."""
    _check_floating(logits, "cross_entropy logits")
    if logits.ndim == 0:
        raise ValueError("cross_entropy logits must have a class axis, got a 0-d tensor")
    classes = logits.shape[-1]
    if classes == 0:
        raise ValueError(f"cross_entropy logits have no classes (shape {logits.shape})")
    ignore_index = validation.integer(ignore_index, "cross_entropy ignore_index")
    if not isinstance(reduction, str):
        raise TypeError(f"cross_entropy reduction must be one of {', '.join(REDUCTIONS)}, "
                        f"got {reduction!r}")
    if reduction not in REDUCTIONS:
        raise ValueError(f"cross_entropy reduction must be one of "
                         f"{', '.join(REDUCTIONS)}, got {reduction!r}")
    smoothing = validation.real(label_smoothing, "cross_entropy label_smoothing", low=0.0,
                                high=1.0, high_open=False)
    array = token_ids(targets, classes, what="target", ignore=ignore_index)
    if array.shape != logits.shape[:-1]:
        raise ValueError(f"cross_entropy targets of shape {array.shape} do not match logits "
                         f"of shape {logits.shape} (expected targets of shape "
                         f"{logits.shape[:-1]})")
    if array.size == 0:
        raise ValueError(f"cross_entropy of an empty batch (logits shape {logits.shape})")
    ignored = array == ignore_index
    if not ignored.any():
        return array, None, smoothing
    return np.where(ignored, 0, array), ~ignored, smoothing


def cross_entropy(logits: Tensor, targets: Any, ignore_index: int = IGNORE_INDEX,
                  reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """Cross-entropy between ``logits (..., V)`` and class indices ``targets (...)``.

    ``targets`` holds integers in ``[0, V)`` with shape ``logits.shape[:-1]``, or
    ``ignore_index`` (default -100, PyTorch's) at positions that do not count: padding. With
    ``label_smoothing`` ε the target distribution is (1 - ε)·onehot + ε/V. ``reduction``:
    "mean" (over the positions not ignored; nan if every one is), "sum", or "none" (the
    loss per position, 0 where ignored). The class axis is the last one (PyTorch's is axis
    1 for inputs with more than two axes). Stable for logits of any magnitude; inputs are
    not modified. Non-integer targets raise TypeError, out-of-range ones IndexError.
    """
    (logits,) = ops.CrossEntropy.autocast_inputs(logits)
    array, kept, smoothing = _check_cross_entropy(logits, targets, ignore_index, reduction,
                                                  label_smoothing)
    return ops.CrossEntropy.apply(logits, targets=array, kept=kept, reduction=reduction,
                                  label_smoothing=smoothing)


def cross_entropy_reference(logits: Tensor, targets: Any, ignore_index: int = IGNORE_INDEX,
                            reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """Cross-entropy as a chain of primitives: the loss per position is
    -Σ_c q[c]·log_softmax(logits)[c] for the target distribution q (the smoothed onehot, all
    zeros where ignored), then summed, averaged over the kept positions, or returned."""
    array, kept, smoothing = _check_cross_entropy(logits, targets, ignore_index, reduction,
                                                  label_smoothing)
    classes = logits.shape[-1]
    onehot = np.eye(classes, dtype=logits.dtype)[array]  # (..., V)
    target_distribution = (1.0 - smoothing) * onehot + smoothing / classes
    count = 0
    if kept is not None:
        target_distribution = target_distribution * kept[..., None]
        count = int(kept.sum())
    losses = -(log_softmax_reference(logits)
               * Tensor(target_distribution.astype(logits.dtype))).sum(-1)  # (...)
    if reduction == "none":
        return losses
    if reduction == "sum":
        return losses.sum()
    if kept is None:
        return losses.mean()
    if not count:  # nothing kept: nan, with the zero gradient the fused op gives
        return losses.sum() * 0.0 + math.nan
    return losses.sum() / count
