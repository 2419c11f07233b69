"""Fidelity of what the model receives: the engine-level assembly of the real engine, per turn and at the end.

Every run of tests/fixtures/reference-runs-engine (inline compaction, the emergency drain only
recorded) is reproduced field by field: the afterTurn trace of the DEV set plus, per turn, the
path, clamp, serialized estimate, output items and the hash of the exact message list; at the
end of the run the canonical JSON of every message at both budgets.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from reference_sets import load_trace, replay_of, run_ids

from lcm_lab.engine.replay.trace import compare_traces, reference_trace


@pytest.fixture(scope="module")
def input_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("engine-inputs")


@pytest.mark.parametrize("run_id", run_ids("engine"))
def test_engine_level_assembly_is_reproduced_exactly(run_id: str, input_dir: Path) -> None:
    expected = load_trace("engine", run_id)
    result = replay_of(expected, input_dir)
    assert result.compaction_mode == "inline"
    got = reference_trace(result, tight_budget=expected["tight_budget"])
    differences = compare_traces(got, expected)
    assert not differences, "\n".join(differences)
    per_turn = got["engine_assembled_per_turn"]
    assert len(per_turn) == expected["turn_count"] == len(expected["engine_assembled_per_turn"])
    assert [r["path"] for r in per_turn] == [r["path"] for r in expected["engine_assembled_per_turn"]]
    assert got["engine_assembly"]["emergency_drain_would_run_calls"] == (
        expected["engine_assembly"]["emergency_drain_would_run_calls"]
    )


def test_a_changed_message_hash_is_caught(input_dir: Path) -> None:
    expected = load_trace("engine", "synth-2__C2-tight")
    got = reference_trace(replay_of(expected, input_dir), tight_budget=expected["tight_budget"])
    got["engine_assembled_per_turn"][9]["messages_sha256"] = "0" * 64
    assert compare_traces(got, expected) == [
        f".engine_assembled_per_turn[9].messages_sha256: '{'0' * 64}' != expected "
        f"'{expected['engine_assembled_per_turn'][9]['messages_sha256']}'"
    ]
