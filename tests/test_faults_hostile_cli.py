"""Faults a hostile tester found in the CLI: paths the file system refuses, bad environment
variables, damaged stores, closed standard streams, read commands on a missing store, outputs over
the store's own files, bad option values, and the format of the one error line. Each case runs
the real CLI in a child process (tests/faults.py) and checks: exit 2, one line on stderr that
says what is wrong, and no traceback."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import DATASETS, FIXTURES
from faults import assert_one_line_error, child_env, copy_store, filled_store, lab_command, run_lab

TRANSCRIPT = FIXTURES / "reference-runs" / "inputs" / "golden-session.jsonl.gz"


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A store with one loaded conversation and one saved replay; returns (store, run id)."""
    return filled_store(tmp_path_factory.mktemp("hostile"), TRANSCRIPT)


# -- 1. paths the file system refuses ------------------------------------------------------------

LONG_PATH = "x/" * 2500  # relative, longer than PATH_MAX (4096)
LONG_NAME = "y" * 300  # one name longer than NAME_MAX (255)


@pytest.mark.parametrize("kind", ["path", "name"])
def test_a_path_too_long_ends_in_one_line(tmp_path: Path, filled: tuple[Path, str], kind: str) -> None:
    db = copy_store(filled, tmp_path / "store")
    bad = LONG_PATH if kind == "path" else str(tmp_path / LONG_NAME)
    commands = [
        ["load", bad, "--db", str(tmp_path / "new.duckdb")],
        ["ledger", "--db", bad],
        ["doctor", bad],
        ["replay", bad],
        ["export", filled[1], "--db", str(db), "-o", bad],
        ["report", "--db", str(db), "-o", bad],
        ["replay", str(TRANSCRIPT), "--token-budget", "2000", "--summarizer", "stub-v1", "--no-save",
         "--db", str(db), "--trace-out", bad],
    ]
    for command in commands:
        line = assert_one_line_error(run_lab(*command), f"lcm-lab {command[0]}", "too long", "use a shorter path")
        assert len(line) < 600, (command, line)  # the path is shortened in the message


def test_a_symbolic_link_loop_ends_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    assert_one_line_error(run_lab("ledger", "--db", str(tmp_path / "a")), "lcm-lab ledger", "symbolic links")


# -- 4. closed standard streams ------------------------------------------------------------------


def _run_closed(fds: tuple[int, ...], *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI with descriptors ``fds`` closed (as ``>&-`` / ``2>&-`` do); what is left is captured."""

    def close() -> None:
        for fd in fds:
            os.close(fd)

    return subprocess.run(lab_command(*args), capture_output=True, text=True, timeout=60, env=child_env(),
                          preexec_fn=close)


def test_a_closed_stdout_writes_nothing_and_keeps_the_exit_status(tmp_path: Path, filled: tuple[Path, str]) -> None:
    db = copy_store(filled, tmp_path / "store")
    grep = _run_closed((1,), "grep", "the", "--db", str(db))
    assert grep.returncode == 0 and grep.stderr.strip() == "", grep.stderr[-2000:]
    for args in (["grep", "zzzz-not-there-zzzz"], ["describe", "sum_nothing"]):
        closed, open_ = _run_closed((1,), *args, "--db", str(db)), run_lab(*args, "--db", str(db))
        assert closed.returncode == open_.returncode and "Traceback" not in closed.stderr, closed.stderr[-2000:]
    new = tmp_path / "new" / "lab.duckdb"
    load = _run_closed((1,), "load", str(TRANSCRIPT), "--db", str(new))
    assert load.returncode == 0 and "Traceback" not in load.stderr, load.stderr[-2000:]
    doctor = _run_closed((1,), "doctor", str(DATASETS / "lcm-db" / "golden__G0-golden.db.gz"))
    assert doctor.returncode in (0, 1) and "Traceback" not in doctor.stderr, doctor.stderr[-2000:]
    # the store written with descriptor 1 closed is whole (nothing printed went into it)
    from lcm_lab.store import LabStore

    with LabStore(new, read_only=True) as store:
        assert store.fetch_all("SELECT count(*) FROM messages")[0][0] == 26


def test_a_user_error_with_stderr_closed_still_exits_2(tmp_path: Path) -> None:
    (tmp_path / "empty.duckdb").write_bytes(b"")
    for fds in ((2,), (1, 2), (0, 1, 2)):
        result = _run_closed(fds, "ledger", "--db", str(tmp_path / "empty.duckdb"))
        assert result.returncode == 2, (fds, result.returncode)


# -- 8. the one error line -----------------------------------------------------------------------


def test_grep_and_describe_errors_use_the_commands_one_line_format(tmp_path: Path, filled: tuple[Path, str]) -> None:
    db = copy_store(filled, tmp_path / "store")
    line = assert_one_line_error(run_lab("grep", "x", "--limit", "500", "--db", str(db)), "between 1 and 200")
    assert line.startswith("lcm-lab grep: "), line
    line = assert_one_line_error(run_lab("describe", "sum_no_such_summary", "--run", filled[1], "--db", str(db)))
    assert line.startswith("lcm-lab describe: "), line
    line = assert_one_line_error(run_lab("grep", "x", "--run", "run_nope", "--db", str(db)), "run_nope")
    assert line.startswith("lcm-lab grep: "), line
    # --json callers also get the error as JSON on stdout
    result = run_lab("grep", "x", "--limit", "500", "--json", "--db", str(db))
    assert_one_line_error(result, "lcm-lab grep: ")
    assert "between 1 and 200" in json.loads(result.stdout)["error"]


def test_replay_names_a_broken_lcm_db_once(tmp_path: Path) -> None:
    truncated = tmp_path / "trunc.db.gz"
    truncated.write_bytes((DATASETS / "lcm-db" / "golden__G0-golden.db.gz").read_bytes()[:3000])
    line = assert_one_line_error(run_lab("replay", str(truncated), "--db", str(tmp_path / "lab.duckdb")), "broken gzip")
    assert line.count(str(truncated)) == 1, line


# -- 2. the lab's environment variables ----------------------------------------------------------

BAD_ENVIRONMENT = [
    ("LCM_LAB_MEMORY_LIMIT", "abc", "512MB"), ("LCM_LAB_MEMORY_LIMIT", "0", "512MB"),
    ("LCM_LAB_MEMORY_LIMIT", "-1", "512MB"), ("LCM_LAB_MEMORY_LIMIT", "80%", "512MB"),
    ("LCM_LAB_MEMORY_LIMIT", "99999999999999GB", "to 1PiB"), ("LCM_LAB_MEMORY_LIMIT", "10KB", "from 2MB"),
    ("LCM_LAB_LOCK_TIMEOUT", "abc", "seconds"), ("LCM_LAB_LOCK_TIMEOUT", "-1", "seconds"),
    ("LCM_LAB_LOCK_TIMEOUT", "nan", "seconds"), ("LCM_LAB_LOCK_TIMEOUT", "1e309", "seconds"),
    ("LCM_LAB_IDLE_SECONDS", "abc", "seconds"), ("LCM_LAB_IDLE_SECONDS", "inf", "seconds"),
    ("LCM_LAB_LOAD_WORKERS", "99999999999", "whole number from 1 to 64"), ("LCM_LAB_LOAD_WORKERS", "abc", "whole number"),
    ("LCM_LAB_LOAD_WORKERS", "0", "whole number"), ("LCM_LAB_LOAD_WORKERS", "-1", "whole number"),
    ("LCM_LAB_MAX_LINE_MB", "1e309", "megabytes"), ("LCM_LAB_MAX_LINE_MB", "0", "megabytes"),
]


@pytest.mark.parametrize(("name", "value", "accepted"), BAD_ENVIRONMENT)
def test_a_bad_environment_variable_is_one_line_before_anything_is_created(
    tmp_path: Path, name: str, value: str, accepted: str
) -> None:
    db = tmp_path / "new" / "lab.duckdb"
    result = run_lab("load", str(TRANSCRIPT), str(TRANSCRIPT), "--db", str(db), **{name: value})
    assert_one_line_error(result, "lcm-lab load: ", f"{name}={value!r}", accepted)
    assert not (tmp_path / "new").exists()


def test_bad_environment_values_are_option_errors_in_the_library(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lcm_lab.errors import OptionError
    from lcm_lab.io.transcripts.jsonl import max_line_bytes
    from lcm_lab.loading.dispatch import load_workers
    from lcm_lab.store import LabStore

    for name, value, _ in BAD_ENVIRONMENT:
        monkeypatch.setenv(name, value)
        with pytest.raises(OptionError, match=name):
            if name == "LCM_LAB_LOAD_WORKERS":
                load_workers(4)
            elif name == "LCM_LAB_MAX_LINE_MB":
                max_line_bytes()
            else:
                LabStore(tmp_path / "lab.duckdb")
        monkeypatch.delenv(name)
    assert not (tmp_path / "lab.duckdb").exists()
    for name, value in (("LCM_LAB_MEMORY_LIMIT", "1.5GiB"), ("LCM_LAB_MEMORY_LIMIT", "2 MB"),
                        ("LCM_LAB_LOCK_TIMEOUT", "0"), ("LCM_LAB_LOAD_WORKERS", "2"), ("LCM_LAB_MAX_LINE_MB", "0.5")):
        monkeypatch.setenv(name, value)
    assert load_workers(1) == 2 and max_line_bytes() == 1 << 19
    with LabStore(tmp_path / "lab.duckdb") as store:
        assert store.lock_timeout == 0
        assert store.fetch_all("SELECT current_setting('memory_limit')")[0][0] == "1.9 MiB"


# -- 7. option values ------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["0", "-1", "abc"])
def test_counts_must_be_positive(tmp_path: Path, filled: tuple[Path, str], value: str) -> None:
    db = copy_store(filled, tmp_path / "store")
    for summarizer in ("litellm", "offline"):
        result = run_lab("replay", str(TRANSCRIPT), "--summarizer", summarizer, "--model", "openai/gpt-4o-mini",
                         "--concurrency", value, "--no-save", "--db", str(db), OPENAI_API_KEY="sk-test")
        assert_one_line_error(result, "lcm-lab replay: ", "--concurrency", "positive integer")
    assert_one_line_error(run_lab("ledger", "--last", value, "--db", str(db)), "lcm-lab ledger: ", "--last", "positive")


@pytest.mark.parametrize("option", ["--since", "--before"])
@pytest.mark.parametrize("value", ["garbage", "", "2025-13-45", "99999-01-01"])
def test_grep_time_bounds_must_be_dates(tmp_path: Path, filled: tuple[Path, str], option: str, value: str) -> None:
    db = copy_store(filled, tmp_path / "store")
    assert_one_line_error(run_lab("grep", "the", option, value, "--db", str(db)), "lcm-lab grep: ", option, "ISO 8601")


def test_grep_time_bounds_in_the_library(tmp_path: Path, filled: tuple[Path, str]) -> None:
    from lcm_lab.errors import OptionError
    from lcm_lab.recall_tools import recall
    from lcm_lab.store import LabStore

    with LabStore(copy_store(filled, tmp_path / "store")) as store:
        rec = recall(filled[1], store)
        with pytest.raises(OptionError, match="before '2025-13-45': month must be in 1..12"):
            rec.grep("the", before="2025-13-45")
        with pytest.raises(OptionError, match="invalid regex"):
            rec.grep("(")


@pytest.mark.parametrize(("pattern", "reason"), [("(", "missing )"), ("(a{1000}){1000}", "invalid repetition size")])
def test_grep_an_invalid_regex_gives_the_engines_reason(tmp_path: Path, filled: tuple[Path, str], pattern: str,
                                                        reason: str) -> None:
    db = copy_store(filled, tmp_path / "store")
    result = run_lab("grep", "--mode", "regex", pattern, "--db", str(db))
    assert_one_line_error(result, "lcm-lab grep: invalid regex", reason, "RE2")


# -- 5. reading commands never create a store ----------------------------------------------------

READING_COMMANDS = [["ledger"], ["sweeps"], ["grep", "the"], ["describe", "sum_x"], ["recommend", "sweep_x"],
                    ["drift", "--previous", "run_a", "--run", "run_b"]]


def test_a_reading_command_on_a_mistyped_db_creates_nothing(tmp_path: Path) -> None:
    db = tmp_path / "nonexist" / "a" / "b" / "lab.duckdb"
    commands = [*READING_COMMANDS, ["report", "-o", str(tmp_path / "r.html")], ["export", "run_x", "-o", str(tmp_path / "x.db")]]
    for command in commands:
        assert_one_line_error(run_lab(*command, "--db", str(db)), f"lcm-lab {command[0]}: ", f"no lab store at {db}", "--db")
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    # a writing command still makes the store, directories included
    assert run_lab("load", str(TRANSCRIPT), "--db", str(db)).returncode == 0 and db.is_file()


def test_a_reading_command_on_a_fresh_default_home_says_what_to_do(tmp_path: Path) -> None:
    home = tmp_path / "home"
    for command in READING_COMMANDS:
        result = run_lab(*command, LCM_LAB_HOME=str(home))
        assert_one_line_error(result, f"lcm-lab {command[0]}: ", f"no lab store yet at {home / 'lab.duckdb'}", "lcm-lab load")
    assert not home.exists()


def test_the_library_never_creates_a_store_for_reading(tmp_path: Path) -> None:
    from lcm_lab.errors import NotFoundError
    from lcm_lab.store import LabStore, open_store

    for opening in (lambda: open_store(tmp_path / "d" / "lab.duckdb", reads_only=True),
                    lambda: LabStore(tmp_path / "d" / "lab.duckdb", read_only=True)):
        with pytest.raises(NotFoundError, match="no lab store at"):
            opening()
    assert not (tmp_path / "d").exists()


# -- 6. outputs over the store's own files ---------------------------------------------------------

STORE_FILE_NAMES = ["lab.duckdb", "lab.duckdb.wal", "lab.duckdb.pre-migration", "lab.duckdb.wal.unreplayable-20250101T000000",
                    ".lab.duckdb.creating-12345"]


@pytest.mark.parametrize("name", STORE_FILE_NAMES)
def test_outputs_never_land_on_the_stores_files(tmp_path: Path, filled: tuple[Path, str], name: str) -> None:
    db = copy_store(filled, tmp_path / "store")
    before = {p.name: p.read_bytes() for p in db.parent.iterdir()}
    out = str(db.parent / name)
    for command in (["export", filled[1], "-o", out], ["report", "-o", out],
                    ["replay", str(TRANSCRIPT), "--token-budget", "2000", "--summarizer", "stub-v1", "--no-save",
                     "--trace-out", out]):
        assert_one_line_error(run_lab(*command, "--db", str(db)), f"lcm-lab {command[0]}: ", name, "store")
    assert {p.name: p.read_bytes() for p in db.parent.iterdir()} == before
    assert run_lab("ledger", "--db", str(db)).returncode == 0  # the store still opens, as it was


def test_export_through_a_regular_file(tmp_path: Path, filled: tuple[Path, str]) -> None:
    db = copy_store(filled, tmp_path / "store")
    (tmp_path / "file").write_text("mine\n")
    for out in (tmp_path / "file" / "x.db", tmp_path / "file" / "deeper" / "x.db"):
        for command in (["export", filled[1], "-o", str(out)], ["report", "-o", str(out)]):
            assert_one_line_error(run_lab(*command, "--db", str(db)), f"lcm-lab {command[0]}: ", "is a file, not a directory")
    assert (tmp_path / "file").read_text() == "mine\n"


def test_export_json_errors_also_end_in_the_one_line(tmp_path: Path, filled: tuple[Path, str]) -> None:
    db = copy_store(filled, tmp_path / "store")
    result = run_lab("export", filled[1], "-o", str(db), "--json", "--db", str(db))
    assert_one_line_error(result, "lcm-lab export: ", "DuckDB database")
    assert "DuckDB database" in json.loads(result.stdout)["error"]


# -- 3. a damaged store --------------------------------------------------------------------------


def _damage(filled: tuple[Path, str], directory: Path, *statements: str, params: list[object] | None = None) -> Path:
    """A copy of the filled store with ``statements`` run on it by DuckDB directly."""
    import duckdb

    db = copy_store(filled, directory)
    con = duckdb.connect(str(db))
    for statement in statements:
        con.execute(statement, params or [])
    con.execute("CHECKPOINT")
    con.close()
    return db


def test_the_list_of_lab_tables_is_what_the_migrations_build() -> None:
    from lcm_lab.store import LabStore
    from lcm_lab.store.opening import LAB_TABLES

    with LabStore(":memory:") as store:
        names = {r[0] for r in store.fetch_all("SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main'")}
    assert names == LAB_TABLES


@pytest.mark.parametrize("table", ["messages", "replays", "summaries", "sources", "recall_docs", "llm_calls", "sweeps"])
def test_a_store_missing_a_lab_table_is_damaged(tmp_path: Path, filled: tuple[Path, str], table: str) -> None:
    db = _damage(filled, tmp_path / "store", f"DROP TABLE {table}")
    commands = [["grep", "the"], ["describe", "sum_x"], ["load", str(TRANSCRIPT)], ["report", "-o", str(tmp_path / "r.html")],
                ["export", filled[1], "-o", str(tmp_path / "x.db")], ["ledger"], ["sweeps"]]
    for command in commands:
        assert_one_line_error(run_lab(*command, "--db", str(db)), f"lcm-lab {command[0]}: ", "damaged",
                              f"table {table} is missing", "restore a backup")
    assert not (tmp_path / "r.html").exists() and not (tmp_path / "x.db").exists()


def test_a_replay_payload_that_is_not_one_is_damaged(tmp_path: Path, filled: tuple[Path, str]) -> None:
    db = _damage(filled, tmp_path / "store", "UPDATE replays SET payload = ?", params=[b"\x00garbage, not zlib"])
    for command in (["report", "-o", str(tmp_path / "r.html")], ["export", filled[1], "-o", str(tmp_path / "x.db")]):
        assert_one_line_error(run_lab(*command, "--db", str(db)), f"lcm-lab {command[0]}: ", "damaged",
                              f"run {filled[1]}'s payload", "cannot be read")
    import zlib

    db = _damage(filled, tmp_path / "json", "UPDATE replays SET payload = ?", params=[zlib.compress(b"[1, 2]")])
    assert_one_line_error(run_lab("export", filled[1], "-o", str(tmp_path / "x.db"), "--db", str(db)),
                          "damaged", f"run {filled[1]}'s payload is not a replay")


def test_non_finite_call_numbers_read_as_unknown(tmp_path: Path, filled: tuple[Path, str]) -> None:
    from lcm_lab.store import LabStore
    from lcm_lab.store.ledger import Ledger, LedgerEntry

    db = copy_store(filled, tmp_path / "store")
    with LabStore(db) as store:
        for key in ("k1", "k2"):
            Ledger(store).record(LedgerEntry(purpose="judge", summarizer="t", model="m", cache_key=key, response_text="r",
                                             latency_ms=12.0, cost_usd=0.001))
        store.execute("UPDATE llm_calls SET latency_ms = 'inf'::DOUBLE, cost_usd = 'nan'::DOUBLE WHERE cache_key = 'k1'")
        store.execute("CHECKPOINT")
    table = run_lab("ledger", "--db", str(db))
    assert table.returncode == 0 and "Traceback" not in table.stderr, table.stderr[-2000:]
    assert "2 calls" in table.stdout and "$0.0010" in table.stdout
    as_json = run_lab("ledger", "--json", "--db", str(db))
    assert as_json.returncode == 0, as_json.stderr[-2000:]
    calls = [json.loads(line) for line in as_json.stdout.splitlines()]  # valid JSON: no NaN or Infinity
    assert "NaN" not in as_json.stdout and "Infinity" not in as_json.stdout
    assert [(c["latency_ms"], c["cost_usd"]) for c in calls] == [(None, None), (12.0, 0.001)]
    assert_one_line_error(run_lab("ledger", "--last", "0", "--db", str(db)), "--last")


def _with_sweep(filled: tuple[Path, str], directory: Path, spec: str, stats: str) -> Path:
    from lcm_lab.store import LabStore
    from lcm_lab.store.sweeps import register_sweep, set_sweep_status

    db = copy_store(filled, directory)
    with LabStore(db) as store:
        register_sweep(store, "sweep_x", "x", {"space": {}, "objectives": []})
        set_sweep_status(store, "sweep_x", "done", {"calls_made": 1})
        store.execute("UPDATE sweeps SET spec = ?, stats = ?", [spec, stats])
        store.execute("CHECKPOINT")
    return db


@pytest.mark.parametrize(("spec", "stats", "column", "held"), [
    ('{"space": {}, "objectives": []}', "null", "stats", "holds null"),
    ('{"space": {}, "objectives": []}', "[1, 2]", "stats", "holds a JSON list"),
    ("[1, 2]", "{}", "spec", "holds a JSON list"),
])
def test_sweep_columns_of_the_wrong_shape_are_damaged(tmp_path: Path, filled: tuple[Path, str], spec: str, stats: str,
                                                      column: str, held: str) -> None:
    db = _with_sweep(filled, tmp_path / "store", spec, stats)
    commands = [["report", "--sweep", "sweep_x", "-o", str(tmp_path / "r.html")]]
    if column == "stats":
        commands.append(["sweeps"])
    for command in commands:
        assert_one_line_error(run_lab(*command, "--db", str(db)), f"lcm-lab {command[0]}: ", "damaged",
                              f"sweep sweep_x's {column} {held}")
