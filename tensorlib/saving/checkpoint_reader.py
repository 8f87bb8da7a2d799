"""Reading a TLCKPT file's bytes (docs/checkpoint_format.md): every field checked as it is
read, nothing trusted, the whole file parsed before anything is loaded. What
:mod:`tensorlib.saving.checkpoint` loads from and inspects."""

from __future__ import annotations

import math
import os
import struct
from dataclasses import dataclass, field

import numpy as np

MAGIC = b"TLCKPT\0\0"
LEGACY_MAGIC = b"TLWEIGHT"
VERSION = 1
FLAG_ADAMW = 1 << 0
FLAG_RNG = 1 << 1
_KNOWN_FLAGS = FLAG_ADAMW | FLAG_RNG

_U32_MAX = 2**32 - 1
_U64_MAX = 2**64 - 1
_F32 = np.dtype("<f4")
# Smallest possible encodings, used to reject absurd counts before looping over them.
_MIN_PARAMETER_BYTES = 4 + 4 + 8  # empty name, ndim 0, count (a real entry also has a value)
_MIN_ADAMW_ENTRY_BYTES = 4 + 8 + 8  # empty name, step, count
_CONFIG_KEYS = ("lr", "beta1", "beta2", "eps", "weight_decay", "max_grad_norm")


class CheckpointError(ValueError):
    """A checkpoint file is malformed or does not fit the live objects it is loaded into."""


# =============================================================================== reading


class _Reader:
    """Bounds-checked little-endian reads from an in-memory file; never reads past the end."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    @property
    def remaining(self) -> int:
        return len(self.data) - self.pos

    def _need(self, nbytes: int, what: str) -> None:
        if nbytes > self.remaining:
            raise CheckpointError(
                f"truncated file: {what} needs {nbytes} bytes at offset {self.pos}, "
                f"but only {self.remaining} remain"
            )

    def take(self, nbytes: int, what: str) -> bytes:
        self._need(nbytes, what)
        chunk = self.data[self.pos : self.pos + nbytes]
        self.pos += nbytes
        return chunk

    def u32(self, what: str) -> int:
        self._need(4, what)
        (value,) = struct.unpack_from("<I", self.data, self.pos)
        self.pos += 4
        return value

    def u64(self, what: str) -> int:
        self._need(8, what)
        (value,) = struct.unpack_from("<Q", self.data, self.pos)
        self.pos += 8
        return value

    def f32_scalars(self, count: int, what: str) -> tuple[float, ...]:
        self._need(4 * count, what)
        values = struct.unpack_from(f"<{count}f", self.data, self.pos)
        self.pos += 4 * count
        return values

    def f32_array(self, count: int, what: str) -> np.ndarray:
        """A read-only float32 view of the next ``count`` values (no copy, size pre-checked)."""
        if count > self.remaining // 4:
            raise CheckpointError(
                f"{what} claims {count} float32 values ({4 * count} bytes) at offset "
                f"{self.pos}, but only {self.remaining} bytes remain"
            )
        values = np.frombuffer(self.data, dtype=_F32, count=count, offset=self.pos)
        self.pos += 4 * count
        return values

    def name(self, what: str) -> str:
        length = self.u32(f"{what} name length")
        if length > self.remaining:
            raise CheckpointError(
                f"{what} name length {length} at offset {self.pos - 4} exceeds the "
                f"{self.remaining} bytes that remain"
            )
        raw = self.take(length, f"{what} name")
        if length == 0:
            raise CheckpointError(f"{what} has an empty name (offset {self.pos - 4})")
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise CheckpointError(f"{what} name at offset {self.pos - length} is not "
                                  f"valid UTF-8: {raw[:40]!r}") from error


@dataclass
class _StoredParameter:
    name: str
    shape: tuple[int, ...]
    values: np.ndarray  # flat, read-only float32 view into the file bytes
    offset: int  # where the values start


@dataclass
class _StoredMoments:
    name: str
    step: int
    first: np.ndarray  # flat float32 views
    second: np.ndarray


@dataclass
class _Contents:
    format: str  # "TLCKPT" or "TLWEIGHT"
    version: int
    flags: int
    parameters: list[_StoredParameter]
    config: dict[str, float] | None = None  # the six AdamW floats, when flagged
    moments: list[_StoredMoments] = field(default_factory=list)
    rng_state: int | None = None
    size: int = 0


def _check_finite(values: np.ndarray, what: str) -> None:
    if not np.isfinite(values).all():
        bad = int(np.flatnonzero(~np.isfinite(values))[0])
        raise CheckpointError(f"{what} holds a non-finite value ({values[bad]} at index {bad})")


def _read_parameters(reader: _Reader) -> list[_StoredParameter]:
    count = reader.u32("parameter count")
    if count * _MIN_PARAMETER_BYTES > reader.remaining:
        raise CheckpointError(
            f"parameter count {count} cannot fit in the {reader.remaining} bytes that remain "
            f"(each parameter takes at least {_MIN_PARAMETER_BYTES} bytes)"
        )
    stored: list[_StoredParameter] = []
    seen: set[str] = set()
    for index in range(count):
        where = f"parameter {index}"
        name = reader.name(where)
        where = f"parameter {index} '{name}'"
        if name in seen:
            raise CheckpointError(f"duplicate parameter name '{name}' (entry {index})")
        seen.add(name)
        ndim = reader.u32(f"{where} ndim")
        if 4 * ndim > reader.remaining:
            raise CheckpointError(
                f"{where} claims {ndim} dimensions, more than the {reader.remaining} bytes "
                "that remain can hold"
            )
        shape = tuple(reader.u32(f"{where} dim {axis}") for axis in range(ndim))
        elements = reader.u64(f"{where} element count")
        expected = math.prod(shape)
        if elements != expected:
            raise CheckpointError(
                f"{where}: element count {elements} does not match its dims {shape} "
                f"(product {expected})"
            )
        offset = reader.pos
        values = reader.f32_array(elements, f"{where} values")
        _check_finite(values, f"{where} values")
        stored.append(_StoredParameter(name, shape, values, offset))
    return stored


def _read_adamw(reader: _Reader, contents: _Contents) -> None:
    raw = reader.f32_scalars(6, "AdamW config (6 float32)")
    config = dict(zip(_CONFIG_KEYS, raw, strict=True))
    for key, value in config.items():
        if not math.isfinite(value):
            raise CheckpointError(f"AdamW config {key} is not finite ({value})")
    contents.config = config
    sizes = {p.name: p.values.size for p in contents.parameters}
    count = reader.u32("AdamW parameter count")
    if count * _MIN_ADAMW_ENTRY_BYTES > reader.remaining:
        raise CheckpointError(
            f"AdamW parameter count {count} cannot fit in the {reader.remaining} bytes "
            f"that remain (each entry takes at least {_MIN_ADAMW_ENTRY_BYTES} bytes)"
        )
    seen: set[str] = set()
    for index in range(count):
        name = reader.name(f"AdamW entry {index}")
        where = f"AdamW entry {index} '{name}'"
        if name in seen:
            raise CheckpointError(f"duplicate AdamW entry for '{name}' (entry {index})")
        seen.add(name)
        if name not in sizes:
            raise CheckpointError(f"{where} names no parameter stored in this checkpoint")
        step = reader.u64(f"{where} step")
        elements = reader.u64(f"{where} element count")
        if elements != sizes[name]:
            raise CheckpointError(
                f"{where}: element count {elements} does not match the parameter's "
                f"{sizes[name]} elements"
            )
        first = reader.f32_array(elements, f"{where} first moments")
        second = reader.f32_array(elements, f"{where} second moments")
        _check_finite(first, f"{where} first moments")
        _check_finite(second, f"{where} second moments")
        if (second < 0).any():
            raise CheckpointError(f"{where}: second moments must be non-negative, "
                                  f"found {second.min()}")
        contents.moments.append(_StoredMoments(name, step, first, second))


def _parse(data: bytes) -> _Contents:
    """Check the whole file's structure and return views of its contents (no big copies)."""
    reader = _Reader(data)
    magic = reader.take(8, "magic") if len(data) >= 8 else None
    if magic not in (MAGIC, LEGACY_MAGIC):
        head = data[:8]
        raise CheckpointError(
            f"not a tensorlib checkpoint: the file starts with {head!r}, expected "
            f"{MAGIC!r} or the legacy {LEGACY_MAGIC!r}"
        )
    version = reader.u32("version")
    if version != VERSION:
        raise CheckpointError(f"unsupported checkpoint version {version} (this loader reads "
                              f"version {VERSION})")
    if magic == LEGACY_MAGIC:
        contents = _Contents("TLWEIGHT", version, 0, _read_parameters(reader))
    else:
        flags = reader.u32("flags")
        if flags & ~_KNOWN_FLAGS:
            raise CheckpointError(f"unknown flag bits 0x{flags & ~_KNOWN_FLAGS:08x} in flags "
                                  f"0x{flags:08x} (known: 0x1 AdamW, 0x2 RNG)")
        contents = _Contents("TLCKPT", version, flags, _read_parameters(reader))
        if flags & FLAG_ADAMW:
            _read_adamw(reader, contents)
        if flags & FLAG_RNG:
            contents.rng_state = reader.u64("RNG state")
    if reader.remaining:
        raise CheckpointError(f"{reader.remaining} trailing bytes after the last section "
                              f"(offset {reader.pos})")
    contents.size = len(data)
    return contents


def _read_file(path: str | os.PathLike) -> bytes:
    with open(os.fspath(path), "rb") as handle:
        return handle.read()
