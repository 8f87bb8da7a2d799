"""A PyTorch learner's code, run on tensorlib with ``import tensorlib as torch``. Each
``*_program`` below is written the way a PyTorch course writes it: counts in a tensor filled
by item assignment, a seeded generator, ``multinomial`` sampling, ``one_hot``,
``F.cross_entropy``, manual update loops (through ``.data`` and ``.grad``, and in place
under ``no_grad``), reductions with ``dim`` and ``keepdim``, ``var``/``std`` with PyTorch's
defaults, ``max(dim)``'s named pair, a backward pass written by hand with ``-=`` and ``+=``
into slices, the update-to-data ratio statistic and an activations histogram. The programs
take the library as an argument, so the same code runs on tensorlib (always) and on PyTorch
(where it is installed), and their numbers are compared to float32 rounding. Random draws come from
tensorlib's splitmix64 generator in both runs (PyTorch's generator gives other numbers by
design): the programs that draw are run on tensorlib only.
"""

from __future__ import annotations

import math
import string

import numpy as np
import pytest

import tensorlib as torch
import tensorlib.nn.functional as F
from tensorlib.data.census import names

WORDS = names("female")[:150]


def vocabulary(words):
    chars = sorted(set(string.ascii_lowercase) | set("".join(words)))
    stoi = {s: i + 1 for i, s in enumerate(chars)}
    stoi["."] = 0
    return stoi


def bigram_pairs(words, stoi):
    xs, ys = [], []
    for w in words:
        chs = ["."] + list(w) + ["."]
        for ch1, ch2 in zip(chs, chs[1:]):
            xs.append(stoi[ch1])
            ys.append(stoi[ch2])
    return xs, ys


# ----------------------------------------------------------------------------- the programs
def counting_program(torch, words):
    """Bigram counts by item assignment, smoothed probabilities, and their NLL."""
    stoi = vocabulary(words)
    V = len(stoi)
    N = torch.zeros((V, V), dtype=torch.int32)
    for w in words:
        chs = ["."] + list(w) + ["."]
        for ch1, ch2 in zip(chs, chs[1:]):
            N[stoi[ch1], stoi[ch2]] += 1
    P = (N + 1).float()
    P /= P.sum(1, keepdim=True)
    log_likelihood = 0.0
    n = 0
    for w in words[:20]:
        chs = ["."] + list(w) + ["."]
        for ch1, ch2 in zip(chs, chs[1:]):
            log_likelihood += torch.log(P[stoi[ch1], stoi[ch2]])
            n += 1
    nll = -log_likelihood / n
    return {"N": N, "P": P, "nll": nll, "row_sums": P.sum(dim=1), "total": N.sum().item()}


def one_hot_training_program(torch, F, words, W0, steps=5):
    """The neural bigram: one_hot inputs, softmax by hand, a manual update loop."""
    stoi = vocabulary(words)
    xs, ys = bigram_pairs(words, stoi)
    xs, ys = torch.tensor(xs), torch.tensor(ys)
    num = xs.nelement()
    W = torch.tensor(W0, requires_grad=True)
    xenc = F.one_hot(xs, num_classes=len(stoi)).float()
    losses = []
    for _ in range(steps):
        logits = xenc @ W
        counts = logits.exp()
        probs = counts / counts.sum(1, keepdims=True)
        loss = -probs[torch.arange(num), ys].log().mean() + 0.01 * (W**2).mean()
        W.grad = None
        loss.backward()
        W.data += -50 * W.grad
        losses.append(loss.item())
    return {"losses": losses, "W": W, "xenc_shape": tuple(xenc.shape), "dtype": str(xenc.dtype)}


def mlp_program(torch, F, Xb, Yb, params0, steps=3, lr=0.1):
    """An embedding MLP with batch norm by hand, F.cross_entropy and the usual statistics."""
    C, W1, W2, b2 = (torch.tensor(p) for p in params0)
    bngain = torch.ones((1, W1.shape[1]))
    bnbias = torch.zeros((1, W1.shape[1]))
    parameters = [C, W1, W2, b2, bngain, bnbias]  # no bias before batch norm: it cancels
    for p in parameters:
        p.requires_grad = True
    out = {"parameters": sum(p.nelement() for p in parameters), "losses": [], "ud": []}
    for _ in range(steps):
        emb = C[Xb]
        embcat = emb.view(emb.shape[0], -1)
        hpreact = embcat @ W1
        bnmeani = hpreact.mean(0, keepdim=True)
        bnstdi = hpreact.std(0, keepdim=True)
        hpreact = bngain * (hpreact - bnmeani) / bnstdi + bnbias
        h = torch.tanh(hpreact)
        logits = h @ W2 + b2
        loss = F.cross_entropy(logits, Yb)
        for p in parameters:
            p.grad = None
        loss.backward()
        for p in parameters:
            p.data += -lr * p.grad
        with torch.no_grad():
            out["ud"].append([((lr * p.grad).std() / p.data.std()).log10().item()
                              for p in parameters])
            for p in parameters:  # the same step again, in place under no_grad
                p += -lr * p.grad
        out["losses"].append(loss.item())
    out["saturated"] = (h.abs() > 0.99).float().mean().item()
    hy, hx = torch.histogram(h, density=True)  # the activations' histogram, to plot
    out["histogram_edges"] = hx
    out["histogram_area"] = (hy * (hx[1:] - hx[:-1])).sum().item()
    out["var_unbiased"] = hpreact.var(0, keepdim=True)
    out["var_biased"] = hpreact.var(0, keepdim=True, unbiased=False)
    out["max"] = logits.max(1)
    out["argmax"] = logits.argmax(dim=1)
    out["log_softmax_rows"] = F.log_softmax(logits, dim=1).exp().sum(1)
    return out


def manual_backward_program(torch, F, Xb, Yb, params0):
    """Backprop by hand for embedding -> linear -> cross-entropy, checked with autograd:
    ``dlogits[range(n), Yb] -= 1`` and ``dC[ix] += ...`` into rows of a zeros tensor."""
    C, W1, b1 = (torch.tensor(p, requires_grad=True) for p in params0)
    n = Xb.shape[0]
    emb = C[Xb]
    embcat = emb.view(n, -1)
    logits = embcat @ W1 + b1
    loss = F.cross_entropy(logits, Yb)
    loss.backward()
    dlogits = F.softmax(logits, 1)
    dlogits[range(n), Yb] -= 1
    dlogits /= n
    dW1 = embcat.T @ dlogits
    db1 = dlogits.sum(0)
    dembcat = dlogits @ W1.T
    demb = dembcat.view(emb.shape)
    dC = torch.zeros_like(C)
    for k in range(Xb.shape[0]):
        for j in range(Xb.shape[1]):
            ix = Xb[k, j]
            dC[ix] += demb[k, j]
    return {
        "dW1": dW1, "db1": db1, "dC": dC, "loss": loss,
        "W1_close": torch.allclose(dW1, W1.grad, atol=1e-6),
        "b1_close": torch.allclose(db1, b1.grad, atol=1e-6),
        "C_close": torch.allclose(dC, C.grad, atol=1e-6),
        "max_diff": (dC - C.grad).abs().max().item(),
        "exact": torch.all(db1 == b1.grad).item(),
    }


# ----------------------------------------------------------------------------- fixed inputs
def _inputs(seed=42):
    """Initial weights and a batch, drawn from tensorlib's seeded generator."""
    g = torch.Generator().manual_seed(seed)
    stoi = vocabulary(WORDS)
    V = len(stoi)
    W0 = torch.randn((V, V), generator=g)
    C0 = torch.randn((V, 4), generator=g)
    W10 = torch.randn((12, 32), generator=g) * (5 / 3) / 12**0.5
    W20 = torch.randn((32, V), generator=g) * 0.01
    b20 = torch.zeros(V)
    Xb = torch.randint(0, V, (16, 3), generator=g)
    Yb = torch.randint(0, V, (16,), generator=g)
    return {"W0": W0.numpy(), "mlp": [p.numpy() for p in (C0, W10, W20, b20)],
            "manual": [C0.numpy(), torch.randn((12, V), generator=g).numpy() * 0.1,
                       torch.zeros(V).numpy()],
            "Xb": Xb.numpy(), "Yb": Yb.numpy()}


# ----------------------------------------------------------------------------- on tensorlib
def test_counting_by_item_assignment():
    out = counting_program(torch, WORDS)
    N = out["N"]
    assert N.dtype == torch.int32 and N.shape == (27, 27)
    assert out["total"] == sum(len(w) + 1 for w in WORDS)
    assert torch.allclose(out["row_sums"], torch.ones(27))
    assert 2.0 < out["nll"].item() < math.log(27)  # better than uniform over 27 letters
    assert f"{out['nll']:.4f}" == f"{out['nll'].item():.4f}"  # a 0-d tensor formats as a number


def test_seeded_generator_multinomial_and_randint():
    g = torch.Generator().manual_seed(2147483647)
    p = torch.rand(3, generator=g)
    p = p / p.sum()
    first = torch.multinomial(p, num_samples=20, replacement=True, generator=g)
    g = torch.Generator().manual_seed(2147483647)
    p_again = torch.rand(3, generator=g)
    p_again = p_again / p_again.sum()
    assert torch.equal(first, torch.multinomial(p_again, num_samples=20, replacement=True,
                                                generator=g))
    assert first.dtype == torch.int64 and first.shape == (20,)
    ix = torch.randint(0, 100, (32,), generator=g)
    assert ix.dtype == torch.int64 and int(ix.min()) >= 0 and int(ix.max()) < 100
    # sampling names from the bigram table, one character at a time
    P = counting_program(torch, WORDS)["P"]
    itos = {i: s for s, i in vocabulary(WORDS).items()}
    g = torch.Generator().manual_seed(2147483647)
    samples = []
    for _ in range(5):
        out, ix = [], 0
        while True:
            ix = torch.multinomial(P[ix], num_samples=1, replacement=True, generator=g).item()
            out.append(itos[ix])
            if ix == 0:
                break
        samples.append("".join(out))
    assert all(s.endswith(".") for s in samples)


def test_one_hot_and_a_manual_update_loop():
    out = one_hot_training_program(torch, F, WORDS, _inputs()["W0"])
    assert out["xenc_shape"][1] == 27 and out["dtype"] == "float32"
    assert out["losses"][-1] < out["losses"][0]


def test_mlp_statistics_and_named_pairs():
    data = _inputs()
    out = mlp_program(torch, F, torch.tensor(data["Xb"]), torch.tensor(data["Yb"]),
                      data["mlp"])
    values, indices = out["max"]
    assert torch.equal(indices, out["argmax"]) and torch.equal(out["max"].indices, indices)
    assert len(out["losses"]) == 3 and out["losses"][-1] < out["losses"][0]
    assert len(out["ud"]) == 3 and all(math.isfinite(r) for r in out["ud"][-1])
    ratio = out["var_unbiased"] / out["var_biased"]
    assert torch.allclose(ratio, torch.full((1, 32), 16 / 15))
    assert torch.allclose(out["log_softmax_rows"], torch.ones(16), atol=1e-5)
    assert out["histogram_edges"].shape == (101,)
    assert out["histogram_area"] == pytest.approx(1.0, rel=1e-5)


def test_manual_backward_matches_autograd():
    data = _inputs()
    out = manual_backward_program(torch, F, torch.tensor(data["Xb"]),
                                  torch.tensor(data["Yb"]), data["manual"])
    assert out["W1_close"] and out["b1_close"] and out["C_close"]
    assert out["max_diff"] < 1e-6


# ----------------------------------------------------------------------------- against PyTorch
def _compare(ours, theirs, path="out"):
    if isinstance(ours, dict):
        for key in ours:
            _compare(ours[key], theirs[key], f"{path}[{key!r}]")
    elif isinstance(ours, (tuple, list)):
        assert len(ours) == len(theirs), path
        for i, (a, b) in enumerate(zip(ours, theirs)):
            _compare(a, b, f"{path}[{i}]")
    elif isinstance(ours, torch.Tensor):
        a, b = ours.detach().numpy(), theirs.detach().numpy()
        assert a.shape == b.shape and a.dtype == b.dtype, path
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6, err_msg=path)
    elif isinstance(ours, float):
        assert ours == pytest.approx(theirs, rel=2e-5, abs=2e-6), path
    else:
        assert ours == theirs, path


def test_the_same_programs_give_pytorchs_numbers():
    real_torch = pytest.importorskip("torch")
    import torch.nn.functional as real_F

    data = _inputs()
    _compare(counting_program(torch, WORDS), counting_program(real_torch, WORDS))
    ours = one_hot_training_program(torch, F, WORDS, data["W0"])
    theirs = one_hot_training_program(real_torch, real_F, WORDS, data["W0"])
    theirs["dtype"] = theirs["dtype"].removeprefix("torch.")
    _compare(ours, theirs)
    for program, params in ((mlp_program, data["mlp"]), (manual_backward_program,
                                                         data["manual"])):
        ours = program(torch, F, torch.tensor(data["Xb"]), torch.tensor(data["Yb"]), params)
        theirs = program(real_torch, real_F, real_torch.tensor(data["Xb"]),
                         real_torch.tensor(data["Yb"]), params)
        _compare(ours, theirs)
