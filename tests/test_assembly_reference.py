"""Assembly reproduces the real lossless-claw assembler byte for byte (reference runs)."""

from __future__ import annotations

import gzip
import json
from functools import cache
from typing import Any

import pytest
from assembly_reference import (
    SMALL_FIXTURE,
    TRACES,
    EngineState,
    assemble_like_trace,
    differences,
    load_state,
    load_trace,
    state_from_json,
    summary_keys,
)
from conftest import reference_db

from lcm_lab.engine.assembly.bare import assemble
from lcm_lab.engine.replay.trace import assembly_record

RUN_IDS = sorted(path.name.removesuffix(".trace.json.gz") for path in TRACES.glob("*.trace.json.gz"))


@cache
def _small_fixture() -> dict[str, Any]:
    with gzip.open(SMALL_FIXTURE, "rt", encoding="utf-8") as fh:
        data: dict[str, Any] = json.load(fh)
    return data


def _small_cases() -> list[tuple[str, int]]:
    return [
        (run["run_id"], index) for run in _small_fixture()["runs"] for index in range(len(run["expected"]))
    ]


@pytest.mark.parametrize(("run_id", "index"), _small_cases())
def test_bundled_reference_assemblies_match(run_id: str, index: int) -> None:
    run = next(r for r in _small_fixture()["runs"] if r["run_id"] == run_id)
    state = state_from_json(run["state"])
    expected = run["expected"][index]
    settings = run["settings"]
    assembly = assemble(
        state.messages,
        state.summaries,
        state.context,
        token_budget=expected["tokenBudget"],
        fresh_tail_count=settings["fresh_tail_count"],
        fresh_tail_max_tokens=settings["fresh_tail_max_tokens"],
        timezone=settings["timezone"],
    )
    assert differences(assembly_record(assembly, run["summary_keys"]), expected) == []


def test_bundled_fixture_covers_both_selection_modes_and_summaries() -> None:
    modes = {e["selectionMode"] for run in _small_fixture()["runs"] for e in run["expected"]}
    kinds = {item[1] for run in _small_fixture()["runs"] for e in run["expected"] for item in e["items"]}
    assert modes == {"full-fit", "chronological"}
    assert kinds == {"message", "summary"}


def _state(run_id: str, states: dict[str, EngineState]) -> EngineState:
    if run_id not in states:
        states[run_id] = load_state(reference_db(run_id))
    return states[run_id]


_STATES: dict[str, EngineState] = {}


@pytest.mark.parametrize("index", [0, 1], ids=["run-budget", "tight-budget"])
@pytest.mark.parametrize("run_id", RUN_IDS)
def test_reference_run_assembly_matches(
    run_id: str, index: int
) -> None:
    trace = load_trace(run_id)
    state = _state(run_id, _STATES)
    record = assembly_record(assemble_like_trace(state, trace, index), summary_keys(trace))
    assert differences(record, trace["assembled"][index]) == []
