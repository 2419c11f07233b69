"""Quality plots over plain tables (pandas DataFrames), e.g. ``scores_df()`` or a sweep's results.

Each plot names the columns it reads (overridable by keyword) and raises a clear error when one
is missing. Intervals: proportions use the Wilson score interval, means a seeded bootstrap of the
mean (percentile), both at 95 % by default and both from :mod:`lcm_lab.metrics.stats` (a mean of
fewer than two values has no interval).

Run names, metric and column names, categories and titles come from the data or the caller, and
plotly renders tags in every text it shows: the figure steps HTML-escape each of them (titles
through :func:`~lcm_lab.viz._style.wrapped_title`), as they do hover text.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from lcm_lab.errors import DataError
from lcm_lab.metrics.stats import bootstrap_interval, pareto_mask, wilson_interval
from lcm_lab.viz._style import run_colors, wrapped_title

if TYPE_CHECKING:
    import pandas as pd
    import plotly.graph_objects as go


def _require(df: pd.DataFrame, columns: Sequence[str | None], plot: str) -> None:
    missing = [c for c in columns if c is not None and c not in df.columns]
    if missing:
        raise DataError(f"{plot}: missing column(s) {missing}; the table has {list(df.columns)}")


def mean_interval(values: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    """The percentile bootstrap interval of the mean: :func:`lcm_lab.metrics.stats.bootstrap_interval`.

    Undefined (NaNs) below two values; values that all agree give a zero-width interval (no
    spread to resample). A missing (None, NaN) or infinite value is refused with a
    :class:`~lcm_lab.errors.DataError` instead of being left out unseen: drop missing values
    first (``series.dropna()``), so that the count the interval rests on is the one you chose.

    >>> mean_interval([0.5, 0.5, 0.5])
    (0.5, 0.5)
    """
    arr = np.asarray(values, dtype=float)
    if bad := int(arr.size - np.isfinite(arr).sum()):
        missing = int(np.isnan(arr).sum())
        raise DataError(f"an interval of the mean needs finite numbers, and {bad} of the {arr.size} values are not "
                        f"({missing} missing, NaN or None; {bad - missing} infinite); drop or fix them first, e.g. series.dropna()")
    return bootstrap_interval(values, confidence=level)


def _details(value: Any) -> dict[str, Any]:
    """A score's ``details``: a dict (``Score`` values) or JSON text (``scores_df()`` from the store)."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str) and value:
        try:
            parsed = json.loads(value)
        except ValueError:
            return {}
        return parsed if isinstance(parsed, dict) else {}
    return {}


def _runs(df: pd.DataFrame, run: str | None) -> list[Any]:
    return list(dict.fromkeys(df[run])) if run is not None and run in df.columns else [None]


def _subset(df: pd.DataFrame, run: str | None, value: Any) -> pd.DataFrame:
    return df if value is None else df[df[run] == value]


def _label(value: Any) -> str:
    return "all" if value is None else str(value)


# -- metric by depth ---------------------------------------------------------------------------


class GroupValues(NamedTuple):
    run: str
    key: str
    values: tuple[float, ...]
    mean: float
    low: float
    high: float


class MetricByDepthInfo(NamedTuple):
    groups: tuple[GroupValues, ...]
    metric: str


def metric_by_depth_info(
    df: pd.DataFrame, metric: str | None = None, depth: str = "depth", value: str = "value", run: str | None = "run_id"
) -> MetricByDepthInfo:
    """Per-summary values grouped by depth (and run). ``metric`` filters a long ``metric`` column.

    A ``scores_df()`` frame works as is: summary-scope rows carry their depth in ``details``.
    """
    if depth not in df.columns and "details" in df.columns:
        df = df.assign(**{depth: df["details"].map(lambda d: _details(d).get("depth"))})
    _require(df, [depth, value], "metric by depth")
    if metric is not None:
        _require(df, ["metric"], "metric by depth")
        df = df[df["metric"] == metric]
    groups = []
    for r in _runs(df, run):
        sub = _subset(df, run, r)
        for d in sorted(sub[depth].dropna().unique()):
            values = tuple(float(v) for v in sub.loc[sub[depth] == d, value].dropna())
            if values:
                low, high = mean_interval(values)
                groups.append(GroupValues(_label(r), f"depth {int(d)}", values, sum(values) / len(values), low, high))
    return MetricByDepthInfo(tuple(groups), metric or value)


def _metric_by_depth_figure(info: MetricByDepthInfo) -> go.Figure:
    import plotly.graph_objects as go

    fig = go.Figure()
    for r in dict.fromkeys(g.run for g in info.groups):
        groups = [g for g in info.groups if g.run == r]
        fig.add_trace(
            go.Box(x=[g.key for g in groups for _ in g.values], y=[v for g in groups for v in g.values], name=html.escape(r),
                   boxmean=True, boxpoints="outliers")
        )
    title, top = wrapped_title(f"{info.metric} by summary depth")
    fig.update_layout(title={"text": title}, boxmode="group", template="plotly_white", margin={"t": top},
                      yaxis={"title": {"text": html.escape(str(info.metric))}}, xaxis={"title": {"text": "depth"}})
    return fig


def plot_metric_by_depth(df: pd.DataFrame, metric: str | None = None, **columns: Any) -> go.Figure:
    """Box plot of a per-summary metric by depth; one box per run (column ``run_id``)."""
    return _metric_by_depth_figure(metric_by_depth_info(df, metric, **columns))


# -- proportions (fact survival by age, QA retention by category) --------------------------------


class RateRow(NamedTuple):
    run: str
    key: str
    order: float
    n: int
    rate: float
    low: float
    high: float


class RateInfo(NamedTuple):
    rows: tuple[RateRow, ...]
    x_title: str
    y_title: str
    title: str


def _rates(df: pd.DataFrame, key: str, outcome: str, run: str | None, order: dict[Any, float] | None) -> list[RateRow]:
    rows = []
    for r in _runs(df, run):
        sub = _subset(df, run, r)
        for k, group in sub.groupby(key, sort=False, observed=True):
            values = group[outcome].dropna().astype(float)
            n = int(values.size)
            if n == 0:
                continue
            successes = float(values.sum())
            low, high = wilson_interval(successes, n)
            rows.append(RateRow(_label(r), str(k), (order or {}).get(k, 0.0), n, successes / n, low, high))
    return sorted(rows, key=lambda row: (row.run, row.order, row.key))


SCORE_COLUMNS = frozenset({"run_id", "scope", "scope_id", "metric", "value"})


def _is_scores(df: pd.DataFrame) -> bool:
    return SCORE_COLUMNS <= set(df.columns)


def _rates_from_scores(df: pd.DataFrame, scope: str, metric: str, run: str | None) -> list[RateRow]:
    """Rate rows from pre-aggregated scores (value = rate, ``details["n"]`` = items, when given)."""
    frame = df[(df["scope"] == scope) & (df["metric"] == metric)].dropna(subset=["value"])
    if frame.empty:
        raise DataError(f"no {scope!r}-scope {metric!r} scores in the table (metrics: {sorted(set(df['metric']))[:12]} …)")
    rows = []
    for i, rec in enumerate(frame.itertuples(index=False)):
        n = int(_details(getattr(rec, "details", None)).get("n", 0) or 0)
        rate = float(rec.value)
        low, high = wilson_interval(rate * n, n) if n else (math.nan, math.nan)
        label = getattr(rec, run) if run is not None and run in frame.columns else None
        rows.append(RateRow(_label(label), str(rec.scope_id), float(i), n, rate, low, high))
    return sorted(rows, key=lambda row: (row.run, row.order))


def score_map(df: pd.DataFrame, metric: str, run_id: str | None = None, scope: str = "summary") -> dict[str, float]:
    """``{scope_id: value}`` of one metric from a ``scores_df()`` frame (e.g. to colour the DAG)."""
    _require(df, ["scope", "scope_id", "metric", "value"], "score map")
    frame = df[(df["scope"] == scope) & (df["metric"] == metric)]
    if run_id is not None:
        frame = frame[frame["run_id"] == run_id]
    return {str(k): float(v) for k, v in zip(frame["scope_id"], frame["value"], strict=True) if v is not None and not math.isnan(v)}


def fact_survival_info(
    df: pd.DataFrame, age: str = "age", survived: str = "survived", run: str | None = "run_id",
    bins: Sequence[int] = (0, 1, 4, 16, 64, 256),
) -> RateInfo:
    """Share of facts still recoverable, by age (turns since the fact was said) in log bins.

    Takes one row per (fact, check) with ``age`` and ``survived``, or a ``scores_df()`` frame
    (its ``age``-scope ``fact_retention`` rows, already binned, with ``n`` in ``details``).
    """
    if _is_scores(df) and age not in df.columns:
        rows = _rates_from_scores(df, "age", "fact_retention", run)
        return RateInfo(tuple(rows), "age (turns)", "facts surviving", "Fact survival by age")
    _require(df, [age, survived], "fact survival")
    import pandas as pd

    edges = sorted(set(bins))
    labels = [f"{a}–{b - 1}" if b - a > 1 else f"{a}" for a, b in zip(edges, edges[1:], strict=False)] + [f"{edges[-1]}+"]
    bucket = pd.cut(df[age], bins=[*edges, math.inf], right=False, labels=labels)
    frame = df.assign(_age_bucket=bucket.astype(str))
    frame = frame[bucket.notna()]
    rows = _rates(frame, "_age_bucket", survived, run, {label: i for i, label in enumerate(labels)})
    return RateInfo(tuple(rows), f"{age} (binned)", "facts surviving", "Fact survival by age")


def qa_retention_info(
    df: pd.DataFrame, category: str = "category", correct: str = "correct", run: str | None = "run_id",
    metric: str = "qa_retention",
) -> RateInfo:
    """Share of QA items answerable from the context, by question category.

    Takes one row per QA item, or a ``scores_df()`` frame (``category``-scope rows of ``metric``).
    """
    if _is_scores(df) and category not in df.columns:
        rows = _rates_from_scores(df, "category", metric, run)
        return RateInfo(tuple(rows), "category", metric, "QA retention by category")
    _require(df, [category, correct], "QA retention")
    rows = _rates(df, category, correct, run, None)
    return RateInfo(tuple(rows), category, "answerable", "QA retention by category")


def _rate_bars(info: RateInfo) -> go.Figure:
    import plotly.graph_objects as go

    fig = go.Figure()
    for r in dict.fromkeys(row.run for row in info.rows):
        rows = [row for row in info.rows if row.run == r]
        fig.add_trace(
            go.Bar(
                x=[html.escape(row.key) for row in rows], y=[row.rate for row in rows], name=html.escape(r),
                error_y={"type": "data", "symmetric": False,
                         "array": [0 if math.isnan(row.high) else row.high - row.rate for row in rows],
                         "arrayminus": [0 if math.isnan(row.low) else row.rate - row.low for row in rows]},
                customdata=[row.n for row in rows],
                hovertemplate="%{x}: %{y:.1%} (n=%{customdata})<extra>" + html.escape(r) + "</extra>",
            )
        )
    title, top = wrapped_title(info.title)
    fig.update_layout(title={"text": title}, barmode="group", template="plotly_white", margin={"t": top},
                      yaxis={"title": {"text": html.escape(info.y_title)}, "range": [0, 1.05], "tickformat": ".0%"},
                      xaxis={"title": {"text": html.escape(info.x_title)}, "type": "category"})
    return fig


def plot_fact_survival(df: pd.DataFrame, **columns: Any) -> go.Figure:
    """Bars of fact survival rate (Wilson 95 % intervals) by age bin, one colour per run."""
    return _rate_bars(fact_survival_info(df, **columns))


def plot_qa_retention(df: pd.DataFrame, **columns: Any) -> go.Figure:
    """Bars of QA retention (Wilson 95 % intervals) by category, one colour per run."""
    return _rate_bars(qa_retention_info(df, **columns))


# -- comparison of runs ------------------------------------------------------------------------


class ComparisonInfo(NamedTuple):
    metrics: tuple[str, ...]
    runs: tuple[str, ...]
    rows: tuple[GroupValues, ...]  # run, metric (as key), samples, mean, low, high


def run_comparison_info(
    df: pd.DataFrame, run: str = "run_id", metric: str = "metric", value: str = "value",
    low: str | None = None, high: str | None = None, metrics: Sequence[str] | None = None,
) -> ComparisonInfo:
    """Mean and interval of each metric per run: given (``low``/``high`` columns) or bootstrapped."""
    _require(df, [run, metric, value, low, high], "run comparison")
    if metrics is not None:
        df = df[df[metric].isin(list(metrics))]
    rows = []
    for (r, m), group in df.groupby([run, metric], sort=False):
        values = tuple(float(v) for v in group[value].dropna())
        if not values:
            continue
        centre = sum(values) / len(values)
        if low is not None and high is not None:
            lo, hi = float(group[low].iloc[0]), float(group[high].iloc[0])
        else:
            lo, hi = mean_interval(values)
        rows.append(GroupValues(str(r), str(m), values, centre, lo, hi))
    return ComparisonInfo(
        metrics=tuple(dict.fromkeys(row.key for row in rows)),
        runs=tuple(dict.fromkeys(row.run for row in rows)),
        rows=tuple(rows),
    )


def _comparison_figure(info: ComparisonInfo, title: str | None = None) -> go.Figure:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    # Run names go in one legend (not as rotated tick labels that run into the subplot titles).
    cols = 2 if len(info.metrics) > 1 else 1
    rows_n = max(1, math.ceil(len(info.metrics) / cols))
    fig = make_subplots(rows=rows_n, cols=cols, subplot_titles=[html.escape(m) for m in info.metrics],
                        vertical_spacing=min(0.25, 0.6 / rows_n))
    palette = run_colors(row.run for row in info.rows)
    shown: set[str] = set()
    for i, m in enumerate(info.metrics):
        for row in (r for r in info.rows if r.key == m):
            run = html.escape(row.run)
            fig.add_trace(
                go.Bar(
                    x=[run], y=[row.mean], name=run, legendgroup=run, showlegend=row.run not in shown,
                    marker_color=palette[row.run],
                    error_y={"type": "data", "symmetric": False,
                             "array": [0 if math.isnan(row.high) else row.high - row.mean],
                             "arrayminus": [0 if math.isnan(row.low) else row.mean - row.low]},
                    customdata=[len(row.values)],
                    hovertemplate="%{x}: %{y:.4g} (n=%{customdata})<extra>" + html.escape(m) + "</extra>",
                ),
                row=i // cols + 1, col=i % cols + 1,
            )
            shown.add(row.run)
    fig.update_xaxes(showticklabels=False)
    has_intervals = any(row.high > row.low for row in info.rows)
    text, top = wrapped_title(title or "Runs compared" + (" (95 % intervals)" if has_intervals else ""))
    fig.update_layout(title={"text": text}, template="plotly_white", height=max(320, 240 * rows_n + 80), barmode="group",
                      legend={"orientation": "h", "y": -0.08, "yanchor": "top"}, margin={"t": top + 30, "b": 40})
    return fig


def plot_run_comparison(df: pd.DataFrame, title: str | None = None, **columns: Any) -> go.Figure:
    """One bar chart per metric, one bar per run (named in the legend), with 95 % intervals."""
    return _comparison_figure(run_comparison_info(df, **columns), title)


# -- sweep heatmap -------------------------------------------------------------------------------


class HeatmapInfo(NamedTuple):
    x_values: tuple[Any, ...]
    y_values: tuple[Any, ...]
    z: tuple[tuple[float | None, ...], ...]  # z[row = y][col = x]
    counts: tuple[tuple[int, ...], ...]
    x: str
    y: str
    value: str


def sweep_heatmap_info(df: pd.DataFrame, x: str, y: str, value: str) -> HeatmapInfo:
    """Mean of ``value`` for every (``x``, ``y``) parameter pair of a sweep (missing pairs → None)."""
    _require(df, [x, y, value], "sweep heatmap")
    grouped = df.groupby([y, x])[value].agg(["mean", "count"])
    xs = tuple(sorted(df[x].dropna().unique()))
    ys = tuple(sorted(df[y].dropna().unique()))
    z = []
    counts = []
    for yv in ys:
        z_row: list[float | None] = []
        count_row: list[int] = []
        for xv in xs:
            if (yv, xv) in grouped.index:
                cell = grouped.loc[(yv, xv)]
                z_row.append(None if math.isnan(cell["mean"]) else float(cell["mean"]))
                count_row.append(int(cell["count"]))
            else:
                z_row.append(None)
                count_row.append(0)
        z.append(tuple(z_row))
        counts.append(tuple(count_row))
    return HeatmapInfo(xs, ys, tuple(z), tuple(counts), x, y, value)


def _heatmap_figure(info: HeatmapInfo) -> go.Figure:
    import plotly.graph_objects as go

    text = [["" if v is None else f"{v:.3g}" for v in row] for row in info.z]
    x, y, value = (html.escape(str(name)) for name in (info.x, info.y, info.value))
    fig = go.Figure(
        go.Heatmap(
            x=[html.escape(str(v)) for v in info.x_values], y=[html.escape(str(v)) for v in info.y_values],
            z=[list(r) for r in info.z], text=text, texttemplate="%{text}", colorscale="Viridis",
            colorbar={"title": {"text": value}}, customdata=[list(r) for r in info.counts],
            hovertemplate=f"{x}=%{{x}}<br>{y}=%{{y}}<br>{value}=%{{z:.4g}} (n=%{{customdata}})<extra></extra>",
        )
    )
    title, top = wrapped_title(f"{info.value} over {info.x} × {info.y}")
    fig.update_layout(title={"text": title}, template="plotly_white", margin={"t": top},
                      xaxis={"title": {"text": x}, "type": "category"},
                      yaxis={"title": {"text": y}, "type": "category"})
    return fig


def plot_sweep_heatmap(df: pd.DataFrame, x: str, y: str, value: str) -> go.Figure:
    """Heatmap of a metric over two swept parameters (mean per cell, count in the hover)."""
    return _heatmap_figure(sweep_heatmap_info(df, x, y, value))


# -- Pareto front --------------------------------------------------------------------------------


class ParetoInfo(NamedTuple):
    labels: tuple[str, ...]
    quality: tuple[float, ...]
    tokens: tuple[float, ...]
    cost: tuple[float, ...] | None
    optimal: tuple[bool, ...]
    front_tokens: tuple[float, ...]  # 2-D front (tokens vs quality) as a step line
    front_quality: tuple[float, ...]
    names: tuple[str, str, str | None]


def pareto_info(
    df: pd.DataFrame, quality: str = "quality", tokens: str = "tokens", cost: str | None = "cost", label: str = "run_id"
) -> ParetoInfo:
    """Non-dominated runs maximising ``quality`` while minimising ``tokens`` (and ``cost``)."""
    _require(df, [quality, tokens, cost, label], "Pareto front")
    frame = df.dropna(subset=[c for c in (quality, tokens, cost) if c is not None])
    q = tuple(float(v) for v in frame[quality])
    t = tuple(float(v) for v in frame[tokens])
    c = tuple(float(v) for v in frame[cost]) if cost is not None else None
    objectives = [(-qi, ti, *((c[i],) if c is not None else ())) for i, (qi, ti) in enumerate(zip(q, t, strict=True))]
    optimal = tuple(pareto_mask(objectives))
    front2d = pareto_mask([(-qi, ti) for qi, ti in zip(q, t, strict=True)])
    front = sorted((ti, qi) for ti, qi, keep in zip(t, q, front2d, strict=True) if keep)
    return ParetoInfo(
        labels=tuple(str(v) for v in frame[label]), quality=q, tokens=t, cost=c, optimal=optimal,
        front_tokens=tuple(p[0] for p in front), front_quality=tuple(p[1] for p in front),
        names=(quality, tokens, cost),
    )


def _pareto_figure(info: ParetoInfo) -> go.Figure:
    import plotly.graph_objects as go

    raw_quality, raw_tokens, raw_cost = info.names
    title, top = wrapped_title(f"Pareto front: {raw_quality} vs {raw_tokens}" + (f" vs {raw_cost}" if raw_cost else ""))
    quality, tokens = html.escape(str(raw_quality)), html.escape(str(raw_tokens))
    cost = None if raw_cost is None else html.escape(str(raw_cost))
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=list(info.front_tokens), y=list(info.front_quality), mode="lines", line_shape="hv",
                             name=f"front ({tokens} vs {quality})", line={"color": "#888", "dash": "dot"}))
    marker: dict[str, Any] = {"size": 11, "line": {"width": [2.5 if o else 0.5 for o in info.optimal], "color": "#222"},
                              "symbol": ["star" if o else "circle" for o in info.optimal]}
    if info.cost is not None:
        marker |= {"color": list(info.cost), "colorscale": "Viridis", "showscale": True, "colorbar": {"title": {"text": cost}}}
    hover = [
        f"{html.escape(lab)}<br>{quality} {qv:.4g}<br>{tokens} {tv:,.0f}"
        + (f"<br>{cost} {info.cost[i]:.4g}" if info.cost is not None else "")
        + ("<br><b>Pareto-optimal</b>" if info.optimal[i] else "")
        for i, (lab, qv, tv) in enumerate(zip(info.labels, info.quality, info.tokens, strict=True))
    ]
    fig.add_trace(go.Scatter(x=list(info.tokens), y=list(info.quality), mode="markers+text", text=[html.escape(x) for x in info.labels],
                             textposition="top center", marker=marker, hovertext=hover, hoverinfo="text", name="runs"))
    fig.update_layout(title={"text": title}, margin={"t": top},
                      template="plotly_white", xaxis={"title": {"text": tokens}}, yaxis={"title": {"text": quality}},
                      legend={"orientation": "h", "y": -0.2})
    return fig


def plot_pareto(df: pd.DataFrame, **columns: Any) -> go.Figure:
    """Quality against tokens, coloured by cost; stars mark the Pareto-optimal runs."""
    return _pareto_figure(pareto_info(df, **columns))


# -- parallel coordinates ---------------------------------------------------------------------------


class Dimension(NamedTuple):
    label: str
    values: tuple[float, ...]
    tickvals: tuple[float, ...] | None  # categorical columns are coded 0..k-1
    ticktext: tuple[str, ...] | None


class ParallelInfo(NamedTuple):
    dimensions: tuple[Dimension, ...]
    color: tuple[float, ...] | None
    color_label: str | None


def parallel_info(df: pd.DataFrame, columns: Sequence[str] | None = None, color: str | None = None) -> ParallelInfo:
    """One axis per column (numeric as is, anything else coded by category), lines coloured by ``color``."""
    import pandas as pd

    columns = list(columns) if columns is not None else list(df.columns)
    _require(df, [*columns, color], "parallel coordinates")
    if not columns:
        raise DataError("parallel coordinates: no columns to draw")
    dims = []
    for col in columns:
        series = df[col]
        if pd.api.types.is_bool_dtype(series) or not pd.api.types.is_numeric_dtype(series):
            cats = list(dict.fromkeys(str(v) for v in series))
            code = {c: float(i) for i, c in enumerate(cats)}
            dims.append(Dimension(col, tuple(code[str(v)] for v in series), tuple(code.values()), tuple(cats)))
        else:
            dims.append(Dimension(col, tuple(float(v) for v in series), None, None))
    colors = None
    if color is not None:
        if not pd.api.types.is_numeric_dtype(df[color]):
            raise DataError(f"parallel coordinates: colour column {color!r} must be numeric")
        colors = tuple(float(v) for v in df[color])
    return ParallelInfo(tuple(dims), colors, color)


def _parallel_figure(info: ParallelInfo) -> go.Figure:
    import plotly.graph_objects as go

    dimensions = []
    for d in info.dimensions:
        dim: dict[str, Any] = {"label": html.escape(str(d.label)), "values": list(d.values)}
        if d.tickvals is not None:
            dim |= {"tickvals": list(d.tickvals), "ticktext": [html.escape(t) for t in d.ticktext or ()]}
        dimensions.append(dim)
    line: dict[str, Any] = {}
    if info.color is not None:
        line = {"color": list(info.color), "colorscale": "Viridis", "showscale": True,
                "colorbar": {"title": {"text": html.escape(str(info.color_label))}}}
    fig = go.Figure(go.Parcoords(dimensions=dimensions, line=line))
    fig.update_layout(title={"text": "Parameters and outcomes"}, template="plotly_white")
    return fig


def plot_parallel_coordinates(df: pd.DataFrame, columns: Sequence[str] | None = None, color: str | None = None) -> go.Figure:
    """Parallel coordinates over parameters and metrics of several runs."""
    return _parallel_figure(parallel_info(df, columns, color))
