"""Raw rows of an lcm.db, exactly as stored, for consistency checks (``lcm-lab doctor``).

The loader (:mod:`lcm_lab.io.lcmdb`) turns rows into resolved values and therefore cannot show
a dangling edge or a cycle. The doctor needs the rows as they are: this module reads them
read-only (through :func:`lcm_lab.io.sqlite_read.sqlite_snapshot`, which never touches the
original file) and tolerates every historical schema (missing columns come back as ``None``;
the tables 1.0 added come back empty from older files).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from lcm_lab.errors import DataError
from lcm_lab.io.lcmdb import UnreadableTime, read_lcmdb_schema, refuse_wrong_types, unreadable_times
from lcm_lab.io.sqlite_read import SqliteReadError, sqlite_snapshot


@dataclass(frozen=True)
class MessageRow:
    message_id: int
    conversation_id: int
    seq: int
    role: str
    content: str
    token_count: int


@dataclass(frozen=True)
class SummaryRow:
    summary_id: str
    conversation_id: int
    kind: str
    depth: int | None
    content: str
    token_count: int
    model: str | None
    source_message_token_count: int | None


@dataclass(frozen=True)
class EdgeRow:
    """``summary_messages`` (target = message_id) or ``summary_parents`` (target = source summary)."""

    summary_id: str
    target: int | str
    ordinal: int


@dataclass(frozen=True)
class ContextRow:
    conversation_id: int
    ordinal: int
    item_type: str
    message_id: int | None
    summary_id: str | None


@dataclass(frozen=True)
class BatchRow:
    """``pending_compaction_batches`` (1.0, src/store/pending-summary-store.ts)."""

    batch_id: str
    conversation_id: int
    status: str


@dataclass(frozen=True)
class PendingNodeRow:
    """``pending_summary_nodes``: a summary prepared in the background (published once ``promoted``)."""

    node_id: str
    batch_id: str
    conversation_id: int
    kind: str
    depth: int | None
    status: str
    content: str | None
    canonical_summary_id: str | None


@dataclass(frozen=True)
class PendingChildRow:
    """``pending_summary_node_children``: a child is another node or an existing summary."""

    node_id: str
    ordinal: int
    child_node_id: str | None
    child_summary_id: str | None


@dataclass(frozen=True)
class ReceiptRow:
    """``turn_advancements``: commitTurn's receipt of one host turn (src/engine.ts ``commitTurn``)."""

    advancement_key: str
    session_id: str
    message_count: int


@dataclass(frozen=True)
class LcmDbRows:
    """Every row the doctor looks at, for the whole file (all conversations)."""

    path: str
    conversations: dict[int, str]  # conversation_id -> session_id
    messages: tuple[MessageRow, ...]
    summaries: tuple[SummaryRow, ...]
    summary_messages: tuple[EdgeRow, ...]
    summary_parents: tuple[EdgeRow, ...]
    context_items: tuple[ContextRow, ...]
    # the tables of 1.0 (empty for older files and for replays)
    batches: tuple[BatchRow, ...] = ()
    pending_nodes: tuple[PendingNodeRow, ...] = ()
    pending_node_messages: tuple[EdgeRow, ...] = ()  # summary_id = the node, target = message_id
    pending_node_children: tuple[PendingChildRow, ...] = ()
    receipts: tuple[ReceiptRow, ...] = ()
    # values of time columns the plugin cannot read (the doctor warns; its checks read no time)
    unreadable_times: tuple[UnreadableTime, ...] = ()


_REQUIRED = ("conversations", "messages", "summaries", "summary_messages", "summary_parents", "context_items")


# Converters of stored values: a value lossless-claw never writes there (NULL in a key, a blob,
# text in an integer column) raises ValueError naming the column; read_rows adds the table.
def _int(value: Any, column: str) -> int:
    if value is None or isinstance(value, (bytes, bytearray)):
        raise ValueError(f"{column} is {'NULL' if value is None else 'a blob'}")
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{column} holds {str(value)[:40]!r}, not an integer") from None


def _optional_int(value: Any, column: str) -> int | None:
    return None if value is None else _int(value, column)


def _count(value: Any, column: str) -> int:
    """A count or ordinal (NULL reads as 0, as before)."""
    return 0 if value is None else _int(value, column)


def _optional(value: Any, column: str) -> str | None:
    if isinstance(value, (bytes, bytearray)):
        raise ValueError(f"{column} is a blob")
    return None if value is None else str(value)


def _text(value: Any, column: str) -> str:
    return _optional(value, column) or ""


def _id(value: Any, column: str) -> str:
    text = _optional(value, column)
    if text is None:
        raise ValueError(f"{column} is NULL")
    return text


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


def _select(conn: sqlite3.Connection, where: list[str], table: str, wanted: tuple[str, ...]) -> Iterator[tuple[Any, ...]]:
    """The ``wanted`` columns of ``table`` (NULL for absent ones); ``where`` records the table,
    so a value of the wrong type can be reported with it."""
    present = _columns(conn, table)
    exprs = ", ".join(col if col in present else "NULL" for col in wanted)
    where.append(table)
    return iter(conn.execute(f"SELECT {exprs} FROM {table}"))


def read_rows(conn: sqlite3.Connection, path: str) -> LcmDbRows:
    """All doctor-relevant rows from an open lcm.db connection (:class:`DataError` naming the table
    when a column holds a value of the wrong type, e.g. text in ``summaries.token_count``), with the
    values of time columns the plugin cannot read (``unreadable_times``)."""
    schema = read_lcmdb_schema(conn, path)  # NotAnLcmDb: its key tables or columns are not lossless-claw's
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    missing = [t for t in _REQUIRED if t not in tables]
    if missing:
        raise SqliteReadError(f"{path}: not an lcm.db (missing tables: {', '.join(missing)})")
    refuse_wrong_types(conn, schema)
    where: list[str] = []
    try:
        rows = _read_rows(conn, path, tables, where)
    except ValueError as exc:  # from the converters: a bug elsewhere is a TypeError and keeps its traceback
        table = where[-1] if where else "?"
        raise DataError(f"{path}: table {table} holds a value of the wrong type ({exc}); "
                        f"lossless-claw does not write such rows, so the file was changed by something else") from None
    return replace(rows, unreadable_times=tuple(unreadable_times(conn, schema)))


def _read_rows(conn: sqlite3.Connection, path: str, tables: set[str], where: list[str]) -> LcmDbRows:
    conversations = {_int(cid, "conversation_id"): _id(sid, "session_id")
                     for cid, sid in _select(conn, where, "conversations", ("conversation_id", "session_id"))}  # fmt: skip
    messages = tuple(
        MessageRow(_int(mid, "message_id"), _int(cid, "conversation_id"), _int(seq, "seq"), _id(role, "role"),
                   _text(content, "content"), _count(tok, "token_count"))
        for mid, cid, seq, role, content, tok in _select(
            conn, where, "messages", ("message_id", "conversation_id", "seq", "role", "content", "token_count")
        )
    )  # fmt: skip
    summaries = tuple(
        SummaryRow(
            _id(sid, "summary_id"),
            _int(cid, "conversation_id"),
            _id(kind, "kind"),
            _optional_int(depth, "depth"),
            _text(content, "content"),
            _count(tok, "token_count"),
            _optional(model, "model"),
            _optional_int(smt, "source_message_token_count"),
        )
        for sid, cid, kind, depth, content, tok, model, smt in _select(
            conn,
            where,
            "summaries",
            ("summary_id", "conversation_id", "kind", "depth", "content", "token_count", "model", "source_message_token_count"),
        )
    )
    summary_messages = tuple(
        EdgeRow(_id(sid, "summary_id"), _int(mid, "message_id"), _count(ordinal, "ordinal"))
        for sid, mid, ordinal in _select(conn, where, "summary_messages", ("summary_id", "message_id", "ordinal"))
    )
    summary_parents = tuple(
        EdgeRow(_id(sid, "summary_id"), _id(pid, "parent_summary_id"), _count(ordinal, "ordinal"))
        for sid, pid, ordinal in _select(conn, where, "summary_parents", ("summary_id", "parent_summary_id", "ordinal"))
    )
    context_items = tuple(
        ContextRow(_int(cid, "conversation_id"), _int(ordinal, "ordinal"), _id(kind, "item_type"),
                   _optional_int(mid, "message_id"), _optional(sid, "summary_id"))
        for cid, ordinal, kind, mid, sid in _select(
            conn, where, "context_items", ("conversation_id", "ordinal", "item_type", "message_id", "summary_id")
        )
    )  # fmt: skip

    def rows_of(table: str, wanted: tuple[str, ...]) -> Iterator[tuple[Any, ...]]:
        return _select(conn, where, table, wanted) if table in tables else iter(())

    batches = tuple(
        BatchRow(_id(bid, "batch_id"), _int(cid, "conversation_id"), _id(status, "status"))
        for bid, cid, status in rows_of("pending_compaction_batches", ("batch_id", "conversation_id", "status"))
    )
    pending_nodes = tuple(
        PendingNodeRow(_id(nid, "node_id"), _id(bid, "batch_id"), _int(cid, "conversation_id"), _id(kind, "kind"),
                       _optional_int(depth, "depth"), _id(status, "status"), _optional(content, "content"),
                       _optional(canonical, "canonical_summary_id"))
        for nid, bid, cid, kind, depth, status, content, canonical in rows_of(
            "pending_summary_nodes",
            ("node_id", "batch_id", "conversation_id", "kind", "depth", "status", "content", "canonical_summary_id"),
        )
    )  # fmt: skip
    pending_node_messages = tuple(
        EdgeRow(_id(nid, "node_id"), _int(mid, "message_id"), _count(ordinal, "ordinal"))
        for nid, mid, ordinal in rows_of("pending_summary_node_messages", ("node_id", "message_id", "ordinal"))
    )
    pending_node_children = tuple(
        PendingChildRow(_id(nid, "node_id"), _count(ordinal, "ordinal"), _optional(child, "child_node_id"),
                        _optional(summary, "child_summary_id"))
        for nid, ordinal, child, summary in rows_of(
            "pending_summary_node_children", ("node_id", "ordinal", "child_node_id", "child_summary_id")
        )
    )  # fmt: skip
    receipts = tuple(
        ReceiptRow(_id(key, "advancement_key"), _id(sid, "session_id"), _count(count, "message_count"))
        for key, sid, count in rows_of("turn_advancements", ("advancement_key", "session_id", "message_count"))
    )
    return LcmDbRows(
        path, conversations, messages, summaries, summary_messages, summary_parents, context_items,
        batches, pending_nodes, pending_node_messages, pending_node_children, receipts,
    )


def read_lcmdb_rows(path: str | os.PathLike[str]) -> LcmDbRows:
    """Read an lcm.db (or ``.db.gz``) without modifying it; :class:`SqliteReadError` if unreadable."""
    with sqlite_snapshot(path) as snapshot:
        conn = snapshot.connect()
        try:
            rows = read_rows(conn, str(path))
        except sqlite3.DatabaseError as exc:
            raise SqliteReadError(f"{path}: cannot read ({exc})") from exc
        finally:
            conn.close()
        snapshot.verify_unchanged()
    return rows
