"""The checks of notebook 06 (modules and parameters): the core piece ``TinyModule`` (with
``TinyParameter``), and the exercises ``tiny_named_modules``, ``tiny_num_parameters``,
``Residual`` and ``freeze_all_but``.

``TinyModule``'s check compares registration by ``__setattr__``, the ``named_parameters``
walk and ``state_dict`` with ``tensorlib.nn.Module`` and ``Parameter`` on the same small tree
of modules (plain attributes of every kind, a parameter assigned after the children, tied
weights, a training step after saving). Each usual slip of a walk (own parameters after the
children's, a missing dot, a missing prefix, a tied tensor named twice) is computed here by a
walk with that slip over the learner's own dicts, so the report names it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

import tensorlib as tl
from tensorlib.course.checks.registry import HandOn, exercise_check, piece_check
from tensorlib.course.exercises import Checker
from tensorlib.engine.splitmix64 import Rng
from tensorlib.nn import Module, Parameter

__all__ = ["check_tiny_module", "check_tiny_named_modules", "check_tiny_num_parameters",
           "check_residual", "check_freeze_all_but"]

# What the error a usual slip raises says -> that slip (Checker.named_errors): any
# RecursionError; a ValueError or RuntimeError about a tensor's truth value.
_RECURSION = {"": "setattr(self, name, value) (or self.name = value) inside __setattr__ calls "
                  "__setattr__ again, forever: store a plain attribute with "
                  "object.__setattr__(self, name, value)"}
_COMPARED = {"truth value": "tensors compared with == (`p in a list`, `p == q`): that compares "
                            "entry by entry; tell tensors apart by identity, id(p) in a set"}


def _tree(Base: Any, Weight: Any) -> Any:  # noqa: N803
    """root (label, scale, encoder (gain, first, second), mask, head, offset, spares) on
    `Base`/`Weight`, plain attributes on every level; the same values whatever the Base."""
    draw = Rng(11)

    class Leaf(Base):
        def __init__(self, n: int) -> None:
            super().__init__()
            self.n = n                                                   # plain: an int
            self.weight = Weight(draw.normal(size=(n, n)))
            self.bias = Weight(draw.normal(size=(n,)))

        def forward(self, x: Any) -> Any:
            return (x @ self.weight.T + self.bias).tanh()

    class Pair(Base):
        def __init__(self) -> None:
            super().__init__()
            self.gain = Weight(np.linspace(0.5, 1.5, 3, dtype=np.float32))
            self.first = Leaf(3)
            self.second = Leaf(3)

        def forward(self, x: Any) -> Any:
            return self.second(self.first(x * self.gain))

    class Root(Base):
        def __init__(self) -> None:
            super().__init__()
            self.label = "root"                                          # plain: a string
            self.scale = Weight(np.full(3, 0.9, dtype=np.float32))
            self.encoder = Pair()
            self.mask = tl.tensor(np.ones(3, dtype=np.float32))          # plain: not a Parameter
            self.head = Leaf(3)
            self.offset = Weight(np.full(3, 0.2, dtype=np.float32))      # own, after the children
            self.spares = [Leaf(2)]                                      # plain: a list

        def forward(self, x: Any) -> Any:
            return self.head(self.encoder(x * self.scale) * self.mask) + self.offset

    return Root()


def _filed(module: Any, path: str = "") -> list[tuple[str, list, list, list]]:
    """Depth first, one row per module: (path, parameter names, child names, plain
    attributes)."""
    plain = sorted(name for name in vars(module)
                   if not name.startswith("_") and name != "training")
    rows = [(path.rstrip(".") or "the root", list(module._parameters), list(module._modules),
             plain)]
    for name, child in module._modules.items():
        rows += _filed(child, path + name + ".")
    return rows


def _given(mistakes: dict[str, Any]) -> dict[str, Any]:
    """The mistakes that can happen in this case (those not None)."""
    return {description: value for description, value in mistakes.items() if value is not None}


def _check_filed(checker: Checker, mine: Any, theirs: Any, moved: tuple[str, ...] = ()) -> None:
    """The names each module of ``mine`` files, as ``theirs`` (the package's) files them.
    ``moved``: names re-assigned in this case (a slip moves them to the end)."""
    for (where, parameters, children, plain), (_, their_parameters, their_children,
                                               their_plain) in zip(_filed(mine),
                                                                   _filed(theirs), strict=False):
        at_end = ("a re-assigned name moved to the end: assign into the dict "
                  "(self._modules[name] = value) without deleting the old entry first")
        last = [name for name in their_parameters if name not in moved] + \
            [name for name in their_parameters if name in moved]
        checker.equal(parameters, their_parameters,
                      f"{where}: the names in _parameters, in order", _given({
                          "a tensor that is not a TinyParameter (mask) filed as a parameter: "
                          "test isinstance(value, TinyParameter), not tl.Tensor":
                              ["scale", "mask", "offset"] if where == "the root" else None,
                          "a TinyParameter not filed in _parameters": [],
                          at_end: last if moved else None}))
        last = [name for name in their_children if name not in moved] + \
            [name for name in their_children if name in moved]
        checker.equal(children, their_children, f"{where}: the names in _modules, in order",
                      _given({
            "a TinyModule not filed in _modules": [],
            "a list of modules (spares) filed as a child: only a TinyModule is one":
                their_children + ["spares"] if where == "the root" else None,
            at_end: last if moved else None}))
        checker.equal(plain, their_plain, f"{where}: its plain attributes (vars(), without "
                      "_names)", {
                          "a plain attribute not stored: the else branch stores it with "
                          "object.__setattr__(self, name, value)": [],
                          "parameters and children stored as plain attributes too "
                          "(object.__setattr__ for every value): only what is neither goes "
                          "there": sorted(their_plain + their_parameters + their_children)})


def _names(pairs: Any) -> list[str]:
    return [name for name, _ in pairs]


def _walk(module: Any, prefix: str = "", own_first: bool = True, dot: str = ".",
          paths: bool = True, deep: bool = True, once: bool = True,
          hand_on: bool = True) -> list[str]:
    """The names a walk over ``module``'s own dicts yields, right (the defaults) or with one
    slip: the children's before the own (``own_first``), no dot (``dot``), no path in front of
    a child's names (``paths``), the children's children missed (``deep``), a tied tensor
    named again (``once``), the prefix not handed on to the children (``hand_on``)."""
    seen: set[int] = set()

    def walk(node: Any, start: str, depth: int) -> Iterator[str]:
        own = []
        for name, parameter in node._parameters.items():
            if once and id(parameter) in seen:
                continue
            seen.add(id(parameter))
            own.append(start + name)
        children: list[str] = []
        for name, child in node._modules.items():
            if deep or depth == 0:
                inner = (start if hand_on else "") + name + dot if paths else start
                children += walk(child, inner, depth + 1)
        yield from (own + children if own_first else children + own)

    return list(walk(module, prefix, 0))


def _walk_mistakes(mine: Any, prefix: str = "") -> dict[str, Any]:
    """What the usual slips of named_parameters give on ``mine``'s own dicts."""
    return {
        "own parameters after the children's: yield the module's own first":
            lambda: _walk(mine, prefix, own_first=False),
        "a child's name and its members' joined without a dot: prefix + child_name + '.'":
            lambda: _walk(mine, prefix, dot=""),
        "a child's parameters named without the child's path: hand each child prefix + "
        "child_name + '.'": lambda: _walk(mine, prefix, paths=False),
        "the walk stops at the children: their children's parameters are missing (recurse)":
            lambda: _walk(mine, prefix, deep=False),
        "the prefix not handed on: each child's walk starts from prefix + child_name + '.'":
            lambda: _walk(mine, prefix, hand_on=False),
        "the prefix not used: every name starts with it": lambda: _walk(mine, ""),
        "a tied tensor yielded again under its second name: keep one set of the id()s "
        "already yielded, for the whole walk (not one per module)":
            lambda: _walk(mine, prefix, once=False),
    }


def _check_named_once(checker: Checker, mine: Any, theirs: Any,
                      shared: list[str]) -> list[str]:
    """``mine``'s parameter names are ``theirs``' less the ``shared`` ones (a tensor already
    named earlier in the walk), in order; returns the expected names."""
    expected = [name for name in _names(theirs.named_parameters()) if name not in shared]
    with checker.named_errors(_COMPARED, (ValueError, RuntimeError)):
        names = _names(mine.named_parameters())
    mistakes = _walk_mistakes(mine)
    checker.equal([name for name in names if name not in expected], [],
                  "names of tensors already yielded under an earlier name", {
                      description: (lambda slip=slip: [name for name in slip()
                                                       if name not in expected])
                      for description, slip in mistakes.items()})
    checker.equal(names, expected, "the names, in order", mistakes)
    return expected


def _filed_under(module: Any, name: str) -> Any:
    """The parameter filed at a dotted name, looked up in the dicts themselves."""
    *path, last = name.split(".")
    for part in path:
        module = module._modules[part]
    return module._parameters[last]


_COPY = ("the saved arrays are the model's own (p.numpy(), p.data, np.asarray): training "
         "changes them in place; store a copy, np.array(p.numpy()) or p.numpy().copy()")


@piece_check("TinyModule", yours="TinyModule",
             package_name="tensorlib's Module and Parameter")
def check_tiny_module(checker: Checker, TinyModule: Any, TinyParameter: Any) -> HandOn:  # noqa: N803
    """``TinyModule``'s ``__setattr__``, ``named_parameters`` and ``state_dict`` against
    ``tensorlib.nn.Module`` on the same tree: what each module files, re-assignment in place,
    an empty module, the dotted names depth first (values and gradients), a prefix, tied
    weights named once, the state's names, types and values, and that it is a copy."""
    x = Rng(12).normal(size=(4, 3))

    def trees() -> tuple[Any, Any]:
        with checker.named_errors(_RECURSION, (RecursionError,)):
            mine = _tree(TinyModule, TinyParameter)
        return mine, _tree(Module, Parameter)

    with checker.case("__setattr__: parameters and children filed in order, plain attributes "
                      "(an int, a string, a tensor that is not a parameter, a list of modules) "
                      "filed nowhere",
                      hint="a TinyParameter goes into self._parameters[name], a TinyModule into "
                      "self._modules[name], anything else through "
                      "object.__setattr__(self, name, value)"):
        mine, theirs = trees()
        _check_filed(checker, mine, theirs)
        checker.equal((mine.label, mine.encoder.first.n, len(mine.spares)), ("root", 3, 1),
                      "the plain attributes read back (label, encoder.first.n, len(spares))")
    with checker.case("__setattr__: re-assigning a child, a parameter and a plain attribute",
                      hint="assigning to a key already in a dict replaces its value in its "
                      "place; do not delete the old entry first (that moves the name to the "
                      "end)"):
        mine, theirs = trees()
        new_encoder, new_scale = type(mine.encoder)(), TinyParameter(np.full(3, 3.0))
        mine.encoder, theirs.encoder = new_encoder, type(theirs.encoder)()  # the package allows
        mine.scale = new_scale                                              # this, and refuses this
        mine.label = "renamed"
        _check_filed(checker, mine, theirs, moved=("encoder", "scale"))
        kept = "a name already filed keeps its old value: store the new one in its place"
        checker.true(mine._modules["encoder"] is new_encoder,
                     "_modules['encoder'] is not the new child", kept)
        checker.true(mine._parameters["scale"] is new_scale,
                     "_parameters['scale'] is not the new parameter", kept)
        checker.equal(mine.label, "renamed", "the plain attribute label")
    with checker.case("an empty module: nothing filed, named or saved",
                      hint="the walks must also work when there is nothing to walk"):
        mine, theirs = TinyModule(), Module()
        checker.equal(list(mine.named_parameters()), list(theirs.named_parameters()),
                      "named_parameters()")
        checker.equal(mine.state_dict(), theirs.state_dict(), "state_dict()")
        mine.note = theirs.note = "nothing to train"
        _check_filed(checker, mine, theirs)
        checker.equal(list(mine.named_parameters()), [],
                      "named_parameters() with a plain attribute")
    with checker.case("named_parameters: dotted names depth first, own parameters (even one "
                      "assigned after a child) before the children's; values and gradients",
                      hint="yield prefix + name for each own parameter, then for each child what "
                      "its walk yields with prefix + child_name + '.' in front; yield the filed "
                      "tensors themselves"):
        mine, theirs = trees()
        with checker.named_errors(_COMPARED, (ValueError, RuntimeError)):
            names = _names(mine.named_parameters())
        checker.equal(names, _names(theirs.named_parameters()), "the names, in order",
                      _walk_mistakes(mine))
        mine(tl.tensor(x)).sum().backward()
        theirs(tl.tensor(x)).sum().backward()
        for (name, p), (_, q) in zip(mine.named_parameters(), theirs.named_parameters(),
                                     strict=False):
            checker.true(p is _filed_under(mine, name),
                         f"the tensor yielded as {name!r} is not the one filed under that name",
                         "yield the filed tensors themselves, not copies or their data")
            checker.equal(p.numpy(), q.numpy(), f"{name}'s values")
            checker.close(p.grad, q.grad, f"{name}'s gradient", rtol=1e-5, atol=1e-6)
    with checker.case('named_parameters(prefix="net."): the prefix in front of every name',
                      hint="start the walk from prefix, and hand each child prefix + "
                      "child_name + '.'"):
        mine, theirs = trees()
        checker.equal(_names(mine.named_parameters(prefix="net.")),
                      _names(theirs.named_parameters(prefix="net.")), "the names, in order",
                      _walk_mistakes(mine, "net."))
    with checker.case("a weight shared by two children (tied): named once, under its first name",
                      hint="keep one set of id(parameter) for the whole walk (not one per "
                      "module) and skip a tensor already yielded; compare identities, not "
                      "values or names"):
        mine, theirs = trees()
        mine.encoder.second.weight = mine.encoder.first.weight         # the package refuses this
        expected = _check_named_once(checker, mine, theirs, ["encoder.second.weight"])
        checker.true(dict(mine.named_parameters())["encoder.first.weight"]
                     is mine.encoder.first.weight,
                     "encoder.first.weight is not the shared tensor")
        checker.equal(list(mine.state_dict()), expected, "state_dict()'s keys", {
            "state_dict walks its own way: build it from self.named_parameters()":
                lambda: _walk(mine, once=False)})
    with checker.case("weights shared by cousins, by the root and a grandchild, and under two "
                      "names in one module: filed where assigned, named once",
                      hint="__setattr__ refuses nothing; the walk keeps one set of the id()s "
                      "already yielded, shared by the whole walk"):
        mine, theirs = trees()
        mine.head.weight = mine.encoder.first.weight
        mine.encoder.second.bias = mine.offset
        mine.encoder.gain_again = mine.encoder.gain
        checker.equal(list(mine.encoder._parameters), ["gain", "gain_again"],
                      "encoder's _parameters")
        _check_named_once(checker, mine, theirs, ["head.weight", "encoder.second.bias"])
        checker.equal(len({id(p) for p in mine.parameters()}), len(mine.parameters()),
                      "distinct tensors among parameters()")
    with checker.case("state_dict: the names of named_parameters, each a numpy array of the "
                      "parameter's shape, dtype and values",
                      hint="build it from self.named_parameters(); each value a numpy array "
                      "(not a Tensor) with the parameter's dtype"):
        mine, theirs = trees()
        state, state_package = mine.state_dict(), theirs.state_dict()
        checker.true(isinstance(state, dict),
                     f"state_dict() returns a dict, got {type(state).__name__}")
        checker.equal(list(state), list(state_package), "the keys, in order",
                      _walk_mistakes(mine))
        for name, value in state.items():
            checker.true(type(value) is np.ndarray,
                         f"{name!r}: a numpy array, got {type(value).__name__}",
                         "a Tensor stored (p, or p.data): store a numpy copy, p.numpy().copy()"
                         if isinstance(value, tl.Tensor) else None)
            checker.equal(str(value.dtype), str(state_package[name].dtype), f"{name!r}'s dtype")
            checker.equal(value, state_package[name], f"{name!r}'s values")
    with checker.case("state_dict is a copy: a training step afterwards, or a write into the "
                      "saved arrays, changes only the one it is done to",
                      hint="p.data shares the memory that training changes in place: store a "
                      "copy of it (np.array(p.data); np.asarray and p.data do not copy)"):
        mine, theirs = trees()
        state, state_package = mine.state_dict(), theirs.state_dict()
        for model in (mine, theirs):
            model(tl.tensor(x)).sum().backward()
            with tl.no_grad():
                for p in model.parameters():
                    p.add_(p.grad, alpha=-0.5)       # one step of gradient descent, in place
        for name, value in state.items():
            checker.equal(value, state_package[name],
                          f"{name!r} in the state saved before the step",
                          {_COPY: lambda name=name: _filed_under(mine, name).numpy()})
        state_after = theirs.state_dict()
        for name, value in mine.state_dict().items():
            checker.equal(value, state_after[name],
                          f"{name!r} in a second state_dict() after the step")
        state["head.weight"][...] = 7.0
        checker.true(not np.any(mine.head.weight.numpy() == 7.0),
                     "writing into the saved head.weight changed the model's head.weight",
                     _COPY)
    return HandOn((TinyModule, TinyParameter), (Module, Parameter))


# ------------------------------------------------------------------------------ exercises
def _module_names(module: Any, prefix: str = "", root: str = "first", dots: str = "between",
                  paths: bool = True, deep: bool = True) -> list[str]:
    """The names a walk of the modules yields, right (the defaults) or with one slip: the
    module itself last or missing (``root``), a dot in front of every child
    (``dots="always"``), a child's own name alone (``paths``), the children's children
    missed (``deep``)."""
    names: list[str] = []
    for name, child in module._modules.items():
        inner = (prefix + "." + name if prefix or dots == "always" else name) if paths else name
        names += _module_names(child, inner, root, dots, paths, deep) if deep else [inner]
    return ([prefix] + names if root == "first" else names + [prefix] if root == "last"
            else names)


def _named_modules_mistakes(tree: Any, prefix: str = "") -> dict[str, Any]:
    return {
        "the module itself not yielded: yield (prefix, module) first, then the descendants":
            _module_names(tree, prefix, root="missing"),
        "the module itself yielded after its descendants: yield (prefix, module) first":
            _module_names(tree, prefix, root="last"),
        "a dot in front of the root's children: no dot when prefix is '' (the root)":
            _module_names(tree, prefix, dots="always"),
        "a child named by its own name alone: its parent's name, a dot and its own":
            _module_names(tree, prefix, paths=False),
        "the walk stops at the children: their children are missing (recurse)":
            _module_names(tree, prefix, deep=False),
    }


@exercise_check("Exercise 1 (tiny_named_modules)", yours="tiny_named_modules")
def check_tiny_named_modules(checker: Checker, tiny_named_modules: Callable[..., Any],
                             classes: tuple[Any, Any], two_layer_mlp: Callable[..., Any],
                             nested_model: Callable[..., Any]) -> None:
    """``tiny_named_modules(module, prefix)`` on trees built with ``classes`` (the TinyModule
    in use) against ``named_modules()`` of the same trees on ``tensorlib.nn.Module``: the
    names in order, that each leads to its module, and a prefix."""
    for what, build in [("the 2-4-3 MLP", two_layer_mlp), ("a three-level tree", nested_model)]:
        tiny_tree, real_tree = build(*classes, Rng(0)), build(Module, Parameter, Rng(0))
        with checker.case(f"names of {what}", hint="the root comes first, named prefix; a child's "
                          "name is its parent's name, a dot and its own (no dot at the root)"):
            checker.equal([name for name, _ in tiny_named_modules(tiny_tree)],
                          [name for name, _ in real_tree.named_modules()], "names in order",
                          _named_modules_mistakes(real_tree))
        with checker.case(f"each name of {what} leads to its module",
                          hint="yield the module objects themselves, not copies or names"):
            for name, found in tiny_named_modules(tiny_tree):
                expected = tiny_tree
                for part in name.split(".") if name else []:
                    expected = expected._modules[part]
                checker.true(found is expected, f"the module yielded under {name!r} is not "
                                                f"the one at that path")
    with checker.case("a prefix, as named_parameters takes one",
                      hint="the prefix names the module you start from"):
        real_tree = nested_model(Module, Parameter, Rng(0))
        checker.equal([name for name, _ in tiny_named_modules(
                          nested_model(*classes, Rng(0)), prefix="model")],
                      [name for name, _ in real_tree.named_modules(prefix="model")], "names",
                      _named_modules_mistakes(real_tree, "model"))


def _filed_anywhere(module: Any) -> list[Any]:
    """Every parameter filed in the tree, once per place it is filed."""
    return list(module._parameters.values()) + [
        parameter for child in module._modules.values() for parameter in _filed_anywhere(child)]


def _count_mistakes(module: Any) -> dict[str, Any]:
    distinct = list({id(p): p for p in _filed_anywhere(module)}.values())
    return {
        "the tensors counted, not their elements: add up p.numel()": len(distinct),
        "a weight filed twice counted twice: count each tensor (id) once":
            sum(p.numel() for p in _filed_anywhere(module)),
        "p.shape[0] counted, not every element: p.numel()":
            sum(p.shape[0] for p in distinct if p.ndim),
    }


@exercise_check("Exercise 2 (tiny_num_parameters)", yours="tiny_num_parameters")
def check_tiny_num_parameters(checker: Checker, tiny_num_parameters: Callable[..., Any],
                              classes: tuple[Any, Any], two_layer_mlp: Callable[..., Any],
                              nested_model: Callable[..., Any]) -> None:
    """``tiny_num_parameters(module)`` on trees built with ``classes`` (the TinyModule in use)
    against ``num_parameters()`` of the same trees on ``tensorlib.nn.Module``, and on the MLP
    with a weight filed twice (where the classes in use accept it)."""
    for what, build in [("the 2-4-3 MLP", two_layer_mlp), ("a three-level tree", nested_model)]:
        with checker.case(f"{what}, freshly built",
                          hint="a parameter's .numel() is its number of elements"):
            tree = build(*classes, Rng(0))
            checker.equal(tiny_num_parameters(tree),
                          build(Module, Parameter, Rng(0)).num_parameters(),
                          "number of parameters", _count_mistakes(tree))
    with checker.case("the 2-4-3 MLP with hidden.weight filed twice (as hidden.weight_again)",
                      hint="two names, one tensor: tell tensors apart by identity (`is`, or id())"):
        tree = two_layer_mlp(*classes, Rng(0))
        try:
            tree.hidden.weight_again = tree.hidden.weight
        except (ValueError, RuntimeError):  # tensorlib's Module refuses it
            pass
        checker.equal(tiny_num_parameters(tree),
                      two_layer_mlp(Module, Parameter, Rng(0)).num_parameters(),
                      "number of parameters", _count_mistakes(tree))


# A RuntimeError that names super().__init__() -> the slip.
_SUPER = {"super().__init__()": "super().__init__() not called first: the module's dicts do "
                                "not exist until it runs, so self.f = f cannot be filed"}


def _filed_as_f(checker: Checker, names: list[str]) -> None:
    """The wrapped module's parameters are filed under a child named f."""
    checker.true(all(name.startswith("f.") for name in names),
                 f"named_parameters: {names}, not under f.",
                 "the child filed under another name: assign it as self.f = f")


@exercise_check("Exercise 3 (Residual)", yours="Residual")
def check_residual(checker: Checker, Residual: Any, Affine: Any) -> None:  # noqa: N803
    """``Residual`` around notebook 06's ``Affine``: the parameter names once and twice
    wrapped, then the output (its shape, then its values: x + x Wᵀ + b), then the gradient of
    x in float64."""
    inner = Affine(3, 3, Rng(3), dtype=np.float64)
    x = tl.tensor(Rng(4).normal(size=(2, 3)), dtype=np.float64, requires_grad=True)
    upstream = Rng(5).normal(size=(2, 3)).astype(np.float64)
    weight, bias = inner.weight.numpy(), inner.bias.numpy()
    names: dict[str, Any] = {
        "the child not filed: assign it as self.f = f, after super().__init__()": []}
    with checker.case("names around an Affine", hint="register the child as an attribute named "
                                                     "f, after super().__init__()"):
        with checker.named_errors(_SUPER, (RuntimeError,)):
            wrapped = Residual(Affine(3, 3, Rng(3)))
        _filed_as_f(checker, _names(wrapped.named_parameters()))
        checker.equal(_names(wrapped.named_parameters()), ["f.weight", "f.bias"],
                      "named_parameters", names)
    with checker.case("names when wrapped twice",
                      hint="a Residual is a Module, so it can be a child"):
        with checker.named_errors(_SUPER, (RuntimeError,)):
            wrapped = Residual(Residual(Affine(3, 3, Rng(3))))
        checker.equal(_names(wrapped.named_parameters()), ["f.f.weight", "f.f.bias"],
                      "named_parameters", names)
    with checker.case("output and gradient around an Affine", hint="the skip path adds x itself"):
        with checker.named_errors(_SUPER, (RuntimeError,)):
            residual = Residual(inner)
        out = residual(x)
        outputs = {"the skip path missing: return x + self.f(x), not self.f(x)":
                   x.numpy() @ weight.T + bias,
                   "f(x) missing: return x + self.f(x), not x": x.numpy()}
        checker.shape(out, (2, 3), "the output (x's shape)", outputs)
        checker.close(out, x.numpy() + x.numpy() @ weight.T + bias, "the output", rtol=1e-12,
                      mistakes=outputs)
        out.backward(upstream)
        checker.close(x.grad, upstream + upstream @ weight, "d x", rtol=1e-12)


def _freeze_mistakes(model: Any, keep: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """What the usual slips give: the number of trainable parameters, the names with a
    gradient."""
    named = list(model.named_parameters())
    slips = {
        "name.startswith(keep) without the dot: blocks.10 and blocks.11 start with "
        "'blocks.1' too; compare with keep + '.'": [n for n, _ in named if n.startswith(keep)],
        "the other way round: the kept module frozen, the rest trainable":
            [n for n, _ in named if not n.startswith(keep + ".")],
        "nothing frozen: set trainable = False on every parameter outside keep":
            [n for n, _ in named]}
    sizes = dict((n, p.numel()) for n, p in named)
    return ({description: sum(sizes[n] for n in names) for description, names in slips.items()},
            slips)


@exercise_check("Exercise 4 (freeze_all_but)", yours="freeze_all_but")
def check_freeze_all_but(checker: Checker, freeze_all_but: Callable[..., Any],
                         DeepModel: Any) -> None:  # noqa: N803
    """``freeze_all_but(model, keep)`` on fresh 12-block copies of notebook 06's deep model,
    keeping the head and then blocks.1 (not blocks.10 or blocks.11): the trainable count, the
    full count, and which parameters a backward pass reaches."""
    x = tl.tensor(Rng(8).normal(size=(4, 3)))
    for keep in ("head", "blocks.1"):
        model = DeepModel(3, 8, 5, depth=12, rng=Rng(0))  # blocks.10 and blocks.11 too
        every_parameter = model.num_parameters()
        counts, names = _freeze_mistakes(model, keep)
        with checker.case(f"keep={keep!r} in a model of 12 blocks",
                          hint="walk named_parameters(); a name inside the kept module starts "
                          "with its name and a dot (blocks.10 is not inside blocks.1)"):
            freeze_all_but(model, keep)
            checker.equal(model.num_parameters(trainable_only=True),
                          model.get_submodule(keep).num_parameters(), "trainable parameters",
                          counts)
            checker.equal(model.num_parameters(), every_parameter,
                          "all parameters (frozen ones included)")
            model(x).sum().backward()
            with_gradient = [name for name, p in model.named_parameters() if p.grad is not None]
            checker.equal(with_gradient, [name for name, _ in model.named_parameters()
                                          if name.startswith(keep + ".")],
                          "parameters with a gradient", names)
