"""The checks of notebook 12d's gated cells, ``gru_cell`` and ``lstm_cell`` (its other checks
are in :mod:`tensorlib.course.checks.recurrent_nets`).

Each is compared with the package's cell (``nn.GRUCell``, ``nn.LSTMCell``) holding the
learner's weights, on rows chosen to expose the usual slips (a batch, non-zero biases,
float32, large weights, a second call on the first one's state): the shape and dtype, the
values, then, after one backward pass with an upstream gradient that is not uniform, the
gradients of the input, the state and the four parameters. What each usual slip gives is
computed here in float64, so that a report names the learner's: for the GRU, the gates in
another order, the reset applied before W_hn ("reset before", the original GRU and Keras'
``reset_after=False``) or without b_hn, z and 1 - z swapped, a sigmoid or a tanh in the
wrong place; for the LSTM, the gates in another order, the cell not carried, o applied to
the cell instead of its tanh, the new state read from the old cell, sigmoid and tanh swapped,
the pair returned as (c, h).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import tensorlib.nn.functional as F
from tensorlib.course.checks.recurrent_nets import (
    TRANSPOSED,
    gradients,
    leaves,
    loaded_cell,
    result,
    tolerances,
)
from tensorlib.course.checks.registry import HandOn, piece_check
from tensorlib.course.exercises import Checker
from tensorlib.engine.splitmix64 import Rng
from tensorlib.engine.tensor import Tensor
from tensorlib.nn import GRUCell, LSTMCell

__all__ = ["check_gru_cell", "check_lstm_cell", "package_gru_cell", "package_lstm_cell"]

_PARAMETERS = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")


def package_gru_cell(x: Tensor, h: Tensor, weight_ih: Tensor, weight_hh: Tensor,
                     bias_ih: Tensor, bias_hh: Tensor) -> Tensor:
    """One step of ``F.gru_layer`` (what nn.GRUCell runs), as the notebook's ``gru_cell``."""
    _, final = F.gru_layer(x.unsqueeze(0), h, weight_ih, weight_hh, bias_ih, bias_hh)
    return final


def package_lstm_cell(x: Tensor, state: tuple[Tensor, Tensor], weight_ih: Tensor,
                      weight_hh: Tensor, bias_ih: Tensor,
                      bias_hh: Tensor) -> tuple[Tensor, Tensor]:
    """One step of ``F.lstm_layer`` (what nn.LSTMCell runs), as the notebook's
    ``lstm_cell``: ``(h', c')``."""
    _, final = F.lstm_layer(x.unsqueeze(0), (state[0], state[1]), weight_ih, weight_hh,
                            bias_ih, bias_hh)
    return final


def _sigmoid(a: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-a))


def _draws(draw: Rng, gates: int, batch: int, inputs: int, hidden: int, steps: int,
           scale: float) -> tuple[list[np.ndarray], list[np.ndarray], np.ndarray]:
    """The weights (G·H, I), (G·H, H), (G·H,), (G·H,), the steps' inputs (B, I) and a state
    (B, H), in float64."""
    size = scale / np.sqrt(hidden)
    w = [draw.normal(size=(gates * hidden, inputs), dtype=np.float64) * size,
         draw.normal(size=(gates * hidden, hidden), dtype=np.float64) * size,
         draw.normal(size=(gates * hidden,), dtype=np.float64) * 0.5,
         draw.normal(size=(gates * hidden,), dtype=np.float64) * 0.5]
    xs = [draw.normal(size=(batch, inputs), dtype=np.float64) for _ in range(steps)]
    return w, xs, draw.normal(size=(batch, hidden), dtype=np.float64) * 0.5


def _unrolled(step: Callable[..., Any], xs: list[np.ndarray], state: Any) -> Any:
    for x in xs:
        state = step(x, state)
    return state


# ---------------------------------------------------------------------------------- gru_cell
def _gru_step(w: list[np.ndarray], x: np.ndarray, h: np.ndarray, order: str = "rzn",
              reset: str = "after", swapped: bool = False, gate: Callable[..., Any] = _sigmoid,
              squash: Callable[..., Any] = np.tanh) -> np.ndarray:
    """One GRU step in float64, PyTorch's by default, or with a slip: the gates read in
    another ``order``, the reset ``"before"`` W_hn, ``"outside"`` b_hn or on the input's part
    too (``"both"``), z and 1 - z ``swapped``, another ``gate`` or ``squash`` function."""
    wih, whh, bih, bhh = w
    size = whh.shape[1]
    a, b = x @ wih.T + bih, h @ whh.T + bhh
    blocks = {name: slice(index * size, (index + 1) * size) for index, name in
              enumerate(order)}
    r = gate(a[:, blocks["r"]] + b[:, blocks["r"]])
    z = gate(a[:, blocks["z"]] + b[:, blocks["z"]])
    n_input, n_hidden = a[:, blocks["n"]], b[:, blocks["n"]]
    if reset == "before":
        n_hidden = (r * h) @ whh[blocks["n"]].T + bhh[blocks["n"]]
    elif reset == "outside":
        n_hidden = r * (h @ whh[blocks["n"]].T) + bhh[blocks["n"]]
    elif reset == "both":
        n_input, n_hidden = r * n_input, n_hidden
    n = squash(n_input + (n_hidden if reset in ("before", "outside") else r * n_hidden))
    return z * n + (1 - z) * h if swapped else (1 - z) * n + z * h


def _gru_slips(w: list[np.ndarray], xs: list[np.ndarray], h: np.ndarray) -> dict[str, Any]:
    def run(**slip: Any) -> Callable[[], np.ndarray]:
        return lambda: _unrolled(lambda x, s: _gru_step(w, x, s, **slip), xs, h)
    return {
        "r and z swapped: the rows of each weight are r, z, n in that order (PyTorch's)":
            run(order="zrn"),
        "the gates read as z, n, r or another order: PyTorch's rows are r, z, n":
            run(order="znr"),
        "the reset applied before W_hn (W_hn (r ⊙ h), the original GRU's): PyTorch's "
        "applies r after, to W_hn h + b_hn": run(reset="before"),
        "b_hn left outside the reset: r ⊙ (h W_hnᵀ + b_hn), both inside":
            run(reset="outside"),
        "the reset applied to the input's part too: only the state's part, "
        "r ⊙ (h W_hnᵀ + b_hn), is reset": run(reset="both"),
        "z and 1 - z swapped: h' = (1 - z) ⊙ n + z ⊙ h, z keeps the old state":
            run(swapped=True),
        "sigmoid for n's tanh: the candidate n is a tanh, in (-1, 1)": run(squash=_sigmoid),
        "tanh for the gates' sigmoid: r and z are sigmoids, in (0, 1)": run(gate=np.tanh),
        "no tanh on n: n = tanh(x W_inᵀ + b_in + r ⊙ (h W_hnᵀ + b_hn))":
            run(squash=lambda a: a),
    }


_GRU_HINT = ("r, z, n are rows [0:H], [H:2H], [2H:3H]: r, z = σ(input part + state part), "
             "n = tanh(x W_inᵀ + b_in + r ⊙ (h W_hnᵀ + b_hn)), h' = (1 - z) ⊙ n + z ⊙ h")
_CASES = [  # what, batch, input, hidden, dtype, steps, weight scale
    ("one row, I = 3, H = 2", 1, 3, 2, np.float64, 1, 1.0),
    ("a batch of 4 rows, I = 5, H = 3, biases that are not zero", 4, 5, 3, np.float64, 1,
     1.0),
    ("float32 in, float32 out: B = 3, I = 6, H = 4", 3, 6, 4, np.float32, 1, 1.0),
    ("large weights (3 times PyTorch's size): the gates near 0 or 1", 2, 3, 5, np.float64,
     1, 3.0),
    ("a second call on the first one's state, the weights used twice", 3, 4, 5, np.float64,
     2, 1.0),
]


@piece_check("gru_cell", yours="gru_cell", package_name="tensorlib's (nn.GRUCell)")
def check_gru_cell(checker: Checker, gru_cell: Callable[..., Any]) -> HandOn:
    """``gru_cell(x, h, weight_ih, weight_hh, bias_ih, bias_hh)`` against nn.GRUCell holding
    the same weights, on five inputs (a batch, float32, large weights, a second call): the
    shape and dtype, the values, then the gradients of x, h and the four parameters."""
    draw = Rng(1245)
    for what, batch, inputs, hidden, dtype, steps, scale in _CASES:
        with checker.case(what, hint=_GRU_HINT):
            w, xs, h = _draws(draw, 3, batch, inputs, hidden, steps, scale)
            upstream = draw.normal(size=(batch, hidden), dtype=np.float64).astype(dtype)
            mine = leaves(*[a.astype(dtype) for a in [*xs, h, *w]])
            theirs = leaves(*[a.astype(dtype) for a in [*xs, h]])
            cell = loaded_cell(GRUCell, [a.astype(dtype) for a in w], dtype)
            state, expected = mine[steps], theirs[steps]
            with checker.named_errors(TRANSPOSED):
                for x in mine[:steps]:
                    state = gru_cell(x, state, *mine[steps + 1:])
            for x in theirs[:steps]:
                expected = cell(x, expected)
            result(checker, state, (batch, hidden), dtype, "gru_cell(x, h, ...)")
            rtol, atol = tolerances(dtype)
            checker.close(state, expected, "gru_cell(x, h, ...)", rtol=rtol, atol=atol,
                          mistakes=_gru_slips(w, xs, h))
            (state * upstream).sum().backward()
            (expected * upstream).sum().backward()
            names = [f"x{index + 1 if steps > 1 else ''}'s gradient" for index in range(steps)]
            gradients(checker, [*names, "h's gradient",
                                *[f"{name}'s gradient" for name in _PARAMETERS]],
                      [t.grad for t in mine],
                      [t.grad for t in theirs] + [getattr(cell, n).grad for n in _PARAMETERS],
                      dtype)
    return HandOn(gru_cell, package_gru_cell)


# --------------------------------------------------------------------------------- lstm_cell
def _lstm_step(w: list[np.ndarray], x: np.ndarray, state: tuple[np.ndarray, np.ndarray],
               order: str = "ifgo", carry: bool = True, o_on_cell: bool = False,
               old_cell: bool = False, gate: Callable[..., Any] = _sigmoid,
               squash: Callable[..., Any] = np.tanh,
               no_input_gate: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """One LSTM step in float64, PyTorch's by default, or with a slip: the gates read in
    another ``order``, the cell not ``carry``-ed, o on the cell itself (``o_on_cell``), h'
    from the ``old_cell``, another ``gate`` or ``squash`` function, i left out."""
    wih, whh, bih, bhh = w
    h, c = state
    size = whh.shape[1]
    a = x @ wih.T + bih + h @ whh.T + bhh
    block = {name: a[:, index * size:(index + 1) * size] for index, name in enumerate(order)}
    i, f, o = gate(block["i"]), gate(block["f"]), gate(block["o"])
    g = squash(block["g"])
    new_cell = (f * c if carry else 0) + (g if no_input_gate else i * g)
    shown = c if old_cell else new_cell
    return (o * shown if o_on_cell else o * np.tanh(shown)), new_cell


def _lstm_slips(w: list[np.ndarray], xs: list[np.ndarray],
                state: tuple[np.ndarray, np.ndarray]) -> dict[str, dict[str, Any]]:
    """What each slip gives, for h' and for c'."""
    def run(part: int, **slip: Any) -> Callable[[], np.ndarray]:
        return lambda: _unrolled(lambda x, s: _lstm_step(w, x, s, **slip), xs, state)[part]
    right = _unrolled(lambda x, s: _lstm_step(w, x, s), xs, state)
    slips: dict[str, dict[str, Any]] = {
        "the gates read as i, f, o, g: PyTorch's rows are i, f, g, o": {"order": "ifog"},
        "i and f swapped: PyTorch's rows are i, f, g, o": {"order": "figo"},
        "the cell not carried: c' = f ⊙ c + i ⊙ g, the old cell through the forget gate":
            {"carry": False},
        "the input gate left out: c' = f ⊙ c + i ⊙ g": {"no_input_gate": True},
        "sigmoid for g: the candidate g is a tanh, in (-1, 1)": {"squash": _sigmoid},
        "tanh for the gates' sigmoid: i, f and o are sigmoids, in (0, 1)": {"gate": np.tanh},
    }
    state_only: dict[str, dict[str, Any]] = {
        "o applied to the cell itself: h' = o ⊙ tanh(c')": {"o_on_cell": True},
        "h' made from the old cell: h' = o ⊙ tanh(c'), with the new c'": {"old_cell": True},
    }
    named: dict[str, dict[str, Any]] = {"h": {}, "c": {}}
    swapped = "the pair returned as (c', h'): return (h', c'), the new state first"
    named["h"][swapped] = right[1]
    named["c"][swapped] = right[0]
    for part, key in ((0, "h"), (1, "c")):
        for text, slip in slips.items():
            named[key][text] = run(part, **slip)
    for text, slip in state_only.items():
        named["h"][text] = run(0, **slip)
    return named


_LSTM_HINT = ("i, f, g, o are rows [0:H], [H:2H], [2H:3H], [3H:4H] of the sum of both parts: "
              "c' = σ(f) ⊙ c + σ(i) ⊙ tanh(g), h' = σ(o) ⊙ tanh(c')")


@piece_check("lstm_cell", yours="lstm_cell", package_name="tensorlib's (nn.LSTMCell)")
def check_lstm_cell(checker: Checker, lstm_cell: Callable[..., Any]) -> HandOn:
    """``lstm_cell(x, (h, c), weight_ih, weight_hh, bias_ih, bias_hh)`` → ``(h', c')``
    against nn.LSTMCell holding the same weights, on five inputs (a batch, float32, large
    weights, a second call): the pair, the shapes and dtypes, the values of h' and c', then
    the gradients of x, h, c and the four parameters."""
    draw = Rng(1246)
    for what, batch, inputs, hidden, dtype, steps, scale in _CASES:
        with checker.case(what, hint=_LSTM_HINT):
            w, xs, h = _draws(draw, 4, batch, inputs, hidden, steps, scale)
            c = draw.normal(size=(batch, hidden), dtype=np.float64)
            upstreams = [draw.normal(size=(batch, hidden), dtype=np.float64).astype(dtype)
                         for _ in range(2)]
            mine = leaves(*[a.astype(dtype) for a in [*xs, h, c, *w]])
            theirs = leaves(*[a.astype(dtype) for a in [*xs, h, c]])
            cell = loaded_cell(LSTMCell, [a.astype(dtype) for a in w], dtype)
            state, expected = (mine[steps], mine[steps + 1]), (theirs[steps], theirs[steps + 1])
            with checker.named_errors(TRANSPOSED):
                for x in mine[:steps]:
                    state = lstm_cell(x, state, *mine[steps + 2:])
            for x in theirs[:steps]:
                expected = cell(x, expected)
            checker.true(isinstance(state, (tuple, list)) and len(state) == 2,
                         f"lstm_cell returned a {type(state).__name__}"
                         + (f" of length {len(state)}" if isinstance(state, (tuple, list))
                            else "") + ", not the pair (h', c')",
                         "return h_new, c_new: the state and the cell")
            rtol, atol = tolerances(dtype)
            slips = _lstm_slips(w, xs, (h, c))
            for index, name in enumerate(("h'", "c'")):
                result(checker, state[index], (batch, hidden), dtype, name)
                checker.close(state[index], expected[index], name, rtol=rtol, atol=atol,
                              mistakes=slips[name[0]])
            ((state[0] * upstreams[0]).sum() + (state[1] * upstreams[1]).sum()).backward()
            ((expected[0] * upstreams[0]).sum() + (expected[1] * upstreams[1]).sum()).backward()
            names = [f"x{index + 1 if steps > 1 else ''}'s gradient" for index in range(steps)]
            gradients(checker, [*names, "h's gradient", "c's gradient",
                                *[f"{name}'s gradient" for name in _PARAMETERS]],
                      [t.grad for t in mine],
                      [t.grad for t in theirs] + [getattr(cell, n).grad for n in _PARAMETERS],
                      dtype)
    return HandOn(lstm_cell, package_lstm_cell)
