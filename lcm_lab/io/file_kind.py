"""What a path names, looked at with ``stat`` and never opened (opening a FIFO without a writer
blocks for ever; ``/dev/zero`` never ends): the one place that says whether the lab may read a
path as a file, and names what it is when not."""

from __future__ import annotations

import stat
from pathlib import Path

_SPECIAL = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
            (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))  # fmt: skip


def kind_name(mode: int) -> str:
    """``a directory``, ``a named pipe (FIFO)``, ``a character device``, ... for a ``st_mode``."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISREG(mode):
        return "a regular file"
    return next((name for test, name in _SPECIAL if test(mode)), "a special file")


def _special(mode: int) -> str | None:
    if stat.S_ISDIR(mode) or stat.S_ISREG(mode):
        return None
    return f"{kind_name(mode)}, not a regular file"


def special_file_reason(path: str | Path) -> str | None:
    """``"a named pipe (FIFO), not a regular file"`` and the like for a path that exists but must
    not be opened (neither a regular file nor a directory); ``None`` otherwise."""
    try:
        return _special(Path(path).stat().st_mode)
    except OSError:
        return None


def unreadable_reason(path: str | Path) -> str | None:
    """Why ``path`` cannot be read as a file (``None`` for a regular file with bytes, or a
    directory): no such file, a broken link, a FIFO or other special file, an empty file."""
    target = Path(path)
    try:
        st = target.stat()
    except FileNotFoundError:
        return "broken symbolic link" if target.is_symlink() else "no such file"
    except OSError as exc:
        return f"cannot stat ({exc.strerror or exc})"
    if special := _special(st.st_mode):
        return special
    if stat.S_ISREG(st.st_mode) and st.st_size == 0:
        return "empty file"
    return None
