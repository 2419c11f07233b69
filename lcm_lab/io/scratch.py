"""The lab's scratch files and directories in the system's temporary directory, and the removal
of those a killed process left there.

A lab process spools rows, decompressed lcm.db copies and a sweep's inputs to temporary space,
and removes them when it ends, by an exception or a signal included. A ``kill -9`` (or the
machine's memory killer) ends it without a word, and what it made stays behind: a decompressed
lcm.db can be gigabytes. So every scratch name says whose it is,
``lcm-lab-<kind>-<pid>.<start time>-<random>[suffix]``, and each new one first removes the
scratch of lab processes that have ended (:func:`remove_orphans`; the start time tells a pid the
kernel handed on from the process that had it, see :mod:`lcm_lab.io.processes`). Only this
user's own plain files and directories are touched, never one behind a symbolic link.

>>> with scratch_directory("example") as place:
...     place.name.startswith(f"lcm-lab-example-{os.getpid()}.")
True
>>> place.exists()
False
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from lcm_lab.io.processes import ProcessIdentity, process_ended, this_process

_NAME = re.compile(r"lcm-lab-[a-z]+-(\d+)\.(\d+|x)-[a-z0-9_]+(\.[a-z]+)?")


def _prefix(kind: str) -> str:
    if not re.fullmatch(r"[a-z]+", kind):
        raise ValueError(f"a scratch kind is lower-case letters, not {kind!r}")
    me = this_process()
    return f"lcm-lab-{kind}-{me.pid}.{'x' if me.started is None else me.started}-"


@contextmanager
def scratch_directory(kind: str) -> Iterator[Path]:
    """A new private directory for this process's scratch of ``kind``, removed with what it holds
    when the block ends (after the scratch of ended lab processes is removed)."""
    remove_orphans()
    place = Path(tempfile.mkdtemp(prefix=_prefix(kind)))
    try:
        yield place
    finally:
        shutil.rmtree(place, ignore_errors=True)


def scratch_file(kind: str, suffix: str) -> tuple[int, Path]:
    """A new private file (open descriptor, path) for this process's scratch of ``kind``; the
    caller removes it (after the scratch of ended lab processes is removed)."""
    remove_orphans()
    handle, name = tempfile.mkstemp(prefix=_prefix(kind), suffix=suffix)
    return handle, Path(name)


def remove_orphans(directory: Path | None = None) -> list[Path]:
    """Remove the lab scratch in ``directory`` (default: the system's temporary directory) whose
    process has ended; returns what was removed. A running process's scratch, another user's, a
    name of another form and anything reached through a symbolic link are left alone."""
    place = Path(directory if directory is not None else tempfile.gettempdir())
    try:
        names = [entry.name for entry in os.scandir(place) if entry.name.startswith("lcm-lab-")]
    except OSError:
        return []
    removed = []
    host, uid = socket.gethostname(), os.getuid()
    for name in names:
        match = _NAME.fullmatch(name)
        if match is None:
            continue
        started = None if match[2] == "x" else int(match[2])
        if process_ended(ProcessIdentity(int(match[1]), started, None, host)) is not True:
            continue
        path = place / name
        try:
            info = path.lstat()
            if info.st_uid != uid:
                continue
            if stat.S_ISDIR(info.st_mode):
                shutil.rmtree(path)
            elif stat.S_ISREG(info.st_mode):
                path.unlink()
            else:
                continue
        except OSError:
            continue  # gone meanwhile, or not ours to remove: debris, not an error
        removed.append(path)
    return removed
