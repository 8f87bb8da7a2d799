"""Coverage-guided fuzzing of ``tensorlib.saving.checkpoint.load`` with atheris (libFuzzer).

The unit tests (``tests/saving/test_checkpoint_fuzz.py``) run a few hundred hypothesis
examples in seconds; this harness runs the same contract for as long as you like::

    pip install atheris
    python fuzz/atheris_checkpoint.py -max_total_time=600 -rss_limit_mb=1024

Without a corpus directory on the command line, the harness writes valid checkpoints of a
small model (every layout: all sections, some, none, legacy) to a temporary directory and
starts from those. To keep what libFuzzer finds, pass a directory of your own first::

    mkdir -p fuzz/corpus
    python fuzz/atheris_checkpoint.py fuzz/corpus -max_total_time=600

The contract for every input: ``load`` either raises ``CheckpointError`` and leaves the
module, the optimizer and the generator bit for bit unchanged, or it succeeds and
``inspect`` agrees with it. Any other exception is reported by libFuzzer as a crash, with
the input that caused it saved as ``crash-<hash>`` (re-run it with
``python fuzz/atheris_checkpoint.py crash-<hash>``). ``-rss_limit_mb`` turns a load that
allocates for a size a header merely claims into a reported failure.

atheris is optional: nothing in the package or the test suite imports it. The functions here
(``seed_inputs``, ``test_one_input``) are also called by the unit tests, so the harness
cannot rot unnoticed.
"""

from __future__ import annotations

import os
import sys
import tempfile
from typing import Any

# tensorlib is imported lazily (``_modules``), so that ``main`` can import it under
# ``atheris.instrument_imports()`` for coverage feedback.
_LOADED: dict[str, Any] = {}


def _modules() -> dict[str, Any]:
    if not _LOADED:
        from tensorlib.engine.splitmix64 import Rng
        from tensorlib.nn.module import Module
        from tensorlib.nn.parameter import Parameter
        from tensorlib.optim import AdamW
        from tensorlib.saving import checkpoint

        _LOADED.update(checkpoint=checkpoint, Module=Module, Parameter=Parameter, Rng=Rng,
                       AdamW=AdamW)
    return _LOADED


def _model(seed: int) -> Any:
    """``weight (2, 3)``, ``bias (3,)``, ``head.weight (3, 2)``, frozen ``head.scale (2,)``."""
    m = _modules()
    rng = m["Rng"](seed)
    model, head = m["Module"](), m["Module"]()
    model.weight = m["Parameter"](rng.normal(0.0, 1.0, size=(2, 3)))
    model.bias = m["Parameter"](rng.normal(0.0, 1.0, size=(3,)))
    head.weight = m["Parameter"](rng.normal(0.0, 1.0, size=(3, 2)))
    head.scale = m["Parameter"](rng.normal(0.0, 1.0, size=(2,)), trainable=False)
    model.head = head
    return model


def _objects(seed: int, steps: int) -> tuple[Any, Any, Any]:
    """A model, an AdamW that has taken ``steps`` steps, and a generator."""
    m = _modules()
    model = _model(seed)
    optimizer = m["AdamW"](model, lr=1e-2, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)
    grads = m["Rng"](seed + 50)
    for _ in range(steps):
        for parameter in model.parameters(include_frozen=False):
            parameter.grad = grads.normal(0.0, 1.0, size=parameter.shape)
        optimizer.step()
    model.zero_grad()
    return model, optimizer, m["Rng"](seed + 1000)


def seed_inputs() -> list[bytes]:
    """Valid files of every layout, the starting corpus."""
    checkpoint = _modules()["checkpoint"]
    model, optimizer, rng = _objects(1, 3)
    seeds = []
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "seed")
        for sections in [(optimizer, rng), (None, None), (optimizer, None), (None, rng)]:
            checkpoint.save(path, model, *sections)
            with open(path, "rb") as handle:
                seeds.append(handle.read())
        checkpoint.save_legacy_weights(path, model)
        with open(path, "rb") as handle:
            seeds.append(handle.read())
    return seeds


def _snapshot(model: Any, optimizer: Any, rng: Any) -> dict[str, Any]:
    return {
        "params": [(name, p.numpy().tobytes(), p.shape, p.version, p.grad)
                   for name, p in model.named_parameters()],
        "config": optimizer.config(),
        "state": [(entry["step"], entry["first_moment"].tobytes(),
                   entry["second_moment"].tobytes()) for entry in optimizer.state],
        "rng": rng.state,
    }


def check_outcome(error: BaseException | None, before: dict[str, Any],
                  after: dict[str, Any]) -> None:
    """Raise AssertionError unless the load either succeeded or failed cleanly."""
    if error is None:
        return
    checkpoint = _modules()["checkpoint"]
    if not isinstance(error, checkpoint.CheckpointError):
        raise AssertionError(f"load raised {type(error).__name__} instead of "
                             f"CheckpointError: {error}") from error
    if before != after:
        raise AssertionError(f"a rejected load changed live state ({error})")


def test_one_input(data: bytes) -> None:
    """Load ``data`` into fresh objects, asking for every section; check the contract."""
    checkpoint = _modules()["checkpoint"]
    with tempfile.NamedTemporaryFile(suffix=".tlckpt", delete=False) as handle:
        handle.write(data)
        path = handle.name
    try:
        for with_sections in (True, False):
            model, optimizer, rng = _objects(99, 1)
            before = _snapshot(model, optimizer, rng)
            error: BaseException | None = None
            try:
                if with_sections:
                    checkpoint.load(path, model, optimizer, rng)
                else:
                    checkpoint.load(path, model)
            except Exception as caught:  # any type but CheckpointError is the bug we hunt
                error = caught
            check_outcome(error, before, _snapshot(model, optimizer, rng))
            try:
                described = checkpoint.inspect(path)
            except checkpoint.CheckpointError:
                described = None
            if error is None and described is None:
                raise AssertionError("a file that loads must also inspect")
    finally:
        os.remove(path)


def main(argv: list[str]) -> None:
    import atheris  # optional: pip install atheris

    with atheris.instrument_imports(include=["tensorlib"]):
        _modules()
    arguments = list(argv)
    if not any(not arg.startswith("-") for arg in arguments[1:]):
        corpus = tempfile.mkdtemp(prefix="tlckpt-corpus-")
        for index, seed in enumerate(seed_inputs()):
            with open(os.path.join(corpus, f"seed-{index}.tlckpt"), "wb") as handle:
                handle.write(seed)
        arguments.append(corpus)
    atheris.Setup(arguments, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
