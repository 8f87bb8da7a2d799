"""PyTorch's ``save`` and ``load`` of nested checkpoints, without pickle: what nanoGPT's
``torch.save(checkpoint, path)`` and ``torch.load(path, map_location=device)`` do, for the
values a checkpoint holds.

``save`` stores dicts (str or int keys, order kept), lists, tuples, tensors, numpy arrays,
str, int, float, bool and None, nested; anything else is refused before a byte is written,
with its place in the object in the message. ``load`` gives the same structure back and
never executes anything: no pickle, no import by name. The file is a safetensors file whose
one metadata entry, ``"tensorlib.save"``, holds the format's version and the object as a JSON
tree that refers to the arrays by name (docs/saving_objects.md). A tensor comes back as a
plain leaf tensor (a Parameter too, as ``state_dict`` gives them: values only,
``requires_grad`` False); the same tensor or array object met twice (tied weights) is stored
once and comes back as one object.
"""

from __future__ import annotations

import inspect
import json
import math
import os
from collections.abc import Callable
from typing import IO, Any, TypeAlias

import numpy as np

from tensorlib.engine.backend import is_backend_array, to_numpy
from tensorlib.engine.dtypes import bfloat16
from tensorlib.engine.files import write_atomic
from tensorlib.engine.tensor import Tensor
from tensorlib.saving.checkpoint_reader import LEGACY_MAGIC, MAGIC, CheckpointError
from tensorlib.saving.safetensors import (
    parse_safetensors,
    safetensors_bytes,
    safetensors_metadata,
    strict_json,
)

__all__ = ["FORMAT", "MAX_DEPTH", "SAVABLE_DTYPES", "VERSION", "load", "save"]

FORMAT = "tensorlib.save"  # the one key of the file's safetensors metadata: the file's marker
VERSION = 1
MAX_DEPTH = 100  # containers inside containers; a checkpoint nests a handful deep
SAVABLE_DTYPES = frozenset([*(np.dtype(name) for name in (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64")), bfloat16])

FileLike: TypeAlias = "str | os.PathLike[str] | IO[bytes]"

_SAVABLE = ("tensorlib.save stores dicts with str or int keys, lists, tuples, tensors, numpy "
            "arrays, str, int, float, bool and None (it never pickles)")
# A tagged node of the tree: its kind, and the keys the JSON object has.
_NODE_KEYS = {"tuple": {"tuple"}, "dict": {"dict"}, "float": {"float"},
              "tensor": {"tensor", "device"}, "ndarray": {"ndarray"}}
_NON_FINITE = ("inf", "-inf", "nan")
# Other formats' first bytes, for a helpful refusal.
_OTHER_FORMATS = {
    MAGIC: "is a TLCKPT checkpoint: load it with tensorlib.saving.checkpoint.load",
    LEGACY_MAGIC: "is a TLWEIGHT checkpoint: load it with tensorlib.saving.checkpoint.load",
    b"PK\x03\x04": "is a zip archive, as PyTorch's torch.save writes; tensorlib.load reads "
                   "only files written by tensorlib.save (it never unpickles)",
}


# =============================================================================== saving
def save(obj: Any, f: FileLike) -> None:
    """Write ``obj`` to ``f``, a path (written atomically: on any error an existing file is
    left as it was) or a binary file object (one ``f.write``).

    ``obj`` is checked whole before anything is written: TypeError for a value of a type
    that cannot be saved (a function, a set, an object, a numpy scalar, a dict key that is
    not a str or an int, an array of another dtype), ValueError for a container that
    contains itself or is nested more than ``MAX_DEPTH`` deep; each message starts with
    the value's place, such as ``obj['config']['fn']``.
    """
    if not isinstance(f, (str, os.PathLike)) and not callable(getattr(f, "write", None)):
        raise TypeError(f"f must be a path or a binary file object with .write, got "
                        f"{type(f).__name__}")
    writer = _TreeWriter()
    tree = writer.node(obj, "obj", 0)
    document = {"version": VERSION, "tree": tree}
    contents = safetensors_bytes(writer.arrays, {
        FORMAT: json.dumps(document, allow_nan=False, separators=(",", ":"))})
    if isinstance(f, (str, os.PathLike)):
        write_atomic(f, [contents])
    else:
        f.write(contents)


class _TreeWriter:
    """Turns an object into its JSON tree and collects its arrays, each object once."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}  # by name: "0", "1", ... in the order met
        self.names: dict[int, str] = {}  # id of a saved tensor or array -> its array's name
        self.open: set[int] = set()  # ids of the containers being walked, to find cycles

    def node(self, value: Any, path: str, depth: int) -> Any:
        kind = type(value)
        if value is None or kind in (bool, int, str):
            return value
        if kind is float:
            return value if math.isfinite(value) else {"float": repr(value)}
        if kind in (list, tuple, dict):
            return self.container(value, path, depth + 1)
        if isinstance(value, Tensor):
            return {"tensor": self.array_name(value, value.numpy(), path),
                    "device": str(value.device)}
        if is_backend_array(value):
            return {"ndarray": self.array_name(value, value, path)}
        raise TypeError(f"{path}: {_describe(value)} cannot be saved; {_SAVABLE}")

    def container(self, value: list | tuple | dict, path: str, depth: int) -> Any:
        if id(value) in self.open:
            raise ValueError(f"{path}: this {type(value).__name__} contains itself, and a "
                             "cycle cannot be saved")
        if depth > MAX_DEPTH:
            raise ValueError(f"{path}: containers nested more than {MAX_DEPTH} deep cannot "
                             "be saved")
        self.open.add(id(value))
        if isinstance(value, dict):
            for key in value:
                if type(key) not in (str, int):
                    raise TypeError(f"{path}: the dict key {key!r} is {_describe(key)}; "
                                    "keys must be str or int")
            node: Any = {"dict": [[key, self.node(item, f"{path}[{key!r}]", depth)]
                                  for key, item in value.items()]}
        else:
            items = [self.node(item, f"{path}[{index}]", depth)
                     for index, item in enumerate(value)]
            node = items if isinstance(value, list) else {"tuple": items}
        self.open.remove(id(value))
        return node

    def array_name(self, owner: Any, array: Any, path: str) -> str:
        """The name of ``owner``'s array in the file, adding the array when first met."""
        if id(owner) not in self.names:
            if array.dtype.newbyteorder("=") not in SAVABLE_DTYPES:
                raise TypeError(f"{path}: {_describe(owner)} of dtype {array.dtype} cannot be "
                                f"saved; arrays must have one of the dtypes "
                                f"{sorted(map(str, SAVABLE_DTYPES))}")
            self.names[id(owner)] = name = str(len(self.arrays))
            self.arrays[name] = array if type(array) is np.ndarray else to_numpy(array)
        return self.names[id(owner)]


def _describe(value: Any) -> str:
    """What ``value`` is, for a refusal: "a function", "a numpy float16 scalar", ..."""
    if inspect.isroutine(value):
        return "a function"
    if isinstance(value, Tensor):
        return "a tensor"
    if isinstance(value, np.generic):
        return f"a numpy {value.dtype} scalar (use .item(), or a 0-d array)"
    if isinstance(value, np.ndarray) or is_backend_array(value):
        return "an array"
    kind = type(value)
    module = "" if kind.__module__ == "builtins" else f"{kind.__module__}."
    return f"an object of type {module}{kind.__qualname__}"


# =============================================================================== loading
def load(f: FileLike, map_location: Any = None, weights_only: bool = True) -> Any:
    """The object :func:`save` wrote to ``f`` (a path or a binary file object with
    ``.read``), its tensors placed by ``map_location`` as PyTorch places them: None, where
    each was saved; a device or its name (``"cpu"``); a dict from the name of a saved device
    to a device (others stay where they were saved); a callable ``(tensor, saved_device) ->
    Tensor or None`` (None: where it was saved), given each tensor on the CPU.

    ``weights_only`` is PyTorch's argument: True and False load alike, for nothing is ever
    unpickled or run. A file that is not one ``save`` wrote, or is damaged anywhere, raises
    CheckpointError (a ValueError) naming the file and what is wrong, and nothing of it is
    returned; sizes are checked against the file before any array is made. A device that
    is unknown raises ValueError, one not available here RuntimeError, each naming it.
    """
    if not isinstance(weights_only, bool):
        raise TypeError(f"weights_only must be True or False, got {weights_only!r}")
    place = _placement(map_location)
    contents, source = _read(f)
    for magic, what in _OTHER_FORMATS.items():
        if contents.startswith(magic):
            raise CheckpointError(f"{source} {what}")
    arrays = parse_safetensors(contents, source)
    metadata = safetensors_metadata(contents, source)
    if FORMAT not in metadata:
        raise CheckpointError(f"{source} is a safetensors file that tensorlib.save did not "
                              f"write (its metadata has no '{FORMAT}' entry); read its arrays "
                              "with tensorlib.saving.read_safetensors")
    document = strict_json(metadata[FORMAT], f"the '{FORMAT}' entry of {source}")
    if not isinstance(document, dict):
        raise CheckpointError(f"{source}: its '{FORMAT}' entry is not a JSON object")
    version = document.get("version")
    if type(version) is not int or version != VERSION:
        raise CheckpointError(f"{source} is in version {version!r} of the tensorlib.save "
                              f"format; this tensorlib reads version {VERSION}")
    if set(document) != {"version", "tree"}:
        raise CheckpointError(f"{source}: its '{FORMAT}' entry must hold a version and a "
                              f"tree, and holds {sorted(document)}")
    for name, array in arrays.items():
        if array.dtype not in SAVABLE_DTYPES:
            raise CheckpointError(f"{source}: array {name!r} has dtype {array.dtype}, which "
                                  "tensorlib.save does not write")
    reader = _TreeReader(arrays, place, source)
    obj = reader.node(document["tree"], "obj", 0)
    unused = [name for name in arrays if name not in reader.made]
    if unused:
        raise CheckpointError(f"{source}: the arrays {unused[:5]} are in the file but the "
                              "tree refers to none of them")
    return obj


def _read(f: FileLike) -> tuple[bytes, str]:
    """The bytes of ``f`` and the name to give it in messages."""
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as handle:
            return handle.read(), str(os.fspath(f))
    read = getattr(f, "read", None)
    if not callable(read):
        raise TypeError(f"f must be a path or a binary file object with .read, got "
                        f"{type(f).__name__}")
    contents = read()
    if not isinstance(contents, bytes):
        raise TypeError(f"f.read() gave {type(contents).__name__}, not bytes: open the file "
                        "in binary mode ('rb')")
    return contents, str(getattr(f, "name", f"<{type(f).__name__}>"))


def _placement(map_location: Any) -> Callable[[Tensor, str], Tensor]:
    """``place(tensor, saved_device)``: a loaded (CPU) tensor on the device ``map_location``
    chooses for it."""
    if map_location is None:
        return _move
    if isinstance(map_location, dict):
        for saved in map_location:
            if not isinstance(saved, str):
                raise TypeError(f"a map_location dict maps the names of saved devices to "
                                f"devices; {saved!r} is not a name")
        return lambda tensor, saved: _move(tensor, map_location.get(saved, saved))
    if callable(map_location):
        def place(tensor: Tensor, saved: str) -> Tensor:
            placed = map_location(tensor, saved)
            if placed is None:
                return _move(tensor, saved)
            if not isinstance(placed, Tensor):
                raise TypeError(f"map_location returned {type(placed).__name__}; it must "
                                "return a Tensor, or None to keep the saved device")
            return placed
        return place
    return lambda tensor, saved: _move(tensor, map_location)  # a device or a device's name


def _move(tensor: Tensor, device: Any) -> Tensor:
    """``tensor.to(device)``, its refusal saying that ``map_location`` chooses the device."""
    try:
        return tensor.to(device)
    except (TypeError, ValueError, RuntimeError) as error:  # no device, unknown, not here
        raise type(error)(f"cannot load a tensor onto '{device}': {error}; choose where "
                          "tensors go with map_location ('cpu' is always there)") from None


class _TreeReader:
    """Makes the object a JSON tree describes, checking every node."""

    def __init__(self, arrays: dict[str, np.ndarray], place: Callable[[Tensor, str], Tensor],
                 source: str) -> None:
        self.arrays, self.place, self.source = arrays, place, source
        self.made: dict[str, tuple[str, str | None, Any]] = {}  # name -> kind, device, object

    def error(self, path: str, what: str) -> CheckpointError:
        return CheckpointError(f"{self.source}: {path}: {what}")

    def node(self, node: Any, path: str, depth: int) -> Any:
        if node is None or type(node) in (bool, int, float, str):
            return node
        if isinstance(node, list):
            inner = self.deeper(depth, path)
            return [self.node(item, f"{path}[{index}]", inner) for index, item in enumerate(node)]
        kinds = [key for key in node if key in _NODE_KEYS]
        if len(kinds) != 1 or set(node) != _NODE_KEYS[kinds[0]]:
            raise self.error(path, f"a node with the keys {sorted(node)} is of no kind "
                             f"tensorlib.save writes ({sorted(_NODE_KEYS)})")
        kind, body = kinds[0], node[kinds[0]]
        if kind == "float":
            if body not in _NON_FINITE:
                raise self.error(path, f"a float node holds {body!r}, not one of {_NON_FINITE}")
            return float(body)
        if kind in ("tensor", "ndarray"):
            return self.array(kind, body, node.get("device"), path)
        if not isinstance(body, list):
            raise self.error(path, f"a {kind} node holds {type(body).__name__}, not a list")
        inner = self.deeper(depth, path)
        if kind == "tuple":
            return tuple(self.node(item, f"{path}[{index}]", inner)
                         for index, item in enumerate(body))
        return self.mapping(body, path, inner)

    def deeper(self, depth: int, path: str) -> int:
        """The depth of a container's items; CheckpointError past ``MAX_DEPTH``."""
        if depth >= MAX_DEPTH:
            raise self.error(path, f"containers nested more than {MAX_DEPTH} deep")
        return depth + 1

    def mapping(self, entries: list[Any], path: str, depth: int) -> dict[str | int, Any]:
        result: dict[str | int, Any] = {}
        for entry in entries:
            if not (isinstance(entry, list) and len(entry) == 2
                    and type(entry[0]) in (str, int)):
                raise self.error(path, f"a dict entry must be a [key, value] pair with a str "
                                 f"or int key, got {str(entry)[:80]}")
            key, value = entry
            if key in result:
                raise self.error(path, f"the dict names the key {key!r} twice")
            result[key] = self.node(value, f"{path}[{key!r}]", depth)
        return result

    def array(self, kind: str, name: Any, device: Any, path: str) -> Any:
        """The tensor or numpy array made of the array ``name``: one object per name."""
        if not isinstance(name, str) or name not in self.arrays:
            raise self.error(path, f"refers to the array {name!r}, which is not in the file")
        if kind == "tensor" and not isinstance(device, str):
            raise self.error(path, f"a tensor's device must be a str, got {device!r}")
        if name in self.made:
            made_kind, made_device, made = self.made[name]
            if (made_kind, made_device) != (kind, device):
                raise self.error(path, f"refers to the array {name!r} as {kind!r} (device "
                                 f"{device!r}), and an earlier node as {made_kind!r} (device "
                                 f"{made_device!r})")
            return made
        array = self.arrays[name]
        made = array if kind == "ndarray" else self.place(Tensor(array), device)
        self.made[name] = (kind, device, made)
        return made
