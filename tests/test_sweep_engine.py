"""``engine`` as a sweep dimension: each LCM configuration records the lossless-claw version it
replayed, every version gets its own plugin-defaults baseline, and recommend never mixes versions.

Both versions are the real engines (``replay(..., engine=...)``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lcm_lab.errors import OptionError
from lcm_lab.store import LabStore
from lcm_lab.sweeps import SweepSpecError, parse_spec, recommend, sweep, sweep_df
from lcm_lab.sweeps.run import BASELINE_ID, baseline_id
from lcm_lab.sweeps.spec import grid_points

REPO = Path(__file__).resolve().parents[1]
GOLDEN = str(REPO / "datasets" / "lossless-claw-ref" / "golden-session.jsonl")


def spec(**changes: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": "engines", "conversations": [{"path": GOLDEN}], "token_budget": 1200,
        "base": {"leafChunkTokens": 400, "leafTargetTokens": 120},
        "space": {"engine": ["0.15.3", "1.0"], "freshTailCount": [2, 6]},
        "objectives": [{"metric": "peak_context_tokens", "direction": "minimize"}],
        "scoring": {"qa": False}, "executor": "serial", "summarizer": {"name": "stub-v1"},
    }  # fmt: skip
    out.update(changes)
    return out


@pytest.mark.parametrize(("engines", "message"), [
    (["0.15.3", "2.0"], "engine: unknown lossless-claw version 2.0; known: 0.15.3, 1.0"),
    ("1.0", "space.engine: Input should be a valid list"),
    ({"low": 0, "high": 1}, "engine: a list of lossless-claw versions"),
    (["1.0", "1.0"], "engine: a version is listed twice"),
])  # fmt: skip
def test_bad_engine_dimensions_name_the_key(engines: Any, message: str) -> None:
    with pytest.raises(SweepSpecError, match=message):
        parse_spec(spec(space={"engine": engines}))


def test_every_engine_gets_every_knob_value_with_its_own_config_id() -> None:
    points = grid_points(parse_spec(spec()))
    assert [(p.engine, p.params["freshTailCount"]) for p in points] == [("0.15.3", 2), ("0.15.3", 6), ("1.0", 2), ("1.0", 6)]
    assert len({p.config_id for p in points}) == 4
    assert all("engine" not in p.config.to_plugin_config() for p in points if p.config is not None)
    assert parse_spec(spec(space={"freshTailCount": [2]})).engines() == ["0.15.3"]


def test_a_sweep_over_engines_records_the_engine_and_recommends_one_version(tmp_path: Path) -> None:
    store = LabStore(tmp_path / "lab.duckdb")
    result = sweep(spec(), store=store, progress=False)
    assert (result.configs, result.runs_ok, result.runs_failed) == (6, 6, 0)  # 4 points + the defaults under each engine
    frame = sweep_df(result.sweep_id, store)
    engines = dict(zip(frame.config_id, frame.engine, strict=True))
    assert engines[BASELINE_ID] == "0.15.3" and engines[baseline_id("1.0")] == "1.0"
    assert sorted(frame.engine) == ["0.15.3"] * 3 + ["1.0"] * 3
    stored = dict(store.fetch_all("SELECT run_id, engine FROM replays WHERE label = ?", [result.sweep_id]))
    assert {stored[r] for r, e in zip(frame.run_id, frame.engine, strict=True) if e == "1.0"} == {"1.0"}
    with pytest.raises(OptionError, match=r"several lossless-claw versions \(0.15.3, 1.0\)"):
        recommend(result.sweep_id, store)
    for engine in ("0.15.3", "1.0"):
        rec = recommend(result.sweep_id, store, engine=engine)
        assert rec.engine == engine and rec.as_json()["engine"] == engine
        assert engines[rec.config_id] == engine
        assert f"tuned on lossless-claw {engine}" in rec.snippet()
        assert "engine" not in rec.openclaw_json["plugins"]["entries"]["lossless-claw"]["config"]
    with pytest.raises(OptionError, match="engine 2.0"):
        recommend(result.sweep_id, store, engine="2.0")
    from lcm_lab.report.sweep_section import sweep_section

    section = sweep_section(result.sweep_id, store)
    assert "(lossless-claw 0.15.3)" in section["chosen"] and "(lossless-claw 1.0)" in section["chosen"]
    assert section["snippet"].count("# tuned on lossless-claw") == 2
    assert len(section["rows"]) == 6
