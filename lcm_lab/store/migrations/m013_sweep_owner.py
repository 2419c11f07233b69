"""Which process runs a sweep: ``sweeps.owner_pid``, ``owner_started``, ``owner_boot``, ``owner_host``.

A sweep records itself ``running`` when it starts (or resumes) and its outcome when it ends; a
process killed with ``kill -9`` (or a crash, a power cut) records no outcome. These columns name
the process that runs it (:class:`lcm_lab.io.processes.ProcessIdentity`: its pid, its start time
in clock ticks after boot, the kernel's boot id and the host name), so that a reader can tell a
sweep that runs from one whose process is gone without writing anything
(:func:`lcm_lab.store.sweeps.live_status`). Sweeps recorded before hold NULL: no process is known.
"""

from __future__ import annotations

from typing import Any


def up(con: Any) -> None:
    con.execute("ALTER TABLE sweeps ADD COLUMN owner_pid INTEGER")
    con.execute("ALTER TABLE sweeps ADD COLUMN owner_started BIGINT")
    con.execute("ALTER TABLE sweeps ADD COLUMN owner_boot VARCHAR")
    con.execute("ALTER TABLE sweeps ADD COLUMN owner_host VARCHAR")
