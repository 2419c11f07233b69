"""Hostile inputs that used to end a command with a traceback or lose other files' data: lone
surrogate escapes, a bad file among good ones, load workers stopped by their pool, a file that
grows while it is read, unreadable subdirectories, empty path arguments, ``replay --check`` and
``--config`` files that are not what they claim, integers out of a column's range.

Each case runs the real CLI in a child process (:mod:`tests.faults`) on a crafted file."""

from __future__ import annotations

import gzip
import json
import multiprocessing
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import duckdb
import pytest

import lcm_lab as lab
from lcm_lab.io.surrogates import lone_warning
from tests.faults import assert_one_line_error, child_env, lab_command, run_lab


def _entry(i: int, text: str) -> dict[str, object]:
    return {"type": "message", "id": f"{i:08x}", "parentId": f"{i - 1:08x}" if i > 1 else None,
            "timestamp": "2025-12-09T00:54:00.000Z",
            "message": {"role": "user" if i % 2 else "assistant", "content": [{"type": "text", "text": text}]}}


def pi_session(path: Path, messages: int = 6, session_id: str = "s1") -> Path:
    """A pi v3 session of ``messages`` messages ("hello 1", ...), written with ``json.dumps``."""
    header = {"type": "session", "version": 3, "id": session_id, "timestamp": "2025-12-09T00:53:29.825Z", "cwd": "/x"}
    lines = [json.dumps(header)] + [json.dumps(_entry(i, f"hello {i}")) for i in range(1, messages + 1)]
    path.write_text("\n".join(lines) + "\n")
    return path


def _rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(sql).fetchall()


def _no_traceback(result: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in result.stderr, result.stderr[-3000:]


# -- 1. lone surrogates -----------------------------------------------------------------------


def test_lone_surrogates_load_and_replay_with_a_warning(tmp_path: Path) -> None:
    good = pi_session(tmp_path / "g.jsonl")
    text = good.read_text()
    in_text = tmp_path / "s.jsonl"
    in_text.write_text(text.replace('"hello 3"', '"lone \\ud800"'))
    in_id = tmp_path / "sid.jsonl"
    in_id.write_text(text.replace('"id": "s1"', '"id": "s\\udc80"'))
    db = tmp_path / "lab.duckdb"
    for source in (in_text, in_id):
        result = run_lab("load", "--db", str(db), str(source))
        _no_traceback(result)
        assert result.returncode == 0, result.stderr
        assert "lone surrogate" in result.stderr and "U+FFFD" in result.stderr
        replay = run_lab("replay", "--db", str(db), str(source))
        _no_traceback(replay)
        assert replay.returncode == 0, replay.stderr
    # The store holds U+FFFD (as the plugin's lcm.db would), in its JSON too: DuckDB's JSON reader
    # refuses a lone surrogate's escape, so a query of the raw message must still work.
    content, raw, text = _rows(db, "SELECT content, raw::VARCHAR, raw->'$.content[0]'->>'text' FROM messages "
                                   "WHERE content LIKE 'lone%'")[0]  # fmt: skip
    assert content == "lone \ufffd" and text == "lone \ufffd"
    assert json.loads(str(raw))["content"][0]["text"] == "lone \ufffd"
    assert sorted(r[0] for r in _rows(db, "SELECT session_id FROM conversations")) == ["s1", "s\ufffd"]
    assert _rows(db, "SELECT count(*) FROM messages")[0][0] == 12  # nothing lost
    # The saved replay's payload keeps the lone surrogate: it loads back as the replay had it.
    shown = run_lab("replay", "--no-save", str(in_id))
    _no_traceback(shown)
    assert "s\\udc80" in shown.stdout


def test_a_bad_file_among_good_ones_is_a_failed_row(tmp_path: Path) -> None:
    good = pi_session(tmp_path / "a.jsonl")
    later = pi_session(tmp_path / "later.jsonl", messages=4)
    bad = tmp_path / "b.jsonl.gz"
    bad.write_bytes(gzip.compress(good.read_bytes()) + b"JUNK")
    db = tmp_path / "lab.duckdb"
    result = run_lab("load", "--db", str(db), str(good), str(bad), str(later))
    _no_traceback(result)
    assert result.returncode == 1, result.stderr
    assert f"{bad}: broken gzip data" in result.stderr
    assert sorted(_rows(db, "SELECT path, status FROM sources")) == [
        (str(good), "loaded"), (str(bad), "failed"), (str(later), "loaded")]
    assert _rows(db, "SELECT count(*) FROM messages")[0][0] == 10


def test_a_broken_gzip_in_a_directory_does_not_stop_the_load(tmp_path: Path) -> None:
    mix = tmp_path / "mix"
    mix.mkdir()
    good = pi_session(mix / "a.jsonl")
    (mix / "b.jsonl.gz").write_bytes(gzip.compress(good.read_bytes()) + b"JUNK")
    db = tmp_path / "lab.duckdb"
    result = run_lab("load", "--db", str(db), str(mix), "--json")
    _no_traceback(result)
    assert result.returncode == 1, result.stderr  # a.jsonl loaded, b.jsonl.gz did not
    assert "1 of 2 sources failed to load" in result.stderr
    statuses = {Path(row["source"]).name: row["status"] for row in map(json.loads, result.stdout.splitlines())}
    assert statuses == {"a.jsonl": "loaded", "b.jsonl.gz": "failed"}
    assert _rows(db, "SELECT count(*) FROM messages")[0][0] == 6


# -- 3. load workers ----------------------------------------------------------------------------


def test_load_workers_print_no_tracebacks(tmp_path: Path) -> None:
    mix = tmp_path / "mix"
    mix.mkdir()
    good = pi_session(mix / "a.jsonl")
    data = gzip.compress(good.read_bytes() * 200)
    (mix / "b.jsonl.gz").write_bytes(data[: len(data) // 2])  # cut off: the worker raises BrokenGzipError
    db = tmp_path / "lab.duckdb"
    result = run_lab("load", "--db", str(db), str(mix), LCM_LAB_LOAD_WORKERS="2")
    _no_traceback(result)
    assert "Terminated" not in result.stderr and "EOFError" not in result.stderr, result.stderr
    assert result.returncode == 1 and result.stderr.strip().endswith("1 of 2 sources failed to load (the failed rows above say why)"), result.stderr
    assert sorted(_rows(db, "SELECT status FROM sources")) == [("failed",), ("loaded",)]


def _signals() -> tuple[object, object]:
    return signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)


def test_forked_load_workers_reset_the_signal_handlers() -> None:
    from lcm_lab.io.prepare import worker_signals

    previous = signal.signal(signal.SIGTERM, lambda *_: None)  # as the CLI's handler would be
    try:
        with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork"), initializer=worker_signals) as pool:
            assert pool.submit(_signals).result(timeout=60) == (signal.SIG_DFL, signal.SIG_IGN)
    finally:
        signal.signal(signal.SIGTERM, previous)


# -- 4. a file that grows while it is read ------------------------------------------------------

_WRITER = """
import json, sys, time
path, start = sys.argv[1], int(sys.argv[2])
with open(path, "a") as out:
    i = start
    while True:
        i += 1
        out.write(json.dumps({"type": "message", "id": "%08x" % i, "parentId": "%08x" % (i - 1),
                              "timestamp": "2025-12-09T00:54:00.000Z",
                              "message": {"role": "user" if i % 2 else "assistant",
                                          "content": [{"type": "text", "text": "more %d " % i + "x" * 200}]}}) + "\\n")
        if i % 50 == 0:
            out.flush()
            time.sleep(0.02)  # about 600 KB/s, for as long as the test runs
"""


def test_a_file_still_being_written_is_read_up_to_its_size(tmp_path: Path) -> None:
    session = pi_session(tmp_path / "live.jsonl", messages=2000)
    db = tmp_path / "lab.duckdb"
    writer = subprocess.Popen([sys.executable, "-c", _WRITER, str(session), "2000"])
    try:
        while session.stat().st_size < 600_000:  # the writer is going
            time.sleep(0.01)
        load = run_lab("load", "--db", str(db), str(session), timeout=120)
        replay = run_lab("replay", "--no-save", "--single-turn", str(session), timeout=120)
        assert writer.poll() is None  # still writing all along
    finally:
        writer.kill()
        writer.wait()
    for result in (load, replay):
        _no_traceback(result)
        assert result.returncode == 0, result.stderr[-2000:]
        assert "the file grew by" in result.stderr, result.stderr[-2000:]
    assert "left for the next load" in load.stderr
    (size,) = _rows(db, "SELECT size_bytes FROM sources")[0]
    stored = _rows(db, "SELECT count(*) FROM messages")[0][0]
    assert stored >= 2000
    # The next load appends what was written after, and nothing is lost or doubled.
    again = run_lab("load", "--db", str(db), str(session), timeout=120)
    _no_traceback(again)
    assert again.returncode == 0, again.stderr[-2000:]
    total = sum(1 for line in session.read_text().splitlines() if '"type": "message"' in line)
    assert _rows(db, "SELECT count(*) FROM messages")[0][0] == total > stored
    assert int(size) < session.stat().st_size


# -- 6. empty path arguments --------------------------------------------------------------------


def test_empty_path_arguments_are_refused(tmp_path: Path) -> None:
    session = pi_session(tmp_path / "g.jsonl")
    db = str(tmp_path / "lab.duckdb")
    cases = [("load", "--db", db, ""), ("replay", "--no-save", "--trace-out", "", str(session)),
             ("replay", "--no-save", "--check", "", str(session)), ("report", "--db", db, "-o", ""),
             ("report", "--db", db, "--sweep", ""), ("ledger", "--db", "")]
    for args in cases:
        result = subprocess.run(lab_command(*args), capture_output=True, text=True, timeout=60, env=child_env(),
                                cwd=tmp_path)
        line = assert_one_line_error(result, f"lcm-lab {args[0]}:", "an empty")
        assert "usage" not in line
    assert not (tmp_path / "lab.duckdb").exists()  # nothing ran: load "" loaded the current directory


# -- 7. replay --check, --config and the replay's input -----------------------------------------


def test_replay_check_files_that_are_no_trace_are_refused_before_the_replay(tmp_path: Path) -> None:
    session = pi_session(tmp_path / "g.jsonl")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    files = {"empty.json": b"", "truncated.json": b'\xef\xbb\xbf{"a":', "number.json": b"42", "list.json": b"[1,2]",
             "deep.json": b"[" * 100_000 + b"]" * 100_000}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    db = tmp_path / "lab.duckdb"
    expected = {"/dev/zero": "character device", str(fifo): "FIFO", "empty.json": "empty file",
                "truncated.json": "not valid JSON", "number.json": "not a reference trace",
                "list.json": "not a reference trace", "deep.json": "nested more than"}
    for check, needle in expected.items():
        target = check if check.startswith("/") else str(tmp_path / check)
        result = run_lab("replay", "--db", str(db), "--check", target, str(session), timeout=60)
        assert_one_line_error(result, "--check", needle)
    assert not db.exists() or _rows(db, "SELECT count(*) FROM replays")[0][0] == 0  # nothing replayed or saved


def test_replay_config_too_deep_or_of_the_wrong_shape(tmp_path: Path) -> None:
    session = pi_session(tmp_path / "g.jsonl")
    deep = tmp_path / "deep.json"
    deep.write_bytes(b"[" * 100_000 + b"]" * 100_000)
    shaped = tmp_path / "openclaw.json"
    shaped.write_text(json.dumps({"plugins": {"entries": {"lossless-claw": {"config": [1]}}}}))
    assert_one_line_error(run_lab("replay", "--no-save", "--config", str(deep), str(session)), "nested more than")
    assert_one_line_error(run_lab("replay", "--no-save", "--config", str(shaped), str(session)),
                          "plugins.entries.lossless-claw.config must be an object")


def test_replay_refuses_what_load_refuses(tmp_path: Path) -> None:
    if not Path("/proc/kmsg").exists():
        return
    assert_one_line_error(run_lab("replay", "--no-save", "/proc/kmsg", timeout=30), "/proc/kmsg", "empty file")


# -- 5. an unreadable subdirectory ----------------------------------------------------------------


def test_an_unreadable_subdirectory_is_reported() -> None:
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("runs the lab as another user (root reads every directory; needs root and setpriv)")
    with tempfile.TemporaryDirectory(prefix="lcm-lab-unreadable-") as base:  # pytest's own is 0700
        tmp_path = Path(base)
        tmp_path.chmod(0o755)
        _load_as_nobody_with_an_unreadable_subdirectory(tmp_path)


def _load_as_nobody_with_an_unreadable_subdirectory(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    (corpus / "private").mkdir(parents=True)
    corpus.chmod(0o755)
    pi_session(corpus / "a.jsonl")
    pi_session(corpus / "private" / "hidden.jsonl")
    (corpus / "private").chmod(0o700)  # root's: user 65534 cannot list it
    home = tmp_path / "home"
    home.mkdir()
    os.chown(home, 65534, 65534)
    db = home / "lab.duckdb"
    result = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                             *lab_command("load", "--db", str(db), str(corpus), "--json")],
                            capture_output=True, text=True, timeout=60, env=child_env(HOME=str(home)))
    _no_traceback(result)
    assert result.returncode == 1, result.stderr[-2000:]  # what could be read loaded; the rest is said
    rows = {Path(row["source"]).name: row for row in map(json.loads, result.stdout.splitlines())}
    assert rows["a.jsonl"]["status"] == "loaded"
    assert rows["private"]["status"] == "failed"
    assert "cannot read the directory" in rows["private"]["error"] and "ermission denied" in rows["private"]["error"]
    assert _rows(db, "SELECT count(*) FROM messages")[0][0] == 6


# -- 8. integers out of a column's range ----------------------------------------------------------


def test_a_compaction_with_tokens_before_beyond_64_bits_is_kept(tmp_path: Path) -> None:
    session = pi_session(tmp_path / "g.jsonl")
    compaction = {"type": "compaction", "id": "0000000a", "parentId": "00000006", "timestamp": "2025-12-09T00:55:00.000Z",
                  "summary": "sum", "firstKeptEntryId": "00000005", "tokensBefore": 2**70}
    with session.open("a") as out:
        out.write(json.dumps(compaction) + "\n")
    db = tmp_path / "lab.duckdb"
    result = run_lab("load", "--db", str(db), str(session))
    _no_traceback(result)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "recorded_events.tokens_before beyond 64-bit integers stored as NULL" in result.stderr
    assert _rows(db, "SELECT kind, tokens_before FROM recorded_events") == [("compaction", None)]
    assert _rows(db, "SELECT count(*) FROM messages")[0][0] == 6
    replay = run_lab("replay", "--no-save", str(session))
    _no_traceback(replay)
    assert replay.returncode == 0, replay.stderr[-2000:]


def _openclaw_store(path: Path, seqs: list[object], text: str = "hello") -> Path:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE transcript_events (session_id TEXT, seq INTEGER, event_json TEXT, created_at INTEGER,"
                " PRIMARY KEY (session_id, seq))")  # fmt: skip
    header = {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T10:00:00.000Z", "cwd": "/w"}
    events = [header] + [_entry(i, text if i == 1 else f"hello {i}") for i in range(1, len(seqs))]
    con.executemany("INSERT INTO transcript_events VALUES ('s1', ?, ?, 0)",
                    [(seq, json.dumps(event)) for seq, event in zip(seqs, events, strict=True)])
    con.commit()
    con.close()
    return path


def test_openclaw_sqlite_seqs_the_lab_cannot_store_are_skipped_by_name(tmp_path: Path) -> None:
    store = _openclaw_store(tmp_path / "agent.sqlite", [0, 1, 2, 3, 2**63 - 1, "x0"])
    db = tmp_path / "lab.duckdb"
    result = run_lab("load", "--db", str(db), str(store))
    _no_traceback(result)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "transcript_events.seq 9223372036854775807 is not an integer" in result.stderr
    assert "transcript_events.seq 'x0' is not an integer" in result.stderr
    assert _rows(db, "SELECT count(*) FROM messages")[0][0] == 3
    replay = run_lab("replay", "--no-save", str(store))
    _no_traceback(replay)
    assert replay.returncode == 0, replay.stderr[-2000:]
    assert "transcript_events.seq 'x0'" in replay.stderr


def test_lone_surrogates_in_an_openclaw_sqlite_store(tmp_path: Path) -> None:
    store = _openclaw_store(tmp_path / "agent.sqlite", [0, 1, 2], text="lone \ud800 here")
    db = tmp_path / "lab.duckdb"
    result = run_lab("load", "--db", str(db), str(store))
    _no_traceback(result)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "lone surrogate" in result.stderr
    assert _rows(db, "SELECT content FROM messages ORDER BY seq")[0] == ("lone \ufffd here",)
    replay = run_lab("replay", "--db", str(db), str(store))
    _no_traceback(replay)
    assert replay.returncode == 0, replay.stderr[-2000:]


def test_lone_surrogates_in_a_claude_code_session(tmp_path: Path) -> None:
    fixture = Path(__file__).parent / "fixtures" / "transcripts" / "claude-code-mini.jsonl"
    session = tmp_path / "cc.jsonl"
    session.write_text(fixture.read_text().replace("Please fix the flaky test", "Please fix \\udfff the test")
                       .replace('"cc-mini-session"', '"cc-\\ud800-session"'))
    db = tmp_path / "lab.duckdb"
    result = run_lab("load", "--db", str(db), str(session))
    _no_traceback(result)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "lone surrogate" in result.stderr
    assert ("Please fix \ufffd the test",) in _rows(db, "SELECT content FROM messages")
    replay = run_lab("replay", "--db", str(db), str(session))
    _no_traceback(replay)
    assert replay.returncode == 0, replay.stderr[-2000:]


def test_a_lone_surrogate_is_counted_once_though_stored_in_several_columns(tmp_path: Path) -> None:
    """Each surrogate is stored in every copy of its value (a message's raw JSON, content and
    parts; a Claude Code line and the message made from it): 2 in one pi message were "6 lone
    surrogates", 15 in a Claude Code session 22. Now the warning counts what the file held."""
    pi = tmp_path / "pi.jsonl"
    pi.write_text(pi_session(tmp_path / "g.jsonl").read_text().replace('"hello 3"', '"lone \\ud800 here \\udfff"')
                  .replace('"id": "s1"', '"id": "s\\udc80"'))  # fmt: skip
    fixture = Path(__file__).parent / "fixtures" / "transcripts" / "claude-code-mini.jsonl"
    cc = tmp_path / "cc.jsonl"
    cc.write_text(fixture.read_text().replace("Please fix the flaky test", "Please fix \\udfff the test")
                  .replace('"cc-mini-session"', '"cc-\\ud800-session"'))  # fmt: skip
    sqlite_store = _openclaw_store(tmp_path / "agent.sqlite", [0, 1, 2], text="lone \ud800 here")
    expected = {pi: 3, cc: cc.read_text().count("\\ud800") + 1, sqlite_store: 1}
    assert expected[cc] == 15  # the session id on every line, and one in a message
    for source, count in expected.items():
        with lab.LabStore(tmp_path / f"{source.name}.duckdb") as store:
            (result,) = lab.load(source, store, progress=False)
        said = [w for w in result.warnings if "lone surrogate" in w]
        assert said == [lone_warning(count)], source
