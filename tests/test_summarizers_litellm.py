"""LiteLLMSummarizer over litellm's real HTTP path against a local fake OpenAI server.

Each injected failure shows the behaviour the plugin would (retry, escalate, fallback, abort)
and the ledger rows it leaves. Latencies, timeouts and backoffs are tiny to keep this fast.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakeserver import FakeOpenAIServer, Reply

from lcm_lab.engine.compaction.fallback import FALLBACK_MARKER
from lcm_lab.engine.compaction.sweep import Compactor
from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.protocol import SummarizerAuthError, SummarizerError, SummaryRequest
from lcm_lab.engine.replay.driver import replay
from lcm_lab.engine.state import EngineState
from lcm_lab.engine.tokens import estimate_tokens
from lcm_lab.engine.types import Conversation, InputEntry
from lcm_lab.prompts import default_prompt_set
from lcm_lab.store import LabStore
from lcm_lab.store.ledger import Ledger
from lcm_lab.summarizers.litellm_summarizer import LiteLLMSummarizer, classify_error

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

API_KEY = "sk-test-NEVER-STORED-123456"
SOURCE = "\n\n".join(
    f"[2026-03-01 10:{i:02d} UTC | {'user' if i % 2 == 0 else 'assistant'}]\n"
    f"Step {i}: edited src/module_{i}.py and ran the test suite; {i * 3} tests passed."
    for i in range(40)
)


def leaf_request(source: str = SOURCE, **changes: Any) -> SummaryRequest:
    tokens = estimate_tokens(source)
    target = max(192, min(2400, int(tokens * 0.35)))
    values: dict[str, Any] = dict(
        source_text=source, kind="leaf", depth=0, aggressive=False, previous_summary=None,
        target_tokens=target, max_tokens=target + 2048,
    )
    values.update(changes)
    return SummaryRequest(**values)


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as running:
        yield running


@pytest.fixture()
def fake(server: FakeOpenAIServer) -> Iterator[FakeOpenAIServer]:
    server.wait_idle()
    server.clear()
    server.latency = 0.0
    yield server
    server.clear()


@pytest.fixture()
def store() -> Iterator[LabStore]:
    with LabStore(":memory:") as lab:
        yield lab


def make(fake: FakeOpenAIServer, store: LabStore | None, mode: str = "readwrite", **options: Any) -> LiteLLMSummarizer:
    settings: dict[str, Any] = dict(
        api_base=fake.base_url, api_key=API_KEY, ledger=Ledger(store, mode) if store is not None else None,  # type: ignore[arg-type]
        summary_timeout_ms=2_000, backoff_base_ms=5, backoff_max_ms=20, max_retries=2, run_id="test-run",
    )
    settings.update(options)
    return LiteLLMSummarizer("openai/fake-model", **settings)


def rows(store: LabStore) -> list[dict[str, Any]]:
    return Ledger(store).calls()


# -- success, cache ---------------------------------------------------------------------------


def test_success_is_recorded_with_everything_and_repeats_come_from_the_cache(fake: FakeOpenAIServer, store: LabStore) -> None:
    summarizer = make(fake, store, temperature=0.2, seed=7)
    first = summarizer.summarize(leaf_request())
    assert first.text.startswith("Fake summary ") and not first.cached
    assert first.template_hash == default_prompt_set()["leaf"].hash
    assert first.input_tokens and first.output_tokens and first.latency_ms and first.latency_ms > 0
    sent = fake.completion_requests[0]
    assert sent.headers["authorization"] == f"Bearer {API_KEY}"
    assert sent.body is not None and sent.body["max_tokens"] == leaf_request().max_tokens
    assert sent.body["temperature"] == 0.2 and sent.body["seed"] == 7
    assert "src/module_39.py" in sent.body["messages"][1]["content"]

    second = summarizer.summarize(leaf_request())
    assert second.cached and second.text == first.text and second.cost_usd == 0.0
    assert len(fake.completion_requests) == 1  # the cache hit made no HTTP request

    df = Ledger(store).calls_df()
    assert list(df["cache_hit"]) == [False, True]
    assert list(df["cacheable"]) == [True, False]
    assert df["cache_key"].nunique() == 1
    row = df.iloc[0]
    assert row["model"] == "openai/fake-model" and row["provider"] == "openai" and row["run_id"] == "test-run"
    assert row["template_name"] == "leaf" and row["template_hash"] == first.template_hash
    assert row["kind"] == "leaf" and row["depth"] == 0 and not row["aggressive"]
    assert row["api_base"] == fake.base_url and row["input_tokens"] > 0 and row["error_class"] is None
    assert '"temperature": 0.2' in row["params"] and "src/module_39.py" in row["request_messages"]


def test_cache_modes(fake: FakeOpenAIServer, store: LabStore) -> None:
    request = leaf_request()
    make(fake, store, "off").summarize(request)
    make(fake, store, "off").summarize(request)
    assert len(fake.completion_requests) == 2  # off: never served, never stored
    make(fake, store, "read").summarize(request)
    assert len(fake.completion_requests) == 3  # read: nothing reusable yet, and it stores nothing
    make(fake, store, "write").summarize(request)
    make(fake, store, "write").summarize(request)
    assert len(fake.completion_requests) == 5  # write: always calls, stores the response
    assert make(fake, store, "read").summarize(request).cached
    assert make(fake, store, "readwrite").summarize(request).cached
    assert len(fake.completion_requests) == 5


def test_the_cache_key_ignores_transport_settings_but_not_output_settings(fake: FakeOpenAIServer, store: LabStore) -> None:
    request = leaf_request()
    make(fake, store).summarize(request)
    assert make(fake, store, summary_timeout_ms=9_000, max_retries=5).summarize(request).cached
    assert not make(fake, store, temperature=0.5).summarize(request).cached
    assert not make(fake, store, reasoning_effort="low").summarize(request).cached
    assert not make(fake, store).summarize(leaf_request(custom_instructions="Keep names.")).cached


def test_api_keys_are_never_stored(fake: FakeOpenAIServer, store: LabStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-SECRET-abcdef123456")
    fake.enqueue(Reply(status=500), Reply(status=401))
    with pytest.raises(SummarizerAuthError):
        make(fake, store).summarize(leaf_request())
    make(fake, store).summarize(leaf_request(source=SOURCE + "\nmy key is sk-env-SECRET-abcdef123456"))
    dump = store.fetch_all("SELECT * FROM llm_calls")
    text = repr(dump)
    assert API_KEY not in text and "sk-env-SECRET" not in text
    assert "[redacted]" in text


# -- injected failures --------------------------------------------------------------------------


def test_429_is_retried_with_backoff_then_succeeds(fake: FakeOpenAIServer, store: LabStore) -> None:
    fake.enqueue(Reply(status=429), Reply(status=429), Reply(text="Recovered summary."))
    result = make(fake, store).summarize(leaf_request())
    assert result.text == "Recovered summary." and result.extra["attempts"] == 3
    assert [(r["attempt"], r["error_class"], r["cacheable"]) for r in rows(store)] == [
        (1, "rate_limit", False), (2, "rate_limit", False), (3, None, True),
    ]


def test_retry_after_from_the_provider_is_honoured(fake: FakeOpenAIServer, store: LabStore) -> None:
    fake.enqueue(Reply(status=429, headers={"Retry-After": "1"}), Reply(text="Waited summary."))
    started = time.monotonic()
    result = make(fake, store).summarize(leaf_request())
    assert result.text == "Waited summary." and time.monotonic() - started >= 0.9


def test_errors_are_classified_by_litellm_exception_classes() -> None:
    import litellm

    assert classify_error(litellm.RateLimitError("slow down", "openai", "m")) == "rate_limit"
    assert classify_error(litellm.AuthenticationError("no", "openai", "m")) == "auth"
    assert classify_error(litellm.Timeout("late", "m", "openai")) == "timeout"
    assert classify_error(litellm.ServiceUnavailableError("down", "openai", "m")) == "server_error"
    assert classify_error(litellm.ContextWindowExceededError("too long", "m", "openai")) == "bad_request"


def test_500_until_retries_run_out_gives_the_fallback_and_is_not_cached(fake: FakeOpenAIServer, store: LabStore) -> None:
    fake.enqueue(*[Reply(status=500)] * 3)
    summarizer = make(fake, store, max_retries=2)
    result = summarizer.summarize(leaf_request())
    assert result.text.endswith("\n" + FALLBACK_MARKER)
    assert result.text.startswith("[2026-03-01 10:00 UTC | user]")
    assert estimate_tokens(result.text) <= 512
    assert result.extra["fallback"] == "server_error" and not result.cached
    assert [r["error_class"] for r in rows(store)] == ["server_error"] * 3
    # Errors are never cached: the same request goes to the model again.
    again = summarizer.summarize(leaf_request())
    assert not again.cached and again.text.startswith("Fake summary")
    assert len(fake.completion_requests) == 4


def test_401_aborts_the_pass_and_writes_nothing(fake: FakeOpenAIServer, store: LabStore) -> None:
    fake.enqueue(Reply(status=401))
    summarizer = make(fake, store)
    with pytest.raises(SummarizerAuthError, match="credentials"):
        summarizer.summarize(leaf_request())
    assert [(r["error_class"], r["cacheable"]) for r in rows(store)] == [("auth", False)]
    assert len(fake.completion_requests) == 1  # authentication failures are not retried

    fake.enqueue(*[Reply(status=401)] * 20)
    chat = Conversation("auth-demo", entries=(
        InputEntry(2, "message", {"role": "user", "content": "please summarise " * 300, "timestamp": 0}),
        InputEntry(3, "message", {"role": "user", "content": "next", "timestamp": 1000}),
    ))
    result = replay(chat, LcmConfig(fresh_tail_count=1), summarizer, token_budget=500, check_calls=False)  # (by default: ModelCallsFailedError)
    assert result.summaries == ()  # the engine aborted the pass: nothing was written
    assert any(sweep.auth_failure for turn in result.turns for sweep in turn.sweeps)
    assert rows(store)[-1]["error_class"] == "auth"


def test_timeout_is_not_retried_and_gives_the_fallback(fake: FakeOpenAIServer, store: LabStore) -> None:
    fake.enqueue(Reply(delay=1.0))
    result = make(fake, store, summary_timeout_ms=200).summarize(leaf_request())
    assert result.text.endswith(FALLBACK_MARKER) and result.extra["fallback"] == "timeout"
    [row] = rows(store)
    assert row["error_class"] == "timeout" and 150 <= row["latency_ms"] < 900 and not row["cacheable"]
    assert len(fake.completion_requests) == 1


def test_empty_reply_is_retried_once_with_a_larger_completion_cap(fake: FakeOpenAIServer, store: LabStore) -> None:
    fake.enqueue(Reply(text=""), Reply(text="<think>what matters here?</think>\nThe real summary."))
    request = leaf_request()
    result = make(fake, store).summarize(request)
    assert result.text == "The real summary."
    assert [r.body["max_tokens"] for r in fake.completion_requests] == [request.max_tokens, 2 * request.max_tokens]  # type: ignore[index]
    assert [(r["error_class"], r["cacheable"]) for r in rows(store)] == [("empty_response", False), (None, True)]
    # The retried answer is cached under the request's key: a rerun costs nothing.
    assert make(fake, store).summarize(request).text == "The real summary."
    assert len(fake.completion_requests) == 2


def test_reasoning_only_twice_gives_the_fallback(fake: FakeOpenAIServer, store: LabStore) -> None:
    fake.enqueue(Reply(text=None, reasoning="thinking..."), Reply(text="<thinking>never closed"))
    result = make(fake, store).summarize(leaf_request())
    assert result.text.endswith(FALLBACK_MARKER) and result.extra["fallback"] == "empty_response"
    assert [r["error_class"] for r in rows(store)] == ["empty_response", "empty_response"]


def test_over_long_output_escalates_to_aggressive_then_the_engine_falls_back(fake: FakeOpenAIServer, store: LabStore) -> None:
    long_text = "This summary is far longer than its source. " * 400
    fake.enqueue(Reply(text=long_text), Reply(text=long_text))
    compactor = Compactor(EngineState(), LcmConfig(), make(fake, store))
    summary, level = compactor.summarize_with_escalation(SOURCE, "leaf", 0, None) or ("", "")
    assert level == "fallback" and "[Truncated from" in summary
    assert [c.aggressive for c in compactor.calls] == [False, True]
    assert [r["template_name"] for r in rows(store)] == ["leaf", "leaf-aggressive"]
    assert "was already attempted and came out too long" in fake.completion_requests[1].body["messages"][1]["content"]  # type: ignore[index]


def test_over_long_but_shrinking_output_is_capped_by_the_engine(fake: FakeOpenAIServer, store: LabStore) -> None:
    fake.enqueue(Reply(text="word " * 1000))  # 1250 tokens: shrinks, but over 3 × leafTargetTokens
    compactor = Compactor(EngineState(), LcmConfig(leaf_target_tokens=200), make(fake, store))
    summary, level = compactor.summarize_with_escalation(SOURCE * 3, "leaf", 0, None) or ("", "")
    assert level == "capped" and "[Capped from" in summary and estimate_tokens(summary) <= 600


# -- credentials, spend guard, concurrency --------------------------------------------------------


def test_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(SummarizerError, match="set OPENAI_API_KEY"):
        LiteLLMSummarizer("openai/gpt-4o-mini")
    with pytest.raises(SummarizerError, match="set ANTHROPIC_API_KEY"):
        LiteLLMSummarizer("anthropic/claude-3-5-haiku-latest")
    with pytest.raises(SummarizerError, match="GEMINI_API_KEY"):
        LiteLLMSummarizer("gemini/gemini-2.0-flash")
    with pytest.raises(SummarizerError, match="any non-empty value works"):
        LiteLLMSummarizer("openai/local-model", api_base="http://127.0.0.1:9/v1")
    assert LiteLLMSummarizer("ollama/llama3", api_base="http://127.0.0.1:11434").provider == "ollama"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env-000000")
    assert LiteLLMSummarizer("openai/gpt-4o-mini").model == "openai/gpt-4o-mini"


def test_spend_guard_stops_with_a_clear_error(fake: FakeOpenAIServer, store: LabStore) -> None:
    summarizer = make(fake, store, max_calls_per_window=2, window_seconds=3600)
    summarizer.summarize(leaf_request(source=SOURCE + " a"))
    summarizer.summarize(leaf_request(source=SOURCE + " b"))
    assert summarizer.summarize(leaf_request(source=SOURCE + " a")).cached  # hits do not count
    with pytest.raises(SummarizerError, match="max_calls_per_window=2"):
        summarizer.summarize(leaf_request(source=SOURCE + " c"))
    assert len(fake.completion_requests) == 2


def test_dollar_cap_with_priced_mock_responses(store: LabStore) -> None:
    summarizer = LiteLLMSummarizer(
        "openai/gpt-4o-mini", api_key=API_KEY, ledger=Ledger(store), max_cost_usd=1e-9,
        completion_kwargs={"mock_response": "A mocked summary."},
    )
    result = summarizer.summarize(leaf_request())
    assert result.text == "A mocked summary." and result.cost_usd is not None and result.cost_usd > 0
    assert rows(store)[0]["cost_usd"] == pytest.approx(result.cost_usd)
    with pytest.raises(SummarizerError, match="max_cost_usd"):
        summarizer.summarize(leaf_request(source=SOURCE + " more"))


def test_threads_share_one_bounded_pool(fake: FakeOpenAIServer, store: LabStore) -> None:
    fake.latency = 0.1
    summarizer = make(fake, store, concurrency=3)
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            summarizer.summarize(leaf_request(source=f"{SOURCE}\nthread {i}"))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(9)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert fake.max_in_flight == 3 and summarizer.pool.max_in_flight == 3
    assert len(rows(store)) == 9


# -- mock_response unit tests -----------------------------------------------------------------------


def test_mock_response_strips_reasoning_and_uses_the_prompt_set(tmp_path: Path) -> None:
    (tmp_path / "leaf.tmpl").write_text("Summarise in {{.TargetTokens}} tokens.\n{{.SourceText}}", encoding="utf-8")
    summarizer = LiteLLMSummarizer("openai/gpt-4o-mini", api_key=API_KEY, prompts=tmp_path,
                                   completion_kwargs={"mock_response": "<think>hmm</think>Kept: src/a.py"})
    result = summarizer.summarize(leaf_request())
    assert result.text == "Kept: src/a.py"
    assert result.template_hash == summarizer.prompts["leaf"].hash != default_prompt_set()["leaf"].hash
    assert result.extra["template_name"] == "leaf"


def test_error_classification() -> None:
    class AuthenticationError(Exception):
        status_code = 401

    class Weird(Exception):
        status_code = 503

    assert classify_error(AuthenticationError()) == "auth"
    assert classify_error(Weird()) == "server_error"
    assert classify_error(TimeoutError()) == "timeout"
    assert classify_error(ValueError()) == "other"
