"""A character-level LSTM in the shape of the classic char-rnn programs (Karpathy's char-rnn,
the PyTorch tutorials, course assignments): nn.Embedding, a stacked nn.LSTM (or nn.GRU, or
nn.RNN) with dropout between its layers and batch_first, a Linear head; the text cut into
one stream per batch row and read in consecutive chunks, the hidden state carried from
chunk to chunk and detached (truncated backpropagation through time), gradient clipping,
sampling one character at a time with the state carried, and the weights saved with
torch.save. It trains on US census surnames, one per line, and runs on tensorlib; swap
``tensorlib`` for ``torch`` in the three imports and it runs on PyTorch.

    python examples/char_rnn.py [--cell=gru --max_iters=2000 --out=char_rnn.pt ...]
"""

import ast
import sys

import tensorlib as torch
import tensorlib.nn as nn
from tensorlib.data import names
from tensorlib.nn import functional as F

# settings; each may be overridden on the command line as --key=value
cell = "lstm"  # lstm, gru or rnn
batch_size = 32  # streams of text read side by side
seq_len = 32  # characters per chunk: how far back the gradient flows
n_embd = 32
n_hidden = 128
n_layers = 2
dropout = 0.2
learning_rate = 3e-3
grad_clip = 1.0
max_iters = 1000
eval_interval = 250
temperature = 0.8
new_tokens = 100
out = ""  # a file for torch.save of the weights, or nothing


class CharRNN(nn.Module):
    def __init__(self, vocab_size, n_embd, n_hidden, n_layers, cell="lstm", dropout=0.0):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, n_embd)
        recurrent = {"lstm": nn.LSTM, "gru": nn.GRU, "rnn": nn.RNN}[cell]
        self.rnn = recurrent(n_embd, n_hidden, num_layers=n_layers, dropout=dropout,
                             batch_first=True)
        self.head = nn.Linear(n_hidden, vocab_size)

    def forward(self, idx, hidden=None, targets=None):
        out, hidden = self.rnn(self.embedding(idx), hidden)  # (B, T, n_hidden)
        logits = self.head(out)  # (B, T, vocab_size)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))
        return logits, loss, hidden


def detach(hidden):
    """The state without its history: the next chunk's gradient stops here."""
    if isinstance(hidden, tuple):  # the LSTM's (h, c)
        return tuple(h.detach() for h in hidden)
    return hidden.detach()


def streams(data, rows):
    """The text as ``rows`` streams side by side: (rows, length // rows)."""
    length = len(data) // rows
    return data[:rows * length].view(rows, length)


@torch.no_grad()
def evaluate(model, data):
    """Mean loss over the whole of ``data`` read as streams, the state carried."""
    model.eval()
    hidden, total, chunks = None, 0.0, 0
    for position in range(0, data.size(1) - 1 - seq_len, seq_len):
        x = data[:, position:position + seq_len]
        y = data[:, position + 1:position + seq_len + 1]
        _, loss, hidden = model(x, hidden, y)
        total, chunks = total + loss.item(), chunks + 1
    model.train()
    return total / chunks


@torch.no_grad()
def sample(model, start, count, temperature=1.0):
    """``count`` characters after ``start`` (1, T): each from the last step's distribution."""
    model.eval()
    idx, hidden = start, None
    logits, _, hidden = model(idx, hidden)
    for _ in range(count):
        probs = F.softmax(logits[:, -1, :] / temperature, dim=-1)
        next_id = torch.multinomial(probs, num_samples=1)  # (1, 1)
        idx = torch.cat((idx, next_id), dim=1)
        logits, _, hidden = model(next_id, hidden)
    model.train()
    return idx


def main(arguments):
    for argument in arguments:
        key, value = argument.removeprefix("--").split("=", 1)
        assert key in globals(), f"unknown setting {key}"
        globals()[key] = value if key in ("cell", "out") else ast.literal_eval(value)
    torch.manual_seed(1337)
    text = "".join(name.lower() + "\n" for name in names("last"))
    chars = sorted(set(text))
    stoi = {ch: i for i, ch in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
    n = int(0.9 * len(data))
    train_data, val_data = streams(data[:n], batch_size), streams(data[n:], batch_size)

    model = CharRNN(len(chars), n_embd, n_hidden, n_layers, cell, dropout)
    print(f"{sum(p.numel() for p in model.parameters())} parameters")
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=0.0)
    history, hidden, position = [], None, 0
    for iteration in range(max_iters + 1):
        if iteration % eval_interval == 0 or iteration == max_iters:
            val_loss = evaluate(model, val_data)
            history.append((iteration, val_loss))
            print(f"step {iteration}: val loss {val_loss:.4f}")
        if iteration == max_iters:
            break
        if position + seq_len + 1 > train_data.size(1):  # the end of the text: start again
            hidden, position = None, 0
        x = train_data[:, position:position + seq_len]
        y = train_data[:, position + 1:position + seq_len + 1]
        position += seq_len
        _, loss, hidden = model(x, hidden, y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        optimizer.step()
        hidden = detach(hidden)

    start = torch.tensor([[stoi["\n"]]], dtype=torch.long)
    generated = sample(model, start, new_tokens, temperature)[0].tolist()
    print("".join(chars[i] for i in generated))
    if out:
        torch.save({"model": model.state_dict(), "chars": chars}, out)
    return {"history": history, "generated": generated, "model": model}


if __name__ == "__main__":
    finished = main(sys.argv[1:])
