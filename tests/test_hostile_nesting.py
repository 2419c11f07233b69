"""Deeply nested JSON (issue 22 item 4): a transcript line or an lcm.db value nested 254-1,200
levels never crashes ``load`` or ``replay``; deeper than the lab's limit is skipped with a warning
naming the file and line (or the conversation and message), and everything else still loads."""

from __future__ import annotations

import gzip
import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from conftest import DATASETS

from lcm_lab.cli import main
from lcm_lab.engine.js.depth import MAX_JSON_DEPTH, text_depth, value_depth
from lcm_lab.io.transcripts import read_transcript

DEPTHS = (254, 500, 1000, 1100, 1200)
# the line wraps the nested value in five more levels (entry, message, content, block, arguments)
WRAPPING = 5


def _line(entry_id: str, parent: str | None, role: str, content: str) -> str:
    return (f'{{"type":"message","id":"{entry_id}","parentId":{json.dumps(parent)},"timestamp":"2025-01-01T00:00:00Z",'
            f'"message":{{"role":"{role}","content":{content},"timestamp":1}}}}')  # fmt: skip


def nested_session(path: Path, depth: int) -> Path:
    """A pi session whose second entry carries a tool call with arguments nested ``depth`` levels."""
    nested = "[" * depth + "]" * depth
    lines = [
        json.dumps({"type": "session", "version": 3, "id": f"deep-{depth}", "timestamp": "2025-01-01T00:00:00Z", "cwd": "/w"}),
        _line("a", None, "user", '[{"type":"text","text":"first question"}]'),
        _line("b", "a", "assistant", f'[{{"type":"toolCall","id":"t1","name":"probe","arguments":{{"v":{nested}}}}}]'),
        _line("c", "b", "user", '[{"type":"text","text":"second question"}]'),
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_depth_walks_are_iterative_and_skip_strings() -> None:
    deep = "[" * 5000 + "]" * 5000
    assert text_depth(deep) == 5000
    assert text_depth('{"s": "[[[[{{{{", "t": "\\"[["}') == 1
    value: list = []
    for _ in range(5000):
        value = [value]
    assert value_depth(value) == 5001


@pytest.mark.parametrize("depth", DEPTHS)
def test_a_deep_line_is_skipped_with_a_warning_naming_it(tmp_path: Path, depth: int) -> None:
    read = read_transcript(nested_session(tmp_path / "s.jsonl", depth))
    (issue, *_) = read.issues
    assert issue.line == 3 and issue.skipped and "too deeply nested" in issue.message and str(MAX_JSON_DEPTH) in issue.message
    assert [e.entry_id for e in read.conversations[0].conversation.entries] == ["a", "c"]


def test_nesting_within_the_limit_loads_and_replays_whole(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = nested_session(tmp_path / "ok.jsonl", MAX_JSON_DEPTH - WRAPPING)
    read = read_transcript(path)
    assert not read.issues and len(read.conversations[0].conversation.entries) == 3
    db = str(tmp_path / "lab.duckdb")
    assert main(["load", "--db", db, str(path)]) == 0
    assert main(["replay", "--db", db, "--no-save", str(path)]) == 0
    assert "deep-195: 2 turns" in capsys.readouterr().out
    lcm_db = deep_lcm_db(tmp_path, MAX_JSON_DEPTH - 1)  # the stored text adds the {"v": ...} level
    assert main(["replay", "--db", db, "--no-save", "--token-budget", "3000", "--conversation", "2", str(lcm_db)]) == 0
    assert "stored tokens" in capsys.readouterr().out


def test_a_multi_file_load_goes_on_past_every_deep_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    for depth in DEPTHS:
        nested_session(folder / f"deep{depth}.jsonl", depth)
    nested_session(folder / "shallow.jsonl", 3)
    code = main(["load", "--db", str(tmp_path / "lab.duckdb"), "--json", str(folder)])
    out, err = capsys.readouterr()
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and "Traceback" not in err
    assert len(rows) == len(DEPTHS) + 1 and all(r["status"] == "loaded" for r in rows)
    by_name = {Path(r["source"]).name: r for r in rows}
    assert by_name["shallow.jsonl"]["messages"] == 3 and by_name["shallow.jsonl"]["skipped_lines"] == 0
    assert all(by_name[f"deep{d}.jsonl"]["skipped_lines"] == 1 for d in DEPTHS)


@pytest.mark.parametrize("depth", (500, 1000))
def test_replaying_a_deep_transcript_skips_the_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], depth: int) -> None:
    path = nested_session(tmp_path / "s.jsonl", depth)
    code = main(["replay", "--db", str(tmp_path / "lab.duckdb"), "--no-save", str(path)])
    out, err = capsys.readouterr()
    assert code == 0 and "Traceback" not in err
    assert "s.jsonl:3" in err and "too deeply nested" in err and "2 turns" in out


def deep_lcm_db(tmp_path: Path, depth: int) -> Path:
    """The bundled 0.15.3 lcm.db with one tool call's stored input nested ``depth`` levels (in conversation 2)."""
    path = tmp_path / f"deep{depth}.db"
    with gzip.open(DATASETS / "lcm-db" / "lcm-v0.15.3.db.gz") as src, path.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    conn = sqlite3.connect(path)
    (part_id,) = conn.execute(
        "SELECT p.part_id FROM message_parts p JOIN messages m USING (message_id) "
        "WHERE p.tool_input IS NOT NULL AND m.conversation_id = 2 ORDER BY m.seq LIMIT 1"
    ).fetchone()
    conn.execute("UPDATE message_parts SET tool_input = ? WHERE part_id = ?", ('{"v":' + "[" * depth + "]" * depth + "}", part_id))
    conn.commit()
    conn.close()
    return path


@pytest.mark.parametrize("depth", (500, 1000))
def test_an_lcm_db_with_deep_stored_json_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], depth: int) -> None:
    path = deep_lcm_db(tmp_path, depth)
    db = str(tmp_path / "lab.duckdb")
    code = main(["replay", "--db", db, "--no-save", "--token-budget", "3000", "--conversation", "2", str(path)])
    _, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err
    assert f"nested {depth + 1:,} levels deep" in lines[0] and "tool_input" in lines[0]
    # every conversation: the deep one is skipped with a warning, the other replays, exit 1
    code = main(["replay", "--db", db, "--no-save", "--token-budget", "3000", str(path)])
    out, err = capsys.readouterr()
    assert code == 1 and err.count("warning:") == 1 and "is not replayed" in err
    assert "golden-session" in out
