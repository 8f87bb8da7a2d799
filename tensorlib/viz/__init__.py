"""Pictures of what tensorlib computes: graphs and module trees (graphviz), plots (matplotlib)."""

from tensorlib.viz.graph import (
    INSTALL_HINT,
    Drawing,
    GraphvizNotInstalledError,
    draw_graph,
    draw_module,
)

__all__ = ["INSTALL_HINT", "Drawing", "GraphvizNotInstalledError", "draw_graph", "draw_module"]
