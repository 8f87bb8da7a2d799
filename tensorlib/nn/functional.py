"""Stateless neural-network functions: activations, softmax, losses, masks, dropout.

The ops that matter for speed and numerical stability are single fused ``Function``s with a
hand-derived backward: ``cross_entropy``, ``layer_norm``, ``linear`` (x Wᵀ + b),
``embedding`` (a row gather), ``causal_softmax`` (attention's scaled, causally masked
softmax), ``causal_attention`` (the whole attention core, from fused Q/K/V to merged heads)
and ``dropout``. Each has a *reference twin* (``..._reference``) built from the chain of
primitive ops, so notebooks and tests can check that the fused op agrees with it in value
and in gradient.
"""

from __future__ import annotations

import functools
import math
import numbers
from typing import Any

import numpy as np

from tensorlib.autograd import Context, Function
from tensorlib.backend import array_module, constant_vector
from tensorlib.nn.rng import Rng, default_rng
from tensorlib.ops.softmax import softmax_vjp
from tensorlib.tensor import Tensor

__all__ = [
    "causal_attention",
    "causal_attention_reference",
    "causal_mask",
    "apply_causal_mask",
    "causal_softmax",
    "causal_softmax_reference",
    "cross_entropy",
    "cross_entropy_reference",
    "dropout",
    "dropout_reference",
    "embedding",
    "embedding_reference",
    "gelu",
    "layer_norm",
    "layer_norm_reference",
    "linear",
    "linear_reference",
    "log_softmax",
    "log_softmax_reference",
    "relu",
    "sigmoid",
    "softmax",
    "softmax_reference",
    "tanh",
    "token_ids",
]


def _check_tensor(value: Any, what: str) -> Tensor:
    if not isinstance(value, Tensor):
        raise TypeError(f"{what} must be a Tensor, got {type(value).__name__}")
    return value


def _check_floating(value: Any, what: str) -> Tensor:
    _check_tensor(value, what)
    if value.dtype.kind != "f":  # float16/32/64 (np.issubdtype is slow on a hot path)
        raise TypeError(f"{what} must be a floating-point tensor, got dtype {value.dtype}")
    return value


# --------------------------------------------------------------------------------- activations
def relu(x: Tensor) -> Tensor:
    """max(x, 0) elementwise."""
    return _check_tensor(x, "relu input").relu()


def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    """GELU x·Φ(x): exact (erf) by default, ``approximate="tanh"`` for the tanh form."""
    return _check_tensor(x, "gelu input").gelu(approximate=approximate)


def sigmoid(x: Tensor) -> Tensor:
    """1 / (1 + exp(-x)) elementwise, without overflow."""
    return _check_tensor(x, "sigmoid input").sigmoid()


def tanh(x: Tensor) -> Tensor:
    return _check_tensor(x, "tanh input").tanh()


# --------------------------------------------------------------------------------- softmax
def softmax(x: Tensor, axis: int = -1) -> Tensor:
    """Numerically stable softmax along ``axis`` (one fused node)."""
    return _check_floating(x, "softmax input").softmax(axis)


def log_softmax(x: Tensor, axis: int = -1) -> Tensor:
    """Numerically stable log-softmax along ``axis`` (one fused node)."""
    return _check_floating(x, "log_softmax input").log_softmax(axis)


def log_softmax_reference(x: Tensor, axis: int = -1) -> Tensor:
    """log-softmax as a chain of primitives: x - max - log Σ exp(x - max)."""
    shifted = _check_floating(x, "log_softmax input") - x.max(axis, keepdims=True)
    return shifted - shifted.exp().sum(axis, keepdims=True).log()


def softmax_reference(x: Tensor, axis: int = -1) -> Tensor:
    """softmax as a chain of primitives: exp(x - max) / Σ exp(x - max)."""
    exps = (_check_floating(x, "softmax input") - x.max(axis, keepdims=True)).exp()
    return exps / exps.sum(axis, keepdims=True)


# --------------------------------------------------------------------------------- token ids
def token_ids(ids: Any, limit: int, what: str = "token id") -> np.ndarray:
    """Validate integer class/token ids against ``[0, limit)`` and return them as int64.

    ``ids`` may be an integer Tensor, an integer numpy array, a nested list or an int.
    Floating-point or boolean ids raise TypeError, ids that require grad raise TypeError,
    and any id outside ``[0, limit)`` raises IndexError naming the first offending value.
    """
    if isinstance(ids, Tensor):
        if ids.requires_grad:
            raise TypeError(f"{what}s must not require grad (they are indices, not values)")
        array = ids.data
    elif isinstance(ids, (bool, np.bool_)):
        raise TypeError(f"{what}s must be integers, got a bool")
    elif isinstance(ids, numbers.Integral):
        if not 0 <= int(ids) < limit:
            raise IndexError(f"{what} {int(ids)} is out of range [0, {limit})")
        array = np.asarray(int(ids), dtype=np.int64)
    else:
        try:
            array = np.asarray(ids)
        except (ValueError, TypeError) as error:
            raise TypeError(f"{what}s must be an integer array or nested list: {error}") from None
        if array.dtype == object:
            raise TypeError(f"{what}s must be a rectangular array of integers, got {ids!r}")
    if array.dtype.kind not in "iu":
        if array.size == 0 and array.dtype == np.float64 and not isinstance(ids, Tensor):
            array = array.astype(np.int64)  # an empty list has numpy's default float dtype
        else:
            raise TypeError(f"{what}s must have an integer dtype, got {array.dtype}")
    if array.size:  # checked before the cast, so a huge uint64 id is named as it is
        bad = (array < 0) | (array >= limit)
        if bad.any():
            first = int(array[bad].reshape(-1)[0])
            position = tuple(int(i) for i in np.argwhere(bad)[0])
            raise IndexError(f"{what} {first} at position {position} is out of range "
                             f"[0, {limit})")
    return array.astype(np.int64, copy=False)


# --------------------------------------------------------------------------------- cross-entropy
class CrossEntropyFunction(Function):
    """Mean negative log-likelihood of ``targets`` under softmax(``logits``), one node.

    Forward: log-softmax with the max subtracted, pick each target's log-probability, mean.
    Backward: (softmax(logits) - onehot(targets)) / N, times the incoming scalar gradient.
    """

    op_name = "cross_entropy"

    @staticmethod
    def forward(ctx: Context, logits: Any, targets: Any) -> Any:
        xp = array_module(logits)
        classes = logits.shape[-1]
        targets = xp.asarray(targets)
        flat = logits.reshape(-1, classes)  # (N, V)
        rows = xp.arange(flat.shape[0])
        shifted = flat - flat.max(axis=-1, keepdims=True)
        log_probs = shifted - xp.log(xp.exp(shifted).sum(axis=-1, keepdims=True))  # (N, V)
        loss = -log_probs[rows, targets.reshape(-1)].mean()
        ctx.save_for_backward(log_probs)
        ctx.targets, ctx.input_shape = targets.reshape(-1), logits.shape
        return xp.asarray(loss, dtype=logits.dtype)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        (log_probs,) = ctx.saved_tensors
        xp = array_module(log_probs)
        count = log_probs.shape[0]
        probs = xp.exp(log_probs)  # a fresh array: safe to change in place
        probs[xp.arange(count), ctx.targets] -= 1.0
        probs *= grad / count
        return probs.reshape(ctx.input_shape)


def _check_cross_entropy(logits: Any, targets: Any) -> np.ndarray:
    _check_floating(logits, "cross_entropy logits")
    if logits.ndim == 0:
        raise ValueError("cross_entropy logits must have a class axis, got a 0-d tensor")
    classes = logits.shape[-1]
    if classes == 0:
        raise ValueError(f"cross_entropy logits have no classes (shape {logits.shape})")
    array = token_ids(targets, classes, what="target")
    if array.shape != logits.shape[:-1]:
        raise ValueError(f"cross_entropy targets of shape {array.shape} do not match logits "
                         f"of shape {logits.shape} (expected targets of shape "
                         f"{logits.shape[:-1]})")
    if array.size == 0:
        raise ValueError(f"cross_entropy of an empty batch (logits shape {logits.shape})")
    return array


def cross_entropy(logits: Tensor, targets: Any) -> Tensor:
    """Mean cross-entropy between ``logits (..., V)`` and class indices ``targets (...)``.

    ``targets`` holds integers in ``[0, V)`` with shape ``logits.shape[:-1]``; every leading
    position counts once in the mean. Stable for logits of any magnitude; inputs are not
    modified. Non-integer targets raise TypeError, out-of-range ones IndexError.
    """
    array = _check_cross_entropy(logits, targets)
    return CrossEntropyFunction.apply(logits, targets=array)


def cross_entropy_reference(logits: Tensor, targets: Any) -> Tensor:
    """Cross-entropy as a chain of primitives: -mean(Σ onehot ⊙ log_softmax(logits))."""
    array = _check_cross_entropy(logits, targets)
    onehot = np.eye(logits.shape[-1], dtype=logits.dtype)[array]  # (..., V)
    picked = (log_softmax_reference(logits) * Tensor(onehot)).sum(-1)
    return -picked.mean()


# --------------------------------------------------------------------------------- masks
def causal_mask(length: int, additive: bool = False, dtype: Any = np.float32) -> Tensor:
    """The (T, T) causal mask: position t may attend to positions 0..t only.

    By default a boolean tensor, True where attention is forbidden (column > row). With
    ``additive=True`` a float tensor of ``dtype``: 0 on and below the diagonal, -inf above.
    """
    if isinstance(length, bool) or not isinstance(length, numbers.Integral) or length < 1:
        raise ValueError(f"causal_mask length must be a positive integer, got {length!r}")
    forbidden = np.triu(np.ones((length, length), dtype=bool), k=1)
    if not additive:
        return Tensor(forbidden)
    return Tensor(np.where(forbidden, -np.inf, 0.0).astype(dtype))


def _check_scores(scores: Any, what: str) -> None:
    _check_floating(scores, what)
    if scores.ndim < 2 or scores.shape[-1] != scores.shape[-2]:
        raise ValueError(f"{what} must end in a square (T, T) pair of axes, got shape "
                         f"{scores.shape}")
    if scores.shape[-1] == 0:
        raise ValueError(f"{what} of shape {scores.shape} has no positions")


def apply_causal_mask(scores: Tensor) -> Tensor:
    """Set the entries above the diagonal of the last two axes of ``scores`` to -inf."""
    _check_scores(scores, "apply_causal_mask scores")
    return scores.masked_fill(causal_mask(scores.shape[-1]), -math.inf)


@functools.lru_cache(maxsize=32)
def _additive_causal_mask(xp: Any, length: int, dtype: Any) -> Any:
    """(T, T): 0 on and below the diagonal, -inf above it (made once per length; read-only)."""
    mask = xp.triu(xp.full((length, length), -xp.inf, dtype=dtype), k=1)
    if xp is np:
        mask.flags.writeable = False
    return mask


@functools.lru_cache(maxsize=64)
def _unshifted_range(dtype: Any, length: int) -> float:
    """How far from 0 a row's scores may lie for its softmax to need no shift: within ±L,
    L = (ln(largest float) - ln T) / 2, no exp overflows, a row's sum stays below the
    largest float, and a row whose diagonal is at least -L sums to a normal number."""
    return (math.log(float(np.finfo(dtype).max)) - math.log(length)) / 2


def _causal_softmax_in_place(scores: Any) -> Any:
    """Softmax over the last axis of a fresh ``(..., T, T)`` score array, entries above the
    diagonal masked to probability 0; overwrites and returns ``scores``.

    Softmax does not change when a row is shifted by a constant; the shift only guards exp
    against overflow and a whole row against underflow. Each row is shifted by its maximum
    unless its scores are at most L and its diagonal at least -L (see _unshifted_range):
    then by 0. The rule looks at the row alone, so a row's probabilities never depend on
    other rows (nor on masked, future positions). When every score and diagonal is within
    ±L, as in practice, two reductions over the whole array show that no row needs its
    maximum, which saves a reduction per row of T and a broadcast subtraction.
    """
    xp = array_module(scores)
    if scores.size == 0:
        return scores
    limit = _unshifted_range(scores.dtype, scores.shape[-1])
    diagonal = xp.diagonal(scores, axis1=-2, axis2=-1)[..., None]  # a view, (..., T, 1)
    unshifted = float(scores.max()) <= limit and float(diagonal.min()) >= -limit
    # Adding the -inf mask is twice as fast as a masked assignment. (A score of +inf above
    # the diagonal would become nan; scores that overflow float32 make the row nan anyway.)
    scores += _additive_causal_mask(xp, scores.shape[-1], scores.dtype)
    if not unshifted:  # rare: shift the rows that need it by their maximum
        row_max = scores.max(axis=-1, keepdims=True)  # the diagonal is never masked
        in_range = (row_max <= limit) & (diagonal >= -limit)  # False for nan
        scores -= xp.where(in_range, scores.dtype.type(0), row_max)
    probabilities = xp.exp(scores, out=scores)
    probabilities /= _row_sum(probabilities)
    return probabilities


class CausalSoftmaxFunction(Function):
    """softmax(scale · scores + causal mask) over the last axis, one node.

    Forward: masked entries (column > row) become -inf, so their probability is exactly 0.
    Backward: scale · p ⊙ (g - Σ g ⊙ p); masked entries get no gradient since p = 0 there.
    """

    op_name = "causal_softmax"

    @staticmethod
    def forward(ctx: Context, scores: Any, scale: float) -> Any:
        probabilities = _causal_softmax_in_place(scores * scores.dtype.type(scale))
        ctx.save_for_backward(probabilities)
        ctx.scale = scale
        return probabilities

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        (probabilities,) = ctx.saved_tensors
        result = softmax_vjp(probabilities, grad, -1)
        return result * result.dtype.type(ctx.scale)


def causal_softmax(scores: Tensor, scale: float = 1.0) -> Tensor:
    """Attention probabilities: softmax over the last axis of ``scale * scores`` with every
    entry above the diagonal of the last two (T, T) axes masked out."""
    _check_scores(scores, "causal_softmax scores")
    return CausalSoftmaxFunction.apply(scores, scale=float(scale))


def causal_softmax_reference(scores: Tensor, scale: float = 1.0) -> Tensor:
    """The primitive chain: (scores · scale + additive mask), then softmax_reference."""
    _check_scores(scores, "causal_softmax scores")
    mask = causal_mask(scores.shape[-1], additive=True, dtype=scores.dtype)
    return softmax_reference(scores * float(scale) + mask)


# --------------------------------------------------------------------------------- linear
class LinearFunction(Function):
    """y = x Wᵀ + b over the last axis of ``x (..., in)``, one node and one matrix product.

    The leading axes are folded into rows, so forward and each gradient are a single GEMM:
    dx = dy W, dW = dyᵀ x (rows summed), db = Σ dy over rows.
    """

    op_name = "linear"

    @staticmethod
    def forward(ctx: Context, x: Any, weight: Any, *bias: Any) -> Any:
        rows = x.reshape(-1, x.shape[-1])  # (N, in)
        out = rows @ weight.T  # (N, out), a fresh array
        if bias:
            out += bias[0]
        ctx.save_for_backward(x, weight)
        return out.reshape(*x.shape[:-1], weight.shape[0])

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        x, weight = ctx.saved_tensors
        rows_grad = grad.reshape(-1, grad.shape[-1])  # (N, out)
        wanted = ctx.needs_input_grad
        grad_x = (rows_grad @ weight).reshape(x.shape) if wanted[0] else None
        grad_weight = rows_grad.T @ x.reshape(-1, x.shape[-1]) if wanted[1] else None
        if len(wanted) == 2:
            return grad_x, grad_weight
        grad_bias = _column_sum(rows_grad) if wanted[2] else None
        return grad_x, grad_weight, grad_bias


def _check_linear(x: Any, weight: Any, bias: Any) -> None:
    _check_floating(x, "linear input")
    _check_floating(weight, "linear weight")
    if weight.ndim != 2:
        raise ValueError(f"linear weight must be 2-D (out, in), got shape {weight.shape}")
    if x.ndim == 0 or x.shape[-1] != weight.shape[1]:
        raise ValueError(f"linear: input of shape {x.shape} does not end in the weight's "
                         f"{weight.shape[1]} input features (weight shape {weight.shape})")
    if bias is not None:
        _check_floating(bias, "linear bias")
        if bias.shape != (weight.shape[0],):
            raise ValueError(f"linear bias of shape {bias.shape} does not match the weight's "
                             f"{weight.shape[0]} output features")
    dtypes = {t.dtype for t in (x, weight, bias) if t is not None}
    if len(dtypes) > 1:
        raise TypeError(f"linear: mixed dtypes {sorted(map(str, dtypes))}")


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``x (..., in) @ weight (out, in)ᵀ + bias (out,)`` → ``(..., out)``. One fused node."""
    _check_linear(x, weight, bias)
    if bias is None:
        return LinearFunction.apply(x, weight)
    return LinearFunction.apply(x, weight, bias)


def linear_reference(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """The primitive chain: matmul with the transposed weight, then add the bias."""
    _check_linear(x, weight, bias)
    out = x @ weight.transpose()
    return out if bias is None else out + bias


# --------------------------------------------------------------------------------- attention
class CausalAttentionFunction(Function):
    """Causal self-attention from fused projections to merged heads, one node.

    ``qkv (B, T, 3C)`` holds the query, key and value projections side by side, each split
    into ``heads`` blocks of width D = C / heads. With q, k, v the (B, H, T, D) views,
    P = causal_softmax(scale · q kᵀ) and the output merges the heads of P v into (B, T, C).
    Backward, with dO split into heads the same way::

        dv = Pᵀ dO,   dP = dO vᵀ,   dS = scale · P ⊙ (dP - Σ_j dP ⊙ P),
        dq = dS k,    dk = dSᵀ q

    written straight into the (B, T, 3, H, D) gradient of ``qkv``: no copies of q, k, v.
    """

    op_name = "causal_attention"

    @staticmethod
    def forward(ctx: Context, qkv: Any, heads: int, scale: float) -> Any:
        batch, length, triple = qkv.shape
        channels = triple // 3
        split = qkv.reshape(batch, length, 3, heads, channels // heads)  # (B, T, 3, H, D)
        query, key, value = (split[:, :, i].transpose(0, 2, 1, 3) for i in range(3))
        scores = query @ key.transpose(0, 1, 3, 2)  # (B, H, T, T), a fresh array
        scores *= scores.dtype.type(scale)
        probabilities = _causal_softmax_in_place(scores)
        context = probabilities @ value  # (B, H, T, D)
        ctx.save_for_backward(qkv, probabilities)
        ctx.heads, ctx.scale = heads, scale
        return context.transpose(0, 2, 1, 3).reshape(batch, length, channels)  # (B, T, C)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        qkv, probabilities = ctx.saved_tensors
        xp = array_module(qkv)
        batch, length, triple = qkv.shape
        heads, width = ctx.heads, triple // 3 // ctx.heads
        split = qkv.reshape(batch, length, 3, heads, width)
        query, key, value = (split[:, :, i].transpose(0, 2, 1, 3) for i in range(3))
        grad_out = grad.reshape(batch, length, heads, width).transpose(0, 2, 1, 3)  # (B,H,T,D)
        grad_qkv = xp.empty((batch, length, 3, heads, width), dtype=qkv.dtype)
        grad_query, grad_key, grad_value = (grad_qkv[:, :, i].transpose(0, 2, 1, 3)
                                            for i in range(3))
        xp.matmul(probabilities.transpose(0, 1, 3, 2), grad_out, out=grad_value)
        grad_scores = grad_out @ value.transpose(0, 1, 3, 2)  # dP (B, H, T, T)
        grad_scores -= _row_sum(grad_scores * probabilities)
        grad_scores *= probabilities
        grad_scores *= grad_scores.dtype.type(ctx.scale)  # dS
        xp.matmul(grad_scores, key, out=grad_query)
        xp.matmul(grad_scores.transpose(0, 1, 3, 2), query, out=grad_key)
        return grad_qkv.reshape(batch, length, triple)


def _check_attention(qkv: Any, heads: int) -> None:
    _check_floating(qkv, "causal_attention qkv")
    if isinstance(heads, bool) or not isinstance(heads, numbers.Integral) or heads < 1:
        raise ValueError(f"causal_attention heads must be a positive integer, got {heads!r}")
    if qkv.ndim != 3 or qkv.shape[-1] % (3 * heads) or qkv.shape[1] == 0:
        raise ValueError(f"causal_attention expects qkv of shape (B, T, 3C) with T >= 1 and C "
                         f"divisible by heads={heads}, got shape {qkv.shape}")


def causal_attention(qkv: Tensor, heads: int, scale: float | None = None) -> Tensor:
    """Causal multi-head self-attention core: ``qkv (B, T, 3C)`` → ``(B, T, C)``.

    ``qkv[..., :C]``, ``[..., C:2C]`` and ``[..., 2C:]`` are the query, key and value
    projections; each is split into ``heads`` heads of width D = C / heads. Position t
    attends to positions 0..t; scores are scaled by ``scale`` (default 1/sqrt(D)). One
    fused node; ``causal_attention_reference`` is its primitive twin.
    """
    _check_attention(qkv, heads)
    width = qkv.shape[-1] // 3 // heads
    scale = 1.0 / math.sqrt(width) if scale is None else float(scale)
    return CausalAttentionFunction.apply(qkv, heads=int(heads), scale=scale)


def causal_attention_reference(qkv: Tensor, heads: int, scale: float | None = None) -> Tensor:
    """The primitive chain: split heads, q kᵀ, causal_softmax_reference, @ v, merge heads."""
    _check_attention(qkv, heads)
    batch, length, triple = qkv.shape
    channels = triple // 3
    width = channels // heads
    scale = 1.0 / math.sqrt(width) if scale is None else float(scale)
    split = qkv.reshape(batch, length, 3, heads, width).permute(2, 0, 3, 1, 4)  # (3,B,H,T,D)
    query, key, value = split[0], split[1], split[2]
    probabilities = causal_softmax_reference(query @ key.transpose(), scale)  # (B, H, T, T)
    context = probabilities @ value  # (B, H, T, D)
    return context.permute(0, 2, 1, 3).reshape(batch, length, channels)


# --------------------------------------------------------------------------------- layer norm
class LayerNormFunction(Function):
    """y = (x - mean) / sqrt(var + eps) · weight + bias over the last axis, one node.

    With x̂ the normalized input, r = 1/sqrt(var + eps) and g = dy · weight, the backward is
    dx = r · (g - mean(g) - x̂ · mean(g ⊙ x̂)), dweight = Σ dy ⊙ x̂, dbias = Σ dy.
    """

    op_name = "layer_norm"

    @staticmethod
    def forward(ctx: Context, x: Any, *affine: Any, eps: float, has_weight: bool,
                has_bias: bool) -> Any:
        xp = array_module(x)
        weight = affine[0] if has_weight else None
        bias = affine[-1] if has_bias else None
        # Centered for now. Shifting by each row's first entry before taking the mean makes
        # a constant row exactly 0 (so its output is exactly ``bias``) at any magnitude.
        normalized = x - x[..., :1]
        normalized -= _row_mean(normalized)
        variance = _row_mean(xp.square(normalized))  # biased, as PyTorch
        inverse_std = 1.0 / xp.sqrt(variance + x.dtype.type(eps))  # (..., 1)
        normalized *= inverse_std
        out = normalized if weight is None else normalized * weight
        if bias is not None:
            out = out + bias if out is normalized else xp.add(out, bias, out=out)
        ctx.save_for_backward(normalized, inverse_std, weight)
        ctx.has_weight, ctx.has_bias = has_weight, has_bias
        return out

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        normalized, inverse_std, weight = ctx.saved_tensors
        width = normalized.shape[-1]
        grads: list[Any] = [None]
        projected = grad * normalized  # dy ⊙ x̂
        if ctx.has_weight:
            wanted = ctx.needs_input_grad[1]
            grads.append(_column_sum(projected.reshape(-1, width)) if wanted else None)
        if ctx.has_bias:
            wanted = ctx.needs_input_grad[-1]
            grads.append(_column_sum(grad.reshape(-1, width)) if wanted else None)
        if ctx.needs_input_grad[0]:
            # With g = dy ⊙ weight, mean(g) and mean(g ⊙ x̂) are the rows of dy and dy ⊙ x̂
            # against weight / C: no need to form g ⊙ x̂.
            xp = array_module(grad)
            row_weights = (constant_vector(xp, width, 1.0 / width, grad.dtype) if weight is None
                           else weight / grad.dtype.type(width))
            mean_g = _row_dot(grad, row_weights)  # (..., 1)
            mean_g_normalized = _row_dot(projected, row_weights)  # (..., 1)
            correction = xp.multiply(normalized, mean_g_normalized, out=projected)
            correction += mean_g
            if weight is None:
                g = grad - correction
            else:
                g = grad * weight
                g -= correction
            g *= inverse_std  # r · (g - mean(g) - x̂ · mean(g ⊙ x̂))
            grads[0] = g
        return tuple(grads)


def _row_dot(a: Any, vector: Any) -> Any:
    """Each row of ``a`` (its last axis) dotted with ``vector``, kept as an axis of size 1:
    one matrix-vector product (BLAS is several times faster at row sums than a numpy
    reduction along many short rows)."""
    products = a.reshape(-1, a.shape[-1]) @ vector  # (N,)
    return products.reshape(*a.shape[:-1], 1)


def _row_sum(a: Any, factor: float = 1.0) -> Any:
    """``factor`` times the sum over the last axis, kept as an axis of size 1."""
    return _row_dot(a, constant_vector(array_module(a), a.shape[-1], factor, a.dtype))


def _column_sum(rows: Any) -> Any:
    """The sum of the rows of a 2-D array, as one vector-matrix product (BLAS; about twice
    as fast as numpy's reduction over the first axis)."""
    return constant_vector(array_module(rows), rows.shape[0], 1.0, rows.dtype) @ rows


def _row_mean(a: Any) -> Any:
    """The mean over the last axis, kept as an axis of size 1 (see _row_sum)."""
    return _row_sum(a, 1.0 / a.shape[-1])


def _check_layer_norm(x: Any, weight: Any, bias: Any, eps: float) -> None:
    _check_floating(x, "layer_norm input")
    if x.ndim == 0 or x.shape[-1] == 0:
        raise ValueError(f"layer_norm needs a non-empty last axis, got shape {x.shape}")
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real) or not eps > 0 \
            or not math.isfinite(eps):
        raise ValueError(f"layer_norm eps must be a finite number > 0, got {eps!r}")
    for name, value in (("weight", weight), ("bias", bias)):
        if value is None:
            continue
        _check_floating(value, f"layer_norm {name}")
        if value.shape != (x.shape[-1],):
            raise ValueError(f"layer_norm {name} of shape {value.shape} does not match the "
                             f"input's last axis (input shape {x.shape})")


def layer_norm(x: Tensor, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """Normalize the last axis to zero mean and unit (biased) variance, then scale and shift
    by ``weight`` and ``bias`` (each of shape ``(C,)`` or None). One fused node."""
    _check_layer_norm(x, weight, bias, eps)
    affine = [t for t in (weight, bias) if t is not None]
    return LayerNormFunction.apply(x, *affine, eps=float(eps), has_weight=weight is not None,
                                   has_bias=bias is not None)


def layer_norm_reference(x: Tensor, weight: Tensor | None = None, bias: Tensor | None = None,
                         eps: float = 1e-5) -> Tensor:
    """The primitive chain: mean, sub, mul, mean, add eps, sqrt, div, mul weight, add bias."""
    _check_layer_norm(x, weight, bias, eps)
    centered = x - x.mean(-1, keepdims=True)
    variance = (centered * centered).mean(-1, keepdims=True)
    out = centered / (variance + float(eps)).sqrt()
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


# --------------------------------------------------------------------------------- embedding
class EmbeddingFunction(Function):
    """Rows of ``weight`` picked by integer ``ids``; the backward adds each output row's
    gradient into its source row (repeated ids accumulate)."""

    op_name = "embedding"

    @staticmethod
    def forward(ctx: Context, weight: Any, ids: Any) -> Any:
        ids = array_module(weight).asarray(ids)
        ctx.ids, ctx.weight_shape = ids, weight.shape
        return weight[ids]  # (*ids.shape, C)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        xp = array_module(grad)
        full = xp.zeros(ctx.weight_shape, dtype=grad.dtype)  # (V, C)
        ids = ctx.ids.reshape(-1)  # (N,)
        rows = grad.reshape(-1, ctx.weight_shape[-1])  # (N, C)
        if xp is not np or ids.size == 0:
            xp.add.at(full, ids, rows)
            return full
        # Sort the ids so that equal ones are neighbours, then sum each run of rows with one
        # reduceat: much faster than add.at's element-by-element scatter.
        order = np.argsort(ids, kind="stable")
        sorted_ids = ids[order]
        starts = np.flatnonzero(np.concatenate(([True], sorted_ids[1:] != sorted_ids[:-1])))
        full[sorted_ids[starts]] = np.add.reduceat(rows[order], starts, axis=0)
        return full


def _check_embedding(weight: Any, ids: Any) -> np.ndarray:
    _check_floating(weight, "embedding weight")
    if weight.ndim != 2:
        raise ValueError(f"embedding weight must be 2-D (V, C), got shape {weight.shape}")
    return token_ids(ids, weight.shape[0])


def embedding(weight: Tensor, ids: Any) -> Tensor:
    """Look up rows: ``weight (V, C)`` and integer ``ids (...)`` give ``(..., C)``."""
    array = _check_embedding(weight, ids)
    return EmbeddingFunction.apply(weight, ids=array)


def embedding_reference(weight: Tensor, ids: Any) -> Tensor:
    """The primitive twin of ``embedding``: onehot(ids) @ weight."""
    array = _check_embedding(weight, ids)
    onehot = np.eye(weight.shape[0], dtype=weight.dtype)[array]  # (..., V)
    return Tensor(onehot) @ weight


# --------------------------------------------------------------------------------- dropout
class DropoutFunction(Function):
    """y = x ⊙ m where m is 0 (dropped) or 1/(1-p) (kept); backward: grad ⊙ m."""

    op_name = "dropout"

    @staticmethod
    def forward(ctx: Context, x: Any, multiplier: Any) -> Any:
        ctx.multiplier = multiplier
        return x * multiplier

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        return grad * ctx.multiplier


def check_probability(p: Any) -> float:
    """``p`` as a float if it is a number in [0, 1), else ValueError."""
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0.0 <= p < 1.0:
        raise ValueError(f"dropout probability must be a number in [0, 1), got {p!r}")
    return float(p)


def _dropout_multiplier(x: Tensor, p: float, rng: Rng) -> np.ndarray:
    """Draw the inverted-dropout multiplier: 0 where uniform(0, 1) < p, else 1/(1-p)."""
    dropped = rng.uniform(0.0, 1.0, size=x.shape) < p
    xp = array_module(x.data)
    keep_scale = x.dtype.type(1.0 / (1.0 - p))
    return xp.asarray(np.where(dropped, x.dtype.type(0), keep_scale))


def resolve_rng(rng: Any) -> Rng:
    """``rng`` itself, or the process-wide default generator when it is None."""
    if rng is None:
        return default_rng()
    if not isinstance(rng, Rng):
        raise TypeError(f"rng must be a tensorlib.nn.Rng or None, got {type(rng).__name__}")
    return rng


def dropout(x: Tensor, p: float, rng: Rng | None = None, training: bool = True) -> Tensor:
    """Inverted dropout: zero each element with probability ``p``, scale the rest by 1/(1-p).

    Returns ``x`` itself, drawing nothing from the RNG, when ``training`` is False or p == 0.
    The mask is ``rng.uniform(0, 1, x.shape) < p`` (the default RNG when ``rng`` is None).
    """
    p = check_probability(p)
    _check_floating(x, "dropout input")
    generator = resolve_rng(rng)
    if not training or p == 0.0:
        return x
    return DropoutFunction.apply(x, multiplier=_dropout_multiplier(x, p, generator))


def dropout_reference(x: Tensor, p: float, rng: Rng | None = None,
                      training: bool = True) -> Tensor:
    """The primitive twin of ``dropout`` (same draws): x * Tensor(multiplier)."""
    p = check_probability(p)
    _check_floating(x, "dropout input")
    generator = resolve_rng(rng)
    if not training or p == 0.0:
        return x
    return x * Tensor(_dropout_multiplier(x, p, generator))
