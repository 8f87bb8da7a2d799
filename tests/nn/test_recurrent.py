"""Recurrent layers: nn.RNN, nn.GRU, nn.LSTM, their cells, and F.rnn_layer, F.gru_layer,
F.lstm_layer (one fused node per layer and direction).

Where PyTorch is importable: values and every gradient (input, initial states, parameters)
against ``torch.nn`` for each option, and ``state_dict`` both ways. Without it: PyTorch's
parameter names, shapes and initialisation, gradcheck in float64, the fused ops against their
primitive twin ``F.recurrent_layer_reference``, dropout between layers, the errors, float32,
and a short training run.
"""

import numpy as np
import pytest

import tensorlib as tl
from tensorlib import Rng, gradcheck, gradcheck_module, nn
from tensorlib.nn import functional as F
from tensorlib.optim import AdamW

# kind -> (the class name in nn and torch.nn, its keyword arguments)
KINDS = {"rnn_tanh": ("RNN", {}), "rnn_relu": ("RNN", {"nonlinearity": "relu"}),
         "gru": ("GRU", {}), "lstm": ("LSTM", {})}
GATES = {"rnn_tanh": 1, "rnn_relu": 1, "gru": 3, "lstm": 4}
T, B, I, H = 4, 2, 3, 3  # small sizes for gradcheck


def _ours(kind, *sizes, cell=False, seed=0, dtype=np.float64, **options):
    name, extra = KINDS[kind]
    return getattr(nn, name + "Cell" * cell)(*sizes, rng=Rng(seed), dtype=dtype, **extra,
                                             **options)


def _theirs(torch, kind, *sizes, cell=False, **options):
    name, extra = KINDS[kind]
    return getattr(torch.nn, name + "Cell" * cell)(*sizes, dtype=torch.float64, **extra,
                                                   **options)


def _to_torch(torch, module):
    return {k: torch.from_numpy(np.array(v)) for k, v in module.state_dict().items()}


def _normal(seed, shape, scale=1.0):
    return scale * np.random.default_rng(seed).standard_normal(shape)


def _zeros(*shape, dtype=np.float64):
    return tl.zeros(*shape, dtype=dtype)


def _flat(out):
    """The tensors of a nested (output, h) / (output, (h, c)) / (h, c) result, in order."""
    if isinstance(out, (tuple, list)):
        return [t for part in out for t in _flat(part)]
    return [out]


def _joined(out):
    """Every tensor of a result as one flat tensor (what gradcheck differentiates)."""
    return tl.cat([t.reshape(-1) for t in _flat(out)])


def _run(module, tensor, x, states, seed=99):
    """Forward ``module`` on fresh leaves (made by ``tensor``: tl.tensor or torch.tensor), and
    backward a random upstream gradient into every output. Returns the output values, the
    gradients of input, states and parameters, and the parameter names."""
    leaves = [tensor(a, requires_grad=True) for a in [x, *states]]
    hx = None if not states else tuple(leaves[1:]) if len(states) == 2 else leaves[1]
    results = _flat(module(leaves[0], hx))
    upstream = np.random.default_rng(seed)
    sum((r * tensor(upstream.standard_normal(tuple(r.shape)))).sum() for r in results).backward()
    named = list(module.named_parameters())
    grads = [t.grad.numpy() for t in leaves] + [p.grad.numpy() for _, p in named]
    return [r.detach().numpy() for r in results], grads, [n for n, _ in named]


def _assert_same_runs(ours, theirs, rtol=1e-10, atol=1e-12):
    (values, grads, names), (their_values, their_grads, their_names) = ours, theirs
    assert names == their_names
    assert [v.shape for v in values] == [v.shape for v in their_values]
    for mine, expected in zip(values + grads, their_values + their_grads, strict=True):
        assert mine.shape == expected.shape
        np.testing.assert_allclose(mine, expected, rtol=rtol, atol=atol)


# -------------------------------------------------------------------- PyTorch parity
# (options, batched, with an initial state): each option with each module at least once
MODULE_CASES = [
    ({}, True, True), ({}, False, False), ({}, True, False),
    ({"num_layers": 2}, True, False), ({"num_layers": 3}, False, True),
    ({"bidirectional": True}, True, False), ({"bidirectional": True}, False, True),
    ({"batch_first": True}, True, True), ({"batch_first": True}, False, False),
    ({"bias": False}, True, True), ({"bias": False, "num_layers": 2}, False, False),
    ({"num_layers": 3, "bidirectional": True, "batch_first": True}, True, True),
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("options, batched, with_state", MODULE_CASES)
def test_modules_agree_with_pytorch_in_values_and_every_gradient(kind, options, batched,
                                                                 with_state):
    torch = pytest.importorskip("torch")
    steps, batch, features, hidden = 5, 3, 4, 6
    ours = _ours(kind, features, hidden, **options)
    theirs = _theirs(torch, kind, features, hidden, **options)
    theirs.load_state_dict(_to_torch(torch, ours), strict=True)
    layout = (batch, steps) if options.get("batch_first") else (steps, batch)
    x = _normal(1, (*layout, features) if batched else (steps, features))
    count = options.get("num_layers", 1) * (2 if options.get("bidirectional") else 1)
    state_shape = (count, batch, hidden) if batched else (count, hidden)
    states = [_normal(2 + k, state_shape) for k in range(2 if kind == "lstm" else 1)] \
        if with_state else []
    _assert_same_runs(_run(ours, tl.tensor, x, states), _run(theirs, torch.tensor, x, states))


CELL_CASES = [(True, True, {}), (True, False, {}), (False, True, {}), (False, False, {}),
              (True, True, {"bias": False}), (False, False, {"bias": False})]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("batched, with_state, options", CELL_CASES)
def test_cells_agree_with_pytorch_in_values_and_every_gradient(kind, batched, with_state,
                                                               options):
    torch = pytest.importorskip("torch")
    ours = _ours(kind, 4, 5, cell=True, **options)
    theirs = _theirs(torch, kind, 4, 5, cell=True, **options)
    theirs.load_state_dict(_to_torch(torch, ours), strict=True)
    x = _normal(3, (3, 4) if batched else (4,))
    state_shape = (3, 5) if batched else (5,)
    states = [_normal(4 + k, state_shape) for k in range(2 if kind == "lstm" else 1)] \
        if with_state else []
    _assert_same_runs(_run(ours, tl.tensor, x, states), _run(theirs, torch.tensor, x, states))


# ---------------------------------------------------------------------- state_dict
@pytest.mark.parametrize("kind, cell, options", [
    ("rnn_relu", False, {"num_layers": 2}), ("gru", False, {"bidirectional": True}),
    ("lstm", False, {"num_layers": 2, "bidirectional": True}),
    ("lstm", False, {"num_layers": 2, "bias": False}), ("rnn_tanh", True, {}),
    ("gru", True, {"bias": False}), ("lstm", True, {}),
])
def test_state_dicts_move_between_pytorch_and_tensorlib_strictly(kind, cell, options):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    theirs = _theirs(torch, kind, 3, 4, cell=cell, **options)
    ours = _ours(kind, 3, 4, cell=cell, **options)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [v.shape for v in ours.state_dict().values()] == \
        [tuple(v.shape) for v in theirs.state_dict().values()]
    x = _normal(5, (4, 3) if cell else (5, 2, 3))
    # torch -> ours
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()}, strict=True)
    with torch.no_grad():
        expected = [t.numpy() for t in _flat(theirs(torch.from_numpy(x)))]
    for mine, twin in zip(_flat(ours(tl.tensor(x))), expected, strict=True):
        np.testing.assert_allclose(mine.numpy(), twin, rtol=1e-12, atol=1e-14)
    # ours -> torch
    other = _ours(kind, 3, 4, cell=cell, seed=7, **options)
    theirs.load_state_dict(_to_torch(torch, other), strict=True)
    with torch.no_grad():
        expected = [t.numpy() for t in _flat(theirs(torch.from_numpy(x)))]
    for mine, twin in zip(_flat(other(tl.tensor(x))), expected, strict=True):
        np.testing.assert_allclose(mine.numpy(), twin, rtol=1e-12, atol=1e-14)


def test_parameter_names_and_shapes_are_pytorchs():
    lstm = nn.LSTM(3, 4, num_layers=2, bidirectional=True)
    assert [(n, p.shape) for n, p in lstm.named_parameters()] == [
        ("weight_ih_l0", (16, 3)), ("weight_hh_l0", (16, 4)),
        ("bias_ih_l0", (16,)), ("bias_hh_l0", (16,)),
        ("weight_ih_l0_reverse", (16, 3)), ("weight_hh_l0_reverse", (16, 4)),
        ("bias_ih_l0_reverse", (16,)), ("bias_hh_l0_reverse", (16,)),
        ("weight_ih_l1", (16, 8)), ("weight_hh_l1", (16, 4)),          # 2H inputs
        ("bias_ih_l1", (16,)), ("bias_hh_l1", (16,)),
        ("weight_ih_l1_reverse", (16, 8)), ("weight_hh_l1_reverse", (16, 4)),
        ("bias_ih_l1_reverse", (16,)), ("bias_hh_l1_reverse", (16,)),
    ]
    assert list(lstm.state_dict()) == [n for n, _ in lstm.named_parameters()]
    assert [len(group) for group in lstm.all_weights] == [4, 4, 4, 4]
    gru = nn.GRU(3, 4, num_layers=2, bias=False)
    assert [(n, p.shape) for n, p in gru.named_parameters()] == [
        ("weight_ih_l0", (12, 3)), ("weight_hh_l0", (12, 4)),
        ("weight_ih_l1", (12, 4)), ("weight_hh_l1", (12, 4))]
    assert [(n, p.shape) for n, p in nn.RNN(3, 4).named_parameters()] == [
        ("weight_ih_l0", (4, 3)), ("weight_hh_l0", (4, 4)), ("bias_ih_l0", (4,)),
        ("bias_hh_l0", (4,))]
    assert [(n, p.shape) for n, p in nn.LSTMCell(3, 4).named_parameters()] == [
        ("weight_ih", (16, 3)), ("weight_hh", (16, 4)), ("bias_ih", (16,)), ("bias_hh", (16,))]
    cell = nn.GRUCell(3, 4, bias=False)
    assert [(n, p.shape) for n, p in cell.named_parameters()] == [
        ("weight_ih", (12, 3)), ("weight_hh", (12, 4))]
    assert cell.bias_ih is None and cell.bias_hh is None
    assert repr(nn.GRU(3, 4, num_layers=2, bidirectional=True)) == \
        "GRU(3, 4, num_layers=2, bidirectional=True)"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("cell", [False, True])
def test_initialisation_is_uniform_within_one_over_root_hidden_and_seeded(kind, cell):
    options = {} if cell else {"num_layers": 2, "bidirectional": True}
    module = _ours(kind, 3, 16, cell=cell, seed=0, dtype=np.float32, **options)
    bound = 1 / np.sqrt(16)
    for name, p in module.named_parameters():
        values = p.numpy()
        assert values.dtype == np.float32
        assert np.abs(values).max() <= bound and values.std() > 0, name
    every = np.concatenate([p.numpy().ravel() for p in module.parameters()])
    assert every.min() < -0.95 * bound and every.max() > 0.95 * bound
    assert abs(every.mean()) < 0.1 * bound and abs(every.std() * np.sqrt(3) / bound - 1) < 0.1
    assert len({p.numpy().tobytes() for p in module.parameters()}) == \
        len(list(module.parameters()))                        # each drawn afresh
    same = _ours(kind, 3, 16, cell=cell, seed=0, dtype=np.float32, **options)
    other = _ours(kind, 3, 16, cell=cell, seed=1, dtype=np.float32, **options)
    for key, value in module.state_dict().items():
        np.testing.assert_array_equal(same.state_dict()[key], value)
        assert not np.array_equal(other.state_dict()[key], value)


def test_manual_seed_makes_the_default_draws_repeat():
    tl.manual_seed(3)
    first = nn.LSTM(3, 4, num_layers=2).state_dict()
    tl.manual_seed(3)
    second = nn.LSTM(3, 4, num_layers=2).state_dict()
    for key, value in first.items():
        np.testing.assert_array_equal(second[key], value)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("cell", [False, True])
def test_no_initial_state_means_zeros(kind, cell):
    module = _ours(kind, 3, 4, cell=cell, **({} if cell else {"num_layers": 2}))
    x = tl.tensor(_normal(15, (2, 3) if cell else (5, 2, 3)))
    zeros = _zeros(2, 4) if cell else _zeros(2, 2, 4)
    with_zeros = module(x, (zeros, zeros) if kind == "lstm" else zeros)
    for a, b in zip(_flat(module(x)), _flat(with_zeros), strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


# ---------------------------------------------------------------- gradcheck and twin
def _layer(kind, x, state, weights, reverse, reference=False):
    if reference:
        return F.recurrent_layer_reference(kind, x, state, *weights, reverse=reverse)
    if kind == "gru":
        return F.gru_layer(x, state, *weights, reverse=reverse)
    if kind == "lstm":
        return F.lstm_layer(x, state, *weights, reverse=reverse)
    return F.rnn_layer(x, state, *weights, nonlinearity=kind[4:], reverse=reverse)


def _layer_arrays(kind, with_state, bias=True, seed=10):
    """x, the initial states (none, h0, or h0 and c0) and the weights, all float64 leaves."""
    rows = GATES[kind] * H
    shapes = [(T, B, I)] + [(B, H)] * (with_state * (2 if kind == "lstm" else 1)) \
        + [(rows, I), (rows, H)] + [(rows,)] * (2 * bias)
    return [tl.tensor(_normal(seed + k, shape, 0.7), requires_grad=True)
            for k, shape in enumerate(shapes)]


def _call_layer(kind, with_state, reverse, bias=True, reference=False):
    """A function of the tensors of ``_layer_arrays`` running one layer."""
    count = with_state * (2 if kind == "lstm" else 1)

    def run(x, *rest):
        state = None if count == 0 else tuple(rest[:2]) if count == 2 else rest[0]
        weights = list(rest[count:]) + [None] * (2 * (not bias))
        return _layer(kind, x, state, weights, reverse, reference)
    return run


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("with_state", [False, True])
def test_gradcheck_of_the_fused_layers(kind, reverse, with_state):
    run = _call_layer(kind, with_state, reverse)
    assert gradcheck(lambda *t: _joined(run(*t)), *_layer_arrays(kind, with_state))


@pytest.mark.parametrize("kind", KINDS)
def test_gradcheck_of_the_fused_layers_without_biases(kind):
    run = _call_layer(kind, True, True, bias=False)
    assert gradcheck(lambda *t: _joined(run(*t)), *_layer_arrays(kind, True, bias=False))


@pytest.mark.parametrize("kind", ["gru", "lstm"])
def test_gradcheck_of_a_two_layer_bidirectional_module(kind):
    module = _ours(kind, I, H, num_layers=2, bidirectional=True, batch_first=True, seed=4)
    x = tl.tensor(_normal(20, (B, T, I)), requires_grad=True)
    assert gradcheck_module(module, lambda: _joined(module(x))) == 16
    states = [tl.tensor(_normal(21 + k, (4, B, H)), requires_grad=True)
              for k in range(2 if kind == "lstm" else 1)]
    assert gradcheck(lambda t, *s: _joined(module(t, tuple(s) if len(s) == 2 else s[0])),
                     x, *states)


@pytest.mark.parametrize("kind", KINDS)
def test_gradcheck_of_the_cells(kind):
    cell = _ours(kind, I, H, cell=True, seed=5)
    x = tl.tensor(_normal(30, (B, I)), requires_grad=True)
    states = [tl.tensor(_normal(31 + k, (B, H)), requires_grad=True)
              for k in range(2 if kind == "lstm" else 1)]
    hx = tuple(states) if kind == "lstm" else states[0]
    assert gradcheck_module(cell, lambda: _joined(cell(x, hx))) == 4
    assert gradcheck(lambda t, *s: _joined(cell(t, tuple(s) if len(s) == 2 else s[0])),
                     x, *states)


def _values_and_gradients(run, tensors, seed=40):
    for t in tensors:
        t.grad = None
    out = _flat(run(*tensors))
    upstream = np.random.default_rng(seed)
    sum((o * tl.tensor(upstream.standard_normal(o.shape))).sum() for o in out).backward()
    return [o.numpy() for o in out] + [t.grad.numpy().copy() for t in tensors]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("with_state, bias", [(False, True), (True, True), (True, False)])
def test_the_fused_layers_equal_their_reference_twin(kind, reverse, with_state, bias):
    tensors = _layer_arrays(kind, with_state, bias, seed=50)
    fused = _values_and_gradients(_call_layer(kind, with_state, reverse, bias), tensors)
    twin = _values_and_gradients(_call_layer(kind, with_state, reverse, bias, True), tensors)
    with tl.reference_mode():
        plain = _values_and_gradients(_call_layer(kind, with_state, reverse, bias), tensors)
    for a, b, c in zip(fused, twin, plain, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-13)
        np.testing.assert_allclose(c, b, rtol=1e-10, atol=1e-13)


def test_the_reference_twin_refuses_an_unknown_kind():
    x, *weights = _layer_arrays("gru", False)
    with pytest.raises(ValueError, match="kind must be one of .*got 'elman'"):
        F.recurrent_layer_reference("elman", x, None, *weights)


def test_layer_outputs_sit_at_their_time_positions_when_reversed():
    x, w_ih, w_hh = (t.detach() for t in _layer_arrays("rnn_tanh", False, bias=False))
    forward, h_forward = F.rnn_layer(x, None, w_ih, w_hh)
    backward, h_backward = F.rnn_layer(x, None, w_ih, w_hh, reverse=True)
    flipped, _ = F.rnn_layer(tl.tensor(x.numpy()[::-1].copy()), None, w_ih, w_hh)
    np.testing.assert_allclose(backward.numpy(), flipped.numpy()[::-1], rtol=1e-12)
    np.testing.assert_array_equal(h_forward.numpy(), forward.numpy()[-1])
    np.testing.assert_array_equal(h_backward.numpy(), backward.numpy()[0])


# ----------------------------------------------------------------------------- dropout
def test_dropout_acts_between_layers_in_training_only_and_draws_from_the_modules_rng():
    x = tl.tensor(_normal(60, (6, 4, 3)))
    module = _ours("gru", 3, 8, num_layers=2, dropout=0.5, seed=11)
    twin = _ours("gru", 3, 8, num_layers=2, dropout=0.5, seed=11)
    trained, _ = module(x)
    np.testing.assert_array_equal(twin(x)[0].numpy(), trained.numpy())  # the same draws
    assert not np.array_equal(module(x)[0].numpy(), trained.numpy())   # the rng moved on
    assert np.all(trained.numpy() != 0)            # the last layer's output is not dropped
    module.eval()
    evaluated, h_n = module(x)
    assert not np.allclose(evaluated.numpy(), trained.numpy())
    plain = nn.GRU(3, 8, num_layers=2, dtype=np.float64)
    plain.load_state_dict(module.state_dict(), strict=True)
    expected, h_expected = plain(x)
    np.testing.assert_array_equal(evaluated.numpy(), expected.numpy())
    np.testing.assert_array_equal(h_n.numpy(), h_expected.numpy())


def test_dropout_with_one_layer_warns_as_pytorch_does():
    with pytest.warns(UserWarning, match="dropout"):
        nn.LSTM(3, 4, dropout=0.2)


# -------------------------------------------------------------------------- bad input
def _bad_calls():
    gru = nn.GRU(3, 4, num_layers=2, dtype=np.float64)
    lstm = nn.LSTM(3, 4, dtype=np.float64)
    cell = nn.GRUCell(3, 4, dtype=np.float64)
    lstm_cell = nn.LSTMCell(3, 4, dtype=np.float64)
    x = _zeros(5, 2, 3)
    return [  # (module, the call, the error, what its message says)
        (gru, lambda: gru(_zeros(5, 2, 7)), ValueError, r"got shape \(5, 2, 7\)"),
        (gru, lambda: gru(_zeros(2, 3, 4, 3)), ValueError, r"got shape \(2, 3, 4, 3\)"),
        (gru, lambda: gru(x, _zeros(1, 2, 4)), ValueError,
         r"hx must have shape \(2, 2, 4\).*got \(1, 2, 4\)"),
        (gru, lambda: gru(x, _zeros(2, 3, 4)), ValueError, r"\(2, 2, 4\).*got \(2, 3, 4\)"),
        (gru, lambda: gru(_zeros(5, 3), _zeros(2, 1, 4)), ValueError,
         r"\(2, 4\).*got \(2, 1, 4\)"),
        (gru, lambda: gru(_zeros(5, 2, 3, dtype=np.float32)), TypeError, r"float32.*float64"),
        (gru, lambda: gru(x, _zeros(2, 2, 4, dtype=np.float32)), TypeError,
         r"float32.*float64"),
        (gru, lambda: gru(_zeros(5, 2, 3, dtype=np.int64)), TypeError,
         "floating-point tensor, got dtype int64"),
        (gru, lambda: gru(np.zeros((5, 2, 3))), TypeError, "GRU input must be a Tensor"),
        (lstm, lambda: lstm(x, _zeros(1, 2, 4)), TypeError,
         r"pair \(h0, c0\) or None, got Tensor"),
        (lstm, lambda: lstm(x, (_zeros(1, 2, 4),)), TypeError, "got tuple"),
        (lstm, lambda: lstm(x, (_zeros(1, 2, 4), _zeros(1, 2, 5))), ValueError,
         r"c0 must have shape \(1, 2, 4\).*got \(1, 2, 5\)"),
        (cell, lambda: cell(_zeros(2, 5)), ValueError, r"got shape \(2, 5\)"),
        (cell, lambda: cell(x[0], _zeros(3, 4)), ValueError, r"\(2, 4\), got \(3, 4\)"),
        (cell, lambda: cell(x[0].float()), TypeError, r"float32.*float64"),
        (lstm_cell, lambda: lstm_cell(x[0], _zeros(2, 4)), TypeError,
         r"pair \(h, c\) or None, got Tensor"),
        (lstm_cell, lambda: lstm_cell(x[0, 0], (_zeros(4), _zeros(1, 4))), ValueError,
         r"\(4,\), got \(1, 4\)"),
    ]


@pytest.mark.parametrize("case", range(len(_bad_calls())))
def test_bad_input_is_refused_naming_the_shapes_and_leaves_the_module_as_it_was(case):
    module, call, error, message = _bad_calls()[case]
    before = module.state_dict()
    with pytest.raises(error, match=message):
        call()
    for key, value in module.state_dict().items():
        np.testing.assert_array_equal(value, before[key])
    assert all(p.grad is None for p in module.parameters())


@pytest.mark.parametrize("build, error, message", [
    (lambda: nn.GRU(3, 0), ValueError, "GRU hidden_size must be an integer >= 1, got 0"),
    (lambda: nn.LSTM(0, 4), ValueError, "LSTM input_size"),
    (lambda: nn.RNN(3, 4, num_layers=0), ValueError, "RNN num_layers"),
    (lambda: nn.RNN(3, 4, nonlinearity="sigmoid"), ValueError, "nonlinearity.*'sigmoid'"),
    (lambda: nn.RNNCell(3, 4, nonlinearity="gelu"), ValueError, "nonlinearity.*'gelu'"),
    (lambda: nn.GRU(3, 4, num_layers=2, dropout=1.5), ValueError, "GRU dropout.*1.5"),
    (lambda: nn.GRU(3, 4, bidirectional=1), TypeError, "bidirectional must be True or False"),
    (lambda: nn.LSTM(3, 4, rng=3), TypeError, "rng must be a tensorlib.Rng"),
    (lambda: nn.GRUCell(3, 4, dtype=np.int32), TypeError, "floating-point dtype, got int32"),
])
def test_bad_constructor_arguments_are_named(build, error, message):
    with pytest.raises(error, match=message):
        build()


# ---------------------------------------------------------------------------- float32
@pytest.mark.parametrize("kind", KINDS)
def test_float32_modules_give_float32_close_to_float64(kind):
    single = _ours(kind, 3, 5, num_layers=2, bidirectional=True, dtype=np.float32, seed=8)
    double = _ours(kind, 3, 5, num_layers=2, bidirectional=True, dtype=np.float64, seed=9)
    double.load_state_dict({k: v.astype(np.float64) for k, v in single.state_dict().items()})
    x = _normal(70, (6, 2, 3))
    results = _flat(single(tl.tensor(x.astype(np.float32))))
    assert all(r.dtype == np.float32 for r in results)
    for low, high in zip(results, _flat(double(tl.tensor(x))), strict=True):
        np.testing.assert_allclose(low.numpy(), high.numpy(), rtol=1e-5, atol=1e-5)
    step = _flat(_ours(kind, 3, 5, cell=True, dtype=np.float32)(tl.tensor(x[0].astype("f4"))))
    assert all(r.dtype == np.float32 for r in step)


# ---------------------------------------------------------------------------- training
def test_a_gru_learns_the_running_mean_of_a_sequence():
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.gru = nn.GRU(1, 16, batch_first=True, rng=Rng(0))
            self.head = nn.Linear(16, 1, rng=Rng(1))

        def forward(self, x):
            return self.head(self.gru(x)[0])

    model = Model()
    optimizer = AdamW(model, lr=0.03)
    signs = np.random.default_rng(0).choice([-1.0, 1.0], size=(64, 8, 1))
    x = tl.tensor(signs.astype(np.float32))
    y = tl.tensor((np.cumsum(signs, axis=1) / np.arange(1, 9)[:, None]).astype(np.float32))
    losses = []
    for _ in range(100):
        loss = ((model(x) - y) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[0] > 0.2 and losses[-1] < 0.005, losses[::10]
