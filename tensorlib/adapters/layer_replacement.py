"""Model surgery: finding a model's Linear layers by name, putting other modules in their
place, and getting back the float weights of a plain model.

LoRA (:mod:`tensorlib.adapters.lora`) and NF4 quantization (:mod:`tensorlib.adapters.nf4`) both work
by replacing Linear layers: :class:`~tensorlib.adapters.lora.LoRALinear` wraps a layer and adds an
adapter, :class:`~tensorlib.adapters.nf4.NF4Linear` holds the weight in 4 bits. Each is a
:class:`LinearStandIn`, the small interface defined here, and neither module imports the
other: what one needs to know about the other's layers (their sizes, dtype, bias, the layer
one wraps, the float weight one computes with) it asks through this interface.

- :func:`find_linear_layers` lists the Linear layers and stand-ins whose dotted names match
  ``fnmatch`` patterns (``"blocks.*.mlp_*"``);
- :func:`replace_layer` puts a module in the place of one of them;
- :func:`export_merged` gives the float weights of the plain model that computes what a model
  of stand-ins computes (NF4 weights dequantized, adapters folded in), under its names.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable

import numpy as np

from tensorlib.engine.backend import to_numpy
from tensorlib.engine.tensor import Tensor
from tensorlib.engine.typing import Array
from tensorlib.nn.layers import Linear
from tensorlib.nn.module import Module, check_module

__all__ = [
    "LINEAR_LAYERS",
    "LinearStandIn",
    "export_merged",
    "find_linear_layers",
    "replace_layer",
]


class LinearStandIn(Module):
    """A module that takes a Linear's place in a model and computes what a Linear does,
    ``y = x Wᵀ + b``, from a weight it holds in its own way: the base of
    :class:`~tensorlib.adapters.nf4.NF4Linear` and :class:`~tensorlib.adapters.lora.LoRALinear`.

    What a stand-in offers (and all that code outside its own module may rely on):

    - ``in_features``, ``out_features``, ``bias`` (a Parameter or None) and ``dtype`` (that of
      the float weight it computes with), as a Linear has them;
    - ``base``: the layer it wraps and computes on top of (a LoRALinear's Linear or
      NF4Linear), or None when it holds its weight itself (an NF4Linear);
    - :meth:`dense_weight`: that weight, ``(out_features, in_features)``, as a float array.
    """

    base: Module | None = None

    def dense_weight(self) -> Array:
        """The float weight ``W`` of ``y = x Wᵀ + b``, a new ``(out_features, in_features)``
        array of ``dtype``."""
        raise NotImplementedError(f"{type(self).__name__} does not define dense_weight()")


# The layers find_linear_layers lists.
LINEAR_LAYERS = (Linear, LinearStandIn)


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
                       ) -> list[tuple[str, Linear | LinearStandIn]]:
    """The linear layers (Linear and its stand-ins, NF4Linear and LoRALinear) of ``model``
    whose dotted names match any of ``patterns``.

    Patterns are ``fnmatch`` patterns on the whole dotted name (``*`` also crosses dots):
    ``"blocks.*.attention.output"``, ``"blocks.*.mlp_*"``, ``"*"``. The model itself, if it
    is a linear layer, has the name ``""`` (matched by ``"*"``). Layers come in
    ``named_modules`` order (an adapter's base is not listed apart from its LoRALinear).
    Raises ValueError when a pattern matches no linear layer, listing the ones there.
    """
    check_module(model, "find_linear_layers' model")
    items = _pattern_list(patterns)
    linears = [(name, module) for name, module in model.named_modules()
               if isinstance(module, LINEAR_LAYERS)]
    for pattern in items:
        if not any(fnmatch.fnmatchcase(name, pattern) for name, _ in linears):
            available = ", ".join(repr(name) for name, _ in linears) or "none"
            raise ValueError(f"pattern {pattern!r} matches no Linear layer of the "
                             f"{type(model).__name__}; its Linear layers are: {available}")
    return [(name, module) for name, module in linears
            if any(fnmatch.fnmatchcase(name, pattern) for pattern in items)]


# ------------------------------------------------------------------------------- replacing
def replace_layer(model: Module, name: str, replacement: Module) -> Module:
    """Put ``replacement`` in the place of ``model``'s descendant ``name``, in that layer's
    training mode, and return the layer it replaces (see ``Module.set_submodule``)."""
    replacement.train(model.get_submodule(name).training)
    return model.set_submodule(name, replacement)


# ------------------------------------------------------------------------------- export
def _own_state(module: Module) -> list[tuple[str, Tensor]]:
    """What ``state_dict`` holds of ``module`` itself: its parameters, then its persistent
    buffers."""
    return [*module.named_parameters(recurse=False),
            *[(name, buffer) for name, buffer in module.named_buffers(recurse=False)
              if name not in module._non_persistent_buffers]]


def export_merged(model: Module) -> dict[str, np.ndarray]:
    """Float weights of ``model`` under its base names, as numpy arrays (copies).

    Each stand-in gives its :meth:`~LinearStandIn.dense_weight` as ``<layer>.weight``, and
    its bias: NF4 weights are dequantized and every LoRA adapter is folded in
    (``W + (alpha/rank) B A``); other parameters and persistent buffers are copied. The
    keys and order are those of the unquantized model's ``state_dict()``, so a plain model
    of the same configuration loads the result with ``load_state_dict`` (strict) and
    computes the same outputs.
    The model itself is not changed.
    """
    check_module(model, "export_merged's model")
    state: dict[str, np.ndarray] = {}
    stand_ins: list[str] = []  # prefixes of the stand-ins met: their children are folded in
    for module_name, module in model.named_modules():
        if any(module_name.startswith(prefix) for prefix in stand_ins):
            continue  # a stand-in's child: part of its layer's dense weight
        prefix = module_name + "." if module_name else ""
        if isinstance(module, LinearStandIn):
            stand_ins.append(prefix)
            state[prefix + "weight"] = to_numpy(module.dense_weight())
            if module.bias is not None:
                state[prefix + "bias"] = to_numpy(module.bias.numpy())
        else:
            for name, tensor in _own_state(module):
                state[prefix + name] = to_numpy(tensor.numpy())
    return state
