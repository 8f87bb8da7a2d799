"""The checks of notebook 12d (recurrent networks): its two pieces on the vanilla RNN,
``rnn_cell`` and ``rnn_bptt``, and its three exercises, ``rnn_parameter_count``,
``set_forget_bias`` and ``last_states`` (the gated cells, ``gru_cell`` and ``lstm_cell``, are
checked in :mod:`tensorlib.course.checks.recurrent_gates`).

``rnn_cell`` is compared with ``nn.RNNCell`` holding the learner's weights, on rows chosen to
expose the usual slips (a batch, non-zero biases, float32, saturating weights, a second call
that uses the weights twice): the shape and dtype, the values (what each slip gives is
computed here: a weight not transposed, a bias left out, no tanh or another squashing, the
state ignored or added after the tanh), then, after one backward pass with an upstream
gradient that is not uniform, every gradient. ``rnn_bptt`` is compared with autograd through
``F.rnn_layer``: the gradient of every state (the learner's carry from later steps; the slips
named: no carry, the carry without tanh's derivative or through W_hh's transpose, the loop
run forwards), of h0 and of both weights (h_t for h_{t-1}, the state before the first step
taken from the end). The exercises are compared with ``num_parameters()`` of the package's
RNN, GRU and LSTM, with the biases of an LSTM after the learner's call, and with each padded
name's final state computed on the name alone.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

import numpy as np

import tensorlib as tl
import tensorlib.nn.functional as F
from tensorlib.course.checks.differences import grad_array
from tensorlib.course.checks.registry import HandOn, exercise_check, piece_check
from tensorlib.course.exercises import Checker
from tensorlib.engine.splitmix64 import Rng
from tensorlib.nn import GRU, LSTM, RNN, RNNCell

__all__ = ["check_rnn_cell", "check_rnn_bptt", "check_rnn_parameter_count",
           "check_set_forget_bias", "check_last_states", "package_rnn_cell",
           "package_rnn_bptt", "CUT", "FLOAT64_RESULT", "TRANSPOSED", "tolerances", "result",
           "gradients", "leaves", "loaded_cell"]


# ---------------------------------------------------------------------------- shared steps
CUT = ("the graph was cut: a numpy step (.numpy(), np.*, tl.tensor of an array) or a "
       ".detach() in place of a tensor operation, so no gradient flows back")
# float64 arrays promote a float32 computation to float64, as in PyTorch: a dtype slip
FLOAT64_RESULT = {"a float64 array met a float32 tensor, and the result became float64 (as in "
                  "PyTorch): make what you build in x's dtype, tl.tensor(array, "
                  "dtype=x.dtype)": np.dtype(np.float64)}
TRANSPOSED = {"not aligned": "a weight used as it is stored: PyTorch keeps weight_ih as "
              "(G·H, I) and weight_hh as (G·H, H), so multiply by the transpose "
              "(x @ weight_ih.transpose(), h @ weight_hh.transpose())"}


def tolerances(dtype: Any) -> tuple[float, float]:
    return (1e-4, 1e-5) if np.dtype(dtype) == np.float32 else (1e-9, 1e-11)


def result(checker: Checker, received: Any, shape: tuple[int, ...], dtype: Any,
           what: str) -> None:
    """``received`` is a Tensor of ``shape`` and ``dtype``."""
    checker.true(isinstance(received, tl.Tensor), f"{what} is a {type(received).__name__}, "
                 "not a tensorlib Tensor", "None where a tensor is expected: a missing "
                 "return?" if received is None else "build it from tensor operations, so "
                 "that autograd gives its gradient")
    checker.shape(received, shape, what)
    checker.equal(np.dtype(received.dtype), np.dtype(dtype), f"{what}'s dtype",
                  FLOAT64_RESULT if np.dtype(dtype) != np.float64 else None)
    checker.true(received.requires_grad, f"{what} carries no gradient (requires_grad is "
                 "False)", CUT)


def gradients(checker: Checker, names: list[str], received: list[Any], expected: list[Any],
              dtype: Any) -> None:
    """Each gradient is there and close to the expected one."""
    rtol, atol = tolerances(dtype)
    for name, mine, theirs in zip(names, received, expected, strict=True):
        checker.true(mine is not None, f"{name} is None after backward", CUT)
        checker.close(mine, theirs, name, rtol=rtol, atol=atol)


def leaves(*arrays: np.ndarray) -> list[tl.Tensor]:
    return [tl.tensor(array, requires_grad=True) for array in arrays]


def loaded_cell(kind: type, arrays: list[np.ndarray], dtype: Any) -> Any:
    """A cell of ``kind`` (RNNCell, GRUCell, LSTMCell) holding ``arrays``: weight_ih,
    weight_hh, bias_ih, bias_hh."""
    rows, width = arrays[0].shape
    cell = kind(width, arrays[1].shape[1], rng=Rng(0), dtype=dtype)
    with tl.no_grad():
        for name, array in zip(("weight_ih", "weight_hh", "bias_ih", "bias_hh"), arrays,
                               strict=True):
            getattr(cell, name).data[...] = array
    return cell


def _draw(draw: Rng, shape: tuple[int, ...], scale: float = 1.0) -> np.ndarray:
    return draw.normal(size=shape, dtype=np.float64) * scale


def _weights(draw: Rng, gates: int, inputs: int, hidden: int,
             scale: float = 1.0) -> list[np.ndarray]:
    """weight_ih (G·H, I), weight_hh (G·H, H), bias_ih, bias_hh (G·H,), about PyTorch's
    size times ``scale``."""
    size = scale / np.sqrt(hidden)
    return [_draw(draw, (gates * hidden, inputs), size), _draw(draw, (gates * hidden, hidden),
                                                               size),
            _draw(draw, (gates * hidden,), 0.5), _draw(draw, (gates * hidden,), 0.5)]


# ---------------------------------------------------------------------------------- rnn_cell
def package_rnn_cell(x: tl.Tensor, h: tl.Tensor, weight_ih: tl.Tensor, weight_hh: tl.Tensor,
                     bias_ih: tl.Tensor, bias_hh: tl.Tensor) -> tl.Tensor:
    """One step of ``F.rnn_layer`` (what nn.RNNCell runs), as the notebook's ``rnn_cell``."""
    _, final = F.rnn_layer(x.unsqueeze(0), h, weight_ih, weight_hh, bias_ih, bias_hh)
    return final


def _rnn_slips(steps: list[np.ndarray], h: np.ndarray, w: list[np.ndarray]) -> dict[str, Any]:
    """What the usual slips of rnn_cell give after the steps ``steps`` (each x (B, I))."""
    wih, whh, bih, bhh = w

    def run(step: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[[], np.ndarray]:
        def unrolled() -> np.ndarray:
            state = h
            for x in steps:
                state = step(x, state)
            return state
        return unrolled

    def inner(x: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return x @ wih.T + bih, s @ whh.T + bhh
    sigmoid = lambda a: 1 / (1 + np.exp(-a))  # noqa: E731
    return {
        "weight_hh used as it is stored: h @ weight_hh.transpose(), as for weight_ih":
            run(lambda x, s: np.tanh(x @ wih.T + bih + s @ whh + bhh)),
        "bias_hh left out: both biases are added, bias_ih and bias_hh":
            run(lambda x, s: np.tanh(x @ wih.T + bih + s @ whh.T)),
        "bias_ih left out: both biases are added, bias_ih and bias_hh":
            run(lambda x, s: np.tanh(x @ wih.T + s @ whh.T + bhh)),
        "no biases: add bias_ih and bias_hh": run(lambda x, s: np.tanh(x @ wih.T + s @ whh.T)),
        "the tanh missing: h' = tanh(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh)":
            run(lambda x, s: np.add(*inner(x, s))),
        "sigmoid where tanh goes: the vanilla RNN squashes with tanh, into (-1, 1)":
            run(lambda x, s: sigmoid(np.add(*inner(x, s)))),
        "relu where tanh goes (that is nonlinearity='relu'): the default is tanh":
            run(lambda x, s: np.maximum(np.add(*inner(x, s)), 0)),
        "the state's part added after the tanh: tanh takes the sum of both parts":
            run(lambda x, s: np.tanh(inner(x, s)[0]) + inner(x, s)[1]),
        "the previous state ignored: h' = tanh(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh) reads h":
            run(lambda x, s: np.tanh(inner(x, s)[0] + bhh)),
        "h added as it is (h + ...): the state enters through h @ weight_hh.transpose()":
            run(lambda x, s: np.tanh(inner(x, s)[0] + s + bhh)),
    }


_RNN_HINT = ("tanh(x @ weight_ih.transpose() + bias_ih + h @ weight_hh.transpose() + "
             "bias_hh)")
_RNN_CASES = [  # what, batch, input, hidden, dtype, steps, weight scale
    ("one row, I = 3, H = 2", 1, 3, 2, np.float64, 1, 1.0),
    ("a batch of 4 rows, I = 5, H = 3, biases that are not zero", 4, 5, 3, np.float64, 1,
     1.0),
    ("float32 in, float32 out: B = 3, I = 6, H = 4", 3, 6, 4, np.float32, 1, 1.0),
    ("large weights (3 times PyTorch's size): tanh saturates near ±1", 2, 3, 5, np.float64,
     1, 3.0),
    ("a second call on the first one's state: h2 = rnn_cell(x2, rnn_cell(x1, h0, ...), ...),"
     " the weights used twice", 3, 4, 5, np.float64, 2, 1.0),
]


@piece_check("rnn_cell", yours="rnn_cell", package_name="tensorlib's (nn.RNNCell)")
def check_rnn_cell(checker: Checker, rnn_cell: Callable[..., Any]) -> HandOn:
    """``rnn_cell(x, h, weight_ih, weight_hh, bias_ih, bias_hh)`` against nn.RNNCell holding
    the same weights, on five inputs (a batch, float32, saturating weights, a second call):
    the shape and dtype, the values, then the gradients of x, h and the four parameters."""
    draw = Rng(1241)
    for what, batch, inputs, hidden, dtype, steps, scale in _RNN_CASES:
        with checker.case(what, hint=_RNN_HINT):
            w = _weights(draw, 1, inputs, hidden, scale)
            xs = [_draw(draw, (batch, inputs)) for _ in range(steps)]
            h = _draw(draw, (batch, hidden), 0.5)
            upstream = _draw(draw, (batch, hidden)).astype(dtype)
            mine = leaves(*[a.astype(dtype) for a in [*xs, h, *w]])
            cell = loaded_cell(RNNCell, [a.astype(dtype) for a in w], dtype)
            theirs = leaves(*[a.astype(dtype) for a in [*xs, h]])
            state, expected = mine[steps], theirs[steps]
            with checker.named_errors(TRANSPOSED):
                for x in mine[:steps]:
                    state = rnn_cell(x, state, *mine[steps + 1:])
            for x in theirs[:steps]:
                expected = cell(x, expected)
            result(checker, state, (batch, hidden), dtype, "rnn_cell(x, h, ...)")
            rtol, atol = tolerances(dtype)
            checker.close(state, expected, "rnn_cell(x, h, ...)", rtol=rtol, atol=atol,
                          mistakes=_rnn_slips(xs, h, w))
            (state * upstream).sum().backward()
            (expected * upstream).sum().backward()
            names = [f"x{index + 1 if steps > 1 else ''}'s gradient" for index in range(steps)]
            gradients(checker, [*names, "h's gradient", "weight_ih's gradient",
                                "weight_hh's gradient", "bias_ih's gradient",
                                "bias_hh's gradient"], [t.grad for t in mine],
                      [t.grad for t in theirs] + [getattr(cell, name).grad for name in
                                                  ("weight_ih", "weight_hh", "bias_ih",
                                                   "bias_hh")], dtype)
    return HandOn(rnn_cell, package_rnn_cell)


# ---------------------------------------------------------------------------------- rnn_bptt
def package_rnn_bptt(xs: np.ndarray, h0: np.ndarray, weight_ih: np.ndarray,
                     weight_hh: np.ndarray, states: np.ndarray,
                     grad_outputs: np.ndarray) -> tuple[np.ndarray, ...]:
    """Backpropagation through time for a tanh RNN, in numpy, as the notebook's
    ``rnn_bptt``: (grad_states, grad_h0, grad_weight_ih, grad_weight_hh). The check holds
    the learner's version, and so this loop, to autograd through ``F.rnn_layer``."""
    grad_states = np.zeros_like(states)
    grad_weight_ih, grad_weight_hh = np.zeros_like(weight_ih), np.zeros_like(weight_hh)
    carried = np.zeros_like(h0)                          # dL/dh_t from the steps after t
    for t in range(len(xs) - 1, -1, -1):
        grad_states[t] = grad_outputs[t] + carried
        grad_pre = grad_states[t] * (1 - states[t] ** 2)   # through tanh: (B, H)
        previous = states[t - 1] if t > 0 else h0
        grad_weight_ih += grad_pre.T @ xs[t]
        grad_weight_hh += grad_pre.T @ previous
        carried = grad_pre @ weight_hh
    return grad_states, carried, grad_weight_ih, grad_weight_hh


def _autograd_bptt(xs: np.ndarray, h0: np.ndarray, w: list[np.ndarray],
                   grad_outputs: np.ndarray) -> tuple[np.ndarray, ...]:
    """The states and (grad_states, grad_h0, grad_weight_ih, grad_weight_hh, grad_pre) by
    autograd through F.rnn_layer. The gradient of each step's pre-activation comes from a
    second run whose input weight is the identity: its input is the input's part of the
    pre-activation, so that input's gradient is the pre-activation's."""
    wih, whh, bih, bhh = w
    x_t, h0_t, wih_t, whh_t = leaves(xs, h0, wih, whh)
    states, _ = F.rnn_layer(x_t, h0_t, wih_t, whh_t, tl.tensor(bih), tl.tensor(bhh))
    (states * grad_outputs).sum().backward()
    (part,) = leaves(xs @ wih.T + bih + bhh)
    again, _ = F.rnn_layer(part, tl.tensor(h0), tl.tensor(np.eye(len(whh))), tl.tensor(whh))
    (again * grad_outputs).sum().backward()
    grad_pre = grad_array(part)
    later = np.concatenate([grad_pre[1:] @ whh, np.zeros_like(h0)[None]])
    return (states.numpy(), grad_outputs + later, grad_array(h0_t), grad_array(wih_t),
            grad_array(whh_t), grad_pre)


def _bptt_slips(xs: np.ndarray, h0: np.ndarray, whh: np.ndarray, states: np.ndarray,
                grad_outputs: np.ndarray, grad_pre: np.ndarray) -> dict[str, dict[str, Any]]:
    """What the usual slips give, for each of the four results."""
    steps = len(xs)
    derivative = 1 - states ** 2

    def carried(through: Callable[[np.ndarray, np.ndarray], np.ndarray],
                forwards: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """grad_states and grad_h0 with the carry ``through`` a step."""
        total, carry = np.zeros_like(states), np.zeros_like(h0)
        for t in (range(steps) if forwards else range(steps - 1, -1, -1)):
            total[t] = grad_outputs[t] + carry
            carry = through(total[t], states[t])
        return total, carry
    carries = {
        "the carry skips tanh's derivative: multiply by (1 - h_t²) before @ weight_hh":
            carried(lambda g, h: g @ whh),
        "the carry goes through weight_hh's transpose: h_t feeds step t + 1 as "
        "h_t @ W_hhᵀ, so its gradient is grad_pre @ weight_hh":
            carried(lambda g, h: (g * (1 - h ** 2)) @ whh.T),
        "tanh's derivative taken as 1 - tanh(h_t)²: the states are tanh's outputs "
        "already, so it is 1 - h_t²": carried(lambda g, h: (g * (1 - np.tanh(h) ** 2)) @ whh),
        "the loop runs forwards: the gradient flows back from the last step, "
        "range(T - 1, -1, -1)": carried(lambda g, h: (g * (1 - h ** 2)) @ whh, forwards=True)}
    previous = np.concatenate([h0[None], states[:-1]])
    wrapped = np.concatenate([states[-1:], states[:-1]])
    return {
        "grad_states": {
            "nothing carried from the later steps: each state's gradient also comes back "
            "from step t + 1, through its tanh and W_hh (carried = grad_pre @ weight_hh)":
                grad_outputs} | {text: pair[0] for text, pair in carries.items()},
        "grad_h0": {
            "grad_h0 is grad_states[0]: h0 feeds step 0, so its gradient is step 0's "
            "grad_pre @ weight_hh": grad_outputs[0] + (grad_pre[1:2] @ whh)[0]
            if steps > 1 else grad_outputs[0]} | {text: pair[1] for text, pair in
                                                  carries.items()},
        "grad_weight_hh": {
            "the state before step 0 is states[-1] (the last one): it is h0": np.einsum(
                "tbi,tbj->ij", grad_pre, wrapped),
            "h_t in place of h_{t-1}: step t multiplies the state before it, so "
            "grad_weight_hh += grad_pre[t].T @ h_{t-1}": np.einsum("tbi,tbj->ij", grad_pre,
                                                                   states),
            "grad_weight_hh transposed: weight_hh is (H_out, H_in), its gradient "
            "grad_pre[t].T @ h_{t-1}": np.einsum("tbi,tbj->ji", grad_pre, previous),
            "step 0 left out: it multiplies h0, so it adds grad_pre[0].T @ h0 too": np.einsum(
                "tbi,tbj->ij", grad_pre[1:], previous[1:]),
            "grad_states used where grad_pre goes: multiply by (1 - h_t²) first":
                np.einsum("tbi,tbj->ij", grad_pre / derivative, previous)},
        "grad_weight_ih": {
            "grad_states used where grad_pre goes: multiply by (1 - h_t²) first":
                np.einsum("tbi,tbj->ij", grad_pre / derivative, xs)},
    }


_BPTT_HINT = ("from t = T - 1 down to 0: grad_states[t] = grad_outputs[t] + carried; "
              "grad_pre = grad_states[t] * (1 - states[t]**2); carried = grad_pre @ weight_hh")
_BPTT_CASES = [  # what, steps, batch, input, hidden, only the last step's loss
    ("T = 5 steps, B = 3, I = 4, H = 6, a loss at every step", 5, 3, 4, 6, False),
    ("one step (T = 1): nothing to carry", 1, 2, 3, 4, False),
    ("the last step's loss only (grad_outputs zero before it), T = 8", 8, 2, 3, 5, True),
    ("one row, T = 4, I = 2, H = 3, h0 not zero", 4, 1, 2, 3, False),
]
_BPTT_ERRORS = {
    "not aligned": "a product with its operands the wrong way round: grad_pre is (B, H); "
                   "grad_pre.T @ h_{t-1} and grad_pre.T @ x_t give the weights' gradients, "
                   "grad_pre @ weight_hh the carry",
    "could not be broadcast": "arrays of shapes that do not fit added together: a weight's "
                              "gradient has its weight's shape, grad_pre.T @ x_t (H, I) and "
                              "grad_pre.T @ h_{t-1} (H, H); a state's is (B, H)"}
_BPTT_SHAPES = {"grad_states": "(T, B, H)", "grad_h0": "(B, H)", "grad_weight_ih": "(H, I)",
                "grad_weight_hh": "(H, H)"}


@piece_check("rnn_bptt", yours="rnn_bptt", package_name="the workbook's own loop")
def check_rnn_bptt(checker: Checker, rnn_bptt: Callable[..., Any]) -> HandOn:
    """``rnn_bptt(xs, h0, weight_ih, weight_hh, states, grad_outputs)`` (numpy, float64)
    against autograd through F.rnn_layer on four sequences (one step, a loss at every step,
    at the last step only, one row): the four results' shapes, then grad_states, grad_h0,
    grad_weight_hh and grad_weight_ih."""
    draw = Rng(1242)
    for what, steps, batch, inputs, hidden, last_only in _BPTT_CASES:
        with checker.case(what, hint=_BPTT_HINT):
            w = _weights(draw, 1, inputs, hidden, 1.5)
            xs, h0 = _draw(draw, (steps, batch, inputs)), _draw(draw, (batch, hidden), 0.5)
            grad_outputs = _draw(draw, (steps, batch, hidden))
            if last_only:
                grad_outputs[:-1] = 0.0
            states, *expected, grad_pre = _autograd_bptt(xs, h0, w, grad_outputs)
            with checker.named_errors(_BPTT_ERRORS):
                received = rnn_bptt(xs.copy(), h0.copy(), w[0].copy(), w[1].copy(),
                                    states.copy(), grad_outputs.copy())
            checker.true(isinstance(received, (tuple, list)) and len(received) == 4,
                         f"rnn_bptt returned {type(received).__name__}"
                         + (f" of length {len(received)}" if isinstance(received, (tuple, list))
                            else "") + ", not 4 arrays",
                         "return grad_states, grad_h0, grad_weight_ih, grad_weight_hh")
            for name, mine, theirs in zip(_BPTT_SHAPES, received, expected, strict=True):
                checker.shape(mine, theirs.shape, f"{name} {_BPTT_SHAPES[name]}",
                              {f"{name} transposed: it has {name[5:]}'s shape": theirs.T}
                              if name.startswith("grad_weight") else None)
            slips = _bptt_slips(xs, h0, w[1], states, grad_outputs, grad_pre)
            for index in (0, 1, 3, 2):
                name = list(_BPTT_SHAPES)[index]
                checker.close(received[index], expected[index], name, rtol=1e-9, atol=1e-11,
                              mistakes=slips.get(name))
    return HandOn(rnn_bptt, package_rnn_bptt)


# ------------------------------------------------------------------------------ exercise 1
_MODULES = {"rnn": RNN, "gru": GRU, "lstm": LSTM}


def _count_slips(cell: str, inputs: int, hidden: int, layers: int,
                 both: bool) -> dict[str, int]:
    gates = {"rnn": 1, "gru": 3, "lstm": 4}[cell]
    directions = 2 if both else 1

    def count(gate: int = gates, biases: int = 2, later: int = directions * hidden,
              times: int = directions) -> int:
        first = gate * hidden * (inputs + hidden + biases)
        rest = gate * hidden * (later + hidden + biases)
        return times * (first + (layers - 1) * rest)
    slips = {"one bias vector per layer: PyTorch keeps two, bias_ih and bias_hh":
             count(biases=1),
             f"the gates not counted: a {cell.upper()} has {gates} blocks of H rows in each "
             "weight and bias": count(gate=1),
             "the layers after the first read input_size: they read the layer below, "
             "hidden_size numbers (2 · hidden_size when bidirectional)": count(later=inputs)}
    if both:
        slips |= {"bidirectional not doubled: each layer has a second, backward direction "
                  "with weights of its own": count(times=1),
                  "the layers after the first read hidden_size: a bidirectional layer "
                  "below gives 2 · hidden_size": count(later=hidden)}
    return slips


@exercise_check("Exercise 1 (rnn_parameter_count)", yours="rnn_parameter_count")
def check_rnn_parameter_count(checker: Checker,
                              rnn_parameter_count: Callable[..., Any]) -> None:
    """``rnn_parameter_count(cell, input_size, hidden_size, num_layers=1,
    bidirectional=False)`` against num_parameters() of the package's RNN, GRU and LSTM on
    seven sizes (the ladder's, stacked, bidirectional)."""
    hint = ("per layer and direction: G·H·(inputs + H + 2), G = 1, 3, 4 for rnn, gru, lstm; "
            "a layer after the first reads D·H inputs (D = 2 when bidirectional)")
    cases = [("rnn", 10, 20, 1, False), ("gru", 64, 225, 1, False),
             ("lstm", 64, 192, 1, False), ("lstm", 5, 7, 3, False), ("rnn", 3, 8, 1, True),
             ("gru", 6, 4, 2, True), ("lstm", 9, 3, 3, True)]
    for cell, inputs, hidden, layers, both in cases:
        what = (f"{cell}, input_size {inputs}, hidden_size {hidden}"
                + (f", {layers} layers" if layers > 1 else "")
                + (", bidirectional" if both else ""))
        with checker.case(what, hint=hint):
            received = (rnn_parameter_count(cell, inputs, hidden) if layers == 1 and not both
                        else rnn_parameter_count(cell, inputs, hidden, num_layers=layers,
                                                 bidirectional=both))
            module = _MODULES[cell](inputs, hidden, num_layers=layers, bidirectional=both,
                                    rng=Rng(0))
            checker.equal(received, module.num_parameters(), "parameters",
                          _count_slips(cell, inputs, hidden, layers, both))
            checker.true(isinstance(received, numbers.Integral)
                         and not isinstance(received, bool),
                         f"rnn_parameter_count returned {received!r}, a "
                         f"{type(received).__name__}, not an int",
                         "a float: / gives one; keep to *, + and //")


# ------------------------------------------------------------------------------ exercise 2
def _forget_slips(before: list[np.ndarray], hidden: int, value: float,
                  directions: int) -> dict[str, np.ndarray]:
    """The forget gates' total biases (bias_ih + bias_hh on rows [H:2H], each layer and
    direction in turn) as the usual slips leave them; ``before`` holds the biases in
    named_parameters' order (bias_ih, bias_hh of each layer and direction)."""
    rows = slice(hidden, 2 * hidden)

    def totals(set_rows: slice = rows, both: bool = False,
               which: Callable[[int], bool] = lambda pair: True) -> np.ndarray:
        out = []
        for pair in range(len(before) // 2):
            bias_ih, bias_hh = before[2 * pair].copy(), before[2 * pair + 1].copy()
            if which(pair):
                bias_ih[set_rows] = value
                bias_hh[set_rows] = value if both else 0.0
            out.append(bias_ih[rows] + bias_hh[rows])
        return np.concatenate(out)
    slips = {"the forget gates' rows left as they were (another gate's rows set?): "
             "PyTorch's gates are i, f, g, o, so the forget gate's rows are [H:2H]":
                 totals(set_rows=slice(0, hidden)),
             "both biases set to value: the gate adds bias_ih and bias_hh, so its bias is "
             "then 2 · value; set one to value and the other to 0": totals(both=True),
             "only the first layer set: every layer has its own biases, bias_ih_l{k} and "
             "bias_hh_l{k}": totals(which=lambda pair: pair < directions)}
    if directions == 2:
        slips["the backward direction's biases (bias_ih_l{k}_reverse, ...) left as they "
              "were"] = totals(which=lambda pair: pair % 2 == 0)
    return slips


@exercise_check("Exercise 2 (set_forget_bias)", yours="set_forget_bias")
def check_set_forget_bias(checker: Checker, set_forget_bias: Callable[..., Any]) -> None:
    """``set_forget_bias(lstm, value)`` on four nn.LSTMs (stacked, bidirectional, another
    value): the forget gates' total bias in every layer and direction, then every other
    number of every parameter unchanged, and the same Parameter objects (changed in place)."""
    hint = ("for each layer k and direction: bias_ih_l{k}[H:2H] = value and "
            "bias_hh_l{k}[H:2H] = 0, inside tl.no_grad(), in place")
    cases = [(3, 4, 1, False, 1.0), (2, 5, 2, False, 1.0), (3, 4, 2, True, 2.0),
             (2, 3, 1, True, -1.0)]
    for inputs, hidden, layers, both, value in cases:
        what = (f"LSTM({inputs}, {hidden}" + (f", num_layers={layers}" if layers > 1 else "")
                + (", bidirectional=True" if both else "") + f"), value {value:g}")
        with checker.case(what, hint=hint):
            lstm = LSTM(inputs, hidden, num_layers=layers, bidirectional=both,
                        rng=Rng(inputs * 10 + hidden), dtype=np.float64)
            named = dict(lstm.named_parameters())
            before = {name: p.numpy().copy() for name, p in named.items()}
            biases = [name for name in named if name.startswith("bias_")]
            set_forget_bias(lstm, value)
            after = dict(lstm.named_parameters())
            checker.true(all(after.get(name) is p for name, p in named.items()),
                         "the LSTM's parameters were replaced, not changed in place",
                         "write into the Parameter's numbers (bias.data[H:2 * H] = value "
                         "inside tl.no_grad()), so that an optimizer holding it sees them")
            rows = slice(hidden, 2 * hidden)
            totals = np.concatenate([named[name].numpy()[rows]
                                     + named[name.replace("_ih", "_hh")].numpy()[rows]
                                     for name in biases[::2]])
            checker.close(totals, np.full(len(totals), value),
                          "the forget gates' biases, bias_ih + bias_hh on rows [H:2H], each "
                          "layer and direction", rtol=0, atol=1e-12,
                          mistakes=_forget_slips([before[name] for name in biases], hidden,
                                                 value, 2 if both else 1))
            for name, parameter in named.items():
                kept, now = before[name].copy(), parameter.numpy().copy()
                if name.startswith("bias_"):
                    kept[rows] = now[rows] = 0.0
                checker.close(now, kept, f"{name} outside the forget gate's rows [H:2H]",
                              rtol=0, atol=0)


# ------------------------------------------------------------------------------ exercise 3
@exercise_check("Exercise 3 (last_states)", yours="last_states")
def check_last_states(checker: Checker, last_states: Callable[..., Any]) -> None:
    """``last_states(outputs, lengths)`` on the outputs of a GRU over right-padded batches:
    each row's state at its last real position, against the GRU's final state on that row
    alone, then the gradient (to those positions only)."""
    hint = "outputs[np.arange(B), lengths - 1]: row b's state after its lengths[b] real steps"
    cases = [("three names of lengths 4, 2 and 6, padded to 6", [4, 2, 6]),
             ("one row as long as the padding", [5]),
             ("lengths 1, 3, 3, 7, 2 (a row of one step)", [1, 3, 3, 7, 2])]
    gru = GRU(3, 4, batch_first=True, rng=Rng(1243), dtype=np.float64)
    draw = Rng(1244)
    for what, lengths in cases:
        with checker.case(what, hint=hint):
            batch, steps = len(lengths), max(lengths)
            x = _draw(draw, (batch, steps, 3))
            for row, length in enumerate(lengths):
                x[row, length:] = 0.0                                  # the padding
            outputs = tl.tensor(gru(tl.tensor(x))[0].numpy(), requires_grad=True)
            alone = np.stack([gru(tl.tensor(x[row:row + 1, :length]))[1].numpy()[0, 0]
                              for row, length in enumerate(lengths)])
            lengths_array = np.array(lengths)
            with checker.named_errors({"out of bounds": "an index one too far: a row of "
                                       "length L ends at position L - 1"}):
                received = last_states(outputs, lengths_array.copy())
            result(checker, received, (batch, 4), np.float64, "last_states(outputs, lengths)")
            held = outputs.numpy()
            checker.close(received, alone, "each row's state at its last real position",
                          rtol=1e-12, atol=1e-12, mistakes={
                              "the last position of the padded batch (outputs[:, -1]): a "
                              "shorter row is then read past its end, in its padding":
                              held[:, -1],
                              "one position early: a row of length L ends at L - 1, "
                              "counted from 0": held[np.arange(batch), np.maximum(
                                  lengths_array - 2, 0)]})
            upstream = _draw(draw, (batch, 4))
            (received * upstream).sum().backward()
            expected = np.zeros_like(held)
            expected[np.arange(batch), lengths_array - 1] = upstream
            checker.true(outputs.grad is not None, "outputs' gradient is None after backward",
                         CUT)
            checker.close(outputs.grad, expected, "outputs' gradient", rtol=1e-12, atol=0)
