"""Control summarizers and control runs: strategies a trustworthy metric must *not* reward.

Injected into the normal replay like any summarizer, so the metrics see nothing special:

* :class:`FixedTextSummarizer` (``control-fixed``) — the same sentence for every call;
* :class:`EntityListSummarizer` (``control-entities``) — a bare list of every name, number and
  date of the source (dates of the message headers written out as ``8 May 2023``): every
  candidate answer, none of their relations to anything;
* :class:`OtherTextSummarizer` (``control-other``) — text of *another* conversation of the size
  the call asks for.

:class:`ControlRun` is a run without summaries (plain truncation to the budget, or the full
history): it has only what a context-based score may read — ``sent``, ``conversation``,
``token_budget`` and ``turns`` — so it also tests that contract.

>>> from lcm_lab.engine.protocol import SummaryRequest
>>> req = SummaryRequest("[2023-05-08 14:12 UTC | user]\\nCaroline met Mel in Boston at 5 pm.", "leaf", 0, False, None, 50, 100)
>>> EntityListSummarizer().summarize(req).text
'8 May 2023, Caroline, Mel, Boston, 5'
>>> FixedTextSummarizer().summarize(req).text
'The conversation continued.'
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from lcm_lab.engine.protocol import SummaryRequest, SummaryResult
from lcm_lab.engine.tokens import estimate_tokens
from lcm_lab.engine.types import AssembledItem, Conversation, SentContext
from lcm_lab.metrics.qa_reader import reader_text

_HEADER_DATE = re.compile(r"\[(\d{4})-(\d{2})-(\d{2})[^\]]*\]")
_ENTITY = re.compile(r"\b(?:[A-Z][a-zA-Z'-]+|\d+(?:[.,:]\d+)*)\b")
_PERSISTED_ROLES = frozenset({"user", "assistant", "toolResult", "tool"})
FIXED_TEXT = "The conversation continued."


class FixedTextSummarizer:
    """``control-fixed``: one fixed sentence, whatever the source."""

    name = "control-fixed"

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        return SummaryResult(text=FIXED_TEXT, model=self.name)


def source_entities(text: str) -> list[str]:
    """Dates of message headers (``8 May 2023``), capitalised words and numbers, first occurrence order.

    >>> source_entities("[2023-05-08 14:12 UTC | user]\\nI saw Ann on 3 June.")
    ['8 May 2023', 'Ann', '3', 'June']
    """
    seen: dict[str, None] = {}
    for match in _HEADER_DATE.finditer(text):
        day = date(int(match[1]), int(match[2]), int(match[3]))
        seen.setdefault(f"{day.day} {day:%B %Y}", None)
    for match in _ENTITY.finditer(_HEADER_DATE.sub(" ", text)):
        seen.setdefault(match.group(0), None)
    return list(seen)


class EntityListSummarizer:
    """``control-entities``: a bare comma-separated list of the source's names, numbers and dates."""

    name = "control-entities"

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        entities = [e for e in source_entities(request.source_text) if e != "UTC"]
        return SummaryResult(text=", ".join(entities) or FIXED_TEXT, model=self.name)


class OtherTextSummarizer:
    """``control-other``: consecutive text of another conversation, ``target_tokens`` long per call.

    Deterministic for a deterministic replay (calls consume the other text in order, wrapping).
    """

    name = "control-other"

    def __init__(self, texts: Sequence[str]) -> None:
        self._texts = [t for t in texts if t.strip()]
        if not self._texts:
            raise ValueError("OtherTextSummarizer needs some text of another conversation")
        self._next = 0

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        out: list[str] = []
        used = 0
        while used < request.target_tokens:
            text = self._texts[self._next % len(self._texts)]
            self._next += 1
            out.append(text)
            used += estimate_tokens(text)
        return SummaryResult(text="\n".join(out), model=self.name)


@dataclass(frozen=True)
class ControlTurn:
    """The one turn of a control run (only its count is read by scores)."""

    turn: int


@dataclass(frozen=True)
class ControlRun:
    """A run without summaries: plain truncation to ``token_budget`` or (``full=True``) the whole history."""

    conversation: Conversation
    token_budget: int
    full: bool = False
    run_id: str = "control"

    @property
    def turns(self) -> tuple[ControlTurn, ...]:
        return (ControlTurn(0),)

    def sent(self, turn: int | None = None, budget: int | None = None) -> SentContext:
        """Raw messages (kind ``live``): all of them, or the newest fitting the budget."""
        budget = self.token_budget if budget is None else budget
        items: list[AssembledItem] = []
        for entry in self.conversation.entries:
            message: Mapping[str, Any] | None = entry.message
            if entry.type != "message" or message is None or message.get("role") not in _PERSISTED_ROLES:
                continue
            items.append(AssembledItem(str(message["role"]), "live", entry.line, message, estimate_tokens(reader_text(message))))
        if not self.full:
            kept: list[AssembledItem] = []
            used = 0
            for item in reversed(items):
                if used + item.tokens > budget:
                    break
                kept.append(item)
                used += item.tokens
            items = kept[::-1]
        path = "full-history" if self.full else "truncation"
        return SentContext(budget, sum(i.tokens for i in items), path, False, tuple(items), turn=turn)

