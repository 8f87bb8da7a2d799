"""A long run: 2,000 training steps of a small Decoder without any growth in memory.

Every step builds a graph, runs backward, frees the saved arrays and updates the model;
nothing of a finished step may stay alive. Three checks, from coarse to fine:

* the graph of a step is gone as soon as its loss is dropped, by reference counting alone
  (no cycles for the garbage collector to find later), and backward frees the saved arrays;
* Python's count of allocated memory blocks after step 2,000 equals the count after step
  200 (within a small slack): one leaked object per step would add 1,800 blocks;
* ``tracemalloc``: the memory that stays allocated over a traced stretch of steps is the
  same at the start of the run (steps 200-250) and at its end (steps 1,950-2,000), and no
  more than the optimizer's moments, which each step replaces. (Tracing slows Python
  several times, so it covers these two windows, not all 2,000 steps.)

Memory is measured after ``gc.collect()``, which also empties CPython's free lists, whose
slow filling would otherwise look like growth.
"""

from __future__ import annotations

import gc
import sys
import tracemalloc
import weakref

import numpy as np
import pytest

from tensorlib import Rng
from tensorlib.data import random_batch
from tensorlib.nn import Decoder, DecoderConfig
from tensorlib.optim import AdamW

pytestmark = pytest.mark.slow

STEPS = 2000
EARLY = 200
WINDOW = 50
BLOCK_SLACK = 200  # allocated blocks; a leak of one object per step adds 1,800
BYTE_SLACK = 8 * 1024


def make_run():
    config = DecoderConfig(vocabulary_size=12, context_length=8, channels=16, heads=2,
                           layers=1)
    model = Decoder(config, rng=Rng(0))
    optimizer = AdamW(model, lr=3e-3, max_grad_norm=1.0)
    data = Rng(1).integers(0, 12, size=(64, 9))  # (N, T + 1)
    inputs, targets = data[:, :-1], data[:, 1:]
    batch_rng = Rng(2)

    def step() -> float:
        x, y = random_batch(batch_rng, 4, inputs, targets)
        optimizer.zero_grad()
        loss = model.loss(x, y)
        loss.backward()
        optimizer.step()
        return loss.item()

    return model, optimizer, step


def graph_nodes(loss) -> list:
    nodes, stack, seen = [], [loss.grad_fn], set()
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen or not hasattr(node, "next"):
            continue
        seen.add(id(node))
        nodes.append(node)
        stack.extend(node.next)
    return nodes


def test_a_step_frees_its_graph_by_reference_counting():
    model, _, _ = make_run()
    data = Rng(3).integers(0, 12, size=(4, 9))
    x, y = data[:, :-1], data[:, 1:]
    gc.collect()
    gc.disable()
    try:
        loss = model.loss(x, y)
        nodes = graph_nodes(loss)
        assert len(nodes) > 15
        assert any(node.saved for node in nodes)
        loss.backward()
        assert all(node.freed and node.saved is None for node in nodes)  # saved arrays gone
        references = [weakref.ref(node) for node in nodes]
        del loss, nodes
        assert all(reference() is None for reference in references)  # no cycles: all gone
    finally:
        gc.enable()


def traced_window(step, steps: int) -> int:
    """Bytes still allocated after ``steps`` traced steps that were allocated during them."""
    gc.collect()
    tracemalloc.start()
    try:
        for _ in range(steps):
            step()
        gc.collect()
        return tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()


def allocated_blocks() -> int:
    gc.collect()
    return sys.getallocatedblocks()


def test_two_thousand_steps_do_not_grow_memory():
    model, optimizer, step = make_run()
    losses = np.full(STEPS - 2 * WINDOW, np.nan)  # preallocated: a list would grow memory
    for index in range(EARLY):
        losses[index] = step()
    blocks_early = allocated_blocks()
    early = traced_window(step, WINDOW)
    for index in range(EARLY, len(losses)):
        losses[index] = step()
    late = traced_window(step, WINDOW)
    blocks_late = allocated_blocks()
    # moments: AdamW replaces both arrays of every parameter at every step
    moments = sum(2 * p.numpy().nbytes for p in model.parameters())
    # A leaked graph per step would hold tens of kilobytes per step (megabytes per window);
    # the fixed slack covers allocator and interpreter caches that vary between machines.
    assert early <= moments + 8 * BYTE_SLACK, (early, moments)
    assert abs(late - early) <= BYTE_SLACK, (early, late)
    assert blocks_late - blocks_early <= BLOCK_SLACK, (blocks_early, blocks_late)
    assert all(np.isfinite(losses))
    assert np.mean(losses[-100:]) < 0.8 * np.mean(losses[:100])  # it did train
    assert all(entry["step"] == STEPS for entry in optimizer.state)
