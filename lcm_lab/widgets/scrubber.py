"""``ReplayScrubber``: a turn slider (with play button) that grows the DAG and moves along the budget."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import ipywidgets as widgets

from lcm_lab.errors import DataError
from lcm_lab.strategies.base import lcm_replay
from lcm_lab.viz.budget import plot_budget_timeline
from lcm_lab.viz.context import plot_context_at, turn_caption
from lcm_lab.viz.dag import plot_dag
from lcm_lab.widgets._figure import figure_widget, full_width, replace_figure

if TYPE_CHECKING:
    from lcm_lab.engine.replay.driver import Replay
    from lcm_lab.strategies.base import StrategyRun


class ReplayScrubber(widgets.VBox):
    """Scrub or play through a replay's turns: DAG so far, budget timeline marker, what the model received.

    The context panel shows what the engine sent the model at the start of the chosen turn
    (``context_source="sent"``, the default); ``"bare"`` or ``"stored"`` switch to diagnostics.
    """

    def __init__(
        self, replay: Replay | StrategyRun, interval_ms: int = 400, context_source: Literal["sent", "bare", "stored"] = "sent"
    ) -> None:
        replay = lcm_replay(replay, "the replay scrubber")
        if not replay.turns:
            raise DataError("the replay has no turns to scrub through")
        self.replay = replay
        self.context_source = context_source
        last = len(replay.turns) - 1
        self.slider = widgets.IntSlider(value=last, min=0, max=last, description="turn", continuous_update=False,
                                        layout=widgets.Layout(width="600px"))
        self.play = widgets.Play(value=last, min=0, max=last, interval=interval_ms)
        self._link = widgets.jslink((self.play, "value"), (self.slider, "value"))
        self.caption = widgets.HTML()
        self.dag = figure_widget(plot_dag(replay, until_turn=last))
        self.budget = figure_widget(plot_budget_timeline(replay, marker_turn=replay.turns[last].turn))
        self.context = figure_widget(plot_context_at(replay, last, source=context_source))
        self.slider.observe(self._update, names="value")
        super().__init__([widgets.HBox([self.play, self.slider]), self.caption, self.budget, self.dag, self.context], layout=full_width())
        self._update()

    def _update(self, _change: Any = None) -> None:
        index = self.slider.value
        turn = self.replay.turns[index].turn
        self.caption.value = turn_caption(self.replay, index)
        replace_figure(self.dag, plot_dag(self.replay, until_turn=turn))
        with self.budget.batch_update():
            self.budget.layout.shapes[0].x0 = turn
            self.budget.layout.shapes[0].x1 = turn
        replace_figure(self.context, plot_context_at(self.replay, index, source=self.context_source))
