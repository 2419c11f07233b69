"""ClawVault-style fixture scoring with a held-out split (hand-made fixtures written by the test)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lcm_lab.metrics.fixtures import (
    Fixture,
    FixtureError,
    Observation,
    dev_fixtures,
    fixture_scores,
    keyword_set,
    load_fixture,
    parse_observations,
    score_output,
    similarity,
    split_fixtures,
)

TRANSCRIPT = """user: We agreed with Acme Corp that the SOC2 report is due 2026-04-02.
assistant: Noted. I'll draft the renewal quote at $12K for Acme Corp.
user: Decision: keep PostgreSQL, drop the Redis cache for now.
assistant: ok
"""
EXPECTED = """## 2026-03-10
- [commitment|c=0.90|i=0.85] SOC2 report for Acme Corp due 2026-04-02
- [task|c=0.80|i=0.70] Draft renewal quote at $12K for Acme Corp
- [decision|c=0.90|i=0.90] Keep PostgreSQL and drop the Redis cache
- [fact|c=0.70|i=0.20] Assistant acknowledged
"""


def write_fixture(root: Path, name: str, expected: str = EXPECTED, config: dict[str, object] | None = None) -> Path:
    directory = root / name
    directory.mkdir()
    (directory / "transcript.md").write_text(TRANSCRIPT, encoding="utf-8")
    (directory / "expected.md").write_text(expected, encoding="utf-8")
    if config is not None:
        (directory / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return directory


def test_load_and_perfect_output(tmp_path: Path) -> None:
    fixture = load_fixture(write_fixture(tmp_path, "acme", config={"scoring": {"keywordHints": ["SOC2"], "matchThreshold": 0.4}}))
    assert fixture.match_threshold == 0.4 and fixture.keyword_hints == ("SOC2",)
    assert [o.type for o in fixture.expected] == ["commitment", "task", "decision", "fact"]
    result = score_output(fixture, EXPECTED)
    assert result["precision"] == 1.0 and result["recall"] == 1.0 and result["type_accuracy"] == 1.0
    assert result["overall"] == pytest.approx(0.30 + 0.35 + 0.20 * result["keyword_preservation"] + 0.15)
    # ClawVault's signal rule counts capitalised sentence openers too; the gold lines lack two.
    assert result["keyword_preservation"] == 0.75 and result["missed_keywords"] == ["Decision", "Noted"]


def test_partial_untyped_output_renormalises_weights(tmp_path: Path) -> None:
    fixture = load_fixture(write_fixture(tmp_path, "acme"))
    summary = "Acme Corp SOC2 report due 2026-04-02.\nThe weather was discussed at length today."
    result = score_output(fixture, summary)
    assert result["precision"] == 0.5
    assert result["recall"] == pytest.approx(0.85 / (0.85 + 0.70 + 0.90))
    assert result["type_accuracy"] is None and "type_accuracy" not in result["weights_used"]
    expected_overall = (0.30 * 0.5 + 0.35 * result["recall"] + 0.20 * result["keyword_preservation"]) / 0.85
    assert result["overall"] == pytest.approx(expected_overall)


def test_wrong_types_and_similarity_modes() -> None:
    fixture = Fixture("f", tuple(TRANSCRIPT.splitlines()), tuple(parse_observations(EXPECTED, strict=True)))
    wrong = [Observation(o.content, "fact", 0.5, 0.5) for o in fixture.expected]
    assert score_output(fixture, wrong)["type_accuracy"] == pytest.approx(0.2 / (0.85 + 0.7 + 0.9 + 0.2))
    long_line = "SOC2 " + " ".join(f"word{i}" for i in range(40))
    assert similarity("SOC2 report", long_line, "clawvault") == 0.5
    assert similarity("SOC2 report", long_line) < 0.1  # symmetric F1 does not reward padding


def test_keywords_strip_trailing_punctuation() -> None:
    lines = ["user: ship it now. Ping #northwind-deal channel."]
    assert "#northwind-deal" not in keyword_set(lines)  # '#' is not a keyword character
    assert "northwind-deal" in keyword_set(lines)
    assert all(not k.endswith(".") for k in keyword_set(["user: finalize approvals. Deadline 2026-04-02."]))
    assert "2026-04-02." in keyword_set(["user: Deadline 2026-04-02."], strip_punctuation=False)


def test_malformed_fixtures_name_file_and_line(tmp_path: Path) -> None:
    bad = write_fixture(tmp_path, "bad", expected="- [decision|c=0.9|i=0.9] ok\nnot an observation\n")
    with pytest.raises(FixtureError, match=r"expected.md:2"):
        load_fixture(bad)
    out_of_range = write_fixture(tmp_path, "range", expected="- [fact|c=1.5|i=0.2] x\n")
    with pytest.raises(FixtureError, match=r"expected.md:1: confidence"):
        load_fixture(out_of_range)
    (tmp_path / "nodir").mkdir()
    with pytest.raises(FixtureError, match="missing"):
        load_fixture(tmp_path / "nodir")
    broken = write_fixture(tmp_path, "json")
    (broken / "config.json").write_text("{nope", encoding="utf-8")
    with pytest.raises(FixtureError, match="config.json"):
        load_fixture(broken)


def test_split_is_stable_and_scores_report_both_parts(tmp_path: Path) -> None:
    names = [f"fixture-{i:02d}" for i in range(30)]
    split = split_fixtures(names)
    assert split == split_fixtures(list(reversed(names)))
    assert split_fixtures(names + ["fixture-new"])["fixture-00"] == split["fixture-00"]  # adding one moves none
    assert 3 <= sum(v == "heldout" for v in split.values()) <= 15
    assert set(split_fixtures(["a", "b"]).values()) == {"dev", "heldout"}
    fixtures = [load_fixture(write_fixture(tmp_path, n)) for n in ("alpha", "beta", "gamma")]
    part = split_fixtures([f.name for f in fixtures])
    assert {f.name for f in dev_fixtures(fixtures, part)} == {n for n, p in part.items() if p == "dev"}
    scores = fixture_scores(fixtures, {f.name: EXPECTED for f in fixtures}, "run", split=part)
    run = {s.metric: s.value for s in scores if s.scope == "run"}
    assert run["fixture_recall_dev"] == 1.0 and run["fixture_recall_heldout"] == 1.0
    with pytest.raises(FixtureError, match="no output"):
        fixture_scores(fixtures, {"alpha": EXPECTED}, "run")
