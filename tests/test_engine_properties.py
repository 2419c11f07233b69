"""Property tests of the engine on generated conversations and settings (hypothesis)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.replay.driver import Replay, replay
from lcm_lab.engine.tail import NO_TAIL, fresh_tail_start
from lcm_lab.engine.types import Conversation, InputEntry
from lcm_lab.summarizers.stub import StubV1Summarizer

WORDS = ("deploy", "error", "src/app.py", "retry", "42ms", "token", "cache", "v1.2.3", "Ada", "queue")


@st.composite
def conversations(draw: st.DrawFn) -> Conversation:
    n = draw(st.integers(min_value=1, max_value=40))
    entries = []
    for i in range(n):
        role = draw(st.sampled_from(("user", "assistant", "assistant", "toolResult")))
        size = draw(st.integers(min_value=0, max_value=120))
        text = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(size))
        if role == "toolResult":
            message = {"role": role, "toolCallId": f"call_{i}", "toolName": "exec",
                       "content": [{"type": "text", "text": text}], "isError": False, "timestamp": 1_700_000_000_000 + i * 60_000}  # fmt: skip
        elif role == "assistant":
            message = {"role": role, "content": [{"type": "text", "text": text}], "timestamp": 1_700_000_000_000 + i * 60_000}
        else:
            message = {"role": role, "content": text or "?", "timestamp": 1_700_000_000_000 + i * 60_000}
        entries.append(InputEntry(line=i + 2, type="message", message=message))
    return Conversation("generated", entries=tuple(entries))


configs = st.builds(
    LcmConfig,
    context_threshold=st.sampled_from((0.5, 0.75, 0.9)),
    fresh_tail_count=st.integers(min_value=0, max_value=8),
    fresh_tail_max_tokens=st.one_of(st.none(), st.integers(min_value=50, max_value=600)),
    leaf_chunk_tokens=st.integers(min_value=100, max_value=1500),
    leaf_target_tokens=st.sampled_from((50, 200, 400)),
    condensed_target_tokens=st.sampled_from((20, 100, 300)),
    leaf_min_fanout=st.integers(min_value=2, max_value=6),
    condensed_min_fanout=st.integers(min_value=2, max_value=4),
    sweep_max_depth=st.sampled_from((-1, 0, 1, 2)),
    max_sweep_iterations=st.sampled_from((3, 12)),
)
budgets = st.integers(min_value=300, max_value=4000)
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def covered_seqs(result: Replay, turn: int) -> list[int]:
    """Message seqs reachable from the context after ``turn`` (raw or through summaries)."""
    by_id = {s.summary_id: s for s in result.summaries}
    out: list[int] = []

    def expand(summary_id: str) -> None:
        summary = by_id[summary_id]
        out.extend(summary.source_message_seqs)
        for source in summary.source_summary_ids:
            expand(source)

    for item in result.context_at(turn):
        if item.kind == "message":
            out.append(int(item.ref))
        else:
            expand(str(item.ref))
    return out


@SETTINGS
@given(conversations(), configs, budgets)
def test_every_message_is_covered_exactly_once_at_every_turn(conversation, config, budget) -> None:
    result = replay(conversation, config, StubV1Summarizer(), token_budget=budget)
    ingested: list[int] = []
    for k, turn in enumerate(result.turns):
        ingested.extend(turn.ingested_seqs)
        assert sorted(covered_seqs(result, k)) == sorted(ingested)


@SETTINGS
@given(conversations(), configs, budgets)
def test_newest_user_message_and_its_suffix_stay_raw(conversation, config, budget) -> None:
    result = replay(conversation, config, StubV1Summarizer(), token_budget=budget)
    roles = {m.seq: m.role for m in result.messages}
    for k in range(len(result.turns)):
        if config.fresh_tail_count <= 0:
            continue
        seen = [s for t in result.turns[: k + 1] for s in t.ingested_seqs]
        users = [s for s in seen if roles[s] == "user"]
        if not users:
            continue
        raw = {int(i.ref) for i in result.context_at(k) if i.kind == "message"}
        assert {s for s in seen if s >= users[-1]} <= raw


@SETTINGS
@given(conversations(), configs, budgets)
def test_a_sweep_that_made_progress_never_increases_stored_tokens(conversation, config, budget) -> None:
    result = replay(conversation, config, StubV1Summarizer(), token_budget=budget)
    for turn in result.turns:
        for sweep in turn.sweeps:
            if sweep.action_taken and sweep.tokens_after < sweep.tokens_before:
                assert sweep.tokens_after <= sweep.stored_before
        if turn.compact_result and turn.compact_result["tokensAfter"] < turn.stored_tokens_before:
            assert turn.tokens_after <= turn.stored_tokens_before


@settings(max_examples=25, deadline=None)
@given(conversations(), configs, budgets)
def test_replay_is_deterministic(conversation, config, budget) -> None:
    first = replay(conversation, config, StubV1Summarizer(), token_budget=budget)
    second = replay(conversation, config, StubV1Summarizer(), token_budget=budget)
    assert first == second


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.booleans(), st.integers(min_value=0, max_value=500)), max_size=30),
    st.integers(min_value=0, max_value=10),
    st.one_of(st.none(), st.integers(min_value=0, max_value=2000)),
)
def test_fresh_tail_rule(items, count, cap) -> None:
    raw = [(i, is_user) for i, (is_user, _) in enumerate(items)]
    start = fresh_tail_start(raw, lambda i: items[i][1], count, cap)
    if count <= 0 or not raw:
        assert start == NO_TAIL
        return
    users = [i for i, (u, _) in enumerate(items) if u]
    if users:
        assert start <= users[-1]  # the newest user message is always protected
    assert start <= len(items) - 1  # the newest message is always protected
