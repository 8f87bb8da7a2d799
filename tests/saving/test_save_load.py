"""tensorlib.save and tensorlib.load (tensorlib/saving/objects.py, docs/saving_objects.md):
round trips of every kind of value, nanoGPT's checkpoint dict, sharing, map_location, the
refusals at save time (before a byte is written), a table of hostile files with the error
each gets, and the same nested structure through PyTorch where it is installed."""

from __future__ import annotations

import io
import json
import math
import struct
import tracemalloc
from collections import OrderedDict, namedtuple
from enum import IntEnum

import numpy as np
import pytest
from safetensors import numpy as safetensors_numpy

import tensorlib
import tensorlib as torch  # nanoGPT's spelling
from tensorlib import Tensor, nn
from tensorlib.engine import backend
from tensorlib.saving import objects
from tensorlib.saving.checkpoint import MAGIC, CheckpointError
from tensorlib.saving.safetensors import safetensors_bytes

DTYPES = sorted(objects.SAVABLE_DTYPES, key=str)
SHAPES = [(), (0,), (2, 0, 3), (3, 4)]


def round_trip(obj, **load_arguments):
    buffer = io.BytesIO()
    tensorlib.save(obj, buffer)
    buffer.seek(0)
    return tensorlib.load(buffer, **load_arguments)


def assert_same(loaded, saved, where="obj"):
    """Equal values of exactly the same types, containers in the same order with the same
    key types; a tensor comes back a plain leaf Tensor, an array a numpy array."""
    if isinstance(saved, Tensor):
        assert type(loaded) is Tensor and not loaded.requires_grad and loaded.grad is None, where
        assert loaded.is_leaf, where
        saved = saved.numpy()
        loaded = loaded.numpy()
    assert type(loaded) is type(saved), where
    if isinstance(saved, np.ndarray):
        assert loaded.dtype == saved.dtype and loaded.shape == saved.shape, where
        assert loaded.flags.writeable and loaded.flags.c_contiguous, where
        np.testing.assert_array_equal(loaded, saved, err_msg=where)
    elif isinstance(saved, dict):
        assert [(type(k), k) for k in loaded] == [(type(k), k) for k in saved], where
        for key in saved:
            assert_same(loaded[key], saved[key], f"{where}[{key!r}]")
    elif isinstance(saved, (list, tuple)):
        assert len(loaded) == len(saved), where
        for index, (a, b) in enumerate(zip(loaded, saved, strict=True)):
            assert_same(a, b, f"{where}[{index}]")
    elif isinstance(saved, float) and math.isnan(saved):
        assert math.isnan(loaded), where
    else:
        assert loaded == saved, where
        if isinstance(saved, float):
            assert math.copysign(1.0, loaded) == math.copysign(1.0, saved), where


# ============================================================================ round trips
@pytest.mark.parametrize("value", [
    None, True, False, 0, -7, 2**80, -(2**70), 1.5, -0.0, 1e-310, 1e300, float("inf"),
    float("-inf"), float("nan"), "", "héllo ☃ \n\"quoted\"", "\ud800", [], (), {}, (1,),
    [(1, 2), [3, (4.0,)]], {"a": 1, 2: "b", -3: None, "3": (True,)},
    {"outer": {"inner": [{"deep": [None, {}]}]}}, ((),), [[[]]],
], ids=repr)
def test_plain_values_round_trip_with_their_types(value):
    assert_same(round_trip(value), value)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_tensors_and_arrays_of_every_dtype_and_shape_round_trip(dtype, shape):
    values = np.random.default_rng(0).normal(scale=100, size=shape)
    if dtype == np.bool_:
        values = values > 0
    elif dtype.kind == "u":
        values = np.abs(values)
    array = np.asarray(values).astype(dtype)
    loaded = round_trip({"tensor": Tensor(array), "array": array})
    assert_same(loaded, {"tensor": Tensor(array), "array": array})


def test_non_contiguous_big_endian_and_fortran_arrays_are_stored_as_their_values():
    base = np.arange(24, dtype=np.float64).reshape(4, 6)
    saved = {
        "transposed tensor": Tensor(base).transpose(0, 1),
        "strided tensor": Tensor(base)[::2, 1::3],
        "strided array": base[:, ::-2],
        "fortran array": np.asfortranarray(base),
        "big-endian": np.arange(5, dtype=">i4"),
        "big-endian float": np.linspace(0, 1, 3).astype(">f8"),
    }
    loaded = round_trip(saved)
    for key, value in saved.items():
        expected = value.numpy() if isinstance(value, Tensor) else value
        got = loaded[key].numpy() if isinstance(value, Tensor) else loaded[key]
        assert got.flags.c_contiguous and got.dtype == expected.dtype.newbyteorder("=")
        np.testing.assert_array_equal(got, expected)


def test_a_parameter_comes_back_as_a_plain_tensor_of_its_values():
    layer = nn.Linear(3, 2)
    layer(torch.randn(4, 3)).sum().backward()
    loaded = round_trip({"weight": layer.weight})["weight"]
    assert type(loaded) is Tensor and not loaded.requires_grad and loaded.grad is None
    np.testing.assert_array_equal(loaded.numpy(), layer.weight.numpy())
    loaded += 1  # its own writable memory
    assert not np.array_equal(loaded.numpy(), layer.weight.numpy())


def test_one_tensor_or_array_in_two_places_is_stored_once_and_comes_back_as_one_object():
    tied, array = Tensor(np.ones((2, 3), dtype=np.float32)), np.zeros(3)
    twin = Tensor(np.ones((2, 3), dtype=np.float32))  # equal, but another object
    saved = {"wte.weight": tied, "lm_head.weight": tied, "twin": twin,
             "arrays": [array, (array,)]}
    buffer = io.BytesIO()
    tensorlib.save(saved, buffer)
    assert len(safetensors_numpy.load(buffer.getvalue())) == 3  # tied, twin, array
    loaded = tensorlib.load(io.BytesIO(buffer.getvalue()))
    assert loaded["wte.weight"] is loaded["lm_head.weight"]
    assert loaded["twin"] is not loaded["wte.weight"]
    assert loaded["arrays"][0] is loaded["arrays"][1][0]
    assert_same(loaded, saved)


def test_a_container_met_twice_is_saved_twice():
    shared = {"lr": 0.1}
    loaded = round_trip([shared, shared])
    assert loaded == [shared, shared] and loaded[0] is not loaded[1]


def test_a_nanogpt_checkpoint_resumes_training_exactly(tmp_path):
    def make():
        torch.manual_seed(0)
        model = nn.Linear(3, 4)
        return model, torch.optim.AdamW(model.parameters(), lr=0.1, weight_decay=0.1)

    def train(model, optimizer, steps):
        generator = torch.Generator().manual_seed(1)
        for _ in range(steps):
            loss = (model(torch.randn(8, 3, generator=generator)) ** 2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        return loss

    model, optimizer = make()
    loss = train(model, optimizer, 3)
    model_args = {"n_layer": 1, "n_embd": 4, "bias": True, "vocab_size": None}
    checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                  "model_args": model_args, "iter_num": 3, "best_val_loss": loss.detach(),
                  "config": {"learning_rate": 0.1, "decay_lr": False, "eval_iters": 200,
                             "wandb_run_name": "gpt2", "init_from": None, "beta2": 0.99}}
    path = tmp_path / "ckpt.pt"
    torch.save(checkpoint, str(path))
    device = "cpu"
    loaded = torch.load(path, map_location=device)
    assert_same(loaded, checkpoint)
    assert isinstance(loaded["optimizer"]["state"], dict)  # int keys, as PyTorch's
    assert all(type(key) is int for key in loaded["optimizer"]["state"])

    resumed, resumed_optimizer = make()
    train(resumed, resumed_optimizer, 1)  # somewhere else entirely
    resumed.load_state_dict(loaded["model"])
    resumed_optimizer.load_state_dict(loaded["optimizer"])
    assert loaded["iter_num"] == 3 and loaded["best_val_loss"].item() == loss.item()
    train(model, optimizer, 2)
    train(resumed, resumed_optimizer, 2)
    for original, again in zip(model.parameters(), resumed.parameters(), strict=True):
        np.testing.assert_array_equal(again.numpy(), original.numpy())


def test_paths_and_file_objects_all_work(tmp_path):
    saved = {"x": Tensor(np.arange(3.0)), "n": 1}
    tensorlib.save(saved, tmp_path / "a.pt")
    tensorlib.save(saved, str(tmp_path / "b.pt"))
    with open(tmp_path / "c.pt", "wb") as handle:
        tensorlib.save(saved, handle)
    assert (tmp_path / "a.pt").read_bytes() == (tmp_path / "b.pt").read_bytes() \
        == (tmp_path / "c.pt").read_bytes()
    with open(tmp_path / "c.pt", "rb") as handle:
        assert_same(tensorlib.load(handle), saved)
    assert_same(tensorlib.load(str(tmp_path / "a.pt")), saved)
    assert_same(tensorlib.load(io.BytesIO((tmp_path / "b.pt").read_bytes())), saved)
    assert not list(tmp_path.glob("*.tmp"))


def test_the_file_is_a_safetensors_file_with_the_tree_in_its_metadata(tmp_path):
    tensorlib.save({"w": Tensor(np.ones(2, dtype=np.float32)), "tuple": (1, 2.5)},
                   tmp_path / "f.pt")
    data = (tmp_path / "f.pt").read_bytes()
    (length,) = struct.unpack("<Q", data[:8])
    metadata = json.loads(data[8:8 + length])["__metadata__"]
    assert list(metadata) == ["tensorlib.save"]
    assert json.loads(metadata["tensorlib.save"]) == {"version": 1, "tree": {"dict": [
        ["w", {"tensor": "0", "device": "cpu"}], ["tuple", {"tuple": [1, 2.5]}]]}}
    np.testing.assert_array_equal(safetensors_numpy.load(data)["0"], np.ones(2))


def test_weights_only_is_accepted_and_changes_nothing():
    saved = {"w": Tensor(np.ones(2)), "s": "x"}
    assert_same(round_trip(saved, weights_only=True), saved)
    assert_same(round_trip(saved, weights_only=False), saved)
    with pytest.raises(TypeError, match="weights_only must be True or False"):
        round_trip(saved, weights_only="yes")


def test_the_package_exports_save_and_load():
    assert tensorlib.save is tensorlib.saving.save is objects.save
    assert tensorlib.load is tensorlib.saving.load is objects.load
    assert {"save", "load"} <= set(tensorlib.__all__) & set(dir(tensorlib))


# ============================================================================ map_location
class FakeDeviceArray(np.ndarray):
    """An array "on" the fake device: a numpy subclass."""


class OfflineArray(np.ndarray):
    """An array of a device that this machine does not have."""


@pytest.fixture
def devices():
    backend.register_backend("fakegpu", np, lambda a: np.array(a).view(FakeDeviceArray),
                             lambda: True, array_types=(FakeDeviceArray,))
    backend.register_backend("offline", np, lambda a: np.array(a).view(OfflineArray),
                             lambda: False, array_types=(OfflineArray,),
                             why_unavailable=lambda: "its driver is not loaded")
    try:
        yield
    finally:
        backend.unregister_backend("fakegpu")
        backend.unregister_backend("offline")


def devices_of(obj):
    return {key: str(value.device) for key, value in obj.items()}


def test_map_location_places_tensors_as_pytorch_does(devices):
    on_gpu = Tensor(np.arange(3.0)).to("fakegpu")
    saved = {"gpu": on_gpu, "cpu": Tensor(np.arange(2.0))}
    assert devices_of(round_trip(saved)) == {"gpu": "fakegpu", "cpu": "cpu"}
    assert devices_of(round_trip(saved, map_location="cpu")) == {"gpu": "cpu", "cpu": "cpu"}
    assert devices_of(round_trip(saved, map_location="fakegpu")) == {"gpu": "fakegpu",
                                                                    "cpu": "fakegpu"}
    assert devices_of(round_trip(saved, map_location={"fakegpu": "cpu"})) == {
        "gpu": "cpu", "cpu": "cpu"}
    seen = []

    def keep_on_cpu(tensor, saved_device):  # PyTorch's `lambda storage, loc: storage`
        seen.append((str(tensor.device), saved_device))
        return tensor

    assert devices_of(round_trip(saved, map_location=keep_on_cpu)) == {"gpu": "cpu",
                                                                      "cpu": "cpu"}
    assert sorted(seen) == [("cpu", "cpu"), ("cpu", "fakegpu")]
    assert devices_of(round_trip(saved, map_location=lambda tensor, saved_device: None)) == {
        "gpu": "fakegpu", "cpu": "cpu"}  # None: where it was saved
    np.testing.assert_array_equal(round_trip(saved)["gpu"].numpy(), np.arange(3.0))


def test_a_device_object_is_a_map_location_too():
    if not hasattr(tensorlib, "device"):
        pytest.skip("this tensorlib names devices by strings only")
    loaded = round_trip({"x": Tensor(np.ones(2))}, map_location=tensorlib.device("cpu"))
    assert str(loaded["x"].device) == "cpu"


def test_a_tied_tensor_moved_by_map_location_stays_one_object(devices):
    tied = Tensor(np.ones(2))
    loaded = round_trip([tied, tied], map_location="fakegpu")
    assert loaded[0] is loaded[1] and str(loaded[0].device) == "fakegpu"


def test_a_device_that_is_unknown_or_not_here_is_named_in_the_error(devices):
    offline = {"x": Tensor(np.ones(2).view(OfflineArray))}
    assert str(offline["x"].device) == "offline"
    with pytest.raises(RuntimeError, match="cannot load a tensor onto 'offline'.*not "
                       "available.*its driver is not loaded.*map_location"):
        round_trip(offline)
    assert devices_of(round_trip(offline, map_location="cpu")) == {"x": "cpu"}
    with pytest.raises(RuntimeError, match="'offline'.*not available"):
        round_trip({"x": Tensor(np.ones(2))}, map_location="offline")
    with pytest.raises(ValueError, match="cannot load a tensor onto 'nowhere'.*unknown device"):
        round_trip({"x": Tensor(np.ones(2))}, map_location="nowhere")
    with pytest.raises(TypeError, match="map_location returned list"):
        round_trip({"x": Tensor(np.ones(2))}, map_location=lambda tensor, saved: [tensor])
    with pytest.raises(TypeError, match="map_location dict maps the names"):
        round_trip({"x": Tensor(np.ones(2))}, map_location={0: "cpu"})
    assert round_trip({"no tensors": 1}, map_location="nowhere") == {"no tensors": 1}


# ============================================================================ refusals
def deep(levels):
    value = []
    for _ in range(levels - 1):
        value = [value]
    return value


def cycle():
    value = {"a": []}
    value["a"].append(value)
    return value


class Colour(IntEnum):
    RED = 1


REFUSALS = [  # (what, object, exception, message)
    ("function", {"config": {"fn": lambda: 0}}, TypeError,
     r"obj\['config'\]\['fn'\]: a function cannot be saved"),
    ("builtin", [print], TypeError, r"obj\[0\]: a function cannot be saved"),
    ("set", {"s": {1, 2}}, TypeError, r"obj\['s'\]: an object of type set cannot be saved"),
    ("object", {1: [object()]}, TypeError, r"obj\[1\]\[0\]: an object of type object cannot"),
    ("module", {"m": nn.Module()}, TypeError,
     r"obj\['m'\]: an object of type tensorlib\.nn\.module\.Module cannot be saved"),
    ("tuple key", {"a": {(1, 2): 3}}, TypeError,
     r"obj\['a'\]: the dict key \(1, 2\) is an object of type tuple; keys must be str or int"),
    ("bool key", {True: 1}, TypeError, r"obj: the dict key True is an object of type bool"),
    ("float key", {1.5: 1}, TypeError, r"obj: the dict key 1.5 is an object of type float"),
    ("float16 scalar", {"x": np.float16(1)}, TypeError,
     r"obj\['x'\]: a numpy float16 scalar \(use .item\(\), or a 0-d array\) cannot be saved"),
    ("float64 scalar", (np.float64(1),), TypeError, r"obj\[0\]: a numpy float64 scalar"),
    ("int enum", [Colour.RED], TypeError, r"obj\[0\]: an object of type .*Colour"),
    ("bytes", b"x", TypeError, r"obj: an object of type bytes cannot be saved"),
    ("OrderedDict", OrderedDict(a=1), TypeError, r"obj: an object of type .*OrderedDict"),
    ("namedtuple", namedtuple("Pair", "a b")(1, 2), TypeError, r"obj: an object of type .*Pair"),
    ("complex array", {"c": np.zeros(2, complex)}, TypeError,
     r"obj\['c'\]: an array of dtype complex128 cannot be saved"),
    ("string array", [np.array(["a"])], TypeError, r"obj\[0\]: an array of dtype <U1 cannot"),
    ("long double array", [np.zeros(1, np.longdouble)], TypeError, r"an array of dtype float"),
    ("cycle", cycle(), ValueError, r"obj\['a'\]\[0\]: this dict contains itself"),
    ("too deep", deep(objects.MAX_DEPTH + 1), ValueError,
     r"obj(\[0\]){100}: containers nested more than 100 deep cannot be saved"),
]


@pytest.mark.parametrize("what, obj, error, message", REFUSALS, ids=[r[0] for r in REFUSALS])
def test_what_cannot_be_saved_is_refused_before_a_byte_is_written(tmp_path, what, obj, error,
                                                                  message):
    path = tmp_path / "ckpt.pt"
    tensorlib.save({"old": Tensor(np.ones(3))}, path)
    old = path.read_bytes()
    with pytest.raises(error, match=message):
        tensorlib.save(obj, path)
    assert path.read_bytes() == old and not list(tmp_path.glob("*.tmp"))
    buffer = io.BytesIO()
    with pytest.raises(error, match=message):
        tensorlib.save(obj, buffer)
    assert buffer.getvalue() == b""


def test_the_deepest_nesting_allowed_round_trips():
    value = deep(objects.MAX_DEPTH)
    assert round_trip(value) == value


def test_f_must_be_a_path_or_a_binary_file(tmp_path):
    with pytest.raises(TypeError, match="f must be a path or a binary file object with .write"):
        tensorlib.save({}, 3)
    with pytest.raises(TypeError, match="f must be a path or a binary file object with .read"):
        tensorlib.load(3)
    tensorlib.save({}, tmp_path / "f.pt")
    with open(tmp_path / "f.pt", encoding="latin-1") as text, \
            pytest.raises(TypeError, match="open the file in binary mode"):
        tensorlib.load(text)


# ============================================================================ hostile files
def valid_file():
    buffer = io.BytesIO()
    tensorlib.save({"w": Tensor(np.arange(4, dtype=np.float32)), "n": [1, 2.5]}, buffer)
    return buffer.getvalue()


def split(data):
    (length,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8:8 + length]), data[8 + length:]


def joined(header, body, raw_header=None):
    encoded = raw_header if raw_header is not None else json.dumps(header).encode()
    return struct.pack("<Q", len(encoded)) + encoded + body


def with_header(change):
    """The valid file with ``change(header)`` applied to its header (arrays "0": the four
    float32 values)."""
    header, body = split(valid_file())
    change(header)
    return joined(header, body)


def with_tree(tree, arrays=None, version=1, entry_text=None):
    """A safetensors file of ``arrays`` (one float32 array "0" by default) whose
    "tensorlib.save" entry holds ``version`` and ``tree``, or is ``entry_text``."""
    text = entry_text or json.dumps({"version": version, "tree": tree})
    arrays = {"0": np.arange(4, dtype=np.float32)} if arrays is None else arrays
    return safetensors_bytes(arrays, {"tensorlib.save": text})


def with_entry(text):
    return with_tree(None, arrays={}, entry_text=text)


def entry(**fields):
    return lambda header: header["0"].update(fields)


TENSOR = {"tensor": "0", "device": "cpu"}
HOSTILE = [  # (the file, how it is made, the error's message; every one is a CheckpointError)
    ("empty file", lambda: b"", r"not a readable safetensors file .*header too small"),
    ("truncated file", lambda: valid_file()[:-3], r"not a readable safetensors file"),
    ("header length 2**62", lambda: struct.pack("<Q", 2**62) + valid_file()[8:],
     r"header too large"),
    ("header length past the end", lambda: struct.pack("<Q", 10**6) + valid_file()[8:],
     r"invalid header length"),
    ("header not JSON", lambda: joined(None, b"", raw_header=b"{nope"), r"invalid JSON"),
    ("header a JSON array", lambda: joined([], b""), r"invalid type: sequence"),
    ("shape with a negative dim", lambda: with_header(entry(shape=[-4])), r"expected usize"),
    ("shape not a list", lambda: with_header(entry(shape="4")), r"invalid type: string"),
    ("unknown dtype", lambda: with_header(entry(dtype="X32")), r"unknown variant `X32`"),
    ("offsets not ints", lambda: with_header(entry(data_offsets=[0.0, 16])),
     r"invalid type: floating point"),
    ("offsets past the data", lambda: with_header(entry(data_offsets=[0, 32])),
     r"invalid offset|not fully covered|invalid shape"),
    ("offsets overlapping", lambda: joined({
        "a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
        "b": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, b"\0" * 4),
     r"invalid offset"),
    ("offsets leaving a gap", lambda: joined({
        "a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, b"\0" * 8),
     r"invalid offset"),
    ("byte count not shape x itemsize", lambda: with_header(entry(shape=[5])),
     r"invalid shape, data type, or offset"),
    ("trailing bytes", lambda: valid_file() + b"\0" * 8, r"not fully covered"),
    ("header names a key twice", lambda: joined(None, b"\0" * 4, raw_header=(
        b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},'
        b'"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}')),
     r"the header of .* names the key 'a' twice"),
    ("complex64 array", lambda: joined({
        "__metadata__": {"tensorlib.save": '{"version":1,"tree":{"ndarray":"0"}}'},
        "0": {"dtype": "C64", "shape": [1], "data_offsets": [0, 8]}}, b"\0" * 8),
     r"array '0' has dtype complex64, which tensorlib.save does not write"),
    ("TLCKPT checkpoint", lambda: MAGIC + b"\1\0\0\0" * 3,
     r"is a TLCKPT checkpoint: load it with tensorlib.saving.checkpoint.load"),
    ("PyTorch zip file", lambda: b"PK\x03\x04" + b"\0" * 60,
     r"is a zip archive, as PyTorch's torch.save writes"),
    ("plain safetensors file", lambda: safetensors_bytes({"w": np.ones(2)}, {"a": "b"}),
     r"a safetensors file that tensorlib.save did not write \(its metadata has no "
     r"'tensorlib.save' entry\)"),
    ("metadata null", lambda: with_header(lambda header: header.update(__metadata__=None)),
     r"tensorlib.save did not write"),
    ("entry not JSON", lambda: with_entry("{'version': 1}"),
     r"the 'tensorlib.save' entry of .* is not valid JSON"),
    ("entry not an object", lambda: with_entry("[1]"),
     r"its 'tensorlib.save' entry is not a JSON object"),
    ("other version", lambda: with_tree(TENSOR, version=2),
     r"in version 2 of the tensorlib.save format; this tensorlib reads version 1"),
    ("version a string", lambda: with_tree(TENSOR, version="1"), r"in version '1' of the"),
    ("no tree", lambda: with_entry('{"version":1}'),
     r"its 'tensorlib.save' entry must hold a version and a tree, and holds \['version'\]"),
    ("entry with another key", lambda: with_entry('{"version":1,"tree":1,"code":"rm -rf"}'),
     r"must hold a version and a tree, and holds \['code', 'tree', 'version'\]"),
    ("entry holds NaN", lambda: with_entry('{"version":1,"tree":[NaN]}'),
     r"holds NaN, which is not JSON"),
    ("entry names a key twice", lambda: with_entry('{"version":1,"tree":1,"tree":2}'),
     r"the 'tensorlib.save' entry of .* names the key 'tree' twice"),
    ("tree node names a key twice", lambda: with_tree(None, entry_text=(
        '{"version":1,"tree":{"tensor":"0","tensor":"0","device":"cpu"}}')),
     r"names the key 'tensor' twice"),
    ("tree nested 100000 deep", lambda: with_entry(
        '{"version":1,"tree":' + "[" * 100_000 + "]" * 100_000 + "}"),
     r"the 'tensorlib.save' entry of .* is nested too deeply to read"),
    ("tree nested 101 containers deep", lambda: with_tree(deep(101), arrays={}),
     r"obj(\[0\]){100}: containers nested more than 100 deep"),
    ("array name not in the file", lambda: with_tree(
        {"tensor": "../../etc/passwd", "device": "cpu"}),
     r"obj: refers to the array '\.\./\.\./etc/passwd', which is not in the file"),
    ("array name not a string", lambda: with_tree({"ndarray": 0}),
     r"obj: refers to the array 0, which is not in the file"),
    ("node of unknown kind", lambda: with_tree({"dict": [["f", {"pickle": "os.system"}]]}),
     r"obj\['f'\]: a node with the keys \['pickle'\] is of no kind tensorlib.save writes"),
    ("tensor node without a device", lambda: with_tree({"tensor": "0"}),
     r"obj: a node with the keys \['tensor'\] is of no kind"),
    ("tensor node with two kinds", lambda: with_tree({"tensor": "0", "ndarray": "0"}),
     r"obj: a node with the keys \['ndarray', 'tensor'\] is of no kind"),
    ("device not a string", lambda: with_tree({"tensor": "0", "device": 0}),
     r"obj: a tensor's device must be a str, got 0"),
    ("dict node not a list", lambda: with_tree({"dict": {"a": 1}}, arrays={}),
     r"obj: a dict node holds dict, not a list"),
    ("dict entry not a pair", lambda: with_tree({"dict": [["a", 1, 2]]}, arrays={}),
     r"obj: a dict entry must be a \[key, value\] pair"),
    ("dict key a float", lambda: with_tree({"dict": [[1.5, 1]]}, arrays={}),
     r"obj: a dict entry must be a \[key, value\] pair with a str or int key"),
    ("dict names a key twice", lambda: with_tree({"dict": [["a", 1], ["a", 2]]}, arrays={}),
     r"obj: the dict names the key 'a' twice"),
    ("float node of another value", lambda: with_tree({"float": "1e999"}, arrays={}),
     r"obj: a float node holds '1e999', not one of \('inf', '-inf', 'nan'\)"),
    ("array the tree never names", lambda: with_tree([1]),
     r"the arrays \['0'\] are in the file but the tree refers to none of them"),
    ("array as tensor and ndarray", lambda: with_tree([TENSOR, {"ndarray": "0"}]),
     r"obj\[1\]: refers to the array '0' as 'ndarray' \(device None\), and an earlier "
     r"node as 'tensor' \(device 'cpu'\)"),
    ("random bytes", lambda: np.random.default_rng(0).bytes(256),
     r"not a readable safetensors file"),
]


@pytest.mark.parametrize("what, make, message", HOSTILE, ids=[row[0] for row in HOSTILE])
def test_a_hostile_file_raises_a_clear_error_and_allocates_nothing_large(tmp_path, what, make,
                                                                         message):
    path = tmp_path / "hostile.pt"
    path.write_bytes(make())
    tracemalloc.start()
    try:
        with pytest.raises(CheckpointError, match=message) as caught:
            tensorlib.load(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert str(path) in str(caught.value)
    assert isinstance(caught.value, ValueError)
    assert peak < 2**20 + 4 * path.stat().st_size


def test_a_hostile_file_object_is_named_by_its_type():
    with pytest.raises(CheckpointError, match=r"^<BytesIO> is not a readable safetensors"):
        tensorlib.load(io.BytesIO(b"short"))


# ============================================================================ PyTorch
def test_the_same_structure_round_trips_as_through_pytorch():
    real_torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    arrays = {"f32": rng.normal(size=(2, 3)).astype(np.float32),
              "f64": rng.normal(size=()), "f16": rng.normal(size=(4,)).astype(np.float16),
              "i64": rng.integers(-9, 9, size=(3,)), "i32": np.arange(0, dtype=np.int32),
              "u8": rng.integers(0, 255, size=(2, 2)).astype(np.uint8),
              "i8": np.array([-1, 1], np.int8), "i16": np.array([7], np.int16),
              "bool": np.array([True, False])}

    def structure(make_tensor):
        tensors = {name: make_tensor(array) for name, array in arrays.items()}
        return {"model": {f"layer.{name}": tensor for name, tensor in tensors.items()},
                "tied": [tensors["f32"], (tensors["f32"], tensors["f64"])],
                "optimizer": {"state": {0: {"step": make_tensor(np.array(3.0, np.float32))},
                                        1: {}},
                              "param_groups": [{"betas": (0.9, 0.95), "params": [0, 1]}]},
                "iter_num": 7, "best_val_loss": make_tensor(np.array(1.25, np.float32)),
                "config": {"init_from": None, "compile": False, "lr": 6e-4, "name": "gpt2"}}

    buffer = io.BytesIO()
    real_torch.save(structure(lambda a: real_torch.from_numpy(a.copy())), buffer)
    buffer.seek(0)
    theirs = real_torch.load(buffer, map_location="cpu")
    ours = round_trip(structure(lambda a: Tensor(a.copy())), map_location="cpu")

    def compare(a, b, where):
        if isinstance(b, real_torch.Tensor):
            assert type(a) is Tensor and a.dtype == b.numpy().dtype, where
            np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=where)
        elif isinstance(b, dict):
            assert list(a) == list(b) and [type(k) for k in a] == [type(k) for k in b], where
            for key in b:
                compare(a[key], b[key], f"{where}[{key!r}]")
        elif isinstance(b, (list, tuple)):
            assert type(a) is type(b) and len(a) == len(b), where
            for index, (x, y) in enumerate(zip(a, b, strict=True)):
                compare(x, y, f"{where}[{index}]")
        else:
            assert type(a) is type(b) and a == b, where

    compare(ours, theirs, "obj")
    assert theirs["tied"][0] is theirs["tied"][1][0]  # PyTorch keeps the sharing; so do we
    assert ours["tied"][0] is ours["tied"][1][0]
