"""The one scorer: headlines probed over the conversation's life through ``run.ask``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.replay.driver import replay
from lcm_lab.io.model import LoadedConversation, QAItem
from lcm_lab.io.transcripts import read_transcript
from lcm_lab.io.transcripts.locomo import read_locomo_json
from lcm_lab.metrics.locomo import raw_texts, usable_items
from lcm_lab.metrics.probe_schedule import (
    MAX_STRIDE_PROBES,
    eligible,
    floor_context,
    history_probe_turns,
    qa_probe_turns,
    session_end_turns,
    turn_sessions,
)
from lcm_lab.metrics.stats import (
    bootstrap_normalised,
    cluster_bootstrap_difference,
    cluster_bootstrap_normalised,
)
from lcm_lab.metrics.verdicts import END_OF_RUN, HEADLINES, PROBED, qa_ceiling, verdict, verdict_scores
from lcm_lab.strategies import run_strategy
from lcm_lab.summarizers.offline import OfflineSummarizer

REPO = Path(__file__).resolve().parents[1]
BUDGET = 6000
VALIDITY = LcmConfig(fresh_tail_count=8, leaf_chunk_tokens=2000, leaf_target_tokens=400)


@pytest.fixture(scope="module")
def locomo() -> list[LoadedConversation]:
    return list(read_locomo_json(REPO / "datasets" / "locomo" / "locomo10.json").conversations)


@pytest.fixture(scope="module")
def scored(locomo: list[LoadedConversation]) -> dict[str, tuple[object, list]]:
    conv, other = locomo[0], locomo[1]
    donor = "\n".join(raw_texts(other.conversation))
    runs = {
        "lcm": replay(conv.conversation, VALIDITY, OfflineSummarizer(), token_budget=BUDGET, run_id="lcm"),
        "truncate": run_strategy(conv.conversation, "truncate", token_budget=BUDGET),
        "full": run_strategy(conv.conversation, "full", token_budget=BUDGET),
    }
    return {name: (run, verdict_scores(run, name, qa_items=conv.qa_items, chance_conversation=other.conversation, donor_text=donor,
                                       donor_label="conv-30"))
            for name, run in runs.items()}  # fmt: skip


def test_truncate_scores_exactly_zero_on_every_probed_headline(scored: dict[str, tuple[object, list]]) -> None:
    _, scores = scored["truncate"]
    for name in PROBED:
        head = verdict(scores, name)
        assert head is not None
        if head.value is not None:
            assert head.value == 0.0, name
            assert head.details["raw"] == head.details["floor"]


def test_full_context_does_not_exceed_the_qa_ceiling(scored: dict[str, tuple[object, list]]) -> None:
    head = verdict(scored["full"][1], "qa_retention")
    assert head is not None and head.value is not None
    assert head.details["raw"] <= head.details["ceiling"]  # the full history reads less well than the gold evidence
    assert head.details["ci_low"] <= 1.0
    lcm = verdict(scored["lcm"][1], "qa_retention")
    assert lcm is not None and lcm.details["ci_low"] <= 1.0


def test_details_say_protocol_probe_count_and_degraded_paths(scored: dict[str, tuple[object, list]]) -> None:
    head = verdict(scored["lcm"][1], "qa_retention")
    assert head is not None
    d = head.details
    assert "start of every session after their last evidence" in d["protocol"]
    assert d["probes"] > d["clusters"] == d["n"] > 100 and d["unit"] == "qa_item"
    assert isinstance(d["probes_degraded"], int) and 0 <= d["probes_degraded"] <= d["probes"]
    assert d["ci_low"] <= head.value <= d["ci_high"] and d["chance_donor"]
    fact = verdict(scored["lcm"][1], "fact_retention")
    assert fact is not None and fact.details["unit"] == "fact" and "session boundaries" in fact.details["protocol"]
    assert fact.details["ceiling"] == 1.0 and fact.details["chance_donor"] == "conv-30"
    for name, diagnostic in END_OF_RUN.items():  # the one-instant reading survives under its own name
        assert verdict(scored["lcm"][1], diagnostic) is not None, name


def test_probes_are_branches_the_replay_never_changes(locomo: list[LoadedConversation]) -> None:
    conv = locomo[3]  # conv-42 at 6k ends with the deferred debt pending: probes run emergency drains
    config = LcmConfig()
    run = replay(conv.conversation, config, OfflineSummarizer(), token_budget=BUDGET)
    before = (run.turns, run.summaries, run.sent(None))
    scores = verdict_scores(run, "r", qa_items=conv.qa_items)
    assert (run.turns, run.summaries, run.sent(None)) == before
    again = replay(conv.conversation, config, OfflineSummarizer(), token_budget=BUDGET)
    assert verdict(verdict_scores(again, "r", qa_items=conv.qa_items), "qa_retention") == verdict(scores, "qa_retention")
    head = verdict(scores, "qa_retention")
    assert head is not None and head.details["probes_degraded"] > 0  # some question turns still fall on degraded paths


def test_qa_schedule_starts_after_the_last_evidence(locomo: list[LoadedConversation]) -> None:
    conv = locomo[0]
    run = run_strategy(conv.conversation, "truncate", token_budget=BUDGET)
    sessions = turn_sessions(run)
    ends = session_end_turns(run)
    assert sorted(ends) == sorted({s for s in sessions if s is not None}) and max(ends.values()) == len(run.turns) - 1
    known = {e.entry_id for e in conv.conversation.entries if e.entry_id}
    item = QAItem("x", "?", "a", 1, ("D1:3", "D4:2"))
    assert qa_probe_turns(item, ends, known) == tuple(t for s, t in sorted(ends.items()) if s >= 4)
    assert qa_probe_turns(QAItem("y", "?", "a", 1, ("D:11:26",)), ends, known) == ()
    # eligibility: the history no longer fits; the floor is what truncate sends
    first = next(t for t in range(len(run.turns)) if eligible(conv.conversation, t, BUDGET))
    assert floor_context(conv.conversation, first, BUDGET).estimated_tokens <= BUDGET
    assert all(not eligible(conv.conversation, t, BUDGET) for t in range(first))


def test_qa_ceiling_is_fixed_per_item_and_reads_the_evidence(locomo: list[LoadedConversation]) -> None:
    conv = locomo[0]
    items, _ = usable_items(conv.conversation, conv.qa_items)
    ceiling = qa_ceiling(conv.conversation, items)
    assert ceiling.shape == (len(items),) and set(np.unique(ceiling)) <= {0.0, 1.0}
    first = items[0]  # "When did Caroline go to the LGBTQ support group?" -> 7 May 2023, said "yesterday" on 8 May
    assert first.answer == "7 May 2023" and ceiling[0] == 1.0  # the resolved date makes it answerable


def test_coding_sessions_are_probed_at_a_stride() -> None:
    loaded = read_transcript(REPO / "datasets" / "pi-mono" / "before-compaction.jsonl").conversations[0]
    run = run_strategy(loaded.conversation, "truncate", token_budget=8000)
    turns, schedule = history_probe_turns(run, 8000)
    assert "stride" in schedule and 1 <= len(turns) <= MAX_STRIDE_PROBES and turns[-1] == len(run.turns) - 1
    head = verdict(verdict_scores(run, "t"), "fact_retention")
    assert head is not None and head.details["probe_turns"] == list(turns) and head.value in (0.0, None)


def test_sweep_registry_reads_the_scorer() -> None:
    from lcm_lab.sweeps.metrics import METRICS, ScoredRun, metric_values

    for name in (*HEADLINES, *END_OF_RUN.values()):
        assert name in METRICS
    from lcm_lab.metrics.base import Score

    run = ScoredRun(None, [Score("r", "run", "", "qa_retention", 0.25, {}), Score("r", "turn", "3", "fact_retention", 0.9, {})])
    values = metric_values(run, ["qa_retention", "fact_retention"])
    assert values == {"qa_retention": 0.25, "fact_retention": None}  # no fallback to another reading


def test_cluster_bootstrap_resamples_whole_clusters() -> None:
    # one item probed ten times is one unit, not ten: its interval is as wide as one draw's
    rng = np.random.default_rng(3)
    method = rng.integers(0, 2, 40).astype(float)
    floor, ceiling = np.zeros(40), np.ones(40)
    clustered = np.repeat(np.arange(4), 10)
    lo_c, hi_c = cluster_bootstrap_normalised(np.repeat(method[:4], 10), floor, ceiling, clustered) or (0, 0)
    lo_i, hi_i = bootstrap_normalised(np.repeat(method[:4], 10), floor, ceiling) or (0, 0)
    assert hi_c - lo_c > hi_i - lo_i
    assert cluster_bootstrap_normalised([1.0], [0.0], [1.0], ["a"]) is None
    diff, lo, hi = cluster_bootstrap_difference([0, 0, 0, 0], [1, 1, 0, 0], ["a", "a", "b", "b"], scale=0.5)
    assert diff == 1.0 and lo <= diff <= hi


def test_compare_pairs_probed_items_and_clusters_them_by_conversation() -> None:
    from lcm_lab.metrics.base import Score
    from lcm_lab.metrics.compare import compare

    def run(label: str, shift: float) -> list[Score]:
        return [Score(label, "qa", f"conv-{c}:q{i}", "qa_probe_recall", min(1.0, 0.1 * i + shift), {"cluster": f"conv-{c}"})
                for c in range(3) for i in range(5)]  # fmt: skip

    table = compare({"a": run("a", 0.0), "b": run("b", 0.2)}, ["qa_probe_recall"]).set_index("run")
    assert table.loc["b", "unit"] == "qa item (paired, clustered by conversation)" and bool(table.loc["b", "paired"])
    assert table.loc["a", "unit"] == "qa item, clustered by conversation"
    assert table.loc["b", "diff_ci_low"] <= table.loc["b", "diff"] <= table.loc["b", "diff_ci_high"]
