"""NF4 weight quantization, the base of QLoRA (Dettmers et al., 2023).

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

:class:`NF4Linear` takes a Linear's place in its model (:func:`quantize_model`), as a
:class:`~tensorlib.adapters.layer_replacement.LinearStandIn`. QLoRA keeps the NF4 base weights
frozen and trains LoRA adapters on top (:func:`tensorlib.adapters.lora.attach_lora` wraps an
NF4Linear as it wraps a Linear); this module knows adapters only through that interface (a stand-in
whose ``base`` is a layer), never imports :mod:`tensorlib.adapters.lora`, and quantizes no layer
that has one. :func:`export_merged` (from :mod:`tensorlib.adapters.layer_replacement`, re-exported
here) turns such a model back into float32 weights under the original names, loadable by a plain
model; :func:`memory_report` counts its bytes.
"""

from __future__ import annotations

import gc
import inspect
import math
import types
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np

from tensorlib.adapters.layer_replacement import (
    LINEAR_LAYERS,
    LinearStandIn,
    export_merged,
    find_linear_layers,
    replace_layer,
)
from tensorlib.engine import validation
from tensorlib.engine.backend import array_module
from tensorlib.engine.reference_counts import other_holders
from tensorlib.engine.tensor import Tensor
from tensorlib.engine.validation import is_floating
from tensorlib.nn import functional as F
from tensorlib.nn.layers import Linear, check_input
from tensorlib.nn.module import Module, named_extra_parameters
from tensorlib.nn.parameter import Parameter

__all__ = [
    "NF4_LEVELS",
    "NF4Linear",
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


# ----------------------------------------------------------------------------- validation
def check_block_size(block_size: Any) -> int:
    """``block_size`` as an int if it is a positive even integer, else raise."""
    block_size = validation.integer(block_size, "block_size", minimum=2)
    if block_size % 2:
        raise ValueError(f"block_size must be a positive even integer (two codes share a "
                         f"byte), got {block_size}")
    return int(block_size)


def _float_array(weight: Any, what: str) -> Any:
    array = weight.numpy() if isinstance(weight, Tensor) else weight
    if not hasattr(array, "dtype") or not hasattr(array, "shape"):
        array = np.asarray(array)
    if not is_floating(array.dtype):
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


def _check_not_held(name: str, layer: Linear) -> None:
    """Refuse to release a dense weight while anything but ``layer`` refers to it: a
    variable, an optimizer's parameter list, a recorded graph would keep a tensor whose
    data is gone. The reference count (``tensorlib.engine.reference_counts``) says whether anything
    does; the garbage collector's referrers say what (a running function's local variables
    it cannot name)."""
    gc.collect()  # what only a dead reference cycle keeps alive does not count
    weight = layer._parameters["weight"]
    extra = other_holders(weight, known=1)  # known: the layer's own entry
    if extra is None or extra <= 0:  # None: no counts outside CPython
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


class NF4Linear(LinearStandIn):
    """A Linear layer whose weight is stored in NF4: ``y = x Ŵᵀ + b``, with ``Ŵ``
    dequantized from the codes on every call (nothing is cached) and never trained.

    It takes the place of a float :class:`~tensorlib.nn.Linear` in its model
    (:func:`quantize_model`, or :func:`quantize_linear` for a layer of its own) and holds:

    - ``codes`` (uint8, two 4-bit codes a byte) and ``absmax`` (float32, one scale per
      block): buffers, so ``to()`` moves them, but *non-persistent*: ``state_dict()`` and a
      checkpoint hold only the ``bias``;
    - ``bias``: the float Linear's own bias Parameter (the same object), or None;
    - ``in_features``, ``out_features``, ``block_size`` and ``dtype`` (that of the float
      weight, which dequantization returns).

    ``quantized`` gives the storage as an :class:`NF4Weight`.
    """

    def __init__(self, weight: NF4Weight, bias: Parameter | None = None):
        super().__init__()
        if not isinstance(weight, NF4Weight) or len(weight.shape) != 2:
            raise TypeError(f"NF4Linear takes the NF4Weight of a 2-D (out_features, "
                            f"in_features) weight, got {type(weight).__name__}"
                            + (f" of shape {weight.shape}" if isinstance(weight, NF4Weight)
                               else ""))
        self.out_features, self.in_features = weight.shape
        self.block_size = check_block_size(weight.block_size)
        self.dtype = np.dtype(weight.dtype)
        if weight.codes.dtype != np.uint8 or weight.absmax.dtype != np.float32:
            raise TypeError(f"NF4 codes must be uint8 and absmax float32, got "
                            f"{weight.codes.dtype} and {weight.absmax.dtype}")
        blocks = -(-self.out_features * self.in_features // self.block_size)
        if tuple(weight.absmax.shape) != (blocks,) or \
                tuple(weight.codes.shape) != (blocks * self.block_size // 2,):
            raise ValueError(f"a weight of shape {weight.shape} in blocks of {self.block_size} "
                             f"needs {blocks} scales and {blocks * self.block_size // 2} bytes "
                             f"of codes, got shapes {tuple(weight.absmax.shape)} and "
                             f"{tuple(weight.codes.shape)}")
        if bias is not None and (not isinstance(bias, Parameter)
                                 or bias.shape != (self.out_features,)
                                 or bias.dtype != self.dtype):
            raise ValueError(f"bias must be a {self.dtype} Parameter of shape "
                             f"({self.out_features},) or None, got {type(bias).__name__} of "
                             f"shape {getattr(bias, 'shape', None)}")
        self.bias = bias
        self.register_buffer("codes", weight.codes, persistent=False)
        self.register_buffer("absmax", weight.absmax, persistent=False)

    @property
    def quantized(self) -> NF4Weight:
        """The weight's NF4 storage (the buffers' current arrays)."""
        return NF4Weight(self.codes.numpy(), self.absmax.numpy(),
                         (self.out_features, self.in_features), self.block_size, self.dtype)

    def dense_weight(self) -> Any:
        """``Ŵ``, the weight dequantized from the codes: a new ``dtype`` array."""
        return self.quantized.dequantize()

    def forward(self, x: Tensor) -> Tensor:
        """``x (..., in_features)`` → ``(..., out_features)``."""
        check_input(x, "NF4Linear", self.in_features)
        weight = Tensor(self.dense_weight())  # a constant: NF4 weights do not train
        return F.linear(x, weight, self.bias)  # x Ŵᵀ + b

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}, weight=NF4(block_size={self.block_size})")


def _has_adapter(layer: Module) -> bool:
    """Whether ``layer`` is a stand-in that wraps another layer (a LoRALinear)."""
    return isinstance(layer, LinearStandIn) and layer.base is not None


def _quantized_layers(layers: Sequence[tuple[str, Module]], block_size: int
                      ) -> list[NF4Linear]:
    """Check every layer, quantize each into a new NF4Linear (staging: nothing changes
    yet), and return them; raises, changing nothing, if any layer cannot be quantized."""
    block_size = check_block_size(block_size)
    done = [name or "(root)" for name, layer in layers if isinstance(layer, NF4Linear)]
    if done:
        raise ValueError(f"these layers are already NF4-quantized: {', '.join(done)}")
    adapted = [name or "(root)" for name, layer in layers if _has_adapter(layer)]
    if adapted:
        raise ValueError(f"these layers have a LoRA adapter: {', '.join(adapted)}; quantize "
                         "before attaching adapters (QLoRA), or merge_lora / detach_lora first")
    for name, layer in layers:
        if not isinstance(layer, Linear):
            raise TypeError(f"'{name or '(root)'}' is a {type(layer).__name__}, not a Linear")
        if layer.weight.numel() == 0:
            raise ValueError(f"the weight of Linear '{name or '(root)'}' was released when it "
                             "was quantized; use the NF4Linear that took its place")
    for name, layer in layers:
        _check_not_held(name, layer)  # type: ignore[arg-type]  # a Linear: checked above
    staged = [NF4Linear(quantize_nf4(layer.weight.numpy(), block_size), layer.bias)
              for _, layer in layers]
    for (_, layer), quantized in zip(layers, staged, strict=True):
        quantized.train(layer.training)
    return staged


def _release_weight(layer: Linear) -> None:
    """Drop the float weight of a Linear that an NF4Linear replaced."""
    weight = layer.weight
    weight.grad = None
    weight.trainable = False
    weight._release(array_module(weight.numpy()).empty((0,), dtype=weight.dtype))


def quantize_linear(linear: Linear, block_size: int = 64) -> NF4Linear:
    """The NF4 version of a float Linear that is not part of a model: returns a new
    :class:`NF4Linear` holding ``linear``'s weight in NF4 and its bias Parameter (the same
    object). Use it as ``layer = quantize_linear(layer)``; for layers inside a model use
    :func:`quantize_model`, which puts the NF4Linear in their place.

    ``linear`` gives up its float weight: its data becomes an empty array, its gradient
    None, and it is frozen (the memory goes; ``linear`` itself no longer computes). Raises,
    with nothing changed: RuntimeError while anything else still holds the weight (a
    variable, an optimizer, a recorded graph); ValueError for a layer that is already NF4,
    has a LoRA adapter, or is a child of a model; TypeError for anything else.
    """
    if not isinstance(linear, LINEAR_LAYERS):
        raise TypeError(f"quantize_linear takes a Linear, got {type(linear).__name__}")
    if linear._parent_registered:
        raise ValueError("this Linear is a child of a model; quantize_model(model, name) "
                         "quantizes it in its place")
    (quantized,) = _quantized_layers([("", linear)], block_size)
    _release_weight(linear)
    return quantized


def quantize_model(model: Module, patterns: str | Iterable[str] = "*",
                   block_size: int = 64) -> list[str]:
    """Put an :class:`NF4Linear` in the place of every Linear of ``model`` whose dotted
    name matches ``patterns`` (see
    :func:`~tensorlib.adapters.layer_replacement.find_linear_layers`).

    Parameter names stay, less each quantized ``<layer>.weight``; each replaced Linear's
    float weight is released (see :func:`quantize_linear`). All-or-nothing: every layer is
    checked and quantized into staging before the model changes; the errors are those of
    :func:`quantize_linear` (a matched layer that is already NF4 or has a LoRA adapter is
    an error, not skipped). Returns the layer names. The model itself cannot be replaced:
    for a lone Linear use :func:`quantize_linear`.
    """
    layers = find_linear_layers(model, patterns)
    if any(name == "" for name, _ in layers):
        raise ValueError(f"the {type(model).__name__} itself matches; quantize_model replaces "
                         "layers inside a model: use quantize_linear for a lone Linear")
    staged = _quantized_layers(layers, block_size)
    for (name, layer), quantized in zip(layers, staged, strict=True):
        replace_layer(model, name, quantized)
        _release_weight(layer)  # type: ignore[arg-type]  # a Linear: _quantized_layers checked
    return [name for name, _ in layers]


def dequantize_linear(linear: NF4Linear) -> Linear:
    """A float :class:`~tensorlib.nn.Linear` from an NF4Linear: a new frozen weight
    Parameter holding the dequantized weight and the NF4Linear's bias Parameter (the same
    object). ``linear`` itself is left as it is. For layers inside a model use
    :func:`dequantize_model`."""
    if not isinstance(linear, NF4Linear):
        raise TypeError(f"dequantize_linear takes an NF4Linear, got {type(linear).__name__}")
    weight = Parameter(linear.quantized.dequantize(), trainable=False)
    layer = Linear.from_parameters(weight, linear.bias)
    layer.train(linear.training)
    return layer


def dequantize_model(model: Module) -> list[str]:
    """Put a float Linear (see :func:`dequantize_linear`) in the place of every NF4Linear of
    ``model``, under the same names; returns their names. Raises ValueError, changing
    nothing, if an NF4 layer has a LoRA adapter (``export_merged`` gives float weights of
    such a model; ``merge_lora`` cannot merge into NF4)."""
    if isinstance(model, NF4Linear):
        raise ValueError("the model itself is an NF4Linear: use dequantize_linear")
    adapted = [name for name, m in model.named_modules()
               if _has_adapter(m) and isinstance(m.base, NF4Linear)]
    if adapted:
        raise ValueError(f"these NF4 layers have a LoRA adapter: {', '.join(adapted)}; "
                         "detach_lora first, or use export_merged for float weights")
    layers = [(name, m) for name, m in model.named_modules() if isinstance(m, NF4Linear)]
    for name, layer in zip([n for n, _ in layers], [dequantize_linear(m) for _, m in layers],
                           strict=True):
        replace_layer(model, name, layer)
    return [name for name, _ in layers]


def memory_report(model: Module) -> dict[str, int]:
    """Bytes held by ``model``: ``float_parameters`` (what ``parameters()`` lists: the base
    model's float parameters), ``lora_parameters`` (the attached adapters, its extra
    parameters), ``nf4_codes``, ``nf4_scales`` and their ``total``."""
    adapters = [p for _, p in named_extra_parameters(model)]
    report = {
        "float_parameters": sum(int(p.numpy().nbytes) for p in model.parameters()),
        "lora_parameters": sum(int(p.numpy().nbytes) for p in adapters),
        "nf4_codes": 0,
        "nf4_scales": 0,
    }
    for _, module in model.named_modules():
        layer = module.base if _has_adapter(module) else module
        if isinstance(layer, NF4Linear):
            report["nf4_codes"] += int(layer.codes.numpy().nbytes)
            report["nf4_scales"] += int(layer.absmax.numpy().nbytes)
    report["total"] = sum(report.values())
    return report


def model_memory_bytes(model: Module) -> int:
    """The ``total`` of :func:`memory_report`: float parameters, adapters, codes and scales."""
    return memory_report(model)["total"]
