"""Where each op's function is reachable: the declaration every function of
:mod:`tensorlib.engine.methods` carries."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["SPELLINGS", "Spellings", "declare"]


@dataclass(frozen=True)
class Spellings:
    """Where one op's function is reachable: as ``Tensor.<name>`` (``method``), as
    ``tensorlib.<name>`` (``function``), as ``tensorlib.nn.functional.<name>``
    (``functional``), and as the module ``tensorlib.nn.<module>`` that applies it."""

    name: str
    method: bool = True
    function: bool = True
    functional: bool = False
    module: str | None = None


SPELLINGS: dict[str, Spellings] = {}


def declare(*functions: Callable[..., Any], method: bool = True, function: bool = True,
            functional: bool = False, module: str | None = None) -> None:
    """Declare where each of ``functions`` is spelled (``module`` with one function only)."""
    if module is not None and len(functions) != 1:
        raise ValueError("one module applies one function")
    for declared in functions:
        name = declared.__name__
        if name in SPELLINGS:
            raise ValueError(f"{name} is declared twice")
        SPELLINGS[name] = Spellings(name, method, function, functional, module)
