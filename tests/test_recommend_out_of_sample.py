"""``recommend`` checks its choice out of sample: chosen on training folds of conversations, compared
with the plugin defaults on the held-out fold, with an interval over conversations; "does not
transfer" when the interval covers 0 or the choice changes between folds; in-sample below four
conversations."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from lcm_lab.store import LabStore
from lcm_lab.sweeps import recommend, sweep, sweep_df
from lcm_lab.sweeps.choice import cross_validate, fold_assignment
from lcm_lab.sweeps.run import BASELINE_ID

REPO = Path(__file__).resolve().parents[1]
LOCOMO = str(REPO / "datasets" / "locomo" / "locomo10.json")


def constructed_sweep(store: LabStore, name: str, values: Mapping[str, Sequence[float]]) -> str:
    """A sweep written row by row: ``values[config_id][i]`` is its qa_retention on conversation i
    (the first entry must be the defaults)."""
    from lcm_lab.store.sweeps import register_config, register_sweep, write_run_row

    sweep_id = f"sw_{name}"
    knobs = {cid: {"freshTailCount": 8 * (j + 1)} for j, cid in enumerate(values) if cid != BASELINE_ID}
    spec = {"name": name, "space": {"freshTailCount": [k["freshTailCount"] for k in knobs.values()]},
            "objectives": [{"metric": "qa_retention", "direction": "maximize"}], "constraints": [], "base": {}}
    register_sweep(store, sweep_id, name, spec)
    register_config(store, sweep_id, BASELINE_ID, {}, {}, baseline=True)
    for trial, (cid, params) in enumerate(knobs.items()):
        register_config(store, sweep_id, cid, params, params, trial=trial)
    for cid, row in values.items():
        for i, value in enumerate(row):
            write_run_row(store, sweep_id, cid, f"conv#{i}", f"{cid}-{i}", "ok", None, 0.1, {"qa_retention": value}, 0)
    return sweep_id


def test_a_setting_better_on_most_conversations_is_found_out_of_sample() -> None:
    store = LabStore(":memory:")
    base = [0.20, 0.30, 0.25, 0.40, 0.35, 0.10, 0.22, 0.28]
    better = [b + d for b, d in zip(base, [0.10, 0.12, 0.08, -0.02, 0.11, 0.09, 0.10, 0.07], strict=True)]
    noise = [b + d for b, d in zip(base, [0.03, -0.04, 0.01, 0.02, -0.03, 0.00, -0.01, 0.02], strict=True)]
    sweep_id = constructed_sweep(store, "better", {BASELINE_ID: base, "c_better": better, "c_noise": noise})
    rec = recommend(sweep_id, store)
    assert rec.config_id == "c_better"
    oos = rec.out_of_sample
    assert oos is not None
    assert set(oos) >= {"folds", "gain", "ci_low", "ci_high", "transfers"}
    assert oos["folds"] == 5 and oos["conversations"] == 8
    assert oos["transfers"] is True and oos["stable"] is True
    assert [f["chosen"] for f in oos["fold_choices"]] == ["c_better"] * 5
    # every conversation held out once: the gain is the mean held-out difference
    assert oos["gain"] == pytest.approx(sum(b - a for a, b in zip(base, better, strict=True)) / 8)
    assert 0 < oos["ci_low"] < oos["gain"] < oos["ci_high"]
    assert not any("does not transfer" in w for w in rec.warnings)
    # the verdict names the settings a configuration stands for, never its id
    assert "transfers: every training fold chooses freshTailCount=16" in rec.snippet()
    assert "c_better" not in oos["verdict"]
    assert rec.as_json()["out_of_sample"] == oos


def test_a_choice_that_changes_between_folds_does_not_transfer() -> None:
    store = LabStore(":memory:")
    base = [0.2, 0.2, 0.2, 0.2, 0.2, 0.2]
    # each configuration is much better on one pair of conversations and worse elsewhere
    a = [0.5, 0.5, 0.1, 0.1, 0.15, 0.15]
    b = [0.1, 0.1, 0.5, 0.5, 0.15, 0.15]
    rec = recommend(constructed_sweep(store, "unstable", {BASELINE_ID: base, "c_a": a, "c_b": b}), store, folds=3)
    oos = rec.out_of_sample
    assert oos is not None and oos["folds"] == 3 and oos["transfers"] is False and oos["stable"] is False
    assert rec.warnings[0].startswith("qa_retention: does not transfer (")
    assert "the choice changes between folds" in rec.warnings[0]


def test_an_interval_covering_zero_does_not_transfer_even_when_the_choice_is_stable() -> None:
    store = LabStore(":memory:")
    base = [0.2, 0.3, 0.4, 0.5, 0.6]
    wobbly = [0.45, 0.25, 0.45, 0.45, 0.57]  # better by +0.25, −0.05, +0.05, −0.05, −0.03
    rec = recommend(constructed_sweep(store, "wobbly", {BASELINE_ID: base, "c_w": wobbly}), store)
    oos = rec.out_of_sample
    assert oos is not None and oos["folds"] == 5
    assert oos["ci_low"] <= 0 <= oos["ci_high"] and oos["transfers"] is False
    assert "the interval covers 0" in rec.warnings[0]


def test_fewer_than_four_conversations_are_labelled_in_sample() -> None:
    store = LabStore(":memory:")
    rec = recommend(constructed_sweep(store, "small", {BASELINE_ID: [0.1, 0.2, 0.3], "c_up": [0.3, 0.4, 0.5]}), store)
    assert rec.out_of_sample is None and rec.as_json()["out_of_sample"] is None
    assert any(w.startswith("in-sample only: 3 conversation(s), fewer than 4") for w in rec.warnings)
    assert "not cross-validated: fewer than 4 conversations" in rec.snippet()


def test_folds_are_dealt_round_robin_and_each_conversation_is_held_out_once() -> None:
    keys = [f"c{i}" for i in range(10)]
    folds = fold_assignment(keys, 5)
    assert folds[0] == ("c0", "c5") and sorted(k for f in folds for k in f) == sorted(keys)
    assert fold_assignment(keys[:4], 5) == [("c0",), ("c1",), ("c2",), ("c3",)]  # at most one fold per conversation


def test_a_null_sweep_recommends_no_change(tmp_path: Path) -> None:
    """maxExpandTokens bounds what the recall tools may expand; a replay never expands, so the
    knob changes nothing: every configuration ties with the defaults and the defaults stand."""
    store = LabStore(tmp_path / "lab.duckdb")
    spec = {
        "name": "null", "conversations": [{"path": LOCOMO, "limit": 4}], "token_budget": 6000,
        "space": {"maxExpandTokens": [1000, 16000]},
        "objectives": [{"metric": "qa_retention", "direction": "maximize"}],
        "scoring": {"qa": True}, "executor": "serial",
    }
    result = sweep(spec, store=store, progress=False)
    frame = sweep_df(result.sweep_id, store)
    assert len(frame) == 12 and (frame.status == "ok").all()
    assert frame.groupby("conversation").qa_retention.nunique().eq(1).all()  # the knob is null
    rec = recommend(result.sweep_id, store)
    assert rec.config_id == BASELINE_ID and rec.env == {}
    oos = rec.out_of_sample
    assert oos is not None and oos["folds"] == 4
    assert [f["chosen"] for f in oos["fold_choices"]] == [BASELINE_ID] * 4
    assert oos["gain"] == 0 and oos["transfers"] is False
    assert "no change: every training fold chooses the plugin defaults" in rec.snippet()
    assert rec.warnings[0].startswith("every configuration scored the same qa_retention as the plugin defaults (a tie)")

    done = subprocess.run([sys.executable, "-m", "lcm_lab.cli", "recommend", result.sweep_id, "--db",
                           str(tmp_path / "lab.duckdb"), "--json"], capture_output=True, text=True, check=False,
                          env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}, timeout=300)
    assert done.returncode == 0, done.stderr
    payload: dict[str, Any] = json.loads(done.stdout)
    assert {k: payload["out_of_sample"][k] for k in ("folds", "gain", "transfers")} == {"folds": 4, "gain": 0.0, "transfers": False}


def test_cross_validate_needs_two_folds() -> None:
    import pandas as pd

    frame = pd.DataFrame({"config_id": [BASELINE_ID] * 4, "conversation": list("abcd"), "q": [1.0] * 4, "status": "ok"})
    with pytest.raises(ValueError, match="at least 2 folds"):
        cross_validate(frame, {"q": "maximize"}, [], folds=1)


def test_the_report_section_says_whether_the_choice_transfers() -> None:
    from lcm_lab.report.sweep_section import sweep_section

    store = LabStore(":memory:")
    base = [0.20, 0.30, 0.25, 0.40, 0.35]
    sweep_id = constructed_sweep(store, "report", {BASELINE_ID: base, "c_up": [b + 0.1 for b in base]})
    section = sweep_section(sweep_id, store)
    assert section["out_of_sample"]["transfers"] is True and section["out_of_sample"]["folds"] == 5
    assert section["transfer"].startswith("Transfers: every training fold chooses freshTailCount=16; out-of-sample gain in qa_retention")
    small = sweep_section(constructed_sweep(store, "report-small", {BASELINE_ID: base[:2], "c_up": [0.5, 0.6]}), store)
    assert small["out_of_sample"] is None
    assert small["transfer"].startswith("In-sample only: 2 conversations, fewer than 4 to cross-validate")


def test_two_conversations_give_no_interval_and_no_recommendation(capsys: pytest.CaptureFixture[str]) -> None:
    """Over two conversations the 95% t-interval of a 0..1 score was -2.8 .. +3.5 (a quantile of
    12.7 on one degree of freedom), printed with a "within noise" warning. Below three
    conversations there is no interval, in words, and the best row is no recommendation."""
    from lcm_lab.cli import print_json
    from lcm_lab.report.sweep_section import sweep_section

    store = LabStore(":memory:")
    sweep_id = constructed_sweep(store, "two", {BASELINE_ID: [0.2, 0.3], "c_up": [0.3, 0.9]})
    rec = recommend(sweep_id, store)
    (row,) = rec.tradeoff
    assert row["n"] == 2 and row["difference"] == pytest.approx(0.35)
    assert math.isnan(row["ci_low"]) and math.isnan(row["ci_high"]) and row["within_noise"] is False
    assert row["no_interval"] == "2 paired conversation(s): too few to give an interval (at least 3 needed)"
    assert not any("within noise" in w for w in rec.warnings)
    assert rec.doubts == [w for w in rec.warnings if w.startswith("measured on 2 conversations: too few to give an interval")]
    assert "not what new ones will show" in rec.doubts[0]
    text = rec.snippet()
    assert "not a recommendation" in text.splitlines()[0]
    assert "diff +0.35 no interval  n=2" in text and "-2.8" not in text
    print_json(rec.as_json())  # what `lcm-lab recommend --json` prints
    shown = json.loads(capsys.readouterr().out)["tradeoff"][0]
    assert (shown["ci_low"], shown["ci_high"], shown["no_interval"]) == (None, None, row["no_interval"])
    section = sweep_section(sweep_id, store)
    assert section["chosen"].startswith("none: freshTailCount=16 is best in this sweep, but measured on 2 conversations")
    # three conversations give an interval again (its width is then the data's to tell)
    three = recommend(constructed_sweep(store, "three", {BASELINE_ID: [0.2, 0.3, 0.4], "c_up": [0.3, 0.9, 0.5]}), store)
    assert three.tradeoff[0]["no_interval"] is None and three.tradeoff[0]["ci_low"] < 0.4 < three.tradeoff[0]["ci_high"]
