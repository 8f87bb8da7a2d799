"""The one table of kernels, and the switch that sets them all aside (reference mode).

A kernel is faster code that computes what some plain code of the package computes, and
runs in its place. Each is registered here for exactly one class, the one whose plain code
it stands in for (a subclass does not inherit it), through the registration of that layer,
which checks what it is given:

* an op (a ``Function`` subclass): ``tensorlib.engine.ops.function.register_kernel``;
* an optimizer's update loop: ``tensorlib.optim.optimizer.register_step_kernel``;
* a model's cached forwards in ``generate``:
  ``tensorlib.models.decoder_step.register_cached_step``.

``tensorlib.engine.kernels.register_all`` fills the table, once, when the package is imported.
While the switch is off (``tensorlib.reference_mode()``) :func:`kernel_for` finds nothing,
so every layer runs its own plain code. This module imports nothing of the package: every
layer may read it.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

from tensorlib.engine import validation

__all__ = ["enabled", "is_reference_mode", "kernel_for", "kernels_on", "reference_mode", "register",
           "set_kernels_on", "set_reference_mode"]

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


# ------------------------------------------------------------ reference mode: the switch
def enabled() -> bool:
    """True when the kernels may run (reference mode is off)."""
    return kernels_on()


def is_reference_mode() -> bool:
    """True while the engine runs on its plain paths."""
    return not kernels_on()


def set_reference_mode(on: bool) -> bool:
    """Turn reference mode on (True) or off (False) for the whole process; return the mode
    that was in force before, so that a caller can restore it. Reference mode is the kernel
    table (``tensorlib.engine.kernel_table``) switched off."""
    on = validation.boolean(on, "reference mode")
    return not set_kernels_on(not on)


class reference_mode:  # lower case: used like a function, as torch.no_grad
    """Run the whole engine on its plain paths: no kernels, no caches.

    The call itself sets the mode, so it works both ways::

        with tensorlib.reference_mode():      # on inside the block ...
            loss = model.loss(inputs, targets)
        # ... and back to what it was before the block here

        tensorlib.reference_mode(True)        # on from here, for the whole process
        tensorlib.reference_mode(False)       # off again

    (``torch.set_grad_enabled`` behaves the same way.) ``set_reference_mode(on)`` and
    ``is_reference_mode()`` are the plain function forms. The mode is one process-wide flag,
    shared by all threads.
    """

    def __init__(self, on: bool = True) -> None:
        self._previous = set_reference_mode(on)

    def __enter__(self) -> reference_mode:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        set_reference_mode(self._previous)

    def __repr__(self) -> str:
        return f"reference_mode({is_reference_mode()})"
