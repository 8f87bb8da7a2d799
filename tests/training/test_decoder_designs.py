"""Notebook 15b's table of decoder designs (tensorlib.training.decoder_designs): each design
is the ladder's decoder with the pieces it names, trained on the ladder's batches, and the
records of separate processes join into one table."""

import dataclasses

import numpy as np
import pytest

from tensorlib.nn import RMSNorm
from tensorlib.training.decoder_designs import (
    DESIGNS,
    build_design,
    design_table,
    merge_design_records,
    run_designs,
)
from tensorlib.training.ladder import Budget, build_rung, ladder_data, run_rung


@pytest.fixture(scope="module")
def data():
    """The ladder's data with 300 validation names and training-sample names, to be quick."""
    full = ladder_data(0)
    return dataclasses.replace(full, validation=tuple(a[:300] for a in full.validation),
                               train_sample=tuple(a[:300] for a in full.train_sample))


def test_gpt2_is_the_ladders_decoder_rung_and_the_others_swap_one_piece(data):
    reference = build_rung("decoder", data, seed=3)
    gpt2 = build_design("gpt2", data, seed=3)
    for (name, a), (other, b) in zip(reference.state_dict().items(),
                                     gpt2.state_dict().items(), strict=True):
        assert name == other
        np.testing.assert_array_equal(a, b)
    modern = build_design("modern", data)
    assert isinstance(modern.final_norm, RMSNorm) and modern.positional_embedding is None
    assert modern.blocks[0].mlp_gate.weight.shape == (176, 64)
    assert set(DESIGNS) == {"gpt2", "rms_norm", "rotary", "swiglu", "modern", "llama"}
    llama = build_design("llama", data)
    assert not any(name.endswith("bias") for name in llama.state_dict())


def test_a_design_trains_as_the_ladders_rung_does(data):
    budget = Budget.of_steps(20)
    record = run_designs(["gpt2"], [0], data, budget, steps=4)
    result, _ = run_rung("decoder", data, budget, steps=4, progress=False)
    run = record["designs"]["gpt2"]["0"]
    assert run["validation_loss"] == result.validation_loss and run["steps"] == 4
    assert run["characters"] == result.characters


def test_records_of_separate_processes_join_and_print_as_one_table(data):
    budget = Budget.of_steps(10)
    first = run_designs(["gpt2", "rotary"], [1], data, budget, steps=2)
    second = run_designs(["gpt2", "rotary"], [0], data, budget, steps=2)
    joined = merge_design_records([first, second])
    assert joined["seeds"] == [0, 1] and list(joined["designs"]["rotary"]) == ["0", "1"]
    table = design_table(joined).splitlines()
    assert table[0].split()[:3] == ["design", "pieces", "parameters"]
    assert table[2].startswith("rotary    rotary for learned positions")
    losses = [joined["designs"][d][s]["validation_loss"] for d in ("gpt2", "rotary")
              for s in ("0", "1")]
    paired = np.mean([losses[2] - losses[0], losses[3] - losses[1]])
    assert table[2].endswith(f"{paired:+8.4f}")
    with pytest.raises(ValueError, match="design 'gpt2' seed 1 is in two records"):
        merge_design_records([first, first])
    with pytest.raises(ValueError, match="different budgets"):
        merge_design_records([first, run_designs(["gpt2"], [2], data, Budget.of_steps(11),
                                                 steps=1)])
