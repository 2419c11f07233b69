"""Costs of replays per call and per session, the headlines, the plots' info and the report section."""

from __future__ import annotations

import pytest

from lcm_lab.cost.model import Calibration
from lcm_lab.cost.prices import Prices
from lcm_lab.cost.replay_cost import replay_requests
from lcm_lab.cost.scores import cost_scores, price_replay
from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.replay.driver import replay
from lcm_lab.engine.types import Conversation, InputEntry
from lcm_lab.io.model import RecordedEvent
from lcm_lab.report.build import report
from lcm_lab.report.cost_section import cost_section
from lcm_lab.summarizers.stub import StubV1Summarizer
from lcm_lab.viz.cost import cache_breaks, cost_breakdown_info

PRICES = Prices("claude-sonnet-4-5", "anthropic", input=3e-06, output=1.5e-05, cache_read=3e-07, cache_write=3.75e-06)
CAL = Calibration({"main": 3000.0}, ratio=1.0)


def _usage(prompt: int) -> dict[str, object]:
    return {"input": 3, "output": 50, "cacheRead": 0, "cacheWrite": prompt, "cost": {"total": 0}}


def _session(turns: int = 6, gap_ms: int = 60_000) -> Conversation:
    entries: list[InputEntry] = []
    line, t = 2, 1_000_000
    for k in range(turns):
        if k == 4:
            t += 600_000  # an idle gap longer than the 5-minute TTL
        entries.append(InputEntry(line, "message", {"role": "user", "content": f"question {k} " + "words " * 600, "timestamp": t}, f"u{k}"))
        line += 1
        for j in range(2):
            t += 2000
            call = {"type": "toolCall", "id": f"t{k}{j}", "name": "read", "arguments": {"path": f"f{k}{j}.py"}}
            entries.append(InputEntry(line, "message", {"role": "assistant", "content": [call], "usage": _usage(4000 + 900 * k),
                                                        "timestamp": t, "stopReason": "toolUse", "model": "claude-sonnet-4-5"}, f"a{k}{j}"))
            line += 1
            entries.append(InputEntry(line, "message", {"role": "toolResult", "toolCallId": f"t{k}{j}", "toolName": "read",
                                                        "content": [{"type": "text", "text": "code " * 300}], "timestamp": t + 10}, f"r{k}{j}"))
            line += 1
        t += gap_ms
    return Conversation("synthetic", entries=tuple(entries), meta={"last_line": line - 1})


@pytest.fixture(scope="module")
def run() -> object:
    return replay(_session(), LcmConfig(fresh_tail_count=4, leaf_chunk_tokens=1500), StubV1Summarizer(), token_budget=4000)


def test_each_assistant_message_is_one_call_on_the_sent_context_plus_the_turns_messages(run: object) -> None:
    requests = replay_requests(run)
    assert len(requests) == 12
    first, second = requests[0], requests[1]
    assert second.messages[: len(first.messages)] == first.messages  # tool results extend the prefix
    assert second.messages[-1]["role"] == "toolResult"
    assert [r.turn_start for r in requests[:3]] == [True, False, True]
    assert any(r.compacted for r in requests)  # the context engine compacted between turns


def test_session_cost_splits_tokens_and_names_what_broke_the_cache(run: object) -> None:
    cost, refs = price_replay(run, prices=PRICES, calibration=CAL)
    totals = cost.totals()
    assert totals["calls"] == 12 and totals["output_tokens"] == 600
    assert totals["cached_tokens"] + totals["written_tokens"] + totals["uncached_tokens"] == sum(c.prompt_tokens for c in cost.calls)
    assert cost.total_usd == pytest.approx(sum(c.dollars for c in cost.calls) + cost.summarizer_usd)
    reasons = {row["reason"] for row in cache_breaks(cost)}
    assert "ttl expiry" in reasons and "lcm compaction" in reasons
    # no compaction keeps the whole history: more prompt tokens than LCM at a 4k budget
    full = refs["no_compaction"]
    assert sum(c.prompt_tokens for c in full.calls) > sum(c.prompt_tokens for c in cost.calls)
    assert "recorded_host" not in refs  # no compaction records given
    info = cost_breakdown_info(cost)
    assert len(info.x) == 12 and any(reason == "ttl expiry" for _, reason in info.breaks)


def test_headlines_are_raw_dollars_and_hit_rate_with_their_references(run: object) -> None:
    usd, rate = cost_scores(run, prices=PRICES, calibration=CAL, events=[], run_id="r1")
    assert (usd.metric, rate.metric) == ("cost_usd", "cache_hit_rate")
    assert usd.details["normalised"] is False and usd.details["unit"] == "api_call"
    assert usd.details["ceiling"] is not None and usd.details["floor"] is not None  # no compaction, recorded host
    assert usd.details["relative_to_no_compaction"] == pytest.approx(usd.value / usd.details["ceiling"])
    assert 0 <= rate.value <= 1
    # constants given by hand carry no miss model: the rules' point, and the details say so
    assert usd.value == usd.details["rules_usd"] and usd.details["p05"] is None and "no miss model" in usd.details["interval_note"]


def test_a_calibrated_bill_is_expected_with_a_90_interval_and_paired_against_the_references(run: object) -> None:
    usd, _ = cost_scores(run, prices=PRICES, events=[], run_id="r1")  # calibrated: carries a miss model
    d = usd.details
    assert d["p05"] <= usd.value <= d["p95"] and usd.value >= d["rules_usd"]  # misses only add re-writes
    cost, refs = price_replay(run, prices=PRICES, events=[])
    saving = refs["recorded_host"].paired_difference(cost)
    assert saving is not None and saving.expected == pytest.approx(d["saving_vs_recorded_host"])
    bills = [c.bill().interval() for c in (cost, refs["recorded_host"])]
    assert saving.high - saving.low <= min(b.high - b.low for b in bills) + 1e-12  # paired: narrower than either bill
    assert cost.totals()["expected_usd"] == pytest.approx(usd.value)


def test_calibration_from_the_transcript_and_a_clear_error_without_usage(run: object) -> None:
    usd, _ = cost_scores(run, prices=PRICES)  # calibrated on the synthetic transcript's recorded usage
    assert usd.details["calibration_calls"] >= 1
    bare = Conversation("bare", entries=tuple(e for e in _session().entries if e.message and e.message["role"] == "user"))
    bare_run = replay(bare, LcmConfig(), StubV1Summarizer(), token_budget=64_000)
    with pytest.raises(ValueError, match="no provider usage"):
        cost_scores(bare_run, prices=PRICES)


def test_report_has_a_cost_section(run: object) -> None:
    cost, refs = price_replay(run, prices=PRICES, calibration=CAL, events=[RecordedEvent("x", None, None, None, None)])
    html = report(run, costs={"LCM 4k": cost, "no compaction": refs["no_compaction"]})
    assert "What it costs" in html and "What broke the cache (LCM 4k)" in html and "no compaction" in html
    assert "expected $ [90% interval]" in html and "saving vs first row" in html and "(paired)" in html
    calibrated, others = price_replay(run, prices=PRICES, events=[])
    section = cost_section({"LCM 4k": calibrated, "no compaction": others["no_compaction"]})
    assert section is not None
    first, second = section["rows"]
    assert first[-2] == "reference" and "[" in first[-3] and "[" in second[-2]  # interval and paired saving


def test_cost_explorer_follows_the_dropdown(run: object) -> None:
    from lcm_lab.widgets import CostExplorer

    cost, refs = price_replay(run, prices=PRICES, calibration=CAL)
    explorer = CostExplorer({"LCM 4k": cost, "no compaction": refs["no_compaction"]})
    before = (explorer.summary.value, explorer.table.value, explorer.figure.layout.title.text)
    assert "ttl expiry" in explorer.table.value
    explorer.pick.value = "no compaction"
    assert explorer.selected == "no compaction"
    after = (explorer.summary.value, explorer.table.value, explorer.figure.layout.title.text)
    assert after != before and after[2].startswith("no compaction")
    with pytest.raises(ValueError, match="at least one"):
        CostExplorer({})
