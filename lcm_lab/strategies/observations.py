"""ClawVault's observation format and its rules (ClawVault's ``src/lib/observation-format.ts`` and ``src/observer/compressor.ts``), in the lab's code.

An observation is a line ``- [type|c=0.00|i=0.00] content`` under a ``## YYYY-MM-DD`` heading.
This module holds the pure rules applied to such lines: type inference (an ordered cascade),
importance bands and inference, :func:`enforce_importance_rules`, output normalisation, and the
merge/dedupe rule (union by normalised content; on collision the type of the more important
record, ``max(c)``, ``max(i)`` and the longer content). The regular expressions are the lab's
own, written from the description of ClawVault's categories (not copied from its code).

>>> obs = parse_markdown("## 2026-03-10\\n- [fact|c=0.70|i=0.30] Decision: use PostgreSQL for the ledger")
>>> enforce_importance_rules(obs[0]).type, enforce_importance_rules(obs[0]).importance
('decision', 0.85)
>>> importance_band(0.85), importance_band(0.5), importance_band(0.1)
('structural', 'potential', 'contextual')
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

TYPES: tuple[str, ...] = (
    "decision", "preference", "fact", "commitment", "task", "todo", "commitment-unresolved",
    "milestone", "lesson", "relationship", "project",
)  # fmt: skip
LEGACY_EMOJI = {"🔴": (0.9, 0.9), "🟡": (0.6, 0.8), "🟢": (0.2, 0.7)}  # emoji -> (importance, confidence)

_LINE = re.compile(
    r"^\s*[-*]\s*\[(?P<type>[a-z-]+)\|c=(?P<c>[0-9.]+)\|i=(?P<i>[0-9.]+)\]\s*(?P<content>.+?)\s*$"
)
_LEGACY = re.compile(r"^\s*[-*]\s*(?P<emoji>🔴|🟡|🟢)\s*(?P<content>.+?)\s*$")
_HEADING = re.compile(r"^\s*##\s+(?P<date>\d{4}-\d{2}-\d{2})\s*$")


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


# The type cascade, in the documented order (first match wins; ``fact`` is the rest).
TYPE_CASCADE: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "decision",
        _rx(r"^decision:|\b(decided|decision|we chose|chose to|going with|settled on|opted (for|to))\b"),
    ),
    (
        "commitment-unresolved",
        _rx(r"\b(unresolved|open question|tbd|not yet decided|undecided|still pending)\b"),
    ),
    ("todo", _rx(r"^todo:|\btodo\b|\bremember to\b")),
    ("task", _rx(r"\b(we need to|need to|have to|must|action item|follow[- ]up)\b")),
    (
        "commitment",
        _rx(r"^\[commitment\]|\b(i'll|i will|we'll|we will|agreed to|promised? to|committed to|going to)\b"),
    ),
    (
        "milestone",
        _rx(
            r"\b(shipped|released|launched|merged|deployed|went live|completed|published|v\d+\.\d+(\.\d+)?)\b"
        ),
    ),
    ("preference", _rx(r"\b(prefers?|preferred|preference|likes?|dislikes?|favou?rite|would rather)\b")),
    ("lesson", _rx(r"\b(learned|lesson|turns out|realized|realised|gotcha|note to self|root cause)\b")),
    (
        "relationship",
        _rx(
            r"\b(met with|talked (with|to)|works (with|for)|manager|colleague|client|introduced|reports to)\b"
        ),
    ),
    ("project", _rx(r"\b(project|repository|repo|codebase|roadmap|initiative)\b")),
)
CRITICAL = _rx(
    r"\b(decision|decided|error|fail(s|ed|ure)?|blocker|blocked|breaking|outage|merged (pr|pull request)|shipped|released|"
    r"signed (the )?contract|publish(ed)? v?\d+\.\d+)\b|pricing[^.]*\$|\$\s?\d|\bdeadline\b[^.]*\b(\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}|"
    r"mon|tue|wed|thu|fri|sat|sun|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|tomorrow|today|end of)"
)
NOTABLE = _rx(
    r"\b(prefer\w*|architecture|deadline|deploy\w*|migrat\w*|dns|schema|database|security|budget|infrastructure|api|release)\b"
)
TASK_SIGNAL = _rx(r"\btodo\b|\bwe need to\b|\bremember to\b|\bi'll\b|\bi will\b|\bgoing to\b|\btbd\b")
UNRESOLVED_SIGNAL = _rx(r"\b(tbd|unresolved|open question)\b")
SCENE_SETTER = _rx(
    r"\b(meeting (recap|started)|session started|kickoff (begins|started)|let'?s (get started|begin))\b"
)
ACK_ONLY = _rx(
    r"^\W*(\d{1,2}:\d{2}\s+)?((user|assistant)\s*:\s*)?"
    r"((ok(ay)?|got it|thanks?( you)?|acknowledged|sounds good|sure|yes|yep|noted|cool|great)[\s,.!]*)+$"
)
STRUCTURAL_TYPES = frozenset({"decision", "commitment", "milestone"})


@dataclass(frozen=True)
class Observation:
    """One observation record."""

    date: str  # YYYY-MM-DD group it sits under
    type: str
    confidence: float
    importance: float
    content: str

    def line(self) -> str:
        return f"- [{self.type}|c={self.confidence:.2f}|i={self.importance:.2f}] {self.content}"


def importance_band(importance: float) -> str:
    """``structural`` (≥ 0.80), ``potential`` (≥ 0.40) or ``contextual``."""
    return "structural" if importance >= 0.8 else "potential" if importance >= 0.4 else "contextual"


def infer_type(text: str) -> str:
    """The first type of the cascade whose pattern matches (``fact`` when none does).

    >>> infer_type("TODO: rotate the keys"), infer_type("I'll send the deck"), infer_type("The sky is blue")
    ('todo', 'commitment', 'fact')
    """
    for kind, pattern in TYPE_CASCADE:
        if pattern.search(text):
            return kind
    return "fact"


def infer_importance(text: str, kind: str | None = None) -> float:
    """The fallback's importance: 0.9 critical, 0.72 unresolved, 0.65 task/todo, 0.6 notable,
    0.55 decision/commitment/milestone, 0.45 preference/lesson/relationship/project, else 0.2.

    >>> infer_importance("the build failed"), infer_importance("remember to water plants"), infer_importance("it rained")
    (0.9, 0.65, 0.2)
    """
    kind = kind or infer_type(text)
    if CRITICAL.search(text):
        return 0.9
    if kind == "commitment-unresolved":
        return 0.72
    if kind in ("task", "todo"):
        return 0.65
    if NOTABLE.search(text):
        return 0.6
    if kind in STRUCTURAL_TYPES:
        return 0.55
    if kind in ("preference", "lesson", "relationship", "project"):
        return 0.45
    return 0.2


def enforce_importance_rules(record: Observation) -> Observation | None:
    """ClawVault's post-processing of every record; ``None`` when the record is noise.

    >>> r = Observation("2026-03-10", "fact", 0.5, 0.3, "we need to renew the cert")
    >>> e = enforce_importance_rules(r); (e.type, e.importance, e.confidence)
    ('task', 0.65, 0.8)
    >>> enforce_importance_rules(Observation("2026-03-10", "fact", 0.9, 0.2, "Thanks!")) is None
    True
    """
    kind, c, i, text = record.type, record.confidence, record.importance, record.content
    lowered = text.lower()
    if lowered.startswith("[commitment]"):
        kind = "commitment"
    elif lowered.startswith("decision:"):
        kind = "decision"
    elif lowered.startswith("todo:"):
        kind = "todo"
    if CRITICAL.search(text):
        i, c = max(i, 0.85), max(c, 0.85)
        if kind == "fact":
            kind = infer_type(text)
    elif NOTABLE.search(text):
        i, c = max(i, 0.5), max(c, 0.75)
    if TASK_SIGNAL.search(text):
        if kind == "fact":
            kind = "task"
        i, c = max(i, 0.72 if UNRESOLVED_SIGNAL.search(text) else 0.65), max(c, 0.8)
    if kind in STRUCTURAL_TYPES:
        i = max(i, 0.6)
    if (SCENE_SETTER.search(text) and i < 0.5) or (ACK_ONLY.search(text) and i < 0.4):
        return None
    return replace(record, type=kind, confidence=round(min(c, 1.0), 2), importance=round(min(i, 1.0), 2))


def normalize_content(content: str) -> str:
    """The dedupe key: leading ``HH:MM`` removed, spaces collapsed, lower case.

    >>> normalize_content("14:05  Chose   Redis")
    'chose redis'
    """
    return " ".join(re.sub(r"^\s*\d{1,2}:\d{2}\s+", "", content).split()).lower()


def parse_markdown(text: str, default_date: str | None = None) -> list[Observation]:
    """Observation records of a markdown document (typed and legacy emoji lines); lines before
    any heading take ``default_date``; other lines are ignored."""
    out: list[Observation] = []
    date = default_date
    for line in text.splitlines():
        heading = _HEADING.match(line)
        if heading:
            date = heading["date"]
            continue
        match = _LINE.match(line)
        if match and date is not None:
            c, i = min(max(float(match["c"]), 0.0), 1.0), min(max(float(match["i"]), 0.0), 1.0)
            kind = match["type"] if match["type"] in TYPES else "fact"
            out.append(Observation(date, kind, c, i, match["content"]))
            continue
        legacy = _LEGACY.match(line)
        if legacy and date is not None:
            i, c = LEGACY_EMOJI[legacy["emoji"]]
            out.append(Observation(date, infer_type(legacy["content"]), c, i, legacy["content"]))
    return out


def render_markdown(records: Iterable[Observation]) -> str:
    """Records grouped under ``## date`` headings (dates ascending, record order kept)."""
    by_date: dict[str, list[Observation]] = {}
    for record in records:
        by_date.setdefault(record.date, []).append(record)
    blocks = [f"## {date}\n" + "\n".join(r.line() for r in by_date[date]) for date in sorted(by_date)]
    return "\n\n".join(blocks)


def normalize_output(text: str, today: str) -> str | None:
    """Clean a model's reply: strip code fences, add today's heading when there is none, split
    fused wiki-links. ``None`` when the reply holds no observation line (invalid output).

    >>> normalize_output("```markdown\\n- [fact|c=0.9|i=0.5] Met [[Ana]]today\\n```", "2026-03-10")
    '## 2026-03-10\\n- [fact|c=0.9|i=0.5] Met [[Ana]] today'
    """
    body = re.sub(r"^\s*```[a-zA-Z]*\s*$", "", text.strip(), flags=re.MULTILINE).strip()
    body = re.sub(r"(\w)\[\[", r"\1 [[", body)
    body = re.sub(r"\]\](\w)", r"]] \1", body)
    if not any(_LINE.match(line) or _LEGACY.match(line) for line in body.splitlines()):
        return None
    if not any(_HEADING.match(line) for line in body.splitlines()):
        body = f"## {today}\n{body}"
    return body


def _combine(a: Observation, b: Observation) -> Observation:
    kind = a.type if a.importance >= b.importance else b.type
    content = a.content if len(a.content) >= len(b.content) else b.content
    return Observation(
        a.date, kind, max(a.confidence, b.confidence), max(a.importance, b.importance), content
    )


def merge(existing: Sequence[Observation], incoming: Sequence[Observation]) -> list[Observation]:
    """Union of two record sets per date, keyed by normalised content; nothing is ever deleted.

    >>> old = [Observation("2026-03-10", "fact", 0.7, 0.3, "09:00 Chose Redis")]
    >>> new = [Observation("2026-03-10", "decision", 0.9, 0.85, "chose redis for caching"),
    ...        Observation("2026-03-10", "fact", 0.8, 0.6, "chose  REDIS")]
    >>> [(r.type, r.confidence, r.importance, r.content) for r in merge(old, new)]
    [('fact', 0.8, 0.6, '09:00 Chose Redis'), ('decision', 0.9, 0.85, 'chose redis for caching')]
    """
    out: dict[tuple[str, str], Observation] = {}
    for record in [*existing, *incoming]:
        key = (record.date, normalize_content(record.content))
        out[key] = _combine(out[key], record) if key in out else record
    return list(out.values())


def dedupe(records: Sequence[Observation]) -> list[Observation]:
    """One record per (date, normalised content) (the rule of :func:`merge`)."""
    return merge(records, [])
