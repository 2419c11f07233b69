"""What the model sees at turn t, item by item, with tokens.

With ``source="assembly"`` the items are the assembler's output (``Replay.assemble``: summaries
rendered as messages, evictions applied, synthetic tool results); with ``source="stored"`` they
are the stored context items after the turn (``Replay.context_at``), before assembly.
``plot_context_at(replay, t)`` is ``_context_figure(context_info(replay, t))``.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from lcm_lab.viz._style import ROLE_COLORS, depth_color, preview_html

if TYPE_CHECKING:
    import pandas as pd
    import plotly.graph_objects as go

ContextSource = Literal["assembly", "stored"]


class ContextRow(NamedTuple):
    position: int
    kind: str  # message | summary | synthetic
    ref: int | str | None
    role: str
    tokens: int
    cumulative: int
    category: str  # legend group: "summary depth d", "user", "assistant", ...
    preview: str  # HTML-escaped


class ContextInfo(NamedTuple):
    rows: tuple[ContextRow, ...]
    turn: int
    token_budget: int
    total_tokens: int
    source: ContextSource
    title: str


def _text_of(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, Mapping):
                parts.append(str(block.get("text") or block.get("thinking") or json.dumps(block, default=str)[:200]))
        return " ".join(parts)
    return json.dumps(content, default=str)


def context_info(
    replay: Any,
    turn: int = -1,
    source: ContextSource = "assembly",
    budget: int | None = None,
    prompt: str | None = None,
    preview_chars: int = 160,
) -> ContextInfo:
    """Items of the context after ``turn`` (negative counts from the end) with their tokens.

    The default ``source="assembly"`` is what the model receives (``Replay.assemble``);
    ``"stored"`` lists the stored context items before assembly.
    """
    if not replay.turns:
        raise ValueError("the replay has no turns")
    turn_index = replay.turns[turn].turn
    summaries = {s.summary_id: s for s in replay.summaries}
    messages = {m.seq: m for m in replay.messages}
    rows: list[ContextRow] = []
    total = 0
    if source == "assembly":
        assembly = replay.assemble(turn, budget, prompt)
        token_budget = assembly.token_budget
        for i, item in enumerate(assembly.items):
            total += item.tokens
            if item.kind == "summary" and item.ref in summaries:
                category = f"summary depth {summaries[item.ref].depth}"
            else:
                category = item.kind if item.kind == "synthetic" else item.role
            rows.append(
                ContextRow(i, item.kind, item.ref, item.role, item.tokens, total, category,
                           preview_html(_text_of(item.message), limit=preview_chars))
            )
    elif source == "stored":
        token_budget = budget or int(replay.token_budget)
        for i, ci in enumerate(replay.context_at(turn)):
            if ci.kind == "summary":
                s = summaries[ci.ref]
                tokens, role, category, text = s.token_count, "summary", f"summary depth {s.depth}", s.content
            else:
                m = messages[ci.ref]
                tokens, role, category, text = m.token_count, m.role, m.role, m.content
            total += tokens
            rows.append(ContextRow(i, ci.kind, ci.ref, role, tokens, total, category, preview_html(text, limit=preview_chars)))
    else:
        raise ValueError(f"unknown source {source!r}; use 'assembly' or 'stored'")
    what = "assembled for the model" if source == "assembly" else "stored context"
    return ContextInfo(
        rows=tuple(rows),
        turn=turn_index,
        token_budget=token_budget,
        total_tokens=total,
        source=source,
        title=f"Turn {turn_index}: {what}, {len(rows)} items, {total:,} / {token_budget:,} tokens" + (
            f" · over budget by {total - token_budget:,} (the fresh tail is never evicted)" if total > token_budget else ""
        ),
    )


def context_df(replay: Any, turn: int = -1, source: ContextSource = "assembly") -> pd.DataFrame:
    """The context at ``turn`` as a table (one row per item; ``preview`` is HTML-escaped)."""
    import pandas as pd

    info = context_info(replay, turn, source)
    return pd.DataFrame([r._asdict() for r in info.rows])


def _category_color(category: str) -> str:
    if category.startswith("summary depth "):
        return depth_color(int(category.rsplit(" ", 1)[1]))
    return ROLE_COLORS.get(category, ROLE_COLORS["system"])


def _context_figure(info: ContextInfo) -> go.Figure:
    import plotly.graph_objects as go

    fig = go.Figure()
    for category in dict.fromkeys(r.category for r in info.rows):
        rows = [r for r in info.rows if r.category == category]
        fig.add_trace(
            go.Bar(
                x=[r.position for r in rows], y=[r.tokens for r in rows], name=category,
                marker={"color": _category_color(category)},
                hovertext=[
                    f"#{r.position} {r.kind} {html.escape(str(r.ref))} ({html.escape(r.role)})<br>"
                    f"{r.tokens:,} tokens, {r.cumulative:,} so far<br>{r.preview}"
                    for r in rows
                ],
                hoverinfo="text",
            )
        )
    fig.add_trace(
        go.Scatter(x=[r.position for r in info.rows], y=[r.cumulative for r in info.rows], name="cumulative",
                   mode="lines", yaxis="y2", line={"color": "#333", "width": 1.5}, hoverinfo="skip")
    )
    fig.add_hline(y=info.token_budget, yref="y2", line={"color": "#E45756", "dash": "dash"},
                  annotation_text="budget", annotation_position="top left")
    fig.update_layout(
        title={"text": info.title}, template="plotly_white", height=380, bargap=0.1,
        xaxis={"title": {"text": "position in context (oldest first)"}},
        yaxis={"title": {"text": "tokens per item"}},
        yaxis2={"title": {"text": "cumulative tokens"}, "overlaying": "y", "side": "right", "rangemode": "tozero",
                "range": [0, max(info.token_budget, info.total_tokens) * 1.05]},
        legend={"orientation": "h", "y": -0.22}, margin={"l": 60, "r": 60, "t": 50, "b": 40},
    )
    return fig


def plot_context_at(
    replay: Any, turn: int = -1, source: ContextSource = "assembly", budget: int | None = None, prompt: str | None = None
) -> go.Figure:
    """Bar per context item (tokens) with the running total against the budget."""
    return _context_figure(context_info(replay, turn, source, budget, prompt))


def turn_caption(replay: Any, turn: int = -1) -> str:
    """One line of HTML about a turn: ingested messages, compaction, summaries created, tokens."""
    t = replay.turns[turn]
    parts = [f"<b>turn {t.turn}</b>", f"{len(t.ingested_seqs)} messages ingested",
             f"stored {t.stored_tokens_before:,} tokens (threshold {t.threshold:,})"]
    if t.sweeps:
        parts.append(f"{len(t.sweeps)} sweep(s) → {t.tokens_after:,} tokens, {len(t.created_summary_ids)} summaries created")
    else:
        parts.append("no compaction")
    created = sum(1 for s in replay.summaries if s.created_turn is not None and s.created_turn <= t.turn)
    parts.append(f"{created} summaries so far")
    return " · ".join(parts)
