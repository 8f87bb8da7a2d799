"""PyTorch's nn surface that nanoGPT-shaped programs touch, part 1: ``nn.ModuleDict``
(tensorlib.nn.container) and ``Module.apply`` (tensorlib.nn.module); where PyTorch is
importable, the same calls on torch.nn give the same names, order and results."""

import numpy as np
import pytest

import tensorlib as tl
import tensorlib.nn as nn
from tensorlib.nn import HookPoint, Linear, Module, ModuleDict, ModuleList, Parameter

from helpers import Affine


# --------------------------------------------------------------------------------- ModuleDict
def test_module_dict_is_a_module_whose_children_are_its_items_in_order():
    first, second, third = Affine(), Affine(2), Affine(4)
    md = ModuleDict({"wte": first, "h": ModuleList([second])})
    assert md is not None and nn.ModuleDict is ModuleDict and isinstance(md, Module)
    assert len(md) == 2 and list(md) == ["wte", "h"] and "wte" in md and "nope" not in md
    assert md["wte"] is first and md.wte is first and md.h[0] is second  # attribute access
    assert list(md.keys()) == ["wte", "h"]
    assert list(md.values()) == [first, md.h] and list(md.items())[0] == ("wte", first)
    md["ln_f"] = third  # a new key goes last
    assert list(md) == ["wte", "h", "ln_f"] and md.children() == [first, md.h, third]
    assert [n for n, _ in md.named_parameters()] == [
        "wte.scale", "wte.shift", "h.0.scale", "h.0.shift", "ln_f.scale", "ln_f.shift"]
    assert list(md.state_dict()) == [n for n, _ in md.named_parameters()]
    with pytest.raises(KeyError, match="'missing'"):
        md["missing"]
    with pytest.raises(AttributeError, match="missing"):
        _ = md.missing
    assert "(wte): Affine" in repr(md) and repr(md).startswith("ModuleDict(")


def test_module_dict_is_built_from_pairs_and_updated_in_order():
    a, b, c = Affine(), Affine(), Affine()
    md = ModuleDict([("b", b), ("a", a)])  # an iterable of pairs keeps its order
    assert list(md) == ["b", "a"]
    md.update({"c": c, "a": Affine(5)})  # a new key is added, an old one replaced in place
    assert list(md) == ["b", "a", "c"] and md.a.scale.shape == (5,) and md.c is c
    assert not a._parent_registered  # the replaced item is detached
    md.update({"d": Affine()}.items())
    assert list(md) == ["b", "a", "c", "d"]
    with pytest.raises(ValueError, match="already registered as a child"):
        md.update(ModuleDict({"e": Affine()}))  # its items are that ModuleDict's children
    assert len(ModuleDict()) == 0 and len(ModuleDict(None)) == 0
    gen = ModuleDict((name, Affine()) for name in ("x", "y"))  # a generator of pairs
    assert list(gen) == ["x", "y"]


def test_module_dict_delete_pop_and_clear_detach_their_items():
    a, b, c = Affine(), Affine(), Affine()
    md = ModuleDict(dict(a=a, b=b, c=c))
    del md["b"]
    assert list(md) == ["a", "c"] and not b._parent_registered
    assert md.pop("a") is a and not a._parent_registered and list(md) == ["c"]
    ModuleList([a, b])  # detached items may be registered elsewhere
    with pytest.raises(KeyError, match="'a'"):
        md.pop("a")
    with pytest.raises(KeyError):
        del md["a"]
    md.clear()
    assert len(md) == 0 and not c._parent_registered and md.parameters() == []


def test_module_dict_refuses_what_the_registration_rules_refuse_and_changes_nothing():
    kept = Affine()
    md = ModuleDict({"kept": kept})
    with pytest.raises(TypeError, match="'bad'.*must be a Module, got int"):
        md["bad"] = 3
    with pytest.raises(TypeError, match="'bad'.*must be a Module, got str"):
        ModuleDict({"ok": Affine(), "bad": "linear"})
    with pytest.raises(TypeError, match="string"):
        md[3] = Affine()
    with pytest.raises(ValueError, match="must not contain '.'"):
        md["a.b"] = Affine()
    with pytest.raises(KeyError, match="attribute"):
        md["keys"] = Affine()  # the name of a method, as in PyTorch
    with pytest.raises(ValueError, match="already registered as a child"):
        ModuleDict({"again": kept})
    # update is all or nothing: the items before the bad one are undone
    fresh, replacement = Affine(), Affine(7)
    with pytest.raises(TypeError, match="'bad'"):
        md.update([("fresh", fresh), ("kept", replacement), ("bad", None)])
    assert list(md) == ["kept"] and md.kept is kept and kept._parent is md
    assert not fresh._parent_registered and not replacement._parent_registered
    with pytest.raises(ValueError, match="element #1 has length 3"):
        md.update([("x", Affine()), ("y", Affine(), 3)])
    with pytest.raises(TypeError, match="element #0"):
        md.update([Affine()])
    with pytest.raises(TypeError, match="mapping or an iterable"):
        ModuleDict(Affine())
    assert list(md) == ["kept"]


def test_an_attached_module_dict_replaces_and_removes_items_but_takes_no_new_ones():
    model = Module()
    model.transformer = ModuleDict({"wte": Affine()})
    model.transformer["wte"] = Affine(2)  # replacing is allowed (as for any child)
    assert model.transformer.wte.scale.shape == (2,)
    with pytest.raises(RuntimeError, match="already a child"):
        model.transformer["new"] = Affine()  # sealed: docs/departures.md section 5
    assert model.transformer.pop("wte") is not None and len(model.transformer) == 0


# --------------------------------------------------------------------------------- apply
def test_apply_visits_children_first_in_children_order_then_the_module_and_returns_it():
    model = Module()
    model.embed = Affine()
    model.blocks = ModuleList([Affine(), Affine()])
    model.probe = HookPoint()  # a hook-point child is a child like any other
    visited = []
    assert model.apply(lambda m: visited.append(m)) is model
    assert visited == [model.embed, model.blocks[0], model.blocks[1], model.blocks,
                       model.probe, model]
    with pytest.raises(TypeError, match="callable"):
        model.apply("not a function")


def test_apply_initializes_weights_as_nanogpt_does():
    model = nn.Sequential(Linear(4, 8), nn.ReLU(), Linear(8, 3, bias=False))

    def init_weights(module):
        if isinstance(module, Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)

    model.apply(init_weights)
    assert np.all(model[0].bias.data == 0) and model[0].weight.data.std() < 0.05
    tl.manual_seed(0)
    model.apply(init_weights)
    again = nn.Sequential(Linear(4, 8), nn.ReLU(), Linear(8, 3, bias=False))
    tl.manual_seed(0)
    assert again.apply(init_weights) is again
    for ours, theirs in zip(model.parameters(), again.parameters(), strict=True):
        np.testing.assert_array_equal(ours.data, theirs.data)  # seeded: the same weights


# --------------------------------------------------------------------------------- PyTorch
def test_module_dict_and_apply_agree_with_pytorch():
    torch = pytest.importorskip("torch")

    def build(lib):
        return lib.nn.ModuleDict({"wte": lib.nn.Linear(3, 4), "h": lib.nn.ModuleList(
            [lib.nn.Linear(4, 4), lib.nn.Linear(4, 4, bias=False)]), "ln": lib.nn.Linear(4, 2)})

    ours, theirs = build(tl), build(torch)
    ours["extra"] = Linear(2, 2)
    theirs["extra"] = torch.nn.Linear(2, 2)
    assert list(ours) == list(theirs) and list(ours.keys()) == list(theirs.keys())
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [type(m).__name__ for m in ours.values()] == [type(m).__name__
                                                         for m in theirs.values()]
    ours.pop("ln")
    theirs.pop("ln")
    del ours["extra"]
    del theirs["extra"]
    assert list(ours) == list(theirs)
    order = {"ours": [], "theirs": []}
    ours.apply(lambda m: order["ours"].append(type(m).__name__))
    theirs.apply(lambda m: order["theirs"].append(type(m).__name__))
    assert order["ours"] == order["theirs"]
    theirs.load_state_dict({k: torch.from_numpy(v) for k, v in ours.state_dict().items()})


def test_parameter_registered_on_a_module_dict_itself():
    md = ModuleDict({"a": Affine()})
    md.scale = Parameter(np.ones(2, np.float32))  # a ModuleDict is a Module
    assert [n for n, _ in md.named_parameters()] == ["scale", "a.scale", "a.shift"]
