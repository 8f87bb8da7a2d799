"""Notebook 12d's pictures: the gradient step by step back through time, and how much a
recurrent model's last output depends on each input, before and after training."""

import matplotlib
import numpy as np
import pytest
from matplotlib.figure import Figure

from tensorlib.viz import figures, plot_gradient_through_time, plot_memory

from helpers import labelled, rendered_without_warnings


@pytest.fixture(autouse=True, scope="module")
def non_interactive_backend():
    """Tests only: the library builds Figures without pyplot and never picks a backend."""
    matplotlib.use("Agg")


def test_one_line_per_label_on_a_log_scale_with_dashed_references():
    norms = {"ρ = 0.5": 0.5 ** np.arange(10), "ρ = 3": 3.0 ** np.arange(10)}
    figure = plot_gradient_through_time(norms, reference={"ρ = 3": 3.0 ** np.arange(10)},
                                        title="through time")
    assert isinstance(figure, Figure) and figure.get_figwidth() <= figures.NOTEBOOK_FIGURE_WIDTH
    axes = figure.axes[0]
    assert [line.get_label() for line in labelled(axes)] == ["ρ = 0.5", "ρ = 3"]
    assert axes.get_yscale() == "log" and axes.get_title() == "through time"
    np.testing.assert_allclose(labelled(axes)[1].get_ydata(), 3.0 ** np.arange(10))
    np.testing.assert_array_equal(labelled(axes)[0].get_xdata(), np.arange(10))
    dashed = [line for line in axes.get_lines() if line.get_linestyle() == "--"]
    assert len(dashed) == 1 and dashed[0].get_color() == labelled(axes)[1].get_color()
    assert axes.get_xlabel() == "steps back from the loss"
    rendered_without_warnings(figure)


def test_it_draws_into_given_axes():
    figure = Figure()
    axes = figure.add_subplot()
    assert plot_gradient_through_time({"a": [1.0, 0.5]}, ax=axes, title=None) is figure
    assert len(axes.get_lines()) == 1 and axes.get_title() == ""


def test_bad_curves_are_refused_with_the_label_named():
    with pytest.raises(TypeError, match="non-empty mapping"):
        plot_gradient_through_time([1.0, 2.0])
    with pytest.raises(TypeError, match="non-empty mapping"):
        plot_gradient_through_time({})
    with pytest.raises(ValueError, match=r"norms\['a'\] must hold finite positive"):
        plot_gradient_through_time({"a": [1.0, 0.0]})
    with pytest.raises(ValueError, match=r"norms\['a'\] must be a 1-D"):
        plot_gradient_through_time({"a": np.ones((2, 2))})
    with pytest.raises(ValueError, match="reference has label"):
        plot_gradient_through_time({"a": [1.0]}, reference={"b": [1.0]})


def test_memory_has_two_panels_with_each_label_in_one_colour():
    start = {"rnn": 0.5 ** np.arange(21), "lstm": 0.9 ** np.arange(21)}
    trained = {"lstm": np.linspace(1.0, 2.0, 21), "lstm, forget bias 3": np.ones(21)}
    figure = plot_memory(start, trained, title="memory")
    left, right = figure.axes
    assert figure.get_figwidth() <= figures.NOTEBOOK_FIGURE_WIDTH
    assert [line.get_label() for line in labelled(left)] == ["rnn", "lstm"]
    assert [line.get_label() for line in labelled(right)] == ["lstm", "lstm, forget bias 3"]
    assert labelled(left)[1].get_color() == labelled(right)[0].get_color()
    assert len({line.get_color() for line in labelled(left) + labelled(right)}) == 3
    assert left.get_yscale() == right.get_yscale() == "log"
    assert left.get_title() == "at the start of training" and right.get_title() == \
        "after training"
    assert figure.get_suptitle() == "memory"
    np.testing.assert_allclose(labelled(right)[0].get_ydata(), np.linspace(1.0, 2.0, 21))
    rendered_without_warnings(figure)
    with pytest.raises(ValueError, match=r"trained\['x'\]"):
        plot_memory(start, {"x": [np.nan]})
