"""The checks of notebook 12c (convolutions): ``conv1d_loops``, ``sliding_windows_1d`` with
``Conv1dFunction``, ``conv2d_im2col``, ``MaxPool2dFunction`` and the exercises.

Each check compares the learner's piece with tensorlib's ``F.conv1d``, ``F.conv2d`` and
``F.max_pool2d`` on seeded inputs chosen to expose the usual slips (a bias that is not zero,
strides, paddings and dilations, more filters than channels, float32), the output's shape
before its values and the forward before the backward.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import tensorlib as tl
import tensorlib.nn.functional as F
from tensorlib.checks.registry import HandOn, piece_check
from tensorlib.exercises import Checker
from tensorlib.rng import Rng

__all__ = ["check_conv1d_loops"]


def package_conv1d(x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None = None,
                   stride: int = 1, padding: int = 0, dilation: int = 1) -> np.ndarray:
    """``F.conv1d`` on numpy arrays: y (N, O, P) of x (N, C, L), weight (O, C, K)."""
    return F.conv1d(tl.tensor(x), tl.tensor(weight), None if bias is None else tl.tensor(bias),
                    stride=stride, padding=padding, dilation=dilation).numpy()


def _positions(length: int, kernel_size: int, stride: int, padding: int, dilation: int) -> int:
    """P, the number of windows: (L + 2 padding - dilation (K - 1) - 1) // stride + 1."""
    return (length + 2 * padding - dilation * (kernel_size - 1) - 1) // stride + 1


def _conv1d_case(shape: tuple[int, int, int], filters: int, kernel_size: int, seed: int,
                 bias: bool = True, dtype: Any = np.float64
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """x (N, C, L), weight (O, C, K) and a bias that is not zero (or None), drawn seeded."""
    rng = Rng(seed)
    x = rng.normal(size=shape, dtype=dtype)
    weight = rng.normal(size=(filters, shape[1], kernel_size), dtype=dtype)
    return x, weight, rng.normal(size=filters, dtype=dtype) if bias else None


def _conv1d_mistakes(x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None, stride: int,
                     padding: int, dilation: int) -> dict[str, Any]:
    """What the usual slips of a 1-D convolution give (each computed when asked)."""
    length, kernel = x.shape[2], weight.shape[2]
    count = _positions(length, kernel, stride, padding, dilation)
    return {  # the shapes first: a check compares the shape before the values
        "P counts the windows without the padding: P = (L + 2 padding - dilation (K - 1) - 1)"
        " // stride + 1": (x.shape[0], weight.shape[0],
                           _positions(length, kernel, stride, 0, dilation)),
        "P is one short: the last window, which ends at the last input, is missing (+ 1)":
            (x.shape[0], weight.shape[0], count - 1),
        "the filter flipped (numpy.convolve's convolution; ours is PyTorch's "
        "cross-correlation)": lambda: package_conv1d(x, weight[:, :, ::-1].copy(), bias,
                                                     stride, padding, dilation),
        "the bias is not added": lambda: package_conv1d(x, weight, None, stride, padding,
                                                        dilation),
        "no zeros added at the ends (np.pad with `padding`)": lambda: package_conv1d(
            x, weight, bias, stride, 0, dilation),
        "the taps are 1 apart: `dilation` is not used": lambda: package_conv1d(
            x, weight, bias, stride, padding, 1),
        "the windows are 1 apart: `stride` is not used": lambda: package_conv1d(
            x, weight, bias, 1, padding, dilation),
    }


_CASES_1D = [  # what, x's shape, filters, kernel size, stride, padding, dilation, hint
    ("one channel, one filter", (1, 1, 9), 1, 2, 1, 0, 1,
     "y[p] = sum_k w[k] x[p + k], with P = L - K + 1 windows"),
    ("3 channels, 5 filters, a bias that is not zero", (2, 3, 10), 5, 3, 1, 0, 1,
     "sum over the channels and the taps, then add bias[o]"),
    ("stride 2", (2, 3, 11), 4, 3, 2, 0, 1,
     "window p starts at p * stride; P = (L - K) // stride + 1"),
    ("padding 2", (2, 2, 7), 3, 3, 1, 2, 1,
     "add `padding` zeros at both ends (np.pad) before sliding"),
    ("dilation 2", (1, 2, 12), 3, 3, 1, 0, 2,
     "the taps of one window are `dilation` apart: x[p * stride + k * dilation]"),
    ("stride 2, padding 1 and dilation 3 together", (3, 2, 13), 2, 3, 2, 1, 3,
     "P = (L + 2 padding - dilation (K - 1) - 1) // stride + 1"),
]


@piece_check("conv1d_loops", yours="conv1d_loops", package_name="F.conv1d")
def check_conv1d_loops(checker: Checker, conv1d_loops: Any) -> HandOn:
    """``conv1d_loops(x, weight, bias, stride, padding, dilation)`` against ``F.conv1d``:
    y's shape, then its values, on six geometries, then None as the bias and float32."""
    for index, (what, shape, filters, kernel, stride, padding, dilation, hint) in \
            enumerate(_CASES_1D):
        x, weight, bias = _conv1d_case(shape, filters, kernel, seed=index + 10)
        sizes = stride, padding, dilation
        mistakes = _conv1d_mistakes(x, weight, bias, *sizes)
        with checker.case(what, hint=hint):
            received = conv1d_loops(x, weight, bias, *sizes)
            checker.shape(received, (shape[0], filters, _positions(shape[2], kernel, *sizes)),
                          "y (N, O, P)", mistakes)
            checker.close(received, package_conv1d(x, weight, bias, *sizes), "y",
                          rtol=1e-10, atol=1e-12, mistakes=mistakes)
    with checker.case("no bias (None), float32 in and out",
                      hint="bias may be None: add nothing; make y with x's dtype"):
        x, weight, _ = _conv1d_case((2, 2, 8), 3, 3, seed=20, bias=False, dtype=np.float32)
        received = conv1d_loops(x, weight, None, 1, 1, 1)
        checker.shape(received, (2, 3, 8), "y (N, O, P)")
        checker.equal(np.asarray(received).dtype, np.float32, "y's dtype")
        checker.close(received, package_conv1d(x, weight, None, 1, 1, 1), "y", rtol=1e-5,
                      atol=1e-6)
    return HandOn(conv1d_loops, package_conv1d)
