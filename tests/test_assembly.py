"""Unit tests for context assembly (spec §6): message rebuilding, summary XML, fresh tail,
budget fill (chronological and prompt-aware), orphan tool-call stripping and the final clamp.
"""

from __future__ import annotations

import json
from typing import Any

from lcm_lab.engine.assembly.bare import (
    assemble,
    estimate_serialized_message_tokens,
    relevance_score,
    tokenize_prompt_terms,
)
from lcm_lab.engine.assembly.repair import MISSING_TOOL_RESULT_TEXT
from lcm_lab.engine.assembly.summary_xml import summary_xml
from lcm_lab.engine.js.json import js_stringify
from lcm_lab.engine.tokens import estimate_tokens
from lcm_lab.engine.types import Assembly, ContextItem, StoredMessage, StoredPart, Summary

IDENTITY = {"modelProvider": "anthropic", "modelApi": "anthropic-messages", "modelId": "claude-x"}


def text_message(seq: int, role: str, text: str, *, sender: dict[str, str] | None = None) -> StoredMessage:
    """A stored message as ingest writes it: one text part carrying its raw block."""
    meta: dict[str, Any] = {"originalRole": role, "rawType": "text", "raw": {"type": "text", "text": text}}
    part = StoredPart("text", 0, text_content=text, metadata=json.dumps(meta), part_id=f"p{seq}")
    return StoredMessage(
        seq,
        role,
        text,
        estimate_tokens(text),
        parts=(part,),
        sender_metadata=json.dumps(sender) if sender else None,
    )  # type: ignore[arg-type]


def tool_call_message(
    seq: int, call_id: str, name: str = "read", *, text: str | None = None
) -> StoredMessage:
    parts = []
    if text is not None:
        meta = {
            "originalRole": "assistant",
            **IDENTITY,
            "rawType": "text",
            "raw": {"type": "text", "text": text},
        }
        parts.append(StoredPart("text", 0, text_content=text, metadata=json.dumps(meta), part_id=f"t{seq}"))
    raw = {"type": "toolCall", "id": call_id, "name": name, "arguments": {"path": "a.txt"}}
    meta = {"originalRole": "assistant", "rawType": "toolCall", "raw": raw}
    parts.append(
        StoredPart(
            "tool",
            len(parts),
            tool_call_id=call_id,
            tool_name=name,
            tool_input='{"path":"a.txt"}',
            metadata=json.dumps(meta),
            part_id=f"c{seq}",
        )
    )
    return StoredMessage(seq, "assistant", text or "", 20, parts=tuple(parts))


def tool_result_message(
    seq: int, call_id: str, output: str, name: str = "read", *, is_error: bool = False
) -> StoredMessage:
    meta = {
        "originalRole": "toolResult",
        "toolCallId": call_id,
        "toolName": name,
        "isError": is_error,
        "rawType": "text",
        "raw": {"type": "text", "text": output},
    }
    part = StoredPart(
        "text",
        0,
        text_content=output,
        tool_call_id=call_id,
        tool_name=name,
        metadata=json.dumps(meta),
        part_id=f"r{seq}",
    )
    return StoredMessage(seq, "tool", output, estimate_tokens(output), parts=(part,))


def run(
    messages: list[StoredMessage],
    *,
    budget: int,
    tail: int,
    cap: int | None = None,
    summaries: list[Summary] = (),  # type: ignore[assignment]
    context: list[ContextItem] | None = None,
    **kwargs: Any,
) -> Assembly:
    ctx = context if context is not None else [ContextItem.message(m.seq) for m in messages]
    return assemble(
        {m.seq: m for m in messages},
        {s.summary_id: s for s in summaries},
        ctx,
        token_budget=budget,
        fresh_tail_count=tail,
        fresh_tail_max_tokens=cap,
        **kwargs,
    )


def refs(assembly: Assembly) -> list[Any]:
    return [item.ref for item in assembly.items]


# -- spec §7 acceptance scenario 13 -------------------------------------------------------------


def test_scenario_13_fresh_tail_is_kept_even_over_budget() -> None:
    msgs = [
        text_message(i + 1, "user" if i % 2 == 0 else "assistant", f"Turn {i}: " + "x" * 792)
        for i in range(3)
    ]
    result = run(msgs, budget=100, tail=8)
    assert refs(result) == [1, 2, 3]
    assert result.tail_tokens > 100 and result.remaining_budget == 0
    assert result.fresh_tail_ordinal == 0


def test_scenario_13_tail_token_cap_limits_the_tail() -> None:
    msgs = [
        text_message(i + 1, "user" if i % 2 == 0 else "assistant", f"M{i} " + "y" * 396) for i in range(4)
    ]
    result = run(msgs, budget=150, tail=4, cap=110)
    assert refs(result) == [3, 4]  # M2, M3
    assert result.fresh_tail_ordinal == 2
    assert result.selection_mode == "chronological"


def test_scenario_13_newest_user_rule_overrides_count_and_budget() -> None:
    msgs = [text_message(1, "user", "question " * 20), text_message(2, "assistant", "answer " * 20)]
    result = run(msgs, budget=1, tail=1)
    assert refs(result) == [1, 2]
    assert result.fresh_tail_ordinal == 0


# -- step 1: rebuilt messages -------------------------------------------------------------------


def test_user_message_collapses_to_string_and_carries_sender_tokens() -> None:
    sender = {"senderId": "u-1", "senderName": "Ada", "ignored": "x"}
    msg = text_message(1, "user", "hello there", sender=sender)
    item = run([msg], budget=1000, tail=4).items[0]
    assert item.message == {
        "role": "user",
        "content": "hello there",
        "__openclaw": {"senderId": "u-1", "senderName": "Ada"},
    }
    assert item.tokens == estimate_tokens('hello there\n{"senderId":"u-1","senderName":"Ada"}')


def test_assistant_gets_identity_and_synthetic_usage_in_plugin_key_order() -> None:
    msg = tool_call_message(1, "toolu_1", text="Running it.")
    result = run([msg, tool_result_message(2, "toolu_1", "ok")], budget=1000, tail=4)
    assistant = result.items[0].message
    assert list(assistant) == ["role", "content", "provider", "api", "model", "usage"]
    assert assistant["content"][1] == {
        "type": "toolCall",
        "id": "toolu_1",
        "name": "read",
        "arguments": {"path": "a.txt"},
    }
    tokens = estimate_tokens(js_stringify(assistant["content"]))
    assert (
        assistant["usage"]["output"] == assistant["usage"]["totalTokens"] == tokens == result.items[0].tokens
    )
    tool = result.items[1].message
    assert tool == {
        "role": "toolResult",
        "content": [{"type": "text", "text": "ok"}],
        "toolCallId": "toolu_1",
        "toolName": "read",
        "isError": False,
    }


def _thinking_message(signature: str, *, identity: bool) -> StoredMessage:
    raw = {"type": "thinking", "thinking": "hmm", "thinkingSignature": signature}
    meta = {"originalRole": "assistant", **(IDENTITY if identity else {}), "rawType": "thinking", "raw": raw}
    thinking = StoredPart("reasoning", 0, text_content="hmm", metadata=json.dumps(meta), part_id="a")
    text_meta = {"originalRole": "assistant", "rawType": "text", "raw": {"type": "text", "text": "done"}}
    text = StoredPart("text", 1, text_content="done", metadata=json.dumps(text_meta), part_id="b")
    return StoredMessage(1, "assistant", "done", 10, parts=(thinking, text))


def test_thinking_signatures_need_a_stored_model_identity() -> None:
    def content(signature: str, identity: bool) -> list[Any]:
        return (
            run([_thinking_message(signature, identity=identity)], budget=1000, tail=4)
            .items[0]
            .message["content"]
        )

    assert content("sig123", True)[0] == {
        "type": "thinking",
        "thinking": "hmm",
        "thinkingSignature": "sig123",
    }
    assert content("sig123", False)[0] == {"type": "thinking", "thinking": "hmm"}
    assert content("reasoning_content", True)[0]["thinkingSignature"] == "reasoning_content"
    assert content("reasoning_content", False) == [{"type": "text", "text": "done"}]


def test_openai_reasoning_item_is_restored_from_its_signature() -> None:
    original = {"type": "reasoning", "id": "rs_1", "encrypted_content": "abc"}
    msg = _thinking_message(json.dumps(original), identity=False)
    assert run([msg], budget=1000, tail=4).items[0].message["content"][0] == original


def test_tool_call_without_id_gets_placeholder_and_function_call_shape() -> None:
    meta = {"originalRole": "assistant", "rawType": "toolCall"}
    missing_id = StoredPart(
        "tool", 0, tool_name="ls", tool_input="not json", metadata=json.dumps(meta), part_id="abc-123"
    )
    fc_meta = {"originalRole": "assistant", "rawType": "function_call"}
    function_call = StoredPart(
        "tool",
        1,
        tool_call_id="call_9",
        tool_name="grep",
        tool_input='{"q":1}',
        metadata=json.dumps(fc_meta),
        part_id="x",
    )
    msg = StoredMessage(1, "assistant", "", 5, parts=(missing_id, function_call))
    user = text_message(2, "user", "go")
    content = run([msg, user], budget=1000, tail=8).items[0].message["content"]
    assert content == [
        {"type": "toolCall", "id": "toolu_lcm_abc-123", "name": "ls", "arguments": "not json"},
        {"type": "function_call", "call_id": "call_9", "name": "grep", "arguments": {"q": 1}},
    ]


def test_tool_result_without_call_id_degrades_to_assistant_text() -> None:
    msg = StoredMessage(1, "tool", "legacy output", 4)
    item = run(
        [text_message(2, "user", "hi"), msg],
        budget=1000,
        tail=8,
        context=[ContextItem.message(1), ContextItem.message(2)],
    ).items[0]
    assert item.role == "assistant"
    assert item.message["content"] == [{"type": "text", "text": "legacy output"}]


def test_empty_assistant_row_is_not_an_item_at_all() -> None:
    msgs = [text_message(1, "user", "hi"), StoredMessage(2, "assistant", "  ", 0)]
    result = run(msgs, budget=1000, tail=8)
    assert refs(result) == [1]
    assert result.stats == {"rawMessageCount": 1, "summaryCount": 0, "totalContextItems": 1}


# -- summary XML --------------------------------------------------------------------------------


def test_summary_xml_escapes_lists_parents_and_uses_the_timezone() -> None:
    summary = Summary(
        "sum_c&1",
        "condensed",
        1,
        'a <b> & "c"',
        5,
        "2026-01-01T03:30:00.000Z",
        "2026-07-01T12:00:00.000Z",
        descendant_count=2,
        source_summary_ids=("sum_a", "sum_b"),
    )
    xml = summary_xml(summary, "America/New_York")
    assert xml == (
        '<summary id="sum_c&amp;1" kind="condensed" depth="1" descendant_count="2" trust="untrusted" '
        'earliest_at="2025-12-31T22:30:00" latest_at="2026-07-01T08:00:00">\n'
        "  <parents>\n"
        '    <summary_ref id="sum_a" />\n'
        '    <summary_ref id="sum_b" />\n'
        "  </parents>\n"
        "  <content>\n"
        'a &lt;b&gt; &amp; "c"\n'
        "  </content>\n"
        "</summary>"
    )


def test_summary_item_is_a_user_message_costed_on_its_xml() -> None:
    summary = Summary("sum_1", "leaf", 0, "old stuff", 3)
    msgs = [text_message(2, "user", "now")]
    result = run(
        msgs,
        budget=1000,
        tail=8,
        summaries=[summary],
        context=[ContextItem.summary("sum_1"), ContextItem.message(2)],
    )
    first = result.items[0]
    assert (first.role, first.kind, first.ref) == ("user", "summary", "sum_1")
    assert first.tokens == estimate_tokens(summary_xml(summary, "UTC"))
    assert "earliest_at" not in first.message["content"]
    assert result.stats == {"rawMessageCount": 1, "summaryCount": 1, "totalContextItems": 2}


# -- step 5: budget fill ------------------------------------------------------------------------


def _history() -> list[StoredMessage]:
    topics = [
        "database migration plan",
        "lunch menu options",
        "weather tomorrow",
        "database index tuning",
        "holiday photos",
    ]
    msgs = [
        text_message(i + 1, "user" if i % 2 == 0 else "assistant", f"{topic} " * 10)
        for i, topic in enumerate(topics)
    ]
    return [*msgs, text_message(6, "assistant", "ok"), text_message(7, "user", "next question")]


def test_chronological_fill_stops_at_the_first_item_that_does_not_fit() -> None:
    msgs = _history()
    tail_tokens = sum(estimate_tokens(m.content) for m in msgs[-1:])
    per_item = run(msgs, budget=10_000, tail=1).items
    budget = tail_tokens + per_item[4].tokens + per_item[5].tokens + 1
    result = run(msgs, budget=budget, tail=1)
    assert result.selection_mode == "chronological"
    assert refs(result) == [5, 6, 7]
    assert result.estimated_tokens == sum(item.tokens for item in result.items)
    assert result.evictable_total_tokens == sum(item.tokens for item in per_item[:-1])


def test_full_fit_keeps_everything() -> None:
    result = run(_history(), budget=10_000, tail=1)
    assert result.selection_mode == "full-fit"
    assert refs(result) == [1, 2, 3, 4, 5, 6, 7]


def test_prompt_aware_eviction_keeps_relevant_items_and_skips_ones_that_do_not_fit() -> None:
    msgs = _history()
    items = run(msgs, budget=10_000, tail=1).items
    budget = items[-1].tokens + items[0].tokens + items[3].tokens + 2
    result = run(msgs, budget=budget, tail=1, prompt="What about the database?", prompt_aware_eviction=True)
    assert result.selection_mode == "prompt-aware"
    assert refs(result) == [1, 4, 7]  # both database items, restored to chronological order
    plain = run(msgs, budget=budget, tail=1, prompt="What about the database?")
    assert plain.selection_mode == "chronological"
    no_terms = run(msgs, budget=budget, tail=1, prompt="? !", prompt_aware_eviction=True)
    assert no_terms.selection_mode == "chronological"


def test_relevance_score_is_normalised_term_frequency() -> None:
    assert tokenize_prompt_terms("A db-Index, X") == ["db", "index"]
    assert relevance_score("db db index other", "db index db") == 3 / 4
    assert relevance_score("", "db") == 0.0


def test_prompt_aware_ties_prefer_newer_items() -> None:
    msgs = [text_message(i + 1, "assistant", "same words here") for i in range(4)]
    msgs.append(text_message(5, "user", "tail"))
    one = run(msgs, budget=10_000, tail=1).items[0].tokens
    result = run(
        msgs, budget=one * 2 + estimate_tokens("tail"), tail=1, prompt="words", prompt_aware_eviction=True
    )
    assert refs(result) == [3, 4, 5]


# -- step 6: orphan tool calls and pairing ------------------------------------------------------


def test_evicted_result_strips_the_call_and_drops_a_call_only_message() -> None:
    msgs = [
        text_message(1, "user", "start " * 50),
        tool_call_message(2, "toolu_a"),
        tool_result_message(3, "toolu_a", "result " * 100),
        tool_call_message(4, "toolu_b", text="Checking."),
        tool_result_message(5, "toolu_b", "fine"),
        text_message(6, "user", "thanks"),
    ]
    full = run(msgs, budget=10_000, tail=1)
    budget = sum(i.tokens for i in full.items if i.ref in (4, 5, 6))
    result = run(msgs, budget=budget, tail=1)
    assert refs(result) == [4, 5, 6]


def test_calls_whose_results_were_evicted_are_stripped() -> None:
    msgs = [
        text_message(1, "user", "start " * 50),
        tool_call_message(2, "toolu_a"),
        tool_result_message(3, "toolu_a", "result " * 100),
        tool_call_message(4, "toolu_b", text="Checking database."),
        tool_result_message(5, "toolu_b", "fine " * 100),
        text_message(6, "user", "thanks"),
    ]
    tokens = {i.ref: i.tokens for i in run(msgs, budget=10_000, tail=1).items}
    budget = tokens[2] + tokens[4] + tokens[6] + 1
    result = run(msgs, budget=budget, tail=1, prompt="database read", prompt_aware_eviction=True)
    # Relevance picked both calls but neither result: seq 4 keeps only its text, and seq 2,
    # a call-only message, has nothing left and disappears.
    assert refs(result) == [4, 6]
    assert result.items[0].message["content"] == [{"type": "text", "text": "Checking database."}]
    assert result.estimated_tokens == tokens[2] + tokens[4] + tokens[6]


def test_tail_call_without_any_result_gets_a_synthetic_result() -> None:
    msgs = [
        text_message(1, "user", "do it"),
        tool_call_message(2, "toolu_z", name="bash"),
        text_message(3, "user", "and?"),
    ]
    result = run(msgs, budget=10_000, tail=8)
    assert [(i.role, i.kind, i.ref) for i in result.items] == [
        ("user", "message", 1),
        ("assistant", "message", 2),
        ("toolResult", "synthetic", None),
        ("user", "message", 3),
    ]
    synthetic = result.items[2].message
    assert synthetic == {
        "role": "toolResult",
        "toolCallId": "toolu_z",
        "toolName": "bash",
        "content": [{"type": "text", "text": MISSING_TOOL_RESULT_TEXT}],
        "isError": True,
    }


def test_orphan_result_at_the_start_is_dropped() -> None:
    msgs = [tool_result_message(1, "toolu_gone", "late"), text_message(2, "user", "hello")]
    assert refs(run(msgs, budget=10_000, tail=8)) == [2]


# -- step 7: serialized estimate and clamp ------------------------------------------------------


def test_serialized_estimate_prices_binary_payloads_and_the_envelope() -> None:
    payload = "iVBORw0KGgo" + "A1b2" * 1100
    image = {"role": "user", "content": [{"type": "image", "data": payload, "mimeType": "image/png"}]}
    expected = estimate_tokens(
        js_stringify(
            {
                "role": "user",
                "content": [{"type": "image", "data": "[opaque binary payload]", "mimeType": "image/png"}],
            }
        )
    )
    assert estimate_serialized_message_tokens(image) == expected + 1600
    as_text = {"role": "user", "content": [{"type": "text", "text": payload}]}
    assert estimate_serialized_message_tokens(as_text) == estimate_tokens(js_stringify(as_text))
    url = {"role": "user", "content": "data:" + "x" * 5000}
    assert (
        estimate_serialized_message_tokens(url)
        == estimate_tokens(js_stringify({"role": "user", "content": "[opaque binary payload]"})) + 1600
    )
    with_envelope = {"role": "user", "content": "hi", "__openclaw": {"senderId": "someone"}}
    assert estimate_serialized_message_tokens(with_envelope) == estimate_tokens(js_stringify(with_envelope))
