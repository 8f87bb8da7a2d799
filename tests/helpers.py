"""Helpers shared by several test files (pytest puts this folder on ``sys.path``)."""

import contextlib
import functools
import re
import shutil
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
