"""A script that calls sweep(executor="processes") at top level, without a main guard: spawn
re-imports it in every worker. It must fail within seconds with an error naming the fix (it used
to hang the parent), keep what the sweep finished before, and the guarded script must resume."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_sweep import small_spec

from lcm_lab.errors import MainGuardError
from lcm_lab.store import LabStore
from lcm_lab.sweeps import sweep
from lcm_lab.sweeps.executors import WorkerDiedError, _broken_pool_error, refuse_while_bootstrapping

FIX = "put the sweep call under if __name__ == '__main__':"

SCRIPT = """
import json
import lcm_lab as lab
from lcm_lab.store import LabStore

SPEC = json.loads({spec!r})


def main():
    result = lab.sweep(SPEC, store=LabStore("lab.duckdb"), executor="processes", workers=2, progress=False)
    print(json.dumps(result._asdict()))


{call}
"""


def run_script(directory: Path, name: str, call: str, timeout: float = 180) -> tuple[subprocess.CompletedProcess[str], float]:
    script = directory / name
    script.write_text(SCRIPT.format(spec=json.dumps(small_spec()), call=call), encoding="utf-8")
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "TMPDIR": str(directory / "tmp")}
    started = time.monotonic()
    # The timeout is the test's own guard: the bug this tests was a hang.
    done = subprocess.run([sys.executable, name], cwd=directory, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    return done, time.monotonic() - started


def test_an_unguarded_script_fails_fast_naming_the_fix_and_the_guarded_one_resumes(tmp_path: Path) -> None:
    (tmp_path / "tmp").mkdir()
    # A sweep interrupted after two of its three units (a kill between a unit's replay and its row)
    with LabStore(tmp_path / "lab.duckdb") as store:
        first = sweep(small_spec(), store=store, progress=False)
        assert first.runs_ok == 3
        store.execute("DELETE FROM sweep_runs WHERE config_id = (SELECT max(config_id) FROM sweep_runs)")
        kept = store.fetch_all("SELECT config_id, conversation_key, created_at FROM sweep_runs ORDER BY config_id")
    assert len(kept) == 2

    unguarded, seconds = run_script(tmp_path, "unguarded.py", "main()")
    assert unguarded.returncode != 0
    assert FIX in unguarded.stderr
    assert "MainGuardError: sweep() was called while a worker process was re-importing your script" in unguarded.stderr
    assert "MainGuardError: the sweep's worker processes died before finishing any unit" in unguarded.stderr
    assert seconds < 60, f"the unguarded script took {seconds:.0f} s to fail"
    with LabStore(tmp_path / "lab.duckdb") as store:
        assert store.fetch_all("SELECT config_id, conversation_key, created_at FROM sweep_runs ORDER BY config_id") == kept
        assert store.fetch_all("SELECT status FROM sweeps")[0][0] == "failed"  # an error ended it (Ctrl-C or SIGTERM: interrupted)
    assert list((tmp_path / "tmp").iterdir()) == []  # the workers' input file is removed

    guarded, _ = run_script(tmp_path, "guarded.py", 'if __name__ == "__main__":\n    main()')
    assert guarded.returncode == 0, guarded.stderr
    result = json.loads(guarded.stdout.strip().splitlines()[-1])
    assert (result["sweep_id"], result["executor"], result["skipped"], result["runs_ok"]) == (first.sweep_id, "processes", 2, 1)
    with LabStore(tmp_path / "lab.duckdb") as store:
        assert store.fetch_all("SELECT count(*), count(*) FILTER (WHERE status = 'ok') FROM sweep_runs")[0] == (3, 3)
        assert store.fetch_all("SELECT status FROM sweeps")[0][0] == "done"
    assert list((tmp_path / "tmp").iterdir()) == []


def test_a_broken_pool_names_the_main_guard_only_before_any_result(monkeypatch: pytest.MonkeyPatch) -> None:
    refuse_while_bootstrapping()  # the main process: nothing to refuse
    monkeypatch.setattr(sys.modules["__main__"], "__file__", "my_sweep.py", raising=False)
    early = _broken_pool_error(0)
    assert isinstance(early, MainGuardError) and FIX in str(early) and "my_sweep.py" in str(early)
    late = _broken_pool_error(3)
    assert isinstance(late, WorkerDiedError) and "run the same sweep again to resume" in str(late)
    monkeypatch.delattr(sys.modules["__main__"], "__file__")  # a notebook: spawn re-imports nothing
    assert isinstance(_broken_pool_error(0), WorkerDiedError)
