"""Saving replays to the lab store and rebuilding them.

``save_replay`` writes the run (exactly, as compressed JSON) and its facts as tables;
``load_replay`` gives the identical :class:`~lcm_lab.engine.replay.Replay` back.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import zlib
from collections.abc import Mapping
from typing import Any

import pandas as pd
import polars as pl

from lcm_lab.engine.config import LcmConfig
from lcm_lab.engine.replay import Replay
from lcm_lab.engine.types import (
    ContextItem,
    Conversation,
    DebtSnapshot,
    DrainAttempt,
    InputEntry,
    LargeFile,
    StoredMessage,
    StoredPart,
    SummarizerCall,
    Summary,
    SweepRecord,
    TurnRecord,
)
from lcm_lab.store.core import LabStore

_TYPE_KEY = "__lcm_lab_type__"
_TYPES: dict[str, type] = {
    cls.__name__: cls
    for cls in (
        Replay, LcmConfig, Conversation, InputEntry, StoredMessage, StoredPart, Summary, ContextItem,
        LargeFile, TurnRecord, SweepRecord, SummarizerCall, DebtSnapshot, DrainAttempt,
    )
}  # fmt: skip


def _encode(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {_TYPE_KEY: type(value).__name__}
        for f in dataclasses.fields(value):
            out[f.name] = _encode(getattr(value, f.name))
        return out
    if isinstance(value, Mapping):
        return {str(k): _encode(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_encode(v) for v in value]
    return value


def _decode(value: Any) -> Any:
    if isinstance(value, dict):
        type_name = value.get(_TYPE_KEY)
        if type_name is None:
            return {k: _decode(v) for k, v in value.items()}
        cls = _TYPES[type_name]
        kwargs = {}
        for f in dataclasses.fields(cls):
            if f.name in value:
                item = _decode(value[f.name])
                # Every sequence field of the lab's values is a tuple; nested JSON keeps lists.
                kwargs[f.name] = tuple(item) if isinstance(item, list) else item
        return cls(**kwargs)
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def replay_to_bytes(replay: Replay) -> bytes:
    return zlib.compress(json.dumps(_encode(replay), ensure_ascii=False, separators=(",", ":")).encode("utf-8"), 6)


def replay_from_bytes(payload: bytes) -> Replay:
    replay = _decode(json.loads(zlib.decompress(payload).decode("utf-8")))
    if not isinstance(replay, Replay):
        raise ValueError("stored payload is not a replay")
    return replay


def new_run_id(replay: Replay, payload: bytes) -> str:
    """A short content-derived id: the same replay saved twice gets the same id."""
    return "run_" + hashlib.sha256(payload).hexdigest()[:12]


def save_replay(store: LabStore, replay: Replay, *, label: str | None = None, conversation_id: int | None = None) -> str:
    """Persist ``replay``; returns its run id (re-saving an identical replay is a no-op)."""
    payload = replay_to_bytes(replay)
    run_id = replay.run_id or new_run_id(replay, payload)
    if store.fetch_all("SELECT 1 FROM replays WHERE run_id = ?", [run_id]):
        return run_id
    replay = dataclasses.replace(replay, run_id=run_id)
    payload = replay_to_bytes(replay)
    calls = sum(len(t.calls) for t in replay.turns)
    with store.transaction():
        store.execute(
            "INSERT INTO replays (run_id, label, conversation_id, session_id, source, summarizer, fidelity, token_budget,"
            " config, turns, messages, summaries, summarizer_calls, final_stored_tokens, payload, compaction_mode)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                run_id, label, conversation_id, replay.conversation.session_id, replay.conversation.source,
                replay.summarizer, replay.fidelity, replay.token_budget, json.dumps(_encode(replay.config)),
                len(replay.turns), len(replay.messages), len(replay.summaries), calls,
                replay.final_tokens, payload, replay.compaction_mode,
            ],
        )  # fmt: skip
        _insert_frame(store, "replay_turns", _turn_rows(run_id, replay))
        _insert_frame(store, "replay_sent", _sent_rows(run_id, replay))
        _insert_frame(store, "replay_summaries", _summary_rows(run_id, replay))
        _insert_frame(store, "replay_summary_sources", _source_rows(run_id, replay))
        _insert_frame(store, "replay_calls", _call_rows(run_id, replay))
    return run_id


def _insert_frame(store: LabStore, table: str, rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    frame = pd.DataFrame(rows)
    store.con.register("_lcm_lab_rows", frame)
    try:
        columns = ", ".join(frame.columns)
        store.execute(f"INSERT INTO {table} ({columns}) SELECT {columns} FROM _lcm_lab_rows")
    finally:
        store.con.unregister("_lcm_lab_rows")


def _turn_rows(run_id: str, replay: Replay) -> list[dict[str, Any]]:
    return [
        {
            "run_id": run_id,
            "turn": t.turn,
            "first_line": t.lines[0] if t.lines else None,
            "last_line": t.lines[1] if t.lines else None,
            "ingested": len(t.ingested_seqs),
            "stored_tokens_before": t.stored_tokens_before,
            "threshold": t.threshold,
            "should_compact": t.should_compact,
            "compacted": t.compacted,
            "sweeps": len(t.sweeps),
            "summarizer_calls": len(t.calls),
            "summaries_created": len(t.created_summary_ids),
            "tokens_after": t.tokens_after,
            "tokens_end": t.final_tokens,
            "context_items": len(t.final_context),
        }
        for t in replay.turns
    ]


def _sent_rows(run_id: str, replay: Replay) -> list[dict[str, Any]]:
    """One row per engine-level assemble call at the run budget (per turn, and the end of the run as turn -1)."""
    calls = [replay.sent(t.turn) for t in replay.turns] + ([replay.sent()] if replay.turns else [])
    return [
        {
            "run_id": run_id,
            "turn": -1 if sent.turn is None else sent.turn,
            "token_budget": sent.token_budget,
            "path": sent.path,
            "clamped": sent.clamped,
            "degraded": sent.degraded,
            "estimated_tokens": sent.estimated_tokens,
            "prompt_tokens": None if sent.prompt is None else sent.prompt.tokens,
            "bare_tokens": None if sent.bare is None else sent.bare.estimated_tokens,
            "messages": len(sent.items),
            "summaries": sum(1 for item in sent.items if item.kind == "summary"),
            "emergency_drain": None if sent.emergency_drain is None else sent.emergency_drain.outcome,
        }
        for sent in calls
    ]


def replay_sent_df(store: LabStore, run_id: str) -> pd.DataFrame:
    """What the model received in a saved run, per call (``turn = -1``: after the run)."""
    return store.fetch_df("SELECT * EXCLUDE (run_id) FROM replay_sent WHERE run_id = ? ORDER BY turn = -1, turn", [run_id])


def _summary_rows(run_id: str, replay: Replay) -> list[dict[str, Any]]:
    return [
        {
            "run_id": run_id,
            "summary_id": s.summary_id,
            "ordinal": i,
            "created_turn": s.created_turn,
            "kind": s.kind,
            "depth": s.depth,
            "level": s.level,
            "token_count": s.token_count,
            "source_message_token_count": s.source_message_token_count,
            "descendant_count": s.descendant_count,
            "earliest_at": s.earliest_at,
            "latest_at": s.latest_at,
            "model": s.model,
            "content": s.content,
        }
        for i, s in enumerate(replay.summaries)
    ]


def _source_rows(run_id: str, replay: Replay) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for s in replay.summaries:
        for i, source in enumerate(s.source_summary_ids):
            rows.append({"run_id": run_id, "summary_id": s.summary_id, "ordinal": i, "source_summary_id": source, "source_seq": None})
        for i, seq in enumerate(s.source_message_seqs):
            rows.append({"run_id": run_id, "summary_id": s.summary_id, "ordinal": i, "source_summary_id": None, "source_seq": seq})
    return rows


def _call_rows(run_id: str, replay: Replay) -> list[dict[str, Any]]:
    return [
        {
            "run_id": run_id,
            "turn": t.turn,
            "call_index": i,
            "kind": c.kind,
            "depth": c.depth,
            "aggressive": c.aggressive,
            "source_tokens": c.source_tokens,
            "output_tokens": c.output_tokens,
            "target_tokens": c.target_tokens,
            "model": c.model,
            "template_hash": c.template_hash,
            "latency_ms": c.latency_ms,
            "cost_usd": c.cost_usd,
            "cached": c.cached,
        }
        for t in replay.turns
        for i, c in enumerate(t.calls)
    ]


def load_replay(store: LabStore, run_id: str) -> Replay:
    """The replay saved under ``run_id``, exactly as it was."""
    rows = store.fetch_all("SELECT payload FROM replays WHERE run_id = ?", [run_id])
    if not rows:
        known = ", ".join(r[0] for r in store.fetch_all("SELECT run_id FROM replays ORDER BY created_at DESC LIMIT 5"))
        raise KeyError(f"no replay {run_id!r} in {store.path}" + (f" (recent: {known})" if known else " (the store has no replays yet)"))
    return replay_from_bytes(bytes(rows[0][0]))


def latest_run_id(store: LabStore) -> str | None:
    rows = store.fetch_all("SELECT run_id FROM replays ORDER BY created_at DESC, run_id LIMIT 1")
    return rows[0][0] if rows else None


_REPLAYS_COLUMNS = (
    "run_id, created_at, label, session_id, source, summarizer, fidelity, token_budget, turns, messages,"
    " summaries, summarizer_calls, final_stored_tokens"
)


def replays_df(store: LabStore) -> pd.DataFrame:
    return store.fetch_df(f"SELECT {_REPLAYS_COLUMNS} FROM replays ORDER BY created_at")


def replays_pl(store: LabStore) -> pl.DataFrame:
    return store.fetch_pl(f"SELECT {_REPLAYS_COLUMNS} FROM replays ORDER BY created_at")
