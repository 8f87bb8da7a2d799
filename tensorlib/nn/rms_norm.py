"""RMSNorm, PyTorch's: layer norm without the centring and the bias (Llama's norm)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tensorlib.engine import validation
from tensorlib.engine.tensor import Tensor
from tensorlib.nn import functional as F
from tensorlib.nn.init import initialize
from tensorlib.nn.module import Module
from tensorlib.nn.parameter import Parameter

__all__ = ["RMSNorm"]


class RMSNorm(Module):
    """Divide the trailing axes ``normalized_shape`` by their root mean square, then
    ``· weight``: PyTorch's ``nn.RMSNorm`` (Llama's norm), layer norm without the centring
    and the bias.

    ``eps`` None is the machine epsilon of the input's dtype, as in PyTorch; ``weight``
    starts at one; ``elementwise_affine=False`` has no parameter.
    """

    def __init__(self, normalized_shape: int | Sequence[int], eps: float | None = None,
                 elementwise_affine: bool = True, dtype: Any = np.float32):
        super().__init__()
        shape = tuple(normalized_shape) if isinstance(normalized_shape, (tuple, list)) \
            else (normalized_shape,)
        self.normalized_shape = tuple(validation.dimension(n, "RMSNorm normalized_shape")
                                      for n in shape)
        if not self.normalized_shape:
            raise ValueError("RMSNorm normalized_shape must name at least one axis")
        self.eps = None if eps is None else validation.positive(eps, "RMSNorm eps")
        self.elementwise_affine = bool(elementwise_affine)
        dtype = validation.float_dtype(dtype)
        self.weight: Parameter | None = Parameter(initialize(
            "one", self.normalized_shape, dtype=dtype)) if self.elementwise_affine else None

    def forward(self, x: Tensor) -> Tensor:
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")
