"""The engine's speed tricks, in one place.

The ops (:mod:`tensorlib.engine.ops`) and the backward engine
(:mod:`tensorlib.engine.autograd`) are written as their formulas. Where numpy can compute
the same thing faster, by a fitted approximation, a BLAS call instead of a reduction, a sort
instead of a scatter, a kernel from here does it, put in the one kernel table
(:mod:`tensorlib.engine.kernel_table`) for the op whose plain code it stands in for
(``fast_ops``: a subclass of the op that replaces its steps, registered with
``tensorlib.engine.ops.function.register_kernel``), and the engine's sole-owner check
(``sole_owner``, installed with ``tensorlib.engine.autograd.set_unshared_check``). They take
those places when :func:`register_all` runs, once, from ``tensorlib/__init__.py``. Each
kernel's docstring says what it computes, the plain formula it stands in for, how accurate
it is, and which section of docs/performance.md holds its measurements. The layers above
the engine keep their own fast paths beside their plain code: AdamW's update over every
parameter at once (:mod:`tensorlib.optim.adamw_flat`) and the decoder's cached generation
step (:mod:`tensorlib.models.decoder_step`).

``tensorlib.reference_mode()`` switches them all off: the engine then runs on the plain
paths, with no kernel and no kernel cache (test_reference_mode.py, in tests/contracts, holds
the two modes in agreement, and tests/engine/test_kernels.py each kernel to its formula).

The kernels: sums along rows and columns (``row_sums``, ``column_sums``, in
``reductions``), and fast paths for a whole formula, standing in for
an op's step (``fast_ops``) or called where ``enabled()`` says they may run:
``gelu_float32``, ``causal_softmax_`` and ``softmax_backward_``, ``layer_norm`` and
``layer_norm_backward``, ``cross_entropy_rows`` and ``cross_entropy_backward``,
``shared_matmul`` and ``shared_matmul_backward``, ``rows_summed_by_id``, ``max_pool_2x2``
and ``max_pool_2x2_backward``, ``image_gradient_batch_last`` (a convolution's input
gradient), ``sole_owner``.

The heavy elementwise ones (GELU, layer norm, the causal softmax and its backward,
cross-entropy, embedding's backward, and AdamW's update above) can split a large array's rows into
contiguous blocks run at once on one small thread pool (``threads``), with the same results,
bit for bit, for any number of threads. ``threads`` owns the count,
``tensorlib.set_num_threads(n)`` (PyTorch's, defaulting to the cores available), which sets
BLAS's threads too; the pool splits only arrays of ``threads.MIN_PARALLEL_ELEMENTS``
elements or more, the size from which it measured to pay.

The kernels import the backend, ``validation`` and the kernel table; ``fast_ops`` imports
the ops it subclasses, ``register_kernel`` and ``tensorlib.engine.autograd`` (``Context``,
the check it installs). Nothing else in the engine imports them: every arrow points from the
kernels down to what they stand in for (``scripts/import_graph.py`` prints the layers).
"""

from tensorlib.engine.kernel_table import (
    enabled,
    is_reference_mode,
    reference_mode,
    set_reference_mode,
)
from tensorlib.engine.kernels import (  # noqa: F401
    fast_ops,
    gelu,
    softmax,
    threads,
)
from tensorlib.engine.kernels.convolution import image_gradient_batch_last
from tensorlib.engine.kernels.gelu import erf_float32, gelu_float32
from tensorlib.engine.kernels.loss import cross_entropy_backward, cross_entropy_rows
from tensorlib.engine.kernels.matmul import shared_matmul, shared_matmul_backward
from tensorlib.engine.kernels.normalization import layer_norm, layer_norm_backward
from tensorlib.engine.kernels.pooling import max_pool_2x2, max_pool_2x2_backward
from tensorlib.engine.kernels.reductions import column_sums, row_sums
from tensorlib.engine.kernels.scatter import rows_summed_by_id
from tensorlib.engine.kernels.softmax import causal_softmax_, softmax_backward_
from tensorlib.engine.kernels.sole_owner import sole_owner
from tensorlib.engine.kernels.threads import get_num_threads, set_num_threads

__all__ = [
    "cache_entries", "causal_softmax_", "clear_caches", "column_sums",
    "cross_entropy_backward", "cross_entropy_rows", "enabled", "erf_float32",
    "gelu_float32", "get_num_threads", "image_gradient_batch_last", "is_reference_mode",
    "layer_norm", "layer_norm_backward", "max_pool_2x2", "max_pool_2x2_backward",
    "reference_mode", "register_all", "row_sums", "rows_summed_by_id", "set_num_threads",
    "set_reference_mode", "shared_matmul", "shared_matmul_backward", "softmax_backward_",
    "sole_owner", "threads",
]


def register_all() -> None:
    """Put every engine kernel in its place: the stand-ins in the op table (``fast_ops``)
    and the engine's sole-owner check. Called once, by ``tensorlib/__init__.py``."""
    fast_ops.register()


def clear_caches() -> None:
    """Empty every engine kernel cache (causal masks, the no-shift ranges, GELU's folded
    coefficients)."""
    softmax._additive_causal_mask.cache_clear()
    softmax._unshifted_range.cache_clear()
    gelu._gelu32_coefficients.cache_clear()


def cache_entries() -> dict[str, int]:
    """How many entries each engine kernel cache holds (all 0 after ``clear_caches()`` and
    any work done in reference mode)."""
    return {
        "causal_masks": softmax._additive_causal_mask.cache_info().currsize,
        "unshifted_ranges": softmax._unshifted_range.cache_info().currsize,
        "gelu_coefficients": gelu._gelu32_coefficients.cache_info().currsize,
    }
