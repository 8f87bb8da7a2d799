r"""Recording what a model computes inside, through its :class:`~tensorlib.nn.HookPoint`\ s.

``capture_activations(model)`` registers a forward hook on every HookPoint of ``model`` for
the duration of a ``with`` block and keeps a host copy of each value that passes. Outside
the block there are no hooks, so a forward pass does no extra work (the attention
probabilities, for one, are then not even computed by the fused attention).

A :class:`~tensorlib.nn.Decoder`'s HookPoints (names relative to ``model``; a Decoder nested
at ``decoder`` gives ``decoder.embedding``):

- ``embedding``: token plus position embedding, ``(B, T, C)``;
- ``blocks.<i>.attention.probabilities``: block i's attention probabilities,
  ``(B, H, T, T_total)``;
- ``blocks.<i>.residual_attention``: the residual stream after the attention branch,
  ``(B, T, C)``;
- ``blocks.<i>.residual_mlp``: the residual stream after the MLP branch (the block's
  output), ``(B, T, C)``.

With ``keep_graph=True`` the capture keeps the Tensors themselves instead of host copies, each
with ``retain_grad()``: after a backward pass through the model's output, ``capture[name].grad``
holds d loss / d value (:func:`tensorlib.viz.record_activations` is built on this).

Here ``T`` is the number of positions the pass computes and ``T_total`` the number it
attends over: equal for an ordinary forward pass; during cached generation
(:meth:`Decoder.generate` with ``use_cache=True``) the prefill pass records the prompt
(``T = T_total = prompt length``) and each later step records only the newest position
(``T = 1``, ``T_total`` = the sequence length so far). Steps after the sequence outgrows
the context window recompute the whole window and record it (``T = T_total =
context_length``).
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from tensorlib.engine import validation
from tensorlib.engine.backend import to_numpy
from tensorlib.engine.tensor import Tensor
from tensorlib.nn.layers import HookPoint
from tensorlib.nn.module import Module, check_module

__all__ = ["ActivationCapture", "capture_activations"]

# The modules some capture is recording now: a second capture of them is refused.
_capturing: weakref.WeakSet[Module] = weakref.WeakSet()


class ActivationCapture:
    """What :func:`capture_activations` recorded.

    ``passes`` holds one dict per forward pass of the model (a full forward pass, a
    generation prefill, or one cached generation step), mapping names to numpy copies (to
    the Tensors themselves with ``keep_graph``), in the order they were computed. A pass ends
    when a name it already holds is recorded again.
    """

    def __init__(self, keep_graph: bool = False, latest_only: bool = False) -> None:
        self.keep_graph = keep_graph
        self.latest_only = latest_only
        self.passes: list[dict[str, Any]] = []

    def _record(self, name: str, tensor: Tensor) -> None:
        if not self.passes or name in self.passes[-1]:
            if self.latest_only:
                self.passes.clear()
            self.passes.append({})
        if self.keep_graph:
            if tensor.requires_grad:
                tensor.retain_grad()
            self.passes[-1][name] = tensor
        else:
            self.passes[-1][name] = to_numpy(tensor.numpy())  # a host copy

    @property
    def names(self) -> list[str]:
        """Every recorded name, in the order first recorded."""
        seen: dict[str, None] = {}
        for record in self.passes:
            seen.update(dict.fromkeys(record))
        return list(seen)

    def __len__(self) -> int:
        """The number of forward passes recorded."""
        return len(self.passes)

    def __contains__(self, name: object) -> bool:
        return any(name in record for record in self.passes)

    def _check_name(self, name: str) -> None:
        if name not in self:
            raise KeyError(f"nothing recorded under {name!r}; recorded names: {self.names}")

    def __getitem__(self, name: str) -> Any:
        """The array (Tensor with ``keep_graph``) recorded under ``name`` by the latest pass
        that recorded it."""
        self._check_name(name)
        return next(record[name] for record in reversed(self.passes) if name in record)

    def arrays(self, name: str) -> list[np.ndarray]:
        """The arrays recorded under ``name``, one per pass, oldest first (host copies, also
        with ``keep_graph``)."""
        self._check_name(name)
        return [to_numpy(record[name].numpy()) if self.keep_graph else record[name]
                for record in self.passes if name in record]

    def attention_map(self, name: str = "blocks.0.attention.probabilities") -> np.ndarray:
        """Join the attention rows of the passes over one growing sequence (a prefill and
        the cached steps after it) into one ``(B, H, N, N)`` map; zero above the diagonal.

        Each pass's probabilities ``(B, H, T, T_total)`` are the rows of positions
        ``T_total - T .. T_total - 1``. Raises ValueError when the passes do not continue
        one another (separate forward passes, or steps after the window slid: read those
        one by one with :meth:`arrays`).
        """
        pieces = self.arrays(name)
        if pieces[0].ndim != 4:
            raise ValueError(f"{name!r} holds arrays of shape {pieces[0].shape}, not attention "
                             "probabilities (B, H, T, T_total)")
        rows = 0
        for index, piece in enumerate(pieces):
            first = piece.shape[-1] - piece.shape[-2]  # position of this pass's first query
            if first != rows or piece.shape[:2] != pieces[0].shape[:2]:
                raise ValueError(f"pass {index} of {name!r} (shape {piece.shape}) does not "
                                 f"continue the {rows} positions before it")
            rows += piece.shape[-2]
        batch, heads = pieces[0].shape[:2]
        joined = np.zeros((batch, heads, rows, rows), dtype=pieces[0].dtype)  # (B, H, N, N)
        for piece in pieces:
            total = piece.shape[-1]
            joined[:, :, total - piece.shape[-2]:total, :total] = piece
        return joined

    def __repr__(self) -> str:
        return f"ActivationCapture({len(self)} passes, names={self.names})"


def _watched_modules(model: Any, modules: Any) -> list[tuple[str, Module]]:
    check_module(model, "capture_activations' model")
    kinds = modules if isinstance(modules, tuple) else (modules,)
    if not kinds or not all(isinstance(kind, type) and issubclass(kind, Module)
                            for kind in kinds):
        raise TypeError(f"modules must be a Module class or a tuple of them, got {modules!r}")
    found = [(name, module) for name, module in model.named_modules()
             if isinstance(module, kinds)]
    if not found:
        wanted = " or ".join(kind.__name__ for kind in kinds)
        raise TypeError(f"capture_activations found no {wanted} in this "
                        f"{type(model).__name__} (a Decoder has HookPoints)")
    busy = [name or "(root)" for name, module in found if module in _capturing]
    if busy:
        raise RuntimeError(f"activations of {', '.join(busy)} are already being captured")
    return found


@contextmanager
def capture_activations(model: Module, keep_graph: bool = False,
                        modules: type[Module] | tuple[type[Module], ...] = HookPoint,
                        training_only: bool = False,
                        latest_only: bool = False) -> Iterator[ActivationCapture]:
    """Record the output of every HookPoint of ``model`` (or every submodule of the class or
    classes ``modules``, such as ``Tanh``) in each forward pass inside the ``with`` block
    (see the module docstring for a Decoder's names).

    ``keep_graph=True`` keeps the Tensors (with ``retain_grad()``) instead of host copies.
    ``training_only=True`` skips the values a module computes in eval mode (a validation
    pass during training). ``latest_only=True`` keeps only the latest pass, so a capture held
    over a whole training run does not grow. The hooks are removed on leaving the block,
    also when an exception leaves it. Capturing modules that another capture is recording
    raises RuntimeError.
    """
    keep_graph = validation.boolean(keep_graph, "keep_graph")
    training_only = validation.boolean(training_only, "training_only")
    latest_only = validation.boolean(latest_only, "latest_only")
    watched = _watched_modules(model, modules)
    capture = ActivationCapture(keep_graph, latest_only)
    handles = []
    try:
        for name, module in watched:
            _capturing.add(module)
            handles.append(module.register_forward_hook(_recorder(capture, name, training_only)))
        yield capture
    finally:
        for handle in handles:
            handle.remove()
        for _, module in watched:
            _capturing.discard(module)


def _recorder(capture: ActivationCapture, name: str, training_only: bool) -> Any:
    """The forward hook that records ``name``'s value into ``capture``."""
    def hook(module: Module, inputs: tuple[Any, ...], output: Tensor) -> None:
        if module.training or not training_only:
            capture._record(name, output)

    return hook
