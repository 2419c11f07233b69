"""Property tests for assembly: budget accounting, pairing validity, the newest-user rule."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from test_assembly import text_message, tool_call_message, tool_result_message

from lcm_lab.engine.assembly.bare import assemble
from lcm_lab.engine.types import Assembly, ContextItem, StoredMessage, Summary


@st.composite
def conversations(draw: st.DrawFn) -> tuple[list[StoredMessage], list[Summary], list[ContextItem]]:
    summaries = [
        Summary(f"sum_{i:016x}", "leaf", 0, "summary " * draw(st.integers(1, 60)), 5)
        for i in range(draw(st.integers(0, 3)))
    ]
    messages: list[StoredMessage] = []
    seq = 0
    for turn in range(draw(st.integers(1, 6))):
        seq += 1
        messages.append(text_message(seq, "user", f"question {turn} " + "q" * draw(st.integers(0, 300))))
        for call_index in range(draw(st.integers(0, 2))):
            seq += 1
            call_id = f"toolu_{turn}_{call_index}"
            messages.append(tool_call_message(seq, call_id))
            if draw(st.booleans()) or draw(st.booleans()):  # results are usually present
                seq += 1
                messages.append(tool_result_message(seq, call_id, "r" * draw(st.integers(1, 400))))
        if draw(st.booleans()):
            seq += 1
            messages.append(text_message(seq, "assistant", "answer " * draw(st.integers(1, 50))))
    context = [ContextItem.summary(s.summary_id) for s in summaries] + [
        ContextItem.message(m.seq) for m in messages
    ]
    return messages, summaries, context


def _run(case: tuple[list[StoredMessage], list[Summary], list[ContextItem]], **kwargs: Any) -> Assembly:
    messages, summaries, context = case
    return assemble({m.seq: m for m in messages}, {s.summary_id: s for s in summaries}, context, **kwargs)


knobs = {
    "token_budget": st.integers(0, 3000),
    "fresh_tail_count": st.integers(0, 10),
    "fresh_tail_max_tokens": st.one_of(st.none(), st.integers(0, 500)),
}


@settings(max_examples=150, deadline=None)
@given(case=conversations(), **knobs)
def test_budget_accounting(
    case: Any, token_budget: int, fresh_tail_count: int, fresh_tail_max_tokens: int | None
) -> None:
    result = _run(
        case,
        token_budget=token_budget,
        fresh_tail_count=fresh_tail_count,
        fresh_tail_max_tokens=fresh_tail_max_tokens,
    )
    assert result.remaining_budget == max(0, token_budget - result.tail_tokens)
    assert result.tail_tokens <= result.estimated_tokens <= max(token_budget, result.tail_tokens)
    if result.selection_mode == "full-fit":
        assert result.estimated_tokens == result.tail_tokens + result.evictable_total_tokens
    assert (
        _run(
            case,
            token_budget=token_budget,
            fresh_tail_count=fresh_tail_count,
            fresh_tail_max_tokens=fresh_tail_max_tokens,
        )
        == result
    )


@settings(max_examples=150, deadline=None)
@given(case=conversations(), **knobs)
def test_every_call_is_followed_by_exactly_its_results(
    case: Any, token_budget: int, fresh_tail_count: int, fresh_tail_max_tokens: int | None
) -> None:
    result = _run(
        case,
        token_budget=token_budget,
        fresh_tail_count=fresh_tail_count,
        fresh_tail_max_tokens=fresh_tail_max_tokens,
    )
    messages = [item.message for item in result.items]
    i = 0
    while i < len(messages):
        message = messages[i]
        assert message["role"] != "toolResult", f"result without its call at {i}"
        calls = [b["id"] for b in message["content"] if isinstance(b, dict) and b.get("type") == "toolCall"]
        i += 1
        if message["role"] == "assistant" and calls:
            answered = []
            while i < len(messages) and messages[i]["role"] == "toolResult":
                answered.append(messages[i]["toolCallId"])
                i += 1
            assert answered == calls


@settings(max_examples=150, deadline=None)
@given(case=conversations(), **knobs)
def test_newest_user_message_and_what_follows_are_always_sent(
    case: Any, token_budget: int, fresh_tail_count: int, fresh_tail_max_tokens: int | None
) -> None:
    messages, _, _ = case
    result = _run(
        case,
        token_budget=token_budget,
        fresh_tail_count=fresh_tail_count,
        fresh_tail_max_tokens=fresh_tail_max_tokens,
    )
    newest_user = max(m.seq for m in messages if m.role == "user")
    sent = {item.ref for item in result.items if item.kind == "message"}
    if fresh_tail_count > 0:
        # Text messages after the newest user are never dropped; tool calls are kept with a
        # result (real or synthetic), so every stored message of the suffix is sent.
        assert {m.seq for m in messages if m.seq >= newest_user} <= sent
