"""PyTorch's ``torch.nn.init``: functions that fill an existing tensor in place.

``normal_``, ``uniform_``, ``constant_``, ``zeros_``, ``ones_``, ``xavier_uniform_``,
``xavier_normal_``, ``kaiming_uniform_``, ``kaiming_normal_`` and ``trunc_normal_`` take
PyTorch's arguments, names and defaults, and are found as attributes of
:mod:`tensorlib.nn.init` (``tensorlib.nn.init.normal_(p, mean=0.0, std=0.02)``), beside the
specification's policies, which make new arrays. Each one:

* checks every argument before it draws (a call that raises leaves the tensor and the
  generator as they were): a Tensor (TypeError otherwise), a floating one for the random
  fills, a writable array, finite numbers, ``std >= 0``, ``a <= b``;
* writes with ``copy_`` or ``fill_`` under ``no_grad`` (the engine's in-place machinery, so the
  change is not recorded in the graph and the tensor's version bumps, as any in-place change
  does), keeps the tensor's dtype and returns the same tensor object;
* draws from ``generator`` (a :class:`~tensorlib.engine.splitmix64.Generator`) or, when it is
  None, from the process-wide generator that ``tensorlib.manual_seed`` seeds, exactly what
  the random factories of :mod:`tensorlib.engine.random` draw. With ``shape`` the tensor's
  shape and ``dtype`` float64 for a float64 tensor, float32 otherwise:

  - ``normal_(t, mean, std)``: ``tensorlib.normal(mean, std, shape, dtype=dtype)``, two draws
    per element; ``xavier_normal_`` and ``kaiming_normal_`` are ``normal_(t, 0, std)``;
  - ``uniform_(t, a, b)``: ``a + (b - a) * tensorlib.rand(shape, dtype=dtype)`` in ``dtype``,
    one draw per element; ``xavier_uniform_`` and ``kaiming_uniform_`` are
    ``uniform_(t, -bound, bound)``;
  - ``trunc_normal_``: one ``rand`` draw per element in float64, turned into the normal
    truncated to ``[a, b]`` by the inverse of its distribution function (below).

``trunc_normal_`` is PyTorch's method, made exact in the tails: PyTorch draws ``U`` between
``2Φ(a') - 1`` and ``2Φ(b') - 1`` and applies ``erfinv`` (``a' = (a - mean) / std``), which
loses every digit once ``Φ`` is close to 1, and warns when ``mean`` lies more than two std
from ``[a, b]``. Here the interval is reflected to the left of 0 when it lies to the right
(the normal is symmetric), and ``p = Φ(a') + U (Φ(b') - Φ(a'))`` is formed and inverted in
logarithms (scipy's ``log_ndtr`` and ``ndtri_exp``), so every draw lies in ``[a, b]`` with
the truncated normal's distribution, however far in the tail; there is nothing to warn of.
The values differ from PyTorch's, which uses another generator.

Fans are PyTorch's (``_calculate_fan_in_and_fan_out``): a weight has shape
``(out, in, *receptive_field)``, ``fan_in = in * receptive``, ``fan_out = out * receptive``;
a tensor with fewer than 2 dims has none (ValueError).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from tensorlib.engine import random as factories
from tensorlib.engine import validation
from tensorlib.engine.autograd import no_grad
from tensorlib.engine.backend import writable
from tensorlib.engine.splitmix64 import Generator, default_rng
from tensorlib.engine.tensor import Tensor

__all__ = [
    "calculate_gain",
    "constant_",
    "kaiming_normal_",
    "kaiming_uniform_",
    "normal_",
    "ones_",
    "trunc_normal_",
    "uniform_",
    "xavier_normal_",
    "xavier_uniform_",
    "zeros_",
]

# The nonlinearities whose gain is 1: linear maps (PyTorch's ``linear_fns``) and the sigmoid.
_GAIN_ONE = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
             "conv_transpose3d", "sigmoid")
_FAN_MODES = ("fan_in", "fan_out")


# ---------------------------------------------------------------------------------- fans, gain
def receptive_fans(dims: tuple[int, ...]) -> tuple[int, int]:
    """``(fan_in, fan_out)`` of a shape ``(out, in, *receptive_field)`` with 2 dims or more:
    ``in * receptive`` and ``out * receptive``. The one fan formula: PyTorch's here, and the
    specification's :func:`tensorlib.nn.init.fan_in_and_fan_out` for shapes of 2 dims or more."""
    receptive = math.prod(dims[2:])
    return dims[1] * receptive, dims[0] * receptive


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    """PyTorch's fans of a weight tensor (see the module docstring); ValueError below 2 dims."""
    tensor = _tensor(tensor, "_calculate_fan_in_and_fan_out")
    if tensor.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                         f"dimensions (got shape {tensor.shape})")
    return receptive_fans(tensor.shape)


def _calculate_correct_fan(tensor: Tensor, mode: str) -> int:
    """``fan_in`` or ``fan_out`` of ``tensor``, as ``mode`` says (PyTorch's helper)."""
    if not isinstance(mode, str) or mode.lower() not in _FAN_MODES:
        raise ValueError(f"Mode {mode!r} not supported, please use one of "
                         f"{', '.join(_FAN_MODES)}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode.lower() == "fan_in" else fan_out


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for ``nonlinearity``, PyTorch's values: 1 for ``linear``, the
    convolutions and ``sigmoid``; 5/3 for ``tanh``; √2 for ``relu``;
    √(2 / (1 + slope²)) for ``leaky_relu`` (``param`` the negative slope, 0.01 when None);
    3/4 for ``selu``."""
    if not isinstance(nonlinearity, str):
        raise TypeError(f"calculate_gain nonlinearity must be a name such as 'relu', got "
                        f"{type(nonlinearity).__name__}")
    if nonlinearity in _GAIN_ONE:
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (bool, np.bool_)) or not isinstance(param, (int, float)) \
                or not math.isfinite(param):
            raise ValueError(f"calculate_gain param (the negative_slope of leaky_relu) "
                             f"{param!r} is not a valid number")
        else:
            slope = param
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity!r}; calculate_gain knows "
                     f"{', '.join(_GAIN_ONE)}, tanh, relu, leaky_relu and selu")


# ---------------------------------------------------------------------------------- constants
def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill ``tensor`` with ``val``, in place, without recording a graph."""
    tensor = _writable(tensor, "constant_")
    with no_grad():
        tensor.fill_(val)
    return tensor


def zeros_(tensor: Tensor) -> Tensor:
    """Fill ``tensor`` with 0, in place, without recording a graph."""
    return constant_(_writable(tensor, "zeros_"), 0)


def ones_(tensor: Tensor) -> Tensor:
    """Fill ``tensor`` with 1, in place, without recording a graph."""
    return constant_(_writable(tensor, "ones_"), 1)


# ---------------------------------------------------------------------------------- random
def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0,
            generator: Generator | None = None) -> Tensor:
    """Fill ``tensor`` with samples of N(mean, std²), in place: ``tensorlib.normal(mean, std,
    tensor.shape)`` (two draws per element)."""
    tensor = _floating(tensor, "normal_")
    mean = validation.real(mean, "normal_ mean")
    std = validation.real(std, "normal_ std", low=0.0)
    return _normal(tensor, mean, std, _generator(generator, "normal_"))


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0,
             generator: Generator | None = None) -> Tensor:
    """Fill ``tensor`` with samples of U(a, b), in place: ``a + (b - a) * tensorlib.rand(
    tensor.shape)`` (one draw per element)."""
    tensor = _floating(tensor, "uniform_")
    a = validation.real(a, "uniform_ a")
    b = validation.real(b, "uniform_ b")
    if a > b:
        raise ValueError(f"uniform_ needs a <= b, got a={a}, b={b}")
    return _uniform(tensor, a, b, _generator(generator, "uniform_"))


def xavier_uniform_(tensor: Tensor, gain: float = 1.0,
                    generator: Generator | None = None) -> Tensor:
    """U(-bound, bound), ``bound = gain * √(6 / (fan_in + fan_out))`` (Glorot & Bengio)."""
    tensor, std, rng = _xavier(tensor, gain, generator, "xavier_uniform_")
    return _uniform(tensor, -math.sqrt(3.0) * std, math.sqrt(3.0) * std, rng)


def xavier_normal_(tensor: Tensor, gain: float = 1.0,
                   generator: Generator | None = None) -> Tensor:
    """N(0, std²), ``std = gain * √(2 / (fan_in + fan_out))`` (Glorot & Bengio)."""
    tensor, std, rng = _xavier(tensor, gain, generator, "xavier_normal_")
    return _normal(tensor, 0.0, std, rng)


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu",
                     generator: Generator | None = None) -> Tensor:
    """U(-bound, bound), ``bound = gain * √(3 / fan)`` (He et al.): ``gain`` is
    ``calculate_gain(nonlinearity, a)``, ``fan`` the ``fan_in`` or ``fan_out`` (``mode``).
    A tensor with no elements is left alone, with PyTorch's warning."""
    tensor, std, rng = _kaiming(tensor, a, mode, nonlinearity, generator, "kaiming_uniform_")
    if tensor.numel() == 0:
        return tensor
    return _uniform(tensor, -math.sqrt(3.0) * std, math.sqrt(3.0) * std, rng)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu",
                    generator: Generator | None = None) -> Tensor:
    """N(0, std²), ``std = gain / √fan`` (He et al.); arguments as ``kaiming_uniform_``."""
    tensor, std, rng = _kaiming(tensor, a, mode, nonlinearity, generator, "kaiming_normal_")
    if tensor.numel() == 0:
        return tensor
    return _normal(tensor, 0.0, std, rng)


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0,
                  b: float = 2.0, generator: Generator | None = None) -> Tensor:
    """Fill ``tensor`` with samples of N(mean, std²) truncated to ``[a, b]`` (``a`` and ``b``
    are values, not numbers of std, as in PyTorch), in place; one draw per element, turned
    into the truncated normal by the inverse of its distribution function, exact in the
    tails (the module docstring says how)."""
    tensor = _floating(tensor, "trunc_normal_")
    mean = validation.real(mean, "trunc_normal_ mean")
    std = validation.real(std, "trunc_normal_ std", low=0.0, low_open=True)
    a = validation.real(a, "trunc_normal_ a")
    b = validation.real(b, "trunc_normal_ b")
    if not a < b:
        raise ValueError(f"trunc_normal_ needs a < b, got a={a}, b={b}")
    rng = _generator(generator, "trunc_normal_")
    from scipy import special  # on first use: importing it is half of tensorlib's import

    units = factories.rand(tensor.shape, generator=rng, dtype=np.float64).numpy()
    low, high = (a - mean) / std, (b - mean) / std  # in units of std
    reflected = low > 0  # sample the mirror image [-high, -low], to the left of 0
    if reflected:
        low, high = -high, -low
    log_low, log_high = special.log_ndtr(low), special.log_ndtr(high)  # log Φ
    ratio = math.exp(log_low - log_high)  # Φ(low) / Φ(high), in [0, 1)
    with np.errstate(divide="ignore"):  # U = 0 and Φ(low) = 0: log 0, the bound itself
        log_p = log_high + np.log(ratio + units * (1.0 - ratio))  # log Φ(z), z in [low, high]
    standard = special.ndtri_exp(log_p)
    values = mean + std * (-standard if reflected else standard)
    return _write(tensor, np.clip(values, a, b))


# ---------------------------------------------------------------------------------- helpers
def _tensor(tensor: Any, function: str) -> Tensor:
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{function}: tensor must be a Tensor, got {type(tensor).__name__}")
    return tensor


def _writable(tensor: Any, function: str) -> Tensor:
    """``tensor``, checked to be a Tensor whose array can be written in place."""
    tensor = _tensor(tensor, function)
    if not writable(tensor.numpy()):
        raise ValueError(f"{function}: the tensor's array (shape {tensor.shape}) is read-only; "
                         "nothing was changed")
    return tensor


def _floating(tensor: Any, function: str) -> Tensor:
    """``tensor``, checked to be a writable floating-point Tensor (a random fill's target)."""
    tensor = _writable(tensor, function)
    if not validation.is_floating(tensor.dtype):
        raise TypeError(f"{function}: tensor must be floating point, got dtype {tensor.dtype}")
    return tensor


def _generator(generator: Any, function: str) -> Generator:
    """``generator``, or the process-wide generator (``tensorlib.manual_seed``) when None."""
    if generator is None:
        return default_rng()
    if not isinstance(generator, Generator):
        raise TypeError(f"{function}: generator must be a tensorlib Generator (Rng) or None, "
                        f"got {type(generator).__name__}")
    return generator


def _draw_dtype(tensor: Tensor) -> np.dtype:
    """The dtype samples are drawn in: float64 for a float64 tensor, float32 otherwise."""
    return np.dtype(np.float64 if tensor.dtype == np.float64 else np.float32)


def _normal(tensor: Tensor, mean: float, std: float, rng: Generator) -> Tensor:
    values = factories.normal(mean, std, tensor.shape, generator=rng, dtype=_draw_dtype(tensor))
    return _write(tensor, values.numpy())


def _uniform(tensor: Tensor, a: float, b: float, rng: Generator) -> Tensor:
    dtype = _draw_dtype(tensor)
    with np.errstate(over="ignore"):
        low, width = dtype.type(a), dtype.type(b - a)
    if not (np.isfinite(low) and np.isfinite(width)):
        raise ValueError(f"uniform bounds a={a}, b={b} do not fit in {dtype}")
    units = factories.rand(tensor.shape, generator=rng, dtype=dtype).numpy()
    return _write(tensor, low + width * units)


def _xavier(tensor: Any, gain: Any, generator: Any, function: str
            ) -> tuple[Tensor, float, Generator]:
    """The checked tensor, Glorot's std and the generator of ``xavier_*_``."""
    tensor = _floating(tensor, function)
    gain = validation.real(gain, f"{function} gain", low=0.0)
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    rng = _generator(generator, function)
    std = gain * math.sqrt(2.0 / (fan_in + fan_out)) if fan_in + fan_out else 0.0
    return tensor, std, rng


def _kaiming(tensor: Any, a: Any, mode: Any, nonlinearity: Any, generator: Any,
             function: str) -> tuple[Tensor, float, Generator]:
    """The checked tensor, He's std and the generator of ``kaiming_*_``."""
    tensor = _floating(tensor, function)
    gain = calculate_gain(nonlinearity, a)
    rng = _generator(generator, function)
    if tensor.numel() == 0:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
        return tensor, 0.0, rng
    fan = _calculate_correct_fan(tensor, mode)
    return tensor, gain / math.sqrt(fan), rng


def _write(tensor: Tensor, values: np.ndarray) -> Tensor:
    """Write ``values`` into ``tensor`` with ``copy_`` under ``no_grad``: not recorded, the
    version bumped, the dtype kept."""
    with no_grad():
        tensor.copy_(values)
    return tensor
