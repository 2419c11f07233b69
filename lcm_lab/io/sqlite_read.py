"""Reading other people's SQLite files without ever changing them.

SQLite readers are not harmless: a read-only connection to a WAL database writes read marks
into its ``-shm`` file, and opening a WAL-mode file whose ``-wal``/``-shm`` are absent creates
them (observed with both stdlib ``sqlite3`` and DuckDB's scanner). So :func:`sqlite_snapshot`
only lets a reader open the original file when that is provably side-effect free (rollback
journal mode, no ``-wal``/``-journal`` present, and read-only open), and validates afterwards
that nothing moved under it. Otherwise it copies the database and its live side file into a
private temporary directory (WAL first, then the main file, re-checking that the WAL did not
change meanwhile: checkpoints only copy frames the copied WAL already holds) and the reader
opens the copy, where SQLite may recover and write as it likes.
"""

from __future__ import annotations

import gzip
import os
import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from lcm_lab.errors import InputError
from lcm_lab.io.scratch import scratch_directory

SQLITE_MAGIC = b"SQLite format 3\x00"
GZIP_MAGIC = b"\x1f\x8b"
_COPY_ATTEMPTS = 5


class SqliteReadError(InputError):
    """A SQLite source could not be read; the message names the file and what to do."""


class SnapshotChanged(SqliteReadError):
    """The original file changed while it was read in place; read again from a copy."""


def file_head(path: Path, size: int = 100) -> bytes:
    with open(path, "rb") as handle:
        return handle.read(size)


def is_sqlite_file(path: Path) -> bool:
    """True when ``path`` starts with the SQLite header (gzip-compressed files are looked into)."""
    try:
        head = file_head(path, 16)
        if head[:2] == GZIP_MAGIC:
            with gzip.open(path, "rb") as handle:
                head = handle.read(16)
    except (OSError, EOFError):
        return False
    return head == SQLITE_MAGIC


@dataclass(frozen=True)
class _FileState:
    exists: bool
    size: int = 0
    mtime_ns: int = 0
    head: bytes = b""

    @staticmethod
    def of(path: Path, head_bytes: int = 32) -> _FileState:
        try:
            st = path.stat()
        except FileNotFoundError:
            return _FileState(False)
        head = file_head(path, head_bytes) if st.st_size else b""
        return _FileState(True, st.st_size, st.st_mtime_ns, head)


@dataclass
class SqliteSnapshot:
    """A SQLite file that is safe to open: the original (read-only) or a private copy."""

    original: Path
    path: Path
    copied: bool
    _state: tuple[_FileState, ...] = ()

    @property
    def read_only(self) -> bool:
        """Open read-only (the original) or read-write (our copy, so SQLite may recover it)."""
        return not self.copied

    def sqlite3_uri(self) -> str:
        mode = "ro" if self.read_only else "rw"
        return f"file:{quote(str(self.path))}?mode={mode}"

    def connect(self) -> sqlite3.Connection:
        """A stdlib connection to the snapshot (read-only on originals)."""
        try:
            return sqlite3.connect(self.sqlite3_uri(), uri=True, check_same_thread=False)
        except sqlite3.Error as exc:
            raise SqliteReadError(f"{self.original}: cannot open as SQLite ({exc})") from exc

    def verify_unchanged(self) -> None:
        """Raise :class:`SnapshotChanged` if a file read in place changed during the read."""
        if not self.copied and _side_states(self.original) != self._state:
            raise SnapshotChanged(f"{self.original}: changed while being read")


def _side_states(path: Path) -> tuple[_FileState, ...]:
    return tuple(_FileState.of(Path(f"{path}{suffix}")) for suffix in ("", "-wal", "-journal"))


def _wal_mode(head: bytes) -> bool:
    return len(head) >= 20 and (head[18] == 2 or head[19] == 2)


def _has_content(state: _FileState) -> bool:
    return state.exists and state.size > 0


# A .db.gz may decompress to at most this many times its size (and always to 64 MB). SQLite files
# compress about 3-10x; a gzip bomb about 1,000x (a 3 MB file of zeros filled 3.2 GB of /tmp).
MAX_GUNZIP_RATIO = 200
_GUNZIP_FLOOR = 64 << 20


def _gunzip_bounded(source: Path, target: Path) -> None:
    limit = max(_GUNZIP_FLOOR, MAX_GUNZIP_RATIO * source.stat().st_size)
    written = 0
    with gzip.open(source, "rb") as src, open(target, "wb") as dst:
        while chunk := src.read(1 << 20):
            written += len(chunk)
            if written > limit:
                raise SqliteReadError(
                    f"{source}: decompresses to more than {MAX_GUNZIP_RATIO} times its size (an SQLite file "
                    f"compresses about 3-10x): not read, in case it is a gzip bomb; gunzip it yourself to load it"
                )
            dst.write(chunk)


@contextmanager
def sqlite_snapshot(path: str | os.PathLike[str], *, force_copy: bool = False) -> Iterator[SqliteSnapshot]:
    """A consistent, side-effect-free view of the SQLite database at ``path``.

    ``.gz`` files are decompressed into a private temporary file. The temporary directory is
    removed on exit. Raise :class:`SqliteReadError` for files that are not SQLite.
    """
    original = Path(path)
    if not original.is_file():
        raise SqliteReadError(f"{original}: not a regular file")
    if file_head(original, 2) == GZIP_MAGIC:
        with scratch_directory("sqlite") as tmp:
            target = tmp / "snapshot.db"
            try:
                _gunzip_bounded(original, target)
            except (OSError, EOFError) as exc:
                raise SqliteReadError(f"{original}: broken gzip file ({exc})") from exc
            _require_sqlite(original, target)
            yield SqliteSnapshot(original, target, copied=True)
        return
    _require_sqlite(original, original)
    states = _side_states(original)
    main, wal, journal = states
    in_place = not force_copy and not _wal_mode(main.head) and not _has_content(wal) and not _has_content(journal)
    if in_place:
        yield SqliteSnapshot(original, original, copied=False, _state=states)
        return
    with scratch_directory("sqlite") as tmp:
        yield SqliteSnapshot(original, _copy_consistently(original, tmp), copied=True)


def _require_sqlite(original: Path, path: Path) -> None:
    if file_head(path, 16) != SQLITE_MAGIC:
        raise SqliteReadError(f"{original}: not a SQLite database (no SQLite header)")


def _copy_consistently(original: Path, directory: Path) -> Path:
    target = directory / "snapshot.db"
    for _ in range(_COPY_ATTEMPTS):
        for stale in directory.iterdir():
            stale.unlink()
        before = _side_states(original)
        _main, wal, journal = before
        # Side files first: the WAL only grows or restarts (both detected below), and
        # checkpoints write into the main file only pages the copied WAL already holds.
        if _has_content(wal):
            shutil.copyfile(f"{original}-wal", f"{target}-wal")
        if _has_content(journal):
            shutil.copyfile(f"{original}-journal", f"{target}-journal")
        shutil.copyfile(original, target)
        after = _side_states(original)
        wal_stable = after[1] == before[1]
        rollback_stable = _wal_mode(before[0].head) or (after[0] == before[0] and after[2] == before[2])
        if wal_stable and rollback_stable:
            return target
    raise SqliteReadError(
        f"{original}: kept changing while being copied ({_COPY_ATTEMPTS} attempts); "
        "try again when the writer is idle, or copy the file yourself with `sqlite3 SRC '.backup DST'`"
    )


def sqlite_table_names(path: str | os.PathLike[str]) -> set[str]:
    """Table names of a SQLite file, read through a safe snapshot (the file is never touched)."""
    with sqlite_snapshot(path) as snap:
        conn = snap.connect()
        try:
            return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
        except sqlite3.DatabaseError as exc:
            raise SqliteReadError(f"{path}: corrupt or unreadable SQLite file ({exc})") from exc
        finally:
            conn.close()
