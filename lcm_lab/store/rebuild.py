"""Rebuild the engine's :class:`Conversation` value from the lab tables."""

from __future__ import annotations

from typing import Any

import orjson

from lcm_lab.engine.types import (
    ContextItem,
    Conversation,
    InputEntry,
    LargeFile,
    StoredMessage,
    StoredPart,
    Summary,
)
from lcm_lab.errors import UnknownNameError

_PART_COLUMNS = "part_type, ordinal, text_content, tool_call_id, tool_name, tool_input, tool_output, metadata, part_id"


def _json(value: str | None) -> Any:
    return None if value is None else orjson.loads(value)


def rebuild_conversation(con: Any, conversation_id: int) -> Conversation:
    """Read one conversation (entries or stored rows, DAG, context) back into engine values."""
    row = con.execute(
        "SELECT c.session_id, c.session_key, c.title, c.kind, c.meta, c.source_id, c.origin_conversation_id,"
        " s.path, s.kind FROM conversations c JOIN sources s USING (source_id) WHERE conversation_id = ?",
        [conversation_id],
    ).fetchone()
    if row is None:
        raise UnknownNameError(f"no conversation {conversation_id} in the lab store")
    session_id, session_key, title, kind, meta_json, source_id, origin_id, path, source_kind = row
    meta = dict(_json(meta_json) or {})
    meta.update(
        conversation_id=conversation_id,
        kind=kind,
        source_id=source_id,
        source_kind=source_kind,
        origin_conversation_id=origin_id,
    )
    entries = _entries(con, conversation_id)
    return Conversation(
        session_id=session_id or str(conversation_id),
        entries=entries,
        stored_messages=() if entries else _stored_messages(con, conversation_id),
        summaries=_summaries(con, conversation_id),
        context_items=_context_items(con, conversation_id),
        large_files=_large_files(con, conversation_id),
        session_key=session_key,
        title=title,
        source=path,
        meta=meta,
    )


def _entries(con: Any, conversation_id: int) -> tuple[InputEntry, ...]:
    rows = con.execute(
        "SELECT e.line, e.entry_type, COALESCE(e.message, m.raw), e.entry_id, e.timestamp"
        " FROM entries e LEFT JOIN messages m ON m.conversation_id = e.conversation_id AND m.seq = e.seq"
        " WHERE e.conversation_id = ? ORDER BY e.position",
        [conversation_id],
    ).fetchall()
    return tuple(
        InputEntry(line=line, type=entry_type, message=_json(message), entry_id=entry_id, timestamp=timestamp)
        for line, entry_type, message, entry_id, timestamp in rows
    )


def _stored_messages(con: Any, conversation_id: int) -> tuple[StoredMessage, ...]:
    parts: dict[int, list[StoredPart]] = {}
    for seq, *values in con.execute(
        f"SELECT seq, {_PART_COLUMNS} FROM message_parts WHERE conversation_id = ? ORDER BY seq, ordinal",
        [conversation_id],
    ).fetchall():
        parts.setdefault(seq, []).append(StoredPart(*values))
    rows = con.execute(
        "SELECT seq, role, content, token_count, created_at, identity_hash, sender_metadata,"
        " transcript_entry_id, stable_event_key, large_content, origin_message_id"
        " FROM messages WHERE conversation_id = ? ORDER BY seq",
        [conversation_id],
    ).fetchall()
    return tuple(
        StoredMessage(
            seq=seq,
            role=role,
            content=content if content is not None else "",
            token_count=token_count if token_count is not None else 0,
            created_at=created_at,
            parts=tuple(parts.get(seq, ())),
            identity_hash=identity_hash,
            sender_metadata=sender_metadata,
            transcript_entry_id=entry_id,
            stable_event_key=event_key,
            large_content=large_content,
            message_id=origin_message_id,
        )
        for (seq, role, content, token_count, created_at, identity_hash, sender_metadata, entry_id, event_key,
             large_content, origin_message_id) in rows
    )


def _summaries(con: Any, conversation_id: int) -> tuple[Summary, ...]:
    rows = con.execute(
        """
        SELECT s.summary_id, s.kind, s.depth, s.content, s.token_count, s.earliest_at, s.latest_at,
               s.descendant_count, s.descendant_token_count, s.source_message_token_count,
               s.file_ids, s.model, s.created_at,
               (SELECT list(seq ORDER BY ordinal) FROM summary_messages m
                 WHERE m.conversation_id = s.conversation_id AND m.summary_id = s.summary_id),
               (SELECT list(source_summary_id ORDER BY ordinal) FROM summary_sources p
                 WHERE p.conversation_id = s.conversation_id AND p.summary_id = s.summary_id)
        FROM summaries s WHERE s.conversation_id = ?
        ORDER BY s.creation_order, s.created_at, s.summary_id
        """,
        [conversation_id],
    ).fetchall()
    return tuple(
        Summary(
            summary_id=summary_id,
            kind=kind,
            depth=depth,
            content=content,
            token_count=token_count,
            earliest_at=earliest_at,
            latest_at=latest_at,
            descendant_count=descendant_count or 0,
            descendant_token_count=descendant_token_count or 0,
            source_message_token_count=source_tokens or 0,
            file_ids=tuple(file_ids or ()),
            model=model or "unknown",
            created_at=created_at,
            source_message_seqs=tuple(seqs or ()),
            source_summary_ids=tuple(sources or ()),
        )
        for (summary_id, kind, depth, content, token_count, earliest_at, latest_at, descendant_count,
             descendant_token_count, source_tokens, file_ids, model, created_at, seqs, sources) in rows
    )


def _context_items(con: Any, conversation_id: int) -> tuple[ContextItem, ...]:
    rows = con.execute(
        "SELECT item_type, seq, summary_id FROM context_items WHERE conversation_id = ? ORDER BY ordinal",
        [conversation_id],
    ).fetchall()
    return tuple(
        ContextItem.message(seq) if item_type == "message" else ContextItem.summary(summary_id)
        for item_type, seq, summary_id in rows
    )


def _large_files(con: Any, conversation_id: int) -> tuple[LargeFile, ...]:
    rows = con.execute(
        "SELECT file_id, file_name, mime_type, byte_size, line_count, exploration_summary"
        " FROM large_files WHERE conversation_id = ? ORDER BY created_at, file_id",
        [conversation_id],
    ).fetchall()
    return tuple(LargeFile(*row) for row in rows)
