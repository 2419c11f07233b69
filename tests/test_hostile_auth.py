"""A provider refusing the credentials (401 on every call, a fake server on 127.0.0.1) is an error,
never a quiet success: the engine drops those compaction passes, so a replay says so in one line
naming the credential to fix, exits 2 and saves nothing, and a sweep's units fail."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from fakeserver import FakeOpenAIServer, Reply
from test_hostile_model_calls import saved_runs, session
from test_hostile_output import lab
from test_sweep import small_spec


def test_a_replay_whose_calls_are_refused_is_an_error_naming_the_key(tmp_path: Path) -> None:
    session(tmp_path / "sec.jsonl")
    (tmp_path / "config.json").write_text(json.dumps({"freshTailCount": 2}))
    with FakeOpenAIServer() as server:
        server.enqueue(*[Reply(status=401)] * 400)
        result = lab("replay", "--db", "lab.duckdb", "--config", "config.json", "--token-budget", "1200", "--summarizer", "litellm",
                     "--model", "openai/zq", "--max-retries", "0", "--api-base", server.base_url, "sec.jsonl", cwd=tmp_path)  # fmt: skip
        assert server.completion_requests  # the calls were made, and refused
    lines = result.stderr.decode().splitlines()
    assert result.returncode == 2 and len(lines) == 1, result.stderr.decode()
    assert "rejected the credentials" in lines[0] and "OPENAI_API_KEY" in lines[0] and "not saved" in lines[0]
    assert saved_runs(str(tmp_path / "lab.duckdb")) == 0


def test_a_sweep_whose_calls_are_refused_fails_its_units(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        server.enqueue(*[Reply(status=401)] * 2000)
        spec = small_spec(summarizer={"name": "litellm", "model": "openai/zq", "api_base": server.base_url, "max_retries": 0},
                          executor="processes", workers=2)  # fmt: skip
        (tmp_path / "sweep.yaml").write_text(yaml.safe_dump(spec))
        result = lab("sweep", "--db", "sw.duckdb", "--no-progress", "sweep.yaml", cwd=tmp_path)
    out, err = result.stdout.decode(), result.stderr.decode()
    assert result.returncode == 2 and "Traceback" not in err, err[-3000:]
    assert "all 3 runs failed" in err and "rejected the credentials" in err and "OPENAI_API_KEY" in err, err[-3000:]
    assert "recommended" not in out and "3 runs ok" not in out + err


def test_a_live_expand_answer_is_redacted_like_the_ledger_copy(tmp_path: Path) -> None:
    import gzip
    import shutil

    from conftest import DATASETS

    from lcm_lab.recall_tools.answer import ModelAnswerer

    with gzip.open(DATASETS / "lcm-db" / "lcm-v0.15.3.db.gz") as src, (tmp_path / "lcm.db").open("wb") as dst:
        shutil.copyfileobj(src, dst)
    assert lab("load", "--db", "lab.duckdb", "lcm.db", cwd=tmp_path).returncode == 0
    key = "zqEXPANDkey1234567"
    with FakeOpenAIServer() as server:  # a server that echoes the credentials it was sent
        server.set_responder(lambda body: f"the header was Authorization: Bearer {key} (key {key})")
        argv = ["expand", "--db", "lab.duckdb", "--prompt", "what happened?", "--query", "the", "--model", "openai/zq",
                "--api-base", server.base_url]  # fmt: skip
        live, cached = lab(*argv, cwd=tmp_path, OPENAI_API_KEY=key), lab(*argv, cwd=tmp_path, OPENAI_API_KEY=key)
        assert live.returncode == cached.returncode == 0, live.stderr
        assert len(server.completion_requests) == 1  # the second answer came from the ledger
        for result in (live, cached):
            assert key.encode() not in result.stdout + result.stderr and b"Bearer [redacted]" in result.stdout
            assert b"(key [redacted])" in result.stdout
        answer = ModelAnswerer("openai/zq", api_base=server.base_url, api_key=key).answer("q?", [], 200)  # the library too
    assert key not in answer.text and "(key [redacted])" in answer.text


def test_the_spend_guard_reached_is_one_line_and_saves_nothing(tmp_path: Path) -> None:
    # was a 60-line SummarizerError traceback, exit 1
    session(tmp_path / "s.jsonl")
    (tmp_path / "config.json").write_text(json.dumps({"freshTailCount": 2}))
    with FakeOpenAIServer() as server:
        result = lab("replay", "--db", "lab.duckdb", "--config", "config.json", "--token-budget", "1200", "--summarizer", "litellm",
                     "--model", "openai/zq", "--api-base", server.base_url, "--cache", "off", "--max-calls-per-window", "1",
                     "s.jsonl", cwd=tmp_path)  # fmt: skip
        assert len(server.completion_requests) == 1  # the guard let one call through, then stopped the run
    lines = result.stderr.decode().splitlines()
    assert result.returncode == 2 and len(lines) == 1, result.stderr.decode()
    assert lines[0].startswith("lcm-lab replay: spend guard:") and "max_calls_per_window=1 reached" in lines[0]
    assert saved_runs(str(tmp_path / "lab.duckdb")) == 0
