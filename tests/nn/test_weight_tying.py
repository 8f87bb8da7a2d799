"""PyTorch's nn surface that nanoGPT-shaped programs touch, part 4: a small nanoGPT-shaped
model (a ModuleDict of embeddings, a ModuleList of blocks, a language-model head whose
weight is the token embedding's: ``transformer.wte.weight = lm_head.weight``) written as
nanoGPT writes it, with ``import tensorlib as torch``. Weight tying (tensorlib.nn.module's
parameter replacement), its names, state, loading, counting and training; cropping a
parameter; and, where PyTorch is importable, the same model in torch.nn: the same names,
keys, loss and gradients."""

import copy
import math

import numpy as np
import pytest

import tensorlib
import tensorlib.nn as tnn
from tensorlib.nn import Module, Parameter, StateDictError
from tensorlib.optim import AdamW

VOCAB, WIDTH, BLOCK, LAYERS = 13, 8, 6, 2


def gpt_classes(torch):
    """nanoGPT's shape, written once for tensorlib and for PyTorch (``torch`` is either)."""
    nn, F = torch.nn, torch.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(WIDTH)
            self.attn = nn.ModuleDict(dict(c_attn=nn.Linear(WIDTH, 2 * WIDTH),
                                           c_proj=nn.Linear(2 * WIDTH, WIDTH)))
            self.ln_2 = nn.LayerNorm(WIDTH)
            self.mlp = nn.ModuleList([nn.Linear(WIDTH, 4 * WIDTH), nn.Linear(4 * WIDTH, WIDTH)])

        def forward(self, x):
            x = x + self.attn.c_proj(F.gelu(self.attn.c_attn(self.ln_1(x))))
            return x + self.mlp[1](F.gelu(self.mlp[0](self.ln_2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.transformer = nn.ModuleDict(dict(
                wte=nn.Embedding(VOCAB, WIDTH),
                wpe=nn.Embedding(BLOCK, WIDTH),
                drop=nn.Dropout(0.0),
                h=nn.ModuleList([Block() for _ in range(LAYERS)]),
                ln_f=nn.LayerNorm(WIDTH),
            ))
            self.lm_head = nn.Linear(WIDTH, VOCAB, bias=False)
            self.transformer.wte.weight = self.lm_head.weight  # weight tying
            self.apply(self._init_weights)
            for pn, p in self.named_parameters():
                if pn.endswith("c_proj.weight"):
                    torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * LAYERS))

        def _init_weights(self, module):
            if isinstance(module, nn.Linear):
                torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
                if module.bias is not None:
                    torch.nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Embedding):
                torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

        def forward(self, idx, targets):
            t = idx.shape[1]
            pos = torch.arange(0, t, dtype=torch.long)
            x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
            for block in self.transformer.h:
                x = block(x)
            logits = self.lm_head(self.transformer.ln_f(x))
            return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))

    return GPT


GPT = gpt_classes(tensorlib)
NAMES = ["transformer.wte.weight", "transformer.wpe.weight",
         *[f"transformer.h.{i}.{name}" for i in range(LAYERS) for name in [
             "ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias",
             "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight", "ln_2.bias",
             "mlp.0.weight", "mlp.0.bias", "mlp.1.weight", "mlp.1.bias"]],
         "transformer.ln_f.weight", "transformer.ln_f.bias"]


def batch(seed=0):
    rng = tensorlib.Generator(seed)
    return (tensorlib.randint(0, VOCAB, (3, BLOCK), generator=rng),
            tensorlib.randint(0, VOCAB, (3, BLOCK), generator=rng))


# --------------------------------------------------------------------------------- tying
def test_a_tied_parameter_is_listed_once_named_once_and_saved_under_both_names():
    model = GPT()
    tied = model.lm_head.weight
    assert model.transformer.wte.weight is tied and tied.shape == (VOCAB, WIDTH)
    assert [n for n, _ in model.named_parameters()] == NAMES  # the first name met
    assert sum(p is tied for p in model.parameters()) == 1
    both = [n for n, p in model.named_parameters(remove_duplicate=False) if p is tied]
    assert both == ["transformer.wte.weight", "lm_head.weight"]
    state = model.state_dict()
    assert list(state) == NAMES[:-2] + ["transformer.ln_f.weight", "transformer.ln_f.bias",
                                        "lm_head.weight"]
    np.testing.assert_array_equal(state["lm_head.weight"], state["transformer.wte.weight"])
    count = sum(p.numel() for p in model.parameters())
    assert count == model.num_parameters() == sum(state[n].size for n in NAMES)
    assert count == sum(a.size for a in state.values()) - VOCAB * WIDTH


def test_a_tied_state_dict_loads_strictly_and_a_missing_name_is_reported():
    model, other = GPT(), GPT()
    state = other.state_dict()
    model.load_state_dict(state)
    for (name, ours), theirs in zip(model.state_dict().items(), state.values(), strict=True):
        np.testing.assert_array_equal(ours, theirs, err_msg=name)
    del state["lm_head.weight"]
    with pytest.raises(StateDictError, match="missing key 'lm_head.weight'"):
        model.load_state_dict(state)
    assert model.load_state_dict(state, strict=False).missing_keys == ["lm_head.weight"]


def test_both_uses_add_their_gradients_and_adamw_steps_the_tied_weight_once():
    model = GPT()
    untied = copy.deepcopy(model)
    assert untied.transformer.wte.weight is untied.lm_head.weight  # a copy keeps the tying
    untied.transformer.wte.weight = Parameter(untied.lm_head.weight.numpy().copy())
    idx, targets = batch()
    model(idx, targets).backward()
    untied(idx, targets).backward()
    np.testing.assert_allclose(
        model.lm_head.weight.grad.data,
        untied.lm_head.weight.grad.data + untied.transformer.wte.weight.grad.data, rtol=1e-5,
        atol=1e-8)
    optimizer = AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
    assert len(optimizer.parameters) == len(NAMES)
    alone = Parameter(model.lm_head.weight.numpy().copy())
    alone.grad = model.lm_head.weight.grad.numpy().copy()
    reference = AdamW([alone], lr=1e-2, weight_decay=0.1)
    optimizer.step()
    reference.step()
    np.testing.assert_array_equal(model.lm_head.weight.data, alone.data)
    assert AdamW(model, lr=1e-3).parameters[0] is model.lm_head.weight  # from the Module too


def test_replacing_a_parameter_is_allowed_where_registering_one_is_not():
    model = GPT()
    wte = model.transformer.wte
    assert wte._parent_registered  # attached: no new member, but replacement is fine
    fresh = Parameter(np.zeros((VOCAB, WIDTH), np.float32))
    wte.weight = fresh
    assert model.transformer.wte.weight is fresh and model.lm_head.weight is not fresh
    assert "lm_head.weight" in [n for n, _ in model.named_parameters()]  # untied again
    with pytest.raises(RuntimeError, match="already a child"):
        wte.extra = Parameter(np.zeros(2, np.float32))
    with pytest.raises(TypeError, match="cannot replace registered member 'weight'"):
        wte.weight = tensorlib.zeros(VOCAB, WIDTH)  # a Tensor is not a Parameter
    plain = Module()
    plain.a = Parameter(np.ones(2, np.float32))
    with pytest.raises(ValueError, match="already registered as 'a'"):
        plain.b = plain.a  # a second name for a parameter is still refused


def test_cropping_a_parameter_replaces_it_as_nanogpt_does():
    model = GPT()
    wpe_before = model.transformer.wpe.weight.numpy().copy()
    model.transformer.wpe.weight = tnn.Parameter(model.transformer.wpe.weight[:4])
    assert model.transformer.wpe.weight.shape == (4, WIDTH)
    assert model.transformer.wpe.weight.requires_grad and model.transformer.wpe.weight.is_leaf
    np.testing.assert_array_equal(model.transformer.wpe.weight.data, wpe_before[:4])
    assert model.state_dict()["transformer.wpe.weight"].shape == (4, WIDTH)
    idx, targets = batch()
    loss = model(idx[:, :4].contiguous(), targets[:, :4].contiguous())
    loss.backward()
    assert model.transformer.wpe.weight.grad.shape == (4, WIDTH)


def test_conversions_keep_the_tying():
    model = GPT().double()
    assert model.lm_head.weight is model.transformer.wte.weight
    assert model.lm_head.weight.dtype == np.float64
    assert len({id(p) for p in model.parameters()}) == len(NAMES)


# --------------------------------------------------------------------------------- PyTorch
def test_the_same_model_in_pytorch_has_the_same_names_keys_loss_and_gradients():
    torch = pytest.importorskip("torch")
    ours, theirs = GPT(), gpt_classes(torch)()
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert sum(p.numel() for p in ours.parameters()) == \
        sum(p.numel() for p in theirs.parameters())
    theirs.load_state_dict({k: torch.from_numpy(v) for k, v in ours.state_dict().items()})
    assert theirs.lm_head.weight is theirs.transformer.wte.weight
    idx, targets = batch(1)
    loss = ours(idx, targets)
    expected = theirs(torch.from_numpy(idx.numpy()), torch.from_numpy(targets.numpy()))
    assert float(loss) == pytest.approx(expected.item(), rel=1e-5)
    loss.backward()
    expected.backward()
    for (name, p), q in zip(ours.named_parameters(), theirs.parameters(), strict=True):
        np.testing.assert_allclose(p.grad.data, q.grad.numpy(), rtol=1e-4, atol=1e-7,
                                   err_msg=name)
    norm = tnn.utils.clip_grad_norm_(ours.parameters(), 0.01)
    expected_norm = torch.nn.utils.clip_grad_norm_(theirs.parameters(), 0.01)
    assert float(norm) == pytest.approx(expected_norm.item(), rel=1e-5)
    # and back: PyTorch's state dict (both names) loads into ours
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
