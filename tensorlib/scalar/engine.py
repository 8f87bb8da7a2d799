"""A scalar reverse-mode autograd engine.

Each :class:`Value` holds one float, the gradient of some final output with respect to it,
the op that produced it and the ordered tuple of its inputs. Every op computes its forward
value and defines, right beside it, a ``_backward(grad)`` closure that applies the chain rule
for that op: given the output's gradient it adds the local derivative times that gradient to
each input's ``grad``. The closures capture the inputs and plain floats, never their own
output, so a graph holds no reference cycles and is freed as soon as it is dropped.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from numbers import Integral, Real
from types import NotImplementedType


def _no_backward(grad: float) -> None:
    """The backward step of a leaf: nothing to propagate."""


def _power(base: float, exponent: float) -> float:
    """``base ** exponent`` as a real float: inf on overflow, clear errors otherwise."""
    if base == 0.0 and exponent < 0:
        raise ZeroDivisionError(f"0.0 cannot be raised to the negative power {exponent!r}")
    try:
        result = base**exponent
    except OverflowError:
        odd_integer = float(exponent).is_integer() and int(exponent) % 2 == 1
        return -math.inf if base < 0 and odd_integer else math.inf
    if isinstance(result, complex):
        raise ValueError(
            f"negative base {base!r} raised to the non-integer power {exponent!r} is not real"
        )
    return float(result)


class Value:
    """One scalar in a computation graph, with its gradient.

    ``data`` is the value, ``grad`` the derivative with respect to this value of the output
    passed to :meth:`backward` (0.0 until then; see there for accumulation), ``op`` the label
    of the op that made it ("" for leaves), ``children`` the ordered tuple of that op's inputs
    (repeated when an input is used twice, as in ``a + a``), and ``label`` an optional name
    used by drawings. Arithmetic accepts Values and real numbers; numbers become constant
    leaves. Values use ``__slots__``, so other attributes cannot be set on them.
    """

    __slots__ = ("data", "grad", "children", "op", "label", "_backward", "__weakref__")

    def __init__(
        self,
        data: float,
        children: Iterable[Value] = (),
        op: str = "",
        label: str = "",
    ) -> None:
        if type(data) is not float:
            data = _check_real(data)
        self.data: float = data
        self.grad: float = 0.0
        self.children: tuple[Value, ...] = tuple(children)
        self.op: str = op
        self.label: str = label
        self._backward: Callable[[float], None] = _no_backward

    def __repr__(self) -> str:
        return f"Value(data={self.data:.4f}, grad={self.grad:.4f})"

    # ---------------------------------------------------------------- arithmetic

    def __add__(self, other: Value | float) -> Value:
        other = _as_value(other)
        if other is NotImplemented:
            return NotImplemented
        out = Value(self.data + other.data, (self, other), "+")

        def _backward(grad: float) -> None:
            self.grad += grad
            other.grad += grad

        out._backward = _backward
        return out

    def __sub__(self, other: Value | float) -> Value:
        other = _as_value(other)
        if other is NotImplemented:
            return NotImplemented
        out = Value(self.data - other.data, (self, other), "-")

        def _backward(grad: float) -> None:
            self.grad += grad
            other.grad -= grad

        out._backward = _backward
        return out

    def __mul__(self, other: Value | float) -> Value:
        other = _as_value(other)
        if other is NotImplemented:
            return NotImplemented
        out = Value(self.data * other.data, (self, other), "*")

        def _backward(grad: float) -> None:
            self.grad += other.data * grad
            other.grad += self.data * grad

        out._backward = _backward
        return out

    def __truediv__(self, other: Value | float) -> Value:
        """Divide; a divisor whose data is 0.0 raises ZeroDivisionError."""
        other = _as_value(other)
        if other is NotImplemented:
            return NotImplemented
        if other.data == 0.0:
            raise ZeroDivisionError(
                f"division by a Value whose data is 0.0 (numerator data {self.data!r})"
            )
        out = Value(self.data / other.data, (self, other), "/")

        def _backward(grad: float) -> None:
            self.grad += grad / other.data
            other.grad -= grad * self.data / (other.data * other.data)

        out._backward = _backward
        return out

    def __neg__(self) -> Value:
        out = Value(-self.data, (self,), "neg")

        def _backward(grad: float) -> None:
            self.grad -= grad

        out._backward = _backward
        return out

    def __pow__(self, exponent: float) -> Value:
        """Raise to a constant int or float power; a Value exponent raises TypeError."""
        if isinstance(exponent, Value):
            raise TypeError(
                "Value ** Value is not supported: the exponent must be an int or float "
                "constant (for a learned exponent write (exponent * base.log()).exp())"
            )
        if not isinstance(exponent, Real):
            raise TypeError(f"the exponent must be an int or float, got {type(exponent).__name__}")
        exponent = int(exponent) if isinstance(exponent, Integral) else float(exponent)
        base = self.data
        out = Value(_power(base, exponent), (self,), f"**{exponent}")

        def _backward(grad: float) -> None:
            if exponent == 0:
                local = 0.0
            elif base == 0.0:
                # d/dx x**p at 0: 0 for p > 1, 1 for p == 1, unbounded for 0 < p < 1.
                local = 0.0 if exponent > 1 else (1.0 if exponent == 1 else math.inf)
            else:
                local = exponent * _power(base, exponent - 1)
            self.grad += local * grad

        out._backward = _backward
        return out

    def __radd__(self, other: float) -> Value:
        return self + other

    def __rsub__(self, other: Value | float) -> Value:
        other = _as_value(other)
        if other is NotImplemented:
            return NotImplemented
        return other - self

    def __rmul__(self, other: float) -> Value:
        return self * other

    def __rtruediv__(self, other: Value | float) -> Value:
        other = _as_value(other)
        if other is NotImplemented:
            return NotImplemented
        return other / self

    def __rpow__(self, base: float) -> Value:
        raise TypeError(
            "number ** Value is not supported: the exponent must be an int or float constant "
            "(write (value * math.log(base)).exp() for base ** value)"
        )

    # ----------------------------------------------------------------- functions

    def exp(self) -> Value:
        """e ** data; overflows to inf (no OverflowError) above about 709.78."""
        try:
            result = math.exp(self.data)
        except OverflowError:
            result = math.inf
        out = Value(result, (self,), "exp")

        def _backward(grad: float) -> None:
            self.grad += result * grad

        out._backward = _backward
        return out

    def log(self) -> Value:
        """Natural logarithm; data <= 0 raises ValueError."""
        if self.data <= 0.0:
            raise ValueError(f"log is only defined for positive values, got {self.data!r}")
        out = Value(math.log(self.data), (self,), "log")

        def _backward(grad: float) -> None:
            self.grad += grad / self.data

        out._backward = _backward
        return out

    def tanh(self) -> Value:
        result = math.tanh(self.data)
        out = Value(result, (self,), "tanh")

        def _backward(grad: float) -> None:
            self.grad += (1.0 - result * result) * grad

        out._backward = _backward
        return out

    def sigmoid(self) -> Value:
        """1 / (1 + e ** -data), computed without overflow for any finite data."""
        x = self.data
        if x >= 0.0:
            result = 1.0 / (1.0 + math.exp(-x))
        else:
            e = math.exp(x)
            result = e / (1.0 + e)
        out = Value(result, (self,), "sigmoid")

        def _backward(grad: float) -> None:
            self.grad += result * (1.0 - result) * grad

        out._backward = _backward
        return out

    def relu(self) -> Value:
        """max(0, data); the gradient at exactly 0 is taken as 0."""
        out = Value(self.data if self.data > 0.0 else 0.0, (self,), "relu")

        def _backward(grad: float) -> None:
            if self.data > 0.0:
                self.grad += grad

        out._backward = _backward
        return out

    # ------------------------------------------------------------------ backward

    def topological_order(self) -> list[Value]:
        """Every node this value depends on, each once, inputs before the ops that use them.

        Leaves come first and ``self`` last. The walk is an iterative depth-first search over
        ``children`` in tuple order, so the order is deterministic and deep graphs do not hit
        Python's recursion limit.
        """
        order: list[Value] = []
        visited: set[Value] = {self}
        stack: list[tuple[Value, Iterator[Value]]] = [(self, iter(self.children))]
        while stack:
            node, children = stack[-1]
            for child in children:
                if child not in visited:
                    visited.add(child)
                    stack.append((child, iter(child.children)))
                    break
            else:  # every child has been placed: the node follows them
                stack.pop()
                order.append(node)
        return order

    def backward(self) -> None:
        """Fill in ``grad`` of every node this value depends on, by the chain rule.

        The gradients of leaves (nodes without children) ACCUMULATE with ``+=`` across calls,
        as in PyTorch: reset them with ``Module.zero_grad()`` (or ``leaf.grad = 0.0``) between
        steps. Interior nodes are overwritten with this call's gradients, and ``self.grad`` is
        seeded with 1.0 (added, if ``self`` is itself a leaf).
        """
        order = self.topological_order()
        for node in order:
            if node.children:
                node.grad = 0.0
        self.grad += 1.0
        for node in reversed(order):
            node._backward(node.grad)


def _check_real(data: object) -> float:
    """``data`` as a float, or TypeError if it is not a real number."""
    if isinstance(data, Value):
        raise TypeError("Value(data) needs a number, not a Value; use the Value itself")
    if not isinstance(data, Real):
        raise TypeError(f"Value(data) needs a real number, got {type(data).__name__}")
    return float(data)


def _as_value(other: object) -> Value | NotImplementedType:
    """Wrap a real number as a constant leaf; NotImplemented for anything else."""
    if isinstance(other, Value):
        return other
    if type(other) is float or type(other) is int or isinstance(other, Real):
        return Value(float(other))
    return NotImplemented
