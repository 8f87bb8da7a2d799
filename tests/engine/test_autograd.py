"""Tests for the backward engine: graph walking, accumulation, memory, versions, custom ops."""

import sys
import weakref

import numpy as np
import pytest

import tensorlib as tl
from tensorlib import Function, Tensor, custom_gradient, gradcheck, no_grad


def _f64(values):
    return Tensor(np.asarray(values, dtype=np.float64), requires_grad=True)


# --------------------------------------------------------------------------- chain rule


def test_chain_rule_with_reused_nodes():
    x = _f64([0.5, -1.5, 2.0])
    a = x * x  # used three times below
    b = a.exp()
    y = (a * b + a / 3.0 - b).sum()
    y.backward()
    xv = x.data
    av = xv * xv
    # dy/da = b + a*b + 1/3 - b = a*e^a + 1/3 ; da/dx = 2x
    expected = (av * np.exp(av) + 1.0 / 3.0) * 2.0 * xv
    np.testing.assert_allclose(x.grad, expected, rtol=1e-12)


def test_diamond_graph_sums_both_paths():
    x = _f64([1.0, 2.0])
    h = x * 3.0
    y = (h * h + h).sum()  # dy/dh = 2h + 1, dh/dx = 3
    y.backward()
    np.testing.assert_allclose(x.grad, (2 * 3.0 * x.data + 1) * 3.0)


def test_same_tensor_twice_in_one_op():
    x = _f64([3.0])
    (x * x).sum().backward()
    assert x.grad[0] == 6.0
    z = _f64([[1.0, 2.0], [3.0, 4.0]])
    (z @ z).sum().backward()
    ones = np.ones((2, 2))
    np.testing.assert_allclose(z.grad, ones @ z.data.T + z.data.T @ ones)


def test_only_leaves_requiring_grad_get_grad():
    x = _f64([1.0, 2.0])
    c = Tensor(np.array([3.0, 4.0]))
    y = x * c
    y.sum().backward()
    assert c.grad is None
    assert y.grad is None  # non-leaf grads are not kept by default
    np.testing.assert_array_equal(x.grad, [3.0, 4.0])


def test_retain_grad_keeps_non_leaf_gradient():
    x = _f64([1.0, 2.0])
    h = x * 2.0
    h.retain_grad()
    (h * h).sum().backward()
    np.testing.assert_array_equal(h.grad, 2 * h.data)
    np.testing.assert_array_equal(x.grad, 2 * h.data * 2.0)


def test_backward_on_a_leaf_itself():
    x = _f64([2.0])
    x.backward()
    np.testing.assert_array_equal(x.grad, [1.0])
    x.backward(np.array([5.0]))
    np.testing.assert_array_equal(x.grad, [6.0])


def test_explicit_grad_is_the_vector_of_the_vjp():
    x = _f64([[1.0, 2.0], [3.0, 4.0]])
    y = x * x
    weights = np.array([[1.0, 0.0], [2.0, -1.0]])
    y.backward(weights)
    np.testing.assert_array_equal(x.grad, 2 * x.data * weights)
    assert weights[1, 0] == 2.0  # the caller's array is not modified


def test_grad_dtype_follows_the_tensor():
    x = tl.tensor([1.0, 2.0], requires_grad=True)
    (x * 2.5).sum().backward()
    assert x.grad.dtype == np.float32
    y = tl.tensor([1.0, 2.0], requires_grad=True)
    (y * y).backward(np.array([1.0, 1.0]))  # a float64 seed is cast to the output dtype
    assert y.grad.dtype == np.float32


# --------------------------------------------------------------------------- accumulation


def test_gradients_accumulate_across_backward_calls():
    x = _f64([1.0, -2.0])
    (x * 3.0).sum().backward()
    first = x.grad
    (x * x).sum().backward()
    np.testing.assert_array_equal(x.grad, 3.0 + 2 * x.data)
    assert x.grad is first  # accumulated in place
    x.grad = None
    (x * 3.0).sum().backward()
    np.testing.assert_array_equal(x.grad, [3.0, 3.0])


def test_grad_is_not_aliased_to_graph_arrays():
    x = _f64([1.0, 2.0])
    y = x.reshape(2)  # backward hands back a view of the seed gradient
    seed = np.array([1.0, 1.0])
    y.backward(seed)
    x.grad[0] = 100.0
    assert seed[0] == 1.0
    z = _f64([1.0, 2.0])
    z.sum().backward()  # the sum's backward is a read-only broadcast
    assert z.grad.numpy().flags.writeable
    z.grad += 1.0
    np.testing.assert_array_equal(z.grad, [2.0, 2.0])


# --------------------------------------------------------------------------- deep graphs


def test_100k_op_chain_without_recursion_error():
    assert sys.getrecursionlimit() < 100_000
    x = _f64([0.5])
    y = x * 2.0
    for _ in range(100_000):
        y = -y  # the cheapest op: the test is about depth, not arithmetic
    y = y * 3.0
    y.backward()
    np.testing.assert_array_equal(y.data, [3.0])
    np.testing.assert_array_equal(x.grad, [6.0])
    del y  # tearing the long graph down must not overflow the C stack either


# --------------------------------------------------------------------------- graph freeing


def _graph_with_saved_intermediate():
    x = _f64([0.3, -0.7, 1.1])
    h = x.exp()  # Exp saves its output, Mul saves h's array
    y = (h * h).sum()
    ref = weakref.ref(h.numpy())
    return x, y, ref


def test_saved_arrays_are_released_after_backward():
    x, y, ref = _graph_with_saved_intermediate()
    assert ref() is not None  # still alive: the graph saved it
    y.backward()
    assert ref() is None  # the graph let it go, although the loss `y` is still referenced
    assert y.grad_fn is not None


def test_retain_graph_keeps_saved_arrays():
    x, y, ref = _graph_with_saved_intermediate()
    y.backward(retain_graph=True)
    assert ref() is not None
    y.backward()
    assert ref() is None


def test_second_backward_raises_mentioning_retain_graph():
    x, y, _ = _graph_with_saved_intermediate()
    y.backward()
    first = x.grad.numpy().copy()
    with pytest.raises(RuntimeError, match="retain_graph"):
        y.backward()
    np.testing.assert_array_equal(x.grad, first)


def test_second_backward_raises_for_node_without_saved_arrays():
    x = _f64([1.0, 2.0])
    y = (x + 1.0).sum()  # add and sum save no arrays
    y.backward()
    with pytest.raises(RuntimeError, match="retain_graph"):
        y.backward()


def test_retain_graph_allows_two_passes_and_doubles_the_grad():
    x = _f64([0.3, -0.7, 1.1])
    y = (x.exp() * x).sum()
    y.backward(retain_graph=True)
    once = x.grad.numpy().copy()
    np.testing.assert_allclose(once, np.exp(x.data) * (1 + x.data))
    y.backward()
    np.testing.assert_allclose(x.grad, 2 * once, rtol=1e-15)


# --------------------------------------------------------------------------- versions


def test_changing_a_saved_input_in_place_names_the_op():
    w = _f64([1.0, 2.0])
    y = (w * w).sum()
    with no_grad():
        w.add_(1.0)
    with pytest.raises(RuntimeError, match=r"'mul'.*in place"):
        y.backward()
    assert w.grad is None


def test_changing_a_saved_output_through_detach_names_the_op():
    x = _f64([0.1, 0.2])
    h = x.exp()
    y = h.sum()
    h.detach().mul_(2.0)  # shares h's version counter
    assert h.version == 1
    with pytest.raises(RuntimeError, match="'exp'"):
        y.backward()


def test_changing_a_constant_input_in_place_names_the_op():
    x = _f64([1.0, 2.0])
    c = Tensor(np.array([3.0, 4.0]))
    y = (x * c).sum()
    c.fill_(0.0)
    with pytest.raises(RuntimeError, match="'mul'"):
        y.backward()


def test_in_place_change_of_unsaved_input_is_fine():
    x = _f64([1.0, 2.0])
    y = (x + 1.0).sum()  # add saves nothing
    with no_grad():
        x.mul_(10.0)
    y.backward()
    np.testing.assert_array_equal(x.grad, [1.0, 1.0])


# --------------------------------------------------------------------------- no_grad


def test_no_grad_builds_no_graph():
    x = _f64([1.0, 2.0])
    with no_grad():
        y = (x * x).exp().sum()
    assert y.grad_fn is None
    assert not y.requires_grad
    with pytest.raises(RuntimeError, match="does not require grad"):
        y.backward()


def test_enable_grad_inside_no_grad_records():
    x = _f64([1.0])
    with no_grad(), tl.enable_grad():
        y = x * 2.0
    assert y.grad_fn is not None


# --------------------------------------------------------------------------- backward arguments


def test_backward_on_non_scalar_without_grad_raises():
    y = _f64([1.0, 2.0]) * 2.0
    with pytest.raises(RuntimeError, match=r"\(2,\)"):
        y.backward()


def test_backward_with_grad_of_wrong_shape_raises():
    x = _f64([[1.0, 2.0]])
    y = x * 2.0
    with pytest.raises(ValueError, match=r"\(2,\).*\(1, 2\)"):
        y.backward(np.ones(2))
    assert x.grad is None
    y.backward(np.ones((1, 2)))  # the graph is intact after the refusal
    np.testing.assert_array_equal(x.grad, [[2.0, 2.0]])


def test_backward_accepts_a_one_element_non_0d_output():
    x = _f64([3.0])
    (x * x).backward()
    assert x.grad[0] == 6.0


# --------------------------------------------------------------------------- custom Function


class Cube(Function):
    """x ** 3 with a hand-written backward."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 3.0 * x * x * grad


class ScaledSub(Function):
    """a - scale * b with broadcasting; a keyword parameter and two inputs."""

    op_name = "scaled_sub"

    @staticmethod
    def forward(ctx, a, b, scale=1.0):
        ctx.shapes, ctx.scale = (a.shape, b.shape), scale
        return a - scale * b

    @staticmethod
    def backward(ctx, grad):
        shape_a, shape_b = ctx.shapes
        grad_b = tl.unbroadcast(-ctx.scale * grad, shape_b) if ctx.needs_input_grad[1] else None
        return tl.unbroadcast(grad, shape_a), grad_b


def test_custom_function_via_apply():
    x = _f64([0.5, -1.0, 2.0])
    y = Cube.apply(x)
    np.testing.assert_array_equal(y.data, x.data**3)
    assert y.grad_fn is not None and "cube" in repr(y)
    y.sum().backward()
    np.testing.assert_allclose(x.grad, 3 * x.data**2)
    assert gradcheck(lambda t: Cube.apply(t), _f64([0.5, -1.0, 2.0]))


def test_custom_function_with_params_and_broadcast():
    a = _f64(np.arange(6.0).reshape(2, 3))
    b = _f64([1.0, 2.0, 3.0])
    y = ScaledSub.apply(a, b, scale=2.5)
    assert "scaled_sub" in repr(y)
    assert gradcheck(lambda u, v: ScaledSub.apply(u, v, scale=2.5), a, b)


def test_custom_function_needs_input_grad_skips_constants():
    a = _f64([1.0, 2.0])
    b = Tensor(np.array([3.0, 4.0]))
    y = ScaledSub.apply(a, b, scale=2.0)
    assert y.grad_fn.needs_input_grad == (True, False)
    y.sum().backward()
    np.testing.assert_array_equal(a.grad, [1.0, 1.0])
    assert b.grad is None


def test_function_apply_rejects_non_tensors():
    with pytest.raises(TypeError, match="input 0"):
        Cube.apply(np.ones(2))


def test_function_backward_with_wrong_shape_raises_and_leaves_grads():
    class BadShape(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad.sum(keepdims=True)

    x = _f64([1.0, 2.0])
    with pytest.raises(RuntimeError, match=r"shape \(1,\).*\(2,\)"):
        BadShape.apply(x).sum().backward()
    assert x.grad is None


def test_integer_outputs_carry_no_graph():
    x = _f64([1.5, 2.5])
    i = x.long()
    assert i.dtype == np.int64
    assert i.grad_fn is None and not i.requires_grad


# --------------------------------------------------------------------------- custom_gradient


def _external_square_plus(a, b):
    """An op computed outside the engine: out = a**2 + 3b (broadcast), with its VJP."""
    out = a.data**2 + 3.0 * b.data
    return custom_gradient(out, [a, b], lambda g: (2.0 * a.data * g, 3.0 * g.sum(axis=0)))


def test_a_failed_custom_vjp_changes_no_visible_gradient():
    # Riftco: a failed callback leaves visible gradients unchanged: the leaves' .grad and
    # the .grad of a retained non-leaf, which the pass reaches before the failing callback.
    x = tl.tensor([1.0, 2.0], requires_grad=True)
    y = tl.tensor([3.0, 4.0], requires_grad=True)
    y.grad = np.array([5.0, 6.0], dtype=np.float32)  # from an earlier pass
    d = custom_gradient(x.data * 3, [x], lambda g: (g[:1],)) * 2 + y  # a wrong-shape VJP
    d.retain_grad()
    with pytest.raises(RuntimeError, match="gradient of shape \\(1,\\) for input 0"):
        d.sum().backward()
    assert d.grad is None and x.grad is None
    np.testing.assert_array_equal(y.grad, [5.0, 6.0])
    raising = custom_gradient(x.data * 3, [x], lambda g: 1 / 0) * 2
    raising.retain_grad()
    with pytest.raises(ZeroDivisionError):
        raising.sum().backward()
    assert raising.grad is None and x.grad is None


def test_custom_gradient_gives_correct_grads():
    a = _f64([[1.0, 2.0], [3.0, -4.0]])
    b = _f64([0.5, 0.25])
    out = _external_square_plus(a, b)
    np.testing.assert_array_equal(out.data, a.data**2 + 3.0 * b.data)
    (out * out).sum().backward()
    g = 2 * out.data
    np.testing.assert_allclose(a.grad, 2 * a.data * g)
    np.testing.assert_allclose(b.grad, 3 * g.sum(axis=0))
    assert gradcheck(_external_square_plus, _f64([[1.0, 2.0], [3.0, -4.0]]), _f64([0.5, 0.25]))


def test_custom_gradient_none_for_an_input():
    a, b = _f64([1.0, 2.0]), _f64([3.0, 4.0])
    out = custom_gradient(a.data * b.data, [a, b], lambda g: (g * b.data, None))
    out.sum().backward()
    np.testing.assert_array_equal(a.grad, b.data)
    assert b.grad is None


@pytest.mark.parametrize(
    "vjp, message",
    [
        (lambda g: (g,), "1 gradients for 2 inputs"),
        (lambda g: (g, g, g), "3 gradients for 2 inputs"),
        (lambda g: (g, g[:1]), r"shape \(1,\)"),
        (lambda g: (g.astype(np.float32), g), "float32"),
        (lambda g: (g, 1.0), "input 1"),
    ],
)
def test_custom_gradient_bad_vjp_raises_and_changes_no_grad(vjp, message):
    a, b = _f64([1.0, 2.0]), _f64([3.0, 4.0])
    (a * 10.0 + b * 20.0).sum().backward()  # grads accumulated earlier
    before = a.grad.numpy().copy(), b.grad.numpy().copy()
    out = custom_gradient(a.data + b.data, [a, b], vjp)
    loss = (out * a).sum()  # `a` also gets a contribution from a healthy path
    with pytest.raises(RuntimeError, match=message):
        loss.backward()
    np.testing.assert_array_equal(a.grad, before[0])
    np.testing.assert_array_equal(b.grad, before[1])


def test_custom_gradient_vjp_that_raises_leaves_every_grad_unchanged():
    a, b = _f64([1.0, 2.0]), _f64([3.0, 4.0])
    (a * 2.0 + b).sum().backward()
    before = a.grad.numpy().copy(), b.grad.numpy().copy()

    def exploding(g):
        raise ZeroDivisionError("vjp failed")

    out = custom_gradient(a.data * b.data, [a, b], exploding)
    # b's healthy path is visited before the failing node is reached or after: either way
    # nothing may be committed.
    loss = (out + b * 5.0 + a.exp()).sum()
    with pytest.raises(ZeroDivisionError, match="vjp failed"):
        loss.backward()
    np.testing.assert_array_equal(a.grad, before[0])
    np.testing.assert_array_equal(b.grad, before[1])


class _OtherDeviceArray(np.ndarray):
    """An array "on" a second, fake device (a numpy subclass)."""


def test_custom_gradient_on_another_device_is_refused_before_any_grad_changes():
    from tensorlib.engine import backend

    backend.register_backend("otherdevice", np, lambda a: np.asarray(a).view(_OtherDeviceArray),
                             lambda: True, array_types=(_OtherDeviceArray,))
    try:
        a, b = _f64([1.0, 2.0]), _f64([3.0, 4.0])
        (a + b).sum().backward()
        before = a.grad.numpy().copy(), b.grad.numpy().copy()
        out = custom_gradient(a.data * b.data, [a, b],
                              lambda g: (g * b.data, (g * a.numpy()).view(_OtherDeviceArray)))
        with pytest.raises(RuntimeError, match="device 'otherdevice' for input 1, which is "
                                               "on 'cpu'"):
            out.sum().backward()
        np.testing.assert_array_equal(a.grad, before[0])  # input 0's gradient was fine
        np.testing.assert_array_equal(b.grad, before[1])
    finally:
        backend.unregister_backend("otherdevice")


def test_custom_gradient_rejects_bad_arguments():
    a = _f64([1.0])
    with pytest.raises(TypeError, match="input 0"):
        custom_gradient(np.ones(1), [np.ones(1)], lambda g: (g,))
    with pytest.raises(TypeError, match="callable"):
        custom_gradient(np.ones(1), [a], "not a function")


# --------------------------------------------------------------------------- softmax stability


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_exact_at_huge_logits(dtype):
    logits = np.array([[1e4, -1e4, 0.0], [1e4, 1e4, -1e4], [-1e4, -1e4, -1e4]], dtype=dtype)
    x = Tensor(logits.copy(), requires_grad=True)
    p = x.softmax(axis=-1)
    expected = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [1 / 3, 1 / 3, 1 / 3]])
    assert np.all(np.isfinite(p.data))
    np.testing.assert_allclose(p.data, expected, rtol=1e-6, atol=0)
    weights = np.array([[1.0, 2.0, 3.0], [0.0, 1.0, 0.0], [3.0, 0.0, 0.0]], dtype=dtype)
    p.backward(weights)
    assert np.all(np.isfinite(x.grad))
    expected_grad = expected * (weights - (weights * expected).sum(-1, keepdims=True))
    np.testing.assert_allclose(x.grad, expected_grad, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_log_softmax_exact_at_huge_logits(dtype):
    logits = np.array([[1e4, -1e4, 0.0], [1e4, 1e4, -1e4]], dtype=dtype)
    x = Tensor(logits.copy(), requires_grad=True)
    out = x.log_softmax(axis=-1)
    expected = np.array([[0.0, -2e4, -1e4], [-np.log(2.0), -np.log(2.0), -2e4 - np.log(2.0)]])
    assert np.all(np.isfinite(out.data))
    np.testing.assert_allclose(out.data, expected, rtol=1e-6, atol=1e-6)
    out.sum().backward()
    softmax = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0]])
    np.testing.assert_allclose(x.grad, 1.0 - 3.0 * softmax, rtol=1e-6, atol=1e-7)


def test_logsumexp_exact_at_huge_logits():
    x = _f64([[1e4, 1e4], [-1e4, -1e4 + np.log(3.0)]])
    out = x.logsumexp(axis=1)
    np.testing.assert_allclose(out.data, [1e4 + np.log(2.0), -1e4 + np.log(4.0)], rtol=1e-14)
    out.sum().backward()
    np.testing.assert_allclose(x.grad, [[0.5, 0.5], [0.25, 0.75]], rtol=1e-12)


def test_chain_of_primitives_overflows_where_fused_softmax_does_not():
    x = Tensor(np.array([1e4, 0.0]))
    with np.errstate(over="ignore", invalid="ignore"):
        naive = x.exp() / x.exp().sum()
    assert not np.all(np.isfinite(naive.data))
    assert np.all(np.isfinite(x.softmax().data))


# --------------------------------------------------------------------------- fused vs chain


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_fused_softmax_agrees_with_chain_of_primitives(axis):
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(2, 3, 4)) * 3.0
    weights = rng.normal(size=(2, 3, 4))
    fused_x, chain_x = _f64(logits), _f64(logits.copy())
    fused = fused_x.softmax(axis=axis)
    shifted = chain_x - chain_x.detach().amax(axis, keepdim=True)
    chain = shifted.exp() / shifted.exp().sum(axis=axis, keepdims=True)
    np.testing.assert_allclose(fused.data, chain.data, rtol=1e-13, atol=1e-15)
    fused.backward(weights)
    chain.backward(weights)
    np.testing.assert_allclose(fused_x.grad, chain_x.grad, rtol=1e-11, atol=1e-14)
    assert fused.grad_fn.name == "softmax"


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_fused_log_softmax_agrees_with_chain_of_primitives(axis):
    rng = np.random.default_rng(2)
    logits = rng.normal(size=(2, 3, 4)) * 3.0
    weights = rng.normal(size=(2, 3, 4))
    fused_x, chain_x = _f64(logits), _f64(logits.copy())
    fused = fused_x.log_softmax(axis=axis)
    chain = chain_x - chain_x.logsumexp(axis=axis, keepdims=True)
    np.testing.assert_allclose(fused.data, chain.data, rtol=1e-13, atol=1e-13)
    fused.backward(weights)
    chain.backward(weights)
    np.testing.assert_allclose(fused_x.grad, chain_x.grad, rtol=1e-11, atol=1e-13)
    assert fused.grad_fn.name == "log_softmax"


def test_views_share_the_version_counter_of_their_base():
    """An in-place change to a base tensor after one of its views was saved is caught."""
    x = tl.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    view = x.reshape(2, 2)
    assert view.version == x.version == 0
    y = (view * view).sum()
    with tl.no_grad():
        x.add_(1.0)
    assert view.version == 1
    with pytest.raises(RuntimeError, match="mul"):
        y.backward()
    assert x.grad is None


def test_retained_gradient_survives_graph_release():
    a = tl.tensor([1.0, 2.0], requires_grad=True)
    b = a * 2.0
    b.retain_grad()
    (b * b).sum().backward()
    np.testing.assert_allclose(b.grad, [4.0, 8.0])


def test_gradcheck_module_checks_every_parameter_and_catches_a_wrong_one():
    from tensorlib import Rng
    from tensorlib.engine.gradcheck import GradcheckError, gradcheck_module
    from tensorlib.nn import Linear

    layer = Linear(3, 2, rng=Rng(0), dtype=np.float64)
    x = tl.tensor(np.linspace(-1.0, 1.0, 12).reshape(4, 3))
    assert gradcheck_module(layer, lambda: layer(x).tanh()) == 2

    class Halved(Function):  # a deliberately wrong backward
        @staticmethod
        def forward(ctx, a):
            return a * 3.0

        @staticmethod
        def backward(ctx, grad):
            return grad * 1.5

    with pytest.raises(GradcheckError, match="parameter 'weight'"):
        gradcheck_module(layer, lambda: Halved.apply(layer(x)))
    float32_layer = Linear(3, 2, rng=Rng(0))
    with pytest.raises(TypeError, match="float64"):
        gradcheck_module(float32_layer, lambda: float32_layer(x.float()))
