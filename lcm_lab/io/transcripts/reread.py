"""Entries whose message is read again from the file when it is used, so a big session is never
held in memory whole.

A reader that works this way keeps, per message line, only the envelope (line, type, id,
timestamp) and where the line's bytes are: in the file itself (plain UTF-8) or in an anonymous
spool file of the decompressed lines (``.gz``, UTF-16/32). :class:`ReReadEntries` is the
conversation's ``entries``: a sequence of :class:`InputEntry` that parses each message again on
access, so the loader's projection streams through them one at a time.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any, NamedTuple, overload

from lcm_lab.engine.types import InputEntry
from lcm_lab.errors import InputFileError
from lcm_lab.io.transcripts.jsonl import (
    UTF8_BOM,
    RawLine,
    is_gzip,
    parse_json_bytes,
    text_encoding_of,
)


class LineSource:
    """Where the bytes of kept lines are read back from: the file (plain UTF-8) or a spool."""

    def __init__(self, path: Path) -> None:
        self.path = path
        with open(path, "rb") as head:
            plain = not is_gzip(path) and text_encoding_of(head.read(4)) is None
        self.spool: IO[bytes] | None = None if plain else tempfile.TemporaryFile(prefix="lcm-lab-lines-")
        self.handle: IO[bytes] | None = None

    def keep(self, line: RawLine) -> tuple[int, int]:
        """Remember ``line``; returns ``(offset, size)`` to read it back with :meth:`read`."""
        if self.spool is None:
            return line.offset, line.size
        assert line.data is not None
        offset = self.spool.seek(0, 2)
        self.spool.write(line.data)
        return offset, len(line.data)

    def read(self, offset: int, size: int) -> bytes:
        if self.spool is not None:
            self.spool.seek(offset)
            return self.spool.read(size)
        if self.handle is None:
            self.handle = open(self.path, "rb")  # noqa: SIM115 - kept open while the entries are used
        self.handle.seek(offset)
        return self.handle.read(size)

    def close(self) -> None:
        for handle in (self.spool, self.handle):
            if handle is not None:
                handle.close()
        self.spool = self.handle = None

    def __del__(self) -> None:
        self.close()


class KeptLine(NamedTuple):
    """A message entry whose message is in ``source`` at ``offset`` (``bare``: the line is the
    message itself, not an envelope holding it under ``"message"``)."""

    line: int
    type: str
    entry_id: str | None
    timestamp: str | None
    offset: int
    size: int
    bare: bool


class ReReadEntries(Sequence[InputEntry]):
    """A conversation's entries, each :class:`KeptLine` parsed again from its source on access."""

    def __init__(self, source: LineSource, items: Sequence[InputEntry | KeptLine]) -> None:
        self.source = source
        self.items = items

    def __len__(self) -> int:
        return len(self.items)

    @overload
    def __getitem__(self, index: int) -> InputEntry: ...

    @overload
    def __getitem__(self, index: slice) -> ReReadEntries: ...

    def __getitem__(self, index: int | slice) -> InputEntry | ReReadEntries:
        if isinstance(index, slice):
            return ReReadEntries(self.source, self.items[index])
        return self._entry(self.items[index])

    def __iter__(self) -> Iterator[InputEntry]:
        for item in self.items:
            yield self._entry(item)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (ReReadEntries, tuple, list)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def _entry(self, item: InputEntry | KeptLine) -> InputEntry:
        if isinstance(item, InputEntry):
            return item
        data = self.source.read(item.offset, item.size).strip().removeprefix(UTF8_BOM).strip()
        try:
            value: Any = parse_json_bytes(data)
        except ValueError:
            value = None
        message = value if item.bare else (value.get("message") if isinstance(value, dict) else None)
        found = value.get("id") if isinstance(value, dict) else None
        if not isinstance(message, dict) or (not item.bare and isinstance(found, str) and found.strip() != item.entry_id):
            raise InputFileError(self.source.path, f"line {item.line} changed while the file was loaded; load it again")
        return InputEntry(line=item.line, type=item.type, message=message, entry_id=item.entry_id, timestamp=item.timestamp)
