"""Train notebook 15b's table of decoder designs (tensorlib.training.decoder_designs) and
write it as JSON.

    OPENBLAS_NUM_THREADS=1 python scripts/decoder_designs.py --seeds 0,1,2 \
        --output notebooks/data/decoder_designs/designs.json

``--merge A.json B.json ...`` joins records of the same budget run in separate processes
(say one seed each, on separate cores) into ``--output`` instead of training.
"""

from __future__ import annotations

import argparse
import json

from tensorlib.training.decoder_designs import (
    DESIGNS,
    design_table,
    merge_design_records,
    run_designs,
)
from tensorlib.training.ladder import Budget, ladder_data, save_ladder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--designs", default=",".join(DESIGNS))
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--steps", type=int, default=Budget().steps)
    parser.add_argument("--output", required=True)
    parser.add_argument("--merge", nargs="+", default=None)
    args = parser.parse_args()
    if args.merge:
        records = []
        for path in args.merge:
            with open(path, encoding="utf-8") as handle:
                records.append(json.load(handle))
        record = merge_design_records(records)
    else:
        def report(design: str, seed: int, result: object) -> None:
            print(f"{design} seed {seed}: {result.validation_loss:.4f} "  # type: ignore[attr-defined]
                  f"({result.seconds:.0f} s)", flush=True)  # type: ignore[attr-defined]

        record = run_designs(args.designs.split(","), [int(s) for s in args.seeds.split(",")],
                             ladder_data(0), Budget.of_steps(args.steps), report=report)
    save_ladder(record, args.output)
    print(design_table(record))


if __name__ == "__main__":
    main()
