"""evaluation_mode: eval mode and no graph inside the block, every module's mode back after."""

import numpy as np
import pytest

import tensorlib as tl
from tensorlib import Rng
from tensorlib.nn import Dropout, Linear, Module
from tensorlib.nn.modes import evaluation_mode


class Net(Module):
    def __init__(self):
        super().__init__()
        self.linear = Linear(2, 2, rng=Rng(0))
        self.dropout = Dropout(0.5, rng=Rng(1))

    def forward(self, x):
        return self.dropout(self.linear(x))


def test_evaluation_mode_switches_every_module_and_restores_mixed_modes():
    net = Net()
    net.linear.eval()  # a model half in eval mode stays so
    with evaluation_mode(net) as inside:
        assert inside is net
        assert not any(m.training for m in net.modules())
        out = net(tl.tensor(np.ones((1, 2), dtype=np.float32)))
        assert out.grad_fn is None and not tl.is_grad_enabled()
    assert [m.training for m in net.modules()] == [True, False, True]
    assert tl.is_grad_enabled()


def test_evaluation_mode_restores_modes_after_an_exception():
    net = Net()
    with pytest.raises(ZeroDivisionError), evaluation_mode(net):
        raise ZeroDivisionError
    assert all(m.training for m in net.modules()) and tl.is_grad_enabled()


def test_evaluation_mode_of_a_plain_function_only_turns_off_the_graph():
    def double(x):
        return x * 2.0

    x = tl.tensor([1.0], requires_grad=True)
    with evaluation_mode(double):
        assert double(x).grad_fn is None
