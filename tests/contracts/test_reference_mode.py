"""The whole engine in both modes: with its kernels and in ``tensorlib.reference_mode()``,
on the plain paths. A small Decoder's forward pass, backward pass and a few AdamW steps
agree between the two:

- float64: to rounding: losses and gradients rtol 1e-12 (atol 1e-14 for entries that are 0
  up to rounding); the parameters and logits after three steps rtol 1e-12, atol 1e-13;
- float32: losses and gradients rtol 1e-5, atol 2e-6 (the kernels' own accuracy, compounded
  over four layers: the float32 GELU is within 4 ulps of the exact one, the other kernels
  add in another order); the parameters and logits after three steps rtol 1e-5, atol 2e-5,
  a fiftieth of a percent of the learning rate (1e-2): AdamW divides each gradient by its
  own running size, so a gradient entry at the level of float32 rounding moves its
  parameter by amounts that depend on that rounding (eps = 1e-6 damps entries below that).

One parameter is left out of the comparison after the AdamW steps: the key bias
(``qkv_bias[1]`` of each block). It adds q·b to every score of a row, which softmax ignores,
so its gradient is 0 up to rounding, and AdamW, which divides by the gradient's own size,
turns that rounding noise into steps of the full learning rate, in directions that differ
between any two ways of rounding. Its gradient is checked to be 0 up to rounding instead.
"""

import numpy as np
import pytest

import tensorlib as tl
from tensorlib import Rng
from tensorlib.nn import Decoder, DecoderConfig
from tensorlib.optim import AdamW

from helpers import perturb_constants, train_recording

TOLERANCES = {np.float64: {"rtol": 1e-12, "atol": 1e-14},
              np.float32: {"rtol": 1e-5, "atol": 2e-6}}
AFTER_STEPS = {np.float64: {"rtol": 1e-12, "atol": 1e-13},
               np.float32: {"rtol": 1e-5, "atol": 2e-5}}
CONFIG = DecoderConfig(vocabulary_size=13, context_length=10, channels=24, heads=3, layers=4)


def run(dtype, reference: bool, steps: int = 3):
    """A fresh model trained ``steps`` AdamW steps (clipped) in one mode: the first loss, the
    first gradients, every loss, the final parameters and a greedy continuation."""
    model = perturb_constants(Decoder(CONFIG, rng=Rng(0), dtype=dtype))
    optimizer = AdamW(model, lr=1e-2, eps=1e-6, max_grad_norm=1.0)
    data = Rng(1).integers(0, CONFIG.vocabulary_size, size=(steps, 4, CONFIG.context_length + 1))
    with tl.reference_mode(reference):
        losses, first_grads = train_recording(model, optimizer, data)
        prompt = data[0, :, :3]
        cached = model.generate(prompt, 5, top_k=1, rng=Rng(2))
        full = model.generate(prompt, 5, top_k=1, rng=Rng(2), use_cache=False)
        with tl.no_grad():
            logits = model(data[0, :, :-1]).data
    parameters = {name: p.numpy().copy() for name, p in model.named_parameters()}
    return losses, first_grads, parameters, (cached, full), logits


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_decoder_trains_the_same_with_and_without_kernels(dtype):
    fast, plain = run(dtype, reference=False), run(dtype, reference=True)
    tolerance = TOLERANCES[dtype]
    np.testing.assert_allclose(fast[0], plain[0], **tolerance)  # every step's loss
    for name, grad in fast[1].items():  # the first backward pass
        np.testing.assert_allclose(grad, plain[1][name], err_msg=name, **tolerance)
    for name, value in fast[2].items():  # after three AdamW steps
        expected = plain[2][name]
        if name.endswith("attention.qkv_bias"):
            for grads in (fast[1], plain[1]):
                assert np.abs(grads[name][1]).max() < 100 * np.finfo(dtype).eps
            value, expected = value[[0, 2]], expected[[0, 2]]  # query and value biases
        np.testing.assert_allclose(value, expected, err_msg=name, **AFTER_STEPS[dtype])
    np.testing.assert_allclose(fast[4], plain[4], **AFTER_STEPS[dtype])  # the trained logits
    for tokens in (*fast[3], *plain[3]):  # greedy decoding, with and without the cache
        np.testing.assert_array_equal(tokens, fast[3][0])


def test_reference_mode_is_off_after_the_runs():
    assert not tl.is_reference_mode()
