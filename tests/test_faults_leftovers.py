"""Temporary files a killed process leaves beside an output (``kill -9`` mid-export) are removed
by the next write beside that output; a live process's are never touched."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import FIXTURES
from faults import child_env, filled_store

from lcm_lab.cli import main
from lcm_lab.io.atomic import WRITING, remove_dead_temporaries, write_text_atomic

TRANSCRIPT = FIXTURES / "reference-runs" / "inputs" / "golden-session.jsonl.gz"

# ``lcm-lab ARGS``, but the export waits (for the kill) once its rows are in the temporary file.
HOLD = """
import sys, time
from lcm_lab.io import lcmdb_export
real = lcmdb_export._write
def held(*args, **kwargs):
    result = real(*args, **kwargs)
    print("written", flush=True)
    time.sleep(120)
    return result
lcmdb_export._write = held
from lcm_lab.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    return filled_store(tmp_path_factory.mktemp("filled"), TRANSCRIPT)


def _leftovers(directory: Path) -> list[str]:
    """Hidden files beside ``e.db``: the export's temporaries (and SQLite's journal beside them)."""
    return sorted(p.name for p in directory.iterdir() if p.name.startswith(".e.db."))


def test_an_export_killed_mid_write_leaves_a_temporary_the_next_export_removes(filled: tuple[Path, str],
                                                                                tmp_path: Path) -> None:
    db, run_id = filled
    out = tmp_path / "out"
    out.mkdir()
    child = subprocess.Popen([sys.executable, "-c", HOLD, "export", run_id, "--db", str(db), "-o", str(out / "e.db")],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env())
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "written", child.stderr.read() if child.stderr else ""
    left = _leftovers(out)
    assert left and all(name.startswith(f".e.db{WRITING}{child.pid}-") for name in left), left
    os.kill(child.pid, signal.SIGKILL)
    child.communicate(timeout=30)  # reaps it and closes the pipes
    assert child.returncode == -signal.SIGKILL
    assert _leftovers(out) == left and not (out / "e.db").exists()  # what the kill left

    assert main(["export", run_id, "--db", str(db), "-o", str(out / "e.db")]) == 0
    assert (out / "e.db").is_file() and _leftovers(out) == []


def test_a_live_process_temporary_is_kept(tmp_path: Path) -> None:
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        live = tmp_path / f".page.html{WRITING}{sleeper.pid}-abc.tmp"
        live.write_text("half")
        dead_pid = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                                  capture_output=True, text=True, check=True).stdout.strip()
        for _ in range(50):  # the pid is gone (and not reused yet)
            try:
                os.kill(int(dead_pid), 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
        dead = tmp_path / f".page.html{WRITING}{dead_pid}-def.tmp"
        dead.write_text("half")
        other = tmp_path / f".other.html{WRITING}{dead_pid}-ghi.tmp"  # another target's: not ours to judge
        other.write_text("half")
        write_text_atomic(tmp_path / "page.html", "<p>whole</p>")
        assert live.exists() and not dead.exists() and other.exists()
        assert remove_dead_temporaries(tmp_path / "page.html") == []
    finally:
        sleeper.kill()
        sleeper.wait()
