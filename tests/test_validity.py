"""Metric validity on bundled LoCoMo: control strategies injected into the normal replay must not
earn qa_retention; statistics resample the right unit."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from lcm_lab.cli import main as cli_main
from lcm_lab.io.model import LoadedConversation
from lcm_lab.io.transcripts.locomo import read_locomo_json
from lcm_lab.metrics.base import Score
from lcm_lab.metrics.compare import compare
from lcm_lab.metrics.stats import bootstrap_normalised, t_quantile
from lcm_lab.metrics.validity import (
    DEGRADED_METRIC,
    MAX_NO_ANSWER,
    MIN_OFFLINE_MARGIN,
    ValidityRow,
    check_properties,
    validate,
    validity_markdown,
)

REPO = Path(__file__).resolve().parents[1]
BUDGET = 3000


@pytest.fixture(scope="module")
def rows() -> list[ValidityRow]:
    convs: list[LoadedConversation] = list(read_locomo_json(REPO / "datasets" / "locomo" / "locomo10.json").conversations)
    return validate(convs[:2], budget=BUDGET)


def _qa(rows: list[ValidityRow]) -> dict[str, ValidityRow]:
    return {r.control: r for r in rows if r.metric == "qa_retention"}


@pytest.mark.parametrize("control", ["fixed-text", "entity-list", "bare-list", "other-conversation"])
def test_controls_without_usable_answers_earn_nothing(rows: list[ValidityRow], control: str) -> None:
    row = _qa(rows)[control]
    assert row.values, "every conversation withheld: the test budget gives no ceiling-floor gap"
    assert row.mean <= MAX_NO_ANSWER


def test_ceiling_and_floor_controls_sit_where_they_must(rows: list[ValidityRow]) -> None:
    qa = _qa(rows)
    assert set(qa["truncation"].values.values()) == {0.0}  # the floor is what truncate sends: exactly 0
    # the evidence ceiling bounds the full history: no conversation's whole interval lies above 1
    assert all(low <= 1.0 for low in qa["full-history"].ci_low if low is not None)
    assert 0 < qa["full-history"].mean <= 1.0
    assert all(c <= 0 for r in qa.values() for c in r.chance)  # another conversation reads below the floor
    checks = {c.name: c for c in check_properties(rows)}
    assert checks["full-history does not exceed the ceiling beyond its interval"].passed
    assert checks["truncation sits at the floor (qa_retention = 0 exactly)"].passed


@pytest.fixture(scope="module")
def rows_6k() -> list[ValidityRow]:
    convs: list[LoadedConversation] = list(read_locomo_json(REPO / "datasets" / "locomo" / "locomo10.json").conversations)
    return validate(convs[:2], budget=6000, controls=("other-conversation", "offline"))


def test_offline_beats_other_conversation(rows_6k: list[ValidityRow]) -> None:
    qa = _qa(rows_6k)
    assert qa["offline"].mean - qa["other-conversation"].mean >= MIN_OFFLINE_MARGIN
    end_of_run = {r.control: r for r in rows_6k if r.metric == "qa_retention_end_of_run"}
    assert set(end_of_run) == {"other-conversation", "offline"}  # the one-instant reading stays, for comparison


def test_probes_on_degraded_paths_are_counted(rows: list[ValidityRow]) -> None:
    degraded = {r.control: r for r in rows if r.metric == DEGRADED_METRIC}
    assert set(degraded) == {"fixed-text", "entity-list", "bare-list", "other-conversation", "offline"}
    assert all(0.0 <= v <= 1.0 for r in degraded.values() for v in r.values.values())
    text = validity_markdown(rows, check_properties(rows), budget=BUDGET)
    assert f"| offline | {DEGRADED_METRIC} |" in text


def test_report_lists_every_control_and_check(rows: list[ValidityRow]) -> None:
    text = validity_markdown(rows, check_properties(rows), budget=BUDGET)
    for control in ("fixed-text", "entity-list", "bare-list", "other-conversation", "truncation", "offline", "full-history"):
        assert f"| {control} | qa_retention |" in text
    assert "PASS" in text and "## Properties" in text


def test_validate_metrics_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "validity.md"
    code = cli_main(["validate-metrics", "-o", str(out), "--conversations", "2", "--token-budget", "2000", "--no-coding", "--json",
                     "--controls", "fixed-text,truncation,full-history"])
    import json

    payload = json.loads(capsys.readouterr().out)
    assert code in (0, 1) and out.read_text().startswith("# Metric validity")
    assert payload[0]["budget"] == 2000 and {r["control"] for r in payload[0]["rows"]} == {"fixed-text", "truncation", "full-history"}
    assert all(c["passed"] for c in payload[0]["checks"])


def test_validate_metrics_plugin_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "validity.md"
    code = cli_main(["validate-metrics", "-o", str(out), "--conversations", "2", "--budget", "2000", "--no-coding",
                     "--controls", "truncation,full-history", "--plugin-config", '{"condensedTargetTokens": 300}'])
    assert code == 0 and 'Plugin settings over the validity configuration: `{"condensedTargetTokens": 300}`' in out.read_text()
    assert "--budget is deprecated; use --token-budget" in capsys.readouterr().err  # the old spelling still works
    assert cli_main(["validate-metrics", "-o", str(out), "--plugin-config", "[1]"]) == 2
    assert "--plugin-config: expected a JSON object" in capsys.readouterr().err


# -- statistics --------------------------------------------------------------------------------


def test_t_quantile_is_exact() -> None:
    assert t_quantile(0.975, 3) == pytest.approx(3.182446305, abs=1e-8)
    assert t_quantile(0.975, 1) == pytest.approx(12.70620474, abs=1e-7)


def test_normalised_bootstrap_is_paired_and_brackets_the_estimate() -> None:
    method, floor, ceiling = [1, 0, 1, 1, 0, 1] * 5, [0, 0, 1, 0, 0, 0] * 5, [1, 1, 1, 1, 0, 1] * 5
    lo, hi = bootstrap_normalised(method, floor, ceiling) or (math.nan, math.nan)
    assert lo <= 0.75 <= hi and hi <= 1.0 + 1e-9  # method ⊆ ceiling item by item: never above 1
    assert bootstrap_normalised([1], [0], [1]) is None


def test_compare_never_resamples_categories_or_turns() -> None:
    runs = {
        label: [Score(label, "category", str(c), "qa_recall", v + shift) for c, v in enumerate([0.1, 0.5, 0.9])]
        + [Score(label, "turn", str(t), "context_tokens", 100.0 * t + shift) for t in range(5)]
        for label, shift in (("a", 0.0), ("b", 0.1))
    }
    table = compare(runs, ["qa_recall", "context_tokens"])
    assert table["ci_low"].isna().all() and table["diff_ci_low"].isna().all()
    assert table.set_index(["metric", "run"]).loc[("qa_recall", "b"), "diff"] == pytest.approx(0.1)
    assert all("not resampled" in u for u in table["unit"])


def test_compare_refuses_to_mix_item_scopes() -> None:
    a = [Score("a", "summary", "s1", "fact_retention", 0.5), Score("a", "summary", "s2", "fact_retention", 0.7),
         Score("a", "turn", "3", "fact_retention", 0.2)]
    with pytest.raises(ValueError, match="several item scopes"):
        compare([a], ["fact_retention"])
    assert compare([a], ["fact_retention"], scope="summary")["n"].tolist() == [2]


def test_compare_resamples_conversations_for_headlines_and_says_so() -> None:
    runs = {
        label: [Score(f"{label}:{c}", "run", "", "qa_retention", v + shift) for c, v in enumerate([0.1, 0.3, 0.5, 0.4])]
        for label, shift in (("lcm", 0.2), ("truncation", 0.0))
    }
    table = compare(runs, ["qa_retention"], baseline="truncation").set_index("run")
    assert table.loc["lcm", "n"] == 4 and table.loc["lcm", "unit"].startswith("run (conversation)")
    assert table.loc["lcm", "ci_low"] <= table.loc["lcm", "mean"] <= table.loc["lcm", "ci_high"]
    paired = compare({"x": [Score("x", "qa", f"q{i}", "qa_recall", float(i % 2)) for i in range(6)],
                      "y": [Score("y", "qa", f"q{i}", "qa_recall", 1.0) for i in range(6)]}, ["qa_recall"]).set_index("run")
    assert paired.loc["y", "unit"] == "qa item (paired)" and bool(paired.loc["y", "paired"])
