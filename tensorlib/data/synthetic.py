"""Small seeded 2-D classification sets for training and plotting toy models.

Every function returns ``(points, labels)``: float32 points of shape (N, 2) and int64
labels of shape (N,) with values in ``0 .. classes - 1``. Class sizes differ by at most one
(earlier classes get the extra points). Points are shuffled with the same seeded
``tensorlib.Rng`` that draws the noise, so a seed fixes the whole data set.
"""

from __future__ import annotations

import numpy as np

from tensorlib.engine import validation
from tensorlib.engine.splitmix64 import Rng

__all__ = ["make_blobs", "make_circles", "make_moons", "make_spirals"]


def _class_sizes(n_samples: int, classes: int) -> np.ndarray:
    """Split ``n_samples`` into ``classes`` sizes that differ by at most one."""
    sizes = np.full(classes, n_samples // classes, dtype=np.int64)
    sizes[: n_samples % classes] += 1
    return sizes


def _positions(sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Labels (class of every point) and each point's position 0..size-1 within its class."""
    labels = np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)
    starts = np.cumsum(sizes) - sizes
    return labels, np.arange(len(labels)) - starts[labels]


def _finish(points: np.ndarray, labels: np.ndarray, noise: float,
            rng: Rng) -> tuple[np.ndarray, np.ndarray]:
    """Add Gaussian noise of std ``noise`` to ``points``, shuffle, cast to float32/int64."""
    if noise > 0:
        points = points + rng.normal(0.0, noise, size=points.shape, dtype=np.float64)
    order = rng.permutation(len(labels))
    return points[order].astype(np.float32), labels[order].astype(np.int64)


def make_moons(
    n_samples: int = 200, noise: float = 0.1, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Two interleaving half circles (like scikit-learn's ``make_moons``).

    Class 0 is the upper half of the unit circle; class 1 is the lower half circle shifted
    to centre (1, 0.5). Points are evenly spaced along each arc, then Gaussian noise of
    standard deviation ``noise`` is added to both coordinates. ``n_samples >= 2``.
    """
    n_samples = validation.integer(n_samples, "n_samples", 2)
    noise = validation.non_negative(noise, "noise")
    labels, position = _positions(_class_sizes(n_samples, 2))
    sizes = np.bincount(labels)
    angle = np.pi * position / np.maximum(sizes[labels] - 1, 1)
    upper = labels == 0
    x = np.where(upper, np.cos(angle), 1.0 - np.cos(angle))
    y = np.where(upper, np.sin(angle), 0.5 - np.sin(angle))
    return _finish(np.stack([x, y], axis=1), labels, noise, Rng(seed))


def make_spirals(
    n_samples: int = 300, classes: int = 3, noise: float = 0.2, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """``classes`` interleaved spiral arms from the origin (in the style of the CS231n spiral set).

    Along arm ``k`` the radius grows evenly from 0 to 1 while the angle sweeps 4 radians
    starting at ``2 pi k / classes``; the angle gets Gaussian noise of standard deviation
    ``noise`` (radians). ``classes >= 1`` and ``n_samples >= classes``.
    """
    classes = validation.integer(classes, "classes", 1)
    n_samples = validation.integer(n_samples, "n_samples", classes)
    noise = validation.non_negative(noise, "noise")
    rng = Rng(seed)
    sizes = _class_sizes(n_samples, classes)
    labels, position = _positions(sizes)
    radius = position / np.maximum(sizes[labels] - 1, 1)
    angle = 2.0 * np.pi * labels / classes + 4.0 * radius
    if noise > 0:
        angle = angle + rng.normal(0.0, noise, size=n_samples, dtype=np.float64)
    points = np.stack([radius * np.sin(angle), radius * np.cos(angle)], axis=1)
    return _finish(points, labels, 0.0, rng)


def make_blobs(
    n_samples: int = 200, centers: int = 3, std: float = 0.5, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Isotropic Gaussian blobs, one per class.

    The ``centers`` blob centres lie evenly on a circle of radius 3 around the origin
    (class 0 at (3, 0)), far enough apart that blobs with the default ``std`` barely touch;
    each point is its centre plus Gaussian noise of standard deviation ``std``.
    ``centers >= 1`` and ``n_samples >= centers``.
    """
    centers = validation.integer(centers, "centers", 1)
    n_samples = validation.integer(n_samples, "n_samples", centers)
    std = validation.non_negative(std, "std")
    labels, _ = _positions(_class_sizes(n_samples, centers))
    angle = 2.0 * np.pi * np.arange(centers) / centers
    centres = 3.0 * np.stack([np.cos(angle), np.sin(angle)], axis=1)  # (centers, 2)
    return _finish(centres[labels], labels, std, Rng(seed))


def make_circles(
    n_samples: int = 200, noise: float = 0.05, factor: float = 0.5, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """A small circle inside a large one (like scikit-learn's ``make_circles``).

    Class 0 lies on the unit circle and class 1 on a circle of radius ``factor``, both
    evenly spaced in angle, plus Gaussian noise of standard deviation ``noise``.
    ``n_samples >= 2`` and ``0 <= factor < 1``.
    """
    n_samples = validation.integer(n_samples, "n_samples", 2)
    noise = validation.non_negative(noise, "noise")
    factor = validation.non_negative(factor, "factor")
    if factor >= 1:
        raise ValueError(f"factor must be in [0, 1), got {factor}")
    labels, position = _positions(_class_sizes(n_samples, 2))
    sizes = np.bincount(labels)
    angle = 2.0 * np.pi * position / sizes[labels]
    radius = np.where(labels == 0, 1.0, factor)
    points = np.stack([radius * np.cos(angle), radius * np.sin(angle)], axis=1)
    return _finish(points, labels, noise, Rng(seed))
