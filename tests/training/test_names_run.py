"""A names run as a library: prepare, train, save, read back, load and sample, printing
nothing (the command line's end-to-end tests are in test_cli.py)."""

import dataclasses
import json
import math

import numpy as np
import pytest

from tensorlib import Rng
from tensorlib.command_line.names_gpt import (
    CONFIG_FORMAT,
    MAX_SEED,
    NamesSettings,
    RunConfigError,
    load_names_model,
    prepare_names_run,
    read_run_config,
    run_record,
    sample_names,
    save_names_run,
    train_names_run,
)
from tensorlib.saving import checkpoint

TINY = NamesSettings(steps=4, layers=1, channels=8, heads=2, context_length=4, batch_size=4,
                     eval_windows=20, seed=3)


@pytest.fixture(scope="module")
def trained():
    """One tiny run, trained and saved; shared by the tests that only read it."""
    run = prepare_names_run(TINY)
    result = train_names_run(run, progress=False)
    return run, result


@pytest.fixture
def saved(trained, tmp_path):
    """The tiny run saved into a folder that does not exist yet: its three paths."""
    run, result = trained
    return save_names_run(run, result, tmp_path / "run" / "inner")


def test_settings_derive_the_schedule_and_check_the_seed():
    assert (TINY.warmup_steps, TINY.evaluate_every) == (0, 1)
    assert TINY.min_learning_rate == pytest.approx(3e-4)
    default = NamesSettings()
    assert (default.warmup_steps, default.evaluate_every) == (100, 150)
    assert NamesSettings(steps=50, eval_every=7).evaluate_every == 7
    with pytest.raises(ValueError, match="seed"):
        NamesSettings(seed=MAX_SEED + 1)
    with pytest.raises(ValueError, match="eval_windows"):
        NamesSettings(eval_windows=-1)


def test_prepare_builds_the_split_the_windows_and_the_model(trained):
    run, _ = trained
    assert len(run.train_words) + len(run.validation_words) + len(run.test_words) == \
        len(run.words)
    assert run.tokenizer.vocabulary_size == 27
    for inputs, targets in (run.train_windows, run.validation_windows):
        assert inputs.shape == targets.shape == (20, 4)
        np.testing.assert_array_equal(inputs[:, 1:], targets[:, :-1])
    assert run.model.config.channels == 8 and run.model.config.context_length == 4
    assert abs(run.initial_validation_loss - math.log(27)) < 0.1  # the head scaled by 0.1


def test_prepare_refuses_a_context_longer_than_the_validation_text():
    with pytest.raises(ValueError, match="a context of 10000000 tokens is longer"):
        prepare_names_run(dataclasses.replace(TINY, context_length=10_000_000))


def test_training_records_every_step_and_prints_nothing(capsys):
    run = prepare_names_run(TINY)
    result = train_names_run(run, progress=False)
    assert capsys.readouterr() == ("", "")
    assert len(result.history) == 4 and result.seconds > 0
    assert [step for step, _ in result.history.evaluations()] == [1, 2, 3, 4]
    losses = result.losses
    assert losses.validation_loss == result.history.final()["validation_loss"]
    assert losses.bigram_validation_loss < losses.initial_validation_loss
    again = train_names_run(prepare_names_run(TINY), progress=False)
    assert again.losses == losses  # every loss is a function of the settings


def test_the_run_config_round_trips(trained, saved):
    run, result = trained
    checkpoint_path, config_path, figure_path = saved
    assert [path.name for path in saved] == ["checkpoint.tlckpt", "config.json",
                                             "loss_curve.png"]
    assert figure_path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads(config_path.read_text()) == run_record(run, result)
    config = read_run_config(config_path)
    assert config.model == run.model.config
    assert config.tokenizer.characters == run.tokenizer.characters
    assert (config.seed, config.kind, config.max_name_length) == (3, "last",
                                                                  run.max_name_length)
    assert config.record["results"]["validation_loss"] == result.losses.validation_loss
    model = load_names_model(config.model, checkpoint_path)
    loaded = dict(model.named_parameters())
    for name, parameter in run.model.named_parameters():
        np.testing.assert_array_equal(loaded[name].numpy(), parameter.numpy(), err_msg=name)
    assert sample_names(model, config.tokenizer, 5, Rng(3), config.max_name_length) == \
        sample_names(run.model, run.tokenizer, 5, Rng(3), run.max_name_length)


def test_the_checkpoint_holds_the_optimizer_unless_weights_only(trained, tmp_path):
    run, result = trained
    full, _, _ = save_names_run(run, result, tmp_path / "full")
    light, _, _ = save_names_run(run, result, tmp_path / "light", weights_only=True)
    assert checkpoint.inspect(full)["adamw"] is not None
    assert checkpoint.inspect(light)["adamw"] is None
    assert checkpoint.inspect(light)["rng_state"] is None


@pytest.mark.parametrize(("change", "message"), [
    (lambda record: record.pop("model"), "has no 'model' entry"),
    (lambda record: record.update(model=[1, 2]), "'model' must be an object"),
    (lambda record: record["model"].update(heads=3), "bad model configuration"),
    (lambda record: record.update(characters=list("ba.")), "'characters'"),
    (lambda record: record.update(characters=list(".ab")), "3 characters but vocabulary_size"),
    (lambda record: record.update(version=2), "has version 2"),
    (lambda record: record.update(format="something else"), CONFIG_FORMAT),
])
def test_a_bad_run_config_raises_naming_the_entry(saved, change, message):
    _, config_path, _ = saved
    record = json.loads(config_path.read_text())
    change(record)
    config_path.write_text(json.dumps(record))
    with pytest.raises(RunConfigError, match=message) as raised:
        read_run_config(config_path)
    assert str(config_path) in str(raised.value)


@pytest.mark.parametrize(("entry", "value"), [("seed", -1), ("seed", "3"),
                                              ("max_name_length", True)])
def test_a_bad_integer_entry_raises_when_it_is_read(saved, entry, value):
    _, config_path, _ = saved
    record = json.loads(config_path.read_text())
    record[entry] = value
    config_path.write_text(json.dumps(record))
    config = read_run_config(config_path)  # the entries that are not needed are not checked
    with pytest.raises(RunConfigError, match=f"'{entry}' must be a non-negative integer"):
        getattr(config, entry)


def test_missing_and_unreadable_configs(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_run_config(tmp_path / "config.json")
    (tmp_path / "config.json").write_bytes(b"\xff{")
    with pytest.raises(RunConfigError, match="is not valid JSON"):
        read_run_config(tmp_path / "config.json")


def test_loading_a_checkpoint_of_another_shape_fails(saved, trained):
    run, _ = trained
    checkpoint_path, _, _ = saved
    wider = dataclasses.replace(run.model.config, channels=16)
    with pytest.raises(checkpoint.CheckpointError):
        load_names_model(wider, checkpoint_path)


def test_sampled_names_end_at_the_boundary_or_the_length_limit(trained):
    run, _ = trained
    names = sample_names(run.model, run.tokenizer, 8, Rng(1), max_length=3)
    assert len(names) == 8 and all(len(name) <= 3 for name in names)
    assert all(set(name) <= set("abcdefghijklmnopqrstuvwxyz") for name in names)
    assert sample_names(run.model, run.tokenizer, 0, Rng(1), max_length=3) == []
