"""Every public entry point, every kind of bad argument: tensorlib's own exception, naming
the argument.

A table lists each entry point with the argument it receives and what kind of argument that
is; each kind has its bad values (None, text, a float where an int belongs, a negative or
astronomically large size, a tuple where a number belongs, an unknown dtype...). Each call
must raise ``TypeError`` (the wrong kind of thing), ``ValueError`` (the right kind, out of
range) or ``IndexError`` (a dim or index out of range): Python's own classes, not numpy's
subclasses (``UFuncTypeError``, ``AxisError``) nor ``OverflowError`` or ``AttributeError``
from deep inside, with a message that contains the argument's name (a dim argument, PyTorch's
``dim`` that also answers to numpy's ``axis``, may be named either way). A tensor changed in
place by the call is left exactly as it was (values and version).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import tensorlib as tl
import tensorlib.nn.functional as F
from tensorlib import nn
from tensorlib.optim import SGD, AdamW


class Opaque:
    """Something that is no number, array or tensor (with a repr that is the same in every
    process, for the test ids)."""

    def __repr__(self) -> str:
        return "Opaque()"


BAD_VALUES = {
    "data": [None, "a", Opaque(), [[1.0, 2.0], [3.0]], {"a": 1}],
    "shape": [None, "a", 2.5, (-2, 3), 10**20, (2, None)],
    "size": [None, "a", 2.5, -1, 0, 10**20],
    "number": [None, "a", (1, 4), [1.0, 2.0], Opaque()],
    "operand": [None, "a", Opaque(), [[1.0, 2.0], [3.0]], np.ones(3)],
    "real": [None, "a", (1, 4), float("nan"), float("inf")],
    "real or None": ["a", (1, 4), float("nan"), float("inf")],
    "bool": [None, "yes", 1, 2.5],
    "axis": ["a", 2.5, 10, -10, None],
    "axes": ["a", 2.5, 10, (0, 0), ()],
    "int": [None, "a", 2.5],
    "dtype": ["float128x", "U8", object, "no such dtype"],
    "tensor": [None, "a", 3],
    "params": [None, "a", 3, np.array(1.0), []],
}


def _x(*shape):
    return tl.tensor(np.arange(1.0, 1.0 + np.prod(shape)).reshape(shape))


# A dim argument is PyTorch's ``dim``, also accepted as numpy's ``axis``: either word names it.
DIM = re.compile(r"\b(dim|axis)\b", re.IGNORECASE)


def _parameters():
    return [nn.Parameter(np.ones((2, 3), dtype=np.float32))]


# (entry point, the call with the bad value v, the name the message must contain, kind)
ENTRY_POINTS = [
    ("tl.tensor", lambda v: tl.tensor(v), "tensor", "data"),
    ("tl.tensor dtype", lambda v: tl.tensor([1.0], dtype=v), "dtype", "dtype"),
    ("tl.zeros", lambda v: tl.zeros(v), "zeros shape", "shape"),
    ("tl.ones", lambda v: tl.ones(v), "ones shape", "shape"),
    ("tl.full shape", lambda v: tl.full(v, 1.0), "full shape", "shape"),
    ("tl.full value", lambda v: tl.full((2,), v), "full value", "number"),
    ("tl.zeros dtype", lambda v: tl.zeros(2, dtype=v), "dtype", "dtype"),
    ("Tensor.astype", lambda v: _x(2).astype(v), "astype dtype", "dtype"),
    ("Tensor.fill_", lambda v: _x(2).fill_(v), "fill_ value", "number"),
    ("Tensor.copy_", lambda v: _x(2).copy_(v), "copy_", "operand"),
    ("Tensor.add_", lambda v: _x(2).add_(v), "add_", "operand"),
    ("Tensor.add_ alpha", lambda v: _x(2).add_(1.0, alpha=v), "alpha", "number"),
    ("Tensor.mul_", lambda v: _x(2).mul_(v), "mul_", "operand"),
    ("Tensor.masked_fill", lambda v: _x(2).masked_fill(np.array([True, False]), v),
     "masked_fill value", "number"),
    ("Tensor.sum axis", lambda v: _x(2, 3).sum(axis=v), DIM, "axes"),
    ("Tensor.sum dim", lambda v: _x(2, 3).sum(v), DIM, "axes"),
    ("Tensor.sum keepdims", lambda v: _x(2, 3).sum(axis=0, keepdims=v), "keepdim", "bool"),
    ("Tensor.sum keepdim", lambda v: _x(2, 3).sum(0, keepdim=v), "keepdim", "bool"),
    ("Tensor.mean axis", lambda v: _x(2, 3).mean(axis=v), DIM, "axes"),
    ("Tensor.max axis", lambda v: _x(2, 3).max(axis=v), DIM, "axes"),
    ("Tensor.max dim", lambda v: _x(2, 3).max(v), DIM, "axis"),
    ("Tensor.amax dim", lambda v: _x(2, 3).amax(v), DIM, "axes"),
    ("Tensor.amin axis", lambda v: _x(2, 3).amin(axis=v), DIM, "axes"),
    # numpy's ddof is no argument any more (PyTorch's correction is): refused, naming it
    ("Tensor.var ddof", lambda v: _x(2, 3).var(ddof=v), "ddof", "int"),
    ("Tensor.var correction", lambda v: _x(2, 3).var(correction=v), "correction", "real"),
    ("Tensor.std correction", lambda v: _x(2, 3).std(correction=v), "correction", "real"),
    ("Tensor.var unbiased", lambda v: _x(2, 3).var(0, unbiased=v), "unbiased", "bool"),
    ("Tensor.logsumexp keepdims", lambda v: _x(2, 3).logsumexp(keepdims=v), "keepdim",
     "bool"),
    ("Tensor.logsumexp keepdim", lambda v: _x(2, 3).logsumexp(1, keepdim=v), "keepdim",
     "bool"),
    ("Tensor.softmax axis", lambda v: _x(2, 3).softmax(axis=v), DIM, "axis"),
    ("Tensor.softmax dim", lambda v: _x(2, 3).softmax(v), DIM, "axis"),
    ("Tensor.log_softmax axis", lambda v: _x(2, 3).log_softmax(axis=v), DIM, "axis"),
    ("Tensor.reshape", lambda v: _x(2, 3).reshape(v), "shape", "shape"),
    ("Tensor.transpose", lambda v: _x(2, 3).transpose(v, 1), DIM, "axis"),
    ("Tensor.unsqueeze", lambda v: _x(2, 3).unsqueeze(v), DIM, "axis"),
    ("Tensor.squeeze", lambda v: tl.zeros(1, 3).squeeze(v if v is not None else "a"),
     DIM, "axes"),
    ("Tensor.split", lambda v: _x(4).split(v), "split", "int"),
    ("Tensor.leaky_relu", lambda v: _x(2).leaky_relu(v), "negative_slope", "real"),
    ("Tensor.softplus beta", lambda v: _x(2).softplus(beta=v), "beta", "real"),
    ("Tensor.gelu", lambda v: _x(2).gelu(approximate=v), "approximate", "data"),
    ("tl.cat", lambda v: tl.cat([_x(2), v]), "cat", "tensor"),
    ("tl.concat", lambda v: tl.concat([_x(2), v]), "cat", "tensor"),  # the same function
    ("tl.stack", lambda v: tl.stack([_x(2), v]), "stack", "tensor"),
    ("F.relu", lambda v: F.relu(v), "relu input", "tensor"),
    ("F.softmax", lambda v: F.softmax(v), "softmax", "tensor"),
    ("F.cross_entropy targets", lambda v: F.cross_entropy(_x(2, 3), v), "target", "data"),
    ("F.linear weight", lambda v: F.linear(_x(2, 3), v), "linear weight", "tensor"),
    ("F.layer_norm eps", lambda v: F.layer_norm(_x(2, 3), (3,), eps=v), "eps", "real"),
    ("F.rms_norm eps", lambda v: F.rms_norm(_x(2, 3), (3,), eps=v), "eps", "real or None"),
    ("F.dropout p", lambda v: F.dropout(_x(2, 3), v), "p", "real"),
    ("F.causal_softmax scale", lambda v: F.causal_softmax(_x(2, 2), scale=v), "scale",
     "real"),
    ("nn.Linear in_features", lambda v: nn.Linear(v, 3), "in_features", "size"),
    ("nn.Linear out_features", lambda v: nn.Linear(3, v), "out_features", "size"),
    ("nn.Embedding", lambda v: nn.Embedding(v, 4), "vocabulary_size", "size"),
    ("nn.LayerNorm", lambda v: nn.LayerNorm(v), "normalized_width", "size"),
    ("nn.LayerNorm eps", lambda v: nn.LayerNorm(3, eps=v), "eps", "real"),
    ("nn.RMSNorm", lambda v: nn.RMSNorm(v), "normalized_shape", "size"),
    ("nn.RMSNorm eps", lambda v: nn.RMSNorm(3, eps=v), "eps", "real or None"),
    ("nn.LayerNorm bias", lambda v: nn.LayerNorm(3, bias=v), "bias", "bool"),
    ("nn.GroupedQueryAttention kv_heads", lambda v: nn.GroupedQueryAttention(8, 4, v),
     "kv_heads", "size"),
    ("nn.GroupedQueryAttention bias", lambda v: nn.GroupedQueryAttention(8, 4, 2, bias=v),
     "bias", "bool"),
    ("nn.MultiheadAttention attention_dropout",
     lambda v: nn.MultiheadAttention(8, 2, attention_dropout=v), "attention_dropout", "real"),
    ("DecoderConfig rope_theta", lambda v: nn.DecoderConfig(5, 4, 8, 2, 1, rope_theta=v),
     "rope_theta", "real"),
    ("DecoderConfig tie_embeddings",
     lambda v: nn.DecoderConfig(5, 4, 8, 2, 1, tie_embeddings=v), "tie_embeddings", "bool"),
    ("nn.BatchNorm1d", lambda v: nn.BatchNorm1d(v), "num_features", "size"),
    ("nn.Dropout", lambda v: nn.Dropout(v), "p", "real"),
    ("nn.RNN input_size", lambda v: nn.RNN(v, 4), "input_size", "size"),
    ("nn.GRU hidden_size", lambda v: nn.GRU(3, v), "hidden_size", "size"),
    ("nn.LSTM num_layers", lambda v: nn.LSTM(3, 4, num_layers=v), "num_layers", "size"),
    ("nn.RNN nonlinearity", lambda v: nn.RNN(3, 4, nonlinearity=v), "nonlinearity", "data"),
    ("nn.RNN dropout", lambda v: nn.RNN(3, 4, num_layers=2, dropout=v), "dropout", "real"),
    ("nn.GRU bias", lambda v: nn.GRU(3, 4, bias=v), "bias", "bool"),
    ("nn.LSTM batch_first", lambda v: nn.LSTM(3, 4, batch_first=v), "batch_first", "bool"),
    ("nn.GRU bidirectional", lambda v: nn.GRU(3, 4, bidirectional=v), "bidirectional",
     "bool"),
    ("nn.LSTM rng", lambda v: nn.LSTM(3, 4, rng=v), "rng", "tensor"),
    ("nn.GRU dtype", lambda v: nn.GRU(3, 4, dtype=v), "dtype", "dtype"),
    ("nn.RNNCell nonlinearity", lambda v: nn.RNNCell(3, 4, nonlinearity=v), "nonlinearity",
     "data"),
    ("nn.GRUCell hidden_size", lambda v: nn.GRUCell(3, v), "hidden_size", "size"),
    ("nn.LSTMCell input_size", lambda v: nn.LSTMCell(v, 4), "input_size", "size"),
    ("nn.LSTMCell bias", lambda v: nn.LSTMCell(3, 4, bias=v), "bias", "bool"),
    ("SGD params", lambda v: SGD(v, lr=0.1), "Parameter", "params"),
    ("SGD lr", lambda v: SGD(_parameters(), lr=v), "lr", "real"),
    ("SGD momentum", lambda v: SGD(_parameters(), lr=0.1, momentum=v), "momentum", "real"),
    ("AdamW params", lambda v: AdamW(v), "Parameter", "params"),
    ("AdamW lr", lambda v: AdamW(_parameters(), lr=v), "lr", "real"),
    ("AdamW betas", lambda v: AdamW(_parameters(), betas=v), "beta", "number"),
    ("AdamW eps", lambda v: AdamW(_parameters(), eps=v), "eps", "real"),
    ("AdamW weight_decay", lambda v: AdamW(_parameters(), weight_decay=v), "weight_decay",
     "real"),
    ("Rng", lambda v: tl.Rng(v), "seed", "int"),
]

# Values that are fine for this entry point though bad for the kind in general.
ACCEPTED = {
    ("Tensor.sum axis", "None"), ("Tensor.sum dim", "None"), ("Tensor.mean axis", "None"),
    ("Tensor.max axis", "None"), ("Tensor.max dim", "None"), ("Tensor.amax dim", "None"),
    ("Tensor.amin axis", "None"), ("Tensor.squeeze", "None"), ("Tensor.softmax axis", "None"),
    ("Tensor.softmax dim", "None"), ("Tensor.log_softmax axis", "None"),
    # None is PyTorch's default correction (1) and unbiased; any finite correction is valid
    ("Tensor.var correction", "None"), ("Tensor.std correction", "None"),
    ("Tensor.var unbiased", "None"),
    ("nn.LSTM rng", "None"),  # the process-wide default generator
}
# Where the message names what was wrong in other words than the table's entry point does.
NAMED_INSTEAD = {
    # max(dim) takes one dim: several are amax's, which the message points to
    ("Tensor.max axis", "(0, 0)"): "amax(dim)", ("Tensor.max axis", "()"): "amax(dim)",
    # add_ and mul_ compute through the arithmetic op, whose own errors name the shapes
    ("Tensor.add_", "array([1., 1., 1.])"): "add: shapes (2,) and (3,)",
    ("Tensor.mul_", "array([1., 1., 1.])"): "mul: shapes (2,) and (3,)",
}
CASES = [(label, call, NAMED_INSTEAD.get((label, repr(value)), named), value)
         for label, call, named, kind in ENTRY_POINTS
         for value in BAD_VALUES[kind] if (label, repr(value)) not in ACCEPTED]


@pytest.mark.parametrize("label, call, named, value", CASES,
                         ids=[f"{label}={value!r}"[:60] for label, _, _, value in CASES])
def test_bad_input_raises_tensorlibs_own_error_naming_the_argument(label, call, named, value):
    with pytest.raises((TypeError, ValueError, IndexError)) as info:
        call(value)
    error = info.value
    assert type(error).__module__ == "builtins", f"{label}: {type(error)} leaked: {error}"
    pattern = named if isinstance(named, re.Pattern) else re.compile(re.escape(named),
                                                                        re.IGNORECASE)
    assert pattern.search(str(error)), (label, str(error))


@pytest.mark.parametrize("method, value", [
    ("fill_", None), ("fill_", "a"), ("copy_", "a"), ("copy_", np.ones(3)), ("add_", None),
    ("add_", "a"), ("mul_", (1, 2, 3)),
])
def test_a_refused_in_place_change_leaves_the_tensor_as_it_was(method, value):
    x = _x(2)
    with pytest.raises((TypeError, ValueError)):
        getattr(x, method)(value)
    assert np.array_equal(x.data, [1.0, 2.0]) and x.version == 0
