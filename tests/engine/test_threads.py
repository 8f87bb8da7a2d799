"""The kernels' thread pool (tensorlib.engine.kernels.threads): the same bits for any thread count.

Every threaded kernel, alone and inside a whole Decoder training step (forward, backward,
AdamW, several steps), gives bit-identical outputs and gradients at 1, 2 and 3 threads, at
sizes above the threshold where the pool is used (and checked to be used); small arrays and
reference mode never start the pool.
"""

import contextlib
import os
import subprocess
import sys
import threading
from concurrent.futures import Future

import numpy as np
import pytest

import tensorlib as tl
from tensorlib import Rng
from tensorlib.engine import kernels
from tensorlib.engine.kernels import threads
from tensorlib.nn import Decoder, DecoderConfig, Parameter
from tensorlib.nn.utils.clip_grad import gradient_norm_of_arrays
from tensorlib.optim import AdamW

from helpers import train_recording

THREAD_COUNTS = (1, 2, 3)


def normal(*shape, seed=0, dtype=np.float32, scale=1.0):
    return (np.random.default_rng(seed).normal(size=shape) * scale).astype(dtype)


@pytest.fixture(autouse=True)
def small_arrays_split():
    """The pool at this file's sizes: the threshold of its first design, 64K elements (the
    rules are the same at any threshold; tensorlib's own is larger, where it measured to
    pay)."""
    default = threads.MIN_PARALLEL_ELEMENTS
    threads.MIN_PARALLEL_ELEMENTS = 1 << 16
    yield
    threads.MIN_PARALLEL_ELEMENTS = default


@contextlib.contextmanager
def thread_count(count):
    previous = tl.get_num_threads()
    tl.set_num_threads(count)
    try:
        yield
    finally:
        tl.set_num_threads(previous)


def at_each_thread_count(compute):
    """``compute()`` at 1, 2 and 3 threads, from a stopped pool each time; returns the results
    and the pool's size after each run."""
    results, sizes = [], []
    for count in THREAD_COUNTS:
        threads.shutdown()
        with thread_count(count):
            results.append(compute())
        sizes.append(threads.pool_size())
    return results, sizes


def assert_bit_identical(results):
    def flatten(value):
        if isinstance(value, dict):
            return [item for key in sorted(value) for item in flatten(value[key])]
        if isinstance(value, (tuple, list)):
            return [item for part in value for item in flatten(part)]
        return [value]

    first = flatten(results[0])
    for other in results[1:]:
        other = flatten(other)
        assert len(other) == len(first)
        for a, b in zip(first, other, strict=True):
            if a is None:
                assert b is None
            else:
                a, b = np.asarray(a), np.asarray(b)
                assert a.dtype == b.dtype and a.shape == b.shape
                assert a.tobytes() == b.tobytes()  # bit for bit, nan included


# --------------------------------------------------------------------------------- the pool
def test_thread_count_comes_from_its_variable_else_blass_else_the_cores():
    env = threads.threads_from_environment
    cores = threads.available_cores()
    assert env({"TENSORLIB_NUM_THREADS": "3"}) == 3
    assert env({"TENSORLIB_NUM_THREADS": " 2 "}) == 2
    for bad in ("", "0", "-1", "two", "1.5", "4,2"):
        assert env({"TENSORLIB_NUM_THREADS": bad}) == cores
    assert env({}) == cores  # PyTorch's default: every core the process may run on
    assert env({"OMP_NUM_THREADS": "3"}) == 3  # as PyTorch reads
    assert env({"OMP_NUM_THREADS": "3", "OPENBLAS_NUM_THREADS": "5"}) == 5  # as OpenBLAS reads
    assert env({"OMP_NUM_THREADS": "3", "OPENBLAS_NUM_THREADS": "x"}) == 3
    assert env({"OPENBLAS_NUM_THREADS": "5", "TENSORLIB_NUM_THREADS": "2"}) == 2


def test_a_fresh_process_reads_the_variables_and_leaves_blas_as_the_program_set_it():
    code = ("import threadpoolctl, tensorlib as tl; "
            "blas = [p['num_threads'] for p in threadpoolctl.threadpool_info() "
            "if p['user_api'] == 'blas']; print(tl.get_num_threads(), blas[0])")
    env = {**os.environ, "OMP_NUM_THREADS": "2", "OPENBLAS_NUM_THREADS": "1"}
    env.pop("TENSORLIB_NUM_THREADS", None)
    for value, expected in ((None, "1 1"), ("3", "3 1")):
        if value is not None:
            env["TENSORLIB_NUM_THREADS"] = value
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True)
        assert out.stdout.strip() == expected  # importing tensorlib changed no BLAS thread


def test_set_num_threads_sets_blas_threads_too():
    code = ("import threadpoolctl, tensorlib as tl; tl.set_num_threads(2); "
            "blas = [p['num_threads'] for p in threadpoolctl.threadpool_info() "
            "if p['user_api'] == 'blas']; print(tl.get_num_threads(), blas[0])")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == "2 2"


def test_set_num_threads_is_pytorchs_and_validates():
    before = tl.get_num_threads()
    assert tl.set_num_threads(3) is None  # as torch.set_num_threads
    try:
        assert tl.get_num_threads() == 3 and kernels.get_num_threads() == 3
        tl.set_num_threads(np.int64(1))
        assert tl.get_num_threads() == 1
        for bad, error in ((0, ValueError), (-2, ValueError), (1.5, TypeError),
                           (True, TypeError), ("2", TypeError), (None, TypeError)):
            with pytest.raises(error, match="number of threads must be a positive integer"):
                tl.set_num_threads(bad)
        assert tl.get_num_threads() == 1  # a refused value changes nothing
    finally:
        tl.set_num_threads(before)


def test_row_blocks_cover_the_rows_in_near_equal_contiguous_blocks_two_per_thread():
    big = threads.MIN_PARALLEL_ELEMENTS
    assert threads.BLOCKS_PER_THREAD == 2
    with thread_count(3):
        assert threads.row_blocks(12, big) == [(0, 2), (2, 4), (4, 6), (6, 8), (8, 10),
                                               (10, 12)]
        assert threads.row_blocks(10, big) == [(0, 1), (1, 3), (3, 5), (5, 6), (6, 8),
                                               (8, 10)]
        assert threads.row_blocks(2, big) == [(0, 1), (1, 2)]  # at most one block per row
        assert threads.row_blocks(10, big - 1) == [(0, 10)]  # small: one block
        assert threads.row_blocks(0, big) == [(0, 0)]
        with tl.reference_mode():
            assert threads.row_blocks(10, big) == [(0, 10)]
    with thread_count(1):
        assert threads.row_blocks(10, 10 * big) == [(0, 10)]


def test_for_row_blocks_runs_every_block_with_the_callers_errstate_and_raises_its_error():
    threads.shutdown()
    big = threads.MIN_PARALLEL_ELEMENTS
    out = np.zeros(9)
    with thread_count(3):
        def fill(start, stop):
            out[start:stop] = np.arange(start, stop)
            np.divide(np.ones(1), np.zeros(1))  # warns (an error here) unless silenced
            return start

        with np.errstate(divide="ignore"):
            assert threads.for_row_blocks(fill, 9, big) == [0, 1, 3, 4, 6, 7]
        np.testing.assert_array_equal(out, np.arange(9))
        assert threads.pool_size() == 2  # the calling thread ran the first block

        def fail(start, stop):
            if start == 4:
                raise ArithmeticError(f"block {start}")
            return start

        with pytest.raises(ArithmeticError, match="block 4"):
            threads.for_row_blocks(fail, 9, big)
        with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
            threads.for_row_blocks(fill, 9, big)


def test_for_cache_blocks_visits_every_slice_once_at_any_thread_count():
    big = threads.MIN_PARALLEL_ELEMENTS
    for count in THREAD_COUNTS:
        with thread_count(count):
            for size, block in ((10, 3), (9, 3), (1, 5), (0, 4)):
                seen, lock = [], threading.Lock()

                def visit(part, seen=seen, lock=lock):
                    with lock:
                        seen.append((part.start, part.stop))

                threads.for_cache_blocks(visit, size, block, big)
                expected = [(start, min(start + block, size)) for start in range(0, size, block)]
                assert sorted(seen) == expected


def test_blocks_that_no_worker_started_run_on_the_calling_thread(monkeypatch):
    class StalledPool:  # as if every core were busy: no worker ever starts a block
        def submit(self, *args):
            return Future()

    monkeypatch.setattr(threads, "_pool_with", lambda workers: StalledPool())
    ran_on = []

    def block(start, stop):
        ran_on.append(threading.get_ident())
        return start

    with thread_count(3):
        assert threads.for_row_blocks(block, 9, threads.MIN_PARALLEL_ELEMENTS) == [0, 1, 3, 4,
                                                                                  6, 7]
    assert ran_on == [threading.get_ident()] * 6


def test_small_arrays_and_reference_mode_never_start_the_pool():
    threads.shutdown()
    config = DecoderConfig(vocabulary_size=11, context_length=8, channels=16, heads=2,
                           layers=1)
    with thread_count(2):
        train_steps(config, batch=4, steps=2)  # every array below the threshold
        assert threads.pool_size() == 0
        with tl.reference_mode():
            train_steps(BIG, batch=BIG_BATCH, steps=2)
        assert threads.pool_size() == 0
        train_steps(BIG, batch=BIG_BATCH, steps=1)
        assert threads.pool_size() == 1


# --------------------------------------------------------------------------------- each kernel
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("affine", [(True, True), (True, False), (False, True), (False, False)])
def test_layer_norm_kernel_is_the_same_at_any_thread_count(dtype, affine):
    x = normal(7, 150, 96, seed=1, dtype=dtype, scale=3.0) + dtype(2.0)
    x[0, 0] = 5.0  # a constant row
    weight = normal(96, seed=2, dtype=dtype) if affine[0] else None
    bias = normal(96, seed=3, dtype=dtype) if affine[1] else None
    grad = normal(*x.shape, seed=4, dtype=dtype)

    def compute():
        out, normalized, inverse_std = kernels.layer_norm(x, weight, bias, 1e-5)
        return out, kernels.layer_norm_backward(grad, normalized, inverse_std, weight,
                                                (True, affine[0], affine[1]))

    results, sizes = at_each_thread_count(compute)
    assert_bit_identical(results)
    assert sizes == [0, 1, 2]


@pytest.mark.parametrize("offset, queries", [(0, 64), (5, 48), (16, 1)])
def test_causal_softmax_kernel_is_the_same_at_any_thread_count(offset, queries):
    batch = 8 if queries > 1 else 1024  # 64K scores or more
    scores = normal(batch, 4, queries, offset + queries, seed=5, scale=4.0)
    scores[1, 2, -1, 0] = 1e30  # one row that needs a shift, in one block only
    results, sizes = at_each_thread_count(lambda: kernels.causal_softmax_(scores.copy(), offset))
    assert_bit_identical(results)
    assert sizes[1:] == [1, 2]


def test_softmax_backward_kernel_is_the_same_at_any_thread_count():
    probabilities = kernels.causal_softmax_(normal(8, 4, 48, 48, seed=5, scale=3.0))
    grad = normal(8, 4, 48, 48, seed=6)  # 72K elements
    results, sizes = at_each_thread_count(
        lambda: kernels.softmax_backward_(grad.copy(), probabilities, 0.125))
    assert_bit_identical(results)
    assert sizes == [0, 1, 2]


def test_causal_softmax_kernel_on_a_strided_array_writes_its_input():
    scores = normal(8, 4, 48, 96, seed=6)[..., ::2]  # (8, 4, 48, 48), strided

    def compute():
        strided = np.repeat(scores, 2, axis=-1)[..., ::2]  # a fresh strided copy of scores
        out = kernels.causal_softmax_(strided)
        assert out is strided and not out.flags.c_contiguous
        return out.copy()

    results, sizes = at_each_thread_count(compute)
    assert_bit_identical(results)
    assert sizes == [0, 1, 2]
    np.testing.assert_allclose(results[0], kernels.causal_softmax_(scores.copy()), rtol=1e-6)


@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
def test_cross_entropy_kernels_are_the_same_at_any_thread_count(label_smoothing):
    logits = normal(3000, 40, seed=7, scale=5.0)
    targets = Rng(8).integers(0, 40, size=3000)
    kept = Rng(9).integers(0, 5, size=3000) > 0  # a fifth of the rows ignored
    row_weights = normal(3000, 1, seed=10)

    def compute():
        log_probs, losses = kernels.cross_entropy_rows(logits, targets, label_smoothing)
        return (log_probs, losses,
                kernels.cross_entropy_backward(log_probs, targets, label_smoothing,
                                               np.float32(0.25), kept),
                kernels.cross_entropy_backward(log_probs, targets, label_smoothing,
                                               row_weights, None))

    results, sizes = at_each_thread_count(compute)
    assert_bit_identical(results)
    assert sizes == [0, 1, 2]


def test_gelu_kernel_is_the_same_at_any_thread_count():
    x = normal(5, 70_001, seed=11, scale=4.0)  # six 64K blocks, the last one short
    x[0, :3] = (np.inf, -np.inf, np.nan)
    results, sizes = at_each_thread_count(lambda: kernels.gelu_float32(x, with_slope=True))
    assert_bit_identical(results)
    assert sizes == [0, 1, 2]


def test_embedding_backward_kernel_is_the_same_at_any_thread_count():
    ids = Rng(12).integers(0, 50, size=5000)
    rows = normal(5000, 64, seed=13)
    results, sizes = at_each_thread_count(lambda: kernels.rows_summed_by_id(ids, rows, 60))
    assert_bit_identical(results)
    assert sizes == [0, 1, 2]
    full = np.zeros((60, 64), np.float32)
    np.add.at(full, ids, rows)
    np.testing.assert_allclose(results[0], full, rtol=1e-5, atol=1e-5)


def test_adamw_kernel_is_the_same_at_any_thread_count():
    shapes = [(300, 250), (200,), (17, 31)]  # 75K entries

    def compute():
        parameters = [Parameter(normal(*shape, seed=i)) for i, shape in enumerate(shapes)]
        optimizer = AdamW(parameters, lr=1e-2, weight_decay=0.1, max_grad_norm=1.0)
        for step in range(3):
            for i, parameter in enumerate(parameters):
                parameter.grad = normal(*parameter.shape, seed=100 * step + i)
            optimizer.step()
        return [p.data for p in parameters], [(s["first_moment"], s["second_moment"])
                                              for s in optimizer.state]

    results, sizes = at_each_thread_count(compute)
    assert_bit_identical(results)
    assert sizes == [0, 1, 2]


def test_bias_and_layer_norm_weight_gradients_are_the_same_at_any_thread_count():
    """Sums over rows (a bias gradient, layer norm's weight and bias gradients) are einsum's:
    OpenBLAS's product against a vector of ones, used before, rounded float32 (4096, 128)
    differently at 3 threads than at 1."""
    x = normal(4096, 128, seed=13)
    grad = normal(4096, 128, seed=14)
    weight, bias = normal(128, seed=15), normal(128, seed=16)

    def compute():
        out, normalized, inverse_std = kernels.layer_norm(x, weight, bias, 1e-5)
        return (out, kernels.column_sums(grad),
                kernels.layer_norm_backward(grad, normalized, inverse_std, weight,
                                            (True, True, True)))

    results, _ = at_each_thread_count(compute)
    assert_bit_identical(results)


def test_the_gradient_norm_is_the_same_at_any_thread_count():
    """clip_grad_norm_ and AdamW's max_grad_norm add the squares with einsum: BLAS's dot
    splits a long vector between its threads and rounds differently at each count."""
    grads = [normal(300_000, seed=11, dtype=np.float64), normal(7, 9, seed=12)]
    results, _ = at_each_thread_count(lambda: gradient_norm_of_arrays(grads))
    assert results[0] == results[1] == results[2]
    np.testing.assert_allclose(results[0], np.sqrt(sum((g.astype(np.float64) ** 2).sum()
                                                       for g in grads)), rtol=1e-13)


# --------------------------------------------------------------------------------- a training run
BIG = DecoderConfig(vocabulary_size=64, context_length=32, channels=64, heads=4, layers=2)
BIG_BATCH = 32  # 1024 positions: every threaded kernel's array has 64K elements or more


def train_steps(config, batch, steps, dtype=np.float32):
    """A fresh Decoder trained ``steps`` AdamW steps: every loss, the first step's
    gradients, the final parameters and the logits after training."""
    model = Decoder(config, rng=Rng(0), dtype=dtype)
    optimizer = AdamW(model, lr=1e-2, weight_decay=0.1, max_grad_norm=1.0)
    data = Rng(1).integers(0, config.vocabulary_size,
                           size=(steps, batch, config.context_length + 1))
    losses, first_grads = train_recording(model, optimizer, data)
    with tl.no_grad():
        logits = model(data[0, :, :-1]).data
    parameters = {name: p.numpy().copy() for name, p in model.named_parameters()}
    return losses, first_grads, parameters, logits


def test_the_benchmark_sizes_are_above_the_threshold():
    rows, channels = BIG_BATCH * BIG.context_length, BIG.channels
    smallest = min(rows * channels,  # layer norm, embedding backward
                   rows * BIG.vocabulary_size,  # cross-entropy
                   BIG_BATCH * BIG.heads * BIG.context_length ** 2)  # causal softmax
    assert smallest >= threads.MIN_PARALLEL_ELEMENTS


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_decoder_trains_bit_identically_at_one_two_and_three_threads(dtype):
    results, sizes = at_each_thread_count(lambda: train_steps(BIG, BIG_BATCH, 3, dtype))
    assert_bit_identical(results)
    assert sizes == [0, 1, 2]  # the pool did the work at 2 and 3 threads
    assert np.isfinite(results[0][0]).all() and results[0][0][-1] < results[0][0][0]
