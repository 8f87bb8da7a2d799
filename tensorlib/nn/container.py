"""Containers of modules: ``ModuleList`` and ``Sequential``, as PyTorch's
``torch.nn.modules.container``."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from tensorlib.nn.module import Module

__all__ = ["ModuleList", "Sequential"]


class ModuleList(Module):
    """An ordered list of child modules, registered as ``"0"``, ``"1"``, ..."""

    def __init__(self, modules: Iterable[Module] | None = None):
        super().__init__()
        for module in modules or []:
            self.append(module)

    def append(self, module: Module) -> ModuleList:
        self.register_module(str(len(self._modules)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        for module in modules:
            self.append(module)
        return self

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(list(self._modules.values()))

    def __setitem__(self, index: int, module: Module) -> None:
        """Replace item ``index`` (as assigning to a child's name does)."""
        if not -len(self._modules) <= index < len(self._modules):
            raise IndexError(f"ModuleList index {index} out of range for length "
                             f"{len(self._modules)}")
        self._replace_child(str(index % len(self._modules)), module)

    def __getitem__(self, index: int | slice) -> Any:
        items = list(self._modules.values())
        if isinstance(index, slice):
            return items[index]
        if not -len(items) <= index < len(items):
            raise IndexError(f"ModuleList index {index} out of range for length {len(items)}")
        return items[index]


class Sequential(ModuleList):
    """Modules called one after another, each on the output of the one before, as
    ``torch.nn.Sequential``; registered as ``"0"``, ``"1"``, ... (it is a ModuleList with a
    forward). A slice is a plain list of the modules: a module has one parent."""

    def __init__(self, *modules: Module):
        super().__init__(modules)

    def forward(self, x: Any) -> Any:
        for module in self:
            x = module(x)
        return x
