"""Devices as PyTorch names them: :class:`device`, and how a factory's ``device=``,
``Tensor.to`` and ``Module.to`` read a device argument.

A device is a type and an optional index: ``device('cpu')``, ``device('cuda', 0)``,
``device('cuda:0')``. Its type is a backend of :mod:`tensorlib.engine.backend` ("cpu" is
numpy, "cuda" CuPy, tests register more), or one of PyTorch's other device types (``'mps'``,
``'meta'``, ...), which can be named but not used here. tensorlib runs on one device of each
type: an index, when given, must be 0 to be used.

Where a device is taken (``tensorlib.zeros(2, device=...)``, ``x.to(...)``), it may be a
string or a :class:`device`; None is the CPU. PyTorch's int (an accelerator index) is refused
with a ``TypeError`` that says to write ``'cuda:0'``. The errors:

* a string that names no device type (``'foo'``): ``ValueError`` listing the types;
* a malformed index (``'cuda:x'``, ``'cuda:-1'``): ``ValueError``;
* a device that cannot be used on this machine (``'cuda'`` without a GPU, ``'mps'``,
  ``'cuda:1'``): ``RuntimeError`` naming it and saying why (``backend.require_backend``).

:meth:`device.__eq__` also takes a string, a departure from PyTorch (docs/departures.md,
"Devices"): ``x.device == 'cpu'`` is True here and False in PyTorch.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from tensorlib.engine import validation
from tensorlib.engine.backend import (
    Backend,
    available_backends,
    device_of,
    get_backend,
    registered_backends,
    require_backend,
)
from tensorlib.engine.typing import Array

__all__ = ["Device", "ToArguments", "as_device", "backend_for", "device", "device_of_array",
           "to_arguments"]

# PyTorch's device types, in the order its "Expected one of ..." error lists them.
PYTORCH_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep",
                        "hip", "ve", "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta",
                        "hpu", "mtia", "privateuseone")


def _name_of_type(value: Any) -> str:
    return type(value).__name__


class device:  # noqa: N801 - PyTorch's name
    """A device: its ``type`` (``'cpu'``, ``'cuda'``, ...) and ``index`` (an int, or None).

    ``device('cuda:0')``, ``device('cuda', 0)``, ``device(type='cuda', index=0)`` and
    ``device(other_device)`` as in PyTorch; ``str`` gives ``'cpu'`` or ``'cuda:0'``, ``repr``
    ``device(type='cpu')``. Two devices are equal when type and index are (so
    ``device('cuda') != device('cuda:0')``, as in PyTorch); a device is hashable and
    immutable. Unlike PyTorch, a device also equals a string that names it: ``x.device ==
    'cpu'``, and ``'cuda'`` names ``cuda:0`` (an index left out matches any).
    """

    __slots__ = ("_type", "_index")
    _type: str
    _index: int | None

    def __init__(self, type: str | device, index: int | None = None) -> None:  # noqa: A002
        if isinstance(type, device):
            if index is not None:
                raise TypeError(f"device({type!r}, {index!r}): an index goes with a type "
                                f"string, as in device('cuda', 0)")
            self._type, self._index = type._type, type._index
            return
        if not isinstance(type, str):
            raise TypeError(_not_a_device("device type", type))
        kind, parsed = _parse(type)
        if index is not None:
            if not isinstance(index, (int, np.integer)) or isinstance(index, (bool, np.bool_)):
                raise TypeError(f"a device index must be an int, got {index!r} of type "
                                f"{_name_of_type(index)}")
            if index < 0:
                raise ValueError(f"a device index must not be negative, got {index}")
            if parsed is not None:
                raise ValueError(f"device type '{type}' must not include an index because "
                                 f"index={index} was passed explicitly")
            parsed = int(index)
        self._type, self._index = kind, parsed

    @property
    def type(self) -> str:
        """The device type: ``'cpu'``, ``'cuda'``, or a registered backend's name."""
        return self._type

    @property
    def index(self) -> int | None:
        """The index (``0`` in ``'cuda:0'``), or None when none was given."""
        return self._index

    def __str__(self) -> str:
        return self._type if self._index is None else f"{self._type}:{self._index}"

    def __repr__(self) -> str:
        if self._index is None:
            return f"device(type='{self._type}')"
        return f"device(type='{self._type}', index={self._index})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, device):
            return self._type == other._type and self._index == other._index
        if isinstance(other, str):  # tensorlib's departure: a string that names this device
            try:
                named = device(other)
            except (TypeError, ValueError):
                return False
            return named._type == self._type and (
                named._index is None or self._index is None or named._index == self._index)
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self) -> int:  # the type's: a device equals the strings that name it
        return hash(self._type)

    def __reduce__(self) -> tuple[Any, ...]:
        return (device, (self._type, self._index))


def _not_a_device(what: str, value: Any) -> str:
    hint = " (PyTorch's int accelerator index is not taken: write 'cuda:0')" \
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool) else ""
    return (f"{what} must be a string such as 'cpu' or 'cuda:0', or a tensorlib.device; got "
            f"{value!r} of type {_name_of_type(value)}{hint}")


def _parse(text: str) -> tuple[str, int | None]:
    """``'cuda:0'`` as ``('cuda', 0)``; ValueError for an empty string, an unknown type or a
    malformed index."""
    if not text:
        raise ValueError("a device string must not be empty: write 'cpu' or 'cuda:0'")
    registered = registered_backends()
    if text in registered:  # a backend's name is a type, whatever characters it has
        return text, None
    kind, colon, index_text = text.partition(":")
    if kind not in PYTORCH_DEVICE_TYPES and kind not in registered:
        types = ", ".join(dict.fromkeys([*PYTORCH_DEVICE_TYPES, *registered]))
        raise ValueError(f"unknown device '{text}': expected one of {types} device type at "
                         f"start of device string: {text} (tensorlib's devices here: "
                         f"{registered})")
    if not colon:
        return kind, None
    if not (index_text.isascii() and index_text.isdigit()) or \
            (len(index_text) > 1 and index_text.startswith("0")):
        raise ValueError(f"invalid device string: '{text}' (an index is a number without a "
                         f"sign or leading zeros, as in '{kind}:0')")
    return kind, int(index_text)


def as_device(value: Any, what: str = "device") -> device:
    """``value`` (a string or a :class:`device`) as a device; TypeError naming ``what`` for
    anything else (an int included), ValueError for a string that names no device."""
    if isinstance(value, device):
        return value
    if isinstance(value, str):
        return device(value)
    raise TypeError(_not_a_device(what, value))


def backend_for(value: Any, what: str = "device") -> Backend:
    """The backend that a ``device=`` argument names, checked to be usable here: None is the
    CPU. TypeError and ValueError as :func:`as_device`; RuntimeError, naming the device and
    saying why, for one this machine cannot use (``'cuda'`` without a GPU, ``'mps'``, an
    index other than 0)."""
    if value is None or (isinstance(value, str) and value == "cpu"):
        return get_backend("cpu")
    target = as_device(value, what)
    if target.type not in registered_backends():
        raise RuntimeError(f"device '{target}' is not available on this machine: tensorlib "
                           f"has no '{target.type}' backend (available devices: "
                           f"{available_backends()})")
    if target.index not in (None, 0):
        raise RuntimeError(f"device '{target}' is not available: tensorlib uses one device of "
                           f"each type, '{target.type}' (or '{target.type}:0')")
    return require_backend(target.type, str(target))


# The device of each backend's arrays, made once: Tensor.device asks for it often.
_DEVICES: dict[str, device] = {}


def device_of_array(array: Array) -> device:
    """The :class:`device` an array lives on: ``device('cpu')`` for numpy, ``device('cuda',
    0)`` for CuPy (PyTorch's CUDA tensors report their index), a registered backend's
    ``device(name)`` for its arrays."""
    name = device_of(array)
    found = _DEVICES.get(name)
    if found is None:
        found = _DEVICES[name] = device(name, 0 if name == "cuda" else None)
    return found


Device = device  # the class, under a name a field called ``device`` does not hide


class ToArguments(NamedTuple):
    """What a ``to(...)`` call asked for: None where it asked for no change."""

    device: Device | None
    dtype: np.dtype | None
    non_blocking: bool
    copy: bool


def to_arguments(args: tuple[Any, ...], kwargs: dict[str, Any], tensor_type: type,
                 what: str, *, takes_copy: bool = True) -> ToArguments:
    """Read PyTorch's forms of ``to``: ``to(device=None, dtype=None, non_blocking=False,
    copy=False)``, ``to(dtype, non_blocking=False, copy=False)`` and ``to(tensor,
    non_blocking=False, copy=False)`` (the tensor's device and dtype); a string, a
    :class:`device` or None first is a device, a tensor a tensor, anything else a dtype.
    ``takes_copy=False`` for ``Module.to``, which has no ``copy``. TypeError for an argument
    given twice, an unknown keyword, or a value of the wrong kind; errors of
    :func:`as_device` for a device (which is not checked for use here: see
    :func:`backend_for`)."""
    names = ["device", "dtype", "non_blocking", "copy"] if takes_copy else \
        ["device", "dtype", "non_blocking"]
    unknown = sorted(set(kwargs) - set(names))
    if unknown:
        raise TypeError(f"{what} got an unexpected keyword argument '{unknown[0]}' (it takes "
                        f"{', '.join(names)})")
    given: dict[str, Any] = {}
    positional = list(args)
    if positional and isinstance(positional[0], tensor_type):
        other = positional.pop(0)
        given.update(device=other.device, dtype=other.dtype)
        names = names[2:]
    elif positional and not (positional[0] is None or isinstance(positional[0], (str, device))
                             or _is_int(positional[0])):
        names = names[1:]  # to(dtype, non_blocking, copy)
    if len(positional) > len(names):
        raise TypeError(f"{what} takes at most {len(names)} positional arguments after its "
                        f"first form is read ({', '.join(names)}), got {len(args)}")
    given.update(zip(names, positional, strict=False))
    for name, value in kwargs.items():
        if name in given:
            raise TypeError(f"{what} got {name} twice (by position or a tensor, and by name)")
        given[name] = value
    target = given.get("device")
    dtype = given.get("dtype")
    return ToArguments(
        None if target is None else as_device(target, f"{what} device"),
        None if dtype is None else _dtype(dtype, what),
        validation.boolean(given.get("non_blocking", False), f"{what} non_blocking"),
        validation.boolean(given.get("copy", False), f"{what} copy"))


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _dtype(value: Any, what: str) -> np.dtype:
    """A ``to`` dtype, with an error that says what ``to`` takes when it is not one."""
    try:
        np.dtype(value)
    except (TypeError, ValueError):
        raise TypeError(f"{what} takes a device ('cpu', 'cuda:0', a tensorlib.device), a "
                        f"dtype (tensorlib.float64) or a tensor; got {value!r} of type "
                        f"{_name_of_type(value)}") from None
    return validation.tensor_dtype(value, f"{what} dtype")
