"""Train the GPT of model.py on the data prepare.py wrote, the way nanoGPT's train.py does:
batches drawn with torch.randint from a memory-mapped file, a warm-up and cosine learning
rate, gradient accumulation, clipping, AdamW's parameter groups, an evaluation every
``eval_interval`` steps and a checkpoint (``torch.save``) when the validation loss improves;
``--init_from=resume`` continues from it.

    python examples/gpt/train.py [--max_iters=500 --device=cpu ...]
"""

import ast
import json
import math
import os
import sys
import time
from contextlib import nullcontext

import numpy as np
from model import GPT, GPTConfig

import tensorlib as torch

# settings; each may be overridden on the command line as --key=value
out_dir = "out-names"
data_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
eval_interval = 100
eval_iters = 20
log_interval = 10
always_save_checkpoint = False
init_from = "scratch"  # or "resume"
gradient_accumulation_steps = 2
batch_size = 16
block_size = 32
n_layer = 2
n_head = 4
n_embd = 64
dropout = 0.0
bias = False
flash = True
learning_rate = 3e-3
max_iters = 500
weight_decay = 1e-1
beta1 = 0.9
beta2 = 0.99
grad_clip = 1.0
decay_lr = True
warmup_iters = 50
lr_decay_iters = 500
min_lr = 3e-4
device = "cpu"
dtype = "float32"
seed = 1337
for argument in sys.argv[1:]:
    key, value = argument.removeprefix("--").split("=", 1)
    assert key in globals(), f"unknown setting {key}"
    globals()[key] = value if isinstance(globals()[key], str) else ast.literal_eval(value)
config = {k: v for k, v in globals().items()
          if not k.startswith("_") and isinstance(v, (int, float, bool, str))}

os.makedirs(out_dir, exist_ok=True)
torch.manual_seed(seed)
torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True
device_type = "cuda" if "cuda" in device else "cpu"
ptdtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
ctx = nullcontext() if device_type == "cpu" else torch.amp.autocast(device_type=device_type,
                                                                     dtype=ptdtype)


def get_batch(split):
    data = np.memmap(os.path.join(data_dir, f"{split}.bin"), dtype=np.uint16, mode="r")
    ix = torch.randint(len(data) - block_size, (batch_size,))
    x = torch.stack([torch.from_numpy(data[i:i + block_size].astype(np.int64)) for i in ix])
    y = torch.stack([torch.from_numpy(data[i + 1:i + 1 + block_size].astype(np.int64))
                     for i in ix])
    if device_type == "cuda":  # page-locked memory lets the copy overlap the compute
        return x.pin_memory().to(device, non_blocking=True), \
            y.pin_memory().to(device, non_blocking=True)
    return x.to(device), y.to(device)


with open(os.path.join(data_dir, "meta.json")) as handle:
    meta_vocab_size = json.load(handle)["vocab_size"]

iter_num, best_val_loss = 0, 1e9
model_args = dict(n_layer=n_layer, n_head=n_head, n_embd=n_embd, block_size=block_size,
                  bias=bias, vocab_size=meta_vocab_size, dropout=dropout, flash=flash)
if init_from == "scratch":
    model = GPT(GPTConfig(**model_args))
elif init_from == "resume":
    checkpoint = torch.load(os.path.join(out_dir, "ckpt.pt"), map_location=device)
    for k in ["n_layer", "n_head", "n_embd", "block_size", "bias", "vocab_size"]:
        model_args[k] = checkpoint["model_args"][k]  # the shape is the checkpoint's
    model = GPT(GPTConfig(**model_args))
    state_dict = checkpoint["model"]
    unwanted_prefix = "_orig_mod."  # what torch.compile adds to the names
    for k in list(state_dict):
        if k.startswith(unwanted_prefix):
            state_dict[k[len(unwanted_prefix):]] = state_dict.pop(k)
    model.load_state_dict(state_dict)
    iter_num, best_val_loss = checkpoint["iter_num"], checkpoint["best_val_loss"]
model.to(device)
print(f"number of parameters: {model.get_num_params() / 1e6:.2f}M")

# a GradScaler; with enabled=False (any dtype but float16) it passes everything through
scaler = torch.amp.GradScaler(device_type, enabled=(dtype == "float16"))
optimizer = model.configure_optimizers(weight_decay, learning_rate, (beta1, beta2), device_type)
if init_from == "resume":
    optimizer.load_state_dict(checkpoint["optimizer"])
checkpoint = None  # free it


@torch.no_grad()
def estimate_loss():
    out = {}
    model.eval()
    for split in ["train", "val"]:
        losses = torch.zeros(eval_iters)
        for k in range(eval_iters):
            X, Y = get_batch(split)
            with ctx:
                logits, loss = model(X, Y)
            losses[k] = loss.item()
        out[split] = losses.mean()
    model.train()
    return out


def get_lr(it):
    if it < warmup_iters:  # linear warm-up
        return learning_rate * (it + 1) / (warmup_iters + 1)
    if it > lr_decay_iters:
        return min_lr
    decay_ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
    coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))  # from 1 down to 0
    return min_lr + coeff * (learning_rate - min_lr)


history = []  # (iter, train loss, val loss) at each evaluation
X, Y = get_batch("train")
t0 = time.time()
while True:
    lr = get_lr(iter_num) if decay_lr else learning_rate
    for param_group in optimizer.param_groups:
        param_group["lr"] = lr

    if iter_num % eval_interval == 0:
        losses = estimate_loss()
        history.append((iter_num, losses["train"].item(), losses["val"].item()))
        print(f"step {iter_num}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}")
        if losses["val"] < best_val_loss or always_save_checkpoint:
            best_val_loss = losses["val"]
            if iter_num > 0:
                checkpoint = {
                    "model": model.state_dict(),
                    "optimizer": optimizer.state_dict(),
                    "model_args": model_args,
                    "iter_num": iter_num,
                    "best_val_loss": best_val_loss,
                    "config": config,
                }
                print(f"saving checkpoint to {out_dir}")
                torch.save(checkpoint, os.path.join(out_dir, "ckpt.pt"))

    for _micro_step in range(gradient_accumulation_steps):
        with ctx:
            logits, loss = model(X, Y)
            loss = loss / gradient_accumulation_steps  # the gradients add up over micro-steps
        X, Y = get_batch("train")  # the next batch (on a GPU, copied while this one computes)
        scaler.scale(loss).backward()  # the loss scaled, when training in float16
    if grad_clip != 0.0:
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    scaler.step(optimizer)  # skipped if a float16 gradient overflowed
    scaler.update()
    optimizer.zero_grad(set_to_none=True)

    t1 = time.time()
    dt, t0 = t1 - t0, t1
    if iter_num % log_interval == 0:
        lossf = loss.item() * gradient_accumulation_steps
        print(f"iter {iter_num}: loss {lossf:.4f}, time {dt * 1000:.2f}ms")
    iter_num += 1
    if iter_num > max_iters:
        break
