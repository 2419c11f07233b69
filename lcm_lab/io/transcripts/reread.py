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
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NamedTuple, Self, overload

from lcm_lab.engine.types import InputEntry
from lcm_lab.errors import InputFileError
from lcm_lab.io.transcripts.jsonl import (
    UTF8_BOM,
    RawLine,
    is_gzip,
    parse_json_bytes,
    text_encoding_of,
)
from lcm_lab.io.transcripts.packed import PackedStrings

if TYPE_CHECKING:
    from lcm_lab.io.transcripts.tree import Flags, Positions


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

    def at(self, lines: Positions) -> tuple[Positions, Positions, Flags]:
        """Offsets, sizes and bare flags of many lines at once (offset -1: not kept)."""
        import numpy as np

        known = lines < len(self.offsets)
        offsets = np.full(len(lines), -1, dtype=np.int64)
        sizes = np.zeros(len(lines), dtype=np.int64)
        bare = np.zeros(len(lines), dtype=np.uint8)
        if len(self.offsets):
            inside = lines[known]
            offsets[known] = np.frombuffer(self.offsets, dtype=np.int64)[inside]
            sizes[known] = np.frombuffer(self.sizes, dtype=np.int64)[inside]
            bare[known] = np.frombuffer(self.bare, dtype=np.uint8)[inside]
        return offsets, sizes, bare


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
    """A conversation's entries; those not ``held`` whole are parsed again from ``source`` on access.

    Stored as columns (numpy arrays of line numbers, offsets and sizes; each entry's position in
    a shared :class:`PackedStrings` of ids), so a session of a million lines costs about 40 bytes
    per entry here and no object per entry outlives the read; a part (a slice) shares them.
    Kept entries are ``message`` entries; their envelope timestamp comes back with the line.
    ``held`` maps an index to the entry kept whole (offset -1 there).
    """

    def __init__(self, source: LineSource, ids: PackedStrings, id_at: Positions, lines: Positions,
                 kept: tuple[Positions, Positions, Flags], held: dict[int, InputEntry]) -> None:  # fmt: skip
        self.source, self.ids, self.id_at, self.lines = source, ids, id_at, lines
        self.offsets, self.sizes, self.bare = kept
        self.held = held

    def __len__(self) -> int:
        return len(self.lines)

    def _part(self, index: slice) -> ReReadEntries:
        positions = range(len(self))[index]
        held = {new: self.held[old] for new, old in enumerate(positions) if old in self.held} if self.held else {}
        kept = (self.offsets[index], self.sizes[index], self.bare[index])
        return ReReadEntries(self.source, self.ids, self.id_at[index], self.lines[index], kept, held)

    def _entry(self, index: int) -> InputEntry:
        held = self.held.get(index)
        if held is not None:
            return held
        line, entry_id, bare = self.lines.item(index), self.ids[self.id_at.item(index)], bool(self.bare.item(index))
        value = self.source.parse(self.offsets.item(index), self.sizes.item(index))
        message = value if bare else (value.get("message") if isinstance(value, dict) else None)
        found = value.get("id") if isinstance(value, dict) else None
        if not isinstance(message, dict) or (not bare and isinstance(found, str) and found.strip() != entry_id):
            raise InputFileError(self.source.path, f"line {line} changed while the file was loaded; load it again")
        timestamp = None if bare else value.get("timestamp")
        return InputEntry(line=line, type="message", message=message, entry_id=entry_id,
                          timestamp=timestamp if isinstance(timestamp, str) else None)  # fmt: skip
