"""Transcript readers: files → :class:`~lcm_lab.io.model.LoadedConversation` values (no duckdb).

>>> from lcm_lab.io.transcripts import read_transcript, detect_format
>>> read = read_transcript("before-compaction.jsonl")  # doctest: +SKIP
>>> read.kind, len(read.conversations[0].events)  # doctest: +SKIP
('pi-jsonl', 2)
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from lcm_lab.errors import MissingFileError
from lcm_lab.io.transcripts.base import (
    CLAUDE_CODE_JSONL,
    LCM_DB,
    LOCOMO_JSON,
    OPENCLAW_SQLITE,
    OPENCLAW_STATE_DIR,
    PI_JSONL,
    SUPPORTED_FORMATS_TEXT,
    TRANSCRIPT_KINDS,
    TranscriptFormatError,
    TranscriptRead,
)
from lcm_lab.io.transcripts.claude_code import read_claude_code_jsonl
from lcm_lab.io.transcripts.detect import describe_file, detect_format
from lcm_lab.io.transcripts.jsonl import paused_gc
from lcm_lab.io.transcripts.locomo import read_locomo_json
from lcm_lab.io.transcripts.openclaw_sqlite import read_openclaw_sqlite
from lcm_lab.io.transcripts.pi import read_pi_jsonl
from lcm_lab.io.transcripts.state_dir import (
    StateDirItem,
    StateDirScan,
    iter_state_dir,
    read_state_dir_item,
    scan_state_dir,
)

READERS: dict[str, Callable[[str | Path], TranscriptRead]] = {
    PI_JSONL: read_pi_jsonl,
    CLAUDE_CODE_JSONL: read_claude_code_jsonl,
    LOCOMO_JSON: read_locomo_json,
    OPENCLAW_SQLITE: read_openclaw_sqlite,
}


def read_transcript(path: str | Path, *, kind: str | None = None, reread: bool = False) -> TranscriptRead:
    """Read one transcript file, detecting its format from content unless ``kind`` is given.

    ``reread``: a pi or Claude Code session's messages are not held but read again from the file when used
    (see :func:`read_pi_jsonl`); the loader asks for this, so big sessions load in bounded memory.

    Raises :class:`TranscriptFormatError` (a ``ValueError``) when the file is no supported
    transcript, saying what it looks like; an lcm.db or a state directory is named as such so
    callers can route it. Problems inside a readable file are returned as ``issues``.
    """
    file_path = Path(path)
    if not file_path.exists():
        raise MissingFileError(f"{path}: no such file or directory")
    if kind is None:
        kind = detect_format(file_path)
    if kind is None:
        raise TranscriptFormatError(f"{path}: not a transcript: {describe_file(file_path)}; {SUPPORTED_FORMATS_TEXT}")
    if kind == LCM_DB:
        raise TranscriptFormatError(f"{path}: a lossless-claw lcm.db, not a transcript; load it with the lcm.db loader")
    if kind == OPENCLAW_STATE_DIR:
        raise TranscriptFormatError(f"{path}: an OpenClaw state directory; list its sources with scan_state_dir()")
    reader = READERS.get(kind)
    if reader is None:
        raise TranscriptFormatError(f"{path}: unknown transcript kind {kind!r}; {SUPPORTED_FORMATS_TEXT}")
    with paused_gc():
        if kind == PI_JSONL:
            return read_pi_jsonl(file_path, reread=reread)
        if kind == CLAUDE_CODE_JSONL:
            return read_claude_code_jsonl(file_path, reread=reread)
        return reader(file_path)


__all__ = [
    "CLAUDE_CODE_JSONL",
    "LCM_DB",
    "LOCOMO_JSON",
    "OPENCLAW_SQLITE",
    "OPENCLAW_STATE_DIR",
    "PI_JSONL",
    "READERS",
    "SUPPORTED_FORMATS_TEXT",
    "TRANSCRIPT_KINDS",
    "StateDirItem",
    "StateDirScan",
    "TranscriptFormatError",
    "TranscriptRead",
    "describe_file",
    "detect_format",
    "iter_state_dir",
    "read_claude_code_jsonl",
    "read_locomo_json",
    "read_openclaw_sqlite",
    "read_pi_jsonl",
    "read_state_dir_item",
    "read_transcript",
    "scan_state_dir",
]
