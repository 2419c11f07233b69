"""``export-study`` killed part-way (SIGTERM, or SIGKILL) never leaves a study with some of its
trials that passes for a whole one: a new SQLite storage appears whole or not at all, in an
existing storage SIGTERM deletes the study begun, and a SIGKILL there leaves a study marked
unfinished, which the next export refuses in one line naming ``--replace``. Before, a SIGTERM left
a study with 0 or fewer than all its trials and the next ``export-study`` refused ("already holds
a study"), and after a SIGKILL it took the study for a finished one."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from faults import child_env
from test_sweep import small_spec

from lcm_lab.store import LabStore
from lcm_lab.sweeps import sweep, sweep_study

pytestmark = pytest.mark.slow  # real lab processes, killed

# ``lcm-lab ARGS`` that waits (for the kill) once the named call has returned COUNT times: an
# Optuna storage method (the study created, a trial written) or ``optuna.load_study`` (after the
# new file was linked into place).
HOLD = """
import sys, time
import optuna
from optuna.storages import RDBStorage
name, count = sys.argv[1], int(sys.argv[2])
owner = optuna if name == "load_study" else RDBStorage
real, calls = getattr(owner, name), []
def held(*args, **kwargs):
    result = real(*args, **kwargs)
    calls.append(name)
    if len(calls) == count:
        print("reached", flush=True)
        time.sleep(120)
    return result
setattr(owner, name, held)
from lcm_lab.cli import main
sys.exit(main(sys.argv[3:]))
"""
TRIALS = 3  # small_spec: the plugin defaults and two configurations


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    db = tmp_path_factory.mktemp("swept") / "lab.duckdb"
    with LabStore(db) as store:
        sweep_id = sweep(small_spec(), store=store, progress=False).sweep_id
    return db, sweep_id


def _studies(path: Path) -> dict[str, int]:
    """Each study in the Optuna storage at ``path`` with its number of trials."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT s.study_name, count(t.trial_id) FROM studies s LEFT JOIN trials t USING (study_id) "
                           "GROUP BY s.study_id").fetchall()  # fmt: skip
    finally:
        con.close()
    return dict(rows)


def _hidden(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("."))


def _export(swept: tuple[Path, str], storage: Path, *options: str) -> subprocess.CompletedProcess[str]:
    db, sweep_id = swept
    return subprocess.run([sys.executable, "-m", "lcm_lab", "export-study", sweep_id, "--db", str(db),
                           "--storage", f"sqlite:///{storage}", *options], capture_output=True, text=True, timeout=120,
                          env=child_env())  # fmt: skip


def _marks(path: Path) -> dict[str, str | None]:
    """Each study in the Optuna storage at ``path`` with its ``lcm_lab_export`` mark (``None``: none)."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT s.study_name, a.value_json FROM studies s LEFT JOIN study_user_attributes a "
                           "ON a.study_id = s.study_id AND a.key = 'lcm_lab_export'").fetchall()  # fmt: skip
    finally:
        con.close()
    return {name: None if value is None else json.loads(value) for name, value in rows}


def _kill_when_held(swept: tuple[Path, str], storage: Path, call: str, count: int, how: signal.Signals) -> int:
    db, sweep_id = swept
    child = subprocess.Popen([sys.executable, "-c", HOLD, call, str(count), "export-study", sweep_id, "--db", str(db),
                              "--storage", f"sqlite:///{storage}"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env())  # fmt: skip
    assert child.stdout is not None
    reached = child.stdout.readline().strip()
    if reached != "reached":
        child.kill()
        raise AssertionError(child.communicate(timeout=30)[1][-3000:])
    child.send_signal(how)
    _out, err = child.communicate(timeout=60)
    if how == signal.SIGTERM:
        lines = [line for line in err.splitlines() if line.strip()]
        assert child.returncode == 143 and len(lines) == 1 and "Traceback" not in err, err[-3000:]
    else:
        assert child.returncode == -signal.SIGKILL
    return child.returncode


POINTS = [("create_new_study", 1), ("_create_new_trial", 1), ("_create_new_trial", TRIALS), ("load_study", 1)]


@pytest.mark.parametrize(("call", "count"), POINTS)
@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_a_new_storage_appears_whole_or_not_at_all(tmp_path: Path, swept: tuple[Path, str], call: str, count: int,
                                                   how: signal.Signals) -> None:
    storage = tmp_path / "es.db"
    _kill_when_held(swept, storage, call, count, how)
    if call == "load_study":  # the kill came after the file was in place: it is whole
        assert _studies(storage) == {swept[1]: TRIALS}
        return
    assert not storage.exists()
    if how == signal.SIGTERM:
        assert _hidden(tmp_path) == []  # the temporary beside it is gone too
    again = _export(swept, storage)
    assert again.returncode == 0, again.stderr[-3000:]
    assert _studies(storage) == {swept[1]: TRIALS}
    assert _hidden(tmp_path) == []  # what a SIGKILL left was removed by this write


@pytest.mark.parametrize(("call", "count"), POINTS[:3])
def test_sigterm_in_an_existing_storage_deletes_the_study_it_began(tmp_path: Path, swept: tuple[Path, str], call: str,
                                                                   count: int) -> None:
    storage = tmp_path / "es.db"
    with LabStore(swept[0], read_only=True) as store:
        sweep_study(swept[1], store, storage=f"sqlite:///{storage}", study_name="kept")
    _kill_when_held(swept, storage, call, count, signal.SIGTERM)
    assert _studies(storage) == {"kept": TRIALS}
    again = _export(swept, storage)
    assert again.returncode == 0, again.stderr[-3000:]
    assert _studies(storage) == {"kept": TRIALS, swept[1]: TRIALS}


@pytest.mark.parametrize(("call", "count"), POINTS[:3])
def test_sigkill_in_an_existing_storage_leaves_a_study_the_rerun_says_was_cut_short(tmp_path: Path, swept: tuple[Path, str],
                                                                                    call: str, count: int) -> None:  # fmt: skip
    """A SIGKILL gives the export no moment to undo: the study stays part-way (at the last point with
    every trial in, but not yet marked complete). Before: the rerun took it for a whole study
    ("already holds a study ... choose another study name")."""
    storage = tmp_path / "es.db"
    with LabStore(swept[0], read_only=True) as store:
        sweep_study(swept[1], store, storage=f"sqlite:///{storage}", study_name="kept")
    _kill_when_held(swept, storage, call, count, signal.SIGKILL)
    assert _studies(storage)["kept"] == TRIALS
    again = _export(swept, storage)
    lines = [line for line in again.stderr.splitlines() if line.strip()]
    assert again.returncode == 2 and len(lines) == 1 and "Traceback" not in again.stderr, again.stderr[-3000:]
    assert f"holds a study '{swept[1]}' whose export was cut short" in lines[0] and "--replace" in lines[0], lines[0]
    assert _marks(storage) == {"kept": "complete", swept[1]: _marks(storage)[swept[1]]}
    assert _marks(storage)[swept[1]] in (None, "writing")  # created, never marked complete (None: killed before the mark)
    replaced = _export(swept, storage, "--replace")
    assert replaced.returncode == 0, replaced.stderr[-3000:]
    assert _studies(storage) == {"kept": TRIALS, swept[1]: TRIALS}
    assert _marks(storage) == {"kept": "complete", swept[1]: "complete"}
