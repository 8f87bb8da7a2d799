"""Plots: loss curves, the live loss plot, attention maps, decision boundaries, and the
per-layer activation and gradient diagnostics."""

import matplotlib
import numpy as np
import pytest
from matplotlib.collections import PathCollection
from matplotlib.figure import Figure
from matplotlib.image import AxesImage

from tensorlib import Rng, Tensor
from tensorlib.nn import MLP, Linear, functional
from tensorlib.optim import SGD
from tensorlib.training.loop import train
from tensorlib.viz import (
    ActivationTrace,
    LiveLossPlot,
    activation_statistics,
    exponential_moving_average,
    figures,
    format_statistics,
    gradient_statistics,
    plot_activation_histograms,
    plot_attention,
    plot_decision_boundary,
    plot_gradient_histograms,
    plot_loss_curves,
    plots,
    record_activations,
)


@pytest.fixture(autouse=True, scope="module")
def non_interactive_backend():
    """Tests only: the library builds Figures without pyplot and never picks a backend."""
    matplotlib.use("Agg")


LOSSES = {
    "step": [1, 2, 3, 4, 5, 6],
    "train_loss": [3.0, 2.5, 2.2, 2.0, 1.9, 1.8],
    "validation_loss": [None, None, 2.4, None, None, 2.1],
}


def labels(axes):
    return [line.get_label() for line in axes.get_lines()]


# ------------------------------------------------------------------------------ loss curves
def test_loss_curves_from_a_dict():
    figure = plot_loss_curves(LOSSES)
    assert isinstance(figure, Figure)
    (axes,) = figure.axes
    assert labels(axes) == ["train", "validation"]
    train_line, validation_line = axes.get_lines()
    np.testing.assert_array_equal(train_line.get_xdata(), LOSSES["step"])
    np.testing.assert_array_equal(train_line.get_ydata(), LOSSES["train_loss"])
    np.testing.assert_array_equal(validation_line.get_xdata(), [3, 6])
    np.testing.assert_array_equal(validation_line.get_ydata(), [2.4, 2.1])
    assert axes.get_xlabel() == "step" and axes.get_yscale() == "linear"
    assert [t.get_text() for t in axes.get_legend().get_texts()] == ["train", "validation"]


def test_loss_curves_smoothing_and_log_scale():
    figure = plot_loss_curves(LOSSES, smoothing=0.5, log_scale=True)
    axes = figure.axes[0]
    assert labels(axes) == ["train (raw)", "train (smoothed 0.5)", "validation"]
    smoothed = axes.get_lines()[1].get_ydata()
    np.testing.assert_allclose(smoothed[:3], [3.0, 2.75, 2.475])
    assert axes.get_yscale() == "log"
    with pytest.raises(ValueError, match="positive"):
        plot_loss_curves({"train_loss": [1.0, 0.0]}, log_scale=True)


def test_exponential_moving_average_by_hand():
    np.testing.assert_allclose(exponential_moving_average([1.0, 3.0, 5.0], 0.5), [1, 2, 3.5])
    np.testing.assert_array_equal(exponential_moving_average([1.0, 3.0], 0.0), [1.0, 3.0])
    with pytest.raises(ValueError, match="smoothing"):
        exponential_moving_average([1.0], 1.0)


def test_loss_curves_accept_a_history_and_an_axes():
    model = Linear(2, 1, rng=Rng(0))
    x = np.ones((4, 2), np.float32)
    history = train(model, SGD(model, lr=0.1), lambda step: (x, x[:, :1]), steps=5,
                    evaluate=lambda: 1.0, evaluate_every=2, progress=False,
                    loss_fn=lambda m, a, b: ((m(Tensor(a)) - Tensor(b)) ** 2).mean())
    figure = Figure()
    axes = figure.add_subplot()
    assert plot_loss_curves(history, ax=axes) is figure
    np.testing.assert_array_equal(axes.get_lines()[1].get_xdata(), [2, 4, 5])
    only_train = plot_loss_curves({"train_loss": [2.0, 1.0]})
    assert labels(only_train.axes[0]) == ["train"]
    np.testing.assert_array_equal(only_train.axes[0].get_lines()[0].get_xdata(), [1, 2])


def test_loss_curves_reject_inconsistent_data():
    with pytest.raises(ValueError, match="'validation_loss' has 1 entries"):
        plot_loss_curves({"train_loss": [1.0, 2.0], "validation_loss": [1.0]})
    with pytest.raises(KeyError, match="train_loss"):
        plot_loss_curves({"loss": [1.0]})
    with pytest.raises(TypeError):
        plot_loss_curves([1.0, 2.0])


# ------------------------------------------------------------------------------ live plot
def test_live_loss_plot_outside_ipython_only_updates_the_figure(monkeypatch):
    monkeypatch.setattr(figures, "ipython_shell", lambda: None)
    live = LiveLossPlot(every=2)
    live.update(1, 3.0)
    assert live.axes.get_lines() == []  # not redrawn yet
    live.update(2, 2.0)
    assert labels(live.axes) == ["train"]
    live.update(3, 1.5, validation_loss=1.7)  # a validation loss redraws at once
    assert labels(live.axes) == ["train", "validation"]
    assert live.as_dict()["validation_loss"] == [None, None, 1.7]
    live.close()
    with pytest.raises(RuntimeError, match="closed"):
        live.update(4, 1.0)


def test_live_loss_plot_in_ipython_replaces_the_output(monkeypatch):
    import IPython.display

    calls = []
    monkeypatch.setattr(figures, "ipython_shell", lambda: object())
    monkeypatch.setattr(IPython.display, "clear_output",
                        lambda wait=False: calls.append(("clear", wait)))
    monkeypatch.setattr(IPython.display, "display", lambda obj: calls.append(("display", obj)))
    live = LiveLossPlot(every=1)
    live.update_from_record(type("Record", (), {"step": 1, "train_loss": 2.0,
                                                "validation_loss": None})())
    assert calls == [("clear", True), ("display", live.figure)]


def test_figures_display_as_png_in_ipython(monkeypatch):
    from IPython.core.formatters import DisplayFormatter

    formatter = DisplayFormatter()
    shell = type("Shell", (), {"display_formatter": formatter})()
    monkeypatch.setattr(figures, "ipython_shell", lambda: shell)
    figure = plot_loss_curves(LOSSES)
    data, _ = formatter.format(figure)
    assert "image/png" in data and data["text/plain"].startswith("<Figure size")


# ------------------------------------------------------------------------------ attention
def attention_maps(heads=3, length=4):
    scores = Rng(0).normal(0.0, 1.0, size=(heads, length, length)).astype(np.float64)
    scores = np.where(np.tril(np.ones((length, length), bool)), scores, -np.inf)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return weights / weights.sum(axis=-1, keepdims=True)  # (H, T, T), causal


def test_attention_heatmap_per_head_with_token_labels():
    probabilities = attention_maps()
    figure = plot_attention(Tensor(probabilities.astype(np.float32)), tokens=list(".emm"))
    images = [image for axes in figure.axes for image in axes.get_images()]
    assert len(images) == 3
    np.testing.assert_allclose(images[1].get_array(), probabilities[1], rtol=1e-6)
    heads = [axes for axes in figure.axes if axes.get_images()]
    assert [axes.get_title() for axes in heads] == ["head 0", "head 1", "head 2"]
    assert [t.get_text() for t in heads[0].get_xticklabels()] == [".", "e", "m", "m"]
    assert [t.get_text() for t in heads[0].get_yticklabels()] == [".", "e", "m", "m"]
    assert images[0].get_clim() == (0.0, 1.0)
    assert len(figure.axes) == 4  # three heads and the colour bar


def test_attention_selected_heads_single_map_and_batch_of_one():
    probabilities = attention_maps(heads=6)
    figure = plot_attention(probabilities, heads=[0, 5], columns=1)
    titled = [axes.get_title() for axes in figure.axes if axes.get_images()]
    assert titled == ["head 0", "head 5"]
    single = plot_attention(probabilities[2])
    assert sum(len(a.get_images()) for a in single.axes) == 1
    batched = plot_attention(probabilities[None])
    assert sum(len(a.get_images()) for a in batched.axes) == 6
    assert all(isinstance(i, AxesImage) for a in batched.axes for i in a.get_images())


def test_attention_figure_fits_a_notebook_output_area():
    four_heads = plot_attention(attention_maps(heads=4))
    assert four_heads.get_size_inches()[0] * four_heads.dpi <= 960  # panels shrink to fit
    one_head = plot_attention(attention_maps(heads=1))
    assert one_head.get_size_inches()[0] == pytest.approx(2.6 + 0.8)  # left as asked


def test_attention_rejects_bad_shapes_tokens_and_heads():
    probabilities = attention_maps()
    with pytest.raises(ValueError, match="3 tokens do not label a 4 x 4"):
        plot_attention(probabilities, tokens=["a", "b", "c"])
    with pytest.raises(IndexError, match="head 3 is out of range for 3 heads"):
        plot_attention(probabilities, heads=[3])
    with pytest.raises(ValueError, match="got shape"):
        plot_attention(np.stack([probabilities, probabilities]))


def test_attention_draws_causal_masked_cells_grey_apart_from_near_zero_weights():
    probabilities = attention_maps(heads=2, length=5)  # (2, 5, 5), exact zeros above the diagonal
    probabilities[0, 4] = [1.0 - 4e-9, 1e-9, 1e-9, 1e-9, 1e-9]  # allowed, almost no weight
    forbidden = np.triu(np.ones((5, 5), bool), k=1)
    for figure in (plot_attention(probabilities), plot_attention(probabilities, mask="causal"),
                   plot_attention(probabilities, mask=forbidden)):
        image = [i for axes in figure.axes for i in axes.get_images()][0]
        shown = image.get_array()
        assert np.ma.isMaskedArray(shown)
        np.testing.assert_array_equal(np.ma.getmaskarray(shown), forbidden)
        colours = image.to_rgba(shown)  # (5, 5, 4): what is painted in each cell
        grey = matplotlib.colors.to_rgba(plots.MASKED_COLOUR)
        assert all(tuple(c) == grey for c in colours[forbidden])
        assert tuple(colours[4, 1]) != grey  # a near-zero allowed weight keeps the map's colour
        np.testing.assert_allclose(colours[4, 1], image.cmap(0.0), atol=1e-2)
        assert "masked" in figure.legends[0].get_texts()[0].get_text()
    unmasked = plot_attention(probabilities, mask=None)
    shown = unmasked.axes[0].get_images()[0].get_array()
    assert not np.ma.getmaskarray(shown).any() and not unmasked.legends


def test_attention_masks_nothing_in_a_map_that_is_not_causal():
    probabilities = np.full((2, 4, 4), 0.25)  # every position sees every other
    figure = plot_attention(probabilities)
    shown = figure.axes[0].get_images()[0].get_array()
    assert not np.ma.getmaskarray(shown).any() and not figure.legends


def test_attention_with_fewer_queries_than_keys_masks_the_last_rows_causally():
    probabilities = attention_maps(heads=1, length=6)[:, 3:]  # the last 3 queries of 6 keys
    figure = plot_attention(probabilities, tokens=list("abcdef"))
    axes = figure.axes[0]
    mask = np.ma.getmaskarray(axes.get_images()[0].get_array())
    np.testing.assert_array_equal(mask, [[0, 0, 0, 0, 1, 1], [0, 0, 0, 0, 0, 1], [0] * 6])
    assert [t.get_text() for t in axes.get_yticklabels()] == ["d", "e", "f"]
    assert [t.get_text() for t in axes.get_xticklabels()] == list("abcdef")


def test_attention_validates_an_explicit_mask():
    probabilities = attention_maps(heads=2, length=4)
    with pytest.raises(TypeError, match="mask must be a boolean array .* got dtype float64"):
        plot_attention(probabilities, mask=np.zeros((4, 4)))
    with pytest.raises(ValueError, match=r"mask of shape \(3, 4\) does not fit 2 heads of 4 x 4"):
        plot_attention(probabilities, mask=np.zeros((3, 4), bool))
    with pytest.raises(ValueError, match="mask hides nonzero probability: head 0, query 0, key 0"):
        plot_attention(probabilities, mask=np.ones((2, 4, 4), bool))
    with pytest.raises(ValueError, match="mask must be 'auto', 'causal', None"):
        plot_attention(probabilities, mask="future")
    with pytest.raises(ValueError, match="mask hides nonzero probability"):
        plot_attention(np.full((4, 4), 0.25), mask="causal")
    with pytest.raises(ValueError, match="needs at least as many keys as queries"):
        plot_attention(np.full((4, 2), 0.5), mask="causal")


# ------------------------------------------------------------------------------ boundaries
def test_decision_boundary_of_a_small_module():
    points = Rng(3).uniform(-1.0, 1.0, size=(40, 2))
    classes = (points[:, 0] * points[:, 1] > 0).astype(np.int64)
    model = MLP(2, [8], 2, ["tanh", "identity"], rng=Rng(0))
    figure = plot_decision_boundary(model, points, classes, resolution=30)
    (axes,) = figure.axes
    scatter = [c for c in axes.collections if isinstance(c, PathCollection)]
    assert len(scatter) == 1 and scatter[0].get_offsets().shape == (40, 2)
    assert len(axes.collections) >= 2  # the filled regions and the points
    logits = model(Tensor(points)).data
    accuracy = np.mean(logits.argmax(axis=1) == classes)
    assert axes.get_title() == f"decision boundary (accuracy {accuracy:.1%})"
    assert model.training  # the module's mode is restored


def test_decision_boundary_of_a_numpy_scalar_score():
    points = np.array([[0.0, 0.0], [1.0, 0.0], [0.2, 1.0], [0.9, 1.0]], np.float32)
    classes = np.array([0, 1, 0, 1])
    seen = []

    def score(x):
        seen.append(type(x))
        return x[:, 0] - 0.5  # class 1 right of x = 0.5

    figure = plot_decision_boundary(score, points, classes, resolution=10)
    assert figure.axes[0].get_title() == "decision boundary (accuracy 100.0%)"
    assert seen == [np.ndarray, np.ndarray]
    with pytest.raises(ValueError, match="expected"):
        plot_decision_boundary(lambda x: np.zeros((len(x), 2, 2)), points, classes)
    with pytest.raises(ValueError, match=r"\(N, 2\)"):
        plot_decision_boundary(score, np.zeros((4, 3)), classes)


# ------------------------------------------------------------------------------ diagnostics
def deep_tanh_layers(gain):
    rng = Rng(7)
    layers = []
    for index in range(3):
        linear = Linear(10, 10, bias=False, rng=rng)
        linear.weight.data[...] *= gain
        layers += [linear, functional.tanh]
        del index
    return layers


def test_record_activations_names_values_and_statistics():
    x = Rng(1).normal(0.0, 1.0, size=(32, 10))
    trace = record_activations(deep_tanh_layers(1.0), x)
    assert isinstance(trace, ActivationTrace) and len(trace) == 6
    assert trace.names == ["0: Linear", "1: tanh", "2: Linear", "3: tanh", "4: Linear", "5: tanh"]
    assert trace.output is trace.tensors[-1]
    only = record_activations(deep_tanh_layers(1.0), x, only="tanh")
    assert only.names == ["1: tanh", "3: tanh", "5: tanh"]
    statistics = activation_statistics(only)
    values = only.activations()[0][1]
    assert statistics[0].shape == (32, 10)
    assert statistics[0].mean == pytest.approx(float(values.astype(np.float64).mean()))
    assert statistics[0].std == pytest.approx(float(values.astype(np.float64).std()))
    assert statistics[0].saturated == pytest.approx(float(np.mean(np.abs(values) > 0.97)))
    with pytest.raises(ValueError, match="no layer name contains"):
        record_activations(deep_tanh_layers(1.0), x, only="relu")


def test_saturation_shows_up_with_a_large_gain():
    x = Rng(1).normal(0.0, 1.0, size=(64, 10))
    calm = activation_statistics(record_activations(deep_tanh_layers(0.5), x, only="tanh"))
    saturated = activation_statistics(record_activations(deep_tanh_layers(8.0), x,
                                                         only="tanh"))
    assert all(s.saturated < 0.05 for s in calm)
    assert all(s.saturated > 0.5 for s in saturated)
    assert calm[-1].std < calm[0].std  # the signal shrinks layer by layer with a small gain


def test_gradient_statistics_after_backward():
    x = Rng(1).normal(0.0, 1.0, size=(16, 10))
    layers = deep_tanh_layers(1.0)
    trace = record_activations(layers, x, only="tanh")
    with pytest.raises(RuntimeError, match="no gradient"):
        gradient_statistics(trace)
    (trace.output * trace.output).sum().backward()
    gradients = gradient_statistics(trace)
    assert [g.name for g in gradients] == trace.names
    last = trace.output.data.astype(np.float64)
    assert gradients[-1].mean == pytest.approx(float((2 * last).mean()), rel=1e-5)
    assert gradients[-1].saturated is None
    weights = gradient_statistics([(f"w{i}", layer.weight.grad)
                                   for i, layer in enumerate(layers[::2])])
    assert [w.shape for w in weights] == [(10, 10)] * 3
    table = format_statistics(gradients, ".3e")
    assert table.splitlines()[0].split() == ["layer", "shape", "mean", "std", "saturated"]
    assert "5: tanh" in table and "16x10" in table


def test_mlp_trace_and_histograms():
    model = MLP(2, [6, 6], 3, ["tanh", "tanh", "identity"], rng=Rng(0))
    x = Rng(2).normal(0.0, 1.0, size=(20, 2))
    trace = record_activations(model, x)
    assert trace.names == ["layers.0: Linear", "layers.0: tanh", "layers.1: Linear",
                           "layers.1: tanh", "layers.2: Linear", "layers.2: identity"]
    np.testing.assert_allclose(trace.output.data, model(Tensor(x)).data, rtol=1e-6)
    figure = plot_activation_histograms(record_activations(model, x, only="tanh"))
    axes = figure.axes[0]
    assert len(axes.get_lines()) == 2
    legend = [t.get_text() for t in axes.get_legend().get_texts()]
    assert legend[0].startswith("layers.0: tanh: mean") and "saturated" in legend[0]
    functional.cross_entropy(trace.output, np.zeros(20, np.int64)).backward()
    assert len(plot_gradient_histograms(trace).axes[0].get_lines()) == 6
    parameter_figure = plot_gradient_histograms(model)
    assert len(parameter_figure.axes[0].get_lines()) == 6  # 3 weights and 3 biases
    with pytest.raises(TypeError, match="no recorded activations"):
        activation_statistics(model)


def test_plot_functions_draws_one_labelled_line_per_curve():
    from tensorlib.viz import plot_functions

    grid = np.linspace(-2.0, 2.0, 41)
    figure = plot_functions(grid, {"tanh": np.tanh(grid), "relu": np.maximum(grid, 0)},
                            title="activations")
    axes = figure.axes[0]
    labels = [line.get_label() for line in axes.get_lines() if not line.get_label().startswith("_")]
    assert labels == ["tanh", "relu"]
    np.testing.assert_allclose(axes.get_lines()[0].get_ydata(), np.tanh(grid))
    with pytest.raises(ValueError, match="has 3 values for 41"):
        plot_functions(grid, {"bad": [1.0, 2.0, 3.0]})


def test_plot_trajectories_draws_contours_and_one_path_per_optimizer():
    from tensorlib.viz import plot_trajectories

    def bowl(x, y):
        return 0.5 * (x**2 + 25 * y**2)

    path = np.array([[-4.0, 1.0], [-2.0, -0.5], [-1.0, 0.2], [0.0, 0.0]])
    figure = plot_trajectories(bowl, {"sgd": path, "adamw": path * 0.5}, xlim=(-5, 5),
                               ylim=(-2, 2), title="valley")
    axes = figure.axes[0]
    labelled = [line for line in axes.get_lines() if not line.get_label().startswith("_")]
    assert [line.get_label() for line in labelled] == ["sgd", "adamw"]
    np.testing.assert_allclose(labelled[0].get_xydata(), path)
    assert axes.collections, "the contour lines are missing"
    with pytest.raises(ValueError, match=r"\(steps, 2\)"):
        plot_trajectories(bowl, {"bad": np.zeros((3, 3))}, xlim=(-1, 1), ylim=(-1, 1))


def test_plot_loss_curves_label_color_and_ylabel():
    figure = plot_loss_curves({"train_loss": [3.0, 2.0, 1.0]}, label="sgd", color="C3",
                              ylabel="f(x)")
    axes = figure.axes[0]
    assert axes.get_lines()[0].get_label() == "sgd"
    assert axes.get_ylabel() == "f(x)"
