"""Control summarizers: deliberately useless summaries that a trustworthy metric must not reward.

Each one answers the engine's :class:`~lcm_lab.engine.protocol.SummaryRequest` with text of the
size the offline summarizer would write (:func:`control_tokens`: the target, never more than
80 % of the source), so a control costs the same context as a real summary:

* :class:`FixedTextSummarizer` — the same neutral sentence repeated, whatever the source;
* :class:`BareListSummarizer` — the hard facts of the source (names, numbers, dates, paths …)
  as a comma-separated list, with no statement relating them;
* :class:`OtherConversationSummarizer` — a window of *another* conversation's text;
* :class:`PointerOnlySummarizer` — only an ``Expand for details about:`` footer naming the
  source's facts.

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
from collections.abc import Sequence

from lcm_lab.engine.protocol import SummaryRequest, SummaryResult
from lcm_lab.engine.tokens import estimate_tokens, truncate_to_tokens
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


CONTROL_SUMMARIZERS = {
    "control-fixed": FixedTextSummarizer,
    "control-bare-list": BareListSummarizer,
    "control-pointer-only": PointerOnlySummarizer,
    "control-other-conversation": OtherConversationSummarizer,
}
