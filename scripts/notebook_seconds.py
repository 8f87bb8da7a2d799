"""What each notebook costs CI: its copies' seconds under nbval, at one BLAS thread.

Runs nbval over the workbook (both copies, or the notebooks given) the way ``make test``
does (one pytest worker per core, each notebook's cells on one worker, one BLAS thread per
worker), then prints each notebook's seconds per copy, summed over its cells, as a Markdown
table (docs/testing.md, "What a notebook costs CI"):

    python scripts/notebook_seconds.py                       # the whole workbook
    python scripts/notebook_seconds.py notebooks/15_*.ipynb notebooks/solutions/15_*.ipynb
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*",
                        default=["notebooks", "notebooks/solutions"],
                        help="notebooks or folders (default: both copies of the workbook)")
    arguments = parser.parse_args(argv)
    environment = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
                   "MKL_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": ""}
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "cells.xml"
        code = subprocess.run(
            [sys.executable, "-m", "pytest", "-n", "auto", "--dist", "loadfile",
             "--no-loadscope-reorder", "--nbval", "--nbval-current-env", "-q",
             f"--junitxml={report}", *arguments.paths], cwd=ROOT, env=environment).returncode
        seconds: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        for case in ElementTree.parse(report).iter("testcase"):
            # a cell's class name is its notebook's path, dotted: notebooks.solutions.15_x.ipynb
            dotted = (case.get("classname") or "").removesuffix(".ipynb")
            copy = "teacher" if dotted.startswith("notebooks.solutions.") else "learner"
            seconds[dotted.rsplit(".", 1)[-1]][copy] += float(case.get("time") or 0)
    print("| notebook | learner's copy | teacher's copy |\n|---|---|---|")
    totals = defaultdict(float)
    for notebook in sorted(seconds):
        row = seconds[notebook]
        totals["learner"] += row["learner"]
        totals["teacher"] += row["teacher"]
        print(f"| `{notebook}` | {row['learner']:.1f} s | {row['teacher']:.1f} s |")
    print(f"| the workbook | {totals['learner']:.0f} s | {totals['teacher']:.0f} s |")
    return code


if __name__ == "__main__":
    sys.exit(main())
