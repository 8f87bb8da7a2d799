"""Values and gradients agree with PyTorch: float64 to ~1e-10, float32 forward to 1e-6.

Skipped where PyTorch is not installed (it is an optional, multi-gigabyte dependency).
"""

import numpy as np
import pytest

import tensorlib as tl

torch = pytest.importorskip("torch")

M = np.array([[True, False, False, True], [False, False, True, False], [True, True, False, False]])

# Each case: (tensorlib fn, torch fn, input shapes, domain). Both fns take the library's own
# tensors; the domain avoids kinks and ties so both libraries are differentiable there.
CASES = {
    "add-broadcast": (lambda a, b: a + b, lambda a, b: a + b, [(2, 3, 1), (3, 4)], "any"),
    "sub": (lambda a, b: a - b, lambda a, b: a - b, [(3, 4), (4,)], "any"),
    "mul-broadcast": (lambda a, b: a * b, lambda a, b: a * b, [(3, 1), (2, 1, 4)], "any"),
    "div": (lambda a, b: a / b, lambda a, b: a / b, [(3, 4), (3, 4)], "positive"),
    "pow-scalar": (lambda a: a**2.5, lambda a: a**2.5, [(3, 4)], "positive"),
    "pow-tensor": (lambda a, b: a**b, lambda a, b: a**b, [(3, 4), (4,)], "positive"),
    "neg": (lambda a: -a, lambda a: -a, [(3, 4)], "any"),
    "matmul": (lambda a, b: a @ b, lambda a, b: a @ b, [(3, 4), (4, 5)], "any"),
    "matmul-broadcast-batch": (lambda a, b: a @ b, lambda a, b: a @ b,
                               [(2, 1, 3, 4), (3, 4, 2)], "any"),
    "matmul-vec-mat": (lambda a, b: a @ b, lambda a, b: a @ b, [(4,), (4, 3)], "any"),
    "matmul-mat-vec": (lambda a, b: a @ b, lambda a, b: a @ b, [(3, 4), (4,)], "any"),
    "matmul-vec-vec": (lambda a, b: a @ b, lambda a, b: a @ b, [(4,), (4,)], "any"),
    "matmul-batched-vec": (lambda a, b: a @ b, lambda a, b: a @ b, [(2, 3, 4), (4,)], "any"),
    "exp": (lambda a: a.exp(), torch.exp, [(3, 4)], "any"),
    "log": (lambda a: a.log(), torch.log, [(3, 4)], "positive"),
    "sqrt": (lambda a: a.sqrt(), torch.sqrt, [(3, 4)], "positive"),
    "abs": (lambda a: a.abs(), torch.abs, [(3, 4)], "nonzero"),
    "tanh": (lambda a: a.tanh(), torch.tanh, [(3, 4)], "any"),
    "sigmoid": (lambda a: a.sigmoid(), torch.sigmoid, [(3, 4)], "any"),
    "relu": (lambda a: a.relu(), torch.relu, [(3, 4)], "nonzero"),
    "gelu": (lambda a: a.gelu(), lambda a: torch.nn.functional.gelu(a), [(3, 4)], "any"),
    "leaky-relu": (lambda a: a.leaky_relu(0.2), lambda a: torch.nn.functional.leaky_relu(a, 0.2),
                   [(3, 4)], "nonzero"),
    "softplus": (lambda a: a.softplus(), torch.nn.functional.softplus, [(3, 4)], "any"),
    "softplus-beta-threshold": (lambda a: (a * 8.0).softplus(beta=1.5, threshold=3.0),
                                lambda a: torch.nn.functional.softplus(a * 8.0, beta=1.5,
                                                                       threshold=3.0),
                                [(3, 4)], "nonzero"),
    "silu": (lambda a: a.silu(), torch.nn.functional.silu, [(3, 4)], "any"),
    "sign": (lambda a: a.sign() * a, lambda a: torch.sign(a) * a, [(3, 4)], "nonzero"),
    "gelu-tanh": (lambda a: a.gelu(approximate="tanh"),
                  lambda a: torch.nn.functional.gelu(a, approximate="tanh"), [(3, 4)], "any"),
    "maximum": (lambda a, b: tl.maximum(a, b), torch.maximum, [(3, 4), (4,)], "distinct"),
    "sum-axis": (lambda a: a.sum(axis=(0, 2)), lambda a: a.sum(dim=(0, 2)), [(2, 3, 4)], "any"),
    "mean-keepdims": (lambda a: a.mean(axis=1, keepdims=True),
                      lambda a: a.mean(dim=1, keepdim=True), [(2, 3, 4)], "any"),
    "amax-axis": (lambda a: a.amax(axis=-1), lambda a: a.amax(dim=-1), [(2, 3, 4)], "distinct"),
    "max-dim-values": (lambda a: a.max(1).values, lambda a: a.max(1).values, [(2, 3, 4)],
                       "distinct"),
    "max-all": (lambda a: a.max(), lambda a: a.max(), [(2, 3, 4)], "distinct"),
    "var-biased": (lambda a: a.var(axis=-1, correction=0),
                   lambda a: a.var(dim=-1, unbiased=False), [(2, 3, 4)], "any"),
    "var-unbiased": (lambda a: a.var(axis=(0, 1)), lambda a: a.var(dim=(0, 1)), [(2, 3, 4)],
                     "any"),
    "std-keepdim": (lambda a: a.std(1, keepdim=True), lambda a: a.std(1, keepdim=True),
                    [(2, 3, 4)], "any"),
    "logsumexp": (lambda a: a.logsumexp(axis=1), lambda a: a.logsumexp(dim=1),
                  [(2, 3, 4)], "any"),
    "softmax": (lambda a: a.softmax(axis=1), lambda a: a.softmax(dim=1), [(2, 3, 4)], "any"),
    "log-softmax": (lambda a: a.log_softmax(), lambda a: a.log_softmax(dim=-1),
                    [(2, 3, 4)], "any"),
    "permute-reshape": (lambda a: a.permute(2, 0, 1).reshape(4, 6),
                        lambda a: a.permute(2, 0, 1).reshape(4, 6), [(2, 3, 4)], "any"),
    "getitem-repeated": (lambda a: a[np.array([0, 2, 2]), 1:],
                         lambda a: a[torch.tensor([0, 2, 2]), 1:], [(3, 4)], "any"),
    "concat-stack": (lambda a, b: tl.stack([tl.concat([a, b], axis=1), tl.concat([b, a], axis=1)]),
                     lambda a, b: torch.stack([torch.cat([a, b], 1), torch.cat([b, a], 1)]),
                     [(3, 2), (3, 2)], "any"),
    "where-masked-fill": (lambda a, b: tl.where(M, a, b).masked_fill(~M, -2.0) * a,
                          lambda a, b: torch.where(torch.from_numpy(M), a, b)
                          .masked_fill(torch.from_numpy(~M), -2.0) * a,
                          [(3, 4), (3, 4)], "any"),
    # a small composite: a linear layer, GELU, log-softmax, then the mean
    "composite": (lambda x, w, b: ((x @ w + b).gelu().log_softmax(axis=-1)).mean(),
                  lambda x, w, b: torch.nn.functional.gelu(x @ w + b)
                  .log_softmax(dim=-1).mean(),
                  [(2, 3, 4), (4, 5), (5,)], "any"),
    "composite-attention": (
        lambda q, k, v: ((q @ k.transpose() * 0.5).masked_fill(np.triu(np.ones((3, 3), bool), 1),
                                                                -1e9).softmax() @ v).sum(),
        lambda q, k, v: ((q @ k.transpose(-2, -1) * 0.5)
                         .masked_fill(torch.triu(torch.ones(3, 3, dtype=torch.bool), 1), -1e9)
                         .softmax(dim=-1) @ v).sum(),
        [(2, 3, 4), (2, 3, 4), (2, 3, 2)], "any"),
}


def _arrays(shapes, domain, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for shape in shapes:
        if domain == "positive":
            out.append(rng.uniform(0.5, 2.0, size=shape))
        elif domain == "nonzero":
            out.append(rng.choice([-1.0, 1.0], size=shape) * rng.uniform(0.3, 2.0, size=shape))
        elif domain == "distinct":
            size = int(np.prod(shape))
            out.append(((rng.permutation(size) - size / 2) * 0.1 + 0.01 * len(out)).reshape(shape))
        else:
            out.append(rng.uniform(-2.0, 2.0, size=shape))
    return out


@pytest.mark.parametrize("name", list(CASES))
def test_float64_values_and_gradients_match_torch(name):
    ours_fn, torch_fn, shapes, domain = CASES[name]
    arrays = _arrays(shapes, domain)
    ours = [tl.Tensor(a.copy(), requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]
    out_ours, out_theirs = ours_fn(*ours), torch_fn(*theirs)
    assert out_ours.dtype == np.float64
    assert out_ours.shape == tuple(out_theirs.shape)
    np.testing.assert_allclose(out_ours.data, out_theirs.detach().numpy(), rtol=1e-10, atol=1e-12)
    seed = np.asarray(np.cos(np.arange(out_ours.numel()) * 0.7 + 0.2) + 1.5).reshape(out_ours.shape)
    out_ours.backward(seed)
    out_theirs.backward(torch.from_numpy(seed))
    for mine, reference in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(mine.grad, reference.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", list(CASES))
def test_float32_forward_values_match_torch(name):
    ours_fn, torch_fn, shapes, domain = CASES[name]
    arrays = [a.astype(np.float32) for a in _arrays(shapes, domain, seed=1)]
    out_ours = ours_fn(*[tl.Tensor(a.copy()) for a in arrays])
    out_theirs = torch_fn(*[torch.from_numpy(a.copy()) for a in arrays])
    assert out_ours.dtype == np.float32
    np.testing.assert_allclose(out_ours.data, out_theirs.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("logit", [1e4, -1e4])
def test_softmax_and_log_softmax_at_huge_logits_match_torch(logit):
    logits = np.array([[logit, 0.0, -3.0], [logit, logit, 1.0]])
    ours = tl.Tensor(logits.copy(), requires_grad=True)
    theirs = torch.tensor(logits, requires_grad=True)
    (ours.softmax() * ours.log_softmax()).sum().backward()
    (theirs.softmax(-1) * theirs.log_softmax(-1)).sum().backward()
    np.testing.assert_allclose(ours.log_softmax().data, theirs.log_softmax(-1).detach().numpy(),
                               rtol=1e-12)
    assert np.all(np.isfinite(ours.grad))
    np.testing.assert_allclose(ours.grad, theirs.grad.numpy(), rtol=1e-10, atol=1e-12)


CROSS_ENTROPY_OPTIONS = [
    dict(),
    dict(reduction="sum"),
    dict(reduction="none"),
    dict(label_smoothing=0.25),
    dict(ignore_index=-100),
    dict(ignore_index=-100, reduction="sum", label_smoothing=0.1),
    dict(ignore_index=-100, reduction="none", label_smoothing=0.4),
    dict(ignore_index=2, label_smoothing=0.3),
]


@pytest.mark.parametrize("options", CROSS_ENTROPY_OPTIONS,
                         ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "default")
@pytest.mark.parametrize("fused", [True, False], ids=["fused", "reference"])
def test_cross_entropy_options_match_torch(options, fused):
    """Padded words (-100) and an in-range ignore_index; PyTorch's class axis is 1, ours -1."""
    rng = np.random.default_rng(4)
    logits = rng.normal(0.0, 2.0, (3, 4, 6))
    targets = np.array([[0, 5, 2, -100], [1, 2, -100, -100], [2, 3, 4, 0]])
    if options.get("ignore_index", -100) != -100:
        targets = np.where(targets < 0, 2, targets)
    fn = tl.nn.functional.cross_entropy if fused else tl.nn.functional.cross_entropy_reference
    ours = tl.Tensor(logits.copy(), requires_grad=True)
    theirs = torch.tensor(logits, requires_grad=True)
    out_ours = fn(ours, targets, **options)
    out_theirs = torch.nn.functional.cross_entropy(theirs.permute(0, 2, 1),
                                                   torch.from_numpy(targets), **options)
    np.testing.assert_allclose(out_ours.data, out_theirs.detach().numpy(), rtol=1e-12,
                               atol=1e-14)
    seed = np.cos(np.arange(out_ours.numel()) * 0.9 + 0.3).reshape(out_ours.shape) + 1.5
    out_ours.backward(seed)
    out_theirs.backward(torch.from_numpy(np.asarray(seed)))
    np.testing.assert_allclose(ours.grad, theirs.grad.numpy(), rtol=1e-10, atol=1e-14)
    ours32 = fn(tl.Tensor(logits.astype(np.float32)), targets, **options)
    theirs32 = torch.nn.functional.cross_entropy(
        torch.from_numpy(logits.astype(np.float32)).permute(0, 2, 1), torch.from_numpy(targets),
        **options)
    assert ours32.dtype == np.float32
    np.testing.assert_allclose(ours32.data, theirs32.numpy(), rtol=2e-6, atol=1e-6)
