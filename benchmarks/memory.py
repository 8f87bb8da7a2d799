"""Peak memory of one training step of case (a), measured in a fresh process per library.

Run as ``python benchmarks/memory.py tensorlib|torch BATCH``; prints one JSON line. Two
methods, each with its limits (see docs/performance.md):

* ``allocator``: bytes the library's array allocator handed out at the step's peak, counted
  from the start of the step. numpy reports its array buffers to ``tracemalloc``; PyTorch's
  CPU allocator reports to its profiler (``profile_memory=True``, the ``Total Allocated``
  of its memory events). Python objects (graph nodes, tensors' headers) are included for
  tensorlib, not for PyTorch, whose graph lives in C++.
* ``rss``: growth of the process's resident set during the step (``VmHWM`` after resetting
  it through ``/proc/self/clear_refs``, minus ``VmRSS`` before). Counts everything, the
  same way for both, but also the C allocator's caching, so it is coarse. Linux only.

Before measuring, the model and optimizer are built and two warm-up steps run (so the
optimizer's moments exist), and the gradients are dropped (``zero_grad``).
"""

from __future__ import annotations

import gc
import json
import os
import re
import sys
import tempfile
import tracemalloc
from collections.abc import Callable
from typing import Any


def _status_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status") as handle:
            match = re.search(rf"^{field}:\s+(\d+) kB", handle.read(), re.MULTILINE)
    except OSError:
        return None
    return int(match.group(1)) if match else None


def _reset_peak_rss() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
        return True
    except OSError:
        return False


def rss_growth(step: Callable[[], Any]) -> int | None:
    """Bytes by which the resident set's peak during ``step()`` exceeds its size before."""
    gc.collect()
    if not _reset_peak_rss():
        return None
    before = _status_kib("VmRSS")
    step()
    peak = _status_kib("VmHWM")
    if before is None or peak is None:
        return None
    return max(peak - before, 0) * 1024


def tracemalloc_peak(step: Callable[[], Any]) -> int:
    """Peak bytes traced by ``tracemalloc`` during ``step()`` (numpy buffers included)."""
    gc.collect()
    tracemalloc.start()
    try:
        step()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def torch_allocator_peak(step: Callable[[], Any]) -> int:
    """Peak of PyTorch's CPU allocator during ``step()``, from its profiler's memory events."""
    from torch.profiler import ProfilerActivity, profile

    gc.collect()
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as recorder:
        step()
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "trace.json")
        recorder.export_chrome_trace(path)
        with open(path) as handle:
            events = json.load(handle)["traceEvents"]
    totals = [e["args"]["Total Allocated"] for e in events if e.get("name") == "[memory]"]
    return max([0, *totals])


def measure(library: str, batch: int) -> dict[str, Any]:
    import numpy as np
    import twins

    from tensorlib.optim import AdamW

    config = twins.decoder_config()
    batches = twins.token_batches(batch, config.context_length, 3)
    model = twins.make_decoder(config)
    if library == "tensorlib":
        optimizer = AdamW(model, lr=1e-3)

        def step() -> None:
            ids, targets = batches[0]
            loss = model.loss(ids, targets)
            loss.backward()
            optimizer.step()

        def clear() -> None:
            optimizer.zero_grad()

        allocator = tracemalloc_peak
    else:
        import torch

        twin = twins.torch_decoder_class()(config)
        twins.copy_weights_to_torch(model, twin)
        del model
        torch_optimizer = torch.optim.AdamW(twin.parameters(), lr=1e-3, weight_decay=0.01)
        torch_batches = [(torch.from_numpy(i), torch.from_numpy(t)) for i, t in batches]

        def step() -> None:
            ids, targets = torch_batches[0]
            loss = twin.loss(ids, targets)
            loss.backward()
            torch_optimizer.step()

        def clear() -> None:
            torch_optimizer.zero_grad(set_to_none=True)

        allocator = torch_allocator_peak
    for _ in range(2):
        clear()
        step()
    clear()
    rss = rss_growth(step)
    clear()
    peak = allocator(step)
    return {"library": library, "batch": batch, "allocator_bytes": int(peak),
            "rss_bytes": rss, "numpy": np.__version__}


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    print(json.dumps(measure(sys.argv[1], int(sys.argv[2]))))
