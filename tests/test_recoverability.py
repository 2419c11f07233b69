"""Recoverability: lost items, the grep → describe → expand procedure, controls, costs, footer scores."""

from __future__ import annotations

import dataclasses

import pytest

from lcm_lab.engine.replay.driver import Replay, replay
from lcm_lab.engine.types import ContextItem, Conversation, StoredMessage, Summary
from lcm_lab.metrics.dag import Dag
from lcm_lab.metrics.facts import TextIndex
from lcm_lab.metrics.retention import FactBase
from lcm_lab.recall_tools.recoverability import footer_scores, lost_items, score_recoverability
from lcm_lab.summarizers import get_summarizer

TEXTS = (
    ("user", "Please deploy the billing service to the staging host before the quarterly audit: entry point /srv/app/main.py"),
    ("assistant", "Done: the billing service runs on staging, settings live in /etc/app/config.yaml and the rollout took 42 seconds"),
    ("user", "thanks, what next?"),
    ("assistant", "Next we review the logs together."),
)
SUMMARY = "Deployed the billing service to staging before the audit.\nExpand for details about: /etc/app/config.yaml, the weather"


def _run() -> Replay:
    """Messages 1-2 compacted into one leaf whose footer names one of the dropped details."""
    messages = tuple(StoredMessage(i, role, text, len(text) // 4, f"2026-01-0{i} 10:00:00")  # type: ignore[arg-type]
                     for i, (role, text) in enumerate(TEXTS, start=1))  # fmt: skip
    base = replay(Conversation("rec", stored_messages=messages), summarizer=get_summarizer("offline"))
    leaf = Summary("sum_leaf", "leaf", 0, SUMMARY, 30, created_at="2026-01-02 11:00:00", source_message_seqs=(1, 2))
    context = (ContextItem.summary("sum_leaf"), ContextItem.message(3), ContextItem.message(4))
    turns = base.turns[:-1] + (dataclasses.replace(base.turns[-1], context_after=context, context_end=context),)
    return dataclasses.replace(base, summaries=(leaf,), turns=turns, run_id="run_rec")


@pytest.fixture(scope="module")
def run() -> Replay:
    return _run()


def test_lost_items_are_facts_not_usable_in_the_sent_context(run: Replay) -> None:
    items = lost_items(run)
    keys = {i.fact.key for i in items if i.fact is not None}
    assert "/srv/app/main.py" in keys
    # Only *named* in the footer of the summary the model receives: a pointer, not a statement, so
    # it is lost like any fact the context does not state (the fact_retention rule).
    assert "/etc/app/config.yaml" in keys
    main = next(i for i in items if i.fact is not None and i.fact.key == "/srv/app/main.py")
    assert main.source_seqs == (1,) and "main" not in main.cue.split() and main.cue


def test_recovery_procedure_controls_and_cost(run: Replay) -> None:
    report = score_recoverability(run)
    attempts = {a.item_id: a for a in report.attempts}
    main = attempts["path:/srv/app/main.py"]
    assert main.recovered and main.step == "grep"  # the raw message is searchable: its snippet shows the path
    assert main.tool_calls >= 1 and main.tokens > 0 and main.model_calls == 0 and main.ceiling
    assert main.oracle  # expanding the leaf that covers message 1 reads it
    scores = {s.metric: s for s in report.scores()}
    head = scores["recoverability"]
    assert head.details["n"] == len(report.attempts) == report.lost
    assert head.details["ceiling"] == 1.0 and head.details["floor"] == 0.0 and head.details["unit"] == "lost_item"
    assert head.value == pytest.approx(sum(a.recovered for a in report.attempts) / len(report.attempts))
    assert head.details["ci_low"] <= head.value <= head.details["ci_high"]
    assert head.details["tokens_per_item"] > 0 and head.details["calls_per_item"] >= 1
    summary = report.summary()
    assert summary["lost"] == report.lost and summary["answerer"] == "offline-quote"


def test_footer_precision_and_recall(run: Replay) -> None:
    footer = footer_scores(run)
    assert footer["footer_entries"] == 2 and footer["summaries_with_footer"] == 1
    assert footer["footer_precision"] == 0.5  # the config path was dropped; "the weather" names nothing dropped
    base = FactBase.build(Dag.from_replay(run))
    body = TextIndex([(0, SUMMARY.split("Expand")[0])])
    dropped = [f for seq in (1, 2) for f in base.facts_by_seq[seq] if not body.containing(f)]
    assert footer["dropped_facts"] == len(dropped) >= 2
    assert footer["footer_recall"] == pytest.approx(1 / len(dropped))


def test_shared_fact_base_must_come_from_the_same_conversation(run: Replay) -> None:
    first = score_recoverability(run)
    again = score_recoverability(run, facts=first.base)
    assert [a.recovered for a in again.attempts] == [a.recovered for a in first.attempts]
    other = replay(Conversation("x", stored_messages=(StoredMessage(1, "user", "hi", 1),)), summarizer=get_summarizer("offline"))
    with pytest.raises(ValueError, match="same conversation"):
        score_recoverability(other, facts=first.base)


def test_report_section_shows_recoverability_with_its_controls(run: Replay) -> None:
    from lcm_lab.report import report

    row = {"label": "hand run", **score_recoverability(run).summary()}
    page = report(run, recoverability=[row])
    assert 'id="recoverability"' in page and "hand run" in page
    assert "offline deterministic answerer" in page and "chance" in page
