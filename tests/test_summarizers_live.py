"""Real providers, opt-in: ``pytest -m live`` with a key set (skipped otherwise; never in CI)."""

from __future__ import annotations

import os

import pytest

from lcm_lab.engine.protocol import SummaryRequest
from lcm_lab.engine.tokens import estimate_tokens
from lcm_lab.store import LabStore
from lcm_lab.store.ledger import Ledger

PROVIDERS = [
    ("OPENAI_API_KEY", os.environ.get("LCM_LAB_LIVE_OPENAI_MODEL", "openai/gpt-4o-mini")),
    ("ANTHROPIC_API_KEY", os.environ.get("LCM_LAB_LIVE_ANTHROPIC_MODEL", "anthropic/claude-3-5-haiku-latest")),
    ("GEMINI_API_KEY", os.environ.get("LCM_LAB_LIVE_GEMINI_MODEL", "gemini/gemini-2.0-flash")),
]
SOURCE = "\n\n".join(
    f"[2026-03-01 10:{i:02d} UTC | {'user' if i % 2 == 0 else 'assistant'}]\n"
    f"Step {i}: we changed src/module_{i}.py; the test suite now has {i * 3} passing tests."
    for i in range(30)
)


@pytest.mark.live
@pytest.mark.parametrize(("env", "model"), PROVIDERS)
def test_real_provider_summarizes_and_is_cached(env: str, model: str) -> None:
    if not os.environ.get(env):
        pytest.skip(f"{env} is not set")
    from lcm_lab.summarizers.litellm_summarizer import LiteLLMSummarizer

    with LabStore(":memory:") as store:
        summarizer = LiteLLMSummarizer(model, ledger=Ledger(store), max_calls_per_window=4, max_cost_usd=0.05)
        request = SummaryRequest(SOURCE, "leaf", 0, False, None, 192, 2240)
        first = summarizer.summarize(request)
        assert first.text and estimate_tokens(first.text) < estimate_tokens(SOURCE)
        assert summarizer.summarize(request).cached
