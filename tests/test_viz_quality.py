"""Quality plots: intervals, Pareto front, binning and column checks (info steps without plotly)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from lcm_lab.viz.diff import diff_html, match_summaries, summary_diff_info
from lcm_lab.viz.quality import (
    fact_survival_info,
    mean_interval,
    metric_by_depth_info,
    parallel_info,
    pareto_info,
    pareto_mask,
    plot_fact_survival,
    plot_metric_by_depth,
    plot_parallel_coordinates,
    plot_pareto,
    plot_qa_retention,
    plot_run_comparison,
    plot_sweep_heatmap,
    qa_retention_info,
    run_comparison_info,
    sweep_heatmap_info,
    wilson_interval,
)


def test_wilson_interval_known_values() -> None:
    low, high = wilson_interval(8, 10)
    assert (round(low, 4), round(high, 4)) == (0.4902, 0.9433)
    assert wilson_interval(0, 5)[0] == pytest.approx(0.0) and wilson_interval(5, 5)[1] == pytest.approx(1.0)
    assert all(math.isnan(v) for v in wilson_interval(0, 0))
    from scipy.stats import binomtest

    for k, n in [(0, 7), (3, 7), (8, 10), (50, 51)]:  # whole counts: exactly scipy's Wilson interval
        ci = binomtest(k, n).proportion_ci(method="wilson")
        assert wilson_interval(k, n) == pytest.approx((ci.low, ci.high), abs=1e-12)


def test_mean_interval_brackets_the_mean_and_is_seeded() -> None:
    values = [1.0, 2.0, 3.0, 4.0, 10.0]
    low, high = mean_interval(values)
    assert low < sum(values) / len(values) < high
    assert mean_interval(values) == (low, high)
    # one value has no interval (the same rule as every bootstrap of the lab: metrics.stats)
    assert all(math.isnan(v) for v in mean_interval([2.5]))
    from lcm_lab.errors import DataError

    with pytest.raises(DataError, match="2 missing"):  # missing values are dropped by the caller, not unseen here
        mean_interval([*values, None, float("nan")])  # type: ignore[list-item]


def test_metric_by_depth_groups_per_run_and_depth() -> None:
    df = pd.DataFrame({"run_id": ["a"] * 4 + ["b"] * 2, "metric": ["m"] * 5 + ["other"],
                       "depth": [0, 0, 1, 1, 0, 0], "value": [0.2, 0.4, 0.9, None, 0.5, 9.0]})
    info = metric_by_depth_info(df, metric="m")
    assert [(g.run, g.key, g.values) for g in info.groups] == [
        ("a", "depth 0", (0.2, 0.4)), ("a", "depth 1", (0.9,)), ("b", "depth 0", (0.5,))]
    assert info.groups[0].mean == pytest.approx(0.3)
    assert [t.type for t in plot_metric_by_depth(df, metric="m").data] == ["box", "box"]


def test_fact_survival_bins_by_age() -> None:
    df = pd.DataFrame({"age": [0, 0, 2, 3, 20, 300], "survived": [True, True, True, False, False, True]})
    info = fact_survival_info(df, run=None)
    assert [(r.key, r.n, r.rate) for r in info.rows] == [("0", 2, 1.0), ("1–3", 2, 0.5), ("16–63", 1, 0.0), ("256+", 1, 1.0)]
    assert info.rows[1].low < 0.5 < info.rows[1].high
    assert plot_fact_survival(df, run=None).data[0].type == "bar"


def test_qa_retention_rates_with_intervals() -> None:
    df = pd.DataFrame({"run_id": ["x", "x", "x", "y"], "category": ["temporal", "temporal", "single-hop", "temporal"],
                       "correct": [1, 0, 1, 1]})
    rows = qa_retention_info(df).rows
    assert [(r.run, r.key, r.rate, r.n) for r in rows] == [("x", "single-hop", 1.0, 1), ("x", "temporal", 0.5, 2),
                                                          ("y", "temporal", 1.0, 1)]
    fig = plot_qa_retention(df)
    assert len(fig.data) == 2 and fig.data[0].error_y.array is not None


def test_run_comparison_with_given_or_bootstrapped_intervals() -> None:
    df = pd.DataFrame({"run_id": ["a", "a", "b"], "metric": ["recall"] * 3, "value": [0.5, 0.7, 0.9],
                       "low": [0.4, 0.4, 0.8], "high": [0.8, 0.8, 0.95]})
    given = run_comparison_info(df, low="low", high="high")
    assert [(r.run, r.mean, r.low, r.high) for r in given.rows] == [("a", 0.6, 0.4, 0.8), ("b", 0.9, 0.8, 0.95)]
    boot = run_comparison_info(df)
    assert boot.rows[0].low >= 0.5 and boot.rows[0].high <= 0.7
    assert math.isnan(boot.rows[1].low) and math.isnan(boot.rows[1].high)  # one value: no interval, not a zero-width one
    fig = plot_run_comparison(df)
    assert [t.name for t in fig.data] == ["a", "b"] and not fig.layout.xaxis.showticklabels  # runs named in the legend
    with pytest.raises(ValueError, match=r"missing column\(s\) \['low'\]"):
        run_comparison_info(df.drop(columns="low"), low="low", high="high")


def test_sweep_heatmap_means_and_gaps() -> None:
    df = pd.DataFrame({"threshold": [0.5, 0.5, 0.75, 0.75], "tail": [8, 8, 8, 32], "score": [0.2, 0.4, 0.6, 0.8]})
    info = sweep_heatmap_info(df, x="threshold", y="tail", value="score")
    assert info.x_values == (0.5, 0.75) and info.y_values == (8, 32)
    assert info.z[0][0] == pytest.approx(0.3) and info.z[1] == (None, 0.8)
    assert info.counts == ((2, 1), (0, 1))
    assert plot_sweep_heatmap(df, "threshold", "tail", "score").data[0].type == "heatmap"


def test_pareto_front() -> None:
    assert pareto_mask([(1, 1), (2, 2), (0, 3), (1, 1)]) == [True, False, True, True]
    df = pd.DataFrame({"run_id": ["cheap", "good", "bad", "pricey"], "quality": [0.5, 0.9, 0.4, 0.95],
                       "tokens": [1000, 3000, 3000, 3000], "cost": [0.1, 0.2, 0.3, 0.9]})
    info = pareto_info(df)
    assert info.optimal == (True, True, False, True)
    assert info.front_tokens == (1000, 3000) and info.front_quality == (0.5, 0.95)
    no_cost = pareto_info(df, cost=None)
    assert no_cost.optimal == (True, False, False, True) and no_cost.cost is None
    fig = plot_pareto(df)
    assert list(fig.data[1].marker.symbol) == ["star", "star", "circle", "star"]


def test_parallel_coordinates_codes_categories() -> None:
    df = pd.DataFrame({"model": ["a", "b", "a"], "threshold": [0.5, 0.6, 0.7], "ok": [True, False, True], "q": [1, 2, 3]})
    info = parallel_info(df, ["model", "threshold", "ok"], color="q")
    assert info.dimensions[0] == ("model", (0.0, 1.0, 0.0), (0.0, 1.0), ("a", "b"))
    assert info.dimensions[1].tickvals is None and info.dimensions[2].ticktext == ("True", "False")
    assert info.color == (1.0, 2.0, 3.0)
    with pytest.raises(ValueError, match="must be numeric"):
        parallel_info(df, ["threshold"], color="model")
    assert plot_parallel_coordinates(df, color="q").data[0].type == "parcoords"


def test_summary_diff_marks_changed_words_and_escapes() -> None:
    info = summary_diff_info("Alice moved to <Paris> in May", "Alice moved to Berlin in May")
    assert [s.text for s in info.left if s.op == "delete"] == ["<Paris> "]
    assert [s.text for s in info.right if s.op == "insert"] == ["Berlin "]
    assert 0.5 < info.similarity < 1
    assert "&lt;Paris&gt;" in diff_html(info.left) and "<Paris>" not in diff_html(info.left)


def test_match_summaries_pairs_same_depth_overlapping_spans() -> None:
    from lcm_lab.engine.types import Summary

    a = (Summary("a1", "leaf", 0, "", 1, source_message_seqs=(1, 2, 3)),
         Summary("a2", "leaf", 0, "", 1, source_message_seqs=(4, 5)),
         Summary("a3", "condensed", 1, "", 1, source_summary_ids=("a1", "a2")))
    b = (Summary("b1", "leaf", 0, "", 1, source_message_seqs=(1, 2)),
         Summary("b2", "leaf", 0, "", 1, source_message_seqs=(3, 4, 5)),
         Summary("b9", "leaf", 0, "", 1, source_message_seqs=(9,)))
    pairs = match_summaries(a, b)
    assert [(p.left_id, p.right_id, p.overlap) for p in pairs] == [("a1", "b1", 2 / 3), ("a2", "b2", 2 / 3)]


def scores_frame() -> pd.DataFrame:
    rows = [
        ("r", "summary", "s1", "fact_retention", 0.5, {"depth": 0}),
        ("r", "summary", "s2", "fact_retention", 0.7, {"depth": 1}),
        ("r", "summary", "s2", "fanout", 4.0, {"depth": 1}),
        ("r", "age", "0", "fact_retention", 1.0, {"n": 4}),
        ("r", "age", "1-3", "fact_retention", 0.5, {"n": 10}),
        ("r", "category", "temporal", "qa_retention", 0.25, {"n": 8}),
        ("r", "category", "multi-hop", "qa_retention", float("nan"), {"n": 0}),
    ]
    return pd.DataFrame(rows, columns=["run_id", "scope", "scope_id", "metric", "value", "details"])


def test_plots_accept_a_scores_frame() -> None:
    import json

    for df in (scores_frame(), scores_frame().assign(details=lambda f: f["details"].map(json.dumps))):
        check_scores_frame(df)


def check_scores_frame(df: pd.DataFrame) -> None:
    from lcm_lab.viz.quality import score_map

    by_depth = metric_by_depth_info(df, metric="fact_retention")
    assert [(g.key, g.values) for g in by_depth.groups] == [("depth 0", (0.5,)), ("depth 1", (0.7,))]
    survival = fact_survival_info(df)
    assert [(r.key, r.n, r.rate) for r in survival.rows] == [("0", 4, 1.0), ("1-3", 10, 0.5)]
    assert survival.rows[1].low == pytest.approx(wilson_interval(5, 10)[0])
    qa = qa_retention_info(df)
    assert [(r.key, r.rate, r.n) for r in qa.rows] == [("temporal", 0.25, 8)]
    assert score_map(df, "fact_retention") == {"s1": 0.5, "s2": 0.7}
    with pytest.raises(ValueError, match="no 'category'-scope 'qa_f1' scores"):
        qa_retention_info(df, metric="qa_f1")


def test_qa_by_category_reads_the_metric_the_locomo_scorer_writes() -> None:
    from lcm_lab.metrics.base import Score
    from lcm_lab.metrics.locomo import QA_RECALL
    from lcm_lab.report.figures import figure_has_data
    from lcm_lab.strategies.compare import Comparison
    from lcm_lab.viz import plot_qa_by_category

    scores = [Score("r", "category", "1", QA_RECALL, 0.5, {"category_name": "multi-hop"}),
              Score("r", "category", "2", QA_RECALL, 0.25, {"category_name": "temporal"})]
    fig = plot_qa_by_category(Comparison(runs={}, scores={("conv", 8000, "lcm"): scores}, skipped={}))
    assert figure_has_data(fig.to_plotly_json())
    assert list(fig.data[0].x) == ["multi-hop", "temporal"] and list(fig.data[0].y) == [0.5, 0.25]
