"""What readers hand to the lab store: conversations plus what was found around them.

Readers in :mod:`lcm_lab.io` never import duckdb; they parse files into these values (streaming
where files are big) and :mod:`lcm_lab.store` persists them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lcm_lab.engine.types import Conversation


@dataclass(frozen=True)
class LoadIssue:
    """A skipped or suspicious piece of input, pointing at file and line."""

    path: str
    line: int | None
    message: str
    skipped: bool = True  # False for warnings that lost nothing

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{where}: {self.message}"


@dataclass(frozen=True)
class RecordedEvent:
    """A compaction the host recorded in a transcript (pi ``compaction``/``branch_summary``,
    Claude Code ``summary`` entries, ...)."""

    kind: str
    line: int | None
    entry_id: str | None
    timestamp: str | None
    summary: str | None
    first_kept_entry_id: str | None = None
    tokens_before: int | None = None
    raw: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class QAItem:
    """A LoCoMo-style question with gold answer and evidence references (dialogue ids)."""

    qa_id: str
    question: str
    answer: str | None
    category: int | None
    evidence: tuple[str, ...] = ()
    adversarial_answer: str | None = None


@dataclass(frozen=True)
class LoadedConversation:
    """One conversation read from a source, with its recorded events and QA items."""

    conversation: Conversation
    events: tuple[RecordedEvent, ...] = ()
    qa_items: tuple[QAItem, ...] = ()
    archived: bool = False
    meta: Mapping[str, Any] = field(default_factory=dict)
