"""tensorlib: a small deep-learning engine on numpy, built up one layer at a time.

The scalar engine lives in :mod:`tensorlib.scalar`; everything else works on
:class:`Tensor`. Layers, losses and models are in :mod:`tensorlib.nn`. The ops are written as
their formulas; the speed tricks they call are in :mod:`tensorlib.kernels`, and
``reference_mode()`` runs everything on the plain paths instead.
"""

from tensorlib import nn, optim
from tensorlib.autograd import (
    Context,
    enable_grad,
    is_grad_enabled,
    no_grad,
    unbroadcast,
)
from tensorlib.functions import (
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
    mean,
    min,
    numel,
    permute,
    pow,
    relu,
    reshape,
    sigmoid,
    sign,
    softmax,
    sqrt,
    squeeze,
    std,
    sum,
    tanh,
    transpose,
    unbind,
    unsqueeze,
    var,
)
from tensorlib.gradcheck import GradcheckError, gradcheck, gradcheck_module
from tensorlib.kernels import is_reference_mode, reference_mode, set_reference_mode
from tensorlib.kernels import register_all as _register_kernels
from tensorlib.ops.function import Function, custom_gradient
from tensorlib.random import (
    multinomial,
    normal,
    rand,
    rand_like,
    randint,
    randn,
    randn_like,
    randperm,
)
from tensorlib.rng import Generator, Rng, default_rng, manual_seed
from tensorlib.tensor import (
    Tensor,
    allclose,
    arange,
    bool_,
    cat,
    concat,
    equal,
    float32,
    float64,
    full,
    int32,
    int64,
    isclose,
    linspace,
    maximum,
    minimum,
    ones,
    ones_like,
    split,
    stack,
    tensor,
    where,
    zeros,
    zeros_like,
)

__version__ = "0.1.0"

# The one thing importing tensorlib does on the side: every kernel takes its place (the op
# table, the engine's sole-owner check, Decoder.generate's cached step); reference_mode()
# sets them aside again.
_register_kernels()

# Submodules that load on first use, so `import tensorlib as tl` stays quick and `tl.viz`,
# `tl.data` and the rest still work as `torch.nn` does after `import torch`.
_LAZY_SUBMODULES = ("autograd", "backend", "baselines", "checkpoint", "data", "functions",
                    "interchange", "memory", "scalar", "tensor", "train", "viz")


def __getattr__(name: str) -> object:
    if name in _LAZY_SUBMODULES:
        import importlib

        return importlib.import_module(f"tensorlib.{name}")
    raise AttributeError(f"module 'tensorlib' has no attribute '{name}'")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY_SUBMODULES])


__all__ = [
    "Context", "Function", "Generator", "GradcheckError", "Rng", "Tensor", "abs", "all",
    "allclose", "amax", "amin", "any", "arange", "argmax", "argmin", "bool_", "cat", "clone",
    "concat", "custom_gradient", "default_rng", "enable_grad", "equal", "exp", "flatten",
    "float32", "float64", "full", "gather", "gradcheck", "gradcheck_module", "histogram",
    "int32", "int64",
    "is_grad_enabled", "is_reference_mode", "isclose", "linspace", "log", "log10", "log_softmax",
    "logsumexp", "manual_seed", "matmul", "max", "maximum", "mean", "min", "minimum",
    "multinomial", "nn", "no_grad", "normal", "numel", "ones", "ones_like", "optim", "permute",
    "pow", "rand", "rand_like", "randint", "randn", "randn_like", "randperm", "reference_mode",
    "relu", "reshape", "set_reference_mode", "sigmoid", "sign", "softmax", "split", "sqrt",
    "squeeze", "stack", "std", "sum", "tanh", "tensor", "transpose", "unbind", "unbroadcast",
    "unsqueeze", "var", "where", "zeros", "zeros_like"
]
