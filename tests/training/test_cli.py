"""The command line, end to end with a tiny configuration, and its error messages."""

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tensorlib import Rng
from tensorlib.command_line.main import main
from tensorlib.command_line.names_gpt import sample_names
from tensorlib.data import CharTokenizer, sequence_targets, stream_windows, token_stream
from tensorlib.data.bpe import BPETokenizer
from tensorlib.nn import Decoder, DecoderConfig
from tensorlib.saving import checkpoint

TINY = ["--steps", "5", "--layers", "1", "--channels", "16", "--heads", "2",
        "--context-length", "8", "--batch-size", "4", "--eval-windows", "40"]


def sampled(stdout: str) -> list[str]:
    """The names listed under the 'sampled names' heading."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if "sampled names (seed" in line) + 1
    names = []
    for line in lines[start:]:
        if not line.startswith("  "):
            break
        names.append(line.split()[0])
    return names


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One tiny training run shared by the tests that read its output."""
    folder = tmp_path_factory.mktemp("cli") / "run"
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["train-names", *TINY, "--samples", "4", "--quiet",
                       "--output", str(folder)])
    return status, folder, out.getvalue(), err.getvalue()


def test_train_names_writes_the_run(run):
    status, folder, stdout, stderr = run
    assert status == 0
    assert stderr == ""  # --quiet: no progress bar
    assert sorted(p.name for p in folder.iterdir()) == ["checkpoint.tlckpt", "config.json",
                                                        "loss_curve.png"]
    assert (folder / "loss_curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    config = json.loads((folder / "config.json").read_text())
    assert config["model"] == {"vocabulary_size": 27, "context_length": 8, "channels": 16,
                               "heads": 2, "layers": 1, "dropout": 0.0, "eps": 1e-5,
                               "norm": "layer", "positions": "learned", "rope_theta": 10000.0,
                               "mlp": "gelu", "mlp_hidden": None, "kv_heads": None,
                               "attention_dropout": 0.0, "bias": True, "head_bias": True,
                               "tie_embeddings": False}
    assert config["characters"] == list(".abcdefghijklmnopqrstuvwxyz")
    assert config["seed"] == 0 and config["kind"] == "last"
    described = checkpoint.inspect(folder / "checkpoint.tlckpt")
    assert described["adamw"] is not None and described["rng_state"] is not None
    assert all(entry["step"] == 5 for entry in described["adamw"]["parameters"])
    assert "token_embedding.weight" in [p["name"] for p in described["parameters"]]
    results = config["results"]
    assert f"{results['bigram_validation_loss']:>10.4f}" in stdout
    assert "bigram (add-one)" in stdout and "decoder" in stdout
    assert results["validation_loss"] < 4.0  # below the uniform guess log(27) = 3.30 + noise
    assert len(sampled(stdout)) == 4


def test_printed_evaluations_follow_the_schedule(run):
    _, _, stdout, _ = run
    lines = stdout.splitlines()
    start = lines.index("step  train loss (batch)  validation loss") + 1
    steps = [int(line.split()[0]) for line in lines[start:start + 5]]
    assert steps == [1, 2, 3, 4, 5]  # --steps 5: every max(1, 5 // 10) = 1 step


def test_sample_names_repeats_the_training_samples(run, capsys):
    _, folder, stdout, _ = run
    status = main(["sample-names", "--checkpoint", str(folder / "checkpoint.tlckpt"),
                   "--count", "4"])
    out = capsys.readouterr()
    assert status == 0 and out.err == ""
    assert sampled(out.out) == sampled(stdout)  # same seed, same model, same names
    status = main(["sample-names", "--checkpoint", str(folder / "checkpoint.tlckpt"),
                   "--count", "6", "--temperature", "0.5", "--top-k", "3", "--seed", "11"])
    names = sampled(capsys.readouterr().out)
    assert status == 0 and len(names) == 6
    assert all(set(name) <= set("abcdefghijklmnopqrstuvwxyz()") for name in names)


def test_training_is_deterministic(run, tmp_path, capsys):
    _, _, stdout, _ = run
    assert main(["train-names", *TINY, "--samples", "4", "--quiet",
                 "--output", str(tmp_path / "again")]) == 0
    again = capsys.readouterr().out

    def stable(text):
        return [line for line in text.splitlines()
                if not line.startswith(("trained in", "wrote"))]

    assert stable(again) == stable(stdout)


def test_weights_only_saves_the_parameters_alone(run, tmp_path, capsys):
    _, folder, stdout, _ = run
    light = tmp_path / "light"
    assert main(["train-names", *TINY, "--samples", "4", "--quiet", "--weights-only",
                 "--output", str(light)]) == 0
    assert sampled(capsys.readouterr().out) == sampled(stdout)  # the same training
    described = checkpoint.inspect(light / "checkpoint.tlckpt")
    assert described["adamw"] is None and described["rng_state"] is None
    full = checkpoint.inspect(folder / "checkpoint.tlckpt")
    assert described["parameters"] == full["parameters"]
    size = (light / "checkpoint.tlckpt").stat().st_size
    assert size < (folder / "checkpoint.tlckpt").stat().st_size / 2
    status = main(["sample-names", "--checkpoint", str(light / "checkpoint.tlckpt"),
                   "--count", "4"])
    assert status == 0 and sampled(capsys.readouterr().out) == sampled(stdout)


def test_helpers_match_the_data_package():
    words = ["emma", "olivia", "ava"]
    tokenizer = CharTokenizer(words)
    inputs, targets = stream_windows(token_stream(words, tokenizer), 3)
    expected_inputs, expected_targets = sequence_targets(words, tokenizer, 3)
    np.testing.assert_array_equal(inputs, expected_inputs)
    np.testing.assert_array_equal(targets, expected_targets)
    model = Decoder(DecoderConfig(tokenizer.vocabulary_size, 4, 8, 2, 1), rng=Rng(0))
    names = sample_names(model, tokenizer, 5, Rng(1), max_length=6)
    assert len(names) == 5 and all(len(name) <= 6 for name in names)
    assert names == sample_names(model, tokenizer, 5, Rng(1), max_length=6)


# ------------------------------------------------------------------------------ errors
def error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if "error:" in line]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize(("options", "message"), [
    (["--steps", "-5"], "argument --steps: must be a positive integer, got -5"),
    (["--steps", "0"], "argument --steps: must be a positive integer, got 0"),
    (["--channels", "30", "--heads", "4"], "--channels (30) must be divisible by --heads (4)"),
    (["--learning-rate", "nan"], "argument --learning-rate: must be a finite number > 0"),
    (["--kind", "pets"], "argument --kind: invalid choice: 'pets'"),
    (["--layers", "two"], "argument --layers: expected a positive integer, got 'two'"),
])
def test_bad_training_options_exit_2(options, message, tmp_path, capsys):
    assert main(["train-names", *options, "--output", str(tmp_path / "out")]) == 2
    assert message in error_line(capsys)
    assert not (tmp_path / "out").exists()


def test_output_that_is_a_file_exits_2(tmp_path, capsys):
    target = tmp_path / "taken"
    target.write_text("not a folder")
    assert main(["train-names", *TINY, "--output", str(target)]) == 2
    assert "exists and is not a folder" in error_line(capsys)


def test_missing_command_and_help(capsys):
    assert main([]) == 2
    assert "required: COMMAND" in error_line(capsys)
    assert main(["sample-names", "--help"]) == 0
    assert "--checkpoint" in capsys.readouterr().out


def copy_run(run, tmp_path):
    _, folder, _, _ = run
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    return copy


def test_missing_checkpoint_exits_2(tmp_path, capsys):
    assert main(["sample-names", "--checkpoint", str(tmp_path / "nothing.tlckpt")]) == 2
    assert "checkpoint" in error_line(capsys)


def test_corrupt_checkpoint_exits_2(run, tmp_path, capsys):
    copy = copy_run(run, tmp_path)
    path = copy / "checkpoint.tlckpt"
    data = path.read_bytes()
    path.write_bytes(b"garbage!" + data[8:])
    assert main(["sample-names", "--checkpoint", str(path)]) == 2
    assert "error: cannot load checkpoint" in error_line(capsys)
    path.write_bytes(data[: len(data) // 2])  # truncated
    assert main(["sample-names", "--checkpoint", str(path)]) == 2
    assert "error: cannot load checkpoint" in error_line(capsys)


def test_bad_config_exits_2(run, tmp_path, capsys):
    copy = copy_run(run, tmp_path)
    config_path = copy / "config.json"
    original = json.loads(config_path.read_text())
    arguments = ["sample-names", "--checkpoint", str(copy / "checkpoint.tlckpt")]

    config_path.write_text("{ not json")
    assert main(arguments) == 2
    assert "is not valid JSON" in error_line(capsys)

    config_path.write_text(json.dumps({k: v for k, v in original.items() if k != "model"}))
    assert main(arguments) == 2
    assert "has no 'model' entry" in error_line(capsys)

    wider = dict(original, model=dict(original["model"], channels=32))
    config_path.write_text(json.dumps(wider))
    assert main(arguments) == 2
    assert "does not fit" in error_line(capsys)

    config_path.write_text(json.dumps(dict(original, model=dict(original["model"], heads=3))))
    assert main(arguments) == 2
    assert "divisible" in error_line(capsys)

    config_path.unlink()
    assert main(arguments) == 2
    assert f"config file {config_path} not found" in error_line(capsys)


def test_top_k_larger_than_the_vocabulary_exits_2(run, capsys):
    _, folder, _, _ = run
    assert main(["sample-names", "--checkpoint", str(folder / "checkpoint.tlckpt"),
                 "--top-k", "100"]) == 2
    assert "--top-k 100 exceeds the vocabulary size 27" in error_line(capsys)


def test_python_dash_m_reports_errors_without_a_traceback(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "tensorlib", "train-names", "--channels", "30", "--heads", "4",
         "--output", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.strip() == ("tensorlib train-names: error: --channels (30) must be "
                                     "divisible by --heads (4)")


# --------------------------------------------------------------------------------- generate
def pretrained_folder(tmp_path, with_tokenizer):
    """A small GPT-2 folder written by tensorlib; with GPT-2's file pair for its 256 byte
    tokens (no merges) when ``with_tokenizer``."""
    from tensorlib.data.bpe import _printable

    config = DecoderConfig(256, 16, 16, 2, 1, mlp="gelu_tanh", head_bias=False,
                           tie_embeddings=True)
    model = Decoder(config, rng=Rng(3))
    model.save_pretrained(tmp_path)
    if with_tokenizer:
        vocab = {_printable(bytes([b])): b for b in range(256)}
        (tmp_path / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
        (tmp_path / "merges.txt").write_text("#version: 0.2\n", encoding="utf-8")
    return model


def test_generate_continues_a_prompt_from_a_hugging_face_folder(tmp_path, capsys):
    model = pretrained_folder(tmp_path, with_tokenizer=True)
    assert main(["generate", str(tmp_path), "--prompt", "ab", "--max-new-tokens", "5",
                 "--top-k", "1"]) == 0
    heading, text = capsys.readouterr().out.split("\n", 1)
    assert heading.startswith(f"{tmp_path}: DecoderConfig(vocabulary_size=256")
    new_ids = model.generate([[97, 98]], 5, top_k=1, rng=Rng(0))[0, 2:].tolist()
    assert text == "ab" + bytes(new_ids).decode("utf-8", "replace") + "\n"


def test_generate_takes_token_ids_and_names_what_is_missing(tmp_path, capsys):
    model = pretrained_folder(tmp_path, with_tokenizer=False)
    assert main(["generate", str(tmp_path), "--prompt-ids", "5,6", "--max-new-tokens", "3",
                 "--seed", "4"]) == 0
    expected = model.generate([[5, 6]], 3, rng=Rng(4))[0, 2:].tolist()
    assert capsys.readouterr().out.splitlines()[1] == "5,6 | " + ",".join(map(str, expected))
    assert main(["generate", str(tmp_path), "--prompt", "hi"]) == 2
    assert "has no vocab.json and merges.txt to encode --prompt with" in error_line(capsys)
    assert main(["generate", str(tmp_path), "--prompt-ids", "5,300"]) == 2
    assert "at least one token id below 256" in error_line(capsys)
    assert main(["generate", str(tmp_path / "nowhere"), "--prompt-ids", "1"]) == 2
    assert "has no config.json" in error_line(capsys)


GPT2_FILES = Path(os.environ.get("TENSORLIB_GPT2_FILES")
                  or Path(__file__).resolve().parents[3] / "shared" / "data" / "gpt2")


def test_generate_reads_a_gpt2_folder_with_gpt2s_own_tokenizer_files(tmp_path, capsys):
    """GPT-2 small's shape at a tiny width (random weights): the hub's folder layout, with
    GPT-2's published vocab.json and merges.txt beside the weights."""
    if not (GPT2_FILES / "vocab.json").is_file():
        pytest.skip(f"GPT-2's vocab.json and merges.txt are not in {GPT2_FILES}")
    config = DecoderConfig(50257, 32, 16, 2, 1, mlp="gelu_tanh", head_bias=False,
                           tie_embeddings=True)
    model = Decoder(config, rng=Rng(4))
    model.save_pretrained(tmp_path)
    for name in ("vocab.json", "merges.txt"):
        shutil.copyfile(GPT2_FILES / name, tmp_path / name)
    assert main(["generate", str(tmp_path), "--prompt", "Hello, world", "--max-new-tokens",
                 "4", "--top-k", "1"]) == 0
    heading, text = capsys.readouterr().out.split("\n", 1)
    assert "vocabulary_size=50257" in heading and "tie_embeddings=True" in heading
    new_ids = model.generate([[15496, 11, 995]], 4, top_k=1, rng=Rng(0))[0, 3:].tolist()
    tokenizer = BPETokenizer.from_files(tmp_path / "vocab.json", tmp_path / "merges.txt")
    assert text == "Hello, world" + tokenizer.decode(new_ids) + "\n"
