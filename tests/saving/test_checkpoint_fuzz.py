"""Hostile checkpoints: property-based fuzzing of ``tensorlib.saving.checkpoint.load``.

Valid files are mutated, truncated, spliced and extended, and headers are crafted with huge
counts, long and duplicate names, non-finite values and trailing bytes. Every input must
either raise :class:`CheckpointError` (a ``ValueError``) and leave the module, the optimizer
and the generator exactly as they were, or load exactly what the file says. No input may
raise anything else, and no load may allocate much more than the file's own size
(``tracemalloc`` peak), whatever sizes the header claims.

The same checks, run for minutes instead of seconds, are in ``fuzz/atheris_checkpoint.py``.
"""

from __future__ import annotations

import importlib.util
import math
import pathlib
import struct
import tracemalloc

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tensorlib.saving.checkpoint as checkpoint
from tensorlib.engine.splitmix64 import Rng
from tensorlib.nn.module import Module
from tensorlib.nn.parameter import Parameter
from tensorlib.optim import AdamW
from tensorlib.saving.checkpoint import CheckpointError, inspect, load, save, save_legacy_weights

FUZZ = settings(max_examples=120, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
# A load may hold the file, a few copies of its values and its error message at once; it
# must never allocate for the sizes a header merely claims.
MEMORY_BASE = 64 * 1024
MEMORY_PER_FILE_BYTE = 8


# =============================================================================== models
class Head(Module):
    def __init__(self, rng: Rng) -> None:
        super().__init__()
        self.weight = Parameter(rng.normal(0.0, 1.0, size=(3, 2)))
        self.scale = Parameter(rng.normal(0.0, 1.0, size=(2,)), trainable=False)


class Small(Module):
    """Parameters: ``weight (2, 3)``, ``bias (3,)``, ``head.weight (3, 2)``, frozen
    ``head.scale (2,)``."""

    def __init__(self, seed: int) -> None:
        super().__init__()
        rng = Rng(seed)
        self.weight = Parameter(rng.normal(0.0, 1.0, size=(2, 3)))
        self.bias = Parameter(rng.normal(0.0, 1.0, size=(3,)))
        self.head = Head(rng)


class Other(Module):
    """A different architecture, for splicing files of unrelated models."""

    def __init__(self, seed: int) -> None:
        super().__init__()
        self.table = Parameter(Rng(seed).normal(0.0, 1.0, size=(4, 2)))


def make_optimizer(model: Module) -> AdamW:
    return AdamW(model, lr=1e-2, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.0,
                 max_grad_norm=0.0)


def trained(seed: int, steps: int) -> tuple[Small, AdamW, Rng]:
    model = Small(seed)
    optimizer = make_optimizer(model)
    grads = Rng(seed + 50)
    for _ in range(steps):
        for parameter in model.parameters(include_frozen=False):
            parameter.grad = grads.normal(0.0, 1.0, size=parameter.shape)
        optimizer.step()
    model.zero_grad()
    return model, optimizer, Rng(seed + 1000)


def fresh() -> tuple[Small, AdamW, Rng]:
    """The load target: same architecture and optimizer settings, other values."""
    model, optimizer, _ = trained(99, 1)
    return model, optimizer, Rng(12345)


def snapshot(model: Module, optimizer: AdamW, rng: Rng) -> dict:
    """Everything a load could change, bit for bit, versions and gradients included."""
    return {
        "params": [(name, p.numpy().tobytes(), p.shape, p.dtype.str, p.version, p.grad)
                   for name, p in model.named_parameters()],
        "config": optimizer.config(),
        "state": [(entry["step"], entry["first_moment"].tobytes(),
                   entry["second_moment"].tobytes()) for entry in optimizer.state],
        "rng": rng.state,
    }


# =============================================================================== corpus
@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> pathlib.Path:
    return tmp_path_factory.mktemp("fuzz")


@pytest.fixture(scope="module")
def corpus(workdir) -> dict[str, bytes]:
    """Valid files of every layout: all sections, some, none, legacy, another model."""
    model, optimizer, rng = trained(1, 3)
    other_model, other_optimizer, other_rng = trained(2, 1)
    unrelated = Other(3)
    files = {
        "full": (model, optimizer, rng),
        "full_other_values": (other_model, other_optimizer, other_rng),
        "params": (model, None, None),
        "params_rng": (model, None, rng),
        "params_adamw": (model, optimizer, None),
        "unrelated": (unrelated, make_optimizer(unrelated), Rng(7)),
    }
    out = {}
    for name, (module, opt, generator) in files.items():
        save(workdir / name, module, opt, generator)
        out[name] = (workdir / name).read_bytes()
    save_legacy_weights(workdir / "legacy", model)
    out["legacy"] = (workdir / "legacy").read_bytes()
    return out


# =============================================================================== the oracle
MEMORY_PATH = "in-memory.tlckpt"
MEMORY_FILES: dict[str, bytes] = {}


@pytest.fixture(scope="module", autouse=True)
def in_memory_files():
    """Serve ``MEMORY_PATH`` from ``MEMORY_FILES``, so thousands of examples skip the disk.
    The loader reads a whole file with one ``_read_file`` call and parses only those bytes,
    so this changes nothing it checks; ``check_file(real_file=True)`` uses the disk."""
    real_read = checkpoint._read_file

    def read(path):
        return MEMORY_FILES[path] if path == MEMORY_PATH else real_read(path)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(checkpoint, "_read_file", read)
        yield
    MEMORY_FILES.clear()


def traced_load(path, model, optimizer, rng):
    """Load and return ``(error or None, peak bytes traced during the load)``."""
    tracemalloc.start()
    try:
        try:
            load(path, model, optimizer, rng)
        except CheckpointError as error:
            return error, tracemalloc.get_traced_memory()[1]
        return None, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def check_file(workdir: pathlib.Path, data: bytes, use_optimizer: bool, use_rng: bool,
               must_fail: bool = False, real_file: bool = False) -> CheckpointError | None:
    """The contract for any bytes: CheckpointError and nothing changed, or a faithful load.

    Any other exception propagates and fails the test.
    """
    if real_file:
        path = workdir / "candidate.tlckpt"
        path.write_bytes(data)
    else:
        path = MEMORY_PATH
        MEMORY_FILES[MEMORY_PATH] = data
    model, optimizer, rng = fresh()
    before = snapshot(model, optimizer, rng)
    error, peak = traced_load(path, model, optimizer if use_optimizer else None,
                              rng if use_rng else None)
    assert peak <= MEMORY_BASE + MEMORY_PER_FILE_BYTE * len(data), (peak, len(data))
    try:
        described = inspect(path)
    except CheckpointError:
        described = None
    if error is not None:
        assert isinstance(error, ValueError) and str(error)
        assert snapshot(model, optimizer, rng) == before
        return error
    assert not must_fail, "this file must be rejected"
    assert described is not None, "a file that loads must also inspect"
    check_faithful(data, described, model, optimizer if use_optimizer else None,
                   rng if use_rng else None, workdir)
    return None


def check_faithful(data, described, model, optimizer, rng, workdir) -> None:
    """What loaded is exactly what the file holds."""
    live = dict(model.named_parameters())
    assert {p["name"] for p in described["parameters"]} == set(live)
    for entry in described["parameters"]:
        stored = np.frombuffer(data, "<f4", entry["nbytes"] // 4, entry["offset"])
        assert live[entry["name"]].numpy().tobytes() == stored.astype(np.float32).tobytes()
        assert live[entry["name"]].shape == tuple(entry["shape"])
    if rng is not None:
        assert rng.state == described["rng_state"]
    flags = described["flags"]
    if optimizer is not None and flags & 1 and (rng is not None or not flags & 2):
        # Saving again reproduces the file, except that the six config floats compare as
        # numbers (the loader keeps a live 0.0 for a stored -0.0: the file cannot tell).
        resaved_path = workdir / "resaved.tlckpt"
        save(resaved_path, model, optimizer, rng if flags & 2 else None)
        resaved = resaved_path.read_bytes()
        last = described["parameters"][-1]
        config_start = last["offset"] + last["nbytes"]
        config_stop = config_start + 24
        assert len(resaved) == len(data)
        assert resaved[:config_start] == data[:config_start]
        assert resaved[config_stop:] == data[config_stop:]
        assert struct.unpack("<6f", resaved[config_start:config_stop]) == \
            struct.unpack("<6f", data[config_start:config_stop])


def sections_for(name: str) -> tuple[bool, bool]:
    """Ask for the sections the source file has (so valid edits can load)."""
    return {"full": (True, True), "full_other_values": (True, True), "params": (False, False),
            "params_rng": (False, True), "params_adamw": (True, False),
            "unrelated": (True, True), "legacy": (False, False)}[name]


SOURCES = ["full", "full_other_values", "params", "params_rng", "params_adamw", "legacy",
           "unrelated"]


# =============================================================================== valid files
def test_the_corpus_loads_and_the_oracle_can_fail(corpus, workdir):
    for name in SOURCES:
        for real_file in (False, True):
            error = check_file(workdir, corpus[name], *sections_for(name), real_file=real_file)
            assert (error is None) == (name != "unrelated"), (name, error)
        cut = corpus[name][: len(corpus[name]) // 2]
        assert check_file(workdir, cut, *sections_for(name), real_file=True) is not None
    # The oracle itself: a file that loads is not accepted as "rejected".
    with pytest.raises(AssertionError, match="must be rejected"):
        check_file(workdir, corpus["full"], True, True, must_fail=True)


# =============================================================================== mutations
@FUZZ
@given(data=st.data(), source=st.sampled_from(SOURCES), extra_sections=st.booleans())
def test_mutated_files(corpus, workdir, data, source, extra_sections):
    original = corpus[source]
    edits = data.draw(st.lists(st.tuples(st.integers(0, len(original) - 1),
                                         st.integers(0, 255)), min_size=1, max_size=6))
    mutated = bytearray(original)
    for offset, value in edits:
        mutated[offset] = value
    use_optimizer, use_rng = sections_for(source)
    if extra_sections:  # also ask for sections the file may lack: must be a clean error
        use_optimizer = use_rng = True
    check_file(workdir, bytes(mutated), use_optimizer, use_rng)


@FUZZ
@given(data=st.data(), source=st.sampled_from(SOURCES))
def test_truncated_files(corpus, workdir, data, source):
    original = corpus[source]
    length = data.draw(st.integers(0, len(original) - 1))
    check_file(workdir, original[:length], *sections_for(source), must_fail=True)


@FUZZ
@given(data=st.data(), first=st.sampled_from(SOURCES), second=st.sampled_from(SOURCES))
def test_spliced_files(corpus, workdir, data, first, second):
    """The head of one valid file glued to the tail of another (or of itself)."""
    a, b = corpus[first], corpus[second]
    cut_a = data.draw(st.integers(0, len(a)))
    cut_b = data.draw(st.integers(0, len(b)))
    check_file(workdir, a[:cut_a] + b[cut_b:], *sections_for(first))


@FUZZ
@given(source=st.sampled_from(SOURCES), tail=st.binary(min_size=1, max_size=64))
def test_trailing_bytes(corpus, workdir, source, tail):
    error = check_file(workdir, corpus[source] + tail, *sections_for(source), must_fail=True)
    assert "trailing" in str(error)


# =============================================================================== crafted headers
def name_field(name: bytes, claimed: int | None = None) -> bytes:
    return struct.pack("<I", len(name) if claimed is None else claimed) + name


def parameter_record(name: bytes, shape, values, *, ndim=None, count=None) -> bytes:
    values = np.asarray(values, dtype="<f4").ravel()
    return (name_field(name) + struct.pack("<I", len(shape) if ndim is None else ndim)
            + struct.pack(f"<{len(shape)}I", *shape)
            + struct.pack("<Q", math.prod(shape) if count is None else count)
            + values.tobytes())


def live_records(model: Module) -> list[bytes]:
    return [parameter_record(name.encode(), p.shape, p.data)
            for name, p in model.named_parameters()]


def header(flags: int, count: int, magic: bytes = b"TLCKPT\0\0", version: int = 1) -> bytes:
    return magic + struct.pack("<III", version, flags, count)


def adamw_section(config, entries: list[bytes], count: int | None = None) -> bytes:
    return (struct.pack("<6f", *config)
            + struct.pack("<I", len(entries) if count is None else count) + b"".join(entries))


def adamw_entry(name: bytes, step: int, first, second, count: int | None = None) -> bytes:
    first = np.asarray(first, dtype="<f4").ravel()
    second = np.asarray(second, dtype="<f4").ravel()
    return (name_field(name) + struct.pack("<QQ", step, first.size if count is None else count)
            + first.tobytes() + second.tobytes())


CONFIG = (1e-2, 0.8, 0.99, 1e-6, 0.0, 0.0)
U32 = st.integers(0, 2**32 - 1)


def sizes(low: int, high: int) -> st.SearchStrategy[int]:
    """Integers in [low, high] spread over every order of magnitude (log-uniform), so that
    claims of kilobytes, megabytes and exabytes are all tried."""
    def in_octave(bits: int) -> st.SearchStrategy[int]:
        return st.integers(max(low, 2 ** (bits - 1)), min(high, 2**bits - 1))

    top = high.bit_length()
    return st.integers(max(1, low.bit_length()), top).flatmap(in_octave)


U64 = st.one_of(st.just(0), sizes(1, 2**64 - 1))
NON_FINITE = st.sampled_from([math.nan, math.inf, -math.inf])


def valid_adamw(model: Module) -> bytes:
    entries = [adamw_entry(name.encode(), 1, np.zeros(p.numel()), np.zeros(p.numel()))
               for name, p in model.named_parameters()]
    return adamw_section(CONFIG, entries)


@st.composite
def crafted(draw) -> tuple[str, bytes]:
    """A file with exactly one defect; every one of them must be rejected."""
    model = Small(5)
    records = live_records(model)
    parameters = list(model.named_parameters())
    index = draw(st.integers(0, len(records) - 1))
    name, parameter = parameters[index]
    kind = draw(st.sampled_from([
        "huge parameter count", "huge ndim", "huge dims", "huge element count",
        "huge name length", "long unknown name", "duplicate name", "non-finite value",
        "invalid utf-8 name", "empty name", "bad magic", "bad version", "unknown flags",
        "huge adamw count", "huge adamw element count", "non-finite moment",
        "negative second moment", "non-finite config", "duplicate adamw entry",
        "adamw entry for unknown name", "trailing bytes", "missing rng",
    ]))
    body = list(records)
    flags, tail, count = 0, b"", len(records)
    magic, version = b"TLCKPT\0\0", 1
    if kind == "huge parameter count":
        count = draw(sizes(len(records) + 1, 2**32 - 1))
    elif kind == "huge ndim":
        ndim = draw(sizes(2**10, 2**32 - 1))
        body[index] = name_field(name.encode()) + struct.pack("<I", ndim) + bytes(16)
    elif kind == "huge dims":
        dims = draw(st.lists(sizes(2**8, 2**32 - 1), min_size=2, max_size=4))
        body[index] = parameter_record(name.encode(), dims, [], count=math.prod(dims) % 2**64)
    elif kind == "huge element count":
        claimed = draw(sizes(parameter.numel() + 1, 2**64 - 1))
        body[index] = parameter_record(name.encode(), (claimed,) if claimed < 2**32 else (),
                                       parameter.data, count=claimed)
    elif kind == "huge name length":
        body[index] = name_field(name.encode()[:1], draw(sizes(1024, 2**32 - 1)))
    elif kind == "long unknown name":
        long_name = name.encode() + b"x" * draw(st.integers(1, 20_000))
        body[index] = parameter_record(long_name, parameter.shape, parameter.data)
    elif kind == "duplicate name":
        other = draw(st.integers(0, len(records) - 1).filter(lambda i: i != index))
        body[other] = parameter_record(name.encode(), parameter.shape, parameter.data)
    elif kind == "non-finite value":
        values = parameter.numpy().copy().ravel()
        values[draw(st.integers(0, values.size - 1))] = draw(NON_FINITE)
        body[index] = parameter_record(name.encode(), parameter.shape, values)
    elif kind == "invalid utf-8 name":
        bad = draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"w\x80"]))
        body[index] = parameter_record(bad, parameter.shape, parameter.data)
    elif kind == "empty name":
        body[index] = parameter_record(b"", parameter.shape, parameter.data)
    elif kind == "bad magic":
        magic = draw(st.binary(min_size=8, max_size=8).filter(
            lambda m: m not in (b"TLCKPT\0\0", b"TLWEIGHT")))
    elif kind == "bad version":
        version = draw(U32.filter(lambda v: v != 1))
    elif kind == "unknown flags":
        flags = draw(U32.filter(lambda f: f & ~3))
    elif kind.startswith(("huge adamw", "non-finite moment", "negative", "non-finite config",
                          "duplicate adamw", "adamw entry")):
        flags = 1
        names = [n.encode() for n, _ in parameters]
        entries = [adamw_entry(n, 1, np.zeros(p.numel()), np.ones(p.numel()))
                   for n, (_, p) in zip(names, parameters, strict=True)]
        config = CONFIG
        entry_count = None
        if kind == "huge adamw count":
            entry_count = draw(sizes(len(entries) + 1, 2**32 - 1))
        elif kind == "huge adamw element count":
            entries[index] = adamw_entry(names[index], 1, [], [],
                                         count=draw(sizes(parameter.numel() + 1, 2**64 - 1)))
        elif kind == "non-finite moment":
            moments = [np.zeros(parameter.numel()), np.ones(parameter.numel())]
            which = draw(st.integers(0, 1))
            moments[which][draw(st.integers(0, parameter.numel() - 1))] = draw(NON_FINITE)
            entries[index] = adamw_entry(names[index], 1, *moments)
        elif kind == "negative second moment":
            second = np.ones(parameter.numel())
            second[draw(st.integers(0, parameter.numel() - 1))] = -draw(
                st.floats(1e-30, 1e30, allow_nan=False))
            entries[index] = adamw_entry(names[index], 1, np.zeros(parameter.numel()), second)
        elif kind == "non-finite config":
            config = list(CONFIG)
            config[draw(st.integers(0, 5))] = draw(NON_FINITE)
        elif kind == "duplicate adamw entry":
            entries.append(entries[index])
        else:  # an entry for a name that is not among the stored parameters
            entries[index] = adamw_entry(names[index] + b".ghost", 1, np.zeros(parameter.numel()),
                                         np.ones(parameter.numel()))
        tail = adamw_section(config, entries, entry_count)
    elif kind == "trailing bytes":
        tail = draw(st.binary(min_size=1, max_size=32))
    elif kind == "missing rng":  # the flag promises an RNG state that is not there
        flags, tail = 2, draw(st.binary(min_size=0, max_size=7))
    data = magic + struct.pack("<I", version)
    if magic == b"TLCKPT\0\0" or kind == "bad magic":
        data += struct.pack("<I", flags)
    return kind, data + struct.pack("<I", count) + b"".join(body) + tail


@settings(FUZZ, max_examples=300)
@given(case=crafted(), use_sections=st.booleans())
def test_crafted_headers_are_rejected(workdir, case, use_sections):
    kind, data = case
    error = check_file(workdir, data, use_sections, use_sections, must_fail=True)
    assert str(error), kind


@FUZZ
@given(count=sizes(2**10, 2**32 - 1), name_length=st.one_of(st.none(), sizes(1, 2**32 - 1)),
       dims=st.lists(st.one_of(sizes(1, 2**32 - 1), st.just(0)), min_size=1, max_size=3),
       elements=st.one_of(st.none(), U64), padding=st.integers(0, 512))
def test_claimed_sizes_never_allocate(workdir, count, name_length, dims, elements, padding):
    """Whatever sizes a header claims, the load allocates for the bytes that exist.

    ``None`` means "consistent": the name length is the name's, the element count the
    product of ``dims``, so the next claim in line is what must be checked."""
    if elements is None:
        elements = math.prod(dims) % 2**64
    name = b"weight"
    record = (name_field(name if name_length is None else name[: min(6, name_length)],
                         name_length)
              + struct.pack("<I", len(dims)) + struct.pack(f"<{len(dims)}I", *dims)
              + struct.pack("<Q", elements))
    for data in (header(0, count) + bytes(padding), header(3, 1) + record + bytes(padding)):
        check_file(workdir, data, True, True, must_fail=True)


def test_a_valid_file_with_adamw_built_here_loads(workdir):
    """The crafted-file builder writes valid files when no defect is injected (so the
    rejections above are caused by the defects, not by a broken builder)."""
    model = Small(5)
    data = header(1, 4) + b"".join(live_records(model)) + valid_adamw(model)
    assert check_file(workdir, data, True, False) is None


# =============================================================================== atheris harness
def test_the_atheris_harness_runs_without_atheris(corpus):
    """``fuzz/atheris_checkpoint.py`` must keep working; atheris itself is optional."""
    path = pathlib.Path(__file__).resolve().parents[2] / "fuzz" / "atheris_checkpoint.py"
    spec = importlib.util.spec_from_file_location("atheris_checkpoint", path)
    harness = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(harness)
    seeds = harness.seed_inputs()
    assert len(seeds) >= 4 and all(seed[:8] in (b"TLCKPT\0\0", b"TLWEIGHT") for seed in seeds)
    for data in [*seeds, b"", b"TLCKPT\0\0", corpus["full"][:-3], corpus["full"] + b"\0",
                 corpus["unrelated"]]:
        harness.test_one_input(data)
    with pytest.raises(AssertionError):
        harness.check_outcome(ValueError("not a CheckpointError"), {}, {})
