"""PyTorch's accelerator switches: ``tensorlib.cuda``, ``tensorlib.backends`` and the float32
matmul precision, so that programs written for a GPU (nanoGPT's ``train.py``, the "Let's build
GPT" lecture's ``gpt.py``) run with ``import tensorlib as torch`` on a CPU.

* ``tensorlib.cuda``: ``is_available()`` is True exactly when the "cuda" backend (CuPy with a
  GPU) can be used here; ``device_count()``; ``manual_seed(seed)`` and
  ``manual_seed_all(seed)`` check the seed as ``tensorlib.manual_seed`` does and change
  nothing, with or without a GPU: tensorlib draws every random number from the one splitmix64
  stream on the host and copies it to the device, so ``tensorlib.manual_seed`` alone decides
  the values on every device (a run on a GPU draws what a run on the CPU draws), and a
  program that seeds the CPU and the GPU with different seeds keeps its CPU stream, as in
  PyTorch; ``is_bf16_supported()`` is False (CuPy has no bfloat16; tensorlib's is a numpy dtype);
  ``synchronize()`` waits for the GPU's work with CuPy and does nothing without it.
* ``tensorlib.backends``: ``cuda.matmul.allow_tf32`` (the float32 matmul precision as a
  switch, as in PyTorch: True is 'high', False 'highest'),
  ``cuda.matmul.allow_fp16_reduced_precision_reduction`` and ``..._bf16_...``;
  ``cudnn.enabled``, ``cudnn.benchmark``, ``cudnn.deterministic``, ``cudnn.allow_tf32``; each
  takes True or False (TypeError otherwise; AttributeError for a name it does not have) and
  does nothing on numpy or CuPy, which use neither TF32 nor cuDNN. ``cudnn.is_available()``,
  ``mps.is_available()`` and ``mps.is_built()`` are False.
* ``set_float32_matmul_precision('highest' | 'high' | 'medium')`` is remembered and read
  back by ``get_float32_matmul_precision()``; numpy's and CuPy's float32 matmuls are the same
  at every setting. Another string is a ValueError (PyTorch warns and ignores it).

``import tensorlib.cuda`` and ``import tensorlib.backends`` work too: the namespaces are
entered in ``sys.modules`` under those names.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

from tensorlib.engine.backend import available_backends, cuda_device_count, synchronize_cuda
from tensorlib.engine.splitmix64 import check_seed

__all__ = ["backends", "cuda", "get_float32_matmul_precision", "set_float32_matmul_precision"]

_PRECISIONS = ("highest", "high", "medium")
_precision = ["highest"]  # PyTorch's default; a list so the functions below can change it


def set_float32_matmul_precision(precision: str) -> None:
    """Remember PyTorch's float32 matmul precision: 'highest', 'high' (TF32 allowed on a GPU)
    or 'medium' (bfloat16 allowed). numpy and CuPy compute float32 matmuls in float32 at every
    setting, so nothing changes but ``get_float32_matmul_precision()`` and
    ``backends.cuda.matmul.allow_tf32``. TypeError for a non-string, ValueError for another
    string (PyTorch warns and ignores it)."""
    if not isinstance(precision, str):
        raise TypeError(f"set_float32_matmul_precision expects a str, got {precision!r} of "
                        f"type {type(precision).__name__}")
    if precision not in _PRECISIONS:
        raise ValueError(f"float32 matmul precision must be 'highest', 'high' or 'medium', "
                         f"got {precision!r}")
    _precision[0] = precision


def get_float32_matmul_precision() -> str:
    """The precision last set by :func:`set_float32_matmul_precision` ('highest' at first)."""
    return _precision[0]


# ------------------------------------------------------------------------------ tensorlib.cuda
def is_available() -> bool:
    """True exactly when the "cuda" backend (CuPy with a GPU) can be used on this machine."""
    return "cuda" in available_backends()


def device_count() -> int:
    """How many CUDA GPUs CuPy sees: 0 without CuPy or a GPU."""
    return cuda_device_count()


def manual_seed(seed: int) -> None:
    """Check ``seed`` (an int in [0, 2^64), as ``tensorlib.manual_seed``) and change nothing:
    random numbers for a GPU come from the host's splitmix64 stream, which
    ``tensorlib.manual_seed`` seeds."""
    check_seed(seed)


def manual_seed_all(seed: int) -> None:
    """:func:`manual_seed` for every GPU: checks ``seed`` and changes nothing."""
    check_seed(seed)


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """False: CuPy has no bfloat16 (tensorlib's bfloat16 is ml_dtypes', a numpy dtype, for
    tensors on the CPU), so a program asking about the GPU picks float16 there."""
    return False


def synchronize(device: Any = None) -> None:
    """Wait for the GPU's queued work to finish (with CuPy); nothing on a CPU. (PyTorch
    without CUDA raises here; a CPU has no queue to wait for.)"""
    synchronize_cuda()


def _false() -> bool:
    return False


class _Switches(ModuleType):
    """A namespace of PyTorch's True/False switches: each takes a bool (TypeError otherwise)
    and does nothing here; a name the namespace does not have is an AttributeError (a typo
    such as ``benchmarks = True`` would otherwise be ignored silently)."""

    def __init__(self, name: str, doc: str, switches: dict[str, bool], **members: Any) -> None:
        super().__init__(name, doc)
        self.__dict__.update(members, **switches, _switch_names=frozenset(switches))

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self.__dict__ and not hasattr(type(self), name):
            switches = sorted(self.__dict__["_switch_names"] | _class_switches(type(self)))
            raise AttributeError(f"{self.__name__} has no attribute '{name}' (its switches: "
                                 f"{', '.join(switches)})")
        if name in self.__dict__["_switch_names"] or name in _class_switches(type(self)):
            _check_switch(f"{self.__name__}.{name}", value)
        super().__setattr__(name, value)


def _class_switches(cls: type) -> frozenset[str]:
    return frozenset(name for name, value in vars(cls).items() if isinstance(value, property))


def _check_switch(name: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {value!r}")


class _Matmul(_Switches):
    """``backends.cuda.matmul``: ``allow_tf32`` is the float32 matmul precision seen as a
    switch, as in PyTorch (True: 'high', False: 'highest')."""

    @property
    def allow_tf32(self) -> bool:
        return _precision[0] != "highest"

    @allow_tf32.setter
    def allow_tf32(self, value: bool) -> None:
        set_float32_matmul_precision("high" if value else "highest")


_NOTHING_HERE = "Kept for PyTorch's programs; does nothing on numpy or CuPy."


def _module(name: str, doc: str, **members: Any) -> ModuleType:
    module = ModuleType(name, doc)
    module.__dict__.update(members)
    return module


cuda = _module("tensorlib.cuda", "PyTorch's torch.cuda for tensorlib: CuPy with a GPU when "
               "there is one (tensorlib.engine.accelerators says what each function does).",
               is_available=is_available, device_count=device_count, manual_seed=manual_seed,
               manual_seed_all=manual_seed_all, is_bf16_supported=is_bf16_supported,
               synchronize=synchronize)
_matmul = _Matmul("tensorlib.backends.cuda.matmul", _NOTHING_HERE,
                  {"allow_fp16_reduced_precision_reduction": True,
                   "allow_bf16_reduced_precision_reduction": True})
_cudnn = _Switches("tensorlib.backends.cudnn", _NOTHING_HERE,
                   {"enabled": True, "benchmark": False, "deterministic": False,
                    "allow_tf32": True},
                   is_available=_false, version=lambda: None)
_mps = _Switches("tensorlib.backends.mps", "Apple's Metal: never available to tensorlib.", {},
                 is_available=_false, is_built=_false)
_backends_cuda = _Switches("tensorlib.backends.cuda", _NOTHING_HERE, {}, matmul=_matmul)
backends = _module("tensorlib.backends", "PyTorch's torch.backends switches. " + _NOTHING_HERE,
                   cuda=_backends_cuda, cudnn=_cudnn, mps=_mps)

# `import tensorlib.cuda` and `import tensorlib.backends.cudnn` find these namespaces.
for _namespace in (cuda, backends, _backends_cuda, _matmul, _cudnn, _mps):
    sys.modules.setdefault(_namespace.__name__, _namespace)
del _namespace
