"""Tests for tensorlib.nn.module: Parameter; Module's registration rules, traversal (the one
member walk), replacement, modes (``train(mode)`` through each child's ``train``), gradients,
state dictionaries, buffers, the conversion path ``_apply`` (``to``, ``float``, ``double``)
and copies. ModuleList and Sequential are tested in test_container.py, forward hooks in
test_hooks.py."""

import copy

import numpy as np
import pytest

import tensorlib as tl
from tensorlib import Rng
from tensorlib.nn import (
    BatchNorm1d,
    Dropout,
    Linear,
    Module,
    ModuleList,
    Parameter,
    Sequential,
    StateDictError,
    evaluation_mode,
)
from tensorlib.optim import SGD, AdamW
from tensorlib.training.loop import train

from helpers import Affine, Leaf


class Pair(Module):
    def __init__(self):
        super().__init__()
        self.gain = Parameter(np.ones(1, dtype=np.float32))
        self.first = Affine(3, 1.0)
        self.second = Affine(3, 2.0)

    def forward(self, x):
        return self.second(self.first(x)) * self.gain


class Tree(Module):
    """root: bias, then first (a Leaf), then rest (a ModuleList of a Leaf and a Sequential)."""

    def __init__(self) -> None:
        super().__init__()
        self.bias = Parameter(np.zeros(2))
        self.first = Leaf()
        self.rest = ModuleList([Leaf(), Sequential(Leaf(), Linear(2, 2, rng=Rng(0),
                                                                   dtype=np.float64))])
        self.rest[1][1].bias.trainable = False


# --------------------------------------------------------------------------------- Parameter
def test_parameter_is_a_trainable_leaf_tensor():
    p = Parameter([1.0, 2.0])
    assert isinstance(p, tl.Tensor) and p.is_leaf and p.requires_grad and p.trainable
    assert p.dtype == np.float32
    frozen = Parameter(np.zeros(2), trainable=False)
    assert not frozen.requires_grad and not frozen.trainable


def test_parameter_rejects_integer_data():
    with pytest.raises(TypeError, match="floating"):
        Parameter(np.arange(3))


def test_frozen_parameter_gets_no_gradient():
    layer = Affine()
    layer.shift.trainable = False
    layer(tl.ones(3)).sum().backward()
    assert layer.scale.grad is not None and layer.shift.grad is None
    assert layer.trainable_parameters() == [layer.scale]
    assert layer.parameters(include_frozen=False) == [layer.scale]
    assert layer.parameters() == [layer.scale, layer.shift]


# --------------------------------------------------------------------------------- registration
def test_attribute_assignment_and_explicit_registration():
    module = Module()
    module.register_parameter("w", Parameter(np.ones(2)))
    module.b = Parameter(np.zeros(2))
    module.register_module("child", Affine())
    module.other = Affine()
    module.note = "plain attributes stay plain"
    assert [n for n, _ in module.named_parameters()] == [
        "w", "b", "child.scale", "child.shift", "other.scale", "other.shift"]
    assert list(dict(module.named_children())) == ["child", "other"]
    assert module.note == "plain attributes stay plain"
    assert module.w is module._parameters["w"]


def test_calling_a_module_runs_forward():
    layer = Affine(2, 1.0)  # scale 2, shift 1
    np.testing.assert_array_equal(layer(tl.tensor([1.0, 3.0])).data, [3.0, 7.0])
    with pytest.raises(NotImplementedError, match="forward"):
        Module()(tl.ones(1))


@pytest.mark.parametrize("first, second", [("p", "p"), ("p", "m"), ("m", "p"), ("m", "m")])
def test_duplicate_names_are_rejected_across_parameters_and_children(first, second):
    module = Module()
    make = {"p": lambda: Parameter(np.ones(1)), "m": lambda: Affine()}
    register = {"p": module.register_parameter, "m": module.register_module}
    register[first]("x", make[first]())
    before = (dict(module._parameters), dict(module._modules))
    with pytest.raises(KeyError, match="'x'"):
        register[second]("x", make[second]())
    assert (module._parameters, module._modules) == before


def test_the_same_parameter_cannot_be_registered_twice():
    shared = Parameter(np.ones(2))
    module = Module()
    module.a = shared
    with pytest.raises(ValueError, match="already registered as 'a'"):
        module.b = shared
    assert list(module._parameters) == ["a"]
    # ... nor once in a child and again in the parent, in either order
    child = Module()
    child.w = shared
    with pytest.raises(ValueError, match="child.w"):
        module.child = child
    parent = Module()
    inner = Module()
    inner.w = shared
    parent.inner = inner
    with pytest.raises(ValueError, match="inner.w"):
        parent.w = shared


def test_the_same_child_cannot_be_registered_twice():
    child = Affine()
    parent = Module()
    parent.a = child
    with pytest.raises(ValueError, match="already registered"):
        parent.b = child
    with pytest.raises(ValueError, match="already registered"):
        Module().c = child  # nor in a second parent
    assert list(parent._modules) == ["a"]


def test_a_module_cannot_contain_itself():
    module = Module()
    with pytest.raises(ValueError, match="inside itself"):
        module.me = module
    assert not module._modules


def test_direct_and_indirect_cycles_are_rejected():
    a, b = Module(), Module()
    a.b = b
    with pytest.raises(ValueError, match="cycle"):
        b.a = a  # direct: a -> b -> a
    x, y, z = Module(), Module(), Module()
    y.z = z
    x.y = y
    with pytest.raises(ValueError, match="cycle"):
        z.x = x  # indirect: x -> y -> z -> x
    assert not z._modules and not b._modules


def test_registering_into_an_attached_module_is_rejected():
    parent, child = Module(), Module()
    parent.child = child
    with pytest.raises(RuntimeError, match="already a child"):
        child.late = Parameter(np.ones(1))


@pytest.mark.parametrize("name, error", [("a.b", ValueError), ("", ValueError),
                                         (3, TypeError), (None, TypeError)])
def test_bad_names_are_rejected(name, error):
    module = Module()
    with pytest.raises(error):
        module.register_parameter(name, Parameter(np.ones(1)))
    with pytest.raises(error):
        module.register_module(name, Module())
    assert not module._parameters and not module._modules


def test_names_that_shadow_attributes_are_rejected():
    module = Module()
    with pytest.raises(KeyError, match="forward"):
        module.register_parameter("forward", Parameter(np.ones(1)))
    with pytest.raises(KeyError, match="training"):
        module.register_module("training", Module())


def test_wrong_member_types_are_rejected():
    module = Module()
    with pytest.raises(TypeError, match="expected a Parameter"):
        module.register_parameter("w", tl.ones(2, requires_grad=True))
    with pytest.raises(TypeError, match="expected a Module"):
        module.register_module("m", object())
    module.w = Parameter(np.ones(1))
    with pytest.raises(TypeError, match="cannot replace"):
        module.w = np.zeros(1)


def test_registration_requires_super_init():
    class Forgetful(Module):
        def __init__(self):
            self.w = Parameter(np.ones(1))

    with pytest.raises(RuntimeError, match="super"):
        Forgetful()


def test_unknown_attributes_raise_attribute_error():
    module = Pair()
    with pytest.raises(AttributeError, match="nothing_here"):
        _ = module.nothing_here
    assert not hasattr(module, "scale")  # a child's parameter is not the parent's attribute
    with pytest.raises(AttributeError):
        del module.gain


# --------------------------------------------------------------------------------- traversal
def test_parameter_order_and_dotted_names_are_stable():
    model = Pair()
    names = [n for n, _ in model.named_parameters()]
    assert names == ["gain", "first.scale", "first.shift", "second.scale", "second.shift"]
    assert [id(p) for p in model.parameters()] == [id(p) for p in model.parameters()]
    assert model.parameters()[1] is model.first.scale
    assert isinstance(model.parameters(), list)
    assert model.num_parameters() == 1 + 4 * 3


def test_named_modules_children_and_get_submodule():
    model = Pair()
    assert [n for n, _ in model.named_modules()] == ["", "first", "second"]
    assert model.children() == [model.first, model.second]
    assert model.modules()[0] is model
    assert model.get_submodule("second") is model.second
    with pytest.raises(KeyError, match="third"):
        model.get_submodule("third")


def by_hand(module, prefix=""):
    """The names in the order the tree defines them: a module's own members, then each
    child's, depth first (a recursive reference, independent of the package's walk)."""
    modules = [(prefix, module)]
    for name, child in module._modules.items():
        modules += by_hand(child, f"{prefix}.{name}" if prefix else name)
    return modules


def test_every_listing_follows_the_tree_in_registration_order():
    model = Tree()
    modules = by_hand(model)
    assert [(n, id(m)) for n, m in model.named_modules()] == [(n, id(m)) for n, m in modules]
    assert [n for n, _ in model.named_modules("top")] == \
        [n for n, _ in by_hand(model, "top")]
    joined = [(f"{n}." if n else "", m) for n, m in modules]
    parameters = [p + k for p, m in joined for k in m._parameters]
    buffers = [p + k for p, m in joined for k in m._buffers]
    state = [p + k for p, m in joined for k in [*m._parameters, *(
        b for b in m._buffers if b not in m._non_persistent_buffers)]]
    assert [n for n, _ in model.named_parameters()] == parameters
    assert [n for n, _ in model.named_parameters(prefix="net.")] == ["net." + n
                                                                      for n in parameters]
    assert [n for n, _ in model.named_parameters(include_frozen=False)] == \
        [n for n in parameters if n != "rest.1.1.bias"]
    assert [n for n, _ in model.named_buffers()] == buffers
    assert [n for n, _ in model.named_buffers("net")] == ["net." + n for n in buffers]
    assert [n for n, _ in model.named_buffers("net.")] == ["net." + n for n in buffers]
    assert list(model.state_dict()) == state
    assert model.parameters() == [p for _, p in model.named_parameters()]
    assert model.buffers() == [b for _, b in model.named_buffers()]
    assert model.modules() == [m for _, m in modules]
    assert [n for n, _ in model.first.named_parameters(recurse=False)] == ["weight"]
    assert [n for n, _ in model.first.named_buffers("x.", recurse=False)] == \
        ["x.count", "x.scale"]


def test_the_one_walk_orders_children_first_and_removes_duplicates_on_request():
    model = Tree()
    itself = lambda m: (("", m),)  # noqa: E731
    assert [n for n, _ in model._named_members(itself, children_first=True)] == \
        ["first", "rest.0", "rest.1.0", "rest.1.1", "rest.1", "rest", ""]
    assert [n for n, _ in model._named_members(itself, recurse=False)] == [""]
    shared = tl.tensor(np.ones(2))
    holder = Module()
    holder.register_buffer("a", shared)
    holder.register_buffer("b", shared)  # one tensor under two names
    assert [n for n, _ in holder.named_buffers()] == ["a", "b"]  # listed as registered
    assert list(holder.state_dict()) == ["a", "b"]
    assert [n for n, _ in holder._named_members(lambda m: m._buffers.items(),
                                                remove_duplicate=True)] == ["a"]


# --------------------------------------------------------------------------------- replacing
class Holder(Module):
    """A module that registers a given Parameter (to build trees that share one)."""

    def __init__(self, parameter):
        super().__init__()
        self.weight = parameter


def test_assigning_to_a_child_name_replaces_the_child_in_place():
    model = Pair()
    old, new = model.first, Affine(3, 5.0)
    model.first = new
    assert model.first is new and model.children() == [new, model.second]
    assert [n for n, _ in model.named_parameters()] == [
        "gain", "first.scale", "first.shift", "second.scale", "second.shift"]  # same place
    assert model.parameters()[1] is new.scale
    np.testing.assert_array_equal(model(tl.ones(3)).data, (1 * 6 + 5) * 3 + 2)  # the new one runs
    other = Module()
    other.kept = old  # the old child is detached: it may be registered elsewhere
    model.first = new  # assigning the same child again changes nothing
    assert model.first is new
    model.first = Affine(3)  # ... and a replaced child may be replaced again
    other2 = Module()
    other2.again = new


def test_a_replacement_may_reuse_the_old_childs_parameters():
    model = Pair()
    scale = model.first.scale
    model.first = Holder(scale)  # scale leaves with the old child, so it may come back
    assert [n for n, _ in model.named_parameters()] == [
        "gain", "first.weight", "second.scale", "second.shift"]
    assert model.first.weight is scale


def test_a_replacement_passes_the_registration_checks_and_changes_nothing_if_not():
    model = Pair()
    first, names = model.first, [n for n, _ in model.named_parameters()]
    elsewhere = Module()
    elsewhere.taken = Affine()
    with pytest.raises(ValueError, match="already registered as a child"):
        model.first = elsewhere.taken
    with pytest.raises(ValueError, match="inside itself"):
        model.first = model
    outer = Module()
    outer.model = model
    with pytest.raises(ValueError, match="cycle"):
        model.first = outer
    with pytest.raises(ValueError, match=r"'model.first.weight' is already registered here as "
                                         r"'model.gain'"):
        model.first = Holder(model.gain)
    with pytest.raises(ValueError, match="second.scale"):
        model.first = Holder(model.second.scale)
    with pytest.raises(TypeError, match="cannot replace"):
        model.first = "not a module"
    assert model.first is first and [n for n, _ in model.named_parameters()] == names
    assert first._parent_registered


def test_set_submodule_replaces_a_descendant_checked_against_the_whole_tree():
    model = Module()
    model.left, model.right = Pair(), Pair()
    old = model.left.second
    assert model.set_submodule("left.second", Affine(3, 7.0)) is old
    assert model.left.second.shift.data[0] == 7.0
    assert [n for n, _ in model.named_parameters()][3:6] == [
        "left.second.scale", "left.second.shift", "right.gain"]
    # Seen from the whole tree, a parameter of the other branch is shared: refused. (An
    # assignment on model.left itself sees only model.left's subtree.)
    with pytest.raises(ValueError, match="right.first.scale"):
        model.set_submodule("left.first", Holder(model.right.first.scale))
    with pytest.raises(KeyError, match="missing 'third'"):
        model.set_submodule("left.third", Affine())
    with pytest.raises(KeyError, match="missing 'middle'"):
        model.set_submodule("middle.first", Affine())
    with pytest.raises(ValueError, match="cannot replace itself"):
        model.set_submodule("", Affine())
    blocks = ModuleList([Affine(), Affine()])
    blocks[1] = Affine(3, 4.0)  # a ModuleList item, as in PyTorch
    assert blocks[1].shift.data[0] == 4.0 and len(blocks) == 2
    with pytest.raises(IndexError):
        blocks[2] = Affine()


def test_recurse_false_lists_only_a_modules_own_members():
    model = Pair()
    assert [n for n, _ in model.named_parameters(recurse=False)] == ["gain"]
    model.register_buffer("count", np.zeros(1, np.int64))
    assert [n for n, _ in model.named_buffers(recurse=False)] == ["count"]


# --------------------------------------------------------------------------------- modes, grads
def test_train_and_eval_propagate_to_every_descendant():
    model = Module()
    model.blocks = ModuleList([Pair(), Pair()])
    assert all(m.training for m in model.modules())
    assert model.eval() is model
    assert not any(m.training for m in model.modules())
    model.train()
    assert all(m.training for m in model.modules())
    model.blocks[1].eval()  # a subtree only
    assert model.training and model.blocks[0].training and not model.blocks[1].first.training


def test_zero_grad_clears_every_gradient():
    model = Pair()
    model(tl.ones(3)).sum().backward()
    assert all(p.grad is not None for p in model.parameters())
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())


class Recording(Module):
    """A module that overrides ``train``, as a subclass with its own mode-dependent state
    would; it records every call."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[bool] = []
        self.weight = Parameter(np.ones(1, dtype=np.float32))

    def train(self, mode: bool = True) -> Module:
        self.calls.append(mode)
        return super().train(mode)

    def loss(self, inputs, targets):
        return ((inputs * self.weight - targets) ** 2).mean()


def test_train_and_eval_call_each_childs_train():
    inner = Recording()
    model = Sequential(Linear(2, 2, rng=Rng(0)), ModuleList([Dropout(0.5), inner]))
    assert model.eval() is model
    assert inner.calls == [False] and not any(m.training for m in model.modules())
    assert model.train() is model
    assert inner.calls == [False, True] and all(m.training for m in model.modules())
    model.train(False)
    assert inner.calls == [False, True, False]
    model[1].train(0)  # any truth value, made a bool
    assert inner.calls[-1] is False and model[1].training is False


def test_evaluation_mode_and_the_training_loop_keep_working_with_overrides():
    model = Module()
    model.first, model.second = Recording(), Recording()
    model.second.eval()
    with evaluation_mode(model):
        assert not any(m.training for m in model.modules())
    assert [m.training for m in model.modules()] == [True, True, False]  # restored each
    root = Recording()
    root.child = Recording()
    root.eval()
    inputs = tl.tensor(np.ones(3, dtype=np.float32))
    train(root, SGD(root, lr=0.1), lambda step: (inputs, inputs * 2.0), steps=2,
          progress=False)
    assert root.calls[-1] is True and root.child.calls[-1] is True  # the loop's train()
    assert root.training and root.child.training


# --------------------------------------------------------------------------------- state
def test_state_dict_holds_copies_in_parameter_order():
    model = Pair()
    state = model.state_dict()
    assert list(state) == [n for n, _ in model.named_parameters()]
    state["first.scale"][:] = 100.0
    assert np.all(model.first.scale.data == 2.0)
    with tl.no_grad():
        model.first.scale.fill_(7.0)
    assert np.all(state["first.scale"] == 100.0)


def test_load_state_dict_round_trip():
    source, target = Pair(), Pair()
    with tl.no_grad():
        for i, p in enumerate(source.parameters()):
            p.fill_(float(i + 10))
    result = target.load_state_dict(source.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    for (name, a), b in zip(source.named_parameters(), target.parameters(), strict=True):
        np.testing.assert_array_equal(a.data, b.data, err_msg=name)
        assert b.dtype == np.float32


def test_load_state_dict_reports_every_problem_at_once_and_changes_nothing():
    model = Pair()
    before = model.state_dict()
    versions = [p.version for p in model.parameters()]
    state = model.state_dict()
    state["gain"] = np.full(1, 5.0)  # a valid entry that must not be applied
    del state["first.shift"]
    del state["second.scale"]
    state["first.extra"] = np.zeros(3)
    state["bogus"] = np.zeros(1)
    state["second.shift"] = np.zeros(4)  # wrong shape
    with pytest.raises(StateDictError) as info:
        model.load_state_dict(state)
    message = str(info.value)
    for fragment in ("missing key 'first.shift'", "missing key 'second.scale'",
                     "unexpected key 'first.extra'", "unexpected key 'bogus'",
                     "'second.shift': shape (4,)"):
        assert fragment in message
    assert isinstance(info.value, ValueError)
    for name, value in model.state_dict().items():
        np.testing.assert_array_equal(value, before[name], err_msg=name)
    assert [p.version for p in model.parameters()] == versions


def test_load_state_dict_non_strict_returns_missing_and_unexpected():
    model = Pair()
    state = {"gain": np.full(1, 3.0), "stray": np.zeros(2)}
    result = model.load_state_dict(state, strict=False)
    assert model.gain.data[0] == 3.0
    assert result.unexpected_keys == ["stray"]
    assert "first.scale" in result.missing_keys and len(result.missing_keys) == 4
    with pytest.raises(StateDictError, match="'gain': shape"):
        model.load_state_dict({"gain": np.zeros(2)}, strict=False)  # shapes always checked


def test_load_state_dict_rejects_non_dicts():
    with pytest.raises(TypeError, match="dict"):
        Pair().load_state_dict([("gain", np.ones(1))])


# --------------------------------------------------------------------------------- buffers
class Counter(Module):
    """An Affine with a persistent step counter (int64) and a non-persistent cache."""

    def __init__(self):
        super().__init__()
        self.affine = Affine(2)
        self.register_buffer("steps", np.zeros(1, dtype=np.int64))
        self.register_buffer("cache", np.ones((2, 2), dtype=np.float32), persistent=False)

    def forward(self, x):
        return self.affine(x)


def test_buffers_are_listed_saved_and_never_parameters():
    model = Counter()
    assert isinstance(model.steps, tl.Tensor) and not model.steps.requires_grad
    assert [name for name, _ in model.named_buffers()] == ["steps", "cache"]
    assert model.buffers()[0] is model.steps
    assert not any(p is model.steps or p is model.cache for p in model.parameters())
    assert [name for name, _ in model.named_parameters()] == ["affine.scale", "affine.shift"]
    # Per module: parameters, then persistent buffers; children after.
    assert list(model.state_dict()) == ["steps", "affine.scale", "affine.shift"]
    assert model.state_dict()["steps"].dtype == np.int64
    nested = Module()
    nested.inner = Counter()
    assert [n for n, _ in nested.named_buffers()] == ["inner.steps", "inner.cache"]


def test_buffers_load_strictly_and_keep_their_dtype():
    source, target = Counter(), Counter()
    source.steps.data[0] = 7
    target.load_state_dict(source.state_dict())
    assert target.steps.data.tolist() == [7] and target.steps.dtype == np.int64
    state = source.state_dict()
    state["steps"] = np.array([1.5])  # a float into an integer buffer
    version = target.steps._version[0]
    with pytest.raises(StateDictError, match="'steps': dtype float64 in the state, int64"):
        target.load_state_dict(state)
    assert target.steps.data.tolist() == [7] and target.steps._version[0] == version
    del state["steps"]
    with pytest.raises(StateDictError, match="missing key 'steps'"):
        target.load_state_dict(state)


def test_buffer_registration_rules():
    model = Counter()
    with pytest.raises(KeyError, match="already has a member named 'steps'"):
        model.register_buffer("steps", np.zeros(1))
    with pytest.raises(TypeError, match="cannot be a Parameter"):
        model.register_buffer("p", Parameter(np.zeros(1)))
    with pytest.raises(ValueError, match="must not require grad"):
        model.register_buffer("g", tl.tensor([1.0], requires_grad=True))
    with pytest.raises(TypeError, match="must be an array or a Tensor, got str"):
        model.register_buffer("s", "text")
    with pytest.raises(KeyError, match="already has a member named 'affine'"):
        model.register_buffer("affine", np.zeros(1))
    model.steps = np.full(1, 3, dtype=np.int64)  # assigning replaces the buffer
    assert model.steps.data.tolist() == [3]
    with pytest.raises(AttributeError, match="cannot be deleted"):
        del model.steps
    with pytest.raises(AttributeError, match="no attribute, parameter, buffer or child"):
        _ = model.missing


def test_to_moves_buffers_with_the_parameters(monkeypatch):
    from tensorlib.engine import backend

    model = Counter()
    moved = []
    original = backend.copy_to_backend

    def recording_copy(target, array):
        moved.append(array.shape)
        return original(target, array)

    monkeypatch.setattr("tensorlib.nn.conversion.copy_to_backend", recording_copy)
    monkeypatch.setattr("tensorlib.nn.conversion.device_of", lambda array: "elsewhere")
    steps = model.steps
    model.to("cpu")
    assert sorted(moved) == sorted([(2,), (2,), (1,), (2, 2)])  # parameters and buffers
    assert model.steps is steps and steps._version[0] == 1  # moved in place, version bumped


# --------------------------------------------------------------------------------- _apply
def test_float_casts_floating_tensors_and_grads_in_place_keeping_the_objects():
    model = Sequential(Linear(3, 4, rng=Rng(1), dtype=np.float64), BatchNorm1d(4, dtype=np.float64))
    model[0].bias.trainable = False
    x = tl.tensor(Rng(2).normal(size=(5, 3), dtype=np.float64))
    model(x).sum().backward()
    parameters, buffers = model.parameters(), model.buffers()
    values = [np.array(t.data) for t in parameters + buffers]
    grads = [None if p.grad is None else p.grad.numpy().copy() for p in parameters]
    versions = [t.version for t in parameters + buffers]
    optimizer = SGD(model, lr=0.5)
    assert model.float() is model
    assert model.parameters() == parameters and model.buffers() == buffers  # same objects
    assert [p.trainable for p in parameters] == [True, False, True, True]
    for tensor, value in zip(parameters + buffers, values, strict=True):
        expected = np.float32 if value.dtype.kind == "f" else value.dtype
        assert tensor.dtype == expected
        np.testing.assert_array_equal(tensor.data, value.astype(expected))
    assert model[1].num_batches_tracked.dtype == np.int64  # integer buffers keep theirs
    assert [t.version for t in parameters + buffers] == \
        [v + (t.dtype.kind == "f") for v, t in zip(versions, parameters + buffers,
                                                     strict=True)]
    for parameter, grad in zip(parameters, grads, strict=True):
        if grad is None:
            assert parameter.grad is None
        else:
            assert parameter.grad.dtype == np.float32
            np.testing.assert_array_equal(parameter.grad, grad.astype(np.float32))
    before = np.array(model[0].weight.data)
    optimizer.step()  # the optimizer still holds the model's parameters
    np.testing.assert_allclose(model[0].weight.data, before - 0.5 * model[0].weight.grad)
    assert model(x.float()).dtype == np.float32


def test_double_round_trip_is_exact_and_float_of_float32_touches_nothing():
    model = Sequential(Linear(3, 2, rng=Rng(3)), BatchNorm1d(2))
    tensors = model.parameters() + model.buffers()
    arrays = [t.numpy() for t in tensors]
    versions = [t.version for t in tensors]
    model.float()  # already float32: same arrays, versions and grads
    assert all(t.numpy() is a for t, a in zip(tensors, arrays, strict=True))
    assert [t.version for t in tensors] == versions
    model.double()
    assert all(t.dtype == np.float64 for t in tensors if t.dtype.kind == "f")
    assert model[1].num_batches_tracked.dtype == np.int64
    x = tl.tensor(Rng(4).normal(size=(6, 3)))
    assert model.eval()(x.double()).dtype == np.float64  # eval: running statistics stay
    model.float()
    for tensor, array in zip(tensors, arrays, strict=True):
        assert tensor.dtype == array.dtype
        np.testing.assert_array_equal(tensor.data, array)


def test_apply_visits_children_first_and_each_shared_tensor_once():
    model = Tree()
    seen = []

    def record(array):
        seen.append(id(array))
        return array  # the same array: nothing changes

    model._apply(record)
    expected = [id(t.numpy()) for name in ["first", "rest.0", "rest.1.0", "rest.1.1", ""]
                for t in [*model.get_submodule(name)._parameters.values(),
                          *model.get_submodule(name)._buffers.values()]]
    assert seen == expected  # each module's parameters, then its buffers
    first, second = Leaf(), Leaf()
    second.register_buffer("shared", first.scale)  # one tensor in two modules
    pair = Sequential(first, second)
    seen.clear()
    pair._apply(record)
    assert len(seen) == len(set(seen)) == 6
    assert [n for n, _ in pair.named_buffers()] == ["0.count", "0.scale", "1.count",
                                                    "1.scale", "1.shared"]


def test_apply_is_one_transaction():
    model = Tree()
    model.first.weight.grad = np.ones(2)
    tensors = model.parameters() + model.buffers()
    before = [(t.numpy(), t.version, t.grad, None if t.grad is None else t.grad.numpy())
              for t in tensors]
    count = len({id(t) for t in tensors})

    def unchanged():
        return all(t.numpy() is d and t.version == v and t.grad is g
                   and (None if t.grad is None else t.grad.numpy()) is ga
                   for t, (d, v, g, ga) in zip(tensors, before, strict=True))

    for fail_on in range(1, count + 1):
        calls = []

        def failing(array, fail_on=fail_on, calls=calls):
            calls.append(1)
            if len(calls) == fail_on:
                raise RuntimeError(f"conversion {fail_on} failed")
            return array.copy()

        with pytest.raises(RuntimeError, match=f"conversion {fail_on} failed"):
            model._apply(failing, convert_grads=False)
        assert unchanged()
    with pytest.raises(ValueError, match=r"'first.weight' of shape \(2,\).*keep the shape"):
        model._apply(lambda array: array.reshape(-1, 1) if array.ndim == 1 else array)
    with pytest.raises(ValueError, match="parameter 'first.weight' .*floating point"):
        model._apply(lambda array: array.astype(np.int64))
    assert unchanged()
    model._apply(lambda array: array * 2)  # a converted gradient, as PyTorch's
    np.testing.assert_array_equal(model.first.weight.grad, [2.0, 2.0])
    np.testing.assert_array_equal(model.first.weight.data, [2.0, 4.0])


# --------------------------------------------------------------------------------- copies
def test_copying_a_module_is_deep_or_refused():
    import copy

    model = Pair()
    with pytest.raises(TypeError, match=r"copy.copy\(\) of a Pair would share"):
        copy.copy(model)
    twin = copy.deepcopy(model)
    twin.extra = Parameter(np.zeros(1, dtype=np.float32))
    assert "extra" not in dict(model.named_parameters())
    with tl.no_grad():
        twin.gain.fill_(5.0)
    assert model.gain.data.tolist() == [1.0]


def test_assigning_parameter_data_keeps_shape_and_dtype():
    model = Affine(3)
    with pytest.raises(ValueError, match=r"shape \(5,\) and dtype int64 to parameter 'scale' "
                                         r"of Affine of shape \(3,\) and dtype float32"):
        model.scale.data = np.arange(5)
    with pytest.raises(ValueError, match=r"dtype float64 to parameter 'shift'"):
        model.shift.data = np.zeros(3)
    assert model.scale.shape == (3,) and model.scale.dtype == np.float32
    version = model.scale._version[0]
    model.scale.data = np.full(3, 4.0, dtype=np.float32)  # same shape and dtype: fine
    assert model.scale.data.tolist() == [4.0] * 3 and model.scale._version[0] == version + 1
    loose = Parameter(np.zeros(2, dtype=np.float32))
    with pytest.raises(ValueError, match=r"to a parameter of shape \(2,\)"):
        loose.data = np.zeros(3, dtype=np.float32)


def test_check_module_names_what_was_given():
    from tensorlib.nn.module import check_module
    model = Module()
    assert check_module(model, "model") is model
    with pytest.raises(TypeError, match="save's model must be a Module, got list"):
        check_module([], "save's model")


def test_attaching_seals_the_subtree_so_no_replacement_brings_a_duplicate():
    # Riftco: attaching a subtree seals its registration, so later child mutation cannot
    # introduce a duplicate through an ancestor: every way of replacing a child is checked
    # against the whole tree.
    class Holder(Module):
        def __init__(self, weight=None):
            super().__init__()
            self.w = Parameter(np.ones(2)) if weight is None else weight

    class Middle(Module):
        def __init__(self):
            super().__init__()
            self.sub = Holder()
            self.items = ModuleList([Holder()])

    root = Module()
    root.p = Parameter(np.zeros(2))
    root.c = Middle()
    names = [name for name, _ in root.named_parameters()]
    replacements = {
        "attribute": lambda: setattr(root.c, "sub", Holder(root.p)),
        "ModuleList item": lambda: root.c.items.__setitem__(0, Holder(root.p)),
        "set_submodule on the middle": lambda: root.c.set_submodule("sub", Holder(root.p)),
    }
    for way, replace in replacements.items():
        with pytest.raises(ValueError, match="already registered here as 'p'"):
            replace()
        assert [name for name, _ in root.named_parameters()] == names, way
    kept = root.c.sub
    with pytest.raises(ValueError, match="already registered as a child"):
        root.c.items[0] = kept  # a module of the tree, by another path
    root.c.sub = Holder()  # a fresh child still replaces
    assert root.c.sub is not kept and not kept._parent_registered
    AdamW(root)  # one name per parameter


def test_a_deep_copy_of_a_child_is_free_and_a_copied_tree_keeps_its_shape():
    root = Module()
    root.items = ModuleList([Module()])
    child_copy = copy.deepcopy(root.items)
    assert not child_copy._parent_registered
    Module().register_module("again", child_copy)  # can be attached elsewhere
    tree_copy = copy.deepcopy(root)
    assert tree_copy.items._parent is tree_copy and tree_copy.items[0]._root() is tree_copy
