"""Insert reader output into the lab tables: rows from :mod:`lcm_lab.io.rows`, as Arrow tables.

A conversation already loaded from the same path whose entries are a prefix of the new read (a
session file that grew) gets only the new entries appended. Rows a load worker built
(:class:`lcm_lab.io.prepare.Prepared`) are inserted as they are, several files at a time, with
their conversation and source ids shifted first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from lcm_lab.io.model import LoadedConversation
from lcm_lab.io.prepare import SPLIT_MIN_ENTRIES, Prepared, build_rows_split
from lcm_lab.io.rows import Start, WriteCounts, build_rows, load_warnings
from lcm_lab.store.sources import LOADED_SQL

if TYPE_CHECKING:
    from lcm_lab.store.core import LabStore

__all__ = ["COMMIT_BYTES", "WriteCounts", "insert_loaded", "insert_prepared", "loaded_before"]


# A load commits after about this much Arrow data, so DuckDB never holds more uncommitted rows
# than that (see LabStore.commit_point); committed ones fill its buffer pool up to the load cap
# and are evicted from there (measured on 1M tiny lines: DuckDB's use stays at the 256 MB cap).
COMMIT_BYTES = 48 << 20


def _insert(store: LabStore, table: str, arrow: pa.Table) -> None:
    name = f"_lcm_rows_{table}"
    store.con.register(name, arrow)
    try:
        store.execute(f"INSERT INTO {table} BY NAME SELECT * FROM {name}")
    finally:
        store.con.unregister(name)


class _CommittingSink:
    """Inserts Arrow tables, reaching a commit point after every ``commit_bytes`` of them."""

    def __init__(self, store: LabStore, commit_bytes: int) -> None:
        self.store = store
        self.commit_bytes = commit_bytes
        self.pending = 0

    def __call__(self, table: str, arrow: pa.Table) -> None:
        step = arrow.num_rows
        if arrow.nbytes > self.commit_bytes and arrow.num_rows > 1:  # one batch bigger than a step: split it
            step = max(1, arrow.num_rows * self.commit_bytes // arrow.nbytes)
        for start in range(0, arrow.num_rows, max(1, step)):
            piece = arrow if step >= arrow.num_rows else arrow.slice(start, step)
            _insert(self.store, table, piece)
            self.pending += piece.nbytes
            if self.pending >= self.commit_bytes:
                self.store.commit_point()
                self.pending = 0


def loaded_before(store: LabStore, path: str) -> bool:
    """Whether the store holds conversations loaded from ``path`` (a later load may append)."""
    return bool(store.fetch_all(
        f"SELECT 1 FROM sources WHERE path = ? AND status IN {LOADED_SQL} LIMIT 1", [path]
    ))  # fmt: skip


@dataclass
class _Existing:
    conversation_id: int
    entry_keys: list[tuple[str | None, str, int | None]]
    max_seq: int
    events: int
    qa_ids: set[str]
    last_line: int


def _find_existing(store: LabStore, path: str, session_id: str, taken: set[int]) -> _Existing | None:
    rows = store.fetch_all(
        "SELECT c.conversation_id FROM conversations c JOIN sources s USING (source_id)"
        f" WHERE s.path = ? AND s.status IN {LOADED_SQL} AND c.session_id = ?"
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
    last_line = int(store.fetch_all(
        "SELECT COALESCE(max(line), 0) FROM (SELECT line FROM entries WHERE conversation_id = $1"
        " UNION ALL SELECT line FROM raw_lines WHERE conversation_id = $1)", [cid]
    )[0][0])  # fmt: skip
    return _Existing(cid, keys, max_seq, events, qa_ids, last_line)


def _starts(store: LabStore, path: str, loaded: Sequence[LoadedConversation]) -> tuple[list[Start], list[str]]:
    """Where each conversation's rows begin: appended after an earlier load of ``path`` when its
    entries extend that load's, else a new conversation."""
    next_id = store.next_id("conversations", "conversation_id")
    starts: list[Start] = []
    warnings: list[str] = []
    taken: set[int] = set()
    for item in loaded:
        conv = item.conversation
        existing = _find_existing(store, path, conv.session_id, taken)
        if existing is not None:
            keys = [(e.entry_id, e.type, e.line) for e in conv.entries[: len(existing.entry_keys)]]
            if keys == existing.entry_keys:
                taken.add(existing.conversation_id)
                starts.append(Start(existing.conversation_id, len(keys), existing.max_seq, existing.events,
                                    frozenset(existing.qa_ids), appended=True, line=existing.last_line))  # fmt: skip
                continue
            warnings.append(
                f"{path}: session {conv.session_id} changed in place (not an append); loaded as a new conversation"
            )
        taken.add(next_id)
        starts.append(Start(next_id))
        next_id += 1
    return starts, warnings


def insert_loaded(
    store: LabStore, source_id: int, path: str, loaded: Sequence[LoadedConversation], *, kind: str,
    commit_bytes: int | None = None, workers: int = 1,
) -> WriteCounts:
    """Insert conversations read from ``path`` (caller holds the transaction).

    With ``commit_bytes``, rows of new conversations are committed in steps of about that size
    (the caller's source row must be ``UNFINISHED`` until its last commit, so a failure can be
    undone by :func:`lcm_lab.store.sources.purge_unfinished`). Rows appended to conversations
    loaded before go in one transaction (undoing part of an append is not supported). With
    ``workers`` > 1, one big new conversation is projected in parts across that many processes
    (:func:`lcm_lab.io.prepare.build_rows_split`).
    """
    starts, warnings = _starts(store, path, loaded)
    stepped = commit_bytes is not None and not any(start.appended for start in starts)
    sink = _CommittingSink(store, commit_bytes) if stepped and commit_bytes else partial(_insert, store)
    if workers > 1 and len(loaded) == 1 and len(loaded[0].conversation.entries) >= SPLIT_MIN_ENTRIES:
        # The CPUs belong to the workers, as in a directory's load (lcm_lab.loading.dispatch):
        # DuckDB's own threads only contend with them (measured on a 28 MB session: the parent's
        # CPU time drops by a fifth, the wall time by a tenth).
        with store.setting("threads", 1):
            counts = build_rows_split(loaded[0], starts[0], sink, kind=kind, source_id=source_id, workers=workers)
    else:
        counts = build_rows(loaded, starts, sink, kind=kind, source_id=source_id)
    counts.warnings += load_warnings(counts, path)
    counts.warnings[:0] = warnings
    return counts


def insert_prepared(store: LabStore, files: Sequence[tuple[int, Prepared]], *, commit_bytes: int | None = None) -> None:
    """Insert the rows load workers built for several files, one statement per table for up to
    ``commit_bytes`` of rows (caller holds the transaction and checked that nothing was loaded
    from these paths before: the rows hold every conversation as new). ``files`` pairs each
    file's ``sources`` id with its rows. With ``commit_bytes`` the rows are committed in steps,
    as :func:`insert_loaded` does; either way a table's rows are mapped only until they are
    stored, so a big file's rows are never resident at once."""
    group_bytes = commit_bytes or COMMIT_BYTES
    sink = _CommittingSink(store, commit_bytes) if commit_bytes else partial(_insert, store)
    pending: dict[str, list[pa.Table]] = {}
    held: dict[str, int] = {}

    def store_pending(table: str) -> None:
        parts = pending.pop(table)
        held.pop(table)
        sink(table, pa.concat_tables(parts, promote_options="default") if len(parts) > 1 else parts[0])

    offset = store.next_id("conversations", "conversation_id")
    for source_id, prepared in files:
        for table, arrow in prepared.tables():
            shifted = arrow.set_column(
                arrow.column_names.index("conversation_id"), "conversation_id",
                pc.add(arrow.column("conversation_id").cast(pa.int64()), offset),
            )
            if table == "conversations":
                shifted = shifted.set_column(
                    shifted.column_names.index("source_id"), "source_id", pa.array([source_id] * len(shifted), pa.int64())
                )
            pending.setdefault(table, []).append(shifted)
            held[table] = held.get(table, 0) + shifted.nbytes
            if held[table] >= group_bytes:
                store_pending(table)
        offset += prepared.counts.conversations
    for table in list(pending):
        store_pending(table)
