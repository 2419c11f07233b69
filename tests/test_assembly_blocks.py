"""Rebuilding content blocks from stored parts (``blockFromPart`` / ``contentFromParts``)."""

from __future__ import annotations

import json
from typing import Any

from lcm_lab.engine.assembly.blocks import (
    block_from_part,
    content_from_parts,
    model_identity,
    parse_sender_metadata,
    pick_tool_call_id,
    pick_tool_name,
    runtime_role,
)
from lcm_lab.engine.types import StoredPart


def part(part_type: str, ordinal: int = 0, meta: dict[str, Any] | None = None, **columns: Any) -> StoredPart:
    return StoredPart(
        part_type, ordinal, metadata=json.dumps(meta) if meta is not None else None, part_id="pid", **columns
    )


def test_externalised_tool_output_part_becomes_a_text_block() -> None:
    # Shape live ingest writes for a tool output moved to a large file (seen in synth runs).
    raw = {
        "type": "tool_result",
        "text": "[LCM Tool Output: file_x]",
        "tool_use_id": "toolu_1",
        "isError": False,
        "name": "bash",
    }
    p = part(
        "tool",
        meta={"originalRole": "toolResult", "toolCallId": "toolu_1", "rawType": "tool_result", "raw": raw},
        text_content="[LCM Tool Output: file_x]",
        tool_call_id="toolu_1",
        tool_name="bash",
    )
    assert block_from_part(p) == {"type": "text", "text": "[LCM Tool Output: file_x]"}


def test_tool_result_rebuilt_from_columns() -> None:
    raw = {"type": "tool_result", "content": [{"type": "text", "text": "x"}], "is_error": True}
    p = part(
        "tool",
        meta={"originalRole": "toolResult", "rawType": "tool_result", "raw": raw},
        tool_call_id="toolu_2",
        tool_name="grep",
        tool_output='{"lines":2}',
    )
    assert block_from_part(p) == {
        "type": "tool_result",
        "name": "grep",
        "output": {"lines": 2},
        "is_error": True,
        "tool_use_id": "toolu_2",
    }
    fco = part("tool", meta={"rawType": "function_call_output"}, tool_call_id="call_1", text_content="done")
    assert block_from_part(fco) == {"type": "function_call_output", "output": "done", "call_id": "call_1"}


def test_tool_use_keeps_input_and_backfills_from_raw() -> None:
    raw = {"type": "tool_use", "id": "toolu_3", "name": "edit", "input": {"b": 1, "a": 2}}
    p = part("text", meta={"originalRole": "assistant", "rawType": "tool_use", "raw": raw})
    assert block_from_part(p) == {
        "type": "tool_use",
        "id": "toolu_3",
        "name": "edit",
        "input": {"b": 1, "a": 2},
    }


def test_reasoning_without_raw_and_unknown_parts() -> None:
    assert block_from_part(part("reasoning", meta={"rawType": "thinking"}, text_content="t")) == {
        "type": "thinking",
        "thinking": "t",
    }
    assert block_from_part(part("reasoning", text_content="")) == {"type": "reasoning"}
    assert block_from_part(part("agent", meta={"x": 1})) == {"type": "text", "text": '{"x":1}'}
    assert block_from_part(part("agent", meta={"x": [1.0, 1e21, "\ud800"]})) == {
        "type": "text",
        "text": '{"x":[1,1e+21,"\\ud800"]}',
    }
    # Metadata that is not a non-empty object is parsed again: an array is written back as text.
    assert block_from_part(StoredPart("agent", 0, metadata="[1, 2.50]")) == {"type": "text", "text": "[1,2.5]"}
    assert block_from_part(StoredPart("agent", 0, metadata=" {} ")) == {"type": "text", "text": "{}"}
    assert block_from_part(StoredPart("agent", 0, metadata='"x"')) == {"type": "text", "text": ""}
    assert block_from_part(StoredPart("agent", 0, metadata="{")) == {"type": "text", "text": ""}
    assert block_from_part(part("agent")) == {"type": "text", "text": ""}
    assert block_from_part(part("text", meta={"originalRole": "user"})) == {"type": "text", "text": ""}


def test_raw_non_tool_blocks_are_returned_verbatim_in_javascript_key_order() -> None:
    p = StoredPart("file", 0, metadata='{"raw":{"type":"image","b":1,"2":"x","a":[1.0]}}')
    block = block_from_part(p)
    assert list(block) == ["2", "type", "b", "a"]


def test_content_falls_back_to_stored_text_per_role() -> None:
    assert content_from_parts((), "user", "plain") == "plain"
    assert content_from_parts((), "assistant", "") == []
    assert content_from_parts((), "assistant", "x") == [{"type": "text", "text": "x"}]
    assert content_from_parts((), "toolResult", "") == [{"type": "text", "text": ""}]
    only_reasoning = part("reasoning", meta={"topLevelReasoningOnly": True}, text_content="r")
    assert content_from_parts((only_reasoning,), "assistant", "kept") == [{"type": "text", "text": "kept"}]


def test_roles_identity_and_tool_lookups() -> None:
    system = part("text", meta={"originalRole": "system"})
    assert runtime_role("system", (system,)) == "user"
    assert runtime_role("tool", ()) == "toolResult"
    assert runtime_role("system", ()) == "user"
    partial = part("text", meta={"modelProvider": "p", "modelApi": "a"})
    full = part(
        "text", 1, meta={"modelProvider": "p", "modelApi": "a", "modelId": "m", "responseModelId": "r"}
    )
    assert model_identity((partial,)) is None
    assert model_identity((partial, full)) == {
        "provider": "p",
        "api": "a",
        "model": "m",
        "responseModel": "r",
    }
    from_raw = part("text", meta={"raw": {"tool_call_id": "call_7", "toolName": "ls"}})
    assert pick_tool_call_id((from_raw,)) == "call_7"
    assert pick_tool_name((from_raw,)) == "ls"


def test_sender_metadata_is_allow_listed_and_non_blank() -> None:
    assert parse_sender_metadata('{"senderName":"Ada","senderId":" ","x":"y","senderUsername":"ada"}') == {
        "senderName": "Ada",
        "senderUsername": "ada",
    }
    assert parse_sender_metadata("not json") is None
    assert parse_sender_metadata('{"senderId":""}') is None
    assert parse_sender_metadata(None) is None
