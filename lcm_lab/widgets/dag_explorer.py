"""``DagExplorer``: the DAG plot plus everything about the summary you pick (or click)."""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets

from lcm_lab.errors import DataError
from lcm_lab.viz._source import DagInput, dag_source
from lcm_lab.viz.dag import plot_dag
from lcm_lab.viz.detail import summary_detail_html, summary_detail_info
from lcm_lab.widgets._figure import figure_widget, full_width


class DagExplorer(widgets.VBox):
    """Pick a summary from the list or click its node: its content, sources, summarizer input and raw messages.

    ``DagExplorer(replay)`` or ``DagExplorer(load_lcm_db(...).conversation)``; extra keyword
    arguments go to :func:`lcm_lab.viz.plot_dag` (``color_by``, ``scores``, ``max_nodes``, ...).
    """

    def __init__(self, obj: DagInput, **plot_options: Any) -> None:
        self.source_obj = obj
        source = dag_source(obj)
        if not source.summaries:
            raise DataError(f"{source.label} has no summaries to explore")
        ordered = sorted(source.summaries, key=lambda s: (-s.depth, s.created_turn or 0))
        self.selector = widgets.Dropdown(
            options=[(f"{s.summary_id} · d{s.depth} {s.kind} · {s.token_count:,} tok", s.summary_id) for s in ordered],
            description="summary",
            layout=widgets.Layout(width="520px"),
        )
        self.figure = figure_widget(plot_dag(obj, **plot_options))
        self.detail = widgets.HTML()
        for trace in self.figure.data:
            if trace.customdata is not None:
                trace.on_click(self._on_click)
        self.selector.observe(self._show, names="value")
        super().__init__([self.figure, self.selector, self.detail], layout=full_width())
        self._show()

    def _on_click(self, trace: Any, points: Any, _state: Any) -> None:
        if points.point_inds:
            node_id = trace.customdata[points.point_inds[0]]
            if not str(node_id).startswith("bin:"):
                self.selector.value = node_id

    def _show(self, _change: Any = None) -> None:
        self.detail.value = summary_detail_html(summary_detail_info(self.source_obj, self.selector.value))
