"""lab.compare_versions: per-turn differences and paired headline intervals between engine versions.

Until a second engine is in the driver, a *fake second engine* stands in for it: the same
0.15.3 replay under other settings, served through the comparison's one engine seam
(``lcm_lab.upgrade._comparison.run_engine``), so everything after the replays runs as it will for 1.0.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.replay.driver import replay
from lcm_lab.errors import OptionError, UserError
from lcm_lab.io.transcripts.locomo import read_locomo_json
from lcm_lab.metrics.stats import cluster_bootstrap_difference
from lcm_lab.summarizers.stub import StubV1Summarizer
from lcm_lab.upgrade import _comparison, compare_versions
from lcm_lab.upgrade._engines import check_versions, run_engine
from lcm_lab.upgrade._turns import shape_of

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "datasets" / "lossless-claw-ref" / "golden-session.jsonl"
LOCOMO = REPO / "datasets" / "locomo" / "locomo10.json"
TIGHT = {"contextThreshold": 0.5, "freshTailCount": 2, "leafChunkTokens": 400, "leafTargetTokens": 120}


def fake_second_engine(changes: dict[str, Any]) -> Any:
    """A run_engine whose "1.0" is the 0.15.3 replay with ``changes`` to the config."""

    def run(engine: str, conversation: Any, config: LcmConfig, summarizer: Any, budget: int, **options: Any) -> Any:
        if engine == "1.0":
            config = config.replace(**changes)
        return run_engine("0.15.3", conversation, config, summarizer, budget, **options)

    return run


def test_versions_are_checked() -> None:
    assert check_versions(("0.15.3", "1.0")) == ("0.15.3", "1.0")
    for bad in (["0.15.3"], ["0.15.3", "0.15.3"], ["0.15.3", "2.0"], []):
        with pytest.raises(UserError, match="versions"):
            check_versions(bad)


def test_identical_engines_differ_nowhere(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_comparison, "run_engine", fake_second_engine({}))
    cmp = compare_versions(GOLDEN, TIGHT, token_budget=1200, summarizer="stub-v1")
    assert cmp.versions == ("0.15.3", "1.0")
    turns = cmp.turns_df()
    assert len(turns) == 2 * len(cmp.runs["0.15.3"].turns) > 0
    mine = turns[turns.engine == "1.0"]
    assert not mine.differs_bytes.any() and not mine.differs_shape.any()
    assert turns[turns.engine == "0.15.3"].differs_bytes.isna().all()
    base, other = cmp.totals
    assert other["turns_differing_bytes"] == 0 and base["turns_differing_bytes"] is None
    assert {k: v for k, v in base.items() if not k.startswith(("engine", "turns_differing"))} == \
        {k: v for k, v in other.items() if not k.startswith(("engine", "turns_differing"))}
    fact = [h for h in cmp.headlines if h["metric"] == "fact_retention"]
    assert [h["engine"] for h in fact] == ["0.15.3", "1.0"]
    assert fact[1]["paired"] and fact[1]["diff"] == 0.0 and fact[1]["diff_ci_low"] == fact[1]["diff_ci_high"] == 0.0


def test_a_different_engine_is_seen_turn_by_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_comparison, "run_engine", fake_second_engine({"fresh_tail_count": 6}))
    cmp = compare_versions(GOLDEN, TIGHT, token_budget=1200, summarizer=StubV1Summarizer())
    a, b = cmp.runs["0.15.3"], cmp.runs["1.0"]
    # the per-turn records are the engine-level assemble at the start of each turn, as Replay.sent gives it
    expected = [k for k in range(len(a.turns)) if [i.message for i in a.sent(k).items] != [i.message for i in b.sent(k).items]]
    assert expected, "the two settings must send a different context at some turn"
    assert cmp.differing_turns() == expected
    rows = {(r["turn"], r["engine"]): r for r in cmp.turns}
    for k in range(len(a.turns)):
        sent = b.sent(k)
        row = rows[(k, "1.0")]
        assert (row["path"], row["clamped"], row["sent_tokens"], row["messages_sent"]) == \
            (sent.path, sent.clamped, sent.estimated_tokens, len(sent.items))
        assert row["summaries_sent"] == sum(1 for i in sent.items if i.kind == "summary")
    totals = {t["engine"]: t for t in cmp.totals}
    assert totals["1.0"]["turns_differing_bytes"] == len(expected)
    assert totals["1.0"]["summarizer_calls"] == sum(len(t.calls) for t in b.turns)
    assert totals["0.15.3"]["clamped_turns"] == sum(1 for k in range(len(a.turns)) if a.sent(k).clamped)
    fact = {h["engine"]: h for h in cmp.headlines if h["metric"] == "fact_retention"}
    other = fact["1.0"]
    if other["withheld"] is None:
        assert other["paired"] and other["diff"] == pytest.approx(other["value"] - fact["0.15.3"]["value"])
        assert other["diff_ci_low"] <= other["diff"] <= other["diff_ci_high"]
    wide = cmp.wide_turns_df()
    assert list(wide["differs[1.0]"]) == [k in expected for k in range(len(a.turns))]
    doc = cmp.to_dict()
    assert doc["versions"] == ["0.15.3", "1.0"] and len(doc["turns"]) == 2 * len(a.turns)
    text = cmp._repr_markdown_()
    assert f"| turns where the model receives a different context | — | {len(expected)} |" in text


def test_qa_headline_is_paired_on_the_same_items(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_comparison, "run_engine", fake_second_engine({"fresh_tail_count": 2}))
    read = read_locomo_json(LOCOMO).conversations
    loaded = read[0]
    short = replace(loaded.conversation, entries=loaded.conversation.entries[:120])
    cmp = compare_versions(short, {"freshTailCount": 30}, token_budget=1500, summarizer="offline",
                           qa_items=loaded.qa_items, chance_conversation=read[1].conversation)
    qa = {h["engine"]: h for h in cmp.headlines if h["metric"] == "qa_retention"}
    assert set(qa) == {"0.15.3", "1.0"} and qa["1.0"]["n"] == qa["0.15.3"]["n"] > 10
    assert qa["1.0"]["unit"] == "qa_item" and not np.isnan(qa["1.0"]["chance"])
    if qa["1.0"]["withheld"] is None and qa["0.15.3"]["withheld"] is None:
        assert qa["1.0"]["paired"]
        assert qa["1.0"]["diff"] == pytest.approx(qa["1.0"]["value"] - qa["0.15.3"]["value"])


def test_a_file_with_several_conversations_needs_one_picked() -> None:
    with pytest.raises(OptionError, match="conversation="):
        compare_versions(LOCOMO, None, token_budget=6000)


def test_weighted_paired_difference_is_the_weighted_mean_and_reduces_to_the_plain_one() -> None:
    rng = np.random.default_rng(3)
    a, b = rng.random(40), rng.random(40)
    clusters = np.repeat(np.arange(10), 4)
    plain = cluster_bootstrap_difference(a, b, clusters, seed=7)
    assert cluster_bootstrap_difference(a, b, clusters, weights=np.full(40, 3.0), seed=7) == pytest.approx(plain)
    w = rng.integers(1, 4, 40).astype(float)
    diff, low, high = cluster_bootstrap_difference(a, b, clusters, weights=w, scale=0.5, seed=7)
    assert diff == pytest.approx(float(((b - a) * w).sum() / w.sum()) / 0.5) and low <= diff <= high


def test_shape_ignores_wording_but_not_structure() -> None:
    from lcm_lab.engine.types import AssembledItem, Summary

    s1 = Summary("sum_1", "leaf", 0, "one wording", 10, source_message_seqs=(1, 2))
    s2 = Summary("sum_2", "leaf", 0, "another wording", 12, source_message_seqs=(1, 2))
    item = lambda ref: AssembledItem("user", "summary", ref, {}, 10)  # noqa: E731
    assert shape_of([item("sum_1")], {"sum_1": s1}, {}) == shape_of([item("sum_2")], {"sum_2": s2}, {})
    wider = Summary("sum_3", "leaf", 0, "x", 10, source_message_seqs=(1, 2, 3))
    assert shape_of([item("sum_3")], {"sum_3": wider}, {}) != shape_of([item("sum_1")], {"sum_1": s1}, {})


def test_replays_of_the_comparison_are_ordinary_replays(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_comparison, "run_engine", fake_second_engine({}))
    cmp = compare_versions(GOLDEN, TIGHT, token_budget=1200, summarizer="stub-v1")
    direct = replay(cmp.runs["0.15.3"].conversation, LcmConfig.from_plugin_config(TIGHT), StubV1Summarizer(), 1200)
    assert [t.tokens_end for t in direct.turns] == [t.tokens_end for t in cmp.runs["0.15.3"].turns]


def _cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from lcm_lab.cli import main

    status = main(args)
    out = capsys.readouterr()
    return status, out.out, out.err


def test_cli_prints_totals_headlines_and_differing_turns(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                                          tmp_path: Path) -> None:  # fmt: skip
    import json

    monkeypatch.setattr(_comparison, "run_engine", fake_second_engine({"fresh_tail_count": 6}))
    config = tmp_path / "tight.json"
    config.write_text(json.dumps(TIGHT), encoding="utf-8")
    base = ["compare-versions", str(GOLDEN), "--config", str(config), "--token-budget", "1200", "--summarizer", "stub-v1"]
    status, out, _ = _cli(base, capsys)
    assert status == 0
    expected = compare_versions(GOLDEN, TIGHT, token_budget=1200, summarizer="stub-v1")
    assert "turns_differing_bytes" in out and "fact_retention" in out
    assert f"turns where 1.0 sends a different context than 0.15.3: {', '.join(map(str, expected.differing_turns()))}" in out
    status, out, _ = _cli([*base, "--json"], capsys)
    doc = json.loads(out)
    assert status == 0 and doc["totals"] == expected.to_dict()["totals"] and doc["headlines"] == expected.to_dict()["headlines"]
    status, out, _ = _cli([*base, "--csv"], capsys)
    lines = out.splitlines()
    assert status == 0 and lines[0].startswith("turn,path[0.15.3]") and len(lines) == 1 + len(expected.runs["1.0"].turns)


@pytest.mark.parametrize(("extra", "message"), [
    (["--versions", "0.15.3"], "at least two engine versions"),
    (["--versions", "0.15.3", "9.9"], "unknown engine version 9.9"),
    (["--conversation", "x"], "--conversation x"),
])  # fmt: skip
def test_cli_errors_are_one_line_exit_2(extra: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = _cli(["compare-versions", str(GOLDEN), "--token-budget", "1200", *extra], capsys)
    assert status == 2 and out == "" and message in err and len(err.strip().splitlines()) == 1


def test_cli_multi_conversation_file_needs_a_pick(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = _cli(["compare-versions", str(LOCOMO), "--token-budget", "6000"], capsys)
    assert status == 2 and "--conversation N" in err


@pytest.mark.parametrize("output", [[], ["--csv"], ["--json"]])
def test_a_session_without_turns_is_one_line_in_every_output(output: list[str], tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text('{"type":"session","version":3,"id":"s-empty","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}\n',
                     encoding="utf-8")
    status, out, err = _cli(["compare-versions", str(empty), "--token-budget", "1200", *output], capsys)
    assert status == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "s-empty has no turns (no user message), so no version has anything to compare" in err


def test_a_run_without_summaries_has_no_depth(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_comparison, "run_engine", fake_second_engine({}))
    cmp = compare_versions(GOLDEN, token_budget=1_000_000, summarizer="stub-v1", scores=False)
    assert all(t["summaries"] == 0 and t["max_depth"] is None for t in cmp.totals)  # not -1


def test_the_report_has_an_upgrade_section(monkeypatch: pytest.MonkeyPatch) -> None:
    from lcm_lab.report.build import report

    monkeypatch.setattr(_comparison, "run_engine", fake_second_engine({"fresh_tail_count": 6}))
    cmp = compare_versions(GOLDEN, TIGHT, token_budget=1200, summarizer="stub-v1")
    page = report(cmp.runs["1.0"], upgrade=cmp)
    assert 'id="upgrade"' in page and "Upgrading lossless-claw: 0.15.3 vs 1.0" in page
    section = page.split('id="upgrade"')[1].split("</details>")[0]
    assert f"<td class=\"num\">{len(cmp.differing_turns())}</td>" in section and "fact_retention" in section


def test_cli_on_the_real_engines_matches_the_recorded_golden_run(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    import json

    g0 = {"contextThreshold": 0.75, "freshTailCount": 6, "leafMinFanout": 3, "condensedMinFanout": 2, "condensedMinFanoutHard": 2,
          "sweepMaxDepth": 1, "leafChunkTokens": 400, "leafTargetTokens": 2400, "condensedTargetTokens": 10,
          "summaryMaxOverageFactor": 3, "timezone": "UTC"}  # fmt: skip
    config = tmp_path / "g0.json"
    config.write_text(json.dumps(g0), encoding="utf-8")
    status, out, _ = _cli(["compare-versions", str(GOLDEN), "--config", str(config), "--token-budget", "2000",
                           "--summarizer", "stub-v1", "--json"], capsys)  # fmt: skip
    doc = json.loads(out)
    new = next(t for t in doc["totals"] if t["engine"] == "1.0")
    # reference-runs-v1 golden__G0-golden: 4 pending summaries (3 leaves + 1 condensed), 4 clamped turns, 1071 final tokens
    assert status == 0 and (new["summaries"], new["leaves"], new["condensed"]) == (4, 3, 1)
    assert (new["clamped_turns"], new["final_stored_tokens"]) == (4, 1071)


def test_cli_replays_an_lcm_db_from_its_stored_messages(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    db = REPO / "datasets" / "lcm-db" / "golden__G0-golden.db.gz"
    status, out, _ = _cli(["compare-versions", str(db), "--token-budget", "2000", "--summarizer", "stub-v1", "--json"], capsys)
    doc = json.loads(out)
    assert status == 0 and [t["engine"] for t in doc["totals"]] == ["0.15.3", "1.0"]
    assert doc["totals"][0]["turns"] == doc["totals"][1]["turns"] > 1
