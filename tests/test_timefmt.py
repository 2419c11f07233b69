"""Timestamps exactly as the plugin renders them, checked against Node.js Intl output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lcm_lab.engine.timefmt import (
    epoch_ms_to_stored,
    format_header_time,
    format_local_iso,
    parse_utc,
    to_iso_ms,
)

ROWS = json.loads((Path(__file__).parent / "fixtures" / "icu-header-times.json").read_text())["rows"]


@pytest.mark.parametrize(("zone", "moment", "expected"), ROWS)
def test_header_time_matches_intl(zone: str, moment: str, expected: str) -> None:
    assert format_header_time(moment, zone) == expected


def test_stored_and_iso_forms() -> None:
    assert epoch_ms_to_stored(1_767_261_600_999) == "2026-01-01 10:00:00"
    assert to_iso_ms("2026-01-01 10:04:00") == "2026-01-01T10:04:00.000Z"
    assert parse_utc("2026-01-01T11:04:00+01:00") == parse_utc("2026-01-01 10:04:00")
    assert format_local_iso("2026-01-01T10:04:00.000Z", "Asia/Tokyo") == "2026-01-01T19:04:00"
