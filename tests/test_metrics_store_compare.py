"""The scores table (write, replace, read as pandas/polars/Score) and compare() with intervals."""

from __future__ import annotations

import math

import pytest
from test_metrics import _tool_chat

from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.replay.driver import replay
from lcm_lab.metrics.base import Score
from lcm_lab.metrics.compare import compare
from lcm_lab.metrics.needles import plant_needles
from lcm_lab.metrics.score import score_replay
from lcm_lab.metrics.stats import bootstrap_difference, bootstrap_interval, t_interval, t_quantile
from lcm_lab.store.core import LabStore
from lcm_lab.store.scores import read_scores, scores_df, scores_pl, write_scores
from lcm_lab.summarizers import get_summarizer


def test_score_validation() -> None:
    with pytest.raises(ValueError, match="unknown score scope"):
        Score("r", "galaxy", "", "m", 1.0)
    with pytest.raises(TypeError, match="must be a number"):
        Score("r", "run", "", "m", "high")  # type: ignore[arg-type]


def test_scores_round_trip_and_replace() -> None:
    store = LabStore(":memory:")
    scores = [
        Score("r1", "run", "", "peak_context_tokens", 812.0, {"budget": 1000}),
        Score("r1", "summary", "sum_a", "compression_ratio", None, {"reason": "no sources"}),
        Score("r2", "qa", "q1", "qa_answer_f1", float("nan")),
    ]
    assert write_scores(store, scores) == 3
    df = scores_df(store)
    assert list(df.columns) == ["run_id", "scope", "scope_id", "metric", "value", "details", "created_at"]
    assert len(df) == 3 and df["value"].isna().sum() == 2
    assert scores_pl(store, run_ids=["r1"]).height == 2
    assert scores_df(store, metrics=["qa_answer_f1"])["run_id"].tolist() == ["r2"]
    back = read_scores(store, run_ids=["r1"], scope="run")
    assert back == [Score("r1", "run", "", "peak_context_tokens", 812.0, {"budget": 1000})]
    write_scores(store, [Score("r1", "run", "", "peak_context_tokens", 900.0)])  # upsert
    assert read_scores(store, run_ids=["r1"], scope="run")[0].value == 900.0
    write_scores(store, [Score("r1", "run", "", "summaries", 3.0)], replace_runs=True)
    assert [s.metric for s in read_scores(store, run_ids=["r1"])] == ["summaries"]
    assert write_scores(store, []) == 0


def test_stats_helpers() -> None:
    assert t_quantile(0.975, 1) == pytest.approx(12.706, abs=1e-3)
    assert t_quantile(0.975, 2) == pytest.approx(4.303, abs=1e-3)
    assert t_quantile(0.975, 10) == pytest.approx(2.228, abs=1e-3)
    assert all(math.isnan(x) for x in t_interval([1.0]))
    lo, hi = bootstrap_interval([0.0, 1.0] * 20, seed=1)
    assert lo < 0.5 < hi
    assert bootstrap_interval([0.0, 1.0] * 20, seed=1) == (lo, hi)  # seeded: reproducible
    diff, dlo, dhi = bootstrap_difference([0.1, 0.2, 0.3, 0.4], [0.2, 0.3, 0.4, 0.5], paired=True)
    assert diff == pytest.approx(0.1) and dlo == pytest.approx(0.1) and dhi == pytest.approx(0.1)
    with pytest.raises(ValueError, match="equally many"):
        bootstrap_difference([1.0], [1.0, 2.0], paired=True)


def test_compare_runs_from_the_store() -> None:
    chat = _tool_chat(12)
    planted, needles = plant_needles(chat, 8, seed=3)
    config = LcmConfig(fresh_tail_count=4, leaf_chunk_tokens=800, leaf_target_tokens=200)
    store = LabStore(":memory:")
    for name in ("stub-v1", "offline"):
        rep = replay(planted, config, get_summarizer(name), token_budget=2000, run_id=name)
        write_scores(store, score_replay(rep, needles=needles))
    table = compare(scores_df(store), ["needle_survived", "summary_fact_retention", "peak_context_tokens"], baseline="stub-v1")
    assert list(table["run"]) == ["offline", "stub-v1"] * 3  # runs in store order, metric by metric
    needle_rows = table[table.metric == "needle_survived"].set_index("run")
    assert needle_rows.loc["offline", "scope"] == "needle" and needle_rows.loc["offline", "n"] == 8
    assert bool(needle_rows.loc["offline", "paired"])  # same needles in both runs
    offline = needle_rows.loc["offline"]
    assert offline["diff"] == pytest.approx(offline["mean"] - needle_rows.loc["stub-v1", "mean"])
    assert offline["diff_ci_low"] <= offline["diff"] <= offline["diff_ci_high"]
    assert math.isnan(needle_rows.loc["stub-v1", "diff"])
    peak = table[table.metric == "peak_context_tokens"]
    assert set(peak["scope"]) == {"run"} and peak["ci_low"].isna().all()
    with pytest.raises(ValueError, match="not found"):
        compare(scores_df(store), ["no_such_metric"])
    with pytest.raises(ValueError, match="baseline"):
        compare(scores_df(store), ["needle_survived"], baseline="nope")
