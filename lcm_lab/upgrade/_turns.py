"""Per turn, what the model receives under each engine version, and whether it differs.

A turn's record is the engine-level ``assemble`` at the start of that turn (``Replay.sent(k)``, the
per-turn call of the reference runs): its path, whether the final clamp fired, how many summaries it
sends, its serialized token estimate, a hash of its bytes and a hash of its *shape*. Bytes are the
canonical JSON of every message sent with summary ids replaced by creation-order keys ``S1, S2, …``
(``engine/replay/trace.py`` ``CanonicalJson``, as the reference traces hash them); the shape is the
structure with each summary written as kind, depth and the message range it covers, so two versions
that send the same summaries under different wording have the same shape.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from lcm_lab.engine.replay.trace import CanonicalJson, summary_keys
from lcm_lab.engine.types import AssembledItem, SentContext, Summary

TURN_COLUMNS: tuple[str, ...] = (
    "turn", "engine", "path", "clamped", "degraded", "summaries_sent", "messages_sent", "sent_tokens",
    "messages_sha256", "shape_sha256", "differs_bytes", "differs_shape",
)  # fmt: skip


def _covered(summary_id: str, summaries: Mapping[str, Summary], memo: dict[str, tuple[int, int] | None]) -> tuple[int, int] | None:
    """The first and last message seq a summary stands for (through its sources for condensed ones)."""
    if summary_id in memo:
        return memo[summary_id]
    memo[summary_id] = None  # a cycle in a loaded DAG must not recurse forever
    found = summaries.get(summary_id)
    seqs: list[int] = []
    if found is not None:
        seqs.extend(found.source_message_seqs)
        for source in found.source_summary_ids:
            span = _covered(source, summaries, memo)
            if span is not None:
                seqs.extend(span)
    memo[summary_id] = (min(seqs), max(seqs)) if seqs else None
    return memo[summary_id]


def shape_of(items: Sequence[AssembledItem], summaries: Mapping[str, Summary], memo: dict[str, tuple[int, int] | None]) -> list[Any]:
    """The structure of a sent context: raw messages by seq, live messages by input line, summaries
    as ``[kind, depth, first seq, last seq]``.

    >>> from lcm_lab.engine.types import AssembledItem, Summary
    >>> leaf = Summary("sum_a", "leaf", 0, "…", 10, source_message_seqs=(1, 2, 3))
    >>> shape_of([AssembledItem("user", "summary", "sum_a", {}, 10), AssembledItem("user", "message", 4, {}, 5)], {"sum_a": leaf}, {})
    [['summary', 'leaf', 0, 1, 3], ['message', 'user', 4]]
    """
    out: list[Any] = []
    for item in items:
        if item.kind == "summary":
            found = summaries.get(str(item.ref))
            span = _covered(str(item.ref), summaries, memo)
            out.append(["summary", found.kind if found else None, found.depth if found else None, *(span or (None, None))])
        elif item.kind in ("message", "live"):
            out.append([item.kind, item.role, item.ref])
        else:
            out.append([item.kind, item.role])
    return out


def _sha(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, separators=(",", ":")).encode()).hexdigest()


def sent_turns(run: Any) -> list[SentContext]:
    """The per-turn calls of a replay at its own budget (one per turn)."""
    return [run.sent(k) for k in range(len(run.turns))]


def turn_rows(runs: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per (turn, engine) in turn order; ``differs_*`` compare with the first engine
    (``None`` on its own rows)."""
    engines = list(runs)
    lengths = {engine: len(run.turns) for engine, run in runs.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"the replays split the input into different numbers of turns: {lengths}")
    per_engine: dict[str, list[dict[str, Any]]] = {}
    for engine, run in runs.items():
        canonical = CanonicalJson(summary_keys(run))
        summaries = run.summaries_by_id
        memo: dict[str, tuple[int, int] | None] = {}
        rows = []
        for sent in sent_turns(run):
            rows.append({
                "turn": sent.turn, "engine": engine, "path": sent.path, "clamped": sent.clamped, "degraded": sent.degraded,
                "summaries_sent": sent.summary_count,
                "messages_sent": len(sent.items), "sent_tokens": sent.estimated_tokens,
                "messages_sha256": canonical.sha256(sent.items),
                "shape_sha256": _sha(shape_of(sent.items, summaries, memo)),
            })  # fmt: skip
        per_engine[engine] = rows
    base = per_engine[engines[0]]
    out: list[dict[str, Any]] = []
    for k in range(len(base)):
        for engine in engines:
            row = per_engine[engine][k]
            if engine == engines[0]:
                row |= {"differs_bytes": None, "differs_shape": None}
            else:
                row |= {"differs_bytes": row["messages_sha256"] != base[k]["messages_sha256"],
                        "differs_shape": row["shape_sha256"] != base[k]["shape_sha256"]}  # fmt: skip
            out.append(row)
    return out


def totals(runs: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per engine: summarizer calls, summaries, clamped and degraded turns, summaries sent
    per turn, sent tokens, final stored tokens, per-turn paths and — for every engine but the
    first — the turns whose context differs from the first engine's (bytes, shape)."""
    out = []
    for engine, run in runs.items():
        mine = [r for r in rows if r["engine"] == engine]
        n = len(mine)
        paths = Counter(r["path"] for r in mine)
        differs = [r for r in mine if r["differs_bytes"] is not None]
        out.append({
            "engine": engine,
            "turns": n,
            "summarizer_calls": sum(len(t.calls) for t in run.turns),
            "summaries": len(run.summaries),
            "leaves": sum(1 for s in run.summaries if s.kind == "leaf"),
            "condensed": sum(1 for s in run.summaries if s.kind == "condensed"),
            "max_depth": max((s.depth for s in run.summaries), default=None),  # None: no summaries
            "clamped_turns": sum(1 for r in mine if r["clamped"]),
            "degraded_turns": sum(1 for r in mine if r["degraded"]),
            "summaries_sent_per_turn": sum(r["summaries_sent"] for r in mine) / n if n else None,
            "mean_sent_tokens": sum(r["sent_tokens"] for r in mine) / n if n else None,
            "peak_sent_tokens": max((r["sent_tokens"] for r in mine), default=0),
            "final_stored_tokens": run.final_tokens,
            "turns_differing_bytes": sum(1 for r in differs if r["differs_bytes"]) if differs else None,
            "turns_differing_shape": sum(1 for r in differs if r["differs_shape"]) if differs else None,
            "paths": dict(sorted(paths.items())),
        })  # fmt: skip
    return out
