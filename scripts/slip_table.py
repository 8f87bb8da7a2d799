"""The slips a learner makes, and the first line each check's report shows for them.

    python scripts/slip_table.py                    # every notebook with slips
    python scripts/slip_table.py 12c_convolutions   # one notebook
    python scripts/slip_table.py --markdown         # as a Markdown table

The slips are written in ``tests/course/slips/<notebook>.py``: for each check cell, what the
learner did and the change to the teacher's answer that does it. Each runs as a learner runs
it, in IPython's shell (``tests/check_runs.py``): the answer cell with the slip, then the
check cell. The table shows the check, the slip and the first line under the report's header
(the likely mistake it names, or else the case's hint); ``NAMED`` when that line holds the
word the slips file expects, ``passed`` for a slip the check did not catch.
``tests/course/test_exercises.py`` (marked rerun: ``make test-checks``) holds every slip to
that.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from check_runs import SLIPS, slip_rows  # noqa: E402 (the tests' folder, put on the path above)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", help="notebook names (all with slips if none)")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = parser.parse_args(argv)
    notebooks = args.notebooks or sorted(path.stem for path in SLIPS.glob("*.py"))
    missed = 0
    with pytest.MonkeyPatch.context() as monkeypatch:
        for notebook in notebooks:
            rows = slip_rows(notebook, monkeypatch)
            if args.markdown:
                print(f"\n**{notebook}**\n\n| check | slip | first line the learner sees |\n"
                      "|---|---|---|")
            for row in rows:
                named = not row["passed"] and row["word"].lower() in row["first line"].lower()
                missed += not named
                verdict = "passed" if row["passed"] else "NAMED" if named else "not named"
                line = row["first line"].replace("|", "\\|")
                if args.markdown:
                    print(f"| {row['check']} | {row['slip']} | {line} |")
                else:
                    print(f"{verdict:9s} {row['check']}: {row['slip']}\n          {line}")
    print(f"\n{missed} slips not named" if missed else "\nevery slip named", file=sys.stderr)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
