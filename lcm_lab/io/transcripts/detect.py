"""Recognise a transcript format from a file's content (the extension is only a hint)."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

from lcm_lab.io.sqlite_read import SqliteReadError, sqlite_table_names
from lcm_lab.io.transcripts.base import (
    CLAUDE_CODE_JSONL,
    LCM_DB,
    LOCOMO_JSON,
    OPENCLAW_SQLITE,
    OPENCLAW_STATE_DIR,
    PI_JSONL,
)
from lcm_lab.io.transcripts.jsonl import (
    UTF8_BOM,
    is_gzip,
    iter_raw_lines,
    max_line_bytes,
    open_bytes,
    parse_json_bytes,
    read_all_bytes,
)
from lcm_lab.io.transcripts.locomo import looks_like_locomo
from lcm_lab.io.transcripts.openclaw_sqlite import SQLITE_MAGIC
from lcm_lab.io.transcripts.pi import is_runtime_message

_HEAD_BYTES = 64 * 1024
_SNIFF_LINES = 50
_PI_ENTRY_TYPES = frozenset(
    {
        "message",
        "model_change",
        "thinking_level_change",
        "compaction",
        "branch_summary",
        "custom",
        "custom_message",
        "label",
        "session_info",
    }
)
_LCM_TABLES = frozenset({"conversations", "messages", "summaries", "context_items"})


def is_state_dir(path: Path) -> bool:
    """An OpenClaw state directory holds ``agents/`` (and often ``lcm.db``)."""
    return (path / "agents").is_dir() or (path / "lcm.db").is_file()


_CONTROL_BYTES = bytes(b for b in range(32) if b not in (9, 10, 13))


def _binary_sign(head: bytes) -> str | None:
    """Why ``head`` looks binary: NUL bytes on the first line, or control bytes in more than 1%
    of the head; ``None`` for text."""
    if b"\x00" in head.lstrip().split(b"\n", 1)[0]:
        return "NUL bytes on its first line"
    controls = len(head) - len(head.translate(None, _CONTROL_BYTES))
    return "control bytes in over 1% of its start" if controls > len(head) // 100 else None


def _classify_object(value: dict[str, Any]) -> str | None:
    entry_type = value.get("type")
    if entry_type == "session":
        return PI_JSONL
    if "parentUuid" in value or "leafUuid" in value or ("sessionId" in value and "uuid" in value):
        return CLAUDE_CODE_JSONL
    if entry_type in _PI_ENTRY_TYPES and ("id" in value or "parentId" in value or "message" in value):
        return PI_JSONL
    if entry_type is None and is_runtime_message(value):
        return PI_JSONL
    if looks_like_locomo(value):
        return LOCOMO_JSON
    return None


def _sqlite_kind(path: Path) -> str | None:
    try:
        tables = sqlite_table_names(path)
    except (sqlite3.DatabaseError, SqliteReadError):
        return None
    if "transcript_events" in tables:
        return OPENCLAW_SQLITE
    if _LCM_TABLES <= tables:
        return LCM_DB
    return None


def _sniff_lines(path: Path) -> str | None:
    with open_bytes(path) as handle:
        for line in iter_raw_lines(handle, max_line_bytes()):
            if line.number > _SNIFF_LINES:
                break
            if line.data is None:
                continue  # over the line cap: the reader reports it
            data = line.data.strip().removeprefix(UTF8_BOM).strip()
            if not data:
                continue
            try:
                value = parse_json_bytes(data)
            except ValueError:
                continue
            if isinstance(value, dict):
                kind = _classify_object(value)
                if kind is not None:
                    return kind
    return None


def _whole_document(path: Path) -> Any:
    try:  # bounded by the line cap in decompressed bytes (a small .gz may expand without bound)
        return parse_json_bytes(read_all_bytes(path))
    except ValueError:  # InputFileError (too long) included
        return None


def detect_format(path: str | Path) -> str | None:
    """Return the transcript kind of ``path`` or ``None`` when it is none we read.

    Kinds: ``pi-jsonl``, ``claude-code-jsonl``, ``locomo-json``, ``openclaw-sqlite``, plus
    ``lcm-db`` (a lossless-claw database) and ``openclaw-state-dir`` (a directory).

    >>> detect_format("before-compaction.jsonl")  # doctest: +SKIP
    'pi-jsonl'
    """
    file_path = Path(path)
    if file_path.is_dir():
        return OPENCLAW_STATE_DIR if is_state_dir(file_path) else None
    with open_bytes(file_path) as handle:
        head = handle.read(_HEAD_BYTES)
    if head.startswith(SQLITE_MAGIC):
        return None if is_gzip(file_path) else _sqlite_kind(file_path)
    if _binary_sign(head) is not None:
        return None
    text = head.removeprefix(UTF8_BOM).lstrip()
    if not text:
        return None
    if text[:1] == b"[":
        if b'"speaker_a"' in text or b'"sample_id"' in text:
            return LOCOMO_JSON
        document = _whole_document(file_path)
        if isinstance(document, list):
            if looks_like_locomo(document):
                return LOCOMO_JSON
            if any(isinstance(item, dict) and _classify_object(item) == PI_JSONL for item in document[:_SNIFF_LINES]):
                return PI_JSONL
        return None
    if text[:1] != b"{":
        return None
    kind = _sniff_lines(file_path)
    if kind is not None:
        return kind
    document = _whole_document(file_path)  # a pretty-printed single JSON object
    return LOCOMO_JSON if document is not None and looks_like_locomo(document) else None


_FIELD_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,39}")


def describe_file(path: str | Path) -> str:
    """A short phrase saying what a file looks like, for error messages. It describes the file's
    shape, never quotes its text: the file may be anything a path or a link led to
    (``/etc/passwd``, a key file), and the message is printed and logged. Of a JSON object only
    key names that look like field names are listed (a mapping's keys can be its data)."""
    file_path = Path(path)
    if file_path.is_dir():
        return "a directory that is not an OpenClaw state directory (no agents/ or lcm.db)"
    size = file_path.stat().st_size
    if size == 0:
        return "an empty file (0 bytes)"
    with open_bytes(file_path) as handle:
        head = handle.read(_HEAD_BYTES)
    if head.startswith(SQLITE_MAGIC):
        if is_gzip(file_path):
            return "a gzip-compressed SQLite database (decompress it to read it)"
        try:
            tables = sorted(sqlite_table_names(file_path))
        except (sqlite3.DatabaseError, SqliteReadError) as error:
            return f"a corrupt SQLite file ({error})"
        return f"an SQLite database with tables: {', '.join(tables) or 'none'}"
    if (sign := _binary_sign(head)) is not None:
        return f"a binary file ({size:,} bytes, {sign})"
    text = head.removeprefix(UTF8_BOM).strip()
    if not text:
        return f"a file with only whitespace ({size:,} bytes)"
    first_line = text.split(b"\n", 1)[0]
    try:
        value = parse_json_bytes(first_line)
    except ValueError:
        value = _whole_document(file_path) if text[:1] in (b"[", b"{") else None
        if value is None:
            return f"text that is not JSON lines ({size:,} bytes; line 1 is not JSON)"
    if isinstance(value, dict):
        if value.get("type") in ("session_meta", "response_item", "turn_context", "event_msg"):
            return "a Codex CLI rollout (not supported)"
        names = [k for k in value if _FIELD_NAME.fullmatch(k)][:8]
        unnamed = len(value) - len(names)
        keys = ", ".join(names) + (f" ({unnamed} more)" if names and unnamed else "")
        return f"JSON whose first object has keys: {keys}" if names else f"JSON whose first object has {len(value)} keys"
    if isinstance(value, list):
        return f"a JSON array of {len(value)} items that are neither session entries nor LoCoMo samples"
    return f"JSON {type(value).__name__} value"
