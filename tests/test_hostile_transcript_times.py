"""Transcript times lossless-claw cannot read (``""``, ``"garbage"``, month 13, ``1e30``), in every
format: the message is stored without a time (NULL), never at epoch 0, and the load (and a replay
of the file) says so in one warning naming the file, how many, and the first few. Claude Code
sessions dated such messages 1970-01-01 00:00:00 with no word; pi stored NULL silently; and a
number past JavaScript's dates moved the deferred engine's transcript clock to it.

A missing time (no key, ``null``) is no warning, as NULL is none in an lcm.db; a replay treats a
message with an unreadable time exactly as one without a time (docs/model-context.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

import lcm_lab as lab
from lcm_lab.cli import main

CC_BAD = ["", "garbage", None, "2025-13-45T99:99:99Z"]


def _cc_session(path: Path, stamps: list[Any]) -> Path:
    lines, parent = [], None
    for index, stamp in enumerate(stamps):
        role = "user" if index % 2 == 0 else "assistant"
        lines.append({"parentUuid": parent, "isSidechain": False, "type": role, "sessionId": "cc-times",
                      "message": {"role": role, "content": f"t{index}"}, "uuid": f"u{index}", "timestamp": stamp})  # fmt: skip
        parent = f"u{index}"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _pi_session(path: Path, stamps: list[tuple[Any, Any]], text: str = "p{}") -> Path:
    """A pi session: one message per ``(envelope timestamp, message.timestamp)``; ``...`` leaves a key out."""
    lines: list[dict[str, Any]] = [{"type": "session", "id": "s-times", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/x"}]
    for index, (envelope, stamp) in enumerate(stamps):
        message: dict[str, Any] = {"role": "user" if index % 2 == 0 else "assistant",
                                   "content": [{"type": "text", "text": text.format(index)}]}  # fmt: skip
        if stamp is not ...:
            message["timestamp"] = stamp
        line: dict[str, Any] = {"type": "message", "id": f"e{index}", "parentId": f"e{index - 1}" if index else None}
        if envelope is not ...:
            line["timestamp"] = envelope
        lines.append({**line, "message": message})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _times(db: Path) -> list[Any]:
    with duckdb.connect(str(db), read_only=True) as con:
        return [row[0] for row in con.execute("SELECT created_at FROM messages ORDER BY seq").fetchall()]


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if "cannot read" in line]


def test_claude_code_times_that_are_no_time_are_null_with_one_warning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    session = _cc_session(tmp_path / "cc.jsonl", [*CC_BAD, *CC_BAD, "2025-09-03T00:52:31.217Z"])
    db = tmp_path / "lab.duckdb"
    assert main(["load", "--db", str(db), str(session)]) == 0
    assert _warnings(capsys.readouterr().err) == [
        f"  warning: {session}: 6 message(s) carry a time lossless-claw cannot read (line 1: '', line 2: 'garbage', "
        "line 4: '2025-13-45T99:99:99Z', …): stored without a time (NULL), as an lcm.db's unreadable times are"
    ]
    assert _times(db) == [None] * 8 + ["2025-09-03 00:52:31"]  # null is missing: NULL, and not counted
    assert main(["replay", "--no-save", str(session)]) == 0
    assert len(_warnings(capsys.readouterr().err)) == 1


def test_pi_times_out_of_range_are_null_with_one_warning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    session = _pi_session(tmp_path / "pi.jsonl", [("garbage", "x"), ("", None), ("2025-13-45T99:99:99Z", -5),
                                                   (None, 1e30), (..., ...), ("2026-01-01T10:00:00.000Z", ...)])  # fmt: skip
    db = tmp_path / "lab.duckdb"
    assert main(["load", "--db", str(db), str(session)]) == 0
    assert _warnings(capsys.readouterr().err) == [
        f"  warning: {session}: 3 message(s) carry a time lossless-claw cannot read (line 2: 'x', line 3: '', "
        "line 5: 1e+30): stored without a time (NULL), as an lcm.db's unreadable times are"
    ]
    # -5 ms is a date JavaScript reads (the plugin stores it); no time at all is no warning
    assert _times(db) == [None, None, "1969-12-31 23:59:59", None, None, "2026-01-01 10:00:00"]


def test_a_replay_treats_an_unreadable_time_as_no_time(tmp_path: Path) -> None:
    """Deferred mode runs on transcript time: a message whose time is unreadable (or past
    JavaScript's dates) neither moves the clock nor dates its row, exactly as one without a time;
    the rest of the transcript replays on its own times."""
    minute = 60_000
    start = 1_767_225_600_000  # 2026-01-01
    text = "message {} " + "about the deployment pipeline and its failing checks " * 40

    def run(odd: tuple[Any, Any]) -> lab.Replay:
        stamps: list[tuple[Any, Any]] = [(None, start + index * 7 * minute) for index in range(40)]
        stamps[21] = odd
        session = _pi_session(tmp_path / "s.jsonl", stamps, text)
        conversation = lab.read_transcript(session).conversations[0].conversation
        config = lab.LcmConfig(fresh_tail_count=4, leaf_chunk_tokens=1500, leaf_target_tokens=300)
        return lab.replay(conversation, config, lab.get_summarizer("offline"), token_budget=4000)

    missing = run((..., ...))
    assert sum(len(turn.calls) for turn in missing.turns) > 3  # it compacts, so its clock matters
    assert missing.messages[21].created_at is None
    for odd in [("garbage", ...), (None, 1e30), ("", "2025-13-45T99:99:99Z")]:
        replayed = run(odd)
        assert replayed.messages == missing.messages and replayed.turns == missing.turns, odd


def test_a_session_split_across_workers_says_its_unreadable_times_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import lcm_lab.store.write_loaded as write_loaded

    monkeypatch.setattr(write_loaded, "SPLIT_MIN_ENTRIES", 10)
    from lcm_lab.io.prepare import build_rows_split as split
    splits: list[int] = []

    def spied(*args: Any, **kwargs: Any) -> Any:
        splits.append(1)
        return split(*args, **kwargs)

    monkeypatch.setattr(write_loaded, "build_rows_split", spied)
    session = _pi_session(tmp_path / "big.jsonl", [("garbage" if index % 5 == 0 else "2026-01-01T10:00:00.000Z", ...)
                                                    for index in range(60)])  # fmt: skip
    said = {}
    for workers in ("1", "2"):
        monkeypatch.setenv("LCM_LAB_LOAD_WORKERS", workers)
        with lab.LabStore(tmp_path / f"w{workers}.duckdb") as store:
            (result,) = lab.load(session, store, progress=False)
        said[workers] = [w for w in result.warnings if "cannot read" in w]
    assert splits == [1]  # the two-worker load took the split path
    assert said["2"] == said["1"] == [
        f"{session}: 12 message(s) carry a time lossless-claw cannot read (line 2: 'garbage', line 7: 'garbage', "
        "line 12: 'garbage', …): stored without a time (NULL), as an lcm.db's unreadable times are"
    ]
