"""Saving and loading (every file written through the one writer, ``tensorlib.engine.files``):
TLCKPT checkpoints of a model,
its AdamW and its generator (``checkpoint``, notebook 16, which reads files with
``checkpoint_reader``; the format is
docs/checkpoint_format.md), safetensors files (``safetensors``), the format PyTorch,
Hugging Face and JAX read, and PyTorch's ``save``/``load`` of nested checkpoints without pickle
(``objects``, docs/saving_objects.md; also ``tensorlib.save`` and ``tensorlib.load``).
"""

from tensorlib.saving import checkpoint
from tensorlib.saving.checkpoint import CheckpointError
from tensorlib.saving.objects import load, save
from tensorlib.saving.safetensors import load_safetensors, read_safetensors, save_safetensors

__all__ = ["CheckpointError", "checkpoint", "load", "load_safetensors", "read_safetensors",
           "save", "save_safetensors"]
