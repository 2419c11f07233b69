"""SIGTERM or Ctrl-C at any moment of a command ends it with one line and status 143 or 130.

A signal that landed while DuckDB imported pandas on its first query was swallowed: DuckDB took
the failed import for "pandas is not installed", and the command ran to its end and exited 0 with
no word (``lcm_lab.io.interrupts``). The moments are made exact here: the child sends itself the
signal when a given module is first imported (before the CLI's parser is built, while DuckDB
itself is imported, while DuckDB imports pandas)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES
from faults import child_env, filled_store, run_lab

from lcm_lab.io import interrupts

TRANSCRIPT = FIXTURES / "reference-runs" / "inputs" / "golden-session.jsonl.gz"

# argv: marker file, module, signal name, then `python -m lcm_lab`'s arguments. The marker is
# written when the signal is sent, so a test knows the moment was reached.
SIGNAL_ON_IMPORT = """
import os, signal, sys
marker, module, signum = sys.argv[1], sys.argv[2], getattr(signal, sys.argv[3])

class SignalOnImport:
    fired = False

    def find_spec(self, name, path=None, target=None):
        if name == module and not SignalOnImport.fired:
            SignalOnImport.fired = True
            open(marker, "w").close()
            os.kill(os.getpid(), signum)
        return None

sys.meta_path.insert(0, SignalOnImport())
import runpy
sys.argv = ["lcm_lab", *sys.argv[4:]]
runpy.run_module("lcm_lab", run_name="__main__", alter_sys=True)
"""


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return filled_store(tmp_path_factory.mktemp("signals"), TRANSCRIPT)[0]


def _signalled(tmp_path: Path, module: str, signal: str, *args: str) -> subprocess.CompletedProcess[str]:
    marker = tmp_path / f"sent-{module}-{signal}"
    done = subprocess.run([sys.executable, "-c", SIGNAL_ON_IMPORT, str(marker), module, signal, *args],
                          capture_output=True, text=True, timeout=120, env=child_env())
    assert marker.exists(), f"{module} was not imported: {done.stderr[-2000:]}"
    return done


MOMENTS = [
    ("load", "pandas", "SIGTERM"),  # DuckDB's first query imports it: the signal was swallowed, exit 0
    ("ledger", "pandas", "SIGINT"),
    pytest.param("load", "pandas", "SIGINT", marks=pytest.mark.slow),
    pytest.param("ledger", "pandas", "SIGTERM", marks=pytest.mark.slow),
    pytest.param("load", "duckdb", "SIGTERM", marks=pytest.mark.slow),  # its C module initialising: held back
    pytest.param("ledger", "duckdb", "SIGINT", marks=pytest.mark.slow),
    pytest.param("load", "lcm_lab.commands.load", "SIGTERM", marks=pytest.mark.slow),  # building the parser
    pytest.param("ledger", "lcm_lab.cli", "SIGINT", marks=pytest.mark.slow),  # before the CLI module loads
]  # fmt: skip


@pytest.mark.parametrize(("command", "module", "signal"), MOMENTS)
def test_a_signal_at_a_fixed_moment_ends_the_command_in_one_line(tmp_path: Path, store: Path, command: str,
                                                                   module: str, signal: str) -> None:
    args = [command, str(TRANSCRIPT)] if command == "load" else [command]
    done = _signalled(tmp_path, module, signal, *args, "--db", str(store))
    expected = (143, "terminated (SIGTERM)") if signal == "SIGTERM" else (130, "interrupted")
    assert done.returncode == expected[0], done.stderr[-3000:]
    prefix = "lcm-lab" if module.startswith("lcm_lab.") else f"lcm-lab {command}"  # before the command is parsed
    kept = ("what was committed before is kept, the rest was rolled back", "what was committed is kept")  # rolled back or not
    assert done.stderr.strip().splitlines() in ([f"{prefix}: {expected[1]}; {said}"] for said in kept)
    assert run_lab("ledger", "--db", str(store)).returncode == 0  # the store opens afterwards


def test_a_ctrl_c_inside_a_finaliser_is_raised_again_not_printed(capsys: pytest.CaptureFixture[str]) -> None:
    import gc
    import os
    import signal

    class SignalsWhenCollected:
        def __del__(self) -> None:
            os.kill(os.getpid(), signal.SIGINT)  # the handler runs here, where it cannot raise

    before = signal.getsignal(signal.SIGINT)
    with interrupts.handled():
        since = interrupts.mark()
        SignalsWhenCollected()
        gc.collect()
        with pytest.raises(KeyboardInterrupt):
            interrupts.raise_if_swallowed(since)
    assert "Exception ignored" not in capsys.readouterr().err
    assert signal.getsignal(signal.SIGINT) is before  # put back


def test_a_handled_ctrl_c_that_passed_through_c_code_keeps_the_exit_status(tmp_path: Path) -> None:
    # CPython marks a KeyboardInterrupt that left PyRun_* as unhandled, and `python -m` then ends
    # the process by SIGINT (status -2) whatever it exits with (seen in 1 of 16 Ctrl-Cs of a load).
    (tmp_path / "ctrl_c_probe.py").write_text(
        "import ctypes, sys\nfrom lcm_lab.io import interrupts\n"
        "ctypes.pythonapi.PyRun_SimpleString(b'raise KeyboardInterrupt')  # prints its traceback\n"
        "if sys.argv[1] == 'forget':\n    interrupts.forget_unhandled_ctrl_c()\nsys.exit(130)\n")
    env = child_env()
    env["PYTHONPATH"] = f"{tmp_path}:{env['PYTHONPATH']}"
    ended = {how: subprocess.run([sys.executable, "-m", "ctrl_c_probe", how], capture_output=True, timeout=60,
                                 env=env).returncode for how in ("keep", "forget")}  # fmt: skip
    assert ended == {"keep": -2, "forget": 130}
