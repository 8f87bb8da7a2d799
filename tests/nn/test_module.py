"""Tests for tensorlib.nn.module: Parameter, Module registration rules, traversal, modes,
gradients and state dictionaries, ModuleList."""

import copy

import numpy as np
import pytest

import tensorlib as tl
from tensorlib.nn import Module, ModuleList, Parameter, StateDictError
from tensorlib.optim import AdamW


class Affine(Module):
    """A tiny layer: y = x * scale + shift."""

    def __init__(self, width=3, start=0.0):
        super().__init__()
        self.scale = Parameter(np.full(width, start + 1.0, dtype=np.float32))
        self.shift = Parameter(np.full(width, start, dtype=np.float32))

    def forward(self, x):
        return x * self.scale + self.shift


class Pair(Module):
    def __init__(self):
        super().__init__()
        self.gain = Parameter(np.ones(1, dtype=np.float32))
        self.first = Affine(3, 1.0)
        self.second = Affine(3, 2.0)

    def forward(self, x):
        return self.second(self.first(x)) * self.gain


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


# --------------------------------------------------------------------------------- ModuleList
def test_module_list_registers_items_by_index():
    blocks = ModuleList([Affine(), Affine()])
    blocks.append(Affine(2))
    assert len(blocks) == 3
    assert [n for n, _ in blocks.named_children()] == ["0", "1", "2"]
    assert blocks[-1].scale.shape == (2,)
    assert list(blocks) == [blocks[0], blocks[1], blocks[2]]
    assert blocks[0:2] == [blocks[0], blocks[1]]
    with pytest.raises(IndexError, match="out of range"):
        blocks[3]
    model = Module()
    model.blocks = blocks
    assert [n for n, _ in model.named_parameters()][:3] == [
        "blocks.0.scale", "blocks.0.shift", "blocks.1.scale"]
    with pytest.raises(ValueError, match="already registered"):
        ModuleList([blocks[0]])


def test_module_list_rejects_the_same_item_twice():
    item = Affine()
    with pytest.raises(ValueError, match="already registered"):
        ModuleList([item, item])


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
    from tensorlib import backend

    model = Counter()
    moved = []
    original = backend.copy_to_backend

    def recording_copy(target, array):
        moved.append(array.shape)
        return original(target, array)

    monkeypatch.setattr("tensorlib.nn.module.copy_to_backend", recording_copy)
    monkeypatch.setattr("tensorlib.nn.module.device_of", lambda array: "elsewhere")
    steps = model.steps
    model.to("cpu")
    assert sorted(moved) == sorted([(2,), (2,), (1,), (2, 2)])  # parameters and buffers
    assert model.steps is steps and steps._version[0] == 1  # moved in place, version bumped


# --------------------------------------------------------------------------------- hooks
def test_forward_hooks_see_inputs_and_output_and_can_replace_it():
    layer = Affine(3)
    seen = []
    first = layer.register_forward_hook(lambda m, inputs, out: seen.append((m, inputs, out)))
    second = layer.register_forward_hook(lambda m, inputs, out: out * 2.0)
    x = tl.tensor([1.0, 2.0, 3.0])
    y = layer(x)
    assert seen[0][0] is layer and seen[0][1] == (x,)
    np.testing.assert_array_equal(seen[0][2].data, [1.0, 2.0, 3.0])  # before the second hook
    np.testing.assert_array_equal(y.data, [2.0, 4.0, 6.0])
    second.remove()
    second.remove()  # a second remove does nothing
    np.testing.assert_array_equal(layer(x).data, [1.0, 2.0, 3.0])
    with first:
        pass
    layer(x)
    assert len(seen) == 2  # removed on leaving the with block
    with pytest.raises(TypeError, match="must be callable"):
        layer.register_forward_hook("not a function")


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
