"""keep_freed_memory: argument checks, the non-glibc path, and its effect on page faults."""

import subprocess
import sys
import textwrap

import pytest

from tensorlib.engine import memory


@pytest.mark.parametrize("kwargs, error, words", [
    ({"trim_threshold": -1}, ValueError, "trim_threshold"),
    ({"trim_threshold": 2**31}, ValueError, "trim_threshold"),
    ({"mmap_threshold": 33 * 2**20}, ValueError, "mmap_threshold"),
    ({"mmap_threshold": 1.5}, TypeError, "mmap_threshold"),
    ({"trim_threshold": True}, TypeError, "trim_threshold"),
])
def test_bad_thresholds_raise_before_anything_changes(monkeypatch, kwargs, error, words):
    def fail() -> None:
        raise AssertionError("the C library was reached before the arguments were checked")

    monkeypatch.setattr(memory, "_glibc", fail)
    with pytest.raises(error, match=words):
        memory.keep_freed_memory(**kwargs)


def test_without_glibc_nothing_is_changed(monkeypatch):
    monkeypatch.setattr(memory, "_glibc", lambda: None)
    assert memory.keep_freed_memory() is False


PROBE = textwrap.dedent("""
    import resource, sys
    import numpy as np
    from tensorlib import memory
    from tensorlib.nn import Decoder, DecoderConfig
    from tensorlib import Rng
    from tensorlib.optim import AdamW

    config = DecoderConfig(vocabulary_size=28, context_length=64, channels=128, heads=4,
                           layers=2)
    model = Decoder(config, rng=Rng(0))
    optimizer = AdamW(model)
    ids = Rng(1).integers(0, 28, size=(12, 65)).astype(np.int64)

    def faults_per_step(steps=4):
        for _ in range(2):
            step()
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(steps):
            step()
        return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / steps

    def step():
        optimizer.zero_grad()
        model.loss(ids[:, :-1], ids[:, 1:]).backward()
        optimizer.step()

    default = faults_per_step()
    applied = memory.keep_freed_memory()
    kept = faults_per_step()
    print(applied, default, kept)
""")


@pytest.mark.skipif(memory._glibc() is None, reason="glibc only (Linux)")
def test_keeping_freed_memory_stops_the_page_faults_of_each_step():
    # In a process of its own (the setting is process-wide): by default every step faults
    # its activations' pages back in; afterwards almost none.
    result = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                            check=True, timeout=300)
    applied, default, kept = result.stdout.split()
    assert applied == "True"
    assert float(default) > 1000
    assert float(kept) < float(default) / 10
