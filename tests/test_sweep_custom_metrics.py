"""A metric registered inside a function (a closure, as a notebook cell or a script would write
it) gives the same real values under worker processes as serially, or is refused when the sweep
starts; never ``None`` with status ``ok``."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from lcm_lab.metrics.base import Score
from lcm_lab.store import LabStore
from lcm_lab.sweeps import sweep, sweep_df
from lcm_lab.sweeps.metrics import METRICS, MetricTransportError, ScoredRun, custom_metrics, register_metric
from tests.test_sweep import small_spec


@pytest.fixture
def registry() -> Iterator[None]:
    before = dict(METRICS)
    yield
    METRICS.clear()
    METRICS.update(before)


def register_turn_metric(scale: float) -> None:
    """Register ``turns_scaled`` the way a user would: inside a function, over a local value."""

    @register_metric("turns_scaled")
    def turns_scaled(run: ScoredRun) -> list[Score]:
        return [Score(run.replay.run_id, "run", "", "turns_scaled", scale * len(run.replay.turns), {})]


def test_a_metric_registered_in_a_function_has_values_under_processes(registry: None, tmp_path: Path) -> None:
    register_turn_metric(0.5)
    assert set(custom_metrics()) == {"turns_scaled"}
    spec = small_spec(objectives=[{"metric": "turns_scaled", "direction": "minimize"}])
    serial = sweep(spec, store=LabStore(tmp_path / "a.duckdb"), progress=False)
    parallel = sweep({**spec, "executor": "processes", "workers": 2}, store=LabStore(tmp_path / "b.duckdb"), progress=False)
    assert parallel.executor == "processes" and parallel.runs_ok == serial.runs_ok == 3
    left = sweep_df(serial.sweep_id, LabStore(tmp_path / "a.duckdb")).sort_values("config_id")
    right = sweep_df(parallel.sweep_id, LabStore(tmp_path / "b.duckdb")).sort_values("config_id")
    assert right["turns_scaled"].notna().all() and (right["turns_scaled"] > 0).all()
    assert list(left["turns_scaled"]) == list(right["turns_scaled"])


def test_a_metric_that_cannot_travel_is_refused_when_the_sweep_starts(registry: None, tmp_path: Path) -> None:
    lock = threading.Lock()

    @register_metric("locked")
    def locked(run: ScoredRun) -> list[Score]:
        with lock:
            return []

    store = LabStore(tmp_path / "lab.duckdb")
    with pytest.raises(MetricTransportError, match=r"metric 'locked' cannot be sent to the sweep's worker processes .*executor='serial'"):
        sweep({**small_spec(), "executor": "processes", "workers": 2}, store=store, progress=False)
    assert store.fetch_all("SELECT count(*) FROM sweeps")[0][0] == 0  # refused before anything was recorded
    # in process it needs no travelling: it runs
    assert sweep(small_spec(), store=store, progress=False).runs_ok == 3
