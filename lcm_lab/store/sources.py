"""The ``sources`` table: one row per file load attempt, the key to idempotent loading."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from lcm_lab.io.fingerprint import FileFingerprint, fingerprint

if TYPE_CHECKING:
    from lcm_lab.store.core import LabStore

LOADED_STATUSES = ("loaded", "appended")
# A load that commits in steps (a big file) keeps its source at this status until its last
# commit; rows of a source still "loading" when the next load starts are left over by a crash.
UNFINISHED = "loading"
# The tables a load writes rows to, keyed by conversation (see lcm_lab.io.rows).
_LOADED_TABLES = ("messages", "message_parts", "entries", "recorded_events", "raw_lines", "qa_items", "summaries",
                  "summary_messages", "summary_sources", "context_items")  # fmt: skip
# SQL list of the statuses whose rows are in the store (a failed load left nothing).
LOADED_SQL = "(" + ", ".join(f"'{status}'" for status in LOADED_STATUSES) + ")"
__all__ = ["FileFingerprint", "add_source", "find_loaded", "fingerprint", "finish_source", "mark_loaded", "purge_unfinished"]


def find_loaded(store: LabStore, sha256: str) -> tuple[int, str] | None:
    """(source_id, path) of an earlier successful load of identical bytes, if any."""
    row = store.fetch_all(
        f"SELECT source_id, path FROM sources WHERE sha256 = ? AND status IN {LOADED_SQL} "
        "ORDER BY source_id LIMIT 1",
        [sha256],
    )
    return (int(row[0][0]), str(row[0][1])) if row else None


def add_source(
    store: LabStore,
    *,
    path: str,
    kind: str,
    status: str,
    loader_version: str,
    fp: FileFingerprint | None = None,
    warnings: list[str] | None = None,
    skipped_lines: int = 0,
    meta: dict[str, Any] | None = None,
) -> int:
    """Insert a sources row and return its id (an unfinished load records its process)."""
    if status == UNFINISHED:
        meta = {**(meta or {}), "loading_pid": os.getpid()}
    source_id = store.next_id("sources", "source_id")
    store.execute(
        "INSERT INTO sources (source_id, path, kind, status, sha256, size_bytes, mtime, loader_version, warnings,"
        " skipped_lines, meta) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            source_id,
            fp.path if fp else path,
            kind,
            status,
            fp.sha256 if fp else None,
            fp.size_bytes if fp else None,
            fp.mtime if fp else None,
            loader_version,
            list(warnings or []),
            skipped_lines,
            json.dumps(meta) if meta else None,
        ],
    )
    return source_id


def finish_source(store: LabStore, source_id: int, *, status: str, warnings: list[str], skipped_lines: int) -> None:
    store.execute(
        "UPDATE sources SET status = ?, warnings = ?, skipped_lines = ? WHERE source_id = ?",
        [status, list(warnings), skipped_lines, source_id],
    )


def mark_loaded(store: LabStore, source_ids: list[int]) -> None:
    """Sources whose rows are all written (the last step of a load that committed in steps)."""
    marks = ", ".join("?" for _ in source_ids)
    store.execute(f"UPDATE sources SET status = 'loaded' WHERE source_id IN ({marks})", source_ids)


def purge_unfinished(store: LabStore, *, other_processes: bool = False) -> int:
    """Remove the rows of loads that never reached their last commit (an error after a commit
    point, or a process killed mid-load) and mark those sources failed; returns how many.

    A load holds the store's file for its whole run, so a source found unfinished when another
    load starts belongs to a load that is over. With ``other_processes``, only the loads of
    other processes: what a store's first writable open in a process removes, so no command
    shows a killed load's half (a load in this process may be running in another thread)."""
    where = "status = ?" + (" AND coalesce(meta->>'loading_pid', '') <> ?" if other_processes else "")
    params: list[Any] = [UNFINISHED, *([str(os.getpid())] if other_processes else [])]
    ids = [int(r[0]) for r in store.fetch_all(f"SELECT source_id FROM sources WHERE {where}", params)]
    if not ids:
        return 0
    marks = ", ".join("?" for _ in ids)
    owned = f"SELECT conversation_id FROM conversations WHERE source_id IN ({marks})"
    with store.transaction():
        for table in _LOADED_TABLES:
            store.execute(f"DELETE FROM {table} WHERE conversation_id IN ({owned})", ids)
        store.execute(f"DELETE FROM conversations WHERE source_id IN ({marks})", ids)
        store.execute(
            f"UPDATE sources SET status = 'failed', warnings = list_append(warnings, ?) WHERE source_id IN ({marks})",
            ["the load did not finish (interrupted or failed); its rows were removed", *ids],
        )
    return len(ids)


def conversation_ids(store: LabStore) -> list[int]:
    """Every loaded conversation's lab id."""
    return [int(c) for (c,) in store.fetch_all("SELECT conversation_id FROM conversations ORDER BY conversation_id")]


def source_conversations(store: LabStore, source_id: int) -> list[tuple[int, Any]]:
    """``(lab conversation id, the source's own conversation id)`` of one loaded source."""
    rows = store.fetch_all("SELECT conversation_id, origin_conversation_id FROM conversations WHERE source_id = ? "
                           "ORDER BY conversation_id", [source_id])
    return [(int(c), o) for c, o in rows]
