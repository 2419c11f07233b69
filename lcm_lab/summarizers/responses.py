"""Cleaning model responses and the summarizer-internal fallback text (``src/summarize.ts``, ``src/summary-fallback.ts``).

Reasoning models may return their thinking inline (``<think>…</think>``) or nothing but
reasoning; the plugin strips such blocks and treats a reasoning-only reply as empty. When a
provider keeps failing, the summarizer returns a truncated copy of the source ending with the
``[LCM fallback summary; truncated for context management]`` marker instead of raising.

>>> strip_reasoning("<think>plan the answer</think>\\nThe build passed.")
'The build passed.'
>>> strip_reasoning("<thinking>still thinking")
''
>>> summarizer_fallback("Deployed v2 to staging.", max_tokens=512).splitlines()[-1]
'[LCM fallback summary; truncated for context management]'
"""

from __future__ import annotations

import re

from lcm_lab.engine.compaction.fallback import (
    DIRECTIVE_MARKER,
    DIRECTIVE_OMISSION,
    FALLBACK_MARKER,
    omit_directives,
)
from lcm_lab.engine.tokens import estimate_tokens, truncate_to_tokens

_CLOSED_BLOCK = re.compile(r"<(think|thinking|reasoning)\b[^>]*>.*?</\1\s*>", re.IGNORECASE | re.DOTALL)
_OPEN_REASONING = re.compile(r"^\s*(?:<(?:think|thinking|reasoning)\b[^>]*>|<\|think\|>|\[thinking\])", re.IGNORECASE)


def strip_reasoning(text: str | None) -> str:
    """Drop inline reasoning blocks; ``""`` if what is left is empty or an unclosed reasoning block."""
    if not text:
        return ""
    cleaned = _CLOSED_BLOCK.sub("", text)
    if _OPEN_REASONING.match(cleaned):
        return ""
    return cleaned.strip()


def summarizer_fallback(source_text: str, max_tokens: int = 512) -> str:
    """A prefix of the source within ``max_tokens`` plus the summarizer fallback marker.

    Directive-shaped sentences ("ignore previous instructions", …) are replaced as the plugin
    does, and the marker then says so.
    """
    budget = max(64, max_tokens)
    sanitized, omitted = omit_directives(source_text.strip())
    note = DIRECTIVE_MARKER if omitted else FALLBACK_MARKER
    if omitted and not sanitized.replace(DIRECTIVE_OMISSION, "").strip():
        return note
    room = max(0, budget - estimate_tokens("\n" + note))
    kept = truncate_to_tokens(sanitized, room).rstrip()
    return f"{kept}\n{note}" if kept else note
