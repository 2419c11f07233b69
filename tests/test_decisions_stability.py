"""Decision/TODO retention, stability across repeats, and the drift alarm (function and CLI)."""

from __future__ import annotations

import hashlib
import json
from functools import cache
from pathlib import Path

import pytest

from lcm_lab.cli import main
from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.protocol import SummaryRequest, SummaryResult
from lcm_lab.engine.replay.driver import replay
from lcm_lab.engine.types import Conversation, InputEntry
from lcm_lab.metrics.base import Score
from lcm_lab.metrics.decisions import decision_scores, retained, tag_decisions
from lcm_lab.metrics.stability import drift_alarm, drift_checks, repeat_replays, stability_scores
from lcm_lab.store import open_store
from lcm_lab.store.scores import write_scores
from lcm_lab.summarizers import OfflineSummarizer
from lcm_lab.summarizers.controls import FixedTextSummarizer

CONFIG = LcmConfig(fresh_tail_count=4, leaf_chunk_tokens=800, leaf_target_tokens=200)


@cache
def _chat(turns: int = 14) -> Conversation:
    entries = []
    line = 2
    for k in range(turns):
        user = f"Turn {k}: we decided to store batch {k} in services/api/store_{k}.py. TODO: migrate table t{k} next. " + "Filler sentence here. " * 25
        reply = f"Agreed, switched to retries_{k} for handler_{k}; the timeout is {k + 3}0 ms. " + "Detail sentence there. " * 25
        entries.append(InputEntry(line, "message", {"role": "user", "content": user, "timestamp": 1_700_000_000_000 + k * 60_000}))
        entries.append(InputEntry(line + 1, "message", {"role": "assistant", "content": [{"type": "text", "text": reply}],
                                                        "timestamp": 1_700_000_030_000 + k * 60_000}))
        line += 2
    return Conversation("decisions-chat", entries=tuple(entries))


def test_tagging_and_retention_rule() -> None:
    tagged = tag_decisions([(1, "We decided to use DuckDB 1.5.5 for the store. TODO: port `make bench` to CI. Nice day.")])
    assert [d.kind for d in tagged] == ["decision", "todo"]
    assert tagged[0].terms == ("DuckDB", "1.5.5")
    assert retained(tagged[0], "the team chose duckdb 1.5.5") and not retained(tagged[0], "we use DuckDB")
    assert tag_decisions([(1, "const x = decided ? a : b;")]) == []  # code is not a decision


def test_decision_retention_has_controls_and_beats_fixed_text() -> None:
    rows = {}
    for name, summarizer in (("offline", OfflineSummarizer()), ("fixed", FixedTextSummarizer())):
        rep = replay(_chat(), CONFIG, summarizer, token_budget=2500, run_id=name)
        rows[name] = {s.metric: s for s in decision_scores(rep, name, donor_text="Caroline went to the parade in Sweden. " * 200)}
    off, fixed = rows["offline"]["decision_retention"], rows["fixed"]["decision_retention"]
    assert off.details["floor"] == fixed.details["floor"] and off.details["n"] >= 20
    assert off.details["chance"] == 0.0 and off.details["unit"] == "decision"
    assert off.details["raw"] > fixed.details["raw"]
    assert off.value is not None and off.details["ci_low"] <= off.value <= off.details["ci_high"]


class _SeededFake:
    """A deterministic summarizer that varies with its seed: the offline summary minus the lines
    a seeded hash drops (stands in for a sampled LLM)."""

    name = "seeded-fake"

    def __init__(self, seed: int) -> None:
        self.seed = seed

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        lines = OfflineSummarizer().summarize(request).text.splitlines()
        keep = [ln for ln in lines if hashlib.sha256(f"{self.seed}:{ln}".encode()).digest()[0] % 3] or lines[:1]
        return SummaryResult("\n".join(keep), model="fake")


def test_stability_identical_for_offline_and_measured_for_a_varying_summarizer() -> None:
    offline = stability_scores(repeat_replays(_chat(), CONFIG, lambda i: OfflineSummarizer(), repeats=3, token_budget=2500), "offline")
    fake = stability_scores(repeat_replays(_chat(), CONFIG, _SeededFake, repeats=3, token_budget=2500), "fake")
    by = lambda rows: {s.metric: s for s in rows}  # noqa: E731
    assert by(offline)["summary_stability"].value == 1.0 and by(offline)["summary_stability"].details["identical"]
    assert by(offline)["fact_retention_spread"].value == 0.0
    assert by(fake)["summary_stability"].value < 0.95 and not by(fake)["summary_stability"].details["identical"]
    spread = by(fake)["fact_retention_spread"]
    assert spread.value is not None and spread.value > 0 and len(spread.details["values"]) == 3
    assert spread.details["ci_low"] <= spread.details["mean"] <= spread.details["ci_high"]
    with pytest.raises(ValueError, match="at least two"):
        repeat_replays(_chat(), CONFIG, lambda i: OfflineSummarizer(), repeats=1, token_budget=2500)


def _head(run: str, value: float | None, lo: float, hi: float) -> Score:
    return Score(run, "run", "", "fact_retention", value, {"ci_low": lo, "ci_high": hi})


def test_drift_alarm_statuses() -> None:
    prev = _head("a", 0.5, 0.4, 0.6)
    assert [drift_alarm(prev, _head("b", v, 0, 0)).status for v in (0.3, 0.5, 0.7, None)] == ["drop", "within", "rise", "lost"]
    assert drift_alarm(prev, None).alarm
    assert drift_alarm(_head("a", None, 0.4, 0.6), _head("b", 0.1, 0, 0)).status == "no-interval"
    assert [c.metric for c in drift_checks([prev, Score("a", "run", "", "peak_context_tokens", 5.0)], [_head("b", 0.45, 0, 0)])] == ["fact_retention"]


def test_drift_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "lab.duckdb"
    store = open_store(str(db))
    write_scores(store, [_head("old", 0.5, 0.4, 0.6), _head("new", 0.2, 0.1, 0.3), _head("same", 0.45, 0.3, 0.6)])
    store.close()
    assert main(["drift", "--db", str(db), "--previous", "old", "--run", "new", "--json"]) == 1
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert out[0]["status"] == "drop" and out[0]["alarm"] is True
    assert main(["drift", "--db", str(db), "--previous", "old", "--run", "same"]) == 0
    assert "within" in capsys.readouterr().out
    assert main(["drift", "--db", str(db), "--previous", "old", "--run", "missing"]) == 2
