"""Reading an OpenClaw SQLite transcript store in WAL mode leaves the directory untouched."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from lcm_lab.io.transcripts import OPENCLAW_SQLITE, detect_format, read_transcript


def _store(path: Path) -> None:
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("CREATE TABLE transcript_events (session_id TEXT, seq INTEGER, event_json TEXT, created_at INTEGER,"
                " PRIMARY KEY (session_id, seq))")  # fmt: skip
    events = [
        {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T10:00:00.000Z", "cwd": "/w"},
        {"type": "message", "id": "a1", "parentId": None, "timestamp": "2026-01-01T10:00:01.000Z",
         "message": {"role": "user", "content": "hello", "timestamp": 1767261601000}},
    ]  # fmt: skip
    con.executemany("INSERT INTO transcript_events VALUES ('s1', ?, ?, 0)", [(i, json.dumps(e)) for i, e in enumerate(events)])
    con.commit()
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()


def test_wal_store_is_read_without_side_files(tmp_path: Path) -> None:
    path = tmp_path / "openclaw-agent.sqlite"
    _store(path)
    for side in ("-wal", "-shm"):
        Path(f"{path}{side}").unlink(missing_ok=True)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert detect_format(path) == OPENCLAW_SQLITE
    read = read_transcript(path)
    assert read.kind == OPENCLAW_SQLITE and read.conversations[0].conversation.entries[0].message["content"] == "hello"
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
