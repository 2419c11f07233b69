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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
from lcm_lab.io.transcripts.tree import IdColumns, off_branch_issue, select_leaf_positions

if TYPE_CHECKING:
    from lcm_lab.io.transcripts.tree import Positions

EVENT_TYPES = frozenset({"compaction", "branch_summary"})


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
    """One parsed non-header line held whole (its id and parent id are in the parser's
    :class:`IdColumns`, at the same position). A message entry the reader reads again from the
    file has no object at all."""

    line: int
    type: str
    timestamp: str | None
    message: dict[str, Any] | None
    raw: dict[str, Any]

    @property
    def fully_represented(self) -> bool:
        """True when an :class:`InputEntry` carries all of this entry's JSON (else it is kept raw)."""
        return self.message is not None and (self.message is self.raw or _ENVELOPE_KEYS.issuperset(self.raw))


_ENVELOPE_KEYS = frozenset({"type", "id", "parentId", "timestamp", "message"})


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

    Every entry has a position (file order) in :attr:`tree`, which holds its line, id and parent
    id as columns; :attr:`whole` holds the entries kept as objects. A message entry fed with the
    line it came from is not held at all: :attr:`kept` says where its bytes are, and it is read
    again when used, so a session of millions of lines costs tens of bytes a line here.
    """

    def __init__(self, path: str, default_session_id: str, *, message_prefix: str = "") -> None:
        self.path = path
        self.default_session_id = default_session_id
        self.message_prefix = message_prefix
        self.issues: list[LoadIssue] = []
        self.skipped_lines = 0
        self.header: dict[str, Any] | None = None
        self.header_line: int | None = None
        self.tree = IdColumns()
        self.has_message = bytearray()  # 1 at a position whose entry carries a message
        self.whole: dict[int, PiEntry] = {}
        self.last_line = 0
        self.source: LineSource | None = None
        self.kept = KeptLines()

    @property
    def entry_count(self) -> int:
        return len(self.tree)

    # -- feeding ------------------------------------------------------------------------

    def _issue(self, line: int | None, message: str, *, skipped: bool) -> None:
        if skipped:
            self.skipped_lines += 1
        self.issues.append(LoadIssue(self.path, line, self.message_prefix + message, skipped))

    def feed(self, line: int, value: Any, kept_from: tuple[RawLine, LineSource] | None = None) -> None:
        """Add one parsed JSON value found on ``line``. With ``kept_from`` (the raw line and
        where to read it again), a message entry the conversation holds whole is not kept in
        memory but read again from the source when it is used."""
        if line > self.last_line:
            self.last_line = line
        if not isinstance(value, dict):
            kind = type(value).__name__ if value is not None else "null"
            self._issue(line, f"expected a JSON object, found {kind}; skipped", skipped=True)
            return
        entry_type = value.get("type")
        if entry_type == "session":
            if self.header is None and not self.entry_count:
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
        position = len(self.tree)
        self.tree.append(line, clean_id(value.get("id")) or clean_id(value.get("uuid")),
                         clean_id(value.get("parentId")) or clean_id(value.get("parentUuid")))  # fmt: skip
        self.has_message.append(message is not None)
        entry = PiEntry(line, entry_type, timestamp if isinstance(timestamp, str) else None, message, value)
        if kept_from is not None and entry.fully_represented:
            raw_line, source = kept_from
            offset, size = source.keep(raw_line)
            self.kept.add(line, offset, size, message is value)
            self.source = source
        else:
            self.whole[position] = entry

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
        if self.version not in (None, 1) or not self.entry_count or 0 in self.tree.ids.missing:
            return False  # (an entry has an id)
        taken: set[str] = set()
        previous: str | None = None
        upgraded = IdColumns()
        for index, line in enumerate(self.tree.lines, start=1):
            entry_id = _v1_entry_id(self.session_id, index, taken)
            taken.add(entry_id)
            upgraded.append(line, entry_id, previous)
            previous = entry_id
        self.tree = upgraded
        return True

    def _first_kept_id(self, entry: PiEntry, ids: set[str]) -> str | None:
        raw = entry.raw
        kept = clean_id(raw.get("firstKeptEntryId"))
        if kept is not None:
            if kept not in ids:
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
        if 0 <= position < self.entry_count:
            return self.tree.ids[position]
        self._issue(
            entry.line,
            f"compaction firstKeptEntryIndex {index} points outside the file's entries",
            skipped=False,
        )
        return None

    def _event(self, position: int, ids: set[str]) -> RecordedEvent:
        entry = self.whole[position]
        raw = entry.raw
        summary = raw.get("summary")
        return RecordedEvent(
            kind=entry.type,
            line=entry.line,
            entry_id=self.tree.ids[position],
            timestamp=entry.timestamp,
            summary=summary if isinstance(summary, str) else None,
            first_kept_entry_id=self._first_kept_id(entry, ids) if entry.type == "compaction" else None,
            tokens_before=_int_or_none(raw.get("tokensBefore")),
            raw=raw,
        )

    def _path(self) -> tuple[Positions, str]:
        """The positions of the conversation's entries (the leaf path, or every entry when the
        tree cannot be used) and how they were chosen, reporting what the selection found."""
        import numpy as np

        tree = self.tree
        everything = np.arange(self.entry_count, dtype=np.int64)
        # lossless-claw only places entries that have an id or carry a message in its tree.
        placed = (np.frombuffer(tree.ids.missing, dtype=np.uint8) == 0) | (np.frombuffer(self.has_message, dtype=np.uint8) == 1)
        members = everything if placed.all() else np.flatnonzero(placed)
        selection = select_leaf_positions(tree, members)
        if selection.mode == "file-order":
            path = everything
            self._issue(selection.problem_line, selection.problem or "fell back to file order", skipped=False)
        else:
            path = selection.positions
            for position in np.flatnonzero(~placed).tolist():
                entry = self.whole[position]
                self._issue(entry.line, f"{entry.type} entry without an id cannot be placed in the id tree; left out",
                            skipped=False)  # fmt: skip
            left_out = np.frombuffer(tree.lines, dtype=np.int64)[selection.left_out(members)]
            if (branches := off_branch_issue(left_out)) is not None:
                self._issue(*branches, skipped=False)
        for earlier, later in selection.duplicates:
            self._issue(
                tree.lines[later],
                f"duplicate entry id {tree.ids[later]!r} (also on line {tree.lines[earlier]}); the later occurrence wins",
                skipped=False,
            )
        return path, selection.mode

    def build(self) -> LoadedConversation:
        """Select the leaf path and return the conversation with its recorded events."""
        import numpy as np

        upgraded = self._upgrade_v1_ids()
        tree, whole = self.tree, self.whole
        path, mode = self._path()
        tree.release_parents()
        if len(path) == self.entry_count and bool((np.diff(path) > 0).all()):  # every entry, in file order
            steps = [(position, position) for position in sorted(whole)]
            off_path_lines: tuple[int, ...] = ()
        else:
            step = np.full(self.entry_count, -1, dtype=np.int64)
            step[path] = np.arange(len(path))
            steps = sorted((int(step[p]), p) for p in whole if step[p] >= 0)
            off_path_lines = tuple(np.sort(np.frombuffer(tree.lines, dtype=np.int64)[step < 0]).tolist())
            del step
        held = [position for _, position in steps]  # the entries held whole, in path order
        events_at = [p for p in held if whole[p].type in EVENT_TYPES]
        wanted = [kept for p in events_at if (kept := clean_id(whole[p].raw.get("firstKeptEntryId"))) is not None]
        ids = tree.present(wanted)
        events = tuple(self._event(p, ids) for p in events_at)
        entries = self._entries(path, steps)
        title = None
        for position in held:
            entry = whole[position]
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
                "leaf_path": mode,
                "upgraded_from_v1": upgraded,
                "entries_in_file": self.entry_count,
                "off_path_entries": self.entry_count - len(path),
                "off_path_lines": off_path_lines,
                "raw_entries": {whole[p].line: whole[p].raw for p in held if not whole[p].fully_represented},
            },
        )

    def _entries(self, path: Positions, held: list[tuple[int, int]]) -> Sequence[InputEntry]:
        """The entries at ``path``; ``held`` pairs an index of it with the position of an entry
        held whole (kept as it is), the others are read again when used."""
        import numpy as np

        tree, whole = self.tree, self.whole

        def entry_at(position: int) -> InputEntry:
            entry = whole[position]
            return InputEntry(line=entry.line, type=entry.type, message=entry.message, entry_id=tree.ids[position],
                              timestamp=entry.timestamp)  # fmt: skip

        if self.source is None:  # every entry is held
            return tuple(entry_at(position) for _, position in held)
        lines = np.frombuffer(tree.lines, dtype=np.int64)[path]
        return ReReadEntries(self.source, tree.ids, path, lines, self.kept.at(lines),
                             {index: entry_at(position) for index, position in held})  # fmt: skip


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
                assert reader.current is not None
                parser.feed(line, value, (reader.current, source))
        else:
            parser = read_pi_records(reader, display, stem)
        parser.last_line = max(parser.last_line, reader.last_line)
        issues, skipped = reader.issues, reader.skipped_lines
        layout = "jsonl"
    if parser.header is None and not parser.entry_count:
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
