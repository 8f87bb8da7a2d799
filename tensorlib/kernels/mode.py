"""The switch between the kernels and the plain paths: ``reference_mode``.

One process-wide flag (not per thread). While it is on, no kernel runs and no kernel cache is
read or filled: every op, the backward engine and the optimizers compute the plain formulas
written in their own code.
"""

from __future__ import annotations

from types import TracebackType

from tensorlib import validation
from tensorlib.kernel_table import kernels_on, set_kernels_on

__all__ = ["enabled", "is_reference_mode", "reference_mode", "set_reference_mode"]


def enabled() -> bool:
    """True when the kernels may run (reference mode is off)."""
    return kernels_on()


def is_reference_mode() -> bool:
    """True while the engine runs on its plain paths."""
    return not kernels_on()


def set_reference_mode(on: bool) -> bool:
    """Turn reference mode on (True) or off (False) for the whole process; return the mode
    that was in force before, so that a caller can restore it. Reference mode is the kernel
    table (``tensorlib.kernel_table``) switched off."""
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
