"""What a model server answers is never taken on trust: summaries that are not shorter than their
input (the plugin keeps a truncation of the source instead) go through the lab's one rule for
failed model calls (``lcm_lab.summarizers.call_checks``): every summary the fallback is an error
and nothing is saved, some is a warning counting them, in ``replay`` (both engines), ``whatif
rewrite`` and sweeps. Servers: the fake OpenAI server (``lcm_lab.testing``) on 127.0.0.1."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fakeserver import FakeOpenAIServer, default_completion
from test_hostile_model_calls import OPTIONS, _sweep_spec, saved_runs, session
from test_hostile_model_results import derived_runs, one_line, saved_run
from test_hostile_output import lab

from lcm_lab.cli import main

LONG = "the summary goes on and on about the garden. " * 400  # ~4,500 tokens: longer than any source here
NOT_SHORTER = "summaries are the truncation fallback because the model's output was not shorter than its input"


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    monkeypatch.delenv("LCM_LAB_HOME", raising=False)


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as running:
        yield running


@pytest.fixture
def config(tmp_path: Path) -> list[str]:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"freshTailCount": 2}))
    return ["--config", str(path)]


def long_first(calls: int) -> Callable[[dict[str, Any]], str]:
    """A responder whose first ``calls`` answers are longer than any input, the rest real summaries."""
    count = itertools.count()
    return lambda body: LONG if next(count) < calls else default_completion(body)


def levels(db: str) -> list[str | None]:
    from lcm_lab.store import open_store
    from lcm_lab.store.replays import load_replay

    store = open_store(db)
    (run_id,) = [row[0] for row in store.fetch_all("SELECT run_id FROM replays")]
    return [s.level for s in load_replay(store, run_id).summaries]


@pytest.mark.parametrize("engine", ["0.15.3", "1.0"])
def test_a_model_whose_every_summary_is_longer_than_its_input_is_an_error(tmp_path: Path, config: list[str], server: FakeOpenAIServer,
                                                                          engine: str, capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    """Before: exit 0, a normal success line, every summary the truncation fallback (doctor: 16 of 16)."""
    server.set_responder(lambda _body: LONG)
    db = str(tmp_path / "lab.duckdb")
    code = main(["replay", "--db", db, *OPTIONS, *config, "--engine", engine, "--api-base", server.base_url, str(session(tmp_path / "s.jsonl"))])
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    calls = len(server.completion_requests)
    assert calls >= 4 and f"{calls} of {calls} model calls gave a summary not shorter than its input ({calls // 2} summaries" in lines[0]
    assert "no summary came from the model, so the replay was not saved" in lines[0] and "--prompts" in lines[0]
    assert "run_" not in out and saved_runs(db) == 0


def test_some_summaries_longer_than_their_input_are_the_failed_calls_warning(tmp_path: Path, config: list[str], server: FakeOpenAIServer,
                                                                             capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    server.set_responder(long_first(2))  # the first summary: its normal and its aggressive call
    db = str(tmp_path / "lab.duckdb")
    code = main(["replay", "--db", db, *OPTIONS, *config, "--api-base", server.base_url, "--json", str(session(tmp_path / "s.jsonl"))])
    out, err = capsys.readouterr()
    (warning,) = [line for line in err.splitlines() if line.startswith("warning:")]
    assert code == 0 and warning == f"warning: calls: 1 {NOT_SHORTER}", err
    assert json.loads(out)["failed_calls"] == 1
    # the engine is the plugin's: that summary is its truncation fallback, the others the model's
    assert levels(db).count("fallback") == 1 and len(levels(db)) > 1


def test_failed_calls_and_longer_summaries_are_one_warning_in_the_library(tmp_path: Path, server: FakeOpenAIServer) -> None:
    from fakeserver import Reply

    import lcm_lab as lab_
    from lcm_lab.summarizers.call_checks import ModelCallsWarning

    server.enqueue(Reply(status=500))  # the first summary's call fails; then the next summary's two calls are long
    server.set_responder(long_first(2))
    summarizer = lab_.get_summarizer("litellm", model="openai/fake-model", api_base=server.base_url, max_retries=0)
    conversation = lab_.read_transcript(session(tmp_path / "s.jsonl")).conversations[0].conversation
    with pytest.warns(ModelCallsWarning) as caught:
        lab_.replay(conversation, lab_.LcmConfig(fresh_tail_count=2), summarizer, token_budget=1200)
    (shown,) = [w.message for w in caught.list if isinstance(w.message, ModelCallsWarning)]
    assert "1 of " in str(shown) and "model calls failed (server_error ×1" in str(shown)
    assert f"their summaries are the truncation fallback; 1 {NOT_SHORTER}" in str(shown) and shown.failed == 2


def test_an_offline_replays_own_fallbacks_are_not_the_models(tmp_path: Path) -> None:
    # the plugin's escalation falls back on the offline summarizer too: behaviour under study, no warning
    import warnings

    import lcm_lab as lab_

    conversation = lab_.read_transcript(session(tmp_path / "s.jsonl")).conversations[0].conversation
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run = lab_.replay(conversation, lab_.LcmConfig(fresh_tail_count=2), lab_.get_summarizer("stub-v1"), token_budget=1200)
    assert run.summaries


def test_a_rewrite_by_a_model_whose_summaries_are_longer_is_an_error(tmp_path: Path, server: FakeOpenAIServer) -> None:
    db, run_id = saved_run(tmp_path)
    server.set_responder(lambda _body: LONG)
    result = lab("whatif", "rewrite", "--db", db, run_id, "--depth", "0", "--model", "openai/fake-model", "--max-retries", "0",
                 "--api-base", server.base_url, cwd=tmp_path)  # fmt: skip
    line = one_line(result)
    assert line.startswith("lcm-lab whatif: rewrite of ") and "model calls gave a summary not shorter than its input" in line, line
    assert "no summary came from the model, so no derived run was saved" in line and derived_runs(db) == 0


def test_a_sweep_on_a_model_whose_summaries_are_longer_fails_its_runs(tmp_path: Path, server: FakeOpenAIServer,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    server.set_responder(lambda _body: LONG)
    code = main(["sweep", "--db", str(tmp_path / "lab.duckdb"), "--no-progress", _sweep_spec(tmp_path, server.base_url)])
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "all 3 runs failed" in lines[0], err
    assert "gave a summary not shorter than its input" in lines[0] and "recommended" not in out


def test_a_sweep_with_some_summaries_longer_than_their_input_warns_with_the_count(tmp_path: Path, server: FakeOpenAIServer,
                                                                                  capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    server.set_responder(long_first(2))  # the first run's first summary
    code = main(["sweep", "--db", str(tmp_path / "lab.duckdb"), "--no-progress", "--json", _sweep_spec(tmp_path, server.base_url)])
    out, err = capsys.readouterr()
    result = json.loads(out)
    assert code == 0 and result["runs_ok"] == 3 and result["failed_model_calls"] == 1, err
    (warning,) = [line for line in err.splitlines() if line.startswith("warning:")]
    assert "1 summaries in finished runs are the truncation fallback because the model gave none or one not shorter" in warning


# -- the size of an answer -------------------------------------------------------------------------

HUGE = "HUGE " * 40_000  # 200,000 bytes for a call of a few hundred tokens (the cap: 64 KiB here)


def ledger_texts(db: str) -> list[int]:
    from lcm_lab.store import open_store

    return [int(row[0] or 0) for row in open_store(db).fetch_all("SELECT length(response_text) FROM llm_calls")]


def test_an_answer_bigger_than_its_request_allows_is_a_failed_call_not_stored(tmp_path: Path, config: list[str], server: FakeOpenAIServer,
                                                                                capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    """Before: a 10 MB answer to every call was kept whole: a 20-turn replay peaked at 1.7 GB and left a 606 MB store."""
    from fakeserver import Reply

    server.enqueue(Reply(text=HUGE))  # the first call; the rest are answered as usual
    db = str(tmp_path / "lab.duckdb")
    code = main(["replay", "--db", db, *OPTIONS, *config, "--api-base", server.base_url, "--json", str(session(tmp_path / "s.jsonl"))])
    out, err = capsys.readouterr()
    (warning,) = [line for line in err.splitlines() if line.startswith("warning:")]
    assert code == 0 and json.loads(out)["failed_calls"] == 1, err
    assert "1 of " in warning and "model calls failed (response_too_large ×1; first error: the response was 200,000 bytes, " in warning
    over, cap, max_tokens = re.search(r"bytes, ([\d,]+) bytes over the cap of ([\d,]+) \(32 bytes per token of max_tokens (\d+)", warning).groups()  # type: ignore[union-attr]
    assert int(cap.replace(",", "")) == max(65_536, 32 * int(max_tokens)) == 200_000 - int(over.replace(",", ""))
    assert "truncation fallback" in warning
    assert max(ledger_texts(db)) < 10_000 and len(ledger_texts(db)) == len(server.completion_requests)
    server.set_responder(lambda _body: HUGE)  # every call: nothing came from the model
    code = main(["replay", "--db", db, *OPTIONS, *config, "--api-base", server.base_url, str(session(tmp_path / "s.jsonl"))])
    out, err = capsys.readouterr()
    assert code == 2 and "model calls failed (response_too_large ×" in err and "no summary came from the model" in err, err
    assert saved_runs(db) == 1 and max(ledger_texts(db)) < 10_000


# -- answers from the ledger -----------------------------------------------------------------------


def test_a_replay_and_a_rewrite_say_how_many_calls_the_ledger_answered(tmp_path: Path, config: list[str], server: FakeOpenAIServer,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    """The ledger's key leaves out the server: before, a replay against another --api-base (whose
    model did not exist) printed a plain success line from the first server's answers."""
    from test_hostile_model_calls import dead_port

    cached = [option for option in OPTIONS if option not in ("--cache", "off")]
    db, path = str(tmp_path / "lab.duckdb"), str(session(tmp_path / "s.jsonl"))
    assert main(["replay", "--db", db, *cached, *config, "--api-base", server.base_url, path]) == 0
    out, _ = capsys.readouterr()
    calls = len(server.completion_requests)
    assert f" {calls} summarizer calls, " in out and "served from the ledger" not in out
    elsewhere = f"http://127.0.0.1:{dead_port()}/v1"
    assert main(["replay", "--db", db, *cached, *config, "--api-base", elsewhere, path]) == 0
    out, _ = capsys.readouterr()
    assert f" {calls} summarizer calls ({calls} served from the ledger, 0 sent to a model), " in out, out
    assert main(["replay", "--db", db, *cached, *config, "--api-base", elsewhere, "--json", "--no-save", path]) == 0
    assert json.loads(capsys.readouterr()[0])["cache_hits"] == calls
    run_id = out.split()[0]
    assert main(["whatif", "rewrite", "--db", db, run_id, "--depth", "0", "--model", "openai/fake-model", "--api-base", server.base_url]) == 0
    first, _ = capsys.readouterr()
    assert main(["whatif", "rewrite", "--db", db, run_id, "--depth", "0", "--model", "openai/fake-model", "--api-base", elsewhere,
                 "--label", "again", "--json"]) == 0  # fmt: skip
    again = json.loads(capsys.readouterr()[0])
    rewritten = int(first.split(" summarizer calls")[0].rsplit(" ", 1)[1])
    assert again["cache_hits"] == again["summarizer_calls"] == rewritten > 0


# -- usage a provider or a transcript reports ------------------------------------------------------


def bad_usage_reply(text: str = "The roses need water; the garden was discussed.") -> Any:
    from fakeserver import Reply

    body = {"id": "x", "object": "chat.completion", "created": 1, "model": "fake-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": -5000, "completion_tokens": 1e12, "total_tokens": -1}}  # fmt: skip
    return Reply(raw_body=json.dumps(body).encode())


def test_usage_a_server_reports_that_is_no_token_count_is_unknown_with_a_warning(tmp_path: Path, config: list[str],
                                                                                 server: FakeOpenAIServer,
                                                                                 capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    """Before: tokens_in -5000 and tokens_out 1e12 stored, totals negative; an unpriced model's total read $0.0000."""
    from lcm_lab.store import open_store

    server.enqueue(*[bad_usage_reply()] * 200)
    db = str(tmp_path / "lab.duckdb")
    code = main(["replay", "--db", db, *OPTIONS, *config, "--api-base", server.base_url, str(session(tmp_path / "s.jsonl"))])
    _out, err = capsys.readouterr()
    calls = len(server.completion_requests)
    (warning,) = [line for line in err.splitlines() if line.startswith("warning:")]
    assert code == 0 and calls >= 3, err
    assert warning == (f"warning: calls: {calls} model calls reported usage that is not a whole number of tokens from 0 to 100,000,000 "
                       "(first: prompt_tokens -5000, completion_tokens 1000000000000): recorded as unknown")  # fmt: skip
    rows = open_store(db).fetch_all("SELECT input_tokens, output_tokens, cost_usd FROM llm_calls")
    assert len(rows) == calls and all(row == (None, None, None) for row in rows)
    assert main(["ledger", "--db", db]) == 0
    total = capsys.readouterr()[0].splitlines()[-1]
    assert total.startswith(f"{calls} calls (0 cache hits, 0 errors): 0 tokens in, 0 out, cost - (no call priced), "), total


def usage_session(path: Path, bad: dict[int, dict[str, Any]]) -> Path:
    """The priced pi session, the usage of its ``n``-th assistant message changed by ``bad[n]``."""
    lines = session(path, priced=True).read_text().splitlines()
    out, n = [], 0
    for line in lines:
        entry = json.loads(line)
        usage = (entry.get("message") or {}).get("usage")
        if isinstance(usage, dict):
            usage.update(bad.get(n, {}))
            n += 1
        out.append(json.dumps(entry))
    path.write_text("\n".join(out) + "\n")
    return path


def test_recorded_usage_that_is_no_token_count_is_skipped_and_counted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: cacheRead=1e15 priced at $500M, a negative count gave "cache-read error -1780.5%", "lots" was dropped unsaid."""
    hostile = {3: {"input": -5000}, 5: {"cacheRead": 10**15}, 7: {"input": "lots"}, 9: {"cost": {"total": "NaN"}}}
    path = usage_session(tmp_path / "usage.jsonl", hostile)
    assert main(["cost", str(path), "--strategy", "recorded", "--json"]) == 0
    out, err = capsys.readouterr()
    (warning,) = [line for line in err.splitlines() if line.startswith("warning:")]
    assert warning == ("warning: usage.jsonl: 4 of 12 calls record usage that is not a whole number of tokens from 0 to 100,000,000 "
                       "or a cost that is not a finite number ≥ 0 (first: input -5000); they were skipped")  # fmt: skip
    record = json.loads(out)
    assert record["calls_without_usage"] == 4 and 0 <= record["recorded_cost_usd_all_calls"] < 1
    every = usage_session(tmp_path / "every.jsonl", {n: {"output": -1} for n in range(12)})
    assert main(["cost", str(every), "--strategy", "recorded"]) == 2
    lines = [line for line in capsys.readouterr()[1].splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].endswith("12 of 12 calls record usage that is not a whole number of tokens from 0 to "
                                                 "100,000,000 or a cost that is not a finite number ≥ 0 (first: output -1); they "
                                                 "were skipped, so nothing is left to price")  # fmt: skip


def test_a_rewrite_counts_usage_that_is_no_token_count_too(tmp_path: Path, server: FakeOpenAIServer) -> None:
    from test_hostile_model_results import model_summarizer

    from lcm_lab import whatif
    from lcm_lab.store import open_store
    from lcm_lab.summarizers.call_checks import ModelCallsWarning

    db, run_id = saved_run(tmp_path)
    store = open_store(db)
    server.enqueue(bad_usage_reply())  # the first call's usage; the rest are real
    with pytest.warns(ModelCallsWarning) as caught:
        result = whatif.rewrite(run_id, depth=0, summarizer=model_summarizer(server.base_url, store), store=store)  # type: ignore[arg-type]
    (warning,) = result.warnings
    assert warning.startswith(f"rewrite of {run_id}: 1 model calls reported usage that is not a whole number of tokens"), warning
    assert [str(w.message) for w in caught.list if issubclass(w.category, ModelCallsWarning)] == [warning]
