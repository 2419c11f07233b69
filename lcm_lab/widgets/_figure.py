"""Live plotly figures inside ipywidgets layouts (``go.FigureWidget``, needs ``anywidget``)."""

from __future__ import annotations

import plotly.graph_objects as go


def figure_widget(fig: go.Figure) -> go.FigureWidget:
    """A live figure that takes the width of the notebook cell (no fixed pixel width)."""
    fig.update_layout(width=None, autosize=True)
    return go.FigureWidget(fig)


def replace_figure(widget: go.FigureWidget, fig: go.Figure) -> None:
    """Swap all traces and the layout of ``widget`` for those of ``fig`` in one front-end update."""
    with widget.batch_update():
        widget.data = ()
        widget.add_traces(list(fig.data))
        widget.layout = fig.layout
        widget.layout.width = None
        widget.layout.autosize = True
