"""NF4 weight quantization and QLoRA (Dettmers et al., 2023).

A weight is cut, in C order, into blocks of ``block_size`` numbers. Each block is divided by
its largest magnitude (``absmax``, kept as float32), so its values lie in [-1, 1], and each
value is replaced by the index (0..15) of the nearest of the 16 NormalFloat-4 levels
(:data:`NF4_LEVELS`). Two 4-bit codes share a byte: the first code of a pair in the high
nibble, the second in the low nibble. Dequantizing is ``NF4_LEVELS[code] * absmax``.

Storage per weight element: 4 bits of code plus 32/``block_size`` bits of scale (0.5 bit at
the default 64), against 32 bits for float32: about 7.1 times smaller.

A weight whose size is not a multiple of ``block_size`` is padded with zeros to whole
blocks (the last block's absmax is that of its real elements); the padding codes are stored
and dropped on dequantization. ``block_size`` must be a positive even integer, so that a
byte never holds codes of two different blocks.

QLoRA keeps the NF4 base weights frozen and trains LoRA adapters on top
(:func:`tensorlib.nn.lora.attach_lora`); :func:`export_merged` turns such a model back into
float32 weights under the original names, loadable by a plain model.
"""

from __future__ import annotations

import gc
import inspect
import math
import numbers
import sys
import types
from collections.abc import Iterable
from typing import Any, NamedTuple

import numpy as np

from tensorlib.backend import array_module
from tensorlib.nn.layers import Linear
from tensorlib.nn.lora import find_linear_layers, lora_parameters
from tensorlib.nn.module import Module, Parameter
from tensorlib.tensor import Tensor

__all__ = [
    "NF4_LEVELS",
    "NF4Weight",
    "dequantize_linear",
    "dequantize_model",
    "dequantize_nf4",
    "export_merged",
    "memory_report",
    "model_memory_bytes",
    "pack_codes",
    "quantization_error",
    "quantize_linear",
    "quantize_model",
    "quantize_nf4",
    "unpack_codes",
]

# The 16 NormalFloat-4 levels of the QLoRA paper (the float32 values bitsandbytes uses).
# They are quantiles of the standard normal N(0, 1), normalised so the ends are -1 and 1:
# with p = 0.9677083 (the mean of 1 - 1/(2·15) and 1 - 1/(2·16)), the 8 positive levels are
# Φ⁻¹ of 8 probabilities evenly spaced from p down to (but not including) 0.5, the 7
# negative levels are -Φ⁻¹ of 7 probabilities evenly spaced the same way, and 0 is added
# exactly; everything is divided by the largest, Φ⁻¹(p). The split 8/7 makes the code
# asymmetric but gives zero an exact code (padding and zero weights stay exactly zero).
NF4_LEVELS = np.array([
    -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
    -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
    0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224,
    0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0,
], dtype=np.float32)
# Value v (already divided by its block's absmax) gets code i when it lies between the
# midpoints of levels i-1, i and i, i+1; a value exactly on a midpoint gets the lower level.
_DECISION_BOUNDARIES = (NF4_LEVELS[1:] + NF4_LEVELS[:-1]) / np.float32(2)  # (15,)
ZERO_CODE = 7  # NF4_LEVELS[7] == 0


class NF4Weight(NamedTuple):
    """A weight in NF4: ``codes`` (uint8, two codes a byte, ``ceil(n / block_size) *
    block_size / 2`` bytes), ``absmax`` (float32, one per block), the original ``shape``,
    ``block_size`` and the ``dtype`` dequantization returns."""

    codes: Any
    absmax: Any
    shape: tuple[int, ...]
    block_size: int
    dtype: np.dtype = np.dtype(np.float32)

    def dequantize(self) -> Any:
        """The weight as a ``dtype`` array of ``shape`` (on the codes' backend)."""
        return dequantize_nf4(self.codes, self.absmax, self.shape, self.block_size, self.dtype)

    @property
    def nbytes(self) -> int:
        """Bytes of storage: codes plus scales."""
        return int(self.codes.nbytes + self.absmax.nbytes)

    def arrays(self) -> dict[str, Any]:
        """The backend arrays, by name (what a backend transfer moves)."""
        return {"codes": self.codes, "absmax": self.absmax}

    def with_arrays(self, arrays: dict[str, Any]) -> NF4Weight:
        """A copy holding ``arrays`` (the keys of :meth:`arrays`, same shapes and dtypes)."""
        if set(arrays) != {"codes", "absmax"}:
            raise KeyError(f"NF4 storage takes the arrays 'absmax' and 'codes', got "
                           f"{sorted(arrays)}")
        for name, old in self.arrays().items():
            new = arrays[name]
            if tuple(new.shape) != tuple(old.shape) or new.dtype != old.dtype:
                raise ValueError(f"NF4 {name}: expected shape {tuple(old.shape)} and dtype "
                                 f"{old.dtype}, got {tuple(new.shape)} and {new.dtype}")
        return self._replace(codes=arrays["codes"], absmax=arrays["absmax"])


# ----------------------------------------------------------------------------- validation
def check_block_size(block_size: Any) -> int:
    """``block_size`` as an int if it is a positive even integer, else raise."""
    if isinstance(block_size, (bool, np.bool_)) or not isinstance(block_size, numbers.Integral):
        raise TypeError(f"block_size must be a positive even integer, got {block_size!r}")
    if block_size < 2 or block_size % 2:
        raise ValueError(f"block_size must be a positive even integer (two codes share a "
                         f"byte), got {block_size}")
    return int(block_size)


def _float_array(weight: Any, what: str) -> Any:
    array = weight.data if isinstance(weight, Tensor) else weight
    if not hasattr(array, "dtype") or not hasattr(array, "shape"):
        array = np.asarray(array)
    if array.dtype.kind != "f":
        raise TypeError(f"{what} must be floating point, got dtype {array.dtype}")
    return array


def _to_numpy(array: Any) -> np.ndarray:
    return array if array_module(array) is np else array.get()


# ----------------------------------------------------------------------------- codes
def pack_codes(codes: Any) -> Any:
    """Pack 4-bit codes (integers 0..15, even count) two a byte: ``codes[2i]`` in the high
    nibble of byte i, ``codes[2i + 1]`` in the low nibble."""
    xp = array_module(codes)
    codes = codes.reshape(-1)
    if codes.size % 2:
        raise ValueError(f"an even number of codes is needed to pack them, got {codes.size}")
    if codes.size and (codes.dtype.kind not in "iu" or int(codes.min()) < 0
                       or int(codes.max()) > 15):
        raise ValueError("codes must be integers in [0, 15]")
    codes = codes.astype(xp.uint8)
    return (codes[0::2] << 4) | codes[1::2]


def unpack_codes(packed: Any) -> Any:
    """The inverse of :func:`pack_codes`: ``2 * packed.size`` uint8 codes in 0..15."""
    xp = array_module(packed)
    if packed.dtype != xp.uint8:
        raise TypeError(f"packed codes must be uint8, got dtype {packed.dtype}")
    packed = packed.reshape(-1)
    return xp.stack([packed >> 4, packed & 0x0F], axis=-1).reshape(-1)  # (2n,)


# ----------------------------------------------------------------------------- NF4
def quantize_nf4(weight: Any, block_size: int = 64) -> NF4Weight:
    """Quantize a float array (or Tensor) to NF4 with one absmax scale per block.

    The weight is rounded to float32, flattened in C order and zero-padded to whole blocks.
    Raises ValueError for an empty or non-finite weight or a bad ``block_size``.
    """
    block_size = check_block_size(block_size)
    array = _float_array(weight, "the weight to quantize")
    if array.size == 0:
        raise ValueError(f"cannot quantize an empty weight of shape {tuple(array.shape)}")
    xp = array_module(array)
    if not bool(xp.isfinite(array).all()):
        raise ValueError(f"cannot quantize a weight of shape {tuple(array.shape)} with "
                         "non-finite values")
    flat = array.reshape(-1).astype(xp.float32)
    count = flat.size
    blocks = -(-count // block_size)
    if blocks * block_size != count:
        flat = xp.concatenate([flat, xp.zeros(blocks * block_size - count, dtype=xp.float32)])
    grouped = flat.reshape(blocks, block_size)  # (blocks, block_size)
    absmax = xp.abs(grouped).max(axis=1)  # (blocks,)
    safe = xp.where(absmax > 0, absmax, xp.float32(1.0))
    normalized = grouped / safe[:, None]  # (blocks, block_size), in [-1, 1]
    codes = xp.searchsorted(xp.asarray(_DECISION_BOUNDARIES), normalized.reshape(-1))
    return NF4Weight(pack_codes(codes.astype(xp.uint8)), absmax.astype(xp.float32),
                     tuple(int(d) for d in array.shape), block_size, np.dtype(array.dtype))


def dequantize_nf4(codes: Any, absmax: Any, shape: tuple[int, ...], block_size: int = 64,
                   dtype: Any = np.float32) -> Any:
    """The weight of ``shape`` back from packed ``codes`` and per-block ``absmax``."""
    block_size = check_block_size(block_size)
    shape = tuple(int(d) for d in shape)
    count = math.prod(shape)
    blocks = -(-count // block_size)
    if tuple(absmax.shape) != (blocks,):
        raise ValueError(f"a weight of shape {shape} in blocks of {block_size} needs "
                         f"{blocks} scales, got absmax of shape {tuple(absmax.shape)}")
    if tuple(codes.shape) != (blocks * block_size // 2,):
        raise ValueError(f"a weight of shape {shape} in blocks of {block_size} needs "
                         f"{blocks * block_size // 2} bytes of codes, got shape "
                         f"{tuple(codes.shape)}")
    xp = array_module(codes)
    levels = xp.asarray(NF4_LEVELS)[unpack_codes(codes)]  # (blocks * block_size,)
    values = levels.reshape(blocks, block_size) * absmax.astype(xp.float32)[:, None]
    return values.reshape(-1)[:count].reshape(shape).astype(dtype, copy=False)


def quantization_error(weight: Any, quantized: NF4Weight) -> dict[str, float]:
    """How far ``quantized.dequantize()`` is from ``weight``: ``max_abs`` and ``mean_abs``
    element errors and ``relative``, ``‖W - Ŵ‖ / ‖W‖`` (Frobenius norms), in float64."""
    array = _float_array(weight, "weight")
    if tuple(array.shape) != tuple(quantized.shape):
        raise ValueError(f"weight of shape {tuple(array.shape)} does not match the quantized "
                         f"shape {tuple(quantized.shape)}")
    original = _to_numpy(array).astype(np.float64)
    error = _to_numpy(quantized.dequantize()).astype(np.float64) - original
    norm = float(np.linalg.norm(original))
    return {
        "max_abs": float(np.abs(error).max()),
        "mean_abs": float(np.abs(error).mean()),
        "relative": float(np.linalg.norm(error)) / norm if norm > 0 else 0.0,
    }


# ----------------------------------------------------------------------------- layers
def _describe_holder(referrer: Any, target: Any) -> str:
    """A few words on what ``referrer`` (something that refers to ``target``) is."""
    if isinstance(referrer, types.FrameType):
        names = [name for name, value in referrer.f_locals.items() if value is target]
        return f"local variable {', '.join(names) or '?'} of {referrer.f_code.co_name}()"
    if isinstance(referrer, dict):
        keys = [key for key, value in referrer.items() if value is target]
        if "__name__" in referrer and "__builtins__" in referrer:  # a module's namespace
            return f"global variable {', '.join(map(str, keys))}"
        owners = [type(o).__name__ for o in gc.get_referrers(referrer)
                  if not isinstance(o, (dict, list, tuple, types.FrameType))]
        return f"a dict{' in ' + owners[0] if owners else ''}"
    if isinstance(referrer, (list, tuple, set)):
        owners = [type(o).__name__ for o in gc.get_referrers(referrer)
                  if not isinstance(o, (dict, list, tuple, types.FrameType))]
        kind = type(referrer).__name__
        return f"a {kind}{' in ' + owners[0] if owners else ''}"
    return f"a {type(referrer).__name__}"


def _count_references(held: Any) -> int:
    """``sys.getrefcount`` of an object held by one dict entry and one local variable, as
    ``held`` is in :func:`_check_not_held`: what counts as "nothing else holds it"."""
    return sys.getrefcount(held)


def _check_not_held(name: str, layer: Linear) -> None:
    """Refuse to release a dense weight while anything but ``layer`` refers to it: a
    variable, an optimizer's parameter list, a recorded graph would keep a tensor whose
    data is gone. The reference count says whether anything does; the garbage collector's
    referrers say what (a running function's local variables it cannot name)."""
    gc.collect()  # what only a dead reference cycle keeps alive does not count
    probe = Parameter(np.zeros(1, dtype=np.float32))
    box = {"weight": probe}
    baseline = _count_references(probe)
    del box, probe
    weight = layer._parameters["weight"]
    extra = _count_references(weight) - baseline
    if extra <= 0:
        return
    own_frame = inspect.currentframe()
    descriptions, referrer = set(), None
    for referrer in gc.get_referrers(weight):  # a plain loop: a comprehension would hold
        if referrer is not layer._parameters and referrer is not own_frame:  # weight in a cell
            descriptions.add(_describe_holder(referrer, weight))
    del weight, referrer, own_frame  # the traceback keeps this frame: hold nothing
    if len(descriptions) < extra:
        descriptions.add("a local variable of a running function")
    raise RuntimeError(
        f"cannot quantize the weight of Linear '{name or '(root)'}': {extra} other "
        f"reference(s) still hold it ({'; '.join(sorted(descriptions))}) and would see a "
        "released tensor; delete them (or build the optimizer after quantizing) and try again")


def _quantize_layers(layers: list[tuple[str, Linear]], block_size: int) -> list[str]:
    block_size = check_block_size(block_size)
    done = [name or "(root)" for name, layer in layers if layer.quantized is not None]
    if done:
        raise ValueError(f"these layers are already NF4-quantized: {', '.join(done)}")
    for name, layer in layers:
        _check_not_held(name, layer)
    storages = [quantize_nf4(layer.weight.data, block_size) for _, layer in layers]
    for (_, layer), storage in zip(layers, storages, strict=True):
        weight = layer.weight
        xp = array_module(weight.data)
        weight.grad = None
        weight.trainable = False
        weight._release(xp.empty((0,), dtype=weight.dtype))  # drop the float storage
        layer._set_quantized(storage)
    return [name for name, _ in layers]


def quantize_linear(linear: Linear, block_size: int = 64) -> NF4Weight:
    """Replace ``linear``'s float weight by NF4 storage (``linear.quantized``).

    The forward pass dequantizes on every call (nothing is cached) and the NF4 weight does
    not train. The old weight Parameter is released: its data becomes an empty array, its
    gradient None, and ``parameters()`` / ``state_dict()`` skip the inactive ``weight``
    registration (the bias and any LoRA adapter are unaffected). Raises RuntimeError, with
    nothing changed, while anything else still holds the weight (a variable, an optimizer,
    a recorded graph); ValueError if it is already quantized.
    """
    if not isinstance(linear, Linear):
        raise TypeError(f"quantize_linear takes a Linear, got {type(linear).__name__}")
    _quantize_layers([("", linear)], block_size)
    return linear.quantized


def quantize_model(model: Module, patterns: str | Iterable[str] = "*",
                   block_size: int = 64) -> list[str]:
    """NF4-quantize every Linear of ``model`` whose dotted name matches ``patterns``
    (``fnmatch``, as in :func:`tensorlib.nn.lora.attach_lora`). All-or-nothing: every layer
    is checked (and quantized into staging) before any changes. Returns the layer names."""
    return _quantize_layers(find_linear_layers(model, patterns), block_size)


def dequantize_linear(linear: Linear) -> Parameter:
    """Turn an NF4 layer back into a float layer: a new frozen Parameter holding the
    dequantized weight takes the ``weight`` registration again (same name, same place)."""
    if not isinstance(linear, Linear):
        raise TypeError(f"dequantize_linear takes a Linear, got {type(linear).__name__}")
    if linear.quantized is None:
        raise ValueError("this Linear is not quantized")
    weight = Parameter(linear.quantized.dequantize(), trainable=False)
    linear._set_quantized(None, weight=weight)
    return weight


def dequantize_model(model: Module) -> list[str]:
    """:func:`dequantize_linear` on every NF4 layer of ``model``; returns their names."""
    layers = [(name, m) for name, m in model.named_modules()
              if isinstance(m, Linear) and m.quantized is not None]
    for _, layer in layers:
        dequantize_linear(layer)
    return [name for name, _ in layers]


def export_merged(model: Module) -> dict[str, np.ndarray]:
    """Float weights of ``model`` under its base names, as numpy arrays (copies).

    NF4 weights are dequantized and every LoRA adapter is folded in
    (``W + (alpha/rank) B A``); other parameters are copied. The keys and order are those of
    the unquantized model's ``state_dict()``, so a plain model of the same configuration
    loads the result with ``load_state_dict`` (strict) and computes the same outputs.
    The model itself is not changed.
    """
    if not isinstance(model, Module):
        raise TypeError(f"export_merged takes a Module, got {type(model).__name__}")
    state: dict[str, np.ndarray] = {}
    for module_name, module in model.named_modules():
        prefix = module_name + "." if module_name else ""
        for name, parameter in module._parameters.items():
            if isinstance(module, Linear) and name == "weight":
                value = module.weight.data if module.quantized is None \
                    else module.quantized.dequantize()
                if module.lora is not None:
                    value = value + module.lora.delta_weight().astype(value.dtype)
            else:
                value = parameter.data
            state[prefix + name] = np.array(_to_numpy(value), copy=True)
    return state


def memory_report(model: Module) -> dict[str, int]:
    """Bytes held by ``model``: ``float_parameters`` (everything ``parameters()`` lists),
    ``lora_parameters``, ``nf4_codes``, ``nf4_scales`` and their ``total``."""
    report = {
        "float_parameters": sum(int(p.data.nbytes) for p in model.parameters()),
        "lora_parameters": sum(int(p.data.nbytes) for p in lora_parameters(model).values()),
        "nf4_codes": 0,
        "nf4_scales": 0,
    }
    for _, module in model.named_modules():
        if isinstance(module, Linear) and module.quantized is not None:
            report["nf4_codes"] += int(module.quantized.codes.nbytes)
            report["nf4_scales"] += int(module.quantized.absmax.nbytes)
    report["total"] = sum(report.values())
    return report


def model_memory_bytes(model: Module) -> int:
    """The ``total`` of :func:`memory_report`: float parameters, adapters, codes and scales."""
    return memory_report(model)["total"]
