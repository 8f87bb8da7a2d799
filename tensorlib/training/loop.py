"""A small, readable training loop: batches in, a :class:`History` out.

One step of :func:`train` is::

    inputs, targets = next batch
    loss = model.loss(inputs, targets)          # or loss_fn(model, inputs, targets)
    stop with TrainingDivergedError if the loss is NaN or infinite
    loss.backward()
    norm = global_gradient_norm(...)            # recorded before any clipping
    clip to max_grad_norm (optional), optimizer.step(), schedule.step() (optional)
    evaluate() every evaluate_every steps and at the last step (optional)

Every recorded number except the timings is a deterministic function of the model, the
data and the seeds, so notebooks can print them; the timings live in separate fields
(:data:`TIMING_FIELDS`).
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, fields
from typing import Any, overload

import numpy as np

from tensorlib.engine.tensor import Tensor
from tensorlib.engine.validation import is_real, positive, positive_integer, real
from tensorlib.nn.modes import evaluation_mode
from tensorlib.optim.clip import clip_grad_norm, global_gradient_norm

__all__ = [
    "DETERMINISTIC_FIELDS",
    "TIMING_FIELDS",
    "History",
    "RangeTest",
    "StepRecord",
    "TrainingDivergedError",
    "evaluate_loss",
    "exponential_moving_average",
    "learning_rate_range_test",
    "mean_loss",
    "train",
]


class TrainingDivergedError(RuntimeError):
    """The loss (or the gradient norm) became NaN or infinite; ``step`` names the step
    (counted from 1), ``quantity`` what diverged and ``value`` its value. Raised before the
    optimizer step, so the parameters still hold the values of the previous step."""

    def __init__(self, step: int, value: float, quantity: str = "loss") -> None:
        self.step = step
        self.value = value
        self.quantity = quantity
        super().__init__(f"training diverged at step {step}: the {quantity} is {value}; "
                         "the parameters were not updated at this step (try a smaller "
                         "learning rate or gradient clipping)")


@dataclass(frozen=True)
class StepRecord:
    """What happened at one step. ``learning_rate`` is the rate this step's update used,
    ``gradient_norm`` the global L2 norm of the gradients before clipping, and
    ``validation_loss`` None except at evaluation steps. ``seconds`` (the step's wall time,
    evaluation excluded) and ``tokens_per_second`` (``inputs.size / seconds``) are timings."""

    step: int
    train_loss: float
    learning_rate: float
    gradient_norm: float
    validation_loss: float | None
    seconds: float
    tokens_per_second: float


TIMING_FIELDS: tuple[str, ...] = ("seconds", "tokens_per_second")
DETERMINISTIC_FIELDS: tuple[str, ...] = tuple(
    f.name for f in fields(StepRecord) if f.name not in TIMING_FIELDS
)


class History(Sequence):
    """The records of a run, one :class:`StepRecord` per step, in order.

    ``history[i]`` is a record, ``len(history)`` the number of steps; ``as_dict()`` gives
    one list per field (the form :func:`tensorlib.viz.plot_loss_curves` also accepts) and
    ``final()`` a summary of the last step.
    """

    def __init__(self, records: Iterable[StepRecord] = ()) -> None:
        self.records: list[StepRecord] = list(records)

    def append(self, record: StepRecord) -> None:
        if not isinstance(record, StepRecord):
            raise TypeError(f"History holds StepRecords, got {type(record).__name__}")
        self.records.append(record)

    def __len__(self) -> int:
        return len(self.records)

    @overload
    def __getitem__(self, index: int) -> StepRecord: ...

    @overload
    def __getitem__(self, index: slice) -> list[StepRecord]: ...

    def __getitem__(self, index: int | slice) -> StepRecord | list[StepRecord]:
        return self.records[index]

    def __iter__(self) -> Iterator[StepRecord]:
        return iter(self.records)

    def as_dict(self, timings: bool = True) -> dict[str, list[Any]]:
        """One list per field, keyed by field name; without the timing fields if
        ``timings`` is False (then every value is deterministic)."""
        names = [f.name for f in fields(StepRecord)]
        if not timings:
            names = [name for name in names if name not in TIMING_FIELDS]
        return {name: [getattr(record, name) for record in self.records] for name in names}

    def evaluations(self) -> list[tuple[int, float]]:
        """``(step, validation_loss)`` for every step that was evaluated."""
        return [(r.step, r.validation_loss) for r in self.records if r.validation_loss is not None]

    def final(self) -> dict[str, Any]:
        """The deterministic fields of the last step, except that ``validation_loss`` is the
        most recent evaluation (None if there was none). Raises ValueError when empty."""
        if not self.records:
            raise ValueError("the history is empty: no step was recorded")
        summary = {name: getattr(self.records[-1], name) for name in DETERMINISTIC_FIELDS}
        evaluated = self.evaluations()
        summary["validation_loss"] = evaluated[-1][1] if evaluated else None
        return summary

    def __repr__(self) -> str:
        if not self.records:
            return "History(steps=0)"
        last = self.final()
        validation = "None" if last["validation_loss"] is None \
            else f"{last['validation_loss']:.4f}"
        return (f"History(steps={len(self)}, final train_loss={last['train_loss']:.4f}, "
                f"validation_loss={validation})")


def _scalar(value: Any, what: str) -> float:
    """A Python float from a 0-d or single-element Tensor, array or number."""
    if isinstance(value, Tensor):
        value = value.numpy()
    array = np.asarray(value)
    if array.size != 1 or not is_real(array.dtype):
        raise TypeError(f"{what} must be a single real number, got "
                        f"{type(value).__name__} of shape {array.shape}")
    return float(array.reshape(()))


def _element_count(inputs: Any) -> int:
    if isinstance(inputs, Tensor):
        return inputs.numel()
    if isinstance(inputs, (tuple, list)) and inputs and hasattr(inputs[0], "shape"):
        return sum(_element_count(item) for item in inputs)
    return int(np.size(inputs))


def _in_jupyter_kernel() -> bool:
    """True when this code runs in a Jupyter kernel (IPython's shell there has a kernel)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return shell is not None and hasattr(shell, "kernel")


def _progress_bar(total: int, enabled: bool) -> Any:
    """A tqdm text bar: on stderr in a terminal; on stdout in Jupyter, where it updates in
    place (the output keeps only its last state) and, unlike stderr, is not coloured as an
    error. A text bar needs no widget library and shows in an untrusted notebook too."""
    from tqdm.std import tqdm

    if _in_jupyter_kernel():  # a fixed-width bar: only its timings vary from run to run
        return tqdm(total=total, disable=not enabled, desc="training", unit="step",
                    file=sys.stdout, bar_format="{l_bar}{bar:30}{r_bar}", mininterval=0.5,
                    leave=True)
    return tqdm(total=total, disable=not enabled, desc="training", unit="step",
                dynamic_ncols=True, leave=True)


def evaluate_loss(model: Any, evaluate: Callable[[], Any]) -> float:
    """Run ``evaluate()`` under ``no_grad`` with ``model`` in eval mode; every module's
    previous mode is restored afterwards. Returns the loss as a float."""
    with evaluation_mode(model):
        return _scalar(evaluate(), "evaluate() result")


def mean_loss(model: Any, inputs: np.ndarray, targets: np.ndarray,
              batch_size: int = 256) -> float:
    """The mean of ``model.loss`` over all of ``inputs`` and ``targets`` (aligned along
    their first axis), ``batch_size`` rows per forward pass, in eval mode without a graph.

    Each chunk's loss is weighted by its rows, so for a loss that averages over rows (such
    as a language model's cross-entropy) the result does not depend on ``batch_size``.
    ValueError when ``inputs`` is empty.
    """
    batch_size = positive_integer(batch_size, "batch_size")
    if len(inputs) == 0:
        raise ValueError("mean_loss needs at least one row of inputs, got none")
    total = 0.0
    with evaluation_mode(model):
        for start in range(0, len(inputs), batch_size):
            chunk = slice(start, start + batch_size)
            rows = len(inputs[chunk])
            total += _scalar(model.loss(inputs[chunk], targets[chunk]), "the loss") * rows
    return total / len(inputs)


def train(
    model: Any,
    optimizer: Any,
    batches: Callable[[int], tuple[Any, Any]] | Iterable[tuple[Any, Any]],
    steps: int,
    evaluate: Callable[[], Any] | None = None,
    evaluate_every: int | None = None,
    schedule: Any = None,
    max_grad_norm: float | None = None,
    progress: bool = True,
    loss_fn: Callable[[Any, Any, Any], Tensor] | None = None,
    callback: Callable[[StepRecord], Any] | None = None,
) -> History:
    """Train ``model`` for ``steps`` optimizer updates and return the :class:`History`.

    * ``batches``: a callable ``step -> (inputs, targets)`` (steps count from 1) or an
      iterable of ``(inputs, targets)`` pairs (ValueError if it runs out early).
    * The loss is ``model.loss(inputs, targets)``, or ``loss_fn(model, inputs, targets)``.
    * ``evaluate``: a callable returning a validation loss, run every ``evaluate_every``
      steps (default: only after the last step) and always after the last step, under
      ``no_grad`` with the model in eval mode (each module's mode is restored after).
    * ``schedule``: an object with ``step()`` called after each update (such as
      ``WarmupCosineSchedule``), or a callable ``step -> learning rate`` assigned to
      ``optimizer.lr`` before each update.
    * ``max_grad_norm``: clip the gradients' global norm to this value before the update.
    * ``progress``: show a tqdm bar (loss in its postfix); False prints nothing at all.
    * ``callback``: called with each step's :class:`StepRecord` (for example
      ``LiveLossPlot.update_from_record``).

    The model is put in train mode first. A NaN or infinite loss or gradient norm raises
    :class:`TrainingDivergedError` naming the step, before the optimizer step.
    """
    steps = positive_integer(steps, "steps")
    if evaluate_every is not None:
        evaluate_every = positive_integer(evaluate_every, "evaluate_every")
    if evaluate is not None and not callable(evaluate):
        raise TypeError(f"evaluate must be a callable or None, got {type(evaluate).__name__}")
    if evaluate_every is not None and evaluate is None:
        raise ValueError("evaluate_every was given without an evaluate function")
    if max_grad_norm is not None:
        max_grad_norm = positive(max_grad_norm, "max_grad_norm")
    if loss_fn is None and not callable(getattr(model, "loss", None)):
        raise TypeError(f"{type(model).__name__} has no loss(inputs, targets) method; "
                        "pass loss_fn(model, inputs, targets)")
    if loss_fn is not None and not callable(loss_fn):
        raise TypeError(f"loss_fn must be callable, got {type(loss_fn).__name__}")
    if schedule is not None and not (callable(getattr(schedule, "step", None))
                                     or callable(schedule)):
        raise TypeError(f"schedule must have a step() method or be a callable step -> lr, "
                        f"got {type(schedule).__name__}")
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be callable or None, got {type(callback).__name__}")
    if not hasattr(optimizer, "step") or not hasattr(optimizer, "zero_grad"):
        raise TypeError(f"optimizer must have step() and zero_grad(), "
                        f"got {type(optimizer).__name__}")
    if callable(batches):
        next_batch = batches
    elif isinstance(batches, Iterable):
        iterator = iter(batches)

        def next_batch(step: int) -> tuple[Any, Any]:
            try:
                return next(iterator)
            except StopIteration:
                raise ValueError(f"batches ran out after {step - 1} of {steps} steps") from None
    else:
        raise TypeError(f"batches must be a callable step -> (inputs, targets) or an "
                        f"iterable of pairs, got {type(batches).__name__}")
    scheduled_object = schedule is not None and callable(getattr(schedule, "step", None))
    parameters = getattr(optimizer, "parameters", None) or model

    if callable(getattr(model, "train", None)):
        model.train()
    history = History()
    last_validation: float | None = None
    bar = _progress_bar(steps, progress)
    try:
        for step in range(1, steps + 1):
            batch = next_batch(step)
            if not isinstance(batch, (tuple, list)) or len(batch) != 2:
                raise ValueError(f"step {step}: a batch must be a pair (inputs, targets), got "
                                 f"{type(batch).__name__}")
            inputs, targets = batch
            started = time.perf_counter()
            if schedule is not None and not scheduled_object:
                optimizer.lr = schedule(step)
            optimizer.zero_grad()
            loss = loss_fn(model, inputs, targets) if loss_fn is not None \
                else model.loss(inputs, targets)
            if not isinstance(loss, Tensor):
                raise TypeError(f"step {step}: the loss must be a Tensor, "
                                f"got {type(loss).__name__}")
            loss_value = _scalar(loss, "the loss")
            if not math.isfinite(loss_value):
                raise TrainingDivergedError(step, loss_value, "loss")
            loss.backward()
            norm = global_gradient_norm(parameters)
            if not math.isfinite(norm):
                raise TrainingDivergedError(step, norm, "gradient norm")
            learning_rate = float(optimizer.lr)
            if max_grad_norm is not None:
                clip_grad_norm(parameters, max_grad_norm)
            optimizer.step()
            if scheduled_object:
                schedule.step()
            seconds = time.perf_counter() - started
            validation = None
            if evaluate is not None and (step == steps or (evaluate_every is not None
                                                           and step % evaluate_every == 0)):
                validation = evaluate_loss(model, evaluate)
            record = StepRecord(
                step=step, train_loss=loss_value, learning_rate=learning_rate,
                gradient_norm=norm, validation_loss=validation, seconds=seconds,
                tokens_per_second=_element_count(inputs) / seconds if seconds > 0 else math.inf,
            )
            history.append(record)
            if callback is not None:
                callback(record)
            if validation is not None:
                last_validation = validation
            postfix = {"loss": f"{loss_value:.4f}"}
            if last_validation is not None:
                postfix["validation"] = f"{last_validation:.4f}"
            bar.set_postfix(postfix, refresh=False)
            bar.update(1)
    finally:
        bar.close()
    return history


# --------------------------------------------------------------------------------- smoothing
def exponential_moving_average(values: Sequence[float] | np.ndarray,
                               smoothing: float) -> np.ndarray:
    """``s[0] = v[0]``, ``s[t] = smoothing * s[t-1] + (1 - smoothing) * v[t]`` (float64).

    ``smoothing`` is in [0, 1): 0 returns the values unchanged, 0.9 averages over roughly
    the last ten.
    """
    real(smoothing, "smoothing", low=0.0, high=1.0)
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"values must be 1-D, got shape {array.shape}")
    if array.size == 0 or smoothing == 0.0:
        return array.copy()
    a = float(smoothing)
    smoothed = np.empty_like(array)
    running = array[0]
    for index, value in enumerate(array):  # a recurrence over recorded losses, not a model op
        running = a * running + (1.0 - a) * value
        smoothed[index] = running
    return smoothed


# --------------------------------------------------------------------------------- range test

@dataclass(frozen=True)
class RangeTest:
    """The losses of a learning-rate range test: ``learning_rates[i]`` was the rate of step
    i + 1 and ``losses[i]`` its training loss (shorter than asked when the loss blew up)."""

    learning_rates: np.ndarray
    losses: np.ndarray

    def smoothed_losses(self, smoothing: float = 0.9) -> np.ndarray:
        """The losses as an :func:`exponential_moving_average` (the loss curves' smoothing)."""
        return exponential_moving_average(self.losses, smoothing)

    def suggestion(self, smoothing: float = 0.9) -> float:
        """A rate to train with: a tenth of the rate where the smoothed loss is lowest
        (beyond it the loss soon climbs; a tenth is still on the fast, stable side)."""
        return float(self.learning_rates[int(np.argmin(self.smoothed_losses(smoothing)))]) / 10


class _StopRangeTest(Exception):
    """Raised by the range test's callback once the loss has blown up."""


def learning_rate_range_test(
    model: Any,
    optimizer: Any,
    batches: Callable[[int], tuple[Any, Any]] | Iterable[tuple[Any, Any]],
    start: float = 1e-4,
    end: float = 1.0,
    steps: int = 100,
    loss_fn: Callable[[Any, Any, Any], Tensor] | None = None,
    stop_factor: float = 4.0,
) -> RangeTest:
    """Train ``steps`` steps with a learning rate growing exponentially from ``start`` to
    ``end`` (step k uses ``start · (end/start)^((k-1)/(steps-1))``), recording each step's
    loss; stop early once a loss exceeds ``stop_factor`` times the lowest so far, or is not
    finite. Afterwards the model (parameters, buffers and train/eval modes) and the optimizer
    are exactly as they were: the test only looks.
    """
    start = positive(start, "start")
    end = positive(end, "end")
    if end <= start:
        raise ValueError(f"end must be larger than start, got start={start} and end={end}")
    steps = positive_integer(steps, "steps")
    if steps < 2:
        raise ValueError(f"a range test needs at least 2 steps, got {steps}")
    stop_factor = positive(stop_factor, "stop_factor")
    if not callable(getattr(model, "state_dict", None)) or \
            not callable(getattr(optimizer, "state_dict", None)):
        raise TypeError("the range test restores the model and the optimizer afterwards, so "
                        "both need state_dict() and load_state_dict()")
    saved_model, saved_optimizer = model.state_dict(), optimizer.state_dict()
    modes = [(module, module.training) for module in model.modules()]
    rates = start * (end / start) ** (np.arange(steps) / (steps - 1))
    losses: list[float] = []

    def record(step_record: StepRecord) -> None:
        losses.append(step_record.train_loss)
        if step_record.train_loss > stop_factor * min(losses):
            raise _StopRangeTest

    try:
        train(model, optimizer, batches, steps, schedule=lambda step: float(rates[step - 1]),
              progress=False, loss_fn=loss_fn, callback=record)
    except _StopRangeTest:
        pass
    except TrainingDivergedError:
        pass  # a loss or a gradient that is not finite ends the test
    finally:
        model.load_state_dict(saved_model)
        optimizer.load_state_dict(saved_optimizer)
        for module, training in modes:
            module.training = training
    return RangeTest(rates[:len(losses)].copy(), np.array(losses))
