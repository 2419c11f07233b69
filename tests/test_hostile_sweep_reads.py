"""Commands that read sweeps and scores, on what a hostile tester left them: a sweep with no
finished run (stopped before any ended, or every run failed) and a misspelt ``drift --metric``.
Each is one line, exit 2, from the real CLI in a child process (tests/faults.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES
from faults import assert_one_line_error, run_lab
from test_sweep import small_spec

from lcm_lab.store import LabStore
from lcm_lab.sweeps import sweep

TRANSCRIPT = FIXTURES / "reference-runs" / "inputs" / "golden-session.jsonl.gz"


def _stopped_sweep(db: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A sweep interrupted (Ctrl-C) after its row and baseline exist, before any run ended."""
    from lcm_lab.sweeps import run

    def interrupted(*_: Any) -> None:
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(run, "grid_points", interrupted)
        with LabStore(db) as store, pytest.raises(KeyboardInterrupt):
            sweep(small_spec(), store=store, progress=False)
    with LabStore(db) as store:
        (sweep_id, status), = store.fetch_all("SELECT sweep_id, status FROM sweeps")
        assert (status, store.fetch_all("SELECT count(*) FROM sweep_runs")[0][0]) == ("interrupted", 0)
    return str(sweep_id)


def test_recommend_and_report_on_a_sweep_with_no_runs_say_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "lab.duckdb"
    sweep_id = _stopped_sweep(db, monkeypatch)
    needles = (f"sweep {sweep_id} has no finished runs (status interrupted)", "running the same spec again resumes it")
    assert_one_line_error(run_lab("recommend", "--db", str(db), sweep_id), "lcm-lab recommend: ", *needles)
    report = tmp_path / "r.html"
    assert_one_line_error(run_lab("report", "--db", str(db), "--sweep", sweep_id, "-o", str(report)), "lcm-lab report: ",
                          *needles)
    assert not report.exists()


def test_recommend_on_a_sweep_whose_runs_all_failed_says_so(tmp_path: Path) -> None:
    db = tmp_path / "lab.duckdb"
    spec = small_spec()
    with LabStore(db) as store:
        conversation = "locomo10.json#0"
        result = sweep(spec, store=store, progress=False, fault=conversation)
        assert (result.runs_ok, result.runs_failed) == (0, 3)
    assert_one_line_error(run_lab("recommend", "--db", str(db), result.sweep_id), "lcm-lab recommend: ",
                          f"sweep {result.sweep_id} has no finished runs (status done): its 3 runs all failed",
                          "--retry-failed")


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A store with one replay and its headline scores."""
    from lcm_lab.cli import main
    from lcm_lab.store.replays import latest_run_id

    db = tmp_path_factory.mktemp("drift") / "lab.duckdb"
    assert main(["replay", str(TRANSCRIPT), "--token-budget", "2000", "--json", "--db", str(db)]) == 0  # --json scores it
    with LabStore(db) as store:
        run_id = latest_run_id(store)
    assert run_id
    return db, run_id


def test_drift_with_a_misspelt_metric_names_it_and_the_known_ones(filled: tuple[Path, str]) -> None:
    db, run_id = filled
    for extra in ((), ("--json",)):
        result = run_lab("drift", "--db", str(db), "--previous", run_id, "--run", run_id, "--metric", "fact_retenton", *extra)
        assert_one_line_error(result, "lcm-lab drift: --metric 'fact_retenton':", f"run {run_id} has no run-scope headline",
                              "did you mean fact_retention?", "its headlines with an interval: ")
        assert result.stdout == ""


def test_drift_with_a_known_metric_checks_it(filled: tuple[Path, str]) -> None:
    db, run_id = filled
    result = run_lab("drift", "--db", str(db), "--previous", run_id, "--run", run_id, "--metric", "fact_retention",
                     "--metric", "peak_context_tokens", "--json")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    # a headline without an interval, named on purpose, is reported as such (it was dropped silently)
    assert [('"fact_retention"' in lines[0]), ('"no-interval"' in lines[1])] == [True, True], lines
