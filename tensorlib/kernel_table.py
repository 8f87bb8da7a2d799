"""The one table of kernels, and the switch that sets them all aside (reference mode).

A kernel is faster code that computes what some plain code of the package computes, and
runs in its place. Each is registered here for exactly one class, the one whose plain code
it stands in for (a subclass does not inherit it), through the registration of that layer,
which checks what it is given:

* an op (a ``Function`` subclass): ``tensorlib.ops.function.register_kernel``;
* an optimizer's update loop: ``tensorlib.optim.optimizer.register_step_kernel``;
* a model's cached forwards in ``generate``: ``tensorlib.nn.transformer.register_cached_step``.

``tensorlib.kernels.register_all`` fills the table, once, when the package is imported.
While the switch is off (``tensorlib.reference_mode()``) :func:`kernel_for` finds nothing,
so every layer runs its own plain code. This module imports nothing of the package: every
layer may read it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["kernel_for", "kernels_on", "register", "set_kernels_on"]

_TABLE: dict[type, Any] = {}
_kernels_on = True


def register(owner: type, kernel: Any, kind: type, registrar: str) -> None:
    """Let ``kernel`` stand in for the plain code of ``owner`` (replacing an earlier one).
    TypeError, naming the ``registrar`` that was called, unless ``owner`` is a subclass of
    ``kind`` and ``kernel`` is callable; what else a kernel must be is the rule of the
    layer that registers it."""
    if not (isinstance(owner, type) and issubclass(owner, kind)):
        raise TypeError(f"{registrar}: the class a kernel stands in for must be a subclass "
                        f"of {kind.__name__}, got {owner!r}")
    if not callable(kernel):
        raise TypeError(f"{registrar}: the kernel must be callable, got {kernel!r}")
    _TABLE[owner] = kernel


def kernel_for(owner: type) -> Any | None:
    """The kernel registered for exactly the class ``owner``; None if there is none, or
    while the kernels are off."""
    return _TABLE.get(owner) if _kernels_on else None


def kernels_on() -> bool:
    """True when registered kernels run in place of the plain code (reference mode is off)."""
    return _kernels_on


def set_kernels_on(on: bool) -> bool:
    """Switch every kernel on or off for the whole process; return the previous state."""
    global _kernels_on
    previous, _kernels_on = _kernels_on, bool(on)
    return previous
