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

A completion is read only up to a size its request allows (:func:`oversize`): a server that
answers a call for 400 tokens with 10 MB is a failed call, not a summary stored whole.

>>> response_cap(400), oversize("x" * 70_000, 400)
(65536, 'the response was 70,000 bytes, 4,464 bytes over the cap of 65,536 (32 bytes per token of max_tokens 400, at least 64 KiB)')
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

# A token is about 4 characters of text (1 to 4 UTF-8 bytes each): 32 bytes per token the call
# allowed is 8 times what a model writing at its limit sends, and small calls get 64 KiB.
BYTES_PER_TOKEN = 32
MIN_RESPONSE_BYTES = 64 * 1024
TOO_LARGE = "response_too_large"  # the failure reason (ledger error_class) of a reply over the cap

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


def response_cap(max_tokens: int) -> int:
    """The most UTF-8 bytes a completion asked for at most ``max_tokens`` tokens is read with."""
    return max(MIN_RESPONSE_BYTES, max_tokens * BYTES_PER_TOKEN)


def oversize(text: str | None, max_tokens: int) -> str | None:
    """Why ``text`` is too big for a completion of at most ``max_tokens`` tokens (its size and how
    far over :func:`response_cap` it is), or ``None`` when it fits."""
    cap = response_cap(max_tokens)
    if not text or len(text) * 4 <= cap:  # at most 4 bytes a character: it fits without encoding it
        return None
    size = len(text.encode("utf-8", "surrogatepass"))
    if size <= cap:
        return None
    return (f"the response was {size:,} bytes, {size - cap:,} bytes over the cap of {cap:,} "
            f"({BYTES_PER_TOKEN} bytes per token of max_tokens {max_tokens}, at least {MIN_RESPONSE_BYTES // 1024} KiB)")  # fmt: skip


MAX_USAGE_TOKENS = 100_000_000  # more than any one call reads or writes: a count past it is the provider's error


def usage_tokens(value: object) -> int | None:
    """A provider-reported token count, or ``None`` (unknown) when it is not a whole number from 0
    to :data:`MAX_USAGE_TOKENS` (negative, ``1e12``, ``"lots"``, NaN). The one check for usage a
    server or a transcript reports (the ledger's, ``cost``'s recorded usage).

    >>> usage_tokens(1200), usage_tokens(512.0), usage_tokens(-5000), usage_tokens(1e12), usage_tokens("lots")
    (1200, 512, None, None, None)
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not value.is_integer():  # NaN and infinities too
        return None
    return int(value) if 0 <= value <= MAX_USAGE_TOKENS else None
