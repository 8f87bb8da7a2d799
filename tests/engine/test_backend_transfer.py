"""Tests for the backend registry and the transactional ``Module.to(device)``.

The moves run on CPU: each test registers a fake device whose arrays are a numpy subclass
(so every op still works on them) and whose copy function can be told to fail on its N-th
call, which lets the tests break a transfer at every possible point.
"""

from types import ModuleType

import numpy as np
import pytest

import tensorlib as tl
from tensorlib import Rng
from tensorlib.engine import backend
from tensorlib.nn import Decoder, DecoderConfig, Linear, Module, ModuleList, Parameter
from tensorlib.nn.module import named_extra_parameters
from tensorlib.optim import AdamW


class FakeDeviceArray(np.ndarray):
    """An array "on" the fake device: a numpy subclass, so numpy ops run on it unchanged."""


class FakeDevice:
    """The fake device's copy function; ``fail_on_call = n`` makes the n-th copy raise."""

    def __init__(self) -> None:
        self.calls = 0
        self.fail_on_call: int | None = None

    def to_device(self, array):
        self.calls += 1
        if self.fail_on_call is not None and self.calls == self.fail_on_call:
            raise RuntimeError(f"fake device: out of memory on copy {self.calls}")
        return np.array(array, copy=True).view(FakeDeviceArray)


@pytest.fixture
def fake():
    device = FakeDevice()
    backend.register_backend("fakegpu", np, device.to_device, lambda: True,
                             array_types=(FakeDeviceArray,))
    try:
        yield device
    finally:
        backend.unregister_backend("fakegpu")


@pytest.fixture
def offline():
    class OfflineArray(np.ndarray):
        pass

    backend.register_backend("offline", np, lambda a: a.view(OfflineArray), lambda: False,
                             array_types=(OfflineArray,),
                             why_unavailable=lambda: "its driver is not loaded")
    try:
        yield "offline"
    finally:
        backend.unregister_backend("offline")


class Adapter(Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.vector = Parameter(np.ones(width, dtype=np.float32))


class Adapted(Module):
    """A layer with more than parameters, as LoRA and NF4 layers have: a child module (an
    adapter) and two non-persistent buffers (codes and scales, the second float)."""

    def __init__(self, width: int = 3) -> None:
        super().__init__()
        self.weight = Parameter(np.arange(width * width, dtype=np.float32).reshape(width, width))
        self.adapter = Adapter(width)
        self.register_buffer("codes", np.arange(width, dtype=np.uint8), persistent=False)
        self.register_buffer("scales", np.full(2, 0.5, dtype=np.float32), persistent=False)

    def forward(self, x):
        return x @ self.weight + self.adapter.vector * self.scales[:1]


class Model(Module):
    def __init__(self) -> None:
        super().__init__()
        rng = Rng(3)
        self.first = Linear(3, 4, rng=rng)
        self.adapted = Adapted(4)
        self.stack = ModuleList([Linear(4, 4, rng=rng), Linear(4, 2, rng=rng)])


def everything(model: Module) -> list:
    """Every tensor to()'s one traversal moves: parameters, buffers, extra parameters (LoRA
    adapters)."""
    return model.parameters() + model.buffers() + [p for _, p in named_extra_parameters(model)]


def snapshot(model: Module) -> list:
    """What a failed transfer must leave unchanged: data objects, versions, grads."""
    return [(t.numpy(), t.version, t.grad, None if t.grad is None else t.grad.numpy())
            for t in everything(model)]


def assert_unchanged(model: Module, before: list) -> None:
    after = snapshot(model)
    assert len(after) == len(before)
    for old, new in zip(before, after, strict=True):
        assert new[0] is old[0] and new[1] == old[1] and new[2] is old[2] and new[3] is old[3]


def with_gradients(model: Module) -> Module:
    for p in model.parameters():
        p.grad = np.full(p.shape, 2.0, dtype=p.dtype)
    return model


# --------------------------------------------------------------------------------- registry
def test_builtin_backends_and_cuda_availability():
    assert backend.registered_backends()[:2] == ["cpu", "cuda"]
    assert "cpu" in backend.available_backends()
    assert ("cuda" in backend.available_backends()) == backend.cupy_available()
    assert backend.device_of(np.zeros(2)) == "cpu" and backend.array_module(np.zeros(2)) is np
    assert backend.device_of(1.5) == "cpu" and backend.array_module([1, 2]) is np


def test_registered_array_types_map_to_their_backend(fake):
    proxy = ModuleType("proxy_numpy")
    proxy.__getattr__ = lambda name: getattr(np, name)  # a module that forwards to numpy

    class ProxyArray(np.ndarray):
        pass

    backend.register_backend("proxy", proxy, lambda a: np.array(a).view(ProxyArray),
                             lambda: True, array_types=(ProxyArray,))
    try:
        array = np.zeros(3).view(ProxyArray)
        assert backend.array_module(array) is proxy
        assert backend.device_of(array) == "proxy"
        assert backend.array_module(array).ones(2).sum() == 2.0
        assert backend.device_of(np.zeros(3).view(FakeDeviceArray)) == "fakegpu"
        assert {"cpu", "fakegpu", "proxy"} <= set(backend.available_backends())
    finally:
        backend.unregister_backend("proxy")
    assert "proxy" not in backend.registered_backends()
    assert backend.device_of(np.zeros(3).view(ProxyArray)) == "cpu"  # an ndarray again


def test_register_backend_rejects_bad_registrations(fake):
    with pytest.raises(ValueError, match="already registered"):
        backend.register_backend("fakegpu", np, lambda a: a, lambda: True)
    with pytest.raises(ValueError, match="already belongs to backend 'cpu'"):
        backend.register_backend("other", np, lambda a: a, lambda: True,
                                 array_types=(np.ndarray,))
    with pytest.raises(TypeError, match="callable"):
        backend.register_backend("other", np, None, lambda: True)
    with pytest.raises(ValueError, match="empty"):
        backend.register_backend("", np, lambda a: a, lambda: True)
    with pytest.raises(ValueError, match="cannot be unregistered"):
        backend.unregister_backend("cpu")
    assert "other" not in backend.registered_backends()


# --------------------------------------------------------------------------------- refusals
def test_unknown_device_raises_listing_known_ones_and_changes_nothing():
    model = with_gradients(Model())
    before = snapshot(model)
    with pytest.raises(ValueError, match=r"unknown device 'tpu'.*'cpu', 'cuda'"):
        model.to("tpu")
    assert_unchanged(model, before)
    with pytest.raises(TypeError, match="string"):
        model.to(0)


def test_unavailable_device_raises_saying_why_and_changes_nothing(offline):
    model = with_gradients(Model())
    before = snapshot(model)
    with pytest.raises(RuntimeError, match="'offline' is not available.*driver is not loaded"):
        model.to("offline")
    assert_unchanged(model, before)


@pytest.mark.skipif(backend.cupy_available(), reason="this machine has a usable CUDA GPU")
def test_cuda_without_a_gpu_says_so():
    model = Model()
    before = snapshot(model)
    with pytest.raises(RuntimeError, match="'cuda' is not available.*CuPy"):
        model.to("cuda")
    assert_unchanged(model, before)


# --------------------------------------------------------------------------------- transaction
def test_transfer_failing_at_every_copy_changes_nothing(fake):
    model = with_gradients(Model())
    copies = len(everything(model))  # parameters (the adapter's among them), then buffers
    assert copies == 8 + 2
    for fail_on in range(1, copies + 1):
        before = snapshot(model)
        fake.calls, fake.fail_on_call = 0, fail_on
        with pytest.raises(RuntimeError, match=f"out of memory on copy {fail_on}"):
            model.to("fakegpu")
        assert_unchanged(model, before)
        assert all(t.device == "cpu" for t in everything(model))
    fake.calls, fake.fail_on_call = 0, None
    model.to("fakegpu")
    assert fake.calls == copies  # every failing position above was a real copy


def test_successful_transfer_moves_all_bumps_versions_drops_grads(fake):
    model = with_gradients(Model())
    names = [name for name, _ in model.named_parameters()]
    values = [np.array(p.data) for p in everything(model)]
    versions = [p.version for p in everything(model)]
    assert model.to("fakegpu") is model
    moved = everything(model)
    assert all(type(p.numpy()) is FakeDeviceArray and p.device == "fakegpu" for p in moved)
    assert [p.version for p in moved] == [v + 1 for v in versions]
    assert all(p.grad is None for p in moved)
    for value, p in zip(values, moved, strict=True):
        np.testing.assert_array_equal(np.asarray(p.data), value)
    assert [name for name, _ in model.named_parameters()] == names  # schema unchanged


def test_buffers_are_moved_in_place_keeping_their_dtype(fake):
    model = Model()
    codes, scales = model.adapted.codes, model.adapted.scales
    values = codes.numpy().copy(), scales.numpy().copy()
    model.to("fakegpu")
    assert model.adapted.codes is codes and model.adapted.scales is scales  # same Tensors
    assert type(codes.numpy()) is FakeDeviceArray and codes.dtype == np.uint8
    np.testing.assert_array_equal(np.asarray(codes.data), values[0])
    np.testing.assert_array_equal(np.asarray(scales.data), values[1])
    assert list(model.state_dict()) == [name for name, _ in model.named_parameters()]


def test_parameters_already_on_the_device_are_untouched(fake):
    model = Model()
    model.stack.to("fakegpu")  # part of the tree moves first
    settled = model.stack.parameters()
    for p in settled:
        p.grad = np.ones(p.shape, dtype=p.dtype)
    before = [(p.numpy(), p.version, p.grad, p.grad.numpy()) for p in settled]
    fake.calls = 0
    model.to("fakegpu")
    assert fake.calls == len(everything(model)) - len(settled)
    for (data, version, grad, grad_data), p in zip(before, settled, strict=True):
        assert p.numpy() is data and p.version == version and p.grad is grad
        assert p.grad.numpy() is grad_data
    fake.calls = 0
    model.to("fakegpu")  # everything is there: a no-op
    assert fake.calls == 0


def test_lora_and_nf4_layers_move_in_the_same_transaction(fake):
    from tensorlib.adapters.lora import attach_lora, lora_parameters
    from tensorlib.adapters.nf4 import quantize_model

    model = _decoder()
    quantize_model(model, "blocks.*.mlp_*", block_size=16)
    attach_lora(model, ["blocks.*.mlp_*", "blocks.*.attention.output"], rank=2, alpha=4,
                rng=Rng(1))
    ids = Rng(5).integers(0, 7, size=(2, 5))
    with tl.no_grad():
        before = model(ids).numpy().copy()
    tensors = everything(model)
    assert len(model.buffers()) == 2 * 4  # codes and scales of the four MLP layers
    assert set(map(id, lora_parameters(model).values())) <= set(map(id, tensors))
    for fail_on in (1, len(model.parameters()), len(tensors)):
        fake.calls, fake.fail_on_call = 0, fail_on
        before_move = snapshot(model)
        with pytest.raises(RuntimeError, match="out of memory"):
            model.to("fakegpu")
        assert_unchanged(model, before_move)
    fake.calls, fake.fail_on_call = 0, None
    model.to("fakegpu")
    assert fake.calls == len(tensors) and all(t.device == "fakegpu" for t in tensors)
    layer = model.blocks[0].mlp_input
    assert type(layer.base.quantized.codes) is FakeDeviceArray  # the base sees the move
    with tl.no_grad():
        np.testing.assert_allclose(np.asarray(model(ids).data), before, atol=1e-6)


def test_a_backend_that_returns_the_wrong_thing_is_a_failed_transfer():
    class Squashed(np.ndarray):
        pass

    backend.register_backend("squash", np, lambda a: np.zeros(1, a.dtype).view(Squashed),
                             lambda: True, array_types=(Squashed,))
    try:
        model = with_gradients(Model())
        before = snapshot(model)
        with pytest.raises(RuntimeError, match=r"into shape \(1,\)"):
            model.to("squash")
        assert_unchanged(model, before)
    finally:
        backend.unregister_backend("squash")


def test_graph_recorded_before_a_move_refuses_backward(fake):
    layer = Linear(3, 2, rng=Rng(0))
    loss = layer(tl.ones(4, 3)).sum()
    layer.to("fakegpu")
    with pytest.raises(RuntimeError, match="changed in place"):
        loss.backward()


# --------------------------------------------------------------------------------- training
def _decoder() -> Decoder:
    config = DecoderConfig(vocabulary_size=7, context_length=5, channels=8, heads=2, layers=2)
    return Decoder(config, rng=Rng(11))


def _train(model: Decoder, steps: int) -> list[float]:
    data = Rng(5).integers(0, 7, size=(3, 6))
    optimizer = AdamW(model, lr=1e-2, max_grad_norm=1.0)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = model.loss(data[:, :-1], data[:, 1:])
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def test_training_on_the_moved_model_matches_cpu_and_moves_back(fake):
    reference = _train(_decoder(), steps=3)
    model = _decoder().to("fakegpu")
    losses = _train(model, steps=3)
    np.testing.assert_allclose(losses, reference, rtol=1e-6)
    assert all(p.device == "fakegpu" for p in model.parameters())  # steps stay on device
    assert all(p.grad is not None for p in model.parameters())
    state = model.state_dict()  # host copies, whatever the device
    assert all(type(value) is np.ndarray for value in state.values())
    values = [np.array(p.data) for p in model.parameters()]
    versions = [p.version for p in model.parameters()]
    model.to("cpu")
    for value, version, p in zip(values, versions, model.parameters(), strict=True):
        assert type(p.numpy()) is np.ndarray and p.device == "cpu"
        assert p.version == version + 1 and p.grad is None
        np.testing.assert_array_equal(p.data, value)


# --------------------------------------------------------------------------------- Tensor.to
def test_tensor_to_copies_detached_or_returns_self(fake):
    x = tl.tensor([1.0, 2.0], requires_grad=True)
    assert x.to("cpu") is x
    y = x.to("fakegpu")
    assert y.device == "fakegpu" and type(y.numpy()) is FakeDeviceArray
    assert y is not x and y.is_leaf and not y.requires_grad
    assert not np.shares_memory(y.numpy(), x.numpy())
    np.testing.assert_array_equal(np.asarray(y.data), [1.0, 2.0])
    back = (y * 2.0).to("cpu")
    assert type(back.numpy()) is np.ndarray and back.tolist() == [2.0, 4.0]
    with pytest.raises(ValueError, match="unknown device"):
        x.to("gpu")


def test_a_retained_gradient_stays_on_the_device(fake):
    """``retain_grad`` keeps a copy of a non-leaf's gradient made by the array's own module
    (numpy's ``np.array`` would turn a device array into a host one, or refuse CuPy's)."""
    x = tl.tensor([1.0, 2.0, 3.0]).to("fakegpu").requires_grad_()
    hidden = x * 2.0
    hidden.retain_grad()
    (hidden * hidden).sum().backward()
    assert type(hidden.grad.numpy()) is FakeDeviceArray and hidden.grad.device == "fakegpu"
    np.testing.assert_array_equal(np.asarray(hidden.grad.numpy()), [4.0, 8.0, 12.0])
    assert type(x.grad.numpy()) is FakeDeviceArray
