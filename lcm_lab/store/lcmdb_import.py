"""Bulk import of a lossless-claw ``lcm.db`` snapshot into the lab tables.

Two ways to get rows out of SQLite, one set of SQL transforms:

* ``scanner`` (default, faster: see reports/benchmarks/load.md): DuckDB's SQLite scanner
  extension reads the snapshot directly; each transform runs once over a view.
* ``sqlite3`` (fallback): the stdlib reader streams Arrow batches
  (:func:`lcm_lab.io.lcmdb.iter_table_batches`); each transform runs per batch, so memory stays
  bounded by the batch size.

The tables of 1.0 (pending summaries, receipts, transcript anchors) go to lab tables of their
own (:mod:`lcm_lab.store.migrations.m010_lcmdb_v1` says why pending nodes are kept apart from
``summaries``). Lab conversation ids are ``base + origin conversation_id`` (``base`` = the largest lab id so
far), which keeps every transform a streaming one (no global renumbering). The naming trap
``summary_parents.parent_summary_id`` (= the *source* of a condensed summary) is resolved here
into ``summary_sources.source_summary_id``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pyarrow as pa

from lcm_lab.errors import DataError
from lcm_lab.io.lcmdb import (
    CANONICAL,
    LCM_TABLES,
    LcmDbSchema,
    UnreadableTime,
    iter_table_batches,
    refuse_wrong_types,
    row_key_sql,
    unknown_role_warning,
    unknown_roles,
    unreadable_time_warnings,
    unreadable_times,
)
from lcm_lab.store._duckdb import duckdb
from lcm_lab.store.lcmdb_backends import BACKENDS
from lcm_lab.store.sql_tokens import fill_token_estimates_sql

if TYPE_CHECKING:
    from lcm_lab.store.core import LabStore

_BATCH = "_lcm_batch"


class ScannerFailed(Exception):
    """DuckDB's SQLite scanner could not read the file (the stdlib reader may still)."""


@dataclass
class LcmDbImport:
    """Rows imported per lab table, and notes on rows that could not be linked."""

    counts: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    backend: str = "scanner"


def _conversations(rel: str, p: dict[str, int]) -> str:
    return f"""
    INSERT INTO conversations (conversation_id, source_id, kind, origin_conversation_id, session_id, session_key,
        title, active, archived_at, archive_cause, bootstrapped_at, created_at, updated_at)
    SELECT conversation_id + {p['base']}, {p['source_id']}, 'lcm_db', conversation_id, session_id, session_key,
        title, COALESCE(active, 1) <> 0, archived_at, archive_cause, bootstrapped_at, created_at, updated_at
    FROM {rel}"""


_OWN_CONVERSATIONS = "(SELECT origin_conversation_id FROM conversations WHERE source_id = {source_id})"


def _messages(rel: str, p: dict[str, int]) -> str:
    return f"""
    INSERT INTO messages (conversation_id, seq, role, runtime_role, content, token_count, token_estimate,
        created_at, transcript_entry_id, identity_hash, sender_metadata, stable_event_key, large_content,
        origin_message_id)
    SELECT conversation_id + {p['base']}, seq, role, CASE role WHEN 'tool' THEN 'toolResult' ELSE role END,
        content, token_count, lcm_estimate_tokens_ascii(content), created_at, transcript_entry_id, identity_hash,
        openclaw_sender_metadata, stable_event_key, large_content, message_id
    FROM {rel}
    WHERE conversation_id IN {_OWN_CONVERSATIONS.format(**p)}"""


def _message_parts(rel: str, p: dict[str, int]) -> str:
    return f"""
    INSERT INTO message_parts (conversation_id, seq, ordinal, part_id, part_type, text_content, tool_call_id,
        tool_name, tool_input, tool_output, metadata, is_ignored, is_synthetic, tool_status, tool_error,
        tool_title, patch_hash, patch_files, file_mime, file_name, file_url, subtask_prompt, subtask_desc,
        subtask_agent, step_reason, step_cost, step_tokens_in, step_tokens_out, snapshot_hash, compaction_auto)
    SELECT k.conversation_id, k.seq, r.ordinal, r.part_id, r.part_type, r.text_content, r.tool_call_id,
        r.tool_name, r.tool_input, r.tool_output, r.metadata, r.is_ignored, r.is_synthetic, r.tool_status,
        r.tool_error, r.tool_title, r.patch_hash, r.patch_files, r.file_mime, r.file_name, r.file_url,
        r.subtask_prompt, r.subtask_desc, r.subtask_agent, r.step_reason, r.step_cost, r.step_tokens_in,
        r.step_tokens_out, r.snapshot_hash, r.compaction_auto
    FROM {rel} r JOIN _lcm_message_keys k ON k.message_id = r.message_id"""


def _summaries(rel: str, p: dict[str, int]) -> str:
    return f"""
    INSERT INTO summaries (conversation_id, summary_id, kind, depth, content, token_count, token_estimate,
        earliest_at, latest_at, descendant_count, descendant_token_count, source_message_token_count, file_ids,
        model, created_at, creation_order)
    SELECT conversation_id + {p['base']}, summary_id, kind, COALESCE(depth, CASE kind WHEN 'leaf' THEN 0 END),
        content, token_count, lcm_estimate_tokens_ascii(content), earliest_at, latest_at, descendant_count,
        descendant_token_count, source_message_token_count,
        CASE WHEN json_valid(file_ids) THEN CAST(from_json(file_ids, '["VARCHAR"]') AS VARCHAR[]) END,
        model, created_at, origin_rowid
    FROM {rel}
    WHERE conversation_id IN {_OWN_CONVERSATIONS.format(**p)}"""


def _summary_parents(rel: str, p: dict[str, int]) -> str:
    # lossless-claw: summary_id = the condensed node, parent_summary_id = one of its SOURCES.
    return f"""
    INSERT INTO summary_sources (conversation_id, summary_id, source_summary_id, ordinal)
    SELECT k.conversation_id, r.summary_id, r.parent_summary_id, r.ordinal
    FROM {rel} r JOIN _lcm_summary_keys k ON k.summary_id = r.summary_id"""


def _summary_messages(rel: str, p: dict[str, int]) -> str:
    return f"""
    INSERT INTO summary_messages (conversation_id, summary_id, seq, ordinal)
    SELECT k.conversation_id, r.summary_id, k.seq, r.ordinal
    FROM {rel} r JOIN _lcm_message_keys k ON k.message_id = r.message_id"""


def _context_items(rel: str, p: dict[str, int]) -> str:
    return f"""
    INSERT INTO context_items (conversation_id, ordinal, item_type, seq, summary_id, created_at)
    SELECT r.conversation_id + {p['base']}, r.ordinal, r.item_type, k.seq, r.summary_id, r.created_at
    FROM {rel} r LEFT JOIN _lcm_message_keys k ON k.message_id = r.message_id
    WHERE r.conversation_id IN {_OWN_CONVERSATIONS.format(**p)}
      AND (r.item_type <> 'message' OR k.seq IS NOT NULL)"""


def _large_files(rel: str, p: dict[str, int]) -> str:
    return f"""
    INSERT INTO large_files (conversation_id, file_id, file_name, mime_type, byte_size, line_count, storage_uri,
        exploration_summary, created_at)
    SELECT conversation_id + {p['base']}, file_id, file_name, mime_type, byte_size, line_count, storage_uri,
        exploration_summary, created_at
    FROM {rel}
    WHERE conversation_id IN {_OWN_CONVERSATIONS.format(**p)}"""


def _pending_compaction_batches(rel: str, p: dict[str, int]) -> str:
    return f"""
    INSERT INTO pending_compaction_batches (conversation_id, batch_id, session_key, session_target_json, status,
        source_projection_fingerprint, compactable_start_ordinal, compactable_end_ordinal,
        planned_fresh_tail_start_ordinal, prompt_version, model, failure_summary, created_at, updated_at, published_at)
    SELECT conversation_id + {p['base']}, batch_id, session_key, session_target_json, status,
        source_projection_fingerprint, compactable_start_ordinal, compactable_end_ordinal,
        planned_fresh_tail_start_ordinal, prompt_version, model, failure_summary, created_at, updated_at, published_at
    FROM {rel}
    WHERE conversation_id IN {_OWN_CONVERSATIONS.format(**p)}"""


def _pending_summary_nodes(rel: str, p: dict[str, int]) -> str:
    return f"""
    INSERT INTO pending_summary_nodes (conversation_id, node_id, batch_id, kind, depth, status, ordinal_start,
        ordinal_end, source_fingerprint, source_context_hash, content, token_count, prompt_version, model,
        canonical_summary_id, lease_owner, lease_expires_at, failure_summary, retry_count, next_attempt_after,
        created_at, updated_at, ready_at, promoted_at)
    SELECT conversation_id + {p['base']}, node_id, batch_id, kind, depth, status, ordinal_start,
        ordinal_end, source_fingerprint, source_context_hash, content, token_count, prompt_version, model,
        canonical_summary_id, lease_owner, lease_expires_at, failure_summary, retry_count, next_attempt_after,
        created_at, updated_at, ready_at, promoted_at
    FROM {rel}
    WHERE conversation_id IN {_OWN_CONVERSATIONS.format(**p)}"""


def _pending_summary_node_messages(rel: str, p: dict[str, int]) -> str:
    return f"""
    INSERT INTO pending_summary_node_messages (conversation_id, node_id, seq, ordinal, transcript_entry_id, identity_hash)
    SELECT k.conversation_id, r.node_id, k.seq, r.ordinal, r.transcript_entry_id, r.identity_hash
    FROM {rel} r JOIN _lcm_message_keys k ON k.message_id = r.message_id"""


def _pending_summary_node_children(rel: str, p: dict[str, int]) -> str:
    return f"""
    INSERT INTO pending_summary_node_children (conversation_id, node_id, ordinal, child_node_id, child_summary_id)
    SELECT k.conversation_id, r.node_id, r.ordinal, r.child_node_id, r.child_summary_id
    FROM {rel} r JOIN _lcm_node_keys k ON k.node_id = r.node_id"""


def _turn_advancements(rel: str, p: dict[str, int]) -> str:
    # Receipts name a session, not a conversation (src/engine.ts commitTurn): kept per source.
    return f"""
    INSERT INTO turn_advancements (source_id, advancement_key, payload_hash, session_id, session_key,
        admission_entry_id, terminal_entry_id, message_count, committed_at)
    SELECT {p['source_id']}, advancement_key, payload_hash, session_id, session_key,
        admission_entry_id, terminal_entry_id, message_count, committed_at
    FROM {rel}"""


def _message_transcript_anchor_trust(rel: str, p: dict[str, int]) -> str:
    return f"""
    INSERT INTO message_transcript_anchor_trust (conversation_id, seq, transcript_entry_id, trust_state, source,
        reason, verified_at, created_at, updated_at)
    SELECT k.conversation_id, k.seq, r.transcript_entry_id, r.trust_state, r.source,
        r.reason, r.verified_at, r.created_at, r.updated_at
    FROM {rel} r JOIN _lcm_message_keys k ON k.message_id = r.message_id"""


def _conversation_transcript_epochs(rel: str, p: dict[str, int]) -> str:
    return f"""
    INSERT INTO conversation_transcript_epochs (conversation_id, session_id, session_key, frontier_entry_id,
        frontier_seq, frontier_created_at, migration_mode, metadata_json, created_at, updated_at)
    SELECT conversation_id + {p['base']}, session_id, session_key, frontier_entry_id,
        frontier_seq, frontier_created_at, migration_mode, metadata_json, created_at, updated_at
    FROM {rel}
    WHERE conversation_id IN {_OWN_CONVERSATIONS.format(**p)}"""


_TRANSFORMS: dict[str, Callable[[str, dict[str, int]], str]] = {
    "conversations": _conversations,
    "messages": _messages,
    "message_parts": _message_parts,
    "summaries": _summaries,
    "summary_parents": _summary_parents,
    "summary_messages": _summary_messages,
    "context_items": _context_items,
    "large_files": _large_files,
    "pending_compaction_batches": _pending_compaction_batches,
    "pending_summary_nodes": _pending_summary_nodes,
    "pending_summary_node_messages": _pending_summary_node_messages,
    "pending_summary_node_children": _pending_summary_node_children,
    "turn_advancements": _turn_advancements,
    "message_transcript_anchor_trust": _message_transcript_anchor_trust,
    "conversation_transcript_epochs": _conversation_transcript_epochs,
}
_LAB_TABLE = {"summary_parents": "summary_sources"}


def _after(store: LabStore, table: str, p: dict[str, int]) -> None:
    """Key maps later transforms join on, built from what was just inserted."""
    own = f"SELECT conversation_id FROM conversations WHERE source_id = {p['source_id']}"
    if table == "messages":
        store.execute(
            "CREATE OR REPLACE TEMP TABLE _lcm_message_keys AS SELECT origin_message_id AS message_id, "
            f"conversation_id, seq FROM messages WHERE conversation_id IN ({own})"
        )
    elif table == "summaries":
        store.execute(
            "CREATE OR REPLACE TEMP TABLE _lcm_summary_keys AS SELECT summary_id, conversation_id "
            f"FROM summaries WHERE conversation_id IN ({own})"
        )
    elif table == "pending_summary_nodes":
        store.execute(
            "CREATE OR REPLACE TEMP TABLE _lcm_node_keys AS SELECT node_id, conversation_id "
            f"FROM pending_summary_nodes WHERE conversation_id IN ({own})"
        )


def import_lcm_db(
    store: LabStore,
    conn: sqlite3.Connection,
    schema: LcmDbSchema,
    source_id: int,
    *,
    scanner_alias: str | None = None,
) -> LcmDbImport:
    """Insert every row of an lcm.db's lossless-claw tables; the caller holds the transaction.

    With ``scanner_alias`` (a database attached by :meth:`LabStore.attached_sqlite`) the rows
    come through DuckDB's SQLite scanner, else through the stdlib connection ``conn``.
    """
    backend = "scanner" if scanner_alias else "sqlite3"
    try:
        return _import(store, conn, schema, source_id, scanner_alias)
    except duckdb.Error as exc:
        if backend == "scanner":
            # DuckDB's message runs over lines and suggests its own settings: its first line is said
            reason = str(exc).splitlines()[0].strip() if str(exc).strip() else type(exc).__name__
            raise ScannerFailed(f"{schema.path}: DuckDB's SQLite reader could not read the file ({reason})") from exc
        raise


# What a value out of the lab column's range or shape raises (an INT32 token count of 2**63 - 1,
# a NULL seq, a repeated message id): the same on either backend, so not the scanner's fault.
_VALUE_FAULTS = (duckdb.ConversionException, duckdb.ConstraintException, duckdb.OutOfRangeException)


def _import_table(
    store: LabStore, conn: sqlite3.Connection, schema: LcmDbSchema, table: str, scanner_alias: str | None,
    params: dict[str, int], unreadable: list[UnreadableTime],
) -> int:
    """Rows of one table inserted (none where the file has no such table)."""
    if table not in schema.tables:
        return 0
    if scanner_alias:
        sql = _TRANSFORMS[table](_times_read(f"({schema.select_sql(table, f'{scanner_alias}.{table}')})", table, unreadable), params)
        return _count(store.execute(sql).fetchone())
    inserted = 0
    for batch in iter_table_batches(conn, schema, table):
        store.con.register(_BATCH, pa.Table.from_batches([batch]))
        try:
            inserted += _count(store.execute(_TRANSFORMS[table](_times_read(_BATCH, table, unreadable), params)).fetchone())
        finally:
            store.con.unregister(_BATCH)
    return inserted


_UNREADABLE = "_lcm_unreadable_times"
_UNREADABLE_SCHEMA = pa.schema([("tbl", pa.string()), ("col", pa.string()), ("key", pa.string())])


def _times_read(rel: str, table: str, unreadable: list[UnreadableTime]) -> str:
    """``rel`` with the time values the plugin cannot read (listed in ``_lcm_unreadable_times``) as
    NULL, each matched by its row key; ``rel`` itself when the table has none."""
    columns = sorted({u.column for u in unreadable if u.table == table})
    if not columns:
        return rel
    nulled = ", ".join(
        f"CASE WHEN {row_key_sql(table)} IN (SELECT key FROM {_UNREADABLE} WHERE tbl = '{table}' AND col = '{column}')"
        f' THEN NULL ELSE "{column}" END AS "{column}"'
        for column in columns
    )
    return f"(SELECT * REPLACE ({nulled}) FROM {rel})"


def _import(
    store: LabStore, conn: sqlite3.Connection, schema: LcmDbSchema, source_id: int, scanner_alias: str | None
) -> LcmDbImport:
    params = {"source_id": source_id, "base": store.next_id("conversations", "conversation_id") - 1}
    result = LcmDbImport(backend="scanner" if scanner_alias else "sqlite3")
    refuse_wrong_types(conn, schema)  # before either backend reads a value as another
    unreadable = unreadable_times(conn, schema)  # read as NULL, one warning per column
    result.warnings += unreadable_time_warnings(unreadable)
    if (roles := unknown_role_warning(unknown_roles(conn, schema))) is not None:
        result.warnings.append(roles)
    store.con.register(_UNREADABLE, pa.table({"tbl": [u.table for u in unreadable], "col": [u.column for u in unreadable],
                                              "key": [u.key for u in unreadable]}, schema=_UNREADABLE_SCHEMA))  # fmt: skip
    try:
        for table in LCM_TABLES:
            try:
                inserted = _import_table(store, conn, schema, table, scanner_alias, params, unreadable)
            except _VALUE_FAULTS as exc:
                raise DataError(f"{schema.path}: table {table} holds a value the lab cannot store "
                                f"({str(exc).splitlines()[0]}); lossless-claw does not write such rows, "
                                "so the file was changed by something else") from exc  # fmt: skip
            result.counts[_LAB_TABLE.get(table, table)] = inserted
            _after(store, table, params)
    finally:
        store.con.unregister(_UNREADABLE)
    # (after a failure the caller's rollback drops these temporary tables: dropping them here
    # in the failed transaction raised its own error over the first)
    store.execute("DROP TABLE IF EXISTS _lcm_message_keys")
    store.execute("DROP TABLE IF EXISTS _lcm_summary_keys")
    store.execute("DROP TABLE IF EXISTS _lcm_node_keys")
    own = f"conversation_id IN (SELECT conversation_id FROM conversations WHERE source_id = {source_id})"
    store.execute(fill_token_estimates_sql("messages", own))
    store.execute(fill_token_estimates_sql("summaries", own))
    _derive_missing_summary_columns(store, schema, source_id, result)
    result.warnings += _unlisted_file_ids(store, schema, own)
    result.warnings += _negative_token_counts(store, own)
    return result


def _negative_token_counts(store: LabStore, own: str) -> list[str]:
    """The doctor's ``negative-token-count`` finding as one warning of the load, counting the
    messages and summaries whose ``token_count`` is below zero (kept as the file holds them)."""
    counts = [int(store.fetch_all(f"SELECT count(*) FROM {table} WHERE {own} AND token_count < 0")[0][0])
              for table in ("messages", "summaries")]
    if not any(counts):
        return []
    from lcm_lab.metrics.doctor import negative_token_warning

    warning = negative_token_warning(*counts)
    return [warning] if warning else []


def _unlisted_file_ids(store: LabStore, schema: LcmDbSchema, own: str) -> list[str]:
    """A warning for summaries whose ``file_ids`` is not a JSON array (lossless-claw writes one,
    ``'[]'`` at the least): they are read as referring to no file, which the user should know."""
    if "summaries" not in schema.tables or "file_ids" in schema.missing_columns("summaries"):
        return []
    rows = store.fetch_all(f"SELECT summary_id FROM summaries WHERE {own} AND file_ids IS NULL ORDER BY summary_id")
    if not rows:
        return []
    named = ", ".join(str(r[0]) for r in rows[:3]) + (f" and {len(rows) - 3:,} more" if len(rows) > 3 else "")
    return [f"summaries.file_ids of {named} is not a JSON array of file ids: read as referring to no file"]


def _count(row: tuple[int, ...] | None) -> int:
    return int(row[0]) if row else 0


def _derive_missing_summary_columns(store: LabStore, schema: LcmDbSchema, source_id: int, result: LcmDbImport) -> None:
    """Fill summary columns an old schema lacks the way the plugin's backfills compute them (``src/db/migration.ts``)."""
    if "summaries" not in schema.tables:
        return
    missing = set(schema.missing_columns("summaries"))
    own = f"conversation_id IN (SELECT conversation_id FROM conversations WHERE source_id = {source_id})"
    if "depth" in missing or "backfillSummaryDepths" not in schema.completed_backfills:
        # The plugin re-derives every depth when it opens a file whose lcm_migration_state does
        # not record this backfill (all files before v0.9.0): read such files the same way.
        before = store.fetch_all(f"SELECT summary_id, depth FROM summaries WHERE {own}")
        _derive_depths(store, own)
        after = dict(store.fetch_all(f"SELECT summary_id, depth FROM summaries WHERE {own}"))
        changed = sum(1 for sid, depth in before if depth is not None and after.get(sid) != depth)
        if changed:
            result.warnings.append(
                f"{changed} stored summary depths disagree with the summary DAG; recomputed as the plugin's "
                "backfillSummaryDepths would on opening this file"
            )
    if "descendant_count" in missing:
        store.execute(f"UPDATE summaries SET descendant_count = 0 WHERE {own} AND kind = 'leaf'")
    if "descendant_token_count" in missing:
        store.execute(f"UPDATE summaries SET descendant_token_count = 0 WHERE {own} AND kind = 'leaf'")
    if "source_message_token_count" in missing:
        store.execute(f"""
            UPDATE summaries s SET source_message_token_count = COALESCE(x.total, 0)
            FROM (SELECT sm.conversation_id, sm.summary_id, sum(m.token_count) AS total
                  FROM summary_messages sm JOIN messages m USING (conversation_id, seq)
                  GROUP BY ALL) x
            WHERE s.{own} AND s.kind = 'leaf'
              AND x.conversation_id = s.conversation_id AND x.summary_id = s.summary_id""")
        store.execute(f"UPDATE summaries SET source_message_token_count = 0 "
                      f"WHERE {own} AND kind = 'leaf' AND source_message_token_count IS NULL")
    aggregated = [c for c in ("descendant_count", "descendant_token_count", "source_message_token_count") if c in missing]
    if aggregated:
        max_depth = store.fetch_all(f"SELECT COALESCE(max(depth), 0) FROM summaries WHERE {own}")[0][0]
        sums = {
            "descendant_count": "sum(src.descendant_count + 1)",
            "descendant_token_count": "sum(src.token_count + src.descendant_token_count)",
            "source_message_token_count": "sum(src.source_message_token_count)",
        }
        for depth in range(1, int(max_depth) + 1):
            select = ", ".join(f"{sums[c]} AS {c}" for c in aggregated)
            assign = ", ".join(f"{c} = COALESCE(x.{c}, 0)" for c in aggregated)
            store.execute(f"""
                UPDATE summaries s SET {assign}
                FROM (SELECT e.conversation_id, e.summary_id, {select}
                      FROM summary_sources e JOIN summaries src
                        ON src.conversation_id = e.conversation_id AND src.summary_id = e.source_summary_id
                      GROUP BY ALL) x
                WHERE s.{own} AND s.kind = 'condensed' AND s.depth = {depth}
                  AND x.conversation_id = s.conversation_id AND x.summary_id = s.summary_id""")


def _derive_depths(store: LabStore, own: str) -> None:
    """Leaves 0; condensed 1 + max(source depth), resolved iteratively; unresolvable → 1."""
    store.execute(f"UPDATE summaries SET depth = CASE kind WHEN 'leaf' THEN 0 END WHERE {own}")
    while True:
        changed = store.execute(f"""
            UPDATE summaries s SET depth = x.depth
            FROM (SELECT e.conversation_id, e.summary_id, 1 + max(src.depth) AS depth,
                         bool_and(src.depth IS NOT NULL) AS resolved
                  FROM summary_sources e JOIN summaries src
                    ON src.conversation_id = e.conversation_id AND src.summary_id = e.source_summary_id
                  GROUP BY ALL) x
            WHERE s.{own} AND s.depth IS NULL AND x.resolved
              AND x.conversation_id = s.conversation_id AND x.summary_id = s.summary_id""").fetchone()
        if not _count(changed):
            break
    store.execute(f"UPDATE summaries SET depth = 1 WHERE {own} AND depth IS NULL")


__all__ = ["BACKENDS", "CANONICAL", "LcmDbImport", "ScannerFailed", "import_lcm_db"]
