"""A store holding runs of other strategies (truncate, the regex observer) beside an LCM replay:
every reader of stored runs searches what such a run has and refuses, in one line, what it lacks
(a summary DAG, a stored context), where each assumed an LCM replay and ended in AttributeError."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES

import lcm_lab as lab
from lcm_lab.cli import main
from lcm_lab.store import LabStore
from lcm_lab.strategies.base import NotAnLcmRunError
from lcm_lab.summarizers import OfflineSummarizer

TRANSCRIPT = FIXTURES / "reference-runs" / "inputs" / "synth-1.jsonl.gz"


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A lab store with an LCM, a truncate and an observer_regex run of one session, saved by ``replay``."""
    from lcm_lab.store.replays import replays_df

    db = tmp_path_factory.mktemp("strategy-runs") / "lab.duckdb"
    for strategy in ("lcm", "truncate", "observer_regex"):
        assert main(["replay", str(TRANSCRIPT), "--db", str(db), "--strategy", strategy, "--token-budget", "2000"]) == 0
    with LabStore(db) as store:
        runs = dict(zip(replays_df(store)["strategy"], replays_df(store)["run_id"], strict=True))
    assert sorted(runs) == ["lcm", "observer_regex", "truncate"]
    return db, runs


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Any:
    """``cli(argv, status=0)``: run ``lcm-lab argv``, check its exit status, return (stdout, stderr)."""

    def run(argv: list[str], status: int = 0) -> tuple[str, str]:
        assert main(argv) == status
        captured = capsys.readouterr()
        return captured.out, captured.err

    return run


def test_grep_finds_a_strategy_runs_messages(stored: tuple[Path, dict[str, str]], cli: Any) -> None:
    db, runs = stored
    out, _ = cli(["grep", "(?i)the", "--db", str(db), "--run", runs["truncate"], "--json"])
    hits = [json.loads(line) for line in out.splitlines()]
    assert hits and {h["type"] for h in hits} == {"message"} and {h["target"] for h in hits} == {f"run:{runs['truncate']}"}
    out, _ = cli(["grep", "(?i)the", "--db", str(db), "--json", "--limit", "200"])
    everywhere = [json.loads(line) for line in out.splitlines()]
    assert {f"run:{r}" for r in runs.values()} <= {h["target"] for h in everywhere}  # every run of the store is searched
    assert any(h["type"] == "summary" for h in everywhere)  # the LCM run's summaries too


def test_describe_and_expand_of_a_strategy_run_say_it_keeps_no_summaries(stored: tuple[Path, dict[str, str]], cli: Any) -> None:
    db, runs = stored
    with LabStore(db) as store:
        summary = lab.load_replay(store, runs["lcm"]).summaries[0].summary_id
    out, _ = cli(["describe", summary, "--db", str(db), "--json"])
    assert json.loads(out)["id"] == summary  # the whole store: found in the LCM run
    _, err = cli(["describe", summary, "--db", str(db), "--run", runs["truncate"]], status=2)
    assert err.count("\n") == 1 and f"run:{runs['truncate']} was made by the truncate strategy, which keeps no summaries" in err
    _, err = cli(["expand", "--prompt", "what?", "--summary-id", summary, "--db", str(db), "--run", runs["observer_regex"]], status=2)
    assert err.count("\n") == 1 and "observer_regex strategy, which keeps no summaries" in err
    out, _ = cli(["expand", "--prompt", "what?", "--query", "the", "--db", str(db), "--run", runs["truncate"], "--json"])
    answer = json.loads(out)
    assert answer["expandedSummaryCount"] == 0 and "truncate strategy" in answer["diagnostics"]["note"]


def test_export_of_a_strategy_run_is_one_line_and_writes_nothing(stored: tuple[Path, dict[str, str]], tmp_path: Path, cli: Any) -> None:
    db, runs = stored
    target = tmp_path / "out.db"
    _, err = cli(["export", runs["truncate"], "-o", str(target), "--db", str(db)], status=2)
    assert err.count("\n") == 1 and "truncate strategy" in err and "an lcm.db export needs an LCM replay" in err
    assert list(tmp_path.iterdir()) == []
    out, _ = cli(["export", runs["lcm"], "-o", str(target), "--db", str(db), "--json"])
    assert json.loads(out)["messages"] > 0 and target.exists()


def test_report_drift_and_whatif_over_a_store_with_strategy_runs(stored: tuple[Path, dict[str, str]], tmp_path: Path, cli: Any) -> None:
    db, runs = stored
    out, _ = cli(["report", "--db", str(db), "-o", str(tmp_path / "r.html"), "--json", "--run", runs["truncate"],
                  "--run", runs["observer_regex"]])  # fmt: skip
    assert Path(json.loads(out)["path"]).exists()
    out, _ = cli(["drift", "--previous", runs["truncate"], "--run", runs["observer_regex"], "--db", str(db), "--json"],
                 status=1)  # an alarm: the regex observer keeps fewer facts at this budget
    assert {json.loads(line)["metric"] for line in out.splitlines()} >= {"fact_retention"}
    _, err = cli(["whatif", "reassemble", runs["truncate"], "--db", str(db)], status=2)
    assert "a what-if edit needs an LCM replay" in err


def test_library_views_of_a_loaded_strategy_run(stored: tuple[Path, dict[str, str]]) -> None:
    db, runs = stored
    with LabStore(db) as store:
        truncate = lab.load_replay(store, runs["truncate"])
        lcm = lab.load_replay(store, runs["lcm"])
    assert lab.recall(truncate).grep("(?i)the").matches  # an unsaved copy is indexed the same way
    assert lab.viz.plot_context_at(truncate, 1) is not None  # what it sends is its own
    refused: list[Any] = [
        lambda: lab.viz.plot_budget_timeline(truncate),
        lambda: lab.viz.plot_budget_comparison([lcm, truncate]),
        lambda: lab.viz.replay_stats(truncate),
        lambda: lab.viz.context_info(truncate, 1, source="stored"),
        lambda: lab.whatif.reassemble(truncate),
        lambda: lab.export_lcm_db(truncate, db.parent / "never.db"),
    ]
    for view in refused:
        with pytest.raises(NotAnLcmRunError, match="truncate strategy, which keeps no summary DAG"):
            view()
    assert isinstance(NotAnLcmRunError("x"), lab.UserError)
    assert lab.viz.replay_stats(lab.run_strategy(lcm.conversation, "lcm", lab.get_summarizer("offline"), 2000)).turns == len(lcm.turns)


def test_a_report_comparing_a_stored_offline_lcm_run_drains_its_questions_with_the_offline_summarizer(
    stored: tuple[Path, dict[str, str]], cli: Any, tmp_path: Path
) -> None:
    # the comparison asks each run questions and some question turns of the LCM run must compact: the
    # store rebuilds the offline summarizer that wrote it (before: a ValueError traceback, exit 1, then
    # a one-line error a CLI user could do nothing about). Equal to the live run's question turns, and
    # a model's run: tests/test_stored_question_drains.py
    db, runs = stored
    out, err = cli(["report", "--db", str(db), "--run", runs["lcm"], "--run", runs["truncate"], "-o", str(tmp_path / "r.html"),
                    "--json"])  # fmt: skip
    assert err == "" and Path(json.loads(out)["path"]).exists()
    with LabStore(db) as store:
        loaded = lab.load_replay(store, runs["lcm"])
    assert isinstance(loaded, lab.Replay) and isinstance(loaded.compaction_summarizer, OfflineSummarizer)
