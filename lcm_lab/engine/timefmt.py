"""Timestamps as lossless-claw writes and renders them (spec §2.4, §4.6, §6).

* stored message times: ``YYYY-MM-DD HH:MM:SS`` (UTC, no zone);
* summary time ranges: ``YYYY-MM-DDTHH:MM:SS.sssZ``;
* leaf/condensed source headers: ``YYYY-MM-DD HH:MM <TZ>`` in the configured zone, where ``<TZ>`` is
  what ICU's ``en-US`` short zone name gives: ``UTC``, US abbreviations such as ``PST``/``EDT``,
  and ``GMT+1``-style offsets everywhere else;
* summary XML attributes: ``YYYY-MM-DDTHH:MM:SS`` in the configured zone.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any
from zoneinfo import ZoneInfo

# Zones for which ICU's en-US locale prints a letter abbreviation (North American metazones:
# Pacific, Mountain, Central, Eastern, Atlantic, Alaska, Hawaii-Aleutian).
_US_ABBREVIATIONS = {
    "PST", "PDT", "MST", "MDT", "CST", "CDT", "EST", "EDT", "AST", "ADT", "AKST", "AKDT", "HST", "HDT",
}  # fmt: skip
_US_PREFIXES = ("America/", "US/", "Canada/", "Atlantic/Bermuda", "Pacific/Honolulu", "PST8PDT", "MST7MDT",
                "CST6CDT", "EST5EDT", "EST", "MST", "HST")  # fmt: skip
MAX_TIME_MS = 8.64e15  # ECMAScript TimeClip bound: a Date beyond it is invalid
_UTC_NAMES = {"UTC", "Etc/UTC", "Etc/UCT", "UCT", "Etc/Universal", "Universal", "Zulu", "Etc/Zulu", "GMT", "Etc/GMT"}


def parse_utc(value: str) -> datetime:
    """Parse a stored timestamp; strings without a zone are UTC (the plugin's rule)."""
    text = value.strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    elif not _has_offset(text):
        text = text.replace(" ", "T", 1) + "+00:00"
    parsed = datetime.fromisoformat(text)
    return parsed.astimezone(UTC)


def readable_time(value: object) -> bool:
    """Whether ``value`` is a stored timestamp :func:`parse_utc` reads (text in a date shape, years
    1 to 9999 in UTC); ``'yesterday'``, ``''``, a number or a year 99999 is not.

    >>> [readable_time(v) for v in ("2026-01-01 10:00:00", "2026-01-01T10:00:00.000Z", "yesterday", "", -5, "99999-01-01 00:00:00")]
    [True, True, False, False, False, False]
    """
    if not isinstance(value, str):
        return False
    try:
        parse_utc(value)
    except (ValueError, OverflowError):  # OverflowError: a zone offset moves year 1 or 9999 out of range
        return False
    return True


def _has_offset(text: str) -> bool:
    tail = text[-6:]
    return len(tail) == 6 and tail[0] in "+-" and tail[3] == ":"


def message_time_ms(message: Mapping[str, Any], envelope: str | None = None) -> int | None:
    """A message line's time in epoch ms: ``message.timestamp`` when it is a number, else the
    line's ISO ``timestamp`` (``envelope``), else an ISO ``message.timestamp``; ``None`` without
    one (reference-runs-deferred README §2), or when it is no time (a number past JavaScript's
    dates, such as ``1e30``, is no time at all: the clock does not jump to it).

    >>> message_time_ms({"timestamp": 1000}), message_time_ms({}, "1970-01-01T00:00:02.000Z"), message_time_ms({})
    (1000, 2000, None)
    >>> message_time_ms({"timestamp": 1e30}), message_time_ms({}, "garbage")
    (None, None)
    """
    stamp = message.get("timestamp")
    if isinstance(stamp, int | float) and not isinstance(stamp, bool):
        return int(stamp) if math.isfinite(stamp) and abs(stamp) <= MAX_TIME_MS else None
    text = envelope if envelope else (stamp if isinstance(stamp, str) else None)
    if not text:
        return None
    try:
        return round(parse_utc(text).timestamp() * 1000)
    except (ValueError, OverflowError):
        return None


def epoch_ms_to_stored(ms: float) -> str:
    """``message.timestamp`` (epoch ms) → ``YYYY-MM-DD HH:MM:SS`` UTC, truncated to the second."""
    moment = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=int(ms))
    return moment.strftime("%Y-%m-%d %H:%M:%S")


@lru_cache(maxsize=16384)  # pure; every summary re-reads its sources' times
def to_iso_ms(value: str) -> str:
    """Any stored timestamp → ``Date.toISOString()`` form (``…T…​.sssZ``)."""
    moment = parse_utc(value)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


@lru_cache(maxsize=64)
def _zone(name: str) -> ZoneInfo:
    return ZoneInfo("UTC" if name in _UTC_NAMES else name)


def zone_label(moment: datetime, timezone: str) -> str:
    """The ICU en-US short zone name for ``moment`` in ``timezone``."""
    if timezone in _UTC_NAMES:
        return "UTC"
    local = moment.astimezone(_zone(timezone))
    abbreviation = local.tzname() or ""
    if timezone.startswith(_US_PREFIXES) and abbreviation in _US_ABBREVIATIONS:
        return abbreviation
    offset = local.utcoffset() or timedelta(0)
    minutes = int(offset.total_seconds() // 60)
    if minutes == 0:
        # ICU names the GMT metazone (London, Dublin, Reykjavik, ...) "GMT" and other zones at
        # offset zero (Lisbon's WET, ...) "GMT+0".
        return "GMT" if abbreviation == "GMT" else "GMT+0"
    sign = "+" if minutes > 0 else "-"
    hours, rest = divmod(abs(minutes), 60)
    return f"GMT{sign}{hours}" + (f":{rest:02d}" if rest else "")


@lru_cache(maxsize=4096)  # pure; a conversation repeats few distinct times per summary source
def format_header_time(value: str, timezone: str) -> str:
    """``YYYY-MM-DD HH:MM <TZ>`` as used in leaf and condensed source headers.

    >>> format_header_time("2026-01-01 10:04:00", "UTC")
    '2026-01-01 10:04 UTC'
    """
    moment = parse_utc(value)
    local = moment.astimezone(_zone(timezone))
    return local.strftime("%Y-%m-%d %H:%M") + " " + zone_label(moment, timezone)


def format_local_iso(value: str, timezone: str) -> str:
    """``YYYY-MM-DDTHH:MM:SS`` in ``timezone`` (summary XML attributes)."""
    return parse_utc(value).astimezone(_zone(timezone)).strftime("%Y-%m-%dT%H:%M:%S")
