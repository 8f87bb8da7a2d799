"""LoRA: low-rank adapters on Linear layers (Hu et al., 2021).

A frozen Linear computes ``y = x Wᵀ + b``. An adapter adds a trainable low-rank update::

    y = x Wᵀ + b + (alpha / rank) · x Aᵀ Bᵀ        A (rank, in), B (out, rank)

``A`` starts random and ``B`` at zero, so attaching an adapter leaves every output exactly
as it was; training then moves only ``A`` and ``B`` (``rank · (in + out)`` numbers instead
of ``in · out``).

As in peft, an adapted layer is a module of its own, :class:`LoRALinear`, put in the place
of the Linear it adapts, or of another layer standing in for one
(:class:`~tensorlib.adapters.layer_replacement.LinearStandIn`: an NF4Linear, for QLoRA; this module
knows it through that interface only). It registers that layer's parameters and buffers under
their own names, so the model's ``parameters()`` and ``state_dict()`` stay the base
model's (``<layer>.weight``, ``<layer>.bias``): a base checkpoint loads before and after
attaching. The adapter is attached, not registered: its factors are reached by name
through :func:`lora_parameters` (``<layer>.lora.A``, ``<layer>.lora.B``, in module order,
for an optimizer), read and written with :func:`lora_state_dict` and
:func:`load_lora_state_dict`, and saved with their optimizer by :func:`save_adapters` and
:func:`load_adapters`; ``to()``, ``float()``, ``double()`` and ``zero_grad()`` reach them
with the base, in one transaction (``Module._extra_parameters``). :func:`merge_lora` folds
``(alpha / rank) · B A`` into the base weights and puts the base layers back;
:func:`detach_lora` puts them back without merging. Layers are chosen by name with
:func:`~tensorlib.adapters.layer_replacement.find_linear_layers` (re-exported here).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from tensorlib.adapters.layer_replacement import (
    LINEAR_LAYERS,
    LinearStandIn,
    find_linear_layers,
    replace_layer,
)
from tensorlib.engine import validation
from tensorlib.engine.autograd import no_grad
from tensorlib.engine.backend import to_numpy
from tensorlib.engine.splitmix64 import Rng, resolve_rng
from tensorlib.engine.tensor import Tensor
from tensorlib.nn.layers import Linear
from tensorlib.nn.module import Module, check_module
from tensorlib.nn.parameter import Parameter
from tensorlib.nn.state_dict import load_by_name

__all__ = [
    "LoRALinear",
    "LowRankAdapter",
    "attach_lora",
    "detach_lora",
    "find_linear_layers",
    "load_adapters",
    "load_lora_state_dict",
    "lora_parameters",
    "lora_state_dict",
    "merge_lora",
    "save_adapters",
]


def check_alpha(alpha: Any) -> float:
    """``alpha`` as a float if it is a finite number > 0, else raise."""
    return validation.positive(alpha, "LoRA alpha")


class LowRankAdapter(Module):
    """The low-rank update ``delta(x) = (alpha / rank) · x Aᵀ Bᵀ``.

    Parameters: ``A (rank, in_features)``, drawn ``U(-1/sqrt(in), 1/sqrt(in))`` from ``rng``
    (PyTorch's ``kaiming_uniform_(a=sqrt(5))``, which peft uses for LoRA), and
    ``B (out_features, rank)``, zero. ``alpha`` is a positive number; ``scale = alpha/rank``.
    """

    def __init__(self, in_features: int, out_features: int, rank: int, alpha: float,
                 rng: Rng | None = None, dtype: Any = np.float32):
        super().__init__()
        self.in_features = validation.positive_integer(in_features, "in_features")
        self.out_features = validation.positive_integer(out_features, "out_features")
        self.rank = validation.positive_integer(rank, "rank")
        self.alpha = check_alpha(alpha)
        self.scale = self.alpha / self.rank
        dtype = validation.float_dtype(dtype)
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
        return (self.B.numpy() @ self.A.numpy()) * self.A.dtype.type(self.scale)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"rank={self.rank}, alpha={self.alpha:g}")


class LoRALinear(LinearStandIn):
    """A Linear or NF4Linear layer with a LoRA adapter: ``y = base(x) + lora(x)``.

    The base is a Linear or another :class:`~tensorlib.adapters.layer_replacement.LinearStandIn` (an
    NF4Linear), not itself a LoRALinear. ``LoRALinear(base, rank, alpha, rng)`` draws a
    :class:`LowRankAdapter` (taking the base's dtype; float32 for an NF4 base) and freezes
    the base's parameters. It is meant to take the base's place: :func:`attach_lora` swaps
    it into a model (by hand, ``model.set_submodule(name, LoRALinear(model.get_submodule(name),
    4, 8.0))`` does the same, less the freezing of the rest of the model).

    It registers the base's own parameters and buffers, the same objects under the same
    names (``weight`` and ``bias`` of a Linear; ``bias``, ``codes`` and ``absmax`` of an
    NF4Linear, whose buffers stay non-persistent), and nothing else: its ``parameters()``
    and ``state_dict()`` are the base's. Two plain attributes, neither a child:

    - ``base``, the base module (a child's members would be named ``base.weight``): the
      forward pass calls it, and :func:`merge_lora` and :func:`detach_lora` put it back in
      the model;
    - ``lora``, the :class:`LowRankAdapter`, whose ``A`` and ``B`` are this module's extra
      parameters (``lora.A``, ``lora.B``): listed by :func:`lora_parameters`, converted by
      ``to()``, ``float()`` and ``double()`` and cleared by ``zero_grad()`` with the base.
    """

    base: Linear | LinearStandIn
    lora: LowRankAdapter

    def __init__(self, base: Linear | LinearStandIn, rank: int, alpha: float,
                 rng: Rng | None = None):
        super().__init__()
        if isinstance(base, LoRALinear) or not isinstance(base, LINEAR_LAYERS):
            kind = "already has an adapter" if isinstance(base, LoRALinear) else "is not one"
            raise TypeError(f"LoRALinear adapts a Linear or NF4Linear; this "
                            f"{type(base).__name__} {kind}")
        dtype = base.weight.dtype if isinstance(base, Linear) else base.dtype
        adapter = LowRankAdapter(base.in_features, base.out_features, rank, alpha, rng=rng,
                                 dtype=dtype)
        object.__setattr__(self, "base", base)  # a plain attribute: see the class docstring
        self.in_features, self.out_features = base.in_features, base.out_features
        for name, parameter in base.named_parameters(recurse=False):
            self.register_parameter(name, parameter)
        if base.bias is None:
            self.bias = None
        for name, buffer in base.named_buffers(recurse=False):
            self.register_buffer(name, buffer,
                                 persistent=name not in base._non_persistent_buffers)
        object.__setattr__(self, "lora", adapter)  # attached, not registered: see above
        self.merged = False
        for parameter in base.parameters():
            parameter.trainable = False

    def forward(self, x: Tensor) -> Tensor:
        """``x (..., in_features)`` → ``(..., out_features)``."""
        if self.merged:
            raise RuntimeError("this LoRALinear's adapter was merged into its base weight "
                               "(merge_lora); use the base layer, .base")
        return self.base(x) + self.lora(x)  # the adapter's low-rank update on top

    def _extra_parameters(self) -> Iterable[tuple[str, Parameter]]:
        return self.lora.named_parameters(prefix="lora.")

    def train(self, mode: bool = True) -> LoRALinear:
        """``Module.train``, and the same mode for the adapter."""
        super().train(mode)
        self.lora.train(mode)
        return self

    @property
    def dtype(self) -> np.dtype:
        """The dtype of the adapter, that of the base's float weight."""
        return self.lora.A.dtype

    def dense_weight(self) -> np.ndarray:
        """The merged weight ``W + (alpha/rank) B A`` as a new array, ``W`` being the base
        Linear's weight or the dense weight of another stand-in (a dequantized NF4 weight);
        the layer itself is not changed."""
        base = self.base
        weight = base.weight.numpy() if isinstance(base, Linear) else base.dense_weight()
        return weight + self.lora.delta_weight().astype(weight.dtype)

    def merge(self) -> Linear:
        """Fold the adapter into the base weight, ``W += (alpha/rank) B A``, and return the
        base Linear (the same object, its ``trainable`` flags unchanged). This module is
        spent: calling it raises. ValueError for an NF4 base (see ``export_merged``)."""
        if self.merged:
            raise ValueError("this LoRALinear's adapter is already merged")
        if not isinstance(self.base, Linear):
            raise ValueError("cannot merge an adapter into an NF4-quantized weight; use "
                             "tensorlib.adapters.nf4.export_merged to get merged float32 weights")
        with no_grad():
            self.base.weight.copy_(self.base.weight.numpy() + self.lora.delta_weight())
        self.merged = True
        return self.base

    def extra_repr(self) -> str:
        return f"base={self.base!r}, lora={self.lora!r}"


# ------------------------------------------------------------------------------- selection
def _lora_layers(model: Module) -> list[tuple[str, LoRALinear]]:
    check_module(model, "model")
    return [(name, module) for name, module in model.named_modules()
            if isinstance(module, LoRALinear)]


def _refuse_the_root(layers: Sequence[tuple[str, Module]], model: Module, what: str,
                     instead: str) -> None:
    if any(name == "" for name, _ in layers):
        raise ValueError(f"the {type(model).__name__} itself is the layer, and {what} "
                         f"replaces layers inside a model; {instead}")


# ------------------------------------------------------------------------------- attaching
def attach_lora(model: Module, patterns: str | Iterable[str], rank: int, alpha: float,
                rng: Rng | None = None) -> list[str]:
    """Put a :class:`LoRALinear` in the place of each linear layer (Linear or NF4Linear)
    whose name matches ``patterns``.

    Every parameter the model had is frozen (``trainable=False``); only the adapters train.
    Outputs are unchanged at attach time (``B = 0``). ``parameters()`` and ``state_dict()``
    stay the base model's; the adapters are :func:`lora_parameters` (``<layer>.lora.A`` /
    ``<layer>.lora.B``).
    Adapters are drawn from ``rng`` in ``named_modules`` order and take the layer's dtype
    (float32 for an NF4 layer). Returns the names of the adapted layers. All checks come
    first: a pattern matching no linear layer, a matched layer that already has an adapter,
    or the model itself (use ``LoRALinear(layer, rank, alpha)`` for a lone layer) raises
    ValueError and nothing changes.
    """
    layers = find_linear_layers(model, patterns)
    rank = validation.positive_integer(rank, "rank")
    check_alpha(alpha)
    taken = [name or "(root)" for name, layer in layers if isinstance(layer, LoRALinear)]
    if taken:
        raise ValueError(f"these layers already have a LoRA adapter: {', '.join(taken)}; "
                         "merge_lora or detach_lora first")
    _refuse_the_root(layers, model, "attach_lora",
                     "wrap a lone layer with LoRALinear(layer, rank, alpha)")
    generator = resolve_rng(rng)
    frozen = model.parameters()
    adapted = [LoRALinear(layer, rank, alpha, rng=generator) for _, layer in layers]
    for parameter in frozen:
        parameter.trainable = False
    for (name, _), wrapper in zip(layers, adapted, strict=True):
        replace_layer(model, name, wrapper)
    return [name for name, _ in layers]


def lora_parameters(model: Module) -> dict[str, Parameter]:
    """Every adapter parameter of ``model`` by name (``blocks.0.attention.output.lora.A``,
    then ``...lora.B``), in ``named_modules`` order. Pass ``.values()`` to an optimizer."""
    named: dict[str, Parameter] = {}
    for name, layer in _lora_layers(model):
        prefix = f"{name}.lora." if name else "lora."
        for parameter_name, parameter in layer.lora.named_parameters():
            named[prefix + parameter_name] = parameter
    return named


def lora_state_dict(model: Module) -> dict[str, np.ndarray]:
    """A numpy copy of every adapter factor of ``model``, by the names of
    :func:`lora_parameters` (the adapters' ``state_dict``, which the model's own leaves
    out)."""
    return {name: to_numpy(parameter.numpy()) for name, parameter in lora_parameters(model).items()}


def load_lora_state_dict(model: Module, state: dict[str, Any]) -> None:
    """Copy adapter factors into ``model``'s attached adapters by name, all-or-nothing:
    ``state`` must hold exactly the names of :func:`lora_parameters` with their shapes
    (``StateDictError`` listing every problem, nothing changed, otherwise)."""
    load_by_name(dict(lora_parameters(model)), state, True,
                 f"cannot load adapters into {type(model).__name__}")


def save_adapters(path: str | os.PathLike, model: Module, optimizer: Any = None,
                  rng: Rng | None = None) -> None:
    """Write ``model``'s adapter factors (and an AdamW over them, and ``rng``) to ``path``
    as a TLCKPT checkpoint whose parameters are :func:`lora_parameters`: the file of an
    adapter-only fine-tune, beside the base model's own (``tensorlib.saving.checkpoint.save``).
    Atomic and validated first, as ``checkpoint.save``; ValueError when no adapter is
    attached."""
    from tensorlib.saving import checkpoint  # on first use: `import tensorlib` stays light

    adapters = lora_parameters(model)
    if not adapters:
        raise ValueError(f"the {type(model).__name__} has no LoRA adapters to save")
    checkpoint.save_parameters(path, adapters, optimizer, rng)


def load_adapters(path: str | os.PathLike, model: Module, optimizer: Any = None,
                  rng: Rng | None = None) -> None:
    """Load a :func:`save_adapters` file into ``model``'s attached adapters (and the
    optimizer over them, and ``rng``), all-or-nothing, as ``checkpoint.load``: the file
    must hold exactly the adapters of :func:`lora_parameters`, attach them first with the
    same patterns and rank."""
    from tensorlib.saving import checkpoint  # on first use: `import tensorlib` stays light

    checkpoint.load_parameters(path, lora_parameters(model), optimizer, rng)


def merge_lora(model: Module) -> list[str]:
    """Fold every adapter into its layer's weight, ``W += (alpha/rank) B A``, and put the
    base Linear back in the place of its LoRALinear.

    The model's outputs are the same before and after (up to rounding), and its parameter
    names are the base model's again. The merged weights keep their ``trainable`` flag
    (frozen after :func:`attach_lora`). Returns the merged layer names. Raises ValueError,
    changing nothing, when no adapter is attached or one sits on an NF4-quantized layer
    (use ``tensorlib.adapters.nf4.export_merged`` for those).
    """
    layers = _lora_layers(model)
    if not layers:
        raise ValueError(f"the {type(model).__name__} has no LoRA adapters to merge")
    _refuse_the_root(layers, model, "merge_lora", "use its .merge()")
    quantized = [name for name, layer in layers if not isinstance(layer.base, Linear)]
    if quantized:
        raise ValueError(f"cannot merge adapters into NF4-quantized weights "
                         f"({', '.join(quantized)}); "
                         "use tensorlib.adapters.nf4.export_merged to get merged float32 weights")
    for name, layer in layers:
        replace_layer(model, name, layer.merge())
    return [name for name, _ in layers]


def detach_lora(model: Module) -> dict[str, LowRankAdapter]:
    """Put every adapted layer's base back in its place without merging; returns the
    adapters by layer name (each still the ``lora`` child of its detached LoRALinear). The
    base parameters stay frozen. Raises ValueError when none is attached."""
    layers = _lora_layers(model)
    if not layers:
        raise ValueError(f"the {type(model).__name__} has no LoRA adapters to detach")
    _refuse_the_root(layers, model, "detach_lora", "its .base is the layer")
    removed = {}
    for name, layer in layers:
        replace_layer(model, name, layer.base)
        removed[name] = layer.lora
    return removed
