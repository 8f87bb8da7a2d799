"""The checks of notebook 12c (convolutions), its 2-D pieces and its exercises:
``im2col`` with ``conv2d_im2col``, ``MaxPool2dFunction``, and the four exercises (the 1-D
pieces are in :mod:`tensorlib.course.checks.convolutions`).

As there: each check compares the learner's piece with tensorlib's (``F.conv2d``,
``F.unfold``, ``F.max_pool2d``, ``F.avg_pool2d``) on seeded inputs chosen to expose the usual
slips (rectangular images and kernels, ties, overlapping windows, a bias that is not zero,
float32), the output's shape before its values and the forward before the backward.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import tensorlib as tl
import tensorlib.nn.functional as F
from tensorlib.course.checks.differences import grad_array
from tensorlib.course.checks.registry import HandOn, exercise_check, piece_check
from tensorlib.course.exercises import Checker
from tensorlib.engine.splitmix64 import Rng
from tensorlib.nn import Conv1d, Conv2d, Linear, MaxPool2d, ReLU

__all__ = ["check_conv2d_im2col", "check_max_pool2d", "check_feature_map_shapes",
           "check_receptive_field", "check_conv_and_dense_parameters",
           "check_avg_pool2d_backward"]

_FLOAT64 = np.dtype(np.float64)  # what numpy's np.zeros(shape) makes, whatever the inputs' dtype


# ------------------------------------------------------------------ im2col and conv2d_im2col
def package_conv2d(x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None = None,
                   stride: tuple[int, int] = (1, 1),
                   padding: tuple[int, int] = (0, 0)) -> np.ndarray:
    """``F.conv2d`` on numpy arrays: y (N, O, H_out, W_out)."""
    return F.conv2d(tl.tensor(x), tl.tensor(weight), None if bias is None else tl.tensor(bias),
                    stride=stride, padding=padding).numpy()


def _unfold(x: np.ndarray, kernel: tuple[int, int], stride: tuple[int, int],
            padding: tuple[int, int]) -> np.ndarray:
    """``F.unfold`` on numpy arrays: the columns (N, C·kH·kW, L)."""
    return F.unfold(tl.tensor(x), kernel, padding=padding, stride=stride).numpy()


def _im2col_mistakes(x: np.ndarray, kernel: tuple[int, int], stride: tuple[int, int],
                     padding: tuple[int, int]) -> dict[str, Any]:
    """What the usual slips of im2col give (the shapes first)."""
    batch, channels, height, width = x.shape
    (kh, kw), (sh, sw), (ph, pw) = kernel, stride, padding
    rows, cols = (height + 2 * ph - kh) // sh + 1, (width + 2 * pw - kw) // sw + 1
    expected = _unfold(x, kernel, stride, padding)
    by_window = expected.reshape(batch, channels, kh, kw, rows, cols)
    return {
        "the columns' two last axes swapped: (N, C·kH·kW, L) has one column per window":
            (batch, rows * cols, channels * kh * kw),
        "no padding added: np.pad the rows by padding[0] and the columns by padding[1]":
            lambda: _unfold(x, kernel, stride, (0, 0)),
        "padding[0] and padding[1] swapped: padding[0] is for the rows (the top and the "
        "bottom)": lambda: _unfold(x, kernel, stride, (pw, ph)),
        "the windows are 1 apart: every stride-th window is kept ([:, :, ::sH, ::sW])":
            lambda: _unfold(x, kernel, (1, 1), padding),
        "stride[0] and stride[1] swapped: stride[0] steps down the rows":
            lambda: _unfold(x, kernel, (sw, sh), padding),
        "each window's values tap by tap, the channels inside (the channels must come "
        "first)": by_window.transpose(0, 2, 3, 1, 4, 5).reshape(expected.shape),
        "the windows taken column by column: column l = i * W_out + j is the window at row "
        "i, column j": by_window.transpose(0, 1, 2, 3, 5, 4).reshape(expected.shape),
        "each window's values column by column: within a channel, the kH x kW values go row "
        "by row": by_window.transpose(0, 1, 3, 2, 4, 5).reshape(expected.shape),
    }


def _conv2d_mistakes(x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None,
                     stride: tuple[int, int], padding: tuple[int, int]) -> dict[str, Any]:
    """What the usual slips of conv2d_im2col give (the shapes first)."""
    batch, _, height, width = x.shape
    out_channels, _, kh, kw = weight.shape
    (sh, sw), (ph, pw) = stride, padding
    rows, cols = (height + 2 * ph - kh) // sh + 1, (width + 2 * pw - kw) // sw + 1
    return {
        "y reshaped to (N, O, W_out, H_out): the rows come first": (batch, out_channels, cols,
                                                                    rows),
        "y is the columns' product, not reshaped: reshape it to (N, O, H_out, W_out)":
            (batch, out_channels, rows * cols),
        "H_out counted without the padding: (H + 2 padding[0] - kH) // stride[0] + 1":
            (batch, out_channels, (height - kh) // sh + 1,
             rows * cols // ((height - kh) // sh + 1)),
        "the bias is not added": lambda: package_conv2d(x, weight, None, stride, padding),
        "the filter flipped (a convolution in the mathematical sense; ours is PyTorch's "
        "cross-correlation)": lambda: package_conv2d(x, weight[:, :, ::-1, ::-1].copy(), bias,
                                                     stride, padding),
    }


_CASES_2D = [  # what, x's shape, filters, kernel, stride, padding, hint
    ("one 4 x 5 image (rectangular), one channel, one 2 x 2 filter", (1, 1, 4, 5), 1, (2, 2),
     (1, 1), (0, 0), "column l = i * W_out + j is the window at output row i, column j, its "
                     "values row by row"),
    ("3 channels, 4 filters, a bias that is not zero", (2, 3, 5, 6), 4, (3, 3), (1, 1), (0, 0),
     "down a column, channel 0's kH * kW values, then channel 1's, ..."),
    ("a 2 x 3 kernel, stride (2, 1)", (2, 2, 7, 6), 3, (2, 3), (2, 1), (0, 0),
     "rows and columns have their own kernel size and stride"),
    ("padding (1, 2)", (1, 2, 5, 4), 2, (3, 3), (1, 1), (1, 2),
     "pad padding[0] zero rows at the top and bottom, padding[1] zero columns at each side"),
    ("stride 2, padding 1 on 8 x 8 images", (3, 1, 8, 8), 5, (3, 3), (2, 2), (1, 1),
     "H_out = (H + 2 padding - kH) // stride + 1"),
]


@piece_check("im2col and conv2d_im2col", yours=("im2col", "conv2d_im2col"),
             label="conv2d_im2col", package_name="F.conv2d")
def check_conv2d_im2col(checker: Checker, im2col: Any, conv2d_im2col: Any) -> HandOn:
    """For five geometries, ``im2col``'s columns against ``F.unfold`` (shape, then values),
    then ``conv2d_im2col``'s y against ``F.conv2d`` (shape, then values)."""
    for index, (what, shape, filters, kernel, stride, padding, hint) in enumerate(_CASES_2D):
        rng = Rng(100 + 2 * index)
        x = rng.normal(size=shape, dtype=np.float64)
        weight = rng.normal(size=(filters, shape[1], *kernel), dtype=np.float64)
        bias = rng.normal(size=filters, dtype=np.float64)
        with checker.case(f"{what}: the columns", hint=hint):
            expected = _unfold(x, kernel, stride, padding)
            mistakes = _im2col_mistakes(x, kernel, stride, padding)
            received = im2col(x, kernel, stride, padding)
            checker.shape(received, expected.shape, "columns (N, C·kH·kW, L)", mistakes)
            checker.close(received, expected, "columns", rtol=0, atol=0, mistakes=mistakes)
        with checker.case(f"{what}: the convolution", hint="y = weight.reshape(O, -1) @ "
                          "columns, plus bias[:, None], reshaped to (N, O, H_out, W_out)"):
            expected = package_conv2d(x, weight, bias, stride, padding)
            mistakes = _conv2d_mistakes(x, weight, bias, stride, padding)
            received = conv2d_im2col(x, weight, bias, stride, padding)
            checker.shape(received, expected.shape, "y (N, O, H_out, W_out)", mistakes)
            checker.close(received, expected, "y", rtol=1e-10, atol=1e-12, mistakes=mistakes)
    return HandOn(conv2d_im2col, package_conv2d)


# --------------------------------------------------------------------------- MaxPool2dFunction
def _pool_windows(x: np.ndarray, kernel: tuple[int, int],
                  stride: tuple[int, int]) -> np.ndarray:
    """The windows of x (N, C, H, W), each laid out row by row: (N, C, H_out, W_out, kH·kW)."""
    windows = np.lib.stride_tricks.sliding_window_view(x, kernel, axis=(2, 3))
    windows = windows[:, :, ::stride[0], ::stride[1]]
    return windows.reshape(*windows.shape[:4], kernel[0] * kernel[1])


def _pool_backward(x: np.ndarray, upstream: np.ndarray, kernel: tuple[int, int],
                   stride: tuple[int, int], chosen: str = "first",
                   buffered: bool = False) -> np.ndarray:
    """dx of max pooling for ``upstream``: each window's gradient at its ``chosen`` maximum
    ("first", "last", or "every" tied one); ``buffered``: ``dx[index] += dy``, which keeps
    one of the windows that share an entry rather than adding them all."""
    flat = _pool_windows(x, kernel, stride)
    size = flat.shape[-1]
    if chosen == "every":
        picked = flat == flat.max(axis=-1, keepdims=True)
    else:
        index = flat.argmax(axis=-1) if chosen == "first" else \
            size - 1 - flat[..., ::-1].argmax(axis=-1)
        picked = np.arange(size) == index[..., None]
    n, c, i, j, k = np.nonzero(picked)
    rows, cols = i * stride[0] + k // kernel[1], j * stride[1] + k % kernel[1]
    dx = np.zeros(x.shape, dtype=upstream.dtype)
    if buffered:
        dx[n, c, rows, cols] += upstream[n, c, i, j]
    else:
        np.add.at(dx, (n, c, rows, cols), upstream[n, c, i, j])
    return dx


def _pool_mistakes(x: np.ndarray, upstream: np.ndarray, kernel: tuple[int, int],
                   stride: tuple[int, int]) -> dict[str, dict[str, Any]]:
    """What the usual slips of MaxPool2dFunction give: for y, then for dx."""
    batch, channels, height, width = x.shape
    (kh, kw), (sh, sw) = kernel, stride
    flat = _pool_windows(x, kernel, stride)
    return {
        "y": {
            "the kernel size used as the stride: the windows are `stride` apart":
                (batch, channels, (height - kh) // kh + 1, (width - kw) // kw + 1),
            "the windows 1 apart: every stride-th window is kept ([:, :, ::sH, ::sW])":
                (batch, channels, height - kh + 1, width - kw + 1),
            "the rows and columns no whole window covers are kept: (H - kH) // stride + 1":
                (batch, channels, -(-(height - kh) // sh) + 1, -(-(width - kw) // sw) + 1),
            "the maximum started from 0 (or clipped at 0): a window of negative numbers has "
            "a negative maximum": lambda: np.maximum(flat.max(axis=-1), 0.0),
            "y holds where each maximum is (argmax), not its value": lambda: flat.argmax(
                axis=-1).astype(x.dtype),
        },
        "dx": {
            "dx has dy's shape: dx is the input's shape, (N, C, H, W)": upstream.shape,
            "every tied maximum gets the gradient (a mask x == max): only the first does":
                lambda: _pool_backward(x, upstream, kernel, stride, "every"),
            "the gradient goes to the last maximum of a tie: argmax gives the first":
                lambda: _pool_backward(x, upstream, kernel, stride, "last"),
            "dx[index] += dy keeps only one of the windows that share a maximum: np.add.at "
            "adds them all": lambda: _pool_backward(x, upstream, kernel, stride,
                                                    buffered=True),
            "the gradient placed with the kernel size as the step: window (i, j) starts at "
            "(i * sH, j * sW)": lambda: _shifted_pool_backward(x, upstream, kernel, stride),
        },
    }


def _shifted_pool_backward(x: np.ndarray, upstream: np.ndarray, kernel: tuple[int, int],
                           stride: tuple[int, int]) -> np.ndarray:
    """dx when backward places window (i, j)'s maximum at (i kH + row, j kW + column)."""
    flat = _pool_windows(x, kernel, stride)
    index = flat.argmax(axis=-1)
    n, c, i, j = np.indices(index.shape)
    rows, cols = i * kernel[0] + index // kernel[1], j * kernel[1] + index % kernel[1]
    keep = (rows < x.shape[2]) & (cols < x.shape[3])
    dx = np.zeros(x.shape, dtype=upstream.dtype)
    np.add.at(dx, (n[keep], c[keep], rows[keep], cols[keep]), upstream[keep])
    return dx


def _ties(shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Small integers: most windows hold their maximum more than once."""
    return Rng(seed).integers(0, 3, size=shape).astype(np.float64)


def _pool_cases() -> list[tuple[str, np.ndarray, tuple[int, int], tuple[int, int], str]]:
    """What, x, kernel, stride, hint."""
    return [
        ("2 x 2 windows, stride 2, a 4 x 6 input",
         Rng(120).normal(size=(2, 3, 4, 6), dtype=np.float64), (2, 2), (2, 2),
         "each output is the largest of its 2 x 2 block"),
        ("ties: the gradient goes to the first maximum", _ties((2, 2, 4, 4), 121), (2, 2),
         (2, 2), "argmax of the window laid out row by row picks the first maximum; a mask "
         "x == max would give every tied entry the gradient"),
        ("negative inputs", -1.0 - np.abs(Rng(122).normal(size=(1, 2, 4, 4),
                                                          dtype=np.float64)),
         (2, 2), (2, 2), "the maximum of negative numbers is negative: do not start from 0"),
        ("3 x 3 windows, stride 1: overlapping windows share maxima", _ties((2, 2, 5, 6), 123),
         (3, 3), (1, 1), "np.add.at(dx, index, dy) adds every window's gradient; dx[index] += "
         "dy keeps only one of the windows that share a maximum"),
        ("a 2 x 3 window, stride (2, 3), on 5 x 7: leftover rows and columns",
         Rng(124).normal(size=(1, 3, 5, 7), dtype=np.float64), (2, 3), (2, 3),
         "H_out = (H - kH) // stride + 1; rows no window covers get no gradient"),
    ]


def _check_pool_case(checker: Checker, MaxPool2dFunction: Any, x: np.ndarray,  # noqa: N803
                     upstream: np.ndarray, kernel: tuple[int, int],
                     stride: tuple[int, int]) -> None:
    """y's shape, dtype and values, then dx from the learner's backward: shape, dtype,
    values."""
    mistakes = _pool_mistakes(x, upstream, kernel, stride)
    y = MaxPool2dFunction.apply(tl.tensor(x, requires_grad=True), kernel_size=kernel,
                                stride=stride)                  # the forward first
    leaf = tl.tensor(x, requires_grad=True)
    expected = F.max_pool2d(leaf, kernel, stride)
    checker.shape(y, expected.shape, "y (N, C, H_out, W_out)", mistakes["y"])
    checker.equal(y.numpy().dtype, x.dtype, "y's dtype",
                  {"y made with numpy's default float64: give it x's dtype": _FLOAT64})
    checker.close(y, expected, "y", rtol=0, atol=0, mistakes=mistakes["y"])
    expected.backward(tl.tensor(upstream))
    (dx,) = checker.backward_of(y, upstream, 1)                # then the backward
    checker.shape(dx, x.shape, "dx (N, C, H, W)", mistakes["dx"])
    checker.equal(np.asarray(dx).dtype, x.dtype, "dx's dtype",
                  {"dx made with numpy's default float64: give it dy's dtype": _FLOAT64})
    checker.close(dx, leaf.grad, "dx", rtol=1e-12, atol=1e-12, mistakes=mistakes["dx"])


@piece_check("MaxPool2dFunction", yours="MaxPool2dFunction")
def check_max_pool2d(checker: Checker, MaxPool2dFunction: Any) -> HandOn:  # noqa: N803
    """``MaxPool2dFunction`` against ``F.max_pool2d``: the forward's y (shape, then values),
    and only then what its backward returns, dx (shape, then values): ties, negative inputs,
    overlapping windows, a rectangular window with leftovers, float32."""
    for what, x, kernel, stride, hint in _pool_cases():
        rows, cols = [(size - k) // s + 1 for size, k, s in zip(x.shape[2:], kernel, stride,
                                                                strict=True)]
        upstream = Rng(130).normal(size=(*x.shape[:2], rows, cols), dtype=np.float64)
        with checker.case(what, hint=hint):
            _check_pool_case(checker, MaxPool2dFunction, x, upstream, kernel, stride)
    with checker.case("float32 in, float32 out", hint="make y and dx with x's and dy's dtype"):
        x, upstream = Rng(125).normal(size=(1, 2, 4, 4)), Rng(126).normal(size=(1, 2, 2, 2))
        _check_pool_case(checker, MaxPool2dFunction, x, upstream, (2, 2), (2, 2))

    def max_pool2d(x: Any, kernel_size: Any, stride: Any = None) -> Any:
        """Your MaxPool2dFunction with F.max_pool2d's arguments (ints or pairs)."""
        kernel = (kernel_size, kernel_size) if isinstance(kernel_size, int) else kernel_size
        step = kernel if stride is None else stride
        step = (step, step) if isinstance(step, int) else step
        return MaxPool2dFunction.apply(x, kernel_size=tuple(kernel), stride=tuple(step))

    return HandOn(max_pool2d, F.max_pool2d)


# ---------------------------------------------------------------------------------- exercises
def _shapes_measured(layers: list[Any], shape: tuple[int, int, int]) -> list[tuple[int, ...]]:
    """The (C, H, W) after each layer, run on a zero input."""
    x, shapes = tl.tensor(np.zeros((1, *shape), dtype=np.float64)), []
    for layer in layers:
        x = layer(x)
        shapes.append(tuple(x.shape[1:]))
    return shapes


def _shapes_with(layers: list[Any], shape: tuple[int, int, int], padding: bool = True,
                 dilation: bool = True, stride: bool = True, channels: bool = True,
                 pooling: bool = True, plus_one: bool = True) -> list[tuple[int, int, int]]:
    """The shapes by the formula, each part of it left out on request (a slip)."""
    count, height, width = shape
    shapes = []
    for layer in layers:
        if isinstance(layer, Conv2d) or (pooling and isinstance(layer, MaxPool2d)):
            height, width = [
                (size + (2 * layer.padding[axis] if padding else 0)
                 - (layer.dilation[axis] if dilation else 1) * (layer.kernel_size[axis] - 1)
                 - 1) // (layer.stride[axis] if stride else 1) + (1 if plus_one else 0)
                for axis, size in enumerate((height, width))]
            if channels and isinstance(layer, Conv2d):
                count = layer.out_channels
        shapes.append((count, height, width))
    return shapes


@exercise_check("Exercise 1 (feature_map_shapes)", yours="feature_map_shapes")
def check_feature_map_shapes(checker: Checker, feature_map_shapes: Any, cnn: Any) -> None:
    """``feature_map_shapes(layers, shape)`` against the shapes the layers give a zero input:
    the notebook's CNN (``cnn(rng)``), strides, dilations and rectangular kernels, a pooling
    that leaves a row and a column out."""
    stacks = [  # what, layers, input shape, hint
        ("the CNN above on a 12 x 12 canvas", list(cnn(Rng(0)))[:6], (1, 12, 12),
         "a Conv2d sets the channels to out_channels; padding 1 with a 3 x 3 kernel keeps the "
         "size"),
        ("stride 2, dilation 2, a 3 x 5 kernel, padding (1, 2), on 17 x 11",
         [Conv2d(3, 6, (3, 5), stride=2, padding=(1, 2), dilation=(2, 1), dtype=np.float64),
          ReLU(), MaxPool2d(3, stride=2)], (3, 17, 11),
         "rows and columns each with their own kernel size, stride, padding and dilation; "
         "(size + 2 padding - dilation (k - 1) - 1) // stride + 1"),
        ("a pooling that leaves out a row and a column (7 x 7, 2 x 2 windows)",
         [MaxPool2d(2), Conv2d(2, 5, 1, dtype=np.float64)], (2, 7, 7),
         "the floor: windows that do not fit whole are left out"),
    ]
    for what, layers, shape, hint in stacks:
        expected = _shapes_measured(layers, shape)
        with checker.case(what, hint=hint):
            received = [tuple(sizes) for sizes in feature_map_shapes(layers, shape)]
            checker.equal(len(received), len(expected), "how many shapes (one per layer)")
            checker.equal(received, expected, "the shapes", {
                "the padding not added: size + 2 padding": _shapes_with(layers, shape,
                                                                        padding=False),
                "the dilation left out: a window spans dilation (k - 1) + 1":
                    _shapes_with(layers, shape, dilation=False),
                "the stride left out: divide by the stride (//)": _shapes_with(
                    layers, shape, stride=False),
                "the channels not changed: a Conv2d gives out_channels channels":
                    _shapes_with(layers, shape, channels=False),
                "a MaxPool2d kept the size: it shrinks it as a Conv2d does (without changing "
                "the channels)": _shapes_with(layers, shape, pooling=False),
                "the + 1 missing: (size + 2 padding - dilation (k - 1) - 1) // stride + 1":
                    _shapes_with(layers, shape, plus_one=False),
            })


def _field_measured(layers: list[tuple[int, int, int]], length: int = 64) -> int:
    """The span of inputs that one output in the middle of the stack sends a gradient to."""
    x = tl.tensor(np.zeros((1, 1, length)), requires_grad=True)
    h = x
    for kernel_size, stride, dilation in layers:
        layer = Conv1d(1, 1, kernel_size, stride=stride, dilation=dilation, bias=False,
                       dtype=np.float64)
        with tl.no_grad():
            layer.weight.copy_(np.ones((1, 1, kernel_size)))   # positive: nothing cancels
        h = layer(h)
    h[0, 0, h.shape[2] // 2].backward()
    seen = np.flatnonzero(grad_array(x)[0, 0])
    return int(seen[-1] - seen[0] + 1)


def _field_with(layers: list[tuple[int, int, int]], jump: bool = True, dilation: bool = True,
                start: int = 1, minus_one: bool = True) -> int:
    """The receptive field by the formula, each part of it left out on request (a slip)."""
    field, distance = start, 1
    for kernel_size, stride, spacing in layers:
        field += (kernel_size - (1 if minus_one else 0)) * (spacing if dilation else 1) * \
            distance
        distance *= stride if jump else 1
    return field


@exercise_check("Exercise 2 (receptive_field)", yours="receptive_field")
def check_receptive_field(checker: Checker, receptive_field: Any) -> None:
    """``receptive_field(layers)`` against the span of inputs one output of a stack of
    ``Conv1d`` layers (all weights 1) sends a gradient to."""
    fields = [  # what, layers, hint
        ("12b's WaveNet as dilated convolutions", [(2, 1, 1), (2, 1, 2), (2, 1, 4)],
         "each layer adds (kernel_size - 1) * dilation * (the distance between its input "
         "units)"),
        ("three 3-wide convolutions", [(3, 1, 1)] * 3, "start from 1; a 3-wide layer adds 2"),
        ("convolution, pooling 2 with stride 2, convolution (the CNN's rows)",
         [(3, 1, 1), (2, 2, 1), (3, 1, 1)],
         "after a stride-2 layer, neighbouring units are 2 inputs apart: multiply by the "
         "strides"),
        ("kernel 5 with stride 2, then kernel 3 with dilation 2", [(5, 2, 1), (3, 1, 2)],
         "dilation and the strides below multiply"),
        ("three 3-wide convolutions with stride 2", [(3, 2, 1)] * 3,
         "the distance between units doubles at each layer"),
    ]
    for what, layers, hint in fields:
        with checker.case(what, hint=hint):
            checker.equal(receptive_field(layers), _field_measured(layers),
                          "the receptive field", {
                              "the strides below not taken into account: after a stride s, "
                              "neighbouring units are s times further apart":
                                  _field_with(layers, jump=False),
                              "the dilation left out: a tap is dilation units from the next":
                                  _field_with(layers, dilation=False),
                              "started from 0: one unit of the input already counts (start "
                              "from 1)": _field_with(layers, start=0),
                              "each layer adds kernel_size: it adds kernel_size - 1 (its "
                              "first tap is the unit already counted)":
                                  _field_with(layers, minus_one=False),
                          })


@exercise_check("Exercise 3 (conv_and_dense_parameters)", yours="conv_and_dense_parameters")
def check_conv_and_dense_parameters(checker: Checker, conv_and_dense_parameters: Any) -> None:
    """``conv_and_dense_parameters(...)`` against ``num_parameters()`` of the Conv2d and the
    Linear layer of those sizes."""
    for sizes in [(1, 16, 3, 12, 12), (16, 32, 3, 6, 6), (3, 8, 5, 10, 7), (2, 4, 1, 5, 3)]:
        channels, filters, kernel, height, width = sizes
        with checker.case(f"{channels} -> {filters} channels, kernel {kernel}, "
                          f"{height} x {width} image",
                          hint="the conv: a (C, k, k) filter and a bias for each of the O "
                               "outputs, whatever the image's size; the dense layer: a weight "
                               "for every (input, output) pair and a bias per output"):
            conv = Conv2d(channels, filters, kernel, padding=kernel // 2, rng=Rng(0))
            dense = Linear(channels * height * width, filters * height * width, rng=Rng(0))
            expected = (conv.num_parameters(), dense.num_parameters())
            pixels = height * width
            weights = filters * channels * kernel ** 2
            checker.equal(tuple(conv_and_dense_parameters(*sizes)), expected, "(conv, dense)", {
                # each a list: a tuple among mistakes is a shape
                "the conv's bias not counted: one per output channel": [weights, expected[1]],
                "the dense layer's bias not counted: one per output": [
                    expected[0], expected[1] - filters * pixels],
                "no bias counted: the conv has one per filter, the dense layer one per output":
                    [weights, expected[1] - filters * pixels],
                "the conv's filter without the input channels: each filter is (C, k, k)":
                    [filters * kernel ** 2 + filters, expected[1]],
                "the kernel not squared: a filter has k x k taps per input channel":
                    [filters * channels * kernel + filters, expected[1]],
                "the conv counted at every pixel: its weights are shared by all positions":
                    [expected[0] * pixels, expected[1]],
            })


def _avg_pool_gradient(shape: tuple[int, ...], kernel_size: tuple[int, int],
                       stride: tuple[int, int], upstream: np.ndarray) -> np.ndarray:
    leaf = tl.tensor(np.zeros(shape, dtype=upstream.dtype), requires_grad=True)
    F.avg_pool2d(leaf, kernel_size, stride).backward(tl.tensor(upstream))
    return grad_array(leaf)


def _avg_pool_backward(shape: tuple[int, ...], kernel: tuple[int, int],
                       stride: tuple[int, int], upstream: np.ndarray, assign: bool = False,
                       divide: bool = True) -> np.ndarray:
    """dx by the offsets' strided slices; ``assign``: each offset's share assigned (=) rather
    than added, ``divide``: the share divided by kH kW."""
    (kh, kw), (sh, sw) = kernel, stride
    rows, cols = upstream.shape[2:]
    dx = np.zeros(shape, dtype=upstream.dtype)
    share = upstream / (kh * kw) if divide else upstream
    for u in range(kh):
        for v in range(kw):
            where = (slice(None), slice(None), slice(u, u + sh * (rows - 1) + 1, sh),
                     slice(v, v + sw * (cols - 1) + 1, sw))
            if assign:
                dx[where] = share
            else:
                dx[where] += share
    return dx


@exercise_check("Exercise 4 (avg_pool2d_backward)", yours="avg_pool2d_backward")
def check_avg_pool2d_backward(checker: Checker, avg_pool2d_backward: Any) -> None:
    """``avg_pool2d_backward(dy, input_shape, kernel_size, stride)`` against the gradient of
    ``F.avg_pool2d``: its shape, dtype, then values; overlapping windows, gaps, float32."""
    pools = [  # what, input shape, kernel, stride, hint
        ("2 x 2 windows, stride 2, on 4 x 6", (2, 3, 4, 6), (2, 2), (2, 2),
         "each of the 4 entries of a window gets a quarter of its output's gradient"),
        ("3 x 3 windows, stride 1: overlapping", (1, 2, 5, 5), (3, 3), (1, 1),
         "an entry in several windows gets a share from each: add (+=)"),
        ("a 2 x 3 window, stride (3, 2), on 7 x 8: gaps and leftovers", (1, 1, 7, 8), (2, 3),
         (3, 2), "the slice for offset (u, v) starts at (u, v) and steps by the stride; "
                 "entries no window covers get 0"),
        ("float32", (2, 1, 4, 4), (2, 2), (2, 2), "make dx with dy's dtype"),
    ]
    for what, shape, kernel, stride, hint in pools:
        dtype = np.float32 if what == "float32" else np.float64
        rows, cols = [(size - k) // s + 1 for size, k, s in zip(shape[2:], kernel, stride,
                                                                strict=True)]
        upstream = Rng(140).normal(size=(*shape[:2], rows, cols), dtype=dtype)
        with checker.case(what, hint=hint):
            received = avg_pool2d_backward(upstream, shape, kernel, stride)
            checker.shape(received, shape, "dx (N, C, H, W)",
                          {"dx has dy's shape: it has the input's, input_shape": upstream.shape})
            checker.equal(np.asarray(received).dtype, np.dtype(dtype), "dx's dtype",
                          {"dx made with numpy's default float64: give it dy's dtype":
                           _FLOAT64})
            checker.close(received, _avg_pool_gradient(shape, kernel, stride, upstream), "dx",
                          rtol=1e-6, atol=1e-7, mistakes={
                              "each offset's share assigned (=) where windows overlap: add "
                              "(+=) the share of every window": _avg_pool_backward(
                                  shape, kernel, stride, upstream, assign=True),
                              "the gradient not divided by kH kW: an output is the mean of "
                              "its window": _avg_pool_backward(
                                  shape, kernel, stride, upstream, divide=False),
                          })
