"""Bad and odd inputs: clear messages naming file and line, everything loadable loaded."""

from __future__ import annotations

import json
import os
import re
import resource
import sqlite3
from pathlib import Path

import pytest

from lcm_lab.io.transcripts import TranscriptFormatError, detect_format, read_transcript
from lcm_lab.io.transcripts.jsonl import JsonlReader

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "transcripts"


def _entry(entry_id: str, parent: str | None, role: str, text: str) -> str:
    message = {"role": role, "content": [{"type": "text", "text": text}], "timestamp": 1}
    return json.dumps({"type": "message", "id": entry_id, "parentId": parent, "timestamp": "t", "message": message})


def test_malformed_line_in_the_middle_is_skipped_and_named() -> None:
    read = read_transcript(FIXTURES / "malformed-middle.v3.jsonl")
    assert read.skipped_lines == 1
    (issue,) = read.issues
    assert issue.line == 3 and issue.skipped and "malformed JSON" in issue.message
    assert str(issue).startswith(f"{FIXTURES / 'malformed-middle.v3.jsonl'}:3: ")
    entries = read.conversations[0].conversation.entries
    # the blank line 5 is ignored silently; the rest loads (e3's parent e1 survives the gap)
    assert [(e.line, e.entry_id) for e in entries] == [(2, "e1"), (4, "e3"), (6, "e4")]


def test_truncated_last_line_is_reported_as_truncated() -> None:
    read = read_transcript(FIXTURES / "truncated-last.v3.jsonl")
    assert read.skipped_lines == 1
    (issue,) = read.issues
    assert issue.line == 4 and "truncated last line" in issue.message
    assert [e.entry_id for e in read.conversations[0].conversation.entries] == ["t1", "t2"]


def test_binary_file_raises_a_clear_format_error(tmp_path: Path) -> None:
    path = tmp_path / "image.jsonl"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 8)
    assert detect_format(path) is None
    with pytest.raises(TranscriptFormatError, match=r"image\.jsonl: not a transcript: a binary file") as caught:
        read_transcript(path)
    assert "pi-jsonl" in str(caught.value)  # lists the supported formats
    assert "control bytes in over 1% of its start" in str(caught.value)  # its NUL bytes are on line 2


def test_a_binary_file_without_nul_bytes_is_described_by_what_it_holds(tmp_path: Path) -> None:
    path = tmp_path / "escapes.jsonl"
    path.write_bytes(b"garbage\x1b[31m\n{\"type\":\"session\"")  # no NUL: escape bytes make it binary
    with pytest.raises(TranscriptFormatError, match=r"a binary file \(30 bytes, control bytes in over 1% of its start\)"):
        read_transcript(path)
    path.write_bytes(b'{"type": "session"}\x00' + b"x" * 1000)  # one NUL, on the first line
    with pytest.raises(TranscriptFormatError, match=r"NUL bytes on its first line"):
        read_transcript(path)


def test_binary_garbage_inside_a_session_is_a_skipped_line(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    header = json.dumps({"type": "session", "version": 3, "id": "s"})
    body = [header, _entry("a", None, "user", "q"), "\x00\x01\x02garbage", _entry("b", "a", "assistant", "a")]
    path.write_text("\n".join(body) + "\n")
    read = read_transcript(path)
    (issue,) = read.issues
    assert issue.line == 3 and "binary data" in issue.message
    assert len(read.conversations[0].conversation.entries) == 2


def test_invalid_utf8_line_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    header = json.dumps({"type": "session", "version": 3, "id": "s"}).encode()
    path.write_bytes(header + b"\n" + b'{"type":"message","text":"\xff\xfe"}\n' + _entry("a", None, "user", "q").encode() + b"\n")
    read = read_transcript(path)
    assert read.skipped_lines == 1 and read.issues[0].line == 2
    assert [e.entry_id for e in read.conversations[0].conversation.entries] == ["a"]


@pytest.mark.parametrize("content", [b"", b"   \n\n \t\n"])
def test_empty_file_raises_a_clear_format_error(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(content)
    with pytest.raises(TranscriptFormatError, match=r"empty\.jsonl: not a transcript: (an empty file|a file with only whitespace)"):
        read_transcript(path)


@pytest.mark.parametrize(
    ("name", "looks_like"),
    [
        ("not-a-transcript.json", "first object has keys: name, version, dependencies"),
        ("not-a-transcript.jsonl", "first object has keys: event, x"),
    ],
)
def test_json_that_is_not_a_transcript_is_rejected(name: str, looks_like: str) -> None:
    path = FIXTURES / name
    assert detect_format(path) is None
    with pytest.raises(TranscriptFormatError) as caught:
        read_transcript(path)
    assert name in str(caught.value) and looks_like in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_codex_rollout_is_named_as_unsupported(tmp_path: Path) -> None:
    path = tmp_path / "rollout.jsonl"
    path.write_text(json.dumps({"timestamp": "t", "type": "session_meta", "payload": {"id": "x"}}) + "\n")
    with pytest.raises(TranscriptFormatError, match="Codex CLI rollout"):
        read_transcript(path)


def test_sqlite_that_is_not_a_transcript_store(tmp_path: Path) -> None:
    path = tmp_path / "other.sqlite"
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE things (x)")
    connection.close()
    with pytest.raises(TranscriptFormatError, match="SQLite database with tables: things"):
        read_transcript(path)


def test_corrupt_sqlite_file(tmp_path: Path) -> None:
    path = tmp_path / "corrupt.sqlite"
    path.write_bytes(b"SQLite format 3\x00" + b"\xde\xad\xbe\xef" * 200)
    assert detect_format(path) is None
    with pytest.raises(TranscriptFormatError, match="corrupt.sqlite"):
        read_transcript(path)


def test_lcm_db_is_routed_not_read_as_a_transcript(tmp_path: Path) -> None:
    path = tmp_path / "lcm.db"
    with sqlite3.connect(path) as connection:
        for table in ("conversations", "messages", "summaries", "context_items"):
            connection.execute(f"CREATE TABLE {table} (x)")
    connection.close()
    assert detect_format(path) == "lcm-db"
    with pytest.raises(TranscriptFormatError, match="lcm.db loader"):
        read_transcript(path)


def test_missing_file_is_a_file_not_found_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="nope.jsonl"):
        read_transcript(tmp_path / "nope.jsonl")


def test_crlf_line_endings_and_bom_are_accepted(tmp_path: Path) -> None:
    path = tmp_path / "windows.jsonl"
    lines = [json.dumps({"type": "session", "version": 3, "id": "w"}), _entry("a", None, "user", "q")]
    path.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(lines).encode() + b"\r\n")
    read = read_transcript(path)
    assert read.issues == () and read.conversations[0].conversation.session_id == "w"


def test_non_object_lines_are_skipped_with_their_line(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join([json.dumps({"type": "session", "version": 3, "id": "s"}), "[1, 2]", "42", _entry("a", None, "user", "q")]) + "\n")
    read = read_transcript(path)
    assert read.skipped_lines == 2 and [i.line for i in read.issues] == [2, 3]
    assert "found list" in read.issues[0].message and "found int" in read.issues[1].message


def _peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB


def test_a_50_mb_single_line_loads(tmp_path: Path) -> None:
    path = tmp_path / "huge.jsonl"
    big_text = "x" * (50 * 1024 * 1024)
    with path.open("w") as handle:
        handle.write(json.dumps({"type": "session", "version": 3, "id": "huge"}) + "\n")
        handle.write(_entry("a", None, "user", "small question") + "\n")
        handle.write(_entry("b", "a", "toolResult", big_text) + "\n")
        handle.write(_entry("c", "b", "assistant", "done") + "\n")
    del big_text
    before = _peak_rss_bytes()
    read = read_transcript(path)
    grown = _peak_rss_bytes() - before
    entries = read.conversations[0].conversation.entries
    assert read.issues == () and [e.entry_id for e in entries] == ["a", "b", "c"]
    assert len(entries[1].message["content"][0]["text"]) == 50 * 1024 * 1024
    # one line held as bytes + its parsed string (+ slack); never the whole file several times over
    assert grown < 260 * 1024 * 1024


def test_a_50_mb_malformed_single_line_is_skipped_with_a_short_message(tmp_path: Path) -> None:
    path = tmp_path / "huge-bad.jsonl"
    with path.open("w") as handle:
        handle.write(json.dumps({"type": "session", "version": 3, "id": "huge"}) + "\n")
        handle.write('{"type":"message","x":"' + "y" * (50 * 1024 * 1024) + "\n")
        handle.write(_entry("a", None, "user", "q") + "\n")
    read = read_transcript(path)
    (issue,) = read.issues
    assert issue.line == 2 and len(issue.message) < 300
    assert [e.entry_id for e in read.conversations[0].conversation.entries] == ["a"]


def test_jsonl_reader_counts_lines_without_holding_the_file(tmp_path: Path) -> None:
    path = tmp_path / "plain.jsonl"
    path.write_text('{"a": 1}\n\n{"b": 2\n{"c": 3}')
    reader = JsonlReader(path)
    assert list(reader) == [(1, {"a": 1}), (4, {"c": 3})]
    assert reader.last_line == 4 and reader.skipped_lines == 1 and reader.issues[0].line == 3


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read files without read permission")
def test_unreadable_file_raises_permission_error(tmp_path: Path) -> None:
    path = tmp_path / "secret.jsonl"
    path.write_text(json.dumps({"type": "session", "version": 3, "id": "s"}) + "\n")
    path.chmod(0)
    with pytest.raises(PermissionError):
        read_transcript(path)


def test_malformed_header_line_still_loads_the_entries(tmp_path: Path) -> None:
    path = tmp_path / "2026-01-01_abc.jsonl"
    path.write_text("\n".join(['{"type":"session","version":3,"id":', _entry("a", None, "user", "q"), _entry("b", "a", "assistant", "r")]) + "\n")
    read = read_transcript(path)
    (issue,) = read.issues
    assert issue.line == 1 and issue.skipped
    conversation = read.conversations[0].conversation
    assert conversation.session_id == "2026-01-01_abc"  # no header: the file name stands in
    assert [e.entry_id for e in conversation.entries] == ["a", "b"]


def test_a_fifo_or_a_device_is_never_opened(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: `replay FIFO` and `replay --config FIFO` blocked for ever in open() (no writer);
    a link to /dev/zero was described as an empty file."""
    from lcm_lab.cli import main
    from lcm_lab.errors import InputFileError

    fifo = tmp_path / "session.jsonl"
    os.mkfifo(fifo)
    zero = tmp_path / "zero.jsonl"
    zero.symlink_to("/dev/zero")
    for special, said in ((fifo, "a named pipe (FIFO), not a regular file"), (zero, "a character device, not a regular file")):
        with pytest.raises(InputFileError, match=re.escape(said)):
            read_transcript(special)
        assert main(["replay", "--db", str(tmp_path / "lab.duckdb"), "--no-save", str(special)]) == 2
        assert said in capsys.readouterr().err
    session = tmp_path / "s.jsonl"
    session.write_text(_entry("a", None, "user", "q") + "\n")
    assert main(["replay", "--db", str(tmp_path / "lab.duckdb"), "--no-save", "--config", str(fifo), str(session)]) == 2
    err = capsys.readouterr().err
    assert "FIFO" in err and "expected a JSON config file" in err and len(err.strip().splitlines()) == 1
    spec = tmp_path / "sweep.yaml"
    os.mkfifo(spec)
    assert main(["sweep", "--db", str(tmp_path / "lab.duckdb"), str(spec)]) == 2
    assert "sweep spec" in (err := capsys.readouterr().err) and "FIFO" in err
