"""The demo's verdicts pair the two settings probe by probe (same conversation, same budget: the
same items at the same probe points against the same floor and ceiling), instead of combining
each run's own interval as if the two were independent."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from lcm_lab.bundled.demo import BUDGET, SETTINGS, DemoRun, paired_differences
from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.replay.driver import replay
from lcm_lab.io.transcripts import read_transcript
from lcm_lab.metrics.score import score_replay
from lcm_lab.metrics.verdicts import ProbeRows, verdict
from lcm_lab.report.verdict_text import reading, verdict_in_words
from lcm_lab.summarizers import get_summarizer

DATASETS = Path(__file__).resolve().parents[1] / "datasets"
LOOSE, TIGHT = SETTINGS["defaults"], SETTINGS["tight"]


def _run(label: str, config: LcmConfig, budget: int) -> DemoRun:
    conversation = read_transcript(DATASETS / "pi-mono" / "before-compaction.jsonl").conversations[0].conversation
    result = replay(conversation, config, get_summarizer("offline"), token_budget=budget)
    probes: dict[str, ProbeRows] = {}
    scores = score_replay(result, run_id=label, rows_out=probes)
    return DemoRun(label, label, result, scores, probes)


@pytest.fixture(scope="module")
def runs() -> dict[str, DemoRun]:
    # the demo's pi session and settings (its verdicts have enough facts and decisions behind them)
    return {"loose": _run("loose", LOOSE, BUDGET), "tight": _run("tight", TIGHT, BUDGET),
            "tight-2x": _run("tight-2x", TIGHT, 2 * BUDGET)}


def test_the_paired_difference_is_the_difference_of_the_headlines_with_a_paired_interval(runs: dict[str, DemoRun]) -> None:
    found = paired_differences(runs["loose"], runs["tight"])
    assert "fact_retention" in found
    judged = []
    for metric, d in found.items():
        a, b = verdict(runs["loose"].scores, metric), verdict(runs["tight"].scores, metric)
        assert a is not None and b is not None and a.value is not None and b.value is not None
        # same floor and ceiling on both sides: the paired mean is exactly the difference of the two headlines
        assert d.diff == pytest.approx(b.value - a.value, abs=1e-9)
        assert d.paired and d.ci_low <= d.diff <= d.ci_high and d.n == a.details["n"]
        words = verdict_in_words(metric, reading("loose", a.details, a.value), reading("tight", b.details, b.value), d)
        if words.outcome != "n too small":
            judged.append(metric)
            assert words.paired and "paired" in words.text and "unpaired" not in words.text
    assert "fact_retention" in judged


def test_a_setting_against_itself_is_a_zero_difference_within_noise(runs: dict[str, DemoRun]) -> None:
    same = runs["tight"]
    for metric, d in paired_differences(same, same).items():
        assert (d.diff, d.ci_low, d.ci_high) == (0.0, 0.0, 0.0), metric
        head = verdict(same.scores, metric)
        assert head is not None
        r = reading("tight", head.details, head.value)
        assert verdict_in_words(metric, r, r, d).outcome in ("within noise", "n too small")


def test_runs_at_different_budgets_read_other_probes_and_are_not_paired(runs: dict[str, DemoRun]) -> None:
    # another budget moves the floor (truncation at that budget) and which points are eligible
    assert paired_differences(runs["tight"], runs["tight-2x"]) == {}
    assert all(not math.isnan(d.diff) for d in paired_differences(runs["loose"], runs["tight"]).values())
