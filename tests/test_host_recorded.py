"""The recorded host's requests rebuilt from transcripts (lcm_lab.host.recorded)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lcm_lab.engine.types import Conversation, InputEntry
from lcm_lab.host import recorded_calls, recorded_session_calls
from lcm_lab.io.model import RecordedEvent
from lcm_lab.io.transcripts import read_transcript

DATA = Path(__file__).resolve().parents[1] / "datasets"


def test_before_compaction_calls_follow_the_hosts_two_compactions() -> None:
    loaded = read_transcript(DATA / "pi-mono" / "before-compaction.jsonl").conversations[0]
    calls = recorded_calls(loaded.conversation, loaded.events)
    assert len(calls) == 484  # every assistant message is one API call
    after = [c for c in calls if c.host_compaction]
    assert [c.line for c in after] == [362, 631]
    first = after[0]
    assert first.messages[0]["role"] == "compactionSummary"
    assert first.messages[0]["summary"] == loaded.events[0].summary
    # v1 firstKeptEntryIndex 293 names line 294 (the header is entries[0] on line 1)
    kept_line = next(e for e in loaded.conversation.entries if e.line == 294)
    assert first.messages[1] is kept_line.message
    # the context before the compaction was far longer than what the host kept
    before = calls[first.index - 1]
    assert len(before.messages) > 3 * len(first.messages) - 50
    assert all(c.timestamp_ms is not None for c in calls)
    assert [c.timestamp_ms for c in calls] == sorted(c.timestamp_ms for c in calls if c.timestamp_ms is not None)


def test_claude_code_sidechains_are_separate_chains_merged_in_time() -> None:
    read = read_transcript(DATA / "claude-code" / "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl")
    calls = recorded_session_calls(read.conversations)
    assert len(calls) == 170  # 262 streamed lines, one call per message id
    assert len({c.chain for c in calls}) == len(read.conversations) > 1
    stamps = [c.timestamp_ms or 0 for c in calls]
    assert stamps == sorted(stamps)
    assert all(c.has_usage for c in calls)


def _entry(line: int, role: str, entry_id: str, **extra: object) -> InputEntry:
    return InputEntry(line, "message", {"role": role, "content": [{"type": "text", "text": entry_id}], "timestamp": line * 1000, **extra}, entry_id)


def test_failed_calls_leave_the_context_and_branch_summaries_enter_it() -> None:
    usage = {"input": 3, "cacheRead": 0, "cacheWrite": 0, "output": 1}
    conv = Conversation(
        "s",
        entries=(
            _entry(2, "user", "u1"),
            _entry(3, "assistant", "a1", usage=usage, stopReason="error"),
            InputEntry(4, "branch_summary", None, "b1"),
            _entry(5, "assistant", "a2", usage=usage, stopReason="stop"),
            _entry(6, "assistant", "gw", provider="openclaw"),
        ),
    )
    events = [RecordedEvent("branch_summary", 4, "b1", None, "explored X")]
    calls = recorded_calls(conv, events)
    assert [c.entry_id for c in calls] == ["a1", "a2"]  # the gateway-injected message is no call
    assert [m["role"] for m in calls[1].messages] == ["user", "branchSummary"]
    assert calls[1].messages[1]["summary"] == "explored X"


def test_compaction_keeping_an_unknown_entry_is_an_error() -> None:
    conv = Conversation("s", entries=(_entry(2, "user", "u1"), InputEntry(3, "compaction", None, "c1")))
    events = [RecordedEvent("compaction", 3, "c1", None, "sum", first_kept_entry_id="nope")]
    with pytest.raises(ValueError, match="nope"):
        recorded_calls(conv, events)
