"""The names of a lab store's files: the store ``<store>`` and what the lab and DuckDB keep beside
it. :mod:`lcm_lab.store.opening` makes (and deletes) these files; :mod:`lcm_lab.io.atomic` refuses
them as outputs, because the next open of the store would read or delete what was written there
(an export to ``lab.duckdb.wal`` was replayed as the store's log, then removed).

>>> store_of_name("lab.duckdb.wal"), store_of_name(".lab.duckdb.creating-42.wal"), store_of_name("report.html")
(['lab.duckdb', 'lab.duckdb.wal'], ['.lab.duckdb.creating-42', 'lab.duckdb', '.lab.duckdb.creating-42.wal'], ['report.html'])
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

WAL_SUFFIX = ".wal"  # DuckDB's write-ahead log
SAFE_COPY_SUFFIX = ".pre-migration"  # the copy kept while the schema is upgraded
UNREPLAYABLE = ".wal.unreplayable-"  # a log DuckDB could not replay, set aside with its time
CREATING = ".creating-"  # ``.<store>.creating-<pid>``: a new store being built
DUCKDB_MAGIC = b"DUCK"  # bytes 8-11 of every DuckDB database file (after an 8-byte checksum)


def store_of_name(name: str) -> list[str]:
    """The names of the files ``name`` could be a lab file of: the store it belongs beside, if its
    name says so, and ``name`` itself (a store is also its own)."""
    found: list[str] = []
    if UNREPLAYABLE in name:
        found.append(name.split(UNREPLAYABLE, 1)[0])
    for suffix in (WAL_SUFFIX, SAFE_COPY_SUFFIX):
        if name.endswith(suffix):
            found.append(name[: -len(suffix)])
    if name.startswith(".") and CREATING in name:
        found.append(name[1:].rsplit(CREATING, 1)[0])
    return [n for n in found if n] + [name]


def is_duckdb_file(path: Path) -> bool:
    """Whether ``path`` is a regular file that starts like a DuckDB database (nothing else is
    opened: a FIFO would block)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False
        with path.open("rb") as handle:
            return handle.read(12)[8:12] == DUCKDB_MAGIC
    except OSError:  # missing, a directory, unreadable: not one the lab could be asked to keep
        return False


def lab_store_for(target: Path) -> Path | None:
    """The DuckDB database (a lab store) that ``target`` is, or is a file of, or None."""
    for name in store_of_name(target.name):
        candidate = target.with_name(name)
        if is_duckdb_file(candidate):
            return candidate
    return None
