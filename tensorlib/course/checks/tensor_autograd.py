"""The checks of notebook 04 (tensor autograd): ``unbroadcast_by_hand``, the tiny engine's
``apply`` and ``backward``, and the exercises (``Swish``, ``SmoothClamp``,
``cumsum_with_grad`` and a prediction).

Each check tests what comes first before what depends on it: a result's shape before its
values, an op's forward (its output's shape and values) before its backward, and the
backward's gradient for an uneven upstream gradient before ``tensorlib.engine.gradcheck``. The usual
slips (the leading axes kept, ``keepdims`` forgotten, a mean for a sum, ``=`` for ``+=``, the
incoming gradient forgotten, a factor of the chain rule missing...) are computed as what they
give, so that a report names the one the learner's result shows.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any, NamedTuple, cast

import numpy as np

import tensorlib as tl
from tensorlib.course.checks.registry import HandOn, exercise_check, piece_check
from tensorlib.course.exercises import Checker
from tensorlib.course.worked_pieces import tiny_apply, tiny_backward
from tensorlib.engine.splitmix64 import Rng

__all__ = ["check_unbroadcast", "check_tiny_apply", "check_tiny_backward", "check_swish",
           "check_smooth_clamp", "check_cumsum_with_grad", "check_wrong_shape_predictions"]


# ---------------------------------------------------------------------------- unbroadcast
def _sum_leading(grad: np.ndarray, shape: tuple[int, ...], axis: int = 0) -> np.ndarray:
    while grad.ndim > len(shape):
        grad = grad.sum(axis=axis)
    return grad


def _sum_ones(grad: np.ndarray, shape: tuple[int, ...], keepdims: bool = True,
              start: int = 0) -> np.ndarray:
    """``grad`` summed over the axes where ``shape`` has 1, ``shape``'s axis 0 being
    ``grad``'s axis ``start``."""
    axes = tuple(start + axis for axis, size in enumerate(shape)
                 if size == 1 and grad.shape[start + axis] != 1)
    return grad.sum(axis=axes, keepdims=keepdims) if axes else grad


def _unbroadcast_slips(grad: np.ndarray, shape: tuple[int, ...]) -> dict[str, Any]:
    """What the usual slips of ``unbroadcast`` give (each computed when asked)."""
    extra = grad.ndim - len(shape)
    return {
        "the leading axes kept: first sum away the axes broadcasting added in front "
        "(while grad.ndim > len(shape))": lambda: _sum_ones(grad, shape, start=extra),
        "keepdims=True missing: an axis where the input has size 1 stays, with size 1":
            lambda: _sum_ones(_sum_leading(grad, shape), shape, keepdims=False),
        "the size-1 axes not summed: after the leading axes, sum (keepdims=True) over each "
        "axis where the input has size 1": lambda: _sum_leading(grad, shape),
        "the last axes summed away: broadcasting adds axes in front, so sum axis 0":
            lambda: _sum_ones(_sum_leading(grad, shape, axis=-1), shape),
        "the size-1 axes matched before the leading axes were summed away: sum the leading "
        "axes first": lambda: _sum_leading(_sum_ones(grad, shape), shape),
        "a mean where a sum belongs: every use of an entry adds its own gradient":
            lambda: tl.unbroadcast(grad, shape) * (max(1, int(np.prod(shape))) / grad.size),
        "grad returned as it came: nothing summed": grad,
    }


_UNBROADCASTS = [((2, 3), (3,)), ((2, 3), (2, 1)), ((4, 2, 3), (2, 1)),
                 ((5, 2, 4, 3), (2, 1, 3)), ((4, 2, 3), (4, 1, 3)), ((2, 3), ()),
                 ((1, 3), (3,)), ((2, 3), (2, 3))]


@piece_check("unbroadcast", yours="unbroadcast_by_hand", label="unbroadcast_by_hand")
def check_unbroadcast(checker: Checker, unbroadcast_by_hand: Any) -> HandOn:
    """``unbroadcast_by_hand(grad, shape)`` against ``tensorlib.unbroadcast``: the summed
    gradient's shape, then its values, for inputs of up to four axes, a scalar input and an
    input that was not broadcast."""
    draw = Rng(44)
    for out_shape, in_shape in _UNBROADCASTS:
        with checker.case(f"a gradient of shape {out_shape} for an input of shape {in_shape}",
                          hint="first sum away the extra leading axes, then sum with "
                               "keepdims=True over each axis where the input has size 1"):
            grad = draw.normal(size=out_shape, dtype=np.float64)
            slips = _unbroadcast_slips(grad.copy(), in_shape)
            received = unbroadcast_by_hand(grad.copy(), in_shape)
            checker.true(received is not None, "unbroadcast_by_hand returned None",
                         "nothing returned: end with `return grad`")
            received = np.asarray(received)
            expected = tl.unbroadcast(grad.copy(), in_shape)
            checker.shape(received, in_shape, "the summed gradient", slips)
            checker.close(received, expected, "the summed gradient", rtol=1e-12,
                          mistakes=slips)
    return HandOn(unbroadcast_by_hand, tl.unbroadcast)


# ----------------------------------------------------------------------------------- apply
def _tiny_apply(TinyTensor: type, Node: type) -> Callable[..., Any]:  # noqa: N803
    """tensorlib.course.worked_pieces's ``apply`` for the notebook's ``TinyTensor`` and ``Node``."""
    def apply(op: Any, *inputs: Any) -> Any:
        return tiny_apply(op, inputs, TinyTensor, Node)
    return apply


def _watched(checker: Checker, op: type[Any]) -> tuple[type, list[Any]]:
    """A subclass of ``op`` whose forward first checks that it is handed a context and
    arrays (not the tensors), and the list of the contexts it was handed."""
    contexts: list[Any] = []

    def forward(ctx: Any, *arrays: Any) -> Any:
        checker.true(all(isinstance(array, np.ndarray) for array in arrays),
                     f"op.forward received {', '.join(type(a).__name__ for a in arrays)}, "
                     "not arrays",
                     "op.forward called on the tensors: hand it their arrays, "
                     "op.forward(ctx, *(t.data for t in inputs))")
        checker.true(ctx is not None and not isinstance(ctx, np.ndarray),
                     f"op.forward received {ctx!r} as its ctx",
                     "no ctx handed to op.forward: make ctx = types.SimpleNamespace() and "
                     "pass it first")
        contexts.append(ctx)
        return op.forward(ctx, *arrays)

    return type(op.__name__, (op,), {"forward": staticmethod(forward)}), contexts


def _wrapped(checker: Checker, out: Any, TinyTensor: type) -> None:  # noqa: N803
    checker.true(isinstance(out, TinyTensor), f"apply returned a {type(out).__name__}",
                 "op.forward's array returned as it is: wrap it, TinyTensor(out, ...)")


@piece_check("apply", yours="apply", package_name="tensorlib.course.worked_pieces's")
def check_tiny_apply(checker: Checker, apply: Any, TinyTensor: type,  # noqa: N803
                     Node: type, Add: type, Mul: type, Tanh: type) -> HandOn:  # noqa: N803
    """``apply(op, *inputs)``: op.forward handed a fresh ctx and the inputs' arrays, its
    result wrapped in a TinyTensor (shape and values first), then the Node recorded when
    any input requires grad and only then."""
    left = TinyTensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    right = TinyTensor([0.5, -1.0, 2.0], requires_grad=True)
    constant = TinyTensor([10.0, 20.0, 30.0])
    with checker.case("Add of two tensors that want gradients records Node(Add, ctx, inputs)",
                      hint="return TinyTensor(out, True, Node(op, ctx, inputs))"):
        op, contexts = _watched(checker, Add)
        out = apply(op, left, right)
        _wrapped(checker, out, TinyTensor)
        checker.shape(out.data, (2, 3), "the output's data")
        checker.close(out.data, left.data + right.data, "the output's data", rtol=0)
        checker.true(out.node is not None, "the output records no node",
                     "no Node recorded: TinyTensor(out, True, Node(op, ctx, inputs))")
        checker.true(out.requires_grad, "the output records a node but does not require grad",
                     "requires_grad left False: TinyTensor(out, True, Node(...))")
        checker.true(out.node.op is op, f"node.op is {out.node.op!r}, not Add",
                     "the Node records another op than the one apply was given: "
                     "Node(op, ctx, inputs)")
        inputs = list(getattr(out.node, "inputs", []))
        checker.true(len(inputs) == 2 and inputs[0] is left and inputs[1] is right,
                     "node.inputs are not the two input tensors",
                     "the arrays recorded as the node's inputs: Node takes the input tensors "
                     "themselves" if inputs and isinstance(inputs[0], np.ndarray) else
                     "Node(op, ctx, inputs) takes the input tensors, in order")
        checker.true(out.node.ctx is contexts[-1],
                     "node.ctx is not the ctx that op.forward filled",
                     "the Node given another ctx than op.forward's: pass that same ctx")
        checker.equal(out.node.ctx.shapes, ((2, 3), (3,)), "what forward kept in ctx")
    with checker.case("one input wants a gradient, the other is a constant",
                      hint="a node is recorded when ANY input requires grad"):
        out = apply(Mul, constant, right)
        _wrapped(checker, out, TinyTensor)
        checker.close(out.data, constant.data * right.data, "the output's data", rtol=0)
        checker.true(out.requires_grad and out.node is not None and out.node.op is Mul,
                     "Mul(constant, right) records no Mul node",
                     "a node recorded only when every input requires grad: one is enough, "
                     "any(...), not all(...)")
    with checker.case("no input wants a gradient: a plain tensor, no node",
                      hint="only wrap with a Node when some input requires grad"):
        out = apply(Tanh, constant)
        _wrapped(checker, out, TinyTensor)
        checker.close(out.data, np.tanh(constant.data), "the output's data", rtol=1e-15)
        checker.true(out.node is None and not out.requires_grad,
                     "the output of constants records a node or requires grad",
                     "a node recorded for constants: only when some input requires grad")
    with checker.case("every call gets a fresh ctx", hint="make ctx inside apply, per call"):
        first, second = apply(Tanh, left), apply(Tanh, right)
        _wrapped(checker, first, TinyTensor)
        checker.true(first.node.ctx is not second.node.ctx, "two calls share one ctx",
                     "one ctx for every call: make ctx = types.SimpleNamespace() inside apply")
        checker.close(first.node.ctx.y, np.tanh(left.data), "the first call's saved y", rtol=0)
    return HandOn(apply, _tiny_apply(TinyTensor, Node))


# -------------------------------------------------------------------------------- backward
def _slipped_backward(root: Any, leaf_adds: bool = True, node_adds: bool = True) -> None:
    """tensorlib.course.worked_pieces's ``backward`` with one of two slips: a leaf's ``.grad`` or an
    intermediate tensor's gradient replaced (``=``) instead of added to."""
    order: list[Any] = []
    seen: set[int] = set()
    stack = [(root, False)]
    while stack:
        tensor, placed = stack.pop()
        if tensor.node is None:
            continue
        if placed:
            order.append(tensor)
        elif id(tensor) not in seen:
            seen.add(id(tensor))
            stack.append((tensor, True))
            stack.extend((parent, False) for parent in reversed(tensor.node.inputs))
    pending: dict[int, Any] = {id(root): np.ones_like(root.data)}
    for tensor in reversed(order):
        grads = tensor.node.op.backward(tensor.node.ctx, pending.pop(id(tensor)))
        for parent, grad in zip(tensor.node.inputs, grads, strict=True):
            if not parent.requires_grad:
                continue
            if parent.node is None:
                parent.grad = grad if parent.grad is None or not leaf_adds else \
                    parent.grad + grad
            else:
                pending[id(parent)] = pending.get(id(parent), 0.0) + grad if node_adds \
                    else grad


_SLIPPED = {"a leaf's .grad replaced (=) instead of added to (+=): a leaf used twice keeps "
            "only its last share": {"leaf_adds": False},
            "an intermediate tensor's gradients replaced instead of summed: a tensor used on "
            "two paths keeps only one share": {"node_adds": False}}


class _Ops(NamedTuple):
    """What a graph of the check is built with: the tiny engine's ops (through
    tensorlib.course.worked_pieces's ``apply``, so that the learner's apply is not on trial here) or
    tensorlib's."""

    tensor: Callable[..., Any]  # (array, requires_grad=False) -> a tensor
    add: Callable[[Any, Any], Any]
    mul: Callable[[Any, Any], Any]
    matmul: Callable[[Any, Any], Any]
    sum: Callable[[Any], Any]
    tanh: Callable[[Any], Any]


def _tiny_ops(TinyTensor: type, Node: type, *ops: type) -> _Ops:  # noqa: N803
    """The notebook's Add, Mul, MatMul, Sum and Tanh (``ops``) on its TinyTensors."""
    def applied(op: type) -> Callable[..., Any]:
        return lambda *inputs: tiny_apply(op, inputs, TinyTensor, Node)

    return _Ops(lambda array, requires_grad=False: TinyTensor(array, requires_grad),
                *(applied(op) for op in ops))


_TENSORLIB = _Ops(lambda array, requires_grad=False: tl.tensor(array, requires_grad=requires_grad),
                  operator.add, operator.mul, operator.matmul, lambda t: t.sum(),
                  lambda t: t.tanh())


def _graphs() -> dict[str, tuple[Callable[..., Any], list[np.ndarray]]]:
    """The graphs the check walks: what each is, a function building it with a set of ops
    from its leaves, and the arrays of its leaves."""
    draw = Rng(45)
    X1, C1 = draw.normal(size=(4, 3), dtype=np.float64), draw.normal(size=(4, 2), dtype=np.float64)

    def mlp(o: _Ops, W1: Any, b1: Any, W2: Any) -> Any:  # noqa: N803
        hidden = o.tanh(o.add(o.matmul(o.tensor(X1), W1), b1))
        return o.sum(o.mul(o.matmul(hidden, W2), o.tensor(C1)))

    def two_paths(o: _Ops, x: Any, w: Any) -> Any:
        u = o.mul(x, w)
        return o.sum(o.mul(o.tanh(u), u))  # u is used twice: its gradient is the sum of both

    def chain(o: _Ops, x: Any) -> Any:
        for _ in range(60):
            x = o.tanh(x)
        return o.sum(x)

    return {
        "tanh(X W1 + b1) W2 with uneven weights (b1 broadcast over the batch)":
            (mlp, [draw.normal(size=s, dtype=np.float64) for s in [(3, 5), (5,), (5, 2)]]),
        "x used twice: (x * x).sum()":
            (lambda o, x: o.sum(o.mul(x, x)), [draw.normal(size=(3,), dtype=np.float64)]),
        "u on two paths: (tanh(u) * u).sum() with u = x * w":
            (two_paths, [draw.normal(size=(3,), dtype=np.float64) for _ in range(2)]),
        "a chain of 60 tanh": (chain, [draw.normal(size=(2,), dtype=np.float64)]),
    }


_LOOKED_UP_EARLY = ("a tensor's gradient looked up before the tensors that use it gave theirs: "
                    "walk output first, reversed(order), each tensor after all its users")


def _walk_backward(checker: Checker, backward: Any, root: Any) -> None:
    """``backward(root)``, a KeyError (a gradient looked up before any was stored) named as
    what it most often means."""
    with checker.named_errors({"": _LOOKED_UP_EARLY}, (KeyError,)):  # any KeyError
        backward(root)


def _counted(root: Any) -> dict[int, list[int]]:
    """Every node of ``root``'s graph given a subclass of its op that counts the calls of its
    backward: id of the tensor -> [calls]."""
    counts: dict[int, list[int]] = {}
    stack = [root]
    while stack:
        tensor = stack.pop()
        if tensor.node is None or id(tensor) in counts:
            continue
        calls = counts[id(tensor)] = [0]
        op = tensor.node.op

        def backward(ctx: Any, grad: Any, op: Any = op, calls: list[int] = calls) -> Any:
            calls[0] += 1
            return op.backward(ctx, grad)

        tensor.node.op = type(op.__name__, (op,), {"backward": staticmethod(backward)})
        stack.extend(tensor.node.inputs)
    return counts


@piece_check("backward", yours="backward", package_name="tensorlib.course.worked_pieces's")
def check_tiny_backward(checker: Checker, backward: Any, TinyTensor: type,  # noqa: N803
                        Node: type, Add: type, Mul: type, MatMul: type,  # noqa: N803
                        Sum: type, Tanh: type) -> HandOn:  # noqa: N803
    """``backward(root)`` against tensorlib's engine on four graphs (an MLP with a broadcast
    bias, a tensor used twice, a tensor on two paths, a chain of 60 ops): every leaf's
    gradient, its shape before its values; then a second backward adds to ``.grad``, and a
    constant gets none. The graphs are built with tensorlib.course.worked_pieces's apply."""
    o = _tiny_ops(TinyTensor, Node, Add, Mul, MatMul, Sum, Tanh)
    for what, (build, arrays) in _graphs().items():
        with checker.case(what, hint="walk depth first with a seen set of ids, then in "
                          "reverse; sum the gradients a tensor receives before passing its "
                          "own on"):
            slipped: dict[str, list[Any]] = {}
            for said, slip in _SLIPPED.items():
                leaves = [TinyTensor(a, requires_grad=True) for a in arrays]
                _slipped_backward(build(o, *leaves), **slip)
                slipped[said] = [leaf.grad for leaf in leaves]
            theirs = [tl.tensor(a, requires_grad=True) for a in arrays]
            build(_TENSORLIB, *theirs).backward()
            ours = [TinyTensor(a, requires_grad=True) for a in arrays]
            _walk_backward(checker, backward, build(o, *ours))
            for index, (mine, package) in enumerate(zip(ours, theirs, strict=True)):
                name = f"leaf {index}'s .grad" if len(ours) > 1 else "x.grad"
                checker.true(mine.grad is not None, f"a leaf that requires grad got no "
                             f".grad ({name} is None)",
                             "no gradient reached a leaf: a tensor without a node is a leaf; "
                             "add what it receives to its .grad")
                mistakes = {said: grads[index] for said, grads in slipped.items()}
                checker.shape(np.asarray(mine.grad), package.shape, name, mistakes)
                checker.close(mine.grad, package.grad, name, rtol=1e-10, atol=1e-12,
                              mistakes=mistakes)
    with checker.case("each node's backward runs once, though u is reached on two paths",
                      hint="list each tensor once (a seen set of ids), after the tensors it "
                           "was made from"):
        x = TinyTensor([0.5, -1.0, 2.0], requires_grad=True)
        u = o.mul(x, o.tensor([1.5, 0.5, -1.0]))
        root = o.sum(o.mul(o.tanh(u), u))
        counts = _counted(root)
        _walk_backward(checker, backward, root)
        calls = sorted(count[0] for count in counts.values())
        checker.true(calls == [1] * len(calls), f"the nodes' backward ran {calls} times",
                     "a tensor reached on two paths walked twice: keep a seen set of ids, so "
                     "that each is listed once" if max(calls) > 1 else
                     "a node's backward never ran: list every tensor with a node")
    with checker.case("a second backward adds to the leaves' .grad",
                      hint="a leaf's .grad starts as None; afterwards add to it"):
        x = TinyTensor([1.0, -2.0], requires_grad=True)
        backward(o.sum(o.mul(x, x)))
        backward(o.sum(o.mul(x, x)))
        checker.close(x.grad, 2 * (2 * x.data), "x.grad after two backward calls", rtol=1e-12,
                      mistakes={"the second backward replaced .grad: a leaf adds to what it "
                                "holds (its .grad starts as None)": 2 * x.data})
    with checker.case("an input that wants no gradient keeps .grad None",
                      hint="skip inputs whose requires_grad is False"):
        x, c = TinyTensor(np.ones(3), requires_grad=True), TinyTensor(np.arange(3.0))
        backward(o.sum(o.mul(x, c)))
        checker.true(c.grad is None, f"the constant got .grad = {c.grad}",
                     "a gradient given to a tensor that wants none: skip inputs whose "
                     "requires_grad is False")
        checker.close(x.grad, np.arange(3.0), "x.grad", rtol=1e-12)
    return HandOn(backward, tiny_backward)


# ------------------------------------------------------------------------------ exercises
def _sigmoid(x: np.ndarray) -> np.ndarray:
    return np.exp(-np.logaddexp(0.0, -x))


def _fresh(t: tl.Tensor) -> tl.Tensor:
    """A new float64 leaf with ``t``'s values (the notebook's inputs keep their .grad)."""
    return tl.tensor(np.array(t.numpy(), dtype=np.float64), requires_grad=True)


def _upstream(shape: tuple[int, ...]) -> np.ndarray:
    """An uneven upstream gradient, so that a forgotten ``grad *`` shows."""
    size = int(np.prod(shape))
    return np.linspace(-0.7, 1.9, size).reshape(shape) if size > 1 else np.full(shape, 1.7)


def _gradient(checker: Checker, fn: Callable[[tl.Tensor], tl.Tensor], t: tl.Tensor,
              expected: np.ndarray, slips: dict[str, Any]) -> None:
    """In a case: x.grad after ``fn(x).backward(upstream)`` must be ``expected`` (its shape,
    then its values), for a fresh x with ``t``'s values."""
    x = _fresh(t)
    y = fn(x)
    checker.true(y.requires_grad, "the result does not require grad: no backward reaches x",
                 "the result is not joined to the graph (apply, or tl.custom_gradient, makes "
                 "the node)")
    try:
        y.backward(_upstream(y.shape))
    except RuntimeError as error:
        if "backward returned" not in str(error) and "vjp" not in str(error):
            raise
        checker.true(False, f"the engine refused your backward's gradient: {error}",
                     "the backward returned a gradient of another shape or dtype than its "
                     "input: return one gradient of x's shape")
    checker.true(x.grad is not None, "x.grad is None after the backward",
                 "the backward returned None for x: return its gradient")
    checker.shape(x.grad, tuple(t.shape), "x.grad")
    checker.close(x.grad, expected, "x.grad (for an uneven upstream gradient)", rtol=1e-10,
                  atol=1e-12, mistakes=slips)


def _gradcheck(checker: Checker, fn: Callable[[tl.Tensor], tl.Tensor], t: tl.Tensor) -> None:
    try:
        tl.gradcheck(fn, _fresh(t))
    except tl.GradcheckError as error:
        checker.true(False, f"gradcheck: {error}")


@exercise_check("Exercise 1 (fix the swish backward)", yours="Swish")
def check_swish(checker: Checker, Swish: type[tl.Function],  # noqa: N803
                check_inputs: dict[str, tl.Tensor]) -> None:
    """``Swish``: its forward, x sigmoid(x) (shape, then values), then its backward's gradient
    for an uneven upstream gradient, then gradcheck, on each of the notebook's inputs."""
    for what, t in check_inputs.items():
        with checker.case(f"gradcheck on {what}", hint="product rule: d(x s)/dx = s + x s'; "
                          "which factor of s' is missing in the buggy line?"):
            x = np.array(t.numpy(), dtype=np.float64)
            s, w = _sigmoid(x), _upstream(x.shape)
            y = Swish.apply(_fresh(t))
            checker.shape(y, x.shape, "forward")
            checker.close(y, x * s, "forward", rtol=1e-12)
            _gradient(checker, Swish.apply, t, w * (s + x * s * (1 - s)), {
                "the buggy line kept: x * (1 - s) lacks the factor s of sigmoid'(x) = "
                "s (1 - s)": w * (s + x * (1 - s)),
                "the incoming gradient forgotten: multiply by grad": s + x * s * (1 - s),
                "the product rule's first term s dropped: d(x s)/dx = s + x s'":
                    w * x * s * (1 - s),
                "the product rule's second term x s' dropped: d(x s)/dx = s + x s'": w * s,
                "(1 - s) dropped: sigmoid'(x) = s (1 - s)": w * (s + x * s)})
            _gradcheck(checker, Swish.apply, t)


@exercise_check("Exercise 2 (SmoothClamp)", yours="SmoothClamp")
def check_smooth_clamp(checker: Checker, SmoothClamp: type[tl.Function],  # noqa: N803
                       check_inputs: dict[str, tl.Tensor]) -> None:
    """``SmoothClamp`` for c = 1, 2.5 and 0.5: its forward, c tanh(x / c) (shape, then
    values), then its backward's gradient for an uneven upstream gradient, then gradcheck."""
    for c in (1.0, 2.5, 0.5):
        for what, t in check_inputs.items():
            with checker.case(f"c = {c}, {what}", hint="chain rule: the derivative of "
                              "tanh(u) is 1 - tanh(u)**2, and u = x / c"):
                x = np.array(t.numpy(), dtype=np.float64)
                tanh, w = np.tanh(x / c), _upstream(x.shape)
                y = SmoothClamp.apply(_fresh(t), c=c)
                checker.shape(y, x.shape, "forward")
                checker.close(y, c * tanh, "forward", rtol=1e-12, mistakes={
                    "the factor c in front missing: y = c tanh(x / c)": tanh,
                    "x not divided by c inside the tanh: y = c tanh(x / c)": c * np.tanh(x),
                    "x multiplied by c inside the tanh: it is divided, tanh(x / c)":
                        c * np.tanh(x * c),
                    "c not used: the keyword c= arrives as forward's argument c": np.tanh(x)})
                _gradient(checker, functools.partial(SmoothClamp.apply, c=c), t,
                          w * (1 - tanh**2), {
                    "the incoming gradient forgotten: multiply by grad": 1 - tanh**2,
                    "a factor c too many: the outer c and the 1/c of u = x / c cancel":
                        w * c * (1 - tanh**2),
                    "a factor 1/c too many: the outer c and the 1/c of u = x / c cancel":
                        w * (1 - tanh**2) / c,
                    "1 - y**2 with the output y = c tanh(x / c): tanh's derivative needs "
                    "tanh(x / c) itself": w * (1 - (c * tanh) ** 2),
                    "tanh's derivative taken at x: it is 1 - tanh(x / c)**2":
                        w * (1 - np.tanh(x) ** 2)})
                _gradcheck(checker, functools.partial(SmoothClamp.apply, c=c), t)


@exercise_check("Exercise 3 (cumsum with custom_gradient)", yours="cumsum_with_grad")
def check_cumsum_with_grad(checker: Checker, cumsum_with_grad: Any,
                           check_inputs: dict[str, tl.Tensor]) -> None:
    """``cumsum_with_grad(x)``: its values against ``np.cumsum`` (shape, then values), then
    the vjp's gradient for an uneven upstream gradient, then gradcheck."""
    vectors = {"five values in [-6, 6]": check_inputs["five values in [-6, 6]"],
               "four values": check_inputs["four values of size about 3"],
               "a single value": tl.tensor([0.7], dtype=tl.float64, requires_grad=True)}
    for what, t in vectors.items():
        with checker.case(what, hint="x_j appears in y_j, y_(j+1), ..., y_last: its gradient "
                          "is the sum of those grads, a cumulative sum taken from the end"):
            x = np.array(t.numpy(), dtype=np.float64)
            w = _upstream(x.shape)
            y = cumsum_with_grad(_fresh(t))
            checker.shape(y, x.shape, "values")
            checker.close(y, np.cumsum(x), "values", rtol=1e-12)
            _gradient(checker, cumsum_with_grad, t, np.cumsum(w[::-1])[::-1], {
                "the cumulative sum taken from the start: x_j is in every y_k with k >= j, so "
                "sum grad from the end": np.cumsum(w),
                "the sum from the end not turned back: np.cumsum(grad[::-1])[::-1]":
                    np.cumsum(w[::-1]),
                "grad passed back as it came: x_j is in y_j and in every later y_k": w,
                "every x_j given the sum of all of grad: only the y_k with k >= j hold x_j":
                    np.full(x.shape, w.sum())})
            _gradcheck(checker, cumsum_with_grad, t)


def _wrong_shape_truth(MulSquare: type[tl.Function]) -> dict[str, Any]:  # noqa: N803
    """What happens when ``MulSquare``'s backward returns b's gradient as (1, 3)."""
    def backward(ctx: Any, grad: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        a, b = ctx.saved_tensors
        return grad * b * b, (2 * grad * a * b).reshape(1, 3)   # (1, 3) for a (3,) input

    wrong_shape = cast("type[tl.Function]", type("MulSquareWrongShape", (MulSquare,),
                                                 {"backward": staticmethod(backward)}))
    a = tl.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = tl.tensor([0.5, -1.0, 2.0], requires_grad=True)
    message = ""
    try:
        (wrong_shape.apply(a, b) * 2).sum().backward()
    except RuntimeError as error:
        message = str(error)
    named = [op for op in ("mul_square", "mul", "sum") if f"'{op}'" in message]
    return {"raises": bool(message), "op": named[0] if named else None,
            "a.grad is None": a.grad is None}


# each question: the hint, and what a wrong prediction overlooks
_PREDICTED: dict[str, tuple[str, dict[str, Any]]] = {
    "raises": ("after each backward the engine compares every gradient with the shape its "
               "input had in the forward",
               {"no error predicted: the engine compares each gradient with its input's shape "
                "and refuses (1, 3) for (3,), though numpy could broadcast it": False}),
    "op": ("the check runs right after the op whose backward returned the gradient",
           {"'mul' blamed: the check runs right after the backward that returned the (1, 3) "
            "gradient, mul_square's": "mul",
            "'sum' blamed: the check runs right after the backward that returned the (1, 3) "
            "gradient, mul_square's": "sum"}),
    "a.grad is None": ("the leaves' .grad are written only after every node succeeded",
                       {"a.grad predicted changed: the leaves' .grad are written only after "
                        "every node succeeded": False}),
}


@exercise_check("Exercise 4 (a gradient of the wrong shape)", yours="predictions")
def check_wrong_shape_predictions(checker: Checker, predictions: Any,
                                  MulSquare: type[tl.Function]) -> None:  # noqa: N803
    """``predictions()`` against what the backward of ``MulSquare`` with a (1, 3) gradient
    for b does, run here."""
    truth = _wrong_shape_truth(MulSquare)
    for key, (hint, overlooked) in _PREDICTED.items():
        with checker.case(key, hint=hint):
            checker.equal(predictions()[key], truth[key], key, overlooked)

