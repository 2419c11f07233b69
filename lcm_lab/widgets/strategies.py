"""``StrategyComparison``: pick an input, a budget and a score; the comparison plots follow."""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets

from lcm_lab.errors import DataError
from lcm_lab.viz.strategies import comparison_part, plot_quality_vs_tokens, plot_tokens_per_turn
from lcm_lab.widgets._figure import figure_widget, full_width, replace_figure


class StrategyComparison(widgets.VBox):
    """Controls over a :class:`~lcm_lab.strategies.compare.Comparison` (no logic of its own)."""

    def __init__(self, comparison: Any) -> None:
        self.comparison = comparison
        keys = list(comparison_part(comparison, "runs"))
        if not keys:
            raise DataError("StrategyComparison needs a comparison with at least one run (every strategy was skipped?)")
        inputs = list(dict.fromkeys(k[0] for k in keys))
        budgets = sorted({k[1] for k in keys})
        self.input = widgets.Dropdown(options=inputs, value=inputs[0], description="input")
        self.budget = widgets.Dropdown(options=budgets, value=budgets[0], description="budget")
        self.metric = widgets.Dropdown(options=[("QA answer recall", "qa_retention"), ("fact recall", "fact_retention")],
                                       value="fact_retention", description="score")  # fmt: skip
        self.quality = figure_widget(self._quality())
        self.tokens = figure_widget(self._tokens())
        for control in (self.input, self.budget, self.metric):
            control.observe(self._update, names="value")
        super().__init__([widgets.HBox([self.input, self.budget, self.metric]), self.quality, self.tokens], layout=full_width())

    def _quality(self) -> Any:
        return plot_quality_vs_tokens(self.comparison, self.metric.value, self.input.value)

    def _tokens(self) -> Any:
        return plot_tokens_per_turn(self.comparison, self.input.value, self.budget.value)

    def _update(self, _change: Any = None) -> None:
        replace_figure(self.quality, self._quality())
        replace_figure(self.tokens, self._tokens())
