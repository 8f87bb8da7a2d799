"""What each of today's pieces buys the ladder's decoder: the same 4-block decoder as the
ladder's ``decoder`` rung, with one piece of today's decoders swapped in at a time, then all
of them, each trained under the ladder's budget from several seeds (notebook 15b).

=============  =================================================================
``gpt2``       the ladder's ``decoder`` rung: LayerNorm, learned positions, GELU MLP
``rms_norm``   RMSNorm in place of LayerNorm
``rotary``     rotary positions in place of the learned position table
``swiglu``     the SwiGLU MLP (hidden width 176, about the GELU MLP's parameters)
``modern``     all three: RMSNorm, rotary positions, SwiGLU
``llama``      all three and no biases anywhere: Llama's shape, which a Llama folder holds
=============  =================================================================

Every design sees the same validation names (the ladder's split, seed 0). A seed ``s`` is
the model's initialization and the batches' order (``Budget(seed=s)``): at one seed every
design is trained on the same batches, so differences between designs at one seed are
paired, and the spread over seeds says how far apart two designs must be to differ.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from tensorlib.engine.autograd import no_grad
from tensorlib.engine.splitmix64 import Rng
from tensorlib.models.decoder import Decoder, DecoderConfig
from tensorlib.training.ladder import Budget, LadderData, RungResult, _machine, train_rung

__all__ = ["DESIGNS", "DESIGN_DESCRIPTIONS", "build_design", "design_table", "merge_design_records",
           "run_designs"]

DESIGNS: dict[str, dict[str, Any]] = {
    "gpt2": {},
    "rms_norm": {"norm": "rms"},
    "rotary": {"positions": "rotary"},
    "swiglu": {"mlp": "swiglu"},
    "modern": {"norm": "rms", "positions": "rotary", "mlp": "swiglu"},
    "llama": {"norm": "rms", "positions": "rotary", "mlp": "swiglu", "bias": False,
              "head_bias": False},
}
DESIGN_DESCRIPTIONS = {
    "gpt2": "LayerNorm, learned positions, GELU",
    "rms_norm": "RMSNorm for LayerNorm",
    "rotary": "rotary for learned positions",
    "swiglu": "SwiGLU for the GELU MLP",
    "modern": "all three",
    "llama": "all three, no biases (Llama's shape)",
}


def build_design(design: str | Mapping[str, Any], data: LadderData, seed: int = 0) -> Decoder:
    """The ladder's decoder (64 channels, 4 heads, 4 blocks, over the whole name) with the
    pieces ``design`` names (a key of :data:`DESIGNS`, or DecoderConfig fields), initialized
    from ``Rng(seed)``, its head scaled by 0.1 as every attention rung's."""
    fields = DESIGNS[design] if isinstance(design, str) else dict(design)
    config = DecoderConfig(vocabulary_size=data.vocabulary_size, context_length=data.length,
                           channels=64, heads=4, layers=4, **fields)
    model = Decoder(config, rng=Rng(seed))
    with no_grad():
        model.language_model_head.weight.mul_(0.1)
    return model


def run_designs(designs: Sequence[str], seeds: Sequence[int], data: LadderData,
                budget: Budget | None = None, steps: int | None = None, progress: bool = False,
                report: Callable[[str, int, RungResult], Any] | None = None,
                evaluate: bool = True) -> dict[str, Any]:
    """Train every design from every seed (``budget`` with that seed; the first ``steps``
    steps only, when given) and return the JSON-ready record: per design and seed its
    result (:class:`RungResult` as a dict). ``report(design, seed, result)`` after each.
    ``budget`` None is the ladder's, :class:`Budget`'s defaults; ``evaluate=False`` skips
    the validation losses (as :func:`~tensorlib.training.ladder.run_rung`'s)."""
    budget = Budget() if budget is None else budget
    runs: dict[str, dict[str, Any]] = {}
    for design in designs:
        runs[design] = {}
        for seed in seeds:
            seeded = dataclasses.replace(budget, seed=seed)
            model = build_design(design, data, seed)
            result = train_rung(model, design, DESIGN_DESCRIPTIONS[design], data, seeded,
                                budget.steps if steps is None else steps, progress, evaluate)
            runs[design][str(seed)] = dataclasses.asdict(result)
            if report is not None:
                report(design, seed, result)
    return {"format": "tensorlib decoder designs", "version": 1,
            "budget": dataclasses.asdict(budget), "seeds": list(seeds),
            "machine": _machine(), "designs": runs}


def design_table(record: Mapping[str, Any]) -> str:
    """The record as a table: per design its parameters, the validation loss at each seed,
    their mean and spread (max − min), and the mean paired difference from ``gpt2``."""
    seeds = [str(seed) for seed in record["seeds"]]
    designs = record["designs"]
    baseline = designs.get("gpt2")
    heading = "design    pieces                               parameters  " + \
        "  ".join(f"seed {seed}" for seed in seeds) + "    mean  spread  vs gpt2"
    lines = [heading]
    for name, runs in designs.items():
        losses = np.array([runs[seed]["validation_loss"] for seed in seeds])
        if baseline is not None and name != "gpt2":
            paired = losses - np.array([baseline[seed]["validation_loss"] for seed in seeds])
            versus = f"{paired.mean():+8.4f}"
        else:
            versus = "       -"
        row = "  ".join(f"{loss:6.4f}" for loss in losses)
        parameters = runs[seeds[0]]["parameters"]
        lines.append(f"{name:<9} {DESIGN_DESCRIPTIONS.get(name, ''):<36} {parameters:>10,}  "
                     f"{row}  {losses.mean():6.4f}  {np.ptp(losses):6.4f} {versus}")
    return "\n".join(lines)


def merge_design_records(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One record of several made under the same budget (say one seed per process): their
    seeds in order, every design's runs joined. ValueError when the budgets differ or a
    design and seed appear twice."""
    if not records:
        raise ValueError("merge_design_records needs at least one record")
    budget = records[0]["budget"]
    if any(record["budget"] != budget for record in records):
        raise ValueError("the records were made under different budgets")
    designs: dict[str, dict[str, Any]] = {}
    for record in records:
        for name, runs in record["designs"].items():
            for seed, run in runs.items():
                if seed in designs.setdefault(name, {}):
                    raise ValueError(f"design {name!r} seed {seed} is in two records")
                designs[name][seed] = run
    seeds = sorted({int(seed) for runs in designs.values() for seed in runs})
    ordered = {name: {str(seed): runs[str(seed)] for seed in seeds if str(seed) in runs}
               for name, runs in designs.items()}
    return {**records[0], "seeds": seeds, "designs": ordered}
