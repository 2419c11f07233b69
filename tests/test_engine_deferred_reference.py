"""Fidelity of the plugin's default deferred compaction mode, on transcript time.

Every run of tests/fixtures/reference-runs-deferred is reproduced field by field: per turn the
afterTurn evaluation, the debt row before and after, the post-turn drain and host maintenance
(outcome, sweeps, calls, summaries, backoff), the state they leave (tokens_end, context_end), the
emergency drain inside the per-turn assemble and what that assemble returns; the final DAG with
each summary's creator; and totals.deferred.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from reference_sets import load_trace, replay_of, run_ids

from lcm_lab.engine.compaction.deferred import retry_delay_ms
from lcm_lab.engine.replay.trace import compare_traces, reference_trace


@pytest.fixture(scope="module")
def input_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("deferred-inputs")


@pytest.mark.parametrize("run_id", run_ids("deferred"))
def test_deferred_run_is_reproduced_exactly(run_id: str, input_dir: Path) -> None:
    expected = load_trace("deferred", run_id)
    assert "proactiveThresholdCompactionMode" not in expected["harness_config"]
    result = replay_of(expected, input_dir)
    assert result.compaction_mode == "deferred"  # the plugin's default, like the engine's
    got = reference_trace(result, tight_budget=expected["tight_budget"])
    differences = compare_traces(got, expected)
    assert not differences, "\n".join(differences)
    assert got["totals"]["deferred"] == expected["totals"]["deferred"]
    assert [t["drain"] is not None for t in got["turns"]] == [t["drain"] is not None for t in expected["turns"]]


def test_a_changed_drain_outcome_is_caught(input_dir: Path) -> None:
    expected = load_trace("deferred", "synth-2__C2-tight")
    got = reference_trace(replay_of(expected, input_dir), tight_budget=expected["tight_budget"])
    turn = next(t for t in got["turns"] if t["drain"] and t["drain"]["outcome"] == "skipped-backoff")
    turn["drain"]["outcome"] = "compacted"
    assert compare_traces(got, expected) == [
        f".turns[{turn['turn']}].drain.outcome: 'compacted' != expected 'skipped-backoff'"
    ]


def test_backoff_doubles_from_five_minutes_and_caps_at_thirty() -> None:
    assert [retry_delay_ms(n) for n in range(1, 8)] == [
        300_000, 600_000, 1_200_000, 1_800_000, 1_800_000, 1_800_000, 1_800_000,
    ]  # fmt: skip
