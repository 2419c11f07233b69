"""Ingest projection: one runtime transcript message → the row lossless-claw stores (spec §3).

:func:`to_stored_message` is the pure equivalent of the plugin's live ``ingestSingle`` (reached
through ``afterTurn`` → ``ingestBatch``): the skip rules, the content projection, stored token
count, ``message_parts``, identity hash, sender metadata, stable event key, ``created_at``, and the
live large-payload interception with the token count recomputed on the rewritten content.

What it cannot see is database state: the plugin also skips a message whose transcript entry id
or stable event key is already stored. Pass the keys seen so far as ``known_entry_ids`` /
``known_stable_event_keys`` to apply those rules (a replay driver tracks them as it appends rows).

>>> msg = {"role": "user", "content": [{"type": "text", "text": "list files"}], "timestamp": 1767261600000}
>>> row = to_stored_message(msg, seq=1).stored
>>> (row.role, row.content, row.token_count, row.created_at)
('user', 'list files', 3, '2026-01-01 10:00:00')
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from lcm_lab.engine.ingest.content import (
    PERSISTABLE_ROLES,
    build_message_parts,
    project_message,
)
from lcm_lab.engine.ingest.identity import identity_hash, sender_metadata_json, stable_event_key
from lcm_lab.engine.ingest.large_payloads import FileIdFactory, Interceptor, default_file_id
from lcm_lab.engine.js.strings import js_trim, js_trim_start
from lcm_lab.engine.timefmt import MAX_TIME_MS
from lcm_lab.engine.tokens import estimate_tokens
from lcm_lab.engine.types import LargeFile, StoredMessage

__all__ = [
    "MAX_TIME_MS",
    "RUNTIME_CONTEXT_SENTINEL",
    "IngestResult",
    "created_at_for",
    "format_created_at",
    "is_persistable",
    "to_stored_message",
    "unreadable_time",
]

RUNTIME_CONTEXT_SENTINEL = (
    "OpenClaw runtime context for the immediately preceding user message. "
    "This context is runtime-generated, not user-author."
)

# Skip reasons (stable strings, usable as metric labels).
SKIP_NON_PERSISTABLE = "non-persistable-role"
SKIP_ERROR_EMPTY_ASSISTANT = "error-or-aborted-empty-assistant"
SKIP_RUNTIME_CONTEXT = "runtime-context-sentinel"
SKIP_DUPLICATE_ENTRY = "duplicate-transcript-entry-id"
SKIP_DUPLICATE_EVENT = "duplicate-stable-event-key"


@dataclass(frozen=True)
class IngestResult:
    """Outcome of ingesting one runtime message."""

    stored: StoredMessage | None  # None when the plugin would skip the message
    skip_reason: str | None
    large_files: tuple[LargeFile, ...]
    # Bytes of each externalised payload by file id (the plugin writes them under lcm-files/).
    payloads: Mapping[str, bytes] = field(default_factory=dict)


def is_persistable(message: Mapping[str, Any]) -> bool:
    """``hasPersistableMessageRole``: role is user, assistant, system, tool or toolResult."""
    return (type(message) is dict or isinstance(message, Mapping)) and message.get("role") in PERSISTABLE_ROLES


def _skip(reason: str) -> IngestResult:
    return IngestResult(None, reason, ())


def _is_error_without_content(message: Mapping[str, Any]) -> bool:
    if message.get("role") != "assistant":
        return False
    stop = message.get("stopReason")
    if not isinstance(stop, str):
        stop = message.get("stop_reason")
    if stop not in ("error", "aborted"):
        return False
    content = message.get("content")
    return content is None or content == "" or (isinstance(content, list) and not content)


# -- created_at ------------------------------------------------------------------------------


def _civil_from_days(days: int) -> tuple[int, int, int]:
    """Proleptic Gregorian date of a day number (0 = 1970-01-01), any year."""
    z = days + 719468
    era = z // 146097  # floor division (the C original truncates)
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    return (y + 1 if m <= 2 else y), m, d


def format_created_at(epoch_ms: float) -> str | None:
    """``new Date(ms).toISOString().slice(0, 19).replace("T", " ")``; ``None`` if invalid.

    >>> format_created_at(1772441611571)
    '2026-03-02 08:53:31'
    """
    if not math.isfinite(epoch_ms) or abs(epoch_ms) > MAX_TIME_MS:
        return None
    ms = int(epoch_ms)  # TimeClip truncates toward zero
    days, rest = divmod(ms, 86_400_000)
    seconds = rest // 1000
    # The date holds no "T", so replacing the first "T" of the ISO text is putting a space there.
    # A 4-digit year gives exactly 19 characters; an extended year is cut inside the time.
    return f"{_iso_date(days)} {seconds // 3600:02d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"[:19]


@lru_cache(maxsize=4096)
def _iso_date(days: int) -> str:
    """``YYYY-MM-DD`` (or ``±YYYYYY-MM-DD``) of a day number, as ``toISOString`` writes it."""
    year, month, day = _civil_from_days(days)
    year_text = f"{year:04d}" if 0 <= year <= 9999 else f"{'+' if year > 0 else '-'}{abs(year):06d}"
    return f"{year_text}-{month:02d}-{day:02d}"


_ISO = re.compile(
    r"(?P<year>[+-]\d{6}|\d{4})(?:-(?P<month>\d{2})(?:-(?P<day>\d{2}))?)?"
    r"(?:T(?P<hour>\d{2}):(?P<minute>\d{2})(?::(?P<second>\d{2})(?:[.,](?P<frac>\d+))?)?)?"
    r"(?P<zone>[zZ]|[+-]\d{2}:\d{2})?"
)
_HAS_ZONE = re.compile(r"(?:[zZ]|[+-]\d{2}:\d{2})\Z")


def _days_from_civil(year: int, month: int, day: int) -> int:
    y = year - (1 if month <= 2 else 0)
    era = y // 400
    yoe = y - era * 400
    mp = month - 3 if month > 2 else month + 9
    doy = (153 * mp + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _parse_utc_timestamp_ms(value: str) -> float | None:
    """``parseUtcTimestamp`` (naive strings are UTC) → epoch ms, for ISO-8601 forms."""
    text = js_trim(value)
    if not _HAS_ZONE.search(text):
        text = (text if "T" in text else text.replace(" ", "T", 1)) + "Z"
    match = _ISO.fullmatch(text)
    if not match:
        return None  # the JavaScript fallback parser's free-form dates are not reproduced
    year = int(match["year"])
    month = int(match["month"] or 1)
    day = int(match["day"] or 1)
    hour, minute = int(match["hour"] or 0), int(match["minute"] or 0)
    second = int(match["second"] or 0)
    millis = int((match["frac"] or "0")[:3].ljust(3, "0"))
    days_in_month = (31, 29 if (year % 4 == 0 and year % 100 != 0) or year % 400 == 0 else 28, 31, 30, 31, 30,
                     31, 31, 30, 31, 30, 31)  # fmt: skip
    if not (1 <= month <= 12 and 1 <= day <= days_in_month[month - 1]):
        return None
    if hour == 24 and minute == 0 and second == 0 and millis == 0:
        pass  # 24:00 is the end of the day
    elif not (hour < 24 and minute < 60 and second < 60):
        return None
    offset = 0
    zone = match["zone"]
    if zone and zone not in ("Z", "z"):
        sign = 1 if zone[0] == "+" else -1
        offset = sign * (int(zone[1:3]) * 60 + int(zone[4:6]))
    total = (
        _days_from_civil(year, month, day) * 86_400_000
        + ((hour * 60 + minute - offset) * 60 + second) * 1000
        + millis
    )
    return float(total) if abs(total) <= MAX_TIME_MS else None


def _time_value(message: Mapping[str, Any], envelope_timestamp: str | None) -> Any:
    """What ``created_at`` is read from: the first of ``timestamp`` / ``createdAt`` /
    ``created_at`` that is not null, when a number or a string that is not blank, else the JSONL
    envelope timestamp."""
    value: Any = None
    for key in ("timestamp", "createdAt", "created_at"):
        if message.get(key) is not None:
            value = message[key]
            break
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value
    return value if isinstance(value, str) and js_trim(value) else envelope_timestamp


def created_at_for(message: Mapping[str, Any], envelope_timestamp: str | None = None) -> str | None:
    """``messages.created_at`` as live ingest writes it (spec §2.4).

    The first of ``timestamp`` / ``createdAt`` / ``created_at`` that is not null: an epoch-ms
    number, or a date string; else the JSONL envelope timestamp. ``None`` means the plugin would
    fall back to the insert time (``datetime('now')``): no time, or one it cannot read
    (:func:`unreadable_time`).
    """
    value = _time_value(message, envelope_timestamp)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return format_created_at(float(value))
    if value is None or not js_trim(value):
        return None
    ms = _parse_utc_timestamp_ms(value)
    return format_created_at(ms) if ms is not None else None


def unreadable_time(message: Mapping[str, Any], envelope_timestamp: str | None = None) -> object:
    """The time a message carries that :func:`created_at_for` cannot read (``'garbage'``, ``''``,
    ``1e30``, month 13), or ``None`` when it reads one or the message has none (no key, null: a
    missing time, as NULL is in an lcm.db). The message is stored without a time either way.

    >>> unreadable_time({"timestamp": 1e30}), unreadable_time({}, "garbage"), unreadable_time({}, None), unreadable_time({"timestamp": 5})
    (1e+30, 'garbage', None, None)
    """
    if created_at_for(message, envelope_timestamp) is not None:
        return None
    value = _time_value(message, envelope_timestamp)
    if value is None:  # a blank string or a value of another type, and no envelope
        value = next((message[key] for key in ("timestamp", "createdAt", "created_at") if message.get(key) is not None), None)
    return value


# -- ingest ----------------------------------------------------------------------------------


def to_stored_message(
    message: Mapping[str, Any],
    seq: int,
    *,
    conversation_id: int = 1,
    entry_id: str | None = None,
    intercept_large_payloads: bool = True,
    large_file_token_threshold: int = 25_000,
    file_id_for: FileIdFactory | Callable[..., str] = default_file_id,
    envelope_timestamp: str | None = None,
    known_entry_ids: Collection[str] = (),
    known_stable_event_keys: Collection[str] = (),
) -> IngestResult:
    """Project one runtime ``AgentMessage`` to the ``messages`` row (+ parts) live ingest writes.

    ``seq`` is the row's ``messages.seq`` (max stored seq + 1). ``entry_id`` is the transcript
    entry id the row was imported from — ``None`` for runtime ingests (the reference protocol).
    ``intercept_large_payloads=False`` gives the ``migrate-sessions`` projection (no
    externalisation). Raises ``TypeError`` if ``message`` is not a mapping.
    """
    if type(message) is not dict and not isinstance(message, Mapping):
        raise TypeError(f"message must be a mapping (a parsed AgentMessage), got {type(message).__name__}")
    if not is_persistable(message):
        return _skip(SKIP_NON_PERSISTABLE)
    if _is_error_without_content(message):
        return _skip(SKIP_ERROR_EMPTY_ASSISTANT)

    projected = project_message(message)
    if projected.role == "assistant" and js_trim_start(projected.content).startswith(
        RUNTIME_CONTEXT_SENTINEL
    ):
        return _skip(SKIP_RUNTIME_CONTEXT)
    if entry_id is not None and entry_id in known_entry_ids:
        return _skip(SKIP_DUPLICATE_ENTRY)
    event_key = stable_event_key(message)
    if event_key is not None and event_key in known_stable_event_keys:
        return _skip(SKIP_DUPLICATE_EVENT)

    role, content, tokens = projected.role, projected.content, projected.token_count
    for_parts: Mapping[str, Any] = message
    interceptor = Interceptor(conversation_id, seq, large_file_token_threshold, file_id_for)
    if intercept_large_payloads:
        role, content, tokens, for_parts = _intercept(message, role, content, tokens, interceptor)

    row = StoredMessage(
        seq=seq,
        role=role,  # type: ignore[arg-type]
        content=content,
        token_count=tokens,
        created_at=created_at_for(message, envelope_timestamp),
        parts=(
            projected.parts
            if projected.parts is not None and for_parts is message and content == projected.content
            else tuple(build_message_parts(for_parts, content))
        ),
        identity_hash=identity_hash(role, content),
        sender_metadata=sender_metadata_json(message),
        transcript_entry_id=entry_id,
        stable_event_key=event_key,
    )
    return IngestResult(row, None, tuple(interceptor.large_files), dict(interceptor.payloads))


def _intercept(
    message: Mapping[str, Any], role: str, content: str, tokens: int, interceptor: Interceptor
) -> tuple[str, str, int, Mapping[str, Any]]:
    """The interception sequence of ``ingestSingle``; returns the row fields and parts source."""
    for_parts: Mapping[str, Any] = message

    native = interceptor.native_image_blocks(for_parts)
    if native is not None:
        for_parts = native
        projected = project_message(for_parts)
        role, content, tokens = projected.role, projected.content, projected.token_count

    if role == "tool":
        rewritten = interceptor.inline_images_in_tool_message(for_parts)
        if rewritten is not None:
            for_parts = rewritten
            projected = project_message(for_parts)
            role, content, tokens = projected.role, projected.content, projected.token_count
    else:
        inline = interceptor.inline_images(content, role)
        if inline is not None:
            content, tokens = inline, estimate_tokens(inline)
            if "content" in message:
                # Quirk kept from the plugin: this rebuild starts from the original message, so a
                # native-image rewrite above is dropped from the parts (not from the row).
                for_parts = {**message, "content": content}

    if role == "user":
        files = interceptor.large_file_blocks(content)
        if files is not None:
            content, file_ids = files
            tokens = estimate_tokens(content)
            if "content" in message:
                for_parts = {
                    **message,
                    "content": content,
                    "fileBlocksExternalized": True,
                    "externalizedFileIds": file_ids,
                    "externalizationReason": "large_file_block",
                }
    elif role == "tool":
        rewritten = interceptor.large_tool_results(for_parts)
        if rewritten is not None:
            for_parts = rewritten
            projected = project_message(rewritten)
            content, tokens = projected.content, projected.token_count

    raw = interceptor.large_raw_payload(for_parts, role, content, tokens)
    if raw is not None:
        for_parts, content = raw
        tokens = estimate_tokens(content)
    return role, content, tokens, for_parts
