"""A configured secret that appears in a transcript (issue 22 item 11) never leaves in derived text:
not in saved summaries, replay calls or payloads, the call ledger, a ``--trace-out`` trace, an
lcm.db export or the HTML report. The user's own messages are kept as loaded (positive control:
the secret is still there, so the test would see a leak)."""

from __future__ import annotations

import json
import sqlite3
import zlib
from pathlib import Path
from typing import Any

import pytest
from fakeserver import FakeOpenAIServer
from test_hostile_model_calls import session

from lcm_lab.cli import main
from lcm_lab.io.redaction import REDACTED, redact, register_secret

SECRET = "zq-hostile-Secret-0123456789abcdef"  # not key-shaped: only the configured value finds it


@pytest.fixture
def leaky(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    path = session(tmp_path / "s.jsonl")
    path.write_text(path.read_text().replace("tell me about the garden", f"my key is {SECRET} ok"))
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"freshTailCount": 2}))
    return {"path": str(path), "db": str(tmp_path / "lab.duckdb"), "config": str(config), "tmp": tmp_path}


def _store(db: str):  # type: ignore[no-untyped-def]
    from lcm_lab.store import open_store

    return open_store(db)


def echo_from_the_key(body: dict[str, Any]) -> str:
    """A model that echoes its source from the key on, shorter than the source (so the plugin keeps
    the summary: one not shorter would be its truncation fallback, and the replay an error)."""
    prompt = str(body["messages"][-1]["content"])
    return "summary: " + prompt[max(prompt.find("my key is"), 0) :][:300]


def test_summaries_ledger_trace_export_and_report_are_redacted(leaky: dict, capsys: pytest.CaptureFixture[str]) -> None:
    db, tmp = leaky["db"], leaky["tmp"]
    budget = ["--config", leaky["config"], "--token-budget", "1200"]
    trace = tmp / "trace.json"
    assert main(["load", "--db", db, leaky["path"]]) == 0
    assert main(["replay", "--db", db, *budget, "--trace-out", str(trace), leaky["path"]]) == 0  # offline: extractive
    with FakeOpenAIServer() as server:
        server.set_responder(echo_from_the_key)
        assert main(["replay", "--db", db, *budget, "--summarizer", "litellm", "--model", "openai/fake",
                     "--api-base", server.base_url, leaky["path"]]) == 0  # fmt: skip
        assert any(SECRET in json.dumps(r.body) for r in server.completion_requests)  # the model did see it
    out = capsys.readouterr().out
    runs = [line.split()[0] for line in out.splitlines() if line.startswith("run_")]
    assert len(runs) == 2
    store = _store(db)
    assert store.fetch_all("SELECT count(*) FROM messages WHERE content LIKE ?", [f"%{SECRET}%"])[0][0] > 0  # kept as loaded
    for table, column in (("replay_summaries", "content"), ("llm_calls", "request_messages"), ("llm_calls", "response_text")):
        assert store.fetch_all(f"SELECT count(*) FROM {table} WHERE {column} LIKE ?", [f"%{SECRET}%"])[0][0] == 0, table
    assert store.fetch_all("SELECT count(*) FROM replay_summaries WHERE content LIKE ?", [f"%{REDACTED}%"])[0][0] > 0
    for (payload,) in store.fetch_all("SELECT payload FROM replays"):
        assert SECRET not in zlib.decompress(payload).decode()
    assert SECRET not in trace.read_text() and REDACTED in trace.read_text()

    report = tmp / "report.html"
    assert main(["report", "--db", db, "--run", runs[0], "--run", runs[1], "-o", str(report)]) == 0
    html = report.read_text()
    assert SECRET not in html and REDACTED in html
    from lcm_lab.report.figures import plotly_js_gzip_base64

    assert plotly_js_gzip_base64() in html  # the library itself is intact

    exported = tmp / "export.db"
    assert main(["export", "--db", db, "-o", str(exported), runs[0]]) == 0
    conn = sqlite3.connect(exported)
    try:
        assert conn.execute("SELECT count(*) FROM summaries WHERE content LIKE ?", (f"%{SECRET}%",)).fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM summaries").fetchone()[0] > 0
    finally:
        conn.close()


def test_a_key_given_in_code_is_a_secret_too(monkeypatch: pytest.MonkeyPatch) -> None:
    from lcm_lab.io import redaction

    monkeypatch.setattr(redaction, "_registered", set())
    given = "given-in-code-0987654321"
    assert redact(f"x {given} y") == f"x {given} y"
    register_secret(given)
    assert redact(f"x {given} y") == f"x {REDACTED} y"
    assert redact("a Bearer abcdefgh.ijkl and sk-1234567890abc") == f"a {REDACTED} and {REDACTED}"


@pytest.mark.parametrize("name", ["ANTHROPIC_API_KEY", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AZURE_AD_TOKEN",
                                  "VERTEX_PRIVATE_KEY", "MY_SECRET_KEY", "HF_TOKEN", "DB_PASSWORD"])  # fmt: skip
def test_the_keys_litellm_reads_from_the_environment_are_secrets(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    value = "v4lue-of-" + name.lower()
    monkeypatch.setenv(name, value)
    assert redact(f"pasted {value} here") == f"pasted {REDACTED} here"


def test_other_variables_are_not_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KEYBOARD_LAYOUT", "colemak-dh")
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false-ish")
    assert redact("colemak-dh and false-ish") == "colemak-dh and false-ish"
