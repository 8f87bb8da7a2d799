"""Cross-entropy's per-row work (log-softmax, picked losses, the gradient) over row blocks."""

from __future__ import annotations

from tensorlib.engine.backend import array_module
from tensorlib.engine.kernels.reductions import row_sums
from tensorlib.engine.kernels.threads import cpu_elements, for_row_blocks
from tensorlib.engine.typing import Array

__all__ = ["cross_entropy_backward", "cross_entropy_rows"]


def cross_entropy_rows(logits: Array, targets: Array,
                       label_smoothing: float) -> tuple[Array, Array]:
    """For ``logits (N, V)`` and class ids ``targets (N,)``: ``(log_probs (N, V),
    losses (N,))``, with loss_n = (1 - ε)·(-log p_n[y_n]) + ε·mean_c(-log p_n[c]).

    Stands in for: ``tensorlib.engine.ops.loss.CrossEntropy.forward``'s plain code before the
    ignored positions and the reduction: log p = s - log Σ exp s with s = x - max(x), the
    target's -log p picked per row.
    How: the same passes over contiguous blocks of rows on the kernels' threads
    (``tensorlib.engine.kernels.threads.for_row_blocks``), the sums over a row by einsum
    (``row_sums``), each row by itself; the caller sums the losses over all rows on its own
    thread, so the loss is the same for any thread count.
    Accuracy: a few ulps from the plain form (einsum adds a row in another order than
    numpy's pairwise sum; tests/engine/test_kernels.py).
    Measured: docs/performance.md, "Two threads for the elementwise kernels".
    """
    xp = array_module(logits)
    rows, classes = logits.shape
    log_probs = xp.empty_like(logits)
    losses = xp.empty(rows, dtype=logits.dtype)

    def block(start: int, stop: int) -> None:
        source, out = logits[start:stop], log_probs[start:stop]
        xp.subtract(source, source.max(axis=-1, keepdims=True), out=out)  # s
        log_sums = xp.log(row_sums(xp.exp(out)))
        out -= log_sums[:, None]  # log p
        picked = -out[xp.arange(stop - start), targets[start:stop]]
        if label_smoothing:
            mean = row_sums(out)
            mean *= logits.dtype.type(1.0 / classes)
            picked = (1.0 - label_smoothing) * picked - label_smoothing * mean
        losses[start:stop] = picked

    for_row_blocks(block, rows, cpu_elements(logits))
    return log_probs, losses


def cross_entropy_backward(log_probs: Array, targets: Array, label_smoothing: float,
                           weight: Array | float, kept: Array | None) -> Array:
    """The gradient of ``cross_entropy_rows``'s losses weighted by ``weight`` (one number, or
    one per row as an (N, 1) array), zero in the rows where ``kept`` (None: all kept) is
    False: (softmax - ((1 - ε)·onehot(y) + ε/V)) · w, a new (N, V) array.

    Stands in for: ``tensorlib.engine.ops.loss.CrossEntropy.backward``'s plain code.
    How: per block of rows on the kernels' threads, exp(log p) written into the result and
    corrected in place; every row computed alone (no sum over rows).
    Accuracy: the plain form's operations in the same order: bit-identical to it.
    Measured: docs/performance.md, "Two threads for the elementwise kernels".
    """
    xp = array_module(log_probs)
    rows, classes = log_probs.shape
    probs = xp.empty_like(log_probs)
    per_row = getattr(weight, "ndim", 0) == 2

    def block(start: int, stop: int) -> None:
        out = probs[start:stop]
        xp.exp(log_probs[start:stop], out=out)
        if label_smoothing:
            out -= label_smoothing / classes
        out[xp.arange(stop - start), targets[start:stop]] -= 1.0 - label_smoothing
        out *= weight[start:stop] if per_row else weight  # type: ignore[index]  # (N, 1) array
        if kept is not None:
            out[~kept[start:stop]] = 0.0  # exactly 0, even for a nan weight

    for_row_blocks(block, rows, cpu_elements(log_probs))
    return probs
