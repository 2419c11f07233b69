"""OpenClaw SQLite transcript store and whole state directories."""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from lcm_lab.io.transcripts import (
    OPENCLAW_SQLITE,
    OPENCLAW_STATE_DIR,
    PI_JSONL,
    TranscriptFormatError,
    detect_format,
    iter_state_dir,
    read_transcript,
    scan_state_dir,
)

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "tests" / "fixtures" / "reference-runs" / "inputs" / "golden-session.jsonl.gz"
BRANCHED = REPO / "tests" / "fixtures" / "transcripts" / "branched.v3.jsonl"

# the transcript tables of OpenClaw's per-agent store (src/state/openclaw-agent-schema.sql)
SCHEMA = """
CREATE TABLE session_windows (session_id TEXT NOT NULL PRIMARY KEY, session_key TEXT NOT NULL,
  previous_session_id TEXT, reason TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
CREATE TABLE transcript_events (session_id TEXT NOT NULL, seq INTEGER NOT NULL, event_json TEXT NOT NULL,
  created_at INTEGER NOT NULL, PRIMARY KEY (session_id, seq));
CREATE TABLE session_transcript_archives (session_id TEXT NOT NULL, generation TEXT NOT NULL,
  session_key TEXT NOT NULL, reason TEXT NOT NULL, blob BLOB);
"""


def _lines(path: Path) -> list[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return [line.rstrip("\n") for line in handle if line.strip()]


def build_store(path: Path) -> None:
    golden = _lines(GOLDEN)
    branched = _lines(BRANCHED)
    with sqlite3.connect(path) as connection:
        connection.executescript(SCHEMA)
        connection.execute("INSERT INTO session_windows VALUES ('golden-session', 'agent:main:main', NULL, 'initial', 0, 0)")
        for seq, line in enumerate(golden):
            connection.execute("INSERT INTO transcript_events VALUES (?, ?, ?, 0)", ("golden-session", seq, line))
        for seq, line in enumerate(branched):
            event = line if seq != 3 else "{not json"
            connection.execute("INSERT INTO transcript_events VALUES (?, ?, ?, 0)", ("branched", seq, event))
        connection.execute("INSERT INTO session_transcript_archives VALUES ('old', 'g1', 'agent:main:main', 'reset', x'00')")
    connection.close()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_sqlite_store_reads_each_session_like_its_jsonl(tmp_path: Path) -> None:
    store = tmp_path / "openclaw-agent.sqlite"
    build_store(store)
    before = _digest(store)
    assert detect_format(store) == OPENCLAW_SQLITE
    read = read_transcript(store)
    assert read.kind == OPENCLAW_SQLITE
    by_id = {c.conversation.session_id: c for c in read.conversations}
    assert set(by_id) == {"golden-session", "branched"}

    golden_jsonl = read_transcript(GOLDEN).conversations[0].conversation
    golden = by_id["golden-session"].conversation
    assert golden.session_key == "agent:main:main"
    assert [(e.line, e.entry_id, e.message) for e in golden.entries] == [
        (e.line, e.entry_id, e.message) for e in golden_jsonl.entries
    ]

    # seq 3 (line 4, entry a2) is malformed: the parent chain breaks, so file order is used
    branched = by_id["branched"]
    assert branched.conversation.session_key is None
    assert branched.meta["leaf_path"] == "file-order"
    problems = {(issue.line, issue.skipped) for issue in read.issues if issue.line is not None}
    assert (4, True) in problems
    assert any("session branched seq 3" in issue.message for issue in read.issues)
    assert read.skipped_lines == 1
    assert any("archived transcript generation" in issue.message for issue in read.issues)
    assert _digest(store) == before  # opened read-only, never written


def _state_dir(root: Path) -> Path:
    sessions = root / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    with gzip.open(GOLDEN, "rb") as source, (sessions / "golden-session.jsonl").open("wb") as target:
        shutil.copyfileobj(source, target)
    shutil.copy(BRANCHED, sessions / "old-session.jsonl.reset.2026-01-01T00-00-00Z")
    shutil.copy(BRANCHED, sessions / "golden-session.checkpoint.1.jsonl")
    (sessions / "broken.jsonl").write_bytes(b"\x00\x01\x02 binary")
    (sessions / "gone.jsonl").symlink_to(root / "does-not-exist.jsonl")
    (sessions / "sessions.json").write_text(
        json.dumps({"agent:main:main": {"sessionId": "golden-session", "sessionFile": str(sessions / "golden-session.jsonl")}})
    )
    other = root / "agents" / "helper" / "agent"
    other.mkdir(parents=True)
    build_store(other / "openclaw-agent.sqlite")
    with sqlite3.connect(root / "lcm.db") as connection:
        for table in ("conversations", "messages", "summaries", "context_items"):
            connection.execute(f"CREATE TABLE {table} (x)")
    connection.close()
    return root


def test_scan_lists_sources_with_kinds_keys_and_archive_flags(tmp_path: Path) -> None:
    root = _state_dir(tmp_path / "openclaw")
    assert detect_format(root) == OPENCLAW_STATE_DIR
    scan = scan_state_dir(root)
    listed = [(item.path.name, item.kind, item.agent_id, item.session_key, item.archived) for item in scan.items]
    assert listed == [
        ("openclaw-agent.sqlite", OPENCLAW_SQLITE, "helper", None, False),
        ("broken.jsonl", PI_JSONL, "main", None, False),
        ("golden-session.jsonl", PI_JSONL, "main", "agent:main:main", False),
        ("old-session.jsonl.reset.2026-01-01T00-00-00Z", PI_JSONL, "main", None, True),
        ("lcm.db", "lcm-db", None, None, False),
    ]
    (issue,) = scan.issues
    assert issue.path.endswith("gone.jsonl") and "cannot read" in issue.message
    with_checkpoints = scan_state_dir(root, include_checkpoints=True)
    assert any(item.checkpoint for item in with_checkpoints.items)
    assert scan.total_bytes == sum(item.path.stat().st_size for item in scan.items)


def test_iter_state_dir_reads_everything_and_survives_a_bad_file(tmp_path: Path) -> None:
    root = _state_dir(tmp_path / "openclaw")
    results = {item.path.name: result for item, result in iter_state_dir(root, progress=False)}
    assert results["lcm.db"] is None
    assert isinstance(results["broken.jsonl"], TranscriptFormatError)
    assert "broken.jsonl" in str(results["broken.jsonl"])
    golden = results["golden-session.jsonl"]
    assert not isinstance(golden, Exception) and golden is not None
    (loaded,) = golden.conversations
    assert loaded.conversation.session_key == "agent:main:main" and loaded.meta["agent_id"] == "main"
    archived = results["old-session.jsonl.reset.2026-01-01T00-00-00Z"]
    assert archived is not None and not isinstance(archived, Exception)
    assert archived.conversations[0].archived is True


def test_not_a_state_dir(tmp_path: Path) -> None:
    assert detect_format(tmp_path) is None
    with pytest.raises(TranscriptFormatError, match="not an OpenClaw state directory"):
        scan_state_dir(tmp_path)
    with pytest.raises(TranscriptFormatError, match="directory"):
        read_transcript(tmp_path)


def test_unreadable_session_file_is_reported_and_the_rest_listed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _state_dir(tmp_path / "openclaw")
    secret = root / "agents" / "main" / "sessions" / "secret.jsonl"
    secret.write_text("{}\n")
    secret.chmod(0)
    real_open = Path.open

    def guarded_open(self: Path, *args, **kwargs):  # noqa: ANN002, ANN003, ANN202 - root ignores chmod 0
        if self.name == "secret.jsonl":
            raise PermissionError(13, "Permission denied", str(self))
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", guarded_open)
    scan = scan_state_dir(root)
    messages = [str(issue) for issue in scan.issues]
    assert any("secret.jsonl" in m and "Permission denied" in m for m in messages)
    assert "secret.jsonl" not in [item.path.name for item in scan.items]
    assert "golden-session.jsonl" in [item.path.name for item in scan.items]


def test_links_out_of_the_state_directory_are_skipped_and_said(tmp_path: Path) -> None:
    """A state directory from elsewhere (an unpacked archive) may hold links to any file: files
    whose real path leaves the directory are not read; a link that stays inside is (control)."""
    root = _state_dir(tmp_path / "openclaw")
    outside = tmp_path / "outside"
    (outside / "agent").mkdir(parents=True)
    shutil.copy(BRANCHED, outside / "private.jsonl")
    build_store(outside / "agent" / "openclaw-agent.sqlite")
    sessions = root / "agents" / "main" / "sessions"
    (sessions / "private.jsonl").symlink_to(outside / "private.jsonl")
    (sessions / "inside-link.jsonl").symlink_to(sessions / "golden-session.jsonl")
    (root / "agents" / "linked").mkdir()
    (root / "agents" / "linked" / "agent").symlink_to(outside / "agent")
    scan = scan_state_dir(root)
    names = [item.path.name for item in scan.items]
    assert "private.jsonl" not in names and "inside-link.jsonl" in names
    assert [item.agent_id for item in scan.items if item.kind == OPENCLAW_SQLITE] == ["helper"]
    refused = sorted(issue.path for issue in scan.issues if "outside the state directory" in issue.message)
    assert refused == sorted([str(sessions / "private.jsonl"), str(root / "agents" / "linked" / "agent" / "openclaw-agent.sqlite")])
