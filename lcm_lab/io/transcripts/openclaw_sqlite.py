"""OpenClaw's SQLite transcript store (``agents/<id>/agent/openclaw-agent.sqlite``, ≥ 2026.9).

Table ``transcript_events(session_id TEXT, seq INTEGER, event_json TEXT, created_at INTEGER,
PRIMARY KEY (session_id, seq))``; ``seq = 0`` is the ``{"type":"session"}`` header and each
``event_json`` is exactly the object a JSONL line would hold (as OpenClaw's session writer stores it), so the
rows of one session are fed, in ``seq`` order, to the same parser as a pi JSONL file.
``InputEntry.line`` is ``seq + 1`` (the header on line 1, as in a JSONL file). Session keys come
from ``session_windows`` when that table exists.

The database is read through a private snapshot when needed; it is never written.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from lcm_lab.io.model import LoadedConversation, LoadIssue
from lcm_lab.io.sqlite_read import SqliteReadError, sqlite_snapshot
from lcm_lab.io.transcripts.base import OPENCLAW_SQLITE, TranscriptFormatError, TranscriptRead
from lcm_lab.io.transcripts.jsonl import describe_bad_line, parse_json_bytes
from lcm_lab.io.transcripts.pi import PiSessionParser

SQLITE_MAGIC = b"SQLite format 3\x00"


# An event's line (seq + 1) goes into the lab's INTEGER line columns (32 bits).
_MAX_SEQ = (1 << 31) - 2


def _line_of(seq: object) -> int | None:
    """``seq + 1`` for a seq the lab can store as a line (an integer from 0 to :data:`_MAX_SEQ`),
    else None: text (``'x0'``) ended the read with int()'s message, and a seq beyond 32 bits
    ended the load in DuckDB (``ConversionException``)."""
    if isinstance(seq, float) and seq.is_integer():
        seq = int(seq)
    if type(seq) is not int or not 0 <= seq <= _MAX_SEQ:
        return None
    return seq + 1


@contextmanager
def open_readonly(path: str | Path) -> Iterator[sqlite3.Connection]:
    """A connection to a side-effect-free snapshot of the file (even ``mode=ro`` would write the
    ``-shm`` of a WAL database); the file is never modified."""
    with sqlite_snapshot(path) as snapshot:
        connection = snapshot.connect()
        try:
            yield connection
        finally:
            connection.close()


def _columns(connection: sqlite3.Connection, table: str) -> set[str]:
    return {str(row[1]) for row in connection.execute(f"PRAGMA table_info({table})")}


def _session_keys(connection: sqlite3.Connection, tables: set[str]) -> dict[str, str]:
    if "session_windows" not in tables or not {"session_id", "session_key"} <= _columns(connection, "session_windows"):
        return {}
    rows = connection.execute("SELECT session_id, session_key FROM session_windows")
    return {str(session_id): str(key) for session_id, key in rows if session_id is not None and key is not None}


def _events(connection: sqlite3.Connection) -> Iterator[tuple[str, int, Any]]:
    yield from connection.execute(
        "SELECT session_id, seq, event_json FROM transcript_events ORDER BY session_id, seq"
    )


def read_openclaw_sqlite(path: str | Path) -> TranscriptRead:
    """Read every session of an OpenClaw SQLite transcript store, one conversation each."""
    display = str(path)
    opened = ExitStack()
    try:
        connection = opened.enter_context(open_readonly(path))
        tables = {str(n) for (n,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except (sqlite3.DatabaseError, SqliteReadError) as error:
        opened.close()
        raise TranscriptFormatError(f"{display}: cannot be read as SQLite ({error})") from None
    try:
        if "transcript_events" not in tables:
            raise TranscriptFormatError(
                f"{display}: SQLite database without a transcript_events table "
                f"(tables: {', '.join(sorted(tables)) or 'none'}); not an OpenClaw transcript store"
            )
        keys = _session_keys(connection, tables)
        issues: list[LoadIssue] = []
        conversations: list[LoadedConversation] = []
        skipped = 0
        parser: PiSessionParser | None = None

        def finish(current: PiSessionParser) -> None:
            nonlocal skipped
            loaded = current.build()
            conversation = loaded.conversation
            session_key = keys.get(current.default_session_id)
            if session_key is not None:
                conversation = replace(conversation, session_key=session_key)
            conversations.append(
                LoadedConversation(
                    conversation=conversation,
                    events=loaded.events,
                    meta={**loaded.meta, "layout": "sqlite", "store_session_id": current.default_session_id},
                )
            )
            issues.extend(current.issues)
            skipped += current.skipped_lines

        try:
            for session_id, seq, event_json in _events(connection):
                session = str(session_id)
                if parser is None or parser.default_session_id != session:
                    if parser is not None:
                        finish(parser)
                    parser = PiSessionParser(display, session, message_prefix=f"session {session}: ")
                line = _line_of(seq)
                if line is None:
                    issues.append(LoadIssue(display, None, f"session {session}: transcript_events.seq {seq!r} is not an "
                                                           f"integer from 0 to {_MAX_SEQ}; that event was skipped"))
                    skipped += 1
                    continue
                data = event_json.encode() if isinstance(event_json, str) else bytes(event_json or b"")
                try:
                    value = parse_json_bytes(data)
                except ValueError as error:
                    reason = describe_bad_line(data, error, last_line_unterminated=False)
                    issues.append(LoadIssue(display, line, f"session {session} seq {seq}: {reason}"))
                    skipped += 1
                    continue
                parser.feed(line, value)
        except sqlite3.DatabaseError as error:
            raise TranscriptFormatError(f"{display}: transcript_events could not be read ({error})") from None
        if parser is not None:
            finish(parser)
        if "session_transcript_archives" in tables:
            (archived,) = connection.execute("SELECT count(*) FROM session_transcript_archives").fetchone()
            if archived:
                issues.append(
                    LoadIssue(
                        display,
                        None,
                        f"{archived} archived transcript generation(s) in session_transcript_archives "
                        "(zstd-compressed) were not read",
                        skipped=False,
                    )
                )
    finally:
        opened.close()
    return TranscriptRead(
        path=display,
        kind=OPENCLAW_SQLITE,
        conversations=tuple(conversations),
        issues=tuple(issues),
        skipped_lines=skipped,
        version=None,
    )
