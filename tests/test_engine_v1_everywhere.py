"""Everything that reads a replay accepts a lossless-claw 1.0 replay as it accepts a 0.15.3 one
(issue 21 item 5): views, widgets, scores and verdicts, ask, strategies, recall, cost and the lab
store — each test parametrised by engine, on replays where both engines compact."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_cost_replay import CAL, PRICES, _session

import lcm_lab as lab
from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.replay.driver import Replay, replay
from lcm_lab.io.transcripts import read_transcript
from lcm_lab.summarizers.stub import StubV1Summarizer

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "datasets" / "lossless-claw-ref" / "golden-session.jsonl"
G0 = {"contextThreshold": 0.75, "freshTailCount": 6, "leafMinFanout": 3, "condensedMinFanout": 2, "condensedMinFanoutHard": 2,
      "sweepMaxDepth": 1, "leafChunkTokens": 400, "leafTargetTokens": 2400, "condensedTargetTokens": 10,
      "summaryMaxOverageFactor": 3, "timezone": "UTC"}  # fmt: skip
ENGINES = ("0.15.3", "1.0")


@pytest.fixture(scope="module", params=ENGINES)
def run(request: pytest.FixtureRequest) -> Replay:
    conversation = read_transcript(GOLDEN).conversations[0].conversation
    result = replay(conversation, LcmConfig.from_plugin_config(G0), StubV1Summarizer(), token_budget=2000,
                    engine=request.param, run_id=f"golden-{request.param}")  # fmt: skip
    assert result.engine == request.param and result.summaries, "both engines must compact this input"
    return result


def _has_data(fig: Any) -> bool:
    return any(len(getattr(trace, "x", None) or getattr(trace, "y", None) or getattr(trace, "values", None) or []) for trace in fig.data)


def test_views_draw_a_1_0_replay(run: Replay) -> None:
    for fig in (lab.viz.plot_budget_timeline(run), lab.viz.plot_dag(run), lab.viz.plot_context_at(run, -1)):
        assert _has_data(fig)
    info = lab.viz.budget_info(run)
    assert len(info.sent_tokens) == len(run.turns) and max(info.sent_tokens) <= run.token_budget


def test_widgets_follow_a_1_0_replay(run: Replay) -> None:
    scrubber = lab.widgets.ReplayScrubber(run)
    before = scrubber.caption.value
    scrubber.slider.value = 1
    assert scrubber.caption.value != before
    explorer = lab.widgets.DagExplorer(run)
    assert explorer is not None


def test_scores_and_verdicts_of_a_1_0_replay(run: Replay) -> None:
    scores = lab.score_replay(run)
    headline = next(s for s in scores if s.scope == "run" and s.metric == "fact_retention")
    assert headline.details["protocol"] and headline.details["unit"] == "fact"
    assert {s.metric for s in scores if s.scope == "run"} >= {"fact_retention", "decision_retention", "peak_context_tokens"}


def test_ask_on_a_1_0_replay(run: Replay) -> None:
    sent = run.ask("What did we decide about the parser?")
    assert sent.turn == len(run.turns) and sent.prompt is not None
    assert sent.estimated_tokens <= run.token_budget


def test_the_lcm_strategy_runs_either_engine(run: Replay) -> None:
    strategy_run = lab.run_strategy(run.conversation, "lcm", StubV1Summarizer(), 2000, engine=run.engine, **G0)
    assert strategy_run.replay is not None and strategy_run.replay.engine == run.engine
    assert [t.tokens_end for t in strategy_run.replay.turns] == [t.tokens_end for t in run.turns]
    assert lab.strategy_scores(strategy_run, run_id="s")


def test_recall_over_a_1_0_replay(run: Replay) -> None:
    rec = lab.recall(run)
    word = max((w for m in run.messages for w in m.content.split() if w.isalpha()), key=len)
    found = rec.grep(word, limit=3)
    assert len(found.df()) > 0
    summary = run.summaries[0].summary_id
    described = rec.describe(summary)
    assert described and summary in str(described)


def test_store_round_trip_of_a_1_0_replay(run: Replay, store: Any) -> None:
    run_id = lab.save_replay(store, run)
    loaded = lab.load_replay(store, run_id)
    assert loaded.engine == run.engine and [t.tokens_end for t in loaded.turns] == [t.tokens_end for t in run.turns]
    assert [loaded.sent(k).path for k in range(len(loaded.turns))] == [run.sent(k).path for k in range(len(run.turns))]


@pytest.mark.parametrize("engine", ENGINES)
def test_cost_of_a_1_0_replay(engine: str) -> None:
    priced = replay(_session(), LcmConfig(fresh_tail_count=4, leaf_chunk_tokens=1500), StubV1Summarizer(), token_budget=4000,
                    engine=engine)  # type: ignore[arg-type]
    assert priced.summaries, "the priced session must compact under both engines"
    scores = {s.metric: s for s in lab.cost_scores(priced, prices=PRICES, calibration=CAL)}
    assert scores["cost_usd"].value is not None and scores["cost_usd"].value > 0
    assert 0 <= scores["cache_hit_rate"].value <= 1
