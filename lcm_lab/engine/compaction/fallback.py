"""Deterministic summaries the engine writes without a model (spec §4.7, §5.9).

When a summarizer returns nothing, or twice fails to shrink its input, lossless-claw stores a
truncated copy of the source with a ``[Truncated from N tokens]`` note, after replacing
prompt-injection-shaped sentences; a summary far over its target is cut with a ``[Capped …]`` note.
"""

from __future__ import annotations

import re

from lcm_lab.engine.js.strings import js_trim, js_trim_end
from lcm_lab.engine.tokens import estimate_tokens, truncate_to_tokens

DIRECTIVE_OMISSION = "[LCM fallback summary omitted directive-shaped untrusted content]."
FALLBACK_MARKER = "[LCM fallback summary; truncated for context management]"
DIRECTIVE_MARKER = "[LCM fallback summary; directive-shaped untrusted content omitted]"
MIN_FALLBACK_MAX_TOKENS = 64

_SCOPE_PREFIX = r"(?:all\s+)?(?:of\s+)?(?:(?:the|your|my|any|these|those)\s+)?"
_SCOPE = r"(?:(?:previous|prior|above|earlier)(?:\s+(?:system|developer))?|(?:system|developer))"
# \b follows JavaScript (ASCII word characters), hence re.ASCII.
_DIRECTIVE_PATTERNS = (
    re.compile(
        "|".join(
            (
                rf"\b(ignore|disregard|forget|override)\s+{_SCOPE_PREFIX}{_SCOPE}\s+(instructions?|prompts?|rules?)\b",
                r"\byou\s+are\s+now\b",
                r"\bfrom\s+now\s+on\b",
                r"\breply\s+only\s+with\b",
                r"\b(reveal|print|show|dump|exfiltrate)\s+(?:(?:the|your|my|any)\s+)?(system|developer)\s+prompt\b",
                r"\bjailbreak\b",
            )
        ),
        re.IGNORECASE | re.ASCII,
    ),
    re.compile(r"\bdan\s+mode\b", re.IGNORECASE | re.ASCII),
    re.compile(
        r"\banswer\s+(?:(?:every|all)\s+)?(?:future\s+)?(?:users?|requests?|questions?|prompts?|messages?)\s+as\s+dan\b",
        re.IGNORECASE | re.ASCII,
    ),
    re.compile(r"\b(?:act\s+as|pretend\s+to\s+be)\s+DAN\b", re.ASCII),
)
_UNITS = re.compile(r"\n+|[^\n.!?]+[.!?]*\s*")
_NEWLINES = re.compile(r"^\n+$")


def omit_directives(text: str) -> tuple[str, bool]:
    """Replace directive-shaped sentences by one omission marker per run; report whether any were."""
    units = _UNITS.findall(text) or [text]
    out: list[str] = []
    omitted = False
    last_was_omission = False
    for unit in units:
        if _NEWLINES.match(unit):
            out.append(unit)
            last_was_omission = False
            continue
        if any(p.search(unit) for p in _DIRECTIVE_PATTERNS):
            omitted = True
            if not last_was_omission:
                out.append(f"{DIRECTIVE_OMISSION} ")
                last_was_omission = True
            continue
        out.append(unit)
        last_was_omission = False
    return js_trim(re.sub(r"[ \t]+\n", "\n", "".join(out))), omitted


def deterministic_fallback(source: str, input_tokens: int, max_tokens: int = 512) -> str:
    """The escalation fallback: a prefix of the source within ``max_tokens`` plus its note."""
    trimmed = js_trim(source)
    truncation_note = f"[Truncated from {input_tokens} tokens]"
    if not trimmed:
        return truncation_note
    sanitized, omitted = omit_directives(trimmed)
    note = f"{DIRECTIVE_MARKER}\n{truncation_note}" if omitted else truncation_note
    without_markers = js_trim(sanitized.replace(DIRECTIVE_OMISSION, "")) if omitted else sanitized
    if not sanitized or not without_markers:
        return note
    budget = max(1, max_tokens)
    room = max(0, budget - estimate_tokens(f"\n{note}"))
    kept = js_trim_end(truncate_to_tokens(sanitized, room))
    return f"{kept}\n{note}" if kept else note


def cap_summary(content: str, original_tokens: int, max_tokens: int) -> str:
    """Cut ``content`` to ``max_tokens`` with the longest ``[Capped …]`` note that still fits."""
    for suffix in (f"\n[Capped from {original_tokens} tokens to ~{max_tokens}]", f"\n[Capped to ~{max_tokens}]", "\n[Capped]", ""):
        room = max(0, max_tokens - estimate_tokens(suffix))
        capped = truncate_to_tokens(content, room) + suffix
        if estimate_tokens(capped) <= max_tokens:
            return capped
    return truncate_to_tokens(content, max_tokens)
