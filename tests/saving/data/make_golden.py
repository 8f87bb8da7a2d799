"""Writes the golden files beside it: ``golden_decoder.tlckpt`` (a small Decoder after two
AdamW steps, with the optimizer state and an rng state), ``golden_nf4_decoder.tlckpt`` (the
same Decoder with its MLP layers in NF4, parameters only) and ``golden_names.json`` (the
parameter names and state_dict keys of both).

They were written once by the code *before* LoRA and NF4 became modules of their own
(commit 3a46599's tree) and are committed; ``tests/saving/test_checkpoint.py`` checks that
today's code reads them bit-identically and writes the same bytes and names. Do not regenerate them
to make a test pass: a difference is a change of the checkpoint schema.

    .venv/bin/python tests/saving/data/make_golden.py
"""

import json
import pathlib

import numpy as np

from tensorlib import Rng
from tensorlib.adapters.nf4 import quantize_model
from tensorlib.nn import Decoder, DecoderConfig
from tensorlib.optim import AdamW
from tensorlib.saving import checkpoint

HERE = pathlib.Path(__file__).parent
CONFIG = DecoderConfig(vocabulary_size=7, context_length=5, channels=8, heads=2, layers=1)


def trained_decoder():
    model = Decoder(CONFIG, rng=Rng(5))
    optimizer = AdamW(model, lr=1e-2, weight_decay=0.1, max_grad_norm=1.0)
    data = Rng(6).integers(0, CONFIG.vocabulary_size, size=(3, 6))
    for _ in range(2):
        optimizer.zero_grad()
        model.loss(data[:, :-1], data[:, 1:]).backward()
        optimizer.step()
    rng = Rng(7)
    rng.next_u64(size=3)
    return model, optimizer, rng


def main():
    model, optimizer, rng = trained_decoder()
    checkpoint.save(HERE / "golden_decoder.tlckpt", model, optimizer, rng)
    names = {
        "plain_parameters": [name for name, _ in model.named_parameters()],
        "plain_state_dict": list(model.state_dict()),
    }
    del optimizer
    quantize_model(model, "blocks.*.mlp_*", block_size=16)
    names["nf4_parameters"] = [name for name, _ in model.named_parameters()]
    names["nf4_state_dict"] = list(model.state_dict())
    checkpoint.save(HERE / "golden_nf4_decoder.tlckpt", model)
    (HERE / "golden_names.json").write_text(json.dumps(names, indent=1) + "\n")
    print(np.sum([p.size for p in model.parameters()]), "parameters after NF4")


if __name__ == "__main__":
    main()
