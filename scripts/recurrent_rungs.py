"""Train the ladder's three recurrent rungs (rnn, gru, lstm) again and keep their weights, for
notebook 12d's samples: the same runs as ``python -m tensorlib ladder --rungs rnn,gru,lstm``
(the same code, seed, batches and budget), each checked against the validation loss that
``notebooks/data/ladder/ladder.json`` records, then written as safetensors.

    OPENBLAS_NUM_THREADS=1 python scripts/recurrent_rungs.py   # into notebooks/data/...
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from tensorlib.saving.safetensors import save_safetensors
from tensorlib.training.ladder import RECURRENT_WIDTHS, Budget, ladder_data, run_rung

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, default=ROOT / "notebooks/data/recurrent_rungs")
    arguments = parser.parse_args()
    ladder = json.loads((ROOT / "notebooks/data/ladder/ladder.json").read_text("utf-8"))
    shipped = {rung["rung"]: rung for rung in ladder["rungs"]}
    budget = Budget(**ladder["budget"])
    data = ladder_data(budget.seed)
    arguments.output.mkdir(parents=True, exist_ok=True)
    for rung in RECURRENT_WIDTHS:
        result, model = run_rung(rung, data, budget, progress=False)
        recorded = shipped[rung]["validation_loss"]
        if abs(result.validation_loss - recorded) > 1e-9:
            raise SystemExit(f"{rung}: validation loss {result.validation_loss!r}, the ladder's "
                             f"file records {recorded!r}: not the same run")
        save_safetensors(arguments.output / f"{rung}.safetensors", model,
                         metadata={"rung": rung, "validation_loss": repr(recorded)})
        print(f"{rung}: validation {result.validation_loss:.4f}, the file's run; "
              f"{model.num_parameters():,} parameters written", flush=True)


if __name__ == "__main__":
    main()
