"""The checks of notebook 01 (scalar autograd): ``+`` and ``*`` of the learner's ``Value``, its
topological order and ``backward``, and the exercises (cosine, the best step of a forward
difference, ``/`` and ``tanh``, the gradients of (ab + c)^2 predicted).

Each check compares the learner's code with ``tensorlib.scalar.Value`` and names the usual
slips: a gradient set (``=``) where it must be added to (``+=``), the slopes of a product
given to the wrong input, the incoming ``grad`` not multiplied in, a node placed twice, a walk
run inputs first. What a slip gives is computed by running the slip itself: a small class
whose ops make it (:class:`_Slipped`, and
:class:`~tensorlib.course.checks.slipped_scalar.SlippedNode`), or a walk that makes it
(:func:`_slipped_walk`). The graphs of the backward check are built node by node from recipes
with every op's local derivative given (:func:`_graph`), so the learner's walk is tested even
before their ``+`` and ``*`` are done; one op is checked on its own by :func:`_same_step`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import tensorlib.scalar
from tensorlib.course.checks.registry import HandOn, exercise_check, piece_check
from tensorlib.course.checks.slipped_scalar import DIVIDE_SLIPS, SlippedNode
from tensorlib.course.exercises import Checker

__all__ = ["check_value_ops", "check_value_backward", "check_cosine",
           "check_best_forward_power", "check_truediv_and_tanh", "check_gradient_predictions"]

_PackageValue = tensorlib.scalar.Value

# (name, data for a leaf or the op, the names of its inputs): the worked example of the text,
# a node used twice twice, x on three paths, and a chain deeper than a recursion could go.
_Recipe = Sequence[tuple[str, Any, tuple[str, ...]]]
_WORKED: _Recipe = [("a", -4.0, ()), ("b", 2.0, ()), ("c", "+", ("a", "b")),
                   ("a*b", "*", ("a", "b")), ("b**3", "**3", ("b",)),
                   ("d", "+", ("a*b", "b**3")), ("e", "-", ("c", "d")), ("f", "**2", ("e",))]
_REUSED: _Recipe = [("a", 3.0, ()), ("b", "+", ("a", "a")), ("c", "+", ("b", "b"))]
_DIAMOND: _Recipe = [("x", 0.5, ()), ("u", "*", ("x", "x")), ("v", "**3", ("x",)),
                    ("w", "*", ("u", "v")), ("y", "+", ("w", "x"))]
_CHAIN: _Recipe = [("x0", 1.001, ())] + [(f"x{i}", "*", (f"x{i - 1}", "x0"))
                                        for i in range(1, 150)]

_DATA: dict[str, Callable[..., float]] = {
    "+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y,
    "**2": lambda x: x * x, "**3": lambda x: x**3}
_LOCAL: dict[str, Callable[..., tuple[float, ...]]] = {  # d out / d each input
    "+": lambda x, y: (1.0, 1.0), "-": lambda x, y: (1.0, -1.0), "*": lambda x, y: (y, x),
    "**2": lambda x: (2 * x,), "**3": lambda x: (3 * x * x,)}


def _same_step(classes: Sequence[type], build: Callable[..., Any], inputs: Sequence[float],
               incoming: float, before: Sequence[float]) -> list[tuple[tuple, list[float]]]:
    """For each class (the learner's Value, tensorlib's): ``build`` run on fresh leaves whose
    grads start at ``before``; the output's (data, its children as indices of the leaves or
    "new", op), then the leaves' grads after one call of its ``_backward(incoming)``."""
    results = []
    for make in classes:
        leaves = [make(x) for x in inputs]
        for leaf, grad in zip(leaves, before, strict=True):
            leaf.grad = grad
        out = build(*leaves)
        shape = (out.data, [_index(leaves, c) for c in out.children], out.op)
        out._backward(incoming)
        results.append((shape, [leaf.grad for leaf in leaves]))
    return results


def _index(leaves: list[Any], node: Any) -> int | str:
    """Which leaf ``node`` is (by identity), or "new" for a node the op made."""
    return next((index for index, leaf in enumerate(leaves) if leaf is node), "new")


def _graph(make: type, recipe: _Recipe) -> dict[str, Any]:
    """The nodes of ``recipe`` as objects of class ``make`` (``make(data, children, op,
    label=...)``), built without ``+`` or ``*``: each op node's ``_backward`` adds its local
    derivative times ``grad`` to its inputs' grads."""
    nodes: dict[str, Any] = {}
    for name, what, inputs in recipe:
        if not inputs:
            nodes[name] = make(what, label=name)
            continue
        children = [nodes[i] for i in inputs]
        out = make(_DATA[what](*[c.data for c in children]), children, what, label=name)

        def _backward(grad: float, children: list = children, what: str = what) -> None:
            slopes = _LOCAL[what](*[c.data for c in children])
            for child, slope in zip(children, slopes, strict=True):
                child.grad += slope * grad

        out._backward = _backward
        nodes[name] = out
    return nodes


# ------------------------------------------------------------------------------- + and *
class _Slipped:
    """A scalar node whose ``+`` and ``*`` make one usual slip (``slip``, set by a subclass
    from :func:`_slipped_class`): what the learner's ``add`` and ``mul`` give with it."""

    slip = ""

    def __init__(self, data: float, children: Sequence[Any] = (), op: str = "",
                 label: str = "") -> None:
        self.data, self.children, self.op, self.label = float(data), tuple(children), op, label
        self.grad = 0.0
        self._backward: Callable[[float], None] = lambda grad: None

    def _op(self, other: Any, op: str) -> _Slipped:
        other = other if isinstance(other, _Slipped) else type(self)(other)
        slip, product = self.slip, op == "*"
        data = self.data * other.data if product and slip != "mul adds" else \
            self.data + other.data
        out = type(self)(data, (other, self) if slip == "children swapped" else (self, other),
                         "" if slip == "no op" else op)
        slopes = (other.data, self.data) if product else (1.0, 1.0)
        if product:
            slopes = {"slopes swapped": (self.data, other.data),
                      "self slope": (self.data, self.data),
                      "other slope": (other.data, other.data)}.get(slip, slopes)
        targets = [(self, slopes[0]), (other, slopes[1])]
        if not product and slip == "other missed":
            targets = targets[:1]
        setting = {"set": (True, True), "set self": (True, False),
                   "set other": (False, True)}.get(slip, (False, False))

        def _backward(grad: float) -> None:
            scale = 1.0 if slip == "grad ignored" else grad
            for (node, slope), sets in zip(targets, setting, strict=False):
                if sets:
                    node.grad = slope * scale
                else:
                    node.grad += slope * scale

        if slip != "no backward":
            out._backward = _backward
        return out

    def __add__(self, other: Any) -> _Slipped:
        return self._op(other, "+")

    def __mul__(self, other: Any) -> _Slipped:
        return self._op(other, "*")

    __radd__, __rmul__ = __add__, __mul__


def _slipped_class(slip: str) -> type:
    return type(f"_Slipped_{slip.replace(' ', '_')}", (_Slipped,), {"slip": slip})


# What each slip of add and mul is, in the learner's words.
_OPS_SLIPS = {
    "set": "the grads are set (=), not added to (+=): a node used twice, or a grad that was "
           "already there, loses its share",
    "set self": "self.grad is set (=), not added to (+=): a node used twice, or a grad that "
                "was already there, loses its share",
    "set other": "other.grad is set (=), not added to (+=): a node used twice, or a grad that "
                 "was already there, loses its share",
    "slopes swapped": "in *'s step the slopes go to the wrong inputs: self gets other.data * "
                      "grad, other gets self.data * grad",
    "self slope": "in *'s step self gets other.data * grad (the slope of a * b in a is b), "
                  "not self.data * grad",
    "other slope": "in *'s step other gets self.data * grad (the slope of a * b in b is a), "
                   "not other.data * grad",
    "grad ignored": "the incoming grad is not multiplied in: each input gets (d out / d input) "
                    "* grad",
    "other missed": "+'s step gives grad to self only: other.grad += grad too",
    "no backward": "out._backward is never set, so the step does nothing: out._backward = "
                   "_backward",
    "children swapped": "the children in the wrong order: (self, other), self first",
    "no op": "no op given: OurValue(data, (self, other), \"+\") (or \"*\")",
    "mul adds": "* makes self.data + other.data: its data is the product",
}


def _ops_mistakes(build: Callable[..., Any], inputs: Sequence[float], incoming: float,
                  before: Sequence[float], part: int) -> dict[str, Any]:
    """What each slip gives for one case: ``part`` 0 the data, 1 the children, 3 the grads."""

    def given(slip: str) -> Callable[[], Any]:
        def value() -> Any:
            shape, grads = _same_step((_slipped_class(slip),), build, inputs, incoming,
                                      before)[0]
            return grads if part == 3 else shape[part]
        return value

    return {said: given(slip) for slip, said in _OPS_SLIPS.items()}


_OPS_CASES = [  # what, build, the leaves' data, the incoming grad, their grads before
    ("a + b: data, children, op", lambda a, b: a + b, (2.0, -3.0), 1.0, (0.0, 0.0)),
    ("a * b: data, children, op", lambda a, b: a * b, (2.0, -3.0), 1.0, (0.0, 0.0)),
    ("the backward step of a * b with grad 2.5", lambda a, b: a * b, (1.5, -4.0), 2.5,
     (0.0, 0.0)),
    ("a number on the left: 2 * a and 2 + a", lambda a, b: (2 * a) * (2 + b), (0.5, 3.0), 1.0,
     (0.0, 0.0)),
    ("a used twice: a * a", lambda a, b: a * a, (3.0, 0.0), 1.0, (0.0, 0.0)),
    ("a used twice: a + a", lambda a, b: a + a, (3.0, 0.0), 1.0, (0.0, 0.0)),
    ("grads already there are added to (+=): a + b", lambda a, b: a + b, (2.0, 5.0), 1.0,
     (10.0, -1.0)),
    ("grads already there are added to (+=): a * b", lambda a, b: a * b, (2.0, 5.0), 1.0,
     (10.0, -1.0)),
]


@piece_check("Value: + and *", yours=("add", "mul"), label="Value's + and *")
def check_value_ops(checker: Checker, add: Callable[..., Any], mul: Callable[..., Any],
                    OurValue: type) -> HandOn:
    """One ``+`` or ``*`` of ``OurValue`` (with ``add`` and ``mul`` as its ops) against
    ``tensorlib.scalar.Value``: the output's op, data and children first, then the inputs'
    grads after one backward step; numbers on the left, a node used twice, grads already
    there."""
    for what, build, inputs, incoming, before in _OPS_CASES:
        with checker.case(what, hint="out = OurValue(data, (self, other), op); in _backward, "
                          "self.grad += (d out / d self) * grad, the same for other"):
            (mine, my_grads), (package, package_grads) = _same_step(
                (OurValue, _PackageValue), build, inputs, incoming, before)
            other_op = {"+": "*", "*": "+"}.get(package[2])
            checker.equal(mine[2], package[2], "op", mistakes={
                "the ops' labels swapped: + makes op \"+\", * makes op \"*\"": other_op,
                _OPS_SLIPS["no op"]: ""})
            checker.close(mine[0], package[0], "data", rtol=1e-12,
                          mistakes=_ops_mistakes(build, inputs, incoming, before, 0))
            checker.equal(mine[1], package[1], "children (which inputs, in order)",
                          mistakes=_ops_mistakes(build, inputs, incoming, before, 1))
            checker.close(my_grads, package_grads, "the inputs' grads after one backward step",
                          rtol=1e-12, mistakes=_ops_mistakes(build, inputs, incoming, before, 3))
    return HandOn(OurValue, _PackageValue)


def _ops_agree(OurValue: type) -> bool:
    """Whether ``OurValue``'s + and * give what tensorlib's do in every case of their check
    (quietly: that check says what is wrong)."""
    try:
        for _, build, inputs, incoming, before in _OPS_CASES:
            (mine, my_grads), (package, package_grads) = _same_step(
                (OurValue, _PackageValue), build, inputs, incoming, before)
            if (mine[1], mine[2]) != (package[1], package[2]) or not np.allclose(
                    [mine[0], *my_grads], [package[0], *package_grads], rtol=1e-12):
                return False
    except Exception:  # ops that fail here are not right either
        return False
    return True


# ------------------------------------------------------------ topological order, backward
def _order(root: Any, visited: bool = True, children_first: bool = True) -> list[Any]:
    """A depth-first order of ``root``'s graph: each node after its children (or before them,
    ``children_first=False``), each once (or once per use, ``visited=False``)."""
    order: list[Any] = []
    seen: set[int] = set()

    def place(node: Any) -> None:
        if visited and id(node) in seen:
            return
        seen.add(id(node))
        if not children_first:
            order.append(node)
        for child in node.children:
            place(child)
        if children_first:
            order.append(node)

    place(root)
    return order


# What each slip of topological_order and backward is, in the learner's words.
_WALK_SLIPS = {
    "no visited": "a node used twice is placed twice, so its step runs twice: keep a visited "
                  "set and place each node once",
    "not reversed": "the steps run inputs first: call _backward in reverse order, the output "
                    "first",
    "children after": "each node is placed before its children: append it after placing them",
    "no seed": "the output's grad is not 1 when the steps run: set self.grad = 1.0 after "
               "setting every grad to 0",
    "grad 1": "each node's step gets 1.0, not its own grad: node._backward(node.grad)",
}


def _slipped_walk(recipe: _Recipe, out: str, slip: str, walks: int = 1) -> list[float]:
    """Every node's grad, in the recipe's order, after ``walks`` backward walks that make
    ``slip`` on a fresh graph of tensorlib's Values."""
    nodes = _graph(_PackageValue, recipe)
    root = nodes[out]
    order = _order(root, visited=slip != "no visited", children_first=slip != "children after")
    for _ in range(walks):
        for node in order:
            if slip != "no reset" and (node.children or slip != "leaves kept"):
                node.grad = 0.0
        if slip != "no seed":
            root.grad = 1.0
        for node in order if slip == "not reversed" else reversed(order):
            node._backward(1.0 if slip == "grad 1" else node.grad)
    return [node.grad for node in nodes.values()]


def _labels(order: Any) -> list[str]:
    """The labels of a list of nodes, sorted (what a topological order holds)."""
    return sorted(node.label for node in order)


@piece_check("Value: topological order and backward", yours=("topological_order", "backward"),
             label="Value")
def check_value_backward(checker: Checker, topological_order: Callable[[Any], Any],
                         backward: Callable[[Any], Any],
                         OurValue: type) -> HandOn:
    """``topological_order`` on the worked example (each node once, after its children, the
    output last), then ``backward`` on four graphs built node by node (the worked example, a
    node used twice twice, three paths, a chain of 150), and twice in a row."""
    with checker.case("the worked example's order: each node once, after its children, f last",
                      hint="place a node only after placing all of its children; skip nodes "
                           "already placed"):
        nodes = _graph(OurValue, _WORKED)
        package = _graph(_PackageValue, _WORKED)
        order = topological_order(nodes["f"])
        checker.true(isinstance(order, (list, tuple)), f"topological_order returned "
                     f"{type(order).__name__}, not a list",
                     "None where a list was expected: a missing `return order`?"
                     if order is None else None)
        checker.equal(_labels(order), sorted(nodes), "the nodes in the order", mistakes={
            _WALK_SLIPS["no visited"]: lambda: _labels(_order(package["f"], visited=False)),
            "the leaves are left out: every node goes in the order, a and b too":
                [name for name in sorted(nodes) if name not in ("a", "b")]})
        checker.equal(order[-1].label, "f", "the last node", mistakes={
            _WALK_SLIPS["children after"]: _order(package["f"], children_first=False)[-1].label,
            "the order is reversed: inputs first, the output f last": "a"})
        place = {id(n): k for k, n in enumerate(order)}
        checker.true(all(place[id(c)] < place[id(n)] for n in order for c in n.children),
                     "some node comes before one of its children", _WALK_SLIPS["children after"])
    for what, recipe, out in [("the worked example: df/da = 4, df/db = 28", _WORKED, "f"),
                              ("a node used twice, twice: c = (a + a) + (a + a)", _REUSED, "c"),
                              ("x on three paths: y = x*x * x**3 + x", _DIAMOND, "y"),
                              ("a chain of 150 products", _CHAIN, "x149")]:
        with checker.case(what, hint="zero every grad in the order, set the output's grad to "
                                     "1, then call _backward on the nodes in reverse order"):
            mine, package = _graph(OurValue, recipe), _graph(_PackageValue, recipe)
            backward(mine[out])
            package[out].backward()
            checker.close([n.grad for n in mine.values()], [n.grad for n in package.values()],
                          "every node's grad, in the recipe's order", rtol=1e-9, mistakes={
                              said: (lambda recipe=recipe, out=out, slip=slip:
                                     _slipped_walk(recipe, out, slip))
                              for slip, said in _WALK_SLIPS.items()})
    with checker.case("backward twice gives the same grads (it starts from 0)",
                      hint="backward starts every walk afresh: each grad 0, the output's 1"):
        nodes = _graph(OurValue, _WORKED)
        backward(nodes["f"])
        backward(nodes["f"])
        checker.equal([nodes["a"].grad, nodes["b"].grad], [4.0, 28.0], "(df/da, df/db)",
                      mistakes={
                          "the grads are not set to 0 before the walk: the second backward "
                          "added to what the first left": lambda: _slipped_walk(
                              _WORKED, "f", "no reset", walks=2)[:2],
                          "the leaves' grads are not set to 0: every node of the order, "
                          "leaves too": lambda: _slipped_walk(_WORKED, "f", "leaves kept",
                                                              walks=2)[:2]})
    return HandOn(OurValue, _PackageValue, given=_ops_agree(OurValue))


# ---------------------------------------------------------------------- exercise 1: cosine
_COSINE_SLIPS = {
    "sin": "math.sin for the node's data: it is math.cos(x.data)",
    "plus sin": "the slope of cos is -sin x: the minus sign is missing",
    "cos slope": "the slope is cos x, the function itself: the derivative of cos is -sin",
    "grad ignored": "the incoming grad is not multiplied in: x.grad += -sin(x) * grad",
    "set": "x.grad is set (=), not added to (+=): x used twice loses a share",
    "no link": "x gets no gradient: the output needs (x,) as its children and out._backward "
               "= _backward",
}


def _cosine(slip: str = "") -> Callable[[Any], Any]:
    """cos as a node of tensorlib's Value, making ``slip`` (a key of _COSINE_SLIPS) or none."""
    def cosine(x: Any) -> Any:
        data = math.sin(x.data) if slip == "sin" else math.cos(x.data)
        out = _PackageValue(data, () if slip == "no link" else (x,), "cos")

        def _backward(grad: float) -> None:
            slope = {"plus sin": math.sin(x.data), "cos slope": math.cos(x.data)}.get(
                slip, -math.sin(x.data))
            scale = 1.0 if slip == "grad ignored" else grad
            if slip == "set":
                x.grad = slope * scale
            else:
                x.grad += slope * scale

        out._backward = _backward
        return out
    return cosine


def _value_and_grads(function: Callable[..., Any], inputs: Sequence[float]
                     ) -> tuple[float, list[float]]:
    """The output's data and the inputs' grads of ``function`` on fresh Values, after
    tensorlib's backward."""
    leaves = [_PackageValue(x) for x in inputs]
    out = function(*leaves)
    out.backward()
    return out.data, [leaf.grad for leaf in leaves]


_COSINE_CASES: list[tuple[str, Callable[[Callable[[Any], Any]], Callable[..., Any]],
                          tuple[float, ...]]] = [
    ("cos(x) at x = 0.7", lambda cos: cos, (0.7,)),
    ("cos(x) at x = -2.5", lambda cos: cos, (-2.5,)),
    ("cos(x * y) * 3 at (0.7, -1.3)", lambda cos: lambda x, y: cos(x * y) * 3, (0.7, -1.3)),
    ("cos(x) * cos(x) at x = 1.1 (x used twice)", lambda cos: lambda x: cos(x) * cos(x),
     (1.1,)),
]


@exercise_check("Exercise 1 (cosine)", yours="cosine")
def check_cosine(checker: Checker, cosine: Callable[[Any], Any]) -> None:
    """``cosine`` alone and inside larger expressions: its value against math.cos, then the
    inputs' gradients after tensorlib's backward against the exact ones (-sin x)."""
    for what, expression, inputs in _COSINE_CASES:
        with checker.case(what, hint="the derivative of cos is -sin; multiply it by the "
                          "incoming grad and add (+=) the product to x.grad"):
            leaves = [_PackageValue(x) for x in inputs]
            out = expression(cosine)(*leaves)
            checker.true(hasattr(out, "data") and hasattr(out, "_backward"),
                         f"the result is {out!r}, not a Value",
                         "cosine returns a Value node: Value(math.cos(x.data), (x,), \"cos\")")
            value, grads = _value_and_grads(expression(_cosine()), inputs)
            checker.close(out.data, value, "value", rtol=1e-12, mistakes={
                _COSINE_SLIPS["sin"]: lambda e=expression, i=inputs:
                    _value_and_grads(e(_cosine("sin")), i)[0]})
            out.backward()
            checker.close([leaf.grad for leaf in leaves], grads, "the inputs' gradients",
                          rtol=1e-9, atol=1e-12, mistakes={
                              said: (lambda e=expression, i=inputs, slip=slip:
                                     _value_and_grads(e(_cosine(slip)), i)[1])
                              for slip, said in _COSINE_SLIPS.items() if slip != "sin"})


# ------------------------------------------------------------ exercise 2: the best eps
def _cubic(x: float) -> float:
    return x**3 - 4 * x


def _best_power(x: float) -> int:
    """The k of the smallest forward-difference error of x**3 - 4x at x, eps = 10**-k."""
    slope = 3 * x**2 - 4
    errors = {k: abs((_cubic(x + 10.0**-k) - _cubic(x)) / 10.0**-k - slope)
              for k in range(1, 14)}
    return min(errors, key=lambda k: errors[k])


@exercise_check("Exercise 2 (the best eps at x = 1e4)", yours="best_forward_power")
def check_best_forward_power(checker: Checker, best_forward_power: Callable[[], Any]) -> None:
    """``best_forward_power()`` against the measured best power at x = 1e4, within one."""
    best, at_two = _best_power(1e4), _best_power(2.0)
    with checker.case("the best forward-difference eps, within a factor of 10",
                      hint="set the two errors equal: 1e-16 |f| / eps = |f''| eps / 2, "
                           "and solve for eps"):
        k = best_forward_power()
        checker.true(isinstance(k, (int, np.integer)) and not isinstance(k, bool),
                     f"best_forward_power() returned {k!r}, not a whole number",
                     "return the power k (4 for eps = 1e-4), not eps itself")
        likely = None
        if k == at_two:
            likely = (f"1e-{at_two} is the best step at x = 2 (section 1); at x = 1e4, |f| is "
                      "about 1e12, so the rounding error is far larger: balance them again")
        elif k < 0:
            likely = "eps = 10**-k: k is the positive power (4 for eps = 1e-4)"
        checker.true(abs(k - best) <= 1, f"you predicted eps = 1e-{k}; the measured errors "
                     f"are smallest at eps = 1e-{best}", likely)


# ------------------------------------------------------------ exercise 3: / and tanh
def _walk(out: Any) -> None:
    """Backpropagate from ``out`` through any nodes with ``children`` and ``_backward``: each
    grad 0, the output's 1, the steps in reverse topological order (the check's own walk, so
    that this exercise does not depend on the learner's backward)."""
    order = _order(out)
    for node in order:
        node.grad = 0.0
    out.grad = 1.0
    for node in reversed(order):
        node._backward(node.grad)


def _slipped_divide(expression: Callable[..., Any], slip: str) -> list[float]:
    """The grads of (x, y) = (0.8, -1.7) through ``expression`` with the ops of ``slip``."""
    x, y = SlippedNode(0.8, slip=slip), SlippedNode(-1.7, slip=slip)
    _walk(expression(x, y))
    return [x.grad, y.grad]


_EXPRESSIONS: dict[str, Callable[[Any, Any], Any]] = {
    "x / y": lambda x, y: x / y,
    "tanh(x)": lambda x, y: x.tanh(),
    "tanh(x / y) / y": lambda x, y: (x / y).tanh() / y,
    "x / tanh(x), x used twice": lambda x, y: x / x.tanh(),
}


@exercise_check("Exercise 3 (/ and tanh for our Value)", yours=("our_truediv", "our_tanh"))
def check_truediv_and_tanh(checker: Checker, our_truediv: Callable[..., Any],
                           our_tanh: Callable[..., Any],
                           OurValue: type) -> None:
    """``/`` and ``tanh`` of ``OurValue`` (``our_truediv`` and ``our_tanh`` set on it) against
    tensorlib's, on four expressions: the result's class and value, then the gradients of x
    and y after a backward walk of the check's own."""
    for what, build in _EXPRESSIONS.items():
        with checker.case(what, hint="q = x / y: x gets grad / y, y gets -x / y**2 * grad; "
                          "t = tanh(x): x gets (1 - t**2) * grad; always +="):
            ours_x, ours_y = OurValue(0.8), OurValue(-1.7)
            theirs_x, theirs_y = _PackageValue(0.8), _PackageValue(-1.7)
            mine, package = build(ours_x, ours_y), build(theirs_x, theirs_y)
            checker.true(isinstance(mine, OurValue), f"the result is a {type(mine).__name__}, "
                         "not an OurValue", "the output is made with OurValue(data, "
                         "children, op), not with Value (now the package's)")
            checker.close(mine.data, package.data, "value", rtol=1e-12)
            _walk(mine)
            package.backward()
            checker.close([ours_x.grad, ours_y.grad], [theirs_x.grad, theirs_y.grad],
                          "gradients of (x, y)", rtol=1e-12, atol=1e-12, mistakes={
                              said: (lambda build=build, slip=slip: _slipped_divide(build, slip))
                              for slip, said in DIVIDE_SLIPS.items()})


# ------------------------------------------------------------ exercise 4: predictions
def _gradient_mistakes(a: float, b: float, c: float) -> dict[str, dict[str, float]]:
    """What the usual slips of L = (ab + c)^2 and its gradients give, per key."""
    inner = a * b + c
    return {
        "L": {"ab + c is not squared: L = (ab + c)^2": inner,
              "only ab is squared: L = (ab + c)^2, the square of the whole sum":
                  (a * b) ** 2 + c},
        "a": {"the 2 of the square's derivative is missing: dL/d(ab + c) = 2 (ab + c)":
                  inner * b,
              "d(ab)/da is b, not a": 2 * inner * a,
              "the chain stops at dL/d(ab + c) = 2 (ab + c): times d(ab + c)/da = b":
                  2 * inner,
              "the sign of b is lost: b = -3": -2 * inner * b},
        "b": {"the 2 of the square's derivative is missing: dL/d(ab + c) = 2 (ab + c)":
                  inner * a,
              "d(ab)/db is a, not b": 2 * inner * b,
              "the sign is lost: dL/db = 2 (ab + c) a": -2 * inner * a},
        "c": {"the 2 of the square's derivative is missing: dL/d(ab + c) = 2 (ab + c)": inner,
              "d(ab + c)/dc = 1 is only the last link: times dL/d(ab + c) = 2 (ab + c)": 1.0,
              "the sign is lost: dL/dc = 2 (ab + c)": -2 * inner},
    }


@exercise_check("Exercise 4 (gradients of (ab + c)^2)", yours="predictions")
def check_gradient_predictions(checker: Checker, predictions: Callable[[], Any]) -> None:
    """``predictions()`` against L and its gradients computed by tensorlib's Value and
    backward at a = 2, b = -3, c = 10."""
    a, b, c = _PackageValue(2.0), _PackageValue(-3.0), _PackageValue(10.0)
    loss = (a * b + c) ** 2
    loss.backward()
    truth = {"L": loss.data, "a": a.grad, "b": b.grad, "c": c.grad}
    mistakes = _gradient_mistakes(2.0, -3.0, 10.0)
    hints = {"L": "ab + c first, then square",
             "a": "dL/d(ab + c) = 2 (ab + c), then d(ab)/da = b",
             "b": "dL/d(ab + c) = 2 (ab + c), then d(ab)/db = a",
             "c": "dL/d(ab + c) = 2 (ab + c), then d(ab + c)/dc = 1"}
    for name in truth:
        with checker.case(name if name == "L" else f"dL/d{name}", hint=hints[name]):
            predicted = predictions()
            checker.true(isinstance(predicted, dict) and name in predicted,
                         f"no key {name!r} in what predictions() returned: {predicted!r}",
                         "return a dict keyed \"L\", \"a\", \"b\" and \"c\"")
            checker.close(predicted[name], truth[name], name, rtol=1e-9,
                          mistakes=mistakes[name])
