"""Big inputs in bounded memory, proved on small inputs with low caps (no timings here: the
peak-RSS figures live in ``benchmarks/bench_memory.py``)."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

import pytest

from lcm_lab.errors import InputFileError, OptionError
from lcm_lab.io.transcripts import detect_format, read_transcript
from lcm_lab.io.transcripts.jsonl import MAX_LINE_ENV, iter_raw_lines, max_line_bytes, read_all_bytes
from lcm_lab.loading.dispatch import load
from lcm_lab.store import LabStore

HEADER = json.dumps({"type": "session", "version": 3, "id": "big", "timestamp": "2026-01-01T00:00:00.000Z"})


def _message(entry_id: str, parent: str | None, role: str, text: str) -> str:
    message = {"role": role, "content": [{"type": "text", "text": text}], "timestamp": 1}
    return json.dumps({"type": "message", "id": entry_id, "parentId": parent, "timestamp": "2026-01-01T00:00:01.000Z",
                       "message": message})  # fmt: skip


class _CountingStream(io.RawIOBase):
    """A stream that yields ``size`` bytes of one line without a newline."""

    def __init__(self, size: int) -> None:
        self.left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        n = min(len(buffer), self.left)
        buffer[:n] = b"x" * n
        self.left -= n
        return n


def test_iter_raw_lines_never_returns_more_than_the_cap_and_measures_what_it_passed_over() -> None:
    data = b"short\n" + b"y" * 5000 + b"\n" + b"last"
    lines = list(iter_raw_lines(io.BytesIO(data), 100))
    assert [(line.number, line.data, line.size, line.offset, line.terminated) for line in lines] == [
        (1, b"short\n", 6, 0, True),
        (2, None, 5001, 6, True),
        (3, b"last", 4, 5007, False),
    ]


def test_a_line_is_never_read_whole_from_an_endless_stream() -> None:
    raw = _CountingStream(3 << 20)
    handle = io.BufferedReader(raw, buffer_size=64 << 10)
    reads: list[int] = []
    original = handle.readline

    def readline(size: int = -1) -> bytes:
        piece = original(size)
        reads.append(len(piece))
        return piece

    handle.readline = readline  # type: ignore[method-assign]
    (line,) = iter_raw_lines(handle, 1000)
    assert line.data is None and line.size == 3 << 20 and not line.terminated
    assert max(reads) <= 1 << 20  # passed over in bounded pieces


def test_a_line_over_the_cap_is_skipped_and_reported_and_the_rest_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(MAX_LINE_ENV, "0.01")  # 10 KB
    path = tmp_path / "session.jsonl"
    body = [HEADER, _message("a", None, "user", "hi"), _message("b", "a", "assistant", "z" * 20_000),
            _message("c", "a", "assistant", "short answer")]  # fmt: skip
    path.write_text("\n".join(body) + "\n")
    assert detect_format(path) == "pi-jsonl"
    read = read_transcript(path)
    assert read.skipped_lines == 1
    (issue,) = [issue for issue in read.issues if issue.skipped]
    assert issue.line == 3 and "line cap (LCM_LAB_MAX_LINE_MB)" in issue.message and "20,1" in issue.message
    assert [e.entry_id for e in read.conversations[0].conversation.entries] == ["a", "c"]
    (result,) = load(path, LabStore(":memory:"), progress=False)
    assert result.status == "loaded" and result.skipped_lines == 1 and result.messages == 2
    assert any("line cap" in warning for warning in result.warnings)


def test_a_gz_holding_one_line_bigger_than_the_cap_is_skipped_without_expanding_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(MAX_LINE_ENV, "0.0625")  # 64 KB, while the line expands to 8 MB
    path = tmp_path / "session.jsonl.gz"
    with gzip.open(path, "wb") as handle:
        handle.write(HEADER.encode() + b"\n" + _message("a", None, "user", "hi").encode() + b"\n")
        handle.write(b'{"type":"message","id":"b","parentId":"a","message":{"role":"user","content":"')
        for _ in range(8):
            handle.write(b"w" * (1 << 20))
        handle.write(b'"}}\n')
    read = read_transcript(path)
    assert read.skipped_lines == 1 and "8,388," in next(i.message for i in read.issues if i.skipped)
    assert [e.entry_id for e in read.conversations[0].conversation.entries] == ["a"]


def test_a_whole_file_document_over_the_cap_is_refused_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MAX_LINE_ENV, "0.001")
    path = tmp_path / "doc.json.gz"
    with gzip.open(path, "wb") as handle:
        handle.write(b"[" + b'"x",' * 10_000 + b'"x"]')
    with pytest.raises(InputFileError, match=r"doc\.json\.gz: one JSON document longer than .*LCM_LAB_MAX_LINE_MB"):
        read_all_bytes(path)
    assert detect_format(path) is None


@pytest.mark.parametrize("value", ["abc", "0", "-3"])
def test_a_bad_line_cap_is_an_option_error_naming_the_variable(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(MAX_LINE_ENV, value)
    with pytest.raises(OptionError, match=MAX_LINE_ENV):
        max_line_bytes()


# -- a big file is committed in steps; a failure or a kill after a step leaves nothing behind ----

_TABLES = ("conversations", "messages", "message_parts", "entries", "recorded_events", "summaries", "context_items")


def _counts(store: LabStore) -> dict[str, int]:
    return {table: int(store.fetch_all(f"SELECT count(*) FROM {table}")[0][0]) for table in _TABLES}


def _session(path: Path, messages: int) -> Path:
    body = [HEADER] + [
        _message(f"m{i}", f"m{i - 1}" if i else None, "user" if i % 2 == 0 else "assistant", f"message {i} " + "w" * 300)
        for i in range(messages)
    ]
    path.write_text("\n".join(body) + "\n")
    return path


def test_a_big_file_is_committed_in_steps_with_the_same_rows_as_one_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _session(tmp_path / "session.jsonl", 400)
    whole = LabStore(tmp_path / "whole.duckdb")
    load(path, whole, progress=False)
    steps: list[int] = []
    real_commit_point = LabStore.commit_point
    monkeypatch.setattr(LabStore, "commit_point", lambda self: steps.append(1) or real_commit_point(self))
    monkeypatch.setattr("lcm_lab.loading.dispatch.COMMIT_BYTES", 20_000)
    stepped = LabStore(tmp_path / "stepped.duckdb")
    (result,) = load(path, stepped, progress=False)
    assert result.status == "loaded" and result.messages == 400
    assert len(steps) >= 5  # it really committed in steps
    for table in _TABLES:
        assert stepped.fetch_all(f"SELECT * FROM {table} ORDER BY ALL") == whole.fetch_all(f"SELECT * FROM {table} ORDER BY ALL")
    assert stepped.fetch_all("SELECT status FROM sources") == [("loaded",)]


def test_committing_in_steps_does_not_grow_the_store_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A checkpoint at every step rewrote the partly filled row groups each time: the file of a
    # stepped load was 16% bigger here (and 1.6x for a 28 MB session) than one commit's.
    path = _session(tmp_path / "session.jsonl", 3000)
    whole = LabStore(tmp_path / "whole.duckdb")
    load(path, whole, progress=False)
    whole.close()
    monkeypatch.setattr("lcm_lab.loading.dispatch.COMMIT_BYTES", 50_000)
    stepped = LabStore(tmp_path / "stepped.duckdb")
    (result,) = load(path, stepped, progress=False)
    stepped.close()
    assert result.status == "loaded" and result.messages == 3000
    assert (tmp_path / "stepped.duckdb").stat().st_size <= 1.05 * (tmp_path / "whole.duckdb").stat().st_size


def test_a_failure_after_a_commit_point_removes_the_rows_already_committed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _session(tmp_path / "session.jsonl", 400)
    monkeypatch.setattr("lcm_lab.loading.dispatch.COMMIT_BYTES", 20_000)
    real_commit_point = LabStore.commit_point
    steps: list[int] = []

    def failing_commit_point(self: LabStore) -> None:
        real_commit_point(self)
        steps.append(1)
        if len(steps) == 3:
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(LabStore, "commit_point", failing_commit_point)
    store = LabStore(tmp_path / "lab.duckdb")
    with pytest.raises(OSError, match="No space left"):
        load(path, store, progress=False)
    assert set(_counts(store).values()) == {0}
    assert store.fetch_all("SELECT status FROM sources") == [("failed",)]
    monkeypatch.setattr(LabStore, "commit_point", real_commit_point)
    (again,) = load(path, store, progress=False)  # and the file loads in full afterwards
    assert again.status == "loaded" and _counts(store)["messages"] == 400


# Loads argv[1] into the store argv[2] in 20 KB commit steps and kills itself after step argv[3]
# (argv[4], when given: the load's checkpoint threshold).
_KILLED_LOAD = """
import os, sys
from lcm_lab.store import LabStore
import lcm_lab.loading.dispatch as dispatch
import lcm_lab.store.core as core
dispatch.COMMIT_BYTES = 20_000
if len(sys.argv) > 4:
    core._LOAD_CHECKPOINT_THRESHOLD = sys.argv[4]
steps = []
real = LabStore.commit_point
def commit_point(self):
    real(self)
    steps.append(1)
    if len(steps) == int(sys.argv[3]):
        os.kill(os.getpid(), 9)
LabStore.commit_point = commit_point
dispatch.load(sys.argv[1], LabStore(sys.argv[2]), progress=False)
"""


@pytest.mark.parametrize("killed_after", [1, 4])
def test_a_load_killed_after_a_commit_point_is_cleaned_by_the_next_load(tmp_path: Path, killed_after: int) -> None:
    import subprocess
    import sys

    path = _session(tmp_path / "session.jsonl", 400)
    db = tmp_path / "lab.duckdb"
    script = tmp_path / "killed_load.py"
    script.write_text(_KILLED_LOAD)
    done = subprocess.run([sys.executable, str(script), str(path), str(db), str(killed_after)], capture_output=True)
    assert done.returncode == -9, done.stderr.decode()[-500:]
    import duckdb

    raw = duckdb.connect(str(db), read_only=True)
    try:  # the killed load left committed rows, its source still "loading"
        assert raw.execute("SELECT status FROM sources").fetchall() == [("loading",)]
        assert raw.execute("SELECT count(*) FROM messages").fetchall()[0][0] > 0
    finally:
        raw.close()
    store = LabStore(db)  # the first writable open removes them
    assert store.fetch_all("SELECT status FROM sources") == [("failed",)]
    assert _counts(store)["messages"] == 0
    (result,) = load(path, store, progress=False)
    assert result.status == "loaded" and result.messages == 400
    assert _counts(store)["messages"] == 400 and _counts(store)["conversations"] == 1
    assert sorted(store.fetch_all("SELECT status FROM sources")) == [("failed",), ("loaded",)]


def test_a_killed_load_leaves_a_log_no_longer_than_the_load_checkpoint_threshold(tmp_path: Path) -> None:
    # Commit steps do not checkpoint; the log they leave is what the next open replays (in
    # memory), so DuckDB must checkpoint once it passes the load's threshold.
    import subprocess
    import sys

    path = _session(tmp_path / "session.jsonl", 3000)
    script = tmp_path / "killed_load.py"
    script.write_text(_KILLED_LOAD)

    def killed_log(threshold: str) -> int:
        db = tmp_path / f"lab-{threshold}.duckdb"
        done = subprocess.run([sys.executable, str(script), str(path), str(db), "60", threshold], capture_output=True)
        assert done.returncode == -9, done.stderr.decode()[-500:]
        wal = db.with_name(db.name + ".wal")
        return wal.stat().st_size if wal.exists() else 0

    assert killed_log("1GB") > 1 << 20  # the steps alone never checkpoint: 60 of them pile up
    assert killed_log("256KB") < 2 * 256 * 1024  # bounded by the threshold (plus one step)
    store = LabStore(tmp_path / "lab-256KB.duckdb")
    assert store.fetch_all("SELECT status FROM sources") == [("failed",)]  # the killed load's rows removed on open
    (result,) = load(path, store, progress=False)
    assert result.status == "loaded" and result.messages == 3000


# -- a big transcript's last commit goes straight into the store file ------------------------------


def _log_bytes(db: Path) -> int:
    wal = db.with_name(db.name + ".wal")
    return wal.stat().st_size if wal.exists() else 0


@pytest.mark.parametrize("to_file", [True, False])
def test_a_big_transcripts_last_commit_writes_the_store_file_not_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, to_file: bool
) -> None:
    # The rows a load logged were written twice: to the log, then by the load's closing
    # checkpoint (83 MB of log for a 28 MB session). Inside an outer bulk load the closing
    # checkpoint has not run yet, so the log shows what the commits wrote.
    path = _session(tmp_path / "session.jsonl", 400)
    whole = LabStore(tmp_path / "whole.duckdb")
    load(path, whole, progress=False)
    monkeypatch.setattr("lcm_lab.loading.dispatch.COMMIT_BYTES", 20_000)  # and in steps before it
    monkeypatch.setattr("lcm_lab.loading.dispatch.TO_FILE_BYTES", 0 if to_file else 1 << 60)
    db = tmp_path / "lab.duckdb"
    store = LabStore(db)
    with store.bulk_load():
        (result,) = load(path, store, progress=False)
        logged = _log_bytes(db)
    assert result.status == "loaded" and result.messages == 400
    assert (logged == 0) if to_file else (logged > 100_000)
    for table in _TABLES:
        assert store.fetch_all(f"SELECT * FROM {table} ORDER BY ALL") == whole.fetch_all(f"SELECT * FROM {table} ORDER BY ALL")
    assert store.fetch_all("SELECT status FROM sources") == [("loaded",)]
    store.close()
    whole.close()
    assert db.stat().st_size <= 1.05 * (tmp_path / "whole.duckdb").stat().st_size


# Loads argv[1] into the store argv[2] in 20 KB commit steps, its last commit straight into the
# file, and SIGKILLs itself argv[3] seconds after that commit began (from another thread).
_KILLED_IN_LAST_COMMIT = """
import os, sys, threading, time
from lcm_lab.store import LabStore
import lcm_lab.loading.dispatch as dispatch
dispatch.COMMIT_BYTES = 20_000
dispatch.TO_FILE_BYTES = 0
real = LabStore.setting
def setting(self, name, value):
    if name == "checkpoint_threshold" and value == "0B":  # the last commit is about to run
        delay = float(sys.argv[3])
        threading.Thread(target=lambda: (time.sleep(delay), os.kill(os.getpid(), 9)), daemon=True).start()
    return real(self, name, value)
LabStore.setting = setting
dispatch.load(sys.argv[1], LabStore(sys.argv[2]), progress=False)
time.sleep(60)  # the kill comes after the load, if not during it
"""


@pytest.mark.slow
@pytest.mark.parametrize("delay", [0.0, 0.002, 0.01, 0.03, 0.1, 0.5])
def test_a_kill_during_the_last_commit_leaves_all_of_the_load_or_none(tmp_path: Path, delay: float) -> None:
    import subprocess
    import sys

    path = _session(tmp_path / "session.jsonl", 3000)
    db = tmp_path / "lab.duckdb"
    script = tmp_path / "killed.py"
    script.write_text(_KILLED_IN_LAST_COMMIT)
    done = subprocess.run([sys.executable, str(script), str(path), str(db), str(delay)], capture_output=True, timeout=120)
    assert done.returncode == -9, done.stderr.decode()[-500:]
    store = LabStore(db)  # opens; a load that did not finish is removed
    statuses = [s for (s,) in store.fetch_all("SELECT status FROM sources")]
    messages = _counts(store)["messages"]
    assert (statuses, messages) in ((["loaded"], 3000), (["failed"], 0)), (statuses, messages)
    (again,) = load(path, store, progress=False)
    assert again.status in ("loaded", "unchanged") and _counts(store)["messages"] == 3000


# -- DuckDB running out of memory is one line naming LCM_LAB_MEMORY_LIMIT -------------------------


def test_duckdb_out_of_memory_is_a_memory_limit_error_naming_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lcm_lab.errors import MemoryLimitError, UserError

    path = _session(tmp_path / "session.jsonl", 2000)
    monkeypatch.setenv("LCM_LAB_MEMORY_LIMIT", "2MB")
    store = LabStore(tmp_path / "lab.duckdb")
    with pytest.raises(MemoryLimitError) as caught:
        load(path, store, progress=False)
    message = str(caught.value)
    assert isinstance(caught.value, UserError) and len(message.splitlines()) == 1
    assert "LCM_LAB_MEMORY_LIMIT" in message and "2MB" in message


def test_the_cli_prints_the_memory_limit_error_on_one_line_with_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from lcm_lab.cli import main

    path = _session(tmp_path / "session.jsonl", 2000)
    monkeypatch.setenv("LCM_LAB_MEMORY_LIMIT", "2MB")
    code = main(["load", "--db", str(tmp_path / "lab.duckdb"), str(path)])
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and "LCM_LAB_MEMORY_LIMIT" in err and "Traceback" not in err


# -- a pi session's messages are read again from the file, not held: same rows as held ----------

REPO = Path(__file__).resolve().parents[1]


def _built_rows(read: object) -> dict[str, list[dict[str, object]]]:
    from lcm_lab.io.rows import Start, build_rows

    tables: dict[str, list[dict[str, object]]] = {}
    conversations = read.conversations  # type: ignore[attr-defined]
    build_rows(conversations, [Start(cid=i) for i in range(len(conversations))],
               lambda table, arrow: tables.setdefault(table, []).extend(arrow.to_pylist()),
               kind=read.kind, source_id=1)  # type: ignore[attr-defined]  # fmt: skip
    return tables


@pytest.mark.parametrize("encoding", ["plain", "gzip", "utf-16"])
@pytest.mark.parametrize("name", ["before-compaction.jsonl", "large-session.jsonl"])
def test_reread_entries_build_exactly_the_rows_of_held_entries(tmp_path: Path, name: str, encoding: str) -> None:
    from lcm_lab.io.transcripts.reread import ReReadEntries

    source = REPO / "datasets" / "pi-mono" / name
    path = tmp_path / name
    if encoding == "plain":
        path.write_bytes(source.read_bytes())
    elif encoding == "gzip":
        path = tmp_path / f"{name}.gz"
        path.write_bytes(gzip.compress(source.read_bytes()))
    else:
        path.write_bytes(source.read_text(encoding="utf-8").encode("utf-16"))
    held, reread = read_transcript(path), read_transcript(path, reread=True)
    entries = reread.conversations[0].conversation.entries
    assert isinstance(entries, ReReadEntries) and entries == held.conversations[0].conversation.entries
    assert reread.conversations[0].meta == held.conversations[0].meta and reread.issues == held.issues
    assert _built_rows(reread) == _built_rows(held)


def test_a_file_rewritten_between_reading_and_storing_is_refused_by_name(tmp_path: Path) -> None:
    path = _session(tmp_path / "session.jsonl", 10)
    read = read_transcript(path, reread=True)
    lines = path.read_text().splitlines()
    lines[3], lines[4] = lines[4], lines[3]  # same bytes, other order: offsets now point at other entries
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputFileError, match=r"session\.jsonl: line \d+ changed while the file was loaded"):
        list(read.conversations[0].conversation.entries)


# -- one big session projected in parts across workers: exactly the rows of one process ---------


@pytest.mark.parametrize("name", ["before-compaction.jsonl", "large-session.jsonl"])
def test_a_session_split_across_workers_stores_exactly_the_rows_of_one_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    import lcm_lab.store.write_loaded as write_loaded

    path = REPO / "datasets" / "pi-mono" / name
    monkeypatch.setattr(write_loaded, "SPLIT_MIN_ENTRIES", 10)
    splits: list[int] = []
    real_split = write_loaded.build_rows_split

    def build_rows_split(*args: object, **kwargs: object) -> object:
        splits.append(int(kwargs["workers"]))  # type: ignore[call-overload]
        return real_split(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(write_loaded, "build_rows_split", build_rows_split)
    tables = ("conversations", "messages", "message_parts", "entries", "recorded_events")
    rows = {}
    for workers in ("1", "2"):
        monkeypatch.setenv("LCM_LAB_LOAD_WORKERS", workers)
        store = LabStore(tmp_path / f"w{workers}.duckdb")
        (result,) = load(path, store, progress=False)
        assert result.status == "loaded"
        rows[workers] = {t: store.fetch_all(f"SELECT * EXCLUDE (source_id) FROM {t} ORDER BY ALL")
                         if t == "conversations" else store.fetch_all(f"SELECT * FROM {t} ORDER BY ALL") for t in tables}  # fmt: skip
        store.close()
    assert splits == [2]  # the two-worker load took the split path
    assert {t: len(r) for t, r in rows["2"].items()} == {t: len(r) for t, r in rows["1"].items()}
    assert rows["2"] == rows["1"]
