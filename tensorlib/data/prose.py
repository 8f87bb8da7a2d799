"""The corpus of the tokenizer chapter: the workbook's own prose, frozen.

``workbook_prose.txt`` was written once by ``scripts/freeze_prose.py`` on 2026-12-06: the
markdown of the teacher's notebooks, the README, the docs and the package's module docstrings
as they stood then, fenced code removed; 616,690 bytes of English with some math and code
spans. It is the project's own text, under the project's MIT license. It never changes when
the notebooks change (so outputs computed from it stay stable), and its SHA-256 is checked
whenever it is read.
"""

from __future__ import annotations

import hashlib
import importlib.resources

__all__ = ["PROSE_SHA256", "workbook_prose"]

PROSE_SHA256 = "cdb606c28c82defba0ce9cbf804d1a79c6399ae67608b6c0d29932190df74d9b"


def workbook_prose() -> str:
    """The frozen prose, as one str; ValueError if the file is not the one frozen."""
    raw = importlib.resources.files("tensorlib.data").joinpath("workbook_prose.txt").read_bytes()
    if hashlib.sha256(raw).hexdigest() != PROSE_SHA256:
        raise ValueError("tensorlib/data/workbook_prose.txt is not the text frozen on "
                         "2026-12-06 (its SHA-256 differs); restore it from the repository")
    return raw.decode("utf-8")
