"""Claude Code session reader: merged streaming, sidechains, tool links, summaries."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from lcm_lab.engine.replay.turns import split_turns
from lcm_lab.io.transcripts import CLAUDE_CODE_JSONL, detect_format, read_transcript

REPO = Path(__file__).resolve().parents[1]
MINI = REPO / "tests" / "fixtures" / "transcripts" / "claude-code-mini.jsonl"
SAMPLE = REPO / "datasets" / "claude-code" / "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"


@pytest.fixture(scope="module")
def mini():  # noqa: ANN201
    return read_transcript(MINI)


def test_detected_and_split_into_main_and_sidechain(mini) -> None:  # noqa: ANN001
    assert detect_format(MINI) == CLAUDE_CODE_JSONL and mini.kind == CLAUDE_CODE_JSONL
    assert mini.version == "2.0.1"
    main, side = mini.conversations
    assert main.conversation.session_id == "cc-mini-session" and main.conversation.meta["sidechain"] is False
    assert side.conversation.session_id == "cc-mini-session:sidechain:s1"
    assert side.conversation.meta["sidechain"] is True
    assert side.conversation.meta["parent_session_id"] == "cc-mini-session"
    assert side.conversation.meta["parent_tool_call_id"] == "toolu_2"  # the Task call that spawned it
    assert [e.entry_id for e in side.conversation.entries] == ["s1", "s2"]
    assert main.conversation.title == "Fix the flaky test"


def test_streamed_assistant_lines_merge_into_one_pi_message(mini) -> None:  # noqa: ANN001
    entries = mini.conversations[0].conversation.entries
    assistant = entries[1]
    assert assistant.line == 4 and assistant.entry_id == "u2"
    assert mini.conversations[0].conversation.meta["source_lines"][4] == (4, 5, 6, 7)
    message = assistant.message
    assert [b["type"] for b in message["content"]] == ["thinking", "text", "toolCall", "toolCall"]
    assert message["content"][0] == {"type": "thinking", "thinking": "Look at the test first.", "thinkingSignature": "sigA"}
    assert message["content"][2] == {"type": "toolCall", "id": "toolu_1", "name": "Read", "arguments": {"file_path": "/repo/test.py"}}
    assert message["responseId"] == "msg_A" and message["stopReason"] == "toolUse"
    assert message["usage"]["output"] == 42 and message["usage"]["cacheRead"] == 1000
    assert message["usage"]["totalTokens"] == 10 + 42 + 1000 + 100
    assert message["timestamp"] == 1756857601000
    assert list(message) == ["role", "content", "api", "provider", "model", "responseId", "usage", "stopReason", "timestamp"]


def test_tool_results_are_linked_to_their_calls(mini) -> None:  # noqa: ANN001
    entries = mini.conversations[0].conversation.entries
    results = [e.message for e in entries if e.message and e.message["role"] == "toolResult"]
    assert [(r["toolCallId"], r["toolName"], r["isError"]) for r in results] == [
        ("toolu_1", "Read", False),
        ("toolu_2", "Task", False),
        ("toolu_missing", "unknown", True),
    ]
    (issue,) = mini.issues
    assert issue.line == 15 and "toolu_missing" in issue.message and not issue.skipped


def test_compact_boundary_and_summary_events(mini) -> None:  # noqa: ANN001
    main = mini.conversations[0]
    kinds = [(e.kind, e.line) for e in main.events]
    assert kinds == [("summary", 1), ("compact_boundary", 12)]
    boundary = main.events[1]
    assert boundary.tokens_before == 150000 and boundary.summary is not None
    assert boundary.summary.startswith("This session is being continued")
    # logicalParentUuid bridges the boundary: the pre-compaction history stays on the path
    ids = [e.entry_id for e in main.conversation.entries]
    assert ids[:2] == ["u1", "u2"] and "u12" in ids
    assert main.conversation.entries[ids.index("u8")].type == "system"


def test_images_and_lossless_raw_lines(mini) -> None:  # noqa: ANN001
    main = mini.conversations[0]
    user = next(e.message for e in main.conversation.entries if e.entry_id == "u10")
    assert user["content"][1] == {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
    raw = main.meta["raw_entries"]
    raw_lines = [json.loads(line) for line in MINI.read_text().splitlines()]
    # every line of the file is kept verbatim in exactly one conversation
    side_raw = mini.conversations[1].meta["raw_entries"]
    assert sorted([*raw, *side_raw]) == list(range(1, len(raw_lines) + 1))
    assert raw[2] == raw_lines[1]  # the file-history-snapshot line (no uuid) is kept too
    assert main.meta["untracked_entry_types"] == {"file-history-snapshot": 1}


def test_turns_start_at_user_prompts_not_tool_results(mini) -> None:  # noqa: ANN001
    conversation = mini.conversations[0].conversation
    turns = split_turns(conversation.entries, conversation.meta["last_line"])
    assert [t.entries[0].entry_id for t in turns] == ["u1", "u9", "u10"]


def test_real_claude_code_session() -> None:
    read = read_transcript(SAMPLE)
    assert read.kind == CLAUDE_CODE_JSONL and read.issues == () and read.skipped_lines == 0
    assert len(read.conversations) == 6  # main chain + 5 sub-agent sidechains
    assert sum(c.conversation.meta["sidechain"] for c in read.conversations) == 5
    roles = Counter(
        e.message["role"] for c in read.conversations for e in c.conversation.entries if e.message is not None
    )
    # 262 assistant lines stream 170 responses; 167 tool_result blocks; 8 user prompts
    assert roles == {"assistant": 170, "toolResult": 167, "user": 8}
    calls = {
        b["id"]
        for c in read.conversations
        for e in c.conversation.entries
        if e.message and e.message["role"] == "assistant"
        for b in e.message["content"]
        if b["type"] == "toolCall"
    }
    results = {
        e.message["toolCallId"]
        for c in read.conversations
        for e in c.conversation.entries
        if e.message and e.message["role"] == "toolResult"
    }
    assert results == calls and len(calls) == 167
    assert all("parent_tool_call_id" in c.conversation.meta for c in read.conversations[1:])
