"""Counts of a replay (turns, messages, summaries by kind and depth, tokens): the headline numbers
the playground, the report and notebooks print. Counts, not statistics (those are in
:mod:`lcm_lab.metrics.stats`)."""

from __future__ import annotations

from collections import Counter
from typing import Any, NamedTuple


class ReplayStats(NamedTuple):
    turns: int
    messages: int
    message_tokens: int
    summaries: int
    leaves: int
    condensed: int
    summaries_by_depth: dict[int, int]
    max_depth: int
    levels: dict[str, int]
    compacting_turns: int
    sweeps: int
    summarizer_calls: int
    peak_stored_tokens: int
    final_tokens: int
    token_budget: int
    compression: float | None  # message tokens / final context tokens
    clamped_turns: int = 0  # turns whose model context the engine clamped
    degraded_turns: int = 0  # turns whose model context was the raw live history (no summaries)


def replay_stats(replay: Any) -> ReplayStats:
    """Counts and token totals of a ``Replay`` (a run of another strategy, which has no summaries
    or stored context, is a :class:`~lcm_lab.strategies.base.NotAnLcmRunError`).

    >>> from lcm_lab.engine.replay.driver import Replay
    >>> from lcm_lab.engine.config.lcm_config import LcmConfig
    >>> from lcm_lab.engine.types import Conversation
    >>> replay_stats(Replay(Conversation("x"), LcmConfig(), 1000, "offline", (), (), ())).summaries
    0
    """
    from lcm_lab.strategies.base import lcm_replay

    replay = lcm_replay(replay, "replay_stats")
    depths = Counter(s.depth for s in replay.summaries)
    message_tokens = sum(m.token_count for m in replay.messages)
    final = replay.turns[-1].final_tokens if replay.turns else 0
    return ReplayStats(
        turns=len(replay.turns),
        messages=len(replay.messages),
        message_tokens=message_tokens,
        summaries=len(replay.summaries),
        leaves=sum(1 for s in replay.summaries if s.kind == "leaf"),
        condensed=sum(1 for s in replay.summaries if s.kind == "condensed"),
        summaries_by_depth=dict(sorted(depths.items())),
        max_depth=max(depths, default=-1),
        levels=dict(Counter(s.level or "unknown" for s in replay.summaries).most_common()),
        compacting_turns=sum(1 for t in replay.turns if t.compacted),
        sweeps=sum(len(t.sweeps) for t in replay.turns),
        summarizer_calls=sum(len(t.calls) for t in replay.turns),
        peak_stored_tokens=max((t.stored_tokens_before for t in replay.turns), default=0),
        final_tokens=final,
        token_budget=int(replay.token_budget),
        compression=(message_tokens / final) if final else None,
        clamped_turns=sum(1 for t in replay.turns if replay.sent_facts(t.turn).clamped),
        degraded_turns=sum(1 for t in replay.turns if replay.sent_facts(t.turn).degraded),
    )


def stats_line(stats: ReplayStats) -> str:
    """One plain-text line of the stats (no transcript text, safe to embed in HTML)."""
    by_depth = ", ".join(f"d{d}: {n}" for d, n in stats.summaries_by_depth.items()) or "none"
    ratio = f" · compression {stats.compression:.1f}×" if stats.compression else ""
    return (
        f"{stats.turns} turns · {stats.messages} messages ({stats.message_tokens:,} tokens) · "
        f"summaries {stats.summaries} ({by_depth}) · final context {stats.final_tokens:,} / {stats.token_budget:,} tokens{ratio}"
        f" · model context clamped on {stats.clamped_turns}, degraded on {stats.degraded_turns} turns"
    )
