"""Tests for Module's general mechanisms: the one member traversal, ``train(mode)`` through
each child's ``train``, the conversion path ``_apply`` (``to``, ``float``, ``double``) and
forward-hook ids that are never reused."""

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
    evaluation_mode,
)
from tensorlib.optim import SGD
from tensorlib.train import train


class Leaf(Module):
    def __init__(self, width: int = 2, dtype=np.float64) -> None:
        super().__init__()
        self.weight = Parameter(np.arange(width, dtype=dtype) + 1.0)
        self.register_buffer("count", np.zeros(1, dtype=np.int64))
        self.register_buffer("scale", np.full(width, 0.5, dtype=dtype), persistent=False)

    def forward(self, x):
        return x * self.weight * self.scale


class Tree(Module):
    """root: bias, then first (a Leaf), then rest (a ModuleList of a Leaf and a Sequential)."""

    def __init__(self) -> None:
        super().__init__()
        self.bias = Parameter(np.zeros(2))
        self.first = Leaf()
        self.rest = ModuleList([Leaf(), Sequential(Leaf(), Linear(2, 2, rng=Rng(0),
                                                                   dtype=np.float64))])
        self.rest[1][1].bias.trainable = False


# --------------------------------------------------------------------------------- traversal
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


# --------------------------------------------------------------------------------- modes
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


# --------------------------------------------------------------------------------- hooks
def test_a_removed_handle_never_removes_a_newer_hook():
    layer = Leaf()
    calls = []
    first = layer.register_forward_hook(lambda m, inputs, out: calls.append("first"))
    first.remove()
    layer.register_forward_hook(lambda m, inputs, out: calls.append("second"))
    first.remove()  # a second remove does nothing, whichever hooks came since
    layer(tl.tensor(np.ones(2)))
    assert calls == ["second"]


def test_hook_ids_are_never_reused_and_hooks_run_in_registration_order():
    layer, other = Leaf(), Leaf()
    calls = []
    handles = [layer.register_forward_hook(lambda m, i, o, k=k: calls.append(k))
               for k in range(3)]
    handles[2].remove()
    handles.append(layer.register_forward_hook(lambda m, i, o: calls.append(3)))
    handles.append(other.register_forward_hook(lambda m, i, o: None))
    assert len({h.id for h in handles}) == len(handles)
    assert handles[3].id > handles[2].id
    layer(tl.tensor(np.ones(2)))
    assert calls == [0, 1, 3]
