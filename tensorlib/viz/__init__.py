"""Pictures of what tensorlib computes: graphs and module trees (graphviz), plots, images and
how text is cut into tokens (matplotlib)."""

import importlib
from typing import Any

from tensorlib.viz.graph import (
    INSTALL_HINT,
    OUTPUT_AREA_WIDTH,
    Drawing,
    GraphvizNotInstalledError,
    draw_graph,
    draw_module,
)

# The plotting modules import matplotlib, most of a second: each loads when one of its names
# is first used, so a notebook that only draws graphs never waits for it. The signal
# statistics and the training watch are computed in tensorlib.training.layer_statistics (no
# matplotlib) and are also found here, where notebooks 07 and 12a import them from.
_LAZY = {
    "plot_design_curves": "ladder_curves",
    "plot_ladder_curves": "ladder_curves",
    "plot_loss_by_position": "ladder_curves",
    "ActivationTrace": "tensorlib.training.layer_statistics",
    "LiveLossPlot": "plots",
    "SignalStatistics": "tensorlib.training.layer_statistics",
    "activation_statistics": "tensorlib.training.layer_statistics",
    "exponential_moving_average": "plots",
    "format_statistics": "tensorlib.training.layer_statistics",
    "gradient_statistics": "tensorlib.training.layer_statistics",
    "plot_activation_histograms": "plots",
    "plot_attention": "plots",
    "plot_confusion_matrix": "images",
    "plot_decision_boundary": "plots",
    "plot_feature_maps": "images",
    "plot_filters": "images",
    "plot_float_bits": "number_formats",
    "plot_functions": "plots",
    "plot_gradient_histograms": "plots",
    "plot_gradient_through_time": "recurrent",
    "plot_images": "images",
    "plot_loss_curves": "plots",
    "plot_magnitude_histograms": "number_formats",
    "plot_memory": "recurrent",
    "plot_number_spacing": "number_formats",
    "plot_token_lengths": "tokens",
    "plot_tokens": "tokens",
    "plot_trajectories": "plots",
    "record_activations": "tensorlib.training.layer_statistics",
    "TrainingWatch": "tensorlib.training.layer_statistics",
    "WatchRecord": "tensorlib.training.layer_statistics",
    "dead_unit_fraction": "tensorlib.training.layer_statistics",
    "plot_learning_rate_range_test": "training",
    "plot_update_ratios": "training",
    "watch_training": "tensorlib.training.layer_statistics",
}


__all__ = [
    "INSTALL_HINT",
    "OUTPUT_AREA_WIDTH",
    "ActivationTrace",
    "Drawing",
    "GraphvizNotInstalledError",
    "LiveLossPlot",
    "SignalStatistics",
    "TrainingWatch",
    "WatchRecord",
    "activation_statistics",
    "dead_unit_fraction",
    "draw_graph",
    "draw_module",
    "exponential_moving_average",
    "format_statistics",
    "gradient_statistics",
    "plot_activation_histograms",
    "plot_attention",
    "plot_confusion_matrix",
    "plot_decision_boundary",
    "plot_feature_maps",
    "plot_filters",
    "plot_float_bits",
    "plot_functions",
    "plot_design_curves",
    "plot_ladder_curves",
    "plot_gradient_histograms",
    "plot_gradient_through_time",
    "plot_images",
    "plot_learning_rate_range_test",
    "plot_loss_by_position",
    "plot_loss_curves",
    "plot_magnitude_histograms",
    "plot_memory",
    "plot_number_spacing",
    "plot_token_lengths",
    "plot_tokens",
    "plot_trajectories",
    "plot_update_ratios",
    "record_activations",
    "watch_training",
]


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'tensorlib.viz' has no attribute {name!r}")
    module = _LAZY[name]
    value = getattr(importlib.import_module(module if "." in module
                                            else f"tensorlib.viz.{module}"), name)
    globals()[name] = value  # later look-ups find it without coming here
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
