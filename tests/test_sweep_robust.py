"""Sweeps under stress: model calls sent once, SIGKILL and resume, the store shared between
processes, and the Ray executor."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from fakeserver import FakeOpenAIServer
from test_sweep import lcm_lab, small_spec

from lcm_lab.store import LabStore, StoreBusyError
from lcm_lab.sweeps import sweep, sweep_df

API_KEY = "sk-test-sweep-0123456789"


@pytest.fixture
def fake() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


def llm_spec(server: FakeOpenAIServer, **changes: Any) -> dict[str, Any]:
    spec = small_spec(
        summarizer={"name": "litellm", "model": "openai/fake-summarizer", "api_base": server.base_url, "concurrency": 4},
        space={"freshTailCount": [8, 16, 32]},
        executor="threads",
        workers=4,
    )
    spec.update(changes)
    return spec


def bodies(server: FakeOpenAIServer) -> Counter[str]:
    return Counter(json.dumps(r.body, sort_keys=True) for r in server.completion_requests)


def test_a_request_is_sent_once_per_sweep(fake: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    fake.latency = 0.02
    store = LabStore(tmp_path / "lab.duckdb")
    result = sweep(llm_spec(fake), store=store, progress=False)
    assert result.runs_ok == 4 and result.runs_failed == 0
    sent = bodies(fake)
    assert max(sent.values()) == 1, "a request reached the model twice"
    assert result.calls_made == sum(sent.values())
    assert result.calls_made + result.cache_hits == result.naive_calls
    assert result.calls_made < result.naive_calls  # configurations share identical chunks
    recorded = store.fetch_all("SELECT count(*) FILTER (WHERE NOT cache_hit), count(*) FILTER (WHERE cache_hit) FROM llm_calls")[0]
    assert tuple(recorded) == (result.calls_made, result.cache_hits)
    # the same sweep again: nothing to run; a new configuration reuses every shared call
    before = len(fake.completion_requests)
    assert sweep(llm_spec(fake), store=store, progress=False).runs_ok == 0
    assert len(fake.completion_requests) == before


def test_sigkill_mid_sweep_then_resume(fake: FakeOpenAIServer, tmp_path: Path) -> None:
    fake.latency = 0.15
    tails = [4, 8, 12, 16, 24, 32, 48, 64]
    spec_file = tmp_path / "sweep.yaml"
    spec_file.write_text(yaml.safe_dump(llm_spec(fake, space={"freshTailCount": tails}, workers=2)), encoding="utf-8")
    db = tmp_path / "lab.duckdb"
    env = {**os.environ, "OPENAI_API_KEY": API_KEY, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    command = [sys.executable, "-m", "lcm_lab.cli", "sweep", str(spec_file), "--db", str(db), "--json", "--no-progress"]
    first = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        finished = _wait_for_runs(db, first, at_least=1)
        os.kill(first.pid, signal.SIGKILL)
    finally:
        first.wait(timeout=60)
        first.stdout.close()  # type: ignore[union-attr]
        first.stderr.close()  # type: ignore[union-attr]
    assert first.returncode == -signal.SIGKILL, "the sweep finished before it could be killed"
    with LabStore(db) as store:
        before = {tuple(r[:2]): r[2] for r in store.fetch_all("SELECT config_id, conversation_key, created_at FROM sweep_runs")}
        recorded = {_canonical(json.loads(m)) for (m,) in
                    store.fetch_all("SELECT request_messages FROM llm_calls WHERE NOT cache_hit AND error_class IS NULL")}
    total = len(tails) + 1  # and the defaults
    assert finished <= len(before) < total
    sent_before = len(fake.completion_requests)

    second = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert second.returncode == 0, second.stderr
    result = json.loads(second.stdout)
    assert result["skipped"] == len(before) and result["runs_ok"] == total - len(before)
    with LabStore(db) as store:
        rows = store.fetch_all("SELECT config_id, conversation_key, created_at, status FROM sweep_runs")
        replays = store.fetch_all("SELECT count(*), count(DISTINCT run_id) FROM replays")[0]
        status = store.fetch_all("SELECT status FROM sweeps")[0][0]
    assert len(rows) == total and {r[3] for r in rows} == {"ok"} and status == "done"
    assert tuple(replays) == (total, total)  # no duplicate rows
    assert all(dict(((r[0], r[1]), r[2]) for r in rows)[key] == created for key, created in before.items())  # kept as they were
    # cached calls were reused: no request whose answer was recorded before the kill reached the
    # model again (only calls of units in flight since the last flush are sent twice)
    assert recorded and result["cache_hits"] > 0
    sent = [_canonical(r.body["messages"]) for r in fake.completion_requests]
    assert recorded <= set(sent[:sent_before])  # the ledger's record of a request matches what the server saw
    assert sent[sent_before:] and not recorded.intersection(sent[sent_before:]), "a recorded call was sent again after the resume"


def _canonical(messages: Any) -> str:
    return json.dumps(messages, sort_keys=True, ensure_ascii=False)


def _wait_for_runs(db: Path, process: subprocess.Popen[str], *, at_least: int, timeout: float = 300) -> int:
    """Poll the store (as another process would) until ``at_least`` units are recorded.

    A poll that finds the store busy gives up at once and tries again: waiting for the lock
    (up to a minute on a loaded machine) let the sweep finish every unit before it was killed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return 0
        if db.exists():
            try:
                with LabStore(db, lock_timeout=0.5) as store:
                    count = int(store.fetch_all("SELECT count(*) FROM sweep_runs")[0][0])
            except StoreBusyError:
                count = 0
            except Exception as exc:  # the schema may not exist yet in the first instants
                if "sweep_runs" not in str(exc):
                    raise
                count = 0
            if count >= at_least:
                return count
        time.sleep(0.2)
    raise AssertionError("the sweep recorded no runs in time")


HOLDER = """
import sys, time
from lcm_lab.store import LabStore
store = LabStore(sys.argv[1])                 # a notebook kernel: opens the store, keeps the object
print(len(store.conversations_df()), flush=True)
for _ in range(int(sys.argv[2])):
    time.sleep(1.0)
    print(int(store.fetch_all("SELECT count(*) FROM sweeps")[0][0]), flush=True)
"""


def test_a_notebook_holding_the_store_does_not_lock_out_the_cli_or_a_sweep(tmp_path: Path) -> None:
    db = tmp_path / "lab.duckdb"
    LabStore(db).close()
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(db), "40"], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    spec_file = tmp_path / "sweep.yaml"
    spec_file.write_text(yaml.safe_dump(small_spec(space={"freshTailCount": [8, 16, 32]})), encoding="utf-8")
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "0"  # it has opened the store
        writer = subprocess.Popen([sys.executable, "-m", "lcm_lab.cli", "sweep", str(spec_file), "--db", str(db), "--json", "--no-progress"],
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        reads = []
        while writer.poll() is None:
            reads.append(lcm_lab("ledger", "--db", str(db), "--json"))
            reads.append(lcm_lab("sweeps", "--db", str(db), "--json"))
        out, err = writer.communicate(timeout=600)
        assert writer.returncode == 0, err
        assert json.loads(out)["runs_ok"] == 4
        assert reads and all(r.returncode == 0 for r in reads), [r.stderr for r in reads if r.returncode]
        assert not any("Could not set lock" in r.stderr for r in reads)
        final = lcm_lab("sweeps", "--db", str(db), "--json")
        assert json.loads(final.stdout.splitlines()[0])["runs_ok"] == 4
        # the "notebook" kept working all along and sees the sweep
        for line in holder.stdout:
            if line.strip() == "1":
                break
        else:
            raise AssertionError(holder.stderr.read() if holder.stderr else "holder stopped")
    finally:
        holder.kill()
        holder.communicate(timeout=60)


BUSY = """
import sys, time
from lcm_lab.store import LabStore
store = LabStore(sys.argv[1])
with store.hold():
    print("holding", flush=True)
    time.sleep(20)
"""


def test_a_busy_store_waits_then_names_the_holder(tmp_path: Path) -> None:
    db = tmp_path / "lab.duckdb"
    LabStore(db).close()
    holder = subprocess.Popen([sys.executable, "-c", BUSY, str(db)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        started = time.monotonic()
        with pytest.raises(StoreBusyError) as info:
            LabStore(db, lock_timeout=1.5)
        assert time.monotonic() - started >= 1.5
        message = str(info.value)
        assert f"PID {holder.pid}" in message and "LCM_LAB_LOCK_TIMEOUT" in message and "store.close()" in message
    finally:
        holder.kill()
        holder.communicate(timeout=60)
    with LabStore(db, lock_timeout=30) as store:  # free again once the holder is gone
        assert store.fetch_all("SELECT 1")[0][0] == 1


def test_store_gives_its_file_back_when_idle(tmp_path: Path) -> None:
    store = LabStore(tmp_path / "lab.duckdb", idle_seconds=0.2)
    assert store.fetch_all("SELECT count(*) FROM sweeps")[0][0] == 0
    deadline = time.monotonic() + 10
    while store.is_open and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not store.is_open
    assert store.fetch_all("SELECT count(*) FROM sweeps")[0][0] == 0  # reopens on demand
    with store.transaction():
        time.sleep(0.5)  # held through a transaction, however long
        assert store.is_open
    store.close()


# -- Ray -------------------------------------------------------------------------------------


def test_ray_executor_matches_local_and_records_model_calls(fake: FakeOpenAIServer, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from lcm_lab.sweeps.ray_executor import import_ray

    pytest.importorskip("ray", reason="ray is not installed (pip install 'lcm_lab[ray]'); the Ray executor is untested")
    ray = import_ray()
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)  # Ray's workers inherit the driver's environment
    from lcm_lab.metrics.base import Score
    from lcm_lab.sweeps.metrics import METRICS

    scale = 0.5  # a metric registered in a function (a closure): Ray tasks get it by value

    def turns_scaled(run: Any) -> list[Score]:
        return [Score(run.replay.run_id, "run", "", "turns_scaled", scale * len(run.replay.turns), {})]

    monkeypatch.setitem(METRICS, "turns_scaled", turns_scaled)
    local = LabStore(tmp_path / "local.duckdb")
    remote = LabStore(tmp_path / "ray.duckdb")
    a = sweep(small_spec(), store=local, progress=False)
    monkeypatch.setenv("RAY_raylet_start_wait_time_s", "120")  # a loaded 2-core machine starts Ray slowly
    start_local_ray(ray)
    try:
        b = sweep(small_spec(executor="ray"), store=remote, progress=False)
        c = sweep(llm_spec(fake, space={"freshTailCount": [8, 32]}, executor="ray", workers=2), store=remote, progress=False)
    finally:
        ray.shutdown()
    assert (a.sweep_id, b.executor) == (b.sweep_id, "ray")
    columns = ["config_id", "conversation", "run_id", "status", "peak_context_tokens", "fact_retention", "summarizer_calls",
               "turns_scaled"]
    left = sweep_df(a.sweep_id, local)[columns].sort_values("config_id").reset_index(drop=True)
    right = sweep_df(b.sweep_id, remote)[columns].sort_values("config_id").reset_index(drop=True)
    assert left.equals(right) and right["turns_scaled"].notna().all()
    assert local.fetch_all("SELECT payload FROM replays ORDER BY run_id") == remote.fetch_all(
        "SELECT payload FROM replays WHERE label = ? ORDER BY run_id", [b.sweep_id])
    # litellm on Ray: every call the workers made is in the driver's ledger
    assert c.runs_ok == 3 and c.calls_made == len(fake.completion_requests) > 0
    assert remote.fetch_all("SELECT count(*) FROM llm_calls WHERE NOT cache_hit")[0][0] == c.calls_made


def start_local_ray(ray: Any, attempts: int = 2) -> None:
    """``ray.init(num_cpus=2)``, retried: on a loaded machine Ray's raylet gives up when its
    dashboard agent takes more than a hard-coded 15 s to start (ray-project/ray#65983)."""
    for attempt in range(attempts):
        try:
            ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
            return
        except Exception as exc:
            ray.shutdown()
            if "timed out during startup" not in str(exc) or attempt == attempts - 1:
                raise


def test_ray_missing_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from lcm_lab.sweeps import ray_executor

    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(RuntimeError, match=r"pip install 'lcm_lab\[ray\]'"):
        ray_executor.import_ray()

