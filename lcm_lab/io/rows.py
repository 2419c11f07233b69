"""The lab tables' rows for conversations a reader produced, as Arrow tables (pure: no store).

Every message entry is projected the way lossless-claw stores it (``messages`` content, token
count and parts, through the engine's whole-file import projection) and every other entry is
kept as an ``entries`` row, so nothing read is lost. Rows are buffered per table and handed to
a *sink* as Arrow tables every ``flush_rows`` rows, so memory stays bounded: the store's sink
inserts them, a load worker's sink writes them to Arrow files for the parent
(:mod:`lcm_lab.io.prepare`).

A conversation may start part-way (a session file that grew): :class:`Start` says where its
new entries, message seqs, events and QA items begin.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

import orjson
import pyarrow as pa

from lcm_lab.engine.ingest.message import (
    SKIP_NON_PERSISTABLE,
    IngestResult,
    to_stored_message,
    unreadable_time,
)
from lcm_lab.engine.tokens import estimate_tokens
from lcm_lab.engine.types import InputEntry, StoredMessage, StoredPart
from lcm_lab.io.model import LoadedConversation
from lcm_lab.io.surrogates import count_lone, lone_warning, storable

FLUSH_ROWS = 20_000
SHOWN_TIMES = 3  # unreadable times a load's warning shows (all are counted)
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
# ...or after about this much text, whichever comes first: rows of big messages would otherwise
# hold hundreds of MB before 20,000 of them are buffered.
FLUSH_BYTES = 32 << 20
Sink = Callable[[str, pa.Table], None]
# Columns of JSON type in the lab schema that hold ``dumps`` output. They are typed as Arrow's
# JSON extension (pyarrow >= 19), which DuckDB takes as JSON without parsing every value again
# (0.06 s instead of 0.5 s per 47 MB of messages); with older pyarrow DuckDB validates them.
_JSON_COLUMNS = {"conversations": "meta", "messages": "raw", "entries": "message", "recorded_events": "raw",
                 "raw_lines": "raw"}  # fmt: skip
# The key of LoadedConversation.meta whose raw source lines go to ``raw_lines``, one row per
# line, instead of into conversations.meta (lcm_lab.store.migrations.m012_raw_lines).
RAW_ENTRIES = "raw_entries"
_JSON_TYPE = pa.json_(pa.string()) if hasattr(pa, "json_") else None


def ingest_entry(entry: InputEntry, seq: int) -> IngestResult:
    """The whole-file import projection of one entry (no large-payload interception, as
    ``lossless-claw-migrate-sessions`` does), so content stays lossless and deterministic."""
    assert entry.message is not None
    return to_stored_message(
        entry.message, seq, entry_id=entry.entry_id, intercept_large_payloads=False,
        envelope_timestamp=entry.timestamp,
    )  # fmt: skip


def dumps(value: Any) -> str | None:
    """JSON text of a reader value (None stays None; bytes, sets and mappings are made JSON)."""
    if value is None:
        return None
    try:
        return orjson.dumps(value, default=_fallback).decode()
    except TypeError:
        pass
    try:  # keys that are not strings (the same text, written more slowly)
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS, default=_fallback).decode()
    except TypeError:
        # Lone surrogates and integers beyond 64 bits, which JSON allows and orjson refuses: the
        # standard library writes both (a flush then stores the surrogates as U+FFFD, counted).
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=_fallback)


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
    not_stored: dict[str, int] = field(default_factory=dict)  # by skip reason
    not_stored_roles: dict[str, int] = field(default_factory=dict)  # non-persistable-role skips by role
    # messages stored without a time because theirs is unreadable, and the first few (line, value)
    unreadable_times: int = 0
    # lone surrogates in what was read, each counted once (stored as U+FFFD, in every copy)
    lone_surrogates: int = 0
    unreadable_time_examples: list[tuple[int, object]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def note_unreadable_times(self, count: int, examples: Iterable[tuple[int, object]]) -> None:
        self.unreadable_times += count
        self.unreadable_time_examples = [*self.unreadable_time_examples, *examples][:SHOWN_TIMES]


@dataclass(frozen=True)
class Start:
    """Where the rows of one conversation begin: a new one at zero, a grown one after what the
    store holds (``appended``), under lab conversation id ``cid``."""

    cid: int
    position: int = 0
    seq: int = 0
    event: int = 0
    known_qa: frozenset[str] = frozenset()
    appended: bool = False
    # Source lines up to this one are stored (an append adds the raw lines after it).
    line: int = 0


class _Buffers:
    """Rows per table, handed to the sink as Arrow tables."""

    def __init__(self, sink: Sink, flush_rows: int, flush_bytes: int = FLUSH_BYTES) -> None:
        self.sink = sink
        self.flush_rows = flush_rows
        self.flush_bytes = flush_bytes
        self.rows: dict[str, list[dict[str, Any]]] = {}
        self.pending = 0
        self.pending_bytes = 0
        # "table.column" -> integers beyond 64 bits stored as NULL.
        self.out_of_range: dict[str, int] = {}

    def add(self, table: str, row: dict[str, Any], size: int = 0) -> None:
        """Buffer ``row`` (``size``: about how many bytes of text it holds)."""
        self.rows.setdefault(table, []).append(row)
        self.pending += 1
        self.pending_bytes += size
        if self.pending >= self.flush_rows or self.pending_bytes >= self.flush_bytes:
            self.flush()

    def flush(self) -> None:
        for table, rows in self.rows.items():
            names = dict.fromkeys(chain.from_iterable(rows))  # union of keys, first-seen order
            if all(len(row) == len(names) for row in rows):  # the usual case: every row has every column
                columns = {name: [row[name] for row in rows] for name in names}
            else:
                columns = {name: [row.get(name) for row in rows] for name in names}
            try:
                arrow = pa.table(columns)
            except (UnicodeEncodeError, OverflowError):  # a lone surrogate; an integer beyond 64 bits
                arrow = pa.table(self._storable(self._in_range(table, columns)))
            self.sink(table, _typed_json(table, arrow))
        self.rows.clear()
        self.pending = 0
        self.pending_bytes = 0

    def _in_range(self, table: str, columns: dict[str, list[Any]]) -> dict[str, list[Any]]:
        """``columns`` with integers beyond 64 bits as NULL, counted per column in
        :attr:`out_of_range`. The integer columns a reader fills are metadata it copied
        (``tokensBefore``, timestamps): the entry is kept, and its raw JSON keeps the number."""
        out = {}
        for name, values in columns.items():
            beyond = sum(1 for value in values if type(value) is int and not _INT64_MIN <= value <= _INT64_MAX)
            if beyond:
                values = [None if type(value) is int and not _INT64_MIN <= value <= _INT64_MAX else value
                          for value in values]  # fmt: skip
                key = f"{table}.{name}"
                self.out_of_range[key] = self.out_of_range.get(key, 0) + beyond
            out[name] = values
        return out

    def _storable(self, columns: dict[str, list[Any]]) -> dict[str, list[Any]]:
        out = {}
        for name, values in columns.items():
            out[name], _ = storable(values)
        return out


def _typed_json(table: str, arrow: pa.Table) -> pa.Table:
    column = _JSON_COLUMNS.get(table)
    if _JSON_TYPE is None or column is None or column not in arrow.column_names:
        return arrow
    index = arrow.column_names.index(column)
    values = arrow.column(index)
    if not (pa.types.is_string(values.type) or pa.types.is_null(values.type)):
        return arrow
    return arrow.set_column(index, column, values.cast(pa.string()).cast(_JSON_TYPE))


def build_rows(
    loaded: Iterable[LoadedConversation],
    starts: Sequence[Start],
    sink: Sink,
    *,
    kind: str,
    source_id: int,
    flush_rows: int = FLUSH_ROWS,
) -> WriteCounts:
    """Hand ``sink`` the rows of every conversation in ``loaded`` (``starts[i]`` for the i-th)."""
    counts = WriteCounts()
    buffers = _Buffers(sink, flush_rows)
    for item, start in zip(loaded, starts, strict=True):
        conv = item.conversation
        cid = start.cid
        # A lone surrogate is stored in every copy of its value (a message's raw JSON, content and
        # parts; a Claude Code line and the message made from it), so it is counted once, where
        # it was read: in the raw source lines a reader keeps, else in the entry's message; in
        # the header (meta) unless every line is kept raw (Claude Code: meta is made from them).
        raw_entries = item.meta.get(RAW_ENTRIES)
        kept_lines = {int(key) for key in raw_entries} if raw_entries else set()
        header_read = not kept_lines or any(entry.line not in kept_lines for entry in conv.entries)
        if start.appended:
            counts.appended_conversations += 1
        else:
            counts.conversations += 1
            row = _conversation_row(cid, source_id, kind, item)
            buffers.add("conversations", row)
            if header_read:
                counts.lone_surrogates += count_lone(row["meta"])
        counts.lone_surrogates += _add_raw_lines(buffers, cid, raw_entries, after=start.line)
        seq = start.seq
        for position, entry in enumerate(conv.entries[start.position:], start=start.position):
            message = entry.message
            entry_seq = None
            message_json = None
            if message is not None:
                result = ingest_entry(entry, seq + 1)
                stored = result.stored
                if stored is not None:
                    seq += 1
                    entry_seq = seq
                    row = _entry_message_row(cid, seq, entry, stored)
                    if stored.created_at is None and (bad := unreadable_time(message, entry.timestamp)) is not None:
                        counts.note_unreadable_times(1, [(entry.line, bad)])
                    buffers.add("messages", row, len(row["content"] or "") + len(row["raw"] or ""))
                    if entry.line not in kept_lines:
                        counts.lone_surrogates += count_lone(row["raw"])
                    for part in stored.parts:
                        buffers.add("message_parts", _part_row(cid, seq, part), _part_size(part))
                    counts.messages += 1
                else:
                    # Not stored by lossless-claw (pi-only role, or a skip rule): kept with the entry.
                    message_json = dumps(message)
                    if entry.line not in kept_lines:
                        counts.lone_surrogates += count_lone(message_json)
                    reason = result.skip_reason or "skipped"
                    counts.not_stored[reason] = counts.not_stored.get(reason, 0) + 1
                    if reason == SKIP_NON_PERSISTABLE:
                        role = str(message.get("role")) if isinstance(message, Mapping) else type(message).__name__
                        counts.not_stored_roles[role] = counts.not_stored_roles.get(role, 0) + 1
            buffers.add(
                "entries",
                {
                    "conversation_id": cid, "position": position, "line": entry.line, "entry_type": entry.type,
                    "entry_id": entry.entry_id, "timestamp": entry.timestamp, "seq": entry_seq,
                    "message": message_json,
                },
            )
            counts.entries += 1
        for stored_message in conv.stored_messages:
            if stored_message.seq <= start.seq:
                continue
            _add_stored_message(buffers, cid, stored_message)
            counts.messages += 1
        if not start.appended:
            counts.summaries += _add_dag(buffers, cid, item)
            counts.context_items += len(conv.context_items)
        for index, event in enumerate(item.events[start.event:], start=start.event):
            event_json = dumps(dict(event.raw)) if event.raw else None
            buffers.add(
                "recorded_events",
                {
                    "conversation_id": cid, "event_index": index, "kind": event.kind, "line": event.line,
                    "entry_id": event.entry_id, "timestamp": event.timestamp, "summary": event.summary,
                    "first_kept_entry_id": event.first_kept_entry_id, "tokens_before": event.tokens_before,
                    "raw": event_json,
                },
            )
            if event.line not in kept_lines:
                counts.lone_surrogates += count_lone(event_json)
            counts.events += 1
        for qa in item.qa_items:
            if qa.qa_id in start.known_qa:
                continue
            buffers.add(
                "qa_items",
                {
                    "conversation_id": cid, "qa_id": qa.qa_id, "question": qa.question, "answer": qa.answer,
                    "category": qa.category, "evidence": list(qa.evidence), "adversarial_answer": qa.adversarial_answer,
                },
            )
            counts.lone_surrogates += sum(map(count_lone, (qa.question, qa.answer, qa.adversarial_answer, *qa.evidence)))
            counts.qa_items += 1
    buffers.flush()
    for column, count in buffers.out_of_range.items():
        counts.warnings.append(f"{count} value(s) of {column} beyond 64-bit integers stored as NULL "
                               "(the entry is kept; its raw JSON keeps the number as JavaScript reads it)")
    return counts


def unreadable_time_warning(counts: WriteCounts, path: str) -> str | None:
    """The one warning about the messages of ``path`` whose time lossless-claw cannot read
    (``'garbage'``, ``''``, ``1e30``, month 13: :func:`~lcm_lab.engine.ingest.message.unreadable_time`),
    in every transcript format; ``None`` if there are none. A missing time (no key, null) is no
    warning, as NULL is none in an lcm.db.

    >>> print(unreadable_time_warning(WriteCounts(unreadable_times=4, unreadable_time_examples=[(2, "garbage")]), "s.jsonl"))
    s.jsonl: 4 message(s) carry a time lossless-claw cannot read (line 2: 'garbage', …): stored without a time (NULL), as an lcm.db's unreadable times are
    """
    if not counts.unreadable_times:
        return None
    shown = ", ".join(f"line {line}: {value!r}" for line, value in counts.unreadable_time_examples)
    more = ", …" if counts.unreadable_times > len(counts.unreadable_time_examples) else ""
    return (f"{path}: {counts.unreadable_times} message(s) carry a time lossless-claw cannot read ({shown}{more}): "
            "stored without a time (NULL), as an lcm.db's unreadable times are")


def load_warnings(counts: WriteCounts, path: str) -> list[str]:
    """The load's warnings made from a file's counts, each once (after its parts are merged)."""
    notes = [not_stored_warning(counts), unreadable_time_warning(counts, path),
             lone_warning(counts.lone_surrogates) if counts.lone_surrogates else None]  # fmt: skip
    return [note for note in notes if note is not None]


def entries_time_warning(entries: Iterable[InputEntry], path: str) -> str | None:
    """:func:`unreadable_time_warning` for entries replayed without being loaded."""
    counts = WriteCounts()
    for entry in entries:
        if entry.message is not None and (bad := unreadable_time(entry.message, entry.timestamp)) is not None:
            counts.note_unreadable_times(1, [(entry.line, bad)])
    return unreadable_time_warning(counts, path)


def not_stored_warning(counts: WriteCounts) -> str | None:
    """The one warning about a file's messages that lossless-claw does not store (roles it does
    not persist such as pi's ``bashExecution`` or ``developer``, empty error/aborted assistant
    turns, runtime-context sentinels, duplicates), by reason and role; ``None`` if there are none.
    They are kept as entries (``entries.message``), not as messages, exactly as the plugin does.

    >>> print(not_stored_warning(WriteCounts(not_stored={"non-persistable-role": 3}, not_stored_roles={"bashExecution": 3})))
    3 message(s) not stored as messages, as lossless-claw does not store them (kept as transcript entries): 3 with a role it does not store (bashExecution 3)
    """
    total = sum(counts.not_stored.values())
    if not total:
        return None
    parts = []
    for reason, count in sorted(counts.not_stored.items(), key=lambda kv: (-kv[1], kv[0])):
        if reason == SKIP_NON_PERSISTABLE:
            roles = ", ".join(f"{role} {n}" for role, n in sorted(counts.not_stored_roles.items(), key=lambda kv: (-kv[1], kv[0])))
            parts.append(f"{count} with a role it does not store ({roles})")
        else:
            parts.append(f"{count} {reason}")
    return (f"{total} message(s) not stored as messages, as lossless-claw does not store them "
            f"(kept as transcript entries): {'; '.join(parts)}")


def _conversation_row(cid: int, source_id: int, kind: str, item: LoadedConversation) -> dict[str, Any]:
    conv = item.conversation
    meta = dict(conv.meta)
    meta.update(item.meta)
    meta.pop(RAW_ENTRIES, None)  # one row per line in raw_lines (_add_raw_lines)
    return {
        "conversation_id": cid, "source_id": source_id, "kind": kind, "origin_conversation_id": None,
        "session_id": conv.session_id, "session_key": conv.session_key, "title": conv.title,
        "active": not item.archived, "archived_at": None, "archive_cause": None, "bootstrapped_at": None,
        "created_at": conv.entries[0].timestamp if conv.entries else None, "updated_at": None,
        "meta": dumps(meta) if meta else None,
    }


def _add_raw_lines(buffers: _Buffers, cid: int, raw_entries: Mapping[int, Any] | None, *, after: int) -> int:
    """One ``raw_lines`` row per kept source line after line ``after``, through the flushing
    buffers (a reader may hand a lazy mapping that parses each line again on access: only one
    is held at a time, and lines already stored are not parsed); the lone surrogates they hold."""
    lone = 0
    if not raw_entries:
        return lone
    for key in raw_entries:
        line = int(key)
        if line > after:
            text = dumps(raw_entries[key])
            buffers.add("raw_lines", {"conversation_id": cid, "line": line, "raw": text}, len(text or ""))
            lone += count_lone(text)
    return lone


def _token_estimate(content: str | None) -> int | None:
    return None if content is None else estimate_tokens(content)


def _entry_message_row(cid: int, seq: int, entry: InputEntry, stored: StoredMessage) -> dict[str, Any]:
    message = entry.message or {}
    runtime_role = message.get("role")
    return {
        "conversation_id": cid, "seq": seq,
        "role": "tool" if runtime_role == "toolResult" else runtime_role,
        "runtime_role": runtime_role,
        "content": stored.content, "token_count": stored.token_count,
        "token_estimate": _token_estimate(stored.content), "created_at": stored.created_at,
        "transcript_entry_id": entry.entry_id, "line": entry.line, "identity_hash": stored.identity_hash,
        "sender_metadata": stored.sender_metadata, "stable_event_key": stored.stable_event_key,
        "raw": dumps(message),
    }


def _add_stored_message(buffers: _Buffers, cid: int, stored: StoredMessage) -> None:
    buffers.add(
        "messages",
        {
            "conversation_id": cid, "seq": stored.seq, "role": stored.role,
            "runtime_role": "toolResult" if stored.role == "tool" else stored.role,
            "content": stored.content, "token_count": stored.token_count,
            "token_estimate": _token_estimate(stored.content), "created_at": stored.created_at,
            "transcript_entry_id": stored.transcript_entry_id, "identity_hash": stored.identity_hash,
            "sender_metadata": stored.sender_metadata, "stable_event_key": stored.stable_event_key,
            "large_content": stored.large_content, "origin_message_id": stored.message_id,
        },
    )
    for part in stored.parts:
        buffers.add("message_parts", _part_row(cid, stored.seq, part))


def _part_size(part: StoredPart) -> int:
    return sum(len(text) for text in (part.text_content, part.tool_input, part.tool_output, part.metadata) if text)


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
