"""Activation functions, each one op: relu, leaky_relu, softplus, silu, sign, gelu, sigmoid,
tanh, and the mobile nets' relu6, hardswish and mish."""

from __future__ import annotations

from tensorlib.engine import ops
from tensorlib.engine.tensor import Tensor
from tensorlib.nn.functional.arguments import _check_floating, _check_tensor


def relu(x: Tensor) -> Tensor:
    """max(x, 0) elementwise."""
    return _check_tensor(x, "relu input").relu()


def leaky_relu(x: Tensor, negative_slope: float = 0.01) -> Tensor:
    """x where x > 0, ``negative_slope``·x elsewhere (a finite number)."""
    return _check_tensor(x, "leaky_relu input").leaky_relu(negative_slope)


def softplus(x: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(β·x)) / β, a smooth relu; x itself where β·x > ``threshold``."""
    return _check_tensor(x, "softplus input").softplus(beta, threshold)


def silu(x: Tensor) -> Tensor:
    """SiLU (swish): x·sigmoid(x)."""
    return _check_tensor(x, "silu input").silu()


def sign(x: Tensor) -> Tensor:
    """-1, 0 or +1 elementwise; its gradient is 0 everywhere."""
    return _check_tensor(x, "sign input").sign()


def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    """GELU x·Φ(x): exact (erf) by default, ``approximate="tanh"`` for the tanh form."""
    return _check_tensor(x, "gelu input").gelu(approximate=approximate)


def sigmoid(x: Tensor) -> Tensor:
    """1 / (1 + exp(-x)) elementwise, without overflow."""
    return _check_tensor(x, "sigmoid input").sigmoid()


def tanh(x: Tensor) -> Tensor:
    return _check_tensor(x, "tanh input").tanh()


def relu6(input: Tensor) -> Tensor:
    """min(max(x, 0), 6) elementwise."""
    return ops.Relu6.apply(_check_floating(input, "relu6 input"))


def hardswish(input: Tensor) -> Tensor:
    """x · relu6(x + 3) / 6 elementwise: a piecewise-quadratic swish."""
    return ops.Hardswish.apply(_check_floating(input, "hardswish input"))


def mish(input: Tensor) -> Tensor:
    """x · tanh(softplus(x)) elementwise."""
    return ops.Mish.apply(_check_floating(input, "mish input"))
