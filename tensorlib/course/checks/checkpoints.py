"""The checks of notebook 16 (checkpoints): its three exercises, on the lesson's models and
run.

Files are written in a temporary folder of the check's own. The usual slips (a field of the
file format miscounted, the checksum in another spelling, a load before the comparison, the
float32 rounding of a hyperparameter forgotten) are computed here, so that a report names
the one the learner's answer is.
"""

from __future__ import annotations

import os
import tempfile
import zlib
from collections.abc import Callable
from typing import Any

import numpy as np

from tensorlib.course.checks.registry import exercise_check
from tensorlib.course.exercises import Checker
from tensorlib.engine.splitmix64 import Rng
from tensorlib.nn import Linear
from tensorlib.optim import AdamW
from tensorlib.saving import checkpoint

__all__ = ["check_legacy_size", "check_checksums", "check_predicted_learning_rates"]


def _legacy_slips(module: Any) -> dict[str, int]:
    """What the usual miscounts of a TLWEIGHT file give: {what the learner did: bytes}."""
    parameters = list(module.named_parameters())
    records, dims, values, names = len(parameters), sum(p.ndim for _, p in parameters), \
        sum(p.numel() for _, p in parameters), sum(len(n.encode()) for n, _ in parameters)
    right = 16 + 16 * records + names + 4 * dims + 4 * values
    return {
        "the header is 16 bytes: magic (8), version (4) and the parameter count (4)":
            right - 4,
        "TLCKPT's header (20 bytes, with flags): TLWEIGHT has no flags field, 16": right + 4,
        "no header: magic (8), version (4) and parameter count (4) come first": right - 16,
        "4 bytes short per record: the name's length (u32), ndim (u32) and the element count "
        "(u64, 8 bytes) are each stored": right - 4 * records,
        "4 bytes too many per record: the name's length and ndim are u32 (4 bytes), the "
        "element count a u64 (8)": right + 4 * records,
        "the values counted as float64 (8 bytes); the file stores float32, 4 bytes each":
            right + 4 * values,
        "the dims counted as u64 (8 bytes each); they are u32, 4 bytes": right + 4 * dims,
        "the dims are not counted: ndim u32s follow ndim": right - 4 * dims,
        "the name's bytes are not counted: its length, then its UTF-8 bytes": right - names,
    }


@exercise_check("Exercise 1 (legacy_size)", yours="legacy_size")
def check_legacy_size(checker: Checker, legacy_size: Any, model: Any, decoder: Any) -> None:
    """``legacy_size(module)`` against the size of the file save_legacy_weights writes, for
    the lesson's Linear(2, 3), its decoder and a Linear(5, 1) without bias."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "legacy.tlweight")
        for what, module in [("the Linear(2, 3)", model), ("the decoder", decoder),
                             ("a Linear(5, 1) without bias",
                              Linear(5, 1, bias=False, rng=Rng(0)))]:
            with checker.case(what, hint="the header is 16 bytes; each record is name, dims, "
                                         "count, values"):
                checkpoint.save_legacy_weights(path, module)
                checker.equal(legacy_size(module), os.path.getsize(path), "size in bytes",
                              mistakes=_legacy_slips(module))


def _crc(path: str) -> int:
    with open(path, "rb") as file:
        return zlib.crc32(file.read())


def _stored(path: str) -> str:
    with open(path + ".crc32") as file:
        return file.read().strip()


def _same_parameters(module: Any, other: Any) -> bool:
    return all(np.array_equal(a.numpy(), b.numpy()) for a, b in
               zip(module.parameters(), other.parameters(), strict=True))


@exercise_check("Exercise 2 (checksums)", yours=("save_with_checksum", "load_with_checksum"))
def check_checksums(checker: Checker, save_with_checksum: Any, load_with_checksum: Any,
                    make_run: Callable[[int], tuple[Any, Any, Any]], decoder: Any, adamw: Any,
                    generator: Any) -> None:
    """``save_with_checksum`` writes the file's CRC-32 as 8 hex digits beside it;
    ``load_with_checksum`` loads an intact file and refuses one whose lowest mantissa bit
    flipped, leaving the model as it was."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "with_crc.tlckpt")
        with checker.case("the checksum file holds the CRC-32 as 8 hex digits",
                          hint="format(zlib.crc32(data), '08x')"):
            save_with_checksum(path, decoder, adamw, generator)
            checker.true(os.path.exists(path + ".crc32"), f"no file {os.path.basename(path)}"
                         ".crc32 beside the checkpoint", "the checksum is not written: open "
                         "path + '.crc32' for writing and write it there")
            crc = _crc(path)
            checker.equal(_stored(path), f"{crc:08x}", "the .crc32 file", mistakes={
                "the hex digits in capitals: format(crc, '08x') writes lowercase":
                    f"{crc:08X}",
                "not padded to 8 digits: format(crc, '08x')": f"{crc:x}",
                "the CRC-32 in decimal: write it in hex, format(crc, '08x')": str(crc),
                "a 0x in front: 8 hex digits alone, format(crc, '08x')": hex(crc)})
        with checker.case("an intact file loads",
                          hint="compare the CRC you compute with the stored one"):
            save_with_checksum(path, decoder, adamw, generator)
            fresh, fresh_adamw, fresh_rng = make_run(7)
            load_with_checksum(path, fresh, fresh_adamw, fresh_rng)
            checker.true(_same_parameters(fresh, decoder), "after loading, the parameters "
                         "should equal the saved decoder's", "checkpoint.load is not called "
                         "(or not with the module) once the checksums agree")
        with checker.case("the lowest-mantissa-bit flip is refused and changes nothing",
                          hint="raise ValueError before calling checkpoint.load"):
            save_with_checksum(path, decoder, adamw, generator)
            with open(path, "rb") as file:
                damaged = bytearray(file.read())
            damaged[checkpoint.inspect(path)["parameters"][0]["offset"]] ^= 0x01
            with open(path, "wb") as file:
                file.write(bytes(damaged))
            fresh, fresh_adamw, fresh_rng = make_run(7)
            before = [p.numpy().copy() for p in fresh.parameters()]
            refused = False
            try:
                load_with_checksum(path, fresh, fresh_adamw, fresh_rng)
            except ValueError:
                refused = True
            checker.true(refused, "load_with_checksum loaded a damaged file without an error",
                         "the CRC-32 is not compared: compute it from the file's bytes, read the "
                         "stored one, and raise ValueError when they differ")
            checker.true(all(np.array_equal(a, p.numpy()) for a, p in
                             zip(before, fresh.parameters(), strict=True)),
                         "a refused load must leave the model as it was",
                         "checkpoint.load runs before the comparison: compare first, then load")


@exercise_check("Exercise 3 (the learning rate after a load)", yours="predicted_learning_rates")
def check_predicted_learning_rates(checker: Checker, predicted_learning_rates: Any,
                                   make_run: Callable[[int], tuple[Any, Any, Any]],
                                   run_path: str) -> None:
    """Each predicted lr against the lr of a fresh AdamW (lr=1e-3, then 3e-3) after loading
    ``run_path``."""
    stored = float(np.float32(3e-3))
    for fresh_lr in (1e-3, 3e-3):
        with checker.case(f"a fresh AdamW with lr={fresh_lr}",
                          hint="the file holds float32 values; when is the live value kept?"):
            fresh, _, fresh_rng = make_run(7)
            fresh_adamw = AdamW(fresh, lr=fresh_lr, weight_decay=0.01, max_grad_norm=1.0)
            checkpoint.load(run_path, fresh, fresh_adamw, fresh_rng)
            answers = predicted_learning_rates()
            checker.true(isinstance(answers, dict) and fresh_lr in answers,
                         f"predicted_learning_rates() should return a dict with the key "
                         f"{fresh_lr}, received {answers!r}", "the keys are the fresh lrs, "
                         "1e-3 and 3e-3, as numbers")
            slips = ({"the fresh optimizer's lr kept: the file's lr replaces it unless the two "
                      "agree as float32": fresh_lr,
                      "3e-3 exactly: the file holds float32, and 3e-3 comes back as "
                      "float(np.float32(3e-3))": 3e-3} if fresh_lr != 3e-3 else
                     {"the stored float32: when the live lr rounds to exactly the stored "
                      "float32, the live value, 3e-3, is kept": stored})
            checker.equal(answers[fresh_lr], fresh_adamw.lr, "lr after load", mistakes=slips)
