"""Containers of modules (tensorlib.nn.container): ModuleList registers its items by index,
Sequential calls them in order; and (where PyTorch is importable) a Sequential against
torch.nn.Sequential."""

import numpy as np
import pytest

import tensorlib as tl
from tensorlib import Rng
from tensorlib.nn import Flatten, Linear, Module, ModuleList, Sequential, Tanh

from helpers import Affine


# --------------------------------------------------------------------------------- ModuleList
def test_module_list_registers_items_by_index():
    blocks = ModuleList([Affine(), Affine()])
    blocks.append(Affine(2))
    assert len(blocks) == 3
    assert [n for n, _ in blocks.named_children()] == ["0", "1", "2"]
    assert blocks[-1].scale.shape == (2,)
    assert list(blocks) == [blocks[0], blocks[1], blocks[2]]
    assert blocks[0:2] == [blocks[0], blocks[1]]
    with pytest.raises(IndexError, match="out of range"):
        blocks[3]
    model = Module()
    model.blocks = blocks
    assert [n for n, _ in model.named_parameters()][:3] == [
        "blocks.0.scale", "blocks.0.shift", "blocks.1.scale"]
    with pytest.raises(ValueError, match="already registered"):
        ModuleList([blocks[0]])


def test_module_list_rejects_the_same_item_twice():
    item = Affine()
    with pytest.raises(ValueError, match="already registered"):
        ModuleList([item, item])


# --------------------------------------------------------------------------------- Sequential
def test_sequential_calls_its_modules_in_order_and_names_them_by_position():
    first, second = Linear(3, 5, rng=Rng(0)), Linear(5, 2, rng=Rng(1))
    model = Sequential(first, Tanh(), second)
    x = tl.tensor(Rng(2).normal(size=(4, 3)))
    np.testing.assert_array_equal(model(x).data, second(first(x).tanh()).data)
    assert [name for name, _ in model.named_parameters()] == ["0.weight", "0.bias",
                                                              "2.weight", "2.bias"]
    assert len(model) == 3 and model[2] is second and model[-1] is second
    assert model[0:2] == [first, model[1]]                      # a slice is a plain list
    model.append(Tanh())
    assert len(model) == 4 and isinstance(model, ModuleList)
    with pytest.raises(IndexError, match="index 4 out of range"):
        model[4]
    with pytest.raises(TypeError):
        Sequential([first])                                      # modules, not a list of them
    assert Sequential()(x) is x


# --------------------------------------------------------------------------------- PyTorch
def test_flatten_and_sequential_match_torch():
    torch = pytest.importorskip("torch")
    data = Rng(21).normal(size=(2, 3, 4, 5), dtype=np.float64)
    for start, end in [(1, -1), (0, 1), (1, 2), (-2, -1)]:
        np.testing.assert_array_equal(
            Flatten(start, end)(tl.tensor(data)).data,
            torch.nn.Flatten(start, end)(torch.from_numpy(data)).numpy())
    ours = Sequential(Linear(5, 4, rng=Rng(0), dtype=np.float64), Tanh(), Flatten())
    theirs = torch.nn.Sequential(torch.nn.Linear(5, 4, dtype=torch.float64), torch.nn.Tanh(),
                                 torch.nn.Flatten())
    theirs.load_state_dict({name: torch.from_numpy(value)
                            for name, value in ours.state_dict().items()}, strict=True)
    np.testing.assert_allclose(ours(tl.tensor(data)).data,
                               theirs(torch.from_numpy(data)).detach().numpy(), rtol=1e-12)
