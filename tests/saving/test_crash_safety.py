"""Crash safety: SIGKILL a process at random moments while it saves checkpoints in a loop.

A child process (forked, so it starts in milliseconds with tensorlib already imported)
loads the checkpoint at the target path, then saves generation after generation of a
model, an AdamW and an Rng over it, reporting each completed save through a pipe. The
parent kills it with SIGKILL after a random (seeded) delay, and checks that the path holds
a complete checkpoint that loads: the last one the child reported, or the one after it
(whose rename may have landed just before the kill) - the old one or the new one, never a
mixture and never nothing. The next child starts where the last left off, over whatever
the kill left behind (a stale ``.tmp``), so a crash can never break the next save.
"""

from __future__ import annotations

import os
import select
import signal
import struct
import time
import traceback
import warnings

import numpy as np
import pytest

from tensorlib.engine.splitmix64 import Rng
from tensorlib.nn.module import Module
from tensorlib.nn.parameter import Parameter
from tensorlib.optim import AdamW
from tensorlib.saving.checkpoint import inspect, load, save

pytestmark = pytest.mark.skipif(not hasattr(os, "fork") or not hasattr(signal, "SIGKILL"),
                                reason="needs os.fork and SIGKILL (POSIX)")

KILLS = 25


class Model(Module):
    """About 0.8 MB of parameters, so a save (write + fsync) takes a while and a kill lands
    inside one most of the time."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = Parameter(np.zeros((256, 256), dtype=np.float32))
        self.bias = Parameter(np.zeros(256, dtype=np.float32))


def set_generation(model: Model, optimizer: AdamW, rng: Rng, generation: int) -> None:
    """Make every number that a save writes say which generation it belongs to."""
    for parameter, entry in zip(model.parameters(), optimizer.state, strict=True):
        parameter.data[...] = generation
        entry["step"] = generation
        entry["first_moment"][...] = -generation
        entry["second_moment"][...] = 2 * generation
    rng.state = generation


def generation_objects(generation: int) -> tuple[Model, AdamW, Rng]:
    model = Model()
    optimizer, rng = AdamW(model, lr=1e-3), Rng(0)
    set_generation(model, optimizer, rng, generation)
    return model, optimizer, rng


def loaded_generation(path) -> int:
    """Load ``path`` into fresh objects; return its generation after checking that every
    number in the file belongs to that same generation (a complete, unmixed checkpoint)."""
    model, optimizer, rng = generation_objects(0)
    load(path, model, optimizer, rng)
    generation = rng.state
    for parameter, entry in zip(model.parameters(), optimizer.state, strict=True):
        assert np.all(parameter.data == generation)
        assert entry["step"] == generation
        assert np.all(entry["first_moment"] == -generation)
        assert np.all(entry["second_moment"] == 2 * generation)
    return generation


def child(path, report_fd: int) -> None:
    """Resume from the checkpoint at ``path`` and save newer generations until killed."""
    generation = loaded_generation(path)
    os.write(report_fd, struct.pack("<Q", generation))  # ready: the initial load worked
    model, optimizer, rng = generation_objects(generation)
    while True:
        generation += 1
        set_generation(model, optimizer, rng, generation)
        save(path, model, optimizer, rng)
        os.write(report_fd, struct.pack("<Q", generation))


def run_and_kill(path, delay: float) -> tuple[int, list[int]]:
    """Fork a saving child, SIGKILL it ``delay`` seconds after it is ready; return the
    generation it resumed from and the generations it reported saved."""
    read_fd, write_fd = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads (3.12+)
        pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        try:
            os.close(read_fd)
            child(path, write_fd)
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(1)
    os.close(write_fd)
    status = None
    try:
        ready, _, _ = select.select([read_fd], [], [], 30.0)
        assert ready, "the child did not get ready (its initial load hangs?)"
        time.sleep(delay)
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, \
            f"the child ended on its own (status {status}): it must only stop when killed"
        reported = b""
        while chunk := os.read(read_fd, 1 << 16):
            reported += chunk
    finally:
        os.close(read_fd)
        if status is None:  # a failed check above: never leave the child running
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    numbers = [value for (value,) in struct.iter_unpack("<Q", reported[: len(reported) // 8 * 8])]
    assert numbers, "the child died before reporting its initial load"
    return numbers[0], numbers[1:]


def test_sigkill_during_saves_leaves_the_old_or_the_new_checkpoint(tmp_path):
    path = tmp_path / "run.tlckpt"
    temporary = tmp_path / "run.tlckpt.tmp"
    started = time.perf_counter()
    save(path, *generation_objects(1))
    # Kill within about four saves' time, so a child gets a few saves done on any disk.
    max_delay = max(0.02, 4 * (time.perf_counter() - started))
    delays = Rng(2024).uniform(0.0, max_delay, size=KILLS)
    expected = 1
    interrupted = 0  # kills that left a half-written temporary file behind
    saves = 0
    for kill, delay in enumerate(delays.tolist()):
        resumed_from, completed = run_and_kill(path, delay)
        assert resumed_from == expected, (kill, resumed_from, expected)
        last_reported = completed[-1] if completed else resumed_from
        found = loaded_generation(path)  # complete and unmixed, or this raises
        # The old checkpoint or the new one: the last save the child reported, or the next
        # one, if it was killed between the rename and the report.
        assert found in (last_reported, last_reported + 1), (kill, found, last_reported)
        assert inspect(path)["file_size"] == path.stat().st_size
        interrupted += temporary.exists()
        saves += found - resumed_from
        expected = found
    # The kills really did land inside saves, and the children really did save.
    assert interrupted >= 1, "no kill interrupted a save: the test exercised nothing"
    assert saves >= KILLS // 4, saves
    # A stale temporary file never breaks the next save, and a good save leaves none.
    final = expected + 1
    save(path, *generation_objects(final))
    assert loaded_generation(path) == final
    assert not temporary.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.tlckpt"]
