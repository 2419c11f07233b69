"""Question turns of stored LCM runs that must compact (an emergency drain). The store keeps a run's
summaries, not its summarizer object: a run the offline summarizer wrote is rebuilt with exactly
that summarizer (its question turns equal the live run's), and for a run a model wrote the report
takes the summarizer of those drains from ``--model`` (``summarizer=``), its calls in the store's
ledger and under the failed-calls rule; without it, one line says what to pass."""

from __future__ import annotations

import dataclasses
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakeserver import FakeOpenAIServer, Reply

import lcm_lab as lab
from lcm_lab.cli import main
from lcm_lab.engine.replay.question import SummarizerNeededError
from lcm_lab.engine.versions import EngineVersion
from lcm_lab.metrics.probe_schedule import PROBE_PROMPT
from lcm_lab.store import LabStore
from lcm_lab.store.replays import replays_df
from lcm_lab.summarizers import OfflineSummarizer, StubV1Summarizer

# At this budget and fresh tail, the question turns after turns 3..11 of the session below drain,
# and their drains write a summary (the replay's own drains are reused only at its next turn).
BUDGET = 800
CONFIG = {"freshTailCount": 4}


def session(path: Path, turns: int = 12) -> Path:
    """A pi session of ``turns`` question/answer pairs, one millisecond apart."""
    lines = [json.dumps({"type": "session", "version": 3, "id": "drains", "timestamp": "2025-01-01T00:00:00Z", "cwd": "/w"})]
    parent = None
    for i in range(turns):
        for role, text in (("user", f"question {i}: " + "tell me about the garden " * 20),
                           ("assistant", f"answer {i}: " + "the roses need water and sun " * 20)):  # fmt: skip
            entry_id = f"e{len(lines)}"
            message = {"role": role, "content": [{"type": "text", "text": text}], "timestamp": len(lines)}
            lines.append(json.dumps({"type": "message", "id": entry_id, "parentId": parent,
                                     "timestamp": "2025-01-01T00:00:00Z", "message": message}))  # fmt: skip
            parent = entry_id
    path.write_text("\n".join(lines) + "\n")
    return path


def dead_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize(("engine", "options"), [("0.15.3", {}), ("1.0", {"max_footer_items": 0})])
def test_a_stored_offline_runs_question_turns_equal_the_live_runs(tmp_path: Path, engine: EngineVersion, options: dict[str, int]) -> None:
    conversation = lab.read_transcript(session(tmp_path / "s.jsonl")).conversations[0].conversation
    config = lab.LcmConfig.from_plugin_config(CONFIG)
    live = lab.replay(conversation, config, lab.get_summarizer("offline", **options), token_budget=BUDGET, engine=engine)
    with LabStore(":memory:") as store:
        loaded = lab.load_replay(store, lab.save_replay(store, live))
    assert isinstance(loaded, lab.Replay) and isinstance(loaded.compaction_summarizer, OfflineSummarizer)
    assert loaded.compaction_summarizer.max_footer_items == options.get("max_footer_items", 4)  # the recorded setting
    without = dataclasses.replace(loaded, compaction_summarizer=None)  # what a stored run was before
    drained = 0
    for k in range(len(live.turns)):
        for budget in (BUDGET, BUDGET // 2):
            asked = live.ask(PROBE_PROMPT, k, budget=budget)
            assert loaded.ask(PROBE_PROMPT, k, budget=budget) == asked  # items, drain and its new summaries
            if asked.created_summaries:
                drained += 1
                with pytest.raises(SummarizerNeededError):
                    without.ask(PROBE_PROMPT, k, budget=budget)
    assert drained >= 10  # the comparison is of drains that wrote summaries, not only of reused ones


def test_only_a_summarizer_the_lab_can_build_exactly_again_is_rebuilt() -> None:
    from lcm_lab.summarizers import rebuild_summarizer
    from lcm_lab.summarizers.offline import OFFLINE_MODEL

    assert rebuild_summarizer("offline", [OFFLINE_MODEL]) is not None
    assert rebuild_summarizer("offline", ["lcm-lab-offline-v2"]) is None  # another version of it wrote the run
    assert rebuild_summarizer("litellm", ["openai/gpt-4o-mini"]) is None  # a model is never assumed
    assert isinstance(rebuild_summarizer("stub-v1"), StubV1Summarizer)


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as running:
        yield running


@pytest.fixture(scope="module")
def model_runs(tmp_path_factory: pytest.TempPathFactory, server: FakeOpenAIServer) -> tuple[Path, dict[str, str]]:
    """A store with an LCM run a model (the fake server) wrote and a truncate run of the same session."""
    root = tmp_path_factory.mktemp("model-runs")
    db, config = root / "lab.duckdb", root / "config.json"
    config.write_text(json.dumps(CONFIG))
    path = str(session(root / "s.jsonl"))
    with pytest.MonkeyPatch.context() as env:
        env.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
        assert main(["replay", path, "--db", str(db), "--config", str(config), "--token-budget", str(BUDGET),
                     "--summarizer", "litellm", "--model", "openai/fake-model", "--api-base", server.base_url]) == 0  # fmt: skip
    assert main(["replay", path, "--db", str(db), "--strategy", "truncate", "--token-budget", str(BUDGET)]) == 0
    with LabStore(db) as store:
        runs = replays_df(store)
    return db, dict(zip(runs["strategy"], runs["run_id"], strict=True))


@pytest.fixture
def report(model_runs: tuple[Path, dict[str, str]], tmp_path: Path, capsys: pytest.CaptureFixture[str],
           monkeypatch: pytest.MonkeyPatch) -> Any:  # fmt: skip
    """``report(*options, status=0)``: ``lcm-lab report`` comparing the model's run with the truncate
    run into tmp_path/r.html; returns (stderr, whether the page exists)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    db, runs = model_runs

    def run(*options: str, status: int = 0) -> tuple[str, bool]:
        page = tmp_path / "r.html"
        argv = ["report", "--db", str(db), "--run", runs["lcm"], "--run", runs["truncate"], "-o", str(page), *options]
        assert main(argv) == status
        return capsys.readouterr().err, page.exists()

    return run


def _ledger_calls(db: Path) -> int:
    with LabStore(db) as store:
        return int(store.fetch_all("SELECT count(*) FROM llm_calls")[0][0])


def test_a_report_of_a_model_run_needs_its_drain_summarizer_named(report: Any, server: FakeOpenAIServer) -> None:
    before = len(server.completion_requests)
    err, written = report(status=2)
    assert len(err.strip().splitlines()) == 1 and not written
    assert "emergency drain" in err and "'litellm' (model openai/fake-model)" in err  # never the offline one instead
    assert "lcm-lab report --model MODEL" in err and "summarizer=" in err
    assert len(server.completion_requests) == before


def test_a_report_of_a_model_run_drains_with_the_named_model_through_the_ledger(
    report: Any, server: FakeOpenAIServer, model_runs: tuple[Path, dict[str, str]]
) -> None:
    db, _ = model_runs
    requests, recorded = len(server.completion_requests), _ledger_calls(db)
    err, written = report("--model", "openai/fake-model", "--api-base", server.base_url, "--cache", "off")
    assert written and err == ""
    made = len(server.completion_requests) - requests
    assert made > 0 and _ledger_calls(db) - recorded == made  # every drain call reached the model and the ledger


def test_a_report_whose_drain_calls_fail_says_so(report: Any, server: FakeOpenAIServer) -> None:
    err, written = report("--model", "openai/fake-model", "--api-base", f"http://127.0.0.1:{dead_port()}/v1",
                          "--cache", "off", "--max-retries", "0", status=2)  # fmt: skip
    assert not written and len(err.strip().splitlines()) == 1
    assert "the report's question turns:" in err and "model calls failed" in err and "no report was made" in err
    server.enqueue(Reply(status=500, text="down"))  # the first drain call fails, the rest answer
    err, written = report("--model", "openai/fake-model", "--api-base", server.base_url, "--cache", "off", "--max-retries", "0")
    assert written and err.startswith("warning: the report's question turns: 1 of ") and err.count("\n") == 1


def test_write_report_takes_the_drain_summarizer_for_a_models_stored_runs(model_runs: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    db, runs = model_runs
    page = tmp_path / "r.html"
    with LabStore(db) as store:
        with pytest.raises(SummarizerNeededError) as refused:
            lab.write_report([runs["lcm"], runs["truncate"]], page, store=store)
        assert isinstance(refused.value, lab.UserError) and not page.exists()
        assert lab.write_report([runs["lcm"], runs["truncate"]], page, store=store, summarizer=lab.get_summarizer("offline")) == page
    assert page.exists()


@pytest.mark.parametrize(("options", "said"), [
    (["--temperature", "0.2"], "--temperature: these options apply only to --model"),
    (["--summarizer", "offline", "--model", "m"], "choose one"),
])  # fmt: skip
def test_drain_summarizer_options_that_do_not_fit_are_one_line(report: Any, options: list[str], said: str) -> None:
    err, written = report(*options, status=2)
    assert said in err and len(err.strip().splitlines()) == 1 and not written
