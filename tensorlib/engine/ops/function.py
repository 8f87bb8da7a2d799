"""How an op joins the graph: the ``Function`` base class every op subclasses.

An op is a ``Function`` subclass with two static methods on raw arrays::

    class Square(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 2 * x * grad

``Square.apply(tensor)`` runs ``forward`` on the tensor's array and, when a gradient is
wanted, makes the ``ctx`` the graph node of the result (see :mod:`tensorlib.engine.autograd` for the
engine that walks the nodes). ``custom_gradient`` joins an array computed anywhere else.

The one seam of the package: ops return Tensors, and Tensor's methods (``x + y``, ``x.sum()``,
written in :mod:`tensorlib.engine.methods`) call the ops. So this module (and ``ops.shape``,
which reads tensors in an index) reach the class through its module, at call time.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from tensorlib.engine import autocast, autograd, kernel_table
from tensorlib.engine import tensor as tensor_module  # ops make Tensors: the one seam
from tensorlib.engine.autograd import Context
from tensorlib.engine.backend import device_of
from tensorlib.engine.dtypes import is_low_precision
from tensorlib.engine.ops import low_precision
from tensorlib.engine.typing import Array
from tensorlib.engine.validation import is_floating

if TYPE_CHECKING:
    from tensorlib.engine.tensor import Tensor

__all__ = ["Function", "custom_gradient", "register_kernel"]


class Function:
    """Base class of every differentiable op. Subclass it to add an op.

    ``forward(ctx, *arrays, **params)`` returns one array. ``backward(ctx, grad)`` returns
    one gradient per array input (a single array when there is one input), or None where an
    input needs no gradient; ``ctx.needs_input_grad`` says which are wanted. It is set before
    ``forward`` runs (all False under ``no_grad``), so a forward may skip saving, or computing,
    what no backward will need. An optional input may be None (a layer without a bias): the
    forward receives None for it, and it wants no gradient.
    """

    op_name: str | None = None
    # What autocast does to the op's floating inputs: "lower", "float32" or nothing
    # (:mod:`tensorlib.engine.autocast`).
    autocast: str | None = None
    # How the op meets float16 and bfloat16 arrays: "float32" computes in float32 and rounds
    # its output (and its gradients) once; "first" too, rounding the output to the first
    # input's dtype; "any" runs the op's own code on them (the ops that only move or pick
    # values, and views, which must stay views). :mod:`tensorlib.engine.ops.low_precision`.
    low_precision: str = "float32"

    # ``*arrays: Any, **params: Any``: each op declares its own arrays and parameters
    @staticmethod
    def forward(ctx: Context, *arrays: Any, **params: Any) -> Array:
        raise NotImplementedError

    @staticmethod
    def backward(ctx: Context, grad: Array) -> Array | tuple[Array | None, ...]:
        raise NotImplementedError

    @classmethod
    def autocast_inputs(cls, *inputs: Tensor | None) -> tuple[Any, ...]:
        """The inputs as an enclosing ``autocast`` block casts them for this op (as given
        when none is on, or the op has no policy). ``apply`` calls it; a function that checks
        its arguments' dtypes before ``apply`` calls it first."""
        if cls.autocast is None or not autocast.active():
            return inputs
        return autocast.cast_inputs(cls.autocast, inputs)

    @classmethod
    def apply(cls, *inputs: Tensor | None, **params: Any) -> Tensor:
        """Run ``forward`` on the inputs' arrays and, if any input needs a gradient, record
        a graph node on the output. A kernel registered for this op (see
        :func:`register_kernel`) runs in its place, forward and backward, unless reference
        mode is on."""
        if cls.autocast is not None:  # the attribute first: most ops have no policy
            inputs = cls.autocast_inputs(*inputs)
        arrays = _arrays_of(cls, inputs)
        needs = tuple([t is not None and t._requires_grad for t in inputs]) \
            if autograd.is_grad_enabled() else (False,) * len(inputs)
        rounded_to = given = None
        for array in arrays:  # a float16 or bfloat16 input: the op runs on float32 copies
            if array is not None and array.dtype.itemsize == 2 and is_low_precision(array.dtype):
                rounded_to = low_precision.rounding_target(cls.low_precision, arrays)
                break
        if rounded_to is not None:
            given, arrays = arrays, [low_precision.widened(array) for array in arrays]
        function = _implementation(cls, arrays, params)
        if rounded_to is not None:
            function = low_precision.rounding_twin(function)
        # No gradient wanted (no_grad, or constant inputs): a throwaway ctx that saves nothing
        ctx = Context(function) if any(needs) else _Unrecorded(function)
        ctx.needs_input_grad = needs
        if rounded_to is not None:
            ctx.rounded_to, ctx.given = rounded_to, given
        output = function.forward(ctx, *arrays, **params) if autograd.active_profile() is None \
            else _timed_forward(ctx, arrays, params)
        if isinstance(output, np.generic):  # numpy's answer for a 0-d result: make it an array
            output = _zero_dimensional(ctx, output)
        result = tensor_module.Tensor._from_array(output)
        _share_version_with_viewed_input(result, inputs)
        if ctx.__class__ is Context and is_floating(output.dtype):  # integer results: none
            _record_node(ctx, inputs, output, result)
        return result


# -------------------------------------------------------------------- kernels in place of ops
def register_kernel(op: type[Function], kernel: type[Function]) -> None:
    """Let ``kernel`` run in place of ``op`` (in the kernel table,
    :mod:`tensorlib.engine.kernel_table`): a subclass of ``op`` whose ``forward`` and ``backward``
    compute what the op's do, faster. If the kernel has a static method
    ``applies(*arrays, **params)``, it stands in only for the calls where that is True."""
    # The op's own check (a Function subclass) is the table's; the kernel's is this layer's.
    if isinstance(op, type) and issubclass(op, Function) and not (
            isinstance(kernel, type) and issubclass(kernel, op) and kernel is not op):
        raise TypeError(f"register_kernel: the kernel for {op.__name__} must be a subclass "
                        f"of it, got {kernel!r}")
    kernel_table.register(op, kernel, Function, "register_kernel")
    kernel.op_name = autograd.node_name(op)  # graphs, profiles and errors name the op


def _implementation(op: type[Function], arrays: Sequence[Array | None],
                    params: dict[str, Any]) -> type[Function]:
    """The class whose forward and backward run for this call: ``op``'s kernel, or ``op``."""
    kernel = kernel_table.kernel_for(op)
    if kernel is None:
        return op
    applies = getattr(kernel, "applies", None)
    return kernel if applies is None or applies(*arrays, **params) else op


if TYPE_CHECKING:  # a forward takes an _Unrecorded as its ctx: to the type checker, a Context
    _UnrecordedBase = Context
else:
    _UnrecordedBase = object


class _Unrecorded(_UnrecordedBase):
    """The ``ctx`` of an op call that no gradient will flow through (under ``no_grad``, or
    when no input requires grad): the forward may set attributes on it as usual, but
    ``save_for_backward`` keeps nothing, and it becomes no graph node. It is dropped as soon
    as the forward returns."""

    def __init__(self, function: type[Function]):
        self.function = function
        self.name: str = autograd.node_name(function)

    def save_for_backward(self, *arrays: Array | None) -> None:
        """Nothing to save: no backward will run."""


def _arrays_of(function: type[Function], inputs: tuple[Any, ...]) -> list[Array | None]:
    arrays: list[Array | None] = []
    for position, value in enumerate(inputs):
        if value is not None and not isinstance(value, tensor_module.Tensor):
            raise TypeError(f"{function.__name__}.apply: input {position} is a "
                            f"{type(value).__name__}, expected a Tensor or None")
        arrays.append(None if value is None else value._data)
    return arrays


def _zero_dimensional(ctx: Context, scalar: np.generic) -> Array:
    """``scalar`` as a 0-d array, which the op's saved arrays then hold in its place (so
    that an in-place change of the result is seen by the version check)."""
    array = np.asarray(scalar)
    saved = getattr(ctx, "saved", None)
    if saved:
        ctx.saved = tuple(array if item is scalar else item for item in saved)
    return array


def _timed_forward(ctx: Context, arrays: list[Array | None], params: dict[str, Any]) -> Array:
    start = time.perf_counter()
    output = ctx.function.forward(ctx, *arrays, **params)
    profile = autograd.active_profile()
    assert profile is not None  # apply times a forward only while a profile is on
    profile.add(ctx.name, "forward", time.perf_counter() - start)
    return output


def _record_node(ctx: Context, inputs: tuple[Tensor | None, ...], output: Array,
                 result: Tensor) -> None:
    """Make ``ctx`` the graph node of ``result``: where each input came from, the shapes and
    dtypes its gradients must have, and the versions of the tensors whose arrays it saved
    (to catch in-place changes between forward and backward)."""
    ctx.next = tuple(
        (t.grad_fn if t.grad_fn is not None else t) if t is not None and t._requires_grad
        else None
        for t in inputs
    )
    ctx.input_shapes = tuple([None if t is None else t._data.shape for t in inputs])
    ctx.input_dtypes = tuple([None if t is None else t._data.dtype for t in inputs])
    if ctx.saved:
        # An input or the output whose memory the op saved (the array itself, a view of it,
        # or the array it is a view of: max's keepdims array, reshaped) is watched
        saved = {id(_memory_owner(array)) for array in ctx.saved if array is not None}
        for position, t in enumerate(inputs):
            if t is not None and id(_memory_owner(t._data)) in saved:
                ctx.watched.append((t._version, t._version[0], position))
        if id(_memory_owner(output)) in saved:
            ctx.watched.append((result._version, result._version[0], -1))
    result.grad_fn = ctx
    result._requires_grad = True


def _memory_owner(array: Array) -> Array:
    base = getattr(array, "base", None)
    return array if base is None else base


def _share_version_with_viewed_input(result: Tensor, inputs: tuple[Tensor | None, ...]) -> None:
    """A view (reshape, transpose, basic slice) shares its input's memory, so it must share
    its version counter too: an in-place change through either is a change to both."""
    owner = getattr(result._data, "base", None)
    if owner is None:
        return  # the result owns its memory: not a view
    for t in inputs:
        if t is not None and _memory_owner(t._data) is owner:
            result._version = t._version
            _register_view(t._version, result)
            return


def _register_view(box: list, view: Tensor) -> None:
    """The views of one memory share its version box, whose entries after the count are
    weak references to them (``views_of``). Dead ones are dropped whenever the box's length
    reaches a power of two, so registering n views costs O(n) in all."""
    length = len(box)
    if length >= 8 and length & (length - 1) == 0:
        box[1:] = [ref for ref in box[1:] if ref() is not None]
    box.append(weakref.ref(view))


def views_of(t: Tensor) -> list[Tensor]:
    """The live tensors that ops made as views of ``t``'s memory (``t`` too, if it is one)."""
    return [view for view in (ref() for ref in t._version[1:]) if view is not None]


# ------------------------------------------------------------------------------- custom VJPs
class _CustomGradient(Function):
    op_name = "custom_gradient"

    @staticmethod
    def forward(ctx: Context, *input_arrays: Array, output: Array, vjp: Callable) -> Array:
        ctx.vjp = vjp
        ctx.input_devices = tuple(device_of(array) for array in input_arrays)
        return output

    @staticmethod
    def backward(ctx: Context, grad: Array) -> tuple[Array | None, ...]:
        grads = ctx.vjp(grad)
        if isinstance(grads, list):
            grads = tuple(grads)
        if not isinstance(grads, tuple):
            grads = (grads,)
        grads = tuple(g._data if isinstance(g, tensor_module.Tensor) else g for g in grads)
        # User code made these: a gradient on another device than its input is refused here,
        # before the engine accumulates anything (the count, shapes and dtypes it checks).
        for position, (g, device) in enumerate(zip(grads, ctx.input_devices, strict=False)):
            if g is not None and hasattr(g, "shape") and device_of(g) != device:
                raise RuntimeError(f"custom_gradient: the vjp returned a gradient on device "
                                   f"'{device_of(g)}' for input {position}, which is on "
                                   f"'{device}'")
        return grads


def custom_gradient(output: Array | Tensor, inputs: Sequence[Tensor],
                    vjp: Callable[[Array], Sequence[Any]]) -> Tensor:
    """Join an array computed outside the engine to the graph.

    ``output`` is the already-computed array, ``inputs`` the tensors it depends on, and
    ``vjp(grad)`` returns one gradient per input (None for no gradient). The count, devices,
    shapes and dtypes are validated before anything accumulates; if ``vjp`` raises, or returns
    something wrong, no ``.grad`` changes.
    """
    inputs = tuple(inputs)
    for position, t in enumerate(inputs):
        if not isinstance(t, tensor_module.Tensor):
            raise TypeError(f"custom_gradient: input {position} is a {type(t).__name__}, "
                            "expected a Tensor")
    array = output._data if isinstance(output, tensor_module.Tensor) else np.asarray(output)
    if not callable(vjp):
        raise TypeError("custom_gradient: vjp must be callable")
    return _CustomGradient.apply(*inputs, output=array, vjp=vjp)
