"""ClawVault's compressor (``src/observer/compressor.ts``): sanitise, prompt, normalise, enforce, merge;
and its deterministic fallback, which the lab runs only as its own strategy (``observer_regex``).

The prompt is the lab's own wording following the documented structure (dated groups, the line
format, importance bands, type prefixes, quality filters, keyword preservation). The fallback
follows the documented rules *without* ClawVault's fixture-specific rewrites
(``calibrateFallbackCandidate``), which only existed to raise its benchmark score.

>>> lines = sanitize([RawLine("user", "We decided to use PostgreSQL.   Deadline is 2026-03-20", "2026-03-10 14:05:00"),
...                   RawLine("tool", "{\\"stdout\\": \\"...\\"}", None)])
>>> [line.text for line in lines]
['We decided to use PostgreSQL. Deadline is 2026-03-20']
>>> [(o.type, o.importance) for o in fallback_observations(lines, "2026-03-10")]
[('decision', 0.9)]
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from lcm_lab.strategies.observations import (
    ACK_ONLY,
    CRITICAL,
    STRUCTURAL_TYPES,
    TASK_SIGNAL,
    Observation,
    infer_importance,
    infer_type,
    render_markdown,
)

SYSTEM_MESSAGE = "You turn raw session logs into short, durable observations."
TEMPERATURE = 0.1
MAX_TOKENS = 1400
DROPPED_ROLES = re.compile(r"^(system|developer|metadata|tool.*)$", re.IGNORECASE)
_DATA_URI = re.compile(r"data:[\w/+.-]+;base64,[A-Za-z0-9+/=]+")
_BASE64 = re.compile(r"\b[A-Za-z0-9+/]{80,}={0,2}")
_NOISE_KEYS = re.compile(
    r"toolresult|tool_result|stdout|stderr|exitcode|exit_code|trace_id|session_id|request_id|tool_call_id",
    re.IGNORECASE,
)
_LOW_SIGNAL_OPENING = re.compile(
    r"^\W*(hi|hello|hey|good (morning|afternoon|evening)|let'?s (start|begin|get started)|quick (sync|check-?in))\b[\s\w,]{0,30}[.!?]*$",
    re.IGNORECASE,
)
_FINALIZE_NO_DEADLINE = re.compile(r"\bwe need to finali[sz]e\b", re.IGNORECASE)
_DEADLINE = re.compile(
    r"\b(deadline|by (mon|tue|wed|thu|fri|sat|sun|tomorrow|end of)|\d{4}-\d{2}-\d{2})", re.IGNORECASE
)
_MAINTENANCE = re.compile(
    r"\b(backup|rotat\w*|patch\w*|update[sd]?|renew\w*|cleanup|clean(ed)? up|restart\w*|health ?check|monitor\w*|log rotation|disk|cert\w*)\b",
    re.IGNORECASE,
)
_NO_INCIDENTS = re.compile(
    r"\b(no incidents?|no issues|all green|nothing unusual|no alerts|uneventful)\b", re.IGNORECASE
)
_CONFIDENCE_BOOST = re.compile(r"\b(decided|chose|committed|deadline|released|merged)\b", re.IGNORECASE)


@dataclass(frozen=True)
class RawLine:
    """One raw message for the observer: role, plain text and its timestamp (``YYYY-MM-DD HH:MM:SS``)."""

    role: str
    text: str
    at: str | None = None

    @property
    def clock(self) -> str | None:
        return self.at[11:16] if self.at and len(self.at) >= 16 else None


def estimate_tokens(text: str) -> int:
    """ClawVault's estimate: ``ceil(chars / 4)``."""
    return math.ceil(len(text) / 4)


def sanitize(lines: Sequence[RawLine]) -> list[RawLine]:
    """Drop system/developer/metadata/tool messages, base64 payloads and structured tool noise;
    collapse whitespace. Empty results are dropped."""
    out: list[RawLine] = []
    for line in lines:
        if DROPPED_ROLES.match(line.role):
            continue
        text = _BASE64.sub("", _DATA_URI.sub("", line.text))
        text = " ".join(text.split())
        stripped = text.strip()
        if len(stripped) >= 40 and stripped[:1] in "{[" and _NOISE_KEYS.search(stripped):
            continue
        if text:
            out.append(RawLine(line.role, text, line.at))
    return out


# -- the model prompt (the lab's wording) ---------------------------------------------------

PROMPTS: dict[str, str] = {
    "default": """You are the observer of a working session. Read the raw messages below and write down what is worth remembering later, as durable observations.

Output format (markdown only, nothing else):
- Group observations under a heading per day: `## YYYY-MM-DD`.
- One observation per line: `- [type|c=<0.00-1.00>|i=<0.00-1.00>] <text>`.
- `c` is how sure you are that the observation is correctly extracted; `i` is how much it matters:
  * 0.80 and above — structural: major decisions, blockers, releases, commitments made to others;
  * 0.40 to 0.79 — potentially important: preferences, plans, notable technical details;
  * below 0.40 — routine context.
- Types: decision, preference, fact, commitment, task, todo, commitment-unresolved, milestone, lesson, relationship, project.
  Start todos with `TODO: `, commitments ("I'll ...", "agreed to ...") with `[COMMITMENT] `, decisions with `Decision: `.
  Use `task` rarely and `fact` only when nothing else fits.

What to keep and what to skip:
- Skip command-line errors, retries, debugging chatter and plain acknowledgements.
- Fold related events and retry sequences into one observation; report outcomes rather than process.
- When several agents or people speak, say who said or did what.
- Keep every milestone as its own line.
- Keep names, product names, technical terms, amounts of money and dates exactly as written, so the observations stay searchable.

Observations recorded so far (keep them; add to them):
{existing}

Raw messages (numbered, oldest first):
{messages}

Reply with the complete, updated observation markdown only.""",
    "terse": """Extract durable observations from the session messages below.
Markdown only: `## YYYY-MM-DD` headings, then lines `- [type|c=0.00|i=0.00] text`.
Importance: >=0.80 decisions, blockers, releases, commitments; 0.40-0.79 useful details; <0.40 routine.
Prefixes: `TODO: ` for todos, `[COMMITMENT] ` for promises, `Decision: ` for decisions. Keep names, terms, money and dates verbatim. Skip noise and acknowledgements.

Existing observations:
{existing}

Messages:
{messages}

Return the full updated observation markdown.""",
}


def build_prompt(
    lines: Sequence[RawLine], existing: Sequence[Observation], prompt: str = "default"
) -> tuple[str, str, str]:
    """``(system, user, template_hash)`` for one compression call.

    ``prompt`` names a template of :data:`PROMPTS` or is a template text itself (with
    ``{existing}`` and ``{messages}`` placeholders).
    """
    template = PROMPTS.get(prompt, prompt)
    if "{messages}" not in template:
        raise ValueError(
            f"unknown observer prompt {prompt!r}: name one of {', '.join(PROMPTS)} or give a template with {{messages}}"
        )
    numbered = "\n".join(
        f"{n}. " + (f"[{line.at[:16]}] " if line.at else "") + f"{line.role}: {line.text}"
        for n, line in enumerate(lines, start=1)
    )
    user = template.replace("{existing}", render_markdown(existing) or "(none yet)").replace(
        "{messages}", numbered
    )
    digest = hashlib.sha256(f"{SYSTEM_MESSAGE}\n{template}".encode()).hexdigest()
    return SYSTEM_MESSAGE, user, digest


# -- the deterministic fallback (strategy ``observer_regex``) --------------------------------


def _fallback_confidence(text: str, kind: str, importance: float) -> float:
    c = 0.72
    if importance >= 0.8:
        c += 0.12
    if kind in STRUCTURAL_TYPES:
        c += 0.06
    if TASK_SIGNAL.search(text):
        c += 0.06
    if _CONFIDENCE_BOOST.search(text):
        c += 0.05
    return round(min(max(c, 0.0), 1.0), 2)


def fallback_observations(lines: Sequence[RawLine], today: str) -> list[Observation]:
    """One candidate per message (280 characters at most), typed and weighted by the regex rules;
    acknowledgements, low-signal openings and deadline-less "we need to finalize" dropped; a routine
    maintenance session collapsed into one low-importance fact; nothing left ⇒ one placeholder.

    >>> [o.content for o in fallback_observations([RawLine("user", "ok thanks", "2026-03-10 09:00:00")], "2026-03-10")]
    ['09:00 Processed session updates.']
    """
    candidates: list[Observation] = []
    for line in lines:
        text = line.text[:280]
        if ACK_ONLY.search(text) or _LOW_SIGNAL_OPENING.match(text):
            continue
        if _FINALIZE_NO_DEADLINE.search(text) and not _DEADLINE.search(text):
            continue
        kind = infer_type(text)
        importance = infer_importance(text, kind)
        date = line.at[:10] if line.at else today
        content = f"{line.clock} {line.role}: {text}" if line.clock else f"{line.role}: {text}"
        candidates.append(
            Observation(date, kind, _fallback_confidence(text, kind, importance), importance, content)
        )
    if len(candidates) >= 3 and not any(c.type in STRUCTURAL_TYPES for c in candidates):
        routine = sum(1 for c in candidates if _MAINTENANCE.search(c.content))
        if routine >= max(2, math.ceil(0.6 * len(candidates))) and any(
            _NO_INCIDENTS.search(c.content) for c in candidates
        ):
            clock = lines[-1].clock or "00:00"
            return [
                Observation(
                    candidates[-1].date,
                    "fact",
                    0.82,
                    0.28,
                    f"{clock} Routine maintenance completed with no incidents.",
                )
            ]
    if not candidates:
        clock = (lines[-1].clock if lines else None) or "00:00"
        date = (lines[-1].at[:10] if lines and lines[-1].at else None) or today
        return [Observation(date, "fact", 0.7, 0.2, f"{clock} Processed session updates.")]
    return candidates


def is_critical(text: str) -> bool:
    return CRITICAL.search(text) is not None
