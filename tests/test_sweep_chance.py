"""Sweeps give qa_retention and fact_retention their chance control: the same reader over a donor,
another of the sweep's conversations of the same kind (the rule the demo uses), computed once per
conversation × budget; without a second conversation the row says why there is none."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lcm_lab.engine.tokens import truncate_to_tokens
from lcm_lab.metrics.fact_headline import prefix_within, text_window
from lcm_lab.store import LabStore
from lcm_lab.sweeps import recommend, sweep, sweep_df
from lcm_lab.sweeps.metrics import chance_value
from lcm_lab.sweeps.run import BASELINE_ID

REPO = Path(__file__).resolve().parents[1]
LOCOMO = str(REPO / "datasets" / "locomo" / "locomo10.json")
CHANCE = ["qa_retention_chance", "fact_retention_chance"]


def qa_spec(conversations: int, **changes: Any) -> dict[str, Any]:
    """One tight configuration (and the defaults) on the first LoCoMo conversations, QA scored."""
    spec: dict[str, Any] = {
        "name": "chance",
        "conversations": [{"path": LOCOMO, "limit": conversations}],
        "token_budget": 6000,
        "base": {"leafChunkTokens": 2000, "leafTargetTokens": 400, "condensedTargetTokens": 300},
        "space": {"freshTailCount": [32]},
        "objectives": [{"metric": "qa_retention", "direction": "maximize"},
                       {"metric": "fact_retention", "direction": "maximize"}],
        "scoring": {"qa": True},
        "executor": "serial",
    }
    spec.update(changes)
    return spec


def test_two_locomo_conversations_read_each_other_as_chance(tmp_path: Path) -> None:
    from lcm_lab.engine.replay.driver import replay
    from lcm_lab.io.transcripts import read_transcript
    from lcm_lab.metrics.donor import pick_donor
    from lcm_lab.metrics.score import score_replay
    from lcm_lab.summarizers import get_summarizer
    from lcm_lab.sweeps.spec import parse_spec, point

    store = LabStore(tmp_path / "lab.duckdb")
    result = sweep(qa_spec(2), store=store, progress=False)
    frame = sweep_df(result.sweep_id, store)
    assert len(frame) == 4 and (frame.status == "ok").all()
    a, b = "locomo10.json#0", "locomo10.json#1"
    assert dict(zip(frame.conversation, frame.chance_donor, strict=True)) == {a: b, b: a}
    assert frame.chance_note.isna().all()
    assert frame[CHANCE].notna().all().all()
    # QA chance reads the donor truncated to the budget: one value per conversation, whatever the configuration
    assert frame.groupby("conversation").qa_retention_chance.nunique().eq(1).all()
    # The stored headlines carry the raw chance and name the donor
    rows = store.fetch_all("SELECT run_id, metric, details FROM scores WHERE scope = 'run' AND metric = 'fact_retention' "
                           "AND run_id LIKE ?", [result.sweep_id + "%"])
    donor_of = dict(zip(frame.run_id, frame.chance_donor, strict=True))
    assert {json.loads(d)["chance_donor"] for _, _, d in rows} == {a, b}
    assert all(json.loads(d)["chance_donor"] == donor_of[r] for r, _, d in rows)

    # The same number as scoring that run by hand with the donor the demo's rule picks
    loaded = read_transcript(Path(LOCOMO)).conversations[:2]
    assert pick_donor(loaded[0], [(a, loaded[0]), (b, loaded[1])]).label == b  # type: ignore[union-attr]
    spec = parse_spec(qa_spec(2))
    p = point(spec, {"freshTailCount": 32})
    run = replay(loaded[0].conversation, p.config, get_summarizer("offline"), token_budget=6000, run_id="by-hand")
    scores = score_replay(run, qa_items=loaded[0].qa_items, context_turns=[run.turns[-1].turn],
                          chance_conversation=loaded[1].conversation)
    by_hand = {s.metric: s for s in scores if s.scope == "run"}
    row = frame[(frame.config_id == p.config_id) & (frame.conversation == a)].iloc[0]
    assert row.qa_retention == pytest.approx(by_hand["qa_retention"].value)
    assert row.qa_retention_chance == pytest.approx(chance_value(by_hand["qa_retention"]))
    assert row.qa_retention_chance == pytest.approx(by_hand["qa_retention"].details["chance_normalised"])
    assert row.fact_retention_chance == pytest.approx(chance_value(by_hand["fact_retention"]))

    # The same chance controls from worker processes
    parallel = LabStore(tmp_path / "b.duckdb")
    again = sweep(qa_spec(2, executor="processes", workers=2), store=parallel, progress=False)
    columns = ["config_id", "conversation", *CHANCE, "chance_donor", "chance_note"]
    left = frame[columns].sort_values(["config_id", "conversation"]).reset_index(drop=True)
    right = sweep_df(again.sweep_id, parallel)[columns].sort_values(["config_id", "conversation"]).reset_index(drop=True)
    assert left.equals(right)


def test_one_conversation_has_no_chance_control_and_says_why(tmp_path: Path) -> None:
    store = LabStore(tmp_path / "lab.duckdb")
    result = sweep(qa_spec(1), store=store, progress=False)
    frame = sweep_df(result.sweep_id, store)
    assert (frame.status == "ok").all() and frame.qa_retention.notna().all()
    assert frame[CHANCE].isna().all().all() and frame.chance_donor.isna().all()
    assert all("no chance control possible" in n and "LoCoMo conversation" in n for n in frame.chance_note)
    details = [json.loads(d) for (d,) in store.fetch_all(
        "SELECT details FROM scores WHERE scope = 'run' AND metric = 'fact_retention' AND run_id LIKE ?", [result.sweep_id + "%"])]
    assert details and all(d["chance"] is None and "chance_withheld" in d for d in details)
    warnings = recommend(result.sweep_id, store).warnings
    assert any(w.startswith("qa_retention: no chance control to compare with (no chance control possible") for w in warnings)


def _constructed_sweep(store: LabStore, chance: float, *, controls: bool = True) -> str:
    """A sweep written row by row: the defaults and one configuration on two conversations, the
    configuration's qa_retention 0.30 and 0.40 against the given chance control."""
    from lcm_lab.store.sweeps import register_config, register_sweep, write_run_row

    sweep_id = f"sw_constructed_{chance}"
    spec = {"name": "constructed", "space": {"freshTailCount": [16]}, "objectives": [{"metric": "qa_retention", "direction": "maximize"}],
            "constraints": [], "base": {}}
    register_sweep(store, sweep_id, "constructed", spec)
    register_config(store, sweep_id, BASELINE_ID, {}, {}, baseline=True)
    register_config(store, sweep_id, "c_tail16", {"freshTailCount": 16}, {"freshTailCount": 16}, trial=0)
    for config_id, values in ((BASELINE_ID, (0.1, 0.2)), ("c_tail16", (0.3, 0.4))):
        for i, value in enumerate(values):
            key, donor = f"conv#{i}", f"conv#{1 - i}"
            metrics: dict[str, Any] = {"qa_retention": value}
            if controls:
                metrics["controls"] = {"qa_retention_chance": chance, "fact_retention_chance": None, "chance_donor": donor,
                                       "chance_note": None}
            write_run_row(store, sweep_id, config_id, key, f"{config_id}-{i}", "ok", None, 0.1, metrics, 0)
    return sweep_id


def test_recommend_warns_when_the_objective_is_not_above_chance() -> None:
    store = LabStore(":memory:")
    below = recommend(_constructed_sweep(store, 0.5), store)
    assert below.config_id == "c_tail16"
    [warning] = [w for w in below.warnings if "chance" in w]
    assert warning.startswith("qa_retention: the chosen configuration (0.35) is not above its chance control (0.5")
    assert "conv#0, conv#1" in warning
    assert [t["chance"] for t in below.tradeoff if t["metric"] == "qa_retention"] == [0.5]
    assert "chance 0.5" in below.snippet()
    above = recommend(_constructed_sweep(store, -0.2), store)
    assert not [w for w in above.warnings if "chance" in w]
    # rows stored before sweeps computed chance controls say so instead of showing blanks
    old = _constructed_sweep(store, 0.0, controls=False)
    assert set(sweep_df(old, store).chance_note) == {"not recorded: this run was stored before sweeps computed chance controls"}
    assert any("no chance control to compare with (not recorded" in w for w in recommend(old, store).warnings)


_texts = st.text(alphabet=st.sampled_from(["a", " ", "\n", "é", "’", "你", "😀", "𠀀", "ｆ"]), max_size=200)


@settings(max_examples=400, deadline=None)
@given(_texts, st.integers(min_value=-1, max_value=60), st.text(max_size=5))
def test_the_fast_chance_window_is_the_engine_truncation(text: str, tokens: int, key: str) -> None:
    assert prefix_within(text, tokens) == truncate_to_tokens(text, tokens)
    if tokens >= 0:
        import hashlib

        chars = min(len(text), 4 * tokens)
        start = int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:12], 16) % max(1, len(text) - chars + 1)
        assert text_window(text, tokens, key) == truncate_to_tokens(text[start:], tokens).strip()
