"""A killed lab process leaves its scratch (a sweep's pickled inputs, row spools, a decompressed
lcm.db) in the temporary directory; the next lab command (or new scratch) removes it, and only
the scratch of processes that have ended (:mod:`lcm_lab.io.scratch`)."""

from __future__ import annotations

import gzip
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import reference_db
from faults import child_env, lab_command, run_lab

from lcm_lab.io.processes import this_process
from lcm_lab.io.scratch import remove_orphans, scratch_directory, scratch_file


def _ended_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_only_the_scratch_of_ended_processes_is_removed(tmp_path: Path) -> None:
    me = this_process()
    dead = _ended_pid()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        mine = tmp_path / f"lcm-lab-sweep-{me.pid}.{me.started}-abc123.pickle"
        reused = tmp_path / f"lcm-lab-load-{me.pid}.{(me.started or 0) + 1}-abc123"  # my pid, another start time
        live = tmp_path / f"lcm-lab-load-{sleeper.pid}.x-abc123"  # start time unknown: the pid decides
        gone_file = tmp_path / f"lcm-lab-sweep-{dead}.123-q_9z.pickle"
        gone_dir = tmp_path / f"lcm-lab-sqlite-{dead}.123-k2"
        other_form = tmp_path / f"lcm-lab-notes-{dead}.txt"
        link = tmp_path / f"lcm-lab-split-{dead}.123-ln"
        target = tmp_path / "kept"
        mine.write_bytes(b"x")
        reused.mkdir()
        live.mkdir()
        gone_file.write_bytes(b"x")
        gone_dir.mkdir()
        (gone_dir / "snapshot.db").write_bytes(b"y" * 1000)
        other_form.write_text("not scratch")
        target.mkdir()
        (target / "inside").write_text("precious")
        link.symlink_to(target, target_is_directory=True)

        removed = remove_orphans(tmp_path)

        assert sorted(removed) == sorted([reused, gone_file, gone_dir])
        assert mine.exists() and live.exists() and other_form.exists() and link.is_symlink()
        assert (target / "inside").read_text() == "precious"
    finally:
        sleeper.kill()
        sleeper.wait()


def test_scratch_is_named_for_its_process_and_removed_after_use(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    orphan = tmp_path / f"lcm-lab-load-{_ended_pid()}.7-abc"
    orphan.mkdir()
    with scratch_directory("load") as place:
        assert place.parent == tmp_path and place.is_dir() and not orphan.exists()
        (place / "rows.arrow").write_bytes(b"z")
    assert not place.exists()
    handle, path = scratch_file("sweep", ".pickle")
    os.close(handle)
    assert path.name.startswith(f"lcm-lab-sweep-{os.getpid()}.") and path.suffix == ".pickle"
    assert remove_orphans(tmp_path) == [] and path.exists()
    with pytest.raises(ValueError, match="lower-case letters"):
        scratch_file("../x", "")


SPEC = """
name: scratch
conversations:
  - dataset: locomo/locomo10.json
    limit: 2
token_budget: 4000
summarizer: {name: offline}
space:
  contextThreshold: [0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85]
  freshTailCount: [4, 8, 16, 24, 32]
search: {method: grid}
objectives:
  - {metric: mean_sent_tokens, direction: minimize}
executor: processes
workers: 2
"""


@pytest.mark.slow
def test_a_kill_9_sweeps_inputs_are_removed_by_the_next_lab_command(tmp_path: Path) -> None:
    """A real sweep on two worker processes, killed with SIGKILL once its workers run, leaves its
    pickled inputs; the next lab command removes them, even one that makes no scratch itself
    (``ledger``); a load of a gzipped lcm.db, which decompresses it there, leaves nothing."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    spec = tmp_path / "sweep.yaml"
    spec.write_text(SPEC)
    child = subprocess.Popen(lab_command("sweep", str(spec), "--db", str(tmp_path / "lab.duckdb"), "--no-progress"),
                             env=child_env(TMPDIR=str(scratch)), stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and child.poll() is None and not list(scratch.glob("lcm-lab-sweep-*")):
            time.sleep(0.05)
        time.sleep(1.0)  # the workers start and read it
        assert child.poll() is None, "the sweep ended before it could be killed"
        os.killpg(child.pid, signal.SIGKILL)
        child.wait(timeout=10)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
    (left,) = scratch.glob("lcm-lab-sweep-*.pickle")
    assert left.name.startswith(f"lcm-lab-sweep-{child.pid}.")

    ledger = run_lab("ledger", "--db", str(tmp_path / "lab.duckdb"), TMPDIR=str(scratch))
    assert ledger.returncode == 0, ledger.stderr
    assert list(scratch.iterdir()) == []

    packed = tmp_path / "run.db.gz"
    with reference_db("golden__C1-defaults-32k").open("rb") as raw, gzip.open(packed, "wb") as out:
        shutil.copyfileobj(raw, out)
    load = run_lab("load", str(packed), "--db", str(tmp_path / "other.duckdb"), TMPDIR=str(scratch))
    assert load.returncode == 0, load.stderr
    assert list(scratch.iterdir()) == []
