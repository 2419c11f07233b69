"""Item 9 of issue 22: faults of the machine end in one line and exit 2, never a traceback; a
store on a read-only mount still serves the reading commands. Read-only mounts and full disks are
real (a private mount namespace with a bind mount or a small tmpfs) where the machine allows it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import FIXTURES, gunzip_to
from faults import (
    assert_one_line_error,
    can_mount,
    child_env,
    copy_store,
    filled_store,
    in_mount_namespace,
    lab_command,
    run_lab,
    sha256,
)

from lcm_lab.cli import main

TRANSCRIPT = FIXTURES / "reference-runs" / "inputs" / "golden-session.jsonl.gz"
MOUNTS = pytest.mark.skipif(not can_mount(), reason="needs a private mount namespace (unshare -m)")


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A store with one loaded conversation, one saved replay and its search index; returns (store, run id)."""
    from lcm_lab.store import LabStore

    base = tmp_path_factory.mktemp("filled")
    db, run_id = filled_store(base, TRANSCRIPT)
    shutil.copyfile(db, base / "unindexed.duckdb")  # for the disk-full grep: its index is still to build
    assert main(["grep", "the", "--db", str(db)]) in (0, 1)  # builds the search index
    with LabStore(db) as store:
        store.execute("CHECKPOINT")  # the tests copy the file alone: everything must be in it, not in its log
    return db, run_id


@MOUNTS
def test_a_store_on_a_read_only_mount_serves_the_reading_commands(tmp_path: Path, filled: tuple[Path, str]) -> None:
    db = copy_store(filled, tmp_path / "ro")
    before = sha256(db)
    out = tmp_path / "out"
    out.mkdir()
    ro = f"mount --bind {tmp_path / 'ro'} {tmp_path / 'ro'} && mount -o remount,bind,ro {tmp_path / 'ro'}"
    for command in (["ledger"], ["sweeps"], ["grep", "the"], ["report", "-o", str(out / "r.html")],
                    ["export", filled[1], "-o", str(out / "x.db")]):
        result = in_mount_namespace(ro, lab_command(*command, "--db", str(db)))
        assert result.returncode in (0, 1) and "Traceback" not in result.stderr, (command, result.stderr[-2000:])
    assert (out / "r.html").stat().st_size > 10_000 and (out / "x.db").exists()
    # a writing command says in one line why it cannot
    result = in_mount_namespace(ro, lab_command("load", str(TRANSCRIPT), "--db", str(db)))
    assert_one_line_error(result, "read-only")
    assert sha256(db) == before and sorted(p.name for p in db.parent.iterdir()) == ["lab.duckdb"]


@MOUNTS
def test_an_output_in_a_read_only_directory_is_refused_before_the_work(tmp_path: Path) -> None:
    # validate-metrics -o into a read-only directory did all its replays (minutes) and only then failed
    out = tmp_path / "ro"
    out.mkdir()
    ro = f"mount --bind {out} {out} && mount -o remount,bind,ro {out}"
    result = in_mount_namespace(ro, lab_command("validate-metrics", "--db", str(tmp_path / "v.duckdb"),
                                                "-o", str(out / "sub" / "validity.md")))  # fmt: skip
    assert_one_line_error(result, "does not take new files")
    assert not (tmp_path / "v.duckdb").exists()  # refused before any replay: nothing was stored


@MOUNTS
def test_a_new_store_on_a_read_only_mount(tmp_path: Path) -> None:
    (tmp_path / "ro").mkdir()
    ro = f"mount --bind {tmp_path / 'ro'} {tmp_path / 'ro'} && mount -o remount,bind,ro {tmp_path / 'ro'}"
    result = in_mount_namespace(ro, lab_command("load", str(TRANSCRIPT), "--db", str(tmp_path / "ro" / "lab.duckdb")))
    assert_one_line_error(result, "read-only")


def _tmpfs(directory: Path, size: str) -> str:
    return f"mount -t tmpfs -o size={size} tmpfs {directory}"


@MOUNTS
@pytest.mark.parametrize("command", ["load", "report", "export", "grep", "sweep"])
def test_disk_full(tmp_path: Path, filled: tuple[Path, str], command: str) -> None:
    full = tmp_path / "full"
    full.mkdir()
    store_size = filled[0].stat().st_size
    if command in ("load", "grep", "sweep"):
        # the store itself on a disk with a few blocks to spare, made fuller by a ballast file
        source = filled[0].with_name("unindexed.duckdb") if command == "grep" else filled[0]
        setup = (f"{_tmpfs(full, str(store_size + 3 * 262_144))} && cp {source} {full / 'lab.duckdb'}"
                 f" && (dd if=/dev/zero of={full / 'ballast'} bs=4k 2>/dev/null; true)")
        db = full / "lab.duckdb"
        if command == "load":
            big = gunzip_to(FIXTURES / "reference-runs" / "inputs" / "locomo-conv-0.jsonl.gz", tmp_path)
            args = ["load", str(big)]
        elif command == "grep":
            args = ["grep", "the"]
        else:
            spec = tmp_path / "spec.yaml"
            spec.write_text(_SWEEP_SPEC.format(transcript=TRANSCRIPT))
            args = ["sweep", str(spec)]
    else:
        setup = f"{_tmpfs(full, '8k')} && (dd if=/dev/zero of={full / 'ballast'} bs=1k 2>/dev/null; true)"
        db = copy_store(filled, tmp_path / "store")
        args = ["report", "-o", str(full / "r.html")] if command == "report" else ["export", filled[1], "-o", str(full / "x.db")]
    result = in_mount_namespace(setup, lab_command(*args, "--db", str(db)), timeout=120)
    assert_one_line_error(result, "disk full")


_SWEEP_SPEC = """
name: full-disk
conversations:
  - path: {transcript}
token_budget: 2000
summarizer: {{name: offline}}
space:
  contextThreshold: [0.5, 0.6, 0.7, 0.75, 0.8, 0.9]
  freshTailCount: [4, 8, 16, 32]
search: {{method: grid}}
objectives:
  - {{metric: mean_sent_tokens, direction: minimize}}
executor: serial
"""


def test_busy_store_says_who_holds_it(tmp_path: Path, filled: tuple[Path, str]) -> None:
    db = copy_store(filled, tmp_path)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); print('held', flush=True); time.sleep(60)", str(db)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        result = run_lab("load", str(TRANSCRIPT), "--db", str(db), LCM_LAB_LOCK_TIMEOUT="1")
        line = assert_one_line_error(result, "in use by", f"PID {holder.pid}")
        assert "waiting" not in line
    finally:
        holder.kill()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()


def test_ctrl_c_during_load_exits_130_with_a_message(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    source = gunzip_to(FIXTURES / "reference-runs" / "inputs" / "locomo-conv-0.jsonl.gz", tmp_path)
    for i in range(200):
        os.link(source, corpus / f"s{i:03}.jsonl")
    db = tmp_path / "lab.duckdb"
    child = subprocess.Popen(lab_command("load", str(corpus), "--db", str(db)), env=child_env(),
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not db.exists() and time.monotonic() < deadline and child.poll() is None:
        time.sleep(0.01)
    time.sleep(1.0)
    child.send_signal(2)
    _, err = child.communicate(timeout=60)
    assert child.returncode == 130, err[-2000:]
    assert "Traceback" not in err and "interrupted" in err
    assert run_lab("ledger", "--db", str(db)).returncode == 0  # the store opens afterwards


def test_permission_denied(tmp_path: Path, filled: tuple[Path, str]) -> None:
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("runs the lab as another user (needs root and setpriv)")
    db = copy_store(filled, tmp_path / "private")
    db.chmod(0o600)
    tmp_path.chmod(0o755)
    result = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                             *lab_command("ledger", "--db", str(db))],
                            capture_output=True, text=True, timeout=60, env=child_env(HOME=str(tmp_path)))
    assert_one_line_error(result, "permission denied")


def test_malformed_api_base(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for bad in ("not a url", "http//localhost:1", "localhost:8000", "http://", "ftp://host/v1", "http://h:99999"):
        with pytest.raises(SystemExit) as info:  # argparse's own exit, before anything runs
            main(["replay", str(TRANSCRIPT), "--token-budget", "2000", "--summarizer", "litellm", "--model", "openai/x",
                  "--api-base", bad, "--db", str(tmp_path / "lab.duckdb")])
        err = capsys.readouterr().err.strip()
        assert info.value.code == 2 and "--api-base" in err and len(err.splitlines()) == 1, (bad, err)
    assert not (tmp_path / "lab.duckdb").exists()


def test_export_to_a_dangling_symlink(tmp_path: Path, filled: tuple[Path, str], capsys: pytest.CaptureFixture[str]) -> None:
    link = tmp_path / "out.db"
    link.symlink_to(tmp_path / "elsewhere" / "target.db")
    assert main(["export", filled[1], "-o", str(link), "--db", str(copy_store(filled, tmp_path / "s"))]) == 2
    assert "symbolic link" in capsys.readouterr().err
    assert not (tmp_path / "elsewhere").exists() and link.is_symlink()


def test_a_failed_report_write_leaves_no_partial_file(tmp_path: Path, filled: tuple[Path, str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    from lcm_lab.io import atomic

    target = tmp_path / "r.html"
    target.write_text("the previous report")
    real_fsync = os.fsync

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic.os, "fsync", full)
    assert main(["report", "-o", str(target), "--db", str(copy_store(filled, tmp_path / "s"))]) == 2
    monkeypatch.setattr(atomic.os, "fsync", real_fsync)
    assert target.read_text() == "the previous report"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.html", "s"]


def test_doctor_on_a_column_of_the_wrong_type(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import sqlite3

    db = gunzip_to(FIXTURES / "lcm-db-versions" / "lcm-v0.15.3.db.gz", tmp_path)
    con = sqlite3.connect(db)
    con.execute("UPDATE summaries SET token_count = 'lots'")
    con.commit()
    con.close()
    before = sha256(db)
    assert main(["doctor", str(db)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "summaries.token_count" in err and "wrong type" in err and "'lots'" in err
    assert sha256(db) == before


def test_report_on_a_dag_cycle(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import dataclasses

    from lcm_lab.engine.replay.driver import replay as run_replay
    from lcm_lab.engine.types import Summary
    from lcm_lab.errors import DagCycleError
    from lcm_lab.io.transcripts import read_transcript
    from lcm_lab.report import write_report
    from lcm_lab.store import LabStore
    from lcm_lab.store.replays import save_replay
    from lcm_lab.summarizers import get_summarizer

    conversation = read_transcript(TRANSCRIPT).conversations[0].conversation
    replay = run_replay(conversation, None, get_summarizer("stub-v1"), token_budget=2000)
    a = Summary("sum_a", "condensed", 1, "a", 10, source_summary_ids=("sum_b",))
    b = Summary("sum_b", "condensed", 1, "b", 10, source_summary_ids=("sum_a",))
    looped = dataclasses.replace(replay, summaries=(a, b))
    with pytest.raises(DagCycleError):
        write_report(looped, tmp_path / "r.html")
    db = tmp_path / "lab.duckdb"
    with LabStore(db) as store:
        run_id = save_replay(store, looped)
    assert main(["report", "--run", run_id, "-o", str(tmp_path / "r.html"), "--db", str(db)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "cycle through sum_" in err
    assert not (tmp_path / "r.html").exists()
