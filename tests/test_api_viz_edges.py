"""Edge inputs to the notebook API (viz, widgets, the statistics behind them): each user mistake is
a lab UserError with a message saying what to pass, never an IndexError, KeyError, AttributeError
or math-domain error from inside, and no silently wrong number."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

import lcm_lab as lab
from lcm_lab import viz, widgets
from lcm_lab.engine.replay.driver import Replay
from lcm_lab.errors import DataError, OptionError, UserError
from lcm_lab.metrics.stats import bootstrap_interval
from lcm_lab.viz.context import turn_caption


@pytest.fixture(scope="module")
def one_message(tmp_path_factory: pytest.TempPathFactory) -> Replay:
    """A real replay of a pi transcript holding one user message (one turn, no summaries)."""
    path = Path(tmp_path_factory.mktemp("one")) / "one.jsonl"
    lines = [
        {"type": "session", "version": 3, "id": "s1", "timestamp": "2025-01-01T00:00:00Z", "cwd": "/"},
        {"type": "message", "id": "m0", "parentId": None, "timestamp": "2025-01-01T00:00:01Z",
         "message": {"role": "user", "content": [{"type": "text", "text": "hello"}]}},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    conversation = lab.read_transcript(path).conversations[0].conversation
    config = lab.LcmConfig(fresh_tail_count=8, leaf_chunk_tokens=2000, leaf_target_tokens=400)
    return lab.replay(conversation, config, lab.get_summarizer("offline"), token_budget=8000)


def test_a_turn_past_the_end_says_which_turns_exist(one_message: Replay) -> None:
    assert len(one_message.turns) == 1
    with pytest.raises(OptionError, match=r"turn=99: the replay has 1 turn\(s\); turns that exist: 0 to 0, or -1 to -1"):
        viz.plot_context_at(one_message, 99)
    with pytest.raises(OptionError, match="turn=-2"):
        turn_caption(one_message, -2)
    assert viz.plot_context_at(one_message, -1).layout.title.text  # the last turn is still drawn


def test_recoverability_rows_must_name_their_run() -> None:
    with pytest.raises(DataError, match=r"recoverability row 0: expected a mapping with a 'run_id' or 'label'.*got \{\}"):
        viz.recoverability_info([{}])
    with pytest.raises(DataError, match="row 1"):
        viz.recoverability_info([{"run_id": "a"}, None])  # type: ignore[list-item]
    assert viz.recoverability_info([{"label": "named"}]).labels == ["named"]


@pytest.mark.parametrize(("successes", "n", "says"), [
    (5, 2, "5 successes out of 2 trials"),
    (-1, 3, "-1 successes out of 3 trials"),
    (float("nan"), 3, "nan successes out of 3 trials"),
    (1, -3, "-3 trials; the number of trials must be a whole number"),
    (1, 2.5, "2.5 trials"),
])  # fmt: skip
def test_wilson_refuses_impossible_counts(successes: float, n: int, says: str) -> None:
    with pytest.raises(DataError, match=f"Wilson interval: {says}"):
        viz.wilson_interval(successes, n)


def test_wilson_keeps_weighted_counts_and_the_empty_case() -> None:
    low, high = viz.wilson_interval(2.5, 5)  # weighted (fractional) successes stay allowed
    assert 0 < low < 0.5 < high < 1
    assert viz.wilson_interval(5, 5.0)[1] == pytest.approx(1.0)  # type: ignore[arg-type]  # a whole float count of trials is fine
    assert all(math.isnan(v) for v in viz.wilson_interval(0, 0))


def test_pareto_mask_of_no_points_is_empty_and_a_nan_point_is_refused() -> None:
    assert viz.pareto_mask([]) == []
    with pytest.raises(DataError, match=r"1 of 2 points have a missing \(NaN\) coordinate"):
        viz.pareto_mask([[float("nan"), 1], [1, 2]])
    with pytest.raises(DataError, match="same number of coordinates"):
        viz.pareto_mask([[1.0], [1.0, 2.0]])
    assert viz.pareto_mask([[math.inf, 1], [1, 2]]) == [True, True]  # infinity compares as usual
    # the plot drops rows with a missing objective before the front is taken, as before
    frame = pd.DataFrame({"quality": [float("nan"), 1.0], "tokens": [1, 2], "cost": [1, 1], "run_id": ["a", "b"]})
    assert viz.pareto_info(frame).labels == ("b",)


def test_a_missing_comparison_names_what_to_pass() -> None:
    with pytest.raises(OptionError, match=r"expected a strategy Comparison \(what lab.compare_strategies\(...\) returns\), got NoneType"):
        widgets.StrategyComparison(None)
    with pytest.raises(OptionError, match="got NoneType"):
        viz.plot_quality_vs_tokens(None, "qa_retention")
    with pytest.raises(DataError, match="at least one run"):
        widgets.StrategyComparison(lab.Comparison(runs={}, scores={}, skipped={}))
    with pytest.raises(OptionError, match=r"expected a VersionComparison \(what lab.compare_versions\(...\) returns\), got NoneType"):
        viz.plot_version_turns(None)


@pytest.mark.parametrize("max_nodes", [0, -1, 2.5, True])
def test_max_nodes_is_at_least_one_whatever_the_dag(one_message: Replay, max_nodes: int) -> None:
    assert not one_message.summaries  # refused before counting nodes: no summary to bin here
    with pytest.raises(OptionError, match=f"max_nodes={max_nodes!r}: expected a whole number of nodes, at least 1"):
        viz.plot_dag(one_message, max_nodes=max_nodes)
    assert viz.dag_info(one_message, max_nodes=1).nodes == ()


def test_nothing_to_show_is_a_user_error_with_its_message(one_message: Replay) -> None:
    cases: list[tuple[Callable[[], object], str]] = [
        (lambda: widgets.DagExplorer(one_message), "s1 has no summaries to explore"),
        (lambda: widgets.SummaryDiff(one_message, one_message), "no summaries over overlapping message spans"),
        (lambda: widgets.CostExplorer({}), "CostExplorer needs at least one priced session"),
        (lambda: viz.plot_pareto(pd.DataFrame()), r"Pareto front: missing column\(s\)"),
        (lambda: viz.plot_run_comparison(pd.DataFrame()), r"run comparison: missing column\(s\)"),
        (lambda: viz.plot_parallel_coordinates(pd.DataFrame()), "parallel coordinates: no columns to draw"),
        (lambda: viz.plot_budget_comparison([one_message, one_message], labels=["a"]), "1 labels for 2 replays"),
        (lambda: viz.plot_dag(one_message, color_by="bogus"), "unknown color_by 'bogus'"),  # type: ignore[arg-type]
        (lambda: viz.plot_cost_breakdown(None), "no calls to plot"),
    ]
    for call, message in cases:
        with pytest.raises(UserError, match=message):
            call()


@pytest.mark.parametrize("wrong", [None, "s1", {"summaries": []}, 42, [1, 2]], ids=["None", "a string", "a dict", "a number", "not summaries"])
def test_every_dag_view_given_the_wrong_kind_of_object_says_what_to_pass(one_message: Replay, wrong: object) -> None:
    """``DagExplorer(None)`` raised a plain TypeError, which ``except lab.UserError`` let through."""
    got = "int" if wrong == [1, 2] else type(wrong).__name__
    views: list[Callable[[], object]] = [
        lambda: widgets.DagExplorer(wrong), lambda: widgets.SummaryDiff(wrong, one_message),  # type: ignore[arg-type]
        lambda: widgets.SummaryDiff(one_message, wrong), lambda: viz.plot_dag(wrong),  # type: ignore[arg-type]
        lambda: viz.dag_info(wrong), lambda: viz.to_networkx(wrong),
        lambda: viz.match_summaries(wrong, one_message), lambda: viz.summary_detail_info(wrong, "sum_x"),
    ]
    for view in views:
        with pytest.raises(OptionError, match=rf"expected (a Replay, a Conversation or )?Summary values, got {got}; "
                                              r"pass what lab\.replay returns, a Conversation \(lab\.read_transcript"):
            view()


def test_mean_interval_refuses_missing_and_infinite_values() -> None:
    with pytest.raises(DataError, match=r"1 of the 3 values are not \(1 missing, NaN or None; 0 infinite\).*dropna"):
        viz.mean_interval([float("nan"), 1.0, 2.0])
    with pytest.raises(DataError, match=r"0 missing, NaN or None; 1 infinite"):
        viz.mean_interval([math.inf, 1.0])
    with pytest.raises(DataError, match="1 missing"):
        viz.mean_interval([None, 1.0, 2.0])  # type: ignore[list-item]


def test_mean_interval_near_the_float_limit_and_without_spread() -> None:
    low, high = viz.mean_interval([1e308, 1e308, -1e308])  # the sum overflows; the mean does not
    assert math.isfinite(low) and math.isfinite(high) and low < 1e308 / 3 < high
    assert viz.mean_interval([0.5] * 5) == (0.5, 0.5)  # no spread: a zero-width interval, by design
    values = [0.1, 0.7, 0.33, 5e-3, 2.0]
    assert viz.mean_interval(values) == bootstrap_interval(values)  # one rule, in metrics.stats
