"""The checks of notebook 11 (an MLP classifier): the training loop ``train_by_hand`` and the
exercises (``confusion_matrix``, ``train_accumulated``, ``predictions``).

The training loop is run on the notebook's own ``fresh_run`` and ``batches`` beside
``tensorlib.training.loop.train`` on an identical copy, and each recorded number and weight must be
equal to the last bit. Its usual slips (a missing ``zero_grad``, the norm read after clipping,
the rate read after ``schedule.step()``, ...) are loops of this module, run on the same
copies, so that a report names the slip whose records the learner's loop gave.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tensorlib import Rng, Tensor, no_grad
from tensorlib.course.checks.registry import HandOn, exercise_check, piece_check
from tensorlib.course.exercises import Checker
from tensorlib.engine.autograd import Context
from tensorlib.nn import MLP
from tensorlib.nn.functional import cross_entropy
from tensorlib.optim import clip_grad_norm, global_gradient_norm
from tensorlib.training.loop import train

__all__ = ["check_train_by_hand", "check_confusion_matrix", "check_train_accumulated",
           "check_predictions"]

CLIP = 0.5  # the notebook's clipping threshold (its CLIP)
Records = tuple[list[float], list[float], list[float]]  # losses, rates, norms


# ------------------------------------------------------------------------ the training loop
def _tensorlib_loop(loss_fn: Callable[..., Any]) -> Callable[..., Records]:
    """``train_by_hand`` done by ``tensorlib.training.loop.train``: its History as three lists."""
    def train_with_tensorlib(model: Any, optimizer: Any, schedule: Any, batches: Any,
                             max_grad_norm: float | None = None) -> Records:
        batches = list(batches)
        history = train(model, optimizer, batches, steps=len(batches), schedule=schedule,
                        loss_fn=loss_fn, max_grad_norm=max_grad_norm, progress=False)
        return ([r.train_loss for r in history], [r.learning_rate for r in history],
                [r.gradient_norm for r in history])
    return train_with_tensorlib


# What a slip of the loop is, in the learner's words -> its code in _slipped_loop.
_LOOP_SLIPS = {
    "no_zero_grad": "optimizer.zero_grad() is missing: backward() adds into .grad, so each "
                    "step followed the sum of every gradient so far",
    "no_update": "the weights never move: optimizer.step() is missing, or runs before "
                 "loss.backward() (after zero_grad there is no gradient to step with)",
    "norm_after_clip": "the norm is read after clip_grad_norm, which rescales the gradients "
                       "in place: record global_gradient_norm before clipping",
    "rate_after_schedule": "optimizer.lr is read after schedule.step(), so each step records "
                           "the next step's rate: read it before",
    "no_schedule": "schedule.step() is missing: the rate stays at the first warm-up rate",
    "no_clip": "the gradients are never clipped: call clip_grad_norm(optimizer.parameters, "
               "max_grad_norm) when max_grad_norm is not None",
}


def _slipped_loop(slip: str, loss_fn: Callable[..., Any]) -> Callable[..., Records]:
    """The training loop with one of the usual slips (a key of ``_LOOP_SLIPS``) made."""
    def loop(model: Any, optimizer: Any, schedule: Any, batches: Any,
             max_grad_norm: float | None = None) -> Records:
        model.train()
        losses, rates, norms = [], [], []
        for inputs, targets in batches:
            if slip != "no_zero_grad":
                optimizer.zero_grad()
            loss = loss_fn(model, inputs, targets)
            loss.backward()
            limit = None if slip == "no_clip" else max_grad_norm
            if limit is not None and slip == "norm_after_clip":
                clip_grad_norm(optimizer.parameters, limit)
            norms.append(global_gradient_norm(optimizer.parameters))
            if limit is not None and slip != "norm_after_clip":
                clip_grad_norm(optimizer.parameters, limit)
            rate = optimizer.lr
            if slip != "no_update":
                optimizer.step()
            if slip != "no_schedule":
                schedule.step()
            rates.append(optimizer.lr if slip == "rate_after_schedule" else rate)
            losses.append(loss.item())
        return losses, rates, norms
    return loop


class _Run:
    """One scenario of the loop's check: a fresh model, optimizer and schedule from the
    notebook's ``fresh_run``, leftover gradients if asked, then one call of a loop on
    ``batches`` or, with ``split``, two calls (the model put in eval mode first)."""

    def __init__(self, fresh_run: Callable[[], Any], batches: Sequence[Any],
                 clip: float | None, leftover: float | None = None,
                 split: int | None = None) -> None:
        self.fresh_run, self.batches, self.clip = fresh_run, list(batches), clip
        self.leftover, self.split = leftover, split

    def __call__(self, loop: Callable[..., Any]) -> tuple[list[Any], Any]:
        """(what each call returned, the model after them)."""
        model, optimizer, schedule = self.fresh_run()
        if self.leftover is not None:
            for p in model.parameters():
                p.grad = np.full_like(p.data, self.leftover)
        if self.split is None:
            return [loop(model, optimizer, schedule, self.batches, self.clip)], model
        model.eval()
        return [loop(model, optimizer, schedule, self.batches[:self.split], self.clip),
                loop(model, optimizer, schedule, self.batches[self.split:], self.clip)], model


def _loop_mistakes(run: _Run, loss_fn: Callable[..., Any]) -> dict[str, Any]:
    """Each usual slip -> a function giving (what each call returned, the final weights),
    computed once when first asked."""
    found: dict[str, Any] = {}

    def outcome(slip: str) -> Any:
        if slip not in found:
            calls, model = run(_slipped_loop(slip, loss_fn))
            found[slip] = calls, [p.numpy().copy() for p in model.parameters()]
        return found[slip]
    return {said: (lambda slip=slip: outcome(slip)) for slip, said in _LOOP_SLIPS.items()}


def _part(mistakes: dict[str, Any], *where: int) -> dict[str, Any]:
    """``mistakes`` whose outcomes are tuples, each narrowed to its item at ``where``."""
    def item(outcome: Any) -> Any:
        for index in where:
            outcome = outcome[index]
        return outcome
    return {said: (lambda outcome=outcome: item(outcome())) for said, outcome in mistakes.items()}


def _same_records(checker: Checker, received: Any, expected: Records, which: str,
                  mistakes: dict[str, Any], call: int, more: dict[str, Any] | None = None
                  ) -> None:
    """``received`` is (losses, rates, norms) as ``expected``: three lists of as many
    Python floats, equal to the last bit; a slip whose records ``received`` has is named."""
    checker.true(isinstance(received, (tuple, list)) and len(received) == 3,
                 f"train_by_hand returns (losses, rates, norms); received {received!r:.80}",
                 "return the three lists as a tuple: return losses, rates, norms")
    names = ("losses", "learning rates", "gradient norms")
    for index, (name, mine, theirs) in enumerate(zip(names, received, expected, strict=True)):
        checker.equal(len(mine), len(theirs), f"the number of {name}{which} (one per step)",
                      more)
        loss = "loss.item() for a loss, not the Tensor" if index == 0 else "float(...)"
        checker.true(all(isinstance(x, float) for x in mine), f"the {name} must be Python "
                     f"floats ({loss}); received {mine[:2]!r:.80}",
                     f"the {name} are not Python floats: record {loss}")
        checker.close(mine, theirs, f"the {name}{which}", rtol=0, atol=0,
                      mistakes=_part(mistakes, 0, call, index))


def _same_weights(checker: Checker, mine: Any, reference: Any, when: str,
                  mistakes: dict[str, Any]) -> None:
    for index, (a, b) in enumerate(zip(mine.parameters(), reference.parameters(), strict=True)):
        checker.close(a.data, b.data, f"parameter {index} {when}", rtol=0, atol=0,
                      mistakes=_part(mistakes, 1, index))


_LOOP_HINT = ("per batch: zero_grad, loss_fn, backward; the norm before clipping, optimizer.lr "
              "before schedule.step(); clip only if max_grad_norm is not None; step, then "
              "schedule.step(); record loss.item(). A difference near 1e-8 means another way "
              "of computing: use global_gradient_norm and clip_grad_norm, as train() does")


@piece_check("the training loop (train_by_hand)", yours="train_by_hand", label="train_by_hand",
             package_name="tensorlib's train")
def check_train_by_hand(checker: Checker, train_by_hand: Any, fresh_run: Callable[[], Any],
                        batches: Sequence[Any], loss_fn: Callable[..., Any]) -> HandOn:
    """``train_by_hand`` against ``tensorlib.training.loop.train`` on identical copies from
    ``fresh_run``: the recorded losses, rates and norms, then the weights, exactly; from
    fresh and from leftover gradients, with and without clipping, and two calls in a row."""
    reference_loop = _tensorlib_loop(loss_fn)
    for what, part, clip, leftover in [
            ("the first 10 steps of the run below (clipping at 0.5)", slice(0, 10), CLIP, None),
            ("5 steps from leftover gradients (every .grad 1.0), no clipping", slice(10, 15),
             None, 1.0),
            ("8 steps clipped at 0.1, under every step's norm", slice(15, 23), 0.1, None)]:
        with checker.case(what, hint=_LOOP_HINT):
            run = _Run(fresh_run, batches[part], clip, leftover)
            mistakes = _loop_mistakes(run, loss_fn)
            (received,), mine = run(train_by_hand)
            (expected,), reference = run(reference_loop)
            _same_records(checker, received, expected, "", mistakes, 0)
            _same_weights(checker, mine, reference, "after the last step", mistakes)
    with checker.case("a second call carries on: 6 steps, then 4 more, from a model in eval mode",
                      hint="model.train() first; fresh lists at every call; the optimizer and "
                           "the schedule keep their own state from call to call"):
        run = _Run(fresh_run, batches[:10], CLIP, split=6)
        mistakes = _loop_mistakes(run, loss_fn)
        (first, second), mine = run(train_by_hand)
        checker.true(mine.training, "the model is still in eval mode: call model.train() first",
                     "model.train() is missing: the loop must put the model in train mode")
        (expected,), reference = _Run(fresh_run, batches[:10], CLIP)(reference_loop)
        _same_records(checker, first, tuple(column[:6] for column in expected),
                      " of the first call", mistakes, 0)
        carried = {"the lists are made once, outside train_by_hand: make fresh ones at every "
                   "call, so that it returns the new steps only": 10}
        _same_records(checker, second, tuple(column[6:] for column in expected),
                      " of the second call", mistakes, 1, carried)
        _same_weights(checker, mine, reference, "after both calls", mistakes)
    return HandOn(train_by_hand, reference_loop)


# ------------------------------------------------------------------------------ exercises
def _confusion_slips(logits: np.ndarray, labels: np.ndarray, classes: int) -> dict[str, Any]:
    predicted = np.asarray(logits).argmax(axis=1)

    def fancy_add() -> np.ndarray:
        counts = np.zeros((classes, classes), dtype=np.int64)
        counts[labels, predicted] += 1
        return counts

    def swapped() -> np.ndarray:
        counts = np.zeros((classes, classes), dtype=np.int64)
        np.add.at(counts, (predicted, labels), 1)
        return counts

    return {"counts[labels, predicted] += 1 adds 1 once for a pair that repeats: use "
            "np.add.at(counts, (labels, predicted), 1), or a loop": fancy_add,
            "rows and columns swapped: the row is the true class (the label), the column "
            "the predicted one": swapped}


@exercise_check("Exercise 1 (confusion_matrix)", yours="confusion_matrix")
def check_confusion_matrix(checker: Checker, confusion_matrix: Any, model: Any,
                           linear_model: Any, points: np.ndarray, labels: np.ndarray) -> None:
    """``confusion_matrix`` on four points whose class 2 is never predicted, then on the
    trained and the linear MLP's logits of the 300 points (its trace / N is the accuracy)."""
    small_logits = np.array([[2.0, 0.0, 1.0], [0.0, 3.0, 1.0], [5.0, 1.0, 0.0],
                             [0.0, 2.0, 1.0]])
    small_labels = np.array([0, 1, 2, 2])
    with checker.case("four points, class 2 never predicted",
                      hint="rows are the true classes, columns the predicted ones"):
        counts = np.asarray(confusion_matrix(small_logits, small_labels, 3))
        checker.shape(counts, (3, 3), "confusion matrix")
        checker.equal(counts, np.array([[1, 0, 0], [0, 1, 0], [1, 1, 0]]), "confusion matrix",
                      _confusion_slips(small_logits, small_labels, 3))
    for name, trained in (("the trained MLP", model), ("the linear MLP", linear_model)):
        with checker.case(f"{name} on the 300 points",
                          hint="every point lands in exactly one cell: row = its label, "
                               "column = the argmax of its logits"):
            with no_grad():
                scores = trained(Tensor(points)).numpy()
            counts = np.asarray(confusion_matrix(scores, labels, 3))
            predicted = scores.argmax(axis=1)
            expected = np.array([[np.sum((labels == i) & (predicted == j)) for j in range(3)]
                                 for i in range(3)])
            checker.shape(counts, (3, 3), "confusion matrix")
            checker.equal(counts, expected, "confusion matrix",
                          _confusion_slips(scores, labels, 3))
            checker.close(np.trace(counts) / len(labels), float(np.mean(predicted == labels)),
                          "trace / N (the accuracy printed above)")


_ACCUMULATION_SLIPS = {
    "not_divided": "each micro-batch's loss is not divided by micro before backward(): the "
                   "gradients add up to micro times the batch's",
    "zero_grad_each": "zero_grad() runs for every micro-batch, so only the last one's gradient "
                      "is left: zero the gradients once per step",
    "summed_loss": "the step's loss is the sum of the micro-batch losses: record their mean "
                   "(each loss.item() divided by micro)",
    "last_loss": "the loss recorded is the last micro-batch's: record the mean over all of them",
    "norm_after_clip": "the norm is read after clip_grad_norm, which rescales the gradients in "
                       "place: record it before clipping",
}


def _accumulate(slip: str, loss_fn: Callable[..., Any]) -> Callable[..., Any]:
    """``train_accumulated`` with one of the usual slips (a key of ``_ACCUMULATION_SLIPS``)."""
    def loop(model: Any, optimizer: Any, schedule: Any, batches: Any, micro: int,
             max_grad_norm: float | None = None) -> tuple[list[float], list[float]]:
        model.train()
        losses, norms = [], []
        for inputs, targets in batches:
            optimizer.zero_grad()
            size = len(targets) // micro
            total = 0.0
            for start in range(0, len(targets), size):
                if slip == "zero_grad_each":
                    optimizer.zero_grad()
                loss = loss_fn(model, inputs[start:start + size], targets[start:start + size])
                (loss if slip == "not_divided" else loss * (1.0 / micro)).backward()
                total = loss.item() if slip == "last_loss" else total + loss.item() / (
                    1 if slip == "summed_loss" else micro)
            if max_grad_norm is not None and slip == "norm_after_clip":
                clip_grad_norm(optimizer.parameters, max_grad_norm)
            norms.append(global_gradient_norm(optimizer.parameters))
            if max_grad_norm is not None and slip != "norm_after_clip":
                clip_grad_norm(optimizer.parameters, max_grad_norm)
            optimizer.step()
            schedule.step()
            losses.append(total)
        return losses, norms
    return loop


def _accumulation_mistakes(fresh_run: Callable[[], Any], batches: Sequence[Any],
                           loss_fn: Callable[..., Any], micro: int) -> dict[str, Any]:
    """Each usual slip of gradient accumulation -> a function giving (losses, norms, the
    final weights) of 10 steps on a fresh run, computed once when first asked."""
    found: dict[str, Any] = {}

    def outcome(slip: str) -> Any:
        if slip not in found:
            model, optimizer, schedule = fresh_run()
            losses, norms = _accumulate(slip, loss_fn)(model, optimizer, schedule, batches,
                                                       micro, CLIP)
            found[slip] = losses, norms, [p.numpy().copy() for p in model.parameters()]
        return found[slip]
    return {said: (lambda slip=slip: outcome(slip)) for slip, said in _ACCUMULATION_SLIPS.items()}


@exercise_check("Exercise 2 (train_accumulated)", yours="train_accumulated")
def check_train_accumulated(checker: Checker, train_accumulated: Any,
                            fresh_run: Callable[[], Any], batches: Sequence[Any],
                            loss_fn: Callable[..., Any]) -> None:
    """``train_accumulated`` with 4 and 2 micro-batches against ``train()`` on the whole
    batches: 10 steps' losses and gradient norms, then the weights, up to float32 rounding."""
    for micro in (4, 2):
        with checker.case(f"10 steps, each batch of 64 as {micro} micro-batches",
                          hint="divide each micro-batch's loss by the number of micro-batches "
                               "before backward(), and zero the gradients once per step, not "
                               "once per micro-batch"):
            reference, reference_optimizer, reference_schedule = fresh_run()
            record = train(reference, reference_optimizer, batches[:10], steps=10,
                           schedule=reference_schedule, loss_fn=loss_fn, max_grad_norm=CLIP,
                           progress=False)
            slipped = _accumulation_mistakes(fresh_run, batches[:10], loss_fn, micro)
            mine, my_optimizer, my_schedule = fresh_run()
            my_losses, my_norms = train_accumulated(mine, my_optimizer, my_schedule,
                                                    batches[:10], micro, max_grad_norm=CLIP)
            checker.close(my_losses, [r.train_loss for r in record], "losses", rtol=1e-5,
                          atol=1e-6, mistakes=_part(slipped, 0))
            checker.close(my_norms, [r.gradient_norm for r in record], "gradient norms",
                          rtol=1e-4, atol=1e-6, mistakes=_part(slipped, 1))
            for index, (a, b) in enumerate(zip(mine.parameters(), reference.parameters(),
                                               strict=True)):
                checker.close(a.data, b.data, f"parameter {index} after 10 steps", rtol=1e-4,
                              atol=1e-5,
                              mistakes=_part(slipped, 2, index))


def _op_nodes(loss: Any) -> int:
    """The op nodes reachable from ``loss.grad_fn`` through ``.next``, each counted once."""
    seen, stack = set(), [loss.grad_fn]
    while stack:
        node = stack.pop()
        if id(node) not in seen:
            seen.add(id(node))
            stack.extend(p for p in node.next if isinstance(p, Context))
    return len(seen)


@exercise_check("Exercise 3 (predictions)", yours="predictions")
def check_predictions(checker: Checker, predictions: Any) -> None:
    """The three predictions against the models built here: a parameter count, the collapsed
    matrix's shape and the op nodes of a loss graph."""
    with checker.case("(a) parameters of MLP(2, [8, 8], 3)",
                      hint="each Linear(in, out) has out·in weights and out biases"):
        small = MLP(2, [8, 8], 3, activations=["relu", "relu", None], rng=Rng(0))
        weights = sum(layer.weight.numel() for layer in small.layers)
        checker.equal(predictions()["a"], sum(p.numel() for p in small.parameters()),
                      "parameter count",
                      {"the biases are not counted: each Linear(in, out) also has out biases":
                       weights})
    with checker.case("(b) the collapsed matrix of MLP(5, [16, 16, 16], 4) without activations",
                      hint="weights are (out, in); the product runs from the last layer to the "
                           "first"):
        deep = MLP(5, [16, 16, 16], 4, activations=[None] * 4, rng=Rng(0))
        product = deep.layers[0].weight.data
        for layer in deep.layers[1:]:
            product = layer.weight.data @ product
        checker.equal(tuple(predictions()["b"]), product.shape, "shape",
                      {"(in, out) is the shape of the transpose: a weight is (out, in), so "
                       "the product W4 W3 W2 W1 is (outputs, inputs)": list(product.shape[::-1])})
    with checker.case("(c) op nodes of MLP(2, [32, 32, 32], 3) on 64 points",
                      hint="one node per layer's linear, per activation, and for the loss"):
        deeper = MLP(2, [32, 32, 32], 3, activations=["relu", "relu", "relu", None],
                     rng=Rng(0), dtype=np.float64)
        draw = Rng(2)
        inputs = draw.normal(size=(64, 2), dtype=np.float64)
        targets = draw.integers(0, 3, size=64)
        checker.equal(predictions()["c"],
                      _op_nodes(cross_entropy(deeper(Tensor(inputs)), targets)), "op nodes",
                      {"the ReLUs are left out: each activation is an op node too": 5,
                       "one short: four Linear layers (three hidden and the output), three "
                       "ReLUs, and the loss": 7,
                       "the parameters are counted: a weight or a bias is a leaf, not an op "
                       "node": 16})
