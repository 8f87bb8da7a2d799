"""tensorlib.course.worked_pieces: the worked pieces a notebook falls back on, against tensorlib."""

import types

import numpy as np

import tensorlib as tl
from tensorlib import Rng, scalar
from tensorlib.course import worked_pieces as workbook


class Tiny:
    """Notebook 04's TinyTensor, as far as the engine needs it."""

    def __init__(self, data, requires_grad=False, node=None):
        self.data = np.asarray(data, dtype=np.float64)
        self.requires_grad, self.node, self.grad = requires_grad, node, None


class Node:
    def __init__(self, op, ctx, inputs):
        self.op, self.ctx, self.inputs = op, ctx, inputs


class Mul:
    @staticmethod
    def forward(ctx, a, b):
        ctx.a, ctx.b = a, b
        return a * b

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.b, grad * ctx.a


class Tanh:
    @staticmethod
    def forward(ctx, a):
        ctx.y = np.tanh(a)
        return ctx.y

    @staticmethod
    def backward(ctx, grad):
        return (grad * (1 - ctx.y**2),)


class Sum:
    @staticmethod
    def forward(ctx, a):
        ctx.shape = a.shape
        return a.sum()

    @staticmethod
    def backward(ctx, grad):
        return (np.full(ctx.shape, grad),)


def apply(op, *inputs):
    return workbook.tiny_apply(op, inputs, Tiny, Node)


def test_tiny_apply_records_a_node_only_when_an_input_wants_a_gradient():
    x, c = Tiny([1.0, 2.0], requires_grad=True), Tiny([3.0, 4.0])
    out = apply(Mul, x, c)
    assert out.requires_grad and out.node.op is Mul and out.node.inputs == (x, c)
    np.testing.assert_array_equal(out.node.ctx.b, c.data)
    assert isinstance(out.node.ctx, types.SimpleNamespace)
    plain = apply(Mul, c, c)
    assert plain.node is None and not plain.requires_grad
    assert apply(Tanh, x).node.ctx is not apply(Tanh, x).node.ctx


def test_tiny_backward_matches_tensorlib_on_shared_and_deep_graphs():
    values = np.array([0.3, -0.8, 1.1])
    x, w = Tiny(values, True), Tiny(values[::-1], True)
    u = apply(Mul, x, w)                         # u on two paths, x on several
    root = apply(Sum, apply(Mul, apply(Tanh, u), u))
    for _ in range(300):                         # deep: no recursion limit
        root = apply(Tanh, root)
    workbook.tiny_backward(root)

    xt = tl.tensor(values, requires_grad=True)
    wt = tl.tensor(values[::-1].copy(), requires_grad=True)
    ut = xt * wt
    rt = (ut.tanh() * ut).sum()
    for _ in range(300):
        rt = rt.tanh()
    rt.backward()
    np.testing.assert_allclose(x.grad, xt.grad, rtol=1e-12)
    np.testing.assert_allclose(w.grad, wt.grad, rtol=1e-12)
    workbook.tiny_backward(apply(Sum, apply(Mul, x, Tiny(np.ones(3)))))  # leaves accumulate
    np.testing.assert_allclose(x.grad, xt.grad + 1.0, rtol=1e-12)


def test_the_scalar_gradient_step_resets_backpropagates_and_updates():
    model = scalar.MLP(2, [3, 1], rng=Rng(0))
    points, targets = [[0.5, -1.0], [1.5, 0.25]], [1.0, -1.0]

    def loss_and_accuracy(m):
        scores = [m(p) for p in points]
        loss = sum((s - t) ** 2 for s, t in zip(scores, targets, strict=True)) * 0.5
        return loss, sum((s.data > 0) == (t > 0) for s, t in zip(scores, targets, strict=True)) / 2

    for p in model.parameters():
        p.grad = 5.0                             # leftovers must not count
    before = [p.data for p in model.parameters()]
    loss, _ = loss_and_accuracy(model)
    loss.backward()                              # grads now 5 + the true gradient
    true_grads = [p.grad - 5.0 for p in model.parameters()]
    returned, accuracy = workbook.scalar_gradient_step(model, 0.1, loss_and_accuracy)
    assert returned == loss.data and 0.0 <= accuracy <= 1.0
    expected = [b - 0.1 * g for b, g in zip(before, true_grads, strict=True)]
    np.testing.assert_allclose([p.data for p in model.parameters()], expected, rtol=1e-12)
