"""The checks of notebook 02 (a neural network from scalars): ``Neuron``, ``Layer`` with
``MLP``, ``gradient_step`` and the exercises (the size of one score's graph, the squared
loss).

Each check builds the learner's piece and ``tensorlib.scalar``'s from the same seed and
compares, in this order, what the piece holds (how many weights, neurons, layers and
parameters, then their values), what it computes (the output), and only then the gradients
after ``backward``, so that a wrong forward is never blamed on the backward. The usual slips
(a bias left out or drawn from the generator, a tanh on the linear output, the sum restarted
in the loop, a forgotten ``zero_grad``, a step with the wrong sign) are computed by building
the package's pieces with that slip, and named when the learner's result is what they give.
"""

from __future__ import annotations

import math
import traceback
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import tensorlib.scalar
from tensorlib.course.checks.registry import HandOn, exercise_check, piece_check
from tensorlib.course.exercises import Checker
from tensorlib.course.worked_pieces import scalar_gradient_step
from tensorlib.engine.splitmix64 import Rng

__all__ = ["check_neuron", "check_layer_and_mlp", "check_gradient_step", "check_predicted_nodes",
           "check_squared_loss"]

_Value = tensorlib.scalar.Value


def _values(parameters: Sequence[Any]) -> list[float]:
    return [p.data for p in parameters]


# ----------------------------------------------------------------------------- Neuron
def _draws(seed: int, count: int, low: float = -1.0) -> list[float]:
    """The first ``count`` draws of ``Rng(seed).uniform(low, 1.0)``."""
    rng = Rng(seed)
    return [float(rng.uniform(low, 1.0)) for _ in range(count)]


def _neuron_parameter_mistakes(count: int) -> dict[str, Any]:
    """What the usual slips of Neuron's parameters give, from Rng(5), for ``count`` inputs."""
    draws = _draws(5, count + 1)
    return {
        "the bias first: parameters() lists the weights, then the bias": [0.0, *draws[:count]],
        "the bias drawn from rng too: it starts at Value(0.0)": draws,
        "the bias drawn from rng before the weights: the weights are drawn, the bias is 0.0":
            [*draws[1:], draws[0]],
        "rng.uniform() draws from [0, 1): the weights come from rng.uniform(-1.0, 1.0)":
            [*_draws(5, count, low=0.0), 0.0],
    }


def _neuron_output_mistakes(weights: list[float], bias: float, inputs: list[float],
                            nonlinearity: str | None) -> dict[str, float]:
    """What the usual slips of Neuron's output give."""
    total = sum(w * x for w, x in zip(weights, inputs, strict=True))
    squash: Callable[[float], float] = math.tanh if nonlinearity == "tanh" else float
    return {
        "the bias is not added: the sum starts from self.bias": squash(total),
        "the sum restarts in each pass of the loop: activation = activation + weight * x":
            squash(bias + weights[-1] * inputs[-1]),
        "the bias is added once per input: start from it once, then add weight * x":
            squash(len(inputs) * bias + total),
        "tanh applied though nonlinearity is None: the last layer's neurons are linear":
            math.tanh(bias + total),
        "no tanh: apply it when nonlinearity == \"tanh\"": bias + total,
    }


_NEURON_CASES = [  # what, inputs, nonlinearity, the bias set before the output is computed
    ("2 inputs, tanh, bias 0", [0.5, -1.0], "tanh", 0.0),
    ("3 inputs, tanh, bias 0.3 (a bias that is used)", [0.2, -0.7, 1.5], "tanh", 0.3),
    ("1 input, linear (nonlinearity None), bias -0.4", [2.0], None, -0.4),
    ("inputs that are Values, a large sum (tanh saturates)", [3.0, 4.0], "tanh", 2.0),
]
_NO_GRADIENT = ("the output is made from .data numbers, so no gradient reaches the weights: "
                "combine the Values themselves")


@piece_check("Neuron", yours="Neuron")
def check_neuron(checker: Checker, Neuron: type) -> HandOn:
    """``Neuron`` against ``tensorlib.scalar.Neuron`` from Rng(5): the weights and the bias
    (how many, then their values), the output with a bias that is not zero, tanh or linear,
    then the gradients of the parameters and the inputs after backward."""
    for what, inputs, nonlinearity, bias in _NEURON_CASES:
        with checker.case(what, hint="weights from rng.uniform(-1.0, 1.0), one per input, in "
                          "order; bias + sum of weight * x, then tanh only if nonlinearity == "
                          "'tanh'"):
            count = len(inputs)
            mine = Neuron(count, nonlinearity, rng=Rng(5))
            package = tensorlib.scalar.Neuron(count, nonlinearity, rng=Rng(5))
            missing = [name for name in ("weights", "bias") if not hasattr(mine, name)]
            checker.true(not missing, f"the Neuron has no attribute {' or '.join(missing)}",
                         "the parameters are the attributes `weights` (a list) and `bias`: the "
                         "names the cells below read")
            checker.equal(len(mine.weights), count, "the number of weights (one per input)",
                          mistakes={"one weight short: one per input, range(number_of_inputs)":
                                    count - 1,
                                    "one weight too many: one per input": count + 1})
            checker.true(all(isinstance(p, _Value) for p in [*mine.weights, mine.bias]),
                         "the weights and the bias: "
                         f"{[type(p).__name__ for p in [*mine.weights, mine.bias]]}, not Values",
                         "the weights and the bias are Values: Value(rng.uniform(-1.0, 1.0)) "
                         "and Value(0.0), not plain numbers")
            parameters = mine.parameters()
            checker.equal(len(parameters), count + 1, "the number of parameters", mistakes={
                "parameters() leaves out the bias: the weights, then the bias": count,
                "parameters() leaves out the weights: the weights, then the bias": 1})
            checker.equal(np.array(_values(parameters)), np.array(_values(package.parameters())),
                          "the weights, then the bias, from Rng(5)",
                          mistakes=_neuron_parameter_mistakes(count))
            mine.bias.data = package.bias.data = bias
            my_inputs, package_inputs = [_Value(x) for x in inputs], [_Value(x) for x in inputs]
            my_out, package_out = mine(my_inputs), package(package_inputs)
            checker.true(isinstance(my_out, _Value), f"the output is {my_out!r}, not a Value",
                         "__call__ returns one Value: the activation (through tanh or not)")
            checker.close(my_out.data, package_out.data, "the output", rtol=1e-12,
                          mistakes=_neuron_output_mistakes(_values(package.weights), bias,
                                                           inputs, nonlinearity))
            my_out.backward()
            package_out.backward()
            package_grads = [p.grad for p in package.parameters()]
            checker.close([p.grad for p in parameters], package_grads,
                          "the parameters' grads", rtol=1e-12, atol=1e-15,
                          mistakes={_NO_GRADIENT: [0.0] * (count + 1),
                                    "the bias gets no gradient: the sum starts from self.bias, "
                                    "the Value itself": [*package_grads[:-1], 0.0]})
            checker.close([x.grad for x in my_inputs], [x.grad for x in package_inputs],
                          "the inputs' grads", rtol=1e-12, atol=1e-15,
                          mistakes={_NO_GRADIENT: [0.0] * count})
    return HandOn(Neuron, tensorlib.scalar.Neuron)


# ----------------------------------------------------------------------- Layer and MLP
def _neuron_agrees(Neuron: type) -> bool:
    """Whether the learner's Neuron builds and computes as tensorlib's on two small cases
    (quietly: the Neuron's own check says what is wrong)."""
    try:
        for count, nonlinearity in [(3, "tanh"), (1, None)]:
            mine = Neuron(count, nonlinearity, rng=Rng(5))
            package = tensorlib.scalar.Neuron(count, nonlinearity, rng=Rng(5))
            if _values(mine.parameters()) != _values(package.parameters()):
                return False
            mine.bias.data = package.bias.data = 0.3
            inputs = [0.2, -0.7, 1.5][:count]
            my_out, package_out = mine(inputs), package(inputs)
            my_out.backward()
            package_out.backward()
            if not (math.isclose(my_out.data, package_out.data, rel_tol=1e-12) and np.allclose(
                    [p.grad for p in mine.parameters()],
                    [p.grad for p in package.parameters()], rtol=1e-12, atol=1e-15)):
                return False
    except Exception:  # a Neuron that fails here is not right either
        return False
    return True


def _neuron_blamed(neuron_agrees: bool, received: Any) -> dict[str, Any]:
    """When the learner's Neuron is not right, any wrong result of Layer or MLP is first put
    down to it (Layer builds its neurons with the learner's Neuron)."""
    if neuron_agrees:
        return {}
    return {"your Neuron is not right yet (see its check above): Layer builds its neurons with "
            "it, so make Neuron right first": received}


def _raised_by_neuron(error: BaseException) -> bool:
    """Whether ``error`` was raised inside a method of a class named Neuron."""
    frames = list(traceback.walk_tb(error.__traceback__))
    return bool(frames) and type(frames[-1][0].f_locals.get("self")).__name__ == "Neuron"


_NO_RNG = ("the rng is not passed on: each Neuron gets the layer's own rng (rng=rng), which the "
           "MLP passes to every layer")


def _built(checker: Checker, make: Callable[..., Any], *arguments: Any, **keywords: Any) -> Any:
    """``make(*arguments, **keywords)``: the learner's Layer or MLP made, or called; what its
    usual errors mean is said in the learner's words."""
    try:
        with checker.named_errors({"'NoneType' object has no attribute 'uniform'": _NO_RNG},
                                  (AttributeError,)):
            return make(*arguments, **keywords)
    except NotImplementedError as error:
        if not _raised_by_neuron(error):
            raise
        checker.true(False, "your Neuron raised NotImplementedError",
                     "your Neuron is not written yet: Layer builds its neurons with it, so "
                     "write Neuron first (its cell above)")


def _mlp_variant(sizes: list[int], point: list[float],
                 nonlinearities: Callable[[int, int], str | None]) -> list[float]:
    """The scores of tensorlib's MLP(2, sizes) from Rng(0), with layer i of n made with
    ``nonlinearities(i, n)``: what an MLP with a slip in its nonlinearities gives."""
    model = tensorlib.scalar.MLP(2, sizes, rng=Rng(0))
    for index, layer in enumerate(model.layers):
        for neuron in layer.neurons:
            neuron.nonlinearity = nonlinearities(index, len(model.layers))
    out = model(point)
    return [o.data for o in (out if isinstance(out, list) else [out])]


def _scores_mistakes(sizes: list[int], point: list[float]) -> dict[str, Any]:
    return {
        "the last layer is tanh too: it is linear (nonlinearity=None)":
            lambda: _mlp_variant(sizes, point, lambda i, n: "tanh"),
        "no tanh in the hidden layers: tanh in every layer but the last":
            lambda: _mlp_variant(sizes, point, lambda i, n: None),
        "the first layer is linear and the last is tanh: None goes to the last layer only":
            lambda: _mlp_variant(sizes, point, lambda i, n: None if i == 0 else "tanh"),
    }


def _zero_grad_mistakes() -> dict[str, Any]:
    """What the usual slips of zero_grad leave in MLP(2, [4, 1]) from Rng(1)."""
    def left(reset: Callable[[Any], list[Any]]) -> list[float]:
        model = tensorlib.scalar.MLP(2, [4, 1], rng=Rng(1))
        out = model([1.0, 2.0])
        assert isinstance(out, _Value)
        out.backward()
        for p in reset(model):
            p.grad = 0.0
        return [p.grad for p in model.parameters()]

    return {
        "zero_grad changes no grad: set each p.grad = 0.0 (an assignment, not ==)":
            lambda: left(lambda model: []),
        "zero_grad resets only the first layer: loop over self.parameters(), every layer":
            lambda: left(lambda model: model.layers[0].parameters()),
        "zero_grad resets only the last layer: loop over self.parameters(), every layer":
            lambda: left(lambda model: model.layers[-1].parameters()),
        "zero_grad resets only the weights: the biases are parameters too":
            lambda: left(lambda model: [w for layer in model.layers for n in layer.neurons
                                        for w in n.weights]),
    }


@piece_check("Layer and MLP", yours=("Layer", "MLP"))
def check_layer_and_mlp(checker: Checker, Layer: type, MLP: type, Neuron: type) -> HandOn:
    """``Layer`` and ``MLP`` against ``tensorlib.scalar``'s from the same seed: a Layer (its
    neurons, parameters and list of outputs), two MLPs (their layers, parameters, what comes
    out and the scores, then the parameters' grads), and ``zero_grad``. ``Neuron``, the
    learner's, which Layer builds on, is tried quietly: when it is not right, a wrong result
    is put down to it first."""
    agrees = _neuron_agrees(Neuron)
    package: Any  # tensorlib's Layer, then its MLP
    received: Any  # what the learner's piece gave, each part in turn
    with checker.case("Layer(3, 4): four outputs, 16 parameters, as tensorlib's",
                      hint="one Neuron per output, all from the same rng; a list of their "
                           "outputs"):
        mine = _built(checker, Layer, 3, 4, rng=Rng(2))
        package = tensorlib.scalar.Layer(3, 4, rng=Rng(2))
        checker.true(hasattr(mine, "neurons"), "the Layer has no attribute `neurons`",
                     "the neurons are the attribute `neurons`, a list: the name the cells "
                     "below read")
        checker.equal(len(mine.neurons), 4, "the number of neurons", mistakes={
            **_neuron_blamed(agrees, len(mine.neurons)),
            "one neuron per input: a layer has number_of_outputs neurons": 3})
        received = np.array(_values(mine.parameters()))
        checker.equal(received, np.array(_values(package.parameters())),
                      "the parameters, neuron by neuron", mistakes=_neuron_blamed(agrees, received))
        outputs = _built(checker, mine, [0.1, -0.2, 0.3])
        checker.true(isinstance(outputs, list), "a layer returns a list, got "
                     f"{type(outputs).__name__}", "__call__ returns the list of the neurons' "
                     "outputs: [neuron(inputs) for neuron in self.neurons]")
        received = [o.data for o in outputs]
        checker.close(received, [o.data for o in package([0.1, -0.2, 0.3])], "the outputs",
                      rtol=1e-12, mistakes=_neuron_blamed(agrees, received))
    for what, sizes, point in [("MLP(2, [8, 8, 1]) on one point: one Value", [8, 8, 1],
                                [0.5, -1.0]),
                               ("MLP(2, [3, 2]): a list of two scores", [3, 2], [1.5, 0.25])]:
        with checker.case(what, hint="tanh in every layer but the last (nonlinearity=None); "
                          "one Value out when the last layer has one neuron"):
            mine = _built(checker, MLP, 2, sizes, rng=Rng(0))
            package = tensorlib.scalar.MLP(2, sizes, rng=Rng(0))
            checker.true(hasattr(mine, "layers"), "the MLP has no attribute `layers`",
                         "the layers are the attribute `layers`, a list: the name the cells "
                         "below read")
            received = [len(layer.neurons) for layer in mine.layers]
            checker.equal(received, sizes, "the neurons per layer", mistakes={
                **_neuron_blamed(agrees, received),
                "one layer short: one Layer per entry of layer_sizes": sizes[:-1],
                "the layers in reverse order": sizes[::-1]})
            count = len(mine.parameters())
            checker.equal(count, len(package.parameters()), "the number of parameters",
                          mistakes={**_neuron_blamed(agrees, count),
                                    "every layer reads number_of_inputs: layer i reads the "
                                    "previous layer's outputs, sizes[i]":
                                        sum(3 * size for size in sizes)})
            received = np.array(_values(mine.parameters()))
            checker.equal(received, np.array(_values(package.parameters())),
                          "the parameters, layer by layer",
                          mistakes=_neuron_blamed(agrees, received))
            my_out, package_out = _built(checker, mine, point), package(point)
            checker.equal(type(my_out).__name__, type(package_out).__name__, "what comes out",
                          mistakes={"a list of one score: return values[0] when the last "
                                    "layer has one output": "list",
                                    "one Value where the last layer has two outputs: return "
                                    "the list when it has more than one": "Value"})
            my_outs = my_out if isinstance(my_out, list) else [my_out]
            package_outs = package_out if isinstance(package_out, list) else [package_out]
            received = [o.data for o in my_outs]
            checker.close(received, [o.data for o in package_outs], "the scores", rtol=1e-12,
                          mistakes={**_neuron_blamed(agrees, received),
                                    **_scores_mistakes(sizes, point)})
            (my_outs[0] * 2 + my_outs[-1]).backward()
            (package_outs[0] * 2 + package_outs[-1]).backward()
            received = [p.grad for p in mine.parameters()]
            checker.close(received, [p.grad for p in package.parameters()],
                          "the parameters' grads", rtol=1e-12, atol=1e-15,
                          mistakes={**_neuron_blamed(agrees, received),
                                    _NO_GRADIENT: [0.0] * len(received)})
    with checker.case("zero_grad resets every parameter's grad",
                      hint="loop over parameters() and set each grad to 0.0"):
        mine = _built(checker, MLP, 2, [4, 1], rng=Rng(1))
        out = _built(checker, mine, [1.0, 2.0])
        (out[0] if isinstance(out, list) else out).backward()
        mine.zero_grad()
        checker.equal(np.array([p.grad for p in mine.parameters()]), np.zeros(17),
                      "the grads after zero_grad", mistakes=_zero_grad_mistakes())
    return HandOn(MLP, tensorlib.scalar.MLP, given=agrees)


# ----------------------------------------------------------------------- gradient_step
_STEP_SLIPS = {
    "no zero_grad": "model.zero_grad() is missing: the gradients left over were added to "
                    "this step's",
    "zero after backward": "model.zero_grad() after loss.backward(): it wiped this step's "
                           "gradients, so nothing moved",
    "sign": "p.data += learning_rate * p.grad: a step goes against the gradient (-=)",
    "no rate": "the step is not scaled: p.data -= learning_rate * p.grad",
    "loss after": "the loss returned is the one after the update: return the one computed "
                  "before it",
}


def _step(loss_and_accuracy: Callable[[Any], Any], slip: str = "") -> Callable[..., Any]:
    """One gradient-descent step of a tensorlib.scalar model, making ``slip`` (a key of
    _STEP_SLIPS), or tensorlib.course.worked_pieces's step when there is none."""
    if not slip:
        def step(model: Any, learning_rate: float) -> tuple[float, float]:
            return scalar_gradient_step(model, learning_rate, loss_and_accuracy)
        return step

    def slipped(model: Any, learning_rate: float) -> tuple[float, float]:
        loss, accuracy = loss_and_accuracy(model)
        if slip not in ("no zero_grad", "zero after backward"):
            model.zero_grad()
        loss.backward()
        if slip == "zero after backward":
            model.zero_grad()
        for p in model.parameters():
            change = p.grad if slip == "no rate" else learning_rate * p.grad
            p.data += change if slip == "sign" else -change
        if slip == "loss after":
            return loss_and_accuracy(model)[0].data, accuracy
        return loss.data, accuracy
    return slipped


_STEP_CASES = [  # what, the learning rate, the gradients left over before the step
    ("one step at learning rate 0.5", 0.5, 0.0),
    ("a step with leftover gradients of 3.0", 0.1, 3.0),
]


def _stepped_model(loss_and_accuracy: Callable[[Any], Any], slip: str, learning_rate: float,
                   leftover: float) -> tuple[tuple[float, float], list[float]]:
    """What one step making ``slip`` returns, and the parameters after it, on a fresh
    MLP(2, [4, 4, 1]) from Rng(9) with ``leftover`` in every grad."""
    model = tensorlib.scalar.MLP(2, [4, 4, 1], rng=Rng(9))
    for p in model.parameters():
        p.grad = leftover
    returned = _step(loss_and_accuracy, slip)(model, learning_rate)
    return returned, _values(model.parameters())


@piece_check("gradient_step", yours="gradient_step",
             package_name="tensorlib.course.worked_pieces's")
def check_gradient_step(checker: Checker, gradient_step: Callable[..., Any],
                        loss_and_accuracy: Callable[[Any], Any]) -> HandOn:
    """``gradient_step(model, learning_rate)`` against tensorlib.course.worked_pieces's step on
    an MLP from Rng(9): the loss and the accuracy it returns, then the parameters after the
    step; with gradients left over, and three steps in a row."""
    for what, learning_rate, leftover in _STEP_CASES:
        with checker.case(what, hint="loss_and_accuracy, zero_grad, backward, then "
                          "p.data -= learning_rate * p.grad; return loss.data and the accuracy"):
            mine = tensorlib.scalar.MLP(2, [4, 4, 1], rng=Rng(9))
            for p in mine.parameters():
                p.grad = leftover
            received = gradient_step(mine, learning_rate)
            expected, parameters = _stepped_model(loss_and_accuracy, "", learning_rate,
                                                  leftover)

            def slipped(part: Callable[[Any], Any], learning_rate: float = learning_rate,
                        leftover: float = leftover) -> dict[str, Any]:
                return {said: (lambda slip=slip: part(_stepped_model(
                    loss_and_accuracy, slip, learning_rate, leftover)))
                    for slip, said in _STEP_SLIPS.items()}

            checker.true(isinstance(received, tuple) and len(received) == 2,
                         f"gradient_step returned {received!r:.80}",
                         "return two things: the loss (a float) and the accuracy")
            checker.true(not isinstance(received[0], _Value),
                         f"the loss returned is {received[0]!r}, a Value",
                         "return the loss as a float: loss.data")
            checker.close(received[0], expected[0], "the loss returned", rtol=1e-12,
                          mistakes=slipped(lambda result: result[0][0]))
            checker.close(received[1], expected[1], "the accuracy returned", rtol=1e-12)
            checker.close(_values(mine.parameters()), parameters,
                          "the parameters after the step", rtol=1e-12,
                          mistakes=slipped(lambda result: result[1]))
    with checker.case("three steps in a row", hint="each step starts from fresh gradients"):
        mine = tensorlib.scalar.MLP(2, [4, 1], rng=Rng(4))
        received = [gradient_step(mine, 0.3)[0] for _ in range(3)]

        def losses(slip: str) -> list[float]:
            model = tensorlib.scalar.MLP(2, [4, 1], rng=Rng(4))
            return [_step(loss_and_accuracy, slip)(model, 0.3)[0] for _ in range(3)]

        checker.close(received, losses(""), "the three losses", rtol=1e-12,
                      mistakes={said: (lambda slip=slip: losses(slip))
                                for slip, said in _STEP_SLIPS.items()})
    return HandOn(gradient_step, _step(loss_and_accuracy))


# ------------------------------------------------------------ exercise 1: graph size
def _node_count(hidden: int) -> dict[str, int]:
    """The nodes of one score of MLP(2, [H, H, 1]), and what the usual slips count."""
    right = 3 * hidden**2 + 13 * hidden + 3
    return {
        "right": right,
        "the 2 inputs are not counted: the MLP makes them leaf Values": right - 2,
        "the biases are not counted: each neuron's bias is a leaf": right - (2 * hidden + 1),
        "a tanh counted for the output neuron: it is linear": right + 1,
        "the tanh nodes are not counted: one per hidden neuron": right - 2 * hidden,
        "the parameters are not counted: every weight and bias is a leaf":
            right - (hidden**2 + 5 * hidden + 1),
    }


@exercise_check("Exercise 1 (nodes in one score's graph)", yours="predicted_nodes")
def check_predicted_nodes(checker: Checker, predicted_nodes: Callable[[int], Any]) -> None:
    """``predicted_nodes(H)`` against ``len(score.topological_order())`` of one score of
    tensorlib's MLP(2, [H, H, 1]), for H = 1, 2, 8 and 16."""
    for hidden in (1, 2, 8, 16):
        with checker.case(f"H = {hidden}", hint="add up leaves (inputs, weights, biases), then "
                          "per layer: n products and n sums per neuron, plus a tanh in hidden "
                          "layers"):
            score = tensorlib.scalar.MLP(2, [hidden, hidden, 1], rng=Rng(0))([0.5, -1.0])
            assert isinstance(score, _Value)
            counts = _node_count(hidden)
            counts.pop("right")
            checker.equal(predicted_nodes(hidden), len(score.topological_order()), "nodes",
                          mistakes=counts)


# ------------------------------------------------------------ exercise 2: squared loss
def _scores(model: Any, inputs: Sequence[Sequence[float]]) -> np.ndarray:
    """The model's scores on every input, by numpy (the weights read out layer by layer)."""
    h = np.asarray(inputs, dtype=np.float64)
    for index, layer in enumerate(model.layers):
        weights = np.array([[w.data for w in n.weights] for n in layer.neurons])
        h = h @ weights.T + np.array([n.bias.data for n in layer.neurons])
        if index < len(model.layers) - 1:
            h = np.tanh(h)
    return h[:, 0]


@exercise_check("Exercise 2 (squared loss)", yours="squared_loss", reads=("inputs", "targets"))
def check_squared_loss(checker: Checker, squared_loss: Callable[[Any], Any],
                       inputs: Sequence[Sequence[float]], targets: Sequence[float]) -> None:
    """``squared_loss(model)`` on two MLPs: its value against numpy's mean of (s - y)^2, then
    the output bias's gradient after backward against 2 mean(s - y)."""
    for seed, sizes in [(0, [4, 4, 1]), (3, [3, 1])]:
        with checker.case(f"MLP(2, {sizes}) from Rng({seed})",
                          hint="one (score - target) ** 2 per point, summed, times 1 / N"):
            model = tensorlib.scalar.MLP(2, sizes, rng=Rng(seed))
            scores, wanted = _scores(model, inputs), np.asarray(targets, dtype=np.float64)
            errors = scores - wanted
            loss = squared_loss(model)
            checker.true(isinstance(loss, _Value), f"squared_loss returned {loss!r:.80}",
                         "return the loss as one Value (not loss.data), so that backward "
                         "works through it")
            penalty = 1e-4 * sum(p.data**2 for p in model.parameters())
            checker.close(loss.data, np.mean(errors**2), "loss", rtol=1e-9, mistakes={
                "a sum, not a mean: times 1 / N": np.sum(errors**2),
                "(score - target) is not squared": np.mean(errors),
                "the absolute error, not its square: (score - target) ** 2": np.mean(
                    np.abs(errors)),
                "the hinge loss: this one is the mean of (score - target) ** 2":
                    np.mean(np.maximum(0.0, 1 - wanted * scores)),
                "an L2 penalty added: the squared loss has none":
                    np.mean(errors**2) + penalty})
            model.zero_grad()
            loss.backward()
            output_bias = model.layers[-1].neurons[0].bias
            checker.close(output_bias.grad, 2 * np.mean(errors), "dL/d(output bias)",
                          rtol=1e-9, mistakes={_NO_GRADIENT: 0.0})
