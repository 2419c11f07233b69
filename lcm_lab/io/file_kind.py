"""Whether a path names something the lab may open and read: looked at with ``stat``, never
opened (opening a FIFO without a writer blocks for ever; ``/dev/zero`` never ends)."""

from __future__ import annotations

import stat
from pathlib import Path


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
    if stat.S_ISDIR(st.st_mode):
        return None
    if not stat.S_ISREG(st.st_mode):
        kind = "named pipe (FIFO)" if stat.S_ISFIFO(st.st_mode) else "special file"
        return f"{kind}, not a regular file"
    if st.st_size == 0:
        return "empty file"
    return None


def special_file_reason(path: str | Path) -> str | None:
    """:func:`unreadable_reason` for a path that exists but must not be opened (a FIFO, a device,
    a socket); ``None`` otherwise."""
    reason = unreadable_reason(path)
    return reason if reason is not None and reason.endswith("not a regular file") else None
