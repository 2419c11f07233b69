"""Bulk insert of reader output (:class:`LoadedConversation` values) into the lab tables.

Rows are buffered per table and flushed as Arrow tables (never row by row), so a directory of
large transcripts streams through with bounded memory. A conversation already loaded from the
same path whose entries are a prefix of the new read (a session file that grew) gets only the
new entries appended.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain
from operator import itemgetter
from typing import TYPE_CHECKING, Any

import orjson
import pyarrow as pa

from lcm_lab.engine.ingest import IngestResult
from lcm_lab.engine.types import InputEntry, StoredMessage, StoredPart
from lcm_lab.io.model import LoadedConversation
from lcm_lab.store.projection import StoredProjection, project_entry
from lcm_lab.store.sql_tokens import fill_token_estimates_sql

if TYPE_CHECKING:
    from lcm_lab.store.core import LabStore

PERSISTABLE_ROLES = frozenset({"user", "assistant", "system", "tool", "toolResult"})
_FLUSH_ROWS = 20_000


def _dumps(value: Any) -> str | None:
    if value is None:
        return None
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS, default=_fallback).decode()


def _fallback(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        return value.decode("utf-8", "replace")
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)


@dataclass
class WriteCounts:
    conversations: int = 0
    appended_conversations: int = 0
    messages: int = 0
    entries: int = 0
    summaries: int = 0
    context_items: int = 0
    qa_items: int = 0
    events: int = 0
    not_stored: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


class _Buffers:
    """Column buffers per table, flushed to DuckDB through Arrow."""

    def __init__(self, store: LabStore) -> None:
        self.store = store
        self.rows: dict[str, list[dict[str, Any]]] = {}
        self.pending = 0

    def add(self, table: str, row: dict[str, Any]) -> None:
        self.rows.setdefault(table, []).append(row)
        self.pending += 1
        if self.pending >= _FLUSH_ROWS:
            self.flush()

    def flush(self) -> None:
        for table, rows in self.rows.items():
            if not rows:
                continue
            names = list(dict.fromkeys(chain.from_iterable(rows)))  # union of keys, first-seen order
            if len(names) > 1 and min(map(len, rows)) == len(names):
                # Every row has every column (the usual case): transpose at C speed.
                columns = zip(*map(itemgetter(*names), rows), strict=True)
                arrow = pa.table(dict(zip(names, map(list, columns), strict=True)))
            else:
                arrow = pa.table({name: [row.get(name) for row in rows] for name in names})
            name = f"_lcm_rows_{table}"
            self.store.con.register(name, arrow)
            try:
                self.store.execute(f"INSERT INTO {table} BY NAME SELECT * FROM {name}")
            finally:
                self.store.con.unregister(name)
        self.rows.clear()
        self.pending = 0


@dataclass
class _Existing:
    conversation_id: int
    entry_keys: list[tuple[str | None, str, int | None]]
    max_seq: int
    events: int
    qa_ids: set[str]


def _find_existing(store: LabStore, path: str, session_id: str, taken: set[int]) -> _Existing | None:
    rows = store.fetch_all(
        "SELECT c.conversation_id FROM conversations c JOIN sources s USING (source_id)"
        " WHERE s.path = ? AND s.status IN ('loaded', 'appended') AND c.session_id = ?"
        " ORDER BY c.conversation_id",
        [path, session_id],
    )
    candidates = [int(r[0]) for r in rows if int(r[0]) not in taken]
    if not candidates:
        return None
    cid = candidates[0]
    keys = [
        (entry_id, entry_type, line)
        for entry_id, entry_type, line in store.fetch_all(
            "SELECT entry_id, entry_type, line FROM entries WHERE conversation_id = ? ORDER BY position", [cid]
        )
    ]
    max_seq = int(store.fetch_all("SELECT COALESCE(max(seq), 0) FROM messages WHERE conversation_id = ?", [cid])[0][0])
    events = int(store.fetch_all("SELECT count(*) FROM recorded_events WHERE conversation_id = ?", [cid])[0][0])
    qa_ids = {r[0] for r in store.fetch_all("SELECT qa_id FROM qa_items WHERE conversation_id = ?", [cid])}
    return _Existing(cid, keys, max_seq, events, qa_ids)


def _entry_key(entry: InputEntry) -> tuple[str | None, str, int | None]:
    return (entry.entry_id, entry.type, entry.line)


def insert_loaded(
    store: LabStore,
    source_id: int,
    path: str,
    loaded: Iterable[LoadedConversation],
    *,
    kind: str,
    ingested: Sequence[Sequence[IngestResult | None]] | None = None,
) -> WriteCounts:
    """Insert conversations read from ``path`` (caller holds the transaction).

    ``ingested`` holds the engine's projection of each entry, per conversation, when a load
    worker computed it already (:func:`lcm_lab.io.prepare.read_and_ingest`); missing ones are
    computed here.
    """
    counts = WriteCounts()
    buffers = _Buffers(store)
    next_id = store.next_id("conversations", "conversation_id")
    taken: set[int] = set()
    for index, item in enumerate(loaded):
        precomputed = ingested[index] if ingested is not None and index < len(ingested) else None
        conv = item.conversation
        existing = _find_existing(store, path, conv.session_id, taken)
        start_position, start_seq, start_event = 0, 0, 0
        if existing is not None:
            keys = [_entry_key(e) for e in conv.entries[: len(existing.entry_keys)]]
            if keys == existing.entry_keys and len(conv.entries) >= len(existing.entry_keys):
                cid = existing.conversation_id
                taken.add(cid)
                start_position, start_seq, start_event = len(keys), existing.max_seq, existing.events
                counts.appended_conversations += 1
            else:
                counts.warnings.append(
                    f"{path}: session {conv.session_id} changed in place (not an append); loaded as a new conversation"
                )
                existing = None
        if existing is None:
            cid = next_id
            next_id += 1
            taken.add(cid)
            counts.conversations += 1
            buffers.add("conversations", _conversation_row(cid, source_id, kind, item))
        seq = start_seq
        for position, entry in enumerate(conv.entries[start_position:], start=start_position):
            message = entry.message
            entry_seq = None
            message_json = None
            if message is None:
                projected = None
            else:
                ready = precomputed[position] if precomputed is not None and position < len(precomputed) else None
                projected = project_entry(entry, seq + 1, ready)
            if message is not None and message.get("role") in PERSISTABLE_ROLES and not projected.skip_reason:
                seq += 1
                entry_seq = seq
                projection = projected.projection
                buffers.add("messages", _entry_message_row(cid, seq, entry, projection))
                for part in projection.parts if projection else ():
                    buffers.add("message_parts", _part_row(cid, seq, part))
                counts.messages += 1
            elif message is not None:
                # Not stored by lossless-claw (pi-only role, or a skip rule): kept with the entry.
                message_json = _dumps(message)
                if projected and projected.skip_reason:
                    counts.not_stored[projected.skip_reason] = counts.not_stored.get(projected.skip_reason, 0) + 1
            buffers.add(
                "entries",
                {
                    "conversation_id": cid, "position": position, "line": entry.line, "entry_type": entry.type,
                    "entry_id": entry.entry_id, "timestamp": entry.timestamp, "seq": entry_seq,
                    "message": message_json,
                },
            )
            counts.entries += 1
        for stored in conv.stored_messages:
            if stored.seq <= start_seq:
                continue
            _add_stored_message(buffers, cid, stored)
            counts.messages += 1
        if existing is None:
            counts.summaries += _add_dag(buffers, cid, item)
            counts.context_items += len(conv.context_items)
        for index, event in enumerate(item.events[start_event:], start=start_event):
            buffers.add(
                "recorded_events",
                {
                    "conversation_id": cid, "event_index": index, "kind": event.kind, "line": event.line,
                    "entry_id": event.entry_id, "timestamp": event.timestamp, "summary": event.summary,
                    "first_kept_entry_id": event.first_kept_entry_id, "tokens_before": event.tokens_before,
                    "raw": _dumps(dict(event.raw)) if event.raw else None,
                },
            )
            counts.events += 1
        known_qa = existing.qa_ids if existing else set()
        for qa in item.qa_items:
            if qa.qa_id in known_qa:
                continue
            buffers.add(
                "qa_items",
                {
                    "conversation_id": cid, "qa_id": qa.qa_id, "question": qa.question, "answer": qa.answer,
                    "category": qa.category, "evidence": list(qa.evidence), "adversarial_answer": qa.adversarial_answer,
                },
            )
            counts.qa_items += 1
    buffers.flush()
    store.execute(fill_token_estimates_sql(
        "messages", f"conversation_id IN (SELECT conversation_id FROM conversations WHERE source_id = {int(source_id)})"
    ))
    return counts


def _conversation_row(cid: int, source_id: int, kind: str, item: LoadedConversation) -> dict[str, Any]:
    conv = item.conversation
    meta = dict(conv.meta)
    meta.update(item.meta)
    return {
        "conversation_id": cid, "source_id": source_id, "kind": kind, "origin_conversation_id": None,
        "session_id": conv.session_id, "session_key": conv.session_key, "title": conv.title,
        "active": not item.archived, "archived_at": None, "archive_cause": None, "bootstrapped_at": None,
        "created_at": conv.entries[0].timestamp if conv.entries else None, "updated_at": None,
        "meta": _dumps(meta) if meta else None,
    }


def _entry_message_row(cid: int, seq: int, entry: InputEntry, projection: StoredProjection | None) -> dict[str, Any]:
    message = entry.message or {}
    runtime_role = message.get("role")
    return {
        "conversation_id": cid, "seq": seq,
        "role": "tool" if runtime_role == "toolResult" else runtime_role,
        "runtime_role": runtime_role,
        "content": projection.content if projection else None,
        "token_count": projection.token_count if projection else None,
        "created_at": projection.created_at if projection else None,
        "transcript_entry_id": entry.entry_id, "line": entry.line,
        "identity_hash": projection.identity_hash if projection else None,
        "sender_metadata": projection.sender_metadata if projection else None,
        "stable_event_key": projection.stable_event_key if projection else None,
        "raw": _dumps(dict(message)),
    }


def _add_stored_message(buffers: _Buffers, cid: int, stored: StoredMessage) -> None:
    buffers.add(
        "messages",
        {
            "conversation_id": cid, "seq": stored.seq, "role": stored.role,
            "runtime_role": "toolResult" if stored.role == "tool" else stored.role,
            "content": stored.content, "token_count": stored.token_count, "created_at": stored.created_at,
            "transcript_entry_id": stored.transcript_entry_id, "identity_hash": stored.identity_hash,
            "sender_metadata": stored.sender_metadata, "stable_event_key": stored.stable_event_key,
            "large_content": stored.large_content, "origin_message_id": stored.message_id,
        },
    )
    for part in stored.parts:
        buffers.add("message_parts", _part_row(cid, stored.seq, part))


def _part_row(cid: int, seq: int, part: StoredPart) -> dict[str, Any]:
    return {
        "conversation_id": cid, "seq": seq, "ordinal": part.ordinal, "part_id": part.part_id,
        "part_type": part.part_type, "text_content": part.text_content, "tool_call_id": part.tool_call_id,
        "tool_name": part.tool_name, "tool_input": part.tool_input, "tool_output": part.tool_output,
        "metadata": part.metadata,
    }


def _add_dag(buffers: _Buffers, cid: int, item: LoadedConversation) -> int:
    conv = item.conversation
    for order, summary in enumerate(conv.summaries):
        buffers.add(
            "summaries",
            {
                "conversation_id": cid, "summary_id": summary.summary_id, "kind": summary.kind,
                "depth": summary.depth, "content": summary.content, "token_count": summary.token_count,
                "earliest_at": summary.earliest_at, "latest_at": summary.latest_at,
                "descendant_count": summary.descendant_count,
                "descendant_token_count": summary.descendant_token_count,
                "source_message_token_count": summary.source_message_token_count,
                "file_ids": list(summary.file_ids), "model": summary.model, "created_at": summary.created_at,
                "creation_order": order,
            },
        )
        for ordinal, seq in enumerate(summary.source_message_seqs):
            buffers.add("summary_messages", {"conversation_id": cid, "summary_id": summary.summary_id,
                                             "seq": seq, "ordinal": ordinal})
        for ordinal, source in enumerate(summary.source_summary_ids):
            buffers.add("summary_sources", {"conversation_id": cid, "summary_id": summary.summary_id,
                                            "source_summary_id": source, "ordinal": ordinal})
    for ordinal, context in enumerate(conv.context_items):
        is_message = context.kind == "message"
        buffers.add(
            "context_items",
            {
                "conversation_id": cid, "ordinal": ordinal, "item_type": context.kind,
                "seq": context.ref if is_message else None, "summary_id": None if is_message else context.ref,
            },
        )
    return len(conv.summaries)
