"""LoCoMo qa_retention through score_replay on a real replay: thresholds change it, scoring is
reproducible, and the headline carries its controls."""

from __future__ import annotations

from pathlib import Path

from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.replay.driver import replay
from lcm_lab.io.transcripts.locomo import read_locomo_json
from lcm_lab.metrics.score import score_replay
from lcm_lab.summarizers import get_summarizer

REPO = Path(__file__).resolve().parents[1]


def test_qa_retention_from_score_replay() -> None:
    convs = read_locomo_json(REPO / "datasets" / "locomo" / "locomo10.json").conversations
    conv, other = convs[0], convs[1].conversation
    heads = {}
    for threshold in (0.75, 0.4):
        config = LcmConfig(fresh_tail_count=8, leaf_chunk_tokens=2000, leaf_target_tokens=400, context_threshold=threshold)
        run = replay(conv.conversation, config, get_summarizer("offline"), token_budget=8000, run_id=f"t{threshold}")
        scores = score_replay(run, qa_items=conv.qa_items, chance_conversation=other, context_turns=[])
        head = next(s for s in scores if s.metric == "qa_retention")
        again = next(s for s in score_replay(run, qa_items=conv.qa_items, chance_conversation=other, context_turns=[]) if s.metric == "qa_retention")
        assert (head.value, head.details) == (again.value, again.details)
        d = head.details
        assert d["n"] > 100 and d["unit"] == "qa_item" and d["ceiling"] >= d["floor"] >= d["chance"]
        assert d["warnings"]["skipped: adversarial (category 5, unanswerable by design)"] > 0
        heads[threshold] = d
    assert heads[0.75]["method_tokens"] != heads[0.4]["method_tokens"]  # the threshold changes what the model receives
    assert heads[0.75]["ceiling"] == heads[0.4]["ceiling"] and heads[0.75]["floor"] == heads[0.4]["floor"]  # fixed per conversation x budget
