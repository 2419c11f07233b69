"""Hostile sweep specs, run for real through ``lcm-lab sweep`` in a child process: each is refused
in one line, exit 2, before a sweep row exists (none is left ``running``), within a small memory
bound. And a sweep that fails after its row exists is recorded ``failed``, never left ``running``."""

from __future__ import annotations

import resource
import subprocess
import time
from pathlib import Path
from typing import Any

import duckdb
import pytest
import yaml
from faults import assert_one_line_error, child_env, lab_command
from test_sweep import small_spec

from lcm_lab.store import LabStore
from lcm_lab.sweeps import SweepSpecError, parse_spec, sweep
from lcm_lab.sweeps.spec import MAX_CONFIGURATIONS

MEMORY_CAP = 3 * 2**30  # address space of the child: the huge grid took 3.6 GB before it failed


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def sweep_cli(tmp_path: Path, text: str) -> subprocess.CompletedProcess[str]:
    spec = tmp_path / "spec.yaml"
    spec.write_text(text, encoding="utf-8")
    return subprocess.run(lab_command("sweep", "--db", str(tmp_path / "lab.duckdb"), "--no-progress", str(spec)),
                          capture_output=True, text=True, timeout=120, env=child_env(), preexec_fn=_limit_memory)


def sweep_rows(db: Path) -> list[tuple[Any, ...]]:
    if not db.exists():
        return []
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute("SELECT status, (SELECT count(*) FROM sweep_configs) FROM sweeps").fetchall()
    finally:
        con.close()


def spec_text(**changes: Any) -> str:
    return yaml.safe_dump(small_spec(**changes), sort_keys=False)


def refused(tmp_path: Path, text: str, *needles: str) -> str:
    started = time.monotonic()
    line = assert_one_line_error(sweep_cli(tmp_path, text), "lcm-lab sweep: ", *needles)
    assert time.monotonic() - started < 60
    assert sweep_rows(tmp_path / "lab.duckdb") == []  # no sweep row, so none left 'running'
    return line


def test_aliases_of_aliases_are_counted_before_anything_walks_them(tmp_path: Path) -> None:
    # nine lines that stand for 9**9 values: the depth check alone walked them until killed
    rows = ['x0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    rows += [f"x{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)]
    text = spec_text() + "\n".join(rows) + "\nstrategy_config: {x: *a8}\n"
    refused(tmp_path, text, "spec.yaml: holds 926,177,", "values once its aliases (*name) are expanded", "at most 100,000")


def test_an_alias_that_holds_itself_is_one_line(tmp_path: Path) -> None:
    refused(tmp_path, spec_text() + "strategy_config: &me {x: [*me]}\n", "spec.yaml: an alias holds itself")


def test_yaml_nested_thousands_deep_is_one_line(tmp_path: Path) -> None:
    text = spec_text() + "strategy_config: " + "[" * 3000 + "]" * 3000 + "\n"
    refused(tmp_path, text, "spec.yaml: nested more than 200 levels deep", "at most 200 levels")


def test_a_mapping_nested_thousands_deep_is_a_spec_error() -> None:
    value: Any = 1
    for _ in range(3000):
        value = [value]
    with pytest.raises(SweepSpecError, match="nested 3,00[0-9] levels deep"):
        parse_spec(small_spec(base={"leafChunkTokens": value}))


@pytest.mark.parametrize("bound", [".nan", ".inf", "-.inf"])
def test_a_range_bound_that_is_not_finite_is_one_line(tmp_path: Path, bound: str) -> None:
    text = spec_text(space={"contextThreshold": {"low": "BOUND", "high": 0.9, "step": 0.1}}).replace("BOUND", bound)
    line = refused(tmp_path, text, "space.contextThreshold.low: Input should be a finite number")
    assert "valid list" not in line  # the range's own error, not the list member's


@pytest.mark.parametrize("budget", [2**53, 2**63])
def test_a_token_budget_the_plugin_could_not_hold_is_one_line(tmp_path: Path, budget: int) -> None:
    # the replays' own limit (engine/tokens.MAX_TOKEN_BUDGET), checked before the sweep exists
    refused(tmp_path, spec_text(token_budget=budget), f"token_budget: {budget} is out of range",
            "from 1 to 9,007,199,254,740,991")


def test_skip_past_the_last_conversation_leaves_no_sweep_behind(tmp_path: Path) -> None:
    source = dict(small_spec()["conversations"][0], skip=5000)
    refused(tmp_path, spec_text(conversations=[source]), "conversations:", "skip 5000", "lower skip")


def test_a_conversation_file_that_is_no_transcript_leaves_no_sweep_behind(tmp_path: Path) -> None:
    other = tmp_path / "passwd"
    other.write_text("root:x:0:0:root:/root:/bin/bash\n")
    refused(tmp_path, spec_text(conversations=[{"path": str(other)}]), "not a transcript")


def test_a_huge_grid_is_refused_before_it_is_built(tmp_path: Path) -> None:
    space = {"contextThreshold": {"low": 0.1, "high": 0.9, "step": 1e-300}}
    refused(tmp_path, spec_text(space=space, search={"method": "grid"}), "space: the grid has 8e+299 configurations",
            f"at most {MAX_CONFIGURATIONS:,}")


def test_two_long_ranges_multiply_past_the_cap() -> None:
    space = {"freshTailCount": {"low": 0, "high": 1e8, "step": 1}, "leafChunkTokens": {"low": 1, "high": 1e8, "step": 1}}
    started = time.monotonic()
    with pytest.raises(SweepSpecError, match=r"the grid has 1e\+16 configurations \(freshTailCount: 100,000,001 values"):
        parse_spec(small_spec(space=space))
    assert time.monotonic() - started < 5


def test_a_grid_at_the_cap_still_runs_its_validation() -> None:
    # 100 x 100 = the cap exactly: accepted (counted, not refused)
    space = {"freshTailCount": {"low": 1, "high": 100, "step": 1}, "leafMinFanout": {"low": 2, "high": 101, "step": 1}}
    assert parse_spec(small_spec(space=space)).space


NEEDS_INTEGERS = "an integer parameter needs integer low, high and step"


@pytest.mark.parametrize(("key", "values", "search", "got"), [
    # a grid rounded 4, 4.5, 5, 5.5, 6 into 4, 4, 5, 6, 6 (two configurations run twice)
    ("space.freshTailCount", {"low": 4, "high": 6, "step": 0.5}, {"method": "grid"}, "step 0.5"),
    # random search drew from int(4.5) = 4, below the range; a step of 0.5 became randrange(..., 0): ValueError
    ("space.freshTailCount", {"low": 4.5, "high": 8}, {"method": "random", "trials": 3}, "low 4.5"),
    ("space.freshTailCount", {"low": 4, "high": 8, "step": 0.5}, {"method": "random", "trials": 3}, "step 0.5"),
    ("space.leafChunkTokens", {"low": 1000, "high": 2500.5}, {"method": "optuna", "trials": 3}, "high 2500.5"),
    ("strategy_config.observer_regex.observe_threshold", {"low": 1000, "high": 3000, "step": 500.5}, {"method": "grid"},
     "step 500.5"),
])
def test_an_integer_parameter_with_a_fractional_range_is_one_line(
    tmp_path: Path, key: str, values: dict[str, float], search: dict[str, Any], got: str,
) -> None:
    name = key.rsplit(".", 1)[1]
    if key.startswith("space."):
        text = spec_text(space={name: values}, search=search)
    else:
        text = spec_text(space={"strategy": ["lcm", "observer_regex"]}, search=search,
                         strategy_config={"observer_regex": {name: values}})
    refused(tmp_path, text, f"{key}: {NEEDS_INTEGERS} (got {got})")


def test_an_integer_range_written_with_integral_floats_is_its_integers() -> None:
    from lcm_lab.sweeps.run import random_points
    from lcm_lab.sweeps.spec import grid_points

    grid = parse_spec(small_spec(space={"freshTailCount": {"low": 4.0, "high": 8.0, "step": 2.0}}))
    assert [p.params for p in grid_points(grid)] == [{"freshTailCount": 4}, {"freshTailCount": 6}, {"freshTailCount": 8}]
    drawn = random_points(parse_spec(small_spec(space={"freshTailCount": {"low": 4.0, "high": 8.0, "step": 2.0}},
                                                search={"method": "random", "trials": 20})))
    assert {p.params["freshTailCount"] for p in drawn} <= {4, 6, 8}


def test_a_log_range_with_a_step_is_one_line(tmp_path: Path) -> None:
    # a grid stepped it linearly and random search ignored the step; Optuna refused it with a traceback
    values = {"low": 1000, "high": 8000, "step": 1000, "log": True}
    refused(tmp_path, spec_text(space={"leafChunkTokens": values}, search={"method": "random", "trials": 3}),
            "a log range is drawn log-uniformly and takes no step")


def test_an_integer_log_range_is_drawn_log_uniformly() -> None:
    import random

    from lcm_lab.sweeps.run import _draw
    from lcm_lab.sweeps.spec import Range

    # was uniform: log was ignored for integers. Log-uniform on [1, 1001): P(value < 32) = log(32)/log(1001) = 0.50
    # (a uniform draw: 0.03); 4,000 draws put the share within 0.47-0.53 (3 standard errors of 0.008)
    rng = random.Random(3)
    drawn = [_draw(rng, "int", Range(low=1, high=1000, log=True)) for _ in range(4000)]
    assert all(isinstance(v, int) and 1 <= v <= 1000 for v in drawn)
    assert 0.47 < sum(v < 32 for v in drawn) / len(drawn) < 0.53
    assert max(drawn) > 900  # the top of the range is reached


def test_random_trials_past_the_cap_are_one_line(tmp_path: Path) -> None:
    search = {"method": "random", "trials": 100_000_000}
    refused(tmp_path, spec_text(search=search), "search.trials: 100,000,000 is more configurations than one sweep runs",
            f"at most {MAX_CONFIGURATIONS:,}")


def test_a_key_given_twice_is_one_line_naming_it(tmp_path: Path) -> None:
    text = spec_text() + "token_budget: 7000\n"
    refused(tmp_path, text, "spec.yaml: key 'token_budget' is given twice (lines", "keep one")


def test_a_nested_key_given_twice_is_refused_and_merge_keys_still_override(tmp_path: Path) -> None:
    from lcm_lab.sweeps.spec_yaml import read_spec_yaml

    with pytest.raises(SweepSpecError, match=r"key 'freshTailCount' is given twice \(lines 2 and 3\)"):
        read_spec_yaml("space:\n  freshTailCount: [8]\n  freshTailCount: [16]\n", "s.yaml")
    merged = read_spec_yaml("a: &a {x: 1, y: 2}\nb:\n  <<: *a\n  x: 3\n", "s.yaml")
    assert merged["b"] == {"x": 3, "y": 2}


def test_a_failure_after_the_sweep_row_exists_marks_it_failed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lcm_lab.sweeps import run

    def broken(*_: Any) -> None:
        raise RuntimeError("the machine broke mid-sweep")

    monkeypatch.setattr(run, "grid_points", broken)
    with LabStore(tmp_path / "lab.duckdb") as store:
        with pytest.raises(RuntimeError, match="mid-sweep"):
            sweep(small_spec(), store=store, progress=False)
        assert store.fetch_all("SELECT status FROM sweeps") == [("failed",)]
