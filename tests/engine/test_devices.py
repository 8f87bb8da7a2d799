"""The device surface that PyTorch programs touch: ``tensorlib.device``, ``tensorlib.cuda``,
``tensorlib.backends``, the float32 matmul precision, ``device=`` on every factory,
``Tensor.to``/``cpu``/``cuda``/``pin_memory`` and ``Module.to``/``cpu``/``cuda``.

Moves to a device run on the CPU: a fake backend whose arrays are a numpy subclass stands in
for a GPU. Where PyTorch is installed, the device object's behaviour and the precision's
validation are compared with its own.
"""

import copy
import importlib
import pickle
import subprocess
import sys
import warnings

import numpy as np
import pytest

import tensorlib as tl
from tensorlib.engine import accelerators, backend
from tensorlib.nn import Linear, Module

HAS_GPU = backend.cupy_available()
needs_no_gpu = pytest.mark.skipif(HAS_GPU, reason="this machine has a usable CUDA GPU")


class FakeArray(np.ndarray):
    """An array "on" the fake device: a numpy subclass, so every op still runs."""


@pytest.fixture
def fake():
    backend.register_backend("fakedev", np, lambda a: np.array(a, copy=True).view(FakeArray),
                             lambda: True, array_types=(FakeArray,))
    try:
        yield "fakedev"
    finally:
        backend.unregister_backend("fakedev")


@pytest.fixture(autouse=True)
def default_generator_kept():
    """The tests seed the process-wide generator; other tests find it as it was."""
    generator = tl.default_rng()
    seed, state = generator.initial_seed(), generator.state
    yield
    generator.manual_seed(seed).state = state


@pytest.fixture
def switches():
    """The precision and the backends' switches, restored after the test."""
    cudnn = tl.backends.cudnn
    saved = (tl.get_float32_matmul_precision(), cudnn.enabled, cudnn.benchmark,
             cudnn.deterministic, cudnn.allow_tf32)
    yield
    tl.set_float32_matmul_precision(saved[0])
    cudnn.enabled, cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32 = saved[1:]


# ------------------------------------------------------------------------ tensorlib.cuda
def test_cuda_is_available_exactly_when_the_cuda_backend_is():
    assert tl.cuda.is_available() is ("cuda" in backend.available_backends())
    assert tl.cuda.is_available() is HAS_GPU
    assert tl.cuda.device_count() == backend.cuda_device_count()
    if not HAS_GPU:
        assert tl.cuda.device_count() == 0
    assert tl.cuda.is_bf16_supported() is False
    assert tl.cuda.synchronize() is None


def test_cuda_manual_seed_checks_the_seed_and_leaves_the_generator_alone():
    tl.manual_seed(5)
    before = tl.default_rng().state
    for function in (tl.cuda.manual_seed, tl.cuda.manual_seed_all):
        assert function(1337) is None
        assert function(2**64 - 1) is None
        with pytest.raises(ValueError, match=r"seed must be in \[0, 2\*\*64\)"):
            function(-1)
        with pytest.raises(ValueError, match="seed"):
            function(2**64)
        for bad in (1.5, "7", None, True):
            with pytest.raises(TypeError):
                function(bad)
    assert tl.default_rng().state == before


def test_cuda_and_backends_import_as_submodules():
    assert importlib.import_module("tensorlib.cuda") is tl.cuda
    assert importlib.import_module("tensorlib.backends") is tl.backends
    assert importlib.import_module("tensorlib.backends.cudnn") is tl.backends.cudnn
    program = ("import tensorlib.cuda\nimport tensorlib.backends.cuda\nimport tensorlib as torch\n"
               "assert torch.cuda.is_available() in (True, False)\n"
               "assert torch.backends.cuda.matmul.allow_tf32 is False\n")
    subprocess.run([sys.executable, "-c", program], check=True)


# --------------------------------------------------------------------- tensorlib.backends
def test_backend_switches_are_assignable_flags_with_pytorchs_defaults(switches):
    assert tl.backends.cuda.matmul.allow_tf32 is False
    cudnn = tl.backends.cudnn
    assert (cudnn.allow_tf32, cudnn.enabled, cudnn.benchmark, cudnn.deterministic) == \
        (True, True, False, False)
    tl.backends.cuda.matmul.allow_tf32 = True
    tl.backends.cudnn.allow_tf32 = True
    cudnn.benchmark = True
    cudnn.enabled = False
    assert cudnn.benchmark is True and cudnn.enabled is False
    assert cudnn.is_available() is False and cudnn.version() is None
    assert tl.backends.mps.is_available() is False and tl.backends.mps.is_built() is False


def test_allow_tf32_is_the_matmul_precision_as_a_switch(switches):
    matmul = tl.backends.cuda.matmul
    tl.set_float32_matmul_precision("high")
    assert matmul.allow_tf32 is True
    tl.set_float32_matmul_precision("highest")
    assert matmul.allow_tf32 is False
    matmul.allow_tf32 = True
    assert tl.get_float32_matmul_precision() == "high"
    matmul.allow_tf32 = False
    assert tl.get_float32_matmul_precision() == "highest"


def test_a_switch_takes_a_bool_and_a_misspelt_one_is_refused(switches):
    with pytest.raises(TypeError, match=r"tensorlib.backends.cudnn.benchmark must be True or "
                                        r"False, got 1"):
        tl.backends.cudnn.benchmark = 1
    with pytest.raises(TypeError, match="allow_tf32 must be True or False"):
        tl.backends.cuda.matmul.allow_tf32 = "yes"
    with pytest.raises(AttributeError, match=r"no attribute 'benchmarks' \(its switches: "
                                             r"allow_tf32, benchmark"):
        tl.backends.cudnn.benchmarks = True
    with pytest.raises(AttributeError, match="allow_tf23"):
        tl.backends.cuda.matmul.allow_tf23 = True
    assert tl.backends.cudnn.benchmark is False
    assert tl.get_float32_matmul_precision() == "highest"


# --------------------------------------------------------------------- matmul precision
def test_float32_matmul_precision_is_remembered_and_changes_no_result(switches):
    a = tl.randn(8, 8, generator=tl.Generator().manual_seed(1))
    highest = (a @ a).numpy().copy()
    assert tl.get_float32_matmul_precision() == "highest"
    for precision in ("high", "medium", "highest"):
        assert tl.set_float32_matmul_precision(precision) is None
        assert tl.get_float32_matmul_precision() == precision
        np.testing.assert_array_equal((a @ a).numpy(), highest)


@pytest.mark.parametrize("bad", ["low", "HIGH", "", "none", "ieee"])
def test_another_precision_string_is_a_value_error(bad, switches):
    tl.set_float32_matmul_precision("high")
    with pytest.raises(ValueError, match=f"'highest', 'high' or 'medium', got '{bad}'"):
        tl.set_float32_matmul_precision(bad)
    assert tl.get_float32_matmul_precision() == "high"


def test_a_precision_that_is_not_a_string_is_a_type_error(switches):
    with pytest.raises(TypeError, match="expects a str, got 1"):
        tl.set_float32_matmul_precision(1)


def test_the_precisions_taken_are_pytorchs():
    """PyTorch keeps the same three; it warns about another string and ignores it, where
    tensorlib raises (docs/departures.md, "Devices")."""
    torch = pytest.importorskip("torch")
    saved = torch.get_float32_matmul_precision()
    try:
        for candidate in ("highest", "high", "medium", "low", "HIGH", "", "none", "ieee"):
            torch.set_float32_matmul_precision("highest")
            with warnings.catch_warnings(record=True) as warned:
                warnings.simplefilter("always")
                torch.set_float32_matmul_precision(candidate)
            pytorch_takes_it = torch.get_float32_matmul_precision() == candidate
            assert pytorch_takes_it != bool(warned), candidate
            try:
                accelerators.set_float32_matmul_precision(candidate)
                ours = True
            except ValueError:
                ours = False
            assert ours == pytorch_takes_it, candidate
        with pytest.raises(RuntimeError, match="expects a str"):
            torch.set_float32_matmul_precision(1)
        assert torch.backends.cuda.matmul.allow_tf32 is False
        torch.set_float32_matmul_precision("high")
        assert torch.backends.cuda.matmul.allow_tf32 is True  # the link tensorlib keeps
    finally:
        torch.set_float32_matmul_precision(saved)
        accelerators.set_float32_matmul_precision("highest")


# ------------------------------------------------------------------------ tensorlib.device
def test_device_forms_str_repr_type_and_index():
    cpu = tl.device("cpu")
    assert (cpu.type, cpu.index, str(cpu), repr(cpu)) == ("cpu", None, "cpu",
                                                         "device(type='cpu')")
    for cuda0 in (tl.device("cuda", 0), tl.device("cuda:0"), tl.device(type="cuda", index=0),
                  tl.device(tl.device("cuda:0")), tl.device("cuda", np.int64(0))):
        assert (cuda0.type, cuda0.index, str(cuda0), repr(cuda0)) == \
            ("cuda", 0, "cuda:0", "device(type='cuda', index=0)")
    assert repr(tl.device("cuda")) == "device(type='cuda')"
    assert str(tl.device("cuda:12")) == "cuda:12"
    assert repr(tl.device("mps")) == "device(type='mps')"  # PyTorch's types can be named
    assert f"{tl.device('cuda', 1)}" == "cuda:1"


def test_device_equality_and_hash():
    assert tl.device("cpu") == tl.device("cpu") and tl.device("cuda:0") == tl.device("cuda", 0)
    assert tl.device("cuda") != tl.device("cuda:0")  # as in PyTorch
    assert tl.device("cpu") != tl.device("cuda") and tl.device("cpu") != 3
    assert len({tl.device("cpu"), tl.device("cpu"), tl.device("cuda:0"),
                tl.device("cuda", 0)}) == 2
    with pytest.raises(TypeError):
        _ = tl.device("cpu") < tl.device("cuda")
    assert copy.deepcopy(tl.device("cuda:1")) == tl.device("cuda:1")
    assert pickle.loads(pickle.dumps(tl.device("cuda:1"))) == tl.device("cuda:1")
    with pytest.raises(AttributeError):
        tl.device("cpu").type = "cuda"


def test_a_device_equals_a_string_that_names_it():
    """tensorlib's departure: PyTorch's ``device('cpu') == 'cpu'`` is False."""
    assert tl.device("cpu") == "cpu" and "cpu" == tl.device("cpu")
    assert tl.device("cuda", 0) == "cuda" and tl.device("cuda", 0) == "cuda:0"
    assert tl.device("cuda", 0) != "cuda:1" and tl.device("cpu") != "cuda"
    assert tl.device("cpu") != "not a device" and tl.device("cpu") != ""
    assert {tl.device("cuda", 0)} == {"cuda"}  # hash and equality agree
    assert tl.zeros(2).device == "cpu"


@pytest.mark.parametrize("text, error, match", [
    ("foo", ValueError, r"unknown device 'foo': expected one of cpu, cuda, .* device type at "
                        r"start of device string: foo"),
    ("CUDA", ValueError, "unknown device 'CUDA'"),
    ("", ValueError, "must not be empty"),
    ("cuda:x", ValueError, "invalid device string: 'cuda:x'"),
    ("cuda:-1", ValueError, "invalid device string: 'cuda:-1'"),
    ("cuda:01", ValueError, "invalid device string: 'cuda:01'"),
    ("cpu:", ValueError, "invalid device string: 'cpu:'"),
    ("cuda:0:1", ValueError, "invalid device string: 'cuda:0:1'"),
])
def test_a_bad_device_string_is_refused_naming_it(text, error, match):
    with pytest.raises(error, match=match):
        tl.device(text)


def test_bad_device_arguments_are_refused():
    with pytest.raises(ValueError, match="must not be negative, got -1"):
        tl.device("cuda", -1)
    with pytest.raises(ValueError, match="must not include an index"):
        tl.device("cuda:0", 1)
    for index in (1.0, True, "0"):
        with pytest.raises(TypeError, match="index must be an int"):
            tl.device("cuda", index)
    with pytest.raises(TypeError, match="write 'cuda:0'"):
        tl.device(0)
    for bad in (None, 1.5, tl.zeros(1)):
        with pytest.raises(TypeError, match="must be a string such as 'cpu' or 'cuda:0'"):
            tl.device(bad)


DEVICE_SPECS = [("cpu",), ("cuda",), ("cuda:0",), ("cuda", 0), ("cuda:1",), ("cuda", 1),
                ("cpu:0",), ("cpu", 0), ("meta",), ("mps",)]


def test_devices_agree_with_pytorchs():
    torch = pytest.importorskip("torch")
    ours = [tl.device(*spec) for spec in DEVICE_SPECS]
    theirs = [torch.device(*spec) for spec in DEVICE_SPECS]
    for spec, mine, their in zip(DEVICE_SPECS, ours, theirs, strict=True):
        assert (str(mine), repr(mine), mine.type, mine.index) == \
            (str(their), repr(their), their.type, their.index), spec
    for i, (mine, their) in enumerate(zip(ours, theirs, strict=True)):
        for other_mine, other_their in zip(ours[i:], theirs[i:], strict=True):
            assert (mine == other_mine) == (their == other_their), (mine, other_mine)
            assert (mine != other_mine) == (their != other_their), (mine, other_mine)
            if their == other_their:
                assert hash(mine) == hash(other_mine)
    assert tl.device(tl.device("cuda:2")) == tl.device(str(torch.device(torch.device("cuda:2"))))
    assert tl.zeros(1).device == tl.device(str(torch.zeros(1).device))
    assert repr(tl.zeros(1).device) == repr(torch.zeros(1).device)


@pytest.mark.parametrize("text", ["foo", "CUDA", "", "cuda:x", "cuda:-1", "cuda:01", "cpu:",
                                  "cuda:0:1", "cuda: 1"])
def test_a_string_pytorch_refuses_is_refused(text):
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError):
        torch.device(text)
    with pytest.raises(ValueError):
        tl.device(text)


def test_refused_arguments_agree_with_pytorch():
    torch = pytest.importorskip("torch")
    for arguments in (("cuda", -1), ("cuda:0", 1)):
        with pytest.raises(RuntimeError):
            torch.device(*arguments)
        with pytest.raises(ValueError):
            tl.device(*arguments)
    for arguments in (("cuda", 1.0), ("cuda", True), (1.5,), (None,)):
        with pytest.raises(TypeError):
            torch.device(*arguments)
        with pytest.raises(TypeError):
            tl.device(*arguments)


# ------------------------------------------------------------------------- Tensor.device
def test_tensor_device_is_a_device_that_factories_take(fake):
    idx = tl.tensor([[1, 2, 3]])
    assert idx.device == tl.device("cpu") and idx.device.type == "cpu" and not idx.is_cuda
    assert repr(idx.device) == "device(type='cpu')" and str(idx.device) == "cpu"
    positions = tl.arange(0, idx.shape[1], dtype=tl.long, device=idx.device)
    assert positions.tolist() == [0, 1, 2] and positions.device == idx.device
    moved = idx.to(fake)
    assert moved.device == tl.device(fake) and moved.device.type == fake
    on_it = tl.zeros(2, device=moved.device)
    assert type(on_it.numpy()) is FakeArray and on_it.device == moved.device


# ------------------------------------------------------------------------- the factories
FACTORIES = {
    "tensor": lambda **kw: tl.tensor([1.0, 2.0], **kw),
    "zeros": lambda **kw: tl.zeros(2, 3, **kw),
    "ones": lambda **kw: tl.ones((2, 3), **kw),
    "empty": lambda **kw: tl.empty(2, 3, **kw),
    "full": lambda **kw: tl.full((2,), 7.0, **kw),
    "arange": lambda **kw: tl.arange(0, 4, **kw),
    "linspace": lambda **kw: tl.linspace(0.0, 1.0, 5, **kw),
    "zeros_like": lambda **kw: tl.zeros_like(tl.ones(2), **kw),
    "ones_like": lambda **kw: tl.ones_like(tl.ones(2), **kw),
    "empty_like": lambda **kw: tl.empty_like(tl.ones(2), **kw),
    "full_like": lambda **kw: tl.full_like(tl.ones(2), 3.0, **kw),
    "randn": lambda **kw: tl.randn(2, 3, **kw),
    "rand": lambda **kw: tl.rand(2, **kw),
    "randint": lambda **kw: tl.randint(0, 10, (4,), **kw),
    "randperm": lambda **kw: tl.randperm(5, **kw),
    "normal": lambda **kw: tl.normal(0.0, 1.0, (3,), **kw),
    "randn_like": lambda **kw: tl.randn_like(tl.ones(2), **kw),
    "rand_like": lambda **kw: tl.rand_like(tl.ones(2), **kw),
}


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_every_factory_takes_a_cpu_device(name):
    plain = FACTORIES[name]()
    for device in ("cpu", tl.device("cpu"), "cpu:0", tl.device("cpu", 0), None):
        tl.manual_seed(3)
        first = FACTORIES[name](device=device)
        tl.manual_seed(3)
        np.testing.assert_array_equal(first.numpy(), FACTORIES[name](device=None).numpy())
        assert type(first.numpy()) is np.ndarray and first.device == tl.device("cpu")
        assert first.dtype == plain.dtype and first.shape == plain.shape


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_every_factory_puts_its_result_on_the_device(name, fake):
    tl.manual_seed(4)
    on_cpu = FACTORIES[name]()
    tl.manual_seed(4)
    result = FACTORIES[name](device=fake)
    assert type(result.numpy()) is FakeArray and result.device == tl.device(fake)
    np.testing.assert_array_equal(np.asarray(result.numpy()), on_cpu.numpy())  # same draws


@needs_no_gpu
@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_a_factory_on_cuda_without_a_gpu_says_so_and_draws_nothing(name):
    tl.manual_seed(6)
    with pytest.raises(RuntimeError, match="device 'cuda' is not available on this machine"):
        FACTORIES[name](device="cuda")
    with pytest.raises(RuntimeError, match="device 'cuda:0' is not available"):
        FACTORIES[name](device=tl.device("cuda", 0))
    assert tl.default_rng().state == 6  # checked before the first draw


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_a_factory_refuses_a_device_it_cannot_use_naming_it(name):
    tl.manual_seed(6)
    with pytest.raises(ValueError, match="unknown device 'foo'"):
        FACTORIES[name](device="foo")
    with pytest.raises(RuntimeError, match="device 'mps' is not available .* no 'mps' backend"):
        FACTORIES[name](device="mps")
    with pytest.raises(RuntimeError, match="'cpu:1' is not available: tensorlib uses one "
                                           "device of each type"):
        FACTORIES[name](device="cpu:1")
    with pytest.raises(TypeError, match="write 'cuda:0'"):
        FACTORIES[name](device=0)
    assert tl.default_rng().state == 6


def test_empty_is_zeros_with_pytorchs_signature():
    result = tl.empty((2, 3), dtype=tl.long, device="cpu")
    assert result.dtype == np.int64 and result.shape == (2, 3) and not result.numpy().any()
    assert tl.empty(2, requires_grad=True).requires_grad
    assert tl.empty(2, dtype=None).dtype == np.float32 == tl.zeros(2, dtype=None).dtype
    assert tl.empty_like(tl.tensor([1, 2])).dtype == np.int64
    assert tl.full_like(tl.tensor([1, 2]), 5).tolist() == [5, 5]
    assert tl.full_like(tl.ones(2), 0.5, dtype=tl.float64).dtype == np.float64


def test_like_factories_and_sampling_follow_their_tensors_device(fake):
    source = tl.ones(3).to(fake)
    for factory in (tl.zeros_like, tl.ones_like, tl.empty_like, tl.randn_like, tl.rand_like):
        assert type(factory(source).numpy()) is FakeArray, factory.__name__
        assert type(factory(source, device="cpu").numpy()) is np.ndarray, factory.__name__
    assert type(tl.full_like(source, 2.0).numpy()) is FakeArray
    assert type(tl.normal(source, 1.0).numpy()) is FakeArray
    assert type(tl.normal(tl.zeros(3), 1.0, device=fake).numpy()) is FakeArray
    probabilities = tl.tensor([[0.2, 0.8], [0.5, 0.5]]).to(fake)
    assert type(tl.multinomial(probabilities, 1).numpy()) is FakeArray
    assert tl.tensor(source).device == source.device  # torch.tensor keeps a tensor's device
    assert tl.tensor(source, device="cpu").device == "cpu"


def test_generator_takes_the_cpu_device_only():
    for device in ("cpu", tl.device("cpu"), None):
        generator = tl.Generator(device=device)
        assert isinstance(generator, tl.Rng) and generator.initial_seed() == 0
        assert generator.device == tl.device("cpu") and repr(generator.device) == \
            "device(type='cpu')"
    assert tl.Generator(device="cpu").manual_seed(42).state == 42
    with pytest.raises(ValueError, match="draws on the host, so its device must be 'cpu', "
                                         "got 'cuda'"):
        tl.Generator(device="cuda")
    with pytest.raises(ValueError, match="unknown device 'foo'"):
        tl.Generator(device="foo")
    with pytest.raises(TypeError, match="Generator device must be a string"):
        tl.Generator(device=0)


# ------------------------------------------------------------------------------ Tensor.to
def test_to_returns_self_when_nothing_changes():
    x = tl.tensor([1.0, 2.0])
    for call in (lambda: x.to("cpu"), lambda: x.to(tl.device("cpu")), lambda: x.to(tl.float32),
                 lambda: x.to("cpu", tl.float32), lambda: x.to(device="cpu", dtype=tl.float32),
                 lambda: x.to(tl.tensor([0.0])), lambda: x.to(), lambda: x.to(None),
                 lambda: x.to("cpu", non_blocking=True), lambda: x.to(tl.float32, False, False),
                 lambda: x.cpu(), lambda: x.pin_memory()):
        assert call() is x
    assert not x.is_pinned() and not x.pin_memory().is_pinned()


def test_to_casts_and_copies_and_the_graph_follows():
    x = tl.tensor([1.0, 2.0], requires_grad=True)
    for y in (x.to(tl.float64), x.to("cpu", tl.float64), x.to(dtype=tl.float64),
              x.to(tl.zeros(1, dtype=tl.float64)), x.to(tl.float64, non_blocking=True)):
        assert y.dtype == np.float64 and y.grad_fn is not None
    copied = x.to(copy=True)
    assert copied is not x and copied.grad_fn is not None
    assert not np.shares_memory(copied.numpy(), x.numpy())
    (copied * 3.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])
    assert x.to("cpu", tl.float64, copy=True).dtype == np.float64
    assert x.to(tl.long).tolist() == [1, 2]


def test_a_move_is_a_copy_outside_the_graph(fake):
    """tensorlib's departure (Tensor.to's docstring): PyTorch's move is differentiable."""
    x = tl.tensor([1.0, 2.0], requires_grad=True)
    moved = x.to(fake)
    assert moved.is_leaf and not moved.requires_grad and moved.device == fake
    both = x.to(fake, tl.float64)
    assert type(both.numpy()) is FakeArray and both.dtype == np.float64
    assert x.to(fake, copy=True).device == fake
    other = tl.zeros(1, dtype=tl.float64).to(fake)
    assert x.to(other).dtype == np.float64 and x.to(other).device == fake
    assert moved.cpu().device == "cpu" and type(moved.cpu().numpy()) is np.ndarray
    with pytest.raises(RuntimeError, match="cannot pin a tensor on 'fakedev'"):
        moved.pin_memory()
    assert not moved.is_cuda


def test_to_refuses_what_it_cannot_read():
    x = tl.tensor([1.0])
    with pytest.raises(TypeError, match="got dtype twice"):
        x.to(tl.float64, dtype=tl.float32)
    with pytest.raises(TypeError, match="got device twice"):
        x.to(tl.zeros(1), device="cpu")
    with pytest.raises(TypeError, match="unexpected keyword argument 'memory'"):
        x.to(memory="x")
    with pytest.raises(TypeError, match="takes a device .* a dtype .* or a tensor; got 3.5"):
        x.to(3.5)
    with pytest.raises(TypeError, match="non_blocking must be True or False"):
        x.to(tl.float64, tl.float32)
    with pytest.raises(TypeError, match="at most 4 positional arguments"):
        x.to("cpu", tl.float32, False, False, False)
    with pytest.raises(TypeError, match="must be a bool, integer or floating-point dtype"):
        x.to(np.dtype("U3"))
    with pytest.raises(ValueError, match="unknown device 'gpu'"):
        x.to("gpu")
    with pytest.raises(TypeError, match="write 'cuda:0'"):
        x.to(0)


@needs_no_gpu
def test_cuda_without_a_gpu_says_so():
    x = tl.tensor([1.0])
    for call in (x.cuda, lambda: x.cuda(0), lambda: x.to("cuda", non_blocking=True),
                 lambda: x.cuda(non_blocking=True)):
        with pytest.raises(RuntimeError, match=r"'cuda(:0)?' is not available.*CuPy"):
            call()
    with pytest.raises(RuntimeError, match="'cuda:1' is not available: tensorlib uses one"):
        x.cuda(1)


def test_to_agrees_with_pytorch_on_when_it_returns_self():
    torch = pytest.importorskip("torch")

    def forms(library, x):
        return [x.to("cpu"), x.to(library.float32), x.to(library.float64),
                x.to("cpu", library.float64), x.to(), x.to(copy=True),
                x.to("cpu", non_blocking=True), x.to(device="cpu", copy=True),
                x.to(library.zeros(1, dtype=library.float64)), x.cpu()]

    ours, theirs = tl.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0])
    for i, (mine, their) in enumerate(zip(forms(tl, ours), forms(torch, theirs), strict=True)):
        assert (mine is ours) == (their is theirs), i
        assert str(mine.dtype) == str(their.dtype).removeprefix("torch."), i
    with pytest.raises(TypeError):
        theirs.to(torch.float64, torch.float32)
    assert theirs.is_pinned() is ours.is_pinned() is False
    assert theirs.is_cuda is ours.is_cuda is False


# ------------------------------------------------------------------------------ Module.to
class Counted(Module):
    """A layer with an integer buffer beside its floating parameters."""

    def __init__(self):
        super().__init__()
        self.layer = Linear(2, 3, rng=tl.Rng(1))
        self.register_buffer("steps", np.zeros(1, dtype=np.int64))


def with_grads(model):
    for p in model.parameters():
        p.grad = np.full(p.shape, 0.5, dtype=p.dtype)
    return model


def test_module_to_takes_pytorchs_forms_and_returns_self(fake):
    model = with_grads(Counted())
    assert model.to() is model and model.to("cpu") is model and model.cpu() is model
    assert model.to(tl.float32) is model and model.to("cpu", non_blocking=True) is model
    assert model.to(tl.float64) is model
    assert all(p.dtype == np.float64 and p.grad.dtype == np.float64 for p in model.parameters())
    assert model.steps.dtype == np.int64  # integer buffers keep their dtype
    assert model.to(device=tl.device(fake), dtype=tl.float32) is model
    assert all(p.device == fake and p.dtype == np.float32 and p.grad is None
               for p in model.parameters())
    assert model.steps.device == fake and model.steps.dtype == np.int64
    assert model.to(tl.zeros(1, dtype=tl.float64)) is model  # a tensor's device and dtype
    assert all(p.device == "cpu" and p.dtype == np.float64 for p in model.parameters())


def test_module_to_a_dtype_on_its_device_keeps_the_gradients_cast(fake):
    model = with_grads(Counted()).to(fake)
    with_grads(model)
    model.to(fake, tl.float64)
    assert all(p.device == fake and p.grad is not None and p.grad.dtype == np.float64
               for p in model.parameters())


def test_module_to_refuses_and_changes_nothing():
    model = with_grads(Counted())
    before = [(p.numpy(), p.version, p.grad) for p in model.parameters()]
    with pytest.raises(TypeError, match="only casts to a floating dtype, got int64"):
        model.to(tl.int64)
    with pytest.raises(TypeError, match="unexpected keyword argument 'copy'"):
        model.to("cpu", copy=True)
    with pytest.raises(ValueError, match="unknown device 'foo'"):
        model.to("foo", tl.float64)
    with pytest.raises(TypeError, match="must be a string"):
        model.to(0)
    if not HAS_GPU:
        with pytest.raises(RuntimeError, match="'cuda' is not available"):
            model.cuda()
        with pytest.raises(RuntimeError, match="'cuda:0' is not available"):
            model.cuda(0)
        with pytest.raises(RuntimeError, match="'cuda' is not available"):
            model.to("cuda", tl.float64)
    after = [(p.numpy(), p.version, p.grad) for p in model.parameters()]
    assert all(a[0] is b[0] and a[1] == b[1] and a[2] is b[2]
               for a, b in zip(before, after, strict=True))


def test_module_to_agrees_with_pytorch_on_its_forms():
    torch = pytest.importorskip("torch")
    theirs = torch.nn.Linear(2, 3)
    ours = Linear(2, 3, rng=tl.Rng(0))
    for module, library in ((theirs, torch), (ours, tl)):
        assert module.to(library.float64) is module and module.weight.dtype == library.float64
        assert module.to("cpu", library.float32) is module
        assert module.weight.dtype == library.float32
        assert module.to(device="cpu", dtype=library.float64, non_blocking=True) is module
        assert module.to(library.zeros(1, dtype=library.float32)) is module
        assert module.weight.dtype == library.float32 and module.cpu() is module
        with pytest.raises(TypeError):
            module.to(library.int64)


# ------------------------------------------------------------------ a GPT program's lines
def test_the_lines_nanogpt_and_the_lecture_write_run_on_a_cpu(switches):
    import tensorlib as torch

    torch.manual_seed(1337)
    torch.cuda.manual_seed(1337)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    device = "cuda" if torch.cuda.is_available() else "cpu"
    device_type = "cuda" if "cuda" in device else "cpu"
    if not HAS_GPU:
        assert device == device_type == "cpu"
    assert not torch.backends.mps.is_available()
    torch.set_float32_matmul_precision("high")
    generator = torch.Generator(device="cpu").manual_seed(42)

    model = torch.nn.Linear(4, 5, rng=torch.Rng(0)).to(device)
    data = torch.tensor(list(range(40)), dtype=torch.long, device=device)
    ix = torch.randint(len(data) - 4, (2,), generator=generator)
    x = torch.stack([data[i:i + 4] for i in ix.tolist()]).float()
    x = x.pin_memory().to(device, non_blocking=True)
    idx = torch.zeros((1, 1), dtype=torch.long, device=device)
    t = x.shape[1]
    pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
    loss = (model(x + pos.float()) ** 2).mean()
    loss.backward()
    assert model.weight.grad is not None and model.weight.device == device
    assert pos.device == idx.device == x.device
