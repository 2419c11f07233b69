"""``ParameterPlayground``: sliders for the main compaction knobs → instant re-replay → plots update."""

from __future__ import annotations

import html
import time
from typing import Any, NamedTuple

import ipywidgets as widgets

from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.replay.driver import replay as run_replay
from lcm_lab.engine.types import Conversation
from lcm_lab.viz.budget import plot_budget_timeline
from lcm_lab.viz.counts import replay_stats, stats_line
from lcm_lab.viz.dag import plot_dag
from lcm_lab.widgets._figure import figure_widget, replace_figure


class Knob(NamedTuple):
    field: str  # LcmConfig field, or "token_budget"
    label: str
    kind: type
    low: float
    high: float
    step: float


KNOBS: tuple[Knob, ...] = (
    Knob("context_threshold", "threshold", float, 0.2, 0.95, 0.05),
    Knob("fresh_tail_count", "fresh tail", int, 0, 128, 1),
    Knob("leaf_chunk_tokens", "leaf chunk", int, 250, 40_000, 250),
    Knob("leaf_min_fanout", "leaf fanout", int, 2, 16, 1),
    Knob("condensed_min_fanout", "cond. fanout", int, 2, 12, 1),
    Knob("sweep_max_depth", "depth cap", int, -1, 8, 1),
    Knob("token_budget", "budget", int, 1_000, 256_000, 500),
)


class ParameterPlayground(widgets.VBox):
    """Move a slider and the conversation is replayed with the new setting (offline summarizer by default).

    ``ParameterPlayground(conversation, config=LcmConfig(...), token_budget=8000)``. Each replay
    is kept in ``self.replay``; ``self.history`` records (settings, summary stats, seconds).
    """

    def __init__(self, conversation: Conversation, config: LcmConfig | None = None, token_budget: int = 32_000,
                 summarizer: Any = None) -> None:
        if summarizer is None:
            from lcm_lab.summarizers import get_summarizer

            summarizer = get_summarizer("offline")
        self.conversation = conversation
        self.summarizer = summarizer
        self.base_config = config or LcmConfig()
        self.history: list[dict[str, Any]] = []
        start = {k.field: (token_budget if k.field == "token_budget" else getattr(self.base_config, k.field)) for k in KNOBS}
        self.sliders: dict[str, widgets.ValueWidget] = {}
        for k in KNOBS:
            cls = widgets.FloatSlider if k.kind is float else widgets.IntSlider
            value = min(max(start[k.field], k.low), k.high)
            self.sliders[k.field] = cls(value=value, min=k.low, max=k.high, step=k.step, description=k.label,
                                        continuous_update=False, style={"description_width": "90px"})
            self.sliders[k.field].observe(self._rerun, names="value")
        self.stats = widgets.HTML()
        self._rerun()
        self.dag = figure_widget(plot_dag(self.replay))
        self.budget = figure_widget(plot_budget_timeline(self.replay))
        controls = widgets.GridBox(list(self.sliders.values()),
                                   layout=widgets.Layout(grid_template_columns="repeat(2, 420px)"))
        super().__init__([controls, self.stats, self.budget, self.dag])

    def settings(self) -> dict[str, Any]:
        """Current slider values by ``LcmConfig`` field name (plus ``token_budget``)."""
        return {name: slider.value for name, slider in self.sliders.items()}

    def _rerun(self, _change: Any = None) -> None:
        values = self.settings()
        budget = int(values.pop("token_budget"))
        config = self.base_config.replace(**values)
        started = time.perf_counter()
        self.replay = run_replay(self.conversation, config, self.summarizer, token_budget=budget)
        seconds = time.perf_counter() - started
        stats = replay_stats(self.replay)
        self.history.append({**values, "token_budget": budget, "summaries": stats.summaries,
                             "max_depth": stats.max_depth, "final_tokens": stats.final_tokens, "seconds": seconds})
        self.stats.value = f"{html.escape(stats_line(stats))} · replayed in {seconds:.2f} s with {html.escape(self.replay.summarizer)}"
        if hasattr(self, "dag"):
            replace_figure(self.dag, plot_dag(self.replay))
            replace_figure(self.budget, plot_budget_timeline(self.replay))
