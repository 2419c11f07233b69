"""The summary DAG: a networkx export and a layered plot (depth up, conversation time across).

``plot_dag(obj)`` is ``_dag_figure(dag_info(obj))``. The info step lays the graph out, picks
colours and writes hover text; the figure step only maps it onto plotly traces. At thousands of
summaries the figure switches to WebGL markers and draws all edges as one batched trace; with
``max_nodes`` the info step additionally aggregates the most crowded depths into bins
(level of detail) so that the browser stays responsive.
"""

from __future__ import annotations

import html
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from numbers import Integral
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import networkx as nx

from lcm_lab.engine.types import StoredMessage, Summary
from lcm_lab.errors import DagCycleError, OptionError
from lcm_lab.viz._source import DagInput, dag_source
from lcm_lab.viz._style import (
    CONTINUOUS_SCALE,
    KIND_COLORS,
    LEGEND_ON_TOP,
    LEGEND_ROOM,
    category_color,
    marker_size,
    preview_html,
    wrapped_title,
)

if TYPE_CHECKING:
    import plotly.graph_objects as go

ColorBy = Literal["kind", "depth", "level", "score", "turn"]
XAxis = Literal["seq", "time"]
CATEGORICAL: frozenset[str] = frozenset({"kind", "depth", "level"})
WEBGL_ABOVE = 1500  # nodes; SVG markers get sluggish beyond this


# -- networkx export -------------------------------------------------------------------------


def to_networkx(obj: Any, include_messages: bool = False) -> nx.DiGraph:
    """The summary DAG as a ``networkx.DiGraph``; edges point from a summary to its sources.

    So ``nx.descendants(g, sid)`` is everything ``sid`` summarises (the plugin's
    ``descendant_count`` counts the same nodes). Node attributes mirror :class:`Summary`.
    With ``include_messages`` every covered message is a node keyed by its ``seq`` (an int),
    with ``node_type="message"`` and an edge from each leaf to its source messages.

    >>> from lcm_lab.engine.types import Summary
    >>> leaf = Summary("a", "leaf", 0, "x", 5, source_message_seqs=(1, 2))
    >>> top = Summary("b", "condensed", 1, "y", 3, source_summary_ids=("a",))
    >>> sorted(to_networkx([leaf, top]).edges)
    [('b', 'a')]
    """
    source = dag_source(obj)
    g = nx.DiGraph(label=source.label)
    for s in source.summaries:
        g.add_node(
            s.summary_id,
            node_type="summary",
            kind=s.kind,
            depth=s.depth,
            token_count=s.token_count,
            level=s.level,
            created_turn=s.created_turn,
            earliest_at=s.earliest_at,
            latest_at=s.latest_at,
            descendant_count=s.descendant_count,
            source_message_token_count=s.source_message_token_count,
            model=s.model,
            content=s.content,
        )
    for s in source.summaries:
        for ordinal, src in enumerate(s.source_summary_ids):
            g.add_edge(s.summary_id, src, ordinal=ordinal)
        if include_messages:
            for ordinal, seq in enumerate(s.source_message_seqs):
                m = source.messages.get(seq)
                if seq not in g:
                    g.add_node(
                        seq,
                        node_type="message",
                        role=m.role if m else None,
                        token_count=m.token_count if m else None,
                        created_at=m.created_at if m else None,
                    )
                g.add_edge(s.summary_id, seq, ordinal=ordinal)
    return g


# -- info step ---------------------------------------------------------------------------------


class DagNode(NamedTuple):
    node_id: str
    kind: str  # leaf | condensed | aggregate
    depth: int
    x: float | datetime
    tokens: int
    size: float
    color: str | float | None  # category label or numeric value
    hover: str
    members: int  # > 1 for aggregated nodes


class DagSpan(NamedTuple):
    """A message range at the bottom of the plot: a leaf's sources, or raw (uncompacted) messages."""

    label: str
    kind: Literal["leaf", "raw"]
    x0: float | datetime
    x1: float | datetime
    hover: str


class DagInfo(NamedTuple):
    nodes: tuple[DagNode, ...]
    edge_x: tuple[float | datetime | None, ...]  # node-to-node segments separated by None
    edge_y: tuple[float | None, ...]
    spans: tuple[DagSpan, ...]
    color_by: str
    categorical: bool
    x_axis: XAxis
    max_depth: int
    summary_count: int
    aggregated: bool
    title: str


def dag_info(
    obj: Any,
    color_by: ColorBy = "kind",
    scores: Mapping[str, float] | None = None,
    x_axis: XAxis = "seq",
    max_nodes: int | None = None,
    preview_chars: int = 240,
    until_turn: int | None = None,
    title: str | None = None,
) -> DagInfo:
    """Lay out the DAG: one node per summary at (time position, depth), edges to sources.

    ``x_axis="seq"`` places a summary at the middle of the message range it covers;
    ``"time"`` at the middle of ``earliest_at``..``latest_at``. ``color_by="score"`` needs
    ``scores`` (summary_id -> value); ``until_turn`` keeps summaries created up to that turn
    (replays only). ``max_nodes`` bins the most crowded depths until at most that many
    nodes remain.
    """
    if max_nodes is not None and (isinstance(max_nodes, bool) or not isinstance(max_nodes, Integral) or max_nodes < 1):
        raise OptionError(f"max_nodes={max_nodes!r}: expected a whole number of nodes, at least 1 (None draws every summary)")
    source = dag_source(obj)
    summaries = source.summaries
    if until_turn is not None:
        summaries = tuple(s for s in summaries if s.created_turn is not None and s.created_turn <= until_turn)
    if color_by == "score" and scores is None:
        raise OptionError("color_by='score' needs scores={summary_id: value}")
    if color_by not in ("kind", "depth", "level", "score", "turn"):
        raise OptionError(f"unknown color_by {color_by!r}; use kind, depth, level, score or turn")
    by_id = {s.summary_id: s for s in summaries}
    coverage = _coverage(summaries, by_id)
    positions = _positions(summaries, coverage, source.messages, x_axis)
    max_tokens = max((s.token_count for s in summaries), default=0)
    nodes = [
        DagNode(
            node_id=s.summary_id,
            kind=s.kind,
            depth=s.depth,
            x=positions[s.summary_id],
            tokens=s.token_count,
            size=marker_size(s.token_count, max_tokens),
            color=_color_value(s, color_by, scores),
            hover=_hover(s, coverage.get(s.summary_id), color_by, scores, preview_chars),
            members=1,
        )
        for s in summaries
    ]
    edges = [(s.summary_id, src) for s in summaries for src in s.source_summary_ids if src in by_id]
    aggregated = False
    if max_nodes is not None and len(nodes) > max_nodes:
        nodes, edges = _aggregate(nodes, edges, max_nodes, color_by)
        aggregated = True
    where = {n.node_id: n for n in nodes}
    edge_x: list[float | datetime | None] = []
    edge_y: list[float | None] = []
    for parent, child in edges:
        a, b = where[parent], where[child]
        edge_x += [a.x, b.x, None]
        edge_y += [float(a.depth), float(b.depth), None]
    spans = _spans(summaries, source.messages, x_axis)
    kinds = Counter(s.kind for s in summaries)
    default_title = (
        f"{source.label}: {len(summaries)} summaries ({kinds.get('leaf', 0)} leaf, "
        f"{kinds.get('condensed', 0)} condensed), max depth {max((s.depth for s in summaries), default=-1)}"
    )
    if aggregated:
        default_title += f" · binned to {len(nodes)} nodes"
    return DagInfo(
        nodes=tuple(nodes),
        edge_x=tuple(edge_x),
        edge_y=tuple(edge_y),
        spans=spans,
        color_by=color_by,
        categorical=color_by in CATEGORICAL,
        x_axis=x_axis,
        max_depth=max((s.depth for s in summaries), default=0),
        summary_count=len(summaries),
        aggregated=aggregated,
        title=title or default_title,
    )


def _coverage(summaries: Sequence[Summary], by_id: Mapping[str, Summary]) -> dict[str, tuple[int, int]]:
    """First and last message seq under each summary (through its source summaries)."""
    memo: dict[str, tuple[int, int] | None] = {}
    for root in summaries:
        stack: list[tuple[str, bool]] = [(root.summary_id, False)]
        ancestors: set[str] = set()  # summaries whose sources are being visited
        while stack:
            sid, expanded = stack.pop()
            if sid in memo:
                continue
            s = by_id[sid]
            if not expanded:
                if sid in ancestors:
                    raise DagCycleError(sid)
                ancestors.add(sid)
                stack.append((sid, True))
                stack.extend((src, False) for src in s.source_summary_ids if src in by_id and src not in memo)
                continue
            ancestors.discard(sid)
            lo = min(s.source_message_seqs, default=None)
            hi = max(s.source_message_seqs, default=None)
            for src in s.source_summary_ids:
                span = memo.get(src)
                if span is not None:
                    lo = span[0] if lo is None else min(lo, span[0])
                    hi = span[1] if hi is None else max(hi, span[1])
            memo[sid] = None if lo is None or hi is None else (lo, hi)
    return {sid: span for sid, span in memo.items() if span is not None}


def _parse_time(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace(" ", "T"))
    except ValueError:
        return None
    # Plugin timestamps are UTC (summaries carry 'Z', message rows are naive): compare as naive UTC.
    return parsed.astimezone(UTC).replace(tzinfo=None) if parsed.tzinfo else parsed


def _midpoint(a: datetime, b: datetime) -> datetime:
    return a + (b - a) / 2


def _positions(
    summaries: Sequence[Summary],
    coverage: Mapping[str, tuple[int, int]],
    messages: Mapping[int, StoredMessage],
    x_axis: XAxis,
) -> dict[str, float | datetime]:
    positions: dict[str, float | datetime] = {}
    if x_axis == "time":
        for s in summaries:
            lo, hi = _parse_time(s.earliest_at), _parse_time(s.latest_at)
            if lo is None or hi is None:
                raise OptionError(
                    f"summary {s.summary_id} has no earliest_at/latest_at; plot with x_axis='seq' instead"
                )
            positions[s.summary_id] = _midpoint(lo, hi)
        return positions
    if x_axis != "seq":
        raise OptionError(f"unknown x_axis {x_axis!r}; use 'seq' or 'time'")
    # Summaries whose sources were pruned have no coverage: place them by creation order on the
    # same scale so they still show up (their hover says the span is unknown).
    top = max((span[1] for span in coverage.values()), default=max(messages, default=len(summaries)))
    for i, s in enumerate(summaries):
        span = coverage.get(s.summary_id)
        positions[s.summary_id] = (span[0] + span[1]) / 2 if span else (i + 0.5) * top / max(len(summaries), 1)
    return positions


def _color_value(s: Summary, color_by: str, scores: Mapping[str, float] | None) -> str | float | None:
    if color_by == "kind":
        return s.kind
    if color_by == "depth":
        return f"depth {s.depth}"
    if color_by == "level":
        return s.level or "unknown"
    if color_by == "turn":
        return float(s.created_turn) if s.created_turn is not None else None
    value = (scores or {}).get(s.summary_id)
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def _hover(
    s: Summary,
    span: tuple[int, int] | None,
    color_by: str,
    scores: Mapping[str, float] | None,
    preview_chars: int,
) -> str:
    lines = [
        f"<b>{html.escape(s.summary_id)}</b> · {html.escape(s.kind)} · depth {s.depth}"
        + (f" · {html.escape(s.level)}" if s.level else ""),
        f"tokens {s.token_count:,} · sources {s.source_message_token_count:,} msg tokens"
        f" · {s.descendant_count:,} descendants",
        f"messages {span[0]}–{span[1]}" if span else "messages: span unknown",
    ]
    if s.earliest_at or s.latest_at:
        lines.append(f"time {html.escape(s.earliest_at or '?')} → {html.escape(s.latest_at or '?')}")
    if s.created_turn is not None:
        lines.append(f"created in turn {s.created_turn}")
    if color_by == "score" and scores is not None:
        value = scores.get(s.summary_id)
        lines.append(f"score {value:.3g}" if value is not None else "score: none")
    lines.append(preview_html(s.content, limit=preview_chars))
    return "<br>".join(lines)


def _spans(
    summaries: Sequence[Summary], messages: Mapping[int, StoredMessage], x_axis: XAxis
) -> tuple[DagSpan, ...]:
    spans: list[DagSpan] = []
    covered: set[int] = set()
    for s in summaries:
        if not s.source_message_seqs:
            continue
        lo, hi = min(s.source_message_seqs), max(s.source_message_seqs)
        covered.update(s.source_message_seqs)
        tokens = s.source_message_token_count or sum(
            messages[q].token_count for q in s.source_message_seqs if q in messages
        )
        x = _span_x(lo, hi, messages, x_axis, s)
        if x is None:
            continue
        hover = (
            f"<b>{html.escape(s.summary_id)}</b> sources: messages {lo}–{hi}"
            f" ({len(s.source_message_seqs)} messages, {tokens:,} tokens)"
        )
        spans.append(DagSpan(s.summary_id, "leaf", x[0], x[1], hover))
    raw = sorted(q for q in messages if q not in covered)
    for lo, hi in _runs(raw):
        x = _span_x(lo, hi, messages, x_axis, None)
        if x is None:
            continue
        tokens = sum(messages[q].token_count for q in range(lo, hi + 1) if q in messages)
        hover = f"raw messages {lo}–{hi} ({hi - lo + 1} messages, {tokens:,} tokens), not summarised"
        spans.append(DagSpan(f"raw {lo}-{hi}", "raw", x[0], x[1], hover))
    return tuple(spans)


def _span_x(
    lo: int, hi: int, messages: Mapping[int, StoredMessage], x_axis: XAxis, s: Summary | None
) -> tuple[float | datetime, float | datetime] | None:
    if x_axis == "seq":
        return (lo - 0.4, hi + 0.4)
    a = _parse_time(messages[lo].created_at) if lo in messages else None
    b = _parse_time(messages[hi].created_at) if hi in messages else None
    if (a is None or b is None) and s is not None:
        a, b = _parse_time(s.earliest_at), _parse_time(s.latest_at)
    if a is None or b is None:
        return None
    return (a, b)


def _runs(values: Sequence[int]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for v in values:
        if runs and v == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], v)
        else:
            runs.append((v, v))
    return runs


def _aggregate(
    nodes: list[DagNode], edges: list[tuple[str, str]], max_nodes: int, color_by: str
) -> tuple[list[DagNode], list[tuple[str, str]]]:
    """Bin neighbouring nodes of the most crowded depths until at most ``max_nodes`` remain."""
    by_depth: dict[int, list[DagNode]] = {}
    for n in nodes:
        by_depth.setdefault(n.depth, []).append(n)
    rep: dict[str, str] = {n.node_id: n.node_id for n in nodes}
    total = len(nodes)
    for depth in sorted(by_depth, key=lambda d: -len(by_depth[d])):
        if total <= max_nodes:
            break
        level = sorted(by_depth[depth], key=lambda n: _sortable(n.x))
        keep = max(1, len(level) - (total - max_nodes))
        size = math.ceil(len(level) / keep)
        if size <= 1:
            continue
        binned: list[DagNode] = []
        for i in range(0, len(level), size):
            group = level[i : i + size]
            agg_id = f"bin:d{depth}:{i // size}"
            for n in group:
                rep[n.node_id] = agg_id
            binned.append(_merge(agg_id, depth, group, color_by))
        total += len(binned) - len(level)
        by_depth[depth] = binned
    merged = [n for depth in sorted(by_depth) for n in by_depth[depth]]
    max_tokens = max((n.tokens for n in merged), default=0)
    merged = [n._replace(size=marker_size(n.tokens, max_tokens)) for n in merged]
    seen: set[tuple[str, str]] = set()
    new_edges: list[tuple[str, str]] = []
    for a, b in edges:
        edge = (rep[a], rep[b])
        if edge[0] != edge[1] and edge not in seen:
            seen.add(edge)
            new_edges.append(edge)
    return merged, new_edges


def _sortable(x: float | datetime) -> float:
    return x.replace(tzinfo=UTC).timestamp() if isinstance(x, datetime) else float(x)


def _merge(agg_id: str, depth: int, group: Sequence[DagNode], color_by: str) -> DagNode:
    if len(group) == 1:
        return group[0]
    tokens = sum(n.tokens for n in group)
    xs = [_sortable(n.x) for n in group]
    mean = sum(xs) / len(xs)
    x: float | datetime = datetime.fromtimestamp(mean, tz=UTC).replace(tzinfo=None) if isinstance(group[0].x, datetime) else mean
    if color_by in CATEGORICAL:
        color: str | float | None = Counter(str(n.color) for n in group).most_common(1)[0][0]
    else:
        values = [float(n.color) for n in group if isinstance(n.color, int | float)]
        color = sum(values) / len(values) if values else None
    hover = (
        f"<b>{len(group)} summaries at depth {depth}</b> (binned)<br>{html.escape(group[0].node_id)} … "
        f"{html.escape(group[-1].node_id)}<br>tokens {tokens:,} in total"
    )
    return DagNode(agg_id, "aggregate", depth, x, tokens, 0.0, color, hover, sum(n.members for n in group))


# -- figure step -------------------------------------------------------------------------------


def _dag_figure(info: DagInfo) -> go.Figure:
    import plotly.graph_objects as go

    scatter = go.Scattergl if len(info.nodes) > WEBGL_ABOVE else go.Scatter
    fig = go.Figure()
    if info.edge_x:
        fig.add_trace(
            scatter(
                x=list(info.edge_x), y=list(info.edge_y), mode="lines", hoverinfo="skip",
                line={"color": "rgba(120,120,120,0.45)", "width": 1}, name="sources", showlegend=False,
            )
        )
    for kind, color, y, name in (("leaf", "#4C78A8", -0.55, "leaf sources"), ("raw", "#BAB0AC", -0.85, "raw messages")):
        spans = [s for s in info.spans if s.kind == kind]
        if not spans:
            continue
        xs: list[Any] = []
        ys: list[float | None] = []
        for i, s in enumerate(spans):
            offset = 0.08 if (kind == "leaf" and i % 2) else 0.0
            xs += [s.x0, s.x1, None]
            ys += [y - offset, y - offset, None]
        fig.add_trace(scatter(x=xs, y=ys, mode="lines", line={"color": color, "width": 6}, name=name, hoverinfo="skip"))
        fig.add_trace(
            scatter(
                x=[_mid(s.x0, s.x1) for s in spans],
                y=[y - (0.08 if (kind == "leaf" and i % 2) else 0.0) for i, s in enumerate(spans)],
                mode="markers", marker={"size": 6, "color": color, "opacity": 0},
                hovertext=[s.hover for s in spans], hoverinfo="text", showlegend=False, name=name,
            )
        )
    if info.categorical:
        for label in sorted({str(n.color) for n in info.nodes}):
            group = [n for n in info.nodes if str(n.color) == label]
            fig.add_trace(
                scatter(
                    x=[n.x for n in group], y=[n.depth for n in group], mode="markers", name=html.escape(label),
                    marker={"size": [n.size for n in group], "color": category_color(info.color_by, label),
                            "line": {"width": 0.5, "color": "white"}},
                    hovertext=[n.hover for n in group], hoverinfo="text", customdata=[n.node_id for n in group],
                )
            )
    else:
        missing = [n for n in info.nodes if n.color is None]
        if missing:
            fig.add_trace(
                scatter(
                    x=[n.x for n in missing], y=[n.depth for n in missing], mode="markers", name=f"no {info.color_by}",
                    marker={"size": [n.size for n in missing], "color": KIND_COLORS["aggregate"]},
                    hovertext=[n.hover for n in missing], hoverinfo="text", customdata=[n.node_id for n in missing],
                )
            )
        valued = [n for n in info.nodes if n.color is not None]
        fig.add_trace(
            scatter(
                x=[n.x for n in valued], y=[n.depth for n in valued], mode="markers", name=info.color_by,
                marker={"size": [n.size for n in valued], "color": [n.color for n in valued],
                        "colorscale": CONTINUOUS_SCALE, "showscale": True,
                        "colorbar": {"title": {"text": info.color_by}}, "line": {"width": 0.5, "color": "white"}},
                hovertext=[n.hover for n in valued], hoverinfo="text",
                customdata=[n.node_id for n in valued], showlegend=False,
            )
        )
    depths = list(range(info.max_depth + 1))
    title, top = wrapped_title(info.title)
    fig.update_layout(
        title={"text": title},
        template="plotly_white",
        height=300 + 70 * info.max_depth + top + LEGEND_ROOM,
        hovermode="closest",
        xaxis={"title": {"text": "message seq" if info.x_axis == "seq" else "time"}, "zeroline": False},
        yaxis={"tickvals": [-0.7, *depths], "ticktext": ["messages", *(f"depth {d}" for d in depths)],
               "range": [-1.2, info.max_depth + 0.6], "zeroline": False},
        legend=LEGEND_ON_TOP,
        margin={"l": 70, "r": 20, "t": top + LEGEND_ROOM, "b": 40},
    )
    return fig


def _mid(a: Any, b: Any) -> Any:
    return _midpoint(a, b) if isinstance(a, datetime) else (a + b) / 2


def plot_dag(
    obj: DagInput,
    color_by: ColorBy = "kind",
    scores: Mapping[str, float] | None = None,
    x_axis: XAxis = "seq",
    max_nodes: int | None = None,
    until_turn: int | None = None,
    title: str | None = None,
) -> go.Figure:
    """Layered plot of the summary DAG of a ``Replay``, a loaded ``Conversation`` or summaries.

    Example: ``plot_dag(replay, color_by="level")`` or ``plot_dag(conv, color_by="score",
    scores={"sum_…": 0.8})``. See :func:`dag_info` for the parameters.
    """
    return _dag_figure(
        dag_info(obj, color_by=color_by, scores=scores, x_axis=x_axis, max_nodes=max_nodes,
                 until_turn=until_turn, title=title)
    )
