"""The source is never modified: bytes and mtimes of .db, -wal, -shm stay, even with a live writer.

Also: bad SQLite inputs give a clear message naming the file and are recorded in sources.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path

import pytest
from conftest import FIXTURES, gunzip_to

from lcm_lab.io.sqlite_read import sqlite_snapshot
from lcm_lab.loading.dispatch import load, load_lcm_db
from lcm_lab.store import LabStore
from lcm_lab.store.lcmdb_import import BACKENDS

V15 = FIXTURES / "lcm-db-versions" / "lcm-v0.15.3.db.gz"


def state_of(directory: Path) -> dict[str, tuple[str, int]]:
    """sha256 and mtime of every file in ``directory``."""
    return {
        p.name: (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
        for p in sorted(directory.iterdir())
        if p.is_file()
    }


@pytest.mark.parametrize("backend", BACKENDS)
def test_rollback_mode_file_is_read_in_place_and_untouched(tmp_path: Path, store: LabStore, backend: str) -> None:
    db = gunzip_to(V15, tmp_path)
    before = state_of(tmp_path)
    result = load_lcm_db(db, store, backend=backend)
    assert result.status == "loaded" and result.messages == 217
    assert state_of(tmp_path) == before  # no -wal/-shm/-journal created, bytes and mtime equal
    assert store.fetch_all("SELECT meta->>'snapshot_copied' FROM sources")[0][0] == "false"


@pytest.mark.parametrize("backend", BACKENDS)
def test_wal_mode_file_without_side_files_gets_none_created(tmp_path: Path, store: LabStore, backend: str) -> None:
    db = gunzip_to(V15, tmp_path)
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"
    conn.close()  # clean close removes -wal and -shm; the header still says WAL
    assert sorted(p.name for p in tmp_path.iterdir()) == [db.name]
    before = state_of(tmp_path)
    result = load_lcm_db(db, store, backend=backend)
    assert result.status == "loaded" and result.messages == 217
    assert state_of(tmp_path) == before


@pytest.mark.parametrize("backend", BACKENDS)
def test_live_writer_holding_a_wal_transaction(tmp_path: Path, store: LabStore, backend: str) -> None:
    live = tmp_path / "live"
    live.mkdir()
    db = gunzip_to(V15, live)
    writer = sqlite3.connect(db, isolation_level=None)
    try:
        writer.execute("PRAGMA journal_mode=WAL")
        writer.execute("PRAGMA wal_autocheckpoint=0")  # keep committed rows in the -wal file
        writer.execute("INSERT INTO conversations (session_id) VALUES ('committed-in-wal')")
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("INSERT INTO conversations (session_id) VALUES ('uncommitted')")
        names = sorted(p.name for p in live.iterdir())
        assert names == [db.name, f"{db.name}-shm", f"{db.name}-wal"]
        before = state_of(live)
        result = load_lcm_db(db, store, backend=backend)
        assert state_of(live) == before  # .db, -wal and -shm: same bytes, same mtimes
        assert result.status == "loaded"
        sessions = {r[0] for r in store.fetch_all("SELECT session_id FROM conversations")}
        assert "committed-in-wal" in sessions and "uncommitted" not in sessions
        assert result.conversations == 3
        assert store.fetch_all("SELECT meta->>'snapshot_copied' FROM sources")[0][0] == "true"
        writer.execute("COMMIT")  # the writer is unaffected by the read
    finally:
        writer.close()


def test_snapshot_copies_a_hot_journal_and_the_copy_is_recovered(tmp_path: Path) -> None:
    db = gunzip_to(V15, tmp_path)
    journal = Path(f"{db}-journal")
    journal.write_bytes(b"\x00" * 512)  # a (zeroed, so harmless) rollback journal forces a copy
    before = state_of(tmp_path)
    with sqlite_snapshot(db) as snap:
        assert snap.copied and snap.path != db
        conn = snap.connect()
        assert conn.execute("SELECT count(*) FROM messages").fetchone()[0] == 217
        conn.close()
    assert state_of(tmp_path) == before


def test_sqlite_file_that_is_not_an_lcm_db(tmp_path: Path, store: LabStore) -> None:
    other = tmp_path / "other.sqlite"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE notes (id INTEGER, body TEXT)")
    conn.commit()
    conn.close()
    result = load_lcm_db(other, store)
    assert result.status == "failed"
    assert str(other) in result.error and "not a lossless-claw lcm.db" in result.error and "notes" in result.error
    assert store.sources_df()["status"].tolist() == ["failed"]
    assert store.sources_df()["warnings"].iloc[0] == [result.error]


def test_corrupt_sqlite_file(tmp_path: Path, store: LabStore) -> None:
    good = gunzip_to(V15, tmp_path).read_bytes()
    corrupt = tmp_path / "corrupt.db"
    corrupt.write_bytes(good[:100] + os.urandom(8192) + good[8292:20000])
    result = load_lcm_db(corrupt, store)
    assert result.status == "failed"
    assert str(corrupt) in result.error and ("corrupt" in result.error or "malformed" in result.error)
    assert store.conversations_df().empty


@pytest.mark.parametrize(
    ("name", "content", "phrase"),
    [("binary.db", b"\x00\x01\x02garbage" * 100, "not a SQLite database"), ("empty.db", b"", "empty file")],
)
def test_binary_or_empty_file(tmp_path: Path, store: LabStore, name: str, content: bytes, phrase: str) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    result = load_lcm_db(path, store)
    assert result.status == "failed" and str(path) in result.error and phrase in result.error


@pytest.mark.parametrize("workers", ["1", "2"])  # load workers start only on an idle machine: test both paths
def test_directory_with_unreadable_entries_loads_the_rest(
    tmp_path: Path, store: LabStore, monkeypatch: pytest.MonkeyPatch, workers: str
) -> None:
    monkeypatch.setenv("LCM_LAB_LOAD_WORKERS", workers)
    gunzip_to(V15, tmp_path)
    (tmp_path / "dangling.db").symlink_to(tmp_path / "missing.db")
    os.mkfifo(tmp_path / "pipe.jsonl")  # opening it would block forever: must not be opened
    locked = tmp_path / "locked.db"
    locked.write_bytes(gunzip_to(V15, tmp_path / "..").read_bytes())
    real_open = open

    def guarded_open(file, *args, **kwargs):  # type: ignore[no-untyped-def]
        if str(file) == str(locked):
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr("builtins.open", guarded_open)
    results = {Path(r.source).name: r for r in load(tmp_path, store, progress=False)}
    assert results["lcm-v0.15.3.db"].status == "loaded" and results["lcm-v0.15.3.db"].messages == 217
    assert results["dangling.db"].status == "failed" and "broken symbolic link" in results["dangling.db"].error
    assert results["pipe.jsonl"].status == "failed" and "FIFO" in results["pipe.jsonl"].error
    assert results["locked.db"].status == "failed" and "Permission denied" in results["locked.db"].error
    for result in results.values():
        if result.status == "failed":
            assert result.source in result.error
    failed_rows = store.fetch_all("SELECT count(*) FROM sources WHERE status = 'failed'")[0][0]
    assert failed_rows == 3
