"""Tool call / tool result pairing repair (``sanitizeToolUseResultPairing``)."""

from __future__ import annotations

from typing import Any

from lcm_lab.engine.assembly.repair import (
    MISSING_TOOL_RESULT_TEXT,
    Tagged,
    is_synthetic_missing_result,
    missing_tool_result,
    repair_tagged,
    sanitize_tool_use_result_pairing,
)


def call(*ids: str, stop: str | None = None, name: str = "read") -> dict[str, Any]:
    msg: dict[str, Any] = {
        "role": "assistant",
        "content": [{"type": "toolCall", "id": i, "name": name, "arguments": {}} for i in ids],
    }
    if stop:
        msg["stopReason"] = stop
    return msg


def result(call_id: str, text: str = "ok") -> dict[str, Any]:
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": "read",
        "content": [{"type": "text", "text": text}],
        "isError": False,
    }


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def shape(messages: list[Any]) -> list[str]:
    out = []
    for m in messages:
        if m["role"] == "toolResult":
            out.append(
                "synthetic:" + m["toolCallId"]
                if is_synthetic_missing_result(m)
                else "result:" + m["toolCallId"]
            )
        elif m["role"] == "assistant":
            ids = [b["id"] for b in m["content"] if b.get("type") == "toolCall"]
            out.append("call:" + ",".join(ids) if ids else "assistant")
        else:
            out.append(m["role"] + ":" + m["content"])
    return out


def test_well_formed_transcript_is_returned_unchanged() -> None:
    msgs = [
        user("a"),
        call("t1"),
        result("t1"),
        {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
    ]
    assert sanitize_tool_use_result_pairing(msgs) == msgs


def test_results_move_right_after_their_call() -> None:
    msgs = [call("t1"), user("interjection"), result("t1")]
    assert shape(sanitize_tool_use_result_pairing(msgs)) == ["call:t1", "result:t1", "user:interjection"]


def test_results_come_in_call_order_only_when_something_else_changed() -> None:
    # Only reordered inside the span: the plugin returns its input untouched.
    msgs = [call("t1", "t2"), result("t2"), result("t1")]
    assert shape(sanitize_tool_use_result_pairing(msgs)) == ["call:t1,t2", "result:t2", "result:t1"]
    msgs = [call("t1", "t2"), result("t2"), result("t1"), result("ghost")]
    assert shape(sanitize_tool_use_result_pairing(msgs)) == ["call:t1,t2", "result:t1", "result:t2"]


def test_missing_result_gets_synthetic_error_result() -> None:
    msgs = [call("t1", "t2", name="bash"), result("t1"), user("next")]
    repaired = sanitize_tool_use_result_pairing(msgs)
    assert shape(repaired) == ["call:t1,t2", "result:t1", "synthetic:t2", "user:next"]
    assert repaired[2] == {
        "role": "toolResult",
        "toolCallId": "t2",
        "toolName": "bash",
        "content": [{"type": "text", "text": MISSING_TOOL_RESULT_TEXT}],
        "isError": True,
    }
    assert list(repaired[2]) == ["role", "toolCallId", "toolName", "content", "isError"]


def test_orphan_and_duplicate_results_are_dropped() -> None:
    msgs = [result("ghost"), call("t1"), result("t1", "first"), result("t1", "second"), user("u")]
    repaired = sanitize_tool_use_result_pairing(msgs)
    assert shape(repaired) == ["call:t1", "result:t1", "user:u"]
    assert repaired[1]["content"][0]["text"] == "first"


def test_a_later_real_result_replaces_a_synthetic_one() -> None:
    msgs = [call("t1"), missing_tool_result("t1", "read"), user("u"), result("t1", "real")]
    repaired = sanitize_tool_use_result_pairing(msgs)
    assert shape(repaired) == ["call:t1", "result:t1", "user:u"]
    assert repaired[1]["content"][0]["text"] == "real"


def test_terminal_turns_lose_their_calls_and_get_no_results() -> None:
    msgs = [
        user("u"),
        {
            **call("t1", stop="error"),
            "content": [{"type": "text", "text": "partial"}, *call("t1")["content"]],
        },
        result("t1"),
    ]
    repaired = sanitize_tool_use_result_pairing(msgs)
    assert shape(repaired) == ["user:u", "assistant"]
    assert repaired[1]["content"] == [{"type": "text", "text": "partial"}]


def test_duplicate_tool_use_ids_keep_the_first_and_empty_turns_go() -> None:
    msgs = [call("t1"), result("t1"), call("t1"), user("u")]
    assert shape(sanitize_tool_use_result_pairing(msgs)) == ["call:t1", "result:t1", "user:u"]


def test_reasoning_after_a_single_function_call_moves_in_front() -> None:
    msg = {
        "role": "assistant",
        "content": [
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
            {"type": "reasoning", "id": "rs_1"},
        ],
    }
    repaired = sanitize_tool_use_result_pairing([msg, result("c1")])
    assert [b["type"] for b in repaired[0]["content"]] == ["reasoning", "function_call"]


def test_tags_follow_messages_and_synthetic_results_have_none() -> None:
    entries = [Tagged(call("t1", "t2"), 10), Tagged(user("u"), 11), Tagged(result("t2"), 12)]
    repaired, report = repair_tagged(entries)
    assert [e.tag for e in repaired] == [10, None, 12, 11]
    assert report.synthetic_results == 1 and report.moved
