"""PyTorch's random factories, drawing from tensorlib's splitmix64 generator.

Each function takes the keyword ``generator``: a :class:`~tensorlib.engine.splitmix64.Generator`
(PyTorch's name for :class:`~tensorlib.engine.splitmix64.Rng`), or None for the process default
generator :func:`tensorlib.engine.splitmix64.default_rng`. Each consumes the draws listed below, in
the order listed, so a seeded run is reproduced exactly; and each checks all its arguments before
the first draw, so a call that raises leaves the generator's state as it was.

What each call draws, in terms of the documented :class:`~tensorlib.engine.splitmix64.Rng` methods
(``shape`` is the result's shape, ``n`` its number of elements, samples in C order):

* ``randn(*size)``: ``Rng.normal(0.0, 1.0, size=shape)``, two draws per element, so
  ``randn(n)`` equals ``n`` calls of ``Rng.normal()``.
* ``rand(*size)``: ``Rng.uniform(0.0, 1.0, size=shape)``, one draw per element.
* ``randint(low, high, size)``: ``Rng.integers(low, high, size=shape)``, one draw per element.
* ``randperm(n)``: ``Rng.permutation(n)``, ``n`` draws.
* ``normal(mean, std, ...)``: ``z = Rng.normal(0.0, 1.0, size=shape)`` (two draws per
  element), then ``mean + std * z`` with ``mean``, ``std`` and ``z`` in the result's dtype and
  each operation rounded to it; ``shape`` is ``size``, or the broadcast shape of the tensors.
* ``multinomial(input, num_samples, replacement)``: one draw per sample, row by row and,
  within a row, sample by sample: sample ``i`` of row ``b`` uses draw ``b * num_samples + i``.
  With replacement, row ``b`` equals ``Rng.sample_categorical(input[b], size=num_samples)``.
  Without replacement, each sample is ``Rng.sample_categorical(weights)`` of the row's weights
  with every category chosen before it in that row set to zero.
* ``randn_like(t)``, ``rand_like(t)``: ``randn(t.shape)``, ``rand(t.shape)``.

Each factory takes ``device=`` by name (None: the CPU; for ``*_like``, ``normal`` of tensors
and ``multinomial``, the tensors' device): the device is checked with the other arguments,
before the first draw, and the values, drawn on the host, are copied there. So a seeded run
draws the same values on every device.

The generator's floats are float32: a float64 ``randn``, ``rand`` or ``z`` holds the same
float32 values exactly (a float64 ``normal`` then forms ``mean + std * z`` in float64). The
values differ from PyTorch's, which uses another generator; shapes, dtypes and which calls
are refused follow PyTorch, except that every mean and std must be finite, ``randn`` and
``rand`` in float16 or bfloat16 round their float32 draws (``rand`` stays below 1), the other
float factories return float32 or float64 only, and ``multinomial`` without replacement refuses
more samples than a row has positive weights (PyTorch then draws zero-weight categories).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import DTypeLike

from tensorlib.engine import validation
from tensorlib.engine.backend import Backend, copy_to_backend, device_of, to_numpy
from tensorlib.engine.devices import backend_for
from tensorlib.engine.dtypes import is_low_precision
from tensorlib.engine.splitmix64 import Generator, default_rng
from tensorlib.engine.tensor import Tensor, float32, int64
from tensorlib.engine.validation import is_floating

__all__ = ["multinomial", "normal", "rand", "rand_like", "randint", "randn", "randn_like",
           "randperm"]

# The float dtypes the generator's float32 values are returned in.
_FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


# --------------------------------------------------------------------------------- checks
def _generator(generator: Any) -> Generator:
    """``generator``, or the process default generator when it is None."""
    if generator is None:
        return default_rng()
    if not isinstance(generator, Generator):
        raise TypeError(f"generator must be a tensorlib Generator (Rng) or None, got "
                        f"{generator!r} of type {type(generator).__name__}")
    return generator


def _size(size: tuple[Any, ...], function: str) -> tuple[int, ...]:
    """The shape given as ``f(2, 3)``, ``f((2, 3))`` or ``f([2, 3])``, checked."""
    if len(size) == 0:
        raise TypeError(f"{function}() needs a size, as in {function}(2, 3) or "
                        f"{function}((2, 3)); {function}(()) makes a 0-d tensor")
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    return validation.shape(size, f"{function} size")


def _size_sequence(size: Any, function: str) -> tuple[int, ...]:
    """A ``size`` argument that must be a tuple or list of ints (as PyTorch's randint has)."""
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"{function} size must be a tuple of ints, as in (3,) or (2, 3), got "
                        f"{size!r}")
    return validation.shape(size, f"{function} size")


def _float_dtype(dtype: Any, function: str, low_precision: bool = False) -> np.dtype:
    """``dtype`` as float32 or float64, the dtypes a float factory returns (or float16 and
    bfloat16 where ``low_precision``: drawn in float32, then rounded)."""
    result = validation.tensor_dtype(dtype, f"{function} dtype")
    if low_precision and is_low_precision(result):
        return result
    if result not in _FLOAT_DTYPES:
        allowed = "a floating-point dtype" if low_precision else "float32 or float64"
        raise TypeError(f"{function} dtype must be {allowed}, got {result}")
    return result


def _drawn_in(dtype: np.dtype) -> np.dtype:
    return float32 if is_low_precision(dtype) else dtype


def _requires_grad(requires_grad: Any, dtype: np.dtype) -> bool:
    """``requires_grad`` as a bool; only a float result can require a gradient."""
    flag = validation.boolean(requires_grad, "requires_grad")
    if flag and not is_floating(dtype):
        raise TypeError(f"only floating-point tensors can require gradients, got dtype {dtype}")
    return flag


def _placed(values: np.ndarray, backend: Backend, requires_grad: bool = False) -> Tensor:
    """A tensor of the host ``values`` copied onto ``backend``."""
    if backend.name != "cpu":
        values = copy_to_backend(backend, values)
    return Tensor(values, requires_grad=requires_grad)


def _float_array(value: Tensor, what: str) -> np.ndarray:
    """The values of a floating-point tensor as a numpy array."""
    if not is_floating(value.dtype):
        raise TypeError(f"{what} must be a floating-point tensor, got dtype {value.dtype}")
    return to_numpy(value._data)


def _in_dtype(values: Any, dtype: np.dtype, what: str) -> np.ndarray:
    """``values`` converted to ``dtype``; every value must be finite there."""
    with np.errstate(over="ignore"):
        converted = np.asarray(values, dtype=dtype)
    if not np.all(np.isfinite(converted)):
        raise ValueError(f"{what} must be finite in {dtype}, got {values!r}"
                         if np.ndim(values) == 0 else
                         f"{what} must be finite in {dtype}, got NaN, infinity or a value "
                         f"beyond the {dtype} range")
    return converted


# ------------------------------------------------------------------------- float factories
def randn(*size: int | Sequence[int], generator: Generator | None = None,
          dtype: DTypeLike = float32, device: Any = None,
          requires_grad: bool = False) -> Tensor:
    """Standard normal samples of shape ``size`` (``randn(2, 3)`` or ``randn((2, 3))``).

    The values are ``Rng.normal(0.0, 1.0, size=size)``: two draws per element, C order.
    """
    shape, dtype = _size(size, "randn"), _float_dtype(dtype, "randn", low_precision=True)
    requires_grad, backend = _requires_grad(requires_grad, dtype), backend_for(device)
    values = _generator(generator).normal(0.0, 1.0, size=shape, dtype=_drawn_in(dtype))
    return _placed(values.astype(dtype, copy=False), backend, requires_grad)


def rand(*size: int | Sequence[int], generator: Generator | None = None,
         dtype: DTypeLike = float32, device: Any = None,
         requires_grad: bool = False) -> Tensor:
    """Uniform samples in [0, 1) of shape ``size`` (``rand(2, 3)`` or ``rand((2, 3))``).

    The values are ``Rng.uniform(0.0, 1.0, size=size)``: one draw per element, C order.
    """
    shape, dtype = _size(size, "rand"), _float_dtype(dtype, "rand", low_precision=True)
    requires_grad, backend = _requires_grad(requires_grad, dtype), backend_for(device)
    values = _generator(generator).uniform(0.0, 1.0, size=shape, dtype=_drawn_in(dtype))
    if is_low_precision(dtype):  # rounded, but still below 1
        values = np.minimum(values.astype(dtype), np.nextafter(dtype.type(1), dtype.type(0)))
    return _placed(values, backend, requires_grad)


def randn_like(t: Tensor, *, generator: Generator | None = None, dtype: DTypeLike | None = None,
               device: Any = None, requires_grad: bool = False) -> Tensor:
    """``randn(t.shape)`` in ``t``'s dtype (or ``dtype``), on ``t``'s device (or
    ``device``)."""
    return _like(randn, t, generator, dtype, device, requires_grad)


def rand_like(t: Tensor, *, generator: Generator | None = None, dtype: DTypeLike | None = None,
              device: Any = None, requires_grad: bool = False) -> Tensor:
    """``rand(t.shape)`` in ``t``'s dtype (or ``dtype``), on ``t``'s device (or
    ``device``)."""
    return _like(rand, t, generator, dtype, device, requires_grad)


def _like(factory: Callable[..., Tensor], t: Any, generator: Generator | None,
          dtype: DTypeLike | None, device: Any, requires_grad: bool) -> Tensor:
    if not isinstance(t, Tensor):
        raise TypeError(f"{factory.__name__}_like needs a Tensor, got {type(t).__name__}")
    return factory(t.shape, generator=generator, dtype=t.dtype if dtype is None else dtype,
                   device=t.device if device is None else device, requires_grad=requires_grad)


def normal(mean: Tensor | float, std: Tensor | float = 1.0, size: Sequence[int] | None = None,
           *, generator: Generator | None = None, dtype: DTypeLike | None = None,
           device: Any = None) -> Tensor:
    """Normal samples ``mean + std * z``, ``z`` standard normal; PyTorch's three forms:

    * ``normal(mean, std, size)`` with numbers: a tensor of shape ``size`` (a tuple), float32
      unless ``dtype`` (float32 or float64) says otherwise;
    * ``normal(mean_tensor, std)`` and ``normal(mean_tensor, std_tensor)``: the broadcast shape,
      in ``mean``'s dtype;
    * ``normal(mean, std_tensor)``: ``std``'s shape and dtype.

    ``std`` must be >= 0 and both must be finite. ``z`` is ``Rng.normal(0.0, 1.0,
    size=shape)`` (two draws per element, C order); ``mean``, ``std`` and ``z`` are converted
    to the result's dtype and each operation is rounded to it. The result does not require a
    gradient (sampling is not differentiated); it lies on ``device``, or else on the device
    of ``mean`` (or ``std``) when it is a tensor, else on the CPU.
    """
    tensors = [value for value in (mean, std) if isinstance(value, Tensor)]
    backend = backend_for(tensors[0].device if device is None and tensors else device)
    if not tensors:
        mean_value = validation.real(mean, "normal mean")
        std_value = validation.real(std, "normal std", low=0.0)
        if size is None:
            raise TypeError("normal with a number mean and std needs a size, as in "
                            "normal(0.0, 1.0, (2, 3))")
        shape = _size_sequence(size, "normal")
        dtype = _float_dtype(float32 if dtype is None else dtype, "normal")
        mean_values = _in_dtype(mean_value, dtype, "normal mean")
        std_values = _in_dtype(std_value, dtype, "normal std")
    else:
        if size is not None or dtype is not None:
            raise TypeError("normal with a tensor mean or std takes its shape and dtype from "
                            "them: size and dtype must not be given")
        mean_array = _float_array(mean, "normal mean") if isinstance(mean, Tensor) \
            else validation.real(mean, "normal mean")
        std_array = _float_array(std, "normal std") if isinstance(std, Tensor) \
            else validation.real(std, "normal std", low=0.0)
        dtype = _float_dtype(tensors[0].dtype, "normal")  # mean's dtype when it is a tensor
        try:
            shape = np.broadcast_shapes(np.shape(mean_array), np.shape(std_array))
        except ValueError:
            raise ValueError(f"normal mean of shape {np.shape(mean_array)} and std of shape "
                             f"{np.shape(std_array)} do not broadcast together") from None
        mean_values = _in_dtype(mean_array, dtype, "normal mean")
        std_values = _in_dtype(std_array, dtype, "normal std")
        if np.any(std_values < 0):
            raise ValueError(f"normal std must be >= 0 everywhere, got minimum "
                             f"{std_values.min()}")
    standard = _generator(generator).normal(0.0, 1.0, size=shape, dtype=dtype)
    with np.errstate(over="ignore"):  # a huge std times z may round to infinity, as in PyTorch
        values = mean_values + std_values * standard
    return _placed(np.asarray(values, dtype=dtype).reshape(shape), backend)


# ----------------------------------------------------------------------- integer factories
def randint(*bounds_and_size: Any, low: int | None = None, high: int | None = None,
            size: Sequence[int] | None = None, generator: Generator | None = None,
            dtype: DTypeLike = int64, device: Any = None,
            requires_grad: bool = False) -> Tensor:
    """Uniform integers in [low, high): ``randint(high, size)`` or ``randint(low, high, size)``.

    ``size`` is a tuple (``randint(10, (3,))``); any argument may be given by name, as in
    ``randint(10, size=(3,))``; ``low`` is 0 unless given. The values are
    ``Rng.integers(low, high, size=size)``: one draw per element, C order. ``dtype`` (int64
    by default; any integer dtype, bool, float32 or float64) must hold ``low`` and ``high - 1``.
    """
    low, high, size = _randint_arguments(bounds_and_size, low, high, size)
    shape = _size_sequence(size, "randint")
    low = validation.integer(low, "randint low")
    high = validation.integer(high, "randint high")
    if high <= low:
        raise ValueError(f"randint needs low < high, got low={low}, high={high}")
    dtype = validation.tensor_dtype(dtype, "randint dtype")
    if dtype.kind in "biu":
        smallest, largest = (0, 1) if dtype.kind == "b" else \
            (int(np.iinfo(dtype).min), int(np.iinfo(dtype).max))
        if low < smallest or high - 1 > largest:
            raise ValueError(f"randint dtype {dtype} holds [{smallest}, {largest}], which does "
                             f"not contain low={low} and high - 1={high - 1}")
    elif dtype not in _FLOAT_DTYPES:
        raise TypeError(f"randint dtype must be an integer, bool, float32 or float64 dtype, "
                        f"got {dtype}")
    requires_grad, backend = _requires_grad(requires_grad, dtype), backend_for(device)
    values = _generator(generator).integers(low, high, size=shape)
    return _placed(values.astype(dtype), backend, requires_grad)


def _randint_arguments(positional: tuple[Any, ...], low: Any, high: Any,
                       size: Any) -> tuple[Any, Any, Any]:
    """Bind randint's arguments as PyTorch does: the positional ones fill ``(high, size)``, or
    else ``(low, high, size)``, from the left, without taking a slot already given by name."""
    named = {name: value for name, value in (("low", low), ("high", high), ("size", size))
             if value is not None}
    for form in (("high", "size"), ("low", "high", "size")):
        if len(positional) > len(form) or any(name in named for name in form[:len(positional)]):
            continue
        arguments = {**named, **dict(zip(form[:len(positional)], positional, strict=True))}
        if "high" in arguments and "size" in arguments:
            return arguments.get("low", 0), arguments["high"], arguments["size"]
    raise TypeError(f"randint takes randint(high, size) or randint(low, high, size), size a "
                    f"tuple; got {len(positional)} positional arguments and "
                    f"{', '.join(named) or 'none'} by name")


def randperm(n: int, *, generator: Generator | None = None, dtype: DTypeLike = int64,
             device: Any = None, requires_grad: bool = False) -> Tensor:
    """A random permutation of ``0, ..., n - 1``: ``Rng.permutation(n)``, ``n`` draws.

    ``dtype`` is int64 by default; any integer dtype, float32 or float64 that holds
    ``n - 1`` exactly.
    """
    n = validation.dimension(n, "randperm n", minimum=0)
    dtype = validation.tensor_dtype(dtype, "randperm dtype")
    if dtype.kind in "iu":
        largest = int(np.iinfo(dtype).max)
    elif dtype in _FLOAT_DTYPES:
        largest = 2 ** (np.finfo(dtype).nmant + 1)  # every integer up to it is exact
    else:
        raise TypeError(f"randperm dtype must be an integer, float32 or float64 dtype, got "
                        f"{dtype}")
    if n - 1 > largest:
        raise ValueError(f"randperm n={n} needs values up to {n - 1}, more than {dtype} holds "
                         f"exactly ({largest})")
    requires_grad, backend = _requires_grad(requires_grad, dtype), backend_for(device)
    values = _generator(generator).permutation(n)
    return _placed(values.astype(dtype), backend, requires_grad)


def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *,
                generator: Generator | None = None) -> Tensor:
    """Category indices drawn with probabilities proportional to the weights in ``input``.

    ``input`` is a floating-point tensor of non-negative, finite weights, (K,) or (B, K), each
    row with a positive sum (it need not be 1). The result is int64 of shape (num_samples,) or
    (B, num_samples), on ``input``'s device. Without replacement (the default) no index
    repeats within a row, and ``num_samples`` must not exceed the number of positive weights
    in any row.

    Draws: one per sample, row by row and sample by sample within a row. With replacement
    row ``b`` is ``Rng.sample_categorical(input[b], size=num_samples)``; without, each sample
    is ``Rng.sample_categorical`` of the row with the categories already chosen zeroed.
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"multinomial input must be a Tensor, got {type(input).__name__}")
    weights = _float_array(input, "multinomial input").astype(np.float64)
    if weights.ndim not in (1, 2) or weights.shape[-1] == 0:
        raise ValueError(f"multinomial input must be (K,) or (B, K) with K >= 1, got shape "
                         f"{weights.shape}")
    num_samples = validation.positive_integer(num_samples, "multinomial num_samples")
    replacement = validation.boolean(replacement, "multinomial replacement")
    rows = weights.reshape(-1, weights.shape[-1])  # (B, K)
    _check_weights(rows, num_samples, replacement)

    rng = _generator(generator)
    if replacement:
        samples = np.empty((rows.shape[0], num_samples), dtype=np.int64)  # (B, num_samples)
        for row, row_weights in enumerate(rows):  # row by row
            samples[row] = rng.sample_categorical(row_weights, size=num_samples)
    else:
        samples = _without_replacement(rng, rows, num_samples)
    return _placed(samples.reshape(weights.shape[:-1] + (num_samples,)),
                   backend_for(device_of(input._data)))


def _without_replacement(rng: Generator, rows: np.ndarray, num_samples: int) -> np.ndarray:
    """(B, num_samples) indices, sample ``i`` of row ``b`` drawn by draw ``b * num_samples + i``
    from the row's weights with its earlier picks zeroed, exactly as
    ``Rng.sample_categorical(remaining_weights)`` draws: the first index whose cumulative
    weight exceeds ``u * total``, ``u = (draw >> 11) * 2^-53``. All rows take a step at once."""
    draws = rng.next_u64((rows.shape[0], num_samples))  # (B, num_samples), row by row
    units = (draws >> np.uint64(11)).astype(np.float64) * 2.0**-53
    remaining = rows.copy()  # (B, K)
    every_row = np.arange(rows.shape[0])
    samples = np.empty((rows.shape[0], num_samples), dtype=np.int64)
    for sample in range(num_samples):
        cumulative = np.cumsum(remaining, axis=1)  # (B, K)
        targets = units[:, sample] * cumulative[:, -1]  # (B,)
        chosen = np.sum(cumulative <= targets[:, None], axis=1)  # (B,)
        samples[:, sample] = np.minimum(chosen, rows.shape[1] - 1)
        remaining[every_row, samples[:, sample]] = 0.0
    return samples


def _check_weights(rows: np.ndarray, num_samples: int, replacement: bool) -> None:
    """Refuse (B, K) weights that ``Rng.sample_categorical`` cannot draw ``num_samples`` from,
    naming the rows."""
    def rows_where(bad: np.ndarray) -> str:
        indices = np.flatnonzero(bad)
        return f"row{'s' if indices.size > 1 else ''} {indices[:10].tolist()}"

    if not np.all(np.isfinite(rows)):
        raise ValueError(f"multinomial weights must be finite, got NaN or infinity in "
                         f"{rows_where(~np.all(np.isfinite(rows), axis=1))}")
    if np.any(rows < 0):
        raise ValueError(f"multinomial weights must be non-negative, got minimum {rows.min()} "
                         f"in {rows_where(np.any(rows < 0, axis=1))}")
    with np.errstate(over="ignore"):  # the sum as sample_categorical forms it
        totals = np.cumsum(rows, axis=1)[:, -1]  # (B,)
    if not np.all((totals > 0) & np.isfinite(totals)):
        raise ValueError(f"multinomial weights must have a positive, finite sum in each row, "
                         f"not in {rows_where(~((totals > 0) & np.isfinite(totals)))}")
    if not replacement:
        positive = np.count_nonzero(rows > 0, axis=1)  # (B,)
        if np.any(positive < num_samples):
            raise ValueError(f"multinomial cannot draw num_samples={num_samples} without "
                             f"replacement from {rows_where(positive < num_samples)} with "
                             f"only {positive.min()} positive weight"
                             f"{'s' if positive.min() != 1 else ''}")

