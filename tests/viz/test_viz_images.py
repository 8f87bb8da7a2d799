"""Pictures of images: digits in a grid, a convolution's filters, feature maps layer by layer,
and the confusion matrix."""

import io

import matplotlib
import numpy as np
import pytest
from matplotlib.figure import Figure

from tensorlib import Rng, Tensor
from tensorlib.training.metrics import confusion_matrix
from tensorlib.viz import (
    plot_confusion_matrix,
    plot_feature_maps,
    plot_filters,
    plot_images,
)
from tensorlib.viz.plots import NOTEBOOK_FIGURE_WIDTH


@pytest.fixture(autouse=True, scope="module")
def non_interactive_backend():
    """Tests only: the library builds Figures without pyplot and never picks a backend."""
    matplotlib.use("Agg")


def shown(figure):
    """The axes that show an image, in order, and their images."""
    axes = [a for a in figure.axes if a.get_images()]
    return axes, [a.get_images()[0] for a in axes]


def fits(figure):
    return figure.get_size_inches()[0] <= NOTEBOOK_FIGURE_WIDTH + 1e-9


# ------------------------------------------------------------------------------ plot_images
def test_images_in_a_grid_with_labels_and_wrong_predictions_in_red():
    images = Rng(0).uniform(size=(12, 8, 8))
    labels = list(range(12))
    predictions = [*range(11), 3]                            # the last one wrong
    figure = plot_images(images, labels, predictions, columns=5, title="digits")
    assert isinstance(figure, Figure) and fits(figure)
    axes, pictures = shown(figure)
    assert len(axes) == 12 and len(figure.axes) == 12         # the 3 empty panels removed
    np.testing.assert_allclose(pictures[4].get_array(), images[4])
    assert [a.get_title() for a in axes[:2]] == ["0", "1"] and axes[-1].get_title() == "11→3"
    assert axes[-1].title.get_color() != axes[0].title.get_color()
    assert pictures[0].get_clim() == (pytest.approx(images.min()), pytest.approx(images.max()))
    assert figure.get_suptitle() == "digits"
    rows = {round(a.get_position().y0, 3) for a in axes}
    assert len(rows) == 3                                     # 5 + 5 + 2


def test_images_take_channels_tensors_a_value_range_and_no_labels():
    images = Tensor(np.zeros((3, 1, 4, 6), dtype=np.float32))  # blank, rectangular
    figure = plot_images(images, value_range=(0.0, 1.0))
    axes, pictures = shown(figure)
    assert len(axes) == 3 and all(a.get_title() == "" for a in axes)
    assert pictures[0].get_array().shape == (4, 6) and pictures[0].get_clim() == (0.0, 1.0)
    many = plot_images(np.ones((40, 8, 8)), columns=20)       # panels shrink to fit
    assert fits(many)


def test_images_refuse_bad_shapes_and_label_counts():
    with pytest.raises(ValueError, match=r"\(N, H, W\) or \(N, 1, H, W\).*\(8, 8\)"):
        plot_images(np.zeros((8, 8)))
    with pytest.raises(ValueError, match="labels has 2 entries for 3 images"):
        plot_images(np.zeros((3, 8, 8)), labels=[1, 2])
    with pytest.raises(ValueError, match="predictions need labels"):
        plot_images(np.zeros((3, 8, 8)), predictions=[1, 2, 3])
    with pytest.raises(TypeError, match="got a string"):
        plot_images(np.zeros((3, 8, 8)), labels="abc")
    with pytest.raises(ValueError, match="columns"):
        plot_images(np.zeros((3, 8, 8)), columns=0)


# ----------------------------------------------------------------------------- plot_filters
def test_filters_of_one_input_channel_share_a_scale_centred_on_zero():
    weight = Rng(1).normal(size=(16, 1, 3, 3))
    figure = plot_filters(weight, title="first layer")
    axes, pictures = shown(figure)
    assert len(axes) == 16 and fits(figure)
    largest = np.abs(weight).max()
    assert all(p.get_clim() == (pytest.approx(-largest), pytest.approx(largest))
               for p in pictures)
    np.testing.assert_allclose(pictures[5].get_array(), weight[5, 0])
    assert [a.get_title() for a in axes[:3]] == ["0", "1", "2"]
    assert len(figure.axes) == 17                             # and the colour bar
    assert len({round(a.get_position().y0, 3) for a in axes}) == 2   # 8 + 8


def test_filters_of_several_input_channels_are_rows_and_columns():
    weight = Tensor(Rng(2).normal(size=(3, 2, 3, 5)))          # rectangular kernels
    axes, pictures = shown(plot_filters(weight))
    assert len(axes) == 6
    np.testing.assert_allclose(pictures[3].get_array(), weight.numpy()[1, 1])
    assert axes[0].get_title() == "in 0" and axes[1].get_title() == "in 1"
    assert axes[2].get_ylabel() == "filter 1" and axes[3].get_ylabel() == ""
    three_d = plot_filters(np.ones((4, 2, 2)))                 # (O, kH, kW): one input channel
    assert len(shown(three_d)[0]) == 4


def test_filters_refuse_bad_shapes():
    with pytest.raises(ValueError, match=r"\(out_channels, in_channels, kH, kW\)"):
        plot_filters(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="9 input channels do not fit 8 columns"):
        plot_filters(np.zeros((2, 9, 3, 3)))


# ------------------------------------------------------------------------ plot_feature_maps
def test_feature_maps_a_row_per_layer_at_most_max_channels():
    maps = {"input": np.arange(64.0).reshape(1, 8, 8),
            "conv": Rng(3).normal(size=(16, 8, 8)),
            "pool": Tensor(np.ones((1, 4, 4, 4)))}             # a batch of one
    figure = plot_feature_maps(maps, max_channels=6, title="one digit")
    axes, pictures = shown(figure)
    assert len(axes) == 1 + 6 + 4 and fits(figure)
    named = [row._suptitle.get_text() for row in figure.subfigs]   # a row per layer
    assert named == ["input", "conv (the first 6 of 16 channels)", "pool"]
    assert [len(row.axes) for row in figure.subfigs] == [1, 6, 4]
    np.testing.assert_allclose(pictures[0].get_array(), maps["input"][0])
    conv = pictures[1:7]
    low, high = maps["conv"][:6].min(), maps["conv"][:6].max()
    assert all(p.get_clim() == (pytest.approx(low), pytest.approx(high)) for p in conv)
    assert figure.get_suptitle() == "one digit"
    wide = plot_feature_maps({"many": np.zeros((32, 6, 6))}, max_channels=32)
    assert fits(wide)


def test_feature_maps_name_or_number_their_channels_and_show_each_rows_scale():
    maps = {"digit": np.arange(64.0).reshape(8, 8),
            "edges": Rng(5).normal(size=(2, 8, 8)),
            "conv": Rng(6).normal(size=(16, 8, 8))}
    figure = plot_feature_maps(maps, max_channels=4, cmap="gray_r", numbered=True,
                               channel_names={"edges": ["vertical", "horizontal"]},
                               colorbar=True)
    axes, pictures = shown(figure)
    assert len(axes) == 1 + 2 + 4 and fits(figure)
    assert [a.get_title() for a in axes] == ["", "vertical", "horizontal", "0", "1", "2", "3"]
    assert all(p.get_cmap().name == "gray_r" for p in pictures)
    bars = [a for row in figure.subfigs for a in row.axes if not a.get_images()]
    assert len(bars) == 3                                      # a colour bar for each row
    edges = pictures[1]
    assert edges.get_clim() == (pytest.approx(maps["edges"].min()),
                                pytest.approx(maps["edges"].max()))
    plain = plot_feature_maps(maps, max_channels=4)            # the defaults: as before
    assert all(a.get_title() == "" for a in shown(plain)[0])
    assert len(plain.axes) == 7 and shown(plain)[1][0].get_cmap().name == "viridis"
    with pytest.raises(ValueError, match="must name the 2 channels shown"):
        plot_feature_maps(maps, channel_names={"edges": ["vertical"]})
    with pytest.raises(ValueError, match="names rows that maps lacks"):
        plot_feature_maps(maps, channel_names={"pool": ["a"]})


def test_feature_maps_refuse_bad_input():
    with pytest.raises(ValueError, match="non-empty dict"):
        plot_feature_maps({})
    with pytest.raises(ValueError, match=r"maps\['x'\] must be \(C, H, W\)"):
        plot_feature_maps({"x": np.zeros((2, 3, 4, 5))})
    with pytest.raises(ValueError, match="max_channels"):
        plot_feature_maps({"x": np.zeros((2, 3, 3))}, max_channels=0)


# ------------------------------------------------------------------------ confusion matrix
def test_confusion_matrix_plot_writes_the_counts_and_titles_the_right_answers():
    labels = np.array([0, 0, 1, 2, 2, 2])
    predictions = np.array([0, 1, 1, 2, 0, 2])
    figure = plot_confusion_matrix(labels, predictions, classes=["a", "b", "c"])
    axes = figure.axes[0]
    np.testing.assert_array_equal(axes.get_images()[0].get_array(),
                                  confusion_matrix(labels, predictions))
    assert axes.get_title() == "4 of 6 right"
    assert sorted(t.get_text() for t in axes.texts) == ["1", "1", "1", "1", "2"]  # 0s blank
    assert [t.get_text() for t in axes.get_xticklabels()] == ["a", "b", "c"]
    assert axes.get_xlabel() == "predicted" and axes.get_ylabel() == "true"
    assert len(figure.axes) == 2 and fits(figure)              # and the colour bar


def test_confusion_matrices_side_by_side_share_a_figure():
    from matplotlib.figure import Figure as Plain

    figure = Plain(figsize=(9.0, 4.0), layout="constrained")
    left, right = figure.subplots(1, 2)
    labels = np.arange(10)
    assert plot_confusion_matrix(labels, labels, ax=left, title="all right") is figure
    plot_confusion_matrix(labels, (labels + 1) % 10, ax=right)
    assert left.get_title() == "all right" and right.get_title() == "0 of 10 right"


def test_confusion_matrices_compared_share_one_colour_scale():
    labels = np.repeat(np.arange(3), 10)                      # 10 of each class
    few = plot_confusion_matrix(labels[::3], labels[::3])      # 4, 3 and 3
    assert few.axes[0].get_images()[0].get_clim() == (0, 4)  # the default: its own largest
    shared = [plot_confusion_matrix(labels[::3], labels[::3], vmax=10),
              plot_confusion_matrix(labels, labels, vmax=10)]
    assert [figure.axes[0].get_images()[0].get_clim() for figure in shared] == [(0, 10)] * 2
    with pytest.raises(ValueError, match="vmax"):
        plot_confusion_matrix(labels, labels, vmax=0)


def test_confusion_matrix_plot_refuses_what_is_not_class_ids():
    with pytest.raises(ValueError, match="1-D"):
        plot_confusion_matrix(np.zeros((2, 2), dtype=int), np.zeros((2, 2), dtype=int))


# ------------------------------------------------------------------------------- the PNGs
def test_the_same_picture_gives_the_same_png_bytes():
    """A notebook re-executed stores the same PNG (no timestamp or random id in it)."""
    def png():
        buffer = io.BytesIO()
        plot_images(Rng(4).uniform(size=(6, 8, 8)), labels=list(range(6))).savefig(
            buffer, format="png")
        return buffer.getvalue()

    assert png() == png()
