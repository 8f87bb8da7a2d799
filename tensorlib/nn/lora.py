"""LoRA: low-rank adapters attached to Linear layers (Hu et al., 2021).

A frozen Linear computes ``y = x Wᵀ + b``. An adapter adds a trainable low-rank update::

    y = x Wᵀ + b + (alpha / rank) · x Aᵀ Bᵀ        A (rank, in), B (out, rank)

``A`` starts random and ``B`` at zero, so attaching an adapter leaves every output exactly
as it was; training then moves only ``A`` and ``B`` (``rank · (in + out)`` numbers instead
of ``in · out``).

Adapters live *outside* the registered module tree: ``model.parameters()``,
``named_parameters()`` and ``state_dict()`` keep the base model's names and count, so a base
checkpoint still loads into a model with adapters. They are reached through
:func:`lora_parameters` (named ``<layer>.lora.A`` / ``<layer>.lora.B``, in module order).
:func:`merge_lora` folds ``(alpha / rank) · B A`` into the base weight and removes the
adapters; :func:`detach_lora` removes them without merging.
"""

from __future__ import annotations

import fnmatch
import math
import numbers
from collections.abc import Iterable
from typing import Any

import numpy as np

from tensorlib.autograd import no_grad
from tensorlib.nn.layers import Linear, check_float_dtype, check_positive_int, resolve_rng
from tensorlib.nn.module import Module, Parameter
from tensorlib.nn.rng import Rng
from tensorlib.tensor import Tensor

__all__ = [
    "LowRankAdapter",
    "attach_lora",
    "detach_lora",
    "find_linear_layers",
    "lora_parameters",
    "merge_lora",
]


class LowRankAdapter(Module):
    """The low-rank update ``delta(x) = (alpha / rank) · x Aᵀ Bᵀ``.

    Parameters: ``A (rank, in_features)``, drawn ``U(-1/sqrt(in), 1/sqrt(in))`` from ``rng``
    (PyTorch's ``kaiming_uniform_(a=sqrt(5))``, which peft uses for LoRA), and
    ``B (out_features, rank)``, zero. ``alpha`` is a positive number; ``scale = alpha/rank``.
    """

    def __init__(self, in_features: int, out_features: int, rank: int, alpha: float,
                 rng: Rng | None = None, dtype: Any = np.float32):
        super().__init__()
        self.in_features = check_positive_int(in_features, "in_features")
        self.out_features = check_positive_int(out_features, "out_features")
        self.rank = check_positive_int(rank, "rank")
        if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real):
            raise TypeError(f"LoRA alpha must be a number, got {alpha!r}")
        if not 0.0 < float(alpha) < math.inf:
            raise ValueError(f"LoRA alpha must be a finite number > 0, got {alpha!r}")
        self.alpha = float(alpha)
        self.scale = self.alpha / self.rank
        dtype = check_float_dtype(dtype)
        bound = 1.0 / math.sqrt(self.in_features)
        generator = resolve_rng(rng)
        self.A = Parameter(generator.uniform(-bound, bound, size=(self.rank, self.in_features),
                                             dtype=dtype))
        self.B = Parameter(np.zeros((self.out_features, self.rank), dtype=dtype))

    def forward(self, x: Tensor) -> Tensor:
        """``x (..., in_features)`` → ``(..., out_features)``."""
        down = x @ self.A.transpose()  # (..., rank)
        return (down @ self.B.transpose()) * self.scale  # (..., out)

    def delta_weight(self) -> np.ndarray:
        """``(alpha / rank) · B A`` as an array of shape ``(out_features, in_features)``."""
        return (self.B.data @ self.A.data) * self.A.dtype.type(self.scale)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"rank={self.rank}, alpha={self.alpha:g}")


# ------------------------------------------------------------------------------- selection
def _pattern_list(patterns: str | Iterable[str]) -> list[str]:
    items = [patterns] if isinstance(patterns, str) else list(patterns)
    if not items:
        raise ValueError("no layer name patterns given")
    for item in items:
        if not isinstance(item, str):
            raise TypeError(f"layer name patterns must be strings, got {item!r}")
    return items


def find_linear_layers(model: Module, patterns: str | Iterable[str] = "*"
                       ) -> list[tuple[str, Linear]]:
    """The Linear layers of ``model`` whose dotted names match any of ``patterns``.

    Patterns are ``fnmatch`` patterns on the whole dotted name (``*`` also crosses dots):
    ``"blocks.*.attention.output"``, ``"blocks.*.mlp_*"``, ``"*"``. The model itself, if it
    is a Linear, has the name ``""`` (matched by ``"*"``). Layers come in ``named_modules``
    order. Raises ValueError when a pattern matches no Linear layer, listing the ones there.
    """
    if not isinstance(model, Module):
        raise TypeError(f"expected a Module, got {type(model).__name__}")
    items = _pattern_list(patterns)
    linears = [(name, module) for name, module in model.named_modules()
               if isinstance(module, Linear)]
    for pattern in items:
        if not any(fnmatch.fnmatchcase(name, pattern) for name, _ in linears):
            available = ", ".join(repr(name) for name, _ in linears) or "none"
            raise ValueError(f"pattern {pattern!r} matches no Linear layer of the "
                             f"{type(model).__name__}; its Linear layers are: {available}")
    return [(name, module) for name, module in linears
            if any(fnmatch.fnmatchcase(name, pattern) for pattern in items)]


def _lora_layers(model: Module) -> list[tuple[str, Linear]]:
    return [(name, module) for name, module in model.named_modules()
            if isinstance(module, Linear) and module.lora is not None]


# ------------------------------------------------------------------------------- attaching
def attach_lora(model: Module, patterns: str | Iterable[str], rank: int, alpha: float,
                rng: Rng | None = None) -> list[str]:
    """Attach a :class:`LowRankAdapter` to each Linear whose name matches ``patterns``.

    Every base parameter of ``model`` is frozen (``trainable=False``); only the adapters
    train. Outputs are unchanged at attach time (``B = 0``). Adapters are drawn from ``rng``
    in ``named_modules`` order and take the layer's dtype (float32 for an NF4 layer).
    Returns the names of the adapted layers. All checks come first: a pattern matching no
    Linear, or a matched layer that already has an adapter, raises ValueError and nothing
    changes.
    """
    layers = find_linear_layers(model, patterns)
    rank = check_positive_int(rank, "rank")
    taken = [name or "(root)" for name, layer in layers if layer.lora is not None]
    if taken:
        raise ValueError(f"these layers already have a LoRA adapter: {', '.join(taken)}; "
                         "merge_lora or detach_lora first")
    generator = resolve_rng(rng)
    adapters = [LowRankAdapter(layer.in_features, layer.out_features, rank, alpha,
                               rng=generator, dtype=layer.compute_dtype)
                for _, layer in layers]
    for parameter in model.parameters():
        parameter.trainable = False
    for (_, layer), adapter in zip(layers, adapters, strict=True):
        layer._set_lora(adapter)
    return [name for name, _ in layers]


def lora_parameters(model: Module) -> dict[str, Parameter]:
    """Every adapter parameter of ``model`` by name (``blocks.0.attention.output.lora.A``,
    then ``...lora.B``), in ``named_modules`` order. Pass ``.values()`` to an optimizer."""
    if not isinstance(model, Module):
        raise TypeError(f"expected a Module, got {type(model).__name__}")
    named: dict[str, Parameter] = {}
    for name, layer in _lora_layers(model):
        prefix = f"{name}.lora." if name else "lora."
        for parameter_name, parameter in layer.lora.named_parameters():
            named[prefix + parameter_name] = parameter
    return named


def merge_lora(model: Module) -> list[str]:
    """Fold every adapter into its layer's weight, ``W += (alpha/rank) B A``, and remove it.

    The model's outputs are the same before and after (up to rounding). The merged weights
    keep their ``trainable`` flag (frozen after :func:`attach_lora`). Returns the merged
    layer names. Raises ValueError, changing nothing, when no adapter is attached or one
    sits on an NF4-quantized layer (use ``tensorlib.nn.quant.export_merged`` for those).
    """
    layers = _lora_layers(model)
    if not layers:
        raise ValueError(f"the {type(model).__name__} has no LoRA adapters to merge")
    quantized = [name or "(root)" for name, layer in layers if layer.quantized is not None]
    if quantized:
        raise ValueError(f"cannot merge adapters into NF4-quantized weights "
                         f"({', '.join(quantized)}); "
                         "use tensorlib.nn.quant.export_merged to get merged float32 weights")
    merged = [(layer, layer.weight.data + layer.lora.delta_weight()) for _, layer in layers]
    with no_grad():
        for layer, weight in merged:
            layer.weight.copy_(weight)
            layer._set_lora(None)
    return [name for name, _ in layers]


def detach_lora(model: Module) -> dict[str, LowRankAdapter]:
    """Remove every adapter without merging it; returns them by layer name. The base
    parameters stay frozen. Raises ValueError when none is attached."""
    layers = _lora_layers(model)
    if not layers:
        raise ValueError(f"the {type(model).__name__} has no LoRA adapters to detach")
    removed = {}
    for name, layer in layers:
        removed[name] = layer.lora
        layer._set_lora(None)
    return removed
