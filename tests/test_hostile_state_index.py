"""An OpenClaw state directory's session index (``agents/*/sessions/sessions.json``) is read
like the state directory's other files, and messages lossless-claw does not store are said."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import DATASETS
from faults import run_lab

import lcm_lab as lab

GOLDEN = DATASETS / "lossless-claw-ref" / "golden-session.jsonl"


def _state_dir(tmp_path: Path) -> Path:
    sessions = tmp_path / "st" / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    shutil.copy(GOLDEN, sessions / "golden-session.jsonl")
    return tmp_path / "st"


def _load(root: Path, tmp_path: Path, **env: str) -> list[dict[str, object]]:
    done = run_lab("load", "--json", "--db", str(tmp_path / "lab.duckdb"), str(root), **env)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def _index_warnings(records: list[dict[str, object]]) -> list[str]:
    return [w for r in records for w in r["warning_messages"] if "sessions.json" in w]  # type: ignore[attr-defined]


def test_a_session_index_linked_out_of_the_state_dir_is_not_read(tmp_path: Path) -> None:
    root = _state_dir(tmp_path)
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps({"OUTSIDE-FILE-CONTENT:agent:main:x": {"sessionId": "golden-session"}}))
    (root / "agents" / "main" / "sessions" / "sessions.json").symlink_to(outside)
    records = _load(root, tmp_path)
    [warning] = _index_warnings(records)
    assert "outside the state directory" in warning and "session keys unknown" in warning
    store = lab.open_store(tmp_path / "lab.duckdb", reads_only=True)
    keys = [k for k in store.conversations_df()["session_key"] if isinstance(k, str)]
    assert not any("OUTSIDE" in k for k in keys)


def test_a_session_index_that_is_not_json_is_a_warning(tmp_path: Path) -> None:
    root = _state_dir(tmp_path)
    (root / "agents" / "main" / "sessions" / "sessions.json").write_text("this is not json")
    records = _load(root, tmp_path)
    [warning] = _index_warnings(records)
    assert "not readable as JSON" in warning and "session keys unknown" in warning
    assert [r["messages"] for r in records if r["status"] == "loaded"] != [0]


def test_a_session_index_past_the_line_cap_is_not_read(tmp_path: Path) -> None:
    root = _state_dir(tmp_path)
    index = {f"k{i}": {"sessionId": f"s{i}", "pad": "x" * 100} for i in range(20_000)}  # about 2.6 MB
    (root / "agents" / "main" / "sessions" / "sessions.json").write_text(json.dumps(index))
    records = _load(root, tmp_path, LCM_LAB_MAX_LINE_MB="1")
    [warning] = _index_warnings(records)
    assert "line cap (LCM_LAB_MAX_LINE_MB)" in warning and "not read" in warning


def test_a_readable_session_index_still_gives_session_keys(tmp_path: Path) -> None:
    root = _state_dir(tmp_path)
    (root / "agents" / "main" / "sessions" / "sessions.json").write_text(
        json.dumps({"agent:main:main": {"sessionId": "golden-session"}}))
    assert _index_warnings(_load(root, tmp_path)) == []
    store = lab.open_store(tmp_path / "lab.duckdb", reads_only=True)
    assert list(store.conversations_df()["session_key"]) == ["agent:main:main"]


PI_LINES = [
    {"type": "session", "version": 3, "id": "roles", "timestamp": "2026-01-01T09:59:00.000Z", "cwd": "/x"},
    {"type": "message", "id": "e1", "parentId": None, "timestamp": "2026-01-01T10:00:00.000Z",
     "message": {"role": "user", "content": [{"type": "text", "text": "hello"}], "timestamp": 1767261660000}},
    {"type": "message", "id": "e2", "parentId": "e1", "timestamp": "2026-01-01T10:00:01.000Z",
     "message": {"role": "developer", "content": [{"type": "text", "text": "IMPORTANT"}], "timestamp": 1767261660001}},
    {"type": "message", "id": "e3", "parentId": "e2", "timestamp": "2026-01-01T10:00:02.000Z",
     "message": {"role": "bashExecution", "command": "ls", "output": "x", "timestamp": 1767261660002}},
    {"type": "message", "id": "e4", "parentId": "e3", "timestamp": "2026-01-01T10:00:03.000Z",
     "message": {"role": "assistant", "content": [], "stopReason": "error", "timestamp": 1767261660003}},
    {"type": "message", "id": "e5", "parentId": "e4", "timestamp": "2026-01-01T10:00:04.000Z",
     "message": {"role": "assistant", "content": [{"type": "text", "text": "hi"}], "timestamp": 1767261660004}},
]


@pytest.mark.parametrize("workers", ["1", "2"])
def test_messages_lossless_claw_does_not_store_are_one_warning(tmp_path: Path, workers: str) -> None:
    (tmp_path / "d").mkdir()
    for name in ("a", "b"):  # a directory: with two workers the rows are prepared in a worker
        lines = [{**PI_LINES[0], "id": name}, *PI_LINES[1:]]
        (tmp_path / "d" / f"{name}.jsonl").write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    records = _load(tmp_path / "d", tmp_path, LCM_LAB_LOAD_WORKERS=workers)
    assert len(records) == 2
    for record in records:
        assert record["messages"] == 2
        [warning] = record["warning_messages"]  # type: ignore[misc]
        assert warning.startswith("3 message(s) not stored as messages")
        assert "2 with a role it does not store (bashExecution 1, developer 1)" in warning
        assert "1 error-or-aborted-empty-assistant" in warning
    store = lab.open_store(tmp_path / "lab.duckdb", reads_only=True)
    [(kept,)] = store.fetch_all("select count(*) from entries where seq is null and message is not null")
    assert kept == 6  # kept as entries, three per file
