"""The engine-level, deferred and 1.0 reference sets (tests/fixtures/reference-runs-{engine,deferred,v1}).

Both replay inputs of the DEV set (tests/fixtures/reference-runs/inputs) under its C1/C2 configs;
their traces add what ``engine.assemble`` returned per turn and at the end, and (deferred) the
debt, drains and backoffs of the plugin's default compaction mode.
"""

from __future__ import annotations

import gzip
import json
from functools import cache
from pathlib import Path
from typing import Any

from reference_runs import config_for, conversation_for

from lcm_lab.engine.replay.driver import Replay, replay
from lcm_lab.summarizers.stub import StubV1Summarizer

FIXTURES = Path(__file__).parent / "fixtures"
SETS = ("engine", "deferred", "v1")


@cache
def index(reference_set: str) -> list[dict[str, Any]]:
    return json.loads((FIXTURES / f"reference-runs-{reference_set}" / "index.json").read_text())["runs"]


def run_ids(reference_set: str) -> list[str]:
    return [run["run_id"] for run in index(reference_set)]


def load_trace(reference_set: str, run_id: str) -> dict[str, Any]:
    path = FIXTURES / f"reference-runs-{reference_set}" / "traces" / f"{run_id}.trace.json.gz"
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def replay_of(trace: dict[str, Any], input_dir: Path) -> Replay:
    """Replay a trace's input and config with stub-v1 at its run budget (a 1.0 trace on engine 1.0)."""
    v1 = trace["driver"].get("protocol") == "commitTurn-deferred-v1"
    return replay(
        conversation_for(trace["run_id"], input_dir),
        config_for(trace),
        StubV1Summarizer(),
        token_budget=trace["token_budget"],
        engine="1.0" if v1 else "0.15.3",
    )
