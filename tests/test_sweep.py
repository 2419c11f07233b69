"""Sweeps: spec validation, grid/random/Optuna runs, failures, resume, recommend, the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from lcm_lab.store import LabStore
from lcm_lab.sweeps import SweepSpecError, parse_spec, recommend, sweep, sweep_df
from lcm_lab.sweeps.run import BASELINE_ID

REPO = Path(__file__).resolve().parents[1]
LOCOMO = str(REPO / "datasets" / "locomo" / "locomo10.json")


def small_spec(**changes: Any) -> dict[str, Any]:
    """Two configurations on one LoCoMo conversation, no QA scoring (fast)."""
    spec: dict[str, Any] = {
        "name": "test",
        "conversations": [{"path": LOCOMO, "limit": 1}],
        "token_budget": 6000,
        "base": {"leafChunkTokens": 2000, "leafTargetTokens": 400, "condensedTargetTokens": 300},
        "space": {"freshTailCount": [8, 32]},
        # peak tokens first: the plugin defaults (a 20k-token leaf chunk) cannot win it at a 6k budget
        "objectives": [{"metric": "peak_context_tokens", "direction": "minimize"},
                       {"metric": "fact_retention", "direction": "maximize"}],
        "scoring": {"qa": False},
        "executor": "serial",
    }
    spec.update(changes)
    return spec


# -- the spec --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"spaec": {}}, "spaec: unknown key; allowed keys: base, constraints, conversations"),
        ({"token_budget": "lots"}, "token_budget: Input should be a valid integer"),
        ({"space": {"freshTailCnt": [1]}}, "freshTailCnt: not a plugin knob a sweep can vary; allowed: "),
        ({"space": {"contextThreshold": [0.5, 1.5]}}, "space.contextThreshold: plugin config key 'contextThreshold': invalid value 1.5"),
        ({"base": {"leafChunkTokens": 0}}, "base: plugin config key 'leafChunkTokens': invalid value 0"),
        ({"objectives": [{"metric": "qa", "direction": "maximize"}]}, "unknown metric 'qa'; allowed: cache_hit_rate, compacting_turns, cost_usd"),
        ({"objectives": [{"metric": "qa_retention", "direction": "up"}]}, "objectives.0.direction: Input should be 'maximize' or 'minimize'"),
        ({"executor": "gpu"}, "unknown executor 'gpu'; allowed: auto, serial, processes, threads, ray or ray://HOST:PORT"),
        ({"search": {"method": "optuna"}}, "search: search method 'optuna' needs trials"),
        ({"summarizer": {"name": "offline", "model": "x"}}, "model apply only to summarizer 'litellm'"),
        ({"space": {"strategy": ["lcm"]}}, "strategy: the strategy dimension is not available yet"),
    ],
)
def test_bad_specs_name_the_key_and_the_allowed_values(change: dict[str, Any], expected: str) -> None:
    with pytest.raises(SweepSpecError) as info:
        parse_spec(small_spec(**change))
    message = str(info.value)
    assert expected in message, message


def test_nested_unknown_keys_list_that_level() -> None:
    with pytest.raises(SweepSpecError, match=r"search.trails: unknown key; allowed keys: method, sampler, seed, trials"):
        parse_spec(small_spec(search={"method": "grid", "trails": 3}))


def test_example_spec_is_valid_and_runs_on_bundled_data() -> None:
    from lcm_lab.commands.sweep import example_spec

    spec = parse_spec(yaml.safe_load(example_spec()))
    assert spec.conversations[0].path == "datasets/locomo/locomo10.json"
    assert (REPO / spec.conversations[0].path).is_file()


# -- running ---------------------------------------------------------------------------------


def test_grid_sweep_stores_runs_scores_and_recommends(tmp_path: Path) -> None:
    store = LabStore(tmp_path / "lab.duckdb")
    result = sweep(small_spec(), store=store, progress=False)
    assert (result.configs, result.runs_ok, result.runs_failed) == (3, 3, 0)  # 2 points + the defaults
    frame = sweep_df(result.sweep_id, store)
    assert sorted(frame.freshTailCount.dropna()) == [8, 32]
    assert set(frame.config_id) >= {BASELINE_ID}
    assert frame.peak_context_tokens.notna().all() and frame.fact_retention.notna().all()
    # runs, per-turn records, summaries and scores carry the sweep's run ids
    run_ids = list(frame.run_id)
    assert store.fetch_all(f"SELECT count(*) FROM replays WHERE label = ? AND run_id IN ({','.join('?' * len(run_ids))})",
                           [result.sweep_id, *run_ids])[0][0] == 3
    assert store.fetch_all("SELECT count(DISTINCT run_id) FROM replay_turns WHERE run_id LIKE ?", [result.sweep_id + "%"])[0][0] == 3
    assert store.fetch_all("SELECT count(DISTINCT run_id) FROM scores WHERE run_id LIKE ?", [result.sweep_id + "%"])[0][0] == 3
    assert result.naive_calls == int(frame.summarizer_calls.sum()) > 0
    rec = recommend(result.sweep_id, store)
    assert rec.config_id in set(frame.config_id) - {BASELINE_ID}
    assert rec.openclaw_json["plugins"]["entries"]["lossless-claw"]["config"]["leafChunkTokens"] == 2000
    assert rec.env["LCM_LEAF_CHUNK_TOKENS"] == "2000"
    assert {t["metric"] for t in rec.tradeoff} == {"fact_retention", "peak_context_tokens"}
    assert any("single conversation" in w for w in rec.warnings)
    # running the same spec again does nothing new
    again = sweep(small_spec(), store=store, progress=False)
    assert (again.sweep_id, again.runs_ok, again.skipped) == (result.sweep_id, 0, 3)
    assert len(sweep_df(result.sweep_id, store)) == 3


def test_a_failing_configuration_is_recorded_and_the_sweep_goes_on(tmp_path: Path) -> None:
    from lcm_lab.sweeps.spec import config_id

    store = LabStore(tmp_path / "lab.duckdb")
    bad = config_id({"freshTailCount": 8})
    result = sweep(small_spec(), store=store, progress=False, fault=bad)
    assert (result.runs_ok, result.runs_failed) == (2, 1)
    frame = sweep_df(result.sweep_id, store)
    failed = frame[frame.status == "error"]
    assert list(failed.config_id) == [bad]
    assert "injected fault" in failed.error.iloc[0] and "Traceback" in failed.error.iloc[0]
    assert frame[frame.status == "ok"].peak_context_tokens.notna().all()
    status = store.fetch_all("SELECT status FROM sweeps WHERE sweep_id = ?", [result.sweep_id])[0][0]
    assert status == "done"
    assert recommend(result.sweep_id, store).config_id != bad


def test_optuna_study_with_a_constraint_resumes_without_rerunning(tmp_path: Path) -> None:
    store = LabStore(tmp_path / "lab.duckdb")
    spec = small_spec(
        space={"freshTailCount": {"low": 4, "high": 48, "step": 4}, "contextThreshold": {"low": 0.5, "high": 0.9}},
        search={"method": "optuna", "trials": 3, "seed": 1},
        objectives=[{"metric": "fact_retention", "direction": "maximize"}],
        constraints=[{"metric": "peak_context_tokens", "max": 5500}],
    )
    first = sweep(spec, store=store, progress=False)
    assert (first.configs, first.runs_ok) == (4, 4)
    frame = sweep_df(first.sweep_id, store)
    assert sorted(frame.trial.dropna().astype(int)) == [0, 1, 2]
    assert all(4 <= v <= 48 and v % 4 == 0 for v in frame.freshTailCount.dropna())
    more = sweep({**spec, "search": {"method": "optuna", "trials": 4, "seed": 1}}, store=store, progress=False)
    assert more.sweep_id != first.sweep_id  # a different spec is a different sweep
    again = sweep(spec, store=store, progress=False)
    assert (again.runs_ok, again.skipped) == (0, 4)


def test_random_search_is_seeded() -> None:
    from lcm_lab.sweeps.run import random_points

    spec = parse_spec(small_spec(space={"contextThreshold": {"low": 0.5, "high": 0.9}, "freshTailCount": [8, 16, 32]},
                                 search={"method": "random", "trials": 4, "seed": 3}))
    assert [p.params for p in random_points(spec)] == [p.params for p in random_points(spec)]
    assert all(0.5 <= p.params["contextThreshold"] <= 0.9 for p in random_points(spec))


def test_processes_give_the_same_results_as_serial(tmp_path: Path) -> None:
    serial = LabStore(tmp_path / "a.duckdb")
    parallel = LabStore(tmp_path / "b.duckdb")
    a = sweep(small_spec(), store=serial, progress=False)
    b = sweep(small_spec(executor="processes", workers=2), store=parallel, progress=False)
    assert a.sweep_id == b.sweep_id and b.executor == "processes"
    columns = ["config_id", "conversation", "run_id", "status", "peak_context_tokens", "fact_retention", "summarizer_calls"]
    left = sweep_df(a.sweep_id, serial)[columns].sort_values("config_id").reset_index(drop=True)
    right = sweep_df(b.sweep_id, parallel)[columns].sort_values("config_id").reset_index(drop=True)
    assert left.equals(right)


# -- the command line ------------------------------------------------------------------------


def lcm_lab(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    import os

    full_env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", **(env or {})}
    return subprocess.run([sys.executable, "-m", "lcm_lab.cli", *args], capture_output=True, text=True, cwd=cwd,
                          env=full_env, timeout=timeout, check=False)


def test_cli_sweep_json_sweeps_and_recommend(tmp_path: Path) -> None:
    spec_file = tmp_path / "sweep.yaml"
    spec_file.write_text(yaml.safe_dump(small_spec()), encoding="utf-8")
    db = str(tmp_path / "lab.duckdb")
    done = lcm_lab("sweep", str(spec_file), "--db", db, "--json", "--no-progress")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["runs_ok"] == 3 and result["sweep_id"].startswith("sw_")
    listed = lcm_lab("sweeps", "--db", db, "--json")
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    assert [r["sweep_id"] for r in rows] == [result["sweep_id"]] and rows[0]["status"] == "done"
    rec = lcm_lab("recommend", result["sweep_id"], "--db", db, "--json")
    payload = json.loads(rec.stdout)
    assert set(payload) >= {"openclaw_json", "env", "tradeoff", "warnings"}
    assert "lossless-claw" in payload["openclaw_json"]["plugins"]["entries"]
    human = lcm_lab("recommend", result["sweep_id"], "--db", db)
    assert "LCM_LEAF_CHUNK_TOKENS=2000" in human.stdout and "trade-off against the plugin defaults" in human.stdout
    html = tmp_path / "sweep.html"
    page = lcm_lab("report", "--sweep", result["sweep_id"], "--db", db, "-o", str(html))
    assert page.returncode == 0, page.stderr
    text = html.read_text(encoding="utf-8")
    assert f"Sweep test ({result['sweep_id']}" in text and "fact_retention 95% CI" in text and "LCM_LEAF_CHUNK_TOKENS=2000" in text
    unknown = lcm_lab("recommend", "sw_nope", "--db", db)
    assert unknown.returncode == 2 and "unknown sweep id 'sw_nope'; known: " + result["sweep_id"] in unknown.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(small_spec(space={"freshTail": [1]})), encoding="utf-8")
    refused = lcm_lab("sweep", str(bad), "--db", db)
    assert refused.returncode == 2 and "freshTail: not a plugin knob" in refused.stderr and "Traceback" not in refused.stderr


def test_cli_example_prints_a_commented_spec() -> None:
    printed = lcm_lab("sweep", "--example")
    assert printed.returncode == 0 and printed.stdout.startswith("# An example sweep")
    assert parse_spec(yaml.safe_load(printed.stdout)).search.method == "grid"
