"""Pictures of what tensorlib computes: graphs and module trees (graphviz), plots (matplotlib)."""

from tensorlib.viz.graph import (
    INSTALL_HINT,
    Drawing,
    GraphvizNotInstalledError,
    draw_graph,
    draw_module,
)
from tensorlib.viz.plots import (
    ActivationTrace,
    LiveLossPlot,
    SignalStatistics,
    activation_statistics,
    exponential_moving_average,
    format_statistics,
    gradient_statistics,
    plot_activation_histograms,
    plot_attention,
    plot_decision_boundary,
    plot_functions,
    plot_gradient_histograms,
    plot_loss_curves,
    plot_trajectories,
    record_activations,
)

__all__ = [
    "INSTALL_HINT",
    "ActivationTrace",
    "Drawing",
    "GraphvizNotInstalledError",
    "LiveLossPlot",
    "SignalStatistics",
    "activation_statistics",
    "draw_graph",
    "draw_module",
    "exponential_moving_average",
    "format_statistics",
    "gradient_statistics",
    "plot_activation_histograms",
    "plot_attention",
    "plot_decision_boundary",
    "plot_functions",
    "plot_gradient_histograms",
    "plot_loss_curves",
    "plot_trajectories",
    "record_activations",
]
