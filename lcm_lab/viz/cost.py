"""Where the money goes: prompt-cache plots and the "what broke the cache" table.

* ``plot_cost_validation(validation)`` — recorded and predicted cache reads and writes per call
  of a recorded session (calibration window shaded, mispredicted hits/misses marked);
* ``plot_cost_windows(validation)`` — recorded dollars per window of held-out calls against the
  expected bill's 90% interval (the intervals' calibration);
* ``plot_cost_breakdown(session_cost)`` — per call, prompt tokens read from the cache, written to
  it and sent uncached, with the events that broke the cache (compaction, TTL expiry);
* ``cache_breaks(calls)`` — those events as a table: calls, tokens re-sent, dollars lost.

Each ``plot_x(obj)`` is ``_x_figure(x_info(obj))``; the info step is pure and tested without plotly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from lcm_lab.cost.model import BREAK_REASONS, CallCost
from lcm_lab.cost.prices import Prices
from lcm_lab.errors import DataError, OptionError
from lcm_lab.viz._style import LEGEND_ON_TOP, LEGEND_ROOM, wrapped_title

if TYPE_CHECKING:
    import plotly.graph_objects as go

READ_COLOR, WRITE_COLOR, UNCACHED_COLOR = "#54A24B", "#F58518", "#E45756"
BREAK_COLORS = {"first call": "#9D9D9D", "ttl expiry": "#4C78A8", "host compaction": "#B279A2",
                "lcm compaction": "#B279A2", "prefix change": "#E45756"}  # fmt: skip


class ValidationInfo(NamedTuple):
    title: str
    x: tuple[int, ...]
    recorded_read: tuple[int, ...]
    predicted_read: tuple[int, ...]
    recorded_write: tuple[int, ...]
    predicted_write: tuple[int, ...]
    calibration_end: int  # x of the first held-out call
    wrong_x: tuple[int, ...]  # held-out calls whose hit/miss was mispredicted
    wrong_hover: tuple[str, ...]


def cost_validation_info(validation: Any) -> ValidationInfo:
    """Per-call recorded vs predicted cache reads/writes of a :class:`~lcm_lab.cost.validate.Validation`."""
    pred: Sequence[CallCost] = validation.predicted
    rec = validation.recorded
    x = tuple(range(len(pred)))
    held = validation.held_out
    wrong = [i for i in x if held[i] and pred[i].hit != (rec[i].read > 0)]
    hover = tuple(
        f"call {i} (line {pred[i].meta.get('line')}): recorded read {rec[i].read:,}, predicted {pred[i].read:,}; "
        f"idle {pred[i].gap_s or 0:.0f}s" for i in wrong
    )
    s = validation.summary
    title = (
        f"{validation.session or 'session'} ({validation.model}): cache reads recorded vs predicted — held-out read error "
        f"{100 * (s.get('read_error') or 0):.1f}%, hit/miss right {100 * (s.get('hit_miss_accuracy') or 0):.1f}%"
    )
    return ValidationInfo(
        title=title,
        x=x,
        recorded_read=tuple(r.read for r in rec),
        predicted_read=tuple(p.read for p in pred),
        recorded_write=tuple(r.write for r in rec),
        predicted_write=tuple(p.write for p in pred),
        calibration_end=next((i for i in x if held[i]), len(x)),
        wrong_x=tuple(wrong),
        wrong_hover=hover,
    )


def _validation_figure(info: ValidationInfo) -> go.Figure:
    import plotly.graph_objects as go

    fig = go.Figure()
    x = list(info.x)
    series = [("recorded cache read", info.recorded_read, READ_COLOR, "solid"),
              ("predicted cache read", info.predicted_read, "#1F5F1F", "dot"),
              ("recorded cache write", info.recorded_write, WRITE_COLOR, "solid"),
              ("predicted cache write", info.predicted_write, "#8C4A00", "dot")]  # fmt: skip
    for name, values, color, dash in series:
        fig.add_trace(go.Scatter(x=x, y=list(values), name=name, mode="lines", line={"color": color, "dash": dash, "width": 1.3}))
    if info.wrong_x:
        fig.add_trace(
            go.Scatter(x=list(info.wrong_x), y=[info.recorded_read[i] for i in info.wrong_x], name="hit/miss mispredicted",
                       mode="markers", marker={"symbol": "x", "size": 9, "color": UNCACHED_COLOR},
                       hovertext=list(info.wrong_hover), hoverinfo="text")
        )
    fig.add_vrect(x0=-0.5, x1=info.calibration_end - 0.5, fillcolor="#BAB0AC", opacity=0.25, line_width=0,
                  annotation_text="calibration (first 10%)", annotation_position="top left")
    title, top = wrapped_title(info.title)  # it names the session and the model
    fig.update_layout(title={"text": title, "font": {"size": 13}}, template="plotly_white", height=420 + LEGEND_ROOM,
                      xaxis={"title": {"text": "API call"}}, yaxis={"title": {"text": "tokens"}, "rangemode": "tozero"},
                      legend=LEGEND_ON_TOP, margin={"l": 60, "r": 20, "t": top + LEGEND_ROOM, "b": 40})
    return fig


def plot_cost_validation(validation: Any) -> go.Figure:
    """Recorded and predicted cache reads and writes per call, calibration window shaded."""
    return _validation_figure(cost_validation_info(validation))


class WindowsInfo(NamedTuple):
    title: str
    x: tuple[str, ...]  # window labels (held-out calls a–b)
    recorded: tuple[float, ...]
    expected: tuple[float, ...]
    low: tuple[float, ...]
    high: tuple[float, ...]
    rules: tuple[float, ...]
    inside: tuple[bool, ...]


def cost_windows_info(validation: Any) -> WindowsInfo:
    """Per window of held-out calls: recorded dollars against the expected bill and its 90% interval."""
    s = validation.summary
    rows = s.get("window_intervals") or []
    if not rows:
        raise DataError("this validation has no bill intervals (its calibration carries no miss model)")
    title = (f"{validation.session or 'session'}: held-out dollars per window of calls — recorded inside the 90% interval in "
             f"{s['windows_inside']} of {s['windows']} windows; whole held-out bill ${s['recorded_cost_usd']:.2f} recorded, "
             f"${s['predicted_cost_usd']:.2f} expected [{s['predicted_cost_usd_p05']:.2f}, {s['predicted_cost_usd_p95']:.2f}]")
    return WindowsInfo(
        title=title,
        x=tuple(f"{r['first_call']}–{r['first_call'] + r['calls'] - 1}" for r in rows),
        recorded=tuple(r["recorded_usd"] for r in rows),
        expected=tuple(r["expected_usd"] for r in rows),
        low=tuple(r["p05"] for r in rows),
        high=tuple(r["p95"] for r in rows),
        rules=tuple(r["rules_usd"] for r in rows),
        inside=tuple(r["inside"] for r in rows),
    )


def _windows_figure(info: WindowsInfo) -> go.Figure:
    import plotly.graph_objects as go

    x = list(info.x)
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=x, y=list(info.expected), name="expected (with simulated misses)", mode="markers",
                             marker={"symbol": "line-ew-open", "size": 18, "color": "#4C78A8"},
                             error_y={"type": "data", "symmetric": False, "color": "#4C78A8",
                                      "array": [h - e for h, e in zip(info.high, info.expected, strict=True)],
                                      "arrayminus": [e - lo for e, lo in zip(info.expected, info.low, strict=True)]}))  # fmt: skip
    fig.add_trace(go.Scatter(x=x, y=list(info.rules), name="rules' point (no unexplained miss)", mode="markers",
                             marker={"symbol": "circle-open", "size": 7, "color": "#9D9D9D"}))  # fmt: skip
    fig.add_trace(go.Scatter(x=x, y=list(info.recorded), name="recorded (the provider's bill)", mode="markers",
                             marker={"size": 9, "color": [READ_COLOR if ok else UNCACHED_COLOR for ok in info.inside]},
                             hovertext=["inside its 90% interval" if ok else "outside its 90% interval" for ok in info.inside]))  # fmt: skip
    title, top = wrapped_title(info.title)  # it names the session
    fig.update_layout(title={"text": title, "font": {"size": 12}}, template="plotly_white", height=420 + LEGEND_ROOM,
                      xaxis={"title": {"text": "held-out calls"}}, yaxis={"title": {"text": "dollars"}, "rangemode": "tozero"},
                      legend=LEGEND_ON_TOP, margin={"l": 60, "r": 20, "t": top + LEGEND_ROOM, "b": 40})  # fmt: skip
    return fig


def plot_cost_windows(validation: Any) -> go.Figure:
    """Recorded dollars per window of held-out calls against the expected bill's 90% interval
    (green: inside, red: outside) and the rules' point."""
    return _windows_figure(cost_windows_info(validation))


class BreakdownInfo(NamedTuple):
    title: str
    x: tuple[int, ...]
    read: tuple[int, ...]
    write: tuple[int, ...]
    uncached: tuple[int, ...]
    hover: tuple[str, ...]
    breaks: tuple[tuple[int, str], ...]  # (call, reason)


def cost_breakdown_info(cost: Any, title: str | None = None) -> BreakdownInfo:
    """Per-call token split of a :class:`~lcm_lab.cost.replay_cost.SessionCost` (or a sequence of calls)."""
    calls: Sequence[CallCost] = getattr(cost, "calls", cost)
    if not calls:
        raise DataError("no calls to plot")
    hover = tuple(
        f"call {c.index} (turn {c.meta.get('turn')}): read {c.read:,}, written {c.write:,}, uncached {c.uncached:,}, "
        f"${c.dollars:.4f}" + (f"<br>cache broke: {c.break_reason}" if c.break_reason else "")
        for c in calls
    )
    total = sum(c.dollars for c in calls)
    return BreakdownInfo(
        title=title or f"Prompt tokens per call: cached / written / uncached (${total:.2f} over {len(calls)} calls)",
        x=tuple(c.index for c in calls),
        read=tuple(c.read for c in calls),
        write=tuple(c.write for c in calls),
        uncached=tuple(c.uncached for c in calls),
        hover=hover,
        breaks=tuple((c.index, c.break_reason) for c in calls if c.break_reason and c.break_reason != "first call"),
    )


def _breakdown_figure(info: BreakdownInfo) -> go.Figure:
    import plotly.graph_objects as go

    fig = go.Figure()
    x = list(info.x)
    for name, values, color in (("cached (read)", info.read, READ_COLOR), ("written", info.write, WRITE_COLOR),
                                ("uncached", info.uncached, UNCACHED_COLOR)):  # fmt: skip
        fig.add_trace(go.Bar(x=x, y=list(values), name=name, marker={"color": color, "line": {"width": 0}},
                             hovertext=list(info.hover), hoverinfo="text"))
    shown: set[str] = set()
    for call, reason in info.breaks:
        color = BREAK_COLORS.get(reason, "#333")
        fig.add_trace(go.Scatter(x=[call, call], y=[0, max(info.read[x.index(call)] + info.write[x.index(call)], 1)],
                                 mode="lines", line={"color": color, "width": 1, "dash": "dot"}, name=reason,
                                 legendgroup=reason, showlegend=reason not in shown, hoverinfo="skip"))
        shown.add(reason)
    title, top = wrapped_title(info.title)  # the caller's, or the default
    fig.update_layout(title={"text": title, "font": {"size": 13}}, template="plotly_white", height=420 + LEGEND_ROOM, barmode="stack",
                      bargap=0, xaxis={"title": {"text": "API call"}}, yaxis={"title": {"text": "prompt tokens"}},
                      legend=LEGEND_ON_TOP, margin={"l": 60, "r": 20, "t": top + LEGEND_ROOM, "b": 40})
    return fig


def plot_cost_breakdown(cost: Any, title: str | None = None) -> go.Figure:
    """Per call: prompt tokens cached, written and uncached, with the events that broke the cache."""
    return _breakdown_figure(cost_breakdown_info(cost, title))


def cache_breaks(cost: Any, prices: Prices | None = None) -> list[dict[str, Any]]:
    """What broke the cache: per reason, the calls, the tokens sent again and what that cost extra.

    ``cost`` is a :class:`~lcm_lab.cost.replay_cost.SessionCost` (its prices are used) or a
    sequence of calls with ``prices``. A re-sent token costs the write price instead of the read
    price (the input price when the provider charges no writes).

    >>> p = Prices("m", "anthropic", input=5e-06, output=2.5e-05, cache_read=5e-07, cache_write=6.25e-06)
    >>> c = CallCost(3, 0.0, "main", 1000, 0, 1000, 0, 0, 0.00625, gap_s=400.0, break_reason="ttl expiry", lost_tokens=900)
    >>> cache_breaks([c], p)
    [{'reason': 'ttl expiry', 'calls': 1, 'lost_tokens': 900, 'extra_usd': 0.005175}]
    """
    prices = prices or getattr(cost, "prices", None)
    if prices is None:
        raise OptionError("cache_breaks needs prices: pass a SessionCost or prices=Prices(...)")
    calls: Sequence[CallCost] = getattr(cost, "calls", cost)
    premium = (prices.cache_write if prices.cache_write is not None else prices.input) - (prices.cache_read or 0.0)
    rows: dict[str, dict[str, Any]] = {}
    for c in calls:
        if not c.break_reason or c.break_reason == "first call":
            continue
        row = rows.setdefault(c.break_reason, {"reason": c.break_reason, "calls": 0, "lost_tokens": 0, "extra_usd": 0.0})
        row["calls"] += 1
        row["lost_tokens"] += c.lost_tokens
        row["extra_usd"] = round(row["extra_usd"] + c.lost_tokens * premium, 9)
    order = {reason: i for i, reason in enumerate(BREAK_REASONS)}
    return sorted(rows.values(), key=lambda r: order.get(r["reason"], len(order)))
