"""``SummaryDiff``: two summaries of the same span side by side, changed words highlighted."""

from __future__ import annotations

import html
from collections.abc import Collection
from typing import Any

import ipywidgets as widgets

from lcm_lab.errors import DataError
from lcm_lab.viz._source import DagInput, dag_source
from lcm_lab.viz.diff import diff_html, match_summaries, summary_diff_info
from lcm_lab.widgets._figure import full_width


class SummaryDiff(widgets.VBox):
    """Compare two runs (e.g. two models or two prompt sets) summary by summary.

    ``SummaryDiff(replay_a, replay_b, labels=("gpt-4o-mini", "offline"))`` pairs each summary of
    the left run with the same-depth summary of the right run covering the most similar span.
    ``summary_ids`` keeps only those summaries of the left run (e.g. the ones a what-if edit
    rewrote: ``lab.whatif.rewrite(...).summary_diff()``).
    """

    def __init__(self, left: DagInput, right: DagInput, labels: tuple[str, str] = ("left", "right"),
                 summary_ids: Collection[str] | None = None) -> None:
        self.labels = labels
        self._left = {s.summary_id: s for s in dag_source(left).summaries}
        self._right = {s.summary_id: s for s in dag_source(right).summaries}
        pairs = match_summaries(left, right)
        if summary_ids is not None:
            wanted = set(summary_ids)
            # a rewritten summary keeps its id and span: pair it with itself
            pairs = tuple(p._replace(right_id=p.left_id, right_span=p.left_span, overlap=1.0) if p.left_id in self._right else p
                          for p in pairs if p.left_id in wanted)
        self.pairs = pairs
        if not self.pairs:
            raise DataError("the two runs have no summaries over overlapping message spans")
        self.selector = widgets.Dropdown(
            options=[
                (f"d{p.depth} msgs {p.left_span[0]}–{p.left_span[1]} ↔ {p.right_span[0]}–{p.right_span[1]}"
                 f" (overlap {p.overlap:.0%})", i)
                for i, p in enumerate(self.pairs)
            ],
            description="span",
            layout=widgets.Layout(width="520px"),
        )
        self.similarity = widgets.HTML()
        self.left_pane = widgets.HTML(layout=widgets.Layout(width="50%"))
        self.right_pane = widgets.HTML(layout=widgets.Layout(width="50%"))
        self.selector.observe(self._show, names="value")
        super().__init__([self.selector, self.similarity, widgets.HBox([self.left_pane, self.right_pane])], layout=full_width())
        self._show()

    def _show(self, _change: Any = None) -> None:
        pair = self.pairs[self.selector.value]
        info = summary_diff_info(self._left[pair.left_id], self._right[pair.right_id])
        self.similarity.value = f"word similarity {info.similarity:.0%}"
        self.left_pane.value = _pane(self.labels[0], info.left_title, diff_html(info.left))
        self.right_pane.value = _pane(self.labels[1], info.right_title, diff_html(info.right))


def _pane(label: str, title: str, body: str) -> str:
    return f"<b>{html.escape(label)}</b>: {html.escape(title)}<div style='white-space:pre-wrap'>{body}</div>"
