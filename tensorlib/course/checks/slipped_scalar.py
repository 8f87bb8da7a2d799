"""The scalar node notebook 01's exercise 3 check computes its slips with: ``/`` and ``tanh``
only, each making one slip of :data:`DIVIDE_SLIPS` (a sign, a square, a factor, the slope
taken at the input, ``=`` for ``+=``, the incoming grad ignored), so that the check
(:func:`tensorlib.course.checks.scalar_autograd.check_truediv_and_tanh`) names the one a learner's
gradients show.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

__all__ = ["SlippedNode", "DIVIDE_SLIPS"]


class SlippedNode:
    """A scalar node with ``/`` and ``tanh`` only, making ``slip`` (a key of :data:`DIVIDE_SLIPS`),
    to compute what that slip gives."""

    def __init__(self, data: float, children: Sequence[SlippedNode] = (), slip: str = "") -> None:
        self.data, self.children, self.slip, self.grad = data, tuple(children), slip, 0.0
        self._backward: Callable[[float], None] = lambda grad: None

    def _add(self, node: SlippedNode, amount: float) -> None:
        if self.slip == "set":
            node.grad = amount
        else:
            node.grad += amount

    def __truediv__(self, other: SlippedNode) -> SlippedNode:
        out = SlippedNode(self.data / other.data, (self, other), self.slip)

        def _backward(grad: float) -> None:
            scale = 1.0 if self.slip == "grad ignored" else grad
            x, y = self.data, other.data
            self._add(self, scale * y if self.slip == "times y" else scale / y)
            y_slope = {"y sign": x / y**2, "y not squared": -x / y}.get(self.slip, -x / y**2)
            self._add(other, y_slope * scale)

        out._backward = _backward
        return out

    def tanh(self) -> SlippedNode:
        t = math.tanh(self.data)
        out = SlippedNode(t, (self,), self.slip)

        def _backward(grad: float) -> None:
            scale = 1.0 if self.slip == "grad ignored" else grad
            slope = {"tanh of input": 1 - self.data**2, "tanh not squared": 1 - t}.get(
                self.slip, 1 - t**2)
            self._add(self, slope * scale)

        out._backward = _backward
        return out


DIVIDE_SLIPS = {
    "y sign": "y's slope in x / y is -x / y**2: the minus sign is missing",
    "y not squared": "y's slope in x / y is -x / y**2: y is not squared",
    "times y": "x's slope in x / y is 1 / y: divide grad by y, do not multiply",
    "tanh of input": "tanh's slope is 1 - t**2 with t the output (out.data), not the input",
    "tanh not squared": "tanh's slope is 1 - t**2: the square is missing",
    "set": "the grads are set (=), not added to (+=): x used twice loses a share",
    "grad ignored": "the incoming grad is not multiplied in: each input gets its slope * grad",
}
