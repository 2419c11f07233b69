"""The demo gives both headlines their chance control: fact_retention reads a donor conversation
picked deterministically from the bundled data (same kind, other session, closest in size)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lcm_lab.bundled.demo import CONVERSATIONS, bundled_donor_candidates, pick_donor
from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.replay.driver import replay
from lcm_lab.engine.types import Conversation, InputEntry
from lcm_lab.io.model import LoadedConversation
from lcm_lab.io.transcripts import read_transcript
from lcm_lab.metrics.score import score_replay
from lcm_lab.summarizers import get_summarizer

DATASETS = Path(__file__).resolve().parents[1] / "datasets"


def _chat(session_id: str, words: int) -> LoadedConversation:
    entries = tuple(
        InputEntry(i, "message", {"role": "user" if i % 2 == 0 else "assistant",
                                  "content": [{"type": "text", "text": " ".join(["word"] * words)}]})
        for i in range(4)
    )
    return LoadedConversation(Conversation(session_id, entries, title=session_id))


def test_pick_donor_takes_the_closest_size_of_another_session() -> None:
    me = _chat("me", 100)
    candidates = [("f#me", _chat("me", 100)), ("f#far", _chat("far", 2000)), ("f#near", _chat("near", 160)),
                  ("f#small", _chat("small", 50))]
    assert pick_donor(me, candidates).label == "f#near"  # type: ignore[union-attr]
    assert pick_donor(me, list(reversed(candidates))).label == "f#near"  # type: ignore[union-attr]  order-free
    assert pick_donor(me, [("f#me", _chat("me", 100))]) is None


@pytest.mark.skipif(not DATASETS.is_dir(), reason="bundled datasets not found")
def test_every_demo_conversation_gets_a_bundled_donor_of_its_kind() -> None:
    candidates = bundled_donor_candidates(DATASETS)
    for _, relative, index in CONVERSATIONS:
        chosen = read_transcript(DATASETS / relative).conversations[index]
        donor = pick_donor(chosen, candidates)
        assert donor is not None and donor.text.strip()
        assert not donor.label.startswith(f"{relative}#{index}")
        if chosen.qa_items:
            assert donor.label.startswith("locomo/")
        else:
            assert not donor.label.startswith("locomo/")
        assert pick_donor(chosen, candidates) == donor  # deterministic


@pytest.mark.skipif(not DATASETS.is_dir(), reason="bundled datasets not found")
def test_coding_session_fact_headline_has_a_chance_control_naming_its_donor() -> None:
    chosen = read_transcript(DATASETS / "lossless-claw-ref" / "golden-session.jsonl").conversations[0]
    donor = pick_donor(chosen, bundled_donor_candidates(DATASETS))
    assert donor is not None
    run = replay(chosen.conversation, LcmConfig(fresh_tail_count=4, leaf_chunk_tokens=600, leaf_target_tokens=200),
                 get_summarizer("offline"), token_budget=1500)
    without = next(s for s in score_replay(run, run_id="r") if s.metric == "fact_retention" and s.scope == "run")
    assert without.details["chance"] is None and "chance_withheld" in without.details
    scores = score_replay(run, run_id="r", donor_text=donor.text, donor_label=donor.label)
    head = next(s for s in scores if s.metric == "fact_retention" and s.scope == "run")
    assert head.details["chance"] is not None and head.details["chance_donor"] == donor.label
    assert "chance_withheld" not in head.details
