"""Trying to fool fact retention: control summaries must not earn credit they did not deserve.

Acceptance of issue 9: pointer-only summaries score summary ``fact_retention`` <= 0.10, another
conversation's text <= 0.15, bare lists and fixed text near zero; the run headline carries its
ceiling, floor, chance control, n, unit and interval, and is withheld when the history fits.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.replay.driver import Replay, replay
from lcm_lab.engine.tokens import estimate_tokens
from lcm_lab.engine.types import Conversation
from lcm_lab.io.transcripts import read_transcript
from lcm_lab.metrics.base import Score
from lcm_lab.metrics.dag import Dag
from lcm_lab.metrics.fact_headline import (
    conversation_costs,
    conversation_texts,
    fact_headline_scores,
    truncation_text,
)
from lcm_lab.metrics.retention import summary_fact_scores
from lcm_lab.metrics.statements import split_statements
from lcm_lab.summarizers import get_summarizer
from lcm_lab.summarizers.controls import (
    BareListSummarizer,
    FixedTextSummarizer,
    OtherConversationSummarizer,
    PointerOnlySummarizer,
)

REPO = Path(__file__).resolve().parents[1]
CONFIG = LcmConfig.from_plugin_config({"freshTailCount": 8, "leafChunkTokens": 2000, "leafTargetTokens": 400, "condensedTargetTokens": 300})


@cache
def _locomo(i: int) -> Conversation:
    return read_transcript(REPO / "datasets" / "locomo" / "locomo10.json").conversations[i].conversation


@cache
def _claude(i: int) -> Conversation:
    return read_transcript(next((REPO / "datasets" / "claude-code").glob("*.jsonl"))).conversations[i].conversation


def _donor(conv: Conversation) -> str:
    return "\n".join(t for _, t in conversation_texts(conv))


CORPORA = {
    "locomo": (lambda: _locomo(0), lambda: _locomo(1), 8000),
    "claude-code": (lambda: _claude(0), lambda: _locomo(2), 4000),
}


@cache
def _run(corpus: str, name: str) -> Replay:
    conv_of, donor_of, budget = CORPORA[corpus]
    summarizers = {
        "offline": get_summarizer("offline"),
        "fixed": FixedTextSummarizer(),
        "bare": BareListSummarizer(),
        "pointer": PointerOnlySummarizer(),
        "other": OtherConversationSummarizer(_donor(donor_of())),
    }
    return replay(conv_of(), CONFIG, summarizers[name], token_budget=budget, run_id=f"{corpus}-{name}")


def _summary_mean(rep: Replay, metric: str) -> float:
    values = [s.value for s in summary_fact_scores(Dag.from_replay(rep), "r") if s.scope == "summary" and s.metric == metric and s.value is not None]
    assert values, "no summary with source facts"
    return sum(values) / len(values)


@pytest.mark.parametrize("corpus", sorted(CORPORA))
def test_control_summaries_earn_no_summary_fact_retention(corpus: str) -> None:
    assert _summary_mean(_run(corpus, "pointer"), "fact_retention") <= 0.10
    assert _summary_mean(_run(corpus, "pointer"), "fact_pointer_rate") >= 0.5  # named, not stated
    assert _summary_mean(_run(corpus, "other"), "fact_retention") <= 0.15
    assert _summary_mean(_run(corpus, "bare"), "fact_retention") <= 0.05
    assert _summary_mean(_run(corpus, "fixed"), "fact_retention") == 0.0


@pytest.mark.parametrize("corpus", sorted(CORPORA))
def test_offline_summaries_state_facts_the_controls_do_not(corpus: str) -> None:
    offline = _summary_mean(_run(corpus, "offline"), "fact_retention")
    for control in ("pointer", "other", "bare", "fixed"):
        assert offline > _summary_mean(_run(corpus, control), "fact_retention") + 0.1, control


def _headline(scores: list[Score]) -> Score:
    return next(s for s in scores if s.scope == "run" and s.metric == "fact_retention")


def test_run_headline_has_its_controls_and_a_fixed_floor() -> None:
    donor = _donor(_locomo(1))
    rows = {name: fact_headline_scores(_run("locomo", name), name, donor_text=donor) for name in ("offline", "pointer", "other")}
    floors = {_headline(r).details["floor"] for r in rows.values()}
    assert len(floors) == 1  # the floor belongs to conversation x budget, not to the method
    for name, scores in rows.items():
        d = _headline(scores).details
        assert d["ceiling"] == 1.0 and d["unit"] == "fact" and d["n"] > 20
        assert d["chance"] is not None and d["chance"] <= 0.1
        assert d["ci_low"] <= _headline(scores).value <= d["ci_high"], name
    run = {s.metric: s.value for s in rows["pointer"]}
    assert run["compacted_fact_retention"] == 0.0 and run["fact_pointer_rate"] > 0.5
    assert {s.metric: s.value for s in rows["other"]}["compacted_fact_retention"] <= 0.1


def test_headline_is_withheld_when_the_history_fits_in_the_budget() -> None:
    rep = replay(_claude(0), CONFIG, get_summarizer("offline"), token_budget=10**7)
    head = _headline(fact_headline_scores(rep, "r"))
    assert head.value is None and "undefined" in head.details["withheld"]
    assert head.details["chance"] is None and "donor" in head.details["chance_withheld"]


def test_floor_is_the_newest_messages_that_fit_priced_like_the_engine() -> None:
    texts = conversation_texts(_locomo(0))
    floor = truncation_text(texts, 200)
    assert floor.endswith(texts[-1][1]) and texts[0][1] not in floor
    costs = conversation_costs(_locomo(0))
    assert len(costs) == len(texts) and all(c >= estimate_tokens(t) for c, (_, t) in zip(costs, texts, strict=True))
    assert len(truncation_text(texts, 2000, costs)) < len(truncation_text(texts, 2000))


@pytest.mark.parametrize(
    ("text", "stated"),
    [
        ("Expand for details about: Caroline, LGBTQ support group, 7 May 2023", False),
        ("Files: src/app.py, lib/util.ts", False),
        ("Caroline, Melanie, Sweden, 7 May 2023, LGBTQ", False),
        ("Caroline went to the LGBTQ support group on 7 May 2023.", True),
        ("Fixed src/app.py after KeyError: 'port'.", True),
    ],
)
def test_statement_split(text: str, stated: bool) -> None:
    assert bool(split_statements(text).stated) is stated
