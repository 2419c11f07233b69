"""Recoverability per run: share of lost items recovered by grep → describe → expand, with controls.

``plot_recoverability(rows)`` takes ``RecoverabilityReport.summary()`` dicts (one per run, a
``label`` key optional) and draws the recovered share with its 95% interval, the ceiling and
the chance control, with tokens per item in the hover.

>>> info = recoverability_info([{"run_id": "a", "recovered_share": 0.5, "ceiling": 1.0, "chance": 0.1,
...     "ci_low": 0.4, "ci_high": 0.6, "lost": 10, "attempted": 10, "tokens_per_item": 900.0, "calls_per_item": 2.0}])
>>> info.labels, info.recovered, info.errors_low
(['a'], [0.5], [0.1])
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from lcm_lab.errors import DataError

if TYPE_CHECKING:
    import plotly.graph_objects as go


class RecoverabilityInfo(NamedTuple):
    labels: list[str]
    recovered: list[float | None]
    errors_low: list[float]
    errors_high: list[float]
    ceiling: list[float | None]
    chance: list[float | None]
    hover: list[str]


def recoverability_info(rows: Sequence[Mapping[str, Any]]) -> RecoverabilityInfo:
    """Raw shares (the interval is mapped back from the normalised scale: raw = floor 0 + v × ceiling).

    Each row is a mapping (e.g. ``RecoverabilityReport.summary()``) naming its run by ``label`` or
    ``run_id``; ``recovered_share``, ``ceiling``, ``chance`` and ``ci_low``/``ci_high`` are
    drawn when present.
    """
    labels, recovered, low, high, ceiling, chance, hover = [], [], [], [], [], [], []
    for i, row in enumerate(rows):
        if not isinstance(row, Mapping) or not (row.get("label") or row.get("run_id")):
            raise DataError(f"recoverability row {i}: expected a mapping with a 'run_id' or 'label' naming its run "
                            f"(and its 'recovered_share', 'ceiling', 'chance'), got {_shown(row)}")
        share, top = row.get("recovered_share"), row.get("ceiling")
        labels.append(str(row.get("label") or row["run_id"]))
        recovered.append(share)
        ceiling.append(top)
        chance.append(row.get("chance"))
        lo, hi = row.get("ci_low"), row.get("ci_high")
        if share is None or top is None or lo is None or hi is None:
            low.append(0.0)
            high.append(0.0)
        else:
            low.append(round(max(0.0, share - lo * top), 6))
            high.append(round(max(0.0, hi * top - share), 6))
        hover.append(
            f"lost {row.get('lost')} (attempted {row.get('attempted')})<br>"
            f"tokens/item {row.get('tokens_per_item') or 0:.0f}, calls/item {row.get('calls_per_item') or 0:.2f}"
        )
    return RecoverabilityInfo(labels, recovered, low, high, ceiling, chance, hover)


def _shown(row: object) -> str:
    text = repr(row)
    return text if len(text) <= 80 else f"{text[:77]}..."


def _recoverability_figure(info: RecoverabilityInfo) -> go.Figure:
    import plotly.graph_objects as go

    labels = [html.escape(label) for label in info.labels]  # run labels from the caller or the store
    fig = go.Figure()
    fig.add_bar(x=labels, y=info.recovered, name="recovered (grep → describe → expand)", hovertext=info.hover,
                error_y={"type": "data", "symmetric": False, "array": info.errors_high, "arrayminus": info.errors_low})  # fmt: skip
    fig.add_scatter(x=labels, y=info.ceiling, mode="markers", name="ceiling (in the raw history)", marker_symbol="line-ew-open", marker_size=24)  # fmt: skip
    fig.add_scatter(x=labels, y=info.chance, mode="markers", name="chance (random summaries)", marker_symbol="x")
    fig.update_layout(title="Recoverability of lost facts and answers", yaxis_title="share of lost items", yaxis_range=[0, 1.05])
    return fig


def plot_recoverability(rows: Sequence[Mapping[str, Any]]) -> go.Figure:
    """Bar chart of recoverability per run (see module docstring)."""
    return _recoverability_figure(recoverability_info(rows))
