"""Recurrent layers as PyTorch's: RNN, GRU, LSTM over sequences and RNNCell, GRUCell,
LSTMCell for one step.

The same constructor arguments, parameter names and shapes, gate order and initialisation
as ``torch.nn``, so a ``state_dict`` moves between the two: layer ``k``'s
``weight_ih_l{k} (G·H, input)``, ``weight_hh_l{k} (G·H, H)``, ``bias_ih_l{k}`` and
``bias_hh_l{k} (G·H,)``, with ``_reverse`` after the name for a bidirectional layer's
backward direction; G is 1 (RNN), 3 (GRU: r, z, n) or 4 (LSTM: i, f, g, o); every
parameter starts uniform in ±1/√hidden_size. A cell has ``weight_ih``, ``weight_hh``,
``bias_ih`` and ``bias_hh``. Each layer and direction is one node of
:mod:`tensorlib.engine.ops.recurrent` (through :mod:`tensorlib.nn.functional.recurrent`); a
cell is that node over one step.

Deliberate differences (``docs/departures.md``, "Recurrent layers"): ``rng`` instead of
``device``; no ``PackedSequence`` (pad and mask instead); no ``proj_size`` for the LSTM.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from tensorlib.engine import validation
from tensorlib.engine.factories import cat, stack
from tensorlib.engine.splitmix64 import Rng, resolve_rng
from tensorlib.engine.tensor import Tensor
from tensorlib.nn import functional as F
from tensorlib.nn.functional.recurrent import GATES
from tensorlib.nn.init import fan_in_uniform
from tensorlib.nn.module import Module
from tensorlib.nn.parameter import Parameter

__all__ = ["GRU", "GRUCell", "LSTM", "LSTMCell", "RNN", "RNNBase", "RNNCell", "RNNCellBase"]


def _draw(shape: tuple[int, ...], hidden_size: int, generator: Rng, dtype: Any) -> Parameter:
    """U(±1/√hidden_size), PyTorch's initialisation of every recurrent parameter."""
    return Parameter(fan_in_uniform(shape, generator, hidden_size, dtype))


def _run_layer(kind: str, x: Tensor, state: Any, weights: list[Any],
               reverse: bool) -> tuple[Tensor, Any]:
    """One layer in one direction: ``(output (T, B, H), final state)``; ``weights`` are
    ``[weight_ih, weight_hh, bias_ih, bias_hh]``, the biases None when absent."""
    weight_ih, weight_hh, bias_ih, bias_hh = weights
    if kind == "gru":
        return F.gru_layer(x, state, weight_ih, weight_hh, bias_ih, bias_hh, reverse)
    if kind == "lstm":
        return F.lstm_layer(x, state, weight_ih, weight_hh, bias_ih, bias_hh, reverse)
    return F.rnn_layer(x, state, weight_ih, weight_hh, bias_ih, bias_hh, kind[4:], reverse)


class RNNBase(Module):
    """What RNN, GRU and LSTM share: ``num_layers`` stacked layers, each one or two
    directions, ``dropout`` on every layer's output but the last (in training).

    ``forward(input, hx=None)``: ``input (T, B, input_size)``, ``(B, T, input_size)`` with
    ``batch_first``, or ``(T, input_size)`` unbatched; ``hx (L·D, B, H)`` (or ``(L·D, H)``
    unbatched; a pair ``(h0, c0)`` for the LSTM), zeros when None. Returns ``output`` with
    ``D·H`` features in the input's layout and ``h_n`` like ``hx`` (the LSTM:
    ``(h_n, c_n)``), D = 2 when bidirectional, else 1.
    """

    def __init__(self, kind: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, rng: Rng | None = None,
                 dtype: Any = np.float32):
        super().__init__()
        name = type(self).__name__
        self.kind = kind
        self.input_size = validation.dimension(input_size, f"{name} input_size")
        self.hidden_size = validation.dimension(hidden_size, f"{name} hidden_size")
        self.num_layers = validation.dimension(num_layers, f"{name} num_layers")
        self.bias = validation.boolean(bias, f"{name} bias")
        self.batch_first = validation.boolean(batch_first, f"{name} batch_first")
        self.dropout = validation.probability(dropout, f"{name} dropout")
        self.bidirectional = validation.boolean(bidirectional, f"{name} bidirectional")
        if self.dropout > 0 and self.num_layers == 1:
            warnings.warn(f"{name}: dropout={self.dropout} acts between layers; with "
                          "num_layers=1 it does nothing", UserWarning, stacklevel=2)
        if rng is not None and not isinstance(rng, Rng):
            raise TypeError(f"{name} rng must be a tensorlib.Rng or None, got "
                            f"{type(rng).__name__}")
        self.rng = rng
        dtype = validation.float_dtype(dtype)
        generator = resolve_rng(rng)
        directions = 2 if self.bidirectional else 1
        rows = GATES[kind] * self.hidden_size
        self._flat_weights_names: list[str] = []
        for layer in range(self.num_layers):
            width = self.input_size if layer == 0 else directions * self.hidden_size
            for suffix in ("", "_reverse")[:directions]:
                shapes: dict[str, tuple[int, ...]] = {
                    f"weight_ih_l{layer}{suffix}": (rows, width),
                    f"weight_hh_l{layer}{suffix}": (rows, self.hidden_size)}
                if self.bias:
                    shapes[f"bias_ih_l{layer}{suffix}"] = (rows,)
                    shapes[f"bias_hh_l{layer}{suffix}"] = (rows,)
                for weight_name, shape in shapes.items():
                    setattr(self, weight_name, _draw(shape, self.hidden_size, generator, dtype))
                    self._flat_weights_names.append(weight_name)

    def flatten_parameters(self) -> None:
        """Nothing to do: PyTorch packs the weights into one block of GPU memory for cuDNN;
        here they are never scattered. Kept so that programs which call it run."""

    @property
    def all_weights(self) -> list[list[Parameter]]:
        """The parameters of each layer and direction, in PyTorch's order."""
        per = 4 if self.bias else 2
        flat = [getattr(self, name) for name in self._flat_weights_names]
        return [flat[i:i + per] for i in range(0, len(flat), per)]

    def _weights(self, layer: int, suffix: str) -> list[Any]:
        names = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")[:4 if self.bias else 2]
        found = [getattr(self, f"{name}_l{layer}{suffix}") for name in names]
        return found + [None] * (4 - len(found))

    def forward(self, input: Tensor, hx: Any = None) -> tuple[Tensor, Any]:
        name = type(self).__name__
        if not isinstance(input, Tensor):
            raise TypeError(f"{name} input must be a Tensor, got {type(input).__name__}")
        if input.ndim not in (2, 3) or input.shape[-1] != self.input_size:
            layout = "(B, T, input_size)" if self.batch_first else "(T, B, input_size)"
            raise ValueError(f"{name}: input must be {layout} or unbatched (T, input_size) "
                             f"with input_size={self.input_size}, got shape {input.shape}")
        batched = input.ndim == 3
        x = input if batched else input.unsqueeze(1)                 # (T, B, I) or (B, T, I)
        if batched and self.batch_first:
            x = x.transpose(0, 1)                                     # (T, B, I)
        directions = 2 if self.bidirectional else 1
        states = self._initial_states(hx, x.shape[1], batched, directions)
        finals: list[Any] = []
        for layer in range(self.num_layers):
            if layer > 0 and self.dropout > 0:
                x = F.dropout(x, self.dropout, training=self.training, rng=self.rng)
            outputs = []
            for direction, suffix in enumerate(("", "_reverse")[:directions]):
                index = layer * directions + direction
                output, final = _run_layer(self.kind, x, states[index],
                                           self._weights(layer, suffix), bool(direction))
                outputs.append(output)
                finals.append(final)
            x = outputs[0] if directions == 1 else cat(outputs, dim=2)  # (T, B, D·H)
        if batched and self.batch_first:
            x = x.transpose(0, 1)
        if not batched:
            x = x.squeeze(1)
        return x, self._final_states(finals, batched)

    def _initial_states(self, hx: Any, batch: int, batched: bool,
                        directions: int) -> list[Any]:
        """One state per layer and direction (None: zeros), from ``hx`` checked."""
        count = self.num_layers * directions
        if hx is None:
            return [None] * count
        if self.kind == "lstm":
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise TypeError(f"LSTM hx must be a pair (h0, c0) or None, got "
                                f"{type(hx).__name__}")
            h0, c0 = (self._checked_state(h, batch, batched, count, what)
                      for h, what in zip(hx, ("h0", "c0"), strict=True))
            return [(h0[i], c0[i]) for i in range(count)]
        state = self._checked_state(hx, batch, batched, count, "hx")
        return [state[i] for i in range(count)]

    def _checked_state(self, state: Any, batch: int, batched: bool, count: int,
                       what: str) -> Tensor:
        name = type(self).__name__
        if not isinstance(state, Tensor):
            raise TypeError(f"{name} {what} must be a Tensor, got {type(state).__name__}")
        expected = (count, batch, self.hidden_size) if batched else (count, self.hidden_size)
        if tuple(state.shape) != expected:
            raise ValueError(f"{name}: {what} must have shape {expected} (num_layers · "
                             f"directions, {'batch, ' if batched else ''}hidden_size), got "
                             f"{tuple(state.shape)}")
        return state if batched else state.unsqueeze(1)

    def _final_states(self, finals: list[Any], batched: bool) -> Any:
        def gathered(states: list[Tensor]) -> Tensor:
            joined = stack(states)                                     # (L·D, B, H)
            return joined if batched else joined.squeeze(1)
        if self.kind == "lstm":
            return (gathered([h for h, _ in finals]), gathered([c for _, c in finals]))
        return gathered(finals)

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            text += f", num_layers={self.num_layers}"
        if self.kind == "rnn_relu":
            text += ", nonlinearity='relu'"
        for option, default in (("bias", True), ("batch_first", False), ("dropout", 0.0),
                                ("bidirectional", False)):
            if getattr(self, option) != default:
                text += f", {option}={getattr(self, option)}"
        return text


class RNN(RNNBase):
    """The Elman RNN, PyTorch's ``nn.RNN``: h_t = tanh(x_t W_ihᵀ + b_ih + h_{t-1} W_hhᵀ +
    b_hh), or relu with ``nonlinearity='relu'``. See :class:`RNNBase` for the rest."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 nonlinearity: str = "tanh", bias: bool = True, batch_first: bool = False,
                 dropout: float = 0.0, bidirectional: bool = False, rng: Rng | None = None,
                 dtype: Any = np.float32):
        self.nonlinearity = validation.choice(nonlinearity, ("tanh", "relu"),
                                              "RNN nonlinearity")
        super().__init__(f"rnn_{self.nonlinearity}", input_size, hidden_size, num_layers,
                         bias, batch_first, dropout, bidirectional, rng, dtype)


class GRU(RNNBase):
    """The gated recurrent unit, PyTorch's ``nn.GRU`` (gates r, z, n). See
    :class:`RNNBase`."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, rng: Rng | None = None,
                 dtype: Any = np.float32):
        super().__init__("gru", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, rng, dtype)


class LSTM(RNNBase):
    """The long short-term memory, PyTorch's ``nn.LSTM`` (gates i, f, g, o); ``hx`` and the
    final state are pairs ``(h, c)``. See :class:`RNNBase`."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, rng: Rng | None = None,
                 dtype: Any = np.float32):
        super().__init__("lstm", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, rng, dtype)


# ======================================================================================= cells
class RNNCellBase(Module):
    """One step: ``forward(input, hx=None)`` with ``input (B, input_size)`` or unbatched
    ``(input_size,)`` and a state of the matching shape (zeros when None)."""

    def __init__(self, kind: str, input_size: int, hidden_size: int, bias: bool = True,
                 rng: Rng | None = None, dtype: Any = np.float32):
        super().__init__()
        name = type(self).__name__
        self.kind = kind
        self.input_size = validation.dimension(input_size, f"{name} input_size")
        self.hidden_size = validation.dimension(hidden_size, f"{name} hidden_size")
        self.bias = validation.boolean(bias, f"{name} bias")
        dtype = validation.float_dtype(dtype)
        generator = resolve_rng(rng)
        rows = GATES[kind] * self.hidden_size
        self.weight_ih = _draw((rows, self.input_size), self.hidden_size, generator, dtype)
        self.weight_hh = _draw((rows, self.hidden_size), self.hidden_size, generator, dtype)
        self.bias_ih: Parameter | None = _draw((rows,), self.hidden_size, generator, dtype) \
            if self.bias else None
        self.bias_hh: Parameter | None = _draw((rows,), self.hidden_size, generator, dtype) \
            if self.bias else None

    def _step(self, input: Tensor, hx: Any) -> Any:
        name = type(self).__name__
        if not isinstance(input, Tensor):
            raise TypeError(f"{name} input must be a Tensor, got {type(input).__name__}")
        if input.ndim not in (1, 2) or input.shape[-1] != self.input_size:
            raise ValueError(f"{name}: input must be (batch, {self.input_size}) or "
                             f"({self.input_size},), got shape {input.shape}")
        batched = input.ndim == 2
        x = (input if batched else input.unsqueeze(0)).unsqueeze(0)       # (1, B, I)
        states = hx if self.kind == "lstm" and hx is not None else (hx,)
        if self.kind == "lstm" and hx is not None and (
                not isinstance(hx, (tuple, list)) or len(hx) != 2):
            raise TypeError(f"LSTMCell hx must be a pair (h, c) or None, got "
                            f"{type(hx).__name__}")
        expected = (input.shape[0], self.hidden_size) if batched else (self.hidden_size,)
        for state in states:
            if state is not None and not isinstance(state, Tensor):
                raise TypeError(f"{name} hx must be a Tensor, got {type(state).__name__}")
            if state is not None and tuple(state.shape) != expected:
                raise ValueError(f"{name}: a state must have shape {expected}, got "
                                 f"{tuple(state.shape)}")
        states = tuple(s if s is None or batched else s.unsqueeze(0) for s in states)
        weights: list[Any] = [self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh]
        if self.kind == "lstm":
            first: Any = None if hx is None else states
        else:
            first = states[0]
        _, final = _run_layer(self.kind, x, first, weights, False)
        if self.kind == "lstm":
            return final if batched else (final[0].squeeze(0), final[1].squeeze(0))
        return final if batched else final.squeeze(0)

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        if not self.bias:
            text += ", bias=False"
        if self.kind == "rnn_relu":
            text += ", nonlinearity='relu'"
        return text


class RNNCell(RNNCellBase):
    """One step of the Elman RNN, PyTorch's ``nn.RNNCell``: returns h' ``(B, H)``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", rng: Rng | None = None, dtype: Any = np.float32):
        self.nonlinearity = validation.choice(nonlinearity, ("tanh", "relu"),
                                              "RNNCell nonlinearity")
        super().__init__(f"rnn_{self.nonlinearity}", input_size, hidden_size, bias, rng, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        return self._step(input, hx)


class GRUCell(RNNCellBase):
    """One step of the GRU, PyTorch's ``nn.GRUCell``: returns h' ``(B, H)``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 rng: Rng | None = None, dtype: Any = np.float32):
        super().__init__("gru", input_size, hidden_size, bias, rng, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        return self._step(input, hx)


class LSTMCell(RNNCellBase):
    """One step of the LSTM, PyTorch's ``nn.LSTMCell``: returns ``(h', c')``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 rng: Rng | None = None, dtype: Any = np.float32):
        super().__init__("lstm", input_size, hidden_size, bias, rng, dtype)

    def forward(self, input: Tensor,
                hx: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
        return self._step(input, hx)

