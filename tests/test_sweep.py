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
        ({"space": {"strategy": ["lcm", "vault"]}},
         "space.strategy: unknown strategy 'vault'; allowed: lcm, clawvault, observer_regex, truncate, full, recorded"),
        ({"space": {"strategy": "lcm"}}, "space.strategy: Input should be a valid list"),
        ({"space": {"strategy": ["truncate"], "freshTailCount": [8]}},
         "space.freshTailCount: plugin knobs vary strategy 'lcm', which space.strategy does not list"),
        ({"space": {"strategy": ["lcm", "clawvault"]}}, "space.strategy: 'clawvault' compresses with a model and needs summarizer 'litellm'"),
        ({"strategy_config": {"truncate": {}}}, "strategy_config: needs a strategy dimension"),
        ({"space": {"strategy": ["lcm", "truncate"]}, "strategy_config": {"truncate": {"keep": [1]}}},
         "strategy_config.truncate: strategy 'truncate' takes no parameters"),
        ({"space": {"strategy": ["lcm", "truncate"]}, "strategy_config": {"full": {}}},
         "strategy_config.full: strategy not in space.strategy; allowed: lcm, truncate"),
        ({"space": {"strategy": ["lcm"]}, "strategy_config": {"lcm": {"freshTailCount": [8]}}},
         "strategy_config.lcm: LCM takes plugin config keys in base and space"),
        ({"space": {"strategy": ["observer_regex"]}, "strategy_config": {"observer_regex": {"observe_treshold": [2000]}}},
         "strategy_config.observer_regex.observe_treshold: unknown parameter; allowed: archive_days, fidelity, flush_at_end"),
        ({"space": {"strategy": ["observer_regex"]}, "strategy_config": {"observer_regex": {"tail": ["fill", "all"]}}},
         "strategy_config.observer_regex.tail: invalid value 'all'; allowed: fill, unobserved"),
        ({"space": {"strategy": ["observer_regex"]}, "strategy_config": {"observer_regex": {"top_k": 2.5}}},
         "strategy_config.observer_regex.top_k: invalid value 2.5; expected an integer"),
        ({"space": {"strategy": ["observer_regex"]}, "strategy_config": {"observer_regex": {"tail": {"low": 1, "high": 2, "step": 1}}}},
         "strategy_config.observer_regex.tail: a range needs a numeric parameter (this one is choice)"),
        ({"space": {"strategy": ["observer_regex"]}, "strategy_config": {"observer_regex": {"observe_threshold": [0, 2000]}}},
         "strategy_config.observer_regex.observe_threshold: observe_threshold, max_tokens and archive_days must be positive"),
        ({"space": {"strategy": ["observer_regex"]}, "strategy_config": {"observer_regex": {"importance_floor": {"low": 0.2, "high": 0.8}}}},
         "strategy_config.observer_regex.importance_floor: a grid needs a list of values or a range with step"),
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
    # a bundled dataset, found wherever lcm_lab is installed (not a path relative to a checkout)
    assert spec.conversations[0].dataset == "locomo/locomo10.json" and spec.conversations[0].path is None
    assert spec.conversations[0].file().samefile(REPO / "datasets" / "locomo" / "locomo10.json")


def strategy_spec(**changes: Any) -> dict[str, Any]:
    """LCM (two tails), truncation and ClawVault's LLM-free observer (two thresholds) on one
    LoCoMo conversation. Objectives: fewest model calls, then fact retention — so the observer
    (no calls, more facts than truncation) wins and LCM does not."""
    return small_spec(**{
        "space": {"strategy": ["lcm", "truncate", "observer_regex"], "freshTailCount": [8, 32]},
        "strategy_config": {"observer_regex": {"observe_threshold": [2000, 8000], "tail": "fill"}},
        "objectives": [{"metric": "summarizer_calls", "direction": "minimize"},
                       {"metric": "fact_retention", "direction": "maximize"}],
        **changes,
    })


def test_a_strategy_dimension_varies_each_strategy_by_its_own_parameters() -> None:
    from lcm_lab.sweeps.run import random_points
    from lcm_lab.sweeps.spec import grid_points

    spec = parse_spec(strategy_spec())
    points = grid_points(spec)
    assert [p.params for p in points] == [
        {"strategy": "lcm", "freshTailCount": 8}, {"strategy": "lcm", "freshTailCount": 32}, {"strategy": "truncate"},
        {"strategy": "observer_regex", "observe_threshold": 2000}, {"strategy": "observer_regex", "observe_threshold": 8000},
    ]  # truncation runs once, not once per plugin-knob value
    assert points[0].config is not None and points[0].config.fresh_tail_count == 8
    assert points[3].config is None and points[3].strategy_params == {"tail": "fill", "observe_threshold": 2000}
    drawn = random_points(parse_spec(strategy_spec(search={"method": "random", "trials": 6, "seed": 2})))
    assert {p.strategy for p in drawn} <= {"lcm", "truncate", "observer_regex"}
    assert all(set(p.params) - {"strategy"} <= ({"freshTailCount"} if p.strategy == "lcm" else {"observe_threshold"}) for p in drawn)
    # sweeps without a strategy dimension keep their ids
    assert sweep_id_for_plain() == sweep_id_for_plain()


def sweep_id_for_plain() -> str:
    from lcm_lab.sweeps.spec import sweep_id_for

    return sweep_id_for(parse_spec(small_spec()))


def test_a_sweep_over_strategies_stores_them_and_recommends_no_plugin_settings_for_another(tmp_path: Path) -> None:
    store = LabStore(tmp_path / "lab.duckdb")
    result = sweep(strategy_spec(), store=store, progress=False)
    assert (result.configs, result.runs_ok, result.runs_failed) == (6, 6, 0)  # 5 points + the plugin defaults
    frame = sweep_df(result.sweep_id, store)
    assert list(frame.columns[:7]) == ["sweep_id", "config_id", "trial", "baseline", "strategy", "engine", "freshTailCount"]
    assert sorted(frame.strategy) == ["lcm", "lcm", "lcm", "observer_regex", "observer_regex", "truncate"]
    assert frame[frame.strategy != "lcm"].freshTailCount.isna().all()
    assert sorted(frame.observe_threshold.dropna()) == [2000, 8000]
    assert frame.fact_retention.notna().all() and frame.mean_sent_tokens.notna().all()
    assert (frame[frame.strategy != "lcm"].summarizer_calls == 0).all() and (frame[frame.strategy == "lcm"].summarizer_calls > 0).all()
    stored = store.fetch_df(f"SELECT run_id, strategy, strategy_params FROM replays WHERE run_id IN ({','.join('?' * len(frame))})",
                            list(frame.run_id))
    by_run = dict(zip(stored.run_id, stored.strategy, strict=True))
    assert [by_run[r] for r in frame.run_id] == list(frame.strategy)
    observer = stored[stored.strategy == "observer_regex"].strategy_params.map(json.loads)
    assert sorted(p["observe_threshold"] for p in observer) == [2000, 8000]
    assert store.fetch_all("SELECT count(DISTINCT run_id) FROM scores WHERE run_id LIKE ?", [result.sweep_id + "%"])[0][0] == 6
    rec = recommend(result.sweep_id, store)
    assert rec.strategy == "observer_regex" and rec.openclaw_json is None and rec.env == {}
    assert "is strategy 'observer_regex', not LCM" in rec.warnings[0] and rec.best_lcm in set(frame[frame.strategy == "lcm"].config_id)
    assert rec.lcm_openclaw_json is not None and "lossless-claw" in rec.lcm_openclaw_json["plugins"]["entries"]
    text = rec.snippet()
    assert "no openclaw.json or LCM_* setting" in text and "LCM_FRESH_TAIL_COUNT" not in text
    again = sweep(strategy_spec(), store=store, progress=False)
    assert (again.runs_ok, again.skipped) == (0, 6)


def test_optuna_samples_the_strategy_as_a_categorical(tmp_path: Path) -> None:
    store = LabStore(tmp_path / "lab.duckdb")
    spec = strategy_spec(search={"method": "optuna", "trials": 4, "seed": 0},
                         strategy_config={"observer_regex": {"observe_threshold": {"low": 1000, "high": 9000, "step": 1000}}},
                         objectives=[{"metric": "fact_retention", "direction": "maximize"}])
    first = sweep(spec, store=store, progress=False)
    frame = sweep_df(first.sweep_id, store)
    trials = frame[frame.trial.notna()]
    assert len(trials) == 4 and set(trials.strategy) <= {"lcm", "truncate", "observer_regex"}
    for row in trials.to_dict("records"):
        assert (row["freshTailCount"] is not None and not pd_isna(row["freshTailCount"])) == (row["strategy"] == "lcm")
        assert (not pd_isna(row["observe_threshold"])) == (row["strategy"] == "observer_regex")
    again = sweep(spec, store=store, progress=False)  # resumed: the study is rebuilt, nothing reruns
    assert (again.runs_ok, again.skipped) == (0, 5)


def pd_isna(value: Any) -> bool:
    import pandas as pd

    return bool(pd.isna(value))


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


def test_the_run_bar_has_its_total_before_the_configurations_are_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import lcm_lab.store.sweeps as stored
    import lcm_lab.sweeps.run as run_module

    class Bar:
        total, n = 0, 0

        def refresh(self) -> None: ...
        def close(self) -> None: ...
        def update(self, k: int) -> None:
            self.n += k

    bar, seen, record = Bar(), [], stored.register_configs

    def spy(store: LabStore, sweep_id: str, rows: Any) -> int:
        rows = list(rows)
        seen.append((len(rows), bar.total, bar.n))
        return record(store, sweep_id, rows)

    def shown(enabled: bool, sweep_id: str, total: int) -> Bar:
        bar.total = total
        return bar

    monkeypatch.setattr(run_module, "_progress", shown)
    monkeypatch.setattr(stored, "register_configs", spy)
    store = LabStore(tmp_path / "lab.duckdb")
    result = sweep(small_spec(), store=store)
    # the defaults, then both grid points in one statement with the bar already at its 3 runs
    assert seen == [(1, 0, 0), (2, 3, 0)] and bar.n == 3 == result.runs_ok
    assert stored.trial_params(store, result.sweep_id) == [(0, {"freshTailCount": 8}), (1, {"freshTailCount": 32})]


def test_configurations_are_recorded_in_one_statement_keeping_the_first_of_an_id() -> None:
    from lcm_lab.store.sweeps import ConfigRow, config_count, register_configs, register_sweep, trial_params

    store = LabStore(":memory:")
    register_sweep(store, "sw_1", "x", {})
    rows = [ConfigRow(f"c_{i}", {"freshTailCount": i}, {"freshTailCount": i}, i) for i in range(10_000)]
    assert register_configs(store, "sw_1", [*rows, ConfigRow("c_0", {"freshTailCount": -1}, {}, 99)]) == 10_000
    assert register_configs(store, "sw_1", [ConfigRow("c_1", {}, {}, 7), ConfigRow("base", {}, {}, None, True)]) == 2
    assert config_count(store, "sw_1") == 10_001 and register_configs(store, "sw_1", []) == 0
    assert trial_params(store, "sw_1")[:2] == [(0, {"freshTailCount": 0}), (1, {"freshTailCount": 1})]
    assert store.fetch_all("SELECT trial, baseline, plugin_config FROM sweep_configs WHERE config_id = 'base'") == [(None, True, "{}")]


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


def test_a_failed_run_stays_failed_on_resume_until_retried(tmp_path: Path) -> None:
    from lcm_lab.store.sweeps import sweep_row
    from lcm_lab.sweeps.spec import config_id

    store = LabStore(tmp_path / "lab.duckdb")
    bad = config_id({"freshTailCount": 8})
    first = sweep(small_spec(), store=store, progress=False, fault=bad)
    error_at = store.fetch_all("SELECT created_at FROM sweep_runs WHERE status = 'error'")[0][0]
    kept = sweep(small_spec(), store=store, progress=False)  # the fault is gone, but a plain resume keeps the row
    assert (kept.runs_ok, kept.runs_failed, kept.skipped, kept.failed_before) == (0, 0, 3, 1)
    assert list(sweep_df(first.sweep_id, store).query("status == 'error'").config_id) == [bad]
    again = sweep(small_spec(), store=store, progress=False, retry_failed=True)
    assert (again.runs_ok, again.runs_failed, again.skipped, again.failed_before) == (1, 0, 2, 0)  # only the failed unit ran
    frame = sweep_df(first.sweep_id, store)
    assert len(frame) == 3 and set(frame.status) == {"ok"} and frame.error.isna().all()
    assert frame.set_index("config_id").peak_context_tokens[bad] > 0
    assert store.fetch_all("SELECT created_at FROM sweep_runs WHERE config_id = ?", [bad])[0][0] >= error_at
    assert store.fetch_all("SELECT count(*) FROM replays WHERE label = ?", [first.sweep_id])[0][0] == 3
    stats = sweep_row(store, first.sweep_id)["stats"]
    assert (stats["runs_ok"], stats["runs_failed"]) == (3, 0)
    assert sweep(small_spec(), store=store, progress=False, retry_failed=True).skipped == 3  # nothing left to retry


def test_an_optuna_study_retries_its_failed_trials_and_learns_from_them(tmp_path: Path) -> None:
    store = LabStore(tmp_path / "lab.duckdb")
    spec = small_spec(space={"freshTailCount": {"low": 4, "high": 48, "step": 4}},
                      search={"method": "optuna", "trials": 3, "seed": 1},
                      objectives=[{"metric": "peak_context_tokens", "direction": "minimize"}])  # fmt: skip
    key = next(iter(_conversation_keys(spec)))
    failed = sweep(spec, store=store, progress=False, fault=key)  # every unit of the one conversation fails
    assert (failed.runs_ok, failed.runs_failed) == (0, 4)
    again = sweep(spec, store=store, progress=False, retry_failed=True)
    assert (again.runs_ok, again.runs_failed, again.configs) == (4, 0, 4)  # the same three trials, not three new ones
    frame = sweep_df(failed.sweep_id, store)
    assert sorted(frame.trial.dropna().astype(int)) == [0, 1, 2] and set(frame.status) == {"ok"}
    assert recommend(failed.sweep_id, store).config_id in set(frame.config_id)


def _conversation_keys(spec: dict[str, Any]) -> list[str]:
    from lcm_lab.sweeps.run import read_conversations

    return list(read_conversations(parse_spec(spec)).conversations)


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
    assert (result["executor"], result["workers"]) == ("serial", 1)  # one run at a time, whatever the cores
    resumed = lcm_lab("sweep", str(spec_file), "--db", db, "--no-progress")
    assert "3 already done;" in resumed.stdout and " s serially, one run at a time\n" in resumed.stdout, resumed.stdout
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
    assert "Sweep test" in text and f"({result['sweep_id']}, done)" in text
    assert "fact_retention 95% CI" in text and "LCM_LEAF_CHUNK_TOKENS=2000" in text
    assert "<th>setting</th>" in text and "freshTailCount=" in text  # configurations named by their knobs, not config ids
    assert '<td class="num">32</td>' in text and "32.000" not in text and "1.000</td>" not in text  # knobs and trials as integers
    unknown = lcm_lab("recommend", "sw_nope", "--db", db)
    assert unknown.returncode == 2 and "unknown sweep id 'sw_nope'; known: " + result["sweep_id"] in unknown.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(small_spec(space={"freshTail": [1]})), encoding="utf-8")
    refused = lcm_lab("sweep", str(bad), "--db", db)
    assert refused.returncode == 2 and "freshTail: not a plugin knob" in refused.stderr and "Traceback" not in refused.stderr


def test_cli_sweep_over_strategies(tmp_path: Path) -> None:
    spec_file = tmp_path / "strategies.yaml"
    spec_file.write_text(yaml.safe_dump(strategy_spec(space={"strategy": ["lcm", "truncate", "observer_regex"],
                                                             "freshTailCount": [32]})), encoding="utf-8")
    db = str(tmp_path / "lab.duckdb")
    done = lcm_lab("sweep", str(spec_file), "--db", db, "--json", "--no-progress")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert (result["configs"], result["runs_ok"], result["runs_failed"]) == (5, 5, 0)
    payload = json.loads(lcm_lab("recommend", result["sweep_id"], "--db", db, "--json").stdout)
    assert payload["strategy"] == "observer_regex" and payload["openclaw_json"] is None and payload["env"] == {}
    assert payload["best_lcm"] is not None and "not LCM" in payload["warnings"][0]
    human = lcm_lab("sweep", str(spec_file), "--db", db, "--no-progress")  # resumed: the table and the recommendation
    assert human.returncode == 0, human.stderr
    assert "observer_regex" in human.stdout and "truncate" in human.stdout and "not LCM" in human.stdout
    assert "LCM_FRESH_TAIL_COUNT" not in human.stdout
    html = tmp_path / "strategies.html"  # the report shows the recommended (observer) run
    page = lcm_lab("report", "--sweep", result["sweep_id"], "--db", db, "-o", str(html))
    assert page.returncode == 0, page.stderr
    assert "not LCM" in html.read_text(encoding="utf-8")


def test_cli_example_prints_a_commented_spec() -> None:
    printed = lcm_lab("sweep", "--example")
    assert printed.returncode == 0 and printed.stdout.startswith("# An example sweep")
    assert parse_spec(yaml.safe_load(printed.stdout)).search.method == "grid"
