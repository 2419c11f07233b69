"""``CostExplorer``: pick a priced setting → its per-call token plot and "what broke the cache" table."""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

import ipywidgets as widgets

from lcm_lab.errors import DataError
from lcm_lab.viz.cost import cache_breaks, plot_cost_breakdown
from lcm_lab.widgets._figure import figure_widget, full_width, replace_figure


def _breaks_html(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "<p>Nothing broke the cache.</p>"
    body = "".join(
        f"<tr><td>{html.escape(r['reason'])}</td><td>{r['calls']:,}</td><td>{r['lost_tokens']:,}</td><td>${r['extra_usd']:.2f}</td></tr>"
        for r in rows
    )
    return f"<table><tr><th>what broke the cache</th><th>calls</th><th>tokens sent again</th><th>extra $</th></tr>{body}</table>"


class CostExplorer(widgets.VBox):
    """Choose one of several priced sessions (``label -> SessionCost``) and see where its money goes.

    ``CostExplorer({"LCM 32k": cost_a, "recorded host": cost_b})``; ``self.selected`` is the label
    shown; the summary line, the plot and the table follow the dropdown.
    """

    def __init__(self, costs: Mapping[str, Any]) -> None:
        if not costs:
            raise DataError("CostExplorer needs at least one priced session")
        self.costs = dict(costs)
        self.pick = widgets.Dropdown(options=list(self.costs), description="setting", style={"description_width": "60px"},
                                     layout=widgets.Layout(width="420px"))
        self.summary = widgets.HTML()
        self.table = widgets.HTML()
        self.figure = figure_widget(plot_cost_breakdown(self.costs[self.pick.value]))
        self.pick.observe(self._show, names="value")
        self._show()
        super().__init__([self.pick, self.summary, self.figure, self.table], layout=full_width())

    @property
    def selected(self) -> str:
        return str(self.pick.value)

    def _show(self, _change: Any = None) -> None:
        cost = self.costs[self.selected]
        t = cost.totals()
        rate = "–" if t["cache_hit_rate"] is None else f"{t['cache_hit_rate']:.1%}"
        expected = ("" if t["expected_usd"] is None else
                    f"expected ${t['expected_usd']:.2f} (90% of simulated cache-miss histories: ${t['expected_usd_p05']:.2f} .. "
                    f"${t['expected_usd_p95']:.2f}); ")  # fmt: skip
        self.summary.value = html.escape(
            f"{t['calls']:,} calls, {expected}rules' point ${t['total_usd']:.2f} (main ${t['main_usd']:.2f} on {t['main_model']}, "
            f"summarizer ${t['summarizer_usd']:.2f}), cache hit rate {rate}"
        )
        self.table.value = _breaks_html(cache_breaks(cost))
        replace_figure(self.figure, plot_cost_breakdown(cost, title=f"{self.selected}: prompt tokens per call"))
