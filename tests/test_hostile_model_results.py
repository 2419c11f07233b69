"""The lab's one rule for failed model calls (``lcm_lab.summarizers.call_checks``: every call failed
is an error and nothing is saved; some failed is a warning with the counts) holds for every result
that rests on a model, not only ``replay``: ``whatif rewrite --model``, ``compare-versions``,
``cost --strategy lcm`` and their library functions; ``expand --model`` on a dead server is one
line. A command that saves nothing (``replay --no-save``, ``compare-versions``, ``cost``) creates
no store unless one is named (``--db``, ``$LCM_LAB_HOME``). Servers: a dead port on 127.0.0.1 and
the fake OpenAI server (``lcm_lab.testing``); never the internet."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakeserver import FakeOpenAIServer, Reply
from test_hostile_model_calls import dead_port, session
from test_hostile_output import lab

# ModelCallsFailedError is a ModelError (not imported here, so the file runs on older code)
from lcm_lab.errors import ModelError
from lcm_lab.summarizers.call_checks import ModelCallsWarning

MODEL = ["--summarizer", "litellm", "--model", "openai/fake-model", "--max-retries", "0"]


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    monkeypatch.delenv("LCM_LAB_HOME", raising=False)


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as running:
        yield running


def dead() -> str:
    return f"http://127.0.0.1:{dead_port()}/v1"


def one_line(result: subprocess.CompletedProcess[bytes]) -> str:
    err = result.stderr.decode()
    lines = [line for line in err.splitlines() if line.strip()]
    assert result.returncode == 2 and len(lines) == 1 and "Traceback" not in err, err[-3000:]
    return lines[0]


def config(tmp_path: Path) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"freshTailCount": 2}))  # a handful of leaf summaries at budget 1200
    return path


def saved_run(tmp_path: Path) -> tuple[str, str]:
    """A store holding one offline replay with leaf summaries: (store path, run id)."""
    db = tmp_path / "lab.duckdb"
    result = lab("replay", "--db", str(db), "--config", str(config(tmp_path)), "--token-budget", "1200", "--json",
                 str(session(tmp_path / "s.jsonl")), cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr.decode()
    return str(db), json.loads(result.stdout.decode().splitlines()[0])["run_id"]


def derived_runs(db: str) -> int:
    from lcm_lab.store import open_store

    return int(open_store(db).fetch_all("SELECT count(*) FROM run_edits")[0][0])


def model_summarizer(api_base: str, store: object) -> object:
    from lcm_lab.store.ledger import Ledger
    from lcm_lab.summarizers import get_summarizer

    return get_summarizer("litellm", model="openai/fake-model", api_base=api_base, max_retries=0, ledger=Ledger(store))  # type: ignore[arg-type]


# -- whatif rewrite ------------------------------------------------------------------------------


def test_a_rewrite_whose_every_call_fails_is_an_error_and_saves_no_derived_run(tmp_path: Path) -> None:
    """Before: exit 0, "31 summaries by openai/gpt-4o-mini … 31 changed" and a derived run of fallbacks."""
    from lcm_lab.store import open_store
    from lcm_lab.store.replays import load_replay

    db, run_id = saved_run(tmp_path)
    leaf = next(s.summary_id for s in load_replay(open_store(db), run_id).summaries if s.kind == "leaf")
    result = lab("whatif", "rewrite", "--db", db, run_id, "--summary-id", leaf, "--model", "openai/fake-model", "--api-base", dead(), cwd=tmp_path)
    line = one_line(result)
    assert line.startswith("lcm-lab whatif: ") and "1 of 1 model calls failed" in line, line
    assert "no summary came from the model, so no derived run was saved" in line and "--api-base" in line
    assert "run_" not in result.stdout.decode().replace(run_id, "") and derived_runs(db) == 0


def test_the_rewrite_library_raises_the_same_error_and_warns_when_some_calls_fail(tmp_path: Path, server: FakeOpenAIServer) -> None:
    from lcm_lab import whatif
    from lcm_lab.store import open_store

    db, run_id = saved_run(tmp_path)
    store = open_store(db)
    with pytest.raises(ModelError, match="model calls failed.*no derived run was saved"):
        whatif.rewrite(run_id, depth=0, summarizer=model_summarizer(dead(), store), store=store)  # type: ignore[arg-type]
    assert derived_runs(db) == 0
    server.enqueue(Reply(status=500))  # the first call fails, the rest are answered
    with pytest.warns(ModelCallsWarning) as caught:  # a notebook sees it under the cell, not only in .warnings
        result = whatif.rewrite(run_id, depth=0, summarizer=model_summarizer(server.base_url, store), store=store)  # type: ignore[arg-type]
    (warning,) = result.warnings
    assert f"1 of {len(result.calls)} model calls failed (server_error ×1" in warning and "truncation fallback" in warning
    assert len(result.calls) >= 2 and result.json()["failed_calls"] == 1 and derived_runs(db) == 1
    (shown,) = [w for w in caught.list if issubclass(w.category, ModelCallsWarning)]
    assert str(shown.message) == warning and shown.message.failed == 1 and shown.filename == __file__  # type: ignore[union-attr]


def test_the_rewrite_command_says_some_failed_calls_once(tmp_path: Path, server: FakeOpenAIServer) -> None:
    db, run_id = saved_run(tmp_path)
    server.enqueue(Reply(status=500))  # the first call fails, the rest are answered
    result = lab("whatif", "rewrite", "--db", db, run_id, "--depth", "0", "--model", "openai/fake-model", "--max-retries", "0",
                 "--api-base", server.base_url, "--json", cwd=tmp_path)  # fmt: skip
    err = result.stderr.decode()
    said = [line for line in err.splitlines() if "model calls failed" in line]
    assert result.returncode == 0 and len(said) == 1 and said[0].startswith("warning: rewrite of "), err[-3000:]
    assert "1 of " in said[0] and json.loads(result.stdout)["failed_calls"] == 1


# -- compare-versions ----------------------------------------------------------------------------


def test_compare_versions_on_a_dead_server_is_an_error_and_creates_no_store(tmp_path: Path) -> None:
    """Before: exit 0, a table of 25/20 "summarizer_calls" that were all fallbacks, and a 4.4 MB
    ./.lcm_lab/lab.duckdb although the help says "default: in memory"."""
    path = session(tmp_path / "s.jsonl")
    result = lab("compare-versions", str(path), "--config", str(config(tmp_path)), "--token-budget", "1200", *MODEL,
                 "--api-base", dead(), cwd=tmp_path)  # fmt: skip
    line = one_line(result)
    assert line.startswith("lcm-lab compare-versions: calls under lossless-claw 0.15.3: "), line
    assert "model calls failed" in line and "no comparison was made" in line
    assert result.stdout == b"" and not (tmp_path / ".lcm_lab").exists()


def test_compare_versions_warns_with_the_counts_in_the_library_and_the_cli(tmp_path: Path, server: FakeOpenAIServer) -> None:
    import lcm_lab as lab_

    path, settings = session(tmp_path / "s.jsonl"), {"freshTailCount": 2}
    server.enqueue(Reply(status=500), Reply(status=503))  # two calls of the first version fail
    with pytest.warns(ModelCallsWarning) as caught:  # a notebook sees it under the cell, not only in .warnings
        cmp = lab_.compare_versions(path, settings, token_budget=1200, summarizer=model_summarizer(server.base_url, lab_.LabStore(":memory:")),  # type: ignore[arg-type]
                                    scores=False)  # fmt: skip
    (warning,) = cmp.warnings
    calls = cmp.totals[0]["summarizer_calls"]
    assert warning.startswith("calls under lossless-claw 0.15.3: ") and f"2 of {calls} model calls failed (server_error ×2" in warning
    assert cmp.to_dict()["warnings"] == [warning]
    (shown,) = [w for w in caught.list if issubclass(w.category, ModelCallsWarning)]
    assert str(shown.message) == warning and shown.message.failed == 2 and shown.filename == __file__  # type: ignore[union-attr]
    server.clear()
    server.enqueue(Reply(status=500))
    result = lab("compare-versions", str(path), "--config", str(config(tmp_path)), "--token-budget", "1200", *MODEL, "--cache", "off",
                 "--api-base", server.base_url, cwd=tmp_path)  # fmt: skip
    warnings = [line for line in result.stderr.decode().splitlines() if "model calls failed" in line]  # said once, not twice
    assert result.returncode == 0 and len(warnings) == 1 and warnings[0].startswith("warning: calls under lossless-claw 0.15.3: ")
    assert "1 of " in warnings[0] and "truncation fallback" in warnings[0], result.stderr
    assert not (tmp_path / ".lcm_lab").exists()


# -- cost ------------------------------------------------------------------------------------------


def test_cost_of_a_replay_whose_every_call_failed_is_an_error(tmp_path: Path) -> None:
    """Before: exit 0, "summarizer $0.00 over 25 calls" and a saving priced on fallback summaries."""
    path = session(tmp_path / "s.jsonl", priced=True)
    db = tmp_path / "lab.duckdb"
    result = lab("cost", "--db", str(db), "--strategy", "lcm", str(path), "--config", str(config(tmp_path)), "--token-budget", "1200",
                 *MODEL, "--api-base", dead(), cwd=tmp_path)  # fmt: skip
    line = one_line(result)
    assert line.startswith("lcm-lab cost: priced: ") and "model calls failed" in line and "the replay was not priced" in line, line
    assert result.stdout == b""


def test_cost_warns_when_some_calls_failed_and_the_library_says_the_same(tmp_path: Path, server: FakeOpenAIServer) -> None:
    import lcm_lab as lab_
    from lcm_lab.cost.replay_cost import calibrate_conversation
    from lcm_lab.cost.validate import session_model

    path = session(tmp_path / "s.jsonl", priced=True)
    server.enqueue(Reply(status=500))
    result = lab("cost", "--strategy", "lcm", str(path), "--config", str(config(tmp_path)), "--token-budget", "1200", *MODEL,
                 "--json", "--api-base", server.base_url, cwd=tmp_path)  # fmt: skip
    warnings = [line for line in result.stderr.decode().splitlines() if line.startswith("warning:")]
    record = json.loads(result.stdout)
    assert result.returncode == 0 and record["failed_summarizer_calls"] == 1, result.stderr
    assert len(warnings) == 1 and f"1 of {record['summarizer_calls']} model calls failed" in warnings[0]
    assert not (tmp_path / ".lcm_lab").exists()  # no --db: the ledger was in memory

    conversation = lab_.read_transcript(path).conversations[0].conversation
    prices = lab_.load_prices(session_model(lab_.recorded_calls(conversation)))
    calibration = calibrate_conversation(conversation, prices)
    # lab.replay itself raises on such a run (tests/test_hostile_model_library.py); made without that check, it is not priced either
    dead_run = lab_.replay(conversation, lab_.LcmConfig.from_plugin_config({"freshTailCount": 2}),
                           model_summarizer(dead(), lab_.LabStore(":memory:")), token_budget=1200, check_calls=False)  # type: ignore[arg-type]
    with pytest.raises(ModelError, match="no summary came from the model, so the replay was not priced"):
        lab_.session_cost(dead_run, prices, calibration)  # type: ignore[arg-type]


def test_session_cost_and_cost_scores_warn_at_the_notebooks_line(tmp_path: Path, server: FakeOpenAIServer) -> None:
    """``session_cost`` kept failed and unpriced summarizer calls in ``.warning``, which a notebook
    never shows; now the library issues it at the caller's line, once per priced replay."""
    import warnings

    import lcm_lab as lab_
    from lcm_lab.cost.replay_cost import calibrate_conversation
    from lcm_lab.cost.validate import session_model
    from lcm_lab.store.ledger import Ledger
    from lcm_lab.summarizers import get_summarizer

    conversation = lab_.read_transcript(session(tmp_path / "s.jsonl", priced=True)).conversations[0].conversation
    prices = lab_.load_prices(session_model(lab_.recorded_calls(conversation)))
    calibration = calibrate_conversation(conversation, prices)
    settings = lab_.LcmConfig.from_plugin_config({"freshTailCount": 2})
    server.enqueue(Reply(status=500))  # the first call fails; the model has no price in litellm's map
    run = lab_.replay(conversation, settings, model_summarizer(server.base_url, lab_.LabStore(":memory:")),  # type: ignore[arg-type]
                      token_budget=1200, check_calls=False)
    with pytest.warns(ModelCallsWarning) as caught:
        cost = lab_.session_cost(run, prices, calibration)  # type: ignore[arg-type]
    (shown,) = [w for w in caught.list if issubclass(w.category, ModelCallsWarning)]
    assert str(shown.message) == cost.warning and shown.message.failed == 1 and shown.filename == __file__  # type: ignore[union-attr]
    assert cost.warning is not None and cost.warning.startswith(f"priced: 1 of {cost.summarizer_calls} model calls failed (server_error ×1")
    answered = cost.summarizer_calls - 1
    assert cost.warning.endswith(f"; {answered} summarizer calls recorded no price (openai/fake-model ×{answered}: not in "
                                 "the cost map); summarizer_usd leaves them out")
    with pytest.warns(ModelCallsWarning) as caught:
        lab_.cost_scores(run, prices=prices, calibration=calibration)  # type: ignore[arg-type]
    assert [w.filename for w in caught.list if issubclass(w.category, ModelCallsWarning)] == [__file__]
    # a model with a price whose every call was answered: nothing to say
    priced = get_summarizer("litellm", model="openai/gpt-4o-mini", api_base=server.base_url, max_retries=0,
                            ledger=Ledger(lab_.LabStore(":memory:")))
    whole = lab_.replay(conversation, settings, priced, token_budget=1200)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clean = lab_.session_cost(whole, prices, calibration)  # type: ignore[arg-type]
    assert clean.warning is None and clean.summarizer_calls > 0 and clean.summarizer_usd > 0


# -- expand --model -------------------------------------------------------------------------------


def test_expand_on_a_dead_server_is_one_line(tmp_path: Path) -> None:
    """Before: a 166-line traceback of six chained exceptions, exit 1."""
    import gzip
    import shutil

    from conftest import DATASETS

    with gzip.open(DATASETS / "lcm-db" / "lcm-v0.15.3.db.gz") as src, (tmp_path / "lcm.db").open("wb") as dst:
        shutil.copyfileobj(src, dst)
    assert lab("load", "--db", "lab.duckdb", "lcm.db", cwd=tmp_path).returncode == 0
    result = lab("expand", "--db", "lab.duckdb", "--prompt", "what happened?", "--query", "the", "--model", "openai/zq",
                 "--api-base", dead(), cwd=tmp_path)  # fmt: skip
    line = one_line(result)
    assert line.startswith("lcm-lab expand: judge model 'openai/zq' failed") and "--api-base" in line and "that the server is up" in line, line


def test_the_answerer_raises_a_model_error_a_notebook_can_catch(tmp_path: Path) -> None:
    import lcm_lab as lab_
    from lcm_lab.metrics.judge import JudgeError
    from lcm_lab.recall_tools.answer import ModelAnswerer

    answerer = ModelAnswerer("openai/zq", api_base=dead(), api_key="sk-test-not-a-real-key")
    answerer._chat.max_retries = 0
    with pytest.raises(ModelError, match="judge model 'openai/zq' failed") as caught:
        answerer.answer("q?", [], 200)
    assert isinstance(caught.value, JudgeError) and isinstance(caught.value, lab_.UserError)  # the judges still catch it as a JudgeError


# -- a command that saves nothing creates no store ------------------------------------------------


def test_replay_no_save_creates_no_store_unless_one_is_named(tmp_path: Path, server: FakeOpenAIServer) -> None:
    """Before: ``replay --no-save`` made ./.lcm_lab/lab.duckdb (1.8 MB) in the current directory."""
    path = session(tmp_path / "s.jsonl")
    work = tmp_path / "work"
    work.mkdir()
    for argv in (["replay", "--no-save", str(path)],
                 ["replay", "--no-save", "--config", str(config(tmp_path)), "--token-budget", "1200", *MODEL, "--api-base", server.base_url, str(path)]):  # fmt: skip
        result = lab(*argv, cwd=work)  # $LCM_LAB_HOME unset (the fixture)
        assert result.returncode == 0 and "(not saved)" in result.stdout.decode(), result.stderr
        assert sorted(p.name for p in work.iterdir()) == [], "a store was created"
    named = tmp_path / "named.duckdb"  # a named store keeps the ledger of the model calls
    result = lab("replay", "--no-save", "--db", str(named), "--config", str(config(tmp_path)), "--token-budget", "1200", *MODEL,
                 "--api-base", server.base_url, str(path), cwd=work)  # fmt: skip
    assert result.returncode == 0, result.stderr
    from lcm_lab.store import open_store

    store = open_store(named)
    assert int(store.fetch_all("SELECT count(*) FROM llm_calls")[0][0]) >= 3
    assert int(store.fetch_all("SELECT count(*) FROM replays")[0][0]) == 0
    home = tmp_path / "home"
    result = lab("replay", "--no-save", str(path), cwd=work, LCM_LAB_HOME=str(home))  # $LCM_LAB_HOME names one too
    assert result.returncode == 0 and (home / "lab.duckdb").exists() and sorted(work.iterdir()) == [], result.stderr


def test_the_help_of_commands_that_save_nothing_says_where_the_ledger_goes(tmp_path: Path) -> None:
    for command in ("compare-versions", "cost"):
        text = " ".join(lab(command, "--help", cwd=tmp_path).stdout.decode().split())
        assert "else in memory; nothing is saved" in text, (command, text)
    text = " ".join(lab("replay", "--help", cwd=tmp_path).stdout.decode().split())
    assert "no store is created either" in text
