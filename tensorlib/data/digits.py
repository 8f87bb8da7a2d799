"""Handwritten digits, 8×8 pixels: the small image set scikit-learn ships.

scikit-learn (a dependency, pinned) ships 1,797 digits from the UCI "Optical Recognition of
Handwritten Digits" data set: 32×32 bitmaps of digits written by 43 people, each cut into
4×4 blocks whose set pixels are counted, so every image is 8×8 counts from 0 to 16. The file
is read directly (importing scikit-learn itself takes a second and is not needed). Nothing
is downloaded.
"""

from __future__ import annotations

import functools
import gzip
import importlib.util
from pathlib import Path

import numpy as np

from tensorlib.engine import validation

__all__ = ["digits", "shift_images"]


@functools.cache
def _digits_file() -> tuple[np.ndarray, np.ndarray]:
    spec = importlib.util.find_spec("sklearn")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("tensorlib.data.digits needs scikit-learn, which tensorlib "
                                  "installs: pip install scikit-learn")
    path = Path(list(spec.submodule_search_locations)[0]) / "datasets" / "data" / "digits.csv.gz"
    with gzip.open(path, "rt") as file:
        table = np.loadtxt(file, delimiter=",")           # (1797, 65): 64 counts, then the label
    return table[:, :64].reshape(-1, 8, 8), table[:, 64].astype(np.int64)


def digits() -> tuple[np.ndarray, np.ndarray]:
    """The 1,797 digits: ``images (1797, 8, 8)`` float32, each pixel's count / 16 in [0, 1]
    (row 0 at the top), and ``labels (1797,)`` int64 from 0 to 9, in the file's order
    (about 180 of each digit). Read once; each call returns new arrays.

    >>> images, labels = digits()
    >>> images.shape, labels[:5].tolist()
    ((1797, 8, 8), [0, 1, 2, 3, 4])
    """
    counts, labels = _digits_file()
    return (counts / 16.0).astype(np.float32), labels.copy()


def shift_images(images: np.ndarray, down: int, right: int) -> np.ndarray:
    """``images (..., H, W)`` moved ``down`` rows and ``right`` columns (negative: up, left),
    the pixels shifted in from outside 0 and those shifted out dropped."""
    images = np.asarray(images)
    if images.ndim < 2:
        raise ValueError(f"shift_images expects images (..., H, W), got shape {images.shape}")
    height, width = images.shape[-2:]
    down = validation.integer(down, "down", minimum=-height, maximum=height)
    right = validation.integer(right, "right", minimum=-width, maximum=width)
    out = np.zeros_like(images)
    rows_to = slice(max(down, 0), height + min(down, 0))
    rows_from = slice(max(-down, 0), height + min(-down, 0))
    columns_to = slice(max(right, 0), width + min(right, 0))
    columns_from = slice(max(-right, 0), width + min(-right, 0))
    out[..., rows_to, columns_to] = images[..., rows_from, columns_from]
    return out
