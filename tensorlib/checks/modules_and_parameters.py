"""The cases of notebook 06's core piece, ``TinyModule`` (with ``TinyParameter``): registration
by ``__setattr__``, the ``named_parameters`` walk and ``state_dict``, each compared with
``tensorlib.nn.Module`` and ``Parameter`` on the same small tree of modules.

The notebook's check cell builds the :class:`~tensorlib.exercises.Checker`, calls
:func:`tiny_module_cases` with the learner's two classes, and reports.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import tensorlib as tl
from tensorlib.exercises import Checker
from tensorlib.nn import Module, Parameter
from tensorlib.rng import Rng

__all__ = ["tiny_module_cases"]


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


def _check_filed(checker: Checker, mine: Any, theirs: Any) -> None:
    """The names each module of ``mine`` files, as ``theirs`` (the package's) files them."""
    for (where, parameters, children, plain), (_, their_parameters, their_children,
                                               their_plain) in zip(_filed(mine),
                                                                   _filed(theirs), strict=False):
        checker.equal(parameters, their_parameters,
                      f"{where}: the names in _parameters, in order")
        checker.equal(children, their_children, f"{where}: the names in _modules, in order")
        checker.equal(plain, their_plain,
                      f"{where}: its plain attributes (vars(), without _names)")


def _names(pairs: Any) -> list[str]:
    return [name for name, _ in pairs]


def _check_named_once(checker: Checker, mine: Any, theirs: Any,
                      shared: list[str]) -> list[str]:
    """``mine``'s parameter names are ``theirs``' less the ``shared`` ones (a tensor already
    named earlier in the walk), in order; returns the expected names."""
    expected = [name for name in _names(theirs.named_parameters()) if name not in shared]
    names = _names(mine.named_parameters())
    checker.equal([name for name in names if name not in expected], [],
                  "names of tensors already yielded under an earlier name")
    checker.equal(names, expected, "the names, in order")
    return expected


def _filed_under(module: Any, name: str) -> Any:
    """The parameter filed at a dotted name, looked up in the dicts themselves."""
    *path, last = name.split(".")
    for part in path:
        module = module._modules[part]
    return module._parameters[last]


def tiny_module_cases(checker: Checker, TinyModule: Any, TinyParameter: Any) -> None:  # noqa: N803
    """Run every case of the TinyModule check on the learner's classes."""
    x = Rng(12).normal(size=(4, 3))
    with checker.case("__setattr__: parameters and children filed in order, plain attributes "
                      "(an int, a string, a tensor that is not a parameter, a list of modules) "
                      "filed nowhere",
                      hint="a TinyParameter goes into self._parameters[name], a TinyModule into "
                      "self._modules[name], anything else through "
                      "object.__setattr__(self, name, value)"):
        mine, theirs = _tree(TinyModule, TinyParameter), _tree(Module, Parameter)
        _check_filed(checker, mine, theirs)
        checker.equal((mine.label, mine.encoder.first.n, len(mine.spares)), ("root", 3, 1),
                      "the plain attributes read back (label, encoder.first.n, len(spares))")
    with checker.case("__setattr__: re-assigning a child, a parameter and a plain attribute",
                      hint="assigning to a key already in a dict replaces its value in its "
                      "place; do not delete the old entry first (that moves the name to the "
                      "end)"):
        mine, theirs = _tree(TinyModule, TinyParameter), _tree(Module, Parameter)
        new_encoder, new_scale = type(mine.encoder)(), TinyParameter(np.full(3, 3.0))
        mine.encoder, theirs.encoder = new_encoder, type(theirs.encoder)()  # the package allows
        mine.scale = new_scale                                              # this, and refuses this
        mine.label = "renamed"
        _check_filed(checker, mine, theirs)
        checker.true(mine._modules["encoder"] is new_encoder,
                     "_modules['encoder'] is not the new child")
        checker.true(mine._parameters["scale"] is new_scale,
                     "_parameters['scale'] is not the new parameter")
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
        mine, theirs = _tree(TinyModule, TinyParameter), _tree(Module, Parameter)
        checker.equal(_names(mine.named_parameters()), _names(theirs.named_parameters()),
                      "the names, in order")
        mine(tl.tensor(x)).sum().backward()
        theirs(tl.tensor(x)).sum().backward()
        for (name, p), (_, q) in zip(mine.named_parameters(), theirs.named_parameters(),
                                     strict=False):
            checker.true(p is _filed_under(mine, name),
                         f"the tensor yielded as {name!r} is not the one filed under that name")
            checker.equal(p._data, q._data, f"{name}'s values")
            checker.close(p.grad, q.grad, f"{name}'s gradient", rtol=1e-5, atol=1e-6)
    with checker.case('named_parameters(prefix="net."): the prefix in front of every name',
                      hint="start the walk from prefix, and hand each child prefix + "
                      "child_name + '.'"):
        mine, theirs = _tree(TinyModule, TinyParameter), _tree(Module, Parameter)
        checker.equal(_names(mine.named_parameters(prefix="net.")),
                      _names(theirs.named_parameters(prefix="net.")), "the names, in order")
    with checker.case("a weight shared by two children (tied): named once, under its first name",
                      hint="keep one set of id(parameter) for the whole walk (not one per "
                      "module) and skip a tensor already yielded; compare identities, not "
                      "values or names"):
        mine, theirs = _tree(TinyModule, TinyParameter), _tree(Module, Parameter)
        mine.encoder.second.weight = mine.encoder.first.weight         # the package refuses this
        expected = _check_named_once(checker, mine, theirs, ["encoder.second.weight"])
        checker.true(dict(mine.named_parameters())["encoder.first.weight"]
                     is mine.encoder.first.weight,
                     "encoder.first.weight is not the shared tensor")
        checker.equal(list(mine.state_dict()), expected, "state_dict()'s keys")
    with checker.case("weights shared by cousins, by the root and a grandchild, and under two "
                      "names in one module: filed where assigned, named once",
                      hint="__setattr__ refuses nothing; the walk keeps one set of the id()s "
                      "already yielded, shared by the whole walk"):
        mine, theirs = _tree(TinyModule, TinyParameter), _tree(Module, Parameter)
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
        mine, theirs = _tree(TinyModule, TinyParameter), _tree(Module, Parameter)
        state, state_package = mine.state_dict(), theirs.state_dict()
        checker.true(isinstance(state, dict),
                     f"state_dict() returns a dict, got {type(state).__name__}")
        checker.equal(list(state), list(state_package), "the keys, in order")
        for name, value in state.items():
            checker.true(type(value) is np.ndarray,
                         f"{name!r}: a numpy array, got {type(value).__name__}")
            checker.equal(str(value.dtype), str(state_package[name].dtype), f"{name!r}'s dtype")
            checker.equal(value, state_package[name], f"{name!r}'s values")
    with checker.case("state_dict is a copy: a training step afterwards, or a write into the "
                      "saved arrays, changes only the one it is done to",
                      hint="p.data shares the memory that training changes in place: store a "
                      "copy of it (np.array(p.data); np.asarray and p.data do not copy)"):
        mine, theirs = _tree(TinyModule, TinyParameter), _tree(Module, Parameter)
        state, state_package = mine.state_dict(), theirs.state_dict()
        for model in (mine, theirs):
            model(tl.tensor(x)).sum().backward()
            with tl.no_grad():
                for p in model.parameters():
                    p.add_(p.grad, alpha=-0.5)       # one step of gradient descent, in place
        for name, value in state.items():
            checker.equal(value, state_package[name],
                          f"{name!r} in the state saved before the step")
        state_after = theirs.state_dict()
        for name, value in mine.state_dict().items():
            checker.equal(value, state_after[name],
                          f"{name!r} in a second state_dict() after the step")
        state["head.weight"][...] = 7.0
        checker.true(not np.any(mine.head.weight._data == 7.0),
                     "writing into the saved head.weight changed the model's head.weight")
