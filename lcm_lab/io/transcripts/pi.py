"""OpenClaw / pi session transcripts (JSONL v1, v2, v3) → :class:`LoadedConversation`.

Format facts (pi-coding-agent's session format v3, ``dist/core/session-manager.d.ts``; lossless-claw's parser, ``src/transcript.ts``):

* line 1 is a ``{"type":"session", "version", "id", ...}`` header (v1 has no ``version``);
* every other line is an entry with ``type``, ``id``, ``parentId`` and an ISO ``timestamp``;
  v1 entries have no ids (legacy ``uuid``/``parentUuid`` are accepted); a bare
  ``{role, content}`` line is a message; a whole-file JSON array of messages is accepted;
* the active conversation is the root→leaf path ending at the last entry (see :mod:`.tree`);
* ``compaction`` and ``branch_summary`` entries are the host's own compaction records.

Line numbers are 1-based with the header on line 1. Message dicts are kept exactly as parsed
(the engine's content projection and token counts depend on every key). Whatever an
``InputEntry`` does not carry (non-message entries such as ``model_change`` or ``custom``, and
message entries with extra envelope fields) is kept verbatim in
``LoadedConversation.meta["raw_entries"]`` (line → object); lines of abandoned branches are
listed in ``meta["off_path_lines"]``.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, cast

from lcm_lab.engine.types import Conversation, InputEntry
from lcm_lab.io.model import LoadedConversation, LoadIssue, RecordedEvent
from lcm_lab.io.transcripts.base import PI_JSONL, TranscriptFormatError, TranscriptRead
from lcm_lab.io.transcripts.jsonl import (
    JsonlReader,
    RawLine,
    first_nonblank_byte,
    parse_json_bytes,
    read_all_bytes,
)
from lcm_lab.io.transcripts.reread import KeptLines, LineSource, ReReadEntries
from lcm_lab.io.transcripts.tree import off_branch_issue, select_leaf_path

EVENT_TYPES = frozenset({"compaction", "branch_summary"})
_NO_RAW: dict[str, Any] = {}  # the raw value of a kept entry (read again with its line; never mutated)


def clean_id(value: object) -> str | None:
    """An envelope id as lossless-claw reads it: a non-blank string, trimmed, else ``None``."""
    if not isinstance(value, str):
        return None
    trimmed = value.strip()
    return trimmed or None


def is_runtime_message(value: object) -> bool:
    """True for a dict lossless-claw would import as a message (string role + content, or a
    bash execution with command and output)."""
    if not isinstance(value, dict) or not isinstance(value.get("role"), str):
        return False
    return "content" in value or ("command" in value and "output" in value)


@dataclass(slots=True)
class PiEntry:
    """One parsed non-header line (mutable while ids are upgraded). A message entry the reader
    reads again becomes a :class:`_KeptEntry`."""

    line: int
    type: str
    entry_id: str | None
    parent_id: str | None
    timestamp: str | None
    message: dict[str, Any] | None
    raw: dict[str, Any]
    kept: ClassVar[bool] = False

    @property
    def has_message(self) -> bool:
        return self.message is not None


class _KeptEntry:
    """A message entry whose line is read again: only what the leaf-path walk needs (the parser's
    :class:`KeptLines` say where the line's bytes are; its timestamp and message come back with
    it). 40 bytes a line less than a :class:`PiEntry` with those fields emptied."""

    __slots__ = ("line", "entry_id", "parent_id")
    type = "message"
    timestamp: str | None = None
    message: dict[str, Any] | None = None
    raw: dict[str, Any] = _NO_RAW
    kept = True
    has_message = True

    def __init__(self, line: int, entry_id: str | None, parent_id: str | None) -> None:
        self.line, self.entry_id, self.parent_id = line, entry_id, parent_id


_Entry = PiEntry | _KeptEntry

_ENVELOPE_KEYS = frozenset({"type", "id", "parentId", "timestamp", "message"})


def _not_fully_represented(entry: _Entry) -> bool:
    """True when an :class:`InputEntry` would drop part of this entry's JSON (kept raw)."""
    if entry.kept:
        return False  # only fully represented message entries are read again
    if entry.message is None:
        return True
    return entry.message is not entry.raw and not _ENVELOPE_KEYS.issuperset(entry.raw)


def _v1_entry_id(session_id: str, index: int, taken: set[str]) -> str:
    digest = hashlib.sha256(f"{session_id}\n{index}".encode()).hexdigest()
    width = 8
    while digest[:width] in taken:
        width += 2
    return digest[:width]


def _int_or_none(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


class PiSessionParser:
    """Accumulates ``(line, value)`` records of one pi session and builds the conversation.

    Shared by the JSONL reader and the SQLite ``transcript_events`` reader (each row's
    ``event_json`` is the object a JSONL line would hold). ``message_prefix`` is put in front
    of every issue message (the SQLite reader names the session there).
    """

    def __init__(self, path: str, default_session_id: str, *, message_prefix: str = "") -> None:
        self.path = path
        self.default_session_id = default_session_id
        self.message_prefix = message_prefix
        self.issues: list[LoadIssue] = []
        self.skipped_lines = 0
        self.header: dict[str, Any] | None = None
        self.header_line: int | None = None
        self.entries: list[_Entry] = []
        self.last_line = 0
        self.source: LineSource | None = None
        self.kept = KeptLines()

    # -- feeding ------------------------------------------------------------------------

    def _issue(self, line: int | None, message: str, *, skipped: bool) -> None:
        if skipped:
            self.skipped_lines += 1
        self.issues.append(LoadIssue(self.path, line, self.message_prefix + message, skipped))

    def feed(self, line: int, value: Any) -> None:
        """Add one parsed JSON value found on ``line``."""
        if line > self.last_line:
            self.last_line = line
        if not isinstance(value, dict):
            kind = type(value).__name__ if value is not None else "null"
            self._issue(line, f"expected a JSON object, found {kind}; skipped", skipped=True)
            return
        entry_type = value.get("type")
        if entry_type == "session":
            if self.header is None and not self.entries:
                self.header = value
                self.header_line = line
            else:
                self._issue(line, "a second session header inside the session; skipped", skipped=True)
            return
        message: dict[str, Any] | None = None
        if entry_type is None and is_runtime_message(value):
            entry_type, message = "message", value
        elif entry_type == "message":
            candidate = value.get("message")
            if is_runtime_message(candidate):
                message = candidate
            else:
                self._issue(
                    line,
                    "message entry without a usable message (needs a string role and content); "
                    "kept as an entry that carries no message",
                    skipped=False,
                )
        elif not isinstance(entry_type, str):
            self._issue(line, "entry has no string 'type'; kept as type 'unknown'", skipped=False)
            entry_type = "unknown"
        timestamp = value.get("timestamp") if message is not value else None
        self.entries.append(
            PiEntry(
                line=line,
                type=entry_type,
                entry_id=clean_id(value.get("id")) or clean_id(value.get("uuid")),
                parent_id=clean_id(value.get("parentId")) or clean_id(value.get("parentUuid")),
                timestamp=timestamp if isinstance(timestamp, str) else None,
                message=message,
                raw=value,
            )
        )

    def keep_last(self, line: RawLine, source: LineSource) -> None:
        """Drop the message just fed (from ``line``) and read it again from ``source`` when used,
        if it is an entry the conversation holds whole (a fully represented message entry)."""
        if not self.entries or self.entries[-1].line != line.number:
            return
        entry = self.entries[-1]
        if entry.message is None or _not_fully_represented(entry):
            return
        offset, size = source.keep(line)
        self.kept.add(entry.line, offset, size, entry.message is entry.raw)
        # Interned: a child's parent_id then shares its parent's string.
        self.entries[-1] = _KeptEntry(entry.line, None if entry.entry_id is None else sys.intern(entry.entry_id),
                                      None if entry.parent_id is None else sys.intern(entry.parent_id))  # fmt: skip
        self.source = source

    # -- building -----------------------------------------------------------------------

    @property
    def version(self) -> int | None:
        """Header version (1 when the header has none); ``None`` without a header."""
        if self.header is None:
            return None
        return _int_or_none(self.header.get("version")) or 1

    @property
    def session_id(self) -> str:
        if self.header is not None:
            header_id = clean_id(self.header.get("id"))
            if header_id is not None:
                return header_id
        return self.default_session_id

    def _upgrade_v1_ids(self) -> bool:
        """pi's v1→v2 migration: fresh ids and a linear parent chain (deterministic ids here)."""
        if self.version not in (None, 1) or not self.entries:
            return False
        if any(entry.entry_id is not None for entry in self.entries):
            return False
        taken: set[str] = set()
        previous: str | None = None
        for index, entry in enumerate(self.entries, start=1):
            entry_id = _v1_entry_id(self.session_id, index, taken)
            taken.add(entry_id)
            entry.entry_id, entry.parent_id = entry_id, previous
            previous = entry_id
        return True

    def _first_kept_id(self, entry: _Entry, id_lines: Mapping[str, int]) -> str | None:
        raw = entry.raw
        kept = clean_id(raw.get("firstKeptEntryId"))
        if kept is not None:
            if kept not in id_lines:
                self._issue(
                    entry.line,
                    f"compaction firstKeptEntryId {kept!r} names no entry of this file",
                    skipped=False,
                )
            return kept
        index = _int_or_none(raw.get("firstKeptEntryIndex"))
        if index is None:
            return None
        # v1: index into the parsed lines with the header at index 0 (pi's migrateV1ToV2).
        offset = 1 if self.header is not None else 0
        position = index - offset
        if 0 <= position < len(self.entries):
            return self.entries[position].entry_id
        self._issue(
            entry.line,
            f"compaction firstKeptEntryIndex {index} points outside the file's entries",
            skipped=False,
        )
        return None

    def _event(self, entry: _Entry, id_lines: Mapping[str, int]) -> RecordedEvent:
        raw = entry.raw
        summary = raw.get("summary")
        return RecordedEvent(
            kind=entry.type,
            line=entry.line,
            entry_id=entry.entry_id,
            timestamp=entry.timestamp,
            summary=summary if isinstance(summary, str) else None,
            first_kept_entry_id=self._first_kept_id(entry, id_lines) if entry.type == "compaction" else None,
            tokens_before=_int_or_none(raw.get("tokensBefore")),
            raw=raw,
        )

    def build(self) -> LoadedConversation:
        """Select the leaf path and return the conversation with its recorded events."""
        upgraded = self._upgrade_v1_ids()
        # lossless-claw only places entries that have an id or carry a message in its tree.
        records = [e for e in self.entries if e.entry_id is not None or e.has_message]
        loose = [e for e in self.entries if e.entry_id is None and not e.has_message]
        selection = select_leaf_path(records)
        if selection.mode == "file-order":
            path: list[_Entry] = list(self.entries)
            self._issue(selection.problem_line, selection.problem or "fell back to file order", skipped=False)
        else:
            path = list(selection.nodes)
            for entry in loose:
                self._issue(
                    entry.line,
                    f"{entry.type} entry without an id cannot be placed in the id tree; left out",
                    skipped=False,
                )
            if (branches := off_branch_issue(records, selection)) is not None:
                self._issue(*branches, skipped=False)
        for earlier, later, entry_id in selection.duplicate_lines:
            self._issue(
                later,
                f"duplicate entry id {entry_id!r} (also on line {earlier}); the later occurrence wins",
                skipped=False,
            )
        on_path = [e for e in path if e.type in EVENT_TYPES]
        id_lines = {e.entry_id: e.line for e in self.entries if e.entry_id is not None} if on_path else {}
        events = tuple(self._event(e, id_lines) for e in on_path)
        del id_lines
        # Kept lines get their ids only now (v1 files receive theirs in _upgrade_v1_ids).
        items = (
            InputEntry(line=e.line, type=e.type, message=e.message, entry_id=e.entry_id, timestamp=e.timestamp)
            if not e.kept else (e.line, e.entry_id, self.kept.of(e.line))
            for e in path
        )  # fmt: skip
        entries: Sequence[InputEntry] = (
            ReReadEntries(self.source, items) if self.source is not None
            else cast(tuple[InputEntry, ...], tuple(items))
        )  # fmt: skip
        title = None
        for entry in path:
            if entry.type == "session_info" and isinstance(entry.raw.get("name"), str):
                title = entry.raw["name"]
        conversation = Conversation(
            session_id=self.session_id,
            entries=entries,  # type: ignore[arg-type]
            title=title,
            source=self.path,
            meta={
                "format": PI_JSONL,
                "version": self.version,
                "header": self.header or {},
                "header_line": self.header_line,
                "last_line": self.last_line,
            },
        )
        return LoadedConversation(
            conversation=conversation,
            events=events,
            meta={
                "leaf_path": selection.mode,
                "upgraded_from_v1": upgraded,
                "entries_in_file": len(self.entries),
                "off_path_entries": len(self.entries) - len(path),
                "off_path_lines": _off_path_lines(self.entries, path),
                "raw_entries": {e.line: e.raw for e in path if _not_fully_represented(e)},
            },
        )


def _off_path_lines(entries: Sequence[_Entry], path: Sequence[_Entry]) -> tuple[int, ...]:
    if len(path) == len(entries):  # the usual case, one branch: nothing is off the path
        return ()
    on_path = {e.line for e in path}
    return tuple(sorted({e.line for e in entries if e.line not in on_path}))


def read_pi_records(
    records: Iterable[tuple[int, Any]], path: str, default_session_id: str, *, message_prefix: str = ""
) -> PiSessionParser:
    """Feed ``(line, value)`` records into a fresh parser and return it (call ``build()``)."""
    parser = PiSessionParser(path, default_session_id, message_prefix=message_prefix)
    for line, value in records:
        parser.feed(line, value)
    return parser


def _read_json_array(path: Path, display: str) -> tuple[list[Any], int]:
    data = read_all_bytes(path)  # a JSON array is one document: it cannot be streamed by lines
    try:
        value = parse_json_bytes(data)
    except ValueError as error:
        raise TranscriptFormatError(
            f"{display}: starts with '[' but is not a valid JSON array ({error})"
        ) from None
    if not isinstance(value, list):
        raise TranscriptFormatError(f"{display}: expected a JSON array of session entries")
    return value, data.count(b"\n") + 1


def read_pi_jsonl(path: str | Path, *, reread: bool = False) -> TranscriptRead:
    """Read an OpenClaw/pi session file (JSONL v1-v3, or a whole-file JSON array).

    With ``reread``, message lines are not held: the conversation's entries are a
    :class:`~lcm_lab.io.transcripts.reread.ReReadEntries` that parses each message again from the
    file when it is used (the loader streams big sessions this way, in bounded memory).

    >>> read = read_pi_jsonl("session.jsonl")  # doctest: +SKIP
    >>> read.conversations[0].conversation.entries[0].message["role"]  # doctest: +SKIP
    'user'
    """
    file_path = Path(path)
    display = str(path)
    stem = file_path.name.split(".")[0] or file_path.stem
    if first_nonblank_byte(file_path) == b"[":
        values, _ = _read_json_array(file_path, display)
        parser = read_pi_records(enumerate(values, start=1), display, stem)
        issues: list[LoadIssue] = []
        skipped = 0
        layout = "json-array"
    else:
        reader = JsonlReader(file_path, display_path=display)
        if reread:
            parser = PiSessionParser(display, stem)
            source = LineSource(file_path)
            for line, value in reader:
                parser.feed(line, value)
                assert reader.current is not None
                parser.keep_last(reader.current, source)
        else:
            parser = read_pi_records(reader, display, stem)
        parser.last_line = max(parser.last_line, reader.last_line)
        issues, skipped = reader.issues, reader.skipped_lines
        layout = "jsonl"
    if parser.header is None and not parser.entries:
        problems = f" ({len(issues)} unparseable lines)" if issues else ""
        raise TranscriptFormatError(
            f"{display}: no pi session header and no session entries found{problems}; "
            "not an OpenClaw/pi transcript"
        )
    loaded = parser.build()
    loaded = LoadedConversation(
        conversation=loaded.conversation,
        events=loaded.events,
        meta={**loaded.meta, "layout": layout},
    )
    all_issues = sorted(
        [*issues, *parser.issues], key=lambda issue: (issue.line is None, issue.line or 0)
    )
    return TranscriptRead(
        path=display,
        kind=PI_JSONL,
        conversations=(loaded,),
        issues=tuple(all_issues),
        skipped_lines=skipped + parser.skipped_lines,
        version=parser.version,
    )
