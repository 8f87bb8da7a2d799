"""US census name lists, read from the data files shipped by the ``names`` package.

The ``names`` package (version 0.3.0) ships three text files from the 1990 US census, one
name per line followed by frequency columns, most frequent first:

* ``dist.all.last``      last names     (``kind="last"``)
* ``dist.female.first``  female first names (``kind="female"``)
* ``dist.male.first``    male first names   (``kind="male"``)

``kind="first"`` is the female list followed by the male list. Nothing is downloaded.
"""

from __future__ import annotations

import functools
import importlib.resources
import re

__all__ = ["NAME_KINDS", "names"]

NAME_KINDS: tuple[str, ...] = ("last", "female", "male", "first")

_FILES = {
    "last": "dist.all.last",
    "female": "dist.female.first",
    "male": "dist.male.first",
}
_LETTERS_ONLY = re.compile(r"[a-z]+")


def names(kind: str) -> list[str]:
    """The census names of one ``kind``: ``"last"``, ``"female"``, ``"male"`` or ``"first"``.

    Contract: every name is lowercase ``a-z`` only (entries with any other character are
    dropped), names are unique, and the order is the file's order (most frequent first; the
    first occurrence wins, and ``"first"`` lists female names before male ones). The files
    are read once and cached (``functools.cache``); each call returns a fresh list.

    >>> names("female")[:3]
    ['mary', 'patricia', 'linda']
    """
    if not isinstance(kind, str) or kind not in NAME_KINDS:
        valid = ", ".join(repr(k) for k in NAME_KINDS)
        raise ValueError(f"unknown name kind {kind!r}; valid kinds are {valid}")
    return list(_load(kind))


@functools.cache
def _load(kind: str) -> tuple[str, ...]:
    """The cleaned, de-duplicated names of ``kind`` as an immutable tuple (cached)."""
    if kind == "first":
        merged = _load("female") + _load("male")
        return tuple(dict.fromkeys(merged))
    lines = _read_lines(_FILES[kind])
    first_fields = (line.split(maxsplit=1)[0].lower() for line in lines if line.strip())
    return tuple(dict.fromkeys(name for name in first_fields if _LETTERS_ONLY.fullmatch(name)))


def _read_lines(filename: str) -> list[str]:
    """The lines of one data file of the installed ``names`` package."""
    try:
        resource = importlib.resources.files("names").joinpath(filename)
        return resource.read_text(encoding="ascii").splitlines()
    except ModuleNotFoundError as error:
        raise ModuleNotFoundError(
            "tensorlib.data.names() needs the 'names' package (pip install names==0.3.0)"
        ) from error
    except FileNotFoundError as error:
        raise FileNotFoundError(
            f"the installed 'names' package has no data file {filename!r}; "
            "tensorlib expects names==0.3.0"
        ) from error
