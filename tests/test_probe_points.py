"""Probe points cut history and compacted contexts out of replays of one conversation."""

from __future__ import annotations

import pytest
from reference_runs import config_for, conversation_for, load_trace

from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.replay.driver import replay
from lcm_lab.metrics.probe_points import compaction_turns, probe_point
from lcm_lab.summarizers.stub import StubV1Summarizer


def test_probe_point_at_the_first_common_compaction(tmp_path) -> None:
    trace = load_trace("golden__G0-golden")
    conversation = conversation_for("golden__G0-golden", tmp_path)
    tight = replay(conversation, config_for(trace), StubV1Summarizer(), token_budget=2000)
    loose = replay(conversation, LcmConfig(), StubV1Summarizer(), token_budget=2000)
    assert compaction_turns(tight) == [6] and compaction_turns(loose) == []
    point = probe_point({"tight": tight, "loose": loose})
    assert point.turn == 9  # the loose run never compacts: probe after the last turn
    point = probe_point({"tight": tight}, None)
    assert point.turn == 6
    assert "Turn 1: please check item 1." in point.history
    assert point.contexts["tight"].startswith("[user] <summary")
    assert "Turn 1: please check item 1." not in point.contexts["tight"]


def test_probe_point_refuses_replays_of_different_conversations(tmp_path) -> None:
    trace = load_trace("golden__G0-golden")
    a = replay(conversation_for("golden__G0-golden", tmp_path), config_for(trace), StubV1Summarizer(), token_budget=2000)
    b = replay(conversation_for("golden__G0-golden-oneshot", tmp_path), config_for(trace), StubV1Summarizer(),
               token_budget=2000, single_turn=True)  # fmt: skip
    with pytest.raises(ValueError, match="same conversation"):
        probe_point({"a": a, "b": b})


def test_several_points_and_probe_controls(tmp_path) -> None:
    from lcm_lab.metrics.probe_points import CEILING, FLOOR, probe_controls, probe_points

    trace = load_trace("golden__G0-golden")
    tight = replay(conversation_for("golden__G0-golden", tmp_path), config_for(trace), StubV1Summarizer(), token_budget=2000)
    points = probe_points({"tight": tight}, count=3)
    assert [p.turn for p in points] == sorted({p.turn for p in points}) and len(points) == 3
    assert points[0].turn == 6 and points[-1].turn == len(tight.turns) - 1
    contexts = probe_controls(points[0], tight, budget=200)
    assert contexts[CEILING] == points[0].history  # the ceiling is the raw history at that point, rendered alike
    assert contexts[FLOOR] and contexts[FLOOR] in contexts[CEILING] and len(contexts[FLOOR]) < len(contexts[CEILING])
    assert contexts["tight"] == points[0].contexts["tight"]
