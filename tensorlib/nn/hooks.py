"""The handle a hook registration returns, as PyTorch's ``torch.utils.hooks``."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

__all__ = ["RemovableHandle"]


class RemovableHandle:
    """What ``register_forward_hook`` returns: ``remove()`` takes the hook off again (a second
    call does nothing). Also a context manager that removes the hook on exit.

    ``id``, the hook's key in ``hooks``, comes from one counter shared by every handle, as in
    PyTorch: ids are never reused, so a handle can only ever remove its own hook."""

    _ids = itertools.count()

    def __init__(self, hooks: dict[int, Callable[..., Any]]):
        self._hooks = hooks
        self.id = next(RemovableHandle._ids)

    def remove(self) -> None:
        self._hooks.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.remove()
