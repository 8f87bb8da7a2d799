"""Every speed trick of tensorlib, in one place.

The ops (``tensorlib.ops``), the backward engine (``tensorlib.autograd``) and the optimizers
are written as their formulas. Where numpy can compute the same thing faster, by a fitted
approximation, a BLAS call instead of a reduction, a sort instead of a scatter, one update
over all parameters at once, a kernel from here does it, put in the one kernel table
(``tensorlib.kernel_table``) for the class whose plain code it stands in for: an op
(``stand_ins``: a subclass of the op that replaces its steps, registered with
``tensorlib.ops.function.register_kernel``), the cached forwards of ``Decoder.generate``
(``tensorlib.nn.transformer.register_cached_step``), AdamW's update
(``tensorlib.optim.optimizer.register_step_kernel``); and the engine's sole-owner check
(``sole_owner``, installed with ``tensorlib.autograd.set_unshared_check``). They take those
places when ``register_all()`` runs, once, from ``tensorlib/__init__.py``. Each kernel's
docstring says what it computes, the plain formula it stands in for, how accurate it is,
and which section of docs/performance.md holds its measurements.

``tensorlib.reference_mode()`` switches them all off: the engine then runs on the plain
paths, with no kernel and no kernel cache (test_reference_mode.py, in tests/contracts, holds
the two modes in agreement, and tests/engine/test_kernels.py each kernel to its formula).

The kernels: sums along rows and columns (``row_sums``, ``blas_row_sum``,
``blas_column_sum``, in ``tensorlib.kernels.reductions``), and fast paths for a whole
formula, standing in for an op's step (``stand_ins``) or called where ``enabled()`` says
they may run: ``gelu_float32``, ``causal_softmax_``, ``layer_norm`` and
``layer_norm_backward``, ``cross_entropy_rows`` and ``cross_entropy_backward``,
``shared_matmul`` and ``shared_matmul_backward``, ``rows_summed_by_id``, ``adamw_step``,
``sole_owner``, and ``decoder_step`` (one cached generation step of a Decoder on raw
arrays, no graph).

The heavy elementwise ones (GELU, layer norm, the causal softmax, cross-entropy, AdamW's
update, embedding's backward) can split a large array's rows into contiguous blocks run at
once on one small thread pool (``tensorlib.kernels.threads``), with the same results, bit for
bit, for any number of threads. They run on the calling thread alone unless a program asks
for more (``set_num_threads(n)``, or ``TENSORLIB_NUM_THREADS``): on the machine where it was
measured, more threads made a training step slower.

The kernels import the backend and ``validation``; ``mode`` and ``holders`` import
``tensorlib.kernel_table`` (its switch); ``stand_ins`` imports the ops it subclasses,
``register_kernel`` and ``tensorlib.autograd`` (``Context``, the check it installs),
``generation`` the Decoder's modules and ``register_cached_step``, and ``adamw`` the
optimizer and ``register_step_kernel``. Nothing else in tensorlib imports the kernels but
the package itself, to call ``register_all``: every arrow points from the kernels down to
what they stand in for (``scripts/import_graph.py`` prints the layers).
"""

from tensorlib.kernels import (  # noqa: F401
    adamw,
    gelu,
    generation,
    reductions,
    softmax,
    stand_ins,
    threads,
)
from tensorlib.kernels.adamw import adamw_step
from tensorlib.kernels.gelu import erf_float32, gelu_float32
from tensorlib.kernels.generation import decoder_step
from tensorlib.kernels.holders import sole_owner
from tensorlib.kernels.loss import cross_entropy_backward, cross_entropy_rows
from tensorlib.kernels.matmul import shared_matmul, shared_matmul_backward
from tensorlib.kernels.mode import enabled, is_reference_mode, reference_mode, set_reference_mode
from tensorlib.kernels.normalization import layer_norm, layer_norm_backward
from tensorlib.kernels.reductions import (
    blas_column_sum,
    blas_row_sum,
    constant_vector,
    row_sums,
)
from tensorlib.kernels.scatter import rows_summed_by_id
from tensorlib.kernels.softmax import causal_softmax_
from tensorlib.kernels.threads import get_num_threads, set_num_threads

__all__ = [
    "adamw_step", "blas_column_sum", "blas_row_sum", "cache_entries", "causal_softmax_",
    "clear_caches",
    "constant_vector", "cross_entropy_backward", "cross_entropy_rows", "decoder_step",
    "enabled", "erf_float32", "gelu_float32", "get_num_threads", "is_reference_mode",
    "layer_norm", "layer_norm_backward", "reference_mode", "register_all", "row_sums",
    "rows_summed_by_id", "set_num_threads", "set_reference_mode", "shared_matmul",
    "shared_matmul_backward", "sole_owner", "threads",
]


def register_all() -> None:
    """Put every kernel in its place: the stand-ins in the op table (``stand_ins``), the
    engine's sole-owner check, the Decoder's cached generation step (``generation``) and
    AdamW's flat update (``adamw``).
    Called once, by ``tensorlib/__init__.py``: importing tensorlib does this and nothing
    else on the side."""
    stand_ins.register()
    generation.register()
    adamw.register()


def clear_caches() -> None:
    """Empty every kernel cache (constant vectors, causal masks, GELU's folded coefficients,
    AdamW's flat buffers, which are rebuilt from the optimizer's state when next needed)."""
    reductions._CONSTANT_VECTORS.clear()
    softmax._additive_causal_mask.cache_clear()
    softmax._unshifted_range.cache_clear()
    gelu._gelu32_coefficients.cache_clear()
    adamw._BUFFERS.clear()


def cache_entries() -> dict[str, int]:
    """How many entries each kernel cache holds (all 0 after ``clear_caches()`` and any work
    done in reference mode)."""
    return {
        "constant_vectors": len(reductions._CONSTANT_VECTORS),
        "causal_masks": softmax._additive_causal_mask.cache_info().currsize,
        "unshifted_ranges": softmax._unshifted_range.cache_info().currsize,
        "gelu_coefficients": gelu._gelu32_coefficients.cache_info().currsize,
        "adamw_buffers": len(adamw._BUFFERS),
    }
