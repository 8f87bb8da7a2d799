"""tensorlib.nn: modules, parameters, the splitmix64 RNG, initialization policies, layers,
losses and the GPT-style decoder."""

from tensorlib.nn import functional, init
from tensorlib.nn.attention import MultiheadAttention
from tensorlib.nn.layers import (
    GELU,
    MLP,
    Dropout,
    Embedding,
    Identity,
    LayerNorm,
    Linear,
    PositionalEmbedding,
    ReLU,
    Sigmoid,
    Tanh,
)
from tensorlib.nn.module import Module, ModuleList, Parameter, StateDictError
from tensorlib.nn.rng import Rng, default_rng, manual_seed
from tensorlib.nn.transformer import Decoder, DecoderBlock, DecoderConfig

__all__ = [
    "GELU", "MLP", "Decoder", "DecoderBlock", "DecoderConfig", "Dropout", "Embedding",
    "Identity", "LayerNorm", "Linear", "Module", "ModuleList", "MultiheadAttention",
    "Parameter", "PositionalEmbedding", "ReLU", "Rng", "Sigmoid", "StateDictError", "Tanh",
    "default_rng", "functional", "init", "manual_seed",
]
