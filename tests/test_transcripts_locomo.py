"""LoCoMo reader: reference-converter parity, QA items, the full dataset counts."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from lcm_lab.io.transcripts import (
    LOCOMO_JSON,
    TranscriptFormatError,
    TranscriptRead,
    detect_format,
    read_transcript,
)
from lcm_lab.io.transcripts.locomo import parse_locomo_date

REPO = Path(__file__).resolve().parents[1]
SLICE = REPO / "tests" / "fixtures" / "transcripts" / "locomo10-samples-0-1.json.gz"
REFERENCE_INPUTS = REPO / "tests" / "fixtures" / "reference-runs" / "inputs"
FULL_LOCOMO = REPO / "datasets" / "locomo" / "locomo10.json"


@pytest.fixture(scope="module")
def locomo_slice() -> TranscriptRead:
    return read_transcript(SLICE)


def test_date_parsing() -> None:
    moment = parse_locomo_date("1:56 pm on 8 May, 2023")
    assert moment.isoformat() == "2023-05-08T13:56:00+00:00"
    assert parse_locomo_date("12:04 am on 1 January, 2024").isoformat() == "2024-01-01T00:04:00+00:00"


@pytest.mark.parametrize("index", [0, 1])
def test_conversion_matches_the_reference_converter(locomo_slice: TranscriptRead, index: int) -> None:
    with gzip.open(REFERENCE_INPUTS / f"locomo-conv-{index}.jsonl.gz", "rt", encoding="utf-8") as handle:
        reference = [json.loads(line) for line in handle]
    meta = json.loads((REFERENCE_INPUTS / f"locomo-conv-{index}.meta.json").read_text())
    loaded = locomo_slice.conversations[index]
    conversation = loaded.conversation
    assert conversation.meta["sample_id"] == meta["sample_id"]
    assert conversation.session_id == reference[0]["id"]
    assert conversation.meta["header_timestamp"] == reference[0]["timestamp"]
    ref_entries = reference[1:]
    assert len(conversation.entries) == len(ref_entries) == meta["messages"]
    for ours, theirs in zip(conversation.entries, ref_entries, strict=True):
        # same dict, same key order (JSON serialisation feeds token estimates)
        assert json.dumps(ours.message) == json.dumps(theirs["message"])
        assert ours.timestamp == theirs["timestamp"]
    assert [e.line for e in conversation.entries] == list(range(2, len(ref_entries) + 2))
    roles = Counter((e.message or {})["role"] for e in conversation.entries)
    assert roles == {"user": meta["user"], "assistant": meta["assistant"]}
    captions = sum("[shares image: " in (e.message or {})["content"][0]["text"] for e in conversation.entries)
    assert captions == meta["captions"]
    assert len(loaded.meta["session_dates"]) == meta["sessions"]


def test_dialogue_ids_and_qa_items(locomo_slice: TranscriptRead) -> None:
    loaded = locomo_slice.conversations[0]
    entries = loaded.conversation.entries
    assert entries[0].entry_id == "D1:1" and entries[2].entry_id == "D1:3"
    assert len(loaded.qa_items) == 199 and len(locomo_slice.conversations[1].qa_items) == 105
    first = loaded.qa_items[0]
    assert first.qa_id == "conv-26:q0" and first.category == 2
    assert first.answer == "7 May 2023" and first.evidence == ("D1:3",)
    adversarial = next(q for q in loaded.qa_items if q.category == 5)
    assert adversarial.answer is None and adversarial.adversarial_answer
    # every evidence id names a dialogue line of the conversation
    dia_ids = {e.entry_id for e in entries}
    assert all(ref in dia_ids for q in loaded.qa_items for ref in q.evidence)
    # image urls and queries are kept outside the message dicts
    assert any("img_url" in extra for extra in loaded.meta["dialogue_extras"].values())
    assert locomo_slice.issues == ()


def test_detection_and_not_locomo(tmp_path: Path) -> None:
    assert detect_format(SLICE) == LOCOMO_JSON
    single = tmp_path / "sample.json"
    with gzip.open(SLICE, "rt", encoding="utf-8") as handle:
        sample = json.load(handle)[1]
    single.write_text(json.dumps(sample, indent=2))
    assert detect_format(single) == LOCOMO_JSON
    assert len(read_transcript(single).conversations) == 1
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps([{"conversation": "not an object"}]))
    with pytest.raises(TranscriptFormatError):
        read_transcript(wrong, kind=LOCOMO_JSON)


def test_odd_evidence_and_unknown_speakers_are_reported(tmp_path: Path) -> None:
    sample = {
        "sample_id": "tiny",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_1_date_time": "9:00 am on 2 March, 2024",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "hi"},
                {"speaker": "Carol", "dia_id": "D1:2", "text": "who am I?"},
            ],
        },
        "qa": [{"question": "q?", "answer": 2024, "evidence": ["D1:1; D1:2"], "category": 1}, {"no": "question"}],
    }
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps([sample]))
    read = read_transcript(path)
    (loaded,) = read.conversations
    assert [(e.message or {}).get("role") for e in loaded.conversation.entries] == ["user", "user"]
    (qa,) = loaded.qa_items
    assert qa.answer == "2024" and qa.evidence == ("D1:1", "D1:2")
    messages = [issue.message for issue in read.issues]
    assert any("Carol" in m for m in messages) and any("no question" in m for m in messages)
    assert read.skipped_lines == 1
    assert loaded.conversation.entries[1].timestamp == "2024-03-02T09:01:00.000Z"


def test_evidence_ids_missing_from_the_conversation_are_one_counted_warning(tmp_path: Path) -> None:
    dialogue = {"speaker_a": "A", "speaker_b": "B", "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "I like red"}]}  # fmt: skip
    qa = [{"question": f"q{n}?", "answer": "red", "evidence": [f"D9:{n}", "D1:1"], "category": 1} for n in range(7)]
    path = tmp_path / "ghost.json"
    path.write_text(json.dumps([{"sample_id": "ghost", "conversation": dialogue, "qa": qa}]))
    read = read_transcript(path)
    (issue,) = read.issues
    assert issue.message == ("7 QA evidence id(s) name no dialogue line of their sample (D9:0 in ghost, D9:1 in ghost, "
                             "D9:2 in ghost, D9:3 in ghost, D9:4 in ghost, …); kept as is, so no message supports them")
    assert not issue.skipped and read.conversations[0].qa_items[6].evidence == ("D9:6", "D1:1")


def test_full_locomo_has_10_conversations_and_1986_questions() -> None:
    read = read_transcript(FULL_LOCOMO)
    assert read.kind == LOCOMO_JSON
    assert len(read.conversations) == 10 and read.qa_count == 1986
    assert sum(len(c.conversation.entries) for c in read.conversations) == 5882
    categories = Counter(q.category for c in read.conversations for q in c.qa_items)
    assert categories == {1: 282, 2: 321, 3: 96, 4: 841, 5: 446}
    assert all(not issue.skipped for issue in read.issues)
    # the dataset's own three evidence ids that name no line of their conversation
    assert read.issues[-1].message.startswith("3 QA evidence id(s) name no dialogue line of their sample "
                                              "(D10:19 in conv-42, D4:36 in conv-47, D30:05 in conv-50);")
