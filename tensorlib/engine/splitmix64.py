"""A deterministic splitmix64 random number generator.

Every random number in tensorlib (weight initialization, dropout masks, shuffling,
sampling text) comes from one small generator whose whole state is a single unsigned
64-bit integer. That makes runs reproducible from a seed, and makes the state trivial to
save in a checkpoint and restore later.

One step of splitmix64 adds a fixed odd constant (the "golden gamma", 2^64 / phi) to the
state and scrambles the result with two xor-shift-multiply rounds::

    state = state + 0x9E3779B97F4A7C15            (mod 2^64)
    z = state
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9       (mod 2^64)
    z = (z ^ (z >> 27)) * 0x94D049BB133111EB       (mod 2^64)
    output = z ^ (z >> 31)

Because the k-th state after the current one is simply ``state + k * gamma``, a whole
array of draws can be produced at once with numpy's wrap-around ``uint64`` arithmetic,
without a Python loop. Array draws always equal the same number of successive scalar
draws, in C order.

Floating-point results follow the float32 arithmetic of the specification's C code:

* ``unit``: the top 24 bits of a draw, times 2^-24, so a float32 in [0, 1).
* ``uniform``: ``low + (high - low) * unit``, each operation rounded to float32.
* ``normal``: Box-Muller with two draws per sample (see :meth:`Rng.normal`).

``Generator`` is PyTorch's name for the same class, so ``Generator().manual_seed(42)`` reads
as it does in PyTorch and the result is an ``Rng``. ``tensorlib.engine.random`` has PyTorch's
random factories (``randn``, ``randint``, ``multinomial``, ...) on top of it.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any, overload

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from tensorlib.engine import devices, validation
from tensorlib.engine.typing import Array

# A ``size`` argument: one length or a sequence of lengths
Size = int | Sequence[int]

__all__ = ["Generator", "Rng", "check_seed", "default_rng", "manual_seed", "resolve_rng"]

_MASK64 = (1 << 64) - 1
_GOLDEN_GAMMA = 0x9E3779B97F4A7C15
_MIX1 = 0xBF58476D1CE4E5B9
_MIX2 = 0x94D049BB133111EB

# numpy versions of the constants, so that uint64 arrays never promote to another dtype.
_U64_GOLDEN_GAMMA = np.uint64(_GOLDEN_GAMMA)
_U64_MIX1 = np.uint64(_MIX1)
_U64_MIX2 = np.uint64(_MIX2)
_U64_LOW32 = np.uint64(0xFFFFFFFF)

_F32 = np.float32
# 1.0f / 16777216.0f == 2^-24, exact in float32.
_F32_INV_2_POW_24 = _F32(1.0 / 16777216.0)
# In C, the float literal 16777217.0f cannot be represented (float32 has a 24-bit
# significand) and rounds to the nearest even neighbour, 16777216.0f. The specified Box-Muller
# divisor is therefore 2^24, and we reproduce exactly that: np.float32(16777217.0) == 2^24.
_F32_BOX_MULLER_DIVISOR = _F32(16777217.0)
# 6.28318530717958647692f rounds to the float32 nearest 2*pi, 6.2831855f.
_F32_TWO_PI = _F32(6.28318530717958647692)
_F32_MINUS_TWO = _F32(-2.0)
_F32_ONE = _F32(1.0)
_F32_MAX = float(np.finfo(np.float32).max)


def _mix_scalar(z: int) -> int:
    """The splitmix64 output function on a Python int (the state after the increment)."""
    z = ((z ^ (z >> 30)) * _MIX1) & _MASK64
    z = ((z ^ (z >> 27)) * _MIX2) & _MASK64
    return z ^ (z >> 31)


def _mix_array_inplace(z: np.ndarray) -> np.ndarray:
    """The splitmix64 output function on a uint64 array, in place; products wrap mod 2^64."""
    scratch = np.empty_like(z)
    with np.errstate(over="ignore"):
        z ^= np.right_shift(z, np.uint64(30), out=scratch)
        z *= _U64_MIX1
        z ^= np.right_shift(z, np.uint64(27), out=scratch)
        z *= _U64_MIX2
        z ^= np.right_shift(z, np.uint64(31), out=scratch)
    return z


def _multiply_high_u64(a: np.ndarray, b: int) -> np.ndarray:
    """The upper 64 bits of the 128-bit products ``a * b`` (a: uint64 array, b < 2^64)."""
    b_low = np.uint64(b & 0xFFFFFFFF)
    b_high = np.uint64(b >> 32)
    a_low = a & _U64_LOW32
    a_high = a >> np.uint64(32)
    with np.errstate(over="ignore"):
        low_low = a_low * b_low
        high_low = a_high * b_low
        low_high = a_low * b_high
        high_high = a_high * b_high
        # Each term is < 2^64 and their sum is at most 2^64 - 1, so nothing is lost here.
        cross = (low_low >> np.uint64(32)) + (high_low & _U64_LOW32) + low_high
        return high_high + (high_low >> np.uint64(32)) + (cross >> np.uint64(32))


def _check_u64(value: Any, what: str) -> int:
    """Return ``value`` as a Python int in [0, 2^64), or raise naming ``what``."""
    value = validation.integer(value, what)
    if not 0 <= value <= _MASK64:
        raise ValueError(f"{what} must be in [0, 2**64), got {value}")
    return value


def check_seed(seed: Any) -> int:
    """``seed`` as a Python int in [0, 2^64), what ``manual_seed`` and ``Generator`` take
    (TypeError or ValueError naming it otherwise)."""
    return _check_u64(seed, "seed")


def _to_float32(value: float, what: str) -> np.float32:
    """Round a finite Python float to float32, refusing values that overflow float32."""
    if abs(value) > _F32_MAX:
        raise ValueError(f"{what}={value} is outside the float32 range")
    return _F32(value)


def normalize_shape(value: Any, what: str = "size") -> tuple[int, ...]:
    """Turn an int or a tuple/list of ints into a shape tuple, validating every entry."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{what} must be an int or a tuple of ints, got {value!r}")
    shape: tuple[int, ...]
    if isinstance(value, numbers.Integral):
        shape = (int(value),)
    elif isinstance(value, (tuple, list)):
        for dim in value:
            if isinstance(dim, (bool, np.bool_)) or not isinstance(dim, numbers.Integral):
                raise TypeError(f"{what} must be an int or a tuple of ints, got {value!r}")
        shape = tuple(int(dim) for dim in value)
    else:
        raise TypeError(f"{what} must be an int or a tuple of ints, got {value!r}")
    if any(dim < 0 for dim in shape):
        raise ValueError(f"{what} must not contain negative dimensions, got {value!r}")
    return shape


_HOST = devices.device("cpu")


def _on_the_host(device: Any) -> None:
    """Refuse a Generator device other than the CPU, where every generator draws (TypeError
    or ValueError naming it)."""
    target = devices.as_device(device, "Generator device")
    if target.type != "cpu":
        raise ValueError(f"a tensorlib Generator draws on the host, so its device must be "
                         f"'cpu', got '{target}'; random factories given device='"
                         f"{target.type}' draw from it and copy the values there")


def _unit_float32(draws: np.ndarray) -> np.ndarray:
    """float32 in [0, 1) from the top 24 bits of each draw: exact, like the C ``nn_rng_unit``."""
    return (draws >> np.uint64(40)).astype(np.float32) * _F32_INV_2_POW_24


class Rng:
    """A splitmix64 generator whose whole state is one unsigned 64-bit integer.

    ``Rng(seed)`` starts from ``state = seed`` (``Rng()`` from 0); ``manual_seed(seed)`` starts
    it again, as PyTorch's ``Generator.manual_seed`` does. Every method that takes ``size``
    returns a Python scalar when ``size`` is None, and otherwise an array of that shape whose
    values are exactly the values the same number of scalar calls would have returned, in C
    order. PyTorch's ``Generator(device='cpu')`` is taken (from seed 0; the first argument is
    the seed, so PyTorch's positional ``Generator('cpu')`` is a TypeError); the device must be
    the CPU, where every generator draws.

    >>> rng = Rng(0)
    >>> hex(rng.next_u64())
    '0xe220a8397b1dcdaf'
    """

    __slots__ = ("_state", "_initial_seed")

    def __init__(self, seed: int = 0, *, device: Any = None) -> None:
        if device is not None:
            _on_the_host(device)
        self._state = _check_u64(seed, "seed")
        self._initial_seed = self._state

    @property
    def device(self) -> devices.device:
        """Where the generator draws: always the CPU (``device(type='cpu')``); random
        factories with ``device='cuda'`` draw here and copy the values to the GPU."""
        return _HOST

    def manual_seed(self, seed: int) -> Rng:
        """Set the state to ``seed`` (an int in [0, 2^64)) and return this generator."""
        self._state = _check_u64(seed, "seed")
        self._initial_seed = self._state
        return self

    def initial_seed(self) -> int:
        """The seed last given to the constructor or to :meth:`manual_seed`."""
        return self._initial_seed

    # ----------------------------------------------------------------- state

    @property
    def state(self) -> int:
        """The current 64-bit state, an int in [0, 2^64); settable (e.g. from a checkpoint)."""
        return self._state

    @state.setter
    def state(self, value: int) -> None:
        self._state = _check_u64(value, "state")

    def copy(self) -> Rng:
        """An independent generator with the same state and initial seed (drawing from one
        leaves the other)."""
        twin = Rng(self._initial_seed)
        twin._state = self._state
        return twin

    def __repr__(self) -> str:
        return f"Rng(state=0x{self._state:016x})"

    # ------------------------------------------------------------------ bits

    def _draw_u64_array(self, count: int) -> np.ndarray:
        """The next ``count`` raw draws as a flat uint64 array; advances the state."""
        # The k-th next state is state + k * gamma (mod 2^64), k = 1..count.
        states = np.arange(1, count + 1, dtype=np.uint64)
        with np.errstate(over="ignore"):
            states *= _U64_GOLDEN_GAMMA
            states += np.uint64(self._state)
        self._state = (self._state + count * _GOLDEN_GAMMA) & _MASK64
        return _mix_array_inplace(states)

    @overload
    def next_u64(self, size: None = None) -> int: ...
    @overload
    def next_u64(self, size: Size) -> Array: ...

    def next_u64(self, size: Size | None = None) -> int | Array:
        """The next raw 64-bit output(s).

        Returns a Python int in [0, 2^64) when ``size`` is None, else a ``uint64`` array of
        shape ``size``.
        """
        if size is None:
            self._state = (self._state + _GOLDEN_GAMMA) & _MASK64
            return _mix_scalar(self._state)
        shape = normalize_shape(size)
        return self._draw_u64_array(int(np.prod(shape, dtype=np.int64))).reshape(shape)

    # ------------------------------------------------------------- uniform

    @overload
    def uniform(self, low: float = 0.0, high: float = 1.0, size: None = None,
                dtype: DTypeLike = np.float32) -> float: ...
    @overload
    def uniform(self, low: float = 0.0, high: float = 1.0, *, size: Size,
                dtype: DTypeLike = np.float32) -> Array: ...
    @overload
    def uniform(self, low: float, high: float, size: Size,
                dtype: DTypeLike = np.float32) -> Array: ...

    def uniform(self, low: float = 0.0, high: float = 1.0, size: Size | None = None,
                dtype: DTypeLike = np.float32) -> float | Array:
        """Uniform samples in [low, high), one draw each, computed in float32.

        Each sample is ``low + (high - low) * unit`` where ``unit`` is the top 24 bits of a
        draw times 2^-24, with every operation rounded to float32 as in the specification's C code.
        (Because of that rounding a sample can equal ``high`` when the float32 spacing near
        ``high`` is coarse.) Returns a Python float when ``size`` is None, else an array of
        ``dtype`` (float32 by default; other float dtypes receive the same float32 values).
        """
        low = validation.real(low, "low")
        high = validation.real(high, "high")
        if low > high:
            raise ValueError(f"uniform needs low <= high, got low={low}, high={high}")
        low32 = _to_float32(low, "low")
        high32 = _to_float32(high, "high")
        with np.errstate(over="ignore"):
            width32 = high32 - low32
        if not math.isfinite(width32):
            raise ValueError(f"uniform range high - low overflows float32 (low={low}, high={high})")
        if size is None:
            # numpy float32 scalar arithmetic rounds exactly like the array path below.
            unit = _F32(self.next_u64() >> 40) * _F32_INV_2_POW_24
            return float(low32 + width32 * unit)
        out_dtype, shape = validation.float_dtype(dtype), normalize_shape(size)
        count = int(np.prod(shape, dtype=np.int64))
        values = low32 + width32 * _unit_float32(self._draw_u64_array(count))
        return values.reshape(shape).astype(out_dtype, copy=False)

    # -------------------------------------------------------------- normal

    @overload
    def normal(self, mean: float = 0.0, std: float = 1.0, size: None = None,
               dtype: DTypeLike = np.float32) -> float: ...
    @overload
    def normal(self, mean: float = 0.0, std: float = 1.0, *, size: Size,
               dtype: DTypeLike = np.float32) -> Array: ...
    @overload
    def normal(self, mean: float, std: float, size: Size,
               dtype: DTypeLike = np.float32) -> Array: ...

    def normal(self, mean: float = 0.0, std: float = 1.0, size: Size | None = None,
               dtype: DTypeLike = np.float32) -> float | Array:
        """Gaussian samples by the Box-Muller transform, two draws per sample, in float32.

        For each sample, draw ``v1`` then ``v2`` and compute (every step rounded to float32)::

            u1 = (float(v1 >> 40) + 1) / 16777217.0f     # the divisor is 2^24 in float32
            u2 = unit(v2)
            sample = mean + std * sqrt(-2 log u1) * cos(2 pi u2)

        ``u1`` lies in [2^-24, 1], so the logarithm is always finite. An array of ``n``
        samples consumes the draws ``v1_0, v2_0, v1_1, v2_1, ...`` and equals ``n`` scalar
        calls. The logarithm and cosine are evaluated in float64 and rounded to float32 (the
        correctly rounded float32 result in all but astronomically rare cases), so results do
        not depend on which SIMD float32 kernels numpy picked on a given machine.
        """
        mean = validation.real(mean, "mean")
        std = validation.real(std, "std")
        if std < 0:
            raise ValueError(f"normal needs std >= 0, got std={std}")
        mean32 = _to_float32(mean, "mean")
        std32 = _to_float32(std, "std")
        shape: tuple[int, ...]
        if size is None:
            out_dtype, shape = np.dtype(np.float32), ()
        else:
            out_dtype, shape = validation.float_dtype(dtype), normalize_shape(size)
        count = int(np.prod(shape, dtype=np.int64))
        draws = self._draw_u64_array(2 * count).reshape(count, 2)  # (count, [v1, v2])
        top24 = (draws[:, 0] >> np.uint64(40)).astype(np.float32)
        u1 = (top24 + _F32_ONE) / _F32_BOX_MULLER_DIVISOR  # in [2^-24, 1]
        u2 = _unit_float32(draws[:, 1])
        log_u1 = np.log(u1.astype(np.float64)).astype(np.float32)
        radius = np.sqrt(_F32_MINUS_TWO * log_u1)
        angle = _F32_TWO_PI * u2
        cosine = np.cos(angle.astype(np.float64)).astype(np.float32)
        values = mean32 + std32 * radius * cosine
        if size is None:
            return float(values[0])
        return values.reshape(shape).astype(out_dtype, copy=False)

    # ------------------------------------------------------------ integers

    @overload
    def integers(self, low: int, high: int, size: None = None) -> int: ...
    @overload
    def integers(self, low: int, high: int, size: Size) -> Array: ...

    def integers(self, low: int, high: int, size: Size | None = None) -> int | Array:
        """Uniform integers in [low, high), one draw each; int64 (Python int when size is None).

        Uses Lemire's multiply-high mapping without rejection: the result is the upper 64 bits
        of ``draw * (high - low)``, plus ``low``. Each value then has probability within
        ``(high - low) / 2^64`` (relative) of exact uniformity — far below anything
        measurable for the ranges a model uses. ``low`` and ``high`` must fit in int64.
        """
        low = validation.integer(low, "low")
        high = validation.integer(high, "high")
        int64 = np.iinfo(np.int64)
        for name, value in (("low", low), ("high", high)):
            if not int64.min <= value <= int64.max:
                raise ValueError(f"integers needs {name} within int64, got {name}={value}")
        if high <= low:
            raise ValueError(f"integers needs high > low, got low={low}, high={high}")
        span = high - low
        if size is None:
            return low + ((self.next_u64() * span) >> 64)
        shape = normalize_shape(size)
        count = int(np.prod(shape, dtype=np.int64))
        offsets = _multiply_high_u64(self._draw_u64_array(count), span)
        with np.errstate(over="ignore"):
            values = (offsets + np.uint64(low & _MASK64)).view(np.int64)
        return values.reshape(shape)

    # --------------------------------------------------------- permutation

    def permutation(self, n: int) -> np.ndarray:
        """A random permutation of ``range(n)`` as an int64 array (n draws, stable argsort)."""
        n = validation.integer(n, "n")
        if n < 0:
            raise ValueError(f"permutation needs n >= 0, got n={n}")
        return np.argsort(self._draw_u64_array(n), kind="stable").astype(np.int64, copy=False)

    # --------------------------------------------------------- categorical

    def sample_categorical(self, probabilities: ArrayLike, size: Size | None = None) -> Any:
        """Sample indices from a categorical distribution, one draw per sample.

        ``probabilities`` is a 1-D vector of K non-negative weights, or a 2-D (B, K) array
        with one distribution per row. Weights need not sum to 1 (each row is normalised),
        but must be finite and have a positive sum. Indices with zero weight are never drawn.

        * 1-D, ``size`` None: a Python int.
        * 1-D, ``size`` given: an int64 array of that shape (samples in C order).
        * 2-D: an int64 array of shape (B,), one sample per row in row order; ``size`` must
          be None.

        Each sample takes one draw ``v``, forms ``u = (v >> 11) * 2^-53`` in [0, 1) (53
        bits, so small probabilities are not quantised away) and returns the first index
        whose cumulative weight exceeds ``u * total``.
        """
        weights = np.asarray(probabilities)
        if not validation.is_real(weights.dtype):
            raise TypeError(
                f"probabilities must be a real numeric array, got dtype {weights.dtype}"
            )
        if weights.ndim not in (1, 2):
            raise ValueError(
                f"probabilities must be 1-D (K,) or 2-D (B, K), got shape {weights.shape}"
            )
        if weights.shape[-1] == 0:
            raise ValueError(
                f"probabilities must have at least one category, got shape {weights.shape}"
            )
        weights = weights.astype(np.float64, copy=False)
        if not np.all(np.isfinite(weights)):
            raise ValueError("probabilities must be finite, got NaN or infinity")
        if np.any(weights < 0):
            raise ValueError(f"probabilities must be non-negative, got minimum {weights.min()}")
        cumulative = np.cumsum(weights, axis=-1)  # (K,) or (B, K)
        totals = cumulative[..., -1]
        if np.any(totals <= 0) or not np.all(np.isfinite(totals)):
            bad = np.flatnonzero(~(totals > 0) | ~np.isfinite(totals))
            where = "" if weights.ndim == 1 else f" (rows {bad[:10].tolist()})"
            raise ValueError(f"probabilities must have a finite, positive sum{where}")

        if weights.ndim == 2:
            if size is not None:
                raise ValueError(
                    "size must be None for 2-D probabilities: one sample is drawn per row"
                )
            rows = weights.shape[0]
            targets = self._unit_float64(rows) * totals  # (B,)
            indices = np.sum(cumulative <= targets[:, None], axis=1)  # (B,)
            return np.minimum(indices, weights.shape[1] - 1).astype(np.int64)

        shape = () if size is None else normalize_shape(size)
        count = int(np.prod(shape, dtype=np.int64))
        targets = self._unit_float64(count) * totals
        indices = np.searchsorted(cumulative, targets, side="right")
        indices = np.minimum(indices, weights.shape[0] - 1).astype(np.int64)
        if size is None:
            return int(indices[0])
        return indices.reshape(shape)

    def choice(self, probabilities: ArrayLike, size: Size | None = None) -> Any:
        """Same as :meth:`sample_categorical` (sample indices by their probabilities)."""
        return self.sample_categorical(probabilities, size)

    def _unit_float64(self, count: int) -> np.ndarray:
        """``count`` float64 values in [0, 1) from the top 53 bits of successive draws."""
        return (self._draw_u64_array(count) >> np.uint64(11)).astype(np.float64) * 2.0**-53


# PyTorch's name for the generator: one class, two names, so ``isinstance(g, Rng)`` holds for
# every ``Generator()`` and ``Generator().manual_seed(42)`` returns an ``Rng``.
Generator = Rng


# --------------------------------------------------------------------------- process default
_default = Rng(0)


def default_rng() -> Rng:
    """The process-wide generator layers use when they are given no ``rng`` (seed 0 at import).

    Passing an explicit ``Rng`` is clearer; this exists so ``Linear(3, 4)`` just works and is
    still deterministic.
    """
    return _default


def manual_seed(seed: int) -> Rng:
    """Reseed the process-wide default generator and return it."""
    return _default.manual_seed(seed)


def resolve_rng(rng: Any) -> Rng:
    """``rng`` itself, or the process-wide default generator when it is None."""
    if rng is None:
        return default_rng()
    if not isinstance(rng, Rng):
        raise TypeError(f"rng must be a tensorlib.Rng or None, got {type(rng).__name__}")
    return rng
