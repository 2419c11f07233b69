"""Plots of a strategy comparison (:mod:`lcm_lab.strategies.compare`): each ``plot_x`` is
``_x_figure(_x_info(...))``; the info step is pure and tested without plotly.

* :func:`plot_quality_vs_tokens` — recall (with its 95% interval) against context tokens, one
  marker per strategy and budget, the floor and chance controls as open markers;
* :func:`plot_qa_by_category` — LoCoMo answer recall per question category;
* :func:`plot_fact_survival_by_age` — share of facts still shown, by age in turns;
* :func:`plot_tokens_per_turn` — context tokens at each turn's next call, and model calls.
"""

from __future__ import annotations

import html
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import plotly.graph_objects as go

from lcm_lab.errors import OptionError
from lcm_lab.metrics.base import age_bucket
from lcm_lab.metrics.locomo import QA_RECALL
from lcm_lab.viz._style import wrapped_title

_AGE_ORDER = [age_bucket(a) for a in (0, 1, 4, 16, 64, 256)]


def comparison_part(comparison: Any, part: str) -> Mapping[Any, Any]:
    """``comparison.runs`` or ``comparison.scores`` of a strategy comparison, or an
    :class:`~lcm_lab.errors.OptionError` saying what to pass when ``comparison`` is not one."""
    value = getattr(comparison, part, None)
    if not isinstance(value, Mapping):
        raise OptionError(f"expected a strategy Comparison (what lab.compare_strategies(...) returns), "
                          f"got {type(comparison).__name__}")
    return value


def _quality_info(comparison: Any, metric: str, input_name: str | None) -> list[dict[str, Any]]:
    points = []
    runs = comparison_part(comparison, "runs")
    for (name, budget, label), scores in comparison_part(comparison, "scores").items():
        if input_name is not None and name != input_name:
            continue
        run = {s.metric: s for s in scores if s.scope == "run"}
        score = run.get(metric)
        if score is None or score.details.get("raw") is None:
            continue
        d = score.details
        ci = d.get("raw_ci") or (None, None)
        tokens = runs[(name, budget, label)].sent().estimated_tokens  # what the model receives at the end
        points.append({"input": name, "budget": budget, "strategy": label, "tokens": tokens, "raw": d["raw"],
                       "ci_low": ci[0], "ci_high": ci[1], "floor": d["floor"], "chance": d["chance"], "ceiling": d["ceiling"]})  # fmt: skip
    return points


def _quality_figure(points: list[dict[str, Any]], metric: str) -> go.Figure:
    fig = go.Figure()
    for raw_label in dict.fromkeys(p["strategy"] for p in points):
        mine, label = [p for p in points if p["strategy"] == raw_label], html.escape(str(raw_label))
        fig.add_trace(go.Scatter(
            x=[p["tokens"] for p in mine], y=[p["raw"] for p in mine], mode="markers", name=label, marker={"size": 11},
            error_y={"type": "data", "symmetric": False, "array": [(p["ci_high"] or p["raw"]) - p["raw"] for p in mine],
                     "arrayminus": [p["raw"] - (p["ci_low"] or p["raw"]) for p in mine]},
            text=[f"budget {p['budget']:,}" for p in mine], hovertemplate="%{text}<br>%{x:,} tokens<br>%{y:.3f}<extra>" + label + "</extra>",
        ))  # fmt: skip
    controls = (("floor", "circle-open", "floor (truncation to the budget)"), ("chance", "x-thin-open", "chance (another conversation)"))
    for control, symbol, name in controls:
        fig.add_trace(go.Scatter(x=[p["tokens"] for p in points], y=[p[control] for p in points], mode="markers",
                                 name=name, marker={"symbol": symbol, "size": 8, "color": "grey"}))  # fmt: skip
    what = "QA answer recall" if metric == "qa_retention" else "fact recall"
    fig.update_layout(title=f"{what} vs context tokens (end-of-run call)", xaxis_title="tokens the model receives",
                      yaxis_title=what, yaxis_range=[0, 1.05], template="plotly_white")  # fmt: skip
    return fig


def plot_quality_vs_tokens(
    comparison: Any, metric: str = "qa_retention", input_name: str | None = None
) -> go.Figure:
    """Recall against context tokens for every strategy and budget (``metric``: qa_retention | fact_retention)."""
    return _quality_figure(_quality_info(comparison, metric, input_name), metric)


def _category_info(comparison: Any, budget: int | None) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = defaultdict(dict)
    for (_, b, label), scores in comparison_part(comparison, "scores").items():
        if budget is not None and b != budget:
            continue
        for s in scores:
            if s.scope == "category" and s.metric == QA_RECALL and s.value is not None:
                out[f"{label} @ {b:,}"][s.details.get("category_name", s.scope_id)] = s.value
    return dict(out)


def plot_qa_by_category(comparison: Any, budget: int | None = None) -> go.Figure:
    """LoCoMo answer recall per question category for each strategy (and budget)."""
    info = _category_info(comparison, budget)
    fig = go.Figure([go.Bar(name=html.escape(k), x=[html.escape(str(c)) for c in v], y=list(v.values())) for k, v in info.items()])
    fig.update_layout(
        barmode="group",
        title="LoCoMo answer recall by question category",
        yaxis_range=[0, 1],
        template="plotly_white",
    )
    return fig


def _age_info(comparison: Any, input_name: str | None, budget: int | None) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = defaultdict(dict)
    for (name, b, label), scores in comparison_part(comparison, "scores").items():
        if (input_name is not None and name != input_name) or (budget is not None and b != budget):
            continue
        for s in scores:
            if s.scope == "age" and s.metric == "fact_survival" and s.value is not None:
                out[f"{label} @ {b:,}"][s.scope_id] = s.value
    return {
        k: dict(sorted(v.items(), key=lambda kv: _AGE_ORDER.index(kv[0]) if kv[0] in _AGE_ORDER else 99))
        for k, v in out.items()
    }


def plot_fact_survival_by_age(
    comparison: Any, input_name: str | None = None, budget: int | None = None
) -> go.Figure:
    """Share of facts still shown at the end, by turns since their first mention."""
    info = _age_info(comparison, input_name, budget)
    fig = go.Figure(
        [go.Scatter(name=html.escape(k), x=list(v), y=list(v.values()), mode="lines+markers") for k, v in info.items()]
    )
    fig.update_layout(title="fact survival by age", xaxis_title="age (turns since first mention)", yaxis_title="share still shown",
                      yaxis_range=[0, 1.05], template="plotly_white")  # fmt: skip
    return fig


def _tokens_info(comparison: Any, input_name: str, budget: int) -> dict[str, dict[str, list[int]]]:
    out = {}
    for (name, b, label), run in comparison_part(comparison, "runs").items():
        if name == input_name and b == budget:
            out[label] = {"turn": [t.turn for t in run.turns], "tokens": [t.context_tokens for t in run.turns],
                          "calls": [len(t.calls) for t in run.turns]}  # fmt: skip
    return out


def plot_tokens_per_turn(comparison: Any, input_name: str, budget: int) -> go.Figure:
    """Context tokens at each turn's next call (lines) and model calls per turn (bars, right axis)."""
    info = _tokens_info(comparison, input_name, budget)
    fig = go.Figure()
    for raw_label, series in info.items():
        label = html.escape(str(raw_label))
        fig.add_trace(go.Scatter(x=series["turn"], y=series["tokens"], name=f"{label} tokens", mode="lines"))
        if any(series["calls"]):
            fig.add_trace(
                go.Bar(x=series["turn"], y=series["calls"], name=f"{label} calls", yaxis="y2", opacity=0.4)
            )
    fig.add_hline(y=budget, line_dash="dot", annotation_text="budget")
    title, top = wrapped_title(f"{input_name}: tokens and model calls per turn (budget {budget:,})")  # a file name
    fig.update_layout(title=title, margin={"t": top}, xaxis_title="turn",
                      yaxis_title="context tokens", yaxis2={"title": "model calls", "overlaying": "y", "side": "right"},
                      template="plotly_white")  # fmt: skip
    return fig
