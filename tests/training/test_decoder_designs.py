"""Notebook 15b's table of decoder designs (tensorlib.training.decoder_designs): each design
is the ladder's decoder with the pieces it names, trained on the ladder's batches, and the
records of separate processes join into one table."""

import dataclasses
import json
from pathlib import Path

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


# ==================================================================== the shipped results
SHIPPED = Path(__file__).resolve().parents[2] / "notebooks" / "data" / "decoder_designs"
LADDER = SHIPPED.parent / "ladder" / "ladder.json"


@pytest.fixture(scope="module")
def shipped():
    return json.loads((SHIPPED / "designs.json").read_text(encoding="utf-8"))


def test_the_shipped_designs_are_every_design_from_three_seeds_on_the_ladders_budget(shipped):
    assert list(shipped["designs"]) == list(DESIGNS) and shipped["seeds"] == [0, 1, 2]
    assert shipped["budget"] == dataclasses.asdict(Budget())
    characters = {run["characters"] for runs in shipped["designs"].values()
                  for run in runs.values()}
    steps = shipped["budget"]["steps"]
    for name, runs in shipped["designs"].items():
        assert list(runs) == ["0", "1", "2"], name
        for run in runs.values():
            assert run["steps"] == steps and run["validation_curve"][-1][0] == steps
    by_seed = [{run["characters"] for runs in shipped["designs"].values()
                for seed, run in runs.items() if seed == s} for s in ("0", "1", "2")]
    assert all(len(seen) == 1 for seen in by_seed) and len(characters) == 3  # paired batches
    ladder = json.loads(LADDER.read_text(encoding="utf-8"))
    decoder = next(rung for rung in ladder["rungs"] if rung["rung"] == "decoder")
    gpt2 = shipped["designs"]["gpt2"]["0"]
    assert gpt2["parameters"] == decoder["parameters"]
    assert gpt2["train_curve"][0][1] == pytest.approx(decoder["train_curve"][0][1], abs=1e-6)
    assert gpt2["validation_loss"] == pytest.approx(decoder["validation_loss"], abs=1e-3)


def test_the_shipped_readme_shows_the_shipped_table(shipped):
    readme = (SHIPPED / "README.md").read_text(encoding="utf-8")
    assert design_table(shipped) in readme
    front_page = (SHIPPED.parents[2] / "README.md").read_text(encoding="utf-8")
    for name, runs in shipped["designs"].items():
        losses = [run["validation_loss"] for run in runs.values()]
        assert f"{np.mean(losses):.4f} (3 seeds: {min(losses):.4f} to {max(losses):.4f})" \
            in front_page, name


def test_the_picture_draws_the_shipped_file(shipped):
    from tensorlib.viz import plot_design_curves

    axes = plot_design_curves(shipped).axes[0]
    labels = [line.get_label() for line in axes.get_lines()]
    mean = np.mean([run["validation_loss"] for run in shipped["designs"]["gpt2"].values()])
    assert labels[0] == f"gpt2 ({mean:.3f}, 3 seeds)" and len(labels) == len(DESIGNS)
    with pytest.raises(TypeError, match="expected a record of run_designs"):
        plot_design_curves({"rungs": []})
