"""One recurrent layer in one direction over a whole sequence: ``rnn_layer``, ``gru_layer``
and ``lstm_layer``, each one node of :mod:`tensorlib.engine.ops.recurrent`, and their
reference twin ``recurrent_layer_reference``, the same layer as a loop of cells built from
primitive ops (the chapter's version).

PyTorch keeps these inside ``nn.RNN``/``nn.GRU``/``nn.LSTM`` (no public functional form);
here they are what those modules call, and what a learner's cell is checked against. All
take time-major ``input (T, B, input_size)`` and states ``(B, hidden_size)``.
"""

from __future__ import annotations

from typing import Any

from tensorlib.engine import ops
from tensorlib.engine.factories import stack, zeros
from tensorlib.engine.tensor import Tensor
from tensorlib.nn.functional.arguments import _check_floating, _check_one_dtype

__all__ = ["GATES", "gru_layer", "lstm_layer", "recurrent_layer_reference", "rnn_layer"]

GATES = {"rnn_tanh": 1, "rnn_relu": 1, "gru": 3, "lstm": 4}  # blocks of hidden_size rows


def check_layer(kind: str, input: Any, states: tuple[Any, ...], weight_ih: Any,
                weight_hh: Any, bias_ih: Any, bias_hh: Any) -> None:
    """Clear errors naming the shapes: ``input (T, B, I)``, each state None or ``(B, H)``,
    ``weight_ih (G·H, I)``, ``weight_hh (G·H, H)``, biases None or ``(G·H,)``, one dtype."""
    _check_floating(input, f"{kind} input")
    _check_floating(weight_hh, f"{kind} weight_hh")
    _check_floating(weight_ih, f"{kind} weight_ih")
    if weight_hh.ndim != 2 or weight_hh.shape[0] != GATES[kind] * weight_hh.shape[1]:
        raise ValueError(f"{kind} weight_hh must be ({GATES[kind]}·hidden_size, hidden_size), "
                         f"got shape {weight_hh.shape}")
    rows, size = weight_hh.shape
    if weight_ih.ndim != 2 or weight_ih.shape[0] != rows:
        raise ValueError(f"{kind} weight_ih must be ({rows}, input_size), got shape "
                         f"{weight_ih.shape}")
    if input.ndim != 3 or input.shape[2] != weight_ih.shape[1]:
        raise ValueError(f"{kind}: input must be (T, B, {weight_ih.shape[1]}) "
                         f"(time, batch, input_size), got shape {input.shape}")
    if input.shape[0] == 0:
        raise ValueError(f"{kind}: the sequence must have at least one step, got input of "
                         f"shape {input.shape}")
    for name, bias in (("bias_ih", bias_ih), ("bias_hh", bias_hh)):
        if bias is not None:
            _check_floating(bias, f"{kind} {name}")
            if bias.shape != (rows,):
                raise ValueError(f"{kind} {name} must have shape ({rows},), got {bias.shape}")
    for state in states:
        if state is not None:
            _check_floating(state, f"{kind} state")
            if state.shape != (input.shape[1], size):
                raise ValueError(f"{kind}: a state must be (batch, hidden_size) = "
                                 f"({input.shape[1]}, {size}), got shape {state.shape}")
    _check_one_dtype(kind, input, *states, weight_ih, weight_hh, bias_ih, bias_hh)


def _last_read(outputs: Tensor, reverse: bool) -> Tensor:
    return outputs[0] if reverse else outputs[-1]


def rnn_layer(input: Tensor, hx: Tensor | None, weight_ih: Tensor, weight_hh: Tensor,
              bias_ih: Tensor | None = None, bias_hh: Tensor | None = None,
              nonlinearity: str = "tanh", reverse: bool = False) -> tuple[Tensor, Tensor]:
    """The Elman RNN over ``input (T, B, I)`` from ``hx (B, H)`` (None: zeros):
    ``(output (T, B, H), h_n (B, H))``."""
    if nonlinearity not in ("tanh", "relu"):
        raise ValueError(f"rnn nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")
    check_layer(f"rnn_{nonlinearity}", input, (hx,), weight_ih, weight_hh, bias_ih, bias_hh)
    output = ops.RNNLayer.apply(input, hx, weight_ih, weight_hh, bias_ih, bias_hh,
                                nonlinearity=nonlinearity, reverse=bool(reverse))
    return output, _last_read(output, reverse)


def gru_layer(input: Tensor, hx: Tensor | None, weight_ih: Tensor, weight_hh: Tensor,
              bias_ih: Tensor | None = None, bias_hh: Tensor | None = None,
              reverse: bool = False) -> tuple[Tensor, Tensor]:
    """The GRU over ``input (T, B, I)`` from ``hx (B, H)`` (None: zeros):
    ``(output (T, B, H), h_n (B, H))``."""
    check_layer("gru", input, (hx,), weight_ih, weight_hh, bias_ih, bias_hh)
    output = ops.GRULayer.apply(input, hx, weight_ih, weight_hh, bias_ih, bias_hh,
                                reverse=bool(reverse))
    return output, _last_read(output, reverse)


def lstm_layer(input: Tensor, hx: tuple[Tensor, Tensor] | None, weight_ih: Tensor,
               weight_hh: Tensor, bias_ih: Tensor | None = None, bias_hh: Tensor | None = None,
               reverse: bool = False) -> tuple[Tensor, tuple[Tensor, Tensor]]:
    """The LSTM over ``input (T, B, I)`` from ``hx = (h0, c0)``, each ``(B, H)`` (None:
    zeros): ``(output (T, B, H), (h_n, c_n))``."""
    h0, c0 = _pair(hx)
    check_layer("lstm", input, (h0, c0), weight_ih, weight_hh, bias_ih, bias_hh)
    states = ops.LSTMLayer.apply(input, h0, c0, weight_ih, weight_hh, bias_ih, bias_hh,
                                 reverse=bool(reverse))                    # (T + 1, B, H)
    steps = input.shape[0]
    output = states[:steps]
    return output, (_last_read(output, reverse), states[steps])


def _pair(hx: Any) -> tuple[Any, Any]:
    if hx is None:
        return None, None
    if not isinstance(hx, (tuple, list)) or len(hx) != 2:
        raise TypeError(f"lstm hx must be a pair (h0, c0) or None, got {type(hx).__name__}")
    return hx[0], hx[1]


def recurrent_layer_reference(kind: str, input: Tensor, hx: Any, weight_ih: Tensor,
                              weight_hh: Tensor, bias_ih: Tensor | None = None,
                              bias_hh: Tensor | None = None, reverse: bool = False) -> Any:
    """The primitive twin of ``rnn_layer``/``gru_layer``/``lstm_layer`` (``kind`` one of
    ``rnn_tanh``, ``rnn_relu``, ``gru``, ``lstm``): a Python loop of one cell per step, each
    made of matrix products, sigmoid and tanh, with the same arguments and returns."""
    if kind not in GATES:
        raise ValueError(f"kind must be one of {', '.join(GATES)}, got {kind!r}")
    first_hidden, first_cell = _pair(hx) if kind == "lstm" else (hx, None)
    check_layer(kind, input, (first_hidden, first_cell), weight_ih, weight_hh, bias_ih,
                bias_hh)
    size = weight_hh.shape[1]
    hidden = first_hidden if first_hidden is not None else _zeros_like_state(input, size)
    cell = first_cell if first_cell is not None else _zeros_like_state(input, size)
    steps = range(input.shape[0] - 1, -1, -1) if reverse else range(input.shape[0])
    outputs: dict[int, Tensor] = {}
    for t in steps:
        from_input = input[t] @ weight_ih.transpose()
        from_hidden = hidden @ weight_hh.transpose()
        if bias_ih is not None:
            from_input = from_input + bias_ih
        if bias_hh is not None:
            from_hidden = from_hidden + bias_hh
        if kind == "gru":
            reset = (from_input[:, :size] + from_hidden[:, :size]).sigmoid()
            update = (from_input[:, size:2 * size] + from_hidden[:, size:2 * size]).sigmoid()
            new = (from_input[:, 2 * size:] + reset * from_hidden[:, 2 * size:]).tanh()
            hidden = (1 - update) * new + update * hidden
        elif kind == "lstm":
            a = from_input + from_hidden
            i, f = a[:, :size].sigmoid(), a[:, size:2 * size].sigmoid()
            g, o = a[:, 2 * size:3 * size].tanh(), a[:, 3 * size:].sigmoid()
            cell = f * cell + i * g
            hidden = o * cell.tanh()
        else:
            a = from_input + from_hidden
            hidden = a.tanh() if kind == "rnn_tanh" else a.relu()
        outputs[t] = hidden
    output = stack([outputs[t] for t in range(input.shape[0])])
    if kind == "lstm":
        return output, (hidden, cell)
    return output, hidden


def _zeros_like_state(input: Tensor, size: int) -> Tensor:
    return zeros(input.shape[1], size, dtype=input.dtype)
