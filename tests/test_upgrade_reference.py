"""compare_versions against the recording: on every DEV input × config of reference-runs-v1, what
it counts (turns whose sent context differs from 0.15.3's in bytes and in shape, summarizer calls,
clamped and degraded turns, summaries sent per turn, final stored tokens, per-turn paths) equals
the ``vs_0153_deferred`` comparison recorded with the real engines (1.0 @ bf3d69ef against the
0.15.3 deferred traces). Lists there are ``[1.0, 0.15.3]``."""

from __future__ import annotations

from pathlib import Path

import pytest
from reference_runs import config_for, conversation_for
from reference_sets import index, load_trace

from lcm_lab.summarizers.stub import StubV1Summarizer
from lcm_lab.upgrade import compare_versions

RUNS = [r["run_id"] for r in index("v1") if r.get("vs_0153_deferred")]


@pytest.fixture(scope="module")
def input_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("compare-inputs")


def test_every_recorded_comparison_is_covered() -> None:
    assert len(RUNS) == 8


@pytest.mark.parametrize("run_id", RUNS)
def test_compare_versions_counts_what_the_recording_counts(run_id: str, input_dir: Path) -> None:
    run = next(r for r in index("v1") if r["run_id"] == run_id)
    expected = run["vs_0153_deferred"]
    trace = load_trace("v1", run_id)
    cmp = compare_versions(conversation_for(run_id, input_dir), config_for(trace), token_budget=trace["token_budget"],
                           summarizer=StubV1Summarizer(), scores=False)  # fmt: skip
    old, new = (next(t for t in cmp.totals if t["engine"] == e) for e in ("0.15.3", "1.0"))
    assert cmp.runs["1.0"].engine == "1.0" and cmp.runs["0.15.3"].engine == "0.15.3"
    assert (new["turns_differing_bytes"], new["turns_differing_shape"]) == (
        expected["sent_context_differs_bytes"], expected["sent_context_differs_shape"])
    assert [new["summarizer_calls"], old["summarizer_calls"]] == expected["summarizer_calls"]
    assert [new["clamped_turns"], old["clamped_turns"]] == expected["clamped_turns"]
    assert [new["degraded_turns"], old["degraded_turns"]] == expected["degraded_turns"]
    assert [new["final_stored_tokens"], old["final_stored_tokens"]] == expected["final_stored_tokens"]
    assert [round(new["summaries_sent_per_turn"], 2), round(old["summaries_sent_per_turn"], 2)] == expected["mean_summaries_sent"]
    assert [new["paths"], old["paths"]] == expected["paths"]
    first = min(cmp.differing_turns(), default=None)
    assert first == expected["first_bytes_diff"]
