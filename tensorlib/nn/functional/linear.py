"""The fused linear layer (x Wᵀ + b) and the embedding gather, each with its reference twin."""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorlib.engine import ops
from tensorlib.engine.tensor import Tensor
from tensorlib.engine.typing import Array
from tensorlib.nn.functional.arguments import _check_floating, _check_one_dtype
from tensorlib.nn.functional.loss import token_ids


def _check_linear(x: Any, weight: Any, bias: Any) -> None:
    _check_floating(x, "linear input")
    _check_floating(weight, "linear weight")
    if weight.ndim != 2:
        raise ValueError(f"linear weight must be 2-D (out, in), got shape {weight.shape}")
    if x.ndim == 0 or x.shape[-1] != weight.shape[1]:
        raise ValueError(f"linear: input of shape {x.shape} does not end in the weight's "
                         f"{weight.shape[1]} input features (weight shape {weight.shape})")
    if bias is not None:
        _check_floating(bias, "linear bias")
        if bias.shape != (weight.shape[0],):
            raise ValueError(f"linear bias of shape {bias.shape} does not match the weight's "
                             f"{weight.shape[0]} output features")
    _check_one_dtype("linear", x, weight, bias)


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``x (..., in) @ weight (out, in)ᵀ + bias (out,)`` → ``(..., out)``. One fused node."""
    x, weight, bias = ops.Linear.autocast_inputs(x, weight, bias)
    _check_linear(x, weight, bias)
    return ops.Linear.apply(x, weight, bias)


def linear_reference(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """The primitive chain: matmul with the transposed weight, then add the bias."""
    _check_linear(x, weight, bias)
    out = x @ weight.transpose()
    return out if bias is None else out + bias


def _check_embedding(weight: Any, ids: Any) -> Array:
    _check_floating(weight, "embedding weight")
    if weight.ndim != 2:
        raise ValueError(f"embedding weight must be 2-D (V, C), got shape {weight.shape}")
    return token_ids(ids, weight.shape[0])


def embedding(weight: Tensor, ids: Any) -> Tensor:
    """Look up rows: ``weight (V, C)`` and integer ``ids (...)`` give ``(..., C)``."""
    array = _check_embedding(weight, ids)
    return ops.Embedding.apply(weight, ids=array)


def embedding_reference(weight: Tensor, ids: Any) -> Tensor:
    """The primitive twin of ``embedding``: onehot(ids) @ weight."""
    array = _check_embedding(weight, ids)
    onehot = np.eye(weight.shape[0], dtype=weight.dtype)[array]  # (..., V)
    return Tensor(onehot) @ weight
