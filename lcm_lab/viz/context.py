"""What the model receives at turn t, item by item, with tokens.

With the default ``source="sent"`` the items are what the engine hands the model
(``Replay.sent``: the engine-level assembly, i.e. the bare assembler's output after the final
clamp, or a live/degraded fallback), followed by the user message the host appends; tokens are
the engine's serialized estimate. ``turn=k`` is the model call that starts turn k; ``None`` the
call after the run. ``source="bare"`` shows the bare assembler after the turn (a diagnostic: the
plugin never sends it as is) and ``source="stored"`` the stored context items after the turn.
``plot_context_at(replay, t)`` is ``_context_figure(context_info(replay, t))``.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from lcm_lab.engine.assembly.sent import serialized_cost
from lcm_lab.engine.replay.turns import check_turn
from lcm_lab.engine.types import AssembledItem
from lcm_lab.errors import DataError, OptionError
from lcm_lab.metrics.base import runtime_text
from lcm_lab.viz._style import (
    LEGEND_ON_TOP,
    LEGEND_ROOM,
    ROLE_COLORS,
    depth_color,
    preview_html,
    wrapped_title,
)

if TYPE_CHECKING:
    import pandas as pd
    import plotly.graph_objects as go

ContextSource = Literal["sent", "bare", "stored"]
_SOURCES = ("sent", "bare", "stored")


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
    turn: int | None  # None: after the run
    token_budget: int
    total_tokens: int
    source: ContextSource
    title: str
    path: str | None = None  # sent: which branch of the engine's assemble produced it
    clamped: bool = False
    degraded: bool = False


def _text_of(message: Mapping[str, Any]) -> str:
    """The text a person reads of one item the model receives (unescaped; previews escape it).

    A message without ``content`` is pi's ``bashExecution`` (``command`` and ``output``, which the
    engine's token estimate counts as they stand): its ``$ command`` and output, as
    :func:`~lcm_lab.metrics.base.runtime_text` renders them.
    """
    content = message.get("content")
    if content is None:
        return runtime_text(message)
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, Mapping):
                parts.append(str(block.get("text") or block.get("thinking") or json.dumps(block, default=str)[:200]))
        return " ".join(parts)
    return json.dumps(content, default=str)


def _row_category(item: AssembledItem, summaries: Mapping[str, Any]) -> str:
    if item.kind == "summary" and item.ref in summaries:
        return f"summary depth {summaries[item.ref].depth}"
    return item.kind if item.kind in ("synthetic", "prompt") else item.role


def _item_rows(items: Sequence[AssembledItem], summaries: Mapping[str, Any], costs: Sequence[int],
               preview_chars: int) -> list[ContextRow]:  # fmt: skip
    rows: list[ContextRow] = []
    total = 0
    for i, (item, tokens) in enumerate(zip(items, costs, strict=True)):
        total += tokens
        rows.append(ContextRow(i, item.kind, item.ref, item.role, tokens, total, _row_category(item, summaries),
                               preview_html(_text_of(item.message), limit=preview_chars)))  # fmt: skip
    return rows


def context_info(
    replay: Any,
    turn: int | None = None,
    source: ContextSource = "sent",
    budget: int | None = None,
    prompt: str | None = None,
    preview_chars: int = 160,
) -> ContextInfo:
    """Items of the context at ``turn`` (negative counts from the end; ``None``: after the run) with tokens.

    The default ``source="sent"`` is what the model receives (``Replay.sent``): at the start of
    turn ``turn``, with the host's appended user message as the last row. ``"bare"`` is the bare
    assembler after the turn (diagnostic; ``prompt`` feeds its prompt-aware eviction) and
    ``"stored"`` the stored context items after the turn: both need an LCM replay (a run of
    another strategy has only what it sends, a
    :class:`~lcm_lab.strategies.base.NotAnLcmRunError` otherwise).
    """
    if source not in _SOURCES:
        raise OptionError(f"unknown source {source!r}; use one of {', '.join(_SOURCES)}")
    if source != "sent":
        from lcm_lab.strategies.base import lcm_replay

        replay = lcm_replay(replay, f"the {source} context")
    if not replay.turns:
        raise DataError("the replay has no turns")
    turn_index = None if turn is None else _turn_record(replay, turn).turn
    summaries = {s.summary_id: s for s in replay.summaries}
    messages = {m.seq: m for m in replay.messages}
    rows: list[ContextRow] = []
    path = None
    clamped = degraded = False
    if source == "sent":
        sent = replay.sent(turn_index, budget)
        items = [*sent.items, *([sent.prompt] if sent.prompt is not None else [])]
        rows = _item_rows(items, summaries, [serialized_cost(i) for i in items], preview_chars)
        token_budget, path, clamped, degraded = sent.token_budget, sent.path, sent.clamped, sent.degraded
        when = "after the run" if turn_index is None else f"start of turn {turn_index}"
        what = f"sent to the model ({when}; {path}{', clamped' if clamped else ''})"
    elif source == "bare":
        assembly = replay.assemble(-1 if turn is None else turn, budget, prompt)
        token_budget = assembly.token_budget
        rows = _item_rows(assembly.items, summaries, [i.tokens for i in assembly.items], preview_chars)
        what = "bare assembly (diagnostic)"
    else:
        token_budget = budget or int(replay.token_budget)
        total = 0
        for i, ci in enumerate(replay.context_at(-1 if turn is None else turn)):
            if ci.kind == "summary":
                s = summaries[ci.ref]
                tokens, role, category, text = s.token_count, "summary", f"summary depth {s.depth}", s.content
            else:
                m = messages[ci.ref]
                tokens, role, category, text = m.token_count, m.role, m.role, m.content
            total += tokens
            rows.append(ContextRow(i, ci.kind, ci.ref, role, tokens, total, category, preview_html(text, limit=preview_chars)))
        what = "stored context"
    total = rows[-1].cumulative if rows else 0
    label = "End of run" if turn_index is None else f"Turn {turn_index}"
    return ContextInfo(
        rows=tuple(rows),
        turn=turn_index,
        token_budget=token_budget,
        total_tokens=total,
        source=source,
        title=f"{label}: {what}, {len(rows)} items, {total:,} / {token_budget:,} tokens" + (
            f" · over budget by {total - token_budget:,} (protected messages are never evicted)" if total > token_budget else ""
        ),
        path=path,
        clamped=clamped,
        degraded=degraded,
    )


def context_df(replay: Any, turn: int | None = None, source: ContextSource = "sent") -> pd.DataFrame:
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
                x=[r.position for r in rows], y=[r.tokens for r in rows], name=html.escape(category),  # a role from the data
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
    title, top = wrapped_title(info.title)
    fig.update_layout(
        title={"text": title}, template="plotly_white", height=360 + top + LEGEND_ROOM, bargap=0.1,
        xaxis={"title": {"text": "position in context (oldest first)"}},
        yaxis={"title": {"text": "tokens per item"}},
        yaxis2={"title": {"text": "cumulative tokens"}, "overlaying": "y", "side": "right", "rangemode": "tozero",
                "range": [0, max(info.token_budget, info.total_tokens) * 1.05]},
        legend=LEGEND_ON_TOP, margin={"l": 60, "r": 60, "t": top + LEGEND_ROOM, "b": 40},
    )
    return fig


def plot_context_at(
    replay: Any, turn: int | None = None, source: ContextSource = "sent", budget: int | None = None,
    prompt: str | None = None,
) -> go.Figure:
    """Bar per item of what the model receives (tokens) with the running total against the budget."""
    return _context_figure(context_info(replay, turn, source, budget, prompt))


def _turn_record(replay: Any, turn: int) -> Any:
    """The record of ``turn`` (an index into the replay's turns, negative from the end), or an
    :class:`~lcm_lab.errors.OptionError` saying which turns exist."""
    return replay.turns[check_turn(turn, len(replay.turns))]


def turn_caption(replay: Any, turn: int = -1) -> str:
    """One line of HTML about a turn: ingested messages, compaction, summaries created, tokens."""
    t = _turn_record(replay, turn)
    parts = [f"<b>turn {t.turn}</b>", f"{len(t.ingested_seqs)} messages ingested",
             f"stored {t.stored_tokens_before:,} tokens (threshold {t.threshold:,})"]
    if t.sweeps:
        parts.append(f"{len(t.sweeps)} sweep(s) → {t.final_tokens:,} tokens, {len(t.created_summary_ids)} summaries created")
    else:
        parts.append("no compaction")
    drains = [a for a in (t.emergency_drain, t.drain) if a is not None]
    if drains:
        parts.append(", ".join(f"{a.phase.replace('_', ' ')}: {a.outcome}" for a in drains))
    sent = replay.sent(t.turn)
    parts.append(f"model received {sent.estimated_tokens:,} tokens ({sent.path}{', clamped' if sent.clamped else ''})")
    created = sum(1 for s in replay.summaries if s.created_turn is not None and s.created_turn <= t.turn)
    parts.append(f"{created} summaries so far")
    return " · ".join(parts)
