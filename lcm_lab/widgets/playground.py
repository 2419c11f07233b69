"""``ParameterPlayground``: sliders for the main compaction knobs → instant re-replay → plots update."""

from __future__ import annotations

import html
import time
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import ipywidgets as widgets

from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.replay.driver import replay as run_replay
from lcm_lab.engine.types import Conversation
from lcm_lab.errors import OptionError
from lcm_lab.viz.budget import plot_budget_timeline
from lcm_lab.viz.counts import replay_stats, stats_line
from lcm_lab.viz.dag import plot_dag
from lcm_lab.widgets._figure import figure_widget, full_width, replace_figure


class Knob(NamedTuple):
    field: str  # LcmConfig field, or "token_budget"
    label: str
    kind: type
    low: float
    high: float
    step: float
    choices: tuple[int, ...] = ()  # token sizes: a slider over these (about evenly spaced in log), not every step


# Token sizes span two orders of magnitude: a linear slider moves them by tens of thousands per
# pixel, so they step through sizes a user would pick (the starting value is added when missing).
BUDGETS = (1_000, 2_000, 3_000, 4_000, 6_000, 8_000, 12_000, 16_000, 24_000, 32_000, 48_000, 64_000, 100_000, 128_000,
           200_000, 256_000)
CHUNKS = (250, 500, 1_000, 2_000, 3_000, 4_000, 6_000, 8_000, 12_000, 16_000, 20_000, 30_000, 40_000)
KNOBS: tuple[Knob, ...] = (
    Knob("context_threshold", "threshold", float, 0.2, 0.95, 0.05),
    Knob("fresh_tail_count", "fresh tail", int, 0, 128, 1),
    Knob("leaf_chunk_tokens", "leaf chunk", int, 250, 40_000, 250, CHUNKS),
    Knob("leaf_min_fanout", "leaf fanout", int, 2, 16, 1),
    Knob("condensed_min_fanout", "cond. fanout", int, 2, 12, 1),
    Knob("sweep_max_depth", "depth cap", int, -1, 8, 1),
    Knob("token_budget", "budget", int, 1_000, 256_000, 500, BUDGETS),
)
HELP = ("<b>depth cap</b> is the plugin's incremental depth (<code>incrementalMaxDepth</code>): after each leaf pass "
        "condensation stops at that depth (−1: no cap), but a sweep still over its target condenses deeper, so the DAG "
        "can be deeper than the cap. <b>threshold</b>: share of the budget at which compaction starts; <b>fresh tail</b>: "
        "newest messages never summarised; <b>fanout</b>: summaries needed before they are condensed. All terms: "
        "docs/glossary.md.")


def _slider(k: Knob, start: Any) -> widgets.ValueWidget:
    style = {"description_width": "90px"}
    if k.choices:
        options = sorted({*k.choices, int(start)})
        return widgets.SelectionSlider(options=[(f"{v:,}", v) for v in options], value=int(start), description=k.label,
                                       continuous_update=False, style=style)
    cls = widgets.FloatSlider if k.kind is float else widgets.IntSlider
    return cls(value=min(max(start, k.low), k.high), min=k.low, max=k.high, step=k.step, description=k.label,
               continuous_update=False, style=style)


class ParameterPlayground(widgets.VBox):
    """Move a slider and the conversation is replayed with the new setting (offline summarizer by default).

    ``ParameterPlayground(conversation, config=LcmConfig(...), token_budget=8000)``; pass a mapping
    ``{name: conversation}`` (or a list) to pick the conversation from a menu. Each replay is kept in
    ``self.replay``; ``self.history`` records (settings, summary stats, seconds for the replay and
    for the whole redraw).
    """

    def __init__(self, conversation: Conversation | Mapping[str, Conversation] | Sequence[Conversation],
                 config: LcmConfig | None = None, token_budget: int = 32_000, summarizer: Any = None) -> None:
        if summarizer is None:
            from lcm_lab.summarizers import get_summarizer

            summarizer = get_summarizer("offline")
        choices = _conversation_choices(conversation)
        self.conversations = choices
        self.conversation = next(iter(choices.values()))
        self.summarizer = summarizer
        self.base_config = config or LcmConfig()
        self.history: list[dict[str, Any]] = []
        start = {k.field: (token_budget if k.field == "token_budget" else getattr(self.base_config, k.field)) for k in KNOBS}
        self.sliders: dict[str, widgets.ValueWidget] = {}
        for k in KNOBS:
            self.sliders[k.field] = _slider(k, start[k.field])
            self.sliders[k.field].observe(self._rerun, names="value")
        self.picker = widgets.Dropdown(options=list(choices), description="conversation", style={"description_width": "90px"},
                                       layout=widgets.Layout(width="520px", display="" if len(choices) > 1 else "none"))
        self.picker.observe(self._pick, names="value")
        self.stats = widgets.HTML()
        self._rerun()
        self.dag = figure_widget(plot_dag(self.replay))
        self.budget = figure_widget(plot_budget_timeline(self.replay))
        controls = widgets.GridBox(list(self.sliders.values()),
                                   layout=widgets.Layout(grid_template_columns="repeat(2, minmax(320px, 1fr))", width="100%"))
        super().__init__([self.picker, controls, widgets.HTML(f"<small>{HELP}</small>"), self.stats, self.budget, self.dag],
                         layout=full_width())

    def settings(self) -> dict[str, Any]:
        """Current slider values by ``LcmConfig`` field name (plus ``token_budget``)."""
        return {name: slider.value for name, slider in self.sliders.items()}

    def _pick(self, _change: Any = None) -> None:
        self.conversation = self.conversations[self.picker.value]
        self._rerun()

    def _rerun(self, _change: Any = None) -> None:
        values = self.settings()
        budget = int(values.pop("token_budget"))
        config = self.base_config.replace(**values)
        started = time.perf_counter()
        self.replay = run_replay(self.conversation, config, self.summarizer, token_budget=budget)
        seconds = time.perf_counter() - started
        stats = replay_stats(self.replay)
        if hasattr(self, "dag"):
            replace_figure(self.dag, plot_dag(self.replay))
            replace_figure(self.budget, plot_budget_timeline(self.replay))
        total = time.perf_counter() - started
        self.history.append({**values, "token_budget": budget, "conversation": self.picker.value, "summaries": stats.summaries,
                             "max_depth": stats.max_depth, "final_tokens": stats.final_tokens, "seconds": round(seconds, 3),
                             "redraw_seconds": round(total, 3)})
        self.stats.value = (f"{html.escape(stats_line(stats))} · replayed in {seconds:.2f} s with {html.escape(self.replay.summarizer)}"
                            f" (DAG depth {stats.max_depth}; depth cap {config.sweep_max_depth})")


def _conversation_choices(conversation: Any) -> dict[str, Conversation]:
    if isinstance(conversation, Mapping):
        choices = {str(k): v for k, v in conversation.items()}
    elif isinstance(conversation, Sequence):
        choices = {}
        for i, c in enumerate(conversation):
            name = getattr(c, "title", None) or f"conversation {i + 1}"
            choices[name if name not in choices else f"{name} ({i + 1})"] = c
    else:
        choices = {getattr(conversation, "title", None) or "conversation": conversation}
    if not choices:
        raise OptionError("ParameterPlayground needs at least one conversation")
    return choices
