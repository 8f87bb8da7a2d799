"""The checks of notebook 18 (NF4 and QLoRA): its three exercises, ``nf4_quantize_block``,
``nf4_nbytes`` and ``predicted_outcomes`` (when ``quantize_model`` refuses).

Each compares the learner's answer with the package's ``quantize_nf4``, ``quantize_model``
and ``memory_report`` on the notebook's float copy of the surname model: blocks of trained
weights, a block whose largest magnitude is negative, a block of zeros, shapes that leave a
padded last block. The usual slips (the nibbles swapped, the codes not packed, the absmax
with its sign, the padding or the scales not counted, a refusal thought to quantize part of
the model) are named by what they give.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from tensorlib.adapters.lora import find_linear_layers
from tensorlib.adapters.nf4 import (
    NF4_LEVELS,
    NF4Linear,
    memory_report,
    quantize_model,
    quantize_nf4,
)
from tensorlib.course.checks.registry import exercise_check
from tensorlib.course.exercises import Checker
from tensorlib.engine.splitmix64 import Rng

__all__ = ["check_nf4_quantize_block", "check_nf4_nbytes", "check_quantize_refusals"]


# ------------------------------------------------------------------------------ exercise 1
def _nearest(scaled: np.ndarray) -> np.ndarray:
    """The index of the nearest NF4 level of each value, as uint8."""
    return np.abs(scaled[:, None] - NF4_LEVELS).argmin(axis=1).astype(np.uint8)


def _pack(codes: np.ndarray) -> np.ndarray:
    return (codes[0::2] << 4) | codes[1::2]


def _block_mistakes(block: np.ndarray) -> dict[str, Any]:
    """What the usual slips of quantizing one block give (packed codes, or their shape)."""
    block = np.asarray(block, dtype=np.float32)
    absmax = float(np.abs(block).max())
    scaled = block / absmax if absmax > 0 else block
    codes = _nearest(scaled)
    with np.errstate(invalid="ignore", divide="ignore"):
        mistakes = {
            "the codes are not packed: two 4-bit codes share a byte (first << 4 | second)":
                (block.size,),
            "the nibbles are swapped: the first code of a pair goes in the high nibble "
            "(first << 4 | second)": (codes[1::2] << 4) | codes[0::2],
            "the block is not divided by its absmax before picking the nearest level":
                _pack(_nearest(block)),
            "divided by the largest value, not the largest magnitude: absmax is "
            "max(|value|)": _pack(_nearest(block / block.max())) if block.max() > 0 else None,
            "the nearest level measured without abs(): take the smallest |value - level|":
                _pack((scaled[:, None] - NF4_LEVELS).argmin(axis=1).astype(np.uint8)),
            "a block of zeros divided by its absmax of 0: nan, whose nearest level is code 0; "
            "leave a block of zeros as it is (code 7, the level 0.0)":
                _pack(np.zeros(block.size, dtype=np.uint8)) if absmax == 0 else None,
        }
    return {slip: value for slip, value in mistakes.items() if value is not None}


@exercise_check("Exercise 1 (nf4_quantize_block)", yours="nf4_quantize_block",
                reads=("NF4_LEVELS",))
def check_nf4_quantize_block(checker: Checker, nf4_quantize_block: Any, float_copy: Any) -> None:
    """``nf4_quantize_block(block)`` against ``quantize_nf4(block, block_size=block.size)``:
    the packed codes' shape, dtype and values, then the absmax, on two blocks of trained
    weights, a block whose largest magnitude is negative and a block of zeros."""
    negative_peak = Rng(6).normal(0.0, 0.1, size=16)
    negative_peak[3] = -0.5
    blocks = [
        ("block 5 of blocks.0.mlp_input.weight",
         float_copy.blocks[0].mlp_input.weight.numpy().reshape(-1)[5 * 64:6 * 64]),
        ("block 3 of language_model_head.weight",
         float_copy.language_model_head.weight.numpy().reshape(-1)[3 * 64:4 * 64]),
        ("16 values whose largest magnitude is -0.5", negative_peak),
        ("a block of 8 zeros", np.zeros(8, dtype=np.float32)),
    ]
    for what, values in blocks:
        hint = ("divide by the largest |value|, pick the index of the nearest level, then "
                "pack: first code << 4 | second code")
        if not values.any():
            hint = ("every value is 0.0, which is a level; dividing by an absmax of 0 gives "
                    "nan (the package divides by 1 instead)")
        with checker.case(what, hint=hint):
            mistakes = _block_mistakes(values)
            packed, absmax_received = nf4_quantize_block(values)
            expected = quantize_nf4(values, block_size=values.size)
            packed = np.asarray(packed)
            checker.shape(packed, expected.codes.shape, "packed codes (half a byte a value)",
                          mistakes)
            checker.true(packed.dtype == np.uint8, f"the codes' dtype is {packed.dtype}, "
                         "expected uint8", "the codes are not bytes: make them np.uint8 "
                         "(.astype) before packing")
            checker.equal(packed, expected.codes, "packed codes", mistakes)
            peak = float(values.reshape(-1)[np.abs(values).argmax()])
            checker.equal(float(absmax_received), float(expected.absmax[0]), "absmax", {
                "absmax kept the sign of the largest magnitude: it is |value|": peak,
                "the largest value, not the largest magnitude: absmax is max(|value|)":
                    float(values.max())})


# ------------------------------------------------------------------------------ exercise 2
def _nbytes_mistakes(shapes: Sequence[tuple[int, ...]], block_size: int) -> dict[str, int]:
    """What the usual slips of counting NF4 bytes give, summed over ``shapes``."""
    def total(count: Callable[[int, int], int]) -> int:
        return sum(count(int(np.prod(shape)), -(-int(np.prod(shape)) // block_size))
                   for shape in shapes)

    return {
        "the last block is not padded: count it as a whole block (a ceiling division)":
            total(lambda n, b: (n // block_size) * (block_size // 2 + 4)),
        "the codes of the padding are not counted: the last block is stored whole":
            total(lambda n, b: -(-n // 2) + 4 * b),
        "a byte per code: two 4-bit codes share a byte": total(lambda n, b: b * block_size
                                                               + 4 * b),
        "the scales are not counted: each block keeps its absmax as float32 (4 bytes)":
            total(lambda n, b: b * block_size // 2),
        "a scale counted as 1 byte: each absmax is a float32, 4 bytes":
            total(lambda n, b: b * block_size // 2 + b),
        "a scale counted as 8 bytes: each absmax is a float32, 4 bytes":
            total(lambda n, b: b * block_size // 2 + 8 * b),
        "bits, not bytes": total(lambda n, b: 4 * b * block_size + 32 * b),
    }


@exercise_check("Exercise 2 (nf4_nbytes)", yours="nf4_nbytes")
def check_nf4_nbytes(checker: Checker, nf4_nbytes: Any,
                     fresh_copy_of_base: Callable[[], Any]) -> None:
    """``nf4_nbytes(shape, block_size)`` against ``quantize_nf4(...).nbytes`` for six shapes
    and block sizes, then summed over the decoder's seven Linears against
    ``memory_report`` after ``quantize_model``, at block sizes 16 and 256."""
    for shape, block_size in [((128, 32), 64), ((128, 32), 16), ((128, 32), 256),
                              ((27, 32), 64), ((27, 32), 256), ((5, 7), 4)]:
        with checker.case(f"shape {shape}, block_size {block_size}",
                          hint="half a byte per weight and 4 bytes per block; count the "
                               "padded last block as a whole one"):
            checker.equal(nf4_nbytes(shape, block_size),
                          quantize_nf4(np.zeros(shape, dtype=np.float32), block_size).nbytes,
                          "bytes", _nbytes_mistakes([shape], block_size))
    float_copy = fresh_copy_of_base()
    shapes = [(layer.out_features, layer.in_features)
              for _, layer in find_linear_layers(float_copy)]
    for block_size in (16, 256):
        with checker.case(f"the decoder's seven Linears, block_size {block_size}",
                          hint="sum nf4_nbytes over the (out_features, in_features) of each "
                               "Linear"):
            received = sum(nf4_nbytes(shape, block_size) for shape in shapes)
            quantized_copy = fresh_copy_of_base()
            quantize_model(quantized_copy, block_size=block_size)
            report = memory_report(quantized_copy)
            checker.equal(received, report["nf4_codes"] + report["nf4_scales"],
                          "bytes of codes and scales", _nbytes_mistakes(shapes, block_size))


# ------------------------------------------------------------------------------ exercise 3
_ALL_OR_NOTHING = ("quantize_model is all or nothing: it checks every layer before it "
                   "changes one, so when it refuses no layer is NF4Linear")


def _refusal_mistakes(what: str, blocks_1: list[str], every: list[str]
                      ) -> tuple[dict[str, Any], dict[str, Any]]:
    """What the usual wrong predictions of one scenario are: (for the exception, for the
    NF4Linear layers afterwards). An exception class is given by a lambda: a mistake that is
    callable is called for its value."""
    if what == "an optimizer over the whole model":
        return ({"an optimizer keeps a list of every parameter it updates, the weights of "
                 "blocks.1 among them, so quantize_model refuses (RuntimeError)": None,
                 "the layers are plain Linears, nothing is wrong with them; it is their "
                 "weights that are held (RuntimeError)": lambda: ValueError},
                {_ALL_OR_NOTHING: blocks_1})
    if what == "an optimizer over blocks.0 only":
        return ({"only the weights of the layers being quantized are checked, and this "
                 "optimizer holds none of blocks.1's: no error": lambda: RuntimeError},
                {"no error, so every Linear of blocks.1 is quantized": [],
                 "only the layers whose names match 'blocks.1.*' are quantized": every})
    if what == "a variable holding blocks.1.mlp_output.weight":
        return ({"a variable is a reference too: it holds the weight, so quantize_model "
                 "refuses (RuntimeError)": None},
                {_ALL_OR_NOTHING: blocks_1,
                 _ALL_OR_NOTHING + " (not even the layers whose weights are free)":
                     [name for name in blocks_1 if name != "blocks.1.mlp_output"]})
    return ({"the layers are checked before their weights: a layer with an adapter is "
             "refused as a layer (ValueError), before anything looks at its weight":
                 lambda: RuntimeError,
             "quantize_model quantizes no layer that has an adapter: it refuses "
             "(ValueError)": None},
            {"the layers with adapters are refused, and quantize_model is all or nothing: "
             "no layer is NF4Linear": blocks_1})


@exercise_check("Exercise 3 (when quantize_model refuses)", yours="predicted_outcomes")
def check_quantize_refusals(checker: Checker, predicted_outcomes: Any,
                            SCENARIOS: Mapping[str, Callable[[], Any]]) -> None:  # noqa: N803
    """``predicted_outcomes()`` against what ``quantize_model(model, "blocks.1.*")`` does in
    each of the notebook's scenarios: the exception it raises (or None), then the layers
    that are NF4Linear afterwards."""
    hints = {
        "an optimizer over the whole model": "an optimizer keeps a list of the parameters "
                                             "it updates; and is quantize_model "
                                             "all-or-nothing?",
        "an optimizer over blocks.0 only": "only the weights of the layers being quantized "
                                           "are checked",
        "a variable holding blocks.1.mlp_output.weight": "a variable is a reference too",
        "adapters attached, an optimizer over the adapters": "the layers are checked before "
                                                             "anything looks at their "
                                                             "weights",
    }
    for what, scenario in SCENARIOS.items():
        with checker.case(what, hint=hints.get(what)):
            predicted_error, predicted_layers = predicted_outcomes()[what]
            model, holder = scenario()
            every = [name for name, _ in find_linear_layers(model)]
            blocks_1 = [name for name in every if name.startswith("blocks.1.")]
            try:
                quantize_model(model, "blocks.1.*")
                raised = None
            except Exception as error:
                raised = type(error)
            del holder
            nf4_layers = [name for name, m in model.named_modules() if isinstance(m, NF4Linear)]
            error_mistakes, layer_mistakes = _refusal_mistakes(what, blocks_1, every)
            checker.equal(predicted_error, raised, "the exception (None: no exception)",
                          error_mistakes)
            checker.equal(list(predicted_layers), nf4_layers,
                          "the NF4Linear layers afterwards", layer_mistakes)
