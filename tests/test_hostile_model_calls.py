"""Failed model calls are never a quiet success (issue 22 item 8): a replay whose every call fails
(a dead port on 127.0.0.1, an ``ftp://`` base, URL credentials the server refuses) says so in one
line, saves nothing and exits 2; a replay with some failed calls prints a warning with the counts."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakeserver import FakeOpenAIServer, Reply

from lcm_lab.cli import main

# compaction at this budget (with a fresh tail of 2): a handful of leaf calls
OPTIONS = ["--summarizer", "litellm", "--model", "openai/fake-model", "--max-retries", "0", "--token-budget", "1200",
           "--cache", "off", "--summary-timeout-ms", "5000"]  # fmt: skip


def session(path: Path, turns: int = 12, *, priced: bool = False) -> Path:
    """A pi session of ``turns`` question/answer pairs; ``priced``: a minute apart, the assistant
    messages recording their model and provider usage (``cost`` prices it)."""
    session_id = "priced" if priced else "calls"
    lines = [json.dumps({"type": "session", "version": 3, "id": session_id, "timestamp": "2025-01-01T00:00:00Z", "cwd": "/w"})]
    parent = None
    for i in range(turns):
        for role, text in (("user", f"question {i}: " + "tell me about the garden " * 20),
                           ("assistant", f"answer {i}: " + "the roses need water and sun " * 20)):  # fmt: skip
            entry_id = f"e{len(lines)}"
            timestamp = 1735689600000 + 60_000 * len(lines) if priced else len(lines)
            message: dict[str, object] = {"role": role, "content": [{"type": "text", "text": text}], "timestamp": timestamp}
            if priced and role == "assistant":
                message.update(provider="openai", model="gpt-4o-mini",
                               usage={"input": 1000 + 300 * i, "output": 120, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1120 + 300 * i})  # fmt: skip
            lines.append(json.dumps({"type": "message", "id": entry_id, "parentId": parent, "timestamp": "2025-01-01T00:00:00Z", "message": message}))
            parent = entry_id
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")


@pytest.fixture
def config(tmp_path: Path) -> list[str]:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"freshTailCount": 2}))
    return ["--config", str(path)]


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as running:
        yield running


def dead_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # closed on exit: nothing listens there


def saved_runs(db: str) -> int:
    from lcm_lab.store import open_store

    return int(open_store(db).fetch_all("SELECT count(*) FROM replays")[0][0])


def test_the_replay_makes_model_calls_when_the_server_answers(tmp_path: Path, config: list[str], server: FakeOpenAIServer,
                                                              capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    db = str(tmp_path / "lab.duckdb")
    code = main(["replay", "--db", db, *OPTIONS, *config, "--api-base", server.base_url, "--json", str(session(tmp_path / "s.jsonl"))])
    out, err = capsys.readouterr()
    summary = json.loads(out)
    # the lab's own warnings start the line (litellm at its lowest supported version logs pydantic
    # serializer warnings of its own on stderr, which say nothing about failed calls)
    assert code == 0 and summary["summarizer_calls"] >= 3 and summary["failed_calls"] == 0
    assert not [line for line in err.splitlines() if line.startswith("warning:")], err
    assert saved_runs(db) == 1


@pytest.mark.parametrize("base", ["dead", "credentials"])
def test_every_call_failing_is_an_error_and_nothing_is_saved(tmp_path: Path, config: list[str], server: FakeOpenAIServer, base: str,
                                                             capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    if base == "credentials":  # the server refuses every request (as a proxy refusing URL credentials would)
        server.set_responder(lambda _body: "unused")
        server.enqueue(*[Reply(status=500)] * 200)
    url = {"dead": f"http://127.0.0.1:{dead_port()}/v1",
           "credentials": server.base_url.replace("http://", "http://user:pass@")}[base]  # fmt: skip
    db = str(tmp_path / "lab.duckdb")
    main(["load", "--db", db, str(session(tmp_path / "s.jsonl"))])
    capsys.readouterr()
    code = main(["replay", "--db", db, *OPTIONS, *config, "--api-base", url, str(tmp_path / "s.jsonl")])
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert "model calls failed" in lines[0] and "no summary came from the model" in lines[0]
    calls = int(lines[0].split(" of ", 1)[1].split()[0])
    assert calls >= 3 and f"{calls} of {calls} model calls failed" in lines[0]
    assert "run_" not in out and saved_runs(db) == 0
    assert "sk-test-not-a-real-key" not in err and "user:pass" not in err


def test_an_ftp_base_is_refused_before_any_call(tmp_path: Path, config: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    # not a model endpoint at all: the option is refused when parsed, before anything is replayed or saved
    db = str(tmp_path / "lab.duckdb")
    main(["load", "--db", db, str(session(tmp_path / "s.jsonl"))])
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main(["replay", "--db", db, *OPTIONS, *config, "--api-base", f"ftp://127.0.0.1:{dead_port()}/v1", str(tmp_path / "s.jsonl")])
    _, err = capsys.readouterr()
    assert exit_.value.code == 2 and "not an http(s) URL" in err and "Traceback" not in err
    assert saved_runs(db) == 0


def test_some_failed_calls_are_a_warning_with_counts(tmp_path: Path, config: list[str], server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.enqueue(Reply(status=500), Reply(status=503))  # the first two calls fail, the rest succeed
    db = str(tmp_path / "lab.duckdb")
    code = main(["replay", "--db", db, *OPTIONS, *config, "--api-base", server.base_url, "--json", str(session(tmp_path / "s.jsonl"))])
    out, err = capsys.readouterr()
    summary = json.loads(out)
    assert code == 0 and summary["failed_calls"] == 2 and saved_runs(db) == 1
    (warning,) = [line for line in err.splitlines() if line.startswith("warning:")]
    assert f"2 of {summary['summarizer_calls']} model calls failed (server_error ×2" in warning
    assert "truncation fallback" in warning


def test_a_strategy_that_falls_back_says_so_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    strategy_config = tmp_path / "clawvault.json"
    strategy_config.write_text(json.dumps({"on_model_failure": "fallback"}))
    db = str(tmp_path / "lab.duckdb")
    code = main(["replay", "--db", db, *OPTIONS, "--strategy", "clawvault", "--strategy-config", str(strategy_config),
                 "--api-base", f"http://127.0.0.1:{dead_port()}/v1", str(session(tmp_path / "s.jsonl"))])  # fmt: skip
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "model calls failed" in lines[0] and "run_" not in out
    assert saved_runs(db) == 0


def _sweep_spec(tmp_path: Path, api_base: str) -> str:
    import yaml
    from test_sweep import small_spec

    spec = small_spec(summarizer={"name": "litellm", "model": "openai/fake-model", "api_base": api_base, "max_retries": 0},
                      space={"freshTailCount": [8, 32]})  # fmt: skip
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(spec))
    return str(path)


def test_a_sweep_whose_model_never_answers_is_an_error_not_a_recommendation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: 3 runs "ok" on the truncation fallback, a recommended setting and exit 0."""
    db = str(tmp_path / "lab.duckdb")
    code = main(["sweep", "--db", db, "--no-progress", _sweep_spec(tmp_path, f"http://127.0.0.1:{dead_port()}/v1")])
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert "all 3 runs failed" in lines[0] and "no summary came from the model" in lines[0]
    assert "recommended" not in out


def test_a_sweep_with_some_failed_calls_warns_with_the_count(tmp_path: Path, server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.enqueue(Reply(status=500), Reply(status=503))  # two calls fail, the rest succeed
    db = str(tmp_path / "lab.duckdb")
    code = main(["sweep", "--db", db, "--no-progress", "--json", _sweep_spec(tmp_path, server.base_url)])
    out, err = capsys.readouterr()
    result = json.loads(out)
    # the two failed calls, and a summary of the fake model's not shorter than its 53-token input
    # (a chunk the failed calls' fallbacks left): the plugin's truncation fallback too
    assert code == 0 and result["runs_ok"] == 3 and result["failed_model_calls"] == 3, err
    (warning,) = [line for line in err.splitlines() if line.startswith("warning:")]
    assert "3 summaries in finished runs are the truncation fallback" in warning


def test_a_sweep_that_failed_on_a_dead_server_is_retried_once_it_answers(tmp_path: Path, server: FakeOpenAIServer,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    db, spec = str(tmp_path / "lab.duckdb"), _sweep_spec(tmp_path, server.base_url)
    server.enqueue(*[Reply(status=503)] * 2000)  # the server is down for the whole first sweep
    assert main(["sweep", "--db", db, "--no-progress", spec]) == 2
    assert server.completion_requests
    server.clear()  # back up
    capsys.readouterr()
    assert main(["sweep", "--db", db, "--no-progress", "--json", spec]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["failed_before"] == 3 and not server.completion_requests
    assert "3 runs that failed in an earlier session were not run again; --retry-failed runs them" in err
    assert main(["sweep", "--db", db, "--no-progress", "--retry-failed", spec]) == 0
    out, err = capsys.readouterr()
    lab_warnings = [line for line in err.splitlines() if line.startswith("warning:")]  # (not litellm's own log noise)
    assert "3 runs ok, 0 failed" in out and "recommended" in out and not lab_warnings, err
    assert server.completion_requests


def _clawvault_sweep_spec(tmp_path: Path, api_base: str) -> str:
    """A sweep of clawvault (falling back to its regex observer when the model fails) on a small
    session, at a budget where the plugin defaults never compact: clawvault makes every model call."""
    import yaml
    from test_sweep import small_spec

    spec = small_spec(summarizer={"name": "litellm", "model": "openai/fake-model", "api_base": api_base, "max_retries": 0},
                      conversations=[{"path": str(session(tmp_path / "s.jsonl"))}], token_budget=100_000, base={},
                      space={"strategy": ["clawvault"]},
                      strategy_config={"clawvault": {"on_model_failure": "fallback", "observe_threshold": [400, 800]}})  # fmt: skip
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(spec))
    return str(path)


def observations(body: dict[str, object]) -> str:
    """An observer's reply: one observation line (clawvault's format) per message it was shown."""
    return "\n".join(f"- [fact|c=0.80|i=0.50] noted line {n}" for n in range(3))


def test_a_sweep_of_a_model_strategy_whose_model_never_answers_fails_those_runs(tmp_path: Path,
                                                                                capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    """Before: the clawvault runs were "ok" on the regex fallback, a recommended configuration and exit 0."""
    from lcm_lab.store import open_store
    from lcm_lab.sweeps import sweep_df

    db = str(tmp_path / "lab.duckdb")
    code = main(["sweep", "--db", db, "--no-progress", _clawvault_sweep_spec(tmp_path, f"http://127.0.0.1:{dead_port()}/v1")])
    _out, err = capsys.readouterr()
    (warning,) = [line for line in err.splitlines() if line.startswith("warning:")]
    assert code == 1 and "2 runs failed; the first: ModelCallsFailedError: the run: " in warning, err
    frame = sweep_df(next(iter(open_store(db).fetch_all("SELECT sweep_id FROM sweeps")))[0], open_store(db))
    failed = frame[frame.status != "ok"]
    assert sorted(failed.strategy) == ["clawvault", "clawvault"] and (frame[frame.status == "ok"].strategy == "lcm").all()
    for error in failed.error:  # the LCM sweep's words: every call failed, nothing came from the model
        calls = int(error.split(" of ", 1)[0].rsplit(" ", 1)[1])
        assert calls >= 2 and f"{calls} of {calls} model calls failed" in error
        assert "no summary came from the model, so it was not scored" in error


def test_a_sweep_of_a_model_strategy_with_some_failed_calls_warns_with_the_count(tmp_path: Path, server: FakeOpenAIServer,
                                                                                 capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    server.set_responder(observations)
    server.enqueue(Reply(status=500))  # clawvault's first compression call fails, the rest are answered
    db = str(tmp_path / "lab.duckdb")
    code = main(["sweep", "--db", db, "--no-progress", "--json", _clawvault_sweep_spec(tmp_path, server.base_url)])
    out, err = capsys.readouterr()
    result = json.loads(out)
    assert code == 0 and result["runs_ok"] == 3 and result["failed_model_calls"] == 1, err
    assert len(server.completion_requests) >= 4  # every request was clawvault's (the defaults never compact here)
    (warning,) = [line for line in err.splitlines() if line.startswith("warning:")]
    assert "1 summaries in finished runs are the truncation fallback" in warning
