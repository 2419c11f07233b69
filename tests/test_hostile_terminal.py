"""Terminal injection (issue 22 item 6): ANSI/OSC escape sequences, C1 controls and bidi overrides
in message text, summaries and session ids are escaped in everything grep, describe, expand,
replay and load print, for people and in ``--json`` (where the escape decodes to the same text)."""

from __future__ import annotations

import gzip
import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from conftest import DATASETS

from lcm_lab.cli import main
from lcm_lab.io.tables import cell
from lcm_lab.io.terminal import TerminalStreams, json_text, terminal_text

# clear screen, window title, OSC 52 clipboard write, OSC 8 hyperlink, 8-bit CSI, RTL override
PAYLOAD = "zqxmark \x1b[2J\x1b]0;owned\x07\x1b]52;c;ZXZpbA==\x07\x1b]8;;http://x.invalid\x1b\\link\x1b]8;;\x1b\\\x9b31m\u202eevil"
RAW = ("\x1b", "\x07", "\x9b", "\u202e", "\x9d")


def assert_no_raw_controls(*texts: str) -> None:
    for text in texts:
        for char in RAW:
            assert char not in text, (repr(char), text[:300])


def test_the_escapes() -> None:
    assert terminal_text(PAYLOAD).count("\\x1b") == PAYLOAD.count("\x1b") == 7 and "\\x9b31m" in terminal_text(PAYLOAD)
    assert terminal_text("a\r\nb\tc") == "a\\r\nb\tc"
    assert terminal_text("bar\r", keep="\n\t\r") == "bar\r"
    assert cell("two\nlines\x1b") == "two\\nlines\\x1b"
    assert cell("emoji 👩\u200d💻 and é stay") == "emoji 👩\u200d💻 and é stay"
    # invisible characters that make two names look alike were printed raw (hostile round 4)
    assert terminal_text("ses\u200bsion\u2060.jsonl\ufeff") == "ses\\u200bsion\\u2060.jsonl\\ufeff"
    assert json.loads(json_text(json.dumps("a\u200bb", ensure_ascii=False))) == "a\u200bb"
    encoded = json_text(json.dumps({"t": PAYLOAD}, ensure_ascii=False))
    assert_no_raw_controls(encoded)
    assert json.loads(encoded) == {"t": PAYLOAD}


def test_streams_are_restored(capsys: pytest.CaptureFixture[str]) -> None:
    import sys

    before = sys.stdout
    with TerminalStreams() as streams:
        print("\x1b[2J")
        streams.json_stdout = True
        print('"\x9b"')
    assert sys.stdout is before
    assert capsys.readouterr().out == '\\x1b[2J\n"\\u009b"\n'


@pytest.fixture
def hostile_db(tmp_path: Path) -> tuple[str, Path, str]:
    """The bundled 0.15.3 lcm.db with the payload in a message and a summary, loaded into a store."""
    path = tmp_path / "lcm.db"
    with gzip.open(DATASETS / "lcm-db" / "lcm-v0.15.3.db.gz") as src, path.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    conn = sqlite3.connect(path)
    summary_id = conn.execute("SELECT summary_id FROM summaries WHERE conversation_id = 1 ORDER BY summary_id LIMIT 1").fetchone()[0]
    conn.execute("UPDATE summaries SET content = ? || content WHERE summary_id = ?", (PAYLOAD + "\n", summary_id))
    conn.execute("UPDATE messages SET content = ? || content WHERE message_id = (SELECT min(message_id) FROM messages)", (PAYLOAD,))
    conn.commit()
    conn.close()
    store = str(tmp_path / "lab.duckdb")
    assert main(["load", "--db", store, str(path)]) == 0
    return store, path, summary_id


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert_no_raw_controls(out, err)
    return code, out, err


def test_grep_describe_expand_escape_for_people_and_json(hostile_db: tuple[str, Path, str], capsys: pytest.CaptureFixture[str]) -> None:
    store, _, summary_id = hostile_db
    capsys.readouterr()
    code, out, _ = _run(capsys, "grep", "--db", store, "zqxmark")
    assert code == 0 and "\\x1b]0;owned" in out
    code, out, _ = _run(capsys, "grep", "--db", store, "--json", "zqxmark")
    assert code == 0 and any("zqxmark \x1b[2J" in json.loads(line)["snippet"] for line in out.splitlines())
    code, out, _ = _run(capsys, "describe", "--db", store, summary_id)
    assert code == 0 and "\\x1b]52;c;ZXZpbA==\\x07" in out and "\\u202eevil" in out
    code, out, _ = _run(capsys, "describe", "--db", store, "--json", summary_id)
    assert code == 0 and json.loads(out)["content"].startswith(PAYLOAD)
    code, out, _ = _run(capsys, "expand", "--db", store, "--prompt", "what is zqxmark?", "--summary-id", summary_id)
    assert code == 0
    code, out, _ = _run(capsys, "expand", "--db", store, "--json", "--prompt", "what is zqxmark?", "--summary-id", summary_id)
    assert code == 0 and json.loads(out)


def test_replay_and_load_escape_session_ids_and_warnings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.jsonl"
    header = {"type": "session", "version": 3, "id": f"sess{PAYLOAD}", "timestamp": "2025-01-01T00:00:00Z", "cwd": "/w"}
    message = {"type": "message", "id": "a", "parentId": None, "timestamp": "2025-01-01T00:00:01Z",
               "message": {"role": "user", "content": [{"type": "text", "text": PAYLOAD}], "timestamp": 1}}  # fmt: skip
    dangling = {**message, "id": "b", "parentId": f"gone{PAYLOAD}"}
    path.write_text("\n".join(json.dumps(v, ensure_ascii=False) for v in (header, message, dangling)) + "\n")
    store = str(tmp_path / "lab.duckdb")
    code, out, err = _run(capsys, "load", "--db", store, str(path))
    assert code == 0 and "gone zqxmark" not in err  # the warning names the parent, escaped
    code, out, err = _run(capsys, "replay", "--db", store, "--no-save", str(path))
    assert code == 0 and "sesszqxmark \\x1b[2J" in out
    code, out, _ = _run(capsys, "replay", "--db", store, "--no-save", "--json", str(path))
    assert code == 0 and json.loads(out)["session_id"] == f"sess{PAYLOAD}"
