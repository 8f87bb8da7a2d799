"""The basic layers: Linear, Embedding, PositionalEmbedding, LayerNorm, Dropout, MLP and
activation modules.

Every layer that draws random numbers takes ``rng`` (an :class:`~tensorlib.engine.splitmix64.Rng`);
when it is None the process-wide default generator (:func:`tensorlib.engine.splitmix64.default_rng`,
reseeded by :func:`tensorlib.engine.splitmix64.manual_seed`) is used, so construction is always
deterministic. Weights are float32 unless ``dtype`` says otherwise (float64 for gradient checks).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tensorlib.engine import validation
from tensorlib.engine.autograd import no_grad
from tensorlib.engine.splitmix64 import Rng, resolve_rng
from tensorlib.engine.tensor import Tensor
from tensorlib.engine.validation import is_floating
from tensorlib.nn import functional as F
from tensorlib.nn.container import ModuleList
from tensorlib.nn.init import POLICIES, PYTORCH_POLICIES, initialize
from tensorlib.nn.module import Module
from tensorlib.nn.parameter import Parameter

__all__ = [
    "ACTIVATIONS",
    "BatchNorm1d",
    "BatchNorm2d",
    "GELU",
    "MLP",
    "HookPoint",
    "Hardswish",
    "Dropout",
    "Embedding",
    "Flatten",
    "FlattenConsecutive",
    "Identity",
    "LayerNorm",
    "Linear",
    "Mish",
    "PositionalEmbedding",
    "ReLU",
    "ReLU6",
    "Sigmoid",
    "Softmax",
    "LogSoftmax",
    "Tanh",
    "get_activation",
]


# --------------------------------------------------------------------------------- helpers
def check_policy(policy: Any, what: str) -> str:
    """Reject an unknown init policy before anything is drawn from the RNG."""
    if not isinstance(policy, str) or policy not in POLICIES + PYTORCH_POLICIES:
        raise ValueError(f"{what} must be one of {', '.join(POLICIES + PYTORCH_POLICIES)}; "
                         f"got {policy!r}")
    return policy




def check_input(x: Any, what: str, width: int, ndim: int | None = None) -> Tensor:
    """``x`` must be a floating Tensor whose last axis has ``width`` entries."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{what} takes a Tensor, got {type(x).__name__}")
    if not is_floating(x.dtype):
        raise TypeError(f"{what} takes a floating-point tensor, got dtype {x.dtype}")
    if ndim is not None and x.ndim != ndim:
        raise ValueError(f"{what} expects a {ndim}-D input, got shape {x.shape}")
    if x.ndim == 0 or x.shape[-1] != width:
        raise ValueError(f"{what} expects inputs whose last axis has {width} features, "
                         f"got shape {x.shape}")
    return x


# --------------------------------------------------------------------------------- Linear
class Linear(Module):
    """y = x Wᵀ + b, with ``weight (out_features, in_features)`` and ``bias (out_features,)``.

    ``weight_init`` and ``bias_init`` name init policies (see ``tensorlib.nn.init``): by
    default the specification's, Xavier-uniform weights and zero biases;
    ``weight_init="fan_in_uniform", bias_init="fan_in_uniform"`` is PyTorch's rule,
    U(±1/√in_features) for both.

    LoRA and NF4 are modules of their own that take a Linear's place in its model
    (:class:`tensorlib.adapters.lora.LoRALinear`, :class:`tensorlib.adapters.nf4.NF4Linear`).
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 weight_init: str = "xavier_uniform", bias_init: str = "zero",
                 rng: Rng | None = None, dtype: Any = np.float32):
        super().__init__()
        self.in_features = validation.dimension(in_features, "in_features")
        self.out_features = validation.dimension(out_features, "out_features")
        check_policy(weight_init, "weight_init")
        check_policy(bias_init, "bias_init")
        dtype = validation.float_dtype(dtype)
        generator = resolve_rng(rng)
        self.weight = Parameter(initialize(weight_init, (self.out_features, self.in_features),
                                           generator, dtype))
        if bias:
            self.bias: Parameter | None = Parameter(initialize(
                bias_init, (self.out_features,), generator, dtype, fan_in=self.in_features))
        else:
            self.bias = None

    @classmethod
    def from_parameters(cls, weight: Parameter, bias: Parameter | None = None) -> Linear:
        """A Linear around existing Parameters, registered as they are (not copied):
        ``weight (out_features, in_features)`` and ``bias (out_features,)`` or None.
        ``dequantize_linear`` builds its float layer this way, keeping the bias object."""
        if not isinstance(weight, Parameter) or weight.ndim != 2:
            raise TypeError(f"weight must be a 2-D Parameter (out_features, in_features), got "
                            f"{type(weight).__name__} of shape {getattr(weight, 'shape', None)}")
        if bias is not None and (not isinstance(bias, Parameter)
                                 or bias.shape != (weight.shape[0],)
                                 or bias.dtype != weight.dtype):
            raise ValueError(f"bias must be a {weight.dtype} Parameter of shape "
                             f"({weight.shape[0]},) or None, got {type(bias).__name__} of "
                             f"shape {getattr(bias, 'shape', None)}")
        layer = cls.__new__(cls)
        Module.__init__(layer)
        layer.out_features, layer.in_features = (int(d) for d in weight.shape)
        layer.weight = weight
        layer.bias = bias
        return layer

    def forward(self, x: Tensor) -> Tensor:
        """``x (..., in_features)`` → ``(..., out_features)``; ``F.linear`` checks ``x``."""
        return F.linear(x, self.weight, self.bias)  # x Wᵀ + b: one fused node, one matrix product

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


# --------------------------------------------------------------------------------- Embedding
class Embedding(Module):
    """A lookup table ``weight (vocabulary_size, embedding_width)``: integer ids in, rows out.

    Ids may be an integer Tensor, an integer numpy array or a nested list; non-integer ids,
    ids that require grad and ids outside ``[0, vocabulary_size)`` raise. ``weight_init``
    is the specification's Xavier-uniform by default; ``"normal"`` is PyTorch's N(0, 1).
    """

    def __init__(self, vocabulary_size: int, embedding_width: int,
                 weight_init: str = "xavier_uniform", rng: Rng | None = None,
                 dtype: Any = np.float32):
        super().__init__()
        self.vocabulary_size = validation.dimension(vocabulary_size, "vocabulary_size")
        self.embedding_width = validation.dimension(embedding_width, "embedding_width")
        check_policy(weight_init, "weight_init")
        dtype = validation.float_dtype(dtype)
        self.weight = Parameter(initialize(weight_init,
                                           (self.vocabulary_size, self.embedding_width),
                                           resolve_rng(rng), dtype))

    def forward(self, ids: Any) -> Tensor:
        """``ids (...)`` → ``(..., embedding_width)``."""
        return F.embedding(self.weight, ids)

    def extra_repr(self) -> str:
        return f"{self.vocabulary_size}, {self.embedding_width}"


class PositionalEmbedding(Module):
    """Adds a learned vector per position: ``x (..., T, C) + table(0..T-1)``.

    Owns the child ``table`` (an Embedding of ``context_length`` rows). ``T`` must not
    exceed ``context_length``.
    """

    def __init__(self, context_length: int, embedding_width: int,
                 weight_init: str = "xavier_uniform", rng: Rng | None = None,
                 dtype: Any = np.float32):
        super().__init__()
        self.context_length = validation.dimension(context_length, "context_length")
        self.embedding_width = validation.dimension(embedding_width, "embedding_width")
        self.table = Embedding(self.context_length, self.embedding_width, weight_init,
                               rng=rng, dtype=dtype)

    def forward(self, x: Tensor) -> Tensor:
        check_input(x, "PositionalEmbedding", self.embedding_width)
        if x.ndim < 2:
            raise ValueError(f"PositionalEmbedding expects (..., T, C) input, got shape {x.shape}")
        length = x.shape[-2]
        if length > self.context_length:
            raise ValueError(f"sequence length {length} exceeds the context length "
                             f"{self.context_length} (input shape {x.shape})")
        positions = self.table(np.arange(length))  # (T, C)
        return x + positions

    def extra_repr(self) -> str:
        return f"context_length={self.context_length}, embedding_width={self.embedding_width}"


# --------------------------------------------------------------------------------- LayerNorm
class LayerNorm(Module):
    """Normalize the last axis (biased variance, as PyTorch), then ``· weight + bias``.

    ``weight`` starts at one and ``bias`` at zero; ``affine=False`` has no parameters, and
    ``bias=False`` (PyTorch's argument, nanoGPT's ``bias`` option) no bias.
    """

    def __init__(self, normalized_width: int, eps: float = 1e-5, affine: bool = True,
                 dtype: Any = np.float32, bias: bool = True):
        super().__init__()
        self.normalized_width = validation.dimension(normalized_width, "normalized_width")
        self.eps = validation.positive(eps, "LayerNorm eps")
        dtype = validation.float_dtype(dtype)
        with_bias = validation.boolean(bias, "LayerNorm bias")
        self.weight: Parameter | None = Parameter(initialize(
            "one", (self.normalized_width,), dtype=dtype)) if affine else None
        self.bias: Parameter | None = Parameter(initialize(
            "zero", (self.normalized_width,), dtype=dtype)) if affine and with_bias else None

    def forward(self, x: Tensor) -> Tensor:
        check_input(x, "LayerNorm", self.normalized_width)
        return F.layer_norm(x, (self.normalized_width,), self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        text = f"{self.normalized_width}, eps={self.eps}, affine={self.weight is not None}"
        return text + (", bias=False" if self.weight is not None and self.bias is None else "")


# --------------------------------------------------------------------------------- BatchNorm
class _BatchNorm(Module):
    """Normalize each of ``num_features`` channels over the batch (and every other axis but
    the channels'), as PyTorch's batch norms; the subclasses say which inputs they take.

    In training the batch's mean and biased variance normalize, and the running statistics
    move towards the batch's: ``running = (1 - m) · running + m · batch`` (the unbiased
    variance), with m = ``momentum``, or 1/``num_batches_tracked`` when ``momentum`` is None
    (the average over every batch seen). In evaluation the running statistics normalize.
    ``weight`` starts at one and ``bias`` at zero (``affine=False``: neither). Buffers:
    ``running_mean`` (zeros), ``running_var`` (ones) and ``num_batches_tracked`` (a 0-d
    int64); with ``track_running_stats=False`` there are none and the batch's statistics
    are used in evaluation too. An empty batch passes through and changes nothing (PyTorch
    counts it in ``num_batches_tracked``; nothing else of it).
    """

    input_layouts: dict[int, str] = {}  # ndim: layout, e.g. {4: "(N, C, H, W)"}

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True,
                 dtype: Any = np.float32):
        super().__init__()
        name = type(self).__name__
        self.num_features = validation.dimension(num_features, "num_features")
        self.eps = validation.positive(eps, f"{name} eps")
        self.momentum = None if momentum is None else validation.real(
            momentum, f"{name} momentum", low=0.0, high=1.0, high_open=False)
        self.track_running_stats = validation.boolean(track_running_stats,
                                                      "track_running_stats")
        dtype = validation.float_dtype(dtype)
        width = (self.num_features,)
        if validation.boolean(affine, "affine"):
            self.weight: Parameter | None = Parameter(initialize("one", width, dtype=dtype))
            self.bias: Parameter | None = Parameter(initialize("zero", width, dtype=dtype))
        else:
            self.weight = None
            self.bias = None
        if self.track_running_stats:
            self.register_buffer("running_mean", initialize("zero", width, dtype=dtype))
            self.register_buffer("running_var", initialize("one", width, dtype=dtype))
            self.register_buffer("num_batches_tracked", np.zeros((), dtype=np.int64))

    def forward(self, x: Tensor) -> Tensor:
        """``x`` in one of the ``input_layouts`` → the same shape."""
        name = type(self).__name__
        if not isinstance(x, Tensor):
            raise TypeError(f"{name} takes a Tensor, got {type(x).__name__}")
        if x.ndim not in self.input_layouts or x.shape[1] != self.num_features:
            layouts = " or ".join(layout.replace("C", str(self.num_features))
                                  for layout in self.input_layouts.values())
            raise ValueError(f"{name}({self.num_features}) expects {layouts} input, got "
                             f"{x.shape}")
        if not self.track_running_stats:
            return F.batch_norm(x, None, None, self.weight, self.bias, training=True, eps=self.eps)
        updating = self.training
        momentum = self.momentum
        if updating and momentum is None:  # the average over every batch, this one included
            momentum = 1.0 / (int(self.num_batches_tracked.numpy()) + 1)
        out = F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                           training=updating, momentum=0.0 if momentum is None else momentum,
                           eps=self.eps)
        if updating and x.numel():  # F.batch_norm checked the input before it changed anything
            with no_grad():
                self.num_batches_tracked.copy_(self.num_batches_tracked.numpy() + 1)
        return out

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.weight is not None}, "
                f"track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch norm of ``(N, C)`` or ``(N, C, L)`` input, as ``torch.nn.BatchNorm1d``:
    statistics over N (and L)."""

    input_layouts = {2: "(N, C)", 3: "(N, C, L)"}


class BatchNorm2d(_BatchNorm):
    """Batch norm of images ``(N, C, H, W)``, as ``torch.nn.BatchNorm2d``: each channel's
    statistics over N, H and W."""

    input_layouts = {4: "(N, C, H, W)"}


# --------------------------------------------------------------------------------- Dropout
class Dropout(Module):
    """Inverted dropout with probability ``p`` in [0, 1).

    In training mode each element is zeroed when ``rng.uniform(0, 1) < p`` and the rest are
    scaled by 1/(1-p). In eval mode, or when p == 0, the input itself is returned and the
    RNG is not touched. With ``rng=None`` the default generator is looked up at each call.
    """

    def __init__(self, p: float = 0.5, rng: Rng | None = None):
        super().__init__()
        self.p = validation.probability(p, "dropout probability")
        if rng is not None and not isinstance(rng, Rng):
            raise TypeError(f"rng must be a tensorlib.Rng or None, got {type(rng).__name__}")
        self.rng = rng

    def forward(self, x: Tensor) -> Tensor:
        return F.dropout(x, self.p, training=self.training, rng=self.rng)

    def extra_repr(self) -> str:
        return f"p={self.p}"


# --------------------------------------------------------------------------------- reshaping
class Flatten(Module):
    """Merge the axes ``start_dim`` to ``end_dim`` (inclusive) into one, as
    ``torch.nn.Flatten``: ``(N, C, L)`` → ``(N, C·L)`` with the defaults (1, -1)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim = validation.integer(start_dim, "start_dim")
        self.end_dim = validation.integer(end_dim, "end_dim")

    def forward(self, x: Tensor) -> Tensor:
        if not isinstance(x, Tensor):
            raise TypeError(f"Flatten takes a Tensor, got {type(x).__name__}")
        ndim = x.ndim
        fits = -ndim <= self.start_dim < ndim and -ndim <= self.end_dim < ndim
        start, end = (self.start_dim % ndim, self.end_dim % ndim) if fits else (0, -1)
        if not fits or start > end:
            raise ValueError(f"Flatten(start_dim={self.start_dim}, end_dim={self.end_dim}) does "
                             f"not fit an input of shape {x.shape}")
        merged = int(np.prod(x.shape[start:end + 1]))
        return x.reshape(*x.shape[:start], merged, *x.shape[end + 1:])

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class FlattenConsecutive(Module):
    """Merge each run of ``n`` consecutive positions into one, their features side by side:
    ``(B, T, C)`` → ``(B, T/n, n·C)`` (T must be a multiple of n). A WaveNet-style model
    applies it level by level, so each level sees pairs of what the level below saw."""

    def __init__(self, n: int):
        super().__init__()
        self.n = validation.positive_integer(n, "n")

    def forward(self, x: Tensor) -> Tensor:
        if not isinstance(x, Tensor) or x.ndim != 3 or x.shape[1] % self.n:
            raise ValueError(f"FlattenConsecutive({self.n}) expects (B, T, C) input with T a "
                             f"multiple of {self.n}, got "
                             f"{getattr(x, 'shape', type(x).__name__)}")
        batch, length, channels = x.shape
        return x.reshape(batch, length // self.n, self.n * channels)

    def extra_repr(self) -> str:
        return f"{self.n}"


# --------------------------------------------------------------------------------- activations
class ReLU(Module):
    def forward(self, x: Tensor) -> Tensor:
        return F.relu(x)


class GELU(Module):
    """GELU, exact by default (``approximate="tanh"`` for the tanh form)."""

    def __init__(self, approximate: str = "none"):
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, x: Tensor) -> Tensor:
        return F.gelu(x, self.approximate)


class LeakyReLU(Module):
    """x where x > 0, ``negative_slope``·x elsewhere."""

    def __init__(self, negative_slope: float = 0.01):
        super().__init__()
        self.negative_slope = validation.real(negative_slope, "negative_slope")

    def forward(self, x: Tensor) -> Tensor:
        return F.leaky_relu(x, self.negative_slope)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}"


class Softplus(Module):
    """log(1 + exp(β·x)) / β; x itself where β·x > ``threshold``."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__()
        self.beta = validation.positive(beta, "beta")
        self.threshold = validation.real(threshold, "threshold")

    def forward(self, x: Tensor) -> Tensor:
        return F.softplus(x, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class ReLU6(Module):
    """min(max(x, 0), 6)."""

    def forward(self, x: Tensor) -> Tensor:
        return F.relu6(x)


class Hardswish(Module):
    """x · relu6(x + 3) / 6."""

    def forward(self, x: Tensor) -> Tensor:
        return F.hardswish(x)


class Mish(Module):
    """x · tanh(softplus(x))."""

    def forward(self, x: Tensor) -> Tensor:
        return F.mish(x)


class SiLU(Module):
    """x·sigmoid(x)."""

    def forward(self, x: Tensor) -> Tensor:
        return F.silu(x)


class Sigmoid(Module):
    def forward(self, x: Tensor) -> Tensor:
        return F.sigmoid(x)


class Tanh(Module):
    def forward(self, x: Tensor) -> Tensor:
        return F.tanh(x)


class Softmax(Module):
    """softmax along ``dim``. ``dim`` must be given: PyTorch's ``dim=None`` picks one from the
    input's number of dims, with a warning, and tensorlib does not guess."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = validation.integer(dim, "Softmax dim")

    def forward(self, x: Tensor) -> Tensor:
        return F.softmax(x, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    """log_softmax along ``dim`` (which must be given, as for :class:`Softmax`)."""

    def forward(self, x: Tensor) -> Tensor:
        return F.log_softmax(x, self.dim)


class Identity(Module):
    def forward(self, x: Tensor) -> Tensor:
        return x


class HookPoint(Identity):
    """A named place in a model where forward hooks can read (or replace) a value: the
    identity, without parameters. ``observed`` says whether any hook is registered, so the
    model may skip computing a value that nobody looks at (attention probabilities, say).
    :func:`tensorlib.nn.capture_activations` records every HookPoint of a model."""

    @property
    def observed(self) -> bool:
        return bool(self._forward_hooks)


def _identity(x: Tensor) -> Tensor:
    return x


ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {
    "relu": F.relu,
    "gelu": F.gelu,
    "sigmoid": F.sigmoid,
    "tanh": F.tanh,
    "leaky_relu": F.leaky_relu,
    "softplus": F.softplus,
    "silu": F.silu,
    "identity": _identity,
}


def get_activation(spec: str | Callable[[Tensor], Tensor] | None) -> Callable[[Tensor], Tensor]:
    """Resolve an activation: a name in ``ACTIVATIONS``, None (identity) or any callable."""
    if spec is None:
        return _identity
    if isinstance(spec, str):
        if spec not in ACTIVATIONS:
            raise ValueError(f"unknown activation {spec!r}; expected one of "
                             f"{', '.join(ACTIVATIONS)}, None or a callable")
        return ACTIVATIONS[spec]
    if callable(spec):
        return spec
    raise TypeError(f"an activation must be a name, None or a callable, got {spec!r}")


# --------------------------------------------------------------------------------- MLP
class MLP(Module):
    """Linear → activation → Linear → ... → Linear → activation.

    ``hidden_sizes`` lists the hidden widths (possibly none); the Linear layers are the
    children ``layers.0``, ``layers.1``, ... . ``activations`` has ``len(hidden_sizes) + 1``
    entries, one after each Linear: a name in ``ACTIVATIONS`` ("relu", "gelu", "silu", ...), None
    (identity) or any callable on a Tensor.
    """

    def __init__(self, input_features: int, hidden_sizes: Sequence[int], output_features: int,
                 activations: Sequence[str | Callable[[Tensor], Tensor] | None],
                 bias: bool = True, weight_init: str = "xavier_uniform",
                 bias_init: str = "zero", rng: Rng | None = None, dtype: Any = np.float32):
        super().__init__()
        self.input_features = validation.dimension(input_features, "input_features")
        self.output_features = validation.dimension(output_features, "output_features")
        if isinstance(hidden_sizes, (str, bytes)) or not isinstance(hidden_sizes, Sequence):
            raise TypeError(f"hidden_sizes must be a sequence of positive integers, "
                            f"got {hidden_sizes!r}")
        hidden = [validation.dimension(size, f"hidden_sizes[{i}]")
                  for i, size in enumerate(hidden_sizes)]
        if isinstance(activations, (str, bytes)) or not isinstance(activations, Sequence):
            raise TypeError(f"activations must be a sequence of {len(hidden) + 1} entries, "
                            f"got {activations!r}")
        if len(activations) != len(hidden) + 1:
            raise ValueError(f"activations needs len(hidden_sizes) + 1 = {len(hidden) + 1} "
                             f"entries, got {len(activations)}")
        self.activation_functions = [get_activation(a) for a in activations]
        check_policy(weight_init, "weight_init")
        check_policy(bias_init, "bias_init")
        generator = resolve_rng(rng)
        widths = [self.input_features, *hidden, self.output_features]
        self.hidden_sizes = tuple(hidden)
        self.layers = ModuleList(
            Linear(fan_in, fan_out, bias, weight_init, bias_init, rng=generator, dtype=dtype)
            for fan_in, fan_out in zip(widths[:-1], widths[1:], strict=True)
        )

    def forward(self, x: Tensor) -> Tensor:
        for layer, activation in zip(self.layers, self.activation_functions, strict=True):
            x = activation(layer(x))
        return x

    def extra_repr(self) -> str:
        return (f"input_features={self.input_features}, hidden_sizes={list(self.hidden_sizes)}, "
                f"output_features={self.output_features}")
