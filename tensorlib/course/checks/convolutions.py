"""The checks of notebook 12c (convolutions), its first two pieces: ``conv1d_loops``, and
``sliding_windows_1d`` with ``Conv1dFunction`` (the 2-D pieces and the exercises are in
:mod:`tensorlib.course.checks.convolutions_2d`).

Each check compares the learner's piece with tensorlib's ``F.conv1d``, ``F.conv2d``,
``F.unfold``, ``F.max_pool2d`` and ``F.avg_pool2d`` on seeded inputs chosen to expose the usual
slips (a bias that is not zero, strides, paddings and dilations, more filters than channels,
rectangular images and kernels, ties, overlapping windows, float32), the output's shape before
its values and the forward before the backward: a ``tl.Function``'s backward is called by the
check itself, on the node its forward made, so that what it returns is checked (shape, then
values) before tensorlib's engine would refuse it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import tensorlib as tl
import tensorlib.nn.functional as F
from tensorlib.course.checks.differences import clipped, grad_array
from tensorlib.course.checks.registry import HandOn, piece_check
from tensorlib.course.exercises import Checker
from tensorlib.engine.splitmix64 import Rng

__all__ = ["check_conv1d_loops", "check_conv1d_function", "package_conv1d"]

_FLOAT64 = np.dtype(np.float64)  # what numpy's np.zeros(shape) makes, whatever the inputs' dtype


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
        "the taps of a window are 1 apart: `dilation` is not used in the window's slice":
            lambda: package_conv1d(x, weight, bias, stride, padding, 1)[:, :, :count],
        "window p starts at p, not at p * stride": lambda: package_conv1d(
            x, weight, bias, 1, padding, dilation)[:, :, :count],
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
        checker.equal(np.asarray(received).dtype, np.float32, "y's dtype",
                      {"y made with numpy's default float64: give it x's dtype": _FLOAT64})
        checker.close(received, package_conv1d(x, weight, None, 1, 1, 1), "y", rtol=1e-5,
                      atol=1e-6)
    return HandOn(conv1d_loops, package_conv1d)


# ------------------------------------------------------------ sliding_windows_1d, Conv1dFunction
def _windows_1d(x: np.ndarray, kernel_size: int, stride: int, dilation: int) -> np.ndarray:
    """The windows (N, C, P, K) of x (N, C, L) by indexing (a copy): x[..., p s + k d]."""
    count = _positions(x.shape[2], kernel_size, stride, 0, dilation)
    index = stride * np.arange(count)[:, None] + dilation * np.arange(kernel_size)[None, :]
    return x[:, :, index]


def _windows_mistakes(x: np.ndarray, kernel_size: int, stride: int,
                      dilation: int) -> dict[str, Any]:
    """What the usual slips of sliding_windows_1d give."""
    span = dilation * (kernel_size - 1) + 1
    every = np.lib.stride_tricks.sliding_window_view(x, span, axis=2)   # (N, C, L-span+1, span)
    return {
        "every tap of the span kept: take every dilation-th one ([..., ::dilation])":
            every[:, :, ::stride],
        "every window kept: take every stride-th one ([:, :, ::stride])":
            every[:, :, :, ::dilation],
        "windows of K consecutive entries: the span of a window is dilation (K - 1) + 1":
            np.lib.stride_tricks.sliding_window_view(x, kernel_size, axis=2)[:, :, ::stride],
        "the taps of a window are 1 apart: `dilation` is not used": lambda: _windows_1d(
            x, kernel_size, stride, 1),
    }


def _conv1d_backward(x: np.ndarray, weight: np.ndarray, upstream: np.ndarray, stride: int,
                     padding: int, dilation: int, assign: bool = False,
                     keep_padding: bool = False) -> np.ndarray:
    """dx of a conv1d for ``upstream`` (N, O, P) by col2im; ``assign``: each tap's gradients
    assigned (=) rather than added, ``keep_padding``: the padding's gradient not cut off."""
    batch, channels, length = x.shape
    out_channels, _, kernel_size = weight.shape
    count = upstream.shape[2]
    rows = upstream.transpose(0, 2, 1).reshape(batch * count, out_channels)
    dcolumns = (rows @ weight.reshape(out_channels, -1)).reshape(batch, count, channels,
                                                                 kernel_size)
    dpadded = np.zeros((batch, channels, length + 2 * padding), dtype=upstream.dtype)
    for k in range(kernel_size):
        taps = slice(k * dilation, k * dilation + stride * (count - 1) + 1, stride)
        if assign:
            dpadded[:, :, taps] = dcolumns[:, :, :, k].transpose(0, 2, 1)
        else:
            dpadded[:, :, taps] += dcolumns[:, :, :, k].transpose(0, 2, 1)
    return dpadded if keep_padding else dpadded[:, :, padding:padding + length]


def _columns_1d(x: np.ndarray, kernel_size: int, stride: int, padding: int,
                dilation: int) -> np.ndarray:
    """The columns (N·P, C·K) of x (N, C, L), channel after channel."""
    padded = np.pad(x, ((0, 0), (0, 0), (padding, padding)))
    windows = _windows_1d(padded, kernel_size, stride, dilation)          # (N, C, P, K)
    batch, _, count, _ = windows.shape
    return windows.transpose(0, 2, 1, 3).reshape(batch * count, -1)


def _conv1d_function_mistakes(x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None,
                              upstream: np.ndarray, stride: int, padding: int,
                              dilation: int) -> dict[str, dict[str, Any]]:
    """What the usual slips of Conv1dFunction give: for y, dx, dweight and dbias."""
    batch, channels, length = x.shape
    out_channels, _, kernel_size = weight.shape
    count = upstream.shape[2]
    rows = upstream.transpose(0, 2, 1).reshape(batch * count, out_channels)

    def tap_major() -> np.ndarray:  # columns (N·P, K·C) against the weight's (C·K) rows
        padded = np.pad(x, ((0, 0), (0, 0), (padding, padding)))
        windows = _windows_1d(padded, kernel_size, stride, dilation).transpose(0, 2, 3, 1)
        y = windows.reshape(batch * count, -1) @ weight.reshape(out_channels, -1).T
        y = y.reshape(batch, count, out_channels).transpose(0, 2, 1)
        return y if bias is None else y + bias[:, None]

    return {
        "y": {**_conv1d_mistakes(x, weight, bias, stride, padding, dilation),
              "the columns hold each window tap by tap, the channels inside; the weight's rows "
              "are channel by channel: transpose(0, 2, 1, 3) before the reshape": tap_major},
        "dx": {
            "the padding's gradient is not cut off dx: dx[:, :, padding:L + padding]":
                (batch, channels, length + 2 * padding),
            "each tap's gradients assigned (=) where they must be added (+=): overlapping "
            "windows read an entry more than once": lambda: _conv1d_backward(
                x, weight, upstream, stride, padding, dilation, assign=True),
            "dx taken from the wrong end of the padded gradient: cut `padding` entries off "
            "each end": lambda: _conv1d_backward(x, weight, upstream, stride, padding,
                                                 dilation, keep_padding=True)[:, :, :length],
        },
        "dweight": {
            "dweight = columns.T @ rows, reshaped: the (O, C·K) matrix is rows.T @ columns":
                lambda: (_columns_1d(x, kernel_size, stride, padding, dilation).T @ rows)
                .reshape(weight.shape),
        },
        "dbias": {
            "dbias summed over the positions only: sum over the examples too, axis=(0, 2)":
                (batch, out_channels),
            "dbias summed over the examples only: sum over the positions too, axis=(0, 2)":
                (out_channels, count),
            "dbias summed over everything: one number per filter, axis=(0, 2)": (),
        },
    }


_CASES_CONV1D_FUNCTION = [  # what, x's shape, filters, kernel, stride, padding, dilation, hint
    ("3 channels, 4 filters, kernel 3: overlapping windows, a bias", (2, 3, 9), 4, 3, 1, 0, 1,
     "overlapping windows read one entry several times: add (+=) each tap's gradients"),
    ("kernel 2, stride 3: gaps between windows, and entries after the last", (2, 2, 10), 3, 2,
     3, 0, 1, "dx is 0 where no window read; tap k's slice starts at k * dilation, steps by "
     "stride"),
    ("padding 2", (1, 2, 7), 2, 3, 1, 2, 1,
     "pad with np.pad; cut the padding off dx at the end"),
    ("dilation 2, padding 1, stride 2", (3, 2, 12), 3, 3, 2, 1, 2,
     "tap k of window p read x_padded[p * stride + k * dilation]"),
]


def _check_conv1d_function_case(checker: Checker, Conv1dFunction: Any,  # noqa: N803
                                x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None,
                                upstream: np.ndarray, stride: int, padding: int,
                                dilation: int, rtol: float, atol: float) -> None:
    """y's shape and values, then what backward returns: dx, dweight and dbias (None without
    a bias), each its shape, dtype and values."""
    sizes = {"stride": stride, "padding": padding, "dilation": dilation}
    mistakes = _conv1d_function_mistakes(x, weight, bias, upstream, stride, padding, dilation)
    inputs = [None if a is None else tl.tensor(a, requires_grad=True) for a in (x, weight, bias)]
    y = Conv1dFunction.apply(*inputs, **sizes)                   # the forward first
    expected = package_conv1d(x, weight, bias, stride, padding, dilation)
    checker.shape(y, expected.shape, "y (N, O, P)", mistakes["y"])
    checker.equal(y.numpy().dtype, x.dtype, "y's dtype",
                  {"y made with numpy's default float64: give it x's dtype": _FLOAT64})
    checker.close(y, expected, "y", rtol=rtol, atol=atol, mistakes=mistakes["y"])
    x_leaf, weight_leaf = tl.tensor(x, requires_grad=True), tl.tensor(weight, requires_grad=True)
    bias_leaf = None if bias is None else tl.tensor(bias, requires_grad=True)
    F.conv1d(x_leaf, weight_leaf, bias_leaf, stride=stride, padding=padding,
             dilation=dilation).backward(tl.tensor(upstream))   # the expected gradients
    dx, dweight, dbias = checker.backward_of(y, upstream, 3)  # then the backward
    for name, received, leaf in (("dx", dx, x_leaf), ("dweight", dweight, weight_leaf)):
        checker.true(received is not None, f"backward returned None for {name}")
        checker.shape(received, leaf.shape, f"{name} {leaf.shape}", mistakes[name])
        checker.equal(np.asarray(received).dtype, x.dtype, f"{name}'s dtype",
                      {f"{name} made with numpy's default float64: give it dy's dtype":
                       _FLOAT64})
        checker.close(received, grad_array(leaf), name, rtol=rtol, atol=atol,
                      mistakes=mistakes[name])
    if bias is None:
        checker.true(dbias is None, f"dbias: expected None (there is no bias), received "
                     f"{clipped(repr(dbias), 60)}", "ctx.needs_input_grad[2] is False "
                     "without a bias: return None for dbias")
    else:
        checker.true(dbias is not None, "backward returned None for dbias, and there is a "
                     "bias", "dbias is dy summed over the examples and the positions")
        checker.shape(dbias, bias.shape, "dbias (O,)", mistakes["dbias"])
        assert bias_leaf is not None  # there is a bias
        checker.close(dbias, grad_array(bias_leaf), "dbias", rtol=rtol, atol=atol)


@piece_check("sliding_windows_1d and Conv1dFunction",
             yours=("sliding_windows_1d", "Conv1dFunction"), label="Conv1dFunction")
def check_conv1d_function(checker: Checker, sliding_windows_1d: Any,
                          Conv1dFunction: Any) -> HandOn:  # noqa: N803
    """The windows of ``sliding_windows_1d`` against indexing (shape, values, a view), then
    ``Conv1dFunction``'s y against ``F.conv1d`` and, only then, its backward's dx, dweight and
    dbias against ``F.conv1d``'s gradients: overlapping windows, gaps, padding, dilation, no
    bias and float32."""
    for what, x in [("windows of a (2, 3, 11) input, kernel 3, stride 2, dilation 2",
                     Rng(30).normal(size=(2, 3, 11), dtype=np.float64)),
                    ("windows of an input that is itself a view (every other entry)",
                     Rng(31).normal(size=(2, 3, 22), dtype=np.float64)[:, :, ::2])]:
        with checker.case(what, hint="sliding_window_view(x, dilation * (K - 1) + 1, axis=2), "
                          "then every stride-th window and every dilation-th tap; or "
                          "as_strided with steps taken from x.strides"):
            windows = sliding_windows_1d(x, 3, 2, 2)
            mistakes = _windows_mistakes(x, 3, 2, 2)
            checker.shape(windows, (2, 3, 4, 3), "windows (N, C, P, K)", mistakes)
            checker.close(windows, _windows_1d(x, 3, 2, 2), "windows (N, C, P, K)", rtol=0,
                          atol=0, mistakes=mistakes)
            checker.true(np.shares_memory(windows, x), "the windows are a copy, not a view of x",
                         "a copy (np.stack, fancy indexing, .copy()): slice a "
                         "sliding_window_view, or use as_strided, so that nothing is copied")
    for index, (what, shape, filters, kernel, stride, padding, dilation, hint) in \
            enumerate(_CASES_CONV1D_FUNCTION):
        x, weight, bias = _conv1d_case(shape, filters, kernel, seed=42 + index)
        count = _positions(shape[2], kernel, stride, padding, dilation)
        upstream = Rng(50).normal(size=(shape[0], filters, count), dtype=np.float64)
        with checker.case(what, hint=hint):
            _check_conv1d_function_case(checker, Conv1dFunction, x, weight, bias, upstream,
                                        stride, padding, dilation, rtol=1e-9, atol=1e-12)
    with checker.case("no bias (None): y, dx and dweight, and None for dbias",
                      hint="bias None: add nothing, and return None for dbias "
                           "(ctx.needs_input_grad[2] is False)"):
        x, weight, _ = _conv1d_case((2, 3, 8), 2, 3, seed=60, bias=False)
        upstream = Rng(61).normal(size=(2, 2, 8), dtype=np.float64)
        _check_conv1d_function_case(checker, Conv1dFunction, x, weight, None, upstream, 1, 1, 1,
                                    rtol=1e-9, atol=1e-12)
    with checker.case("float32: y and the gradients stay float32",
                      hint="make the arrays you fill (dx) with dy's dtype"):
        x, weight, bias = _conv1d_case((2, 2, 9), 3, 3, seed=70, dtype=np.float32)
        upstream = Rng(71).normal(size=(2, 3, 7))
        _check_conv1d_function_case(checker, Conv1dFunction, x, weight, bias, upstream, 1, 0, 1,
                                    rtol=1e-4, atol=1e-5)

    def conv1d(x: Any, weight: Any, bias: Any = None, stride: int = 1, padding: int = 0,
               dilation: int = 1) -> Any:
        """Your Conv1dFunction with F.conv1d's arguments."""
        return Conv1dFunction.apply(x, weight, bias, stride=stride, padding=padding,
                                    dilation=dilation)

    return HandOn(conv1d, F.conv1d)
