"""Widget callbacks, driven headlessly: set a control's ``.value`` and check what changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.replay.driver import Replay, replay
from lcm_lab.engine.types import Conversation
from lcm_lab.errors import OptionError
from lcm_lab.io.transcripts import read_transcript
from lcm_lab.summarizers import get_summarizer
from lcm_lab.summarizers.stub import StubV1Summarizer
from lcm_lab.widgets import DagExplorer, ParameterPlayground, ReplayScrubber, SummaryDiff

INPUTS = Path(__file__).parent / "fixtures" / "reference-runs" / "inputs"
DEEP = LcmConfig.from_plugin_config({"freshTailCount": 4, "leafChunkTokens": 1500, "leafMinFanout": 4,
                                     "condensedMinFanout": 3, "sweepMaxDepth": -1, "condensedTargetTokens": 300,
                                     "summaryPrefixTargetTokens": 1500})


def conversation(name: str) -> Conversation:
    return read_transcript(INPUTS / f"{name}.jsonl.gz").conversations[0].conversation


@pytest.fixture(scope="module")
def deep_offline() -> Replay:
    return replay(conversation("synth-1"), DEEP, get_summarizer("offline"), token_budget=6000, run_id="offline")


@pytest.fixture(scope="module")
def deep_stub() -> Replay:
    return replay(conversation("synth-1"), DEEP, StubV1Summarizer(), token_budget=6000, run_id="stub")


def test_dag_explorer_shows_the_selected_summary(deep_offline: Replay) -> None:
    explorer = DagExplorer(deep_offline, color_by="depth")
    top = max(deep_offline.summaries, key=lambda s: s.depth)
    leaf = next(s for s in deep_offline.summaries if s.kind == "leaf")
    assert explorer.selector.value == top.summary_id  # deepest first
    assert "Sources (" in explorer.detail.value and top.summary_id in explorer.detail.value
    explorer.selector.value = leaf.summary_id
    html = explorer.detail.value
    assert leaf.summary_id in html and "Raw messages" in html and "Summarizer input" in html
    assert "Condensed into" in html  # every leaf of this deep run is condensed later... or is still in context
    # clicking a node selects it
    node_trace = next(t for t in explorer.figure.data if t.customdata is not None and leaf.summary_id in t.customdata)
    index = list(node_trace.customdata).index(leaf.summary_id)
    explorer.selector.value = top.summary_id

    class Points:
        point_inds = [index]

    explorer._on_click(node_trace, Points(), None)
    assert explorer.selector.value == leaf.summary_id


def test_scrubber_grows_the_dag_and_moves_the_marker(deep_offline: Replay) -> None:
    scrubber = ReplayScrubber(deep_offline)
    last = deep_offline.turns[-1].turn
    nodes_at_end = sum(len(t.x) for t in scrubber.dag.data if t.mode == "markers" and t.customdata is not None)
    assert nodes_at_end == len(deep_offline.summaries)
    assert scrubber.budget.layout.shapes[0].x0 == last
    first_compaction = next(t.turn for t in deep_offline.turns if t.created_summary_ids)
    scrubber.slider.value = first_compaction
    nodes = sum(len(t.x) for t in scrubber.dag.data if t.mode == "markers" and t.customdata is not None)
    expected = sum(1 for s in deep_offline.summaries if s.created_turn <= first_compaction)
    assert 0 < nodes == expected < nodes_at_end
    assert scrubber.budget.layout.shapes[0].x0 == first_compaction
    assert f"<b>turn {first_compaction}</b>" in scrubber.caption.value
    assert f"Turn {first_compaction}:" in scrubber.context.layout.title.text
    assert scrubber.play.max == scrubber.slider.max == len(deep_offline.turns) - 1


def test_playground_replays_on_every_slider_change() -> None:
    conv = conversation("golden-session")
    config = LcmConfig(fresh_tail_count=6, leaf_min_fanout=3, condensed_min_fanout=2, leaf_chunk_tokens=400)
    playground = ParameterPlayground(conv, config=config, token_budget=2000)
    assert playground.settings()["token_budget"] == 2000 and len(playground.history) == 1
    before = playground.replay
    assert before.summaries, "this setting compacts the golden session"
    playground.sliders["token_budget"].value = 100_000  # nothing to compact any more
    assert len(playground.history) == 2 and playground.replay is not before
    assert playground.replay.token_budget == 100_000 and not playground.replay.summaries
    assert "summaries 0" in playground.stats.value
    assert not any(t.customdata is not None for t in playground.dag.data)
    playground.sliders["token_budget"].value = 2000
    playground.sliders["fresh_tail_count"].value = 2
    assert playground.replay.config.fresh_tail_count == 2 and playground.replay.config.leaf_chunk_tokens == 400
    assert playground.history[-1]["fresh_tail_count"] == 2
    budget_trace = next(t for t in playground.budget.data if t.name == "budget")
    assert list(budget_trace.y) == [2000, 2000]


def test_summary_diff_compares_two_runs_span_by_span(deep_offline: Replay, deep_stub: Replay) -> None:
    diff = SummaryDiff(deep_stub, deep_offline, labels=("stub-v1", "offline <model>"))
    assert len(diff.selector.options) == len(diff.pairs) > 0
    first = diff.left_pane.value
    assert "SUMMARY kind=" in first and "&lt;model&gt;" in diff.right_pane.value
    diff.selector.value = len(diff.pairs) - 1
    assert diff.left_pane.value != first
    assert "word similarity" in diff.similarity.value
    with pytest.raises(ValueError, match="no summaries"):
        SummaryDiff(deep_stub, ())


def test_playground_steps_label_and_conversation_picker() -> None:
    from lcm_lab.widgets.playground import BUDGETS

    first, second = conversation("golden-session"), conversation("synth-1")
    config = LcmConfig(fresh_tail_count=6, leaf_min_fanout=3, condensed_min_fanout=2, leaf_chunk_tokens=400)
    playground = ParameterPlayground({"first": first, "second": second}, config=config, token_budget=2000)
    budget = playground.sliders["token_budget"]
    # token sizes step through sizes a user picks, not 500-token steps over 1k..256k
    assert [v for _, v in budget.options] == list(BUDGETS) and budget.value == 2000  # 16 sizes, not 511 steps of 500
    assert 400 in [v for _, v in playground.sliders["leaf_chunk_tokens"].options]  # the starting value is kept
    assert "incrementalMaxDepth" in playground.children[2].value and "depth cap" in playground.stats.value
    assert playground.picker.options == ("first", "second") and playground.picker.layout.display == ""
    playground.picker.value = "second"
    assert playground.conversation is second and playground.history[-1]["conversation"] == "second"
    assert playground.history[-1]["redraw_seconds"] >= playground.history[-1]["seconds"]
    with pytest.raises(OptionError, match="at least one conversation"):
        ParameterPlayground({})
