"""Notebook 19a's pictures: the bits of a number in several formats, the gap between
neighbouring numbers, and where the magnitudes of a gradient lie against a format's limits."""

import matplotlib
import numpy as np
import pytest
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from tensorlib.viz import (
    figures,
    plot_float_bits,
    plot_magnitude_histograms,
    plot_number_spacing,
)

from helpers import labelled, rendered_without_warnings


@pytest.fixture(autouse=True, scope="module")
def non_interactive_backend():
    """Tests only: the library builds Figures without pyplot and never picks a backend."""
    matplotlib.use("Agg")


def test_one_box_per_bit_coloured_by_field_with_its_value():
    layouts = {"float16": ("0010111001100110", 5), "bfloat16": ("0011110111001101", 8),
               "float32": ("0" * 32, 8)}
    figure = plot_float_bits(layouts, title="0.1")
    assert isinstance(figure, Figure) and figure.get_figwidth() <= figures.NOTEBOOK_FIGURE_WIDTH
    axes = figure.axes[0]
    boxes = [patch for patch in axes.patches if isinstance(patch, Rectangle)]
    assert len(boxes) == 16 + 16 + 32
    written = [text.get_text() for text in axes.texts]
    assert written[:16] == list("0010111001100110") and written[16] == "float16"
    first_row = boxes[:16]  # the sign, then 5 exponent bits, then the fraction: three colours
    colours = [box.get_facecolor()[:3] for box in first_row]
    assert colours[0] != colours[1] and colours[1] == colours[5] and colours[5] != colours[6]
    assert [text.get_text() for text in axes.get_legend().get_texts()] == [
        "sign", "exponent", "fraction"]
    assert axes.get_title() == "0.1"
    rendered_without_warnings(figure)


def test_bad_bit_layouts_are_refused_with_the_label_named():
    with pytest.raises(TypeError, match="non-empty mapping"):
        plot_float_bits({})
    with pytest.raises(TypeError, match=r"formats\['a'\] must be \(bits, exponent width\)"):
        plot_float_bits({"a": "0101"})
    with pytest.raises(ValueError, match=r"formats\['a'\]: bits must be a string of 0s and 1s"):
        plot_float_bits({"a": ("01x1", 1)})
    with pytest.raises(ValueError, match="exponent width must be an int from 1 to 2"):
        plot_float_bits({"a": ("0101", 3)})


def test_the_gaps_and_the_relative_gaps_on_log_axes_each_label_one_colour():
    x = 2.0 ** np.arange(-10, 10, dtype=np.float64)
    gaps = {"coarse": (x, x * 2.0 ** -7), "fine": (x, x * 2.0 ** -10)}
    figure = plot_number_spacing(gaps, points={"nf4": ([0.1, 0.5], [0.08, 0.2])},
                                 title="spacing")
    absolute, relative = figure.axes
    assert figure.get_figwidth() <= figures.NOTEBOOK_FIGURE_WIDTH
    assert [line.get_label() for line in labelled(absolute)] == ["coarse", "fine", "nf4"]
    assert absolute.get_xscale() == absolute.get_yscale() == relative.get_yscale() == "log"
    np.testing.assert_allclose(labelled(absolute)[0].get_ydata(), x * 2.0 ** -7)
    np.testing.assert_allclose(labelled(relative)[0].get_ydata(), np.full(x.size, 2.0 ** -7))
    np.testing.assert_allclose(labelled(relative)[2].get_ydata(), [0.8, 0.4])
    assert [line.get_color() for line in labelled(absolute)] == \
        [line.get_color() for line in labelled(relative)]
    assert absolute.get_legend() is not None and relative.get_legend() is None
    assert labelled(absolute)[0].get_drawstyle() == "steps-post"
    assert labelled(absolute)[2].get_linestyle() == "None"
    assert figure.get_suptitle() == "spacing"
    rendered_without_warnings(figure)


def test_bad_gaps_are_refused_with_the_label_named():
    with pytest.raises(TypeError, match="non-empty mapping"):
        plot_number_spacing({})
    with pytest.raises(ValueError, match=r"gaps\['a'\] must hold finite positive"):
        plot_number_spacing({"a": ([1.0, 2.0], [0.0, 1.0])})
    with pytest.raises(ValueError, match=r"gaps\['a'\]: x and y must be 1-D arrays of one"):
        plot_number_spacing({"a": ([1.0, 2.0], [1.0])})
    with pytest.raises(TypeError, match=r"points\['p'\] must be an \(x, y\) pair"):
        plot_number_spacing({"a": ([1.0], [1.0])}, points={"p": [1.0]})


def test_histograms_of_the_nonzero_magnitudes_on_shared_log_bins_with_marks():
    values = {"float32": np.array([1e-9, -1e-8, 1e-7, 0.0, 1e-7]),
              "float16": np.array([0.0, 0.0, 1e-7, 6e-8])}
    figure = plot_magnitude_histograms(values, marks={"smallest": 6e-8, "largest": 65504.0},
                                       bins=10, title="gradients")
    axes = figure.axes[0]
    assert figure.get_figwidth() <= figures.NOTEBOOK_FIGURE_WIDTH
    assert axes.get_xscale() == "log" and axes.get_title() == "gradients"
    assert len(axes.patches) == 2  # one outline per label
    legend = [text.get_text() for text in axes.get_legend().get_texts()]
    assert sorted(legend) == ["float16", "float32", "largest", "smallest"]
    marks = [line for line in axes.get_lines() if line.get_label() in ("smallest", "largest")]
    assert [line.get_xdata()[0] for line in marks] == [6e-8, 65504.0]
    low, high = axes.get_xlim()
    assert low < 1e-9 and high > 65504.0
    rendered_without_warnings(figure)


def test_histograms_count_only_the_nonzero_entries():
    figure = plot_magnitude_histograms({"a": np.array([0.0, 1.0, 2.0, 4.0])}, bins=3)
    (outline,) = figure.axes[0].patches
    heights = outline.get_xy()[:, 1]
    assert heights.max() <= 3  # three non-zero entries, the zero left out


def test_bad_histograms_are_refused():
    with pytest.raises(TypeError, match="non-empty mapping"):
        plot_magnitude_histograms([1.0])
    with pytest.raises(ValueError, match=r"values\['a'\] holds an inf or a nan"):
        plot_magnitude_histograms({"a": np.array([1.0, np.nan])})
    with pytest.raises(ValueError, match="no non-zero entry"):
        plot_magnitude_histograms({"a": np.zeros(3)})
    with pytest.raises(ValueError, match=r"marks\['m'\] must be a finite positive number"):
        plot_magnitude_histograms({"a": np.ones(3)}, marks={"m": -1.0})
    with pytest.raises(ValueError, match="bins must be a positive int"):
        plot_magnitude_histograms({"a": np.ones(3)}, bins=0)
