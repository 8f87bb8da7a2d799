"""The checks of notebook 17 (LoRA): its four exercises, ``lora_parameter_count``,
``lora_linear``, ``merged_weight`` with ``predicted_counts_after_merge``, and ``adapter_init``.

Each compares the learner's answer with what the package's LoRA does on the notebook's
surname model (``fresh_copy_of_base``) and its trained adapters (``adapter_file``): the
counts ``attach_lora`` adds, the values and gradients of a ``LoRALinear`` with a bias and a
``B`` that are not zero, the weights ``merge_lora`` writes, the draws of ``LowRankAdapter``.
The usual slips (a factor ``alpha`` for ``alpha / rank``, a bias missing, ``B A`` transposed,
only ``A`` counted, ``B`` left random...) are named by what they give.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import tensorlib as tl
from tensorlib.adapters.lora import (
    attach_lora,
    find_linear_layers,
    load_lora_state_dict,
    lora_parameters,
    merge_lora,
)
from tensorlib.course.checks.registry import exercise_check
from tensorlib.course.exercises import Checker
from tensorlib.engine.splitmix64 import Rng
from tensorlib.nn import Linear, LoRALinear

__all__ = ["check_lora_parameter_count", "check_lora_linear", "check_merging",
           "check_adapter_init"]

_LESSON_ALPHA = 8.0  # notebook 17 attaches every adapter with alpha 8 (and rank 4)


def _probe(model: Any, seed: int = 5) -> np.ndarray:
    """(4, T) token ids for the model's context: any ids show a change in the logits."""
    config = model.config
    return Rng(seed).integers(0, config.vocabulary_size, (4, config.context_length))


# ------------------------------------------------------------------------------ exercise 1
def _count_mistakes(model: Any, patterns: Any, rank: int) -> dict[str, Any]:
    """What the usual slips of counting adapter parameters give."""
    sizes = [(layer.in_features, layer.out_features)
             for _, layer in find_linear_layers(model, patterns)]
    every = [(layer.in_features, layer.out_features) for _, layer in find_linear_layers(model)]
    return {
        "only A counted (rank x in_features); B (out_features x rank) adds rank x "
        "out_features": sum(rank * i for i, _ in sizes),
        "only B counted (out_features x rank); A (rank x in_features) adds rank x "
        "in_features": sum(rank * o for _, o in sizes),
        "the full weight counted (in_features x out_features): an adapter has "
        "rank x (in_features + out_features)": sum(i * o for i, o in sizes),
        "a bias counted too: an adapter holds only A and B": sum(rank * (i + o) + o
                                                                 for i, o in sizes),
        "one layer counted: add up every layer that find_linear_layers lists":
            rank * (sizes[0][0] + sizes[0][1]),
        "every Linear of the model counted: only the layers matching the patterns get "
        "adapters": sum(rank * (i + o) for i, o in every),
    }


@exercise_check("Exercise 1 (lora_parameter_count)", yours="lora_parameter_count")
def check_lora_parameter_count(checker: Checker, lora_parameter_count: Any,
                               fresh_copy_of_base: Callable[[], Any],
                               LORA_TARGETS: Any) -> None:  # noqa: N803 (the notebook's name)
    """``lora_parameter_count(model, patterns, rank)`` against what ``attach_lora`` adds, for
    five choices of layers and ranks; it must attach nothing."""
    for patterns, rank in [(LORA_TARGETS, 4), ("blocks.*.attention.output", 8),
                           ("blocks.*.mlp_*", 8), ("language_model_head", 16), ("*", 1)]:
        with checker.case(f"patterns {patterns}, rank {rank}",
                          hint="A is (rank, in_features) and B is (out_features, rank), for "
                               "every matching layer"):
            counted_model = fresh_copy_of_base()
            received = lora_parameter_count(counted_model, patterns, rank)
            checker.true(not lora_parameters(counted_model),
                         "lora_parameter_count attached adapters; it should only count",
                         "attach_lora called: count from the layers' sizes instead")
            mistakes = _count_mistakes(counted_model, patterns, rank)
            attach_lora(counted_model, patterns, rank=rank, alpha=2.0 * rank, rng=Rng(0))
            expected = sum(p.numel() for p in lora_parameters(counted_model).values())
            checker.equal(received, expected, "adapter parameters", mistakes)


# ------------------------------------------------------------------------------ exercise 2
def _lora_linear_mistakes(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, A: np.ndarray,  # noqa: N803
                          B: np.ndarray, alpha: float) -> dict[str, Any]:  # noqa: N803
    """What the usual slips of a LoRA layer's forward give."""
    rank = A.shape[0]
    base, update = x @ weight.T, x @ A.T @ B.T
    scale = alpha / rank
    return {
        "the update is scaled by alpha: the factor is alpha / rank": base + bias + alpha * update,
        "the update is scaled by rank / alpha: the factor is alpha / rank":
            base + bias + (rank / alpha) * update,
        "the update is not scaled: multiply x Aᵀ Bᵀ by alpha / rank": base + bias + update,
        "r read from A's second axis (in_features): the rank is A.shape[0]":
            base + bias + (alpha / A.shape[1]) * update,
        "the bias is not added": base + scale * update,
        "the bias is subtracted: it is added once": base - bias + scale * update,
        "the bias is added twice": base + 2 * bias + scale * update,
        "the low-rank update is missing: only x Wᵀ + b": base + bias,
        "the update is subtracted: it is added": base + bias - scale * update,
    }


@exercise_check("Exercise 2 (lora_linear)", yours="lora_linear")
def check_lora_linear(checker: Checker, lora_linear: Any) -> None:
    """``lora_linear(x, weight, bias, A, B, alpha)`` against the package's ``LoRALinear``
    (a bias and a B that are not zero): y's shape, then its values, then the gradients of
    x, A and B, for two shapes; then ``tl.gradcheck`` in float64."""
    for x_shape, out_features, rank, alpha in [((4, 5), 3, 2, 4.0), ((2, 3, 6), 4, 3, 1.0)]:
        in_features = x_shape[-1]
        case_rng = Rng(in_features)
        layer = LoRALinear(Linear(in_features, out_features, rng=case_rng), rank=rank,
                           alpha=alpha, rng=case_rng)
        bias = layer.bias
        assert bias is not None  # a Linear has a bias unless asked not to
        with tl.no_grad():  # as if training had moved B and the bias away from zero
            layer.lora.B.copy_(case_rng.normal(0.0, 0.5, size=(out_features, rank)))
            bias.copy_(case_rng.normal(0.0, 0.5, size=(out_features,)))
        x_data = case_rng.normal(size=x_shape)
        upstream = case_rng.normal(size=x_shape[:-1] + (out_features,))
        x_package = tl.tensor(x_data, requires_grad=True)
        layer(x_package).backward(upstream)
        arrays = [layer.weight.numpy(), bias.numpy(), layer.lora.A.numpy(),
                  layer.lora.B.numpy()]
        what = f"x {x_shape}, rank {rank}, alpha {alpha:g}, a bias that is not 0"
        with checker.case(f"{what}: values", hint="the scale is alpha / rank, and rank is "
                          "A.shape[0]; the bias is added once"):
            with tl.no_grad():
                received = lora_linear(tl.tensor(x_data), *map(tl.tensor, arrays), alpha)
                expected = layer(tl.tensor(x_data))
            checker.shape(received, x_shape[:-1] + (out_features,), "y (..., out_features)")
            checker.close(received, expected, "y", rtol=1e-5, atol=1e-6,
                          mistakes=_lora_linear_mistakes(x_data, arrays[0], arrays[1],
                                                         arrays[2], arrays[3], alpha))
        with checker.case(f"{what}: gradients", hint="use only tensorlib operations on the "
                          "Tensors (no .data, no numpy), so that autograd sees every step"):
            x_mine = tl.tensor(x_data, requires_grad=True)
            A_mine = tl.tensor(arrays[2], requires_grad=True)  # noqa: N806
            B_mine = tl.tensor(arrays[3], requires_grad=True)  # noqa: N806
            lora_linear(x_mine, tl.tensor(arrays[0]), tl.tensor(arrays[1]), A_mine, B_mine,
                        alpha).backward(upstream)
            checker.true(A_mine.grad is not None and B_mine.grad is not None
                         and x_mine.grad is not None, "a gradient did not reach x, A or B",
                         "a step on .data or in numpy: autograd does not see it")
            checker.close(A_mine.grad, layer.lora.A.grad, "gradient of A", rtol=1e-4,
                          atol=1e-5)
            checker.close(B_mine.grad, layer.lora.B.grad, "gradient of B", rtol=1e-4,
                          atol=1e-5)
            checker.close(x_mine.grad, x_package.grad, "gradient of x", rtol=1e-4, atol=1e-5)
    with checker.case("tl.gradcheck in float64 (x, A and B)",
                      hint="use only tensorlib operations on the Tensors"):
        g = Rng(11)
        w64, b64 = (tl.tensor(g.normal(size=shape), dtype=np.float64) for shape in [(3, 5), (3,)])
        x64, a64, b64_factor = (tl.tensor(g.normal(size=shape), dtype=np.float64,
                                          requires_grad=True)
                                for shape in [(4, 5), (2, 5), (3, 2)])
        try:
            tl.gradcheck(lambda x, A, B: lora_linear(x, w64, b64, A, B, 4.0),  # noqa: N803
                         x64, a64, b64_factor)
        except tl.GradcheckError as error:
            checker.true(False, f"gradcheck failed: {error}",
                         "a step on .data or in numpy: autograd does not see it")


# ------------------------------------------------------------------------------ exercise 3
def _adapted_copy(fresh_copy_of_base: Callable[[], Any],
                  adapter_file: dict[str, np.ndarray]) -> tuple[Any, list[str]]:
    """A fresh copy of the base with the lesson's trained adapters, and the adapted layers."""
    names = sorted({key.rsplit(".lora.", 1)[0] for key in adapter_file})
    rank = adapter_file[f"{names[0]}.lora.A"].shape[0]
    model = fresh_copy_of_base()
    names = attach_lora(model, names, rank=rank, alpha=_LESSON_ALPHA, rng=Rng(2))
    load_lora_state_dict(model, adapter_file)
    return model, names


def _merge_mistakes(layer: Any) -> dict[str, Any]:
    """What the usual slips of merging one LoRALinear give."""
    weight = layer.base.weight.numpy().copy()
    A, B = layer.lora.A.numpy().copy(), layer.lora.B.numpy().copy()  # noqa: N806
    rank, alpha = layer.lora.rank, layer.lora.alpha
    product = B @ A
    return {
        "the weight is returned unchanged: add (alpha / rank) B A": weight,
        "only the update (alpha / rank) B A: add it to the weight W": (alpha / rank) * product,
        "the update is scaled by alpha: the factor is alpha / rank": weight + alpha * product,
        "the update is not scaled: W + (alpha / rank) B A": weight + product,
        "the update is subtracted: W + (alpha / rank) B A": weight - (alpha / rank) * product,
        "Aᵀ Bᵀ, the update transposed: the update of W (out_features, in_features) is B A":
            lambda: weight + (alpha / rank) * product.T,  # square layers only
    }


@exercise_check("Exercise 3 (merging)", yours=("merged_weight", "predicted_counts_after_merge"),
                reads=("base",))
def check_merging(checker: Checker, merged_weight: Any, predicted_counts_after_merge: Any,
                  fresh_copy_of_base: Callable[[], Any],
                  adapter_file: dict[str, np.ndarray]) -> None:
    """``merged_weight(layer)`` against the weights ``merge_lora`` writes, on the lesson's
    trained adapters (shape, then values), the logits of a model with those weights, that it
    leaves the layer unchanged; then the predicted parameter counts after ``merge_lora``."""
    fine_tuned, adapted = _adapted_copy(fresh_copy_of_base, adapter_file)
    merged = _adapted_copy(fresh_copy_of_base, adapter_file)[0]
    merge_lora(merged)
    probe = _probe(fine_tuned)
    with tl.no_grad():
        adapted_logits = fine_tuned(probe).numpy()
    with checker.case(f"the {len(adapted)} merged weights equal merge_lora's",
                      hint="the update is (alpha / rank) times B A, of shape (out_features, "
                           "in_features)"):
        source = _adapted_copy(fresh_copy_of_base, adapter_file)[0]
        for name in adapted:
            layer = source.get_submodule(name)
            mistakes = _merge_mistakes(layer)  # before the call, which might change the layer
            received = merged_weight(layer)
            expected = merged.get_submodule(name).weight.numpy()
            checker.shape(received, expected.shape, f"{name}.weight (out_features, "
                          "in_features)", mistakes)
            checker.close(received, expected, f"{name}.weight", rtol=1e-5, atol=1e-6,
                          mistakes=mistakes)
    with checker.case("your merged weights give the fine-tuned logits",
                      hint="add the update to the frozen weight; the bias stays as it is"):
        source = _adapted_copy(fresh_copy_of_base, adapter_file)[0]
        by_hand_model = fresh_copy_of_base()
        with tl.no_grad():
            for name in adapted:
                by_hand_model.get_submodule(name).weight.copy_(
                    merged_weight(source.get_submodule(name)))
            gap = float(np.abs(by_hand_model(probe).numpy() - adapted_logits).max())
        checker.true(gap < 1e-5, f"largest logit difference from the fine-tuned model: "
                     f"{gap:.3g} (expected below 1e-5)")
    with checker.case("merged_weight leaves the layer unchanged",
                      hint="compute a new array; do not add into layer.base.weight in place"):
        for name in adapted:
            merged_weight(fine_tuned.get_submodule(name))
        with tl.no_grad():
            gap = float(np.abs(fine_tuned(probe).numpy() - adapted_logits).max())
        checker.true(gap == 0, f"after your calls the adapted model's logits moved by up to "
                     f"{gap:.3g}", "the update is added into the layer's own weight (+= on "
                     "the array .numpy() gives): add into a new array")
    with checker.case("lora_model.num_parameters() after merge_lora",
                      hint="merging puts the base Linears back: which parameters are left?"):
        adapters = sum(int(np.size(array)) for array in adapter_file.values())
        checker.equal(predicted_counts_after_merge()["parameters"], merged.num_parameters(),
                      "parameters", {
                          "the adapters counted: merge_lora folds them into the weights and "
                          "removes them": merged.num_parameters() + adapters,
                          "only the adapters' numbers: the model keeps every base parameter":
                              adapters,
                          "0: the merged model has all the base model's parameters": 0})
    with checker.case("lora_model.num_parameters(trainable_only=True) after merge_lora",
                      hint="a merged weight keeps its trainable flag: what did attach_lora set "
                           "it to?"):
        checker.equal(predicted_counts_after_merge()["trainable"],
                      merged.num_parameters(trainable_only=True), "trainable parameters", {
                          "every parameter trainable: attach_lora froze them all, and merging "
                          "does not unfreeze them": merged.num_parameters(),
                          "the adapters still trainable: merging folds them into the frozen "
                          "weights, and they are gone": adapters})


# ------------------------------------------------------------------------------ exercise 4
def _draws_with_b(adapters: list[tuple[int, int, int]], seed: int) -> list[np.ndarray]:
    """Each adapter's A when B also takes its numbers from the generator (the buggy init's
    draws, B then zeroed or not)."""
    rng, drawn = Rng(seed), []
    for in_features, out_features, rank in adapters:
        bound = 1.0 / np.sqrt(in_features)
        drawn.append(rng.uniform(-bound, bound, size=(rank, in_features)))
        rng.uniform(-bound, bound, size=(out_features, rank))
    return drawn


@exercise_check("Exercise 4 (adapter_init)", yours="adapter_init")
def check_adapter_init(checker: Checker, adapter_init: Any, attach_with_init: Callable[..., Any],
                       fresh_copy_of_base: Callable[[], Any]) -> None:
    """``adapter_init`` through the notebook's ``attach_with_init``: A and B's shapes, B zero
    (attaching changes no logit), A not zero (every B gets a gradient), A drawn as
    ``LowRankAdapter`` draws it."""
    before_model = fresh_copy_of_base()
    probe = _probe(before_model)
    with tl.no_grad():
        before = before_model(probe).numpy()
    with checker.case("attaching changes no logit",
                      hint="at attach time the update (alpha / r) B A must be exactly zero"):
        A, B = adapter_init(32, 128, 4, Rng(2))  # noqa: N806
        checker.shape(A, (4, 32), "A (rank, in_features) of a 32 -> 128 layer, rank 4",
                      {"A and B swapped: A is (rank, in_features)": (128, 4)})
        checker.shape(B, (128, 4), "B (out_features, rank) of a 32 -> 128 layer, rank 4",
                      {"A and B swapped: B is (out_features, rank)": (4, 32)})
        checker.true(not np.any(np.asarray(B)), "B is not all zeros",
                     "B is drawn at random: it starts at zero, so that (alpha / r) B A is 0 "
                     "when the adapter is attached")
        fixed_model = attach_with_init(adapter_init)
        with tl.no_grad():
            gap = float(np.abs(fixed_model(probe).numpy() - before).max())
        checker.true(gap == 0, f"attaching changed the logits by up to {gap:.3g} (expected 0)")
    with checker.case("one backward gives every B a non-zero gradient",
                      hint="the gradient of B is built from A x: A must not be zero"):
        fixed_model = attach_with_init(adapter_init)
        tokens = _probe(fixed_model, seed=6)
        fixed_model.loss(tokens[:, :-1], tokens[:, 1:]).backward()
        for name, parameter in lora_parameters(fixed_model).items():
            if name.endswith(".lora.B"):
                gradient = parameter.grad
                checker.true(gradient is not None and np.abs(gradient).max() > 0,
                             f"{name} got no gradient",
                             "A is zero too: B's gradient is (alpha / r) times the upstream "
                             "gradient times A x, so A must start random")
    with checker.case("A is drawn as LowRankAdapter draws it",
                      hint="keep A's draw as it was; does B need any random numbers?"):
        fixed_model = attach_with_init(adapter_init)
        adapted = [name.removesuffix(".lora.A") for name in lora_parameters(fixed_model)
                   if name.endswith(".lora.A")]
        reference = fresh_copy_of_base()
        attach_lora(reference, adapted, rank=4, alpha=_LESSON_ALPHA, rng=Rng(2))
        layers = [fixed_model.get_submodule(name).lora for name in adapted]
        with_b = _draws_with_b([(layer.in_features, layer.out_features, layer.rank)
                                for layer in layers], seed=2)
        for index, name in enumerate(adapted):
            checker.equal(layers[index].A.numpy(),
                          reference.get_submodule(name).lora.A.numpy(), f"{name}.lora.A", {
                              "B takes random numbers from the generator (then zeroed): the "
                              "draws of A for the layers after the first move on":
                                  lambda index=index: with_b[index].astype(np.float32)})
