"""Recurrent layers, one node per layer and direction: the Elman RNN, the GRU and the LSTM
over a whole sequence, with backpropagation through time written out.

Each op takes time-major arrays: ``x (T, B, I)``, a first state ``(B, H)`` (None: zeros),
``weight_ih (G·H, I)``, ``weight_hh (G·H, H)`` and biases ``(G·H,)`` (None: absent), where
G is the number of gates (1, 3 or 4) stacked in PyTorch's order. The loop over time is
Python; everything inside a step is whole-batch array work, and what does not depend on the
previous step is done outside the loop: the input projection of all T steps is one matrix
product before it, and backward the weight and input gradients are one product each after
it. ``reverse=True`` reads the sequence from its last step to its first (a bidirectional
layer's backward direction); the outputs stay at their time positions.
"""

from __future__ import annotations

from typing import Any

from tensorlib.engine.autograd import Context
from tensorlib.engine.backend import array_module
from tensorlib.engine.ops.elementwise import _sigmoid
from tensorlib.engine.ops.function import Function
from tensorlib.engine.typing import Array

__all__ = ["GRULayer", "LSTMLayer", "RNNLayer"]


def _order(steps: int, reverse: bool) -> range:
    """The time steps in the order the layer reads them."""
    return range(steps - 1, -1, -1) if reverse else range(steps)


def _input_projection(x: Array, weight_ih: Array, bias: Array | None) -> Array:
    """x W_ihᵀ + b for every step at once: ``(T, B, G·H)``."""
    steps, batch, features = x.shape
    projected = (x.reshape(steps * batch, features) @ weight_ih.T).reshape(
        steps, batch, weight_ih.shape[0])
    if bias is not None:
        projected += bias
    return projected


def _state_buffer(first: Array | None, steps: int, batch: int, size: int, dtype: Any,
                  reverse: bool, xp: Any) -> tuple[Array, Array, Array]:
    """One ``(T + 1, B, H)`` buffer holding the first state (zeros when None) and the state
    after every step, and two views of it, each ``(T, B, H)``: ``states[t]``, the state step
    t computes, and ``previous[t]``, the state it starts from. The first state sits at the
    end read first: slot 0 forward, slot T in reverse."""
    buffer = xp.empty((steps + 1, batch, size), dtype=dtype)
    buffer[steps if reverse else 0] = 0 if first is None else first
    if reverse:
        return buffer, buffer[:steps], buffer[1:]
    return buffer, buffer[1:], buffer[:steps]


def _previous_states(states: Array, first: Array | None, reverse: bool) -> Array:
    """The state each step started from, ``(T, B, H)``: the one computed before it in
    reading order, and the first state (zeros when None) at the step read first."""
    xp = array_module(states)
    start = xp.zeros_like(states[0]) if first is None else first
    if reverse:
        return xp.concatenate([states[1:], start[None]], axis=0)
    return xp.concatenate([start[None], states[:-1]], axis=0)


def _parameter_gradients(ctx: Context, x: Array, previous: Array, grad_input_side: Array,
                         grad_hidden_side: Array, weight_ih: Array,
                         ) -> tuple[Array | None, Array | None, Array | None, Array | None,
                                    Array | None]:
    """``(dx, dW_ih, dW_hh, db_ih, db_hh)`` from the gradients of every step's two
    pre-activations ``(T, B, G·H)``, each one product over all steps; None where no gradient
    is wanted. Inputs are ordered x, first state(s), W_ih, W_hh, b_ih, b_hh."""
    wanted = ctx.needs_input_grad
    steps, batch, features = x.shape
    rows_in = grad_input_side.reshape(steps * batch, -1)      # (T·B, G·H)
    rows_hidden = grad_hidden_side.reshape(steps * batch, -1)  # (T·B, G·H)
    dx = (rows_in @ weight_ih).reshape(x.shape) if wanted[0] else None
    dw_ih = rows_in.T @ x.reshape(steps * batch, features) if wanted[-4] else None
    dw_hh = rows_hidden.T @ previous.reshape(steps * batch, -1) if wanted[-3] else None
    db_ih = rows_in.sum(axis=0) if wanted[-2] else None
    if not wanted[-1]:
        db_hh = None
    elif db_ih is not None and grad_hidden_side is grad_input_side:
        db_hh = db_ih.copy()
    else:
        db_hh = rows_hidden.sum(axis=0)
    return dx, dw_ih, dw_hh, db_ih, db_hh


def _both_biases(bias_ih: Array | None, bias_hh: Array | None) -> Array | None:
    if bias_ih is None:
        return bias_hh
    return bias_ih if bias_hh is None else bias_ih + bias_hh


class _Recurrence(Function):
    """The two activations every step applies, written into ``out`` and returned; called
    through ``ctx.function`` (the op, or the kernel registered in its place)."""

    @staticmethod
    def sigmoid(a: Array, out: Array) -> Array:
        """σ(a) = 1 / (1 + e^-a), without overflow."""
        xp = array_module(a)
        if xp.__name__ == "numpy":
            from scipy import special  # on first use, as the sigmoid op imports it

            return special.expit(a, out=out)
        out[...] = _sigmoid(a)
        return out

    @staticmethod
    def tanh(a: Array, out: Array) -> Array:
        return array_module(a).tanh(a, out=out)


class RNNLayer(_Recurrence):
    """The Elman RNN: h_t = act(x_t W_ihᵀ + b_ih + h_{t-1} W_hhᵀ + b_hh), act tanh or relu.

    Returns every state ``(T, B, H)``; the last one read is the final state. Backward, with
    a_t the pre-activation and dh_t the gradient reaching h_t (from the output and from the
    step read after it)::

        da_t = dh_t ⊙ act'(a_t),   dh_{t-1} += da_t W_hh,
        dW_ih = Σ_t da_tᵀ x_t,     dW_hh = Σ_t da_tᵀ h_{t-1},   db = Σ_t da_t,   dx_t = da_t W_ih
    """

    op_name = "rnn_layer"

    @staticmethod
    def forward(ctx: Context, x: Array, first: Array | None, weight_ih: Array,
                weight_hh: Array, bias_ih: Array | None, bias_hh: Array | None,
                nonlinearity: str = "tanh", reverse: bool = False) -> Array:
        xp = array_module(x)
        steps, batch, _ = x.shape
        pre = _input_projection(x, weight_ih, _both_biases(bias_ih, bias_hh))  # (T, B, H)
        buffer, states, previous = _state_buffer(first, steps, batch, weight_hh.shape[1],
                                                 x.dtype, reverse, xp)
        read_first = steps - 1 if reverse else 0
        for t in _order(steps, reverse):
            a = pre[t]                                                       # (B, H)
            if first is not None or t != read_first:  # a zero first state adds nothing
                a += previous[t] @ weight_hh.T
            if nonlinearity == "tanh":
                ctx.function.tanh(a, out=states[t])
            else:
                xp.maximum(a, 0, out=states[t])
        ctx.save_for_backward(x, weight_ih, weight_hh, buffer)
        ctx.nonlinearity, ctx.reverse = nonlinearity, reverse
        return states

    @staticmethod
    def backward(ctx: Context, grad: Array) -> tuple[Array | None, ...]:
        x, weight_ih, weight_hh, buffer = ctx.saved_tensors
        xp = array_module(grad)
        states, previous = (buffer[:-1], buffer[1:]) if ctx.reverse else (buffer[1:], buffer[:-1])
        grad_pre = xp.empty_like(states)                                     # da (T, B, H)
        carried = None                                      # dh from the step read after
        for t in _order(x.shape[0], not ctx.reverse):
            dh = grad[t] if carried is None else grad[t] + carried
            if ctx.nonlinearity == "tanh":
                xp.multiply(dh, 1 - states[t] * states[t], out=grad_pre[t])
            else:
                xp.multiply(dh, states[t] > 0, out=grad_pre[t])
            carried = grad_pre[t] @ weight_hh
        dx, dw_ih, dw_hh, db_ih, db_hh = _parameter_gradients(
            ctx, x, previous, grad_pre, grad_pre, weight_ih)
        d_first = carried if ctx.needs_input_grad[1] else None
        return dx, d_first, dw_ih, dw_hh, db_ih, db_hh


class GRULayer(_Recurrence):
    """The GRU, PyTorch's gates in the order r, z, n::

        r = σ(W_ir x + b_ir + W_hr h + b_hr)        reset
        z = σ(W_iz x + b_iz + W_hz h + b_hz)        update
        n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn))
        h' = (1 - z) ⊙ n + z ⊙ h

    Returns every state ``(T, B, H)``. Backward, per step (dh reaching h')::

        dn = dh ⊙ (1 - z) ⊙ (1 - n²)            the pre-activation of n
        dz = dh ⊙ (h - n) ⊙ z (1 - z),   dr = dn ⊙ (W_hn h + b_hn) ⊙ r (1 - r)
        input side [dr, dz, dn],   hidden side [dr, dz, dn ⊙ r],
        dh_prev = dh ⊙ z + (hidden side) W_hh
    """

    op_name = "gru_layer"

    @staticmethod
    def forward(ctx: Context, x: Array, first: Array | None, weight_ih: Array,
                weight_hh: Array, bias_ih: Array | None, bias_hh: Array | None,
                reverse: bool = False) -> Array:
        xp = array_module(x)
        steps, batch, _ = x.shape
        size = weight_hh.shape[1]
        # The pre-activations of every step, then (in place, step by step) its gates r, z, n
        gates = _input_projection(x, weight_ih, bias_ih)                    # (T, B, 3H)
        buffer, states, previous = _state_buffer(first, steps, batch, size, x.dtype, reverse,
                                                 xp)
        hidden_n = xp.empty((steps, batch, size), dtype=x.dtype)            # W_hn h + b_hn
        from_hidden = xp.empty((batch, 3 * size), dtype=x.dtype)            # h W_hhᵀ + b_hh
        for t in _order(steps, reverse):
            xp.matmul(previous[t], weight_hh.T, out=from_hidden)
            if bias_hh is not None:
                from_hidden += bias_hh
            reset_update, pre_new = gates[t, :, :2 * size], gates[t, :, 2 * size:]
            reset_update += from_hidden[:, :2 * size]
            ctx.function.sigmoid(reset_update, out=reset_update)
            hidden_n[t] = from_hidden[:, 2 * size:]
            pre_new += reset_update[:, :size] * hidden_n[t]
            new = ctx.function.tanh(pre_new, out=pre_new)
            update = reset_update[:, size:]
            xp.add(new, update * (previous[t] - new), out=states[t])
        ctx.save_for_backward(x, weight_ih, weight_hh, buffer, gates, hidden_n)
        ctx.reverse = reverse
        return states

    @staticmethod
    def backward(ctx: Context, grad: Array) -> tuple[Array | None, ...]:
        x, weight_ih, weight_hh, buffer, gates, hidden_n = ctx.saved_tensors
        xp = array_module(grad)
        size = weight_hh.shape[1]
        previous = buffer[1:] if ctx.reverse else buffer[:-1]               # (T, B, H)
        reset, update, new = (gates[..., k * size:(k + 1) * size] for k in range(3))
        # What multiplies dh (or dn) in each gate's gradient, for every step at once; each
        # step then overwrites its factors with the gradients: [dr, dz, dn] (T, B, 3H)
        grad_in = xp.empty_like(gates)
        d_reset, d_update, d_new = (grad_in[..., k * size:(k + 1) * size] for k in range(3))
        xp.multiply(hidden_n, reset * (1 - reset), out=d_reset)         # dr = dn ⊙ this
        xp.multiply(previous - new, update * (1 - update), out=d_update)  # dz = dh ⊙ this
        xp.multiply(1 - update, 1 - new * new, out=d_new)               # dn = dh ⊙ this
        grad_hidden = xp.empty_like(gates)                                   # [dr, dz, dn ⊙ r]
        carried = None
        for t in _order(x.shape[0], not ctx.reverse):
            dh = grad[t] if carried is None else grad[t] + carried
            d_new[t] *= dh
            d_update[t] *= dh
            d_reset[t] *= d_new[t]
            grad_hidden[t, :, :2 * size] = grad_in[t, :, :2 * size]
            xp.multiply(d_new[t], reset[t], out=grad_hidden[t, :, 2 * size:])
            carried = grad_hidden[t] @ weight_hh
            carried += dh * update[t]
        dx, dw_ih, dw_hh, db_ih, db_hh = _parameter_gradients(
            ctx, x, previous, grad_in, grad_hidden, weight_ih)
        d_first = carried if ctx.needs_input_grad[1] else None
        return dx, d_first, dw_ih, dw_hh, db_ih, db_hh


class LSTMLayer(_Recurrence):
    """The LSTM, PyTorch's gates in the order i, f, g, o::

        i, f, o = σ(·),  g = tanh(·)   of   x W_ihᵀ + b_ih + h W_hhᵀ + b_hh
        c' = f ⊙ c + i ⊙ g,   h' = o ⊙ tanh(c')

    Returns ``(T + 1, B, H)``: the hidden state of every step, then the final cell state
    (after the step read last). Backward, per step (dh reaching h', dc reaching c')::

        dc += dh ⊙ o ⊙ (1 - tanh²(c')),   do = dh ⊙ tanh(c')
        di = dc ⊙ g,  df = dc ⊙ c,  dg = dc ⊙ i,  dc_prev = dc ⊙ f
        da = [di i(1-i), df f(1-f), dg (1-g²), do o(1-o)],   dh_prev = da W_hh
    """

    op_name = "lstm_layer"

    @staticmethod
    def forward(ctx: Context, x: Array, first_hidden: Array | None, first_cell: Array | None,
                weight_ih: Array, weight_hh: Array, bias_ih: Array | None,
                bias_hh: Array | None, reverse: bool = False) -> Array:
        xp = array_module(x)
        steps, batch, _ = x.shape
        size = weight_hh.shape[1]
        # The pre-activations of every step, then (in place, step by step) its gates i, f, g, o
        gates = _input_projection(x, weight_ih, _both_biases(bias_ih, bias_hh))  # (T, B, 4H)
        out = xp.empty((steps + 1, batch, size), dtype=x.dtype)    # h of each step, last c
        cell_buffer, cells, previous_cells = _state_buffer(first_cell, steps, batch, size,
                                                           x.dtype, reverse, xp)
        cell_tanh = xp.empty((steps, batch, size), dtype=x.dtype)  # tanh(c')
        hidden = first_hidden
        from_hidden = xp.empty((batch, 4 * size), dtype=x.dtype)            # h W_hhᵀ
        candidate = xp.empty((batch, size), dtype=x.dtype)                  # g
        for t in _order(steps, reverse):
            a = gates[t]                                                     # (B, 4H)
            if hidden is not None:
                a += xp.matmul(hidden, weight_hh.T, out=from_hidden)
            ctx.function.tanh(a[:, 2 * size:3 * size], out=candidate)
            ctx.function.sigmoid(a, out=a)       # i, f, o (and g's block, replaced next)
            a[:, 2 * size:3 * size] = candidate
            i, f, g, o = (a[:, k * size:(k + 1) * size] for k in range(4))
            cell = xp.multiply(f, previous_cells[t], out=cells[t])
            cell += i * g
            ctx.function.tanh(cell, out=cell_tanh[t])
            hidden = xp.multiply(o, cell_tanh[t], out=out[t])
        out[steps] = cells[0] if reverse else cells[-1]
        ctx.save_for_backward(x, first_hidden, weight_ih, weight_hh, gates, cell_buffer,
                              cell_tanh, out)
        ctx.reverse = reverse
        return out

    @staticmethod
    def backward(ctx: Context, grad: Array) -> tuple[Array | None, ...]:
        (x, first_hidden, weight_ih, weight_hh, gates, cell_buffer, cell_tanh,
         out) = ctx.saved_tensors
        xp = array_module(grad)
        steps = x.shape[0]
        size = weight_hh.shape[1]
        previous_cells = cell_buffer[1:] if ctx.reverse else cell_buffer[:-1]  # (T, B, H)
        i, f, g, o = (gates[..., k * size:(k + 1) * size] for k in range(4))
        # What multiplies dc (or dh) in each pre-activation's gradient, for every step at
        # once; each step then overwrites its factors with the gradients da (T, B, 4H)
        grad_pre = xp.empty_like(gates)
        d_i, d_f, d_g, d_o = (grad_pre[..., k * size:(k + 1) * size] for k in range(4))
        xp.multiply(g, i * (1 - i), out=d_i)                          # di = dc ⊙ this
        xp.multiply(previous_cells, f * (1 - f), out=d_f)             # df = dc ⊙ this
        xp.multiply(i, 1 - g * g, out=d_g)                            # dg = dc ⊙ this
        xp.multiply(cell_tanh, o * (1 - o), out=d_o)                  # do = dh ⊙ this
        to_cell = o * (1 - cell_tanh * cell_tanh)                     # dc += dh ⊙ this
        carried_hidden, d_cell = None, grad[steps]
        for t in _order(steps, not ctx.reverse):
            dh = grad[t] if carried_hidden is None else grad[t] + carried_hidden
            d_cell = d_cell + dh * to_cell[t]
            d_i[t] *= d_cell
            d_f[t] *= d_cell
            d_g[t] *= d_cell
            d_o[t] *= dh
            d_cell *= f[t]
            carried_hidden = grad_pre[t] @ weight_hh
        previous = _previous_states(out[:steps], first_hidden, ctx.reverse)
        dx, dw_ih, dw_hh, db_ih, db_hh = _parameter_gradients(
            ctx, x, previous, grad_pre, grad_pre, weight_ih)
        wanted: Any = ctx.needs_input_grad
        return (dx, carried_hidden if wanted[1] else None, d_cell if wanted[2] else None,
                dw_ih, dw_hh, db_ih, db_hh)
