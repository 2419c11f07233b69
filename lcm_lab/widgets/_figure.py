"""Live plotly figures inside ipywidgets layouts (``go.FigureWidget``, needs ``anywidget``)."""

from __future__ import annotations

import ipywidgets as widgets
import plotly.graph_objects as go


def full_width() -> widgets.Layout:
    """The layout of every widget: the cell's whole width, so its figures lay out at that width from the start."""
    return widgets.Layout(width="100%")


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
