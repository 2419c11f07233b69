"""A sweep's status as readers see it (``lcm_lab.store.sweeps.live_status``): a ``running`` sweep
whose recorded process is gone (killed, a zombie, its pid reused, started before the last boot)
reads ``interrupted``; one whose process runs, or ran on another host, stays ``running``. The
processes are real (a child that records itself, then is killed with SIGKILL); the real
``kill -9`` of a real sweep is in ``tests/test_faults_sweep_signals.py`` (slow)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from faults import child_env

from lcm_lab.io.processes import ProcessIdentity, this_process
from lcm_lab.store import LabStore
from lcm_lab.store.sweeps import ENDED, register_sweep, set_sweep_status, sweep_row, sweeps_df

OWNER = """
import json, sys, time
from lcm_lab.io.processes import this_process
print(json.dumps(this_process()), flush=True)
time.sleep(120)
"""


@pytest.fixture
def owner() -> Iterator[tuple[subprocess.Popen[str], ProcessIdentity]]:
    """Another live process and the identity it recorded of itself."""
    child = subprocess.Popen([sys.executable, "-c", OWNER], env=child_env(), stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        pid, started, boot, host = json.loads(child.stdout.readline())
        yield child, ProcessIdentity(pid, started, boot, host)
    finally:
        if child.poll() is None:
            child.kill()
        child.communicate(timeout=30)


def _stored(db: Path, identity: ProcessIdentity) -> None:
    with LabStore(db) as store:
        register_sweep(store, "sw_1", "owned", {"name": "owned"}, owner=identity)


def _read(db: Path) -> tuple[str, str | None]:
    """The status and its words, as a reader with a read-only store sees them (listing and row agree)."""
    with LabStore(db, read_only=True) as store:
        (listed,) = sweeps_df(store)[["status", "status_note"]].values.tolist()
        row = sweep_row(store, "sw_1")
    assert (row["status"], row["status_note"]) == tuple(listed)
    return str(listed[0]), listed[1]


def test_a_sweep_whose_process_runs_reads_running_and_after_kill_9_interrupted(
    tmp_path: Path, owner: tuple[subprocess.Popen[str], ProcessIdentity],
) -> None:
    child, identity = owner
    db = tmp_path / "lab.duckdb"
    _stored(db, identity)
    assert _read(db) == ("running", f"running in process {child.pid}")
    child.send_signal(signal.SIGKILL)
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # dead but not reaped: a zombie, whose pid answers kill(pid, 0)
    assert _read(db) == ("interrupted", ENDED)
    child.wait(timeout=30)
    assert _read(db) == ("interrupted", ENDED)
    with LabStore(db, read_only=True) as store:  # what is stored is untouched: readers decide, never write
        assert store.fetch_all("SELECT status FROM sweeps") == [("running",)]


@pytest.mark.parametrize(("change", "expected"), [
    ({"started": 1}, ("interrupted", ENDED)),  # the pid now belongs to a process that started at another time
    ({"boot": "00000000-0000-0000-0000-000000000000"}, ("interrupted", ENDED)),  # recorded before the last boot
    ({"host": "another-host"}, ("running", "recorded running by process {pid} on host another-host; "
                                           "this host cannot tell whether it still runs")),
])
def test_a_live_pid_is_the_sweeps_process_only_if_start_boot_and_host_match(
    tmp_path: Path, owner: tuple[subprocess.Popen[str], ProcessIdentity], change: dict[str, Any],
    expected: tuple[str, str],
) -> None:
    child, identity = owner
    if identity.started is None:
        pytest.skip("no /proc on this machine: start times and boot ids are unknown")
    db = tmp_path / "lab.duckdb"
    _stored(db, identity._replace(**change))
    assert _read(db) == (expected[0], expected[1].format(pid=child.pid))


def test_a_resumed_sweep_is_running_again_under_its_new_process(tmp_path: Path) -> None:
    db = tmp_path / "lab.duckdb"
    gone = ProcessIdentity(2**22 + 1, 5, None, this_process().host)  # above the kernel's largest pid: never alive
    _stored(db, gone)
    assert _read(db) == ("interrupted", ENDED)
    with LabStore(db) as store:
        set_sweep_status(store, "sw_1", "interrupted", {})
        assert _read_store(store) == ("interrupted", "stopped by Ctrl-C or SIGTERM; run the same spec again to resume")
        register_sweep(store, "sw_1", "owned", {"name": "changed"})  # this process resumes it
        assert _read_store(store) == ("running", f"running in process {this_process().pid}")
        assert sweep_row(store, "sw_1")["spec"] == {"name": "owned"}  # the spec is kept as it was


def test_a_running_sweep_recorded_before_owners_were_says_it_cannot_tell(tmp_path: Path) -> None:
    db = tmp_path / "lab.duckdb"
    _stored(db, this_process())
    with LabStore(db) as store:  # as a store migrated from before m013 holds it
        store.execute("UPDATE sweeps SET owner_pid = NULL, owner_started = NULL, owner_boot = NULL, owner_host = NULL")
    assert _read(db) == ("running", "recorded running by a lab that did not note its process; if none runs it, "
                                    "run the same spec again to resume")


def _read_store(store: LabStore) -> tuple[str, str | None]:
    row = sweep_row(store, "sw_1")
    return row["status"], row["status_note"]
