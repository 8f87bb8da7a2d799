"""tensorlib.nn: what networks are made of, as PyTorch's ``torch.nn``.

The tree every layer, optimizer and checkpoint works through (``module``: ``Module`` and
``Parameter``; ``container``; ``hooks``; ``modes``), initialization (``init``: the policies,
and PyTorch's in-place functions from ``init_in_place``), PyTorch's ``utils`` (gradient
clipping, parameters as a vector), the functional API (``functional``, imported as ``F``), and
the layers: linear, embeddings, norms, activations, dropout and the MLP (``layers``), RMSNorm
(``rms_norm``), rotary positions (``positions``), the gated feed-forward SwiGLU
(``feed_forward``), convolution and pooling (``convolution``), the recurrent layers RNN, GRU
and LSTM and their cells (``recurrent``), multi-head attention with its key/value cache
(``attention``), and the recording of what a model computes inside (``capture``). Built in
notebooks 06 (modules and parameters), 07 (initialization), 08 (layers), 12a (batch norm),
12c (convolutions), 12d (recurrent nets) and 13 (attention). The splitmix64 generator the
layers draw from is :class:`tensorlib.Rng`.

The models built from these layers live one folder up, in :mod:`tensorlib.models`, and the
adapters in :mod:`tensorlib.adapters`; their names are also found here
(``tensorlib.nn.Decoder``, ``tensorlib.nn.LoRALinear``, ...), loaded on first use, so that
programs written against the earlier flat layout still run.
"""

import importlib
from typing import Any

from tensorlib.nn import functional, init, utils
from tensorlib.nn.attention import GroupedQueryAttention, KVCache, MultiheadAttention
from tensorlib.nn.capture import ActivationCapture, capture_activations
from tensorlib.nn.container import ModuleDict, ModuleList, Sequential
from tensorlib.nn.convolution import AvgPool1d, AvgPool2d, Conv1d, Conv2d, MaxPool1d, MaxPool2d
from tensorlib.nn.feed_forward import SwiGLU
from tensorlib.nn.layers import (
    GELU,
    MLP,
    BatchNorm1d,
    BatchNorm2d,
    Dropout,
    Embedding,
    Flatten,
    FlattenConsecutive,
    Hardswish,
    HookPoint,
    Identity,
    LayerNorm,
    LeakyReLU,
    Linear,
    LogSoftmax,
    Mish,
    PositionalEmbedding,
    ReLU,
    ReLU6,
    Sigmoid,
    SiLU,
    Softmax,
    Softplus,
    Tanh,
)
from tensorlib.nn.modes import evaluation_mode
from tensorlib.nn.module import Module
from tensorlib.nn.parameter import Parameter
from tensorlib.nn.positions import RotaryEmbedding
from tensorlib.nn.recurrent import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell
from tensorlib.nn.rms_norm import RMSNorm
from tensorlib.nn.state_dict import StateDictError

# The models' and adapters' names, found here too, each loaded from its home when first used
# (a name, not an import: tensorlib.nn imports nothing above it).
_FROM_ABOVE = {
    **dict.fromkeys(("Decoder", "DecoderBlock", "DecoderConfig", "ProgramAugmentedModel",
                     "ProgrammedAttentionHead", "ProgrammedSequenceCore", "WaveNet",
                     "WaveNetLevel", "induction_targets"), "tensorlib.models"),
    **dict.fromkeys(("LoRALinear", "LowRankAdapter", "NF4Linear", "NF4Weight", "attach_lora",
                     "detach_lora", "export_merged", "lora_parameters", "merge_lora",
                     "model_memory_bytes", "quantization_error", "quantize_linear",
                     "quantize_model"), "tensorlib.adapters"),
}


def __getattr__(name: str) -> Any:
    if name in _FROM_ABOVE:
        return getattr(importlib.import_module(_FROM_ABOVE[name]), name)
    raise AttributeError(f"module 'tensorlib.nn' has no attribute '{name}'")


def __dir__() -> list[str]:
    return sorted([*globals(), *_FROM_ABOVE])


__all__ = [
    "GELU", "MLP", "AvgPool1d", "AvgPool2d", "BatchNorm1d", "BatchNorm2d", "Conv1d", "Conv2d",
    "Dropout", "Embedding", "Flatten", "FlattenConsecutive", "GRU", "GRUCell",
    "GroupedQueryAttention", "LSTM", "LSTMCell", "RNN", "RNNCell",
    "Hardswish", "HookPoint",
    "Identity", "LayerNorm", "LeakyReLU", "Linear", "MaxPool1d", "MaxPool2d", "Mish", "Module",
    "ModuleDict", "ModuleList", "MultiheadAttention", "Parameter", "PositionalEmbedding",
    "RMSNorm", "ReLU", "ReLU6", "RotaryEmbedding", "SwiGLU",
    "Sequential", "SiLU", "Sigmoid", "Softmax", "LogSoftmax", "Softplus", "StateDictError",
    "Tanh", "evaluation_mode",
    "functional", "init", "utils", "ActivationCapture", "KVCache", "capture_activations",
]
