"""What the model receives per turn under each lossless-claw version of a comparison
(:func:`lcm_lab.compare_versions`): one line of sent tokens per engine, markers on clamped and
degraded turns, and a shaded band on every turn whose context differs from the baseline's.
``plot_version_turns(cmp)`` is ``_version_turns_figure(version_turns_info(cmp))``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from lcm_lab.errors import OptionError
from lcm_lab.viz._style import run_colors, wrapped_title

if TYPE_CHECKING:
    import plotly.graph_objects as go


class EngineTurns(NamedTuple):
    engine: str
    turns: tuple[int, ...]
    sent_tokens: tuple[int, ...]
    summaries_sent: tuple[int, ...]
    paths: tuple[str, ...]
    clamped_turns: tuple[int, ...]
    degraded_turns: tuple[int, ...]


class VersionTurnsInfo(NamedTuple):
    engines: tuple[EngineTurns, ...]
    differing_turns: tuple[int, ...]  # turns where any engine's context differs from the baseline's
    token_budget: int
    title: str


def version_turns_info(comparison: Any) -> VersionTurnsInfo:
    """The per-turn series of a :class:`~lcm_lab.upgrade.VersionComparison` (pure, no plotly)."""
    if not (hasattr(comparison, "versions") and hasattr(comparison, "turns")):
        raise OptionError(f"expected a VersionComparison (what lab.compare_versions(...) returns), got {type(comparison).__name__}")
    engines = []
    for engine in comparison.versions:
        rows = [r for r in comparison.turns if r["engine"] == engine]
        engines.append(EngineTurns(
            engine, tuple(int(r["turn"]) for r in rows), tuple(int(r["sent_tokens"]) for r in rows),
            tuple(int(r["summaries_sent"]) for r in rows), tuple(str(r["path"]) for r in rows),
            tuple(int(r["turn"]) for r in rows if r["clamped"]), tuple(int(r["turn"]) for r in rows if r["degraded"]),
        ))  # fmt: skip
    differing = sorted({int(r["turn"]) for r in comparison.turns if r["differs_bytes"]})
    name = comparison.title or comparison.session_id
    return VersionTurnsInfo(tuple(engines), tuple(differing), int(comparison.token_budget),
                            f"What the model receives per turn: lossless-claw {' vs '.join(comparison.versions)} · {name}")  # fmt: skip


def _version_turns_figure(info: VersionTurnsInfo) -> go.Figure:
    import plotly.graph_objects as go

    fig = go.Figure()
    for turn in info.differing_turns:
        fig.add_vrect(x0=turn - 0.5, x1=turn + 0.5, fillcolor="#f2c94c", opacity=0.18, line_width=0, layer="below")
    colors = run_colors(s.engine for s in info.engines)
    for series in info.engines:
        color = colors[series.engine]
        hover = [f"turn {t}<br>{p}<br>{n} summaries sent" for t, p, n in zip(series.turns, series.paths, series.summaries_sent, strict=True)]
        fig.add_scatter(x=list(series.turns), y=list(series.sent_tokens), mode="lines", name=f"{series.engine}: sent tokens",
                        line={"color": color, "width": 2}, hovertext=hover, hoverinfo="text+y")  # fmt: skip
        by_turn = dict(zip(series.turns, series.sent_tokens, strict=True))
        for turns, symbol, what in ((series.clamped_turns, "x", "clamped"), (series.degraded_turns, "triangle-down", "degraded")):
            if turns:
                fig.add_scatter(x=list(turns), y=[by_turn[t] for t in turns], mode="markers", name=f"{series.engine}: {what}",
                                marker={"color": color, "symbol": symbol, "size": 8})  # fmt: skip
    fig.add_hline(y=info.token_budget, line_dash="dash", line_color="#888", annotation_text=f"budget {info.token_budget:,}")
    title, top = wrapped_title(info.title)  # it names the session
    fig.update_layout(title=title, xaxis_title="turn (shaded: the context differs from the first version's)",
                      yaxis_title="tokens sent", yaxis_range=[0, info.token_budget * 1.1], legend={"orientation": "h", "y": -0.25},
                      margin={"t": top + 10})  # fmt: skip
    return fig


def plot_version_turns(comparison: Any) -> go.Figure:
    """Sent tokens per turn under each engine of a version comparison, differing turns shaded."""
    return _version_turns_figure(version_turns_info(comparison))
