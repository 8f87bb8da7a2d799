"""Sample names from the checkpoint train.py saved, as nanoGPT's sample.py does: load it with
torch.load, rebuild the model from its arguments, and generate with a temperature and top-k.

    python examples/gpt/sample.py [--num_samples=3 --top_k=10 ...]
"""

import ast
import json
import os
import sys
from contextlib import nullcontext

from model import GPT, GPTConfig

import tensorlib as torch

out_dir = "out-names"
data_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
start = "\n"  # the text each sample continues: a new line starts a name
num_samples = 3
max_new_tokens = 60
temperature = 0.8
top_k = 10
seed = 1337
device = "cpu"
dtype = "float32"
for argument in sys.argv[1:]:
    key, value = argument.removeprefix("--").split("=", 1)
    assert key in globals(), f"unknown setting {key}"
    globals()[key] = value if isinstance(globals()[key], str) else ast.literal_eval(value)

torch.manual_seed(seed)
torch.cuda.manual_seed(seed)
torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True
device_type = "cuda" if "cuda" in device else "cpu"
ptdtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
ctx = nullcontext() if device_type == "cpu" else torch.amp.autocast(device_type=device_type,
                                                                     dtype=ptdtype)

checkpoint = torch.load(os.path.join(out_dir, "ckpt.pt"), map_location=device)
model = GPT(GPTConfig(**checkpoint["model_args"]))
state_dict = checkpoint["model"]
unwanted_prefix = "_orig_mod."
for k in list(state_dict):
    if k.startswith(unwanted_prefix):
        state_dict[k[len(unwanted_prefix):]] = state_dict.pop(k)
model.load_state_dict(state_dict)
model.eval()
model.to(device)

with open(os.path.join(data_dir, "meta.json")) as handle:
    chars = json.load(handle)["chars"]
stoi, itos = {ch: i for i, ch in enumerate(chars)}, dict(enumerate(chars))
encode = lambda s: [stoi[c] for c in s]  # noqa: E731
decode = lambda ids: "".join(itos[i] for i in ids)  # noqa: E731

x = torch.tensor(encode(start), dtype=torch.long, device=device)[None, ...]
samples = []
with torch.no_grad():
    with ctx:
        for _ in range(num_samples):
            y = model.generate(x, max_new_tokens, temperature=temperature, top_k=top_k)
            samples.append(decode(y[0].tolist()))
            print(samples[-1])
            print("---------------")
