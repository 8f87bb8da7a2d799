"""Mixed-precision training in the shape of PyTorch's automatic mixed precision recipe and of
nanoGPT's train.py: the forward pass and the loss under torch.autocast, the loss scaled by a
torch.amp.GradScaler before backward, the gradients unscaled to clip them, scaler.step and
scaler.update, gradient accumulation over micro-batches, and a checkpoint holding the model,
the optimizer and the scaler, from which training resumes. The model is a makemore-style MLP
(three characters in, the next one out) on US census surnames. It runs on tensorlib; swap
``tensorlib`` for ``torch`` in the three imports and it runs on PyTorch.

    python examples/amp_training.py [--dtype=float16 --max_iters=400 --out=amp.pt ...]
    python examples/amp_training.py --resume=amp.pt --max_iters=800
"""

import ast
import sys

import tensorlib as torch
import tensorlib.nn as nn
from tensorlib.data import names
from tensorlib.nn import functional as F

# settings; each may be overridden on the command line as --key=value
dtype = "bfloat16"  # float32, bfloat16 or float16 (float16 trains with the gradient scaler)
block_size = 3  # characters of context
n_embd = 16
n_hidden = 128
batch_size = 64
gradient_accumulation_steps = 2
learning_rate = 3e-3
grad_clip = 1.0
max_iters = 200
eval_interval = 100
init_scale = 2.0 ** 16
out = ""  # a file for torch.save of the checkpoint, or nothing
resume = ""  # a checkpoint to go on from, or nothing


class MLP(nn.Module):
    def __init__(self, vocab_size, block_size, n_embd, n_hidden):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, n_embd)
        self.hidden = nn.Linear(block_size * n_embd, n_hidden)
        self.head = nn.Linear(n_hidden, vocab_size)

    def forward(self, idx, targets=None):
        x = self.embedding(idx).flatten(1)  # (B, block_size * n_embd)
        logits = self.head(torch.tanh(self.hidden(x)))  # (B, vocab_size)
        loss = None if targets is None else F.cross_entropy(logits, targets)
        return logits, loss


def build_dataset(words, stoi):
    """Every (context, next character) pair of ``words``, "." padding and ending each."""
    contexts, targets = [], []
    for word in words:
        context = [0] * block_size
        for ch in word + ".":
            contexts.append(context)
            targets.append(stoi[ch])
            context = context[1:] + [stoi[ch]]
    return torch.tensor(contexts), torch.tensor(targets)


def train_step(model, optimizer, scaler, ctx, batches):
    """One optimizer step over the micro-batches ``batches``: each loss under autocast,
    scaled, its gradients added up; then unscaled, clipped, stepped (skipped by the scaler
    if a gradient is inf or nan) and the scale updated. Returns the mean loss."""
    total = 0.0
    for x, y in batches:
        with ctx:
            _, loss = model(x, y)
            loss = loss / len(batches)  # the gradients add up over micro-steps
        scaler.scale(loss).backward()
        total += loss.item()
    scaler.unscale_(optimizer)  # true gradients, to clip them
    torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    return total


@torch.no_grad()
def evaluate(model, ctx, x, y):
    model.eval()
    with ctx:
        _, loss = model(x, y)
    model.train()
    return loss.item()


def main(arguments):
    for argument in arguments:
        key, value = argument.removeprefix("--").split("=", 1)
        assert key in globals(), f"unknown setting {key}"
        globals()[key] = value if key in ("dtype", "out", "resume") else ast.literal_eval(value)
    torch.manual_seed(1337)
    words = [name.lower() for name in names("last")]
    chars = sorted(set("".join(words)))
    stoi = {ch: i + 1 for i, ch in enumerate(chars)}
    stoi["."] = 0
    split = int(0.9 * len(words))
    x_train, y_train = build_dataset(words[:split], stoi)
    x_val, y_val = build_dataset(words[split:], stoi)

    ptdtype = {"float32": torch.float32, "bfloat16": torch.bfloat16,
               "float16": torch.float16}[dtype]
    ctx = torch.autocast(device_type="cpu", dtype=ptdtype, enabled=(dtype != "float32"))
    model = MLP(len(stoi), block_size, n_embd, n_hidden)
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate)
    scaler = torch.amp.GradScaler("cpu", init_scale=init_scale, enabled=(dtype == "float16"))
    start = 0
    if resume:
        checkpoint = torch.load(resume)
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        scaler.load_state_dict(checkpoint["scaler"])
        start = checkpoint["iter_num"]

    history, scales = [], []
    for iter_num in range(start, max_iters + 1):
        if iter_num % eval_interval == 0 or iter_num == max_iters:
            val_loss = evaluate(model, ctx, x_val, y_val)
            history.append((iter_num, val_loss))
            print(f"step {iter_num}: val loss {val_loss:.4f}, scale {scaler.get_scale():g}")
        if iter_num == max_iters:
            break
        batches = []
        for _ in range(gradient_accumulation_steps):
            ix = torch.randint(0, x_train.shape[0], (batch_size,))
            batches.append((x_train[ix], y_train[ix]))
        train_step(model, optimizer, scaler, ctx, batches)
        scales.append(scaler.get_scale())

    if out:
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "scaler": scaler.state_dict(), "iter_num": max_iters, "dtype": dtype}, out)
    return {"history": history, "scales": scales, "model": model, "optimizer": optimizer,
            "scaler": scaler}


if __name__ == "__main__":
    finished = main(sys.argv[1:])
