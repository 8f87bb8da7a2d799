"""Modules: the tree every layer, optimizer and checkpoint works through.

Its leaves, the parameters, are in :mod:`tensorlib.nn.parameter`; ``load_state_dict``
loads by name with :mod:`tensorlib.nn.state_dict`; the containers built on the tree
(``ModuleList``, ``Sequential``) are in :mod:`tensorlib.nn.container`, the handle a forward
hook returns in :mod:`tensorlib.nn.hooks`.

A ``Module`` registers its ``Parameter``s and child modules under names (attribute
assignment registers them too). From that tree come dotted names
(``blocks.0.attention.qkv_weight``), a stable parameter order, train/eval propagation and
state dictionaries. Registration keeps the tree a tree: no duplicate names, no parameter or
child registered twice, no cycles. Assigning a module to the name of a child replaces that
child (as in PyTorch), under the same rules; LoRA and NF4 layers are swapped in this way.
Assigning a Parameter to the name of a parameter replaces it too, and that one may be a
parameter the tree already holds: weight tying, PyTorch's way
(``transformer.wte.weight = lm_head.weight``). A tied parameter is listed once by
``parameters()`` and ``named_parameters()`` (under the first name met) and under each of
its names by ``state_dict()``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from tensorlib.engine.backend import to_numpy
from tensorlib.engine.dtypes import bfloat16, float16, float32, float64
from tensorlib.engine.tensor import Tensor
from tensorlib.nn import conversion
from tensorlib.nn.hooks import RemovableHandle
from tensorlib.nn.parameter import Parameter, as_buffer
from tensorlib.nn.state_dict import IncompatibleKeys, load_by_name


class Module:
    """Base class of every layer and model.

    Subclasses call ``super().__init__()`` first, then assign parameters and child modules
    as attributes (or call ``register_parameter`` / ``register_module`` /
    ``register_buffer``), and define ``forward``. Calling the module runs ``forward``, then
    its forward hooks.

    Assigning a module to the name of an existing child replaces it (``model.head =
    Linear(...)``); that assignment checks the new child against the assigned-to module's
    own subtree; ``model.set_submodule("a.b", new)``
    checks it against the whole of ``model``. Assigning a Parameter to the name of an
    existing parameter replaces it (``_replace_parameter``: weight tying).
    """

    def __init__(self) -> None:
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_buffers", {})
        object.__setattr__(self, "_non_persistent_buffers", set())
        object.__setattr__(self, "_modules", {})
        object.__setattr__(self, "_forward_hooks", {})
        object.__setattr__(self, "_parent", None)  # the module this one is a child of
        object.__setattr__(self, "training", True)

    @property
    def _parent_registered(self) -> bool:
        """Whether this module is some module's child (attached, so sealed)."""
        return self._parent is not None

    def _root(self) -> Module:
        """The top of the tree this module is attached in (itself when it is no child)."""
        module = self
        while module._parent is not None:
            module = module._parent
        return module

    # ------------------------------------------------------------------------ registration
    def _check_name(self, name: str, kind: str) -> None:
        if "_parameters" not in self.__dict__:
            raise RuntimeError(
                f"{type(self).__name__}.__init__ must call super().__init__() "
                f"before registering {kind} '{name}'"
            )
        if not isinstance(name, str):
            raise TypeError(f"{kind} name must be a string, got {type(name).__name__}")
        if not name:
            raise ValueError(f"{kind} name must not be empty")
        if "." in name:
            raise ValueError(f"{kind} name '{name}' must not contain '.' (dots join nested names)")
        if name in self._parameters or name in self._modules or name in self._buffers:
            raise KeyError(f"{type(self).__name__} already has a member named '{name}'")
        if hasattr(type(self), name) or name in self.__dict__:
            raise KeyError(
                f"cannot register {kind} '{name}': {type(self).__name__} already has "
                "an attribute of that name"
            )
        if self._parent_registered:
            raise RuntimeError(
                f"cannot register {kind} '{name}': this {type(self).__name__} is "
                "already a child of another module; register members before "
                "attaching it"
            )

    def register_parameter(self, name: str, parameter: Parameter) -> None:
        """Add a parameter under ``name``; rejects bad or taken names and repeated objects."""
        if not isinstance(parameter, Parameter):
            raise TypeError(
                f"cannot register {type(parameter).__name__} as parameter '{name}': "
                "expected a Parameter"
            )
        self._check_name(name, "parameter")
        for other_name, other in self.named_parameters(include_frozen=True):
            if other is parameter:
                raise ValueError(
                    f"this Parameter is already registered as '{other_name}'; "
                    "the same parameter cannot be registered twice"
                )
        self._parameters[name] = parameter
        parameter.__dict__["_registered_as"] = f"'{name}' of {type(self).__name__}"

    def register_buffer(self, name: str, value: Any, persistent: bool = True) -> None:
        """Add a buffer under ``name``: state that is saved (when ``persistent``) and moved
        with the module but never trained, such as NF4 codes. ``value`` is an array or a
        Tensor that does not require grad; the module holds it as a Tensor, which is not in
        ``parameters()``."""
        self._check_name(name, "buffer")
        self._buffers[name] = as_buffer(value, name)
        if not persistent:
            self._non_persistent_buffers.add(name)

    def register_module(self, name: str, module: Module) -> None:
        """Add a child module under ``name``; rejects bad names, repeats and cycles."""
        self._check_child(name, module, tree=self)
        object.__setattr__(module, "_parent", self)
        self._modules[name] = module

    def _check_child(self, name: str, module: Any, tree: Module,
                     replaced: Module | None = None) -> None:
        """Whether ``module`` may become this module's child ``name``: a new registration
        (``replaced`` None) or the replacement of the child ``replaced``. ``tree`` (this
        module or an ancestor) is what it must not share a module or parameter with; the
        subtree of ``replaced`` does not count, since it leaves."""
        if not isinstance(module, Module):
            raise TypeError(
                f"cannot register {type(module).__name__} as module '{name}': expected a Module"
            )
        # Cycles first: a module inside a cycle is already attached (sealed), and the
        # sealing error from _check_name would hide what is really wrong.
        if module is self:
            raise ValueError(f"cannot register a {type(self).__name__} inside itself as '{name}'")
        if "_modules" in module.__dict__ and any(
            descendant is self for descendant in module.modules()
        ):
            raise ValueError(
                f"registering '{name}' would create a cycle: the "
                f"{type(module).__name__} already contains this module"
            )
        if replaced is None:
            self._check_name(name, "module")
        if module._parent_registered:
            raise ValueError(
                f"this {type(module).__name__} is already registered as a child "
                f"of another module; cannot register it again as '{name}'"
            )
        leaving = set() if replaced is None else {id(m) for m in replaced.modules()}
        own_modules = {id(m): n for n, m in tree.named_modules() if id(m) not in leaving}
        where = _join(own_modules.get(id(self), ""), name)  # the new child's name in tree
        for _sub_name, sub in module.named_modules():
            if id(sub) in own_modules:
                raise ValueError(
                    f"module '{where}' contains a module already registered here "
                    f"as '{own_modules[id(sub)] or '(root)'}'"
                )
        own_parameters = {id(p): n for n, p in tree._named_members(
            lambda m: () if id(m) in leaving else m._parameters.items())}
        for sub_name, parameter in module.named_parameters(include_frozen=True):
            if id(parameter) in own_parameters:
                raise ValueError(
                    f"parameter '{where}.{sub_name}' is already registered here as "
                    f"'{own_parameters[id(parameter)]}'"
                )

    def _replace_parameter(self, name: str, parameter: Parameter) -> Parameter:
        """Put ``parameter`` in the place of the parameter ``name`` (same position, so names
        and order stay) and return the old one, as PyTorch's assignment does. Allowed on an
        attached module (it adds no member), and ``parameter`` may be one this tree already
        holds: that is weight tying (``wte.weight = lm_head.weight``), and the tied parameter
        is then listed once by ``parameters()``. Any shape may come in (nanoGPT's
        ``wpe.weight = Parameter(wpe.weight[:block_size])``)."""
        old = self._parameters[name]
        self._parameters[name] = parameter
        parameter.__dict__.setdefault("_registered_as", f"'{name}' of {type(self).__name__}")
        return old

    def _replace_child(self, name: str, module: Module) -> Module:
        """Put ``module`` in the place of the child ``name`` (same position, so names and
        order stay); the old child is detached and returned. Checked as ``_check_child``
        against the whole tree this module is attached in (sealing: a replacement deep in
        an attached subtree cannot bring a module or parameter that is already elsewhere)."""
        old = self._modules[name]
        if module is old:
            return old
        self._check_child(name, module, tree=self._root(), replaced=old)
        object.__setattr__(old, "_parent", None)
        object.__setattr__(module, "_parent", self)
        self._modules[name] = module
        return old

    def __setattr__(self, name: str, value: Any) -> None:
        if name in self.__dict__.get("_buffers", {}) and not isinstance(value, Parameter):
            self._buffers[name] = as_buffer(value, name)  # a buffer is replaced, as in PyTorch
        elif isinstance(value, Parameter):
            if name in self.__dict__.get("_parameters", {}):
                self._replace_parameter(name, value)  # as in PyTorch (weight tying)
            else:
                self.register_parameter(name, value)
        elif isinstance(value, Module):
            if name in self.__dict__.get("_modules", {}):
                self._replace_child(name, value)  # a child is replaced, as in PyTorch
            else:
                self.register_module(name, value)
        elif name in self.__dict__.get("_parameters", {}) or name in self.__dict__.get(
            "_modules", {}
        ):
            raise TypeError(
                f"cannot replace registered member '{name}' of "
                f"{type(self).__name__} with a {type(value).__name__}"
            )
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        # Only called when normal lookup fails: look among the registered members.
        members = self.__dict__
        if "_parameters" in members and name in members["_parameters"]:
            return members["_parameters"][name]
        if "_modules" in members and name in members["_modules"]:
            return members["_modules"][name]
        if "_buffers" in members and name in members["_buffers"]:
            return members["_buffers"][name]
        raise AttributeError(
            f"'{type(self).__name__}' has no attribute, parameter, buffer or child module "
            f"named '{name}'"
        )

    def __delattr__(self, name: str) -> None:
        if name in self._parameters or name in self._modules or name in self._buffers:
            raise AttributeError(f"registered member '{name}' cannot be deleted")
        object.__delattr__(self, name)

    def __deepcopy__(self, memo: dict[int, Any]) -> Module:
        """An independent copy of this module and everything it holds. A child copied on
        its own is free (no parent); copied with its parent, it is the copy's child."""
        clone = type(self).__new__(type(self))
        memo[id(self)] = clone
        for key, value in self.__dict__.items():
            if key != "_parent":
                object.__setattr__(clone, key, copy.deepcopy(value, memo))
        parent = self._parent
        object.__setattr__(clone, "_parent", None if parent is None else memo.get(id(parent)))
        return clone

    def __copy__(self) -> Module:
        raise TypeError(
            f"copy.copy() of a {type(self).__name__} would share its parameters, buffers and "
            "children with the original; use copy.deepcopy() for an independent copy"
        )

    # ------------------------------------------------------------------------ traversal
    def _named_members(
        self,
        members: Callable[[Module], Iterable[tuple[str, Any]]],
        recurse: bool = True,
        remove_duplicate: bool = False,
        children_first: bool = False,
    ) -> Iterator[tuple[str, Any]]:
        """The one walk over the tree that every listing below is made from (PyTorch's
        ``_named_members``): ``(dotted name, member)`` for each ``(name, member)`` that
        ``members(module)`` gives, the name relative to this module ("" is the module itself).

        Depth first in registration order, each module's members before its children's (after
        them with ``children_first``); only this module's with ``recurse=False``.
        ``remove_duplicate`` skips an object given before (a tensor two modules share)."""
        seen: set[int] = set()
        stack: list[tuple[str, Module, bool]] = [("", self, False)]  # path, module, expanded
        while stack:
            path, module, expanded = stack.pop()
            if children_first and recurse and not expanded:
                stack.append((path, module, True))
                stack.extend((_join(path, name), child, False)
                             for name, child in reversed(module._modules.items()))
                continue
            for name, member in members(module):
                if remove_duplicate:
                    if id(member) in seen:
                        continue
                    seen.add(id(member))
                yield _join(path, name), member
            if recurse and not children_first:  # read after the yields, as the caller left it
                stack.extend((_join(path, name), child, False)
                             for name, child in reversed(module._modules.items()))

    def named_parameters(
        self, prefix: str = "", include_frozen: bool = True, recurse: bool = True,
        remove_duplicate: bool = True,
    ) -> Iterator[tuple[str, Parameter]]:
        """``(prefix + dotted_name, parameter)`` depth-first: own parameters, then each
        child's (only the own ones with ``recurse=False``). A parameter held under two names
        (weight tying) is given once, under the first name met, unless
        ``remove_duplicate=False`` (PyTorch's argument)."""
        for name, parameter in self._named_members(lambda m: m._parameters.items(), recurse,
                                                   remove_duplicate=remove_duplicate):
            if include_frozen or parameter.trainable:
                yield prefix + name, parameter

    def named_buffers(self, prefix: str = "", recurse: bool = True
                      ) -> Iterator[tuple[str, Tensor]]:
        """``(prefix + dotted_name, buffer)`` depth-first: own buffers, then each child's (only
        the own ones with ``recurse=False``). When recursing, ``prefix`` names a module: its
        trailing dot is optional."""
        if recurse:
            stem = prefix.rstrip(".")
            prefix = stem + "." if stem else ""
        yield from ((prefix + name, buffer) for name, buffer
                    in self._named_members(lambda m: m._buffers.items(), recurse))

    def buffers(self) -> list[Tensor]:
        """All buffers in a stable depth-first registration order."""
        return [b for _, b in self.named_buffers()]

    def _named_state(self) -> Iterator[tuple[str, Tensor]]:
        """What ``state_dict`` holds, in its order: per module depth-first, its parameters,
        then its persistent buffers."""
        return self._named_members(_own_state)

    def parameters(self, include_frozen: bool = True) -> list[Parameter]:
        """All parameters in a stable depth-first registration order, each once (a tied
        parameter too)."""
        return [p for _, p in self.named_parameters(include_frozen=include_frozen)]

    def trainable_parameters(self) -> list[Parameter]:
        return self.parameters(include_frozen=False)

    def named_children(self) -> Iterator[tuple[str, Module]]:
        return iter(list(self._modules.items()))

    def children(self) -> list[Module]:
        return list(self._modules.values())

    def named_modules(self, prefix: str = "") -> Iterator[tuple[str, Module]]:
        """This module (name ``prefix``, "" at the root) and every descendant, depth-first."""
        for name, module in self._named_members(lambda m: (("", m),)):
            yield _join(prefix, name), module

    def modules(self) -> list[Module]:
        return [m for _, m in self.named_modules()]

    def get_submodule(self, dotted_name: str) -> Module:
        """The descendant at ``dotted_name`` ("" is the module itself)."""
        module = self
        for part in dotted_name.split(".") if dotted_name else []:
            if part not in module._modules:
                raise KeyError(f"no submodule '{dotted_name}' (missing '{part}')")
            module = module._modules[part]
        return module

    def set_submodule(self, dotted_name: str, module: Module) -> Module:
        """Replace the descendant at ``dotted_name`` by ``module`` and return the old one.

        The new module takes the old one's place (its names and position in every
        traversal) and passes the registration checks against this whole tree: it is not
        already a child elsewhere, makes no cycle, and shares no module or parameter with
        what stays (the old subtree leaves, so its parameters may be registered again). The
        old module is detached and may be registered elsewhere. KeyError if there is no
        such descendant (unlike PyTorch's ``strict=False``, no new child is added; use
        ``register_module`` on the parent for that).
        """
        if not isinstance(dotted_name, str) or not dotted_name:
            raise ValueError(f"set_submodule needs the dotted name of a descendant, got "
                             f"{dotted_name!r} (a module cannot replace itself)")
        parent_name, _, name = dotted_name.rpartition(".")
        parent = self.get_submodule(parent_name)
        if name not in parent._modules:
            raise KeyError(f"no submodule '{dotted_name}' (missing '{name}')")
        return parent._replace_child(name, module)

    def apply(self, fn: Callable[[Module], Any]) -> Module:
        """Call ``fn`` on every child's tree (``child.apply(fn)``, in the order of
        ``children()``, hook-point children included), then on this module, and return self:
        PyTorch's ``Module.apply``, with which nanoGPT initializes its weights
        (``self.apply(self._init_weights)``)."""
        if not callable(fn):
            raise TypeError(f"apply needs a callable taking a module, got {type(fn).__name__}")
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    def num_parameters(self, trainable_only: bool = False) -> int:
        return sum(p.numel() for p in self.parameters(include_frozen=not trainable_only))

    # ------------------------------------------------------------------------ modes
    def train(self, mode: bool = True) -> Module:
        """Set ``training`` to ``mode`` on this module, then call each child's ``train(mode)``
        (as PyTorch), so a subclass that overrides ``train`` is reached when an ancestor
        changes mode; returns self."""
        mode = bool(mode)
        object.__setattr__(self, "training", mode)
        for child in self.children():
            child.train(mode)
        return self

    def eval(self) -> Module:
        """``train(False)``; returns self."""
        return self.train(False)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget every parameter's gradient (``.grad`` becomes None, PyTorch's default),
        those of the extra parameters too (see ``_extra_parameters``); with
        ``set_to_none=False`` the gradients that exist are filled with zeros in place."""
        for parameter in [*self.parameters(), *(p for _, p in self._named_members(
                _extra_members))]:
            if set_to_none:
                parameter.grad = None
            elif parameter.grad is not None:
                parameter.grad.zero_()

    def _extra_parameters(self) -> Iterable[tuple[str, Parameter]]:
        """The parameters this module holds outside the ``parameters()`` schema, by name
        relative to it: none here; a LoRALinear's attached adapter (``lora.A``, ``lora.B``).

        They are not listed by ``parameters()`` or ``state_dict()`` (which stay the base
        model's, so base checkpoints keep loading), but ``to()``, ``float()``, ``double()``,
        ``half()`` and ``bfloat16()`` convert them in the same transaction as the rest, and
        ``zero_grad()`` clears them. Whoever adds them gives their own way to list and save them
        (``tensorlib.adapters.lora.lora_parameters``).
        """
        return ()

    # ------------------------------------------------------------------------ conversion
    def _apply(self, fn: Callable[[Any], Any],
               convert_grads: bool | Callable[[Any, Any], Any] = True) -> Module:
        """Give every parameter and buffer of the tree ``fn(data)`` as its data, in place;
        returns self. What ``to``, ``float`` and ``double`` are made of (as in PyTorch).

        ``fn`` takes an array and returns an array of the same shape (a Parameter's stays
        floating), or the array itself to leave that tensor untouched (same array, version
        and grad). Tensors are visited children first, each module's parameters, then its
        buffers, then its extra parameters (``_extra_parameters``), a tensor shared by two
        modules once. The conversion is one transaction: ``fn`` runs on every tensor first,
        and only when all calls succeeded does each changed tensor take its new array (the
        same Tensor or Parameter object, so an optimizer holding it still does, with its
        ``trainable`` flag), its version bump, and its gradient become ``fn(grad)`` as in
        PyTorch (None with ``convert_grads=False``; when it is a function,
        ``convert_grads(grad, data)`` with the tensor's data before the change, None to drop
        the gradient). If ``fn`` raises or returns a bad array, nothing changes."""
        return conversion.convert_in_place(self, fn, convert_grads)

    def to(self, *args: Any, **kwargs: Any) -> Module:
        """Move every parameter and buffer of the whole tree to a device, or cast them to a
        dtype, or both; returns self. PyTorch's forms: ``to(device)``, ``to(dtype)``,
        ``to(device, dtype)``, ``to(tensor)`` (its device and dtype), by name
        ``to(device=None, dtype=None, non_blocking=False)``; a device is a string ("cpu",
        "cuda:0", a registered backend) or a ``tensorlib.device``, and ``non_blocking``
        changes nothing.

        The change is one transaction (``_apply``). It checks the arguments first (ValueError
        for an unknown device, listing the known ones; RuntimeError saying why for one not
        available here; TypeError for a dtype that is not floating, as in PyTorch), then
        copies every tensor of ``parameters()`` and ``buffers()`` (NF4 codes and scales
        among them) and every extra parameter (a LoRA adapter's, see ``_extra_parameters``)
        to the device. Only when every copy succeeded does it commit: each moved tensor gets
        its new array in place (the same Tensor object), its version bumps and its gradient
        is dropped (``grad = None``; an old gradient lives on the old device, where PyTorch
        moves it too). Tensors already on the device are not touched (same array, version and
        grad). A dtype casts the floating tensors and, for those that stay on their device,
        their gradients, as ``float()``, ``half()`` and the others do; integer buffers keep
        theirs. If a copy fails, nothing changes and the error propagates.

        Move a model before building a graph or an optimizer: graphs recorded before the move
        see new versions and refuse to run backward, and optimizer state stays behind.
        """
        return conversion.move_or_cast(self, args, kwargs)

    def cpu(self) -> Module:
        """``to('cpu')``: every parameter and buffer on the CPU; returns self."""
        return self.to("cpu")

    def cuda(self, device: Any = None) -> Module:
        """``to('cuda')`` (or ``to(device)``; an int ``i`` is ``'cuda:i'``); returns self.
        RuntimeError saying why, and nothing changed, when no GPU is available here."""
        if device is None:
            device = "cuda"
        elif isinstance(device, (int, np.integer)) and not isinstance(device, bool):
            device = f"cuda:{device}"
        return self.to(device)

    def float(self) -> Module:
        """Cast every floating parameter and buffer (and gradient) to float32, in place
        (``_apply``); integer buffers keep their dtype. Returns self."""
        return self._apply(conversion.floating_to(float32))

    def double(self) -> Module:
        """:meth:`float`, to float64."""
        return self._apply(conversion.floating_to(float64))

    def half(self) -> Module:
        """:meth:`float`, to float16."""
        return self._apply(conversion.floating_to(float16))

    def bfloat16(self) -> Module:
        """:meth:`float`, to bfloat16."""
        return self._apply(conversion.floating_to(bfloat16))

    # ------------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, np.ndarray]:
        """A numpy copy of every parameter's and persistent buffer's values (copied to the
        host from any device), keyed by dotted name: module by module depth-first, each
        module's parameters, then its buffers."""
        return {name: to_numpy(tensor.numpy()) for name, tensor in self._named_state()}

    def load_state_dict(self, state: dict[str, Any], strict: bool = True) -> IncompatibleKeys:
        """Copy values in by name. All problems are collected and reported in one
        ``StateDictError`` before anything changes; on error the module is untouched.

        With ``strict=False``, missing and unexpected keys are returned instead of raised
        (mis-shaped values always raise).
        """
        return load_by_name(dict(self._named_state()), state, strict,
                            f"cannot load state into {type(self).__name__}")

    # ------------------------------------------------------------------------ calling
    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not define forward()")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        output = self.forward(*args, **kwargs)
        for hook in list(self._forward_hooks.values()):
            replaced = hook(self, args, output)
            if replaced is not None:
                output = replaced
        return output

    def register_forward_hook(self, hook: Callable[[Module, tuple[Any, ...], Any], Any]
                              ) -> RemovableHandle:
        """Call ``hook(module, inputs, output)`` after every ``forward`` (``inputs`` is the
        tuple of positional arguments). A hook that returns something other than None
        replaces the output; hooks run in the order they were registered. Returns a handle
        whose ``remove()`` takes the hook off."""
        if not callable(hook):
            raise TypeError(f"a forward hook must be callable, got {type(hook).__name__}")
        handle = RemovableHandle(self._forward_hooks)
        self._forward_hooks[handle.id] = hook
        return handle

    def extra_repr(self) -> str:
        """One line of configuration shown by ``repr`` (override in layers)."""
        return ""

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__}({self.extra_repr()}"]
        children = list(self._modules.items())
        if not children:
            return lines[0] + ")"
        for name, child in children:
            child_lines = repr(child).split("\n")
            lines.append(f"  ({name}): " + child_lines[0])
            lines.extend("  " + line for line in child_lines[1:])
        lines.append(")")
        return "\n".join(lines)


def check_module(value: Any, what: str) -> Module:
    """``value``, when it is a Module; TypeError ``"<what> must be a Module, got <type>"``
    otherwise. The one check of every function that takes a model."""
    if not isinstance(value, Module):
        raise TypeError(f"{what} must be a Module, got {type(value).__name__}")
    return value


def named_extra_parameters(module: Module) -> list[tuple[str, Parameter]]:
    """Every extra parameter of ``module``'s tree (``Module._extra_parameters``: the LoRA
    adapters' factors), by dotted name, depth-first in registration order."""
    check_module(module, "module")
    return list(module._named_members(_extra_members))


def _join(path: str, name: str) -> str:
    """``path.name``, or whichever of the two is not empty."""
    return f"{path}.{name}" if path and name else path or name


def _own_state(module: Module) -> Iterator[tuple[str, Tensor]]:
    """A module's own entries of ``state_dict``: its parameters, then persistent buffers."""
    yield from module._parameters.items()
    for name, buffer in module._buffers.items():
        if name not in module._non_persistent_buffers:
            yield name, buffer


def _extra_members(module: Module) -> Iterator[tuple[str, Parameter]]:
    """A module's extra parameters (``Module._extra_parameters``)."""
    yield from module._extra_parameters()
