"""safetensors files: round trips, refusals that leave the model as it was, and the move into
PyTorch and back (a file written by tensorlib loaded by safetensors.torch into a torch twin
with the same logits, and one written from PyTorch loaded by tensorlib)."""

import json
import struct
import sys
from pathlib import Path

import numpy as np
import pytest

import tensorlib as tl
from tensorlib.nn import Decoder, DecoderConfig, Linear, Module, Parameter
from tensorlib.saving.checkpoint import CheckpointError
from tensorlib.saving.safetensors import load_safetensors, read_safetensors, save_safetensors

CONFIG = DecoderConfig(vocabulary_size=11, context_length=8, channels=16, heads=4, layers=2)


def make(seed):
    return Decoder(CONFIG, rng=tl.Rng(seed))


def values(module):
    return {name: array.tobytes() for name, array in module.state_dict().items()}


def test_round_trip_keeps_every_value_and_the_dotted_names(tmp_path):
    source, target = make(0), make(1)
    path = tmp_path / "model.safetensors"
    save_safetensors(path, source, metadata={"note": "surnames"})
    assert values(target) != values(source)
    assert load_safetensors(path, target) == ([], [])
    assert values(target) == values(source)
    # the header is plain JSON: the dotted names, float32, the shapes, our metadata
    (length,) = struct.unpack("<Q", path.read_bytes()[:8])
    header = json.loads(path.read_bytes()[8:8 + length])
    assert header["__metadata__"] == {"producer": "tensorlib", "note": "surnames"}
    assert header["blocks.0.attention.qkv_weight"]["shape"] == [3, 16, 16]
    assert header["blocks.0.attention.qkv_weight"]["dtype"] == "F32"
    assert set(header) - {"__metadata__"} == set(source.state_dict())


def test_a_float64_file_loads_into_a_float32_model(tmp_path):
    wide = Linear(3, 2, rng=tl.Rng(0), dtype=np.float64)
    narrow = Linear(3, 2, rng=tl.Rng(1))
    save_safetensors(tmp_path / "wide.safetensors", wide)
    load_safetensors(tmp_path / "wide.safetensors", narrow)
    assert narrow.weight.dtype == np.float32
    np.testing.assert_array_equal(narrow.weight.data, wide.weight.data.astype(np.float32))


def _corrupt(path, how):
    data = path.read_bytes()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    if how == "truncated":
        return data[:len(data) - 7]
    if how == "garbage":
        return b"not a safetensors file at all"
    if how == "huge header length":
        return struct.pack("<Q", 1 << 40) + data[8:]
    if how == "shape":
        header["final_norm.bias"]["shape"] = [4, 4]
    if how == "bool dtype":
        entry = header["final_norm.bias"]  # 16 float32 = the same 64 bytes as 64 bools
        entry["dtype"], entry["shape"] = "BOOL", [64]
    if how == "nan":
        entry = header["final_norm.bias"]
        start = entry["data_offsets"][0]
        body = bytearray(data[8 + length:])
        body[start:start + 4] = struct.pack("<f", float("nan"))
        return data[:8 + length] + bytes(body)
    encoded = json.dumps(header).encode()
    encoded += b" " * (-len(encoded) % 8)
    return struct.pack("<Q", len(encoded)) + encoded + data[8 + length:]


@pytest.mark.parametrize("how, message", [
    ("truncated", "not a readable safetensors file"),
    ("garbage", "not a readable safetensors file"),
    ("huge header length", "not a readable safetensors file"),
    ("shape", r"does not fit the module: .*'final_norm.bias': shape \(4, 4\) in the state"),
    ("bool dtype", "dtype bool, not a real number type"),
    ("nan", "'final_norm.bias' in .* has non-finite values"),
])
def test_bad_files_are_refused_and_the_model_is_unchanged(tmp_path, how, message):
    path = tmp_path / "model.safetensors"
    save_safetensors(path, make(0))
    path.write_bytes(_corrupt(path, how))
    model = make(1)
    before = values(model)
    with pytest.raises(CheckpointError, match=message):
        load_safetensors(path, model)
    assert values(model) == before


def test_files_that_do_not_fit_are_refused_by_name(tmp_path):
    path = tmp_path / "model.safetensors"
    save_safetensors(path, make(0))
    wider = Decoder(DecoderConfig(vocabulary_size=11, context_length=8, channels=8, heads=4,
                                  layers=2), rng=tl.Rng(2))
    before = values(wider)
    with pytest.raises(CheckpointError, match=r"'token_embedding.weight': shape \(11, 16\)"):
        load_safetensors(path, wider)
    assert values(wider) == before
    deeper = Decoder(DecoderConfig(vocabulary_size=11, context_length=8, channels=16, heads=4,
                                   layers=3), rng=tl.Rng(2))
    before = values(deeper)
    with pytest.raises(CheckpointError, match="missing key 'blocks.2.mlp_norm.weight'"):
        load_safetensors(path, deeper)
    assert values(deeper) == before
    incompatible = load_safetensors(path, deeper, strict=False)
    assert "blocks.2.mlp_norm.weight" in incompatible.missing_keys
    assert values(deeper)["blocks.0.mlp_norm.weight"] == values(make(0))[
        "blocks.0.mlp_norm.weight"]


def test_saving_refuses_bad_input_and_leaves_an_existing_file(tmp_path):
    path = tmp_path / "model.safetensors"
    save_safetensors(path, make(0))
    saved = path.read_bytes()
    broken = Module()
    broken.weight = Parameter(np.array([1.0, np.inf], dtype=np.float32))
    with pytest.raises(ValueError, match="'weight' has non-finite values; nothing was written"):
        save_safetensors(path, broken)
    with pytest.raises(TypeError, match="metadata must be a dict of strings"):
        save_safetensors(path, make(0), metadata={"steps": 3})
    with pytest.raises(TypeError, match="module must be a Module"):
        save_safetensors(path, {"weight": np.zeros(2)})
    with pytest.raises(TypeError, match="module must be a Module"):
        load_safetensors(path, None)
    assert path.read_bytes() == saved
    assert not (tmp_path / "model.safetensors.tmp").exists()
    with pytest.raises(FileNotFoundError):
        read_safetensors(tmp_path / "absent.safetensors")


# ------------------------------------------------------------------------------- PyTorch
def _torch_twin():
    torch = pytest.importorskip("torch")
    pytest.importorskip("safetensors.torch")
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import twins

    return torch, twins.torch_decoder_class()


def test_a_tensorlib_file_gives_pytorch_the_same_logits(tmp_path):
    torch, TorchDecoder = _torch_twin()
    from safetensors.torch import load_file

    model = make(0)
    path = tmp_path / "model.safetensors"
    save_safetensors(path, model)
    twin = TorchDecoder(CONFIG)
    twin.load_state_dict(load_file(path), strict=True)
    ids = np.random.default_rng(0).integers(0, 11, size=(3, 8))
    with torch.no_grad():
        theirs = twin(torch.from_numpy(ids)).numpy()
    ours = model(ids).data
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5)
    assert (ours.argmax(-1) == theirs.argmax(-1)).all()


def test_a_pytorch_file_loads_into_tensorlib(tmp_path):
    torch, TorchDecoder = _torch_twin()
    from safetensors.torch import save_file

    torch.manual_seed(0)
    twin = TorchDecoder(CONFIG)
    with torch.no_grad():
        twin.blocks[0].attention.qkv_weight.normal_(0.0, 0.2)
        twin.blocks[1].attention.qkv_weight.normal_(0.0, 0.2)
    path = tmp_path / "from_torch.safetensors"
    save_file({name: tensor.contiguous() for name, tensor in twin.state_dict().items()}, path)
    model = make(3)
    load_safetensors(path, model)
    ids = np.random.default_rng(1).integers(0, 11, size=(2, 8))
    with torch.no_grad():
        theirs = twin(torch.from_numpy(ids)).numpy()
    np.testing.assert_allclose(model(ids).data, theirs, rtol=1e-4, atol=1e-5)
