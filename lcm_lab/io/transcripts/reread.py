"""Entries whose message is read again from the file when it is used, so a big session is never
held in memory whole.

A reader that works this way keeps, per message line, only the envelope (line, type, id,
timestamp) and where the line's bytes are: in the file itself (plain UTF-8) or in an anonymous
spool file of the decompressed lines (``.gz``, UTF-16/32). :class:`ReReadEntries` is the
conversation's ``entries``: a sequence of :class:`InputEntry` that parses each message again on
access, so the loader's projection streams through them one at a time.
"""

from __future__ import annotations

import os
import tempfile
from array import array
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any, NamedTuple, Self, overload

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

    def parse(self, offset: int, size: int) -> Any:
        """The JSON value of a kept line (``None`` when it no longer parses)."""
        data = self.read(offset, size).strip().removeprefix(UTF8_BOM).strip()
        try:
            return parse_json_bytes(data)
        except ValueError:
            return None

    def read(self, offset: int, size: int) -> bytes:
        # pread: forked split workers share these descriptors, and with them a seek position.
        if self.spool is not None:
            self.spool.flush()
            return os.pread(self.spool.fileno(), size, offset)
        if self.handle is None:
            self.handle = open(self.path, "rb")  # noqa: SIM115 - kept open while the entries are used
        return os.pread(self.handle.fileno(), size, offset)

    def close(self) -> None:
        for handle in (self.spool, self.handle):
            if handle is not None:
                handle.close()
        self.spool = self.handle = None

    def __del__(self) -> None:
        self.close()


class KeptLine(NamedTuple):
    """Where a message entry's line is in a :class:`LineSource` (``bare``: the line is the
    message itself, not an envelope holding it under ``"message"``)."""

    offset: int
    size: int
    bare: bool


class KeptLines:
    """Where each kept line's bytes are (:meth:`LineSource.keep`), in typed arrays indexed by line
    number (lines are added in increasing order): a few bytes per line, no object per line (a
    dict of ``(offset, size)`` tuples cost about 170 bytes a line)."""

    def __init__(self) -> None:
        self.offsets = array("q")  # -1: the line is not kept
        self.sizes = array("q")
        self.bare = bytearray()

    def add(self, line: int, offset: int, size: int, bare: bool = False) -> None:
        missing = line + 1 - len(self.offsets)
        if missing > 0:
            self.offsets.extend([-1] * missing)
            self.sizes.extend([0] * missing)
            self.bare.extend(bytes(missing))
        self.offsets[line], self.sizes[line], self.bare[line] = offset, size, bare

    def of(self, line: int) -> KeptLine:
        """Where ``line`` is; ``KeyError`` when it was not kept."""
        if not 0 <= line < len(self.offsets) or self.offsets[line] < 0:
            raise KeyError(line)
        return KeptLine(self.offsets[line], self.sizes[line], bool(self.bare[line]))


class PackedStrings:
    """A column of strings (or None) in one buffer of UTF-8 bytes, decoded on access.

    A list of ids keeps a string object per entry alive after the read, and with it the memory
    blocks around it: dropping the ids of a 2M-line session's entries freed 300 of its 613 MB.
    Lone surrogates (JSON allows them) round-trip (``surrogatepass``).

    >>> ids = PackedStrings(["a1", None, "é"])
    >>> [ids[0], ids[1], ids[2]], ids.part(slice(1, None))[1]
    (['a1', None, 'é'], 'é')
    """

    def __init__(self, values: Iterable[str | None] = ()) -> None:
        self.data = bytearray()
        self.ends = array("q")  # where each value's bytes end in ``data``
        self.missing = bytearray()  # 1: the value is None
        for value in values:
            self.append(value)

    def append(self, value: str | None) -> None:
        if value is not None:
            self.data += value.encode("utf-8", "surrogatepass")
        self.ends.append(len(self.data))
        self.missing.append(value is None)

    def __len__(self) -> int:
        return len(self.ends)

    def __getitem__(self, index: int) -> str | None:
        if self.missing[index]:
            return None
        start = self.ends[index - 1] if index > 0 else 0
        return self.data[start : self.ends[index]].decode("utf-8", "surrogatepass")

    def part(self, index: slice) -> PackedStrings:
        start, stop, step = index.indices(len(self))
        if step != 1:
            return PackedStrings(self[i] for i in range(start, stop, step))
        part = PackedStrings()
        if stop > start:
            base = self.ends[start - 1] if start > 0 else 0
            part.data = self.data[base : self.ends[stop - 1]]
            part.ends = array("q", (end - base for end in self.ends[start:stop]))
            part.missing = self.missing[start:stop]
        return part


class LazyEntries(Sequence[InputEntry]):
    """A conversation's entries built on access: subclasses say how many (``__len__``), how one
    is built (``_entry``) and what a slice is (``_part``, itself lazy: the loader slices from
    where a conversation starts)."""

    @overload
    def __getitem__(self, index: int) -> InputEntry: ...

    @overload
    def __getitem__(self, index: slice) -> Self: ...

    def __getitem__(self, index: int | slice) -> InputEntry | Self:
        if isinstance(index, slice):
            return self._part(index)
        return self._entry(range(len(self))[index])  # negative indices; IndexError out of range

    def __iter__(self) -> Iterator[InputEntry]:
        for index in range(len(self)):
            yield self._entry(index)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (LazyEntries, tuple, list)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __len__(self) -> int:
        raise NotImplementedError

    def _entry(self, index: int) -> InputEntry:
        raise NotImplementedError

    def _part(self, index: slice) -> Self:
        raise NotImplementedError


class ReReadEntries(LazyEntries):
    """A conversation's entries; those with a :class:`KeptLine` are parsed again on access.

    Stored as columns (line numbers, offsets and sizes in typed arrays, ids packed in one buffer)
    so a session of a million lines costs tens of bytes per entry here, and no object per entry
    outlives the read. Kept entries are ``message``
    entries; their envelope timestamp comes back with the line.
    """

    def __init__(self, source: LineSource, items: Iterable[InputEntry | tuple[int, str | None, KeptLine]]) -> None:
        self.source = source
        self.lines = array("q")
        self.offsets = array("q")  # -1: the entry is held whole in ``held``
        self.sizes = array("q")
        self.bare = bytearray()
        self.ids = PackedStrings()
        self.held: dict[int, InputEntry] = {}
        for index, item in enumerate(items):
            if isinstance(item, InputEntry):
                self.held[index] = item
                self._append(item.line, item.entry_id, -1, 0, False)
            else:
                line, entry_id, kept = item
                self._append(line, entry_id, kept.offset, kept.size, kept.bare)

    def _append(self, line: int, entry_id: str | None, offset: int, size: int, bare: bool) -> None:
        self.lines.append(line)
        self.ids.append(entry_id)
        self.offsets.append(offset)
        self.sizes.append(size)
        self.bare.append(bare)

    def __len__(self) -> int:
        return len(self.lines)

    def _part(self, index: slice) -> ReReadEntries:
        part = ReReadEntries(self.source, ())
        positions = range(len(self))[index]
        part.lines, part.offsets, part.sizes = self.lines[index], self.offsets[index], self.sizes[index]
        part.bare, part.ids = self.bare[index], self.ids.part(index)
        part.held = {new: self.held[old] for new, old in enumerate(positions) if old in self.held}
        return part

    def _entry(self, index: int) -> InputEntry:
        held = self.held.get(index)
        if held is not None:
            return held
        line, entry_id, bare = self.lines[index], self.ids[index], bool(self.bare[index])
        value = self.source.parse(self.offsets[index], self.sizes[index])
        message = value if bare else (value.get("message") if isinstance(value, dict) else None)
        found = value.get("id") if isinstance(value, dict) else None
        if not isinstance(message, dict) or (not bare and isinstance(found, str) and found.strip() != entry_id):
            raise InputFileError(self.source.path, f"line {line} changed while the file was loaded; load it again")
        timestamp = None if bare else value.get("timestamp")
        return InputEntry(line=line, type="message", message=message, entry_id=entry_id,
                          timestamp=timestamp if isinstance(timestamp, str) else None)  # fmt: skip
