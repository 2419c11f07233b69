"""Item 10 of issue 22: SIGTERM or Ctrl-C to a sweep on worker processes stops the workers at once,
records the sweep as ``interrupted`` (never left ``running``), and says so in one line, with no
worker tracebacks. A sweep killed with ``kill -9`` records nothing: readers see it ``interrupted``
because its process is gone, and the same spec resumes it."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import pytest
from faults import child_env, lab_command, run_lab

pytestmark = pytest.mark.slow  # a real sweep on two worker processes per case

SPEC = """
name: signals
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
executor: {executor}
workers: 2
"""


def _descendants(pid: int) -> set[int]:
    found: set[int] = set()
    todo = [pid]
    while todo:
        current = todo.pop()
        for task in Path(f"/proc/{current}/task").glob("*"):
            try:
                children = {int(c) for c in (task / "children").read_text().split()}
            except OSError:
                continue
            todo += list(children - found)
            found |= children
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _command_line(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:  # gone in between
        return b""


def _running_units(pid: int, executor: str) -> set[int]:
    """The sweep's descendants once its workers run units (empty until then): for processes the
    resource tracker and two workers, for Ray its services and two task workers."""
    found = _descendants(pid)
    if executor == "ray":
        tasks = [p for p in found if _command_line(p).startswith(b"ray::_task")]
        return found if len(tasks) >= 2 else set()
    return found if len(found) >= 3 else set()


def _status(db: Path) -> str:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return str(con.execute("SELECT status FROM sweeps").fetchall()[0][0])
    finally:
        con.close()


@pytest.mark.parametrize("executor", ["processes", "ray"])
@pytest.mark.parametrize("how", ["SIGTERM", "Ctrl-C"])
def test_a_signal_stops_the_workers_and_marks_the_sweep_interrupted(tmp_path: Path, how: str, executor: str) -> None:
    if executor == "ray":
        pytest.importorskip("ray", reason="ray is not installed (pip install 'lcm_lab[ray]')")
    spec = tmp_path / "sweep.yaml"
    spec.write_text(SPEC.replace("{executor}", executor))
    db = tmp_path / "lab.duckdb"
    # Ray keeps its login token under HOME and its sockets under RAY_TMPDIR, whose paths must stay
    # short (AF_UNIX): a private directory in the system's temporary directory, removed afterwards.
    ray_tmp = tempfile.mkdtemp(prefix="lcm-ray-")
    env = child_env(HOME=str(tmp_path), RAY_TMPDIR=ray_tmp, RAY_raylet_start_wait_time_s="120")
    child = subprocess.Popen(lab_command("sweep", str(spec), "--db", str(db), "--no-progress"), env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + (240 if executor == "ray" else 90)  # a loaded machine starts Ray slowly
        workers: set[int] = set()
        while time.monotonic() < deadline and child.poll() is None:
            workers = _running_units(child.pid, executor)
            if workers:
                break
            time.sleep(0.05)
        if child.poll() is not None:
            pytest.fail(f"the sweep ended before its workers ran (exit {child.returncode}): {child.communicate()[1][-3000:]}")
        assert workers, "the sweep never started its workers"
        time.sleep(2.0)  # the workers are replaying
        signalled = time.monotonic()
        if how == "SIGTERM":
            child.send_signal(signal.SIGTERM)
        else:
            os.killpg(child.pid, signal.SIGINT)  # what a terminal sends: the whole process group
        out, err = child.communicate(timeout=30)
        took = time.monotonic() - signalled
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
        shutil.rmtree(ray_tmp, ignore_errors=True)
    assert child.returncode == (143 if how == "SIGTERM" else 130), err[-3000:]
    assert took < 15, took
    assert "Traceback" not in err, err[-3000:]
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and ("terminated" if how == "SIGTERM" else "interrupted") in lines[0], err
    time.sleep(1.0)
    assert not [pid for pid in workers if _alive(pid)], "worker processes outlived the sweep"
    assert _status(db) == "interrupted"


def test_ray_shutdown_is_quiet_on_the_terminal_and_the_terminal_comes_back() -> None:
    """Ray's C++ core writes to descriptor 2 while it shuts down with tasks pending (seen 2 runs in
    10 on a loaded machine, never with the quieting); what the lab writes afterwards is shown."""
    code = (
        "import os, sys\n"
        "from lcm_lab.sweeps.ray_executor import _terminal_quiet\n"
        "print('before', file=sys.stderr, flush=True)\n"
        "with _terminal_quiet():\n"
        "    os.write(2, b'[E task_manager.cc] Failed to push error to driver\\n')\n"
        "    print('python, also hidden', file=sys.stderr, flush=True)\n"
        "print('after', file=sys.stderr, flush=True)\n"
        "os.close(2)\n"
        "with _terminal_quiet():\n"  # nothing to quiet: still no error
        "    pass\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=child_env(), timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == ["before", "after"]


def test_kill_9_of_a_sweep_leaves_no_worker_or_resource_tracker_behind(tmp_path: Path) -> None:
    """SIGKILL runs none of the sweep's clean-up: its two spawn workers (and with them
    multiprocessing's resource tracker) ran on for good. Now each worker dies with its parent and
    the tracker, its pipe's last writers gone, exits by itself."""
    spec = tmp_path / "sweep.yaml"
    spec.write_text(SPEC.replace("{executor}", "processes"))
    child = subprocess.Popen(lab_command("sweep", str(spec), "--db", str(tmp_path / "lab.duckdb"), "--no-progress"),
                             env=child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
    left: list[int] = []
    try:
        deadline = time.monotonic() + 90
        found: set[int] = set()
        while time.monotonic() < deadline and child.poll() is None and not found:
            found = _running_units(child.pid, "processes")
            time.sleep(0.05)
        assert found and child.poll() is None, "the sweep never started its workers"
        time.sleep(1.0)  # the workers are replaying
        found |= _descendants(child.pid)
        child.kill()
        child.wait(timeout=10)
        gone_by = time.monotonic() + 15
        while time.monotonic() < gone_by:
            left = [pid for pid in found if _alive(pid)]
            if not left:
                break
            time.sleep(0.1)
    finally:
        for pid in [p for p in left if _alive(p)]:  # never leave them to the machine, even on failure
            os.kill(pid, signal.SIGKILL)
    assert not left, f"{len(left)} of the sweep's {len(found)} child processes outlived its kill -9 by 15 s"
    assert len(found) >= 3  # the resource tracker and two workers were watched


KILLED = """
name: killed
conversations:
  - dataset: locomo/locomo10.json
    limit: 1
token_budget: 6000
base: {leafChunkTokens: 2000, leafTargetTokens: 400, condensedTargetTokens: 300}
summarizer: {name: offline}
space:
  freshTailCount: [4, 6, 8, 10, 12, 14, 16, 20, 24, 28, 32, 40]
search: {method: grid}
objectives:
  - {metric: peak_context_tokens, direction: minimize}
scoring: {qa: false}
executor: serial
"""


def _listed(db: Path, *, may_be_absent: bool = False) -> dict[str, object]:
    """The one sweep as ``lcm-lab sweeps --json`` lists it (a reader in another process);
    ``may_be_absent``: ``{}`` while the sweep has made its store but not yet its row."""
    listed = run_lab("sweeps", "--db", str(db), "--json")
    assert listed.returncode == 0, listed.stderr
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    if not rows and may_be_absent:
        return {}
    (row,) = rows
    return dict(row)


def test_kill_9_of_a_sweep_reads_interrupted_and_the_same_spec_resumes_it(tmp_path: Path) -> None:
    """While the sweep's process runs, another process lists it ``running``; after ``kill -9`` (no
    outcome recorded: the store still says ``running``) the listing and ``recommend`` say
    ``interrupted`` and why, without writing to the store; running the spec again finishes it."""
    spec = tmp_path / "sweep.yaml"
    spec.write_text(KILLED)
    db = tmp_path / "lab.duckdb"
    command = lab_command("sweep", str(spec), "--db", str(db), "--no-progress", "--json")
    child = subprocess.Popen(command, env=child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        row: dict[str, object] = {}
        while time.monotonic() < deadline and child.poll() is None:
            if db.exists() and (row := _listed(db, may_be_absent=True)) and int(str(row["runs_ok"])) >= 1:
                break
            time.sleep(0.2)
        assert child.poll() is None, f"the sweep ended before it could be killed: {child.communicate()[1][-3000:]}"
        assert (row["status"], row["status_note"]) == ("running", f"running in process {child.pid}"), row
        child.kill()
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
        child.communicate()
    assert child.returncode == -signal.SIGKILL
    stored = _status(db)
    assert stored == "running"  # what the killed process left in the store

    row = _listed(db)
    ended = "its process ended without finishing (killed or crashed); run the same spec again to resume"
    assert (row["status"], row["status_note"]) == ("interrupted", ended), row
    finished = int(str(row["runs_ok"]))
    assert 1 <= finished < 13
    rec = run_lab("recommend", "--db", str(db), str(row["sweep_id"]))
    assert rec.returncode == 0, rec.stderr
    assert f"WARNING: sweep {row['sweep_id']} has not finished (status interrupted: {ended}); " \
           f"the choice rests on the {finished} runs finished so far" in rec.stdout.splitlines(), rec.stdout
    assert _status(db) == "running"  # the readers wrote nothing

    again = run_lab("sweep", str(spec), "--db", str(db), "--no-progress", "--json", timeout=300)
    assert again.returncode == 0, again.stderr
    result = json.loads(again.stdout)
    assert (result["skipped"], result["runs_ok"], result["runs_failed"]) == (finished, 13 - finished, 0)
    row = _listed(db)
    assert (row["status"], row["status_note"], row["runs_ok"]) == ("done", None, 13)
