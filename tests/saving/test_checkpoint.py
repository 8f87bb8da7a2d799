"""TLCKPT checkpoints: exact format, round trips, resume, corruption, atomic saves."""

from __future__ import annotations

import json
import math
import os
import pathlib
import struct
import time
import tracemalloc

import numpy as np
import pytest

import tensorlib.saving.checkpoint as checkpoint
from tensorlib import no_grad
from tensorlib.engine.splitmix64 import Rng
from tensorlib.nn import Decoder, DecoderConfig
from tensorlib.nn.module import Module
from tensorlib.nn.parameter import Parameter
from tensorlib.optim import SGD, AdamW
from tensorlib.saving.checkpoint import CheckpointError, inspect, load, save, save_legacy_weights


# =============================================================================== fixtures
class Head(Module):
    def __init__(self, rng: Rng) -> None:
        super().__init__()
        self.weight = Parameter(rng.normal(0.0, 1.0, size=(3, 1)))
        self.scale = Parameter(rng.normal(0.0, 1.0, size=(1,)), trainable=False)


class Tiny(Module):
    """Names: weight (2, 3), bias (3,), head.weight (3, 1), head.scale (1,) frozen."""

    def __init__(self, seed: int) -> None:
        super().__init__()
        rng = Rng(seed)
        self.weight = Parameter(rng.normal(0.0, 1.0, size=(2, 3)))
        self.bias = Parameter(rng.normal(0.0, 1.0, size=(3,)))
        self.head = Head(rng)


def make_trained(seed: int = 1, steps: int = 2):
    """A Tiny model, an AdamW that has taken ``steps`` steps, and an advanced Rng."""
    model = Tiny(seed)
    optimizer = AdamW(model, lr=1e-2, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1,
                      max_grad_norm=1.0)
    grads = Rng(seed + 100)
    for _ in range(steps):
        for parameter in model.parameters(include_frozen=False):
            parameter.grad = grads.normal(0.0, 1.0, size=parameter.shape)
        optimizer.step()
    rng = Rng(seed + 1000)
    rng.next_u64(size=seed + 3)
    return model, optimizer, rng


def make_fresh(seed: int = 7):
    model = Tiny(seed)
    return model, AdamW(model, lr=1e-2, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1,
                        max_grad_norm=1.0), Rng(seed)


def snapshot(model, optimizer=None, rng=None):
    """Everything a load could change, as bytes (so -0.0 and bit patterns count)."""
    snap = {"params": [(name, p.dtype.str, p.shape, p.numpy().tobytes(), p.version)
                       for name, p in model.named_parameters()]}
    if optimizer is not None:
        snap["config"] = optimizer.config()
        snap["state"] = [(entry["step"], entry["first_moment"].tobytes(),
                          entry["second_moment"].tobytes()) for entry in optimizer.state]
    if rng is not None:
        snap["rng"] = rng.state
    return snap


def same_values(a, b) -> bool:
    """Parameter values, optimizer state and rng equal (versions ignored)."""
    strip = dict(a, params=[entry[:4] for entry in a["params"]])
    return strip == dict(b, params=[entry[:4] for entry in b["params"]])


# ============================================================ an independent test-side encoder
def encode(params, *, adamw=None, rng_state=None, magic=b"TLCKPT\0\0", version=1,
           flags=None, legacy=False):
    """Build checkpoint bytes field by field, recording ``(start, stop, kind)`` spans.

    ``params``: dicts with ``name`` (str or raw bytes), ``shape``, ``values`` and optional
    ``count``/``ndim`` overrides. ``adamw``: ``{"config": six floats, "entries": [dicts with
    name, step, first, second, optional count]}``.
    """
    out = bytearray()
    spans = []

    def put(kind, raw):
        spans.append((len(out), len(out) + len(raw), kind))
        out.extend(raw)

    def put_name(name):
        raw = name if isinstance(name, bytes) else name.encode("utf-8")
        put("structure", struct.pack("<I", len(raw)))
        put("structure", raw)

    def put_floats(kind, values):
        for value in np.asarray(values, dtype=np.float64).ravel():
            put(kind, struct.pack("<f", value))

    if flags is None:
        flags = (1 if adamw is not None else 0) | (2 if rng_state is not None else 0)
    put("structure", magic)
    put("structure", struct.pack("<I", version))
    if not legacy:
        put("structure", struct.pack("<I", flags))
    put("structure", struct.pack("<I", len(params)))
    for entry in params:
        shape = entry["shape"]
        put_name(entry["name"])
        put("structure", struct.pack("<I", entry.get("ndim", len(shape))))
        put("structure", struct.pack(f"<{len(shape)}I", *shape))
        put("structure", struct.pack("<Q", entry.get("count", math.prod(shape))))
        put_floats("value", entry["values"])
    if adamw is not None:
        for value in adamw["config"]:
            put("config", struct.pack("<f", value))
        put("structure", struct.pack("<I", len(adamw["entries"])))
        for entry in adamw["entries"]:
            put_name(entry["name"])
            put("step", struct.pack("<Q", entry["step"]))
            put("structure", struct.pack("<Q", entry.get("count", np.size(entry["first"]))))
            put_floats("first", entry["first"])
            put_floats("second", entry["second"])
    if rng_state is not None:
        put("rng", struct.pack("<Q", rng_state))
    return bytes(out), spans


def encode_live(model, optimizer=None, rng=None):
    params = [{"name": n, "shape": p.shape, "values": p.data}
              for n, p in model.named_parameters()]
    adamw = None
    if optimizer is not None:
        names = {id(p): n for n, p in model.named_parameters()}
        b1, b2 = optimizer.betas
        adamw = {"config": (optimizer.lr, b1, b2, optimizer.eps, optimizer.weight_decay,
                            optimizer.max_grad_norm),
                 "entries": [{"name": names[id(p)], "step": s["step"], "first": s["first_moment"],
                              "second": s["second_moment"]}
                             for p, s in zip(optimizer.parameters, optimizer.state, strict=True)]}
    return encode(params, adamw=adamw, rng_state=None if rng is None else rng.state)


def write(path, data: bytes):
    pathlib.Path(path).write_bytes(data)
    return path


# =============================================================================== format
def test_saved_bytes_match_the_documented_layout(tmp_path):
    model, optimizer, rng = make_trained()
    for args in [(), (optimizer,), (None, rng), (optimizer, rng)]:
        path = tmp_path / "c.tlckpt"
        save(path, model, *args)
        expected, _ = encode_live(model, *args)
        assert path.read_bytes() == expected
    assert path.read_bytes()[:20] == b"TLCKPT\0\0" + struct.pack("<III", 1, 3, 4)
    assert not (tmp_path / "c.tlckpt.tmp").exists()


def test_legacy_layout_is_written_and_loaded(tmp_path):
    model, _, _ = make_trained()
    path = tmp_path / "w.bin"
    save_legacy_weights(path, model)
    params = [{"name": n, "shape": p.shape, "values": p.data} for n, p in model.named_parameters()]
    expected, _ = encode(params, magic=b"TLWEIGHT", legacy=True)
    assert path.read_bytes() == expected
    # a hand-built legacy file loads into a fresh model
    target, optimizer, rng = make_fresh()
    load(write(tmp_path / "hand.bin", expected), target)
    assert same_values(snapshot(target), snapshot(model))
    # a legacy file has no AdamW or RNG sections to give
    before = snapshot(target, optimizer, rng)
    for kwargs in ({"optimizer": optimizer}, {"rng": rng}):
        with pytest.raises(CheckpointError, match="TLWEIGHT file has no"):
            load(path, target, **kwargs)
        assert snapshot(target, optimizer, rng) == before
    assert inspect(path)["format"] == "TLWEIGHT"


# =============================================================================== round trips
@pytest.mark.parametrize("with_optimizer", [False, True])
@pytest.mark.parametrize("with_rng", [False, True])
def test_round_trip(tmp_path, with_optimizer, with_rng):
    model, optimizer, rng = make_trained()
    target, target_optimizer, target_rng = make_fresh()
    assert not same_values(snapshot(model, optimizer, rng),
                           snapshot(target, target_optimizer, target_rng))
    path = str(tmp_path / "ckpt")  # str paths work as well as PathLike
    save(path, model, optimizer if with_optimizer else None, rng if with_rng else None)
    untouched = snapshot(target, target_optimizer, target_rng)
    versions = [p.version for p in target.parameters()]
    load(path, target, target_optimizer if with_optimizer else None,
         target_rng if with_rng else None)
    assert same_values(snapshot(target), snapshot(model))
    assert [p.version for p in target.parameters()] == [v + 1 for v in versions]
    if with_optimizer:
        assert snapshot(target, target_optimizer)["state"] == snapshot(model, optimizer)["state"]
        assert target_optimizer.config() == optimizer.config()
        assert [s["step"] for s in target_optimizer.state] == [2, 2, 2, 0]
    else:
        assert snapshot(target, target_optimizer)["state"] == untouched["state"]
    assert target_rng.state == (rng.state if with_rng else untouched["rng"])


def test_next_step_after_load_matches(tmp_path):
    model, optimizer, _ = make_trained()
    save(tmp_path / "c", model, optimizer)
    target, target_optimizer, _ = make_fresh()
    load(tmp_path / "c", target, target_optimizer)
    for m, o in ((model, optimizer), (target, target_optimizer)):
        grads = Rng(5)
        for parameter in m.parameters(include_frozen=False):
            parameter.grad = grads.normal(0.0, 1.0, size=parameter.shape)
        o.step()
    assert same_values(snapshot(target, target_optimizer), snapshot(model, optimizer))


def test_sections_not_asked_for_are_validated_and_skipped(tmp_path):
    model, optimizer, rng = make_trained()
    path = tmp_path / "c"
    save(path, model, optimizer, rng)
    target, target_optimizer, target_rng = make_fresh()
    before = snapshot(target, target_optimizer, target_rng)
    load(path, target)
    after = snapshot(target, target_optimizer, target_rng)
    assert after["state"] == before["state"] and after["rng"] == before["rng"]
    assert same_values(snapshot(target), snapshot(model))
    # a corrupt skipped section still fails the whole load
    data = bytearray(path.read_bytes())
    data[-9] = 0xFF  # last byte of the final second moment: becomes NaN or negative
    target2, _, _ = make_fresh()
    before2 = snapshot(target2)
    with pytest.raises(CheckpointError, match="second moments"):
        load(write(tmp_path / "bad", bytes(data)), target2)
    assert snapshot(target2) == before2


def test_missing_sections_are_errors(tmp_path):
    model, optimizer, rng = make_trained()
    save(tmp_path / "p", model)
    target, target_optimizer, target_rng = make_fresh()
    before = snapshot(target, target_optimizer, target_rng)
    with pytest.raises(CheckpointError, match="no AdamW section"):
        load(tmp_path / "p", target, target_optimizer)
    with pytest.raises(CheckpointError, match="no RNG section"):
        load(tmp_path / "p", target, rng=target_rng)
    assert snapshot(target, target_optimizer, target_rng) == before


def test_config_precision_and_application(tmp_path):
    model = Tiny(1)
    optimizer = AdamW(model, lr=1e-3, betas=(0.9, 0.999))
    save(tmp_path / "c", model, optimizer)
    # the same hyperparameters, stored as float32, leave the live float64 values as they were
    fresh = Tiny(3)
    same = AdamW(fresh, lr=1e-3, betas=(0.9, 0.999))
    load(tmp_path / "c", fresh, same)
    assert same.lr == 1e-3 and same.betas == (0.9, 0.999)
    # different ones are taken from the file
    other = Tiny(4)
    different = AdamW(other, lr=0.5, betas=(0.5, 0.5), weight_decay=0.0)
    load(tmp_path / "c", other, different)
    assert different.lr == float(np.float32(1e-3)) and different.betas == (
        float(np.float32(0.9)), float(np.float32(0.999)))
    assert different.weight_decay == float(np.float32(0.01))


def test_inspect_describes_without_a_module(tmp_path):
    model, optimizer, rng = make_trained()
    save(tmp_path / "c", model, optimizer, rng)
    info = inspect(tmp_path / "c")
    assert info["format"] == "TLCKPT" and info["version"] == 1 and info["flags"] == 3
    assert [(p["name"], p["shape"], p["nbytes"]) for p in info["parameters"]] == [
        ("weight", (2, 3), 24), ("bias", (3,), 12), ("head.weight", (3, 1), 12),
        ("head.scale", (1,), 4)]
    data = (tmp_path / "c").read_bytes()
    first = info["parameters"][0]
    stored = data[first["offset"]:first["offset"] + 24]
    assert stored == model.weight.numpy().astype("<f4").tobytes()
    assert [p["step"] for p in info["adamw"]["parameters"]] == [2, 2, 2, 0]
    assert info["adamw"]["config"]["beta1"] == float(np.float32(0.8))
    assert info["rng_state"] == rng.state and info["file_size"] == len(data)


# =============================================================================== resume
def _resume_setup(seed: int):
    """A small Decoder with dropout (drawing from ``rng``), its AdamW, the Rng and a loss."""
    config = DecoderConfig(vocabulary_size=11, context_length=6, channels=8, heads=2, layers=2,
                           dropout=0.2)
    rng = Rng(seed)
    model = Decoder(config, rng=rng)  # initialises from rng, then its dropouts draw from it
    optimizer = AdamW(model, lr=1e-2, weight_decay=0.05, max_grad_norm=1.0)

    def loss_fn(step):
        ids = Rng(10_000 + step).integers(0, 11, size=(3, 7))  # batch depends on the step only
        return model.loss(ids[:, :-1], ids[:, 1:])

    return model, optimizer, rng, loss_fn


def _train(setup, start, stop):
    model, optimizer, _, loss_fn = setup
    losses = []
    for step in range(start, stop):
        optimizer.zero_grad()
        loss = loss_fn(step)
        loss.backward()
        optimizer.step()
        losses.append(loss.data.item())
    return losses


def test_resume_is_bit_identical(tmp_path):
    n, m = 6, 6
    straight = _train(_resume_setup(0), 0, n + m)

    first = _resume_setup(0)
    head = _train(first, 0, n)
    save(tmp_path / "r", first[0], first[1], first[2])
    assert head == straight[:n]

    resumed = _resume_setup(123)  # fresh objects with different weights and rng
    load(tmp_path / "r", resumed[0], resumed[1], resumed[2])
    tail = _train(resumed, n, n + m)
    assert tail == straight[n:]

    # controls: leaving out the RNG or the optimizer state changes the trajectory
    for keep_optimizer, keep_rng in ((True, False), (False, True)):
        partial = _resume_setup(123)
        load(tmp_path / "r", partial[0], partial[1] if keep_optimizer else None,
             partial[2] if keep_rng else None)
        assert _train(partial, n, n + m) != straight[n:]


# =============================================================================== corruption
def _full_file(tmp_path):
    model, optimizer, rng = make_trained()
    save(tmp_path / "full", model, optimizer, rng)
    data = (tmp_path / "full").read_bytes()
    _, spans = encode_live(model, optimizer, rng)
    assert encode_live(model, optimizer, rng)[0] == data
    return data, spans


def _serve_from_memory(monkeypatch):
    """Make ``load`` read the bytes in the returned box instead of the file (fast loops)."""
    box = {}
    monkeypatch.setattr(checkpoint, "_read_file", lambda path: box["data"])
    return box


def test_truncation_at_every_offset_is_rejected_and_changes_nothing(tmp_path, monkeypatch):
    data, _ = _full_file(tmp_path)
    model, _, _ = make_trained()
    legacy = tmp_path / "legacy"
    save_legacy_weights(legacy, model)
    target, optimizer, rng = make_fresh()
    before = snapshot(target, optimizer, rng)
    with pytest.raises(CheckpointError, match="truncated"):  # once through a real file
        load(write(tmp_path / "cut", data[:-1]), target, optimizer, rng)
    box = _serve_from_memory(monkeypatch)
    for source, kwargs in ((data, {"optimizer": optimizer, "rng": rng}),
                           (legacy.read_bytes(), {})):
        for length in range(len(source)):
            box["data"] = source[:length]
            with pytest.raises(CheckpointError):
                load("unused", target, **kwargs)
            assert snapshot(target, optimizer, rng) == before, length
    assert len(data) > 300


def test_byte_flips_are_rejected_or_loaded_faithfully(tmp_path, monkeypatch):
    """Structure bytes (magic, version, flags, counts, names, dims): every flip is an error.

    Value bytes (floats, steps, rng state) carry no redundancy, so a flip there either makes a
    value invalid (non-finite, negative second moment, bad AdamW config) and is rejected, or
    it loads exactly what the flipped file says: saving the result reproduces the flipped bytes.
    """
    data, spans = _full_file(tmp_path)
    box = _serve_from_memory(monkeypatch)
    kind_of = {}
    for start, stop, kind in spans:
        for offset in range(start, stop):
            kind_of[offset] = (kind, start)
    assert sorted(kind_of) == list(range(len(data)))
    target, optimizer, rng = make_fresh()
    before = snapshot(target, optimizer, rng)
    resaved = tmp_path / "resaved"
    outcomes = {"rejected": 0, "loaded": 0}
    rejected_values = set()
    for offset in range(len(data)):
        kind, start = kind_of[offset]
        for mask in (0xFF, 0x01, 0x40):  # 0x40 on a float's top byte can make it inf/NaN
            flipped = bytearray(data)
            flipped[offset] ^= mask
            box["data"] = flipped = bytes(flipped)
            if kind in ("value", "first", "second"):
                (number,) = struct.unpack_from("<f", flipped, start)
                must_fail = not math.isfinite(number) or (kind == "second" and number < 0)
            elif kind == "config":
                (number,) = struct.unpack_from("<f", flipped, start)
                must_fail = None if math.isfinite(number) else True  # range checks: either
            else:
                must_fail = kind == "structure"
            try:
                load("unused", target, optimizer, rng)
            except CheckpointError:
                assert must_fail is not False, (offset, mask, kind)
                assert snapshot(target, optimizer, rng) == before, (offset, mask)
                outcomes["rejected"] += 1
                rejected_values.add(kind)
                continue
            assert must_fail is not True, (offset, mask, kind)
            if outcomes["loaded"] % 50 == 0:  # the real save, now and then (it is slower)
                save(resaved, target, optimizer, rng)
                assert resaved.read_bytes() == flipped, (offset, mask, kind)
            assert encode_live(target, optimizer, rng)[0] == flipped, (offset, mask, kind)
            outcomes["loaded"] += 1
            target, optimizer, rng = make_fresh()  # same seed: equal to `before` again
    assert outcomes["rejected"] > len(data) and outcomes["loaded"] > 100
    # some flips made invalid values (non-finite, negative second moments); the first moments
    # here are too small for one flipped byte to reach inf (test_adamw_section_rejections)
    assert {"value", "second", "config"} <= rejected_values


def _crafted(tmp_path, data):
    target, optimizer, rng = make_fresh()
    before = snapshot(target, optimizer, rng)
    return write(tmp_path / "crafted", data), target, optimizer, rng, before


def _live_entries(seed=7):
    model = Tiny(seed)
    return [{"name": n, "shape": p.shape, "values": p.data} for n, p in model.named_parameters()]


HUGE = [
    # (description, mutate the parameter list, expected message)
    ("2^60 elements", lambda e: e[0].update(shape=(2**30, 2**30), values=[]), "claims"),
    ("count 2^60 vs small dims", lambda e: e[0].update(count=2**60, values=[]), "does not match"),
    ("2^31 dims", lambda e: e[0].update(ndim=2**31, shape=(), values=[]), "dimensions"),
]


@pytest.mark.parametrize("description, mutate, message", HUGE, ids=[h[0] for h in HUGE])
def test_huge_sizes_are_rejected_without_allocating(tmp_path, description, mutate, message):
    entries = _live_entries()
    mutate(entries)
    data, _ = encode(entries)
    _check_fast_small_rejection(tmp_path, data, message)


def test_huge_counts_and_names_are_rejected_without_allocating(tmp_path):
    header = b"TLCKPT\0\0" + struct.pack("<II", 1, 0)
    _check_fast_small_rejection(tmp_path, header + struct.pack("<I", 2**32 - 1) + bytes(64),
                                "parameter count 4294967295 cannot fit")
    _check_fast_small_rejection(tmp_path, header + struct.pack("<II", 1, 2**31) + b"w" * 40,
                                "name length 2147483648")
    # AdamW section: huge entry count and huge element count
    model = Tiny(7)
    params = [{"name": n, "shape": p.shape, "values": p.data} for n, p in model.named_parameters()]
    config = (1e-2, 0.8, 0.99, 1e-6, 0.1, 1.0)
    data, _ = encode(params, adamw={"config": config, "entries": []})
    data = data[:-4] + struct.pack("<I", 2**32 - 1)
    _check_fast_small_rejection(tmp_path, data, "AdamW parameter count")
    entry = {"name": "weight", "step": 1, "first": [], "second": [], "count": 2**60}
    data, _ = encode(params, adamw={"config": config, "entries": [entry]})
    _check_fast_small_rejection(tmp_path, data, "does not match the parameter's 6")


def _check_fast_small_rejection(tmp_path, data, message):
    path, target, optimizer, rng, before = _crafted(tmp_path, data)
    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(CheckpointError, match=message):
            load(path, target, optimizer, rng)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - started < 0.5
    assert peak < 256 * 1024, peak
    assert snapshot(target, optimizer, rng) == before


def _reject(tmp_path, data, message, sections=False):
    """Loading ``data`` (into a model, plus AdamW and Rng when ``sections``) fails cleanly."""
    path, target, optimizer, rng, before = _crafted(tmp_path, data)
    kwargs = {"optimizer": optimizer, "rng": rng} if sections else {}
    with pytest.raises(CheckpointError, match=message):
        load(path, target, **kwargs)
    assert snapshot(target, optimizer, rng) == before


def test_name_and_shape_rejections(tmp_path):
    entries = _live_entries()
    _reject(tmp_path, encode(entries + [dict(entries[1])])[0], "duplicate parameter name 'bias'")
    renamed = [dict(entries[0], name="weights")] + entries[1:]
    _reject(tmp_path, encode(renamed)[0], "missing key 'weight'; unexpected key 'weights'")
    _reject(tmp_path, encode(entries[1:])[0], "missing key 'weight'")
    _reject(tmp_path, encode(entries + [dict(entries[1], name="extra")])[0],
            "unexpected key 'extra'")
    transposed = [dict(entries[0], shape=(3, 2))] + entries[1:]
    _reject(tmp_path, encode(transposed)[0], r"'weight': shape \(3, 2\) in the file")
    _reject(tmp_path, encode([dict(entries[0], count=5)] + entries[1:])[0], "element count 5")
    _reject(tmp_path, encode([dict(entries[0], name=b"\xff\xfe")] + entries[1:])[0], "UTF-8")
    _reject(tmp_path, encode([dict(entries[0], name=b"")] + entries[1:])[0], "empty name")


def test_value_and_header_rejections(tmp_path):
    entries = _live_entries()
    for bad in (np.nan, np.inf, -np.inf):
        values = np.array(entries[1]["values"], dtype=np.float64)
        values[2] = bad
        data = encode([entries[0], dict(entries[1], values=values)] + entries[2:])[0]
        _reject(tmp_path, data, "'bias' values holds a non-finite value")
    good = encode(entries)[0]
    _reject(tmp_path, good + b"\0", "1 trailing bytes")
    _reject(tmp_path, encode(entries, flags=4)[0], "unknown flag bits 0x00000004")
    _reject(tmp_path, encode(entries, flags=1 << 31)[0], "unknown flag bits")
    _reject(tmp_path, encode(entries, version=2)[0], "unsupported checkpoint version 2")
    _reject(tmp_path, b"PK\3\4" + good[4:], "not a tensorlib checkpoint")
    _reject(tmp_path, b"", "not a tensorlib checkpoint")


def test_adamw_section_rejections(tmp_path):
    model, optimizer, _ = make_fresh()
    entries = _live_entries()
    names = [n for n, _ in model.named_parameters()]

    def adamw(config=(1e-2, 0.8, 0.99, 1e-6, 0.1, 1.0), **changes):
        rows = [{"name": n, "step": 3, "first": np.ones(p.numel()), "second": np.ones(p.numel())}
                for n, p in model.named_parameters()]
        for index, change in changes.get("rows", {}).items():
            rows[index] = dict(rows[index], **change)
        return encode(entries, adamw={"config": config, "entries": rows},
                      rng_state=5)[0]

    good = adamw()
    path, target, opt, rng, _ = _crafted(tmp_path, good)
    load(path, target, opt, rng)  # the well-formed variant loads
    assert [s["step"] for s in opt.state] == [3] * 4 and rng.state == 5
    _reject(tmp_path, adamw(rows={1: {"second": -np.ones(3)}}), "non-negative", sections=True)
    _reject(tmp_path, adamw(rows={1: {"first": [0, np.nan, 0]}}), "first moments", sections=True)
    _reject(tmp_path, adamw(rows={1: {"name": "nope"}}), "names no parameter", sections=True)
    _reject(tmp_path, adamw(rows={1: {"name": names[0]}}), "duplicate AdamW entry", sections=True)
    _reject(tmp_path, adamw(rows={1: {"count": 2}}), "element count 2", sections=True)
    _reject(tmp_path, adamw(config=(1e-2, np.inf, 0.99, 1e-6, 0.1, 1.0)), "beta1 is not finite")
    # values the optimizer's own validation refuses, rejected as CheckpointError, nothing changed
    _reject(tmp_path, adamw(config=(1e-2, 1.0, 0.99, 1e-6, 0.1, 1.0)), "rejected", sections=True)
    _reject(tmp_path, adamw(config=(-1.0, 0.8, 0.99, 1e-6, 0.1, 1.0)), "rejected", sections=True)
    # an optimizer holding fewer parameters than the file's AdamW section
    small_model = Tiny(7)
    small = AdamW(small_model.parameters(include_frozen=False))
    write(tmp_path / "s", good)
    before = snapshot(small_model, small)
    with pytest.raises(CheckpointError, match="does not hold"):
        load(tmp_path / "s", small_model, small)
    assert snapshot(small_model, small) == before


# =============================================================================== arguments
def test_argument_errors(tmp_path):
    model, optimizer, rng = make_trained()
    with pytest.raises(TypeError, match="AdamW optimizer state only"):
        save(tmp_path / "x", model, SGD(model, lr=0.1))
    with pytest.raises(TypeError, match="Module"):
        save(tmp_path / "x", {"weight": 1})
    with pytest.raises(TypeError, match="Rng"):
        save(tmp_path / "x", model, rng=np.random.default_rng(0))
    stranger = AdamW(Tiny(3))
    with pytest.raises(ValueError, match="not a parameter of this Tiny"):
        save(tmp_path / "x", model, stranger)
    assert not any(tmp_path.iterdir())
    save(tmp_path / "ok", model, optimizer, rng)
    with pytest.raises(ValueError, match="not a parameter of this Tiny"):
        load(tmp_path / "ok", model, stranger)
    with pytest.raises(TypeError, match="AdamW optimizer state only"):
        load(tmp_path / "ok", model, SGD(model, lr=0.1))
    with pytest.raises(FileNotFoundError):
        load(tmp_path / "missing", model)


# =============================================================================== atomic save
def test_failed_save_leaves_old_checkpoint_and_no_temp_file(tmp_path, monkeypatch):
    model, optimizer, rng = make_trained()
    path = tmp_path / "c"
    save(path, model, optimizer, rng)
    old = path.read_bytes()
    other, other_optimizer, other_rng = make_fresh()
    temp = tmp_path / "c.tmp"

    # a value that fails validation: nothing is written at all
    with no_grad():
        other.bias.data[1] = np.inf
    with pytest.raises(ValueError, match="'bias'"):
        save(path, other, other_optimizer, other_rng)
    assert path.read_bytes() == old and not temp.exists()
    big = Module()
    big.scale = Parameter(np.array([1e300]))  # a float64 parameter that overflows float32
    with pytest.raises(ValueError, match="not finite in float32"):
        save(path, big)
    assert path.read_bytes() == old and not temp.exists()

    # failures while writing, syncing and renaming remove the temp file
    good, good_optimizer, good_rng = make_fresh()

    def fail(*args, **kwargs):
        assert temp.exists()  # the data went to the temp file first
        raise OSError("disk on fire")

    for name in ("fsync", "replace"):
        with monkeypatch.context() as patch:
            patch.setattr(os, name, fail)
            with pytest.raises(OSError, match="disk on fire"):
                save(path, good, good_optimizer, good_rng)
        assert path.read_bytes() == old and not temp.exists()
    # and a successful save replaces the file whole
    save(path, good, good_optimizer, good_rng)
    assert path.read_bytes() == encode_live(good, good_optimizer, good_rng)[0]
    assert not temp.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["c"]


def test_save_accepts_pathlike_and_overwrites_stale_temp(tmp_path):
    model, _, _ = make_trained()
    (tmp_path / "c.tmp").write_bytes(b"stale leftovers from a crash")
    save(pathlib.Path(tmp_path / "c"), model)
    assert not (tmp_path / "c.tmp").exists()
    target = Tiny(9)
    load(os.fspath(tmp_path / "c"), target)
    assert same_values(snapshot(target), snapshot(model))


def test_module_constants():
    assert checkpoint.MAGIC == b"TLCKPT\0\0" and checkpoint.LEGACY_MAGIC == b"TLWEIGHT"
    assert checkpoint.FLAG_ADAMW == 1 and checkpoint.FLAG_RNG == 2
    assert issubclass(CheckpointError, ValueError)


def test_worked_example_in_the_docs_is_what_save_writes(tmp_path):
    """docs/checkpoint_format.md shows real bytes; keep it in step with the code."""
    doc = (pathlib.Path(__file__).parents[2] / "docs" / "checkpoint_format.md").read_text()
    dumps = []
    for block in doc.split("```")[1::2]:
        lines = [line for line in block.strip().splitlines()
                 if len(line) > 9 and line[8] == ":" and line[:8].isalnum()]
        if lines:
            dumps.append(bytes.fromhex("".join(line[10:57].replace(" ", "") for line in lines)))
    assert len(dumps) == 2

    class Toy(Module):
        def __init__(self):
            super().__init__()
            self.w = Parameter(np.array([1.0, -2.0], dtype=np.float32))

    model = Toy()
    optimizer = AdamW(model, lr=0.5, betas=(0.5, 0.75), eps=0.125, weight_decay=0.0)
    model.w.grad = np.array([1.0, -1.0], dtype=np.float32)
    optimizer.step()
    save(tmp_path / "toy", model, optimizer, Rng(0x0123456789ABCDEF))
    save_legacy_weights(tmp_path / "legacy", model)
    assert dumps == [(tmp_path / "toy").read_bytes(), (tmp_path / "legacy").read_bytes()]
    assert len(dumps[0]) == 122 and len(dumps[1]) == 45


# =============================================================================== golden files
GOLDEN = pathlib.Path(__file__).parent / "data"
GOLDEN_CONFIG = DecoderConfig(vocabulary_size=7, context_length=5, channels=8, heads=2, layers=1)


def test_golden_checkpoints_load_bit_identically_and_save_the_same_bytes(tmp_path):
    """tests/saving/data/ holds files written by the code before LoRA and NF4 became modules
    of their own (tests/saving/data/make_golden.py says how): a plain Decoder with AdamW and
    rng state, and the same Decoder with NF4 MLP layers. Today's code must read them into the
    same names and write them back byte for byte: the checkpoint schema did not change."""
    from tensorlib.adapters.nf4 import quantize_model

    names = json.loads((GOLDEN / "golden_names.json").read_text())
    golden = (GOLDEN / "golden_decoder.tlckpt").read_bytes()
    model = Decoder(GOLDEN_CONFIG, rng=Rng(0))
    optimizer, rng = AdamW(model, lr=1e-3), Rng(0)
    load(GOLDEN / "golden_decoder.tlckpt", model, optimizer, rng)
    assert [name for name, _ in model.named_parameters()] == names["plain_parameters"]
    assert list(model.state_dict()) == names["plain_state_dict"]
    stored = inspect(GOLDEN / "golden_decoder.tlckpt")["parameters"]
    assert [entry["name"] for entry in stored] == names["plain_parameters"]
    save(tmp_path / "again.tlckpt", model, optimizer, rng)
    assert (tmp_path / "again.tlckpt").read_bytes() == golden

    del optimizer
    nf4_model = Decoder(GOLDEN_CONFIG, rng=Rng(1))
    quantize_model(nf4_model, "blocks.*.mlp_*", block_size=16)
    assert [name for name, _ in nf4_model.named_parameters()] == names["nf4_parameters"]
    assert list(nf4_model.state_dict()) == names["nf4_state_dict"]
    load(GOLDEN / "golden_nf4_decoder.tlckpt", nf4_model)
    save(tmp_path / "nf4.tlckpt", nf4_model)
    assert (tmp_path / "nf4.tlckpt").read_bytes() == \
        (GOLDEN / "golden_nf4_decoder.tlckpt").read_bytes()
