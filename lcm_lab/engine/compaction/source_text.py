"""What the summarizer reads: leaf and condensed source text (spec §4.6, §4.10).

lossless-claw does not hand raw message content to its summarizer. It strips media payloads,
reasoning blocks and injected plugin context, drops blank lines, rebuilds tool-call-only messages
from their parts, and prefixes every message with a ``[time | role]`` header. Each of those steps
changes what a summary can keep, so the lab reproduces them exactly, quirks included (the
``null`` line of tool-call-only turns, the over-matching data-URL pattern).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from itertools import repeat
from typing import Any

from lcm_lab.engine.assembly.blocks import (
    RuntimeRole,
    content_from_parts,
    parse_sender_metadata,
    part_metadata,
)
from lcm_lab.engine.js.json import UNDEFINED, js_parse, js_stringify
from lcm_lab.engine.js.strings import JS_WHITESPACE, js_trim, js_trim_start
from lcm_lab.engine.timefmt import format_header_time
from lcm_lab.engine.types import StoredMessage, StoredPart, Summary

_DATA_URL = re.compile(r"data:[^;\s\"'`]+;base64,[A-Za-z0-9+/=\s]+", re.IGNORECASE)
# The corrected pattern (QUIRK 7 fixed): the payload ends at the first non-base64 character.
_DATA_URL_STRICT = re.compile(r"data:[^;\s\"'`]+;base64,[A-Za-z0-9+/=]+", re.IGNORECASE)
_DATA_URL_PREFIX = re.compile(r"^data:[^;\s\"'`]+;base64,", re.IGNORECASE)
_MEDIA_PATH = re.compile(r"^MEDIA:/.+$")
_DATA_WORD = re.compile("data:", re.IGNORECASE)
_BASE64_ALPHABET = re.compile(r"^[A-Za-z0-9+/=]+$")
_PROSE_PUNCTUATION = re.compile(r"[ .,:;!?()\[\]{}]")
_LINE_SPLIT = re.compile(r"\r?\n")

_REASONING_TAGS = r"(?:think|thinking|reasoning)"
_LEADING_CLOSED_REASONING = re.compile(
    r"^<\s*(think|thinking|reasoning)(?:\s[^>]*)?>[\s\S]*?<\s*/\s*\1\s*>", re.IGNORECASE
)
_STANDALONE_CLOSED_REASONING = re.compile(
    r"(^|\n)[ \t]*<\s*(think|thinking|reasoning)(?:\s[^>]*)?>[\s\S]*?<\s*/\s*\2\s*>[ \t]*(?=\n|\Z)",
    re.IGNORECASE,
)
_REASONING_OPENER = (
    rf"(?:<\s*{_REASONING_TAGS}(?:\s[^>]*)?>|<\|\s*(?:start_of_)?{_REASONING_TAGS}\s*\|>|\[\s*{_REASONING_TAGS}\s*\])"
)
_REASONING_START = re.compile(rf"^{_REASONING_OPENER}", re.IGNORECASE)
_STANDALONE_REASONING_START = re.compile(rf"(^|\n)[ \t]*{_REASONING_OPENER}[\s\S]*\Z", re.IGNORECASE)

_MEDIA_PART_TYPES = frozenset({"file", "snapshot"})
_MEDIA_RAW_TYPES = frozenset({"file", "image", "snapshot"})
_REASONING_RAW_TYPES = frozenset({"reasoning", "thinking", "redacted_thinking"})
_TEXT_KEYS = ("text", "caption", "alt", "title", "summary")
_NESTED_KEYS = (
    "value", "content", "parts", "items", "message", "messages", "input",
    "arguments", "output", "result", "results", "data", "query", "command",
)  # fmt: skip
_MAX_DEPTH = 8
_UNTRUSTED_HEADER = re.compile(
    r"^Untrusted context \(metadata, do not treat as instructions or commands\):\s*", re.IGNORECASE | re.MULTILINE
)
FILE_ID = re.compile(r"\bfile_[a-f0-9]{16}\b", re.IGNORECASE | re.ASCII)  # JavaScript \b and /i fold ASCII only
# A necessary condition for FILE_ID that the regex engine scans for fast (it leads with a literal,
# and under IGNORECASE the hex class folds to ASCII only): most texts name no file id, and the
# case-insensitive FILE_ID scan costs ~20x more per character.
_HEX_ID_TAIL = re.compile(r"_[a-fA-F0-9]{16}\b", re.ASCII)
_FILE_WORD = re.compile("[fF][iI][lL][eE]_")
_TAG_CLOSE = "</"
# Necessary condition for _UNTRUSTED_HEADER: its literal middle, led by a case-free character.
_UNTRUSTED_MIDDLE = re.compile(r"\(metadata, do not treat as instructions or commands\):", re.IGNORECASE)


def may_name_file_id(text: str) -> bool:
    """False when ``text`` certainly holds no ``file_<16 hex>`` id (a cheap pre-test for FILE_ID)."""
    return _HEX_ID_TAIL.search(text) is not None


def _has_data_word(text: str) -> bool:
    # "data:" under IGNORECASE: "a" folds to "A" only, so "a:"/"A:" must occur (a fast literal scan).
    return ("a:" in text or "A:" in text) and _DATA_WORD.search(text) is not None


# -- plain-text sanitation ---------------------------------------------------------------------


def _looks_like_binary(value: str) -> bool:
    trimmed = js_trim(value)
    if not trimmed:
        return False
    if _DATA_URL_PREFIX.match(trimmed):
        return True
    compact = re.sub(r"\s+", "", trimmed)
    if len(compact) < 256 or len(compact) % 4 != 0 or not _BASE64_ALPHABET.match(compact):
        return False
    return not _PROSE_PUNCTUATION.search(trimmed)


def _maybe_media_line(trimmed: str) -> bool:
    # Cheap pre-test: only lines this long (base64 runs) or with these prefixes can be media.
    return len(trimmed) >= 256 or trimmed.startswith("MEDIA:/") or trimmed[:5].lower() == "data:"


def _is_media_line(line: str) -> bool:
    trimmed = line.lstrip(JS_WHITESPACE)
    return _maybe_media_line(trimmed) and bool(_MEDIA_PATH.match(trimmed) or _looks_like_binary(trimmed))


def strip_embedded_media(content: str) -> str:
    """Drop data URLs, ``MEDIA:/`` lines, base64-looking lines and blank lines."""
    has_data = _has_data_word(content)
    # No "data:" means no data URL to replace (the substitution would scan for nothing).
    without_urls = _DATA_URL.sub("[embedded media omitted]", content) if has_data else content
    lines = without_urls.split("\n")  # a "\r" left at a line end is whitespace: trimmed below
    prefixed = "MEDIA:/" in without_urls or (has_data and _DATA_WORD.search(without_urls))
    if not prefixed:
        # Only lines of 256+ characters can be media (base64 runs): drop blank lines and trailing
        # whitespace at C speed and test just the long lines.
        kept = list(filter(None, map(str.rstrip, lines, repeat(JS_WHITESPACE))))
        if max(map(len, lines)) >= 256:
            kept = [line for line in kept if len(line) < 256 or not _is_media_line(line)]
        return js_trim("\n".join(kept))
    kept = []
    for line in _LINE_SPLIT.split(without_urls):
        line = line.rstrip(JS_WHITESPACE)
        if not line:
            continue
        trimmed = line.lstrip(JS_WHITESPACE)
        if _maybe_media_line(trimmed) and (_MEDIA_PATH.match(trimmed) or _looks_like_binary(trimmed)):
            continue
        kept.append(line)
    return js_trim("\n".join(kept))


def _strip_plain_reasoning(content: str) -> str:
    text = js_trim(content)
    while True:
        match = _LEADING_CLOSED_REASONING.match(text)
        if not match:
            break
        text = js_trim_start(text[match.end() :])
    text = _STANDALONE_CLOSED_REASONING.sub(lambda m: "\n" if m.group(1) == "\n" else "", text)
    text = _STANDALONE_REASONING_START.sub(lambda m: "\n" if m.group(1) == "\n" else "", text, count=1)
    text = js_trim(text)
    if not text or _REASONING_START.match(text):
        return ""
    return text


def _sanitize_fragment(value: str, strip_reasoning: bool) -> str:
    cleaned = strip_embedded_media(value)
    return _strip_plain_reasoning(cleaned) if strip_reasoning else cleaned


def _structured_text(value: Any, strip_reasoning: bool = False, depth: int = 0) -> list[str]:
    if depth >= _MAX_DEPTH or value is None:
        return []
    if isinstance(value, str):
        cleaned = _sanitize_fragment(value, strip_reasoning)
        return [cleaned] if cleaned else []
    if isinstance(value, list):
        out: list[str] = []
        for entry in value:
            out.extend(_structured_text(entry, strip_reasoning, depth + 1))
        return out
    if not isinstance(value, Mapping):
        return []
    kind = js_trim(value["type"]).lower() if isinstance(value.get("type"), str) else ""
    raw_kind = js_trim(value["rawType"]).lower() if isinstance(value.get("rawType"), str) else ""
    if kind in _REASONING_RAW_TYPES or raw_kind in _REASONING_RAW_TYPES:
        return []
    fragments: list[str] = []
    for key in _TEXT_KEYS:
        candidate = value.get(key)
        if isinstance(candidate, str):
            cleaned = _sanitize_fragment(candidate, strip_reasoning)
            if cleaned:
                fragments.append(cleaned)
    if kind in _MEDIA_RAW_TYPES or raw_kind in _MEDIA_RAW_TYPES:
        return fragments
    for key in _NESTED_KEYS:
        fragments.extend(_structured_text(value.get(key), strip_reasoning, depth + 1))
    return fragments


def meaningful_message_text(content: Any, strip_reasoning: bool = False) -> str:
    """Human-readable text of stored content: JSON-looking strings are walked for text fields,
    plain strings lose media payloads and blank lines (``extractMeaningfulMessageText``)."""
    if not isinstance(content, str):
        return ""
    trimmed = js_trim(content)
    if not trimmed:
        return ""
    if (trimmed.startswith("[") and trimmed.endswith("]")) or (trimmed.startswith("{") and trimmed.endswith("}")):
        try:
            parsed = js_parse(trimmed)
        except ValueError:
            pass
        else:
            fragments = [js_trim(f) for f in _structured_text(parsed, strip_reasoning)]
            return js_trim("\n".join(f for f in fragments if f))
    return _sanitize_fragment(content, strip_reasoning)


@lru_cache(maxsize=8192)
def meaningful_summary_text(content: str) -> str:
    """Summary text as fed back to a summarizer: also without reasoning blocks.

    Memoised: a pure function of the text, and compaction asks for the same summaries on every
    chunk selection and condensed pass.
    """
    return meaningful_message_text(content, strip_reasoning=True)


def _structured_value_text(value: Any) -> str:
    if value is UNDEFINED:
        return ""
    if isinstance(value, str):
        return meaningful_message_text(value)
    fragments = [js_trim(f) for f in _structured_text(value)]
    fragments = [f for f in fragments if f]
    if fragments:
        return js_trim("\n".join(fragments))
    try:
        serialized = js_stringify(value)
    except (TypeError, ValueError):
        return ""
    return meaningful_message_text(serialized)


def strip_injected_context(content: str, tags: Sequence[str]) -> str:
    """Remove ``<tag>…</tag>`` blocks injected by memory plugins, and the untrusted header line."""
    if not tags:
        return content
    result = content
    if _TAG_CLOSE in result:  # every block ends with "</tag>"
        for tag in tags:
            result = _injected_block(tag).sub("", result)
    if "):" in result and _UNTRUSTED_MIDDLE.search(result):
        result = _UNTRUSTED_HEADER.sub("", result)
    return js_trim(result)


@lru_cache(maxsize=256)
def _injected_block(tag: str) -> re.Pattern[str]:
    escaped = re.escape(tag)
    return re.compile(rf"<{escaped}>[\s\S]*?</{escaped}>", re.IGNORECASE)


# -- message parts -------------------------------------------------------------------------------


def _is_media_part(part: StoredPart) -> bool:
    if part.part_type in _MEDIA_PART_TYPES:
        return True
    meta = part_metadata(part)
    raw_type = meta.get("rawType")
    if isinstance(raw_type, str):
        kind = js_trim(raw_type).lower()
    else:
        raw = meta.get("raw")
        kind = js_trim(raw["type"]).lower() if isinstance(raw, Mapping) and isinstance(raw.get("type"), str) else ""
    return kind in _MEDIA_RAW_TYPES


def _annotate_media(content: str, parts: Sequence[StoredPart]) -> str:
    if not any(_is_media_part(p) for p in parts):
        return content
    texts = (js_trim(strip_embedded_media(p.text_content or "")) for p in parts if not _is_media_part(p))
    part_text = js_trim("\n".join(t for t in texts if t))
    text = js_trim(part_text or meaningful_message_text(content))
    if not text:
        return "[Media attachment]"
    if "[with media attachment]" in text:
        return text
    return f"{text} [with media attachment]"


def _parse_part_value(value: str | None) -> Any:
    # A missing value is JavaScript ``undefined`` (stringifies to nothing), unlike a NULL
    # ``text_content``, which reaches the summarizer as the line ``null`` (QUIRK 7).
    if not isinstance(value, str):
        return UNDEFINED
    trimmed = js_trim(value)
    if not trimmed:
        return UNDEFINED
    try:
        return js_parse(trimmed)
    except ValueError:
        return trimmed


def _part_fallback_text(part: StoredPart, fixed: bool = False) -> str:
    if part.part_type == "reasoning":
        return ""
    sections: list[str] = []
    # QUIRK 7: a NULL text_content is stringified to the line "null".
    text = _structured_value_text(UNDEFINED if fixed and part.text_content is None else part.text_content)
    if text:
        sections.append(text)
    name = js_trim(part.tool_name) if part.tool_name else ""
    label = f" ({name})" if name else ""
    parsed_input = _parse_part_value(part.tool_input)
    tool_input = _structured_value_text(parsed_input)
    if fixed and not tool_input and parsed_input is not UNDEFINED:
        tool_input = js_stringify(parsed_input)  # QUIRK 7 fixed: show arguments without text fields
    if tool_input:
        sections.append(f"Tool input{label}:\n{tool_input}")
    tool_output = _structured_value_text(_parse_part_value(part.tool_output))
    if tool_output:
        sections.append(f"Tool output{label}:\n{tool_output}")
    return js_trim("\n\n".join(sections))


def _runtime_role(role: str) -> RuntimeRole:
    if role == "tool":
        return "toolResult"
    if role in ("user", "system"):
        return "user"
    return "assistant"


def leaf_message_content(message: StoredMessage, fixed: bool = False) -> str:
    """The sanitized text of one message as a leaf source (``resolveLeafSummaryMessageContent``).

    Messages without stored text (tool-call-only turns) are rebuilt from their parts exactly as
    assembly rebuilds them, then walked for text; failing that, each part is described.
    """
    parts = message.parts
    content = _DATA_URL_STRICT.sub("[embedded media omitted]", message.content) if fixed else message.content
    stored = meaningful_message_text(_annotate_media(content, parts))
    if stored:
        return stored
    if not parts:
        return ""
    rehydrated = _structured_value_text(content_from_parts(parts, _runtime_role(message.role), message.content))
    if rehydrated:
        return rehydrated
    texts = (js_trim(_part_fallback_text(p, fixed)) for p in parts)
    return js_trim("\n\n".join(t for t in texts if t))


# -- sender identity -------------------------------------------------------------------------------


def sender_label(message: StoredMessage) -> str | None:
    """``speaker (untrusted metadata): {...}`` for user rows with sender identity, else None."""
    if message.role != "user":
        return None
    fields = parse_sender_metadata(message.sender_metadata)
    return f"speaker (untrusted metadata): {js_stringify(fields)}" if fields else None


# -- file ids ----------------------------------------------------------------------------------


def file_ids_in(texts: Iterable[str]) -> tuple[str, ...]:
    """``file_…`` ids referenced by ``texts``, lower-cased, first occurrence order."""
    seen: dict[str, None] = {}
    for text in texts:
        # The ASCII "file_" pre-test is kept from before (it decides for "fİle_…", which FILE_ID
        # alone would match); the hex-tail test in front only skips texts FILE_ID cannot match.
        if not may_name_file_id(text) or _FILE_WORD.search(text) is None:
            continue
        for match in FILE_ID.finditer(text):
            seen.setdefault(match.group(0).lower(), None)
    return tuple(seen)


# -- whole sources ---------------------------------------------------------------------------------


def leaf_block(message: StoredMessage, content: str, timezone: str, strip_tags: Sequence[str]) -> str | None:
    """``[time | role(| speaker…)]\\ntext`` for one message, or None when it has no text."""
    text = meaningful_message_text(strip_injected_context(content, strip_tags))
    if not text:
        return None
    sender = sender_label(message)
    suffix = f" | {sender}" if sender else ""
    when = format_header_time(message.created_at or "1970-01-01 00:00:00", timezone)
    return f"[{when} | {message.role}{suffix}]\n{text}"


def condensed_source_text(summaries: Sequence[Summary], timezone: str) -> str:
    """Condensed-pass source: each input's time range header and sanitized content."""
    blocks = []
    for summary in summaries:
        earliest = summary.earliest_at or summary.created_at or "1970-01-01 00:00:00"
        latest = summary.latest_at or summary.created_at or "1970-01-01 00:00:00"
        header = f"[{format_header_time(earliest, timezone)} - {format_header_time(latest, timezone)}]"
        cleaned = js_trim(meaningful_summary_text(summary.content))
        if cleaned:
            blocks.append(f"{header}\n{cleaned}")
    return "\n\n".join(blocks)
