"""Running a model in evaluation mode for a while, and putting every module's mode back."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tensorlib.engine.autograd import no_grad
from tensorlib.nn.module import Module


@contextmanager
def evaluation_mode(model: Any) -> Iterator[Any]:
    """Inside the ``with`` block every module of ``model`` is in eval mode (dropout off) and
    no graph is recorded; on leaving it, also through an exception, each module gets back
    the mode it had, so a model that was half in eval mode stays so. Anything that is not a
    Module (a plain function, say) runs as it is, under ``no_grad`` only."""
    modules = model.modules() if isinstance(model, Module) else []
    modes = [(module, module.training) for module in modules]
    for module in modules:
        module.training = False
    try:
        with no_grad():
            yield model
    finally:
        for module, mode in modes:
            module.training = mode
