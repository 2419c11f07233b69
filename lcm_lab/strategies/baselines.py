"""Baselines with no memory: sliding-window truncation and the full-context ceiling.

* ``truncate`` — the newest raw messages that fit the budget (what a host without compaction
  sends once the window is full); the floor any memory strategy has to beat.
* ``full`` — every message so far, whatever the budget: the ceiling. A turn whose context
  exceeds the budget is flagged (``path == "full:over-budget"``) rather than cut.

>>> from lcm_lab.engine.types import Conversation, InputEntry
>>> chat = Conversation("demo", entries=tuple(
...     InputEntry(i + 2, "message", {"role": "user" if i % 2 == 0 else "assistant",
...                "content": [{"type": "text", "text": f"message {i} " + "x" * 400}], "timestamp": i})
...     for i in range(6)))
>>> run = TruncateStrategy().run(chat, None, 300)
>>> [i.ref for i in run.sent().items], run.sent().estimated_tokens <= 300
([5, 6], True)
>>> FullStrategy().run(chat, None, 300).sent().path
'full:over-budget'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lcm_lab.engine.types import Conversation, SentContext
from lcm_lab.strategies.base import (
    StrategyBase,
    StrategyRun,
    StrategyTurn,
    ingest,
    newest_fitting,
    seen_messages,
    sent_context,
    state_turn,
)


def _memoryless_run(strategy: Any, conversation: Conversation, token_budget: int) -> StrategyRun:
    ingested = ingest(conversation)
    turns = tuple(StrategyTurn(index, lines, seqs) for index, lines, seqs in ingested.turns)
    return StrategyRun(
        strategy.name, dict(strategy.params), conversation, token_budget, "none", turns, ingested.messages
    )


@dataclass(frozen=True)
class TruncateStrategy(StrategyBase):
    """Sliding window: the newest raw messages that fit the budget."""

    name: str = "truncate"
    params: Mapping[str, Any] = field(default_factory=dict)

    def replay_turns(self, conversation: Conversation, summarizer: Any, token_budget: int) -> StrategyRun:
        return _memoryless_run(self, conversation, token_budget)

    def sent(self, run: StrategyRun, turn: int | None, budget: int) -> SentContext:
        items, cut = newest_fitting(run, seen_messages(run, state_turn(run, turn)), budget)
        return sent_context(items, budget, turn, "truncated" if cut else "complete")


@dataclass(frozen=True)
class FullStrategy(StrategyBase):
    """The whole history, never cut (the ceiling); over-budget contexts are flagged."""

    name: str = "full"
    params: Mapping[str, Any] = field(default_factory=dict)

    def replay_turns(self, conversation: Conversation, summarizer: Any, token_budget: int) -> StrategyRun:
        return _memoryless_run(self, conversation, token_budget)

    def sent(self, run: StrategyRun, turn: int | None, budget: int) -> SentContext:
        items = run.message_items(seen_messages(run, state_turn(run, turn)))
        total = sum(i.tokens for i in items)
        return sent_context(items, budget, turn, "full:over-budget" if total > budget else "complete")
