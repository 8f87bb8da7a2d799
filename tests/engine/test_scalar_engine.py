"""Tests for the scalar autograd engine ``tensorlib.scalar.engine``."""

from __future__ import annotations

import gc
import math
import weakref
from collections.abc import Callable, Iterator

import pytest

from tensorlib.scalar import Value

STEP = 1e-6


def numerical_gradients(function: Callable[..., Value], *inputs: float) -> list[float]:
    """Central differences of ``function`` at ``inputs``, one per input."""
    gradients = []
    for i in range(len(inputs)):
        plus = [Value(x + STEP if j == i else x) for j, x in enumerate(inputs)]
        minus = [Value(x - STEP if j == i else x) for j, x in enumerate(inputs)]
        gradients.append((function(*plus).data - function(*minus).data) / (2 * STEP))
    return gradients


def analytic_gradients(function: Callable[..., Value], *inputs: float) -> list[float]:
    values = [Value(x) for x in inputs]
    function(*values).backward()
    return [v.grad for v in values]


# ----------------------------------------------------------------------------- construction


def test_leaf_fields():
    v = Value(3, label="x")
    assert isinstance(v.data, float) and v.data == 3.0
    assert v.grad == 0.0
    assert v.op == ""
    assert v.children == ()
    assert v.label == "x"


def test_children_are_an_ordered_tuple_and_op_is_labelled():
    a, b = Value(1.0), Value(2.0)
    c = b * a
    assert isinstance(c.children, tuple)
    assert c.children[0] is b and c.children[1] is a
    assert c.op == "*"
    assert (a + b).op == "+"
    assert (a**2).op == "**2"
    assert a.exp().op == "exp"
    assert a.tanh().op == "tanh"
    d = a + a
    assert d.children == (a, a)


def test_repr_is_deterministic():
    assert repr(Value(4)) == "Value(data=4.0000, grad=0.0000)"
    v = Value(-1.5)
    v.backward()
    assert repr(v) == "Value(data=-1.5000, grad=1.0000)"


def test_data_must_be_a_real_number():
    with pytest.raises(TypeError):
        Value("3")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Value(Value(1.0))  # type: ignore[arg-type]


# ------------------------------------------------------------------------- worked example


def test_worked_example_matches_hand_derivation():
    a = Value(-4.0)
    b = Value(2.0)
    c = a + b  # -2
    d = a * b + b**3  # -8 + 8 = 0
    e = c - d  # -2
    f = e**2  # 4
    f.backward()
    assert (c.data, d.data, e.data, f.data) == (-2.0, 0.0, -2.0, 4.0)
    # df/de = 2e = -4; de/dc = 1, de/dd = -1.
    # df/da = -4 * (dc/da - dd/da) = -4 * (1 - b) = 4
    # df/db = -4 * (dc/db - dd/db) = -4 * (1 - (a + 3 b^2)) = -4 * (1 - 8) = 28
    assert a.grad == pytest.approx(4.0)
    assert b.grad == pytest.approx(28.0)
    assert e.grad == pytest.approx(-4.0)
    assert d.grad == pytest.approx(4.0)


# ------------------------------------------------------------- gradients vs finite differences

UNARY_CASES = {
    "neg": (lambda x: -x, [-1.3, 0.7]),
    "square": (lambda x: x**2, [-1.3, 0.7]),
    "cube": (lambda x: x**3, [-1.3, 0.7]),
    "reciprocal": (lambda x: x**-1, [-1.3, 0.7]),
    "sqrt": (lambda x: x**0.5, [0.3, 2.5]),
    "power_zero": (lambda x: x**0, [-1.3, 0.7]),
    "exp": (lambda x: x.exp(), [-2.0, 0.4, 3.0]),
    "log": (lambda x: x.log(), [0.3, 2.5]),
    "tanh": (lambda x: x.tanh(), [-2.0, 0.4, 1.1]),
    "sigmoid": (lambda x: x.sigmoid(), [-3.0, 0.0, 2.5]),
    "relu": (lambda x: x.relu(), [-0.8, 0.9]),
    "add_number": (lambda x: x + 2.5, [0.7]),
    "radd": (lambda x: 2.5 + x, [0.7]),
    "sub_number": (lambda x: x - 2.5, [0.7]),
    "rsub": (lambda x: 2.5 - x, [0.7]),
    "mul_number": (lambda x: x * -3, [0.7]),
    "rmul": (lambda x: -3 * x, [0.7]),
    "div_number": (lambda x: x / 4, [0.7]),
    "rdiv": (lambda x: 2 / x, [-1.3, 0.7]),
    "composite": (lambda x: ((x * 2 + 1).tanh() * x.exp() - x**2 / 3).sigmoid(), [0.2, -0.9]),
}


@pytest.mark.parametrize("name", sorted(UNARY_CASES))
def test_unary_gradient_matches_central_difference(name):
    function, points = UNARY_CASES[name]
    for x in points:
        (numeric,) = numerical_gradients(function, x)
        (analytic,) = analytic_gradients(function, x)
        assert analytic == pytest.approx(numeric, rel=1e-5, abs=1e-7), (name, x)


BINARY_CASES = {
    "add": lambda x, y: x + y,
    "sub": lambda x, y: x - y,
    "mul": lambda x, y: x * y,
    "div": lambda x, y: x / y,
    "mixed": lambda x, y: (x * y + x / y - y**2).tanh() * (x - y).exp(),
}


@pytest.mark.parametrize("name", sorted(BINARY_CASES))
def test_binary_gradient_matches_central_difference(name):
    function = BINARY_CASES[name]
    for x, y in [(1.5, -0.7), (-2.0, 3.0)]:
        numeric = numerical_gradients(function, x, y)
        analytic = analytic_gradients(function, x, y)
        assert analytic == pytest.approx(numeric, rel=1e-5, abs=1e-7), (name, x, y)


def test_binary_gradients_are_exact_where_hand_derivable():
    x, y = Value(3.0), Value(-2.0)
    (x / y).backward()
    assert x.grad == -0.5
    assert y.grad == -3.0 / 4.0
    x, y = Value(3.0), Value(-2.0)
    (x - y).backward()
    assert (x.grad, y.grad) == (1.0, -1.0)


# --------------------------------------------------------------------------- reflected ops


def test_reflected_operators_give_right_values():
    v = Value(4.0)
    assert (2 + v).data == 6.0
    assert (2 - v).data == -2.0
    assert (2 * v).data == 8.0
    assert (2 / v).data == 0.5
    assert (-v).data == -4.0
    assert (v - 1).data == 3.0
    assert (v / 8).data == 0.5
    assert isinstance(2 - v, Value)


def test_unsupported_operand_types_raise_type_error():
    with pytest.raises(TypeError):
        Value(1.0) + "x"  # type: ignore[operator]
    with pytest.raises(TypeError):
        [1] * Value(2.0)  # type: ignore[operator]


# --------------------------------------------------------------------------- graph reuse


def test_reused_node_gets_all_paths():
    a = Value(3.0)
    b = a + a
    c = b + b
    c.backward()
    assert a.grad == 4.0
    assert b.grad == 2.0


def test_value_times_itself():
    a = Value(3.0)
    (a * a).backward()
    assert a.grad == 6.0


def test_topological_order_visits_each_node_once_leaves_first():
    a = Value(1.0, label="a")
    b = Value(2.0, label="b")
    c = a * b
    d = c + a
    e = d * c
    order = e.topological_order()
    assert order == [a, b, c, d, e]
    assert len(order) == len({id(node) for node in order})
    # Deterministic: the same graph always yields the same order.
    assert e.topological_order() == order


def test_backward_visits_each_node_once():
    calls = []
    a = Value(2.0)
    b = a * a
    c = b + b
    original = b._backward

    def counting_backward(grad):
        calls.append(grad)
        original(grad)

    b._backward = counting_backward
    c.backward()
    assert calls == [2.0]  # once, with both paths through b already summed
    assert a.grad == 8.0  # c = 2 a^2


# ------------------------------------------------------------------------ accumulation


def test_gradients_accumulate_across_backward_calls():
    a = Value(1.5)
    b = a * 2
    c = b * 3
    c.backward()
    assert a.grad == 6.0
    c.backward()
    assert a.grad == 12.0  # leaves accumulate; interior grads are not double counted
    assert b.grad == 3.0
    a.grad = 0.0
    c.backward()
    assert a.grad == 6.0


def test_backward_on_a_leaf_seeds_its_grad():
    a = Value(5.0)
    a.backward()
    assert a.grad == 1.0


@pytest.fixture
def cyclic_gc_paused() -> Iterator[None]:
    """Pause Python's cyclic collector, which otherwise rescans a growing graph many times.

    Only a speed-up: the engine makes no reference cycles, so nothing is left uncollected.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def test_graph_is_freed_without_the_cyclic_collector(cyclic_gc_paused):
    a = Value(2.0)
    b = (a * a + 1).tanh().exp()
    b.backward()
    watcher = weakref.ref(b.children[0])
    del b
    assert watcher() is None


def test_deep_chain_does_not_recurse(cyclic_gc_paused):
    x = Value(0.0)
    one = Value(1.0)
    y = x
    for _ in range(100_000):
        y = y + one
    y.backward()
    assert y.data == 100_000.0
    assert x.grad == 1.0
    assert one.grad == 100_000.0  # one node reused by every step
    assert len(y.topological_order()) == 100_002  # x, one, and the chain


def test_deep_chain_of_reused_values(cyclic_gc_paused):
    x = Value(1.0)
    y = x
    for _ in range(5_000):  # each step uses y twice, far past the recursion limit
        y = y * 1.0 + y * 0.0
    y.backward()
    assert x.grad == pytest.approx(1.0)


# --------------------------------------------------------------------- numerical safety


def test_exp_overflows_to_inf_without_raising():
    x = Value(1000.0)
    y = x.exp()
    assert y.data == math.inf
    y.backward()
    assert x.grad == math.inf
    assert Value(-1000.0).exp().data == 0.0


def test_sigmoid_is_stable_for_large_magnitudes():
    assert Value(-1000.0).sigmoid().data == 0.0
    assert Value(1000.0).sigmoid().data == 1.0
    assert Value(0.0).sigmoid().data == 0.5
    x = Value(-1000.0)
    x.sigmoid().backward()
    assert x.grad == 0.0


def test_tanh_saturates():
    assert Value(1000.0).tanh().data == 1.0
    assert Value(-1000.0).tanh().data == -1.0


def test_pow_overflow_gives_signed_inf():
    assert (Value(10.0) ** 400).data == math.inf
    assert (Value(-10.0) ** 401).data == -math.inf
    assert (Value(-10.0) ** 400).data == math.inf


@pytest.mark.parametrize("bad", [0.0, -1.0])
def test_log_of_non_positive_raises(bad):
    with pytest.raises(ValueError, match=str(bad)):
        Value(bad).log()


def test_division_by_zero_value_raises():
    with pytest.raises(ZeroDivisionError, match="0.0"):
        Value(1.0) / Value(0.0)
    with pytest.raises(ZeroDivisionError):
        Value(1.0) / 0
    with pytest.raises(ZeroDivisionError):
        3 / Value(0.0)


def test_value_exponent_raises_type_error():
    with pytest.raises(TypeError, match="exponent"):
        Value(2.0) ** Value(3.0)
    with pytest.raises(TypeError, match="exponent"):
        2 ** Value(3.0)
    with pytest.raises(TypeError, match="exponent"):
        Value(2.0) ** "3"  # type: ignore[operator]


def test_pow_domain_errors():
    with pytest.raises(ValueError, match="not real"):
        Value(-8.0) ** (1 / 3)
    with pytest.raises(ZeroDivisionError):
        Value(0.0) ** -1


def test_pow_gradient_at_zero():
    x = Value(0.0)
    (x**2).backward()
    assert x.grad == 0.0
    x = Value(0.0)
    (x**1).backward()
    assert x.grad == 1.0
