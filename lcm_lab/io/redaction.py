"""Secrets never leave in derived text: the one redaction function.

A transcript can hold an API key (pasted into a prompt, echoed by a tool); so can a model's
reply or an error message. The lab keeps a user's own messages as they are (they are the user's
data, loaded read-only), but every text it *derives* and writes or shows is passed through
:func:`redact` on its way out: the call ledger (requests, replies, errors), saved replays (their
summaries, calls and the stored payload), traces written with ``--trace-out``, lcm.db exports
of a replay's summaries, and the HTML report.

What counts as a secret: the value of every environment variable whose name ends in
``API_KEY``, ``ACCESS_KEY``, ``SECRET_KEY``, ``PRIVATE_KEY``, ``_TOKEN``, ``_SECRET`` or
``_PASSWORD`` (six characters or more), every key handed
to a summarizer directly (:func:`register_secret`), and anything shaped like a provider key
(``sk-…``, ``AIza…``, ``Bearer …``).

A secret cut short is still a secret: derived text is cut in many places (a summarizer clips a
long sentence and adds ``…``, the engine's fallback keeps a prefix of the source and adds a
``[Truncated …]`` line), and redaction after the cut would no longer find the whole value. So a
prefix of a configured secret, eight characters or more, that ends where a cut ends (the end of
the text, ``…``, a line break, or a JSON string's closing quote or escape) is redacted too.

>>> redact("use sk-abcdefgh12345678 or my-own-value", ["my-own-value"])
'use [redacted] or [redacted]'
>>> redact("my key is my-own-val…", ["my-own-value"])
'my key is [redacted]…'
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Any

REDACTED = "[redacted]"
# The cloud providers litellm reaches name theirs AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, ….
_SECRET_ENV = re.compile(r"(?:API_KEY|ACCESS_KEY|SECRET_KEY|PRIVATE_KEY|_TOKEN|_SECRET|_PASSWORD)$")
# Key shapes: sk-/pk-/rk-/ak-…, AIza…, Bearer …, each starting at a word boundary. One
# alternation with \b scans at a few MB/s, too slow for a saved replay's payload; instead each
# shape's short prefix is searched (hundreds of MB/s), the boundary checked by hand, and the
# whole shape matched only there, so every candidate costs a bounded amount of work.
_KEY_PATTERNS = (
    (re.compile(r"[spra]k-"), re.compile(r"[spra]k-[A-Za-z0-9_\-]{8,}")),
    (re.compile(r"AIza"), re.compile(r"AIza[0-9A-Za-z_\-]{20,}")),
    (re.compile(r"Bearer"), re.compile(r"Bearer\s+[A-Za-z0-9._\-]{8,}")),
)
_MIN_SECRET = 6
# A cut secret: at least this many of its first characters, then where a cut ends.
_MIN_PREFIX = 8
_CUT_ENDS = frozenset("…\n\r\"\\")
_registered: set[str] = set()


def register_secret(value: str | None) -> None:
    """Treat ``value`` (a key passed in code rather than the environment) as a secret from now on."""
    if value and len(value) >= _MIN_SECRET:
        _registered.add(value)


def secret_values() -> list[str]:
    """The configured secrets, longest first (so a secret containing another is replaced whole)."""
    found = {v for k, v in os.environ.items() if _SECRET_ENV.search(k) and v and len(v) >= _MIN_SECRET} | _registered
    return sorted(found, key=len, reverse=True)


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"


def _next_key(text: str, pos: int, kind: int) -> tuple[int, int] | None:
    """The first key of shape ``kind`` starting at or after ``pos`` (at a word boundary)."""
    prefix, whole = _KEY_PATTERNS[kind]
    while (found := prefix.search(text, pos)) is not None:
        start = found.start()
        if start == 0 or not _is_word(text[start - 1]):
            key = whole.match(text, start)
            if key is not None:
                return start, key.end()
        pos = start + 1
    return None


def _key_shaped_spans(text: str) -> list[tuple[int, int]]:
    """The key-shaped spans one left-to-right scan finds (the leftmost key wins, the scan goes
    on after it), merged from one literal-prefixed search per shape."""
    spans: list[tuple[int, int]] = []
    pos = 0
    upcoming = [_next_key(text, 0, kind) for kind in range(len(_KEY_PATTERNS))]
    while True:
        for kind, span in enumerate(upcoming):
            if span is not None and span[0] < pos:
                upcoming[kind] = _next_key(text, pos, kind)
        found = [span for span in upcoming if span is not None]
        if not found:
            return spans
        first = min(found)
        spans.append(first)
        pos = first[1]


def _redact_cut(text: str, secret: str) -> str:
    """``text`` with every prefix of ``secret`` (``_MIN_PREFIX`` characters or more) that ends
    at a cut (:data:`_CUT_ENDS` or the end of the text) replaced by ``[redacted]``."""
    head = secret[:_MIN_PREFIX]
    pos = text.find(head)
    if pos < 0:
        return text
    pieces, last = [], 0
    while pos >= 0:
        end = pos + _MIN_PREFIX
        while end < len(text) and end - pos < len(secret) and text[end] == secret[end - pos]:
            end += 1
        if end == len(text) or text[end] in _CUT_ENDS:
            pieces += [text[last:pos], REDACTED]
            last = end
        pos = text.find(head, end)
    pieces.append(text[last:])
    return "".join(pieces)


def redact(text: str, secrets: Iterable[str] | None = None) -> str:
    """``text`` with secret values (whole or cut short) and key-shaped strings replaced by ``[redacted]``."""
    for secret in secret_values() if secrets is None else secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
        if len(secret) > _MIN_PREFIX:
            text = _redact_cut(text, secret)
    spans = _key_shaped_spans(text)
    if not spans:
        return text
    pieces, last = [], 0
    for start, end in spans:
        pieces += [text[last:start], REDACTED]
        last = end
    pieces.append(text[last:])
    return "".join(pieces)


def redact_rows(rows: list[dict[str, Any]], secrets: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """Rows (column → value) with every string value redacted."""
    known = secret_values() if secrets is None else list(secrets)
    return [{k: redact(v, known) if isinstance(v, str) else v for k, v in row.items()} for row in rows]
