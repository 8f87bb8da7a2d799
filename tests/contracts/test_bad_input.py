"""Bad input across the public API: every layer, the loss, both optimizers, the data helpers.

Property tests feed wrong shapes, wrong dtypes, out-of-range ids and targets, NaNs and empty
batches, and check three things each time:

* the exception is one a Python user expects (``ValueError``, ``TypeError``, ``IndexError``,
  ``KeyError``), raised by the call that received the bad input;
* its message names what was wrong (the offending shape, dtype, id or value);
* nothing changed: parameter values, versions and gradients, optimizer state and
  ``rng.state`` are exactly as before.

Non-finite values are a separate policy, decided per API (docs/reliability.md): layers
propagate NaN and inf like numpy and PyTorch, and a NaN in one batch row never leaks into
another; the loss makes them visible (a NaN loss, never a
finite-looking number); optimizer steps reject them before changing anything; the training
loop stops with ``TrainingDivergedError`` (tests/contracts/test_numerics.py).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tensorlib as tl
from tensorlib import Rng
from tensorlib.data import (
    CharTokenizer,
    batches,
    context_target_pairs,
    random_batch,
    sequence_targets,
    train_validation_test_split,
)
from tensorlib.nn import (
    MLP,
    BatchNorm1d,
    Decoder,
    DecoderBlock,
    DecoderConfig,
    Dropout,
    Embedding,
    LayerNorm,
    Linear,
    Module,
    MultiheadAttention,
    Parameter,
    PositionalEmbedding,
)
from tensorlib.nn import functional as F
from tensorlib.optim import SGD, AdamW

from helpers import state_picture

PROPERTY = settings(max_examples=40, deadline=None, derandomize=True, database=None)
CLEAR = (ValueError, TypeError, IndexError, KeyError)
NON_FLOAT_DTYPES = [np.int8, np.int32, np.int64, np.uint8, np.bool_, np.complex64]


# =============================================================================== helpers
def state_of(*objects) -> list:
    """A bit-exact picture of everything a call could change."""
    picture = []
    for thing in objects:
        if isinstance(thing, Module):
            picture.append([(name, p.numpy().tobytes(), p.dtype.str, p.shape, p.version,
                             None if p.grad is None else np.asarray(p.grad).tobytes(),
                             p.requires_grad)
                            for name, p in thing.named_parameters()])
            picture.append([(name, b.numpy().tobytes(), b.version)
                            for name, b in thing.named_buffers()])
            picture.append([m.training for m in thing.modules()])
        elif isinstance(thing, Rng):
            picture.append(thing.state)
        elif isinstance(thing, (SGD, AdamW)):
            picture.append(state_picture(thing.state_dict()))
        elif isinstance(thing, np.ndarray):
            picture.append((thing.shape, thing.dtype.str, thing.tobytes()))
        elif isinstance(thing, tl.Tensor):
            picture.append((thing.shape, thing.numpy().tobytes(), thing.version, thing.grad))
        else:
            raise TypeError(f"cannot picture {type(thing).__name__}")
    return picture


def rejected(call, expected, fragments, *watched) -> BaseException:
    """``call()`` raises ``expected`` (one of the clear types) whose message contains every
    fragment, and changes none of ``watched``."""
    before = state_of(*watched)
    with pytest.raises(CLEAR) as info:
        call()
    error = info.value
    assert isinstance(error, expected), f"{type(error).__name__}: {error}"
    message = str(error)
    for fragment in fragments:
        assert str(fragment) in message, f"{fragment!r} not in {message!r}"
    assert state_of(*watched) == before, f"state changed by a rejected call ({message})"
    return error


def floats(shape, seed=0, dtype=np.float32) -> tl.Tensor:
    return tl.Tensor(Rng(seed).normal(0.0, 1.0, size=shape).astype(dtype))


def wrong_last_axis(width: int, min_dims: int = 1, max_dims: int = 3):
    """Shapes whose last axis is not ``width`` (other axes 0..3, so empty batches too)."""
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=0,
                            max_side=width + 3).filter(lambda shape: shape[-1] != width)


def first_out_of_range(ids: np.ndarray, limit: int) -> int:
    bad = (ids < 0) | (ids >= limit)
    return int(ids[bad].reshape(-1)[0])


# =============================================================================== layers
@PROPERTY
@given(width=st.integers(1, 5), out=st.integers(1, 4), data=st.data())
def test_linear_rejects_wrong_widths_and_dtypes(width, out, data):
    layer = Linear(width, out, rng=Rng(1))
    shape = data.draw(wrong_last_axis(width))
    rejected(lambda: layer(tl.zeros(*shape)), ValueError, [shape, width], layer)
    dtype = np.dtype(data.draw(st.sampled_from(NON_FLOAT_DTYPES)))
    good = np.zeros((2, width), dtype=dtype)
    rejected(lambda: layer(tl.Tensor(good)), TypeError, [dtype.name], layer)
    rejected(lambda: layer(good), TypeError, ["Tensor", "ndarray"], layer)
    other = np.float64 if data.draw(st.booleans()) else np.float16
    rejected(lambda: layer(floats((3, width), dtype=other)), TypeError,
             [np.dtype(other).name, "float32"], layer)


@PROPERTY
@given(vocabulary=st.integers(1, 6), data=st.data())
def test_embedding_rejects_out_of_range_and_non_integer_ids(vocabulary, data):
    layer = Embedding(vocabulary, 3, rng=Rng(2))
    ids = data.draw(hnp.arrays(np.int64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=4),
                               elements=st.integers(-2**40, 2**40)).filter(
        lambda a: ((a < 0) | (a >= vocabulary)).any()))
    error = rejected(lambda: layer(ids), IndexError,
                     [f"id {first_out_of_range(ids, vocabulary)} ", f"[0, {vocabulary})"], layer)
    assert "position" in str(error)
    rejected(lambda: layer(tl.Tensor(ids)), IndexError, [f"[0, {vocabulary})"], layer)
    rejected(lambda: layer(ids.astype(np.float64)), TypeError, ["float64"], layer)
    rejected(lambda: layer([*ids.reshape(-1).tolist(), "x"]), TypeError, ["integer"], layer)


def test_embedding_names_huge_unsigned_ids_exactly():
    layer = Embedding(5, 2, rng=Rng(2))
    huge = np.array([1, 2**63 + 7], dtype=np.uint64)
    rejected(lambda: layer(huge), IndexError, [str(2**63 + 7), "position (1,)"], layer)
    rejected(lambda: layer(tl.tensor([1.5])), TypeError, ["float32"], layer)
    rejected(lambda: layer([True, False]), TypeError, ["bool"], layer)


@PROPERTY
@given(context=st.integers(1, 5), width=st.integers(1, 4), extra=st.integers(1, 3),
       batch=st.integers(0, 2))
def test_positional_embedding_rejects_long_sequences_and_wrong_widths(context, width, extra,
                                                                    batch):
    layer = PositionalEmbedding(context, width, rng=Rng(3))
    length = context + extra
    rejected(lambda: layer(tl.zeros(batch, length, width)), ValueError,
             [f"sequence length {length}", f"context length {context}"], layer)
    shape = (batch, context, width + extra)
    rejected(lambda: layer(tl.zeros(*shape)), ValueError, [shape], layer)
    rejected(lambda: layer(tl.zeros(width)), ValueError, [(width,)], layer)


@PROPERTY
@given(width=st.integers(1, 6), data=st.data())
def test_layer_norm_rejects_wrong_widths_and_dtypes(width, data):
    layer = LayerNorm(width)
    with tl.no_grad():
        layer.weight.add_(1.5)  # not the initial values, so a stray reset would show
    shape = data.draw(wrong_last_axis(width))
    rejected(lambda: layer(tl.zeros(*shape)), ValueError, [shape], layer)
    dtype = np.dtype(data.draw(st.sampled_from(NON_FLOAT_DTYPES)))
    rejected(lambda: layer(tl.Tensor(np.ones((2, width), dtype=dtype))), TypeError,
             [dtype.name], layer)


@PROPERTY
@given(width=st.integers(1, 6), data=st.data())
def test_batch_norm_rejects_wrong_channels_dtypes_and_one_value_per_channel(width, data):
    layer = BatchNorm1d(width)
    layer(floats((4, width), seed=7))  # running statistics off their initial values
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=width + 3)
                      .filter(lambda shape: len(shape) not in (2, 3) or shape[1] != width))
    rejected(lambda: layer(tl.zeros(*shape)), ValueError, [shape], layer)
    dtype = np.dtype(data.draw(st.sampled_from(NON_FLOAT_DTYPES)))
    rejected(lambda: layer(tl.Tensor(np.ones((2, width), dtype=dtype))), TypeError,
             [dtype.name], layer)
    rejected(lambda: layer(tl.zeros(1, width)), ValueError, ["more than 1 value"], layer)


@PROPERTY
@given(p=st.floats(0.05, 0.95), dtype=st.sampled_from(NON_FLOAT_DTYPES),
       bad_p=st.one_of(st.floats(1.0, 1e9), st.floats(-1e9, -1e-9), st.just(float("nan"))))
def test_dropout_rejects_non_float_input_without_drawing(p, dtype, bad_p):
    rng = Rng(4)
    layer = Dropout(p, rng=rng)
    values = np.ones((3, 2), dtype=dtype)
    rejected(lambda: layer(tl.Tensor(values)), TypeError, [np.dtype(dtype).name], rng, layer)
    rejected(lambda: layer(values), TypeError, ["Tensor", "ndarray"], rng, layer)
    rejected(lambda: Dropout(bad_p, rng=rng), ValueError, [repr(bad_p)], rng)
    rejected(lambda: F.dropout(floats((2, 2)), bad_p, rng=rng), ValueError, [repr(bad_p)], rng)


def attention_layer(kind: str) -> tuple[Module, Rng]:
    """The layer and the generator its dropouts draw from (a draw before an error shows)."""
    rng = Rng(5)
    if kind == "MultiheadAttention":
        return MultiheadAttention(4, 2, dropout=0.5, rng=rng), rng
    return DecoderBlock(4, 2, dropout=0.5, rng=rng), rng


ATTENTION = ["DecoderBlock", "MultiheadAttention"]


@PROPERTY
@given(kind=st.sampled_from(ATTENTION),
       shape=hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=5).filter(
           lambda s: len(s) != 3 or s[-1] != 4))
def test_attention_and_blocks_reject_wrong_shapes(kind, shape):
    layer, rng = attention_layer(kind)
    rejected(lambda: layer(tl.zeros(*shape)), ValueError, [shape, kind], layer, rng)


@pytest.mark.parametrize("kind", ATTENTION)
def test_attention_and_blocks_reject_empty_sequences_but_accept_empty_batches(kind):
    layer, rng = attention_layer(kind)
    rejected(lambda: layer(tl.zeros(2, 0, 4)), ValueError, [(2, 0, 4), "position"], layer, rng)
    x = tl.zeros(0, 3, 4, requires_grad=True)
    out = layer(x)
    assert out.shape == (0, 3, 4)
    out.sum().backward()
    assert x.grad.shape == (0, 3, 4)


@PROPERTY
@given(width=st.integers(1, 4), data=st.data())
def test_mlp_rejects_wrong_widths(width, data):
    mlp = MLP(width, [3, 2], 2, ["relu", "tanh", None], rng=Rng(6))
    shape = data.draw(wrong_last_axis(width))
    rejected(lambda: mlp(tl.zeros(*shape)), ValueError, [shape], mlp)
    rejected(lambda: mlp(tl.Tensor(np.ones((1, width), np.int32))), TypeError, ["int32"], mlp)


CONFIG = DecoderConfig(vocabulary_size=7, context_length=4, channels=4, heads=2, layers=1)


@pytest.fixture(scope="module")
def decoder():
    return Decoder(CONFIG, rng=Rng(7))


@PROPERTY
@given(data=st.data())
def test_decoder_rejects_bad_token_ids(decoder, data):
    vocabulary, context = CONFIG.vocabulary_size, CONFIG.context_length
    shape = data.draw(st.tuples(st.integers(1, 3), st.integers(1, context)))
    ids = data.draw(hnp.arrays(np.int64, shape, elements=st.integers(-50, 50)).filter(
        lambda a: ((a < 0) | (a >= vocabulary)).any()))
    rejected(lambda: decoder(ids), IndexError, [f"id {first_out_of_range(ids, vocabulary)} "],
             decoder)
    good = np.abs(ids) % vocabulary
    rejected(lambda: decoder.loss(good, ids), IndexError,
             [f"target {first_out_of_range(ids, vocabulary)} "], decoder)
    rejected(lambda: decoder(good.astype(np.float32)), TypeError, ["float32"], decoder)
    long = np.zeros((1, context + data.draw(st.integers(1, 3))), dtype=np.int64)
    rejected(lambda: decoder(long), ValueError,
             [f"sequence length {long.shape[1]}", f"context length {context}"], decoder)
    wrong_rank = data.draw(hnp.array_shapes(min_dims=1, max_dims=4, max_side=3).filter(
        lambda s: len(s) != 2))
    rejected(lambda: decoder(np.zeros(wrong_rank, np.int64)), ValueError, [wrong_rank], decoder)
    other = (shape[0], shape[1] + 1) if shape[1] < context else (shape[0] + 1, shape[1])
    rejected(lambda: decoder.loss(good, np.zeros(other, np.int64)), ValueError,
             [other, shape], decoder)


@pytest.mark.parametrize("shape", [(0, 3), (2, 0), (0, 0)])
def test_decoder_rejects_empty_batches(decoder, shape):
    rejected(lambda: decoder(np.zeros(shape, np.int64)), ValueError, [shape], decoder)
    rejected(lambda: decoder.loss(np.zeros(shape, np.int64), np.zeros(shape, np.int64)),
             ValueError, [shape], decoder)


@pytest.mark.parametrize("build, x", [
    (lambda: Linear(3, 2, rng=Rng(1)), lambda: tl.zeros(0, 3, requires_grad=True)),
    (lambda: LayerNorm(3), lambda: tl.zeros(0, 3, requires_grad=True)),
    (lambda: BatchNorm1d(3), lambda: tl.zeros(0, 3, requires_grad=True)),
    (lambda: MLP(3, [4], 2, ["relu", None], rng=Rng(1)), lambda: tl.zeros(0, 3,
                                                                          requires_grad=True)),
    (lambda: Dropout(0.5, rng=Rng(1)), lambda: tl.zeros(0, 3, requires_grad=True)),
    (lambda: PositionalEmbedding(4, 3, rng=Rng(1)), lambda: tl.zeros(2, 0, 3,
                                                                     requires_grad=True)),
])
def test_layers_pass_empty_batches_through_like_pytorch(build, x):
    """An empty batch is not an error for a layer (PyTorch agrees): empty in, empty out,
    and the backward leaves zero gradients."""
    layer, inputs = build(), x()
    out = layer(inputs)
    assert out.numel() == 0 and out.shape[:-1] == inputs.shape[:-1]
    out.sum().backward()
    assert inputs.grad.shape == inputs.shape
    for parameter in layer.parameters():
        assert parameter.grad is None or not np.any(parameter.grad)


# =============================================================================== NaN policy
def test_layers_propagate_nan_within_its_batch_row_like_pytorch():
    """A NaN in the input is data, not an error: it shows up in the output of its own batch
    row and nowhere else. (Inside a sequence it reaches every position, also earlier ones,
    as in PyTorch: a masked attention weight is 0, and 0 * NaN is NaN.)"""
    x = floats((3, 4), seed=1).numpy().copy()
    x[1, 2] = np.nan
    for layer in (Linear(4, 5, rng=Rng(1)), LayerNorm(4), MLP(4, [3], 2, ["gelu", None])):
        with np.errstate(invalid="ignore"):
            out = layer(tl.Tensor(x)).data
        assert np.isnan(out[1]).all() and np.isfinite(out[[0, 2]]).all(), type(layer).__name__
    sequence = floats((2, 5, 4), seed=2).numpy().copy()
    sequence[0, 2, 1] = np.nan  # batch row 0, position 2
    block = DecoderBlock(4, 2, rng=Rng(3))
    with np.errstate(invalid="ignore"):
        out = block(tl.Tensor(sequence)).data  # (B, T, C)
    assert np.isnan(out[0]).any(axis=-1).all() and np.isfinite(out[1]).all()


@PROPERTY
@given(bad=st.sampled_from([np.nan, np.inf, -np.inf]), row=st.integers(0, 2),
       column=st.integers(0, 3), target=st.integers(0, 3))
def test_cross_entropy_makes_non_finite_logits_visible(bad, row, column, target):
    """A non-finite logit never yields a finite-looking loss, except -inf on a class that is
    not the target, which is a legitimate probability of zero (PyTorch agrees)."""
    logits = floats((3, 4), seed=4).numpy().copy()
    logits[row, column] = bad
    targets = np.full(3, target)
    with np.errstate(invalid="ignore"):
        loss = F.cross_entropy(tl.Tensor(logits), targets).item()
    if bad == -np.inf and column != target:
        assert np.isfinite(loss)
    else:
        assert not np.isfinite(loss)


# =============================================================================== the loss
@PROPERTY
@given(classes=st.integers(1, 5), data=st.data())
def test_cross_entropy_rejects_bad_targets(classes, data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=2, max_side=3))
    logits = floats((*shape, classes), seed=5)
    logits.requires_grad = True
    targets = data.draw(hnp.arrays(np.int64, shape, elements=st.integers(-9, classes + 9))
                        .filter(lambda a: ((a < 0) | (a >= classes)).any()))
    rejected(lambda: F.cross_entropy(logits, targets), IndexError,
             [f"target {first_out_of_range(targets, classes)} ", f"[0, {classes})"], logits)
    good = np.abs(targets) % classes
    rejected(lambda: F.cross_entropy(logits, good.astype(np.float32)), TypeError, ["float32"],
             logits)
    rejected(lambda: F.cross_entropy(logits, good.reshape(-1)[:-1] if good.size > 1
                                     else np.zeros((2, 2), np.int64)), ValueError,
             [logits.shape], logits)
    rejected(lambda: F.cross_entropy(tl.Tensor(np.ones((*shape, classes), np.int32)), good),
             TypeError, ["int32"], logits)
    assert np.isfinite(F.cross_entropy(logits, good).item())


def test_cross_entropy_rejects_an_empty_batch_and_a_missing_class_axis():
    rejected(lambda: F.cross_entropy(tl.zeros(0, 3), np.zeros(0, np.int64)), ValueError,
             ["empty batch", (0, 3)])
    rejected(lambda: F.cross_entropy(tl.zeros(2, 0), np.zeros(2, np.int64)), ValueError,
             ["no classes", (2, 0)])
    rejected(lambda: F.cross_entropy(tl.tensor(1.0), 0), ValueError, ["0-d"])
    rejected(lambda: F.cross_entropy([[1.0, 2.0]], [0]), TypeError, ["list"])


# =============================================================================== optimizers
class Net(Module):
    def __init__(self) -> None:
        super().__init__()
        rng = Rng(8)
        self.weight = Parameter(rng.normal(0.0, 1.0, size=(3, 2)))
        self.bias = Parameter(rng.normal(0.0, 1.0, size=(2,)))
        self.frozen = Parameter(rng.normal(0.0, 1.0, size=(2,)), trainable=False)
        self.scale = Parameter(rng.normal(0.0, 1.0, size=(4,)))


OPTIMIZERS = {
    "SGD": lambda net: SGD(net, lr=0.1),
    "SGD+momentum": lambda net: SGD(net, lr=0.1, momentum=0.9),
    "AdamW": lambda net: AdamW(net, lr=0.1, weight_decay=0.1),
    "AdamW+clipping": lambda net: AdamW(net, lr=0.1, max_grad_norm=1.0),
}
TRAINABLE = ["weight", "bias", "scale"]


def give_gradients(net: Net, seed: int) -> None:
    rng = Rng(seed)
    for name in TRAINABLE:
        parameter = getattr(net, name)
        parameter.grad = rng.normal(0.0, 1.0, size=parameter.shape)


@PROPERTY
@given(kind=st.sampled_from(sorted(OPTIMIZERS)), victim=st.sampled_from(TRAINABLE),
       defect=st.sampled_from(["nan", "inf", "-inf", "shape", "bool", "complex"]),
       position=st.integers(0, 5))
def test_optimizer_steps_reject_bad_gradients_and_change_nothing(kind, victim, defect,
                                                                 position):
    net = Net()
    optimizer = OPTIMIZERS[kind](net)
    give_gradients(net, 1)
    optimizer.step()  # moments and momentum buffers exist now
    give_gradients(net, 2)
    parameter = getattr(net, victim)
    grad = parameter.grad.numpy().copy()
    if defect in ("nan", "inf", "-inf"):
        grad.reshape(-1)[position % grad.size] = float(defect)
        expected, fragment = ValueError, "non-finite"
    elif defect == "shape":
        grad = np.zeros(parameter.shape + (1,), np.float32)
        expected, fragment = ValueError, grad.shape
    else:
        grad = grad.astype(np.bool_ if defect == "bool" else np.complex64)
        expected, fragment = TypeError, grad.dtype.name
    parameter.grad.data = grad  # the .grad setter itself would refuse a bad shape or dtype
    rejected(optimizer.step, expected, [fragment, f"'{victim}'", parameter.shape], net,
             optimizer)


@pytest.mark.parametrize("kind", sorted(OPTIMIZERS))
def test_optimizer_steps_reject_overflowing_updates_and_change_nothing(kind):
    net = Net()
    optimizer = OPTIMIZERS[kind](net)
    optimizer.lr = 1e39  # a valid float, but no float32 update survives it
    give_gradients(net, 3)
    net.scale.grad = np.full(4, 1e38, np.float32)
    rejected(optimizer.step, ValueError, ["non-finite", "nothing was changed"], net, optimizer)


NOT_REAL = st.one_of(st.text(max_size=3), st.none(), st.booleans(), st.just([0.1]))
NON_FINITE = st.sampled_from([float("nan"), float("inf"), float("-inf")])
NEGATIVE = st.floats(max_value=-1e-300, allow_infinity=False)
SETTINGS = {  # (optimizer, keyword): invalid values
    ("SGD", "lr"): st.one_of(NOT_REAL, NON_FINITE, NEGATIVE),
    ("SGD", "momentum"): st.one_of(NOT_REAL, NON_FINITE, NEGATIVE, st.floats(1.0, 1e300)),
    ("AdamW", "lr"): st.one_of(NOT_REAL, NON_FINITE, NEGATIVE),
    ("AdamW", "betas"): st.one_of(NOT_REAL, NON_FINITE, NEGATIVE, st.floats(1.0, 1e300)),
    ("AdamW", "eps"): st.one_of(NOT_REAL, NON_FINITE, NEGATIVE, st.just(0.0)),
    ("AdamW", "weight_decay"): st.one_of(NOT_REAL, NON_FINITE, NEGATIVE),
    ("AdamW", "max_grad_norm"): st.one_of(NOT_REAL, NON_FINITE, NEGATIVE),
}


@PROPERTY
@given(which=st.sampled_from(sorted(SETTINGS)), data=st.data())
def test_optimizer_settings_are_validated(which, data):
    kind, keyword = which
    value = data.draw(SETTINGS[which])
    net = Net()
    arguments = {"lr": 0.1, keyword: (0.9, value) if keyword == "betas" else value}
    name = "beta2" if keyword == "betas" else keyword
    shown = str(value) if isinstance(value, float) else repr(value)
    cls = SGD if kind == "SGD" else AdamW
    rejected(lambda: cls(net, **arguments), (ValueError, TypeError), [name, shown], net)
    optimizer = cls(net, lr=0.1)
    before = state_of(optimizer)
    with pytest.raises((ValueError, TypeError)):
        setattr(optimizer, keyword, (0.9, value) if keyword == "betas" else value)
    assert state_of(optimizer) == before


def test_optimizers_reject_bad_parameter_lists():
    net = Net()
    rejected(lambda: SGD([], lr=0.1), ValueError, ["empty"])
    rejected(lambda: AdamW([net.weight, net.weight]), ValueError, ["item 1", "item 0"], net)
    rejected(lambda: SGD([tl.ones(2)], lr=0.1), TypeError, ["item 0", "Tensor"])
    rejected(lambda: AdamW(net.weight), TypeError, ["Parameter"], net)


# =============================================================================== data helpers
ALPHABET = "abcdefgh"


@PROPERTY
@given(words=st.lists(st.text(alphabet=ALPHABET, min_size=1, max_size=5), min_size=1,
                      max_size=4),
       text=st.text(alphabet=ALPHABET, max_size=6), stranger=st.sampled_from("xyzA1 é."),
       where=st.integers(0, 6))
def test_tokenizer_names_the_character_or_id_it_cannot_handle(words, text, stranger, where):
    tokenizer = CharTokenizer(words)
    known = set("".join(words))
    text = "".join(c for c in text if c in known)
    if stranger == tokenizer.boundary:
        stranger = "Z"
    position = min(where, len(text))
    bad_text = text[:position] + stranger + text[position:]
    rejected(lambda: tokenizer.encode(bad_text), ValueError,
             [repr(stranger), f"position {position}"])
    size = tokenizer.vocabulary_size
    ids = tokenizer.encode(text)
    for bad_id in (size, size + where, -1 - where):
        rejected(lambda bad_id=bad_id: tokenizer.decode([*ids, bad_id]), IndexError,
                 [f"id {bad_id} ", str(size)])
    rejected(lambda: tokenizer.decode([*ids, 1.0]), TypeError, ["1.0"])
    rejected(lambda: CharTokenizer([*words, text + "."]), ValueError, ["'.'"])
    rejected(lambda: CharTokenizer([*words, where]), TypeError, [f"word {len(words)}"])


@PROPERTY
@given(context=st.one_of(st.integers(-3, 0), st.floats(0.5, 3.5), st.booleans(),
                         st.text(max_size=2)),
       words=st.lists(st.text(alphabet="abc", max_size=4), max_size=3))
def test_context_target_pairs_rejects_bad_arguments(context, words):
    tokenizer = CharTokenizer("abc")
    expected = ValueError if isinstance(context, int) and not isinstance(context, bool) \
        else TypeError
    rejected(lambda: context_target_pairs(words, tokenizer, context), expected, [repr(context)])
    rejected(lambda: sequence_targets(words, tokenizer, context), expected, [repr(context)])
    rejected(lambda: context_target_pairs([*words, "abd"], tokenizer, 2), ValueError,
             ["'d'", "position 2"])
    rejected(lambda: context_target_pairs("abc", tokenizer, 2), TypeError, ["one string"])
    for not_a_tokenizer in ("abc", None, {"a": 1}):
        rejected(lambda t=not_a_tokenizer: context_target_pairs(words, t, 2), TypeError,
                 ["CharTokenizer", type(not_a_tokenizer).__name__])
        rejected(lambda t=not_a_tokenizer: sequence_targets(words, t, 2), TypeError,
                 ["CharTokenizer", type(not_a_tokenizer).__name__])


@PROPERTY
@given(lengths=st.lists(st.integers(0, 6), min_size=2, max_size=3).filter(
    lambda ls: len(set(ls)) > 1),
       batch_size=st.one_of(st.integers(-3, 0), st.floats(0.5, 3.0), st.booleans()))
def test_batching_rejects_misaligned_arrays_and_bad_sizes_without_drawing(lengths, batch_size):
    rng = Rng(9)
    arrays = [np.arange(n, dtype=np.float32) for n in lengths]
    rejected(lambda: batches(*arrays, batch_size=2, rng=rng), ValueError, [lengths], rng,
             *arrays)
    rejected(lambda: random_batch(rng, 2, *arrays), ValueError, [lengths], rng, *arrays)
    aligned = [np.arange(4), np.arange(8).reshape(4, 2)]
    expected = ValueError if isinstance(batch_size, int) and not isinstance(batch_size, bool) \
        else TypeError
    rejected(lambda: batches(*aligned, batch_size=batch_size, rng=rng), expected,
             [repr(batch_size)], rng, *aligned)
    rejected(lambda: random_batch(rng, batch_size, *aligned), expected, [repr(batch_size)],
             rng, *aligned)
    rejected(lambda: batches(*aligned, batch_size=2), TypeError, ["rng"], *aligned)
    rejected(lambda: random_batch(rng, 2, np.zeros((0, 3))), ValueError, ["empty"], rng)
    assert list(batches(np.zeros((0, 3)), batch_size=2, rng=rng)) == []  # an empty epoch


@PROPERTY
@given(fractions=st.one_of(
    st.tuples(st.floats(-1, 2), st.floats(-1, 2), st.floats(-1, 2)).filter(
        lambda f: min(f) < 0 or abs(sum(f) - 1) > 1e-6),
    st.tuples(st.just(float("nan")), st.just(0.5), st.just(0.5)),
    st.lists(st.floats(0, 1), min_size=0, max_size=5).filter(lambda f: len(f) != 3)))
def test_split_rejects_bad_fractions(fractions):
    items = np.arange(10)
    shown = [float(f) for f in fractions]
    rejected(lambda: train_validation_test_split(items, fractions), ValueError, [shown], items)
