"""The reference protocol's turn split, checked against every reference trace."""

from __future__ import annotations

import gzip
import json
from functools import cache
from pathlib import Path

import pytest

from lcm_lab.engine.replay.turns import split_turns
from lcm_lab.engine.types import InputEntry
from lcm_lab.io.transcripts import read_transcript

REFERENCE = Path(__file__).resolve().parent / "fixtures" / "reference-runs"
TRACES = sorted((REFERENCE / "traces").glob("*.trace.json.gz"))
PERSISTABLE = {"user", "assistant", "system", "tool", "toolResult"}


@cache
def _conversation(input_file: str):  # noqa: ANN202
    return read_transcript(REFERENCE / f"{input_file}.gz").conversations[0].conversation


@pytest.mark.parametrize("trace_path", TRACES, ids=lambda p: p.name.removesuffix(".trace.json.gz"))
def test_turns_match_reference_trace(trace_path: Path) -> None:
    with gzip.open(trace_path, "rt", encoding="utf-8") as handle:
        trace = json.load(handle)
    conversation = _conversation(trace["input_file"])
    turns = split_turns(conversation.entries, conversation.meta["last_line"])
    if trace["driver"].get("single_turn"):
        # one-shot runs feed the whole transcript as one turn: same lines, all messages
        (expected,) = trace["turns"]
        assert expected["lines"] == [turns[0].first_line, turns[-1].last_line]
        assert expected["input_messages"] == sum(len(t.messages) for t in turns)
        return
    assert len(turns) == trace["turn_count"] == len(trace["turns"])
    for turn, expected in zip(turns, trace["turns"], strict=True):
        assert turn.index == expected["turn"]
        assert list(turn.lines) == expected["lines"]
        assert len(turn.messages) == expected["input_messages"]
        persistable = sum(1 for m in turn.messages if m.get("role") in PERSISTABLE)
        assert persistable == expected["input_persistable_messages"]


def _e(line: int, role: str | None, entry_type: str = "message") -> InputEntry:
    return InputEntry(line, entry_type, {"role": role, "content": ""} if role else None)


def test_preamble_leading_non_user_turn_and_trailing_lines() -> None:
    entries = [
        _e(2, None, "model_change"),
        _e(3, "assistant"),
        _e(4, "toolResult"),
        _e(5, "user"),
        _e(6, None, "compaction"),
        _e(7, "assistant"),
        _e(9, "user"),
    ]
    turns = split_turns(entries, last_line=12)
    assert [(t.index, t.lines, len(t.entries), len(t.messages)) for t in turns] == [
        (0, (3, 4), 2, 2),  # leading non-user messages form turn 0; line 2 is preamble
        (1, (5, 8), 3, 2),  # runs to the line before the next user message (8 may be blank)
        (2, (9, 12), 1, 1),  # the last turn runs to the end of the file
    ]


def test_no_messages_means_no_turns() -> None:
    assert split_turns([_e(2, None, "model_change")]) == []
    assert split_turns([]) == []


def test_branched_leaf_path_turns_end_at_their_own_entries() -> None:
    # a leaf path may jump back in the file: lines 2, 3 then 10, 11 (4-9 abandoned branch)
    entries = [_e(2, "user"), _e(3, "assistant"), _e(10, "user"), _e(11, "assistant")]
    turns = split_turns(entries)
    assert [t.lines for t in turns] == [(2, 9), (10, 11)]
    jumping = [_e(8, "user"), _e(9, "assistant"), _e(3, "user")]
    assert [t.lines for t in split_turns(jumping)] == [(8, 9), (3, 3)]
