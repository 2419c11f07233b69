"""load_lcm_db: every schema version, row counts equal to sqlite3's, derived columns, naming trap."""

from __future__ import annotations

import importlib
import sqlite3
from pathlib import Path

import duckdb
import pytest
from conftest import FIXTURES, gunzip_to, sqlite_counts, unpacked

from lcm_lab.loading.dispatch import load_lcm_db
from lcm_lab.store import LabStore
from lcm_lab.store.lcmdb_import import BACKENDS

VERSION_DBS = sorted((FIXTURES / "lcm-db-versions").glob("*.db.gz"))
LAB_NAME = {"summary_parents": "summary_sources"}


def lab_counts(lab: LabStore, source_id: int | None) -> dict[str, int]:
    own = f"conversation_id IN (SELECT conversation_id FROM conversations WHERE source_id = {source_id})"
    tables = ("conversations", "messages", "message_parts", "summaries", "summary_sources", "summary_messages",
              "context_items", "large_files")
    return {t: int(lab.fetch_all(f"SELECT count(*) FROM {t} WHERE {own}")[0][0]) for t in tables}


def test_eight_release_fixtures_are_present() -> None:
    assert len(VERSION_DBS) == 8


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("gz", VERSION_DBS, ids=lambda p: p.name.removesuffix(".db.gz"))
def test_every_release_loads_with_sqlite_row_counts(gz: Path, backend: str, store: LabStore, tmp_path: Path) -> None:
    expected = sqlite_counts(gunzip_to(gz, tmp_path))
    result = load_lcm_db(gz, store, backend=backend)
    assert result.status == "loaded", result.warnings
    assert result.details["backend"] == backend
    got = lab_counts(store, result.source_id)
    assert got == {LAB_NAME.get(t, t): n for t, n in expected.items()}
    assert (result.conversations, result.messages, result.summaries, result.context_items) == (
        expected["conversations"], expected["messages"], expected["summaries"], expected["context_items"],
    )
    assert not result.warnings  # schema gaps are notes, not warnings
    # context items resolve to stored messages or summaries of the same conversation
    dangling = store.fetch_all(
        "SELECT count(*) FROM context_items c WHERE (item_type = 'message' AND NOT EXISTS (SELECT 1 FROM messages m "
        "WHERE m.conversation_id = c.conversation_id AND m.seq = c.seq)) OR (item_type = 'summary' AND NOT EXISTS "
        "(SELECT 1 FROM summaries s WHERE s.conversation_id = c.conversation_id AND s.summary_id = c.summary_id))"
    )[0][0]
    assert dangling == 0


def test_naming_trap_condensed_sources_are_the_older_leaves(store: LabStore, tmp_path: Path) -> None:
    gz = FIXTURES / "lcm-db-versions" / "lcm-v0.3.0.db.gz"
    result = load_lcm_db(gz, store)
    rows = store.fetch_all(
        "SELECT s.kind, s.depth, src.kind, src.depth, src.creation_order < s.creation_order "
        "FROM summary_sources e JOIN summaries s USING (conversation_id, summary_id) "
        "JOIN summaries src ON src.conversation_id = e.conversation_id AND src.summary_id = e.source_summary_id"
    )
    assert result.summaries == 28 and len(rows) > 0
    assert set(rows) == {("condensed", 1, "leaf", 0, True)}
    condensed = [s for s in store.conversation(2).summaries if s.kind == "condensed"]
    assert len(condensed) == 1
    conn = sqlite3.connect(gunzip_to(gz, tmp_path))
    parents = [r[0] for r in conn.execute(
        "SELECT parent_summary_id FROM summary_parents WHERE summary_id = ? ORDER BY ordinal", (condensed[0].summary_id,)
    )]
    conn.close()
    assert condensed[0].source_summary_ids == tuple(parents) and len(parents) > 1


def test_old_schema_gets_the_plugins_backfilled_values(store: LabStore) -> None:
    result = load_lcm_db(FIXTURES / "lcm-db-versions" / "lcm-v0.1.2.db.gz", store)
    notes = " ".join(result.details["schema_notes"])
    assert "summaries.descendant_token_count absent" in notes and "summaries.model absent" in notes
    rows = store.fetch_all(
        "SELECT s.summary_id, s.source_message_token_count, s.descendant_token_count, s.model, "
        "(SELECT sum(m.token_count) FROM summary_messages sm JOIN messages m USING (conversation_id, seq) "
        " WHERE sm.conversation_id = s.conversation_id AND sm.summary_id = s.summary_id) "
        "FROM summaries s WHERE s.conversation_id IN (SELECT conversation_id FROM conversations WHERE source_id = ?)",
        [result.source_id],
    )
    assert len(rows) == 6
    for _sid, source_tokens, descendant_tokens, model, expected_tokens in rows:
        assert source_tokens == expected_tokens and descendant_tokens == 0 and model == "unknown"
    assert store.fetch_all("SELECT DISTINCT active FROM conversations")[0][0] is True


def _legacy_db(path: Path, *, with_depth: bool) -> None:
    """A hand-built v0.1.2-shaped DB with a two-level DAG (optionally without the depth column)."""
    conn = sqlite3.connect(path)
    depth = "depth INTEGER NOT NULL DEFAULT 0," if with_depth else ""
    conn.executescript(f"""
        CREATE TABLE conversations (conversation_id INTEGER PRIMARY KEY, session_id TEXT NOT NULL, title TEXT,
            bootstrapped_at TEXT, created_at TEXT, updated_at TEXT);
        CREATE TABLE messages (message_id INTEGER PRIMARY KEY, conversation_id INTEGER, seq INTEGER, role TEXT,
            content TEXT, token_count INTEGER, created_at TEXT);
        CREATE TABLE summaries (summary_id TEXT PRIMARY KEY, conversation_id INTEGER, kind TEXT, {depth}
            content TEXT, token_count INTEGER, earliest_at TEXT, latest_at TEXT, descendant_count INTEGER,
            created_at TEXT, file_ids TEXT);
        CREATE TABLE summary_messages (summary_id TEXT, message_id INTEGER, ordinal INTEGER);
        CREATE TABLE summary_parents (summary_id TEXT, parent_summary_id TEXT, ordinal INTEGER);
        CREATE TABLE context_items (conversation_id INTEGER, ordinal INTEGER, item_type TEXT, message_id INTEGER,
            summary_id TEXT, created_at TEXT);
        INSERT INTO conversations VALUES (7, 'sess', NULL, NULL, '2026-01-01 00:00:00', '2026-01-01 00:00:00');
    """)
    for i in range(1, 7):
        conn.execute("INSERT INTO messages VALUES (?, 7, ?, 'user', ?, ?, '2026-01-01 00:00:00')", (100 + i, i, f"m{i}", 10 * i))
    leaves = [("sum_l1", (101, 102)), ("sum_l2", (103, 104)), ("sum_l3", (105,))]
    for sid, msgs in leaves:
        cols = "(summary_id, conversation_id, kind, content, token_count, descendant_count, file_ids)"
        conn.execute(f"INSERT INTO summaries {cols} VALUES (?, 7, 'leaf', 'x', 5, 0, '[]')", (sid,))
        for ordinal, mid in enumerate(msgs):
            conn.execute("INSERT INTO summary_messages VALUES (?, ?, ?)", (sid, mid, ordinal))
    cols = "(summary_id, conversation_id, kind, content, token_count, descendant_count, file_ids)"
    conn.execute(f"INSERT INTO summaries {cols} VALUES ('sum_d1', 7, 'condensed', 'y', 3, 2, '[]')")
    conn.execute(f"INSERT INTO summaries {cols} VALUES ('sum_d2', 7, 'condensed', 'z', 2, 4, '[]')")
    conn.executemany("INSERT INTO summary_parents VALUES (?, ?, ?)",
                     [("sum_d1", "sum_l1", 0), ("sum_d1", "sum_l2", 1), ("sum_d2", "sum_d1", 0), ("sum_d2", "sum_l3", 1)])
    conn.executemany("INSERT INTO context_items VALUES (7, ?, ?, ?, ?, NULL)",
                     [(0, "summary", None, "sum_d2"), (1, "message", 106, None)])
    conn.commit()
    conn.close()


@pytest.mark.parametrize("with_depth", [True, False])
@pytest.mark.parametrize("backend", BACKENDS)
def test_missing_columns_are_derived_like_the_backfills(tmp_path: Path, store: LabStore, with_depth: bool, backend: str) -> None:
    db = tmp_path / "legacy.db"
    _legacy_db(db, with_depth=with_depth)
    result = load_lcm_db(db, store, backend=backend)
    assert result.status == "loaded"
    # with the column present, both condensed rows were stored with depth 0 (a legacy defect)
    assert len(result.warnings) == (1 if with_depth else 0)
    assert not with_depth or "2 stored summary depths disagree" in result.warnings[0]
    got = {
        row[0]: row[1:]
        for row in store.fetch_all(
            "SELECT summary_id, depth, source_message_token_count, descendant_token_count, descendant_count FROM summaries"
        )
    }
    assert got["sum_l1"] == (0, 30, 0, 0)
    assert got["sum_l2"] == (0, 70, 0, 0)
    assert got["sum_l3"] == (0, 50, 0, 0)
    assert got["sum_d1"] == (1, 100, 10, 2)  # descendant_count exists in this schema: kept as stored
    # sum_d2 sources: d1 (tokens 3, desc 10, smtc 100) and l3 (tokens 5, desc 0, smtc 50)
    assert got["sum_d2"] == (2, 150, 18, 4)
    conversation = store.conversation(store.fetch_all("SELECT max(conversation_id) FROM conversations")[0][0])
    assert conversation.context_items[0].ref == "sum_d2" and conversation.context_items[1].ref == 6


def test_archived_conversations_keep_session_keys(tmp_path: Path, store: LabStore) -> None:
    db = gunzip_to(FIXTURES / "lcm-db-versions" / "lcm-v0.15.3.db.gz", tmp_path)
    conn = sqlite3.connect(db)
    conn.execute("UPDATE conversations SET session_key = 'agent:main:a', active = 0, archived_at = '2026-11-30 10:00:00', "
                 "archive_cause = 'manual-reset' WHERE conversation_id = 1")
    conn.execute("UPDATE conversations SET session_key = 'agent:main:a' WHERE conversation_id = 2")
    conn.commit()
    conn.close()
    load_lcm_db(db, store)
    rows = store.fetch_all("SELECT origin_conversation_id, session_key, active, archive_cause FROM conversations ORDER BY 1")
    assert rows == [(1, "agent:main:a", False, "manual-reset"), (2, "agent:main:a", True, None)]


def test_loading_the_same_db_twice_adds_nothing(store: LabStore, tmp_path: Path) -> None:
    gz = FIXTURES / "lcm-db-versions" / "lcm-v0.9.0.db.gz"
    first = load_lcm_db(gz, store)
    before = lab_counts(store, first.source_id)
    again = load_lcm_db(gz, store)
    plain = load_lcm_db(gunzip_to(gz, tmp_path), store)  # same database, different bytes (not gzipped)
    assert again.status == "unchanged" and again.source_id == first.source_id
    assert again.messages == first.messages  # what the store holds for it, not zeros
    assert plain.status == "loaded"  # a different file is a different source
    assert lab_counts(store, first.source_id) == before
    assert store.fetch_all("SELECT count(*) FROM sources WHERE status = 'loaded'")[0][0] == 2


def test_scanner_failure_falls_back_to_sqlite3_with_a_warning(store: LabStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fallback is one warning line in the user's words: DuckDB's message ran over two lines
    and told the user to ``SET sqlite_all_varchar=true``, a setting of no lab command."""
    import_module = importlib.import_module("lcm_lab.store.lcmdb_import")
    real = import_module._import

    def flaky(lab, conn, schema, source_id, scanner_alias):  # type: ignore[no-untyped-def]
        if scanner_alias:
            lab.execute("INSERT INTO conversations (conversation_id, source_id, kind) VALUES (999, ?, 'x')", [source_id])
            raise duckdb.Error('Mismatch Type Error: Invalid type in column "x": simulated\n'
                                "* SET sqlite_all_varchar=true to load all columns as VARCHAR")  # fmt: skip
        return real(lab, conn, schema, source_id, scanner_alias)

    monkeypatch.setattr(import_module, "_import", flaky)
    gz = FIXTURES / "lcm-db-versions" / "lcm-v0.15.3.db.gz"
    result = load_lcm_db(gz, store)
    assert result.status == "loaded" and result.details["backend"] == "sqlite3"
    assert result.warnings == (f"{gz}: DuckDB's SQLite reader could not read the file (Mismatch Type Error: Invalid type "
                               """in column "x": simulated); read it with Python's sqlite3 reader instead""",)  # fmt: skip
    assert store.fetch_all("SELECT count(*) FROM conversations WHERE conversation_id = 999")[0][0] == 0  # rolled back
    assert result.messages == 217


def test_rows_that_reference_missing_conversations_are_reported(tmp_path: Path, store: LabStore) -> None:
    db = gunzip_to(FIXTURES / "lcm-db-versions" / "lcm-v0.15.3.db.gz", tmp_path)
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA foreign_keys = OFF")
    conn.execute("INSERT INTO messages (conversation_id, seq, role, content, token_count) VALUES (99, 1, 'user', 'x', 1)")
    conn.commit()
    conn.close()
    result = load_lcm_db(db, store)
    assert result.messages == 217
    assert any("messages: 1 of 218 rows not loaded" in w for w in result.warnings)
    assert store.sources_df()["warnings"].iloc[0] == list(result.warnings)


def test_every_reference_run_db_loads_with_sqlite_row_counts() -> None:
    reference_dbs = sorted(unpacked("reference-runs/lcm-dbs").glob("*.db"))
    assert len(reference_dbs) == 27
    with LabStore(":memory:") as lab:
        for gz in reference_dbs:
            expected = sqlite_counts(gz)
            result = load_lcm_db(gz, lab)
            assert result.status == "loaded" and not result.warnings, gz.name
            assert lab_counts(lab, result.source_id) == {LAB_NAME.get(t, t): n for t, n in expected.items()}, gz.name
