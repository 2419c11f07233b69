"""Control summarizers: deliberately useless summaries that a trustworthy metric must not reward.

Each one answers the engine's :class:`~lcm_lab.engine.protocol.SummaryRequest` with text of the
size the offline summarizer would write (:func:`control_tokens`: the target, never more than
80 % of the source), so a control costs the same context as a real summary:

* :class:`FixedTextSummarizer` — the same neutral sentence repeated, whatever the source;
* :class:`BareListSummarizer` — the hard facts of the source (names, numbers, dates, paths …)
  as a comma-separated list, with no statement relating them;
* :class:`OtherConversationSummarizer` — a window of *another* conversation's text;
* :class:`PointerOnlySummarizer` — only an ``Expand for details about:`` footer naming the
  source's facts;
* :class:`EntityListSummarizer` — every capitalised word, number and message date of the source
  (dates written out as ``8 May 2023``): every candidate *answer* of a QA set, none of their
  relations to a question.

:class:`ControlRun` is a run without summaries (plain truncation to the budget, or the full
history): it has only what a context-based score may read — ``sent``, ``conversation``,
``token_budget`` and ``turns`` — so it also tests that contract.

They are deterministic (the other-conversation window is chosen by a hash of the source) and
model-free. The metric-validity report and the adversarial tests run them through the real
engine.

>>> from lcm_lab.engine.protocol import SummaryRequest
>>> src = "[2024-03-01 10:00 UTC | user]\\nWe asked Alice to move src/app.py on 3 May 2023.\\n" * 4
>>> req = SummaryRequest(src, "leaf", 0, False, None, 40, 2088)
>>> PointerOnlySummarizer().summarize(req).text
'Expand for details about: Alice, src/app.py, 3 May 2023'
>>> BareListSummarizer().summarize(req).text
'Alice, src/app.py, 3 May 2023'
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from lcm_lab.engine.assembly.bare import estimate_serialized_message_tokens
from lcm_lab.engine.protocol import SummaryRequest, SummaryResult
from lcm_lab.engine.tokens import estimate_tokens, truncate_to_tokens
from lcm_lab.engine.types import AssembledItem, Conversation, SentContext
from lcm_lab.metrics.fact_headline import text_window
from lcm_lab.metrics.facts import extract_facts
from lcm_lab.prompts.render import CONDENSED_HEADER, LEAF_HEADER

CONTROL_MODEL = "lcm-lab-control"
POINTER_PREFIX = "Expand for details about: "
MAX_SHARE_OF_SOURCE = 0.8
FIXED_SENTENCE = "Earlier parts of the conversation were discussed here."


def control_tokens(request: SummaryRequest) -> int:
    """Token size of a control summary: the target, at most 80 % of the source, at least 1."""
    source_tokens = estimate_tokens(request.source_text)
    return max(1, min(request.target_tokens, math.floor(source_tokens * MAX_SHARE_OF_SOURCE)))


def _body_text(source: str) -> str:
    """The source without its ``[timestamp | role]`` / ``[start - end]`` header lines."""
    lines = [ln for ln in source.splitlines() if not (LEAF_HEADER.fullmatch(ln.strip()) or CONDENSED_HEADER.fullmatch(ln.strip()))]
    return "\n".join(lines)


def _fit_items(prefix: str, items: Sequence[str], max_tokens: int) -> str:
    """``prefix`` + as many items as fit in ``max_tokens`` (comma-separated; ``(none)`` for no
    items, so the engine never sees an empty summary and falls back to the raw source)."""
    items = list(items) or ["(none)"]
    line = prefix
    for i, item in enumerate(items):
        candidate = line + (", " if i else "") + item
        if estimate_tokens(candidate) > max_tokens:
            break
        line = candidate
    return line if line != prefix else truncate_to_tokens(prefix + items[0], max_tokens)


def _result(text: str, request: SummaryRequest) -> SummaryResult:
    return SummaryResult(text=text, model=CONTROL_MODEL, input_tokens=estimate_tokens(request.source_text),
                         output_tokens=estimate_tokens(text), cost_usd=0.0)


class FixedTextSummarizer:
    """The same content-free sentence, repeated to the control size."""

    name = "control-fixed"

    def __init__(self, sentence: str = FIXED_SENTENCE) -> None:
        self.sentence = sentence

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        size = control_tokens(request)
        reps = max(1, size // max(1, estimate_tokens(self.sentence + " ")))
        return _result(truncate_to_tokens(" ".join([self.sentence] * reps), size), request)


class BareListSummarizer:
    """Every hard fact of the source as one comma-separated list (entities without statements)."""

    name = "control-bare-list"

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        facts = [f.text for f in extract_facts(_body_text(request.source_text))]
        return _result(_fit_items("", facts, control_tokens(request)), request)


class PointerOnlySummarizer:
    """Only an ``Expand for details about:`` footer naming the source's facts."""

    name = "control-pointer-only"

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        facts = [f.text for f in extract_facts(_body_text(request.source_text))]
        return _result(_fit_items(POINTER_PREFIX, facts, control_tokens(request)), request)


class OtherConversationSummarizer:
    """A window of another conversation's text, of the control size.

    ``other_text`` is the donor (e.g. the rendered messages of a different LoCoMo conversation);
    the window start is chosen by a hash of the source, so the control is deterministic and
    different sources get different windows.
    """

    name = "control-other-conversation"

    def __init__(self, other_text: str) -> None:
        if not other_text.strip():
            raise ValueError("OtherConversationSummarizer needs a non-empty donor text")
        self.other_text = other_text

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        return _result(text_window(self.other_text, control_tokens(request), request.source_text), request)


_HEADER_DATE = re.compile(r"\[(\d{4})-(\d{2})-(\d{2})[^\]]*\]")
_ENTITY = re.compile(r"\b(?:[A-Z][a-zA-Z'-]+|\d+(?:[.,:]\d+)*)\b")
_PERSISTED_ROLES = frozenset({"user", "assistant", "toolResult", "tool"})


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
    """Every candidate answer of the source (names, numbers, dates) as one list, of the control size."""

    name = "control-entities"

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        entities = [e for e in source_entities(request.source_text) if e != "UTC"]
        return _result(_fit_items("", entities, control_tokens(request)), request)


CONTROL_SUMMARIZERS = {
    "control-fixed": FixedTextSummarizer,
    "control-bare-list": BareListSummarizer,
    "control-pointer-only": PointerOnlySummarizer,
    "control-other-conversation": OtherConversationSummarizer,
    "control-entities": EntityListSummarizer,
}


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
        """Raw messages (kind ``live``): all of them, or the newest fitting the budget, priced as the
        engine prices what it sends (so truncation is exactly the ``qa_retention`` floor)."""
        budget = self.token_budget if budget is None else budget
        items: list[AssembledItem] = []
        for entry in self.conversation.entries:
            message: Mapping[str, Any] | None = entry.message
            if entry.type != "message" or message is None or message.get("role") not in _PERSISTED_ROLES:
                continue
            items.append(AssembledItem(str(message["role"]), "live", entry.line, message, estimate_serialized_message_tokens(message)))
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

