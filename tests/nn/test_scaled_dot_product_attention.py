"""F.scaled_dot_product_attention: PyTorch's call (boolean and additive masks, is_causal,
scale, dropout_p, enable_gqa), checked by gradcheck in float64, against the softmax written
out by hand, and against PyTorch where it is installed."""

import math

import numpy as np
import pytest

import tensorlib as tl
from tensorlib import gradcheck
from tensorlib.nn import functional as F

SHAPES = {  # name: (query, key, value) shapes and keyword arguments
    "plain": ((2, 3, 5, 4), (2, 3, 5, 4), (2, 3, 5, 6), {}),
    "causal": ((2, 3, 5, 4), (2, 3, 5, 4), (2, 3, 5, 6), {"is_causal": True}),
    "causal, fewer queries": ((2, 1, 3, 4), (2, 1, 6, 4), (2, 1, 6, 2), {"is_causal": True}),
    "causal, more queries": ((1, 2, 6, 4), (1, 2, 4, 4), (1, 2, 4, 3), {"is_causal": True}),
    "boolean mask": ((2, 3, 5, 4), (2, 3, 5, 4), (2, 3, 5, 6), {"mask": "bool"}),
    "additive mask": ((2, 3, 5, 4), (2, 3, 5, 4), (2, 3, 5, 6), {"mask": "float"}),
    "grouped query": ((2, 6, 5, 4), (2, 2, 5, 4), (2, 2, 5, 6), {"enable_gqa": True}),
    "scale": ((3, 5, 4), (3, 7, 4), (3, 7, 2), {"scale": 0.3}),
    "no batch": ((5, 4), (7, 4), (7, 2), {}),
}


def arguments(name, seed=0):
    """float64 leaves (query, key, value) and the keyword arguments of case ``name``."""
    query_shape, key_shape, value_shape, options = SHAPES[name]
    rng = np.random.default_rng(seed)
    tensors = [tl.tensor(rng.normal(size=shape), requires_grad=True)
               for shape in (query_shape, key_shape, value_shape)]
    options = dict(options)
    kind = options.pop("mask", None)
    scores_shape = (*query_shape[:-1], key_shape[-2])
    if kind == "bool":  # every query keeps at least one key: the diagonal
        allowed = (rng.random(scores_shape[-2:]) < 0.6) | np.eye(scores_shape[-1], dtype=bool)
        options["attn_mask"] = tl.tensor(allowed)
    elif kind == "float":
        options["attn_mask"] = tl.tensor(rng.normal(size=(scores_shape[-3], 1,
                                                          scores_shape[-1])))
    return tensors, options


def by_hand(query, key, value, attn_mask=None, is_causal=False, scale=None, enable_gqa=False):
    """softmax(q kᵀ · scale + mask) v in numpy, PyTorch's documented reference."""
    q, k, v = (t.numpy() for t in (query, key, value))
    if enable_gqa:
        k = np.repeat(k, q.shape[-3] // k.shape[-3], axis=-3)
        v = np.repeat(v, q.shape[-3] // v.shape[-3], axis=-3)
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = q @ np.swapaxes(k, -1, -2) * scale
    length, keys = scores.shape[-2:]
    if is_causal:
        attn_mask = tl.tensor(np.tril(np.ones((length, keys), dtype=bool)))
    if attn_mask is not None and attn_mask.dtype == np.bool_:
        scores = np.where(attn_mask.numpy(), scores, -np.inf)
    elif attn_mask is not None:
        scores = scores + attn_mask.numpy()
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    return weights / weights.sum(-1, keepdims=True) @ v


@pytest.mark.parametrize("name", SHAPES)
def test_values_are_the_softmax_by_hand_and_gradients_check(name):
    (query, key, value), options = arguments(name)
    out = F.scaled_dot_product_attention(query, key, value, **options)
    np.testing.assert_allclose(out.numpy(), by_hand(query, key, value, **options),
                               rtol=1e-12, atol=1e-12)
    assert gradcheck(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, **options),
                     query, key, value)


@pytest.mark.parametrize("name", SHAPES)
def test_values_and_gradients_are_pytorchs(name):
    torch = pytest.importorskip("torch")
    (query, key, value), options = arguments(name)
    out = F.scaled_dot_product_attention(query, key, value, **options)
    upstream = np.random.default_rng(9).normal(size=out.shape)
    out.backward(upstream)
    twins = [torch.tensor(t.numpy(), requires_grad=True) for t in (query, key, value)]
    torch_options = {key_: torch.tensor(v.numpy()) if isinstance(v, tl.Tensor) else v
                     for key_, v in options.items()}
    expected = torch.nn.functional.scaled_dot_product_attention(*twins, **torch_options)
    expected.backward(torch.tensor(upstream))
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-12, atol=1e-12)
    for mine, theirs in zip((query, key, value), twins, strict=True):
        np.testing.assert_allclose(mine.grad.numpy(), theirs.grad.numpy(),
                                   rtol=1e-10, atol=1e-12)


def test_the_causal_call_is_the_manual_path_of_a_gpt():
    """nanoGPT's two paths, flash and manual, give the same values (float32)."""
    rng = np.random.default_rng(3)
    q, k, v = (tl.tensor(rng.normal(size=(2, 4, 6, 8)).astype(np.float32)) for _ in range(3))
    bias = tl.tril(tl.ones(6, 6)).view(1, 1, 6, 6)
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
    att = att.masked_fill(bias[:, :, :6, :6] == 0, float("-inf"))
    manual = F.softmax(att, dim=-1) @ v
    flash = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0,
                                           is_causal=True)
    np.testing.assert_allclose(flash.numpy(), manual.numpy(), rtol=1e-5, atol=1e-6)


def test_dropout_draws_from_tensorlibs_generator():
    (query, key, value), _ = arguments("plain")
    tl.manual_seed(5)
    first = F.scaled_dot_product_attention(query, key, value, dropout_p=0.5)
    tl.manual_seed(5)
    again = F.scaled_dot_product_attention(query, key, value, dropout_p=0.5)
    plain = F.scaled_dot_product_attention(query, key, value)
    np.testing.assert_array_equal(first.numpy(), again.numpy())
    assert not np.allclose(first.numpy(), plain.numpy())


@pytest.mark.parametrize("change, error, match", [
    (lambda a: a.update(scale=""), TypeError, "scale must be a finite number"),
    (lambda a: a.update(scale=[0.1]), TypeError, "scale must be a finite number"),
    (lambda a: a.update(dropout_p=1.0), ValueError, "dropout_p"),
    (lambda a: a.update(is_causal=1), TypeError, "is_causal must be a bool"),
    (lambda a: a.update(attn_mask=tl.ones(5, 5, dtype=tl.bool), is_causal=True), ValueError,
     "not both"),
    (lambda a: a.update(attn_mask=tl.ones(4, 5, dtype=tl.bool)), ValueError,
     r"attn_mask of shape \(4, 5\) does not broadcast"),
    (lambda a: a.update(attn_mask=tl.ones(5, 5, dtype=tl.int64)), TypeError, "attn_mask"),
    (lambda a: a.update(key=tl.zeros(2, 3, 5, 3, dtype=tl.float64)), ValueError, "width 3"),
    (lambda a: a.update(value=tl.zeros(2, 3, 4, 6, dtype=tl.float64)), ValueError,
     "value has 4 positions"),
    (lambda a: a.update(value=a["value"].float()), TypeError, "mixed dtypes"),
    (lambda a: a.update(query=tl.zeros(4, dtype=tl.float64)), ValueError, "at least 2 axes"),
    (lambda a: a.update(key=tl.zeros(2, 2, 5, 4, dtype=tl.float64), enable_gqa=True),
     ValueError, "enable_gqa"),
    (lambda a: a.update(query=np.zeros((2, 3, 5, 4))), TypeError, "must be a Tensor"),
])
def test_bad_arguments_are_named(change, error, match):
    (query, key, value), _ = arguments("plain")
    call = {"query": query, "key": key, "value": value}
    change(call)
    with pytest.raises(error, match=match):
        F.scaled_dot_product_attention(**call)


@pytest.mark.parametrize("scale", ["", [0.1], None.__class__])
def test_causal_attention_names_a_bad_scale(scale):
    qkv = tl.zeros(1, 3, 6)
    with pytest.raises(TypeError, match="causal_attention scale must be a finite number"):
        F.causal_attention(qkv, 2, scale=scale)
    with pytest.raises(TypeError, match="causal_attention scale must be a finite number"):
        F.causal_attention_reference(qkv, 2, scale=scale)
