"""Files that grow while they are read: a session file whose agent is still running.

A reader that reads to the end of such a file never finishes when the writer keeps up (a
replay of one reached 6.5 GB). Every read of a transcript file therefore stops at the size it
had when the read began (:func:`open_up_to`): the load's fingerprint size when the load
fingerprinted it (:func:`reading_up_to`), else the size when it was opened. What was written
after is left for the next load, which appends it; :meth:`ReadBound.grew` says whether there is
any, for the warning.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

_BUFFER = 1 << 16


@dataclass
class ReadBound:
    """Reads of ``path`` stop at ``size`` bytes."""

    path: str
    size: int

    def now(self) -> int:
        try:
            return os.stat(self.path).st_size
        except OSError:
            return self.size

    def grew(self) -> int:
        """How many bytes were written after the read began (0: none)."""
        return max(0, self.now() - self.size)

    def warning(self, display: str | os.PathLike[str], *, stored: bool = True) -> str | None:
        """The warning of a read that left lines behind, or None."""
        grown = self.grew()
        if not grown:
            return None
        later = "left for the next load, which appends them" if stored else "not read"
        return (f"{display}: the file grew by {grown} bytes while it was read (still being written?); "
                f"read up to its first {self.size} bytes, the lines after them were {later}")


_BOUNDS: ContextVar[tuple[ReadBound, ...]] = ContextVar("lcm_lab_read_bounds", default=())


def _key(path: str | os.PathLike[str]) -> str:
    return os.path.realpath(path)


@contextmanager
def reading_up_to(path: str | os.PathLike[str], size: int | None = None) -> Iterator[ReadBound]:
    """While active, every :func:`open_up_to` of ``path`` reads at most ``size`` bytes (default:
    its size now)."""
    if size is None:
        size = os.stat(path).st_size
    bound = ReadBound(_key(path), size)
    token = _BOUNDS.set((*_BOUNDS.get(), bound))
    try:
        yield bound
    finally:
        _BOUNDS.reset(token)


class _UpTo(io.RawIOBase):
    """A file read up to byte ``limit`` (the end of the file for every reader above)."""

    def __init__(self, raw: io.FileIO, limit: int) -> None:
        super().__init__()
        self._raw = raw
        self.limit = limit
        self.name = raw.name

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return self._raw.seekable()

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._raw.seek(offset, whence)

    def tell(self) -> int:
        return self._raw.tell()

    def fileno(self) -> int:
        return self._raw.fileno()

    def readinto(self, buffer: memoryview | bytearray) -> int:  # type: ignore[override]
        left = self.limit - self._raw.tell()
        if left <= 0:
            return 0
        view = memoryview(buffer)
        read = self._raw.readinto(view[:left] if left < len(view) else view)
        return read or 0

    def close(self) -> None:
        try:
            self._raw.close()
        finally:
            super().close()


def open_up_to(path: str | os.PathLike[str]) -> io.BufferedReader:
    """``path`` opened for binary reading, ending at the size given by :func:`reading_up_to`
    for it, else at the size it has now."""
    raw = io.FileIO(Path(path), "rb")
    try:
        key = _key(path)
        limit = next((bound.size for bound in reversed(_BOUNDS.get()) if bound.path == key), None)
        if limit is None:
            limit = os.fstat(raw.fileno()).st_size
    except BaseException:
        raw.close()
        raise
    return io.BufferedReader(_UpTo(raw, limit), buffer_size=_BUFFER)
