"""``run.ask``: the question turn, a branch of a finished replay.

* the six question-turn records of tests/fixtures/reference-runs-question (the real engine, LoCoMo
  conv-26 + one question) are reproduced exactly by ``ask`` on a replay of the *base* conversation;
* the branch restore is the engine: every emergency drain the deferred reference runs recorded is
  reproduced by a drain run on the state restored after the turn before, and a question asked at
  the next turn's start is that turn's per-turn call;
* a probe never changes the replay; the clock, the backoff and ``at`` behave as documented;
* every strategy's run answers ``ask``.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import re
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from reference_runs import input_path
from reference_sets import load_trace, replay_of, run_ids

from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.replay.driver import Replay, replay
from lcm_lab.engine.replay.question import DEFAULT_DELAY_MS, SummarizerNeededError, branch_drain
from lcm_lab.engine.replay.trace import attempt_record, question_turn_record, summary_keys
from lcm_lab.engine.types import Conversation
from lcm_lab.engine.versions import EngineVersion
from lcm_lab.errors import OptionError
from lcm_lab.io.transcripts import read_transcript
from lcm_lab.store.replays import replay_from_bytes, replay_to_bytes
from lcm_lab.strategies import get_strategy
from lcm_lab.strategies.lcm import from_replay
from lcm_lab.summarizers import get_summarizer
from lcm_lab.summarizers.stub import StubV1Summarizer

FIXTURE = Path(__file__).parent / "fixtures" / "reference-runs-question"


@cache
def _question_runs() -> tuple[dict[str, Any], ...]:
    with gzip.open(FIXTURE / "question-turns.json.gz", "rt", encoding="utf-8") as f:
        return tuple(json.load(f)["runs"])


@cache
def _question() -> str:
    index = json.loads((FIXTURE / "index.json").read_text())
    return str(index["inputs"]["locomo-conv-0-question"]["question"])


@pytest.fixture(scope="module")
def conv0(tmp_path_factory: pytest.TempPathFactory) -> Conversation:
    path = input_path("locomo-conv-0.jsonl", tmp_path_factory.mktemp("question-inputs"))
    return read_transcript(path).conversations[0].conversation


def _base_replay(run: dict[str, Any], conversation: Conversation) -> Replay:
    mode = run["harness_config"].get("proactiveThresholdCompactionMode")
    config = LcmConfig.from_plugin_config({**run["plugin_config"], **({"proactiveThresholdCompactionMode": mode} if mode else {})})
    return replay(conversation, config, StubV1Summarizer(), token_budget=run["token_budget"])


@pytest.mark.parametrize("run", _question_runs(), ids=lambda r: r["run_id"])
def test_question_turn_reproduces_the_engine(run: dict[str, Any], conv0: Conversation) -> None:
    result = _base_replay(run, conv0)
    assert len(result.turns) == run["turn_count"] - 1  # the question's turn is not replayed
    before = run["before_question"]
    assert list(result.turns[-1].clock_ms or ()) == before["clock_ms"]
    assert result.turns[-1].final_tokens == before["tokens_end"]
    sent = result.ask(_question())
    got = question_turn_record(result, sent)
    expected = dict(run["question_turn"])
    assert got.pop("prompt_line") is None and expected.pop("prompt_line") == 421  # the question is no input line
    for field in ("path", "clamped", "messages_sha256", "estimatedTokens", "emergency_drain"):
        assert got[field] == expected[field], field
    assert got == expected
    # the drain ran at the question's time: one hour after the last message
    if sent.emergency_drain is not None:
        assert sent.emergency_drain.now_ms == before["clock_ms"][1] + DEFAULT_DELAY_MS
        assert sent.emergency_drain.ran and not sent.emergency_drain.force  # retry_attempts >= 3, backoff expired


@pytest.fixture(scope="module")
def input_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("deferred-inputs")


@pytest.mark.parametrize("run_id", run_ids("deferred"))
def test_a_drain_on_the_restored_state_is_the_recorded_drain(run_id: str, input_dir: Path) -> None:
    result = replay_of(load_trace("deferred", run_id), input_dir)
    keys = summary_keys(result)
    checked = 0
    for k in range(len(result.turns) - 1):
        following = result.turns[k + 1]
        if following.emergency_drain is None:
            continue
        assert following.clock_ms is not None
        start = branch_drain(result, k, following.clock_ms[0], result.token_budget, StubV1Summarizer(), result.start_state(k))
        assert start.emergency_drain is not None and start.summaries is not None
        got = attempt_record(start.emergency_drain, result, keys, {**result.summaries_by_id, **start.summaries})
        assert got == attempt_record(following.emergency_drain, result, keys), f"turn {k + 1}"
        recorded = result.sent(k + 1)
        branched = result.engine_call(k + 1, start, result.token_budget, recorded.prompt, per_turn=True)
        assert (branched.path, branched.items, branched.estimated_tokens) == (recorded.path, recorded.items, recorded.estimated_tokens)
        checked += 1
    drains = sum(1 for t in result.turns[1:] if t.emergency_drain is not None)
    assert checked == drains


@pytest.mark.parametrize("run_id", ["before-compaction__C1-defaults-32k", "synth-2__C2-tight"])
def test_a_question_at_the_next_turns_start_is_that_turns_call(run_id: str, input_dir: Path) -> None:
    result = replay_of(load_trace("deferred", run_id), input_dir)
    for k in range(len(result.turns) - 1):
        recorded = result.sent(k + 1)
        assert recorded.prompt is not None and result.turns[k + 1].clock_ms is not None
        text = recorded.prompt.message["content"]
        text = text if isinstance(text, str) else "\n".join(b.get("text", "") for b in text if b.get("type") == "text")
        asked = result.ask(text, after_turn=k, at=result.turns[k + 1].clock_ms[0])
        assert (asked.path, asked.items, asked.estimated_tokens, asked.emergency_drain, asked.turn) == (
            recorded.path, recorded.items, recorded.estimated_tokens, recorded.emergency_drain, recorded.turn,
        ), f"turn {k + 1}"  # fmt: skip


def test_a_probe_never_changes_the_replay(conv0: Conversation) -> None:
    run = next(r for r in _question_runs() if r["token_budget"] == 4000)
    result = _base_replay(run, conv0)
    before = replay_to_bytes(result)
    sent_before = [result.sent(k) for k in range(0, len(result.turns), 17)]
    drained = result.ask("What did Caroline research?")
    assert drained.emergency_drain is not None and drained.emergency_drain.created_summary_ids  # a branch that compacted
    for k in (10, 100, len(result.turns) - 1):
        result.ask("Where did Melanie go?", after_turn=k)
    assert replay_to_bytes(result) == before
    assert [result.sent(k) for k in range(0, len(result.turns), 17)] == sent_before
    assert not set(drained.emergency_drain.created_summary_ids) & set(result.summaries_by_id)
    assert {s.summary_id for s in drained.created_summaries} == set(drained.emergency_drain.created_summary_ids)


def test_the_clock_and_the_backoff_decide_the_drain(conv0: Conversation) -> None:
    run = next(r for r in _question_runs() if r["token_budget"] == 4000)
    result = _base_replay(run, conv0)
    debt = result.turns[-1].debt_after
    assert debt is not None and debt.pending and debt.retry_attempts >= 3 and debt.next_attempt_after_ms is not None
    early = result.ask("When?", at=debt.next_attempt_after_ms - 1)  # backoff still active: not forced, skipped
    assert early.emergency_drain is not None and early.emergency_drain.outcome == "skipped-backoff"
    assert early.path == "degraded:emergency-debt-still-pending" and not early.created_summaries
    due = result.ask("When?", at=debt.next_attempt_after_ms)  # expired (the check is strict)
    assert due.emergency_drain is not None and due.emergency_drain.ran
    # a time before the last turn's clock does not move the clock back
    back = result.ask("When?", at=0)
    assert back.emergency_drain is not None and back.emergency_drain.now_ms == result.turns[-1].clock_ms[1]  # type: ignore[index]
    # a datetime (naive = UTC) and epoch milliseconds are the same time
    moment = datetime.fromtimestamp(debt.next_attempt_after_ms / 1000, tz=UTC)
    assert result.ask("When?", at=moment).emergency_drain == due.emergency_drain
    assert result.ask("When?", at=moment.replace(tzinfo=None)).emergency_drain == due.emergency_drain
    with pytest.raises(OptionError, match="datetime or epoch"):
        result.ask("When?", at="tomorrow")  # type: ignore[arg-type]
    with pytest.raises(OptionError, match="after_turn"):
        result.ask("When?", after_turn=len(result.turns))


def test_forced_drains_ignore_the_backoff(input_dir: Path) -> None:
    result = replay_of(load_trace("deferred", "before-compaction__C2-tight"), input_dir)
    k = next(k for k, t in enumerate(result.turns)
             if t.debt_after and t.debt_after.pending and t.debt_after.retry_attempts < 3 and t.debt_after.backoff_active
             and t.final_tokens > result.token_budget)  # fmt: skip
    sent = result.ask("What next?", after_turn=k, at=result.turns[k].clock_ms[1])  # type: ignore[index]
    assert sent.emergency_drain is not None and sent.emergency_drain.force and sent.emergency_drain.ran


def test_a_stored_replay_drains_with_its_rebuilt_stub_and_a_models_needs_a_summarizer(conv0: Conversation) -> None:
    run = next(r for r in _question_runs() if r["token_budget"] == 4000)
    result = _base_replay(run, conv0)
    rebuilt = replay_from_bytes(replay_to_bytes(result))
    assert isinstance(rebuilt, Replay) and isinstance(rebuilt.compaction_summarizer, StubV1Summarizer) and rebuilt == result
    assert rebuilt.ask("When?") == result.ask("When?")  # the stub that wrote it, built again: the same drain
    # a run a model wrote: the store keeps no model to call, and none is assumed
    modelled = replay_from_bytes(replay_to_bytes(dataclasses.replace(result, summarizer="litellm")))
    assert isinstance(modelled, Replay) and modelled.compaction_summarizer is None
    with pytest.raises(SummarizerNeededError, match=r"lcm-lab report --model MODEL .* or summarizer= in a notebook"):
        modelled.ask("When?")
    assert modelled.ask("When?", summarizer=StubV1Summarizer()).items == result.ask("When?").items
    assert modelled.ask("When?", after_turn=3).path == result.ask("When?", after_turn=3).path  # no drain: no summarizer needed


def test_prompt_aware_eviction_reads_the_question(conv0: Conversation) -> None:
    config = LcmConfig(prompt_aware_eviction=True, fresh_tail_count=8, leaf_chunk_tokens=2000, leaf_target_tokens=400,
                       condensed_target_tokens=300)  # fmt: skip
    result = replay(conv0, config, get_summarizer("offline"), token_budget=6000)
    questions = ("Where did Caroline move from? Sweden", "What is Melanie's favourite painting?")
    a, b = (result.ask(q, after_turn=120, budget=2500) for q in questions)  # the bare assembler evicts here
    assert a.bare is not None and a.bare.selection_mode == "prompt-aware"
    assert a.items != b.items  # each question keeps what it matches: no branch is shared between them
    assert a.prompt is not None and a.prompt.message["content"][0]["text"] == questions[0]
    plain = dataclasses.replace(result, config=dataclasses.replace(config, prompt_aware_eviction=False))
    c, d = (plain.ask(q, after_turn=120, budget=2500) for q in questions)
    assert c.items == d.items and c.bare is not None and c.bare.selection_mode == "chronological"
    assert d.prompt is not None and d.prompt.message["content"][0]["text"] == questions[1]


def test_every_strategy_answers_the_question_turn(conv0: Conversation) -> None:
    for name in ("truncate", "full", "observer_regex"):
        run = get_strategy(name).run(conv0, StubV1Summarizer(), 6000)
        last = run.ask("When did Caroline go to the LGBTQ support group?")
        assert last.turn == len(run.turns) and last.prompt is not None
        assert last.items == run.sent(None).items
        middle = run.ask("Anything?", after_turn=40)
        assert middle.items == run.sent(41).items and middle.turn == 41
    lcm = from_replay(_base_replay(_question_runs()[0], conv0))
    assert lcm.ask(_question()).items == lcm.replay.ask(_question()).items  # type: ignore[union-attr]
    searched = get_strategy("observer_regex", observe_threshold=2000, top_k=3).run(conv0, StubV1Summarizer(), 6000)
    on_topic = searched.ask("adoption agencies")
    assert on_topic.items != searched.ask("a painting of a sunset").items  # the search reads the question


@pytest.mark.parametrize("engine", ["0.15.3", "1.0"])
def test_a_mistaken_question_is_an_option_error_naming_what_to_pass(engine: EngineVersion) -> None:
    from lcm_lab.engine.types import InputEntry

    chat = Conversation("q", entries=(
        InputEntry(2, "message", {"role": "user", "content": "hello " * 400, "timestamp": 0}),
        InputEntry(3, "message", {"role": "assistant", "content": [{"type": "text", "text": "hi"}], "timestamp": 1000}),
        InputEntry(4, "message", {"role": "user", "content": "and now?", "timestamp": 2000}),
    ))  # fmt: skip
    run = replay(chat, LcmConfig(fresh_tail_count=1), StubV1Summarizer(), token_budget=500, engine=engine)
    exist = r"the replay has 2 turn\(s\); turns that exist: 0 to 1, or -1 to -2 from the end"
    for turn in (2, -3, 10**30, True, 1.0, "1"):
        with pytest.raises(OptionError, match=f"^after_turn={re.escape(repr(turn))}: {exist}$"):
            run.ask("q", after_turn=turn)  # type: ignore[arg-type]
    for at in (float("nan"), float("inf"), -10**18, 10**30, "tomorrow", True):
        with pytest.raises(OptionError, match=r"^at=.*: expected a datetime or epoch milliseconds within ±8,640,000,000,000,000"):
            run.ask("q", at=at)  # type: ignore[arg-type]
    with pytest.raises(OptionError, match="question: expected the user's message as a string.*not NoneType"):
        run.ask(None)  # type: ignore[arg-type]
    for budget in (0, -5, 2.5, True):
        with pytest.raises(OptionError, match=f"budget={budget!r}: expected a whole number of tokens"):
            run.ask("q", budget=budget)  # type: ignore[arg-type]
    assert run.ask("q", after_turn=-2, at=8.64e15).turn == 1  # the edges are accepted
    empty = replay(Conversation("e"), LcmConfig(), StubV1Summarizer(), token_budget=500, engine=engine)
    with pytest.raises(OptionError, match="at least one turn.*this run has none"):
        empty.ask("q", after_turn=0)
    truncated = get_strategy("truncate").run(chat, StubV1Summarizer(), 500)  # another strategy's run: the same checks
    for call in (lambda: truncated.sent(2), lambda: truncated.ask("q", after_turn=True), lambda: truncated.ask("q", at=float("nan"))):
        with pytest.raises(OptionError, match="turns that exist: 0 to 1|epoch milliseconds within"):
            call()
    assert truncated.sent(-1).turn == 1
