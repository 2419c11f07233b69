"""ClawVault's observer benchmark over any strategy, on the lab's own fixtures with a held-out split."""

from __future__ import annotations

from lcm_lab.metrics.fixtures import split_fixtures
from lcm_lab.metrics.observer_bench import (
    fixture_conversation,
    load_fixtures,
    observer_benchmark,
    run_observations,
    strategy_outputs,
)
from lcm_lab.strategies import run_strategy


def test_lab_fixtures_load_and_split_stably() -> None:
    fixtures = load_fixtures()
    assert len(fixtures) == 8 and all(f.expected and f.transcript for f in fixtures)
    split = split_fixtures([f.name for f in fixtures])
    assert set(split.values()) == {"dev", "heldout"}
    assert split == split_fixtures(sorted(split, reverse=True))  # independent of order


def test_benchmark_scores_observer_and_raw_strategies_per_split() -> None:
    fixtures = load_fixtures()
    scores = {s.metric: s.value for s in observer_benchmark("observer_regex", fixtures=fixtures) if s.scope == "run"}
    for part in ("dev", "heldout"):
        assert 0.0 <= scores[f"fixture_overall_{part}"] <= 1.0  # type: ignore[operator]
    per_fixture = [s for s in observer_benchmark("full", fixtures=fixtures) if s.scope == "fixture" and s.metric == "fixture_overall"]
    assert len(per_fixture) == len(fixtures)
    # raw lines are untyped: the overall renormalises without the type weight
    assert all("type_accuracy" not in s.details["weights_used"] for s in per_fixture)


def test_observations_of_each_strategy_kind() -> None:
    fixture = load_fixtures()[0]
    regex = strategy_outputs([fixture], "observer_regex")[fixture.name]
    assert regex and all(o.type is not None and o.importance is not None for o in regex)
    full = run_observations(run_strategy(fixture_conversation(fixture), "full", None, 100_000))
    assert [o.type for o in full] == [None] * len(full) and len(full) >= len(fixture.transcript)
