"""tensorlib.nn: modules, parameters, initialization policies, layers, losses, the GPT-style
decoder, LoRA and NF4 modules, and hand-programmed sequence cores. The splitmix64 generator
they draw from is :class:`tensorlib.Rng`."""

from tensorlib.nn import functional, init
from tensorlib.nn.attention import KVCache, MultiheadAttention
from tensorlib.nn.capture import ActivationCapture, capture_activations
from tensorlib.nn.container import ModuleList, Sequential
from tensorlib.nn.convolution import AvgPool1d, AvgPool2d, Conv1d, Conv2d, MaxPool1d, MaxPool2d
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
    Mish,
    PositionalEmbedding,
    ReLU,
    ReLU6,
    Sigmoid,
    SiLU,
    Softplus,
    Tanh,
)
from tensorlib.nn.lora import (
    LoRALinear,
    LowRankAdapter,
    attach_lora,
    detach_lora,
    lora_parameters,
    merge_lora,
)
from tensorlib.nn.modes import evaluation_mode
from tensorlib.nn.module import Module, Parameter, StateDictError
from tensorlib.nn.programmed import (
    ProgramAugmentedModel,
    ProgrammedAttentionHead,
    ProgrammedSequenceCore,
    induction_targets,
)
from tensorlib.nn.quant import (
    NF4Linear,
    NF4Weight,
    model_memory_bytes,
    quantization_error,
    quantize_linear,
    quantize_model,
)
from tensorlib.nn.surgery import export_merged
from tensorlib.nn.transformer import Decoder, DecoderBlock, DecoderConfig
from tensorlib.nn.wavenet import WaveNet, WaveNetLevel

__all__ = [
    "GELU", "MLP", "AvgPool1d", "AvgPool2d", "BatchNorm1d", "BatchNorm2d", "Conv1d", "Conv2d",
    "Decoder", "DecoderBlock", "DecoderConfig", "Dropout", "Embedding", "Flatten",
    "FlattenConsecutive", "Hardswish", "HookPoint", "Identity", "LayerNorm", "LeakyReLU",
    "Linear", "MaxPool1d", "MaxPool2d", "Mish", "Module", "ModuleList", "MultiheadAttention",
    "Parameter", "PositionalEmbedding", "ReLU", "ReLU6", "Sequential", "SiLU", "Sigmoid",
    "Softplus", "StateDictError", "Tanh", "WaveNet", "WaveNetLevel",
    "evaluation_mode", "functional", "init",
    "ActivationCapture", "KVCache", "capture_activations",
    "LoRALinear", "LowRankAdapter", "NF4Linear", "NF4Weight", "attach_lora", "detach_lora",
    "export_merged", "lora_parameters", "merge_lora", "model_memory_bytes", "quantization_error",
    "quantize_linear", "quantize_model",
    "ProgramAugmentedModel", "ProgrammedAttentionHead", "ProgrammedSequenceCore",
    "induction_targets",
]
