"""The models the workbook trains, each in one file, built from :mod:`tensorlib.nn`.

``decoder``: the GPT-style decoder (notebooks 14, 15, 19), in the configurations
``decoder_config`` names (GPT-2's pieces or today's: RMSNorm, rotary positions, SwiGLU,
grouped-query attention; notebook 15b), with ``decoder_step`` beside it, its cached
generation step on raw arrays, and ``hugging_face``, its Hugging Face folders (GPT-2 and
Llama); ``wavenet`` (12b); ``recurrent_names``, an RNN, GRU or LSTM over the
characters (12d); ``programmed``, sequence cores
whose weights are written by hand (21); ``bigram_counts``, the count-based bigram every
neural name model must beat (12, 15).
"""

from tensorlib.models.decoder import Decoder, DecoderBlock, DecoderConfig
from tensorlib.models.programmed import (
    ProgramAugmentedModel,
    ProgrammedAttentionHead,
    ProgrammedSequenceCore,
    induction_targets,
)
from tensorlib.models.recurrent_names import RecurrentNameModel
from tensorlib.models.wavenet import WaveNet, WaveNetLevel


def __getattr__(name: str) -> object:
    if name == "BigramModel":  # loaded on first use: it reads the data package's tokenizer
        from tensorlib.models.bigram_counts import BigramModel

        return BigramModel
    raise AttributeError(f"module 'tensorlib.models' has no attribute '{name}'")


__all__ = [
    "BigramModel", "Decoder", "DecoderBlock", "DecoderConfig", "ProgramAugmentedModel",
    "ProgrammedAttentionHead", "ProgrammedSequenceCore", "RecurrentNameModel", "WaveNet",
    "WaveNetLevel", "induction_targets",
]
