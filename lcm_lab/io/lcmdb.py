"""lossless-claw ``lcm.db`` files: schema detection and row reading (no duckdb here).

Every release from v0.1.2 to 1.0 has the same eight core tables, with columns added over time
(src/db/migration.ts ``runLcmMigrations``); 1.0 adds seven tables of its own (pending summaries,
turn receipts, transcript anchors) and no longer writes ``messages.openclaw_sender_metadata``.
:func:`read_lcmdb_schema` probes ``PRAGMA table_info`` and names the release
(:mod:`lcm_lab.io.lcmdb_version`); :class:`LcmDbSchema` then builds one SELECT per table that
yields the *canonical* (newest) column list, with missing columns as NULL or their plugin
default. The same SELECT text runs in SQLite (stdlib reader, :func:`iter_table_batches`) and in
DuckDB over the SQLite scanner (lcm_lab.store).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import NamedTuple

import pyarrow as pa

from lcm_lab.errors import DataError
from lcm_lab.io.lcmdb_version import V1_DROPPED, LcmDbVersion, detect_version
from lcm_lab.io.sqlite_read import SqliteReadError, SqliteSnapshot


class Column(NamedTuple):
    name: str
    sql_type: str  # INTEGER | TEXT | REAL
    missing: str = "NULL"  # SQL used when the column does not exist (plugin default or NULL)


def _cols(spec: str) -> tuple[Column, ...]:
    out = []
    for item in spec.split(","):
        parts = item.split(maxsplit=2)
        out.append(Column(parts[0], parts[1], parts[2] if len(parts) > 2 else "NULL"))
    return tuple(out)


# The canonical (main @ v0.15.3+ and 1.0) columns the lab reads, per table. ``rowid`` keeps insertion
# order, which is the only reliable creation order of summaries (created_at has 1 s precision).
CANONICAL: Mapping[str, tuple[Column, ...]] = {
    "conversations": _cols(
        "conversation_id INTEGER, session_id TEXT, session_key TEXT, active INTEGER 1, archived_at TEXT,"
        "archive_cause TEXT, title TEXT, bootstrapped_at TEXT, created_at TEXT, updated_at TEXT"
    ),
    "messages": _cols(
        "message_id INTEGER, conversation_id INTEGER, seq INTEGER, role TEXT, content TEXT, token_count INTEGER,"
        "identity_hash TEXT, openclaw_sender_metadata TEXT, transcript_entry_id TEXT, created_at TEXT,"
        "large_content TEXT, stable_event_key TEXT"
    ),
    "message_parts": _cols(
        "part_id TEXT, message_id INTEGER, session_id TEXT, part_type TEXT, ordinal INTEGER, text_content TEXT,"
        "is_ignored INTEGER, is_synthetic INTEGER, tool_call_id TEXT, tool_name TEXT, tool_status TEXT,"
        "tool_input TEXT, tool_output TEXT, tool_error TEXT, tool_title TEXT, patch_hash TEXT, patch_files TEXT,"
        "file_mime TEXT, file_name TEXT, file_url TEXT, subtask_prompt TEXT, subtask_desc TEXT,"
        "subtask_agent TEXT, step_reason TEXT, step_cost REAL, step_tokens_in INTEGER, step_tokens_out INTEGER,"
        "snapshot_hash TEXT, compaction_auto INTEGER, metadata TEXT"
    ),
    "summaries": _cols(
        "rowid INTEGER, summary_id TEXT, conversation_id INTEGER, kind TEXT, depth INTEGER, content TEXT,"
        "token_count INTEGER, earliest_at TEXT, latest_at TEXT, descendant_count INTEGER 0,"
        "descendant_token_count INTEGER, source_message_token_count INTEGER, created_at TEXT,"
        "file_ids TEXT '[]', model TEXT 'unknown'"
    ),
    "summary_messages": _cols("summary_id TEXT, message_id INTEGER, ordinal INTEGER"),
    "summary_parents": _cols("summary_id TEXT, parent_summary_id TEXT, ordinal INTEGER"),
    "context_items": _cols(
        "conversation_id INTEGER, ordinal INTEGER, item_type TEXT, message_id INTEGER, summary_id TEXT, created_at TEXT"
    ),
    "large_files": _cols(
        "file_id TEXT, conversation_id INTEGER, file_name TEXT, mime_type TEXT, byte_size INTEGER,"
        "line_count INTEGER, storage_uri TEXT, exploration_summary TEXT, created_at TEXT"
    ),
    # 1.0 (src/db/migration.ts @ bf3d69ef; src/store/pending-summary-store.ts): summaries prepared in
    # the background and not yet (or already) published, with their source messages and children.
    "pending_compaction_batches": _cols(
        "batch_id TEXT, conversation_id INTEGER, session_key TEXT, session_target_json TEXT, status TEXT,"
        "source_projection_fingerprint TEXT, compactable_start_ordinal INTEGER, compactable_end_ordinal INTEGER,"
        "planned_fresh_tail_start_ordinal INTEGER, prompt_version TEXT, model TEXT, failure_summary TEXT,"
        "created_at TEXT, updated_at TEXT, published_at TEXT"
    ),
    "pending_summary_nodes": _cols(
        "node_id TEXT, batch_id TEXT, conversation_id INTEGER, kind TEXT, depth INTEGER, status TEXT,"
        "ordinal_start INTEGER, ordinal_end INTEGER, source_fingerprint TEXT, source_context_hash TEXT,"
        "content TEXT, token_count INTEGER, prompt_version TEXT, model TEXT, canonical_summary_id TEXT,"
        "lease_owner TEXT, lease_expires_at TEXT, failure_summary TEXT, retry_count INTEGER 0,"
        "next_attempt_after TEXT, created_at TEXT, updated_at TEXT, ready_at TEXT, promoted_at TEXT"
    ),
    "pending_summary_node_messages": _cols(
        "node_id TEXT, message_id INTEGER, ordinal INTEGER, transcript_entry_id TEXT, identity_hash TEXT"
    ),
    "pending_summary_node_children": _cols("node_id TEXT, ordinal INTEGER, child_node_id TEXT, child_summary_id TEXT"),
    # src/engine.ts commitTurn: one receipt per host-accepted turn, keyed by the host's advancement key.
    "turn_advancements": _cols(
        "advancement_key TEXT, payload_hash TEXT, session_id TEXT, session_key TEXT, admission_entry_id TEXT,"
        "terminal_entry_id TEXT, message_count INTEGER, committed_at TEXT"
    ),
    "message_transcript_anchor_trust": _cols(
        "message_id INTEGER, conversation_id INTEGER, transcript_entry_id TEXT, trust_state TEXT, source TEXT,"
        "reason TEXT, verified_at TEXT, created_at TEXT, updated_at TEXT"
    ),
    "conversation_transcript_epochs": _cols(
        "conversation_id INTEGER, session_id TEXT, session_key TEXT, frontier_entry_id TEXT, frontier_seq INTEGER,"
        "frontier_created_at TEXT, migration_mode TEXT, metadata_json TEXT, created_at TEXT, updated_at TEXT"
    ),
}
LCM_TABLES: tuple[str, ...] = tuple(CANONICAL)  # in import order (a table after those it refers to)
# The tables every release has; the rest exist from 1.0 on.
CORE_TABLES: tuple[str, ...] = LCM_TABLES[:8]
V1_TABLES: tuple[str, ...] = LCM_TABLES[8:]
# Without these a file is not an lcm.db (every release has all three).
REQUIRED_TABLES = ("conversations", "messages", "summaries")
# Columns every release writes: a table by one of these names without them is something else.
KEY_COLUMNS = {
    "conversations": ("conversation_id", "session_id"),
    "messages": ("message_id", "conversation_id", "seq", "role", "content"),
    "summaries": ("summary_id", "conversation_id", "kind", "content"),
}
# Columns whose absence the lab fills by re-running the plugin's backfill (lcm_lab.store).
DERIVED_WHEN_MISSING = {
    ("summaries", "depth"),
    ("summaries", "descendant_count"),
    ("summaries", "descendant_token_count"),
    ("summaries", "source_message_token_count"),
}
_ARROW_TYPES = {"INTEGER": pa.int64(), "TEXT": pa.string(), "REAL": pa.float64()}
# The columns holding a time, per table: every ``*_at`` column and 1.0's ``next_attempt_after``.
TIME_COLUMNS: Mapping[str, tuple[str, ...]] = {
    table: names
    for table, columns in CANONICAL.items()
    if (names := tuple(c.name for c in columns if c.name.endswith("_at") or c.name == "next_attempt_after"))
}
# What names a row of each of those tables in a warning (its primary key in the plugin's schema).
ROW_KEYS: Mapping[str, tuple[str, ...]] = {
    "conversations": ("conversation_id",), "messages": ("message_id",), "summaries": ("summary_id",),
    "context_items": ("conversation_id", "ordinal"), "large_files": ("file_id",),
    "pending_compaction_batches": ("batch_id",), "pending_summary_nodes": ("node_id",),
    "turn_advancements": ("advancement_key",), "message_transcript_anchor_trust": ("message_id",),
    "conversation_transcript_epochs": ("conversation_id",),
}  # fmt: skip


def row_key_sql(table: str) -> str:
    """The key of a row of ``table`` as one text value (``5``, ``1:3`` for context items), the same
    in SQLite and DuckDB: what :class:`UnreadableTime` records and the loader matches on."""
    return " || ':' || ".join(f'CAST("{key}" AS VARCHAR)' for key in ROW_KEYS[table])


# A fast path, not a second parser: text in the plugin's own two shapes (SQLite's datetime('now'),
# Date.toISOString()) whose fields are plainly in range is readable; every other value is decided
# by lcm_lab.engine.timefmt.readable_time.
def plain_time_sql(column: str) -> str:
    """SQLite: whether ``column`` holds a time in one of the plugin's two shapes with every field
    plainly in range (days past the 28th, hour 24, month 0 or 13 and year 0 are left to the parser)."""
    d2, d4 = "[0-9][0-9]", "[0-9][0-9][0-9][0-9]"
    return (f"(typeof({column}) = 'text' AND ({column} GLOB '{d4}-{d2}-{d2} {d2}:[0-5][0-9]:[0-5][0-9]'"
            f" OR {column} GLOB '{d4}-{d2}-{d2}T{d2}:[0-5][0-9]:[0-5][0-9].[0-9][0-9][0-9]Z')"
            f" AND substr({column}, 1, 4) <> '0000' AND substr({column}, 6, 2) BETWEEN '01' AND '12'"
            f" AND substr({column}, 9, 2) BETWEEN '01' AND '28' AND substr({column}, 12, 2) < '24')")  # fmt: skip


class UnreadableTime(NamedTuple):
    """A value in a time column that lossless-claw's parser cannot read (``'yesterday'``, ``''``,
    a number, a year 99999): the row (:func:`row_key_sql`), the column and the value as stored."""

    table: str
    column: str
    key: str
    value: object


def unreadable_times(conn: sqlite3.Connection, schema: LcmDbSchema) -> list[UnreadableTime]:
    """Every value of a time column (:data:`TIME_COLUMNS`) of the file that is not a time the
    plugin reads (:func:`~lcm_lab.engine.timefmt.readable_time`); NULL is missing, not unreadable.
    The loader reads these as NULL and says so (:func:`unreadable_time_warnings`)."""
    from lcm_lab.engine.timefmt import readable_time

    found: list[UnreadableTime] = []
    for table, columns in TIME_COLUMNS.items():
        for column in (c for c in columns if table in schema.tables and schema.has(table, c)):
            quoted = f'"{column}"'
            sql = f'SELECT {row_key_sql(table)}, {quoted} FROM "{table}" WHERE {quoted} IS NOT NULL AND NOT {plain_time_sql(quoted)}'
            try:  # streamed: most rows are in a plain shape and never leave SQLite
                found += [UnreadableTime(table, column, str(key), value) for key, value in conn.execute(sql) if not readable_time(value)]
            except sqlite3.DatabaseError as exc:
                raise SqliteReadError(f"{schema.path}: corrupt or unreadable table {table} ({exc})") from exc
    return found


# What SQLite may hold in a column of each declared number type the plugin writes: its INTEGER
# affinity stores 12.0 and '12' as the integer 12, so what is left is a value it could not
# convert without loss (a real 12.7, a text 'abc', a blob).
_STORED_TYPES = {"INTEGER": "'integer'", "REAL": "'real', 'integer'"}


def refuse_wrong_types(conn: sqlite3.Connection, schema: LcmDbSchema) -> None:
    """Raise one :class:`~lcm_lab.errors.DataError` naming every number column of the file's
    lossless-claw tables that holds a value of another type, with how many rows do and the
    first one. lossless-claw writes none, and no rule reads one as the plugin would: a
    ``token_count`` of 12.7 reached the stdlib reader's Arrow column as 12, silently, and a
    replay then ran on counts the file does not hold. Both backends and ``doctor`` call it."""
    found: list[str] = []
    first = ""
    for table, columns in CANONICAL.items():
        checked = [c for c in columns if c.sql_type in _STORED_TYPES and table in schema.tables and schema.has(table, c.name)]
        if not checked:
            continue
        bad = [f"""sum(typeof("{c.name}") NOT IN ('null', {_STORED_TYPES[c.sql_type]}))""" for c in checked]
        try:
            counts = conn.execute(f'SELECT {", ".join(bad)} FROM "{table}"').fetchone()
            for column, count in zip(checked, counts, strict=True):
                if not count:
                    continue
                found.append(f"{table}.{column.name} {count:,} row(s)")
                if not first:
                    key = row_key_sql(table) if table in ROW_KEYS else "CAST(rowid AS VARCHAR)"
                    where = f"""typeof("{column.name}") NOT IN ('null', {_STORED_TYPES[column.sql_type]})"""
                    row, kind, value = conn.execute(
                        f'SELECT {key}, typeof("{column.name}"), "{column.name}" FROM "{table}" WHERE {where} LIMIT 1'
                    ).fetchone()
                    shown = f"{len(value)} bytes" if isinstance(value, bytes) else repr(value if kind == "real" else str(value)[:40])
                    named = ":".join(ROW_KEYS.get(table, ("rowid",)))
                    first = f"; the first: {table}.{column.name} of {named} {row} is {kind} {shown}"
        except sqlite3.DatabaseError as exc:
            raise SqliteReadError(f"{schema.path}: corrupt or unreadable table {table} ({exc})") from exc
    if found:
        raise DataError(f"{schema.path}: values of the wrong type in number columns ({', '.join(found)}{first}); "
                        "lossless-claw writes only numbers of the declared type there, so the file was changed by something else, "
                        "and the lab does not guess what was meant")  # fmt: skip


# The roles the messages table's CHECK constraint allows (src/db/migration.ts; a runtime toolResult is stored as tool).
MESSAGE_ROLES = ("system", "user", "assistant", "tool")


class UnknownRole(NamedTuple):
    """A ``messages.role`` value outside :data:`MESSAGE_ROLES`: how many rows hold it, and the first."""

    role: str
    rows: int
    first_message_id: int


def unknown_roles(conn: sqlite3.Connection, schema: LcmDbSchema) -> list[UnknownRole]:
    """Every ``messages.role`` value the table's CHECK constraint does not allow (``'developer'``),
    most rows first. lossless-claw never writes one (the constraint refuses it), but it reads a
    stored role back as it is: the assembler hands it to the model and the leaf source header
    names it, so the lab keeps it too and says so (:func:`unknown_role_warning`, the doctor's
    ``unknown-message-role``)."""
    if not schema.has("messages", "role"):
        return []
    allowed = ", ".join(f"'{role}'" for role in MESSAGE_ROLES)
    sql = (f"SELECT CAST(role AS TEXT), count(*), min(message_id) FROM messages WHERE role NOT IN ({allowed})"
           " GROUP BY 1 ORDER BY 2 DESC, 1")  # fmt: skip
    try:
        return [UnknownRole(str(role), int(rows), int(first)) for role, rows, first in conn.execute(sql)]
    except sqlite3.DatabaseError as exc:
        raise SqliteReadError(f"{schema.path}: corrupt or unreadable table messages ({exc})") from exc


def unknown_role_warning(found: list[UnknownRole], shown: int = 3) -> str | None:
    """The one warning about roles outside the schema's CHECK; ``None`` without any.

    >>> print(unknown_role_warning([UnknownRole("developer", 2, 40)]))
    messages.role holds a value the table's CHECK does not allow (system, user, assistant, tool): 'developer' in 2 row(s) (the first: message_id 40); lossless-claw never writes one but reads it back as it is, and so does the lab
    """
    if not found:
        return None
    values = "; ".join(f"{u.role!r} in {u.rows:,} row(s) (the first: message_id {u.first_message_id})" for u in found[:shown])
    more = f"; and {len(found) - shown} more value(s)" if len(found) > shown else ""
    return (f"messages.role holds a value the table's CHECK does not allow ({', '.join(MESSAGE_ROLES)}): {values}{more}; "
            "lossless-claw never writes one but reads it back as it is, and so does the lab")


def unreadable_time_warnings(found: list[UnreadableTime], shown: int = 3) -> list[str]:
    """One warning per table and column, naming the rows (the first ``shown``) and their values.

    >>> unreadable_time_warnings([UnreadableTime("messages", "created_at", "5", "yesterday")])
    ["messages.created_at of message_id 5 is 'yesterday', not a time lossless-claw can read: treated as missing (NULL)"]
    """
    by_column: dict[tuple[str, str], list[UnreadableTime]] = {}
    for item in found:
        by_column.setdefault((item.table, item.column), []).append(item)
    out = []
    for (table, column), items in by_column.items():
        key = "/".join(ROW_KEYS[table])
        rows = ", ".join(f"{key} {i.key} is {_shown_value(i.value)}" for i in items[:shown])
        more = f" and {len(items) - shown} more rows" if len(items) > shown else ""
        out.append(f"{table}.{column} of {rows}{more}, not a time lossless-claw can read: treated as missing (NULL)")
    return out


def _shown_value(value: object) -> str:
    if isinstance(value, (bytes, bytearray)):
        return f"a blob of {len(value)} bytes"
    text = repr(value)
    return text if len(text) <= 42 else text[:40] + "…"


class NotAnLcmDb(SqliteReadError):
    """A SQLite file without lossless-claw's tables."""


@dataclass(frozen=True)
class LcmDbSchema:
    """Which lossless-claw tables and columns one lcm.db file has."""

    path: str
    tables: Mapping[str, tuple[str, ...]]
    all_tables: tuple[str, ...]
    completed_backfills: frozenset[str]
    version: LcmDbVersion

    def has(self, table: str, column: str) -> bool:
        return column == "rowid" or column in self.tables.get(table, ())

    def missing_columns(self, table: str) -> list[str]:
        if table not in self.tables:
            return []
        return [c.name for c in CANONICAL[table] if not self.has(table, c.name)]

    def select_sql(self, table: str, source: str | None = None) -> str:
        """``SELECT <canonical columns> FROM <source or table>`` valid in SQLite and DuckDB."""
        exprs = []
        for column in CANONICAL[table]:
            if self.has(table, column.name):
                exprs.append(f'"{column.name}"' if column.name != "rowid" else "rowid AS origin_rowid")
            else:
                exprs.append(f"CAST({column.missing} AS {column.sql_type}) AS {column.name}")
        return f"SELECT {', '.join(exprs)} FROM {source or table}"

    def output_columns(self, table: str) -> list[str]:
        return ["origin_rowid" if c.name == "rowid" else c.name for c in CANONICAL[table]]

    def describe_gaps(self) -> list[str]:
        """Human-readable notes on what this schema lacks and how the lab fills it."""
        notes = [f"schema of {self.version.describe()}"]
        for table in LCM_TABLES:
            if table not in self.tables:
                if table in CORE_TABLES or self.version.is_v1:
                    notes.append(f"table {table} absent: loaded as empty")
                continue
            for name in self.missing_columns(table):
                if self.version.is_v1 and f"{table}.{name}" in V1_DROPPED:
                    notes.append(f"column {table}.{name} absent (1.0 no longer stores it): NULL")
                    continue
                how = "derived as the plugin's backfill would" if (table, name) in DERIVED_WHEN_MISSING else "NULL"
                default = next(c.missing for c in CANONICAL[table] if c.name == name)
                if default != "NULL" and (table, name) not in DERIVED_WHEN_MISSING:
                    how = f"plugin default {default}"
                notes.append(f"column {table}.{name} absent (older schema): {how}")
        return notes


def read_lcmdb_schema(conn: sqlite3.Connection, path: str) -> LcmDbSchema:
    """Probe tables and columns; raise :class:`NotAnLcmDb` when this is not a lossless-claw DB."""
    try:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")]
    except sqlite3.DatabaseError as exc:
        raise SqliteReadError(f"{path}: corrupt or unreadable SQLite file ({exc})") from exc
    missing = [t for t in REQUIRED_TABLES if t not in names]
    if missing:
        shown = ", ".join(sorted(names)[:8]) or "no tables"
        raise NotAnLcmDb(
            f"{path}: SQLite file but not a lossless-claw lcm.db (missing tables {', '.join(missing)}; has {shown})"
        )
    columns = {name: _table_columns(conn, path, name, required=name in LCM_TABLES) for name in names}
    tables = {table: columns[table] for table in LCM_TABLES if table in columns}
    for table, keys in KEY_COLUMNS.items():
        if absent := [key for key in keys if key not in tables[table]]:
            raise NotAnLcmDb(f"{path}: SQLite file but not a lossless-claw lcm.db (table {table} has no "
                             f"{', '.join(absent)} column{'s' if len(absent) > 1 else ''})")  # fmt: skip
    done: frozenset[str] = frozenset()
    if "lcm_migration_state" in names:
        done = frozenset(r[0] for r in conn.execute("SELECT step_name FROM lcm_migration_state"))
    return LcmDbSchema(
        path=path, tables=tables, all_tables=tuple(sorted(names)), completed_backfills=done,
        version=detect_version(columns),
    )


def _table_columns(conn: sqlite3.Connection, path: str, name: str, *, required: bool) -> tuple[str, ...]:
    """Column names of one table; a table the lab does not read may be unreadable (then: none)."""
    quoted = name.replace('"', '""')
    try:
        return tuple(r[1] for r in conn.execute(f'PRAGMA table_info("{quoted}")'))
    except sqlite3.DatabaseError as exc:
        if required:
            raise SqliteReadError(f"{path}: corrupt or unreadable table {name} ({exc})") from exc
        return ()


def open_lcmdb(snapshot: SqliteSnapshot) -> tuple[sqlite3.Connection, LcmDbSchema]:
    """Connect to a snapshot and read its schema (raises for non-lcm.db and corrupt files)."""
    conn = snapshot.connect()
    try:
        return conn, read_lcmdb_schema(conn, str(snapshot.original))
    except BaseException:
        conn.close()
        raise


def iter_table_batches(
    conn: sqlite3.Connection, schema: LcmDbSchema, table: str, batch_rows: int = 65_536
) -> Iterator[pa.RecordBatch]:
    """Stream one table as Arrow record batches with the canonical columns (stdlib reader)."""
    names = schema.output_columns(table)
    types = [_ARROW_TYPES[c.sql_type] for c in CANONICAL[table]]
    arrow_schema = pa.schema(list(zip(names, types, strict=True)))
    if table not in schema.tables:
        return
    try:
        cursor = conn.execute(schema.select_sql(table))
        while rows := cursor.fetchmany(batch_rows):
            columns = list(zip(*rows, strict=True))
            arrays = []
            for name, arrow_type, values in zip(names, types, columns, strict=True):
                try:
                    arrays.append(pa.array(values, type=arrow_type))
                except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
                    raise SqliteReadError(
                        f"{schema.path}: {table}.{name} holds a value that is not {arrow_type} ({exc})"
                    ) from exc
            yield pa.RecordBatch.from_arrays(arrays, schema=arrow_schema)
    except sqlite3.DatabaseError as exc:
        raise SqliteReadError(f"{schema.path}: corrupt or unreadable table {table} ({exc})") from exc


def count_rows(conn: sqlite3.Connection, tables: tuple[str, ...] = LCM_TABLES) -> dict[str, int]:
    """``SELECT count(*)`` of each lossless-claw table present."""
    present = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    return {t: int(conn.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0]) for t in tables if t in present}
