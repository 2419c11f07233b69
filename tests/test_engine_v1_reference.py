"""Fidelity of the lossless-claw 1.0 engine (``replay(..., engine="1.0")``) against every DEV run
of tests/fixtures/reference-runs-v1, recorded with the real engine at next/1.0 @ bf3d69ef.

Per run the whole trace is compared field by field (:func:`compare_traces`): per turn what the
model receives (path, clamp, estimate, items, message hash, the emergency drain's phase record
with its log lines), the commitTurn / background / host-maintain phase records (scheduler calls,
drains, evaluations, leaf triggers, debt consumption, pending cores, coordinator steps, legacy
sweeps, summarizer calls with their pipeline, created summaries), debt snapshots, pending-table
state, the final DAG and totals. Only the recording harness's event-loop tick counts and wall
clock are left out (:data:`HARNESS_FIELDS`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from reference_sets import load_trace, replay_of, run_ids

from lcm_lab.engine.replay.trace import compare_traces
from lcm_lab.engine.replay.trace_v1 import v1_trace, without_harness


@pytest.fixture(scope="module")
def input_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("v1-inputs")


def _got_and_expected(run_id: str, input_dir: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    expected = load_trace("v1", run_id)
    result = replay_of(expected, input_dir)
    assert result.engine == "1.0"
    got = v1_trace(result, tight_budget=expected["tight_budget"])
    return without_harness(got), without_harness(expected)


@pytest.mark.parametrize("run_id", run_ids("v1"))
def test_v1_run_is_reproduced_exactly(run_id: str, input_dir: Path) -> None:
    got, expected = _got_and_expected(run_id, input_dir)
    differences = compare_traces(got, expected)
    assert not differences, "\n".join(differences)
    assert got["totals"] == expected["totals"]
    per_turn = got["engine_assembled_per_turn"]
    assert [r["path"] for r in per_turn] == [r["path"] for r in expected["engine_assembled_per_turn"]]
    assert [r["messages_sha256"] for r in per_turn] == [r["messages_sha256"] for r in expected["engine_assembled_per_turn"]]


def test_a_changed_coordinator_step_is_caught(input_dir: Path) -> None:
    got, expected = _got_and_expected("golden__G0-golden", input_dir)
    turn = next(t for t in got["turns"] if t["background"]["coordinator_steps"])
    turn["background"]["coordinator_steps"][0]["status"] = "stale"
    assert compare_traces(got, expected) == [
        f".turns[{turn['turn']}].background.coordinator_steps[0].status: 'stale' != expected "
        f"'{expected['turns'][turn['turn']]['background']['coordinator_steps'][0]['status']}'"
    ]


def test_cli_replays_a_1_0_reference_run_and_checks_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import gzip
    import json
    import shutil

    from reference_sets import FIXTURES

    from lcm_lab.cli import main

    transcript = tmp_path / "golden.jsonl"
    with gzip.open(FIXTURES / "reference-runs" / "inputs" / "golden-session.jsonl.gz") as f, open(transcript, "wb") as out:
        shutil.copyfileobj(f, out)
    expected = tmp_path / "expected.json"
    expected.write_text(json.dumps(load_trace("v1", "golden__G0-golden")))
    trace_out = tmp_path / "trace.json"
    args = ["replay", str(transcript), "--engine", "1.0", "--config", str(expected), "--token-budget", "2000",
            "--tight-budget", "600", "--summarizer", "stub-v1", "--no-save", "--db", str(tmp_path / "lab.duckdb")]  # fmt: skip
    assert main([*args, "--trace-out", str(trace_out), "--check", str(expected)]) == 0
    printed = capsys.readouterr().out
    assert "identical to" in printed and "lossless-claw 1.0" in printed
    written = json.loads(trace_out.read_text())
    assert written["driver"]["protocol"] == "commitTurn-deferred-v1" and written["totals"]["final_stored_tokens"] == 1071
    removed = tmp_path / "removed.json"
    removed.write_text(json.dumps({"autoRotateSessionFiles": {"enabled": True}, "transcriptGcEnabled": False}))
    assert main([*args[:4], "--config", str(removed), *args[6:]]) == 2
    assert "transcriptGcEnabled, autoRotateSessionFiles: not a lossless-claw 1.0 config key" in capsys.readouterr().err
