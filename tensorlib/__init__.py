"""tensorlib: a small deep-learning engine on numpy, built up one layer at a time.

Its folders are its layers, bottom to top, each importing only from those below it:
:mod:`tensorlib.scalar` (scalar autograd), :mod:`tensorlib.engine` (the Tensor, autograd, the
ops, the kernels), :mod:`tensorlib.data`, :mod:`tensorlib.nn` (modules and layers),
:mod:`tensorlib.optim`, :mod:`tensorlib.amp` (mixed precision), :mod:`tensorlib.saving`,
:mod:`tensorlib.models`, :mod:`tensorlib.adapters` (LoRA, NF4), :mod:`tensorlib.training`,
:mod:`tensorlib.viz` and :mod:`tensorlib.course` (the workbook's checks); ``python -m
tensorlib`` is the command line. This namespace holds PyTorch's top-level names
(``tensorlib.tensor``, ``tensorlib.randn``, ``tensorlib.no_grad``, ...). The ops are written as
their formulas; the speed tricks beside them are switched off by ``reference_mode()``, which
runs everything on the plain paths.
"""

import importlib
import importlib.abc
import importlib.machinery
import sys
from types import ModuleType
from typing import TYPE_CHECKING

from tensorlib import amp, nn, optim
from tensorlib.engine.accelerators import (
    backends,
    cuda,
    get_float32_matmul_precision,
    set_float32_matmul_precision,
)
from tensorlib.engine.autocast import autocast, get_autocast_dtype, is_autocast_enabled
from tensorlib.engine.autograd import (
    Context,
    enable_grad,
    is_grad_enabled,
    no_grad,
    unbroadcast,
)
from tensorlib.engine.devices import device
from tensorlib.engine.dtypes import (
    bfloat16,
    double,
    finfo,
    float16,
    half,
    int8,
    int16,
    long,
    promote_types,
    short,
    uint8,
)

# torch.bool, torch.float and torch.int; left out of __all__, so that `from tensorlib import *`
# leaves Python's bool, float and int alone
from tensorlib.engine.dtypes import bool as bool  # noqa: A004
from tensorlib.engine.dtypes import float as float  # noqa: A004
from tensorlib.engine.dtypes import int as int  # noqa: A004
from tensorlib.engine.factories import (
    allclose,
    arange,
    cat,
    concat,
    empty,
    empty_like,
    equal,
    from_numpy,
    full,
    full_like,
    isclose,
    linspace,
    ones,
    ones_like,
    stack,
    tensor,
    zeros,
    zeros_like,
)
from tensorlib.engine.function_forms import (
    abs,
    all,
    amax,
    amin,
    any,
    argmax,
    argmin,
    clone,
    exp,
    flatten,
    gather,
    histogram,
    log,
    log10,
    log_softmax,
    logsumexp,
    matmul,
    max,
    maximum,
    mean,
    min,
    minimum,
    numel,
    permute,
    pow,
    relu,
    reshape,
    sigmoid,
    sign,
    softmax,
    split,
    sqrt,
    squeeze,
    std,
    sum,
    t,
    tanh,
    topk,
    transpose,
    tril,
    triu,
    unbind,
    unsqueeze,
    var,
    where,
)
from tensorlib.engine.gradcheck import GradcheckError, gradcheck, gradcheck_module
from tensorlib.engine.kernels import is_reference_mode, reference_mode, set_reference_mode
from tensorlib.engine.kernels import register_all as _register_engine_kernels
from tensorlib.engine.kernels.threads import get_num_threads, set_num_threads
from tensorlib.engine.ops.function import Function, custom_gradient
from tensorlib.engine.random import (
    multinomial,
    normal,
    rand,
    rand_like,
    randint,
    randn,
    randn_like,
    randperm,
)
from tensorlib.engine.splitmix64 import Generator, Rng, default_rng, manual_seed
from tensorlib.engine.tensor import Tensor, bool_, float32, float64, int32, int64
from tensorlib.models import decoder_step as _decoder_step
from tensorlib.optim import adamw_flat as _adamw_flat

if TYPE_CHECKING:  # at run time they load on first use: _LAZY_NAMES below
    from tensorlib.saving import load, save

__version__ = "0.1.0"

# The one thing importing tensorlib does on the side: every kernel takes its place (the op
# table, the engine's sole-owner check, AdamW's flat update, Decoder.generate's cached step);
# reference_mode() sets them aside again.
_register_engine_kernels()
_adamw_flat.register()
_decoder_step.register()

# Folders that load on first use, so `import tensorlib as tl` stays quick and `tl.viz`,
# `tl.data` and the rest still work as `torch.nn` does after `import torch`.
_LAZY_SUBMODULES = ("adapters", "course", "data", "engine", "models", "saving", "scalar",
                    "training", "viz")
# Names of those folders given here too (torch.save, torch.load), loaded with them on first use.
_LAZY_NAMES = {"load": "saving", "save": "saving"}

# Where each module of the earlier flat layout lives now. Its old path still imports (the
# module itself, under its new name), so that programs and notebooks written against it run;
# docs/layout.md lists them.
FORMER_PATHS = {
    "autograd": "engine.autograd", "backend": "engine.backend",
    "baselines": "models.bigram_counts", "checkpoint": "saving.checkpoint",
    "checks": "course.checks", "exercises": "course.exercises", "files": "engine.files",
    "functions": "engine.function_forms", "gradcheck": "engine.gradcheck",
    "interchange": "saving.safetensors", "kernels": "engine.kernels",
    "ladder": "training.ladder", "memory": "engine.memory", "metrics": "training.metrics",
    "names_run": "command_line.names_gpt", "nn.lora": "adapters.lora", "nn.programmed":
    "models.programmed", "nn.quant": "adapters.nf4", "nn.surgery": "adapters.layer_replacement",
    "nn.transformer": "models.decoder", "nn.wavenet": "models.wavenet", "ops": "engine.ops",
    "random": "engine.random", "rng": "engine.splitmix64", "saving.files": "engine.files",
    "signals": "training.layer_statistics",
    "tensor": "engine.tensor", "train": "training.loop", "validation": "engine.validation",
    "workbook": "course.worked_pieces",
}


def _new_path(fullname: str) -> str:
    """The module's path now, for a former path or a module inside a former package; else ''
    (for every module outside tensorlib too: a program's own ``kernels`` or ``metrics``)."""
    if not fullname.startswith("tensorlib."):
        return ""
    former = fullname.removeprefix("tensorlib.")
    for old, new in FORMER_PATHS.items():
        if former == old or former.startswith(old + "."):
            return f"tensorlib.{new}{former[len(old):]}"
    return ""


class _FormerPathFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports ``tensorlib.<former path>`` as the module that now lives at its new path."""

    def find_spec(self, fullname: str, path: object, target: object = None
                  ) -> importlib.machinery.ModuleSpec | None:
        return importlib.machinery.ModuleSpec(fullname, self) if _new_path(fullname) else None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(_new_path(spec.name))
        self._own_spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # The module ran when it was imported under its new path; the import system has just
        # given it the former path's spec, and it gets its own back.
        module.__spec__ = self._own_spec


# The modules imported above are entered under their former paths at once. That keeps the
# names this namespace binds to functions (tensorlib.tensor, tensorlib.gradcheck) functions:
# the import system sets a package's attribute to a submodule only when it loads one.
for _former, _new in FORMER_PATHS.items():
    if f"tensorlib.{_new}" in sys.modules:
        sys.modules[f"tensorlib.{_former}"] = sys.modules[f"tensorlib.{_new}"]
del _former, _new
sys.meta_path.insert(0, _FormerPathFinder())  # before the path finder: a former package's
# modules, too, are the ones at their new path, never a second copy


def __getattr__(name: str) -> object:
    if name in _LAZY_SUBMODULES or name in FORMER_PATHS:
        return importlib.import_module(f"tensorlib.{name}")
    if name in _LAZY_NAMES:
        return getattr(importlib.import_module(f"tensorlib.{_LAZY_NAMES[name]}"), name)
    raise AttributeError(f"module 'tensorlib' has no attribute '{name}'")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY_SUBMODULES, *_LAZY_NAMES])


__all__ = [
    "Context", "Function", "Generator", "GradcheckError", "Rng", "Tensor", "abs", "all",
    "allclose", "amax", "amin", "amp", "any", "arange", "argmax", "argmin", "autocast",
    "backends", "bfloat16", "bool_", "cat", "clone", "concat", "cuda", "custom_gradient",
    "default_rng", "device", "double", "empty", "empty_like", "enable_grad", "equal", "exp",
    "finfo", "flatten", "float16", "float32", "float64", "from_numpy", "full", "full_like",
    "gather", "get_autocast_dtype", "get_float32_matmul_precision", "get_num_threads",
    "gradcheck",
    "gradcheck_module", "half", "histogram", "int16", "int32", "int64", "int8",
    "is_autocast_enabled", "is_grad_enabled", "is_reference_mode", "isclose", "linspace",
    "load", "log", "log10", "log_softmax", "logsumexp", "long", "manual_seed", "matmul", "max",
    "maximum", "mean", "min", "minimum", "multinomial", "nn", "no_grad", "normal", "numel",
    "ones", "ones_like", "optim", "permute", "pow", "promote_types", "rand", "rand_like",
    "randint", "randn", "randn_like", "randperm", "reference_mode", "relu", "reshape", "save",
    "set_float32_matmul_precision", "set_num_threads", "set_reference_mode", "short",
    "sigmoid", "sign",
    "softmax", "split", "sqrt", "squeeze", "stack", "std", "sum", "t", "tanh", "tensor",
    "topk", "transpose", "tril", "triu", "uint8", "unbind", "unbroadcast", "unsqueeze", "var",
    "where", "zeros", "zeros_like"
]
