"""Helpers for the fault suite (tests/test_faults_*.py): run the CLI in a child process that can be
killed, hash files before and after, and run a command inside a private mount namespace (a small
tmpfs, a read-only bind mount) where the machine allows it."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# Child entry point: optionally die (os._exit) right after a named migration commits, then run
# ``lcm-lab ARGS``. ``die_after`` is the migration name, or "" for no hook.
CHILD = """
import os, sys
die_after = sys.argv[1]
if die_after:
    from lcm_lab.store import migrations
    real = migrations.discover
    def discover():
        found = []
        for m in real():
            found.append(m)
            if m.name == die_after:
                found.append(migrations.Migration("m999_die", lambda con: os._exit(9)))
        return found
    migrations.discover = discover
from lcm_lab.cli import main
sys.exit(main(sys.argv[2:]))
"""


def child_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(REPO), LITELLM_LOCAL_MODEL_COST_MAP="True", LCM_LAB_LOCK_TIMEOUT="5")
    env.update(extra)
    return env


def lab_command(*args: str, die_after: str = "") -> list[str]:
    return [sys.executable, "-c", CHILD, die_after, *args]


def run_lab(*args: str, die_after: str = "", timeout: float = 60, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(lab_command(*args, die_after=die_after), capture_output=True, text=True,
                          timeout=timeout, env=child_env(**env))


def filled_store(directory: Path, transcript: Path) -> tuple[Path, str]:
    """A store in ``directory`` with ``transcript`` loaded and one saved replay of it, checkpointed
    (a copy of the file alone holds everything); returns (store, run id)."""
    from lcm_lab.cli import main
    from lcm_lab.store import LabStore
    from lcm_lab.store.replays import latest_run_id

    db = directory / "lab.duckdb"
    assert main(["load", str(transcript), "--db", str(db)]) == 0
    assert main(["replay", str(transcript), "--token-budget", "2000", "--summarizer", "stub-v1", "--db", str(db)]) == 0
    with LabStore(db) as store:
        run_id = latest_run_id(store)
        store.execute("CHECKPOINT")
    assert run_id
    return db, run_id


def copy_store(filled: tuple[Path, str], directory: Path) -> Path:
    """A copy of the store of ``filled`` as ``directory/lab.duckdb``."""
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / "lab.duckdb"
    shutil.copyfile(filled[0], target)
    return target


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def tree_state(directory: Path) -> dict[str, str]:
    """sha256 of every file under ``directory`` (names relative to it)."""
    return {str(p.relative_to(directory)): sha256(p) for p in sorted(directory.rglob("*")) if p.is_file()}


def assert_one_line_error(result: subprocess.CompletedProcess[str], *needles: str) -> str:
    """Exit 2, no traceback, one line on stderr containing every needle; returns that line."""
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2, (result.returncode, result.stderr[-2000:])
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    assert len(lines) == 1, result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def can_mount() -> bool:
    """Whether this process may make a private mount namespace with tmpfs and bind mounts."""
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                            "mount -t tmpfs -o size=64k tmpfs /mnt 2>/dev/null || exit 3"],
                           capture_output=True)
    return probe.returncode == 0


def in_mount_namespace(setup: str, command: list[str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run ``command`` after the shell commands ``setup`` inside a private mount namespace."""
    quoted = " ".join(_quote(part) for part in command)
    return subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", f"{setup} && exec {quoted}"],
                          capture_output=True, text=True, timeout=timeout, env=child_env())


def _quote(text: str) -> str:
    import shlex

    return shlex.quote(text)
