"""Sweeps in worker processes store exactly what a serial sweep stores; cost objectives are priced."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lcm_lab.store import LabStore
from lcm_lab.sweeps import recommend, sweep, sweep_df
from lcm_lab.sweeps.executors import chunk_units
from lcm_lab.sweeps.run import BASELINE_ID

REPO = Path(__file__).resolve().parents[1]
LOCOMO = str(REPO / "datasets" / "locomo" / "locomo10.json")
PI = str(REPO / "datasets" / "pi-mono" / "large-session.jsonl")


def spec(**changes: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": "parallel",
        "conversations": [{"path": LOCOMO, "limit": 2}],
        "token_budget": 6000,
        "base": {"leafChunkTokens": 2000, "leafTargetTokens": 400, "condensedTargetTokens": 300},
        "space": {"freshTailCount": [8, 32]},
        "objectives": [{"metric": "fact_retention", "direction": "maximize"}],
        "scoring": {"qa": True},
        "executor": "serial",
    }
    out.update(changes)
    return out


def stored(store: LabStore, sweep_id: str) -> dict[str, list[Any]]:
    """Everything a sweep wrote, in a stable order (seconds aside: they are timings)."""
    runs = f"(SELECT run_id FROM sweep_runs WHERE sweep_id = '{sweep_id}')"
    return {
        "sweep_runs": store.fetch_all("SELECT config_id, conversation_key, run_id, status, error, metrics, model_calls"
                                      f" FROM sweep_runs WHERE sweep_id = '{sweep_id}' ORDER BY run_id"),
        "replays": store.fetch_all("SELECT * EXCLUDE (created_at) FROM replays ORDER BY run_id"),
        "scores": store.fetch_all(f"SELECT run_id, scope, scope_id, metric, value, details FROM scores WHERE run_id IN {runs}"
                                  " ORDER BY run_id, scope, scope_id, metric"),
        **{table: store.fetch_all(f"SELECT * FROM {table} ORDER BY ALL")
           for table in ("replay_turns", "replay_sent", "replay_summaries", "replay_summary_sources", "replay_calls")},
    }


def test_processes_store_exactly_what_serial_stores_with_qa_scoring(tmp_path: Path) -> None:
    serial, parallel = LabStore(tmp_path / "a.duckdb"), LabStore(tmp_path / "b.duckdb")
    a = sweep(spec(), store=serial, progress=False)
    b = sweep(spec(executor="processes", workers=2), store=parallel, progress=False)
    assert (a.sweep_id, a.runs_ok, b.runs_ok, b.executor) == (b.sweep_id, 6, 6, "processes")
    left, right = stored(serial, a.sweep_id), stored(parallel, b.sweep_id)
    assert left.keys() == right.keys()
    for table in left:
        assert left[table] == right[table], table
    assert sweep_df(a.sweep_id, serial).qa_retention.notna().any()  # withheld where the history fits the budget


def test_chunks_keep_a_conversation_together_and_cover_every_unit() -> None:
    from lcm_lab.engine.config.lcm_config import LcmConfig
    from lcm_lab.sweeps.work import Conversations, Unit

    units = [Unit("s", f"c{c}", key, f"r{c}{key}", LcmConfig(), 100) for key in "abc" for c in range(7)]
    data = Conversations({"a": [0] * 10, "b": [0] * 30, "c": [0] * 20}, {})
    chunks = chunk_units(units, data, workers=2)
    assert sorted(u.run_id for chunk in chunks for u in chunk) == sorted(u.run_id for u in units)
    assert all(len({u.conversation_key for u in chunk}) == 1 for chunk in chunks)
    assert 6 <= len(chunks) <= 12 and max(map(len, chunks)) - min(map(len, chunks)) <= 1
    assert chunks[0][0].conversation_key == "b" and chunks[-1][0].conversation_key == "a"  # largest first


def test_cost_objectives_are_priced_with_the_cost_model(tmp_path: Path) -> None:
    from lcm_lab.cost.scores import cost_scores
    from lcm_lab.store.replays import load_replay

    store = LabStore(tmp_path / "lab.duckdb")
    cost_spec = spec(conversations=[{"path": PI, "limit": 1}], token_budget=16000, space={"freshTailCount": [8]},
                     scoring={"qa": False}, objectives=[{"metric": "cost_usd", "direction": "minimize"}],
                     constraints=[{"metric": "cache_hit_rate", "min": 0.05}])
    result = sweep(cost_spec, store=store, progress=False)
    assert (result.runs_ok, result.runs_failed) == (2, 0)
    frame = sweep_df(result.sweep_id, store)
    assert frame.cost_usd.notna().all() and (frame.cost_usd > 0).all()
    assert frame.cache_hit_rate.between(0, 1).all()
    # the same number the cost model gives the stored replay on its own
    row = frame[frame.config_id != BASELINE_ID].iloc[0]
    direct = {s.metric: s.value for s in cost_scores(load_replay(store, row.run_id))}
    assert row.cost_usd == pytest.approx(direct["cost_usd"]) and row.cache_hit_rate == pytest.approx(direct["cache_hit_rate"])
    rec = recommend(result.sweep_id, store)
    assert {t["metric"] for t in rec.tradeoff} >= {"cost_usd"}
    # every bill has its 90% interval; the saving against the defaults is paired on the same conversation
    assert (frame.cost_usd_p05 <= frame.cost_usd).all() and (frame.cost_usd <= frame.cost_usd_p95).all()
    base = frame[frame.config_id == BASELINE_ID].iloc[0]
    assert (base.cost_saving_usd, base.cost_saving_usd_p05, base.cost_saving_usd_p95) == (0.0, 0.0, 0.0)
    assert row.cost_saving_usd == pytest.approx(base.cost_usd - row.cost_usd)
    assert row.cost_saving_usd_p05 <= row.cost_saving_usd <= row.cost_saving_usd_p95
    # paired: narrower than if the two bills' misses were drawn independently (they share every turn start
    # both settings leave warm; turns where only one setting compacts are not shared)
    widths = [r.cost_usd_p95 - r.cost_usd_p05 for r in (row, base)]
    assert row.cost_saving_usd_p95 - row.cost_saving_usd_p05 < (widths[0] ** 2 + widths[1] ** 2) ** 0.5
    cost = rec.as_json()["cost"]
    assert cost["unit"] == "$ per 1,000 turns" and cost["conversations"] == 1 and cost["turns"] > 0
    assert cost["saving_per_1000_turns"] == pytest.approx(1000 * row.cost_saving_usd / cost["turns"])
    assert cost["saving_low"] <= cost["saving_per_1000_turns"] <= cost["saving_high"]
    assert cost["within_noise"] == (cost["saving_low"] <= 0 <= cost["saving_high"])
    assert "per 1,000 turns" in rec.snippet()


def test_cost_objective_on_conversations_without_usage_fails_the_runs_with_the_reason(tmp_path: Path) -> None:
    store = LabStore(tmp_path / "lab.duckdb")
    result = sweep(spec(conversations=[{"path": LOCOMO, "limit": 1}], scoring={"qa": False},
                        objectives=[{"metric": "cost_usd", "direction": "minimize"}]), store=store, progress=False)
    assert (result.runs_ok, result.runs_failed) == (0, 3)
    errors = sweep_df(result.sweep_id, store).error
    assert errors.str.contains("cost_usd and cache_hit_rate need a transcript that records provider usage").all()


def test_cost_metrics_are_in_the_objectives_registry() -> None:
    from lcm_lab.sweeps import METRICS
    from lcm_lab.sweeps.metrics import COST_METRICS

    assert set(COST_METRICS) <= set(METRICS)
