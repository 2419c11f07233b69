"""Item 2 of issue 22: a crash during the first command on a new store, or during a schema
upgrade, never bricks the store; the next command opens it on its own (real ``os._exit`` right
after a migration commits, real SIGKILL from outside at several points)."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import duckdb
import pytest
from conftest import FIXTURES
from faults import child_env, lab_command, run_lab

from lcm_lab.store import migrations

TRANSCRIPT = FIXTURES / "reference-runs" / "inputs" / "golden-session.jsonl.gz"


def _conversations(db: Path) -> int:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return int(con.execute("SELECT count(*) FROM conversations").fetchall()[0][0])
    finally:
        con.close()


def _loads_and_reads(db: Path) -> subprocess.CompletedProcess[str]:
    again = run_lab("load", str(TRANSCRIPT), "--db", str(db))
    assert again.returncode == 0, again.stderr[-3000:]
    assert "Traceback" not in again.stderr
    ledger = run_lab("ledger", "--db", str(db))
    assert ledger.returncode == 0, ledger.stderr[-3000:]
    return again


pytestmark = pytest.mark.slow  # each case starts two or three lab processes


@pytest.mark.parametrize("die_after", ["m005_replay_sent", "m007_strategies"])
def test_death_during_the_first_commands_migrations(tmp_path: Path, die_after: str) -> None:
    db = tmp_path / "lab.duckdb"
    first = run_lab("load", str(TRANSCRIPT), "--db", str(db), die_after=die_after)
    assert first.returncode == 9
    assert not db.exists()  # the half-built store is a hidden build file, never the store
    _loads_and_reads(db)
    assert _conversations(db) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lab.duckdb"]  # the dead build was removed


def _store_at_m004(db: Path) -> None:
    """A store as a lab of four migrations left it (checkpointed), with one conversation in it."""
    con = duckdb.connect(str(db))
    migrations.applied(con)
    for migration in migrations.discover()[:4]:
        migration.up(con)
        con.execute("INSERT INTO schema_migrations (name) VALUES (?)", [migration.name])
    con.execute("INSERT INTO conversations (conversation_id, source_id, kind, session_id)"
                " VALUES (1, 1, 'transcript', 'kept-through-the-crash')")
    con.execute("CHECKPOINT")
    con.close()


@pytest.mark.parametrize("die_after", ["m005_replay_sent", "m011_replay_engine"])
def test_death_during_a_schema_upgrade_restores_the_safe_copy(tmp_path: Path, die_after: str) -> None:
    db = tmp_path / "lab.duckdb"
    _store_at_m004(db)
    first = run_lab("ledger", "--db", str(db), die_after=die_after)
    assert first.returncode == 9
    with pytest.raises(duckdb.Error, match="replaying WAL"):  # the fault is real: DuckDB alone cannot open it
        duckdb.connect(str(db), read_only=True)
    again = _loads_and_reads(db)
    assert "recovered the lab store" in again.stderr and "restored the copy" in again.stderr
    con = duckdb.connect(str(db), read_only=True)
    names = {r[0] for r in con.execute("SELECT name FROM schema_migrations").fetchall()}
    kept = con.execute("SELECT count(*) FROM conversations WHERE session_id = 'kept-through-the-crash'").fetchall()
    con.close()
    assert names == {m.name for m in migrations.discover()} and kept == [(1,)]
    assert not (tmp_path / "lab.duckdb.pre-migration").exists()


def _kill_when(tmp_path: Path, db: Path, seen: str) -> int:
    """Start the first ``load`` on a new store, SIGKILL it once a file matching ``seen`` exists."""
    child = subprocess.Popen(lab_command("load", str(TRANSCRIPT), "--db", str(db)), env=child_env(),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    try:
        while child.poll() is None and time.monotonic() < deadline:
            if any(tmp_path.glob(seen)):
                child.send_signal(signal.SIGKILL)
                break
            time.sleep(0.002)
    finally:
        code = child.wait(timeout=60)
    return code


@pytest.mark.parametrize("seen", [".lab.duckdb.creating-*.wal", "lab.duckdb", "lab.duckdb.wal"])
def test_sigkill_at_several_points_of_the_first_load(tmp_path: Path, seen: str) -> None:
    db = tmp_path / "lab.duckdb"
    code = _kill_when(tmp_path, db, seen)
    if seen != "lab.duckdb.wal":  # the load may finish without a log ever showing: fine too
        assert code == -signal.SIGKILL
    _loads_and_reads(db)
    assert _conversations(db) >= 1


# A load that dies right after its first commit step: its first rows are committed, the rest
# never written (a kill -9 or an out-of-memory death part-way through a big file).
DIE_AFTER_FIRST_STEP = """
import os, sys
from lcm_lab.loading import dispatch
from lcm_lab.store.core import LabStore
dispatch.COMMIT_BYTES = 32 << 10  # steps of 32 KB: the fixture's session takes several
real = LabStore.commit_point
def commit_point(self):
    real(self)
    os._exit(9)
LabStore.commit_point = commit_point
from lcm_lab.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_load_killed_part_way_is_not_shown_by_the_next_command(tmp_path: Path) -> None:
    import sys

    db = tmp_path / "lab.duckdb"
    dead = subprocess.run([sys.executable, "-c", DIE_AFTER_FIRST_STEP, "load", str(TRANSCRIPT), "--db", str(db)],
                          capture_output=True, text=True, timeout=120, env=child_env(LCM_LAB_LOAD_WORKERS="1"))  # fmt: skip
    assert dead.returncode == 9, dead.stderr[-2000:]
    con = duckdb.connect(str(db), read_only=True)
    try:
        (half,) = con.execute("SELECT count(*) FROM messages").fetchall()[0]
    finally:
        con.close()
    assert half > 0  # the first step was committed: the case this test is about
    grep = run_lab("grep", "the", "--db", str(db))
    assert "Traceback" not in grep.stderr
    assert "removed the rows of 1 load that did not finish" in grep.stderr
    assert _conversations(db) == 0
    con = duckdb.connect(str(db), read_only=True)
    try:
        assert con.execute("SELECT status FROM sources").fetchall() == [("failed",)]
    finally:
        con.close()
    _loads_and_reads(db)
    assert _conversations(db) == 1
