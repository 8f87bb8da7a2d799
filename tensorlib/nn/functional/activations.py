"""Activation functions: relu, leaky_relu, softplus, silu, sign, gelu, sigmoid, tanh, and the
mobile nets' relu6, hardswish and mish. Each is one op, written once with its spellings in
:mod:`tensorlib.engine.methods.elementwise`; these are its function forms (``F.relu`` is
``tensorlib.relu``, and runs what ``x.relu()`` runs)."""

from __future__ import annotations

from tensorlib.engine.function_forms import (
    gelu,
    hardswish,
    leaky_relu,
    mish,
    relu,
    relu6,
    sigmoid,
    sign,
    silu,
    softplus,
    tanh,
)

__all__ = ["gelu", "hardswish", "leaky_relu", "mish", "relu", "relu6", "sigmoid", "sign", "silu",
           "softplus", "tanh"]
