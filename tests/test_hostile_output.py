"""Everything the CLI prints, run for real in a subprocess on crafted input: secrets redacted on
stdout and stderr (``--json`` too) and in tracebacks; tracebacks escaped like the rest; a carriage
return from a file name cannot overwrite a line; an undecodable byte in a file name (a lone
surrogate) is escaped, for people and in ``--json``, whatever the output encoding."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from fakeserver import FakeOpenAIServer
from test_hostile_model_calls import session

ROOT = Path(__file__).resolve().parents[1]
KEY = "zqENVkey55667788"
SHAPED = "sk-zqabcdefgh12345678"
RAW = (b"\x1b", b"\x07", b"\xc2\x9b", b"\xe2\x80\xae", b"\r")


def lab(*argv: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[bytes]:
    environ = {**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": KEY, **env}
    environ.pop("LCM_LAB_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "lcm_lab", *argv], cwd=cwd, env=environ, capture_output=True, timeout=300)


def with_bad_line(tmp_path: Path) -> Path:
    path = session(tmp_path / "s.jsonl", turns=3)
    lines = path.read_text().splitlines()
    path.write_text("\n".join([*lines[:2], f"oops not json {KEY} {SHAPED}", *lines[2:]]) + "\n")
    return path


def assert_no_secret(*outputs: bytes) -> None:
    for output in outputs:
        assert KEY.encode() not in output and SHAPED.encode() not in output, output[-2000:]


def test_warnings_for_people_and_json_are_redacted(tmp_path: Path) -> None:
    path = with_bad_line(tmp_path)
    plain = lab("load", "--db", "a.duckdb", str(path), cwd=tmp_path)
    as_json = lab("load", "--db", "b.duckdb", "--json", str(path), cwd=tmp_path)
    replay = lab("replay", "--db", "c.duckdb", "--no-save", str(path), cwd=tmp_path)
    assert plain.returncode == as_json.returncode == replay.returncode == 0, (plain.stderr, as_json.stderr, replay.stderr)
    assert b"[redacted]" in plain.stdout + plain.stderr and b"[redacted]" in replay.stderr
    assert_no_secret(plain.stdout, plain.stderr, as_json.stdout, as_json.stderr, replay.stdout, replay.stderr)
    records = [json.loads(line) for line in as_json.stdout.decode().splitlines()]
    assert any("[redacted]" in json.dumps(r) for r in records)


def test_the_one_line_error_and_the_debug_traceback_are_redacted(tmp_path: Path) -> None:
    # The error never quotes the file's text (tests/test_hostile_file_quotes.py); its name holds the key.
    (tmp_path / f"s3-{KEY}.jsonl").write_text(f"{KEY} is not json\n")
    error = lab("replay", "--db", "a.duckdb", "--no-save", f"s3-{KEY}.jsonl", cwd=tmp_path)
    debug = lab("--debug", "replay", "--db", "a.duckdb", "--no-save", f"s3-{KEY}.jsonl", cwd=tmp_path)
    assert error.returncode == 2 and b"s3-[redacted].jsonl: not a transcript" in error.stderr
    assert debug.returncode == 1 and b"Traceback" in debug.stderr and b"[redacted]" in debug.stderr
    assert_no_secret(error.stderr, debug.stderr)


def test_a_traceback_is_escaped(tmp_path: Path) -> None:
    name = "bad\x1b]0;owned\x07\x9b31m\u202eevil.jsonl"
    (tmp_path / name).write_text("not json\n")
    debug = lab("--debug", "replay", "--db", "b.duckdb", "--no-save", name, cwd=tmp_path)
    assert debug.returncode == 1 and b"Traceback" in debug.stderr
    assert b"bad\\x1b]0;owned\\x07\\x9b31m\\u202eevil.jsonl" in debug.stderr
    for raw in RAW:
        assert raw not in debug.stderr, raw


def test_a_carriage_return_in_a_file_name_cannot_overwrite_a_line(tmp_path: Path) -> None:
    name = "cr\rwarning: nothing to report      .jsonl"
    with_bad_line(tmp_path).rename(tmp_path / name)
    for result in (lab("replay", "--db", "a.duckdb", "--no-save", name, cwd=tmp_path), lab("load", "--db", "b.duckdb", name, cwd=tmp_path)):
        assert result.returncode == 0, result.stderr
        assert b"cr\\rwarning: nothing to report" in result.stdout + result.stderr
        assert b"\r" not in result.stdout and b"\r" not in result.stderr


def test_an_undecodable_byte_in_a_file_name_is_escaped(tmp_path: Path) -> None:
    directory = tmp_path / "dirload"
    directory.mkdir()
    (directory / "bad\udc9b.jsonl").write_bytes(b"junk\n")  # the byte 0x9b on disk (surrogateescape)
    assert os.fsencode("bad\udc9b.jsonl") in os.listdir(os.fsencode(directory))
    session(directory / "good.jsonl", turns=2)
    for encoding in ("", "utf-8"):
        plain = lab("load", "--db", f"a{encoding}.duckdb", "dirload", cwd=tmp_path, PYTHONIOENCODING=encoding)
        as_json = lab("load", "--db", f"b{encoding}.duckdb", "--json", "dirload", cwd=tmp_path, PYTHONIOENCODING=encoding)
        for result in (plain, as_json):
            assert b"Traceback" not in result.stderr, result.stderr[-2000:]
            assert b"\x9b" not in result.stdout + result.stderr and b"\xed\xb2\x9b" not in result.stdout + result.stderr
            result.stdout.decode("utf-8")  # valid UTF-8, strictly
            result.stderr.decode("utf-8")
        assert b"bad\\udc9b.jsonl" in plain.stdout + plain.stderr
        records = [json.loads(line) for line in as_json.stdout.decode().splitlines()]
        assert any("bad\udc9b.jsonl" in json.dumps(r, ensure_ascii=False) for r in records)


CUT_KEY = "zqSECRETvalue987xyz"


def _substrings(key: str, size: int = 8) -> list[bytes]:
    return [key[i : i + size].encode() for i in range(len(key) - size + 1)]


def test_a_secret_cut_by_a_summary_is_still_redacted_everywhere(tmp_path: Path) -> None:
    path = session(tmp_path / "sec.jsonl", turns=60)
    lines = path.read_text().splitlines()
    for i, line in enumerate(lines[1:41], start=1):  # 40 text parts, each clipped at a different place in the key
        entry = json.loads(line)
        entry["message"]["content"][0]["text"] = ("garden roses " * 20)[: 150 + i] + f" my key is {CUT_KEY}"
        lines[i] = json.dumps(entry)
    path.write_text("\n".join(lines) + "\n")
    env = {"OPENAI_API_KEY": CUT_KEY}
    replay = lab("replay", "--db", "lab.duckdb", "--token-budget", "3000", "--trace-out", "t.json", "sec.jsonl", cwd=tmp_path, **env)
    assert replay.returncode == 0, replay.stderr
    run = next(line.split()[0] for line in replay.stdout.decode().splitlines() if line.startswith("run_"))
    trace = (tmp_path / "t.json").read_bytes()
    with FakeOpenAIServer() as server:  # a model whose reply cuts the key short
        server.set_responder(lambda body: f"The user said: my key is {CUT_KEY[:13]}…")
        model = lab("replay", "--db", "lab.duckdb", "--token-budget", "3000", "--summarizer", "litellm", "--model", "openai/fake",
                    "--api-base", server.base_url, "sec.jsonl", cwd=tmp_path, **env)  # fmt: skip
    assert model.returncode == 0, model.stderr
    export = lab("export", run, "-o", "x.db", "--db", "lab.duckdb", cwd=tmp_path, **env)
    report = lab("report", "--db", "lab.duckdb", "--run", run, "-o", "r.html", cwd=tmp_path, **env)
    grep = lab("grep", "--db", "lab.duckdb", "--scope", "summaries", "my key is", cwd=tmp_path, **env)
    assert export.returncode == report.returncode == grep.returncode == 0, (export.stderr, report.stderr, grep.stderr)
    assert b"my key is [redacted]" in grep.stdout and b"my key is [redacted]\xe2\x80\xa6" in grep.stdout  # the test sees both
    written = [trace, (tmp_path / "x.db").read_bytes(), (tmp_path / "r.html").read_bytes(), grep.stdout, replay.stdout, model.stdout,
               (tmp_path / "lab.duckdb").read_bytes()]  # fmt: skip
    for part in _substrings(CUT_KEY):
        for data in written:
            assert part not in data, part


def test_the_report_shows_control_characters_from_titles_escaped(tmp_path: Path) -> None:
    path = session(tmp_path / "s.jsonl")
    title = "zqtitle\x1b]0;owned\x07\x9b31m\u202eevil"
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    header["id"] = title
    lines[0] = json.dumps(header)
    path.write_text("\n".join(lines) + "\n")
    replay = lab("replay", "--db", "lab.duckdb", "--token-budget", "1200", "s.jsonl", cwd=tmp_path)
    assert replay.returncode == 0, replay.stderr
    run = next(line.split()[0] for line in replay.stdout.decode().splitlines() if line.startswith("run_"))
    report = lab("report", "--db", "lab.duckdb", "--run", run, "-o", "r.html", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    html = (tmp_path / "r.html").read_bytes()
    assert b"zqtitle\\x1b]0;owned\\x07\\x9b31m\\u202eevil" in html  # the title, shown escaped
    for raw in (b"\x1b", b"\x07", b"\xc2\x9b", b"\xe2\x80\xae"):
        assert raw not in html, raw
