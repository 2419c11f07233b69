"""OpenClaw/pi session JSONL reader: versions, leaf path, recorded events, reference inputs."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from lcm_lab.io.transcripts import PI_JSONL, read_transcript
from lcm_lab.io.transcripts.pi import read_pi_jsonl

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "transcripts"
REFERENCE_INPUTS = REPO / "tests" / "fixtures" / "reference-runs" / "inputs"


def messages_of(read):  # noqa: ANN001, ANN201 - tiny test helper
    return [e.message for e in read.conversations[0].conversation.entries if e.message is not None]


@pytest.fixture(scope="module")
def before_compaction_v1():  # noqa: ANN201
    return read_transcript(FIXTURES / "before-compaction.v1.jsonl.gz")


@pytest.fixture(scope="module")
def before_compaction_v3():  # noqa: ANN201
    return read_transcript(REFERENCE_INPUTS / "before-compaction.v3.jsonl.gz")


def test_before_compaction_v1_has_both_compactions_and_linear_leaf_path(before_compaction_v1) -> None:  # noqa: ANN001
    read = before_compaction_v1
    assert read.kind == PI_JSONL and read.version == 1
    assert read.issues == () and read.skipped_lines == 0
    loaded = read.conversations[0]
    conversation = loaded.conversation
    assert conversation.session_id == "ffae836b-9420-4060-ac13-7745215f90ff"
    # 1003 lines: header + 1002 entries, all on the (linear) leaf path, file order, lines 2..1003
    assert [e.line for e in conversation.entries] == list(range(2, 1004))
    assert loaded.meta["leaf_path"] == "tree" and loaded.meta["upgraded_from_v1"] is True
    assert loaded.meta["off_path_entries"] == 0
    types = [e.type for e in conversation.entries]
    assert types.count("message") == 990 and types.count("compaction") == 2
    assert types.count("model_change") == 5 and types.count("thinking_level_change") == 5
    # the v1 upgrade chains every entry to the previous one
    parents = {e.entry_id for e in conversation.entries}
    assert len(parents) == 1002

    events = loaded.events
    assert [(e.kind, e.line, e.tokens_before) for e in events] == [
        ("compaction", 360, 175004),
        ("compaction", 629, 185014),
    ]
    by_id = {e.entry_id: e for e in conversation.entries}
    kept = [by_id[event.first_kept_entry_id] for event in events]
    # firstKeptEntryIndex 293 / 551 with the header at index 0 → lines 294 / 552, user messages
    assert [k.line for k in kept] == [294, 552]
    assert all(k.message is not None and k.message["role"] == "user" for k in kept)
    assert events[0].summary is not None and events[0].summary.startswith("# Context Checkpoint")
    assert events[0].raw["firstKeptEntryIndex"] == 293


def test_v1_and_v3_reads_yield_the_same_message_sequence(before_compaction_v1, before_compaction_v3) -> None:  # noqa: ANN001
    v1, v3 = messages_of(before_compaction_v1), messages_of(before_compaction_v3)
    assert len(v1) == 990
    assert v1 == v3
    # same key order too (JSON serialisation, hence assembly token estimates, depend on it)
    assert [json.dumps(m) for m in v1] == [json.dumps(m) for m in v3]
    e1 = before_compaction_v1.conversations[0].conversation.entries
    e3 = before_compaction_v3.conversations[0].conversation.entries
    assert [(a.line, a.type, a.timestamp) for a in e1] == [(b.line, b.type, b.timestamp) for b in e3]
    k1 = [e.first_kept_entry_id for e in before_compaction_v1.conversations[0].events]
    k3 = [e.first_kept_entry_id for e in before_compaction_v3.conversations[0].events]
    lines1 = {e.entry_id: e.line for e in e1}
    lines3 = {e.entry_id: e.line for e in e3}
    assert [lines1[k] for k in k1] == [lines3[k] for k in k3]
    assert before_compaction_v3.version == 3


def test_message_dicts_are_verbatim(before_compaction_v3) -> None:  # noqa: ANN001
    with gzip.open(REFERENCE_INPUTS / "before-compaction.v3.jsonl.gz", "rt", encoding="utf-8") as handle:
        raw = [json.loads(line) for line in handle]
    expected = [obj["message"] for obj in raw if obj.get("type") == "message"]
    assert messages_of(before_compaction_v3) == expected


@pytest.mark.parametrize(
    "name", ["golden-session", "synth-1", "synth-2", "locomo-conv-0", "locomo-conv-1", "before-compaction.v3"]
)
def test_reference_inputs_read_cleanly_with_matching_entry_counts(name: str) -> None:
    path = REFERENCE_INPUTS / f"{name}.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        raw = [json.loads(line) for line in handle if line.strip()]
    read = read_transcript(path)
    assert read.kind == PI_JSONL and read.issues == () and read.skipped_lines == 0
    conversation = read.conversations[0].conversation
    assert conversation.session_id == raw[0]["id"]
    assert len(conversation.entries) == len(raw) - 1
    assert [e.entry_id for e in conversation.entries] == [obj["id"] for obj in raw[1:]]
    assert [e.message for e in conversation.entries] == [
        obj["message"] if obj["type"] == "message" else None for obj in raw[1:]
    ]
    assert conversation.meta["last_line"] == len(raw)


def test_branched_file_keeps_only_the_path_to_the_last_entry() -> None:
    read = read_transcript(FIXTURES / "branched.v3.jsonl")
    loaded = read.conversations[0]
    ids = [e.entry_id for e in loaded.conversation.entries]
    assert ids == ["m0", "a1", "a2", "b3", "b4", "b5", "b6"]
    assert loaded.meta["off_path_entries"] == 2  # a3, a4 are an abandoned branch
    assert loaded.meta["off_path_lines"] == (5, 6)
    (issue,) = read.issues  # said, not dropped quietly
    assert issue.line == 5 and not issue.skipped and "2 entries on other branches" in issue.message
    (event,) = loaded.events
    assert event.kind == "branch_summary" and event.summary == "Tried the abandoned follow-up."
    assert event.raw["fromId"] == "a4"
    assert [e.line for e in loaded.conversation.entries] == [2, 3, 4, 7, 8, 9, 10]


@pytest.mark.parametrize(
    ("name", "line", "phrase"),
    [
        ("dangling-parent.v3.jsonl", 4, "dangling parent"),
        ("cycle.v3.jsonl", 2, "cycle"),
    ],
)
def test_broken_tree_falls_back_to_file_order_and_says_why(name: str, line: int, phrase: str) -> None:
    read = read_transcript(FIXTURES / name)
    loaded = read.conversations[0]
    entries = loaded.conversation.entries
    assert [e.line for e in entries] == list(range(2, 2 + len(entries)))
    assert loaded.meta["leaf_path"] == "file-order"
    (issue,) = read.issues
    assert phrase in issue.message and issue.line == line and issue.path.endswith(name)
    assert issue.skipped is False and read.skipped_lines == 0


def test_duplicate_ids_later_occurrence_wins_and_is_reported() -> None:
    read = read_transcript(FIXTURES / "duplicate-ids.v3.jsonl")
    entries = read.conversations[0].conversation.entries
    texts = [e.message["content"][0]["text"] for e in entries if e.message]
    assert texts == ["q1", "rewritten answer (same id, later line wins)", "q2"]
    (issue,) = read.issues
    assert issue.line == 4 and "duplicate entry id 'x2'" in issue.message and "line 3" in issue.message


def test_v1_first_kept_entry_index_counts_the_header_as_index_zero() -> None:
    read = read_transcript(FIXTURES / "v1-legacy.jsonl")
    assert read.version == 1
    loaded = read.conversations[0]
    (event,) = loaded.events
    kept = next(e for e in loaded.conversation.entries if e.entry_id == event.first_kept_entry_id)
    assert kept.line == 4 and kept.message == {"role": "user", "content": "again", "timestamp": 1735689603000}
    assert event.tokens_before == 1234 and event.summary == "User said hello."
    # upgraded ids are deterministic
    again = read_transcript(FIXTURES / "v1-legacy.jsonl").conversations[0]
    assert [e.entry_id for e in again.conversation.entries] == [e.entry_id for e in loaded.conversation.entries]


def test_legacy_uuid_and_parent_uuid_are_accepted() -> None:
    read = read_transcript(FIXTURES / "legacy-uuid.jsonl")
    entries = read.conversations[0].conversation.entries
    assert [e.entry_id for e in entries] == ["u1", "u2"] and read.issues == ()
    assert read.version == 2


def test_bare_message_lines_and_whole_file_json_array() -> None:
    bare = read_transcript(FIXTURES / "bare-messages.jsonl")
    assert bare.kind == PI_JSONL
    conversation = bare.conversations[0].conversation
    assert conversation.session_id == "bare-messages"
    assert [e.message["role"] for e in conversation.entries] == ["user", "assistant", "bashExecution"]
    assert all(e.type == "message" and e.timestamp is None for e in conversation.entries)

    array = read_transcript(FIXTURES / "array-session.json")
    assert array.kind == PI_JSONL
    loaded = array.conversations[0]
    assert loaded.meta["layout"] == "json-array"
    assert [e.message for e in loaded.conversation.entries] == [
        {"role": "user", "content": "array question", "timestamp": 1},
        {"role": "assistant", "content": "array answer", "timestamp": 2},
    ]


def test_unknown_entry_types_and_fields_are_kept() -> None:
    read = read_transcript(FIXTURES / "unknown-types.v3.jsonl")
    loaded = read.conversations[0]
    conversation = loaded.conversation
    assert conversation.meta["header"]["futureHeaderField"] == {"x": 1}
    assert [e.type for e in conversation.entries] == [
        "mode_change", "message", "message", "message", "compaction", "unknown", "message",
    ]
    assistant = conversation.entries[2].message
    assert assistant["futureMessageField"] == {"nested": True} and assistant["responseId"] == "resp_1"
    assert conversation.entries[3].message["content"][0] == {"type": "hologram", "payload": "???"}
    (event,) = loaded.events
    assert event.raw["usage"] == {"input": 5} and event.first_kept_entry_id == "k2"
    # unknown envelope fields and non-message entries stay available verbatim
    raw = loaded.meta["raw_entries"]
    assert raw[3]["futureEnvelopeField"] == [1, 2, 3] and raw[2]["mode"] == "plan"
    assert 4 not in raw  # a plain message entry is fully represented by its InputEntry
    # the type-less entry is kept (as 'unknown') with a warning, nothing skipped
    (issue,) = read.issues
    assert issue.line == 7 and "no string 'type'" in issue.message and issue.skipped is False
    assert read.skipped_lines == 0


def test_read_pi_jsonl_rejects_a_file_without_any_session_content(tmp_path: Path) -> None:
    from lcm_lab.io.transcripts import TranscriptFormatError

    path = tmp_path / "garbage.jsonl"
    path.write_text("not json\nstill not json\n")
    with pytest.raises(TranscriptFormatError, match="no pi session header"):
        read_pi_jsonl(path)
