"""Saving replays to the lab store and rebuilding them.

``save_replay`` writes the run (exactly, as compressed JSON) and its facts as tables;
``load_replay`` gives the identical :class:`~lcm_lab.engine.replay.driver.Replay` back. Runs of other
context strategies (:class:`~lcm_lab.strategies.base.StrategyRun`) are saved the same way with
their strategy name and parameters, and come back as they were; :func:`load_strategy_run` gives
any run as a ``StrategyRun``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import zlib
from collections.abc import Iterator, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, NamedTuple

import pandas as pd

from lcm_lab.errors import UnknownNameError, shown_path

if TYPE_CHECKING:
    import polars as pl

from lcm_lab.engine.compaction.pending.maintenance import PhaseRecord
from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.replay.driver import Replay
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
from lcm_lab.io.redaction import redact, redact_rows, secret_values
from lcm_lab.io.surrogates import escape_lone_in_json
from lcm_lab.store.core import LabStore
from lcm_lab.store.opening import DamagedStoreError
from lcm_lab.store.stored import stored_json, stored_payload
from lcm_lab.strategies.base import MemoryItem, ModelCall, StrategyRun, StrategyTurn
from lcm_lab.summarizers import rebuild_summarizer

_TYPE_KEY = "__lcm_lab_type__"
_TYPES: dict[str, type] = {
    cls.__name__: cls
    for cls in (
        Replay, LcmConfig, Conversation, InputEntry, StoredMessage, StoredPart, Summary, ContextItem,
        LargeFile, TurnRecord, SweepRecord, SummarizerCall, DebtSnapshot, DrainAttempt,
        StrategyRun, StrategyTurn, ModelCall, MemoryItem, PhaseRecord,
    )
}  # fmt: skip


_SCALARS = frozenset({str, int, float, bool, type(None)})
_FIELD_NAMES: dict[type, tuple[str, ...] | None] = {}  # per type: its dataclass fields, or None


def _encode(value: Any) -> Any:
    # Type-dispatched: replays hold about a million values, and dataclasses.is_dataclass /
    # fields per value cost more than the encoding itself.
    cls = type(value)
    if cls in _SCALARS:
        return value
    if cls is list or cls is tuple:
        refs = _context_refs(value)
        if refs is not None:
            return {_TYPE_KEY: _CONTEXT_REFS, "refs": refs}
        return [_encode(v) for v in value]
    if cls is dict:
        return {str(k): _encode(v) for k, v in value.items()}
    names = _stored_fields(cls)
    if names is not None:
        out = {_TYPE_KEY: cls.__name__}
        for name in names:
            out[name] = _encode(getattr(value, name))
        return out
    if isinstance(value, Mapping):
        return {str(k): _encode(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_encode(v) for v in value]
    return value


# A context (a turn's items, thousands at a big budget) is stored as its refs: a message's seq
# (an int) or a summary's id (a string), not an object per item (a 20k-message run at a 128k
# budget: 233 of 292 MB of JSON text, 2.7M objects to build when it was loaded).
_CONTEXT_REFS = "ContextRefs"


def _context_refs(items: Sequence[Any]) -> list[int | str] | None:
    """The refs of a sequence of context items, or ``None`` when it is anything else."""
    if not items or type(items[0]) is not ContextItem:
        return None
    refs: list[int | str] = []
    for item in items:
        if type(item) is not ContextItem:
            return None
        ref = item.ref
        if not ((item.kind == "message" and type(ref) is int) or (item.kind == "summary" and type(ref) is str)):
            return None
        refs.append(ref)
    return refs


def _stored_fields(cls: type) -> tuple[str, ...] | None:
    """The dataclass fields of ``cls`` that are stored (``None``: not a dataclass). Fields marked
    ``stored: False`` (a replay's summarizer object) are live-only."""
    names = _FIELD_NAMES.get(cls, ())
    if names == ():
        names = tuple(f.name for f in dataclasses.fields(cls) if f.metadata.get("stored", True)) if dataclasses.is_dataclass(cls) else None
        _FIELD_NAMES[cls] = names
    return names


_dumps = partial(json.dumps, ensure_ascii=False, separators=(",", ":"))


def _json_pieces(value: Any, depth: int = 2) -> Iterator[str]:
    """The JSON text of ``_encode(value)``, in pieces: a dataclass field by field and a list item
    by item, ``depth`` levels down (a replay's turns and summaries, its conversation's entries),
    so no piece is more than one such item."""
    names = _stored_fields(type(value))
    if names is None or depth < 0:
        yield _dumps(_encode(value))
        return
    yield "{" + _dumps(_TYPE_KEY) + ":" + _dumps(type(value).__name__)
    for name in names:
        field = getattr(value, name)
        yield "," + _dumps(name) + ":"
        if type(field) in (list, tuple) and _context_refs(field) is None:
            yield "["
            for index, item in enumerate(field):
                if index:
                    yield ","
                yield from _json_pieces(item, depth - 1)
            yield "]"
        else:
            yield from _json_pieces(field, depth - 1)
    yield "}"


def _decode(value: Any, items: dict[tuple[str, int | str], ContextItem]) -> Any:
    """The value :func:`_encode` encoded; ``items`` holds one :class:`ContextItem` per distinct
    item, shared by every context that refers to it (as the replay shared them)."""
    if isinstance(value, dict):
        type_name = value.get(_TYPE_KEY)
        if type_name is None:
            return {k: _decode(v, items) for k, v in value.items()}
        if type_name == _CONTEXT_REFS:
            return tuple(_item("message" if type(ref) is int else "summary", ref, items) for ref in value["refs"])
        cls = _TYPES[type_name]
        if cls is ContextItem:  # a payload from before contexts were stored as refs
            return _item(value["kind"], value["ref"], items)
        kwargs = {}
        for f in dataclasses.fields(cls):
            if f.name in value:
                item = _decode(value[f.name], items)
                # Every sequence field of the lab's values is a tuple; nested JSON keeps lists.
                kwargs[f.name] = tuple(item) if isinstance(item, list) else item
        return cls(**kwargs)
    if isinstance(value, list):
        return [_decode(v, items) for v in value]
    return value


def _item(kind: str, ref: int | str, items: dict[tuple[str, int | str], ContextItem]) -> ContextItem:
    found = items.get((kind, ref))
    if found is None:
        found = items[(kind, ref)] = ContextItem(kind, ref)  # type: ignore[arg-type]
    return found


def _payload_bytes(text: str, secrets: Any) -> bytes:
    # A lone surrogate (from a transcript's "\\ud800") is kept as its JSON escape: the same value.
    return escape_lone_in_json(redact(text, secrets)).encode("utf-8")


def replay_to_bytes(replay: Replay | StrategyRun) -> bytes:
    """The stored payload: the replay as JSON, secrets redacted (:mod:`lcm_lab.io.redaction`;
    the conversation's own messages stay in the messages table as loaded), compressed."""
    # Encoded, redacted and compressed about a megabyte of text at a time (the whole text of a
    # 20k-message run at a 128k budget took 1.1 GB at once). Pieces end between JSON values, so
    # a secret (no quotes or commas in it) never straddles two; the bytes equal the one-shot
    # compression of the whole text (a run's id is derived from them).
    secrets = secret_values()
    compressor = zlib.compressobj(6)
    out: list[bytes] = []
    pending: list[str] = []
    size = 0
    for piece in _json_pieces(replay):
        pending.append(piece)
        size += len(piece)
        if size >= _PAYLOAD_STEP:
            out.append(compressor.compress(_payload_bytes("".join(pending), secrets)))
            pending, size = [], 0
    out.append(compressor.compress(_payload_bytes("".join(pending), secrets)))
    out.append(compressor.flush())
    return b"".join(out)


_PAYLOAD_STEP = 1 << 20  # characters of JSON text encoded per step of replay_to_bytes


def replay_from_bytes(payload: bytes, what: str = "a stored replay") -> Replay | StrategyRun:
    """The run in a stored payload; a :class:`DamagedStoreError` naming ``what`` (the run) when the
    bytes are not a replay the lab wrote (:mod:`lcm_lab.store.stored`). An LCM replay whose
    summarizer the lab can build exactly again (:func:`~lcm_lab.summarizers.rebuild_summarizer`:
    the offline one, the stubs) carries it for the drains of its question turns, as it did live."""
    replay = _decode(stored_payload(payload, what), {})
    if isinstance(replay, StrategyRun):
        return dataclasses.replace(replay, memories=tuple(tuple(m) for m in replay.memories))
    if not isinstance(replay, Replay):
        raise DamagedStoreError(f"the lab store is damaged: {what} is not a replay; delete it from the store or restore a backup")
    rebuilt = rebuild_summarizer(replay.summarizer, (call.model for turn in replay.turns for call in turn.calls))
    return replay if rebuilt is None else dataclasses.replace(replay, compaction_summarizer=rebuilt)


def new_run_id(replay: Replay | StrategyRun, payload: bytes) -> str:
    """A short content-derived id: the same replay saved twice gets the same id."""
    return "run_" + hashlib.sha256(payload).hexdigest()[:12]


def save_replay(
    store: LabStore, replay: Replay | StrategyRun, *, label: str | None = None, conversation_id: int | None = None
) -> str:
    """Persist ``replay`` (an LCM replay or any strategy's run); returns its run id (re-saving an
    identical run is a no-op)."""
    if isinstance(replay, StrategyRun) and replay.replay is None:
        return _save_strategy_run(store, replay, label, conversation_id)
    run_id = (replay.replay if isinstance(replay, StrategyRun) else replay).run_id
    if run_id and store.fetch_all("SELECT 1 FROM replays WHERE run_id = ?", [run_id]):
        return run_id
    return write_encoded_replay(store, encode_replay(replay, label=label, conversation_id=conversation_id))


class EncodedReplay(NamedTuple):
    """An LCM replay as the rows :func:`save_replay` writes (payload and fact tables), made
    without a store: a sweep worker encodes, the sweep's one writer only inserts."""

    run_id: str
    row: list[Any]
    frames: dict[str, list[dict[str, Any]]]


def encode_replay(replay: Replay | StrategyRun, *, label: str | None = None, conversation_id: int | None = None) -> EncodedReplay:
    """The rows of an LCM replay (a ``StrategyRun`` carrying one is encoded as that replay)."""
    if isinstance(replay, StrategyRun):
        if replay.replay is None:
            raise ValueError("encode_replay takes LCM replays; save other strategies' runs with save_replay")
        params = dict(replay.strategy_params)
        replay = replay.replay
    else:
        params = replay.config.to_plugin_config(minimal=True)
        if replay.fidelity != "faithful":
            params["fidelity"] = replay.fidelity
    if replay.run_id:
        run_id = replay.run_id
        payload = replay_to_bytes(replay)  # encoded once: the id is already in it
    else:
        run_id = new_run_id(replay, replay_to_bytes(replay))
        replay = dataclasses.replace(replay, run_id=run_id)
        payload = replay_to_bytes(replay)
    calls = sum(len(t.calls) for t in replay.turns)
    row = [
        run_id, label, conversation_id, replay.conversation.session_id, replay.conversation.source,
        replay.summarizer, replay.fidelity, replay.token_budget, json.dumps(_encode(replay.config)),
        len(replay.turns), len(replay.messages), len(replay.summaries), calls,
        replay.final_tokens, payload, replay.compaction_mode, json.dumps(params), replay.engine,
    ]  # fmt: skip
    frames = {
        "replay_turns": _turn_rows(run_id, replay),
        "replay_sent": _sent_rows(run_id, replay),
        "replay_summaries": _summary_rows(run_id, replay),
        "replay_summary_sources": _source_rows(run_id, replay),
        "replay_calls": _call_rows(run_id, replay),
    }
    return EncodedReplay(run_id, row, frames)


def write_encoded_replay(store: LabStore, encoded: EncodedReplay) -> str:
    """Insert what :func:`encode_replay` made (a run id already stored is left as it is)."""
    write_encoded_replays(store, [encoded])
    return encoded.run_id


def write_encoded_replays(store: LabStore, batch: Sequence[EncodedReplay]) -> int:
    """Insert many encoded replays in one transaction, one insert per table (a sweep's writer
    batches what its workers send); run ids already stored are skipped. Returns how many were new."""
    if not batch:
        return 0
    ids = list(dict.fromkeys(e.run_id for e in batch))
    known = {r[0] for r in store.fetch_all(f"SELECT run_id FROM replays WHERE run_id IN ({', '.join('?' * len(ids))})", ids)}
    new = list({e.run_id: e for e in batch if e.run_id not in known}.values())
    if not new:
        return 0
    with store.transaction():
        for e in new:
            store.execute(
                "INSERT INTO replays (run_id, label, conversation_id, session_id, source, summarizer, fidelity, token_budget,"
                " config, turns, messages, summaries, summarizer_calls, final_stored_tokens, payload, compaction_mode,"
                " strategy, strategy_params, engine) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'lcm', ?, ?)",
                e.row,
            )
        for table in new[0].frames:
            _insert_frame(store, table, [row for e in new for row in e.frames[table]])
    return len(new)


def _save_strategy_run(store: LabStore, run: StrategyRun, label: str | None, conversation_id: int | None) -> str:
    payload = replay_to_bytes(run)
    run_id = run.run_id or new_run_id(run, payload)
    if store.fetch_all("SELECT 1 FROM replays WHERE run_id = ?", [run_id]):
        return run_id
    run = dataclasses.replace(run, run_id=run_id)
    payload = replay_to_bytes(run)
    params = json.dumps(_encode(run.strategy_params))
    with store.transaction():
        store.execute(
            "INSERT INTO replays (run_id, label, conversation_id, session_id, source, summarizer, fidelity, token_budget,"
            " config, turns, messages, summaries, summarizer_calls, final_stored_tokens, payload, strategy, strategy_params)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?)",
            [
                run_id, label, conversation_id, run.conversation.session_id, run.conversation.source, run.summarizer,
                str(run.strategy_params.get("fidelity", "faithful")), run.token_budget, params, len(run.turns),
                len(run.messages), len(run.calls()), run.turns[-1].context_tokens if run.turns else 0, payload,
                run.strategy, params,
            ],
        )  # fmt: skip
        _insert_frame(store, "strategy_turns", _strategy_turn_rows(run_id, run))
    return run_id


def _turn_keys(run_id: str, t: TurnRecord | StrategyTurn) -> dict[str, Any]:
    return {"run_id": run_id, "turn": t.turn, "first_line": t.lines[0] if t.lines else None,
            "last_line": t.lines[1] if t.lines else None, "ingested": len(t.ingested_seqs)}  # fmt: skip


def _strategy_turn_rows(run_id: str, run: StrategyRun) -> list[dict[str, Any]]:
    return [
        {
            **_turn_keys(run_id, t),
            "context_tokens": t.context_tokens,
            "model_calls": len(t.calls),
            "memory_items": len(run.memories[t.memory]) if t.memory >= 0 else 0,
            "events": json.dumps(list(t.events)),
        }
        for t in run.turns
    ]


def _insert_frame(store: LabStore, table: str, rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    frame = pd.DataFrame(redact_rows(rows))  # summaries and call texts are derived text: no secrets
    store.con.register("_lcm_lab_rows", frame)
    try:
        columns = ", ".join(frame.columns)
        store.execute(f"INSERT INTO {table} ({columns}) SELECT {columns} FROM _lcm_lab_rows")
    finally:
        store.con.unregister("_lcm_lab_rows")


def _turn_rows(run_id: str, replay: Replay) -> list[dict[str, Any]]:
    return [
        {
            **_turn_keys(run_id, t),
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
    calls = [*range(len(replay.turns)), None] if replay.turns else []
    return [
        {
            "run_id": run_id,
            "turn": -1 if facts.turn is None else facts.turn,
            "token_budget": facts.token_budget,
            "path": facts.path,
            "clamped": facts.clamped,
            "degraded": facts.degraded,
            "estimated_tokens": facts.estimated_tokens,
            "prompt_tokens": facts.prompt_message_tokens,
            "bare_tokens": facts.bare_tokens,
            "messages": facts.messages,
            "summaries": facts.summaries,
            "emergency_drain": facts.emergency_drain,
        }
        for facts in map(replay.sent_facts, calls)
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


def load_strategy_run(store: LabStore, run_id: str) -> StrategyRun:
    """Any saved run as a :class:`StrategyRun` (an LCM replay wrapped with its parameters)."""
    from lcm_lab.strategies.lcm import from_replay

    loaded = load_replay(store, run_id)
    if isinstance(loaded, StrategyRun):
        return loaded
    params = store.fetch_all("SELECT strategy_params FROM replays WHERE run_id = ?", [run_id])[0][0]
    return from_replay(loaded, stored_json(params, f"run {run_id}'s strategy_params", object) if params else None)


def load_replay(store: LabStore, run_id: str) -> Replay | StrategyRun:
    """The run saved under ``run_id``, exactly as it was (a ``Replay`` for LCM runs)."""
    rows = store.fetch_all("SELECT payload FROM replays WHERE run_id = ?", [run_id])
    if not rows:
        known = ", ".join(r[0] for r in store.fetch_all("SELECT run_id FROM replays ORDER BY created_at DESC LIMIT 5"))
        raise UnknownNameError(f"no replay {run_id!r} in {shown_path(store.path)}" + (f" (recent: {known})" if known else " (the store has no replays yet)"))
    return replay_from_bytes(rows[0][0], f"run {run_id}'s payload")


def latest_run_id(store: LabStore) -> str | None:
    rows = store.fetch_all("SELECT run_id FROM replays ORDER BY created_at DESC, run_id LIMIT 1")
    return rows[0][0] if rows else None


_REPLAYS_COLUMNS = (
    "run_id, created_at, label, strategy, engine, strategy_params, session_id, source, summarizer, fidelity, token_budget,"
    " turns, messages, summaries, summarizer_calls, final_stored_tokens"
)


def replays_df(store: LabStore) -> pd.DataFrame:
    """Every saved run, oldest first; ``engine`` is the lossless-claw version an LCM run replayed."""
    return store.fetch_df(f"SELECT {_REPLAYS_COLUMNS} FROM replays ORDER BY created_at")


def replays_pl(store: LabStore) -> pl.DataFrame:
    return store.fetch_pl(f"SELECT {_REPLAYS_COLUMNS} FROM replays ORDER BY created_at")


def replay_label(store: LabStore, run_id: str) -> str | None:
    """The label a saved replay was stored under (``None``: unlabelled or not saved)."""
    rows = store.fetch_all("SELECT label FROM replays WHERE run_id = ?", [run_id])
    return rows[0][0] if rows else None


def has_replay(store: LabStore, run_id: str) -> bool:
    """Whether a replay of that run id is saved."""
    return bool(store.fetch_all("SELECT 1 FROM replays WHERE run_id = ?", [run_id]))


def run_ids(store: LabStore) -> list[str]:
    """Every saved replay's run id, oldest first."""
    return [r[0] for r in store.fetch_all("SELECT run_id FROM replays ORDER BY created_at, run_id")]
