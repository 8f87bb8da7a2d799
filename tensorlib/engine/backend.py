"""The one place that knows which array library an array belongs to, and how to move arrays.

Every op asks ``array_module(array)`` for ``np``-like functions instead of importing numpy
directly, so a second backend (CuPy on a GPU) needs no rewrite of the ops.

Backends live in a small registry. Each has a name (the *device* string users pass to
``Module.to`` and ``Tensor.to``), an array module, the array types it owns, a function that
copies any array onto it, and a check that says whether it can be used on this machine.
Two are built in:

- ``"cpu"``: numpy; always available. Its ``to_device`` copies into a plain ``numpy.ndarray``
  (``.get()`` for CuPy arrays).
- ``"cuda"``: CuPy; available only when CuPy imports and sees at least one GPU.

Tests and extensions may ``register_backend`` more (for instance a fake device whose arrays
are a numpy subclass), and ``unregister_backend`` them again. PyTorch's device objects and
``device=`` arguments (``'cuda:0'``) are read in :mod:`tensorlib.engine.devices`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from tensorlib.engine.typing import Array

try:  # CuPy is optional: only present on machines with a CUDA GPU.
    import cupy as _cupy
except Exception as _error:  # pragma: no cover - depends on the machine
    _cupy = None
    _CUPY_IMPORT_ERROR: str = f"{type(_error).__name__}: {_error}"
else:  # pragma: no cover - depends on the machine
    _CUPY_IMPORT_ERROR = ""

__all__ = [
    "Backend",
    "array_module",
    "available_backends",
    "copy_to_backend",
    "cuda_device_count",
    "cupy_available",
    "device_of",
    "get_backend",
    "is_backend_array",
    "register_backend",
    "registered_backends",
    "require_backend",
    "synchronize_cuda",
    "to_device",
    "to_numpy",
    "unregister_backend",
    "writable",
]


@dataclass(frozen=True)
class Backend:
    """One registered device.

    ``to_device(array)`` returns a copy of ``array`` (from any backend) on this device with the
    same shape and dtype; ``available()`` says whether the device can be used now;
    ``why_unavailable()`` (optional) explains why not; ``array_types`` are the array classes
    this backend owns (``array_module`` and ``device_of`` look them up, subclasses included).
    """

    name: str
    array_module: ModuleType
    to_device: Callable[[Array], Array]
    available: Callable[[], bool]
    array_types: tuple[type, ...] = ()
    why_unavailable: Callable[[], str] | None = None


_BACKENDS: dict[str, Backend] = {}
_TYPE_TO_BACKEND: dict[type, Backend] = {}
_BUILT_IN = ("cpu", "cuda")


# ------------------------------------------------------------------------------- registry
def register_backend(name: str, array_module: ModuleType, to_device: Callable[[Array], Array],
                     available: Callable[[], bool], *, array_types: tuple[type, ...] = (),
                     why_unavailable: Callable[[], str] | None = None) -> Backend:
    """Add a device named ``name`` and return its ``Backend``.

    Raises TypeError for a non-string name, non-callable functions or non-type
    ``array_types``; ValueError for an empty or taken name, or an array type another backend
    already owns. Nothing is registered when it raises.
    """
    if not isinstance(name, str):
        raise TypeError(f"backend name must be a string, got {type(name).__name__}")
    if not name:
        raise ValueError("backend name must not be empty")
    if name in _BACKENDS:
        raise ValueError(f"a backend named '{name}' is already registered "
                         f"(registered: {registered_backends()})")
    if not isinstance(array_module, ModuleType):
        raise TypeError(f"array_module of backend '{name}' must be a module, "
                        f"got {type(array_module).__name__}")
    for what, function in (("to_device", to_device), ("available", available)):
        if not callable(function):
            raise TypeError(f"{what} of backend '{name}' must be callable")
    if why_unavailable is not None and not callable(why_unavailable):
        raise TypeError(f"why_unavailable of backend '{name}' must be callable or None")
    types = tuple(array_types)
    for array_type in types:
        if not isinstance(array_type, type):
            raise TypeError(f"array_types of backend '{name}' must be classes, "
                            f"got {array_type!r}")
        if array_type in _TYPE_TO_BACKEND:
            owner = _TYPE_TO_BACKEND[array_type].name
            raise ValueError(f"array type {array_type.__name__} already belongs to backend "
                             f"'{owner}'; give backend '{name}' its own array class")
    backend = Backend(name, array_module, to_device, available, types, why_unavailable)
    _BACKENDS[name] = backend
    for array_type in types:
        _TYPE_TO_BACKEND[array_type] = backend
    return backend


def unregister_backend(name: str) -> None:
    """Remove a backend added by ``register_backend`` (the built-in ones cannot be removed)."""
    if name in _BUILT_IN:
        raise ValueError(f"the built-in backend '{name}' cannot be unregistered")
    backend = get_backend(name)
    del _BACKENDS[name]
    for array_type in backend.array_types:
        _TYPE_TO_BACKEND.pop(array_type, None)


def registered_backends() -> list[str]:
    """Every registered device name, in registration order (available or not)."""
    return list(_BACKENDS)


def available_backends() -> list[str]:
    """The registered device names that can be used on this machine now."""
    return [name for name, backend in _BACKENDS.items() if _is_available(backend)]


def get_backend(name: str) -> Backend:
    """The backend registered as ``name``; ValueError listing the known names otherwise."""
    if not isinstance(name, str):
        raise TypeError(f"a device name must be a string such as 'cpu', "
                        f"got {type(name).__name__}")
    if name not in _BACKENDS:
        raise ValueError(f"unknown device '{name}'; known devices: {registered_backends()}")
    return _BACKENDS[name]


def require_backend(name: str, shown_as: str | None = None) -> Backend:
    """``get_backend(name)``, plus RuntimeError (saying why) when it is not available here;
    the error names the device ``shown_as`` (as the caller wrote it, ``'cuda:0'``) or
    ``name``."""
    backend = get_backend(name)
    if not _is_available(backend):
        reason = ""
        if backend.why_unavailable is not None:
            try:
                reason = backend.why_unavailable()
            except Exception as error:  # the explanation must not hide the real problem
                reason = f"{type(error).__name__}: {error}"
        raise RuntimeError(f"device '{shown_as or name}' is not available on this machine"
                           + (f": {reason}" if reason else "")
                           + f" (available devices: {available_backends()})")
    return backend


def _is_available(backend: Backend) -> bool:
    try:
        return bool(backend.available())
    except Exception:
        return False


def _backend_of(array: Any) -> Backend | None:
    """The backend owning ``type(array)`` or its nearest registered base class, if any."""
    array_type = type(array)
    backend = _TYPE_TO_BACKEND.get(array_type)
    if backend is not None:
        return backend
    for base in array_type.__mro__[1:]:
        backend = _TYPE_TO_BACKEND.get(base)
        if backend is not None:
            return backend
    return None


# ------------------------------------------------------------------------------- queries
def array_module(array: Any) -> ModuleType:
    """Return the array module (numpy, cupy, or a registered backend's) that owns ``array``.

    Anything no backend owns (Python numbers, lists, numpy scalars) gets numpy.
    """
    backend = _backend_of(array)
    return np if backend is None else backend.array_module


def device_of(array: Any) -> str:
    """The device name of the backend owning ``array``: ``"cuda"`` for CuPy arrays,
    a registered backend's name for its arrays, ``"cpu"`` for everything else."""
    backend = _backend_of(array)
    return "cpu" if backend is None else backend.name


def is_backend_array(array: Any) -> bool:
    """True when a registered backend owns ``array``'s type (numpy ndarrays included)."""
    return _backend_of(array) is not None


def to_device(array: Array, device: str) -> Array:
    """A copy of ``array`` on ``device`` (``array`` itself when it already lives there).

    Raises ValueError for an unknown device, RuntimeError for an unavailable one or when the
    backend's copy does not come back with the same shape and dtype on that device.
    """
    backend = require_backend(device)
    if device_of(array) == device:
        return array
    return copy_to_backend(backend, array)


def copy_to_backend(backend: Backend, array: Array) -> Array:
    """``backend.to_device(array)``, checked: RuntimeError unless the result lives on that
    backend with ``array``'s shape and dtype (availability is not re-checked here)."""
    moved = backend.to_device(array)
    if device_of(moved) != backend.name:
        raise RuntimeError(f"backend '{backend.name}' returned a {type(moved).__name__}, "
                           f"which lives on '{device_of(moved)}', not on '{backend.name}'")
    if tuple(moved.shape) != tuple(array.shape) or moved.dtype != array.dtype:
        raise RuntimeError(f"backend '{backend.name}' turned an array of shape "
                           f"{tuple(array.shape)} and dtype {array.dtype} into shape "
                           f"{tuple(moved.shape)} and dtype {moved.dtype}")
    return moved


# ------------------------------------------------------------------------------- built-ins
def cupy_available() -> bool:
    """True when CuPy imported and can see a GPU."""
    if _cupy is None:
        return False
    try:
        return _cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # pragma: no cover - depends on the machine
        return False


def cuda_device_count() -> int:
    """How many CUDA GPUs CuPy sees (0 without CuPy or a GPU)."""
    if not cupy_available():
        return 0
    return int(_cupy.cuda.runtime.getDeviceCount())  # pragma: no cover - GPU only


def synchronize_cuda() -> None:
    """Wait for the GPU's queued work to finish (CuPy's ``Device().synchronize()``); nothing
    without a usable GPU."""
    if cupy_available():  # pragma: no cover - GPU only
        _cupy.cuda.Device().synchronize()


def _cuda_unavailable_reason() -> str:
    if _cupy is None:
        return f"CuPy is not installed or failed to import ({_CUPY_IMPORT_ERROR})"
    try:  # pragma: no cover - depends on the machine
        count = _cupy.cuda.runtime.getDeviceCount()
    except Exception as error:  # pragma: no cover - depends on the machine
        return f"CuPy cannot reach a CUDA GPU ({type(error).__name__}: {error})"
    return f"CuPy sees {count} CUDA GPUs"  # pragma: no cover - depends on the machine


def writable(array: Array) -> bool:
    """Whether ``array`` can be written in place: False for a read-only numpy array (a
    memory map opened read-only, a view of one, ``flags.writeable = False``); True for
    arrays whose module has no such flag."""
    return bool(getattr(getattr(array, "flags", None), "writeable", True))


def to_numpy(array: Array) -> np.ndarray:
    """A plain numpy copy of ``array`` from any device (CuPy arrays are copied from the GPU);
    what ``state_dict`` and checkpoints store."""
    if _cupy is not None and isinstance(array, _cupy.ndarray):  # pragma: no cover - GPU only
        return array.get()
    return np.array(array, copy=True, subok=False)


def _to_cupy(array: Array) -> Array:  # pragma: no cover - GPU only
    """A CuPy copy of ``array`` (numpy arrays and subclasses are copied to the GPU)."""
    if isinstance(array, _cupy.ndarray):
        return array.copy()
    return _cupy.asarray(np.asarray(array))


register_backend("cpu", np, to_numpy, lambda: True, array_types=(np.ndarray,))
register_backend("cuda", _cupy if _cupy is not None else np, _to_cupy, cupy_available,
                 array_types=(_cupy.ndarray,) if _cupy is not None else (),
                 why_unavailable=_cuda_unavailable_reason)
