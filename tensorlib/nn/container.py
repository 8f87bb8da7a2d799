"""Containers of modules: ``ModuleList``, ``Sequential`` and ``ModuleDict``, as PyTorch's
``torch.nn.modules.container``."""

from __future__ import annotations

from collections.abc import ItemsView, Iterable, Iterator, KeysView, Mapping, ValuesView
from typing import Any

from tensorlib.nn.module import Module

__all__ = ["ModuleDict", "ModuleList", "Sequential"]


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


class ModuleDict(Module):
    """Child modules by name, in the order they were added, as ``torch.nn.ModuleDict``: a
    Module whose children are its items, so ``md["wte"]`` is ``md.wte`` and the names in
    ``named_parameters()`` and ``state_dict()`` run through the keys
    (``transformer.wte.weight``, ``transformer.h.0.attn.c_attn.weight``).

    Built from a mapping or an iterable of ``(key, module)`` pairs. Every item passes the
    registration rules of any child (``Module.register_module``: a key is a non-empty
    string without dots, not already an attribute of the class such as ``keys``; a module is
    not another's child; no cycle), and ``md[key] = module`` replaces an existing item in
    place. As for every module, an attached ModuleDict takes no new items (docs/departures.md
    section 5); it may still replace, delete, pop and clear its items. ``update`` (and the
    constructor) is all or nothing: if one item is refused, the others are undone.
    """

    def __init__(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]] | None = None
                 ) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    # ------------------------------------------------------------------------ items
    def __getitem__(self, key: str) -> Module:
        if key not in self._modules:
            raise KeyError(f"ModuleDict has no item {key!r}; its keys are {list(self._modules)}")
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        """Add ``module`` under ``key``, or replace the item ``key`` in place."""
        if not isinstance(module, Module):
            raise TypeError(f"ModuleDict item {key!r} must be a Module, got "
                            f"{type(module).__name__}")
        if isinstance(key, str) and key in self._modules:
            self._replace_child(key, module)
        else:
            self.register_module(key, module)

    def __delitem__(self, key: str) -> None:
        self.pop(key)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        """The keys, in order (a snapshot: the dict may change while it is read)."""
        return iter(list(self._modules))

    def __contains__(self, key: object) -> bool:
        return key in self._modules

    def keys(self) -> KeysView[str]:
        return dict(self._modules).keys()

    def values(self) -> ValuesView[Module]:
        return dict(self._modules).values()

    def items(self) -> ItemsView[str, Module]:
        return dict(self._modules).items()

    def pop(self, key: str) -> Module:
        """Remove the item ``key`` and return it, detached (it may be registered elsewhere)."""
        module = self[key]
        del self._modules[key]
        object.__setattr__(module, "_parent", None)
        return module

    def clear(self) -> None:
        """Remove every item."""
        for key in list(self._modules):
            self.pop(key)

    def update(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]]) -> None:
        """Add or replace items from a mapping (its order) or an iterable of
        ``(key, module)`` pairs, all or nothing."""
        pairs = _pairs(modules)
        undo: list[tuple[str, Module | None]] = []  # (key, the item it replaced, or None)
        try:
            for key, module in pairs:
                before = self._modules.get(key) if isinstance(key, str) else None
                self[key] = module
                undo.append((key, before))
        except Exception:
            for key, before in reversed(undo):
                added = self._modules[key]
                object.__setattr__(added, "_parent", None)
                if before is None:
                    del self._modules[key]
                else:  # it stood here a moment ago: put it back as it was
                    object.__setattr__(before, "_parent", self)
                    self._modules[key] = before
            raise


def _pairs(modules: Any) -> list[tuple[Any, Any]]:
    """``(key, module)`` pairs of a mapping or of an iterable of pairs, checked as PyTorch's
    ``ModuleDict.update`` checks them (TypeError, ValueError naming the element)."""
    if isinstance(modules, (Mapping, ModuleDict)):
        return list(modules.items())
    if isinstance(modules, (str, bytes, Module)) or not isinstance(modules, Iterable):
        raise TypeError(f"ModuleDict.update needs a mapping or an iterable of (key, module) "
                        f"pairs, got {type(modules).__name__}")
    pairs = []
    for index, pair in enumerate(modules):
        if isinstance(pair, (str, bytes)) or not isinstance(pair, Iterable):
            raise TypeError(f"ModuleDict update sequence element #{index} should be a "
                            f"(key, module) pair, got {type(pair).__name__}")
        pair = tuple(pair)
        if len(pair) != 2:
            raise ValueError(f"ModuleDict update sequence element #{index} has length "
                             f"{len(pair)}; 2 is required")
        pairs.append(pair)
    return pairs
