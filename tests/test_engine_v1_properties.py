"""What must hold for any lossless-claw 1.0 replay, on inputs and configs the reference set does
not cover (the held-out transcripts of tests/fixtures/heldout-inputs.tar.xz, other settings):

* every stored message is covered exactly once by the final context (raw or through summaries);
* replays are deterministic (identical 1.0 traces);
* summaries become visible only where the debt allows it: background publications only in turns
  over the threshold, maintain/emergency publications only while the debt row is pending;
  prepared pending summaries never change the context of a turn below the threshold;
* a condensed summary sits one level above every summary it condenses;
* the final clamp: an unclamped assembled context fits floor(0.9 × budget), a clamp fires only
  above it;
* a 1.0 replay survives the lab store, ``ask`` is the next turn's call when asked the next user
  message at its time, and a rebuilt emergency drain equals the recorded one;
* config keys 1.0 removed are errors naming them; 0.15.3 stays the default engine.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from conftest import unpacked
from reference_sets import load_trace, replay_of
from test_engine_properties import covered_seqs

from lcm_lab.engine.config.fields import ConfigError
from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.replay.commit_turn import rebuild_engine
from lcm_lab.engine.replay.driver import Replay, replay
from lcm_lab.engine.replay.question import branch_drain_v1
from lcm_lab.engine.replay.trace import compare_traces
from lcm_lab.engine.replay.trace_v1 import v1_trace, without_harness
from lcm_lab.engine.versions import DEFAULT_ENGINE
from lcm_lab.errors import UserError
from lcm_lab.io.transcripts import read_transcript
from lcm_lab.summarizers.stub import StubV1Summarizer

HELDOUT = ("synth-3.jsonl", "synth-5.jsonl", "locomo-conv-2.jsonl")
CONFIGS = {
    "tight-8k": ({"timezone": "UTC", "freshTailCount": 8, "leafChunkTokens": 1000, "contextThreshold": 0.75}, 8000),
    "fanout3-tailcap": ({"timezone": "UTC", "freshTailCount": 12, "freshTailMaxTokens": 1500, "leafChunkTokens": 1500,
                         "condensedMinFanout": 3, "condensedTargetTokens": 200}, 12000),  # fmt: skip
    "g0-like": ({"timezone": "UTC", "freshTailCount": 6, "leafChunkTokens": 400, "condensedTargetTokens": 10}, 2000),
}


@pytest.fixture(scope="module")
def runs() -> dict[tuple[str, str], Replay]:
    out = {}
    for name in HELDOUT:
        conversation = read_transcript(unpacked("heldout-inputs") / name).conversations[0].conversation
        for label, (plugin, budget) in CONFIGS.items():
            config = LcmConfig.from_plugin_config(plugin)
            out[name, label] = replay(conversation, config, StubV1Summarizer(), token_budget=budget, engine="1.0")
    return out


KEYS = [(n, c) for n in HELDOUT for c in CONFIGS]


@pytest.mark.parametrize("key", KEYS, ids=lambda k: f"{k[0].removesuffix('.jsonl')}-{k[1]}")
def test_every_message_is_covered_once_and_the_run_is_deterministic(key: tuple[str, str], runs: dict) -> None:
    result = runs[key]
    ingested = [s for t in result.turns for s in t.ingested_seqs]
    assert sorted(covered_seqs(result, -1)) == sorted(ingested)
    again = replay(result.conversation, result.config, StubV1Summarizer(), token_budget=result.token_budget, engine="1.0")
    assert compare_traces(without_harness(v1_trace(result)), without_harness(v1_trace(again))) == []


@pytest.mark.parametrize("key", KEYS, ids=lambda k: f"{k[0].removesuffix('.jsonl')}-{k[1]}")
def test_summaries_appear_only_where_the_debt_allows(key: tuple[str, str], runs: dict) -> None:
    result = runs[key]
    turns = result.turns
    assert any(s.level == "pending" for s in result.summaries) or not result.summaries
    for s in result.summaries:
        turn = turns[s.created_turn]
        if s.created_by == "background":
            assert turn.should_compact, (s.summary_id, s.created_turn)
        elif s.created_by == "host_maintain":
            assert turn.phases["debt_after_background"].pending
        else:
            assert s.created_by == "emergency_drain" and turn.emergency_drain is not None
            assert turn.emergency_drain.debt_before.pending
    for k, turn in enumerate(turns):
        debt = turn.phases["debt_start"]
        quiet = not turn.should_compact and turn.emergency_drain is None and not (debt and debt.pending)
        if quiet:
            previous = turns[k - 1].final_context if k else ()
            assert turn.final_context[: len(previous)] == previous  # prepared summaries stay invisible
            assert turn.final_tokens == turn.stored_tokens_before


@pytest.mark.parametrize("key", KEYS, ids=lambda k: f"{k[0].removesuffix('.jsonl')}-{k[1]}")
def test_the_dag_is_layered_and_the_clamp_holds(key: tuple[str, str], runs: dict) -> None:
    result = runs[key]
    by_id = result.summaries_by_id
    for s in result.summaries:
        if s.kind == "condensed":
            assert s.source_summary_ids and all(by_id[p].depth == s.depth - 1 for p in s.source_summary_ids)
    target = max(1, math.floor(0.9 * result.token_budget))
    for k in range(len(result.turns)):
        sent = result.sent(k)
        if sent.path != "assembled":
            continue
        if sent.clamped:
            assert sent.serialized_before is not None and sent.serialized_before > target
        else:
            assert sent.estimated_tokens <= target


def test_a_v1_replay_survives_the_store(tmp_path: Path, runs: dict) -> None:
    from lcm_lab.store import open_store
    from lcm_lab.store.replays import load_replay, save_replay

    result = runs["synth-3.jsonl", "tight-8k"]
    store = open_store(tmp_path / "lab.duckdb")
    loaded = load_replay(store, save_replay(store, result))
    assert isinstance(loaded, Replay) and loaded.engine == "1.0"
    assert compare_traces(v1_trace(loaded), v1_trace(result)) == []


@pytest.fixture(scope="module")
def synth1(tmp_path_factory: pytest.TempPathFactory) -> Replay:
    return replay_of(load_trace("v1", "synth-1__C1-defaults-32k"), tmp_path_factory.mktemp("v1-ask"))


def test_ask_is_the_next_turn_when_asked_its_user_message_at_its_time(synth1: Replay) -> None:
    from lcm_lab.engine.assembly.sent import prompt_text
    from lcm_lab.engine.replay.trace import CanonicalJson, summary_keys

    canonical = CanonicalJson(summary_keys(synth1))
    checked = 0
    for k in range(1, len(synth1.turns)):
        prompt = synth1._host_view.prompts[k]
        clock = synth1.turns[k].clock_ms
        if prompt is None or clock is None:
            continue
        asked = synth1.ask(prompt_text(prompt.message) or "", after_turn=k - 1, at=clock[0])
        sent = synth1.sent(k)
        assert (asked.path, canonical.sha256(asked.items)) == (sent.path, canonical.sha256(sent.items)), k
        checked += 1
    assert checked == len(synth1.turns) - 1


def test_a_rebuilt_emergency_drain_equals_the_recorded_one(synth1: Replay) -> None:
    drained = [k for k, t in enumerate(synth1.turns) if t.emergency_drain is not None and k > 0]
    assert len(drained) >= 3
    summarizer = StubV1Summarizer()  # one summarizer: later rebuilds continue from the checkpoint
    for k in drained[:3]:
        start = synth1.start_state(k - 1)
        branch = branch_drain_v1(synth1, k - 1, synth1.turns[k].clock_ms[0], synth1.token_budget, summarizer, start)
        recorded = synth1.turns[k].emergency_drain
        assert (branch.context, branch.stored_tokens) == (recorded.context_after, recorded.tokens_after)
        assert branch.degraded_path == synth1.turns[k].start_degraded_path
    assert synth1._v1_checkpoint["turn"] == drained[2] - 1
    for k in (5, drained[2] + 2):  # earlier than the checkpoint (from scratch), then later (continued)
        assert rebuild_engine(synth1, k, summarizer).state.context == list(synth1.turns[k].final_context)


def test_keys_removed_in_1_0_are_user_errors_naming_them() -> None:
    from lcm_lab.engine.config.surface import check_plugin_keys
    from lcm_lab.engine.types import Conversation
    from lcm_lab.strategies.base import StrategyError
    from lcm_lab.strategies.lcm import LcmStrategy

    chat = Conversation("c")
    with pytest.raises(UserError, match="transcriptGcEnabled"):
        replay(chat, LcmConfig(transcript_gc_enabled=True), StubV1Summarizer(), engine="1.0")
    with pytest.raises(ConfigError, match="autoRotateSessionFiles"):
        check_plugin_keys("1.0", {"autoRotateSessionFiles": {"enabled": False}})
    with pytest.raises(ConfigError, match="unknown lossless-claw version"):
        replay(chat, LcmConfig(), StubV1Summarizer(), engine="2.0")  # type: ignore[arg-type]
    with pytest.raises(StrategyError, match="transcriptGcEnabled"):
        LcmStrategy(params={"engine": "1.0", "transcriptGcEnabled": True}).config()
    check_plugin_keys("0.15.3", {"transcriptGcEnabled": True})  # still a 0.15.3 key
    assert replay(chat, LcmConfig(transcript_gc_enabled=True), StubV1Summarizer()).engine == DEFAULT_ENGINE == "0.15.3"


def test_rewriting_a_pending_summary_writes_it_the_1_0_way(runs: dict) -> None:
    from lcm_lab.engine.replay.edits import rewrite

    result = runs["synth-3.jsonl", "fanout3-tailcap"]
    pending = [s for s in result.summaries if s.level == "pending"]
    leaf = next(s for s in pending if s.kind == "leaf")
    condensed = next(s for s in pending if s.kind == "condensed")
    edited = rewrite(result, [leaf.summary_id, condensed.summary_id], StubV1Summarizer())
    # The stub is deterministic: the same sources give the same texts.
    assert edited.replay.summary(leaf.summary_id).content == leaf.content
    assert edited.replay.summary(condensed.summary_id).content == condensed.content
    assert [c.previous_summary for c in edited.calls] == [None, None] and not any(c.aggressive for c in edited.calls)
