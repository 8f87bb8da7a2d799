"""Helpers shared by several test files (pytest puts this folder on ``sys.path``)."""

import contextlib
import functools
import io
import re
import shutil
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
from nbval.plugin import get_sanitize_patterns

import tensorlib as tl


def perturb_constants(module, seed=0):
    """Give the parameters that start constant (biases, norm weights) distinct values, so
    that tests cannot pass by symmetry. Returns ``module``."""
    data = np.random.default_rng(seed)
    with tl.no_grad():
        for name, p in module.named_parameters():
            if name.endswith("bias") or name.endswith("norm.weight"):
                p.add_(data.normal(scale=0.2, size=p.shape).astype(p.dtype))
    return module


def count_nodes(tensor):
    """Graph nodes reachable from ``tensor`` (to show a fused op is one node)."""
    seen, stack = set(), [tensor.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or not hasattr(node, "next") or id(node) in seen:
            continue
        seen.add(id(node))
        stack.extend(n for n in node.next if n is not None and not isinstance(n, tl.Tensor))
    return len(seen)


def assert_same_adamw_run(parameters_a, optimizer_a, parameters_b, optimizer_b, steps):
    """Two AdamW runs ended in the same place, bit for bit: parameters, step counts and
    both moments."""
    for p, q in zip(parameters_a, parameters_b, strict=True):
        np.testing.assert_array_equal(p.data, q.data)
    for e, f in zip(optimizer_a.state, optimizer_b.state, strict=True):
        assert e["step"] == f["step"] == steps
        np.testing.assert_array_equal(e["first_moment"], f["first_moment"])
        np.testing.assert_array_equal(e["second_moment"], f["second_moment"])


def state_picture(state):
    """A nested state (an optimizer's ``state_dict()``, say) with every Tensor and array
    replaced by ``(dtype, shape, bytes)``, so that ``==`` compares it exactly."""
    if isinstance(state, tl.Tensor):
        state = state.numpy()
    if isinstance(state, np.ndarray):
        return (str(state.dtype), state.shape, state.tobytes())
    if isinstance(state, dict):
        return {key: state_picture(value) for key, value in state.items()}
    if isinstance(state, (list, tuple)):
        return type(state)(state_picture(value) for value in state)
    return state


def train_recording(model, optimizer, batches):
    """One optimizer step of ``model.loss`` per batch of token ids ``(B, T + 1)`` (inputs
    ``[:, :-1]``, targets ``[:, 1:]``): every loss, as a float, and the first step's
    gradients by parameter name."""
    losses, first_grads = [], None
    for tokens in batches:
        optimizer.zero_grad()
        loss = model.loss(tokens[:, :-1], tokens[:, 1:])
        loss.backward()
        if first_grads is None:
            first_grads = {name: p.grad.numpy().copy() for name, p in model.named_parameters()}
        losses.append(loss.item())
        optimizer.step()
    return losses, first_grads


SANITIZE_FILE = Path(__file__).resolve().parent / "nbval_sanitize.cfg"


@functools.cache
def _sanitize_patterns():
    return get_sanitize_patterns(SANITIZE_FILE.read_text())


def sanitize(text):
    """What nbval compares of an output's text: the text after the project's sanitize rules."""
    for regex, replacement in _sanitize_patterns():
        text = re.sub(regex, replacement, text)
    return text


# ------------------------------------------------------------------------- nn.Module tests
class Affine(tl.nn.Module):
    """A tiny layer: y = x * scale + shift."""

    def __init__(self, width=3, start=0.0):
        super().__init__()
        self.scale = tl.nn.Parameter(np.full(width, start + 1.0, dtype=np.float32))
        self.shift = tl.nn.Parameter(np.full(width, start, dtype=np.float32))

    def forward(self, x):
        return x * self.scale + self.shift


class Leaf(tl.nn.Module):
    """A float64 weight, a persistent int64 buffer and a non-persistent one."""

    def __init__(self, width: int = 2, dtype=np.float64) -> None:
        super().__init__()
        self.weight = tl.nn.Parameter(np.arange(width, dtype=dtype) + 1.0)
        self.register_buffer("count", np.zeros(1, dtype=np.int64))
        self.register_buffer("scale", np.full(width, 0.5, dtype=dtype), persistent=False)

    def forward(self, x):
        return x * self.weight * self.scale


# -------------------------------------------------- convolution and pooling by their definition
# (the references of tests/engine/test_ops_gradcheck.py and tests/nn/test_convolution.py)
def _padded(x, padding, value=0.0):
    """``x (N, C, *S)`` with ``padding[i]`` entries of ``value`` around spatial axis i."""
    widths = [(0, 0), (0, 0)] + [(p, p) for p in padding]
    return np.pad(x, widths, constant_values=value)


def _window(x, position, kernel, stride, dilation):
    """``x[:, :, window at position]``: (N, C, *kernel), read entry by entry."""
    index = [slice(None), slice(None)]
    for p, k, s, d in zip(position, kernel, stride, dilation, strict=True):
        index.append(slice(p * s, p * s + d * (k - 1) + 1, d))
    return x[tuple(index)]


def _positions(x, kernel, stride, dilation):
    return np.ndindex(*[(size - d * (k - 1) - 1) // s + 1 for size, k, s, d
                        in zip(x.shape[2:], kernel, stride, dilation, strict=True)])


def conv_by_definition(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    """The convolution by its definition: a loop over output positions and groups."""
    dims = w.ndim - 2
    stride, padding, dilation = ((v,) * dims if np.isscalar(v) else v
                                 for v in (stride, padding, dilation))
    x = _padded(x, padding)
    per_group_in, per_group_out = w.shape[1], w.shape[0] // groups
    positions = list(_positions(x, w.shape[2:], stride, dilation))
    out = np.zeros((x.shape[0], w.shape[0]) + tuple(np.max(positions, axis=0) + 1))
    for position in positions:
        window = _window(x, position, w.shape[2:], stride, dilation)   # (N, C, *K)
        for g in range(groups):
            part = window[:, g * per_group_in:(g + 1) * per_group_in]
            filters = w[g * per_group_out:(g + 1) * per_group_out]
            value = np.tensordot(part, filters, axes=(range(1, dims + 2), range(1, dims + 2)))
            out[(slice(None), slice(g * per_group_out, (g + 1) * per_group_out), *position)] = value
    return out if b is None else out + b.reshape((-1,) + (1,) * dims)


def pool_by_definition(x, reduce, kernel, stride, padding=0, dilation=1, value=0.0):
    """A pooling by its definition: ``reduce`` over each window, one position at a time."""
    dims = x.ndim - 2
    kernel, stride, padding, dilation = ((v,) * dims if np.isscalar(v) else v
                                         for v in (kernel, stride, padding, dilation))
    x = _padded(x, padding, value)
    positions = list(_positions(x, kernel, stride, dilation))
    out = np.zeros(x.shape[:2] + tuple(np.max(positions, axis=0) + 1))
    for position in positions:
        window = _window(x, position, kernel, stride, dilation)
        out[(slice(None), slice(None), *position)] = reduce(
            window.reshape(window.shape[:2] + (-1,)), axis=-1)
    return out


def unfold_by_definition(x, kernel, stride=1, padding=0, dilation=1):
    """im2col by its definition: column l is the window at position l, flattened."""
    kernel, stride, padding, dilation = ((v,) * 2 if np.isscalar(v) else v
                                         for v in (kernel, stride, padding, dilation))
    x = _padded(x, padding)
    columns = [_window(x, position, kernel, stride, dilation).reshape(x.shape[0], -1)
               for position in _positions(x, kernel, stride, dilation)]
    return np.stack(columns, axis=-1)


def every_window_reads_the_input(size, kernel, stride, padding, dilation):
    """Whether each window of one axis holds at least one entry of the input, not only
    padding (PyTorch's max pooling answers such a window with garbage, or aborts)."""
    count = (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1
    return all(any(0 <= p * stride + k * dilation - padding < size for k in range(kernel))
               for p in range(count))


# ------------------------------------------------------------------------- the browser tests
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


def find_chromium() -> str | None:
    """Debian's chromium, or any ``chromium`` on PATH."""
    if Path("/usr/bin/chromium").is_file():
        return "/usr/bin/chromium"
    return shutil.which("chromium")


@contextlib.contextmanager
def headless_chromium(fail_or_skip: Callable[[str], None]) -> Iterator[object]:
    """Headless system Chromium driven by Playwright; ``fail_or_skip(reason)`` when either is
    missing (each browser test says whether that fails or skips it)."""
    chromium = find_chromium()
    if chromium is None:
        fail_or_skip("Chromium is not installed")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        fail_or_skip("the playwright package is not installed")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


# ------------------------------------------------------------------------- matplotlib figures
def labelled(axes):
    """The lines of ``axes`` that carry a legend label."""
    return [line for line in axes.get_lines() if not line.get_label().startswith("_")]


def rendered_without_warnings(figure):
    """Render ``figure`` to PNG bytes, any warning raised as an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        figure.savefig(io.BytesIO(), format="png")
