"""TLCKPT checkpoints: atomic saves and transactional loads of a model, AdamW and an Rng.

The byte layout is documented in ``docs/checkpoint_format.md``. In short (all little-endian)::

    b"TLCKPT\\0\\0"  u32 version=1  u32 flags  u32 parameter_count
    parameter_count x [name, u32 ndim, u32 dims[ndim], u64 count, f32 values[count]]
    if flags & 1:  f32 lr, beta1, beta2, eps, weight_decay, max_grad_norm
                   u32 count x [name, u64 step, u64 count, f32 first[count], f32 second[count]]
    if flags & 2:  u64 rng_state

where ``name`` is a u32 byte length followed by that many UTF-8 bytes. The legacy
weights-only layout ``b"TLWEIGHT"  u32 version=1  u32 parameter_count  parameters...`` is
accepted by :func:`load` and written by :func:`save_legacy_weights`.

Guarantees:

* An AdamW with several parameter groups is refused (ValueError) at :func:`save` and
  :func:`load`: the v1 layout has one set of settings, and flattening the groups would lose
  them. One group, however it was built, writes exactly the v1 bytes.
* :func:`save` validates everything first (finite float32 values, names, sizes), then writes
  ``path + ".tmp"``, flushes, fsyncs and renames it over ``path``. On any error the temporary
  file is removed and an existing checkpoint at ``path`` is left byte-for-byte as it was.
* :func:`load` reads the whole file and checks every byte of it against the live module,
  optimizer and generator before it changes anything. Sizes are checked against the bytes
  that remain before any array is made, so a corrupt header cannot trigger a huge allocation.
  Any problem with the contents raises :class:`CheckpointError` and leaves every live object
  untouched.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Mapping
from typing import Any

import numpy as np

from tensorlib.engine.files import write_atomic
from tensorlib.engine.splitmix64 import Rng
from tensorlib.engine.tensor import Tensor
from tensorlib.nn.layers import BatchNorm1d, BatchNorm2d
from tensorlib.nn.module import Module, check_module
from tensorlib.nn.parameter import Parameter
from tensorlib.nn.state_dict import StateDictError, copy_staged, stage_by_name
from tensorlib.optim.adamw import AdamW

__all__ = [
    "FLAG_ADAMW",
    "FLAG_RNG",
    "LEGACY_MAGIC",
    "MAGIC",
    "VERSION",
    "CheckpointError",
    "inspect",
    "load",
    "load_parameters",
    "save",
    "save_legacy_weights",
    "save_parameters",
]

from tensorlib.saving.checkpoint_reader import (  # noqa: F401 (re-exported)
    _F32,
    _U32_MAX,
    _U64_MAX,
    FLAG_ADAMW,
    FLAG_RNG,
    LEGACY_MAGIC,
    MAGIC,
    VERSION,
    CheckpointError,
    _Contents,
    _parse,
    _read_file,
)

# =============================================================================== arguments
# The layers whose buffers training changes (BatchNorm's running statistics), by the names of
# those buffers: state a parameters-only checkpoint would lose. Buffers that construction
# rebuilds (the programmed cores' tables, NF4's codes) are not listed.
RUNNING_BUFFERS: dict[type[Module], tuple[str, ...]] = {
    BatchNorm1d: ("running_mean", "running_var", "num_batches_tracked"),
    BatchNorm2d: ("running_mean", "running_var", "num_batches_tracked"),
}


def _check_module(module: Any) -> None:
    """A Module whose whole state is its parameters: TLCKPT v1 stores nothing else."""
    check_module(module, "module")
    running = [f"{prefix}.{name}" if prefix else name
               for prefix, child in module.named_modules()
               for kind, names in RUNNING_BUFFERS.items() if isinstance(child, kind)
               for name in names if name in child._buffers]
    if running:
        raise ValueError(
            f"TLCKPT v1 stores parameters only, and this {type(module).__name__} has buffers "
            f"that training changes ({', '.join(running)}): a checkpoint would lose them. "
            "Save its whole state_dict with tensorlib.saving.safetensors.save_safetensors instead")


def _check_rng(rng: Any) -> None:
    if rng is not None and not isinstance(rng, Rng):
        raise TypeError(f"rng must be a tensorlib Rng or None, got {type(rng).__name__}")


def _check_adamw(optimizer: Any) -> None:
    """TypeError if ``optimizer`` is not an AdamW, ValueError if it has several parameter
    groups."""
    if not isinstance(optimizer, AdamW):
        raise TypeError(
            f"checkpoints store AdamW optimizer state only; got {type(optimizer).__name__} "
            "(save SGD runs without the optimizer, or use its state_dict())"
        )
    if len(optimizer.param_groups) > 1:
        raise ValueError(
            f"TLCKPT v1 stores one set of AdamW settings; this optimizer has "
            f"{len(optimizer.param_groups)} parameter groups. Save without the optimizer and "
            "keep optimizer.state_dict() with tensorlib.save"
        )


def _check_named(parameters: Any) -> dict[str, Parameter]:
    """``parameters`` as a dict of Parameters by name, or TypeError."""
    if not isinstance(parameters, Mapping) or not all(
            isinstance(name, str) and isinstance(p, Parameter) for name, p in parameters.items()):
        raise TypeError("parameters must be a mapping of names to Parameters (for example "
                        f"dict(model.named_parameters())), got {type(parameters).__name__}")
    return dict(parameters)


def _optimizer_names(named: dict[str, Parameter], optimizer: Any, owner: str) -> list[str]:
    """Names of the optimizer's parameters in ``named``, matched by identity."""
    by_id = {id(p): name for name, p in named.items()}
    names: list[str] = []
    for index, parameter in enumerate(optimizer.parameters):
        name = by_id.get(id(parameter))
        if name is None:
            raise ValueError(
                f"optimizer parameter {index} (shape {tuple(parameter.shape)}) is not a "
                f"parameter of {owner}"
            )
        if name in names:
            raise ValueError(f"optimizer lists parameter '{name}' more than once")
        names.append(name)
    return names


# =============================================================================== writing
def _name_bytes(name: str) -> bytes:
    raw = name.encode("utf-8")
    if not raw or len(raw) > _U32_MAX:
        raise ValueError(f"parameter name {name[:40]!r} must be 1..2^32-1 UTF-8 bytes")
    return struct.pack("<I", len(raw)) + raw


def _f32_bytes(values: Any, what: str) -> bytes:
    array = np.asarray(values)
    with np.errstate(over="ignore", invalid="ignore"):
        as_f32 = array.astype(_F32)
    if not np.isfinite(as_f32).all():
        raise ValueError(f"cannot save {what}: it holds values that are not finite in float32")
    return as_f32.tobytes(order="C")


def _parameter_chunks(named: dict[str, Parameter]) -> list[bytes]:
    if len(named) > _U32_MAX:
        raise ValueError(f"too many parameters ({len(named)}) for a u32 count")
    chunks = [struct.pack("<I", len(named))]
    for name, parameter in named.items():
        shape = tuple(parameter.shape)
        if any(dim > _U32_MAX for dim in shape) or len(shape) > _U32_MAX:
            raise ValueError(f"parameter '{name}' shape {shape} does not fit u32 dims")
        chunks.append(_name_bytes(name))
        chunks.append(struct.pack(f"<I{len(shape)}IQ", len(shape), *shape, parameter.numel()))
        chunks.append(_f32_bytes(parameter.numpy(), f"parameter '{name}'"))
    return chunks


def _adamw_chunks(named: dict[str, Parameter], optimizer: Any, owner: str) -> list[bytes]:
    _check_adamw(optimizer)
    state = optimizer.state_dict()
    names = _optimizer_names(named, optimizer, owner)
    config = optimizer.config()
    beta1, beta2 = config["betas"]
    floats = (config["lr"], beta1, beta2, config["eps"], config["weight_decay"],
              config["max_grad_norm"])
    chunks = [_f32_bytes(np.array(floats, dtype=np.float64), "the AdamW config"),
              struct.pack("<I", len(names))]
    entries = state["state"]
    for index, (name, parameter) in enumerate(zip(names, optimizer.parameters, strict=True)):
        if index in entries:
            entry = entries[index]
            step = int(entry["step"].item())
            first, second = entry["exp_avg"].numpy(), entry["exp_avg_sq"].numpy()
        else:  # not updated yet: step 0 and the initial zeros
            step, first = 0, np.zeros(parameter.shape, dtype=_F32)
            second = first
        if not 0 <= step <= _U64_MAX:
            raise ValueError(f"AdamW step {step} of '{name}' does not fit a u64")
        if first.size != parameter.numel() or second.size != parameter.numel():
            raise ValueError(f"AdamW moments of '{name}' have {first.size}/{second.size} "
                             f"elements, the parameter has {parameter.numel()}")
        chunks.append(_name_bytes(name))
        chunks.append(struct.pack("<QQ", step, parameter.numel()))
        chunks.append(_f32_bytes(first, f"AdamW first moments of '{name}'"))
        chunks.append(_f32_bytes(second, f"AdamW second moments of '{name}'"))
    return chunks


def save(path: str | os.PathLike, module: Module, optimizer: Any = None,
         rng: Rng | None = None) -> None:
    """Atomically write ``module``'s parameters (and AdamW state, and ``rng.state``) to ``path``.

    Everything is validated before the file system is touched: values must be finite in
    float32, every optimizer parameter must belong to ``module`` (ValueError otherwise) and
    the optimizer must be an AdamW (TypeError otherwise). The bytes go to ``path + ".tmp"``,
    which is flushed, fsynced and renamed over ``path``; on any error it is removed and an
    existing file at ``path`` is untouched.
    """
    _check_module(module)
    _save(path, dict(module.named_parameters()), optimizer, rng,
          f"this {type(module).__name__}")


def save_parameters(path: str | os.PathLike, parameters: Mapping[str, Parameter],
                    optimizer: Any = None, rng: Rng | None = None) -> None:
    """``save`` for named parameters that are not a module's ``parameters()``: the same
    TLCKPT file, whose parameter table is ``parameters`` (name → Parameter) in its order,
    and whose optimizer, if given, holds only parameters among them. The LoRA adapters'
    checkpoints are these (``tensorlib.adapters.lora.save_adapters``)."""
    _save(path, _check_named(parameters), optimizer, rng, "the given parameters")


def _save(path: str | os.PathLike, named: dict[str, Parameter], optimizer: Any,
          rng: Rng | None, owner: str) -> None:
    _check_rng(rng)
    flags = (FLAG_ADAMW if optimizer is not None else 0) | (FLAG_RNG if rng is not None else 0)
    chunks = [MAGIC, struct.pack("<II", VERSION, flags)]
    chunks += _parameter_chunks(named)
    if optimizer is not None:
        chunks += _adamw_chunks(named, optimizer, owner)
    if rng is not None:
        chunks.append(struct.pack("<Q", rng.state))
    write_atomic(path, chunks)


def save_legacy_weights(path: str | os.PathLike, module: Module) -> None:
    """Atomically write a legacy weights-only ``TLWEIGHT`` file (for tests and conversions)."""
    _check_module(module)
    chunks = [LEGACY_MAGIC, struct.pack("<I", VERSION)]
    write_atomic(path, chunks + _parameter_chunks(dict(module.named_parameters())))


# =============================================================================== loading
def _match_parameters(contents: _Contents, live: dict[str, Parameter],
                      owner: str) -> list[tuple[Tensor, np.ndarray]]:
    """The file's parameters staged for ``live`` by name (``stage_by_name``, strict: the
    same names, the same shapes), or CheckpointError listing every problem."""
    stored = {entry.name: entry.values.reshape(entry.shape) for entry in contents.parameters}
    try:
        staged, _ = stage_by_name(live, stored, True, f"checkpoint does not fit {owner}",
                                  source="the file")
    except StateDictError as error:
        raise CheckpointError(str(error)) from None
    return staged


def _keep_if_same_f32(live: float, stored: float) -> float:
    """The file holds float32: keep the live value when it rounds to the stored one."""
    return float(live) if float(np.float32(live)) == stored else float(stored)


def _staged_optimizer_state(contents: _Contents, names: list[str],
                            optimizer: Any) -> dict[str, Any]:
    """The state dict to hand to ``optimizer.load_state_dict``, fully checked."""
    _check_adamw(optimizer)
    stored = {m.name: m for m in contents.moments}
    problems = [f"no AdamW state for optimizer parameter '{name}'"
                for name in names if name not in stored]
    problems += [f"AdamW state for '{name}', which this optimizer does not hold"
                 for name in stored if name not in names]
    if problems:
        raise CheckpointError("AdamW section does not fit the optimizer: " + "; ".join(problems))
    file_config, live_config = contents.config, optimizer.config()
    assert file_config is not None  # the caller checked the AdamW flag, which reads it
    group = {
        "lr": _keep_if_same_f32(live_config["lr"], file_config["lr"]),
        "betas": (_keep_if_same_f32(live_config["betas"][0], file_config["beta1"]),
                  _keep_if_same_f32(live_config["betas"][1], file_config["beta2"])),
        "eps": _keep_if_same_f32(live_config["eps"], file_config["eps"]),
        "weight_decay": _keep_if_same_f32(live_config["weight_decay"],
                                          file_config["weight_decay"]),
        "params": list(range(len(names))),
    }
    state = {}
    for index, (name, parameter) in enumerate(zip(names, optimizer.parameters, strict=True)):
        entry = stored[name]
        shape, dtype = tuple(parameter.shape), parameter.dtype
        state[index] = {
            "step": entry.step,
            "exp_avg": entry.first.reshape(shape).astype(dtype, copy=True),
            "exp_avg_sq": entry.second.reshape(shape).astype(dtype, copy=True),
        }
    return {"state": state, "param_groups": [group],
            "max_grad_norm": _keep_if_same_f32(live_config["max_grad_norm"],
                                               file_config["max_grad_norm"])}


def load(path: str | os.PathLike, module: Module, optimizer: Any = None,
         rng: Rng | None = None) -> None:
    """Load a checkpoint into ``module`` (and ``optimizer``, ``rng``) all-or-nothing.

    The whole file is parsed and checked before anything changes; any problem with its
    contents raises :class:`CheckpointError` and leaves the module, optimizer and generator
    exactly as they were. Every live parameter must be in the file with its exact shape;
    sections the file has but that are not asked for are validated and skipped; asking for
    a section the file lacks is an error. A missing file raises ``FileNotFoundError``.
    Parameters are written with ``copy_`` under ``no_grad`` (bumping their versions).
    """
    _check_module(module)
    _load(path, dict(module.named_parameters()), optimizer, rng,
          f"this {type(module).__name__}")


def load_parameters(path: str | os.PathLike, parameters: Mapping[str, Parameter],
                    optimizer: Any = None, rng: Rng | None = None) -> None:
    """``load`` into named parameters that are not a module's ``parameters()`` (a file
    written by ``save_parameters``): the file's parameter table must hold exactly these
    names, with their shapes; all-or-nothing, as ``load``."""
    _load(path, _check_named(parameters), optimizer, rng, "the given parameters")


def _load(path: str | os.PathLike, live: dict[str, Parameter], optimizer: Any,
          rng: Rng | None, owner: str) -> None:
    _check_rng(rng)
    names: list[str] = []  # the optimizer's parameter names, when one is given
    if optimizer is not None:
        _check_adamw(optimizer)
        names = _optimizer_names(live, optimizer, owner)
    contents = _parse(_read_file(path))
    staged = _match_parameters(contents, live, owner)
    optimizer_state = None
    if optimizer is not None:
        if not contents.flags & FLAG_ADAMW:
            raise CheckpointError(f"an optimizer was given but this {contents.format} file "
                                  "has no AdamW section")
        optimizer_state = _staged_optimizer_state(contents, names, optimizer)
    if rng is not None and contents.rng_state is None:
        raise CheckpointError(f"an rng was given but this {contents.format} file has no "
                              "RNG section")
    # Commit. The optimizer goes first: its load_state_dict validates everything it takes
    # (config ranges, shapes) all-or-nothing, so a rejection here still changes nothing.
    if optimizer_state is not None:
        try:
            optimizer.load_state_dict(optimizer_state)
        except (ValueError, TypeError, KeyError) as error:
            raise CheckpointError(f"the optimizer rejected the checkpoint's AdamW state: "
                                  f"{error}") from error
    copy_staged(staged)
    if rng is not None:
        assert contents.rng_state is not None  # checked above
        rng.state = contents.rng_state


def inspect(path: str | os.PathLike) -> dict[str, Any]:
    """Describe a checkpoint without a live module (the file is fully validated).

    Returns ``{"format", "version", "flags", "file_size", "parameters": [{"name",
    "shape", "offset", "nbytes"}], "adamw": None or {"config", "parameters": [{"name",
    "step"}]}, "rng_state": None or int}``.
    """
    contents = _parse(_read_file(path))
    adamw = None
    if contents.config is not None:
        adamw = {"config": dict(contents.config),
                 "parameters": [{"name": m.name, "step": m.step} for m in contents.moments]}
    return {
        "format": contents.format,
        "version": contents.version,
        "flags": contents.flags,
        "file_size": contents.size,
        "parameters": [{"name": p.name, "shape": p.shape, "offset": p.offset,
                        "nbytes": 4 * p.values.size} for p in contents.parameters],
        "adamw": adamw,
        "rng_state": contents.rng_state,
    }
