"""The trained surname model shipped in notebooks/data/surnames (made by the command in
notebooks/data/README.md) loads into a Decoder and has the validation loss the README and
notebooks 17 and 18 state."""

import json
import math
from pathlib import Path

import numpy as np

from tensorlib import Rng, no_grad
from tensorlib.data import CharTokenizer, names, sequence_targets, train_validation_test_split
from tensorlib.nn import Decoder, DecoderConfig
from tensorlib.saving import checkpoint

RUN = Path(__file__).resolve().parents[2] / "notebooks" / "data" / "surnames"
STATED_VALIDATION_LOSS = "2.333"  # what notebooks/data/README.md and the notebooks print


def load_shipped_model() -> tuple[Decoder, CharTokenizer, dict]:
    run = json.loads((RUN / "config.json").read_text(encoding="utf-8"))
    config = DecoderConfig(**run["model"])
    tokenizer = CharTokenizer("".join(run["characters"][1:]), boundary=run["characters"][0])
    model = Decoder(config, rng=Rng(0))
    checkpoint.load(RUN / "checkpoint.tlckpt", model)
    return model, tokenizer, run


def test_the_file_is_small_and_holds_the_weights_only():
    assert (RUN / "checkpoint.tlckpt").stat().st_size < 200_000
    described = checkpoint.inspect(RUN / "checkpoint.tlckpt")
    assert described["adamw"] is None and described["rng_state"] is None


def test_the_documented_configuration():
    model, tokenizer, run = load_shipped_model()
    assert run["model"] == {"vocabulary_size": 27, "context_length": 16, "channels": 32,
                            "heads": 4, "layers": 2, "dropout": 0.0, "eps": 1e-5}
    assert run["kind"] == "last" and run["seed"] == 0 and run["training"]["steps"] == 1500
    assert tokenizer.characters == list(".abcdefghijklmnopqrstuvwxyz")
    assert model.num_parameters() == 27_739


def test_the_stated_validation_loss():
    model, tokenizer, run = load_shipped_model()
    # As in the notebooks: the first 1,000 validation windows of the seed-0 80/10/10 split.
    _, validation_words, _ = train_validation_test_split(names("last"), seed=0)
    inputs, targets = sequence_targets(validation_words, tokenizer, 16)
    inputs, targets = inputs[:1000], targets[:1000]
    model.eval()
    with no_grad():
        loss = float(model.loss(inputs, targets).data)
    assert f"{loss:.3f}" == STATED_VALIDATION_LOSS
    assert abs(loss - run["results"]["validation_loss"]) < 1e-4  # what the command measured
    assert np.isfinite(run["results"]["bigram_validation_loss"])
    assert loss < run["results"]["bigram_validation_loss"] - 0.2  # clearly trained


def test_training_started_near_the_uniform_guess():
    _, tokenizer, run = load_shipped_model()
    # train-names scales the head's initial weights by 0.1 (notebook 15): first loss near ln V.
    initial = run["results"]["initial_validation_loss"]
    assert abs(initial - math.log(tokenizer.vocabulary_size)) < 0.1
