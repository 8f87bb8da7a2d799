"""Write the character-level data set the GPT example trains on: US census surnames (from the
``names`` package, nothing downloaded), one per line, as ``train.bin`` and ``val.bin``
(uint16 token ids, 90% / 10%) and ``meta.json`` (the characters, in id order).

    python examples/gpt/prepare.py [--data_dir=...]
"""

import ast
import json
import os
import sys

import numpy as np

from tensorlib.data import names

data_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
for argument in sys.argv[1:]:  # --key=value, as nanoGPT's configurator reads them
    key, value = argument.removeprefix("--").split("=", 1)
    assert key in globals(), f"unknown setting {key}"
    globals()[key] = value if isinstance(globals()[key], str) else ast.literal_eval(value)

text = "".join(name + "\n" for name in names("last"))
chars = sorted(set(text))
stoi = {ch: i for i, ch in enumerate(chars)}
ids = np.array([stoi[ch] for ch in text], dtype=np.uint16)
split = int(0.9 * len(ids))
os.makedirs(data_dir, exist_ok=True)
ids[:split].tofile(os.path.join(data_dir, "train.bin"))
ids[split:].tofile(os.path.join(data_dir, "val.bin"))
with open(os.path.join(data_dir, "meta.json"), "w") as handle:
    json.dump({"vocab_size": len(chars), "chars": chars}, handle)
print(f"{len(text):,} characters, {len(chars)} distinct; train {split:,}, val {len(ids) - split:,}")
