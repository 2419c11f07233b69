"""Turn-by-turn replay of a conversation through the compaction engine.

``replay(conversation, config, summarizer, token_budget=...)`` follows the reference protocol
(reference-runs README §1): each turn's messages are ingested, stored tokens are compared with
``floor(contextThreshold × budget)``, and threshold compaction runs inline when over.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lcm_lab.engine.config import LcmConfig
from lcm_lab.engine.types import (
    Assembly,
    ContextItem,
    Conversation,
    LargeFile,
    StoredMessage,
    Summary,
    TurnRecord,
)


@dataclass(frozen=True)
class Replay:
    """The outcome of a replay: per-turn records and the final DAG, with views over them."""

    conversation: Conversation
    config: LcmConfig
    token_budget: int
    summarizer: str
    turns: tuple[TurnRecord, ...]
    messages: tuple[StoredMessage, ...]  # by seq (seq = index + 1)
    summaries: tuple[Summary, ...]  # creation order
    large_files: tuple[LargeFile, ...] = ()
    fidelity: str = "faithful"
    run_id: str | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)

    def context_at(self, turn: int = -1) -> tuple[ContextItem, ...]:
        """Context items after ``turn`` (negative indexes count from the end)."""
        if not self.turns:
            return ()
        return self.turns[turn].context_after

    def summary(self, summary_id: str) -> Summary:
        for s in self.summaries:
            if s.summary_id == summary_id:
                return s
        raise KeyError(summary_id)

    def assemble(self, turn: int = -1, budget: int | None = None, prompt: str | None = None) -> Assembly:
        """What the model would see after ``turn`` at ``budget`` tokens (default: the run budget)."""
        raise NotImplementedError("assembly lands with lcm_lab.engine.assembly")
