"""The unary functions and the activations, one op each (``tensorlib.engine.ops.elementwise``),
with the dtype cast ``astype`` and ``masked_fill``. Integer and boolean input to a floating
function (exp, tanh...) is computed in float32 first, as PyTorch does."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from tensorlib.engine import ops, validation
from tensorlib.engine.methods.operands import bool_mask, floating, number
from tensorlib.engine.methods.spellings import declare

if TYPE_CHECKING:
    from tensorlib.engine.tensor import Tensor


def astype(self: Tensor, dtype: Any) -> Tensor:
    """A copy in another dtype; differentiable between floating dtypes."""
    return ops.Cast.apply(self, dtype=validation.tensor_dtype(dtype, "astype dtype"))


def exp(self: Tensor) -> Tensor:
    """e^x elementwise."""
    return ops.Exp.apply(floating(self))


def log(self: Tensor) -> Tensor:
    """The natural logarithm elementwise (-inf at 0, nan below)."""
    return ops.Log.apply(floating(self))


def log10(self: Tensor) -> Tensor:
    """The base-10 logarithm, log(x) / log(10)."""
    return log(self) * (1 / math.log(10))


def sqrt(self: Tensor) -> Tensor:
    """√x elementwise."""
    return ops.Sqrt.apply(floating(self))


def abs(self: Tensor) -> Tensor:
    """|x| elementwise; the gradient at 0 is 0."""
    return ops.Abs.apply(self)


def tanh(self: Tensor) -> Tensor:
    """tanh(x) elementwise."""
    return ops.Tanh.apply(floating(self))


def sigmoid(self: Tensor) -> Tensor:
    """1 / (1 + exp(-x)) elementwise, without overflow."""
    return ops.Sigmoid.apply(floating(self))


def relu(self: Tensor) -> Tensor:
    """max(x, 0) elementwise."""
    return ops.Relu.apply(self)


def leaky_relu(self: Tensor, negative_slope: float = 0.01) -> Tensor:
    """x where x > 0, ``negative_slope``·x elsewhere (a finite number)."""
    slope = validation.real(negative_slope, "leaky_relu negative_slope")
    return ops.LeakyRelu.apply(floating(self), negative_slope=slope)


def softplus(self: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(β·x)) / β, a smooth relu; x itself where β·x > ``threshold``."""
    beta = validation.positive(beta, "softplus beta")
    threshold = validation.real(threshold, "softplus threshold")
    return ops.Softplus.apply(floating(self), beta=beta, threshold=threshold)


def silu(self: Tensor) -> Tensor:
    """SiLU (swish): x·sigmoid(x)."""
    return ops.Silu.apply(floating(self))


def sign(self: Tensor) -> Tensor:
    """-1, 0 or +1 elementwise; its gradient is 0 everywhere."""
    return ops.Sign.apply(self)


def gelu(self: Tensor, approximate: str = "none") -> Tensor:
    """GELU x·Φ(x): exact (erf) by default, ``approximate="tanh"`` for the tanh form."""
    return ops.Gelu.apply(floating(self), approximate=approximate)


def relu6(input: Tensor) -> Tensor:
    """min(max(x, 0), 6) elementwise."""
    return ops.Relu6.apply(_floating_input(input, "relu6"))


def hardswish(input: Tensor) -> Tensor:
    """x · relu6(x + 3) / 6 elementwise: a piecewise-quadratic swish."""
    return ops.Hardswish.apply(_floating_input(input, "hardswish"))


def mish(input: Tensor) -> Tensor:
    """x · tanh(softplus(x)) elementwise."""
    return ops.Mish.apply(_floating_input(input, "mish"))


def _floating_input(input: Tensor, what: str) -> Tensor:
    if not validation.is_floating(input.dtype):
        raise TypeError(f"{what} input must be a floating-point tensor, got dtype "
                        f"{input.dtype}")
    return input


def masked_fill(self: Tensor, mask: Any, value: float) -> Tensor:
    """Replace the entries where ``mask`` is True with ``value`` (a number, or a
    one-element tensor). ``mask`` broadcasts with the tensor either way, as in PyTorch: a
    mask with more or longer axes gives a result of the broadcast shape (the tensor
    expanded first, so its gradient sums over the copies)."""
    value = number(value, "masked_fill value")
    array = bool_mask(mask, self.shape, "masked_fill")
    shape = np.broadcast_shapes(array.shape, self.shape)
    source = self if shape == self.shape else self.expand(*shape)
    return ops.MaskedFill.apply(source, mask=array, value=value)


# Where each function above is spelled (tensorlib.engine.methods.spellings)
declare(exp, log, log10, sqrt, abs)
declare(tanh, functional=True, module="Tanh")
declare(sigmoid, functional=True, module="Sigmoid")
declare(relu, functional=True, module="ReLU")
declare(leaky_relu, function=False, functional=True, module="LeakyReLU")
declare(softplus, function=False, functional=True, module="Softplus")
declare(silu, function=False, functional=True, module="SiLU")
declare(sign, functional=True)
declare(gelu, function=False, functional=True, module="GELU")
declare(relu6, method=False, function=False, functional=True, module="ReLU6")
declare(hardswish, method=False, function=False, functional=True, module="Hardswish")
declare(mish, method=False, function=False, functional=True, module="Mish")
declare(masked_fill, function=False)
