"""The engine-level assembly rules (lcm_lab.engine.assembly.sent) on small hand-made inputs.

The reference traces check the rules on real sessions; these pin each rule on its own: the
clamp's ``≤ budget`` test and ``0.9 × budget`` target, tool-result drop, user re-seat, prefill
strip with and without a separately delivered turn, the degraded cut and the fallback order.
"""

from __future__ import annotations

from typing import Any

import pytest

from lcm_lab.engine.assembly.bare import estimate_serialized_message_tokens
from lcm_lab.engine.assembly.sent import (
    clamp_serialized,
    engine_assemble,
    is_substantive_assistant,
    strip_prefill,
)
from lcm_lab.engine.types import AssembledItem, Assembly
from lcm_lab.errors import OptionError


def _live(role: str, text: str, line: int, **extra: Any) -> AssembledItem:
    message: dict[str, Any] = {"role": role, "content": text, **extra}
    return AssembledItem(role, "live", line, message, estimate_serialized_message_tokens(message))


def _cost(item: AssembledItem) -> int:
    return item.tokens


def test_serialized_size_at_the_budget_is_not_clamped_even_above_the_safety_target() -> None:
    items = [_live("user", "u" * 400, 1), _live("assistant", "a" * 400, 2)]
    total = sum(i.tokens for i in items)
    kept, clamped, before = clamp_serialized(items, total, _cost, keep_substantive=True, end_call=False)
    assert (kept, clamped, before) == (items, False, total)
    kept, clamped, _ = clamp_serialized(items, total - 1, _cost, keep_substantive=True, end_call=False)
    # Over budget: the suffix must fit 0.9 × budget, so only the newest message stays, and
    # the evicted user message is put back in front.
    assert clamped and [i.ref for i in kept] == [1, 2]


def test_clamp_drops_leading_tool_results_and_reseats_the_newest_earlier_user() -> None:
    items = [
        _live("user", "first " * 100, 1),
        _live("user", "second " * 100, 2),
        _live("assistant", "a" * 400, 3),
        _live("toolResult", "r" * 400, 4, toolCallId="t4"),
        _live("assistant", "b" * 40, 5),
    ]
    budget = int((items[3].tokens + items[4].tokens) / 0.9) + 1
    kept, clamped, _ = clamp_serialized(items, budget, _cost, keep_substantive=True, end_call=False)
    assert clamped and [i.ref for i in kept] == [2, 5]


def test_prefill_strip_keeps_a_substantive_assistant_only_when_the_turn_is_delivered_separately() -> None:
    thinking_only = {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm"}, {"type": "text", "text": " "}]}
    tool_call = {"role": "assistant", "content": [{"type": "toolCall", "id": "c1", "name": "ls", "arguments": {}}]}
    assert not is_substantive_assistant(thinking_only)
    assert is_substantive_assistant(tool_call)
    assert is_substantive_assistant({"role": "assistant", "content": "done"})
    items = [_live("user", "q", 1), _live("assistant", "answer", 2), AssembledItem("assistant", "live", 3, thinking_only, 9)]
    assert [i.ref for i in strip_prefill(items, keep_substantive=True)] == [1, 2]
    assert [i.ref for i in strip_prefill(items, keep_substantive=False)] == [1]
    # A tool result or bashExecution at the end is not "assistant": nothing is stripped.
    assert strip_prefill([*items, _live("bashExecution", "ls", 4)], keep_substantive=False)[-1].ref == 4


def test_end_of_run_clamp_keeps_the_unstripped_list_rather_than_nothing() -> None:
    items = [_live("assistant", "a" * 4000, 1)]
    kept, clamped, _ = clamp_serialized(items, 10, _cost, keep_substantive=False, end_call=True)
    assert clamped and [i.ref for i in kept] == [1]
    kept, _, _ = clamp_serialized(items, 10, _cost, keep_substantive=False, end_call=False)
    assert kept == []


def _bare(items: tuple[AssembledItem, ...]) -> Assembly:
    return Assembly(0, sum(i.tokens for i in items), "full-fit", None, 0, 0, 0, {}, items)


def _summary_item() -> AssembledItem:
    message = {"role": "user", "content": "<summary id=\"sum_1\">x</summary>"}
    return AssembledItem("user", "summary", "sum_1", message, 5)


LIVE = (_live("system", "rules", 1), _live("user", "u" * 4000, 2), _live("assistant", "a" * 400, 3), _live("user", "hi", 4))


@pytest.mark.parametrize(
    ("pending", "stored", "path"),
    [
        (True, 5001, "degraded:emergency-debt-still-pending"),
        (True, 3751, "degraded:near-budget"),
        (True, 3750, "assembled"),  # floor(0.75 × 5000) is not above
        (False, 9000, "assembled"),  # no debt: over budget is the clamp's business
    ],
)
def test_pending_debt_degrades_above_three_quarters_of_the_budget(pending: bool, stored: int, path: str) -> None:
    sent = engine_assemble(
        live=LIVE, budget=5000, bare=lambda: _bare((_summary_item(),)), context_items=1, has_summary=True,
        stored_tokens=stored, debt_pending=pending,
    )  # fmt: skip
    assert sent.path == path
    assert sent.degraded == path.startswith("degraded:")
    if sent.degraded:
        assert not sent.has_summaries and sent.items[0].ref == 1  # leading system kept, live messages only
        assert sent.emergency_drain_reached == (stored > 5000)


def test_degraded_cut_keeps_the_newest_suffix_within_the_budget_after_the_system_prompt() -> None:
    budget = LIVE[0].tokens + LIVE[2].tokens + LIVE[3].tokens
    sent = engine_assemble(
        live=LIVE, budget=budget, bare=lambda: _bare(()), context_items=1, has_summary=False,
        stored_tokens=budget + 1, debt_pending=True,
    )  # fmt: skip
    assert [i.ref for i in sent.items] == [1, 3, 4]
    assert sent.estimated_tokens == budget


def test_fallback_order_no_conversation_no_items_coverage_empty_and_user_less_output() -> None:
    common: dict[str, Any] = {"live": LIVE, "budget": 100_000, "stored_tokens": 10, "debt_pending": False}
    assert engine_assemble(bare=None, context_items=0, has_summary=False, **common).path == "live-fallback:no-conversation"
    assert engine_assemble(bare=None, context_items=0, has_summary=False, **common).estimated_tokens == 0
    empty = engine_assemble(bare=lambda: _bare(()), context_items=0, has_summary=False, **common)
    assert empty.path == "live-fallback:no-context-items" and [i.ref for i in empty.items] == [1, 2, 3, 4]
    trailing = engine_assemble(bare=lambda: _bare(()), context_items=3, has_summary=False, **common)
    assert trailing.path == "live-fallback:coverage-trails-live"
    no_output = engine_assemble(bare=lambda: _bare(()), context_items=4, has_summary=False, **common)
    assert no_output.path == "live-fallback:empty-assembled-output"
    answer = AssembledItem("assistant", "message", 7, {"role": "assistant", "content": [{"type": "text", "text": "x"}]}, 1)
    no_user = engine_assemble(bare=lambda: _bare((answer,)), context_items=4, has_summary=False, **common)
    assert no_user.path == "live-fallback:no-user-turns"
    normal = engine_assemble(bare=lambda: _bare((_summary_item(),)), context_items=1, has_summary=True, **common)
    assert normal.path == "assembled" and not normal.clamped and normal.has_summaries
    assert normal.estimated_tokens == estimate_serialized_message_tokens(_summary_item().message)


def test_prompts_naming_identifiers_are_flagged_for_the_unmodelled_prompt_recall() -> None:
    prompt = _live("user", "why does RETRY_LIMIT differ from MAX_RETRIES_PER_CALL? ignore OPENAI_API_KEY", 9)
    prompt = AssembledItem("user", "prompt", 9, prompt.message, prompt.tokens)
    sent = engine_assemble(live=LIVE, budget=100_000, bare=lambda: _bare((_summary_item(),)), context_items=1,
                           has_summary=True, stored_tokens=10, debt_pending=False, prompt=prompt, turn=3)  # fmt: skip
    assert sent.prompt_recall_identifiers == ("RETRY_LIMIT", "MAX_RETRIES_PER_CALL")
    assert sent.prompt is prompt and sent.messages[-1] is prompt.message
    assert sent.prompt_tokens == sent.estimated_tokens + prompt.tokens


def test_replay_sent_indexes_turns_like_the_host() -> None:
    from lcm_lab.engine.config.lcm_config import LcmConfig
    from lcm_lab.engine.replay.driver import replay
    from lcm_lab.engine.types import Conversation, InputEntry
    from lcm_lab.summarizers.stub import StubV1Summarizer

    chat = Conversation("demo", entries=(
        InputEntry(2, "message", {"role": "user", "content": "hello " * 400, "timestamp": 0}),
        InputEntry(3, "message", {"role": "assistant", "content": [{"type": "text", "text": "hi"}], "timestamp": 1000}),
        InputEntry(4, "message", {"role": "user", "content": "and now?", "timestamp": 2000}),
    ))  # fmt: skip
    run = replay(chat, LcmConfig(fresh_tail_count=1), StubV1Summarizer(), token_budget=500)
    first = run.sent(0)
    assert first.path == "live-fallback:no-conversation" and first.items == () and first.prompt is not None
    assert first.prompt.ref == 2 and run.sent(-1) is run.sent(1)  # cached per (turn, budget)
    second = run.sent(1)
    assert second.prompt is not None and second.prompt.ref == 4
    assert second.bare is not None and [i.ref for i in second.bare.items] == [1, 2]  # turn 0's two messages
    assert run.turns[1].clock_ms == (2000, 2000) and run.turns[0].clock_ms == (0, 1000)
    with pytest.raises(OptionError, match="turns that exist: 0 to 1"):
        run.sent(2)
    assert run.sent().turn is None and run.sent().prompt is None
