"""Recognisers for the fallback, truncation and cap markers lossless-claw writes into summaries.

Every marker format the plugin writes into ``summaries.content`` (``src/summarize.ts``, ``src/summary-fallback.ts``, ``src/compaction.ts``), across plugin versions, is one :class:`MarkerKind`. Both the
doctor (which reports them) and the shape metrics (which infer the escalation level of summaries
loaded from an lcm.db, where the level is not stored) use these.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Level = Literal["normal", "aggressive", "capped", "fallback"]


@dataclass(frozen=True)
class MarkerKind:
    """One marker format: the check name it raises, what it means, and how to find it."""

    check: str
    level: Level
    meaning: str
    since: str
    pattern: re.Pattern[str]
    at_end: bool  # the plugin appends it as the last line


MARKERS: tuple[MarkerKind, ...] = (
    MarkerKind(
        "truncation-fallback",
        "fallback",
        "deterministic fallback after the summarizer failed to shrink the source: a truncated prefix of the source",
        "v0.1.2 (chars), v0.8.0 (tokens), v0.12.0 (sanitised)",
        re.compile(r"\[Truncated from (?P<tokens>\d+) tokens\]\s*$"),
        True,
    ),
    MarkerKind(
        "directive-omitted-fallback",
        "fallback",
        "deterministic fallback that also dropped directive-shaped (prompt-injection-like) source text",
        "v0.12.0",
        re.compile(r"\[LCM fallback summary; directive-shaped untrusted content omitted\]"),
        False,
    ),
    MarkerKind(
        "summarizer-fallback",
        "fallback",
        "the summarizer itself gave up (provider failure, timeout or empty output after retry) and truncated",
        "v0.12.0",
        re.compile(r"\[LCM fallback summary; truncated for context management\]\s*$"),
        True,
    ),
    MarkerKind(
        "legacy-emergency-fallback",
        "fallback",
        "pre-v0.12 emergency summarizer (no model resolvable): a character prefix of the source",
        "≤ v0.11.x",
        re.compile(r"\[Truncated for context management\]\s*$"),
        True,
    ),
    MarkerKind(
        "capped-summary",
        "capped",
        "the summary exceeded target × summaryMaxOverageFactor and was cut to the hard cap",
        "v0.9.0",
        re.compile(r"\[Capped(?: from (?P<from>\d+) tokens)?(?: to ~(?P<to>\d+))?\]\s*$"),
        True,
    ),
    MarkerKind(
        "directive-omitted-inline",
        "fallback",
        "directive-shaped source text replaced inline by the fallback sanitiser",
        "v0.12.0",
        re.compile(r"\[LCM fallback summary omitted directive-shaped untrusted content\]\."),
        False,
    ),
)

EMERGENCY_MODEL = "emergency-fallback"


@dataclass(frozen=True)
class MarkerHit:
    """A marker found in a summary, with the matched text as evidence."""

    kind: MarkerKind
    evidence: str


def find_markers(content: str) -> list[MarkerHit]:
    """All marker formats present in ``content`` (end-anchored ones only at the end).

    >>> [h.kind.check for h in find_markers("Some text\\n[Truncated from 18 tokens]")]
    ['truncation-fallback']
    """
    hits = []
    for kind in MARKERS:
        match = kind.pattern.search(content)
        if match:
            hits.append(MarkerHit(kind, match.group(0).strip()))
    return hits


def inferred_level(content: str, model: str | None = None, known: Level | None = None) -> Level:
    """The escalation level of a summary: ``known`` if recorded, else inferred from markers.

    A stored summary without markers is ``normal`` (an aggressive pass that succeeded leaves no
    trace in the content, so loaded DBs under-count ``aggressive``).
    """
    if known is not None:
        return known
    if model == EMERGENCY_MODEL:
        return "fallback"
    levels = {hit.kind.level for hit in find_markers(content)}
    if "fallback" in levels:
        return "fallback"
    if "capped" in levels:
        return "capped"
    return "normal"
