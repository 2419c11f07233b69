"""The ``sources`` table: one row per file load attempt, the key to idempotent loading."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from lcm_lab.io.fingerprint import FileFingerprint, fingerprint

if TYPE_CHECKING:
    from lcm_lab.store.core import LabStore

LOADED_STATUSES = ("loaded", "appended")
# SQL list of the statuses whose rows are in the store (a failed load left nothing).
LOADED_SQL = "(" + ", ".join(f"'{status}'" for status in LOADED_STATUSES) + ")"
__all__ = ["FileFingerprint", "add_source", "find_loaded", "fingerprint", "finish_source"]


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
    """Insert a sources row and return its id."""
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


def conversation_ids(store: LabStore) -> list[int]:
    """Every loaded conversation's lab id."""
    return [int(c) for (c,) in store.fetch_all("SELECT conversation_id FROM conversations ORDER BY conversation_id")]


def source_conversations(store: LabStore, source_id: int) -> list[tuple[int, Any]]:
    """``(lab conversation id, the source's own conversation id)`` of one loaded source."""
    rows = store.fetch_all("SELECT conversation_id, origin_conversation_id FROM conversations WHERE source_id = ? "
                           "ORDER BY conversation_id", [source_id])
    return [(int(c), o) for c, o in rows]
