"""Tests for tensorlib.models.programmed: the hand-programmed induction core and the model that
joins a programmed module to a learned one.

The induction task, as :func:`induction_targets` defines it: at position ``t`` of ids
``(B, T)``, where the token ``ids[t]`` occurred exactly once before (at ``s < t``), the
target is ``ids[s + 1]``. The sequence-level version asks it at the last position only.
"""

import itertools

import numpy as np
import pytest

import tensorlib as tl
from tensorlib import Rng, gradcheck
from tensorlib.models.programmed import (
    ProgramAugmentedModel,
    ProgrammedAttentionHead,
    ProgrammedSequenceCore,
    induction_targets,
)
from tensorlib.nn import Decoder, DecoderConfig, Module, capture_activations
from tensorlib.nn import functional as F
from tensorlib.optim import SGD
from tensorlib.saving import checkpoint

BUFFERS = ["token_table", "position_table",
           "previous_token.query", "previous_token.key", "previous_token.value",
           "previous_token.output",
           "copying.query", "copying.key", "copying.value", "copying.output"]


def every_sequence(vocabulary_size, length):
    """All ``V ** T`` sequences, ``(V ** T, T)`` int64."""
    return np.array(list(itertools.product(range(vocabulary_size), repeat=length)),
                    dtype=np.int64)


def predictions(core, ids):
    with tl.no_grad():
        return core(ids).data.argmax(-1)  # (B, T)


# ------------------------------------------------------------------------------ the task
def test_induction_targets_by_hand():
    ids = np.array([[3, 1, 3, 2, 1, 3, 0]])
    mask, targets = induction_targets(ids)
    # t=2: 3 once before (s=0) -> 1; t=4: 1 once before (s=1) -> 3;
    # t=5: 3 twice before -> no target; t=1, 3, 6: first occurrences.
    assert mask.tolist() == [[False, False, True, False, True, False, False]]
    assert targets.tolist() == [[-1, -1, 1, -1, 3, -1, -1]]


def test_induction_targets_follower_may_be_the_token_itself():
    mask, targets = induction_targets(np.array([[2, 2, 0]]))
    assert mask.tolist() == [[False, True, False]] and targets[0, 1] == 2


def test_induction_targets_needs_integer_ids():
    with pytest.raises(TypeError, match="integer ids of shape"):
        induction_targets(np.zeros((2, 3)))
    with pytest.raises(TypeError, match="integer ids of shape"):
        induction_targets(np.zeros(3, dtype=np.int64))


# ------------------------------------------------------------------------------ solves it
@pytest.mark.parametrize("vocabulary_size, length", [(4, 6), (2, 10), (3, 7)])
def test_core_solves_induction_on_every_sequence(vocabulary_size, length):
    ids = every_sequence(vocabulary_size, length)
    core = ProgrammedSequenceCore(vocabulary_size, length)
    predicted = predictions(core, ids)
    mask, targets = induction_targets(ids)
    assert mask.sum() > 0
    wrong = (predicted != targets) & mask
    assert not wrong.any(), f"wrong at {np.argwhere(wrong)[:5].tolist()}"
    # The sequence-level task: where the last token occurred exactly once before.
    last = mask[:, -1]
    assert last.sum() > 0
    assert np.array_equal(predicted[last, -1], targets[last, -1])


def test_core_4096_sequences_counts():
    ids = every_sequence(4, 6)
    mask, targets = induction_targets(ids)
    assert len(ids) == 4096 and int(mask[:, -1].sum()) == 1620 and int(mask.sum()) == 7636
    assert np.array_equal(predictions(ProgrammedSequenceCore(4, 6), ids)[mask], targets[mask])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_core_solves_induction_on_random_long_sequences(dtype):
    vocabulary_size, length = 10, 40
    ids = Rng(0).integers(0, vocabulary_size, size=(3000, length))
    core = ProgrammedSequenceCore(vocabulary_size, length, dtype=dtype)
    mask, targets = induction_targets(ids)
    assert mask.sum() > 10000
    assert np.array_equal(predictions(core, ids)[mask], targets[mask])


def test_shorter_sequences_than_the_context_and_a_lower_sharpness():
    ids = Rng(1).integers(0, 6, size=(500, 9))
    core = ProgrammedSequenceCore(6, 32, sharpness=10.0)
    mask, targets = induction_targets(ids)
    assert np.array_equal(predictions(core, ids)[mask], targets[mask])


def test_logits_with_one_several_and_no_earlier_occurrences():
    core = ProgrammedSequenceCore(4, 8, dtype=np.float64)
    ids = np.array([[0, 1, 0, 2, 0, 3, 3, 1]])
    with tl.no_grad():
        logits = core(ids).data[0]  # (T, V)
    np.testing.assert_allclose(logits[2], [0, 10, 0, 0], atol=1e-6)  # 0 once before -> 1
    np.testing.assert_allclose(logits[4], [0, 5, 5, 0], atol=1e-6)  # twice: 1 and 2
    np.testing.assert_allclose(logits[6], [0, 0, 0, 10], atol=1e-6)  # 3 at 5 -> 3
    np.testing.assert_allclose(logits[7], [10, 0, 0, 0], atol=1e-6)  # 1 at 1 -> 0
    # No earlier occurrence: the frequencies of the tokens at positions 1..t.
    np.testing.assert_allclose(logits[0], [10, 0, 0, 0], atol=1e-6)  # t = 0: position 0
    np.testing.assert_allclose(logits[1], [0, 10, 0, 0], atol=1e-6)  # positions 1..1
    np.testing.assert_allclose(logits[3], 10 * np.array([1, 1, 1, 0]) / 3, atol=1e-6)
    np.testing.assert_allclose(logits[5], 10 * np.array([2, 1, 1, 1]) / 5, atol=1e-6)


def test_attention_maps_are_recorded_and_programmed():
    core = ProgrammedSequenceCore(5, 7, dtype=np.float64)
    ids = np.array([[0, 1, 2, 0, 3, 4, 2]])
    with capture_activations(core) as capture:
        core(ids)
    assert capture.names == ["previous_token.probabilities", "copying.probabilities"]
    previous = capture["previous_token.probabilities"]
    copying = capture["copying.probabilities"]
    assert previous.shape == copying.shape == (1, 1, 7, 7)
    expected = np.eye(7, k=-1)
    expected[0, 0] = 1.0  # position 0 attends to itself
    np.testing.assert_allclose(previous[0, 0], expected, atol=1e-7)
    assert copying[0, 0, 3].argmax() == 1 and copying[0, 0, 3, 1] > 0.999  # 0 at 0 -> 1
    assert copying[0, 0, 6].argmax() == 3 and copying[0, 0, 6, 3] > 0.999  # 2 at 2 -> 3
    # Without a capture the forward pass gives the same logits.
    with capture_activations(core):
        recorded = core(ids).data
    np.testing.assert_array_equal(recorded, core(ids).data)


def test_construction_is_deterministic():
    first, second = ProgrammedSequenceCore(6, 9), ProgrammedSequenceCore(6, 9)
    for name, value in first.state_dict().items():
        np.testing.assert_array_equal(value, second.state_dict()[name])


# ------------------------------------------------------------------------------ module state
def test_weights_are_buffers_not_parameters():
    core = ProgrammedSequenceCore(4, 6)
    assert core.parameters() == [] and core.num_parameters() == 0
    assert [name for name, _ in core.named_buffers()] == BUFFERS
    assert list(core.state_dict()) == BUFFERS
    assert all(not b.requires_grad for b in core.buffers())
    assert core.token_table.shape == (4, 14) and core.position_table.shape == (6, 14)
    assert core.copying.output.shape == (4, 4)
    assert isinstance(core.previous_token, ProgrammedAttentionHead)


def test_state_dict_round_trip():
    core = ProgrammedSequenceCore(4, 6)
    saved = core.state_dict()
    ids = every_sequence(4, 6)[::7]
    before = core(ids).data
    other = ProgrammedSequenceCore(4, 6)
    other.copying.output.data[...] = 0.0  # break it
    assert np.abs(other(ids).data).max() == 0.0
    other.load_state_dict(saved)
    np.testing.assert_array_equal(other(ids).data, before)
    with pytest.raises(ValueError, match="shape"):
        ProgrammedSequenceCore(5, 6).load_state_dict(saved)


def test_augmented_model_checkpoint_round_trip(tmp_path):
    config = DecoderConfig(vocabulary_size=4, context_length=6, channels=8, heads=1, layers=1)
    model = ProgramAugmentedModel(Decoder(config, rng=Rng(0)), ProgrammedSequenceCore(4, 6))
    model.gate.data[...] = 0.75
    path = tmp_path / "augmented.tlckpt"
    checkpoint.save(path, model)
    fresh = ProgramAugmentedModel(Decoder(config, rng=Rng(1)), ProgrammedSequenceCore(4, 6))
    checkpoint.load(path, fresh)
    ids = Rng(2).integers(0, 4, size=(3, 6))
    np.testing.assert_array_equal(fresh(ids).data, model(ids).data)
    # The whole state, buffers too, through state_dict.
    state = model.state_dict()
    assert [k for k in state if k.startswith("program.")] == ["program." + b for b in BUFFERS]
    again = ProgramAugmentedModel(Decoder(config, rng=Rng(3)), ProgrammedSequenceCore(4, 6))
    again.load_state_dict(state)
    np.testing.assert_array_equal(again(ids).data, model(ids).data)


# ------------------------------------------------------------------------------ gradients
def test_gradients_flow_to_the_input_representation():
    core = ProgrammedSequenceCore(3, 4, sharpness=1.5, logit_scale=2.0, dtype=np.float64)
    ids = np.array([[0, 1, 0, 2], [2, 2, 1, 0]])
    x = core.embed(ids)
    assert not x.requires_grad
    noise = Rng(4).normal(0.0, 0.1, size=x.shape, dtype=np.float64)
    leaf = tl.tensor(x.data + noise, requires_grad=True)
    assert gradcheck(core.forward_embedded, leaf)
    F.cross_entropy(core.forward_embedded(leaf), np.array([[0, 1, 1, 0], [1, 0, 2, 2]])
                    ).backward()
    assert leaf.grad is not None and np.abs(leaf.grad).max() > 1e-3


def test_head_gradcheck_at_the_default_sharpness_on_a_soft_input():
    core = ProgrammedSequenceCore(2, 3, sharpness=20.0, dtype=np.float64)
    leaf = tl.tensor(Rng(5).normal(0.0, 0.05, size=(1, 3, core.width), dtype=np.float64),
                     requires_grad=True)
    assert gradcheck(core.forward_embedded, leaf)


# ------------------------------------------------------------------------------ augmented
def small_decoder(seed=0, vocabulary_size=4, context_length=6):
    config = DecoderConfig(vocabulary_size=vocabulary_size, context_length=context_length,
                           channels=8, heads=2, layers=1)
    return Decoder(config, rng=Rng(seed))


def test_augmented_parameters_are_the_learned_ones_and_the_gate():
    learned, core = small_decoder(), ProgrammedSequenceCore(4, 6)
    model = ProgramAugmentedModel(learned, core)
    parameters = model.parameters()
    assert len(parameters) == len(learned.parameters()) + 1
    # A module's own parameters come first, then its children's.
    assert parameters[0] is model.gate and model.gate.shape == (1,)
    assert all(a is b for a, b in zip(parameters[1:], learned.parameters(), strict=True))
    names = [name for name, _ in model.named_parameters()]
    assert names == ["gate"] + ["learned." + n for n, _ in learned.named_parameters()]
    modules = dict(model.named_modules())
    assert modules["learned"] is learned and modules["program"] is core
    assert "program.copying.probabilities" in modules


def test_augmented_starts_equal_to_the_learned_model():
    learned = small_decoder()
    model = ProgramAugmentedModel(learned, ProgrammedSequenceCore(4, 6))
    ids = Rng(6).integers(0, 4, size=(5, 6))
    np.testing.assert_array_equal(model(ids).data, learned(ids).data)
    assert float(np.abs(model.gate.data).max()) == 0.0


def test_augmented_per_vocabulary_gate_and_its_gradient():
    model = ProgramAugmentedModel(small_decoder(), ProgrammedSequenceCore(4, 6),
                                  vocabulary_size=4)
    assert model.gate.shape == (4,)
    ids = Rng(7).integers(0, 4, size=(8, 6))
    model.loss(ids, ids).backward()
    assert model.gate.grad.shape == (4,) and np.abs(model.gate.grad).max() > 0
    assert [b.grad for b in model.program.buffers()] == [None] * len(BUFFERS)


def test_training_the_gate_makes_the_model_use_the_program():
    learned = small_decoder(seed=8)
    for parameter in learned.parameters():
        parameter.trainable = False
    model = ProgramAugmentedModel(learned, ProgrammedSequenceCore(4, 6))
    ids = Rng(9).integers(0, 4, size=(256, 6))
    mask, targets = induction_targets(ids)
    rows, columns = np.nonzero(mask)

    def accuracy():
        with tl.no_grad():
            return float((model(ids).data.argmax(-1)[mask] == targets[mask]).mean())

    before = accuracy()
    optimizer = SGD(model, lr=0.5)
    for _ in range(30):
        model.zero_grad()
        F.cross_entropy(model(ids)[rows, columns], targets[mask]).backward()
        optimizer.step()
    assert before < 0.6 and accuracy() == 1.0 and float(model.gate.data[0]) > 0.5


def test_augmented_is_task_neutral():
    class Constant(Module):
        def forward(self, ids):
            ids = np.asarray(ids)
            return tl.tensor(np.ones(ids.shape + (4,), dtype=np.float32))

    model = ProgramAugmentedModel(small_decoder(), Constant())
    model.gate.data[...] = 2.0
    ids = Rng(10).integers(0, 4, size=(2, 6))
    np.testing.assert_allclose(model(ids).data, model.learned(ids).data + 2.0, rtol=1e-6)


# ------------------------------------------------------------------------------ bad arguments
@pytest.mark.parametrize("kwargs, error, message", [
    ({"vocabulary_size": 0}, ValueError, "vocabulary_size must be a positive integer, got 0"),
    ({"vocabulary_size": 4.0}, TypeError, "vocabulary_size must be a positive integer"),
    ({"vocabulary_size": True}, TypeError, "vocabulary_size must be a positive integer"),
    ({"context_length": -2}, ValueError, "context_length must be a positive integer, got -2"),
    ({"context_length": "6"}, TypeError, "context_length must be a positive integer"),
    ({"sharpness": 0.0}, ValueError, r"sharpness must be a finite number > 0, got 0.0"),
    ({"sharpness": float("inf")}, ValueError, "sharpness must be a finite number > 0"),
    ({"sharpness": "big"}, TypeError, "sharpness must be a finite number > 0"),
    ({"logit_scale": -1.0}, ValueError, "logit_scale must be a finite number > 0"),
    ({"logit_scale": None}, TypeError, "logit_scale must be a finite number > 0"),
    ({"dtype": np.int64}, TypeError, "dtype must be a floating-point dtype"),
])
def test_core_rejects_bad_arguments(kwargs, error, message):
    arguments = {"vocabulary_size": 4, "context_length": 6, **kwargs}
    with pytest.raises(error, match=message):
        ProgrammedSequenceCore(**arguments)


def test_core_rejects_bad_ids_and_inputs():
    core = ProgrammedSequenceCore(4, 6)
    with pytest.raises(ValueError, match="sequence length 7 exceeds the context length 6"):
        core(np.zeros((1, 7), dtype=np.int64))
    with pytest.raises(ValueError, match=r"token ids of shape \(B, T\)"):
        core(np.zeros(5, dtype=np.int64))
    with pytest.raises(ValueError, match=r"token ids of shape \(B, T\)"):
        core(np.zeros((0, 3), dtype=np.int64))
    with pytest.raises(IndexError, match=r"token id 4 at position \(0, 2\) is out of range"):
        core(np.array([[0, 1, 4]]))
    with pytest.raises(TypeError, match="token ids must have an integer dtype"):
        core(np.zeros((1, 3)))
    with pytest.raises(TypeError, match=r"forward_embedded needs a floating Tensor of shape "
                                        r"\(B, T, 14\)"):
        core.forward_embedded(tl.tensor(np.zeros((1, 3, 13))))
    with pytest.raises(TypeError, match="forward_embedded needs a floating Tensor"):
        core.forward_embedded(np.zeros((1, 3, 14)))
    with pytest.raises(ValueError, match=r"1 <= T <= 6"):
        core.forward_embedded(tl.tensor(np.zeros((1, 7, 14))))


def test_head_rejects_bad_weights():
    square = np.zeros((3, 3))
    with pytest.raises(TypeError, match="ProgrammedAttentionHead key must be a 2-d floating"):
        ProgrammedAttentionHead(square, np.zeros((3, 3), dtype=np.int64), square, square, 1.0)
    with pytest.raises(ValueError, match="ProgrammedAttentionHead shapes do not fit"):
        ProgrammedAttentionHead(square, np.zeros((3, 2)), square, square, 1.0)
    with pytest.raises(ValueError, match="sharpness must be a finite number > 0"):
        ProgrammedAttentionHead(square, square, square, square, -1.0)


def test_augmented_rejects_bad_arguments():
    core = ProgrammedSequenceCore(4, 6)
    with pytest.raises(TypeError, match="ProgramAugmentedModel learned must be a Module, got "
                                        "function"):
        ProgramAugmentedModel(lambda ids: ids, core)
    with pytest.raises(TypeError, match="ProgramAugmentedModel program must be a Module, got "
                                        "ndarray"):
        ProgramAugmentedModel(small_decoder(), np.eye(4))
    with pytest.raises(ValueError, match="vocabulary_size must be a positive integer, got 0"):
        ProgramAugmentedModel(small_decoder(), core, vocabulary_size=0)
    with pytest.raises(TypeError, match="dtype must be a floating-point dtype"):
        ProgramAugmentedModel(small_decoder(), core, dtype=np.int32)
    mismatched = ProgramAugmentedModel(small_decoder(vocabulary_size=5),
                                       ProgrammedSequenceCore(4, 6))
    with pytest.raises(ValueError, match=r"the learned model gives shape \(1, 3, 5\) and the "
                                         r"program \(1, 3, 4\)"):
        mismatched(np.zeros((1, 3), dtype=np.int64))
    wrong_gate = ProgramAugmentedModel(small_decoder(), ProgrammedSequenceCore(4, 6),
                                       vocabulary_size=3)
    with pytest.raises(ValueError, match="the gate has 3 entries for 4 logits"):
        wrong_gate(np.zeros((1, 3), dtype=np.int64))
