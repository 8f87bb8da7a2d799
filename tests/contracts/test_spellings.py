"""Each op's function is written once, in tensorlib.engine.methods, and declares where it is
spelled: every spelling it declares is that very function (a method of Tensor, a function of
tensorlib and of tensorlib.nn.functional, which check that they get a Tensor first), and the
nn module it names applies it."""

from __future__ import annotations

import numpy as np
import pytest

import tensorlib as tl
import tensorlib.nn as nn
import tensorlib.nn.functional as F
from tensorlib.engine.methods import arithmetic, elementwise, in_place, reductions, shape
from tensorlib.engine.methods.spellings import SPELLINGS

DECLARED = sorted(SPELLINGS.values(), key=lambda spelling: spelling.name)
MODULES = (arithmetic, elementwise, in_place, reductions, shape)


def declared_function(name):
    found = [getattr(module, name) for module in MODULES if name in vars(module)]
    assert len(found) == 1, f"{name} is written in {len(found)} modules"
    return found[0]


def runs(spelled, function):
    """Whether ``spelled`` is ``function`` or its function form."""
    return spelled is function or getattr(spelled, "__wrapped__", None) is function


@pytest.mark.parametrize("spelling", DECLARED, ids=[s.name for s in DECLARED])
def test_every_spelling_runs_the_declared_function(spelling):
    function = declared_function(spelling.name)
    assert (vars(tl.Tensor).get(spelling.name) is function) == spelling.method, spelling
    assert runs(getattr(tl, spelling.name, None), function) == spelling.function, spelling
    assert runs(getattr(F, spelling.name, None), function) == spelling.functional, spelling
    if spelling.function and spelling.functional:
        assert getattr(F, spelling.name) is getattr(tl, spelling.name)


@pytest.mark.parametrize("spelling", [s for s in DECLARED if s.module],
                         ids=[s.name for s in DECLARED if s.module])
def test_the_declared_module_applies_the_function(spelling):
    arguments = {"dim": -1} if spelling.module in ("Softmax", "LogSoftmax") else {}
    module = getattr(nn, spelling.module)(**arguments)
    x = tl.tensor(np.linspace(-7.0, 7.0, 15).reshape(3, 5), dtype=tl.float64)
    expected = declared_function(spelling.name)(x)
    assert np.array_equal(module(x).numpy(), expected.numpy())


@pytest.mark.parametrize("spelling", [s for s in DECLARED if s.function or s.functional],
                         ids=[s.name for s in DECLARED if s.function or s.functional])
def test_a_function_form_names_what_it_did_not_get(spelling):
    function = getattr(tl, spelling.name, None) or getattr(F, spelling.name)
    if function is declared_function(spelling.name):
        pytest.skip(f"{spelling.name} takes numbers as well as tensors")
    with pytest.raises(TypeError, match=f"{spelling.name} input must be a Tensor, got list"):
        function([1.0, 2.0])


def test_every_method_written_in_the_methods_modules_is_declared_or_a_dunder():
    undeclared = sorted(
        name for name, value in vars(tl.Tensor).items()
        if any(value is vars(module).get(getattr(value, "__name__", ""))
               for module in MODULES)
        and not name.startswith("__") and name not in SPELLINGS
        and name not in ("astype", "where", "copy_", "add_", "mul_", "fill_", "zero_",
                         "requires_grad_"))
    assert undeclared == []
