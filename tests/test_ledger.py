"""The LLM call ledger (keys, modes, redaction, CLI) and replay_many over a shared summarizer."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakeserver import FakeOpenAIServer

from lcm_lab.cli import main
from lcm_lab.engine.config.lcm_config import LcmConfig
from lcm_lab.engine.protocol import SummarizerError, SummaryRequest, SummaryResult
from lcm_lab.engine.types import Conversation, InputEntry
from lcm_lab.store import LabStore
from lcm_lab.store.ledger import Ledger, LedgerEntry, cache_key, public_api_base, redact
from lcm_lab.summarizers import OfflineSummarizer
from lcm_lab.summarizers.litellm_summarizer import LiteLLMSummarizer
from lcm_lab.sweeps.batch import ReplayBatchError, ReplaySpec, replay_many

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

KEY_FIELDS: dict[str, Any] = dict(
    model="openai/m", messages=[{"role": "user", "content": "x"}], template_hash="h", temperature=None,
    max_tokens=100, seed=None, reasoning_effort=None,
)


def test_cache_key_is_canonical_and_covers_exactly_the_output_fields() -> None:
    base = cache_key(**KEY_FIELDS)
    assert base == cache_key(**dict(reversed(list(KEY_FIELDS.items()))))
    assert len(base) == 64
    for field, other in [("model", "openai/n"), ("messages", [{"role": "user", "content": "y"}]), ("template_hash", "g"),
                         ("temperature", 0.0), ("max_tokens", 101), ("seed", 1), ("reasoning_effort", "low")]:
        assert cache_key(**{**KEY_FIELDS, field: other}) != base, field
    with pytest.raises(TypeError):
        cache_key(**KEY_FIELDS, api_base="http://x")  # type: ignore[call-arg]


def test_modes_decide_lookup_and_reuse() -> None:
    with LabStore(":memory:") as store:
        key = cache_key(**KEY_FIELDS)
        entry = LedgerEntry(purpose="judge", summarizer="t", model="m", cache_key=key, response_text="r", cacheable=True)
        Ledger(store, "read").record(entry)  # read mode never makes rows reusable
        assert Ledger(store, "readwrite").lookup(key) is None
        Ledger(store, "write").record(entry)
        assert Ledger(store, "write").lookup(key) is None  # write mode does not read
        assert Ledger(store, "off").lookup(key) is None
        assert Ledger(store, "read").lookup(key).response_text == "r"  # type: ignore[union-attr]
        # Errors are recorded but never reused, whatever the caller claims.
        other = cache_key(**{**KEY_FIELDS, "seed": 3})
        Ledger(store).record(LedgerEntry(purpose="judge", summarizer="t", model="m", cache_key=other, response_text="bad",
                                         cacheable=True, error_class="server_error"))
        assert Ledger(store).lookup(other) is None
        totals = Ledger(store).totals()
        assert totals["calls"] == 3 and totals["errors"] == 1
        with pytest.raises(ValueError, match="unknown cache mode"):
            Ledger(store, "sometimes")  # type: ignore[arg-type]


def test_redaction_and_public_api_base(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_SERVICE_API_KEY", "abcdef-secret-value")
    assert redact("token abcdef-secret-value and sk-abcdefghijklmnop and Bearer xyz.abc.12345") == (
        "token [redacted] and [redacted] and [redacted]"
    )
    assert public_api_base("https://user:pw@proxy.example.com:8443/v1?key=zzz#f") == "https://proxy.example.com:8443/v1"
    assert public_api_base(None) is None


def test_ledger_is_safe_from_many_threads() -> None:
    with LabStore(":memory:") as store:
        ledger = Ledger(store)

        def work(i: int) -> None:
            for j in range(20):
                key = cache_key(**{**KEY_FIELDS, "seed": i * 100 + j})
                ledger.record(LedgerEntry(purpose="t", summarizer="t", model="m", cache_key=key, response_text="x", cacheable=True))
                assert ledger.lookup(key) is not None

        threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert ledger.totals()["calls"] == 120


# -- replay_many --------------------------------------------------------------------------------


def chat(name: str, n: int = 6) -> Conversation:
    entries = []
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        content: Any = f"{name} message {i}: " + "the deployment of service alpha failed again. " * 30
        if role == "assistant":
            content = [{"type": "text", "text": content}]
        entries.append(InputEntry(2 + i, "message", {"role": role, "content": content, "timestamp": 1_700_000_000_000 + i * 60_000}))
    return Conversation(name, entries=tuple(entries))


SPECS = [ReplaySpec("tight", LcmConfig(fresh_tail_count=2, leaf_chunk_tokens=800), 1200),
         ReplaySpec("looser", LcmConfig(fresh_tail_count=3), 3000)]


def test_replay_many_runs_every_pair_in_order_and_matches_sequential() -> None:
    conversations = [chat("a"), chat("b"), chat("c")]
    outcomes = replay_many(conversations, SPECS, OfflineSummarizer(), concurrency=4, progress=False)
    assert [o.job.label for o in outcomes] == [f"{c}/{s.name}" for c in "abc" for s in SPECS]
    sequential = replay_many(conversations, SPECS, OfflineSummarizer(), concurrency=1, progress=False)
    for parallel, one in zip(outcomes, sequential, strict=True):
        assert parallel.error is None and parallel.replay is not None
        assert [s.content for s in parallel.replay.summaries] == [s.content for s in one.replay.summaries]
    assert any(o.replay.summaries for o in outcomes)


def test_replay_many_errors_raise_or_collect() -> None:
    calls = {"n": 0}
    lock = threading.Lock()

    def flaky(conversation: Conversation, config: LcmConfig, summarizer: Any, token_budget: int) -> str:
        with lock:
            calls["n"] += 1
        if conversation.session_id == "b":
            raise SummarizerError("spend guard tripped")
        return f"replayed {conversation.session_id} at {token_budget}"

    collected = replay_many([chat("a"), chat("b")], SPECS, OfflineSummarizer(), concurrency=1, progress=False,
                            errors="collect", replay_fn=flaky)
    assert [o.replay for o in collected] == ["replayed a at 1200", "replayed a at 3000", None, None]
    assert isinstance(collected[2].error, SummarizerError)
    with pytest.raises(ReplayBatchError, match="replay b/tight failed: SummarizerError: spend guard tripped") as info:
        replay_many([chat("b"), chat("a")], SPECS, OfflineSummarizer(), concurrency=1, progress=False, replay_fn=flaky)
    assert len(info.value.outcomes) == 4 and info.value.outcomes[-1].replay is None  # later jobs never started


def test_replay_many_rejects_bad_configs() -> None:
    with pytest.raises(TypeError, match="configs\\[0\\]"):
        replay_many([chat("a")], ["tight"], OfflineSummarizer(), progress=False)  # type: ignore[list-item]
    with pytest.raises(ValueError, match="concurrency"):
        replay_many([chat("a")], SPECS, OfflineSummarizer(), concurrency=0, progress=False)


# -- end to end: replays through litellm, ledger, cache, CLI -------------------------------------------


@pytest.fixture()
def fake() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


def test_replays_through_litellm_are_recorded_and_rerun_from_the_cache(fake: FakeOpenAIServer, tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "lab.duckdb"
    conversations = [chat("a", 8), chat("b", 8)]

    def run() -> list[Any]:
        with LabStore(db) as store:
            summarizer = LiteLLMSummarizer("openai/fake", api_base=fake.base_url, api_key="k-123", ledger=Ledger(store),
                                           concurrency=4, summary_timeout_ms=5_000)
            return replay_many(conversations, SPECS, summarizer, concurrency=4, progress=False)

    first = run()
    requests = len(fake.completion_requests)
    calls = sum(len(t.calls) for o in first for t in o.replay.turns)
    assert calls >= 4 and requests == calls
    second = run()
    assert len(fake.completion_requests) == requests  # everything came from the ledger
    for a, b in zip(first, second, strict=True):
        assert [s.content for s in a.replay.summaries] == [s.content for s in b.replay.summaries]
    assert all(c.cached for o in second for t in o.replay.turns for c in t.calls)

    assert main(["ledger", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert f"{2 * calls} calls ({calls} cache hits, 0 errors)" in out and "leaf/d0" in out and "hit" in out
    assert main(["ledger", "--db", str(db), "--json", "--last", "2"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2 and json.loads(lines[0])["cache_hit"] is True


def test_ledger_cli_on_an_empty_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    LabStore(tmp_path / "empty.duckdb").close()  # a store with no calls (ledger itself never creates one)
    assert main(["ledger", "--db", str(tmp_path / "empty.duckdb")]) == 0
    assert "no model calls recorded" in capsys.readouterr().out


def test_summarizer_result_protocol_for_custom_summarizers() -> None:
    class Echo:
        name = "echo"

        def summarize(self, request: SummaryRequest) -> SummaryResult:
            return SummaryResult(text=request.source_text[:50])

    outcomes = replay_many([chat("a")], SPECS[:1], Echo(), progress=False)
    assert outcomes[0].replay.summarizer == "echo"
