"""Build the book: the teacher's edition of the workbook as a static website (``make book``).

Lays out Sphinx's sources in ``book/_build/source``: the pages of ``book/`` (the landing page,
the API reference), the teacher's notebooks (``notebooks/solutions/*.ipynb``, read with their
stored outputs, never executed) and the README's figures (``docs/images/``); puts the
learner's copies (``notebooks/*.ipynb``) in ``book/_build/extra/notebooks/``, which Sphinx
copies into the site as they are, for each chapter's download link; then runs Sphinx with the
configuration in ``book/conf.py`` and ``-W`` (every warning an error) into
``book/_build/html``, from scratch each time, and prints the time, size and page count.

    python scripts/build_book.py [--output book/_build/html]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"
BUILD = BOOK / "_build"


def copy_files(files: list[Path], target: Path) -> None:
    """Copy files into target (made anew), keeping their times."""
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    for file in files:
        shutil.copy2(file, target / file.name)


def lay_out_sources(source: Path, extra: Path) -> int:
    """The Sphinx source folder and the learner's copies; returns the number of chapters."""
    if source.exists():
        shutil.rmtree(source)
    shutil.copytree(BOOK, source, ignore=shutil.ignore_patterns(
        "_build", "_static", "_ext", "conf.py", "__pycache__", ".ipynb_checkpoints"))
    chapters = sorted((ROOT / "notebooks" / "solutions").glob("*.ipynb"))
    for notebook in chapters:
        shutil.copy2(notebook, source / notebook.name)
    copy_files(sorted((ROOT / "docs" / "images").glob("*.png")), source / "images")
    learner = sorted((ROOT / "notebooks").glob("*.ipynb"))
    missing = {n.name for n in chapters} - {n.name for n in learner}
    if missing:
        raise SystemExit(f"error: no learner's copy in notebooks/ for {sorted(missing)}")
    copy_files(learner, extra / "notebooks")
    return len(chapters)


def folder_size(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=BUILD / "html",
                        help="where the site goes (default: book/_build/html)")
    args = parser.parse_args(argv)
    try:
        from sphinx.cmd.build import build_main
    except ImportError:
        print("error: Sphinx is not installed; install the book extra: "
              ".venv/bin/python -m pip install -c requirements.txt -e '.[book]' "
              "(or run `make book`)", file=sys.stderr)
        return 2

    start = time.perf_counter()
    source, extra, doctrees = BUILD / "source", BUILD / "extra", BUILD / "doctrees"
    chapters = lay_out_sources(source, extra)
    output = args.output.resolve()
    for stale in (output, doctrees):
        if stale.exists():
            shutil.rmtree(stale)
    # Sphinx imports tensorlib for the API reference: the package of this checkout.
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    status = build_main(["-W", "--keep-going", "-q", "-b", "html", "-c", str(BOOK),
                         "-d", str(doctrees), str(source), str(output)])
    if status != 0:
        print(f"error: the book did not build (Sphinx exited with {status}; with -W every "
              "warning above is an error)", file=sys.stderr)
        return status
    seconds = time.perf_counter() - start
    pages = [page for page in output.rglob("*.html")
             if page.relative_to(output).parts[0] != "_static"]   # not the theme's templates
    print(f"book: {len(pages)} pages ({chapters} chapters) in {output.relative_to(ROOT)}"
          if output.is_relative_to(ROOT) else f"book: {len(pages)} pages in {output}")
    print(f"book: {folder_size(output) / 1e6:.1f} MB, built in {seconds:.1f} s "
          "(the notebooks' stored outputs, never executed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
