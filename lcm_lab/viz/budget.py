"""Token budget timeline: what the model receives and where the stored context's tokens go, turn by turn.

The bold line is what the engine sent the model at the start of each turn (``Replay.sent``, its
serialized estimate); the thin dotted line is the bare assembler's estimate at the same state
(a diagnostic: the plugin never sends it as is). Markers flag turns whose context was clamped,
degraded (raw live history, no summaries, while compaction debt was pending) and turns where
compaction ran (inline sweeps, or deferred drains). Stacked areas split the stored context after
each turn (after its drains) into summaries by depth, the fresh tail and evictable messages.
``plot_budget_timeline(replay)`` is ``_budget_figure(budget_info(replay))``.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any, NamedTuple

from lcm_lab.engine.tail import fresh_tail_start
from lcm_lab.engine.types import ContextItem, StoredMessage, Summary, TurnRecord
from lcm_lab.errors import DataError, OptionError
from lcm_lab.strategies.base import lcm_replay
from lcm_lab.viz._style import EVICTABLE_COLOR, FRESH_TAIL_COLOR, depth_color, run_colors, wrapped_title

if TYPE_CHECKING:
    from collections.abc import Sequence

    import pandas as pd
    import plotly.graph_objects as go

    from lcm_lab.engine.replay.driver import Replay
    from lcm_lab.strategies.base import StrategyRun


class ContextSplit(NamedTuple):
    """Tokens of one context by category."""

    summary_tokens_by_depth: dict[int, int]
    fresh_tail_tokens: int
    evictable_tokens: int
    fresh_tail_start: int | None  # ordinal in the context, None if no raw message is protected


class BudgetInfo(NamedTuple):
    turns: tuple[int, ...]
    summary_tokens_by_depth: dict[int, tuple[int, ...]]  # depth -> per turn
    fresh_tail_tokens: tuple[int, ...]
    evictable_tokens: tuple[int, ...]
    stored_before: tuple[int, ...]
    tokens_after: tuple[int, ...]
    threshold: tuple[int, ...]
    token_budget: int
    sweep_turns: tuple[int, ...]
    sweep_y: tuple[int, ...]
    sweep_hover: tuple[str, ...]
    marker_turn: int | None
    title: str
    sent_tokens: tuple[int, ...] = ()  # the engine's serialized estimate of what it sent at the turn's start
    bare_tokens: tuple[int | None, ...] = ()  # the bare assembler's estimate at the same state (None: no state yet)
    paths: tuple[str, ...] = ()
    clamped_turns: tuple[int, ...] = ()
    degraded_turns: tuple[int, ...] = ()


def split_context(
    items: tuple[ContextItem, ...],
    messages: dict[int, StoredMessage] | Any,
    summaries: dict[str, Summary] | Any,
    fresh_tail_count: int,
    fresh_tail_max_tokens: int | None = None,
) -> ContextSplit:
    """Split context items into summary tokens by depth, fresh tail and evictable messages.

    The fresh tail is the plugin's rule (:func:`lcm_lab.engine.tail.fresh_tail_start`) over the
    raw messages of the context, measured with their stored ``token_count``.
    """
    raw: list[tuple[int, bool]] = []
    raw_tokens: list[int] = []
    by_depth: dict[int, int] = {}
    for ordinal, item in enumerate(items):
        if item.kind == "summary":
            s = summaries[item.ref]
            by_depth[s.depth] = by_depth.get(s.depth, 0) + s.token_count
        else:
            m = messages[item.ref]
            raw.append((ordinal, m.role == "user"))
            raw_tokens.append(m.token_count)
    start = fresh_tail_start(raw, raw_tokens.__getitem__, fresh_tail_count, fresh_tail_max_tokens)
    tail = sum(t for (ordinal, _), t in zip(raw, raw_tokens, strict=True) if ordinal >= start)
    return ContextSplit(
        summary_tokens_by_depth=by_depth,
        fresh_tail_tokens=tail,
        evictable_tokens=sum(raw_tokens) - tail,
        fresh_tail_start=start if raw and start <= raw[-1][0] else None,
    )


def budget_info(replay: Any, marker_turn: int | None = None, title: str | None = None) -> BudgetInfo:
    """Per-turn token split of a replay's context (after each turn's compaction); a run of another
    strategy, which has no stored context, is a :class:`~lcm_lab.strategies.base.NotAnLcmRunError`
    (its tokens per turn: :func:`lcm_lab.viz.plot_tokens_per_turn`)."""
    replay = lcm_replay(replay, "the budget timeline")
    turns: tuple[TurnRecord, ...] = replay.turns
    if not turns:
        raise DataError("the replay has no turns to plot")
    messages = {m.seq: m for m in replay.messages}
    summaries = {s.summary_id: s for s in replay.summaries}
    config = replay.config
    splits = [
        split_context(t.final_context, messages, summaries, config.fresh_tail_count, config.fresh_tail_max_tokens)
        for t in turns
    ]
    sent = [replay.sent_facts(t.turn) for t in turns]
    depths = sorted({d for sp in splits for d in sp.summary_tokens_by_depth})
    sweep_turns: list[int] = []
    sweep_y: list[int] = []
    sweep_hover: list[str] = []
    for t in turns:
        if not t.sweeps:
            continue
        acted = [w for w in t.sweeps if w.action_taken]
        drains = [a for a in (t.emergency_drain, t.drain) if a is not None and a.ran]
        sweep_turns.append(t.turn)
        sweep_y.append(t.stored_tokens_before)
        sweep_hover.append(
            f"turn {t.turn}: {len(t.sweeps)} sweep(s), {len(acted)} acted<br>"
            + "".join(f"{a.phase.replace('_', ' ')}: {a.outcome}<br>" for a in drains)
            + f"stored {t.stored_tokens_before:,} → {t.final_tokens:,} tokens (threshold {t.threshold:,})<br>"
            f"{len(t.created_summary_ids)} summaries created"
            + ("<br>condensed" if any(w.condensed for w in acted) else "")
        )
    label = getattr(replay, "run_id", None) or getattr(replay.conversation, "session_id", "replay")
    return BudgetInfo(
        turns=tuple(t.turn for t in turns),
        summary_tokens_by_depth={d: tuple(sp.summary_tokens_by_depth.get(d, 0) for sp in splits) for d in depths},
        fresh_tail_tokens=tuple(sp.fresh_tail_tokens for sp in splits),
        evictable_tokens=tuple(sp.evictable_tokens for sp in splits),
        stored_before=tuple(t.stored_tokens_before for t in turns),
        tokens_after=tuple(t.final_tokens for t in turns),
        threshold=tuple(t.threshold for t in turns),
        token_budget=int(replay.token_budget),
        sweep_turns=tuple(sweep_turns),
        sweep_y=tuple(sweep_y),
        sweep_hover=tuple(sweep_hover),
        marker_turn=marker_turn,
        title=title or f"{label}: context tokens per turn (budget {int(replay.token_budget):,}, "
        f"{replay.compaction_mode} compaction)",
        sent_tokens=tuple(x.estimated_tokens for x in sent),
        bare_tokens=tuple(x.bare_tokens for x in sent),
        paths=tuple(x.path for x in sent),
        clamped_turns=tuple(t.turn for t, x in zip(turns, sent, strict=True) if x.clamped),
        degraded_turns=tuple(t.turn for t, x in zip(turns, sent, strict=True) if x.degraded),
    )


def budget_df(replay: Any) -> pd.DataFrame:
    """The budget timeline as a table: one row per turn, one column per category."""
    import pandas as pd

    info = budget_info(replay)
    columns: dict[str, Any] = {"turn": info.turns}
    for d, values in info.summary_tokens_by_depth.items():
        columns[f"summaries_d{d}"] = values
    columns |= {
        "fresh_tail": info.fresh_tail_tokens,
        "evictable": info.evictable_tokens,
        "tokens_after": info.tokens_after,
        "stored_before": info.stored_before,
        "threshold": info.threshold,
        "budget": [info.token_budget] * len(info.turns),
        "swept": [t in set(info.sweep_turns) for t in info.turns],
        "sent_tokens": info.sent_tokens,
        "bare_tokens": info.bare_tokens,
        "sent_path": info.paths,
        "clamped": [t in set(info.clamped_turns) for t in info.turns],
        "degraded": [t in set(info.degraded_turns) for t in info.turns],
    }
    return pd.DataFrame(columns)


def _budget_figure(info: BudgetInfo) -> go.Figure:
    import plotly.graph_objects as go

    fig = go.Figure()
    x = list(info.turns)
    layers: list[tuple[str, tuple[int, ...], str]] = [
        (f"summaries depth {d}", values, depth_color(d)) for d, values in info.summary_tokens_by_depth.items()
    ]
    layers += [("evictable messages", info.evictable_tokens, EVICTABLE_COLOR), ("fresh tail", info.fresh_tail_tokens, FRESH_TAIL_COLOR)]
    depths = list(info.summary_tokens_by_depth)
    for name, values, color in layers:
        summary = name.startswith("summaries depth ")
        # one legend entry for every summary depth (a short legend; hover names the depth)
        fig.add_trace(
            go.Scatter(
                x=x, y=list(values), name=f"summaries (depth {depths[0]}–{depths[-1]})" if summary and len(depths) > 1 else name,
                mode="lines", stackgroup="context", line={"width": 0.5, "color": color}, line_shape="hv",
                legendgroup="summaries" if summary else name, showlegend=not summary or name == layers[0][0],
                hovertemplate=f"{name}: %{{y:,}}<extra>turn %{{x}}</extra>",
            )
        )
    fig.add_trace(
        go.Scatter(x=x, y=list(info.stored_before), name="stored before compaction", mode="lines",
                   line={"color": "#444", "width": 1, "dash": "dot"}, line_shape="hv")
    )
    fig.add_trace(
        go.Scatter(x=x, y=list(info.threshold), name="threshold", mode="lines", line={"color": "#E45756", "dash": "dash"})
    )
    fig.add_trace(
        go.Scatter(x=[x[0], x[-1]], y=[info.token_budget] * 2, name="budget", mode="lines", line={"color": "#000", "width": 2})
    )
    fig.add_trace(
        go.Scatter(x=x, y=list(info.sent_tokens), name="sent to the model", mode="lines+markers",
                   line={"color": "#4C78A8", "width": 2.5}, marker={"size": 4}, line_shape="hv",
                   hovertext=[f"sent {v:,} tokens ({p})" for v, p in zip(info.sent_tokens, info.paths, strict=True)],
                   hoverinfo="text")
    )
    fig.add_trace(
        go.Scatter(x=x, y=list(info.bare_tokens), name="bare assembly (diagnostic)", mode="lines", visible="legendonly",
                   line={"color": "#4C78A8", "width": 1, "dash": "dot"}, line_shape="hv")
    )
    by_turn = dict(zip(info.turns, info.sent_tokens, strict=True))
    for name, marked, symbol, color in (("clamped", info.clamped_turns, "x", "#F58518"),
                                        ("degraded (no summaries)", info.degraded_turns, "circle-open", "#E45756")):
        if marked:
            fig.add_trace(go.Scatter(x=list(marked), y=[by_turn[t] for t in marked], name=name, mode="markers",
                                     marker={"symbol": symbol, "size": 10, "color": color, "line": {"width": 2}}))
    if info.sweep_turns:
        fig.add_trace(
            go.Scatter(x=list(info.sweep_turns), y=list(info.sweep_y), name="compaction (sweeps / drains)", mode="markers",
                       marker={"symbol": "triangle-down", "size": 9, "color": "#E45756"},
                       hovertext=list(info.sweep_hover), hoverinfo="text")
        )
    if info.marker_turn is not None:
        fig.add_vline(x=info.marker_turn, line={"color": "#333", "width": 1})
    # The axis follows the budget (what the model receives), not the stored peak, which between
    # compactions can be many budgets high and would squeeze everything sent into the bottom.
    top = max(info.token_budget * 1.3, *(v * 1.05 for v in info.sent_tokens)) if info.sent_tokens else info.token_budget * 1.3
    peak = max(info.stored_before, default=0)
    if peak > top:
        fig.add_annotation(x=x[list(info.stored_before).index(peak)], y=top, yanchor="top", showarrow=False,
                           text=f"stored peaks at {peak:,} (off the axis)", font={"size": 11, "color": "#444"})
    title, margin_top = wrapped_title(info.title)
    fig.update_layout(
        title={"text": title}, template="plotly_white", height=370 + margin_top, hovermode="x unified",
        xaxis={"title": {"text": "turn"}}, yaxis={"title": {"text": "tokens"}, "range": [0, top]},
        margin={"l": 60, "r": 20, "t": margin_top, "b": 40},
    )
    return fig


class BudgetComparisonInfo(NamedTuple):
    labels: tuple[str, ...]
    turns: tuple[tuple[int, ...], ...]
    tokens_after: tuple[tuple[int, ...], ...]
    budgets: tuple[int, ...]
    thresholds: tuple[int, ...]


def budget_comparison_info(replays: Any, labels: Any = None) -> BudgetComparisonInfo:
    """Stored context tokens after each turn for several LCM replays, with their budgets and thresholds."""
    replays = [lcm_replay(r, "the budget comparison") for r in replays]
    names = list(labels) if labels is not None else [
        getattr(r, "run_id", None) or f"run {i + 1}" for i, r in enumerate(replays)
    ]
    if len(names) != len(replays):
        raise OptionError(f"{len(names)} labels for {len(replays)} replays")
    return BudgetComparisonInfo(
        labels=tuple(str(n) for n in names),
        turns=tuple(tuple(t.turn for t in r.turns) for r in replays),
        tokens_after=tuple(tuple(t.final_tokens for t in r.turns) for r in replays),
        budgets=tuple(int(r.token_budget) for r in replays),
        thresholds=tuple(r.turns[-1].threshold if r.turns else 0 for r in replays),
    )


def _budget_comparison_figure(info: BudgetComparisonInfo) -> go.Figure:
    import plotly.graph_objects as go

    palette = run_colors(info.labels)
    fig = go.Figure()
    for i, raw_label in enumerate(info.labels):
        color, label = palette[raw_label], html.escape(raw_label)
        fig.add_trace(go.Scatter(x=list(info.turns[i]), y=list(info.tokens_after[i]), name=label, mode="lines",
                                 line={"color": color, "width": 1.5}, line_shape="hv"))
        if info.turns[i]:
            span = [info.turns[i][0], info.turns[i][-1]]
            fig.add_trace(go.Scatter(x=span, y=[info.thresholds[i]] * 2, mode="lines", name=f"{label} threshold",
                                     line={"color": color, "dash": "dash", "width": 1}, showlegend=False,
                                     hovertemplate=f"threshold {info.thresholds[i]:,}<extra>{label}</extra>"))
    fig.update_layout(title={"text": "Context tokens after each turn (dashed: thresholds)"}, template="plotly_white",
                      height=400, xaxis={"title": {"text": "turn"}}, yaxis={"title": {"text": "tokens"}, "rangemode": "tozero"},
                      legend={"orientation": "h", "y": -0.2})
    return fig


def plot_budget_comparison(replays: Sequence[Replay | StrategyRun], labels: Sequence[str] | None = None) -> go.Figure:
    """Context tokens per turn of several replays on one chart."""
    return _budget_comparison_figure(budget_comparison_info(replays, labels))


def plot_budget_timeline(replay: Replay | StrategyRun, marker_turn: int | None = None, title: str | None = None) -> go.Figure:
    """What the model receives per turn against the budget, over the stacked stored context.

    Clamped, degraded and compaction turns are marked.

    ``marker_turn`` draws a vertical line (the scrubber's current turn).
    """
    return _budget_figure(budget_info(replay, marker_turn=marker_turn, title=title))
