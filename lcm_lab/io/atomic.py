"""Writing a file so that readers see the old file or the whole new one, never a part.

The one path for the files a command writes where the user asked (a report, a trace, a
Markdown page): a temporary file beside the target, flushed to disk, then renamed over it. The
target may be absent or a regular file, which is replaced with the same permissions. Anything
else is refused before a byte is written: a symbolic link (the lab neither writes through one
nor replaces it), a directory, a FIFO, a device or a socket (renaming over ``/dev/null`` would
replace the device node with a file). A regular file is refused too when it is one of the
command's inputs, or a data file of the user's (:func:`check_output_path` says which).

Every temporary file is named ``.<target>.writing-<pid>-<random>.tmp`` (:func:`temporary_beside`):
a process killed mid-write (``kill -9``, a power cut) leaves one behind, and the next write
beside the same target removes those whose process is gone (:func:`remove_dead_temporaries`),
as the store removes the builds of dead processes (``.<store>.creating-<pid>``).
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path

from lcm_lab.errors import OutputError, shown_path
from lcm_lab.io.file_kind import kind_name
from lcm_lab.io.processes import process_alive
from lcm_lab.io.store_files import lab_store_for


def check_output_path(path: str | os.PathLike[str], inputs: Iterable[str | os.PathLike[str] | None] = (), *,
                      sqlite_output: bool = False) -> Path:
    """``path`` as a target :func:`write_text_atomic` may replace, or an :class:`OutputError`
    saying what is there instead. A lab store (any DuckDB database) and the files beside a store
    that are the lab's (``<store>.wal``, ``<store>.pre-migration``, ...) are refused too, even when
    they do not exist yet: the next open of the store would read or delete them.

    An existing regular file is replaced only if it is neither of these:

    * one of ``inputs``, the files the command reads (``None``: an option not given): the same
      file by device and inode, so another spelling of the path or a hard link counts too;
    * a data file of the user's, told by its content: an SQLite database (an lcm.db, OpenClaw's
      transcript store), a gzip file, or a transcript the lab reads (pi/OpenClaw JSONL, Claude
      Code JSONL, LoCoMo JSON: :func:`~lcm_lab.io.transcripts.detect_format`). The rule: the lab
      writes none of these kinds as an output of another kind (its reports are HTML, its traces
      lcref-trace JSON, its pages Markdown), so a file of them at an output path is the user's,
      never an earlier output, which is replaced as before. ``sqlite_output``: the output is an
      SQLite database itself, whose caller judges an existing SQLite file (``export`` refuses
      every existing file, ``export-study`` adds to an Optuna storage only).
    """
    target = Path(path)
    if (store := lab_store_for(target)) is not None:
        what = "a DuckDB database (a lab store?)" if store == target else f"a file of the lab store {shown_path(store)}"
        raise OutputError(f"{shown_path(target)}: {what}; the lab never writes its outputs over a store's files "
                          "— choose another path")  # fmt: skip
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        return _writable_directory(target)
    except NotADirectoryError:
        raise OutputError(f"{target}: a part of the path is a file, not a directory; nothing written") from None
    if stat.S_ISLNK(st.st_mode):
        raise OutputError(f"{target}: a symbolic link; the lab neither writes through links nor replaces them "
                          "(give the file's own path)")  # fmt: skip
    if not stat.S_ISREG(st.st_mode):
        raise OutputError(f"{target}: {kind_name(st.st_mode)}, not a file; nothing written")
    for source in inputs:
        if source is not None and _same_file(st, source):
            raise OutputError(f"{target}: the same file as the input {os.fspath(source)}; the lab never writes an "
                              "output over a file it reads — choose another path")  # fmt: skip
    if (data := _data_file_kind(target, sqlite_output)) is not None:
        raise OutputError(f"{target}: {data}, a data file of yours; the lab never replaces one with an output "
                          "— choose another path")  # fmt: skip
    return _writable_directory(target)


def _writable_directory(target: Path) -> Path:
    """``target`` if the directory it is written in (or the nearest one that exists, the rest
    being made) takes new files: a command checks its output before its work, not after it (a
    read-only directory failed ``validate-metrics -o`` only once its replays were done)."""
    directory = target.parent
    while not directory.exists() and directory != directory.parent:
        directory = directory.parent
    if directory.is_dir() and not os.access(directory, os.W_OK | os.X_OK):
        raise OutputError(f"{target}: the directory {directory} does not take new files (read-only or not yours); "
                          "nothing written — choose another path")  # fmt: skip
    return target


def _same_file(st: os.stat_result, source: str | os.PathLike[str]) -> bool:
    """Whether ``source`` (followed through links) is the file ``st`` describes."""
    try:
        other = os.stat(source)
    except (OSError, ValueError):  # missing, ``-`` for stdin, a NUL byte: not a file this one could be
        return False
    return (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino)


def _data_file_kind(target: Path, sqlite_output: bool) -> str | None:
    """``"an SQLite database"``, ``"a gzip file"``, ``"a pi-jsonl transcript"`` ... for a regular
    file that holds data the lab reads (see :func:`check_output_path`), else ``None``."""
    from lcm_lab.io.sqlite_read import GZIP_MAGIC, SQLITE_MAGIC, file_head

    try:
        head = file_head(target, len(SQLITE_MAGIC))
        if head.startswith(GZIP_MAGIC):
            return "a gzip file"
        if head == SQLITE_MAGIC:
            return None if sqlite_output else "an SQLite database (an lcm.db?)"
        from lcm_lab.io.transcripts import TRANSCRIPT_KINDS, detect_format

        kind = detect_format(target)
    except OSError as exc:
        raise OutputError(f"{target}: cannot be read to tell whether it is a data file of yours "
                          f"({exc.strerror or exc}); nothing written") from None  # fmt: skip
    return f"a {kind} transcript" if kind in TRANSCRIPT_KINDS else None


WRITING = ".writing-"  # ``.<target>.writing-<pid>-<random>.tmp``: a temporary file of process <pid>


def remove_if_writer_died(leftover: Path, pid_text: str) -> bool:
    """Delete ``leftover``, a file process ``pid_text`` was writing, if that process is gone (never
    this process's own); whether it was removed."""
    if not pid_text.isdigit() or int(pid_text) == os.getpid() or process_alive(int(pid_text)):
        return False
    try:
        leftover.unlink(missing_ok=True)
    except OSError:
        return False  # a read-only directory: harmless debris
    return True


def remove_dead_temporaries(target: Path) -> list[Path]:
    """Delete the temporary files (and SQLite's ``-journal``/``-wal`` beside them) that processes
    now gone left while writing ``target``; returns what was removed. A live process's are kept."""
    prefix = len(target.name) + 1 + len(WRITING)
    return [leftover for leftover in target.parent.glob(f".{target.name}{WRITING}*")
            if remove_if_writer_died(leftover, leftover.name[prefix:].split("-", 1)[0])]  # fmt: skip


def temporary_beside(target: Path) -> tuple[int, Path]:
    """A new private file beside ``target`` (open descriptor, path) named for this process, after
    removing dead processes' leftovers beside ``target``."""
    remove_dead_temporaries(target)
    handle, name = tempfile.mkstemp(prefix=f".{target.name}{WRITING}{os.getpid()}-", suffix=".tmp", dir=target.parent)
    return handle, Path(name)


def link_into_place(built: Path, target: Path, while_doing: str, error: type[OutputError] = OutputError) -> None:
    """Give the finished file ``built`` the name ``target`` with a hard link, which fails where a
    rename would replace: a file that appeared at ``target`` meanwhile is never overwritten, even
    in a race (``error`` says so, naming what was being done). The caller removes ``built``."""
    try:
        os.link(built, target)
    except FileExistsError:
        raise error(f"{target} appeared while {while_doing}; the lab never overwrites files") from None


def _new_file_mode(target: Path) -> int:
    """The permissions the written file gets: the replaced file's, else what ``open`` would give
    (0666 less the umask) rather than ``mkstemp``'s private 0600."""
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        umask = os.umask(0o022)
        os.umask(umask)
        return 0o666 & ~umask


def write_text_atomic(path: str | os.PathLike[str], text: str, encoding: str = "utf-8", *,
                      inputs: Iterable[str | os.PathLike[str] | None] = ()) -> Path:
    """Write ``text`` to a temporary file beside ``path``, flush it to disk, then rename it over
    ``path`` (what ``path`` may be, given the command's ``inputs``: :func:`check_output_path`). A
    full disk or a crash leaves ``path`` as it was (and no temporary file behind; one a killed
    process left is removed by the next write beside ``path``).

    >>> import tempfile, pathlib
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "page.html"
    >>> write_text_atomic(target, "<p>hi</p>").read_text()
    '<p>hi</p>'
    """
    target = check_output_path(path, inputs)
    target.parent.mkdir(parents=True, exist_ok=True)
    mode = _new_file_mode(target)
    handle, name = temporary_beside(target)
    try:
        with os.fdopen(handle, "w", encoding=encoding) as out:
            out.write(text)
            out.flush()
            os.fchmod(out.fileno(), mode)
            os.fsync(out.fileno())
        os.replace(name, target)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise
    return target
