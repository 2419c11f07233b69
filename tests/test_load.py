"""load(): format dispatch, bundled datasets, idempotency, grown session files, the CLI."""

from __future__ import annotations

import gzip
import importlib
import json
import tempfile
from pathlib import Path

import pytest
from conftest import DATASETS, FIXTURES, gunzip_to

from lcm_lab.cli import main
from lcm_lab.loading.dispatch import detect_kind, load, load_transcript
from lcm_lab.store import LabStore

GOLDEN = DATASETS / "lossless-claw-ref" / "golden-session.jsonl"
BEFORE_COMPACTION = DATASETS / "pi-mono" / "before-compaction.jsonl"
LOCOMO = DATASETS / "locomo" / "locomo10.json"


def test_detect_kind(tmp_path: Path) -> None:
    assert detect_kind(GOLDEN) == "pi-jsonl"
    assert detect_kind(LOCOMO) == "locomo-json"
    assert detect_kind(DATASETS / "lcm-db" / "lcm-v0.1.2.db.gz") == "lcm_db"
    assert detect_kind(DATASETS) == "directory"
    (tmp_path / "notes.json").write_text('{"hello": "world"}')
    assert detect_kind(tmp_path / "notes.json") is None


def test_before_compaction_keeps_both_compactions_and_the_leaf_path(store: LabStore) -> None:
    [result] = load(BEFORE_COMPACTION, store, progress=False)
    assert result.status == "loaded" and result.kind == "pi-jsonl" and result.conversations == 1
    events = store.recorded_events_df()
    assert list(events["kind"]) == ["compaction", "compaction"]
    assert list(events["tokens_before"]) == [175004, 185014]
    conversation = store.conversation(1)
    lines = [e.line for e in conversation.entries]
    assert lines == sorted(lines) and len(lines) == result.details["entries"]
    roles = [e.message["role"] for e in conversation.entries if e.message is not None]
    assert roles.count("bashExecution") == 3  # not stored by lossless-claw, still kept as entries
    stored = store.messages_df(1)
    assert len(stored) == result.messages and stored["content"].notna().all()
    assert stored["seq"].tolist() == list(range(1, len(stored) + 1))


def test_locomo_yields_ten_conversations_and_1986_qa_items(store: LabStore) -> None:
    [result] = load(LOCOMO, store, progress=False)
    assert (result.conversations, result.qa_items) == (10, 1986)
    qa = store.qa_items_pl()
    assert qa.height == 1986 and set(qa["category"].unique().to_list()) == {1, 2, 3, 4, 5}
    assert all(w.startswith(str(LOCOMO)) for w in result.warnings)


def test_bundled_datasets_directory_loads_completely(store: LabStore) -> None:
    results = load(DATASETS, store, progress=False)
    by_name = {Path(r.source).name: r for r in results}
    assert all(r.status == "loaded" for r in results), [(r.source, r.error) for r in results if r.status != "loaded"]
    assert len(results) == 9
    assert by_name["fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"].kind == "claude-code-jsonl"
    assert by_name["golden__G0-golden.db.gz"].summaries > 0
    assert store.fetch_all("SELECT count(*) FROM sources")[0][0] == 9
    again = load(DATASETS, store, progress=False)
    assert {r.status for r in again} == {"unchanged"}
    assert store.fetch_all("SELECT count(*) FROM sources")[0][0] == 9


def test_a_grown_session_file_appends_only_new_entries(tmp_path: Path, store: LabStore) -> None:
    lines = GOLDEN.read_text().splitlines(keepends=True)
    session = tmp_path / "session.jsonl"
    session.write_text("".join(lines[:15]))
    first = load_transcript(session, store)
    assert first.status == "loaded" and first.conversations == 1
    before = store.messages_df(1)
    session.write_text("".join(lines))  # the host appended the rest of the session
    grown = load_transcript(session, store)
    assert grown.status == "appended" and grown.conversations == 0
    assert grown.messages == 26 - len(before)
    after = store.messages_df(1)
    assert list(after["seq"]) == list(range(1, 27))
    assert after.iloc[: len(before)]["raw"].tolist() == before["raw"].tolist()
    assert store.conversations_df().shape[0] == 1
    assert load_transcript(session, store).status == "unchanged"


def test_a_rewritten_session_file_becomes_a_new_conversation(tmp_path: Path, store: LabStore) -> None:
    lines = GOLDEN.read_text().splitlines(keepends=True)
    session = tmp_path / "session.jsonl"
    session.write_text("".join(lines[:15]))
    load_transcript(session, store)
    session.write_text("".join(lines[:1] + lines[3:]))  # history rewritten, not appended
    result = load_transcript(session, store)
    assert result.conversations == 1
    assert any("changed in place" in w for w in result.warnings)


def test_gzipped_transcripts_and_state_directory(tmp_path: Path, store: LabStore) -> None:
    sessions = tmp_path / "state" / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    with gzip.open(FIXTURES / "reference-runs" / "inputs" / "golden-session.jsonl.gz", "rb") as src:
        (sessions / "abc.jsonl").write_bytes(src.read())
    (sessions / "sessions.json").write_text(json.dumps({"agent:main:main": {"sessionId": "abc", "sessionFile": "abc.jsonl"}}))
    gunzip_to(FIXTURES / "lcm-db-versions" / "lcm-v0.15.3.db.gz", tmp_path).rename(tmp_path / "state" / "lcm.db")
    results = load(tmp_path / "state", store, progress=False)
    kinds = sorted(r.kind for r in results)
    assert kinds == ["lcm_db", "pi-jsonl"] and all(r.status == "loaded" for r in results)
    keys = set(store.conversations_df()["session_key"].dropna())
    assert "agent:main:main" in keys
    [gz] = load(FIXTURES / "reference-runs" / "inputs" / "synth-1.jsonl.gz", store, progress=False)
    assert gz.status == "loaded" and gz.messages > 100


def test_unrecognised_json_and_malformed_lines_are_reported(tmp_path: Path, store: LabStore) -> None:
    odd = tmp_path / "config.json"
    odd.write_text('{"theme": "dark"}')
    [result] = load(odd, store, progress=False)
    assert result.status == "failed" and str(odd) in result.error
    broken = tmp_path / "broken.jsonl"
    lines = GOLDEN.read_text().splitlines(keepends=True)
    broken.write_text("".join(lines[:5]) + "{not json\n" + "".join(lines[5:]))
    [partial] = load(broken, store, progress=False)
    assert partial.status == "loaded" and partial.skipped_lines == 1
    assert any(":6" in w for w in partial.warnings)
    row = store.fetch_all("SELECT skipped_lines, len(warnings) FROM sources WHERE path LIKE '%broken.jsonl'")
    assert row[0][0] == 1 and row[0][1] >= 1


def test_cli_prints_a_table_and_json_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "lab.duckdb"
    assert main(["load", "--db", str(db), str(GOLDEN), str(DATASETS / "lcm-db" / "lcm-v0.1.2.db.gz")]) == 0
    table = capsys.readouterr().out
    assert "golden-session.jsonl" in table and "lcm_db" in table and "messages" in table
    assert main(["load", "--db", str(db), "--json", str(GOLDEN), str(LOCOMO)]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["status"] for r in records] == ["unchanged", "loaded"]
    expected_keys = {"source", "conversations", "messages", "summaries", "context_items", "qa_items",
                     "skipped_lines", "warnings"}
    assert all(expected_keys <= set(r) for r in records)
    assert records[1]["qa_items"] == 1986 and records[1]["source"] == str(LOCOMO)
    assert main(["load", "--db", str(db), "--csv", str(LOCOMO)]) == 0
    import csv

    [row] = list(csv.DictReader(capsys.readouterr().out.splitlines()))
    assert (row["source"], row["status"], row["qa_items"]) == (str(LOCOMO), "unchanged", "1986")
    with LabStore(db) as lab:
        assert lab.fetch_all("SELECT count(*) FROM conversations")[0][0] == 1 + 2 + 10


def test_cli_exit_status_when_a_path_cannot_be_loaded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.db"
    code = main(["load", "--db", str(tmp_path / "lab.duckdb"), str(GOLDEN), str(missing)])
    err = capsys.readouterr().err
    assert code == 1
    assert str(missing) in err and "no such file" in err and len(err.splitlines()) == 1


_TABLES = ("conversations", "messages", "message_parts", "entries", "recorded_events", "qa_items", "summaries",
           "summary_messages", "summary_sources", "context_items")


def _rows(store: LabStore) -> dict[str, list[tuple[object, ...]]]:
    return {table: store.fetch_all(f"SELECT * FROM {table} ORDER BY ALL") for table in _TABLES}


def _count_worker_files(monkeypatch: pytest.MonkeyPatch) -> tuple[list[Path], list[bool]]:
    """Lists that fill as the load hands a file to a worker (its path) and as it stores the rows
    a worker built (one entry per file): equal lengths mean no worker's read was lost."""
    load_module = importlib.import_module("lcm_lab.loading.dispatch")
    submitted: list[Path] = []
    used: list[bool] = []
    real_pool, real_insert = load_module.ProcessPoolExecutor, load_module.insert_prepared

    class CountingPool(real_pool):  # type: ignore[misc, valid-type]
        def submit(self, fn, /, *args, **kwargs):  # type: ignore[no-untyped-def]
            submitted.append(args[0])
            return super().submit(fn, *args, **kwargs)

    def insert_prepared(store, files, **options):  # type: ignore[no-untyped-def]
        used.extend(True for _ in files)
        return real_insert(store, files, **options)

    monkeypatch.setattr(load_module, "ProcessPoolExecutor", CountingPool)
    monkeypatch.setattr(load_module, "insert_prepared", insert_prepared)
    return submitted, used


def test_load_workers_build_exactly_the_rows_the_parent_would(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    load_module = importlib.import_module("lcm_lab.loading.dispatch")
    submitted, used = _count_worker_files(monkeypatch)
    stores = {}
    for workers in ("1", "2"):
        monkeypatch.setenv(load_module.WORKERS_ENV, workers)
        stores[workers] = LabStore(tmp_path / f"w{workers}.duckdb")
        results = load(DATASETS, stores[workers], progress=False)
        assert all(r.status == "loaded" for r in results)
    assert len(submitted) >= 2  # the transcripts of the bundled datasets went through workers
    assert sum(used) == len(submitted)  # and the rows they built were the ones stored
    serial, parallel = _rows(stores["1"]), _rows(stores["2"])
    assert {t: len(r) for t, r in parallel.items()} == {t: len(r) for t, r in serial.items()}
    assert parallel == serial


def _session_dir(tmp_path: Path, count: int) -> Path:
    lines = GOLDEN.read_text().splitlines(keepends=True)
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    for index in range(count):  # distinct bytes per file: a different first-line session id
        header = json.loads(lines[0])
        header["id"] = f"session-{index}"
        (sessions / f"s{index}.jsonl").write_text(json.dumps(header) + "\n" + "".join(lines[1 : 10 + index]))
    return sessions


def _failing_insert_of(entries: int, calls: list[int]):  # type: ignore[no-untyped-def]
    real_insert = importlib.import_module("lcm_lab.store.write_loaded").insert_prepared

    def insert_prepared(lab, files, **options):  # type: ignore[no-untyped-def]
        calls.append(len(files))
        if any(prepared.counts.entries == entries for _, prepared in files):
            raise RuntimeError("disk full")
        return real_insert(lab, files, **options)

    return insert_prepared


def test_a_row_batch_stores_its_files_in_one_insert_and_a_failure_stays_with_its_file(
    tmp_path: Path, store: LabStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    load_module = importlib.import_module("lcm_lab.loading.dispatch")
    prepare = importlib.import_module("lcm_lab.io.prepare")
    files = sorted(_session_dir(tmp_path, 4).iterdir())
    spool = tmp_path / "spool"
    spool.mkdir()

    def batch_of_all(lab: LabStore) -> tuple[list[tuple[int, object]], object]:
        delivered: list[tuple[int, object]] = []
        batch = load_module._RowBatch(lab, lambda key, result: delivered.append((key, result)))
        for key, path in enumerate(files):
            rows = prepare.read_and_build(path, spool=spool)
            batch.add(key, path, rows.fp, rows)
        return delivered, batch

    calls: list[int] = []
    monkeypatch.setattr(load_module, "insert_prepared", _failing_insert_of(-1, calls))
    delivered, batch = batch_of_all(store)
    batch.flush()  # type: ignore[attr-defined]
    assert calls == [4]  # one insert for the four files
    assert [(key, result.status) for key, result in delivered] == [(0, "loaded"), (1, "loaded"), (2, "loaded"), (3, "loaded")]  # type: ignore[attr-defined]

    other = LabStore(tmp_path / "other.duckdb")
    calls.clear()
    monkeypatch.setattr(load_module, "insert_prepared", _failing_insert_of(11, calls))  # s2.jsonl
    delivered, batch = batch_of_all(other)
    batch.flush()  # type: ignore[attr-defined]
    assert calls == [4, 1, 1, 1, 1]  # the shared insert failed; then one file at a time
    statuses = {files[key].name: result for key, result in delivered}
    assert statuses["s2.jsonl"].status == "failed" and "disk full" in (statuses["s2.jsonl"].error or "")  # type: ignore[attr-defined]
    assert {statuses[n].status for n in ("s0.jsonl", "s1.jsonl", "s3.jsonl")} == {"loaded"}  # type: ignore[attr-defined]
    sessions = other.fetch_all("SELECT DISTINCT session_id FROM conversations ORDER BY 1")
    assert [row[0] for row in sessions] == ["session-0", "session-1", "session-3"]


def test_with_workers_a_file_that_cannot_be_stored_fails_alone(
    tmp_path: Path, store: LabStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    load_module = importlib.import_module("lcm_lab.loading.dispatch")
    monkeypatch.setenv(load_module.WORKERS_ENV, "2")
    sessions = _session_dir(tmp_path, 4)
    calls: list[int] = []
    real_insert = load_module.insert_prepared
    monkeypatch.setattr(load_module, "insert_prepared", _failing_insert_of(11, calls))  # s2.jsonl
    results = load(sessions, store, progress=False)
    assert calls  # the workers' rows were used (how many files share an insert depends on timing)
    assert [Path(r.source).name for r in results] == ["s0.jsonl", "s1.jsonl", "s2.jsonl", "s3.jsonl"]
    assert [r.status for r in results] == ["loaded", "loaded", "failed", "loaded"]
    assert "disk full" in (results[2].error or "")
    stored = store.fetch_all("SELECT DISTINCT session_id FROM conversations ORDER BY 1")
    assert [row[0] for row in stored] == ["session-0", "session-1", "session-3"]
    assert store.fetch_all("SELECT count(*) FROM sources WHERE status = 'failed'")[0][0] == 1
    monkeypatch.setattr(load_module, "insert_prepared", real_insert)
    again = load(sessions, store, progress=False)
    assert [r.status for r in again] == ["unchanged", "unchanged", "loaded", "unchanged"]


def test_with_workers_a_file_named_twice_is_stored_once_and_a_grown_one_appends(
    tmp_path: Path, store: LabStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    load_module = importlib.import_module("lcm_lab.loading.dispatch")
    monkeypatch.setenv(load_module.WORKERS_ENV, "2")
    sessions = _session_dir(tmp_path, 3)
    first = load([sessions, sessions / "s1.jsonl"], store, progress=False)
    assert [r.status for r in first] == ["loaded", "loaded", "loaded", "unchanged"]
    assert store.fetch_all("SELECT count(*) FROM conversations")[0][0] == 3
    grown = sessions / "s0.jsonl"
    grown.write_text(grown.read_text() + "".join(GOLDEN.read_text().splitlines(keepends=True)[10:14]))
    (sessions / "s3.jsonl").write_text((sessions / "s2.jsonl").read_text().replace("session-2", "session-3"))
    second = load(sessions, store, progress=False)
    assert [r.status for r in second] == ["appended", "unchanged", "unchanged", "loaded"]
    assert second[0].conversations == 0 and second[0].messages > 0
    seqs = store.fetch_all("SELECT list(seq ORDER BY seq) FROM messages WHERE conversation_id = 1")[0][0]
    assert seqs == list(range(1, len(seqs) + 1))
    assert store.fetch_all("SELECT count(*) FROM conversations")[0][0] == 4


def test_worker_rows_of_a_file_that_changed_since_are_not_used_and_the_spool_is_removed(
    tmp_path: Path, store: LabStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    load_module = importlib.import_module("lcm_lab.loading.dispatch")
    monkeypatch.setenv(load_module.WORKERS_ENV, "2")
    spool = tmp_path / "tmp"
    spool.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spool))
    sessions = _session_dir(tmp_path, 3)
    inserted: list[int] = []
    real_insert = load_module.insert_prepared
    monkeypatch.setattr(load_module, "insert_prepared", lambda lab, files, **options: inserted.append(len(files)) or real_insert(lab, files, **options))
    monkeypatch.setattr(load_module, "unchanged_since", lambda fp, path: Path(path).name != "s1.jsonl")
    results = load(sessions, store, progress=False)
    assert [r.status for r in results] == ["loaded", "loaded", "loaded"]
    assert sum(inserted) == 2  # s1.jsonl "changed": this process read it again
    assert store.fetch_all("SELECT count(DISTINCT session_id) FROM conversations")[0][0] == 3
    assert list(spool.iterdir()) == []  # the workers' Arrow files are gone


def _collecting_read_and_build(*args: object, **kwargs: object) -> object:
    """A worker's read that starts with a full collection (one that would come sooner or later)."""
    import gc

    from lcm_lab.io.prepare import read_and_build

    gc.collect()
    return read_and_build(*args, **kwargs)  # type: ignore[arg-type]


def test_a_parents_uncollected_duckdb_connection_does_not_kill_the_forked_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A notebook's garbage: a cycle holding a DuckDB connection the collector has not reached
    # when the load forks. Collected in a forked worker, its finalizer crashed the worker
    # (SIGSEGV: the connection's threads are not in the child) and the load fell back to the
    # parent; the parent now collects it before forking, and the workers never touch the rest.
    import gc

    import duckdb

    load_module = importlib.import_module("lcm_lab.loading.dispatch")
    submitted, used = _count_worker_files(monkeypatch)
    monkeypatch.setattr(load_module, "read_and_build", _collecting_read_and_build)
    monkeypatch.setenv(load_module.WORKERS_ENV, "2")
    store = LabStore(tmp_path / "lab.duckdb")
    was_enabled = gc.isenabled()
    gc.disable()  # the garbage stays uncollected until something collects it
    try:
        for _ in range(3):
            cycle: dict[str, object] = {"connection": duckdb.connect()}
            cycle["self"] = cycle
            cycle["connection"].execute("SELECT 42").fetchall()  # type: ignore[attr-defined]
            del cycle
        results = load(DATASETS, store, progress=False)
    finally:
        if was_enabled:
            gc.enable()
    assert all(r.status == "loaded" for r in results)
    assert len(submitted) >= 2 and sum(used) == len(submitted)  # every worker's rows were stored: none died


def test_prepared_rows_are_mapped_one_spool_file_at_a_time_and_stored_the_same(tmp_path: Path) -> None:
    """A worker's rows stay on disk until stored: ``insert_prepared`` maps a table's spool files
    only until that much is inserted (a 164 MB session's rows were all mapped at once, 550 MB
    resident in the loading process), and any grouping stores the same rows."""
    from lcm_lab.io import prepare
    from lcm_lab.store.write_loaded import insert_prepared

    files = sorted(_session_dir(tmp_path, 4).iterdir())
    spool = tmp_path / "spool"
    spool.mkdir()
    built = [prepare.read_and_build(path, spool=spool) for path in files]
    assert all(built_rows.nbytes > 0 for built_rows in built)
    live: list[int] = []
    real_tables = prepare.Prepared.tables

    def counting(self: prepare.Prepared):  # type: ignore[no-untyped-def]
        for table, arrow in real_tables(self):
            live.append(table)  # type: ignore[arg-type]
            yield table, arrow

    write_loaded = importlib.import_module("lcm_lab.store.write_loaded")
    real_insert = write_loaded._insert
    inserts: list[str] = []

    def recording(lab: LabStore, table: str, arrow: object) -> None:
        inserts.append(table)
        real_insert(lab, table, arrow)

    contents, statements = [], []
    for group_bytes in (write_loaded.COMMIT_BYTES, 1):
        lab = LabStore(tmp_path / f"lab-{group_bytes}.duckdb")
        inserts.clear()
        try:
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(prepare.Prepared, "tables", counting)
                patch.setattr(write_loaded, "_insert", recording)
                patch.setattr(write_loaded, "COMMIT_BYTES", group_bytes)
                with lab.transaction():
                    insert_prepared(lab, [(index + 1, rows) for index, rows in enumerate(built)])
            contents.append({table: lab.fetch_all(f"SELECT * FROM {table} ORDER BY ALL")
                             for table in ("conversations", "messages", "message_parts", "entries")})  # fmt: skip
            statements.append(list(inserts))
        finally:
            lab.close()
    assert contents[0] == contents[1] and contents[0]["messages"]
    spooled = [table for rows in built for table, _, _ in rows.files]
    assert sorted(statements[0]) == sorted(set(spooled))  # small files: one statement per table
    assert statements[1] == spooled  # groups of one byte: each spool file stored (and released) alone, in order
    assert len(live) == 2 * sum(len(rows.files) for rows in built)  # each spool file mapped once per store
    for rows in built:
        rows.discard()
    assert list(spool.iterdir()) == []


def test_a_load_warning_is_said_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``load`` listed each warning under its table on stdout and again on stderr: a terminal showed
    every one twice. The command says them once, on stderr (the table still counts them)."""
    session = tmp_path / "s.jsonl"
    session.write_text('{"type":"session","version":3,"id":"s"}\nnot json\n'
                       '{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:00Z",'
                       '"message":{"role":"user","content":"hi"}}\n')
    assert main(["load", str(session), "--db", str(tmp_path / "lab.duckdb")]) == 0
    captured = capsys.readouterr()
    said = [line for line in (captured.out + captured.err).splitlines() if "malformed JSON" in line]
    assert len(said) == 1 and said[0].startswith("  warning: ") and said[0] in captured.err.splitlines()
