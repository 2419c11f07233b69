"""Whether a process the lab recorded earlier (a sweep's owner) still runs.

A pid alone does not say: after a ``kill -9`` the kernel hands the same number to the next
process, sooner or later, and after a reboot every number starts over. So the lab records a
process as :class:`ProcessIdentity`: its pid, its start time (clock ticks after boot, field 22 of
``/proc/<pid>/stat``: two processes that share a pid never share it), the kernel's boot id and
the host name. :func:`process_ended` compares that with what the machine shows now.

Without ``/proc`` (not Linux) the start time and boot id are unknown; then a live pid counts as
the recorded process (a reused pid is not detected there).

>>> me = this_process()
>>> process_ended(me)
False
>>> print(process_ended(me._replace(host="another-host")))
None
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import NamedTuple

_BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


class ProcessIdentity(NamedTuple):
    """A process as the lab records it: ``pid``, ``started`` (clock ticks after boot; ``None``
    without ``/proc``), ``boot`` (the kernel's boot id; ``None`` without ``/proc``) and ``host``."""

    pid: int
    started: int | None
    boot: str | None
    host: str


def process_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (one of another user counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def this_process() -> ProcessIdentity:
    """The identity of the calling process."""
    pid = os.getpid()
    stat = _stat(pid)
    return ProcessIdentity(pid, stat[1] if stat else None, _boot_id(), socket.gethostname())


def process_ended(owner: ProcessIdentity) -> bool | None:
    """Whether the process ``owner`` names has ended: ``True`` when it is gone, a zombie, started
    before the last boot, or its pid now belongs to a process that started at another time;
    ``False`` while it runs; ``None`` when this host cannot tell (it ran on another host)."""
    if owner.host != socket.gethostname():
        return None
    boot = _boot_id()
    if owner.boot is not None and boot is not None and owner.boot != boot:
        return True
    if not process_alive(owner.pid):
        return True
    stat = _stat(owner.pid)
    if stat is None:  # alive, but /proc does not show it (not Linux, or hidden from this user)
        return False
    state, started = stat
    return state == "Z" or (owner.started is not None and started != owner.started)


def _stat(pid: int) -> tuple[str, int] | None:
    """``(state, start time in clock ticks after boot)`` of ``pid`` from ``/proc``, if shown."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    # the command name (field 2) sits in parentheses and may hold anything, spaces and ")" included
    fields = text.rsplit(")", 1)[-1].split()
    try:
        return fields[0], int(fields[19])
    except (IndexError, ValueError):
        return None


def _boot_id() -> str | None:
    try:
        return _BOOT_ID.read_text(encoding="ascii").strip() or None
    except OSError:
        return None
