"""The lab's one rule for failed model calls holds for a notebook too: ``lab.replay`` and every
strategy's ``run`` (``lab.run_strategy``) raise :class:`ModelCallsFailedError` when every call
failed or the credentials were refused, and issue one :class:`ModelCallsWarning` counting them
when some failed (before: a Replay of truncation-fallback summaries, returned silently). The
commands keep printing what they printed (``tests/test_hostile_model_calls.py``). Servers: a dead
port on 127.0.0.1 and the fake OpenAI server; never the internet."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_hostile_model_calls import dead_port, session

import lcm_lab as lab
from lcm_lab import ModelCallsFailedError, ModelCallsWarning
from lcm_lab.engine.types import Conversation
from lcm_lab.testing import FakeOpenAIServer, Reply

SETTINGS = lab.LcmConfig.from_plugin_config({"freshTailCount": 2})  # a handful of leaf calls at budget 1200


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as running:
        yield running


@pytest.fixture
def conversation(tmp_path: Path) -> Conversation:
    return lab.read_transcript(session(tmp_path / "s.jsonl")).conversations[0].conversation


def model(api_base: str) -> object:
    return lab.get_summarizer("litellm", model="openai/fake-model", api_base=api_base, max_retries=0)


def ours(caught: list[warnings.WarningMessage]) -> list[warnings.WarningMessage]:
    return [w for w in caught if issubclass(w.category, ModelCallsWarning)]


def test_a_replay_on_a_dead_server_raises_in_the_library(conversation: Conversation) -> None:
    """Before: a Replay whose every summary was the truncation fallback, and not a word."""
    with pytest.raises(ModelCallsFailedError) as caught:
        lab.replay(conversation, SETTINGS, model(f"http://127.0.0.1:{dead_port()}/v1"), token_budget=1200)  # type: ignore[arg-type]
    message = str(caught.value)
    calls = int(message.split(" of ", 1)[1].split()[0])
    assert message.startswith("calls: ") and calls >= 3 and f"{calls} of {calls} model calls failed" in message
    assert "no summary came from the model" in message and "api_base=" in message
    assert isinstance(caught.value, lab.UserError)  # a notebook catches it as the lab's user error
    with pytest.raises(ModelCallsFailedError, match="model calls failed"):  # every strategy's run too
        lab.run_strategy(conversation, "lcm", model(f"http://127.0.0.1:{dead_port()}/v1"), 1200, freshTailCount=2)


def test_refused_credentials_raise_naming_the_key(conversation: Conversation, server: FakeOpenAIServer) -> None:
    server.enqueue(*[Reply(status=401)] * 400)
    with pytest.raises(ModelCallsFailedError, match="rejected the credentials.*OPENAI_API_KEY.*model calls refused"):
        lab.replay(conversation, SETTINGS, model(server.base_url), token_budget=1200)  # type: ignore[arg-type]
    assert server.completion_requests


def test_some_failed_calls_are_one_warning_with_the_counts(conversation: Conversation, server: FakeOpenAIServer) -> None:
    server.enqueue(Reply(status=500), Reply(status=503))  # the first two calls fail, the rest are answered
    with pytest.warns(ModelCallsWarning) as caught:
        run = lab.replay(conversation, SETTINGS, model(server.base_url), token_budget=1200)  # type: ignore[arg-type]
    calls = [call for turn in run.turns for call in turn.calls]
    (warning,) = ours(caught.list)
    assert f"2 of {len(calls)} model calls failed (server_error ×2" in str(warning.message) and len(calls) >= 3
    assert "truncation fallback" in str(warning.message) and warning.message.failed == 2  # type: ignore[union-attr]
    assert warning.filename == __file__  # shown at the notebook's line, not inside the lab
    assert sum(1 for call in calls if call.failure) == 2  # the run stands, its fallbacks marked

    server.enqueue(Reply(status=500))
    with pytest.warns(ModelCallsWarning) as caught:  # a strategy run: one warning, not one per layer
        lab.run_strategy(conversation, "lcm", model(server.base_url), 1200, freshTailCount=2)
    (warning,) = ours(caught.list)
    assert "1 of " in str(warning.message) and warning.filename == __file__


def test_the_offline_summarizer_gives_no_warning(conversation: Conversation) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = lab.replay(conversation, SETTINGS, lab.get_summarizer("offline"), token_budget=1200)
        lab.run_strategy(conversation, "lcm", lab.get_summarizer("offline"), 1200, freshTailCount=2)
    assert run.summaries and not caught


def test_a_caller_that_says_it_itself_asks_for_no_check(conversation: Conversation) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = lab.replay(conversation, SETTINGS, model(f"http://127.0.0.1:{dead_port()}/v1"), token_budget=1200,  # type: ignore[arg-type]
                         check_calls=False)  # fmt: skip
    calls = [call for turn in run.turns for call in turn.calls]
    assert calls and all(call.failure for call in calls) and not caught
