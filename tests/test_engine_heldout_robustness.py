"""Robustness: the held-out transcripts (inputs only) replay cleanly under every reference config.

Their expected traces are held out, so this checks what must hold for any input: the reader
finds no problems, every message is covered exactly once at the end, the run is deterministic
and its trace is well formed. The inputs are bundled in ``tests/fixtures/heldout-inputs.tar.xz``.
"""

from __future__ import annotations

import pytest
from conftest import archive_members, unpacked
from reference_runs import config_for, load_trace
from test_engine_properties import covered_seqs

from lcm_lab.engine.replay.driver import replay
from lcm_lab.engine.replay.trace import compare_traces, reference_trace
from lcm_lab.io.transcripts import read_transcript
from lcm_lab.summarizers.stub import StubV1Summarizer

INPUTS = archive_members("heldout-inputs", ".jsonl")
CONFIGS = ("C2-tight", "C6-deep-reachable")


@pytest.mark.parametrize("name", INPUTS, ids=lambda n: n.removesuffix(".jsonl"))
def test_heldout_input_replays_cleanly(name: str) -> None:
    read = read_transcript(unpacked("heldout-inputs") / name)
    assert not read.issues, [str(i) for i in read.issues]
    conversation = read.conversations[0].conversation
    for name in CONFIGS:
        golden = load_trace(f"golden__{name}")
        first, second = (
            replay(conversation, config_for(golden), StubV1Summarizer(), token_budget=golden["token_budget"]) for _ in range(2)
        )
        ingested = [s for t in first.turns for s in t.ingested_seqs]
        assert sorted(covered_seqs(first, -1)) == sorted(ingested)
        trace = reference_trace(first, tight_budget=golden["tight_budget"])
        assert compare_traces(trace, reference_trace(second, tight_budget=golden["tight_budget"])) == []
        assert trace["turn_count"] == len(first.turns) > 0
        assert all(t["tokens_after"] == t["stored_tokens_before"] or t["compact"] for t in trace["turns"])
