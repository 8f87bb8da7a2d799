"""What is put into a trained model afterwards: LoRA's low-rank adapters (``lora``, notebook
17), NF4 4-bit weights, the base of QLoRA (``nf4``, notebook 18), and the layer replacement
both are made with (``layer_replacement``: finding a model's Linear layers by name, putting
other modules in their place, exporting merged weights). Above :mod:`tensorlib.saving`, which
saves what they add.
"""

from tensorlib.adapters.layer_replacement import export_merged, find_linear_layers, replace_layer
from tensorlib.adapters.lora import (
    LoRALinear,
    LowRankAdapter,
    attach_lora,
    detach_lora,
    lora_parameters,
    merge_lora,
)
from tensorlib.adapters.nf4 import (
    NF4Linear,
    NF4Weight,
    model_memory_bytes,
    quantization_error,
    quantize_linear,
    quantize_model,
)

__all__ = [
    "LoRALinear", "LowRankAdapter", "NF4Linear", "NF4Weight", "attach_lora", "detach_lora",
    "export_merged", "find_linear_layers", "lora_parameters", "merge_lora",
    "model_memory_bytes", "quantization_error", "quantize_linear", "quantize_model",
    "replace_layer",
]
