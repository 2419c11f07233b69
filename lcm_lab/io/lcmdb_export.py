"""Write a replay as an lcm.db that lossless-claw's own tools (``lcm-tui``, the ``lcm`` CLI) open.

The file has exactly the schema of the lossless-claw version the replay ran (``Replay.engine``):
v0.15.3's (:mod:`lcm_lab.io.lcmdb_schema`) or 1.0's (:mod:`lcm_lab.io.lcmdb_schema_v1`) — tables,
indexes, FTS5 tables when this SQLite has FTS5, ``lcm_migration_state`` as its migrations leave
it — and one conversation: messages with their parts, summaries with ``summary_messages`` and
``summary_parents`` edges (the plugin's naming: ``parent_summary_id`` is the *source*), the
final context items, and large-file rows. Large-file payloads are not kept by the lab, so
``storage_uri`` points nowhere (``lcm-lab:no-payload/<file_id>``).

A 1.0 file has no sender-metadata column (1.0 stores none), and its 1.0 tables are empty: every
summary of the replay is written as a published one, with no pending batch or node behind it
(as after 1.0 deletes finished batches 7 days on), no summary still being prepared, no
``turn_advancements`` receipt (a receipt hashes the host's turn payload, which a replay does not
have; without one a host retry would ingest the turn again) and no transcript anchors.

The target is never overwritten: the database is written to a temporary file next to it and
renamed into place only if nothing is there.

>>> import tempfile, sqlite3, pathlib
>>> from lcm_lab.engine.types import Conversation, StoredMessage
>>> from lcm_lab.engine.replay.driver import replay
>>> from lcm_lab.summarizers import get_summarizer
>>> run = replay(Conversation("s1", stored_messages=(StoredMessage(1, "user", "hi", 1),)), summarizer=get_summarizer("offline"))
>>> out = pathlib.Path(tempfile.mkdtemp()) / "run.db"
>>> export_lcm_db(run, out).messages
1
>>> sqlite3.connect(out).execute("SELECT role, content FROM messages").fetchall()
[('user', 'hi')]
"""

from __future__ import annotations

import datetime as dt
import os
import sqlite3
import uuid
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, NamedTuple

from lcm_lab.errors import EnvironmentFaultError, OutputError
from lcm_lab.io import lcmdb_schema, lcmdb_schema_v1
from lcm_lab.io.atomic import check_output_path, link_into_place, temporary_beside
from lcm_lab.io.redaction import redact, secret_values

if TYPE_CHECKING:
    from lcm_lab.engine.replay.driver import Replay
    from lcm_lab.strategies.base import StrategyRun

CONVERSATION_ID = 1
NO_PAYLOAD_URI = "lcm-lab:no-payload/{file_id}"
_PART_COLUMNS = ("part_id", "message_id", "session_id", "part_type", "ordinal", "text_content", "tool_call_id",
                 "tool_name", "tool_input", "tool_output", "metadata")  # fmt: skip


# The schema each engine version writes (lcm_lab.engine.versions.ENGINE_VERSIONS).
SCHEMAS: dict[str, ModuleType] = {"0.15.3": lcmdb_schema, "1.0": lcmdb_schema_v1}


class ExportResult(NamedTuple):
    path: Path
    messages: int
    parts: int
    summaries: int
    context_items: int
    large_files: int
    fts: bool
    schema: str  # the lossless-claw version whose schema the file has


class ExportExistsError(OutputError, FileExistsError):
    """The export target exists (or is a symbolic link, dangling or not); the lab never
    overwrites a file or writes through a link."""


def _sqlite_accepts(sql: str) -> bool:
    con = sqlite3.connect(":memory:")
    try:
        con.execute(sql)
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        con.close()


def has_fts5() -> bool:
    """Whether this Python's SQLite was built with FTS5."""
    return _sqlite_accepts("CREATE VIRTUAL TABLE t USING fts5(x)")


def has_trigram() -> bool:
    """Whether its FTS5 has the trigram tokenizer (``summaries_fts_cjk``)."""
    return _sqlite_accepts("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='trigram')")


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


def schema_for(engine: str) -> ModuleType:
    """The schema module of an engine version (an error naming the known ones otherwise)."""
    if engine not in SCHEMAS:
        raise ValueError(f"no lcm.db schema for engine {engine!r}; known: {', '.join(SCHEMAS)}")
    return SCHEMAS[engine]


def create_schema(con: sqlite3.Connection, schema: ModuleType = lcmdb_schema) -> bool:
    """Create a schema (default v0.15.3's); returns whether the FTS5 tables were created."""
    fts, trigram = has_fts5(), has_trigram()
    for _kind, name, sql in schema.STATEMENTS:
        if name in schema.FTS_TABLES and (not fts or (name == "summaries_fts_cjk" and not trigram)):
            continue
        con.execute(sql)
    con.executemany("INSERT INTO lcm_migration_state (step_name, algorithm_version) VALUES (?, ?)", schema.MIGRATION_STEPS)
    return fts


def _write(con: sqlite3.Connection, run: Replay, schema: ModuleType) -> ExportResult:
    fts = create_schema(con, schema)
    conv = run.conversation
    now = _now()
    created = min((m.created_at for m in run.messages if m.created_at), default=now)
    con.execute(
        "INSERT INTO conversations (conversation_id, session_id, session_key, active, title, created_at, updated_at)"
        " VALUES (?, ?, ?, 1, ?, ?, ?)",
        (CONVERSATION_ID, conv.session_id, conv.session_key, conv.title, created, now),
    )
    ids: dict[int, int] = {}
    parts = 0
    # the schema decides the columns: 1.0 stores no sender metadata, so its messages table has no such column
    present = {row[1] for row in con.execute("PRAGMA table_info(messages)")}
    message_columns = [c for c in ("message_id", "conversation_id", "seq", "role", "content", "token_count", "identity_hash",
                                   "openclaw_sender_metadata", "transcript_entry_id", "created_at", "large_content",
                                   "stable_event_key") if c in present]  # fmt: skip
    insert_message = f"INSERT INTO messages ({', '.join(message_columns)}) VALUES ({', '.join('?' * len(message_columns))})"
    for index, m in enumerate(run.messages, start=1):
        ids[m.seq] = index
        row = {"message_id": index, "conversation_id": CONVERSATION_ID, "seq": m.seq, "role": m.role, "content": m.content,
               "token_count": m.token_count, "identity_hash": m.identity_hash, "openclaw_sender_metadata": m.sender_metadata,
               "transcript_entry_id": m.transcript_entry_id, "created_at": m.created_at or now,
               "large_content": m.large_content, "stable_event_key": m.stable_event_key}  # fmt: skip
        con.execute(insert_message, [row[c] for c in message_columns])
        for p in m.parts:
            con.execute(
                f"INSERT INTO message_parts ({', '.join(_PART_COLUMNS)}) VALUES ({', '.join('?' for _ in _PART_COLUMNS)})",
                (p.part_id or _part_id(conv.session_id, m.seq, p.ordinal), index, conv.session_id, p.part_type, p.ordinal, p.text_content,
                 p.tool_call_id, p.tool_name, p.tool_input, p.tool_output, p.metadata),
            )  # fmt: skip
            parts += 1
        if fts:
            con.execute("INSERT INTO messages_fts (rowid, content) VALUES (?, ?)", (index, m.content))
    names = {name for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    secrets = secret_values()
    for s in run.summaries:
        content = redact(s.content, secrets)  # a summary is derived text: no secrets leave in it
        con.execute(
            "INSERT INTO summaries (summary_id, conversation_id, kind, depth, content, token_count, earliest_at, latest_at,"
            " descendant_count, descendant_token_count, source_message_token_count, created_at, file_ids, model)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (s.summary_id, CONVERSATION_ID, s.kind, s.depth, content, s.token_count, s.earliest_at, s.latest_at,
             s.descendant_count, s.descendant_token_count, s.source_message_token_count, s.created_at or now,
             _json_list(s.file_ids), s.model or "unknown"),
        )  # fmt: skip
        con.executemany(
            "INSERT INTO summary_messages (summary_id, message_id, ordinal) VALUES (?, ?, ?)",
            [(s.summary_id, ids[seq], i) for i, seq in enumerate(s.source_message_seqs)],
        )
        con.executemany(
            "INSERT INTO summary_parents (summary_id, parent_summary_id, ordinal) VALUES (?, ?, ?)",
            [(s.summary_id, source, i) for i, source in enumerate(s.source_summary_ids)],
        )
        for table in ("summaries_fts", "summaries_fts_cjk"):
            if table in names:
                con.execute(f"INSERT INTO {table} (summary_id, content) VALUES (?, ?)", (s.summary_id, content))
    context = run.final_context
    for ordinal, item in enumerate(context):
        message_id = ids[int(item.ref)] if item.kind == "message" else None
        summary_id = str(item.ref) if item.kind == "summary" else None
        con.execute(
            "INSERT INTO context_items (conversation_id, ordinal, item_type, message_id, summary_id, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (CONVERSATION_ID, ordinal, item.kind, message_id, summary_id, now),
        )
    for f in run.large_files:
        con.execute(
            "INSERT INTO large_files (file_id, conversation_id, file_name, mime_type, byte_size, line_count, storage_uri,"
            " exploration_summary, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (f.file_id, CONVERSATION_ID, f.file_name, f.mime_type, f.byte_size, f.line_count,
             NO_PAYLOAD_URI.format(file_id=f.file_id), f.exploration_summary, now),
        )  # fmt: skip
    return ExportResult(Path(), len(run.messages), parts, len(run.summaries), len(context), len(run.large_files), fts,
                        schema.PLUGIN_VERSION)  # fmt: skip


def _part_id(session_id: str, seq: int, ordinal: int) -> str:
    """A UUID like the plugin's, but derived from the part's place (same run, same file)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"lcm-lab:{session_id}:{seq}:{ordinal}"))


def _json_list(values: tuple[str, ...]) -> str:
    import json

    return json.dumps(list(values), separators=(",", ":"))


def export_lcm_db(run: Replay | StrategyRun, path: str | os.PathLike[str]) -> ExportResult:
    """Write ``run`` as a new lcm.db at ``path`` with the schema of ``run.engine`` (an error if
    ``path`` exists; see module docstring). Only an LCM replay has what an lcm.db holds (summaries,
    their DAG, the stored context): a run of another strategy is a
    :class:`~lcm_lab.strategies.base.NotAnLcmRunError`."""
    from lcm_lab.strategies.base import lcm_replay

    run = lcm_replay(run, "an lcm.db export")
    schema = schema_for(run.engine)
    target = Path(path).expanduser()
    if target.is_symlink():
        raise ExportExistsError(f"{target} is a symbolic link; the lab never writes through links — choose another -o path")
    check_output_path(target, sqlite_output=True)  # a store's files, a path through a file, a FIFO ...; an
    # existing file, an earlier export included, is refused below
    if target.exists():
        raise ExportExistsError(f"{target} exists; the lab never overwrites files — choose another -o path or remove it yourself")
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = temporary_beside(target)  # named for this process: a kill -9 leaves what the next export removes
    os.close(fd)
    try:
        tmp.unlink()  # sqlite creates its own file; the name is ours
        con = sqlite3.connect(tmp)
        try:
            try:
                with con:
                    result = _write(con, run, schema)
            except sqlite3.OperationalError as exc:
                if "disk is full" not in str(exc) and "disk I/O error" not in str(exc):
                    raise
                raise EnvironmentFaultError(f"{target}: disk full while exporting ({exc}); nothing was written") from None
            check = con.execute("PRAGMA integrity_check").fetchone()[0]
            if check != "ok":
                raise RuntimeError(f"exported database failed PRAGMA integrity_check: {check}")
        finally:
            con.close()
        link_into_place(tmp, target, "exporting", ExportExistsError)
    finally:
        tmp.unlink(missing_ok=True)
    return result._replace(path=target)
