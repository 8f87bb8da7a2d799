"""The one writer of files: every file tensorlib writes (checkpoints, safetensors, the command
line's records, the exercises' progress) is written whole or not at all."""

from __future__ import annotations

import os
from collections.abc import Sequence

__all__ = ["write_atomic", "write_text_atomic"]


def _fsync_directory(path: str | bytes) -> None:
    """Make a rename durable where the platform allows opening directories (POSIX)."""
    directory = os.path.dirname(os.path.abspath(path))
    try:
        descriptor = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


def write_atomic(path: str | os.PathLike, chunks: Sequence[bytes]) -> None:
    """Write ``chunks`` to ``path + ".tmp"``, flush, fsync and rename it over ``path``; on
    any error the temporary file is removed and ``path`` is left as it was."""
    target = os.fspath(path)
    temporary = (target + b".tmp") if isinstance(target, bytes) else (target + ".tmp")
    try:
        with open(temporary, "wb") as handle:
            for chunk in chunks:
                handle.write(chunk)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException:
        try:
            os.remove(temporary)
        except OSError:
            pass
        raise
    _fsync_directory(target)


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    """``write_atomic`` of ``text`` encoded as UTF-8."""
    write_atomic(path, [text.encode("utf-8")])
