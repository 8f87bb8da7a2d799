"""The functional API: activations, softmax, losses, masks, dropout and the fused layers.

Each function checks its arguments (clear errors naming shapes, dtypes and values), then
applies one op from :mod:`tensorlib.engine.ops`. The fused ops, ``cross_entropy``, ``layer_norm``,
``linear`` (x Wᵀ + b), ``embedding`` (a row gather), ``causal_softmax`` (attention's scaled,
causally masked softmax), ``causal_attention`` (the attention core, from fused Q/K/V to merged
heads) and ``dropout``, each have a *reference twin* (``..._reference``) built from the chain
of primitive ops: the teaching version, which notebooks and tests hold in agreement with the
fused op, in value and in gradient.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tensorlib.engine import ops, validation
from tensorlib.engine.autograd import no_grad
from tensorlib.engine.backend import array_module
from tensorlib.engine.ops.loss import REDUCTIONS
from tensorlib.engine.ops.softmax import causal_forbidden
from tensorlib.engine.splitmix64 import Rng, default_rng
from tensorlib.engine.tensor import Tensor
from tensorlib.engine.typing import Array
from tensorlib.engine.validation import is_floating

__all__ = [
    "avg_pool1d",
    "avg_pool2d",
    "batch_norm",
    "batch_norm_reference",
    "causal_attention",
    "causal_attention_reference",
    "causal_mask",
    "apply_causal_mask",
    "attend",
    "causal_softmax",
    "causal_softmax_reference",
    "conv1d",
    "conv2d",
    "cross_entropy",
    "cross_entropy_reference",
    "dropout",
    "dropout_reference",
    "embedding",
    "embedding_reference",
    "fold",
    "gelu",
    "hardswish",
    "layer_norm",
    "layer_norm_reference",
    "leaky_relu",
    "linear",
    "one_hot",
    "linear_reference",
    "log_softmax",
    "log_softmax_reference",
    "max_pool1d",
    "max_pool2d",
    "merge_heads",
    "mish",
    "pad",
    "relu",
    "relu6",
    "sigmoid",
    "sign",
    "silu",
    "softmax",
    "softmax_reference",
    "softplus",
    "split_heads",
    "tanh",
    "token_ids",
    "unfold",
]


def _check_tensor(value: Any, what: str) -> Tensor:
    if not isinstance(value, Tensor):
        raise TypeError(f"{what} must be a Tensor, got {type(value).__name__}")
    return value


def _check_one_dtype(what: str, *tensors: Any) -> None:
    """TypeError when the tensors given (None: absent) do not share one dtype."""
    dtypes = {t.dtype for t in tensors if t is not None}
    if len(dtypes) > 1:
        raise TypeError(f"{what}: mixed dtypes {sorted(map(str, dtypes))}; convert with "
                        ".float() or .double() first")


def _check_floating(value: Any, what: str) -> Tensor:
    _check_tensor(value, what)
    if not is_floating(value.dtype):
        raise TypeError(f"{what} must be a floating-point tensor, got dtype {value.dtype}")
    return value


# --------------------------------------------------------------------------------- activations
def relu(x: Tensor) -> Tensor:
    """max(x, 0) elementwise."""
    return _check_tensor(x, "relu input").relu()


def leaky_relu(x: Tensor, negative_slope: float = 0.01) -> Tensor:
    """x where x > 0, ``negative_slope``·x elsewhere (a finite number)."""
    return _check_tensor(x, "leaky_relu input").leaky_relu(negative_slope)


def softplus(x: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(β·x)) / β, a smooth relu; x itself where β·x > ``threshold``."""
    return _check_tensor(x, "softplus input").softplus(beta, threshold)


def silu(x: Tensor) -> Tensor:
    """SiLU (swish): x·sigmoid(x)."""
    return _check_tensor(x, "silu input").silu()


def sign(x: Tensor) -> Tensor:
    """-1, 0 or +1 elementwise; its gradient is 0 everywhere."""
    return _check_tensor(x, "sign input").sign()


def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    """GELU x·Φ(x): exact (erf) by default, ``approximate="tanh"`` for the tanh form."""
    return _check_tensor(x, "gelu input").gelu(approximate=approximate)


def sigmoid(x: Tensor) -> Tensor:
    """1 / (1 + exp(-x)) elementwise, without overflow."""
    return _check_tensor(x, "sigmoid input").sigmoid()


def tanh(x: Tensor) -> Tensor:
    return _check_tensor(x, "tanh input").tanh()


# --------------------------------------------------------------------------------- softmax
def softmax(x: Tensor, dim: int = -1, *, axis: int | None = None) -> Tensor:
    """Numerically stable softmax along ``dim`` (one fused node)."""
    return _check_floating(x, "softmax input").softmax(dim, axis=axis)


def log_softmax(x: Tensor, dim: int = -1, *, axis: int | None = None) -> Tensor:
    """Numerically stable log-softmax along ``dim`` (one fused node)."""
    return _check_floating(x, "log_softmax input").log_softmax(dim, axis=axis)


def log_softmax_reference(x: Tensor, dim: int = -1) -> Tensor:
    """log-softmax as a chain of primitives: x - max - log Σ exp(x - max)."""
    shifted = _check_floating(x, "log_softmax input") - x.amax(dim, keepdim=True)
    return shifted - shifted.exp().sum(dim, keepdim=True).log()


def softmax_reference(x: Tensor, dim: int = -1) -> Tensor:
    """softmax as a chain of primitives: exp(x - max) / Σ exp(x - max)."""
    exps = (_check_floating(x, "softmax input") - x.amax(dim, keepdim=True)).exp()
    return exps / exps.sum(dim, keepdim=True)


def one_hot(tensor: Any, num_classes: int = -1) -> Tensor:
    """int64 rows of zeros with a 1 at each id: shape ``tensor.shape + (num_classes,)``.
    ``num_classes=-1`` takes the largest id plus one."""
    if not isinstance(tensor, Tensor) or tensor.dtype.kind not in "iu":
        raise TypeError("one_hot takes an integer tensor of class ids, got "
                        f"{getattr(tensor, 'dtype', type(tensor).__name__)}")
    num_classes = validation.integer(num_classes, "one_hot num_classes", minimum=-1)
    ids = tensor._data
    if num_classes == -1:
        if ids.size == 0:
            raise ValueError("one_hot of an empty tensor needs num_classes")
        num_classes = int(ids.max()) + 1
    if ids.size and (ids.min() < 0 or ids.max() >= num_classes):
        raise ValueError(f"one_hot: class ids must lie in [0, {num_classes}), got "
                         f"{int(ids.min())} to {int(ids.max())}")
    return Tensor(np.arange(num_classes) == ids[..., None]).long()


def token_ids(ids: Any, limit: int, what: str = "token id", ignore: int | None = None
              ) -> Array:
    """Validate integer class/token ids against ``[0, limit)`` and return them as int64.

    ``ids`` may be an integer Tensor, an integer numpy array, a nested list or an int.
    Floating-point or boolean ids raise TypeError, ids that require grad raise TypeError,
    and any id outside ``[0, limit)`` raises IndexError naming the first offending value;
    ids equal to ``ignore`` (a padding marker such as -100) are let through as they are.
    """
    if isinstance(ids, Tensor):
        if ids.requires_grad:
            raise TypeError(f"{what}s must not require grad (they are indices, not values)")
        array = ids._data
    elif isinstance(ids, (bool, np.bool_)):
        raise TypeError(f"{what}s must be integers, got a bool")
    elif isinstance(ids, numbers.Integral):
        if not 0 <= int(ids) < limit and int(ids) != ignore:
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
        if ignore is not None:
            bad &= array != ignore
        if bad.any():
            first = int(array[bad].reshape(-1)[0])
            position = tuple(int(i) for i in np.argwhere(bad)[0])
            raise IndexError(f"{what} {first} at position {position} is out of range "
                             f"[0, {limit})")
    return array.astype(np.int64, copy=False)


# --------------------------------------------------------------------------------- cross-entropy
IGNORE_INDEX = -100  # PyTorch's default marker for targets that do not count
def _check_cross_entropy(logits: Any, targets: Any, ignore_index: int = IGNORE_INDEX,
                         reduction: str = "mean", label_smoothing: float = 0.0
                         ) -> tuple[np.ndarray, np.ndarray | None, float]:
    """Checked targets (ignored positions set to class 0), the kept mask (None when nothing
    is ignored) and the smoothing, or a clear error naming what is wrong."""
    _check_floating(logits, "cross_entropy logits")
    if logits.ndim == 0:
        raise ValueError("cross_entropy logits must have a class axis, got a 0-d tensor")
    classes = logits.shape[-1]
    if classes == 0:
        raise ValueError(f"cross_entropy logits have no classes (shape {logits.shape})")
    ignore_index = validation.integer(ignore_index, "cross_entropy ignore_index")
    if not isinstance(reduction, str):
        raise TypeError(f"cross_entropy reduction must be one of {', '.join(REDUCTIONS)}, "
                        f"got {reduction!r}")
    if reduction not in REDUCTIONS:
        raise ValueError(f"cross_entropy reduction must be one of "
                         f"{', '.join(REDUCTIONS)}, got {reduction!r}")
    smoothing = validation.real(label_smoothing, "cross_entropy label_smoothing", low=0.0,
                                high=1.0, high_open=False)
    array = token_ids(targets, classes, what="target", ignore=ignore_index)
    if array.shape != logits.shape[:-1]:
        raise ValueError(f"cross_entropy targets of shape {array.shape} do not match logits "
                         f"of shape {logits.shape} (expected targets of shape "
                         f"{logits.shape[:-1]})")
    if array.size == 0:
        raise ValueError(f"cross_entropy of an empty batch (logits shape {logits.shape})")
    ignored = array == ignore_index
    if not ignored.any():
        return array, None, smoothing
    return np.where(ignored, 0, array), ~ignored, smoothing


def cross_entropy(logits: Tensor, targets: Any, ignore_index: int = IGNORE_INDEX,
                  reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """Cross-entropy between ``logits (..., V)`` and class indices ``targets (...)``.

    ``targets`` holds integers in ``[0, V)`` with shape ``logits.shape[:-1]``, or
    ``ignore_index`` (default -100, PyTorch's) at positions that do not count: padding. With
    ``label_smoothing`` ε the target distribution is (1 - ε)·onehot + ε/V. ``reduction``:
    "mean" (over the positions not ignored; nan if every one is), "sum", or "none" (the
    loss per position, 0 where ignored). The class axis is the last one (PyTorch's is axis
    1 for inputs with more than two axes). Stable for logits of any magnitude; inputs are
    not modified. Non-integer targets raise TypeError, out-of-range ones IndexError.
    """
    array, kept, smoothing = _check_cross_entropy(logits, targets, ignore_index, reduction,
                                                  label_smoothing)
    return ops.CrossEntropy.apply(logits, targets=array, kept=kept, reduction=reduction,
                                  label_smoothing=smoothing)


def cross_entropy_reference(logits: Tensor, targets: Any, ignore_index: int = IGNORE_INDEX,
                            reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """Cross-entropy as a chain of primitives: the loss per position is
    -Σ_c q[c]·log_softmax(logits)[c] for the target distribution q (the smoothed onehot, all
    zeros where ignored), then summed, averaged over the kept positions, or returned."""
    array, kept, smoothing = _check_cross_entropy(logits, targets, ignore_index, reduction,
                                                  label_smoothing)
    classes = logits.shape[-1]
    onehot = np.eye(classes, dtype=logits.dtype)[array]  # (..., V)
    target_distribution = (1.0 - smoothing) * onehot + smoothing / classes
    count = 0
    if kept is not None:
        target_distribution = target_distribution * kept[..., None]
        count = int(kept.sum())
    losses = -(log_softmax_reference(logits)
               * Tensor(target_distribution.astype(logits.dtype))).sum(-1)  # (...)
    if reduction == "none":
        return losses
    if reduction == "sum":
        return losses.sum()
    if kept is None:
        return losses.mean()
    if not count:  # nothing kept: nan, with the zero gradient the fused op gives
        return losses.sum() * 0.0 + math.nan
    return losses.sum() / count


# --------------------------------------------------------------------------------- masks
def causal_mask(length: int, additive: bool = False, dtype: Any = np.float32) -> Tensor:
    """The (T, T) causal mask: position t may attend to positions 0..t only.

    By default a boolean tensor, True where attention is forbidden (column > row). With
    ``additive=True`` a float tensor of ``dtype``: 0 on and below the diagonal, -inf above.
    """
    length = validation.positive_integer(length, "causal_mask length")
    forbidden = causal_forbidden(np, length, length)
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
    """``scores + M`` with M the additive causal mask of the last two axes (0 on and below
    the diagonal, -inf above): the future becomes -inf, and the gradient passes to
    ``scores`` unchanged, as through any addition."""
    _check_scores(scores, "apply_causal_mask scores")
    return scores + causal_mask(scores.shape[-1], additive=True, dtype=scores.dtype)


def _check_causal_scores(scores: Any, offset: int, what: str) -> int:
    offset = validation.integer(offset, f"{what} offset", minimum=0)
    if offset == 0:
        _check_scores(scores, what)
        return 0
    _check_floating(scores, what)
    if scores.ndim < 2 or scores.shape[-1] != scores.shape[-2] + offset:
        raise ValueError(f"{what} with offset {offset} must end in a (T, {offset} + T) pair "
                         f"of axes, got shape {scores.shape}")
    return int(offset)


def causal_softmax(scores: Tensor, scale: float = 1.0, offset: int = 0) -> Tensor:
    """Attention probabilities: softmax over the last axis of ``scale * scores`` with the
    future masked out. ``scores (..., T, offset + T)``: query ``i`` sits at position
    ``offset + i`` (``offset`` keys are already cached) and sees keys ``0 .. offset + i``.
    One fused node."""
    offset = _check_causal_scores(scores, offset, "causal_softmax scores")
    scale = validation.real(scale, "causal_softmax scale")
    return ops.Softmax.apply(scores, axis=-1, causal=True, offset=offset, scale=scale)


def causal_softmax_reference(scores: Tensor, scale: float = 1.0, offset: int = 0) -> Tensor:
    """The primitive chain: (scores · scale + additive mask), then softmax_reference."""
    offset = _check_causal_scores(scores, offset, "causal_softmax scores")
    queries, keys = scores.shape[-2:]
    forbidden = causal_forbidden(np, queries, keys, offset)
    mask = Tensor(np.where(forbidden, -np.inf, 0.0).astype(scores.dtype))  # 0 or -inf
    return softmax_reference(scores * float(scale) + mask)


# --------------------------------------------------------------------------------- linear
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
    _check_one_dtype("linear", x, weight, bias)


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``x (..., in) @ weight (out, in)ᵀ + bias (out,)`` → ``(..., out)``. One fused node."""
    _check_linear(x, weight, bias)
    return ops.Linear.apply(x, weight, bias)


def linear_reference(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """The primitive chain: matmul with the transposed weight, then add the bias."""
    _check_linear(x, weight, bias)
    out = x @ weight.transpose()
    return out if bias is None else out + bias


# --------------------------------------------------------------------------------- attention
def _check_attention(qkv: Any, heads: int) -> None:
    _check_floating(qkv, "causal_attention qkv")
    validation.positive_integer(heads, "causal_attention heads")
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
    return ops.CausalAttention.apply(qkv, heads=int(heads), scale=scale)


def causal_attention_reference(qkv: Tensor, heads: int, scale: float | None = None) -> Tensor:
    """The primitive chain: split heads, ``attend`` with causal_softmax_reference, merge
    heads."""
    _check_attention(qkv, heads)
    width = qkv.shape[-1] // 3 // heads
    scale = 1.0 / math.sqrt(width) if scale is None else float(scale)
    query, key, value = split_heads(qkv, heads)
    context, _ = attend(query, key, value, scale, softmax=causal_softmax_reference)
    return merge_heads(context)


def split_heads(qkv: Tensor, heads: int) -> tuple[Tensor, Tensor, Tensor]:
    """The query, key and value ``(B, H, T, D)`` of fused projections ``qkv (B, T, 3C)``."""
    batch, length, triple = qkv.shape
    split = qkv.reshape(batch, length, 3, heads, triple // 3 // heads)  # (B, T, 3, H, D)
    split = split.permute(2, 0, 3, 1, 4)  # (3, B, H, T, D)
    return split[0], split[1], split[2]


def merge_heads(context: Tensor) -> Tensor:
    """``(B, H, T, D)`` → ``(B, T, H·D)``: the heads side by side on the channel axis."""
    batch, heads, length, width = context.shape
    return context.permute(0, 2, 1, 3).reshape(batch, length, heads * width)


def attend(query: Tensor, key: Tensor, value: Tensor, scale: float, offset: int = 0,
           observe: Callable[[Tensor], Tensor] | None = None,
           softmax: Callable[..., Tensor] = causal_softmax) -> tuple[Tensor, Tensor]:
    """Attention within each head: ``(O, P)`` with P = causal softmax of scale · q kᵀ and
    O = P v, from ``query (B, H, T, D)``, ``key`` and ``value (B, H, S, D)``.

    Query i sits at position ``offset + i`` and sees keys ``0 .. offset + i`` (S = offset +
    T when ``offset`` keys are cached). ``observe`` (a HookPoint) is applied to P before it
    mixes the values; ``softmax`` is ``causal_softmax`` or its reference twin. The fused op
    ``causal_attention`` computes the same O in one node, with no P to observe.
    """
    probabilities = softmax(query @ key.transpose(), scale, offset)  # (B, H, T, S)
    if observe is not None:
        probabilities = observe(probabilities)
    return probabilities @ value, probabilities  # (B, H, T, D), (B, H, T, S)


# --------------------------------------------------------------------------------- layer norm
def _check_layer_norm(x: Any, weight: Any, bias: Any, eps: float) -> None:
    _check_floating(x, "layer_norm input")
    if x.ndim == 0 or x.shape[-1] == 0:
        raise ValueError(f"layer_norm needs a non-empty last axis, got shape {x.shape}")
    validation.positive(eps, "layer_norm eps")
    for name, value in (("weight", weight), ("bias", bias)):
        if value is None:
            continue
        _check_floating(value, f"layer_norm {name}")
        if value.shape != (x.shape[-1],):
            raise ValueError(f"layer_norm {name} of shape {value.shape} does not match the "
                             f"input's last axis (input shape {x.shape})")
    _check_one_dtype("layer_norm", x, weight, bias)


def layer_norm(x: Tensor, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """Normalize the last axis to zero mean and unit (biased) variance, then scale and shift
    by ``weight`` and ``bias`` (each of shape ``(C,)`` or None). One fused node."""
    _check_layer_norm(x, weight, bias, eps)
    return ops.LayerNorm.apply(x, weight, bias, eps=float(eps))


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


# --------------------------------------------------------------------------------- batch norm
def _check_batch_norm(x: Any, running_mean: Any, running_var: Any, weight: Any, bias: Any,
                      training: bool, momentum: float, eps: float) -> None:
    _check_floating(x, "batch_norm input")
    if x.ndim < 2:
        raise ValueError(f"batch_norm expects (N, C, ...) input, got shape {x.shape}")
    channels = x.shape[1]
    if training and x.numel() == channels:  # one value per channel
        raise ValueError(f"batch_norm in training needs more than 1 value per channel (a batch "
                         f"variance), got input shape {x.shape}")
    validation.positive(eps, "batch_norm eps")
    validation.real(momentum, "batch_norm momentum", low=0.0, high=1.0, high_open=False)
    if not training and (running_mean is None or running_var is None):
        raise ValueError("batch_norm in evaluation needs running_mean and running_var")
    for name, value in (("running_mean", running_mean), ("running_var", running_var),
                        ("weight", weight), ("bias", bias)):
        if value is None:
            continue
        _check_floating(value, f"batch_norm {name}")
        if value.shape != (channels,):
            raise ValueError(f"batch_norm {name} of shape {value.shape} does not match the "
                             f"input's {channels} channels (input shape {x.shape})")
        if name.startswith("running") and value.requires_grad:
            raise ValueError(f"batch_norm {name} must not require grad (it is a buffer)")
    _check_one_dtype("batch_norm", x, weight, bias)


def _channel_axes(x: Tensor) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The axes statistics are taken over, and the shape a (C,) vector broadcasts as."""
    return (0, *range(2, x.ndim)), (1, -1) + (1,) * (x.ndim - 2)


def batch_norm(x: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None,
               training: bool = False, momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalize each channel of ``x (N, C, ...)`` (``(N, C)``, ``(N, C, L)``, ``(N, C, H,
    W)``), then scale and shift by ``weight`` and ``bias`` (each (C,) or None), as
    ``torch.nn.functional.batch_norm``.

    Training: the batch's mean and biased variance normalize (one fused node), and the
    running statistics, where given, move in place towards the batch's:
    ``running = (1 - momentum) · running + momentum · batch``, with the unbiased variance
    (M/(M-1) times the biased one, M values per channel). Evaluation: the running
    statistics normalize, and nothing changes. An empty batch has no statistics: it passes
    through (``x · weight + bias``, empty) and changes nothing.
    """
    _check_batch_norm(x, running_mean, running_var, weight, bias, training, momentum, eps)
    axes, channel_shape = _channel_axes(x)
    if x.numel() == 0:
        out = x if weight is None else x * weight.reshape(channel_shape)
        return out if bias is None else out + bias.reshape(channel_shape)
    if not training:
        assert running_mean is not None and running_var is not None  # checked above
        xp = array_module(x._data)
        mean = running_mean._data.astype(x.dtype, copy=False).reshape(channel_shape)
        variance = running_var._data.astype(x.dtype, copy=False).reshape(channel_shape)
        out = (x - Tensor(mean)) * Tensor(1.0 / xp.sqrt(variance + x.dtype.type(eps)))
        if weight is not None:
            out = out * weight.reshape(channel_shape)
        return out if bias is None else out + bias.reshape(channel_shape)
    if running_mean is not None or running_var is not None:
        values_per_channel = x.numel() // x.shape[1]
        batch_mean = x._data.mean(axis=axes)
        batch_var = x._data.var(axis=axes) * (values_per_channel / (values_per_channel - 1))
        with no_grad():
            for running, batch in ((running_mean, batch_mean), (running_var, batch_var)):
                if running is not None:
                    running.mul_(1.0 - momentum).add_(batch.astype(running.dtype), alpha=momentum)
    return ops.BatchNorm.apply(x, weight, bias, eps=float(eps))


def batch_norm_reference(x: Tensor, weight: Tensor | None = None, bias: Tensor | None = None,
                         eps: float = 1e-5) -> Tensor:
    """The primitive chain of training-mode ``batch_norm`` (batch statistics, no running
    ones): mean, sub, mul, mean, add eps, sqrt, div, mul weight, add bias."""
    _check_batch_norm(x, None, None, weight, bias, True, 0.1, eps)
    axes, channel_shape = _channel_axes(x)
    centered = x - x.mean(axes, keepdims=True)
    variance = (centered * centered).mean(axes, keepdims=True)
    out = centered / (variance + float(eps)).sqrt()
    if weight is not None:
        out = out * weight.reshape(channel_shape)
    if bias is not None:
        out = out + bias.reshape(channel_shape)
    return out


# --------------------------------------------------------------------------------- embedding
def _check_embedding(weight: Any, ids: Any) -> Array:
    _check_floating(weight, "embedding weight")
    if weight.ndim != 2:
        raise ValueError(f"embedding weight must be 2-D (V, C), got shape {weight.shape}")
    return token_ids(ids, weight.shape[0])


def embedding(weight: Tensor, ids: Any) -> Tensor:
    """Look up rows: ``weight (V, C)`` and integer ``ids (...)`` give ``(..., C)``."""
    array = _check_embedding(weight, ids)
    return ops.Embedding.apply(weight, ids=array)


def embedding_reference(weight: Tensor, ids: Any) -> Tensor:
    """The primitive twin of ``embedding``: onehot(ids) @ weight."""
    array = _check_embedding(weight, ids)
    onehot = np.eye(weight.shape[0], dtype=weight.dtype)[array]  # (..., V)
    return Tensor(onehot) @ weight


# --------------------------------------------------------------------------------- dropout
def _dropout_multiplier(x: Tensor, p: float, rng: Rng) -> Array:
    """Draw the inverted-dropout multiplier: 0 where uniform(0, 1) < p, else 1/(1-p)."""
    dropped = rng.uniform(0.0, 1.0, size=x.shape) < p
    xp = array_module(x._data)
    keep_scale = x.dtype.type(1.0 / (1.0 - p))
    return xp.asarray(np.where(dropped, x.dtype.type(0), keep_scale))


def resolve_rng(rng: Any) -> Rng:
    """``rng`` itself, or the process-wide default generator when it is None."""
    if rng is None:
        return default_rng()
    if not isinstance(rng, Rng):
        raise TypeError(f"rng must be a tensorlib.Rng or None, got {type(rng).__name__}")
    return rng


def dropout(x: Tensor, p: float, rng: Rng | None = None, training: bool = True) -> Tensor:
    """Inverted dropout: zero each element with probability ``p``, scale the rest by 1/(1-p).

    Returns ``x`` itself, drawing nothing from the RNG, when ``training`` is False or p == 0.
    The mask is ``rng.uniform(0, 1, x.shape) < p`` (the default RNG when ``rng`` is None).
    """
    p = validation.probability(p, "dropout probability")
    _check_floating(x, "dropout input")
    generator = resolve_rng(rng)
    if not training or p == 0.0:
        return x
    return ops.Dropout.apply(x, multiplier=_dropout_multiplier(x, p, generator))


def dropout_reference(x: Tensor, p: float, rng: Rng | None = None,
                      training: bool = True) -> Tensor:
    """The primitive twin of ``dropout`` (same draws): x * Tensor(multiplier)."""
    p = validation.probability(p, "dropout probability")
    _check_floating(x, "dropout input")
    generator = resolve_rng(rng)
    if not training or p == 0.0:
        return x
    return x * Tensor(_dropout_multiplier(x, p, generator))


# ----------------------------------------------------------------- convolution and pooling
# A size, stride, padding or dilation: one int for every spatial axis, or one per axis
PerAxis = int | Sequence[int]


def per_axis(value: Any, dims: int, what: str, minimum: int) -> tuple[int, ...]:
    """An int, or a sequence of ``dims`` ints, as a ``dims``-tuple of ints >= ``minimum``."""
    values = (value,) * dims if isinstance(value, numbers.Integral) else value
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__") \
            or len(values) != dims:
        raise TypeError(f"{what} must be an integer or a sequence of {dims} integers, "
                        f"got {value!r}")
    return tuple(validation.integer(v, what, minimum=minimum) for v in values)


def _check_spatial_input(x: Any, dims: int, what: str) -> tuple[Tensor, bool]:
    """``x (N, C, *S)``, or an unbatched ``(C, *S)`` as a batch of one (True when it was)."""
    _check_floating(x, f"{what} input")
    if x.ndim == dims + 1:
        return x.unsqueeze(0), True
    if x.ndim != dims + 2:
        layout = ("(N, C, L)", "(C, L)") if dims == 1 else ("(N, C, H, W)", "(C, H, W)")
        raise ValueError(f"{what} expects input {layout[0]} or {layout[1]}, got shape {x.shape}")
    return x, False


def _check_windows_fit(what: str, shape: tuple[int, ...], kernel: tuple[int, ...],
                       padding: tuple[int, ...], dilation: tuple[int, ...]) -> None:
    """ValueError unless each dilated kernel fits in its padded spatial axis."""
    spatial = shape[2:]
    for size, k, p, d in zip(spatial, kernel, padding, dilation, strict=True):
        if d * (k - 1) + 1 > size + 2 * p:
            raise ValueError(f"{what}: the kernel {kernel} (dilation {dilation}) is larger than "
                             f"the input {spatial} padded by {padding} (input shape {shape})")


def _convolution(x: Any, weight: Any, bias: Any, stride: Any, padding: Any, dilation: Any,
                 groups: int, dims: int) -> Tensor:
    what = f"conv{dims}d"
    x, unbatched = _check_spatial_input(x, dims, what)
    _check_floating(weight, f"{what} weight")
    if weight.ndim != dims + 2:
        layout = "(out_channels, in_channels/groups, " + ("L)" if dims == 1 else "kH, kW)")
        raise ValueError(f"{what} weight must be {layout}, got shape {weight.shape}")
    groups = validation.positive_integer(groups, f"{what} groups")
    out_channels, channels = weight.shape[0], x.shape[1]
    if channels % groups or out_channels % groups:
        raise ValueError(f"{what}: groups={groups} must divide the input's {channels} channels "
                         f"and the weight's {out_channels} filters")
    if weight.shape[1] * groups != channels:
        raise ValueError(f"{what}: the input has {channels} channels, the weight "
                         f"{tuple(weight.shape)} expects {weight.shape[1] * groups} "
                         f"(in_channels/groups = {weight.shape[1]}, groups = {groups})")
    if bias is not None:
        _check_floating(bias, f"{what} bias")
        if bias.shape != (out_channels,):
            raise ValueError(f"{what} bias must be ({out_channels},), got shape {bias.shape}")
    _check_one_dtype(what, x, weight, bias)
    stride = per_axis(stride, dims, f"{what} stride", 1)
    dilation = per_axis(dilation, dims, f"{what} dilation", 1)
    kernel = tuple(weight.shape[2:])
    if isinstance(padding, str):
        x, padding = _string_padding(x, padding, kernel, stride, dilation, what)
    else:
        padding = per_axis(padding, dims, f"{what} padding", 0)
    _check_windows_fit(what, x.shape, kernel, padding, dilation)
    out = ops.Convolution.apply(x, weight, bias, stride=stride, padding=padding,
                                dilation=dilation, groups=groups)
    return out.squeeze(0) if unbatched else out


def _string_padding(x: Tensor, padding: str, kernel: tuple[int, ...], stride: tuple[int, ...],
                    dilation: tuple[int, ...], what: str) -> tuple[Tensor, tuple[int, ...]]:
    """``"valid"``: no padding. ``"same"`` (stride 1): d·(k-1) zeros per axis, half before;
    an odd total puts the extra one after, padded by ``pad`` before the convolution."""
    if padding == "valid":
        return x, (0,) * len(kernel)
    if padding != "same":
        raise ValueError(f"{what} padding must be an integer, a tuple, 'valid' or 'same', "
                         f"got {padding!r}")
    if any(s != 1 for s in stride):
        raise ValueError(f"{what}: padding='same' needs stride 1, got stride {stride}")
    totals = [d * (k - 1) for k, d in zip(kernel, dilation, strict=True)]
    if all(total % 2 == 0 for total in totals):
        return x, tuple(total // 2 for total in totals)
    widths: list[int] = []
    for total in reversed(totals):  # pad's order: the last axis first
        widths += [total // 2, total - total // 2]
    return pad(x, tuple(widths)), (0,) * len(kernel)


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: PerAxis = 1,
           padding: PerAxis | str = 0, dilation: PerAxis = 1, groups: int = 1) -> Tensor:
    """1-D convolution (cross-correlation, as PyTorch's): ``input (N, C, L)`` or ``(C, L)``,
    ``weight (O, C/groups, K)``, ``bias (O,)`` → ``(N, O, L_out)``, with
    L_out = ⌊(L + 2·padding - dilation·(K-1) - 1) / stride⌋ + 1.
    ``padding`` is an int, ``"valid"`` (0) or ``"same"`` (output as long as the input)."""
    return _convolution(input, weight, bias, stride, padding, dilation, groups, dims=1)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: PerAxis = 1,
           padding: PerAxis | str = 0, dilation: PerAxis = 1, groups: int = 1) -> Tensor:
    """2-D convolution (cross-correlation, as PyTorch's): ``input (N, C, H, W)`` or
    ``(C, H, W)``, ``weight (O, C/groups, kH, kW)``, ``bias (O,)`` → ``(N, O, H_out, W_out)``;
    each size as in ``conv1d``. ``stride``, ``padding`` and ``dilation`` are an int or a
    pair; ``padding`` may also be ``"valid"`` or ``"same"``."""
    return _convolution(input, weight, bias, stride, padding, dilation, groups, dims=2)


def pool_sizes(what: str, dims: int, kernel_size: Any, stride: Any, padding: Any,
               dilation: Any, ceil_mode: bool) -> tuple[tuple[int, ...], ...]:
    """A pooling's ``(kernel, stride, padding, dilation)``, each a ``dims``-tuple; stride
    None (or ``()``) is the kernel's size. Padding may be at most half the kernel."""
    kernel = per_axis(kernel_size, dims, f"{what} kernel_size", 1)
    stride = kernel if stride is None or stride == () else \
        per_axis(stride, dims, f"{what} stride", 1)
    padding = per_axis(padding, dims, f"{what} padding", 0)
    dilation = per_axis(dilation, dims, f"{what} dilation", 1)
    if any(2 * p > k for p, k in zip(padding, kernel, strict=True)):
        raise ValueError(f"{what}: padding {padding} must be at most half the kernel {kernel}")
    if validation.boolean(ceil_mode, f"{what} ceil_mode"):
        raise ValueError(f"{what}: ceil_mode=True is not supported; windows that overhang the "
                         "input are dropped (ceil_mode=False): pad the input instead")
    return kernel, stride, padding, dilation


def _pool_arguments(what: str, x: Any, dims: int, kernel_size: Any, stride: Any, padding: Any,
                    dilation: Any, ceil_mode: bool) -> tuple[Any, ...]:
    x, unbatched = _check_spatial_input(x, dims, what)
    kernel, stride, padding, dilation = pool_sizes(what, dims, kernel_size, stride, padding,
                                                   dilation, ceil_mode)
    _check_windows_fit(what, x.shape, kernel, padding, dilation)
    return x, unbatched, kernel, stride, padding, dilation


def _max_pool(x: Any, kernel_size: Any, stride: Any, padding: Any, dilation: Any,
              ceil_mode: bool, return_indices: bool, dims: int) -> Tensor:
    what = f"max_pool{dims}d"
    if validation.boolean(return_indices, f"{what} return_indices"):
        raise ValueError(f"{what}: return_indices=True is not supported; the gradient already "
                         "goes to each window's maximum")
    x, unbatched, kernel, stride, padding, dilation = _pool_arguments(
        what, x, dims, kernel_size, stride, padding, dilation, ceil_mode)
    out = ops.MaxPool.apply(x, kernel=kernel, stride=stride, padding=padding, dilation=dilation)
    return out.squeeze(0) if unbatched else out


def max_pool1d(input: Tensor, kernel_size: PerAxis, stride: PerAxis | None = None,
               padding: PerAxis = 0, dilation: PerAxis = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Tensor:
    """The maximum of each window of ``kernel_size`` along ``input (N, C, L)``, the windows
    ``stride`` apart (default: ``kernel_size``, windows side by side), the input padded with
    -inf. The gradient goes to each window's first maximum."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 1)


def max_pool2d(input: Tensor, kernel_size: PerAxis, stride: PerAxis | None = None,
               padding: PerAxis = 0, dilation: PerAxis = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Tensor:
    """``max_pool1d`` over the two spatial axes of ``input (N, C, H, W)``; each size an int
    or a pair."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 2)


def _avg_pool(x: Any, kernel_size: Any, stride: Any, padding: Any, ceil_mode: bool,
              count_include_pad: bool, divisor_override: Any, dims: int) -> Tensor:
    what = f"avg_pool{dims}d"
    if divisor_override is not None:
        raise ValueError(f"{what}: divisor_override is not supported; divide the output "
                         "instead")
    x, unbatched, kernel, stride, padding, _ = _pool_arguments(
        what, x, dims, kernel_size, stride, padding, 1, ceil_mode)
    out = ops.AvgPool.apply(x, kernel=kernel, stride=stride, padding=padding,
                            count_include_pad=validation.boolean(
                                count_include_pad, f"{what} count_include_pad"))
    return out.squeeze(0) if unbatched else out


def avg_pool1d(input: Tensor, kernel_size: PerAxis, stride: PerAxis | None = None,
               padding: PerAxis = 0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """The mean of each window of ``kernel_size`` along ``input (N, C, L)``, windows
    ``stride`` apart (default ``kernel_size``), zero-padded; with
    ``count_include_pad=False`` the padding is left out of each mean."""
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, None, 1)


def avg_pool2d(input: Tensor, kernel_size: PerAxis, stride: PerAxis | None = None,
               padding: PerAxis = 0, ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    """``avg_pool1d`` over the two spatial axes of ``input (N, C, H, W)``."""
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override, 2)


_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant",
        value: float | None = None) -> Tensor:
    """``input`` padded: ``pad = (left, right)`` for the last axis, ``(left, right, top,
    bottom)`` for the last two, and so on, each >= 0. ``mode``: "constant" (``value``,
    default 0), "reflect" (mirrored without the edge, each width < the axis' size),
    "replicate" (the edge repeated) or "circular" (wrapped around, each width <= the size)."""
    _check_tensor(input, "pad input")
    if mode not in _PAD_MODES:
        raise ValueError(f"pad mode must be one of {', '.join(_PAD_MODES)}, got {mode!r}")
    if isinstance(pad, (str, bytes)) or not hasattr(pad, "__len__") or len(pad) % 2 \
            or not 0 < len(pad) <= 2 * input.ndim:
        raise ValueError(f"pad must be a sequence of (before, after) pairs, last axis first, "
                         f"at most {input.ndim} pairs for a {input.ndim}-D input, got {pad!r}")
    sizes = [validation.integer(p, "pad width", minimum=0) for p in pad]
    widths = [(0, 0)] * input.ndim
    for pair in range(len(sizes) // 2):
        widths[input.ndim - 1 - pair] = (sizes[2 * pair], sizes[2 * pair + 1])
    if mode == "constant":
        fill = 0.0 if value is None else validation.real(value, "pad value")
        return ops.Pad.apply(input, widths=tuple(widths), mode=mode, value=fill)
    if value is not None:
        raise ValueError(f"pad: value is only for mode 'constant', not {mode!r}")
    for axis, (before, after) in enumerate(widths):
        size, limit = input.shape[axis], max(before, after)
        if limit and (size == 0 or (mode == "reflect" and limit >= size)
                      or (mode == "circular" and limit > size)):
            rule = "smaller than" if mode == "reflect" else "at most"
            raise ValueError(f"pad: {mode} padding of ({before}, {after}) on axis {axis} must "
                             f"be {rule} the axis' size {size} (input shape {input.shape})")
    return ops.Pad.apply(input, widths=tuple(widths), mode=mode, value=0.0)


def unfold(input: Tensor, kernel_size: PerAxis, dilation: PerAxis = 1, padding: PerAxis = 0,
           stride: PerAxis = 1) -> Tensor:
    """im2col: ``input (N, C, H, W)`` → ``(N, C·kH·kW, L)``, column l the window at position
    l (row-major), each channel's kH·kW values in a row; L = H_out·W_out as for ``conv2d``.
    ``conv2d(x, w)`` is ``w.reshape(O, -1) @ unfold(x, k)`` reshaped to ``(N, O, H_out,
    W_out)``."""
    x, unbatched = _check_spatial_input(input, 2, "unfold")
    kernel = per_axis(kernel_size, 2, "unfold kernel_size", 1)
    dilation = per_axis(dilation, 2, "unfold dilation", 1)
    padding = per_axis(padding, 2, "unfold padding", 0)
    stride = per_axis(stride, 2, "unfold stride", 1)
    _check_windows_fit("unfold", x.shape, kernel, padding, dilation)
    out = ops.Unfold.apply(x, kernel=kernel, stride=stride, padding=padding, dilation=dilation)
    return out.squeeze(0) if unbatched else out


def fold(input: Tensor, output_size: PerAxis, kernel_size: PerAxis, dilation: PerAxis = 1,
         padding: PerAxis = 0, stride: PerAxis = 1) -> Tensor:
    """col2im, the adjoint of ``unfold``: ``input (N, C·kH·kW, L)`` → ``(N, C, *output_size)``,
    each column's values added back where ``unfold`` reads them (overlaps sum)."""
    _check_floating(input, "fold input")
    unbatched = input.ndim == 2
    x = input.unsqueeze(0) if unbatched else input
    if x.ndim != 3:
        raise ValueError(f"fold expects input (N, C·kH·kW, L) or (C·kH·kW, L), got shape "
                         f"{input.shape}")
    size = per_axis(output_size, 2, "fold output_size", 1)
    kernel = per_axis(kernel_size, 2, "fold kernel_size", 1)
    dilation = per_axis(dilation, 2, "fold dilation", 1)
    padding = per_axis(padding, 2, "fold padding", 0)
    stride = per_axis(stride, 2, "fold stride", 1)
    _check_windows_fit("fold", (1, 1) + size, kernel, padding, dilation)
    positions = math.prod(ops.convolution.window_count(s, k, st, p, d) for s, k, st, p, d
                          in zip(size, kernel, stride, padding, dilation, strict=True))
    per_channel = math.prod(kernel)
    if x.shape[1] % per_channel or x.shape[2] != positions:
        raise ValueError(f"fold: input {tuple(input.shape)} must be (N, C·{per_channel}, "
                         f"{positions}) for kernel {kernel} and output_size {size}")
    out = ops.Fold.apply(x, output_size=size, kernel=kernel, stride=stride, padding=padding,
                         dilation=dilation)
    return out.squeeze(0) if unbatched else out


# --------------------------------------------------------------- activations of mobile nets
def relu6(input: Tensor) -> Tensor:
    """min(max(x, 0), 6) elementwise."""
    return ops.Relu6.apply(_check_floating(input, "relu6 input"))


def hardswish(input: Tensor) -> Tensor:
    """x · relu6(x + 3) / 6 elementwise: a piecewise-quadratic swish."""
    return ops.Hardswish.apply(_check_floating(input, "hardswish input"))


def mish(input: Tensor) -> Tensor:
    """x · tanh(softplus(x)) elementwise."""
    return ops.Mish.apply(_check_floating(input, "mish input"))
