"""Reverse-mode automatic differentiation: the graph's nodes and the engine that walks them.

Every op records a graph node, a :class:`Context`, on the tensor it returns (how an op does
that is :class:`tensorlib.engine.ops.function.Function`). A node keeps what the op saved for its
backward and where each input came from: another node, a leaf tensor, or None.
``run_backward`` (behind ``Tensor.backward()``) visits the nodes from the output back, asks
each op's ``backward`` for its inputs' gradients, and adds the leaves' gradients to their
``.grad`` only once the whole pass has succeeded.

This module knows nothing of Tensor beyond its attributes (``grad_fn``, ``grad``, ``data``),
nor of any op. Grad mode (``no_grad``) and the op profiler live here too.
"""

from __future__ import annotations

import contextlib
import functools
import time
import weakref
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from tensorlib.engine.dtypes import is_low_precision, to_float32
from tensorlib.engine.typing import Array

if TYPE_CHECKING:  # the engine works on Contexts and on anything shaped like a Tensor
    from tensorlib.engine.ops.function import Function
    from tensorlib.engine.tensor import Tensor

_grad_enabled = True


def is_grad_enabled() -> bool:
    """True unless inside ``no_grad()``."""
    return _grad_enabled


class _GradMode:
    """Context manager and decorator that sets whether ops record graph nodes."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self._previous: list[bool] = []

    def __enter__(self) -> None:
        global _grad_enabled
        self._previous.append(_grad_enabled)
        _grad_enabled = self.enabled

    def __exit__(self, *exc_info: object) -> None:
        global _grad_enabled
        _grad_enabled = self._previous.pop()

    def __call__(self, function: Callable) -> Callable:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.__class__(self.enabled):
                return function(*args, **kwargs)

        return wrapper


def no_grad() -> _GradMode:
    """``with no_grad():`` — ops inside build no graph (evaluation, optimizer updates)."""
    return _GradMode(False)


def enable_grad() -> _GradMode:
    """Re-enable graph recording inside a ``no_grad`` block."""
    return _GradMode(True)


# ------------------------------------------------------------------------------- profiling
class OpProfile:
    """Wall-clock seconds and calls per op and phase, filled in by ``profile_ops()``.

    ``records[(name, phase)] = [calls, seconds]`` with ``phase`` "forward" or "backward";
    the time is spent inside the op's ``forward``/``backward`` only (not the engine's
    bookkeeping around it).
    """

    def __init__(self) -> None:
        self.records: dict[tuple[str, str], list[float]] = {}

    def add(self, name: str, phase: str, seconds: float) -> None:
        record = self.records.setdefault((name, phase), [0, 0.0])
        record[0] += 1
        record[1] += seconds

    def total(self, phase: str | None = None) -> float:
        """Seconds in every op (of one phase, if given)."""
        return sum(s for (_, p), (_, s) in self.records.items() if phase in (None, p))

    def by_op(self) -> dict[str, float]:
        """Seconds per op name, forward and backward together, largest first."""
        totals: dict[str, float] = {}
        for (name, _), (_, seconds) in self.records.items():
            totals[name] = totals.get(name, 0.0) + seconds
        return dict(sorted(totals.items(), key=lambda item: -item[1]))

    def __repr__(self) -> str:
        lines = [f"{'op':<20}{'phase':<10}{'calls':>6}{'ms':>10}{'share':>7}"]
        total = self.total() or 1.0
        for (name, phase), (calls, seconds) in sorted(self.records.items(),
                                                      key=lambda item: -item[1][1]):
            lines.append(f"{name:<20}{phase:<10}{calls:>6}{seconds * 1e3:>10.2f}"
                         f"{seconds / total:>7.0%}")
        return "\n".join(lines)


_profile: OpProfile | None = None


def active_profile() -> OpProfile | None:
    """The profile ``profile_ops()`` is filling now, or None outside one."""
    return _profile


@contextlib.contextmanager
def profile_ops() -> Iterator[OpProfile]:
    """``with profile_ops() as profile:`` times every op's forward and backward inside."""
    global _profile
    previous, _profile = _profile, OpProfile()
    try:
        yield _profile
    finally:
        _profile = previous


def node_name(function: type[Function]) -> str:
    """What a call of ``function`` is called in graphs, profiles and errors: its
    ``op_name``, else its class name in lower case."""
    return function.op_name or function.__name__.lower()


class Context:
    """A graph node: what one op call saved for its backward, and where its inputs came from.

    ``Function.forward`` and ``Function.backward`` receive it as ``ctx``; ops may store any
    attribute on it. The engine uses ``next`` (per input: a producing node, a leaf tensor,
    or None), the input shapes and dtypes (to check gradients), and the saved arrays.
    """

    # The engine's own fields; whatever else an op stores is dropped by ``release``.
    # ``function`` is the op's class or the kernel standing in for it; ops call their own
    # static steps through it (``ctx.function.normalize``), so its type lets any attribute by.
    function: type[Any]
    name: str  # node_name(function)
    saved: tuple[Array | None, ...] | None  # save_for_backward's arrays; None once released
    needs_input_grad: tuple[bool, ...]
    next: tuple[Context | Tensor | None, ...]  # per input: its node, a leaf tensor, or None
    input_shapes: tuple[tuple[int, ...] | None, ...]  # None: no input there
    input_dtypes: tuple[np.dtype | None, ...]
    watched: list[tuple[list[int], int, int]]  # (version box, version when saved, input or -1)
    retained_output: weakref.ref | None  # set by Tensor.retain_grad()
    freed: bool

    def __init__(self, function: type[Function]):
        self.function = function
        self.name = node_name(function)
        self.saved = ()
        self.needs_input_grad = ()
        self.next = ()
        self.input_shapes = ()
        self.input_dtypes = ()
        self.watched = []
        self.retained_output = None
        self.freed = False

    if TYPE_CHECKING:  # for the type checker only: ops keep their own attributes on ctx
        def __getattr__(self, name: str) -> Any: ...
        def __setattr__(self, name: str, value: Any) -> None: ...

    def save_for_backward(self, *arrays: Array | None) -> None:
        """Keep arrays for ``backward``; they are freed after it unless ``retain_graph``."""
        self.saved = arrays

    @property
    def saved_tensors(self) -> tuple[Any, ...]:
        """What ``save_for_backward`` kept: arrays, or None where an op saved None."""
        if self.freed:
            _refuse_freed(self)
        return self.saved or ()

    def release(self) -> None:
        """Drop everything saved; a later backward through this node raises."""
        self.saved = None
        self.watched = []
        self.freed = True
        for key in [k for k in self.__dict__ if k not in Context.__annotations__]:
            delattr(self, key)

    def __repr__(self) -> str:
        return f"<{self.name} backward>"


# ------------------------------------------------------------------------------- unbroadcast
def unbroadcast(grad: Array, shape: tuple[int, ...]) -> Array:
    """Sum ``grad`` over the axes that broadcasting added or stretched, giving ``shape``.

    If ``x`` of shape ``shape`` was broadcast to ``grad.shape`` in the forward pass, every
    copy of an element received a gradient; the element's gradient is their sum.
    """
    if grad.shape == shape:
        return grad
    if is_low_precision(grad.dtype):  # a sum of many terms: taken in float32, rounded once
        return unbroadcast(to_float32(grad), shape).astype(grad.dtype)
    extra = grad.ndim - len(shape)
    if extra > 0:
        grad = grad.sum(axis=tuple(range(extra)))
    stretched = tuple(i for i, size in enumerate(shape) if size == 1 and grad.shape[i] != 1)
    if stretched:
        grad = grad.sum(axis=stretched, keepdims=True)
    return grad


# ------------------------------------------------------------------------------- the engine
def _topological_order(root: Context) -> list[Context]:
    """Nodes reachable from ``root``, each after every node that consumes it.

    Iterative depth-first search (no recursion limit): a node is emitted after all of its
    inputs, and the reversed list is the order in which backward visits them.
    """
    order: list[Context] = []
    visited: set[int] = set()
    stack: list[tuple[Context, bool]] = [(root, False)]
    while stack:
        node, inputs_done = stack.pop()
        if inputs_done:
            order.append(node)
            continue
        key = id(node)
        if key in visited:
            continue
        visited.add(key)
        stack.append((node, True))
        for parent in node.next:
            if isinstance(parent, Context) and id(parent) not in visited:
                stack.append((parent, False))
    order.reverse()
    return order


def _check_versions(node: Context) -> None:
    for box, version, position in node.watched:
        if box[0] != version:
            which = "its output" if position < 0 else f"input {position}"
            raise RuntimeError(
                f"a tensor saved by '{node.name}' for backward ({which}) was changed in place "
                f"after the forward pass (version {version} -> {box[0]}); recompute the "
                "forward pass after changing it, or avoid the in-place change")


def _normalize_gradients(node: Context, raw: Any) -> tuple[Array | None, ...]:
    """Check that ``backward`` returned one gradient of the right shape/dtype per input."""
    grads = raw if isinstance(raw, tuple) else (raw,)
    if len(grads) != len(node.next):
        raise RuntimeError(f"'{node.name}' backward returned {len(grads)} gradients for "
                           f"{len(node.next)} inputs")
    checked: list[Array | None] = []
    for position, (grad, target) in enumerate(zip(grads, node.next, strict=True)):
        if grad is None or target is None:
            checked.append(None)
            continue
        shape, dtype = node.input_shapes[position], node.input_dtypes[position]
        if getattr(grad, "shape", None) != shape:
            raise RuntimeError(f"'{node.name}' backward returned a gradient of shape "
                               f"{getattr(grad, 'shape', type(grad).__name__)} for input "
                               f"{position} of shape {shape}")
        if grad.dtype != dtype:
            raise RuntimeError(f"'{node.name}' backward returned a {grad.dtype} gradient for "
                               f"input {position} of dtype {dtype}")
        checked.append(grad)
    return tuple(checked)


def _never(array: Array) -> bool:
    return False


# Whether an array that a backward returned may become a leaf's ``.grad`` without a copy,
# because nothing else refers to it: never, unless a check is installed
# (``set_unshared_check``; tensorlib.engine.kernels installs a reference count).
_unshared: Callable[[Array], bool] = _never


def set_unshared_check(check: Callable[[Array], bool] | None) -> None:
    """Install ``check(array) -> bool``, True when nothing but the engine refers to the
    array (None: copy always)."""
    global _unshared
    _unshared = _never if check is None else check


def _silent_overflow() -> np.errstate:
    """Gradients that overflow add up to inf and nan without a warning, as in PyTorch: a
    float16 run's GradScaler looks for them."""
    return np.errstate(over="ignore", invalid="ignore")


class _Accumulator:
    """Sums gradient contributions, copying only when a second one arrives."""

    __slots__ = ("value", "owned")

    def __init__(self, value: Array):
        self.value = value
        self.owned = False  # True once ``value`` is an array the engine made itself

    def add(self, contribution: Array) -> None:
        with _silent_overflow():
            if self.owned:
                self.value += contribution
            else:
                self.value = self.value + contribution
                self.owned = True

    def take(self) -> Array:
        """The sum, as an array a leaf may keep as its ``.grad``: one the engine made itself
        as it is, anything else copied (unless the installed check shows that nothing else
        refers to it)."""
        value = self.value
        self.value = None  # type: ignore[assignment]  # taken: the leaf keeps it
        if not value.flags.writeable:
            return value.copy()
        if self.owned or _unshared(value):
            return value
        return value.copy()


class _Gradients:
    """The gradients of one backward pass on their way: per graph node until its backward
    runs; per leaf tensor, and per retained non-leaf (``retain_grad``), until the whole pass
    has succeeded, so that a pass that fails changes no visible gradient."""

    def __init__(self) -> None:
        self.nodes: dict[int, _Accumulator] = {}
        self.leaves: dict[int, tuple[Tensor, _Accumulator]] = {}
        self.retained: list[tuple[Tensor, Array]] = []

    def send(self, target: Context | Tensor, contribution: Array) -> None:
        """Add ``contribution`` to the gradient of ``target`` (a node or a leaf tensor)."""
        key = id(target)
        if not isinstance(target, Context):  # a leaf tensor
            entry = self.leaves.get(key)
            if entry is None:
                self.leaves[key] = (target, _Accumulator(contribution))
            else:
                entry[1].add(contribution)
            return
        accumulator = self.nodes.get(key)
        if accumulator is None:
            self.nodes[key] = _Accumulator(contribution)
        else:
            accumulator.add(contribution)

    def take(self, node: Context) -> Array | None:
        """The gradient of ``node``'s output, or None when none reached it."""
        accumulator = self.nodes.pop(id(node), None)
        return None if accumulator is None else accumulator.value

    def retain(self, node: Context, grad: Array) -> None:
        """Keep a copy of ``grad`` for the node's output, if it is still alive
        (``retain_grad``), to become its ``.grad`` when the pass has succeeded."""
        reference = node.retained_output
        retained = None if reference is None else reference()
        if retained is not None:
            self.retained.append((retained, grad.copy()))  # on the device grad lives on

    def commit(self) -> None:
        """Add each retained non-leaf's gradient and every leaf's gradient to its ``.grad``
        (the pass has succeeded)."""
        with _silent_overflow():
            for tensor, grad in self.retained:
                tensor.grad = grad if tensor.grad is None else tensor.grad + grad
            for tensor, accumulator in self.leaves.values():
                if tensor.grad is None:
                    tensor.grad = accumulator.take()
                else:
                    tensor.grad += accumulator.value


def _seed(root: Tensor, grad: Any) -> Array:
    """The gradient of ``root`` itself: ``grad``, checked, or 1 for a one-element root."""
    if not root.requires_grad:
        raise RuntimeError("backward() on a tensor that does not require grad "
                           "(no input of its computation had requires_grad=True)")
    if grad is None:
        if root.numel() != 1:
            raise RuntimeError(f"backward() without a gradient needs a one-element output; "
                               f"got shape {root.shape} (pass grad= of that shape)")
        return np.ones_like(root._data)
    if not hasattr(grad, "shape"):
        grad = np.asarray(grad)
    if grad.shape != root.shape:
        raise ValueError(f"backward(grad=...): gradient shape {grad.shape} does not match "
                         f"the output's shape {root.shape}")
    return grad.astype(root.dtype, copy=False)


def _refuse_freed(node: Context) -> None:
    """The one error for a second backward through a node whose saved arrays were freed."""
    raise RuntimeError(
        f"backward through '{node.name}' a second time: the graph was freed after the "
        "first backward; pass retain_graph=True to the first call")


def _timed_backward(node: Context, grad: Array) -> Any:
    start = time.perf_counter()
    raw = node.function.backward(node, grad)
    assert _profile is not None  # the caller times a backward only while a profile is on
    _profile.add(node.name, "backward", time.perf_counter() - start)
    return raw


def _node_backward(node: Context, grad: Array, retain_graph: bool) -> tuple[Array | None, ...]:
    """One node's backward: the gradients of its inputs from the gradient of its output,
    checked; its saved arrays are freed right after, unless ``retain_graph``."""
    if node.freed:
        _refuse_freed(node)
    if node.watched:
        _check_versions(node)
    raw = node.function.backward(node, grad) if _profile is None \
        else _timed_backward(node, grad)
    grads = _normalize_gradients(node, raw)
    if not retain_graph:
        node.release()
    return grads


def _backpropagate(order: list[Context], gradients: _Gradients, retain_graph: bool) -> None:
    """Visit the nodes from the output back; each sends its inputs their gradients."""
    for node in order:
        grad = gradients.take(node)
        if grad is None:
            continue  # no gradient flows through this node
        if node.retained_output is not None:
            gradients.retain(node, grad)
        for target, contribution in zip(node.next, _node_backward(node, grad, retain_graph),
                                        strict=True):
            if contribution is not None and target is not None:  # a None target gets None
                gradients.send(target, contribution)


def run_backward(root: Tensor, grad: Any = None, retain_graph: bool = False) -> None:
    """Backpropagate from ``root``; ``.grad`` (of leaves and of retained non-leaves) changes
    only if the whole pass succeeds.

    Without ``retain_graph`` each node's saved arrays are freed as soon as its backward has
    run, so activations are released while gradients are being made (a pass that fails
    part-way leaves the visited part of the graph freed, and every ``.grad`` unchanged).
    """
    gradients = _Gradients()
    gradients.send(root if root.grad_fn is None else root.grad_fn, _seed(root, grad))
    order: list[Context] = [] if root.grad_fn is None else _topological_order(root.grad_fn)
    _backpropagate(order, gradients, retain_graph)
    gradients.commit()
    if not retain_graph:
        for node in order:
            node.release()
