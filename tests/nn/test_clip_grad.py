"""PyTorch's nn surface that nanoGPT-shaped programs touch, part 3: ``tensorlib.nn.utils``
(``clip_grad_norm_``, ``clip_grad_value_``, ``parameters_to_vector``,
``vector_to_parameters``), the clipping core that tensorlib.optim's clipping is made of,
and, where PyTorch is importable, the same results as torch.nn.utils on the same gradients."""

import math

import numpy as np
import pytest

import tensorlib as tl
import tensorlib.nn as nn
from tensorlib import Generator
from tensorlib.nn import Linear, Parameter
from tensorlib.nn.utils import clip_grad as core
from tensorlib.nn.utils import (
    clip_grad_norm_,
    clip_grad_value_,
    parameters_to_vector,
    vector_to_parameters,
)
from tensorlib.optim import clip as optim_clip


def with_grads(*grads, dtype=np.float32):
    parameters = []
    for grad in grads:
        parameter = Parameter(np.zeros(np.shape(grad), dtype=dtype))
        parameter.grad = np.asarray(grad, dtype=dtype)
        parameters.append(parameter)
    return parameters


# --------------------------------------------------------------------------------- clip_grad_norm_
def test_clip_grad_norm_returns_the_total_norm_as_a_0d_tensor_and_scales_in_place():
    a, b = with_grads([3.0, 0.0], [[4.0]])
    grad_a = a.grad
    norm = clip_grad_norm_(iter([a, b]), max_norm=1.0)  # a generator, as model.parameters()
    assert isinstance(norm, tl.Tensor) and norm.shape == () and norm.dtype == np.float32
    assert float(norm) == pytest.approx(5.0)
    coefficient = 1.0 / (5.0 + 1e-6)
    np.testing.assert_allclose(a.grad.data, [3.0 * coefficient, 0.0], rtol=1e-6)
    np.testing.assert_allclose(b.grad.data, [[4.0 * coefficient]], rtol=1e-6)
    assert a.grad is grad_a and a.grad.dtype == np.float32  # in place
    assert tl.nn.utils.clip_grad_norm_ is clip_grad_norm_


def test_a_single_tensor_skipped_gradients_and_no_gradients():
    (a,) = with_grads([6.0, 8.0])
    assert float(clip_grad_norm_(a, 5.0)) == pytest.approx(10.0)  # a Tensor alone
    np.testing.assert_allclose(a.grad.data, [3.0, 4.0], rtol=1e-6)
    no_grad = Parameter(np.ones(3, np.float32))
    assert float(clip_grad_norm_([no_grad, a], 100.0)) == pytest.approx(5.0, rel=1e-6)
    assert no_grad.grad is None
    none = clip_grad_norm_([no_grad], 1.0)
    assert float(none) == 0.0 and none.shape == () and none.dtype == np.float32
    assert float(clip_grad_norm_([], 1.0)) == 0.0


def test_the_coefficient_is_clamped_to_one_and_always_applied():
    a, = with_grads([3.0, 4.0], dtype=np.float64)
    clip_grad_norm_([a], 5.0)  # norm 5 <= max_norm, but 5 / (5 + 1e-6) < 1 still scales
    np.testing.assert_allclose(a.grad.data, np.array([3.0, 4.0]) * 5.0 / (5.0 + 1e-6),
                               rtol=1e-15)
    b, = with_grads([3.0, 4.0], dtype=np.float64)
    clip_grad_norm_([b], 6.0)
    np.testing.assert_array_equal(b.grad.data, [3.0, 4.0])
    c, = with_grads([3.0, 4.0])
    assert float(clip_grad_norm_([c], math.inf)) == pytest.approx(5.0)  # measures only
    np.testing.assert_array_equal(c.grad.data, [3.0, 4.0])
    d, = with_grads([3.0, 4.0])
    clip_grad_norm_([d], 0.0)  # as PyTorch: every gradient becomes 0
    np.testing.assert_array_equal(d.grad.data, [0.0, 0.0])


@pytest.mark.parametrize("norm_type, expected", [
    (2.0, math.sqrt(1 + 4 + 9 + 16 + 25)), (1, 15.0), (math.inf, 5.0), ("inf", 5.0),
    (3.0, (1 + 8 + 27 + 64 + 125) ** (1 / 3)), (0.5, (1 + 2 ** 0.5 + 3 ** 0.5 + 2 + 5 ** 0.5) ** 2),
])
def test_norm_types(norm_type, expected):
    grads = with_grads([1.0, -2.0], [[3.0, -4.0], [5.0, 0.0]], dtype=np.float64)
    norm = clip_grad_norm_(grads, 1.0, norm_type=norm_type)
    assert norm.dtype == np.float64 and float(norm) == pytest.approx(expected, rel=1e-12)
    assert core.gradient_norm_of_arrays([g.grad.numpy() for g in grads],
                                        float(norm_type)) <= 1.0 + 1e-9


def test_a_large_p_norm_does_not_overflow():
    (a,) = with_grads([1e30, 1e30], dtype=np.float64)
    assert float(clip_grad_norm_(a, 1.0, norm_type=20)) == pytest.approx(1e30 * 2 ** (1 / 20))


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_a_non_finite_norm_raises_only_when_asked(bad):
    a, b = with_grads([3.0, bad], [4.0])
    with pytest.raises(RuntimeError, match="non-finite, so it cannot be clipped"):
        clip_grad_norm_([a, b], 1.0, error_if_nonfinite=True)
    np.testing.assert_array_equal(b.grad.data, [4.0])  # nothing changed
    norm = clip_grad_norm_([a, b], 1.0)  # PyTorch's default: scale by what the norm gives
    assert not math.isfinite(float(norm)) and (math.isnan(float(norm)) == math.isnan(bad))
    expected = [np.nan] if math.isnan(bad) else [0.0]  # 1 / inf = 0 scales to 0; nan stays
    np.testing.assert_array_equal(b.grad.data, expected)


@pytest.mark.parametrize("call_, error, match", [
    (lambda p: clip_grad_norm_(p, -1.0), ValueError, "max_norm must be a number >= 0"),
    (lambda p: clip_grad_norm_(p, float("nan")), ValueError, "max_norm"),
    (lambda p: clip_grad_norm_(p, "1"), TypeError, "max_norm"),
    (lambda p: clip_grad_norm_(p, 1.0, norm_type=0), ValueError, "norm_type"),
    (lambda p: clip_grad_norm_(p, 1.0, norm_type=-math.inf), ValueError, "norm_type"),
    (lambda p: clip_grad_norm_(p, 1.0, norm_type="two"), TypeError, "norm_type"),
    (lambda p: clip_grad_norm_(p, 1.0, error_if_nonfinite=None), TypeError, "error_if_nonfinite"),
    (lambda p: clip_grad_norm_(p, 1.0, foreach="yes"), TypeError, "foreach"),
    (lambda p: clip_grad_norm_([p[0], np.ones(2)], 1.0), TypeError, "item 1 .* ndarray"),
    (lambda p: clip_grad_norm_(np.ones(2), 1.0), TypeError, "ndarray"),
    (lambda p: clip_grad_norm_(Linear(2, 2), 1.0), TypeError, "model.parameters()"),
    (lambda p: clip_grad_value_(p, -0.5), ValueError, "clip_value"),
    (lambda p: clip_grad_value_(p, 0.5, foreach=1), TypeError, "foreach"),
])
def test_bad_input_is_refused_and_changes_nothing(call_, error, match):
    parameters = with_grads([3.0, 4.0], [1.0])
    with pytest.raises(error, match=match):
        call_(parameters)
    np.testing.assert_array_equal(parameters[0].grad.data, [3.0, 4.0])


def test_a_gradient_of_another_shape_is_refused():
    a, b = with_grads([3.0, 4.0], [1.0])
    b.grad.data = np.ones(3, dtype=np.float32)  # the grad setter would refuse it
    with pytest.raises(ValueError, match=r"gradient of tensor 1 has shape \(3,\)"):
        clip_grad_norm_([a, b], 1.0)
    np.testing.assert_array_equal(a.grad.data, [3.0, 4.0])


def test_a_tensor_given_twice_counts_once_and_read_only_gradients_are_replaced():
    a, = with_grads([3.0, 4.0])
    assert float(clip_grad_norm_([a, a], 1.0)) == pytest.approx(5.0)
    np.testing.assert_allclose(a.grad.data, [0.6, 0.8], rtol=1e-5)
    b, = with_grads([3.0, 4.0])
    b.grad.numpy().flags.writeable = False
    clip_grad_norm_([b], 2.5)
    np.testing.assert_allclose(b.grad.data, [1.5, 2.0], rtol=1e-5)


# --------------------------------------------------------------------------------- the one core
def test_optim_clipping_is_made_of_the_same_core():
    assert optim_clip.gradient_norm_of_arrays is core.gradient_norm_of_arrays
    assert optim_clip.CLIP_EPSILON is core.CLIP_EPSILON == 1e-6
    for max_norm in [0.5, 4.0]:
        ours = with_grads([3.0, 0.0], [[4.0]])
        theirs = with_grads([3.0, 0.0], [[4.0]])
        assert optim_clip.clip_grad_norm(ours, max_norm) == pytest.approx(5.0)
        clip_grad_norm_(theirs, max_norm)
        for mine, other in zip(ours, theirs, strict=True):  # the same factor where both clip
            np.testing.assert_array_equal(mine.grad.data, other.grad.data)
    with pytest.raises(ValueError, match="norm"):  # optim's own refusal is kept
        optim_clip.clip_grad_norm(with_grads([np.inf]), 1.0)


# --------------------------------------------------------------------------------- clip_grad_value_
def test_clip_grad_value_clamps_each_gradient_in_place():
    a, b = with_grads([-3.0, 0.25, 2.0], [[0.7, -0.1]])
    grad_a = a.grad
    assert clip_grad_value_((p for p in [a, b]), 0.5) is None
    np.testing.assert_array_equal(a.grad.data, np.float32([-0.5, 0.25, 0.5]))
    np.testing.assert_array_equal(b.grad.data, np.float32([[0.5, -0.1]]))
    assert a.grad is grad_a
    c, = with_grads([-3.0, 3.0])
    c.grad.numpy().flags.writeable = False
    clip_grad_value_(c, 1.0)
    np.testing.assert_array_equal(c.grad.data, [-1.0, 1.0])


# --------------------------------------------------------------------------------- vectors
def test_parameters_to_vector_and_back():
    model = nn.Sequential(Linear(3, 2, rng=Generator(0)), Linear(2, 1, rng=Generator(1)))
    vector = parameters_to_vector(model.parameters())
    assert vector.shape == (11,) and vector.dtype == np.float32
    np.testing.assert_array_equal(vector.data, np.concatenate(
        [p.data.reshape(-1) for p in model.parameters()]))
    vector.sum().backward()  # recorded, as PyTorch's cat of views is
    assert all(np.all(p.grad.data == 1.0) for p in model.parameters())
    versions = [p.version for p in model.parameters()]
    vector_to_parameters(tl.arange(11, dtype=tl.float32), model.parameters())
    np.testing.assert_array_equal(model[0].weight.data, [[0, 1, 2], [3, 4, 5]])
    np.testing.assert_array_equal(model[1].bias.data, [10])
    assert all(p.version > v for p, v in zip(model.parameters(), versions, strict=True))
    with pytest.raises(ValueError, match="12 values, the parameters hold 11"):
        vector_to_parameters(tl.zeros(12), model.parameters())
    with pytest.raises(ValueError, match="1-D"):
        vector_to_parameters(tl.zeros(11, 1), model.parameters())
    with pytest.raises(TypeError, match="vec must be a Tensor"):
        vector_to_parameters(np.zeros(11), model.parameters())
    np.testing.assert_array_equal(model[1].bias.data, [10])  # unchanged by the refusals


# --------------------------------------------------------------------------------- PyTorch
@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf, 3.0])
@pytest.mark.parametrize("max_norm", [0.1, 1.0, 100.0])
def test_clip_grad_norm_agrees_with_pytorch(norm_type, max_norm):
    torch = pytest.importorskip("torch")
    rng = Generator(int(max_norm * 10) + int(min(norm_type, 9)))
    shapes = [(4, 3), (3,), (2, 2, 2), (5,)]
    grads = [rng.normal(0.0, 1.0, size=shape) for shape in shapes]
    ours = with_grads(*grads)
    ours[3].grad = None  # skipped by both
    theirs = [torch.zeros(shape, requires_grad=True) for shape in shapes]
    for tensor, grad in zip(theirs[:3], grads[:3], strict=True):
        tensor.grad = torch.from_numpy(np.asarray(grad, np.float32).copy())
    norm = clip_grad_norm_((p for p in ours), max_norm, norm_type=norm_type)
    expected = torch.nn.utils.clip_grad_norm_(iter(theirs), max_norm, norm_type=norm_type)
    assert norm.dtype == np.float32 and norm.shape == tuple(expected.shape)
    np.testing.assert_allclose(float(norm), float(expected), rtol=1e-6)
    for mine, other in zip(ours[:3], theirs[:3], strict=True):
        np.testing.assert_allclose(mine.grad.data, other.grad.numpy(), rtol=2e-6, atol=1e-7)
    clip_grad_value_(ours, 0.05)
    torch.nn.utils.clip_grad_value_(theirs, 0.05)
    for mine, other in zip(ours[:3], theirs[:3], strict=True):
        np.testing.assert_allclose(mine.grad.data, other.grad.numpy(), rtol=2e-6, atol=1e-7)


def test_non_finite_norms_agree_with_pytorch():
    torch = pytest.importorskip("torch")
    for bad in [math.inf, math.nan]:
        ours = with_grads([1.0, bad], [2.0])
        theirs = [torch.tensor([1.0, bad], requires_grad=True), torch.tensor([2.0],
                                                                             requires_grad=True)]
        for tensor in theirs:
            tensor.grad = tensor.detach().clone()
        with pytest.raises(RuntimeError):
            torch.nn.utils.clip_grad_norm_(theirs, 1.0, error_if_nonfinite=True)
        with pytest.raises(RuntimeError):
            clip_grad_norm_(ours, 1.0, error_if_nonfinite=True)
        norm, expected = clip_grad_norm_(ours, 1.0), torch.nn.utils.clip_grad_norm_(theirs, 1.0)
        np.testing.assert_array_equal(float(norm), float(expected))
        for mine, other in zip(ours, theirs, strict=True):
            np.testing.assert_array_equal(mine.grad.data, other.grad.numpy())
