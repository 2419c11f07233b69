"""Verdicts in words (lcm_lab.report.verdict_text) from constructed headlines, and the glossary doc."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from lcm_lab.report.glossary import GLOSSARY, glossary_markdown
from lcm_lab.report.verdict_text import (
    Difference,
    Pair,
    Reading,
    clipped_interval,
    compare_settings,
    interval_text,
    reading,
    scale,
    summary_lines,
    verdict_in_words,
)

ROOT = Path(__file__).resolve().parent.parent


def test_better_names_the_winner_and_the_margin() -> None:
    a = Reading("defaults", 0.20, 0.15, 0.25, n=150, unit="qa item")
    b = Reading("tight", 0.45, 0.38, 0.52, n=150, unit="qa item")
    v = verdict_in_words("qa_retention", a, b)
    assert v.outcome == "better" and v.winner == "tight" and not v.paired
    assert v.diff == pytest.approx(0.25)
    half = math.hypot(0.05, 0.07)
    assert (v.ci_low, v.ci_high) == pytest.approx((0.25 - half, 0.25 + half))
    assert "tight is better than defaults beyond noise" in v.text
    assert "+0.25" in v.text and "150 qa items" in v.text and "unpaired" in v.text


def test_worse_when_the_second_setting_loses() -> None:
    a = Reading("defaults", 0.60, 0.55, 0.65, n=40, unit="fact")
    b = Reading("tight", 0.30, 0.25, 0.35, n=40, unit="fact")
    v = verdict_in_words("fact_retention", a, b)
    assert v.outcome == "worse" and v.winner == "defaults"
    assert "defaults is better than tight beyond noise" in v.text and "−0.30" in v.text


def test_lower_is_better_for_dollars() -> None:
    a = Reading("defaults", 3.0, 2.8, 3.2, n=200, unit="api call")
    b = Reading("tight", 2.0, 1.9, 2.1, n=200, unit="api call")
    v = verdict_in_words("cost_usd", a, b)
    assert v.outcome == "better" and v.winner == "tight"


def test_within_noise_when_the_interval_covers_zero() -> None:
    a = Reading("defaults", 0.40, 0.20, 0.60, n=30, unit="qa item")
    b = Reading("tight", 0.45, 0.25, 0.65, n=30, unit="qa item")
    v = verdict_in_words("qa_retention", a, b)
    assert v.outcome == "within noise" and v.winner is None
    assert "within noise" in v.text and "cannot tell" in v.text
    assert "better" not in v.text


def test_a_paired_difference_decides_where_the_readings_overlap() -> None:
    a = Reading("defaults", 0.40, 0.20, 0.60, n=30, unit="qa item")
    b = Reading("tight", 0.45, 0.25, 0.65, n=30, unit="qa item")
    v = verdict_in_words("qa_retention", a, b, Difference(0.05, 0.01, 0.09, 30, "qa item", paired=True))
    assert v.outcome == "better" and v.paired and "paired" in v.text and "unpaired" not in v.text


def test_n_too_small_gives_no_verdict() -> None:
    a = Reading("defaults", 0.1, 0.0, 0.2, n=2, unit="conversation")
    b = Reading("tight", 0.9, 0.8, 1.0, n=2, unit="conversation")
    v = verdict_in_words("fact_retention", a, b)
    assert v.outcome == "n too small" and v.diff is None and v.winner is None
    assert "only 2 conversations" in v.text and "better" not in v.text


def test_no_interval_is_no_verdict() -> None:
    v = verdict_in_words("qa_retention", Reading("a", 0.1, None, None, n=50), Reading("b", 0.9, None, None, n=50))
    assert v.outcome == "n too small" and "no interval" in v.text


def test_withheld_reading_is_said_with_its_reason() -> None:
    a = Reading("defaults", None, n=152, unit="qa item", withheld="ceiling - floor = 0.010 < 0.05: the scale is undefined")
    b = Reading("tight", 0.3, 0.2, 0.4, n=152, unit="qa item")
    v = verdict_in_words("qa_retention", a, b)
    assert v.outcome == "withheld" and "the reading of defaults is withheld (ceiling - floor" in v.text
    assert "(withheld)" in v.text


def test_scale_and_clipping() -> None:
    details = {"raw": 0.5, "floor": 0.2, "ceiling": 0.7, "normalised": True, "ci_low": -1.0, "ci_high": 3.0}
    lo, hi = scale(details)
    assert (lo, hi) == pytest.approx((-0.4, 1.6))
    assert clipped_interval(-1.0, 3.0, (lo, hi)) == pytest.approx((-0.4, 1.6))
    assert interval_text(0.6, details) == "[-0.400, 1.600]"
    assert interval_text(None, details) == "" and interval_text(math.nan, details) == ""  # no interval around nan
    assert scale({"unit": "qa_item"}) == (0.0, 1.0)
    r = reading("x", json.dumps(details), 0.6)
    assert (r.ci_low, r.ci_high) == pytest.approx((-0.4, 1.6))
    assert reading("x", details, math.nan).ci_low is None


def test_compare_settings_reads_a_scores_frame() -> None:
    def row(run: str, metric: str, value: float | None, lo: float, hi: float, n: int) -> dict[str, object]:
        details = {"raw": value, "floor": 0.0, "ceiling": 1.0, "normalised": True, "ci_low": lo, "ci_high": hi, "n": n, "unit": "qa_item"}
        return {"run_id": run, "scope": "run", "scope_id": "", "metric": metric, "value": value, "details": json.dumps(details)}

    frame = pd.DataFrame([row("r1", "qa_retention", 0.2, 0.1, 0.3, 100), row("r2", "qa_retention", 0.6, 0.5, 0.7, 100),
                          row("r3", "qa_retention", 0.5, 0.3, 0.7, 100), row("r4", "qa_retention", 0.52, 0.32, 0.72, 100),
                          {"run_id": "r1", "scope": "qa", "scope_id": "q1", "metric": "qa_retention", "value": 0.0, "details": "{}"}])
    groups = compare_settings(frame, [Pair("conv A", "r1", "defaults", "r2", "tight"), Pair("conv B", "r3", "defaults", "r4", "tight"),
                                      Pair("conv C", "r1", "defaults", "missing", "tight")], ["qa_retention", "fact_retention"])
    assert [g for g, _ in groups] == ["conv A", "conv B", "conv C"]
    assert [v.outcome for v in groups[0][1]] == ["better"]
    assert [v.outcome for v in groups[1][1]] == ["within noise"]
    assert groups[2][1] == []
    lines = summary_lines(groups)
    assert lines[0].startswith("conv A: qa_retention: tight 0.60 vs defaults 0.20")
    assert lines[-1] == "conv C: no headline both settings carry, so no verdict."


def test_glossary_doc_is_generated_from_the_module() -> None:
    assert (ROOT / "docs" / "glossary.md").read_text(encoding="utf-8") == glossary_markdown()
    for term in ("sent", "stored", "degraded path", "depth cap", "peak_budget", "within noise", "chance"):
        assert term in GLOSSARY


def test_verdicts_from_a_compare_table_use_its_paired_difference() -> None:
    from lcm_lab.metrics.base import Score
    from lcm_lab.metrics.compare import compare
    from lcm_lab.report.verdict_text import verdict_lines, verdicts_from_compare

    values = [0.1 * (i % 10) for i in range(40)]
    a = [Score("base", "qa", f"q{i}", "qa_recall", v) for i, v in enumerate(values)]
    b = [Score("better", "qa", f"q{i}", "qa_recall", v + 0.05) for i, v in enumerate(values)]
    c = [Score("same", "qa", f"q{i}", "qa_recall", v) for i, v in enumerate(values)]
    found = verdicts_from_compare(compare([a, b, c], ["qa_recall"]))
    assert [(v.b.label, v.outcome, v.paired) for v in found] == [("better", "better", True), ("same", "within noise", True)]
    assert found[0].diff == pytest.approx(0.05) and "40 qa items, paired" in found[0].text
    assert verdict_lines(compare([a, b], ["qa_recall"]))[0].endswith("better is better than base beyond noise.")
    # a 90% interval says so
    v = verdict_in_words("cost_usd", Reading("a", 3.0, n=100), Reading("b", 2.0, n=100), Difference(-1.0, -1.5, -0.5, 100, "api call", True, 0.9))
    assert "90% interval" in v.text and v.winner == "b"
