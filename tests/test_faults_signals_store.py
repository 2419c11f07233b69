"""SIGTERM or Ctrl-C while the store commits a replay, or while it closes after the command, ends
the command with one line and 143 or 130, the line true, and the store whole.

Two faults, both reproduced by sending the signal a few ms after the store's log appeared:

* A signal during the replay's ``COMMIT`` was raised while DuckDB's worker thread still finished
  the commit: the CLI said "the rest was rolled back" of a run that was saved, and the process
  aborted at exit (SIGABRT, "terminate called without an active exception") when that thread,
  freeing the frame the rows were inserted from, asked the exiting interpreter for the GIL.
* The store's last checkpoint (closing its connection) ran in the interpreter's exit, after the
  CLI had put the default handlers back: a signal there killed the process with the log left.

The moments are made exact here: the child sends itself the signal when DuckDB frees the first
inserted frame (inside the commit, on DuckDB's thread), or when the store's connection is closed
or collected (``LCM_LAB_IDLE_SECONDS`` far away, so only the end of the command closes it).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES
from faults import child_env, copy_store, filled_store, run_lab

TRANSCRIPT = FIXTURES / "reference-runs" / "inputs" / "golden-session.jsonl.gz"

# argv: marker file, moment ("commit" or "close"), signal name, then lcm-lab's arguments.
SIGNAL_AT = """
import os, signal, sys, weakref
marker, moment, signum = sys.argv[1], sys.argv[2], getattr(signal, sys.argv[3])
fired = []

def fire(*_):
    if not fired:
        fired.append(True)
        open(marker, "w").close()
        os.kill(os.getpid(), signum)

from lcm_lab.store import core, opening
if moment == "commit":
    def register(self, name, frame):  # DuckDB holds the frame until the commit that drops its view
        weakref.finalize(frame, fire)
        with self._store.hold() as raw:
            return raw.register(name, frame)
    core._Connection.register = register
else:
    class Closing:  # the store's connection, sending the signal when it is closed or collected
        def __init__(self, raw):
            self.__dict__["raw"] = raw
        def __getattr__(self, name):
            return getattr(self.raw, name)
        def close(self):
            fire()
            self.raw.close()
        def __del__(self):
            fire()
    real_open = opening.open_existing
    opening.open_existing = lambda *a, **k: Closing(real_open(*a, **k))
from lcm_lab.cli import main
sys.argv = ["lcm-lab", *sys.argv[4:]]
sys.exit(main())  # as lcm-lab runs it: the whole process
"""


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    return filled_store(tmp_path_factory.mktemp("store-signals"), TRANSCRIPT)


def _runs(store: Path) -> int:
    from lcm_lab.store import LabStore

    with LabStore(store, read_only=True) as opened:
        return int(opened.fetch_all("SELECT count(*) FROM replays")[0][0])


CASES = [
    ("commit", "SIGTERM"),
    ("close", "SIGTERM"),
    pytest.param("commit", "SIGINT", marks=pytest.mark.slow),
    pytest.param("close", "SIGINT", marks=pytest.mark.slow),
]


@pytest.mark.parametrize(("moment", "signal"), CASES)
def test_a_signal_while_the_store_commits_or_closes_is_one_true_line(tmp_path: Path, filled: tuple[Path, str],
                                                                      moment: str, signal: str) -> None:
    store = copy_store(filled, tmp_path / "store")
    before = _runs(store)
    marker = tmp_path / "sent"
    args = ["replay", str(TRANSCRIPT), "--token-budget", "3000", "--summarizer", "stub-v1", "--db", str(store)]
    done = subprocess.run([sys.executable, "-c", SIGNAL_AT, str(marker), moment, signal, *args],
                          capture_output=True, text=True, timeout=180, env=child_env(LCM_LAB_IDLE_SECONDS="600"))
    assert marker.exists(), f"the {moment} moment was not reached: {done.stderr[-2000:]}"
    status, what = (143, "terminated (SIGTERM)") if signal == "SIGTERM" else (130, "interrupted")
    assert done.returncode == status, done.stderr[-3000:]
    # The commit went through before the signal was raised: nothing was rolled back, and the line says so.
    prefix = "lcm-lab replay" if moment == "commit" else "lcm-lab"  # the command itself was over
    assert done.stderr.strip().splitlines() == [f"{prefix}: {what}; what was committed is kept"]
    if moment == "close":
        assert done.stdout.startswith("run_")  # the command had said its result
    assert not Path(f"{store}.wal").exists()  # closed cleanly: its last checkpoint ran
    assert _runs(store) == before + 1  # the run is in the store, whole
    assert run_lab("ledger", "--db", str(store)).returncode == 0
